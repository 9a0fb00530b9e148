"""The ``memlane`` command line: a thin shell over :class:`memlane.Memory`.

Every command takes ``--home DIR`` and ``--json`` (one JSON document on stdout). Every failure
prints one line on stderr (with ``--json``, ``{"error": …, "kind": …}`` on stdout) and exits
with status 2, ``verify`` with 1 when the home is unsound; no tracebacks (``MEMLANE_DEBUG=1``
shows them). A closed pipe (``memlane status | head``) ends the command quietly.

Each module adds its commands (``add_parsers``) beside their handlers: :mod:`~memlane.cli.index`,
:mod:`~memlane.cli.search` (``search``, ``items``, ``recall``), :mod:`~memlane.cli.embed` and
:mod:`~memlane.cli.home` (``status``, ``serve``, ``verify``, ``forget``, ``repair``, ``secrets``);
:mod:`~memlane.cli.common` and :mod:`~memlane.cli.parser` hold what they share. The brain, timeline,
bench and agent commands come from those packages' own ``cli`` modules, added the same way.

Example:
    >>> main(["--home", "/nonexistent/memlane", "--json", "status"])
    {"error": "no memlane home at /nonexistent/memlane: `memlane index PATH` creates one (or pass --home DIR)", "kind": "FileNotFoundError"}
    2
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence

from memlane.cli import embed, home, index, search, ui
from memlane.cli.parser import Parser, common_options


def _parser() -> argparse.ArgumentParser:
    """The ``memlane`` parser: the global options, then every command group's subcommands."""
    parser = Parser(
        prog="memlane",
        description="Memory for AI agents: index transcripts, recall them.",
        parents=[common_options(True)],
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=Parser)
    # In this order: `memlane --help` lists the commands as they are added.
    index.add_parsers(sub, [common_options(False)])
    search.add_parsers(sub, [common_options(False)])
    embed.add_parsers(sub, [common_options(False)])
    home.add_parsers(sub, [common_options(False)])
    ui.add_parsers(sub, [common_options(False)])

    from memlane.agents.cli import add_parsers as add_agent_parsers
    from memlane.bench.cli import add_parser as add_bench_parser
    from memlane.brain.cli import add_parsers as add_brain_parsers
    from memlane.timeline.cli import add_parsers as add_timeline_parsers

    add_brain_parsers(sub, [common_options(False)])
    add_timeline_parsers(sub, [common_options(False)])
    add_bench_parser(sub, [common_options(False)])
    add_agent_parsers(sub, [common_options(False)])
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``memlane`` console script."""
    process = argv is None  # the hook may end the process at its deadline
    if process:
        # numpy's OpenBLAS starts a thread per core at import, each spinning ~0.1 s before it
        # sleeps: ~90 ms of CPU in a hook on 2 cores, more on more. memlane's numpy arrays are
        # small (pooling, a query's windows) and its heavy work runs in the core and onnxruntime.
        # Set before numpy's import (`import memlane` loads none); a user's own setting stands.
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    argv = sys.argv[1:] if argv is None else list(argv)
    if "hook" in argv:
        # Hooks start a process per agent event: skip the full parser and its imports. Global
        # options before `hook` go along, so no route reaches argparse's exit 2 (a client's "block").
        from memlane.agents.hooks import hook_arguments
        from memlane.agents.hooks import main as hook_main

        if (hook_argv := hook_arguments(argv)) is not None:
            return hook_main(hook_argv, hard_exit=process)
    Parser.json_errors = "--json" in argv
    args = _parser().parse_args(argv)
    # Library warnings (a damaged embedding cache set aside) reach the user as one line each.
    logging.basicConfig(level=logging.WARNING, format=f"memlane {args.command}: %(message)s")
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        sys.stderr.write(f"\nmemlane {args.command}: interrupted; committed work is kept, run it again to resume\n")
        return 130
    except BrokenPipeError:
        # The reader went away (`memlane status | head`): stop quietly; Python would
        # otherwise complain again when it flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (SystemExit, GeneratorExit):
        raise
    # BaseException: a Rust panic surfaces as pyo3's PanicException, which is not an Exception.
    except BaseException as exc:
        if os.environ.get("MEMLANE_DEBUG"):
            raise
        return _fail(args, exc)


def _fail(args: argparse.Namespace, exc: BaseException) -> int:
    """Report a failure as one line (``--json``: one JSON object on stdout); exit status 2."""
    import sqlite3

    from memlane.errors import MemlaneError

    message = str(exc) or type(exc).__name__
    if isinstance(exc, OSError) and exc.strerror and exc.filename:
        message = f"{exc.strerror}: {exc.filename}"
    if isinstance(exc, sqlite3.DatabaseError):
        message = f"database error: {message}"
    elif isinstance(exc, ImportError):
        if "pip install" not in message:  # one that names what to install (an extra) says enough
            message = f"{message}: memlane's installation is incomplete (pip install --force-reinstall memlane)"
    elif not isinstance(exc, (MemlaneError, OSError, ValueError, TypeError, LookupError)):
        message = f"internal error ({type(exc).__name__}: {message}); MEMLANE_DEBUG=1 shows the traceback"
    if getattr(args, "json", False):
        json.dump({"error": message, "kind": type(exc).__name__}, sys.stdout)
        sys.stdout.write("\n")
    else:
        sys.stderr.write(f"memlane {args.command}: {message}\n")
    return 2
