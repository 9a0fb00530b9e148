"""How every ``memlane`` command prints its result: one JSON document with ``--json``, else text.

Shared by :mod:`memlane.cli` and the command groups it adds (``brain``, the agent commands),
which it imports: it lives below all of them, so they do not import each other in a circle.

Example:
    >>> import argparse
    >>> emit(argparse.Namespace(json=True), {"ok": True}, "ok")
    {"ok": true}
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

__all__ = ["emit"]


def emit(args: argparse.Namespace, payload: Any, text: str) -> None:
    """Print ``payload`` as one JSON document with ``--json``, else ``text`` (shared by every subcommand)."""
    if getattr(args, "json", False):
        json.dump(payload, sys.stdout, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        print(text)
