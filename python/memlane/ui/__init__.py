"""``memlane ui``: a local web viewer of what memory holds, why it recalled something, and
what each agent session was given.

Three layers, each importing only the one below it:

- :mod:`memlane.ui.views` — the pages' data, as plain values, from :class:`memlane.Memory`
  (testable without a server or a browser);
- :mod:`memlane.ui.guard` — who may ask: the Host check (DNS rebinding), the access token,
  CSRF tokens, read-only, and the headers every answer carries (CSP);
- :mod:`memlane.ui.app` — the Starlette application: routes, forms and Jinja2 templates
  (``templates/``, autoescaped) with one stylesheet (``static/``); no script, no CDN.
"""

from __future__ import annotations

from memlane.ui.app import create_app, serve

__all__ = ["create_app", "serve"]
