"""The parser class of every ``memlane`` command and the options several commands share.

Example:
    >>> parser = Parser(prog="memlane", parents=[common_options(True)])
    >>> scope_options(parser)
    >>> args = parser.parse_args(["--json", "--project", "alpha"])
    >>> args.json, args.project, args.index
    (True, 'alpha', None)
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import NoReturn

from memlane._paths import default_home
from memlane.embed.device import DEVICE_CHOICES


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line saying what to do (not the usage block), and
    a JSON object on stdout when ``--json`` was asked for."""

    json_errors = False

    def error(self, message: str) -> NoReturn:
        message = f"{message} (see `{self.prog} --help`)"
        if Parser.json_errors:
            json.dump({"error": message, "kind": "UsageError"}, sys.stdout)
            self.exit(2, "\n")
        self.exit(2, f"{self.prog}: {message}\n")


def common_options(defaults: bool) -> Parser:
    # Subcommands repeat the global options with SUPPRESS defaults, so `memlane --json
    # status` and `memlane status --json` both work without one resetting the other.
    p = Parser(add_help=False)
    home = str(default_home()) if defaults else argparse.SUPPRESS
    p.add_argument("--home", default=home, help="memlane home (default: $MEMLANE_HOME or ~/.local/share/memlane)")
    p.add_argument(
        "--json",
        action="store_true",
        default=False if defaults else argparse.SUPPRESS,
        help="print one JSON document on stdout",
    )
    p.add_argument(
        "--index",
        metavar="URI",
        default=None if defaults else argparse.SUPPRESS,
        help="search, recall or status a sharded index (s3://… or a folder, built by `memlane index --ray`) instead of --home",
    )
    p.add_argument(
        "--remote",
        metavar="URL",
        default=None if defaults else argparse.SUPPRESS,
        help="search, recall, status or mcp through a served index (`memlane serve`) at URL (token from $MEMLANE_TOKEN)",
    )
    return p


def scope_options(p: argparse.ArgumentParser) -> None:
    """``--project`` and ``--branch``: what ``search`` and ``recall`` keep."""
    p.add_argument(
        "--project",
        help="only this project's memories: a name (alpha), a path (. or ~/src/alpha) or a key as hits show it",
    )
    p.add_argument("--branch", help="only transcripts written on this git branch")


def embed_options(p: argparse.ArgumentParser, what: str, default: str | None = "local") -> None:
    """``--embed`` (described as ``what``) and the Bedrock options that go with it."""
    p.add_argument(
        "--embed",
        default=default,
        help=f"{what}: local (default), local:int8, local:MODEL_DIR, bedrock[:1024|512|256], none",
    )
    p.add_argument("--aws-region", help="Bedrock region (default: AWS_REGION / your AWS config)")
    p.add_argument("--aws-profile", help="AWS profile for Bedrock")
    p.add_argument("--concurrency", type=int, default=8, help="Bedrock requests in flight (default 8)")


def device_option(p: argparse.ArgumentParser) -> None:
    """``--device``: where ``index`` and ``embed`` run the local model."""
    p.add_argument("--device", choices=DEVICE_CHOICES, default="auto",
                   help="where the local model runs: auto (default: a GPU when onnxruntime-gpu can use one, else the CPU), cpu, gpu")  # fmt: skip
