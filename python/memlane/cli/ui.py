"""``memlane ui``: the local web viewer of a home (or, read-only, of a sharded index).

Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="memlane")
    >>> add_parsers(parser.add_subparsers(dest="command"), [])
    >>> parser.parse_args(["ui", "--port", "9000", "--read-only"]).port
    9000
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import Any

from memlane.cli import common
from memlane.cli.parser import embed_options
from memlane.errors import InvalidArgumentError


def _cmd_ui(args: argparse.Namespace) -> int:
    from memlane.ui import serve
    from memlane.ui.guard import TOKEN_ENV, Access

    if not 0 < args.port < 65536:
        raise InvalidArgumentError(f"--port must be between 1 and 65535, got {args.port}")
    common.require_home(args)
    access = Access(args.host, args.port, token=args.token or os.environ.get(TOKEN_ENV) or None,
                    read_only=args.read_only or bool(getattr(args, "index", None)))  # fmt: skip
    mem = common.open_memory(args, args.embed)
    serve(mem, access, open_browser=args.open)
    return 0


def add_parsers(sub: Any, parents: Sequence[argparse.ArgumentParser]) -> None:
    """Add ``ui`` to the ``memlane`` parser."""
    p = sub.add_parser(
        "ui",
        parents=parents,
        help="browse what memory holds, why it recalled something and what each agent was given (a local web viewer)",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1; any other needs a token)")
    p.add_argument("--port", type=int, default=8765, help="HTTP port (default 8765)")
    p.add_argument("--open", action="store_true", help="open the viewer in the default browser")
    p.add_argument("--read-only", action="store_true", help="show no action and refuse every one (403)")
    p.add_argument(
        "--token", default=None, help="access token, asked once then kept in a cookie (default $MEMLANE_TOKEN)"
    )
    embed_options(p, "embedder of the search page's queries")
    p.set_defaults(func=_cmd_ui)
