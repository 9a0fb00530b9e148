"""``memlane mcp``, ``hook``, ``install-hooks``, ``uninstall-hooks`` and ``doctor``: the agent-integration subcommands.

``memlane.cli`` calls :func:`add_parsers`; ``memlane hook …`` is also dispatched before the
full parser is built (:func:`memlane.agents.hooks.main`), since a hook starts a process per event.

Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="memlane")
    >>> add_parsers(parser.add_subparsers(dest="command"), [])
    >>> parser.parse_args(["install-hooks", "codex", "--notify"]).notify
    True
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from memlane.cli_output import emit


def _cmd_mcp(args: argparse.Namespace) -> int:
    from memlane.agents.mcp import serve
    from memlane.roles import Role

    serve(args.home, embedder=args.embed, role=Role.parse(args.agent), remote=getattr(args, "remote", None))
    return 0


def _cmd_hook(args: argparse.Namespace) -> int:
    from memlane.agents.hooks import run

    return run(args)


def _cmd_install_hooks(args: argparse.Namespace) -> int:
    from pathlib import Path

    from memlane.agents.install import claude_dir, codex_dir, install_claude_code, install_codex, queue_backfill

    if args.client == "claude-code":
        claude_json: Any = False if args.no_mcp else (args.claude_json or True)
        report = install_claude_code(
            args.settings, home=args.home, claude_json=claude_json, embed=args.embed, distill=args.distill
        )
        transcripts = claude_dir() / "projects"
    else:
        report = install_codex(
            args.codex_home,
            home=args.home,
            mcp=not args.no_mcp,
            notify=args.notify,
            embed=args.embed,
            distill=args.distill,
        )
        transcripts = (Path(args.codex_home).expanduser() if args.codex_home else codex_dir()) / "sessions"
    if not args.no_backfill and queue_backfill(args.home, transcripts, client=args.client, embed=args.embed):
        report.notes.append(f"indexing {transcripts} in the background (resumable; `memlane doctor` shows the queue)")
    lines = [f"wrote {p}" for p in report.changed] + [f"  backup {p}" for p in report.backups]
    lines += [f"already up to date: {p}" for p in report.unchanged] + [f"note: {n}" for n in report.notes]
    if report.changed:
        lines.append("start a new session to load the hooks; `memlane doctor` checks the setup")
    emit(args, report.to_dict(), "\n".join(lines))
    return 0


def _cmd_uninstall_hooks(args: argparse.Namespace) -> int:
    from memlane.agents.install import uninstall_claude_code, uninstall_codex

    if args.client == "claude-code":
        report = uninstall_claude_code(args.settings, claude_json=args.claude_json or True)
    else:
        report = uninstall_codex(args.codex_home)
    lines = [f"wrote {p}" for p in report.changed] + [f"  backup {p}" for p in report.backups]
    lines += [f"nothing of memlane's in {p}" for p in report.unchanged] + [f"note: {n}" for n in report.notes]
    if report.changed:
        lines.append("memlane's hooks and MCP server are out; the home and its index are kept")
    emit(args, report.to_dict(), "\n".join(lines) or f"memlane is not installed in {args.client}")
    return 0


def _cmd_doctor(args: argparse.Namespace) -> int:
    from memlane.agents.install import doctor

    checks = doctor(args.home, settings=args.settings, claude_json=args.claude_json, codex_home=args.codex_home)
    errors = sum(c.level == "error" for c in checks)
    text = "\n".join(f"{c.level:<8}{c.name:<22}{c.message}" for c in checks)
    emit(args, {"ok": errors == 0, "checks": [c.to_dict() for c in checks]}, text)
    return 1 if errors else 0


def add_parsers(sub: Any, parents: Sequence[argparse.ArgumentParser]) -> None:
    """Add ``mcp``, ``hook``, ``install-hooks``, ``uninstall-hooks`` and ``doctor`` to the main CLI's subparsers.

    Args:
        sub: The main parser's ``add_subparsers()`` object.
        parents: Parsers carrying the global ``--home`` and ``--json`` options.
    """
    from memlane.agents.hooks import add_arguments as add_hook_arguments

    p = sub.add_parser(
        "mcp", parents=list(parents), help="MCP server on stdio: recall, remember, supersede, get, status"
    )
    p.add_argument("--embed", default="local", help="query embedder: local (default), bedrock…, none (keyword-only)")
    p.add_argument(
        "--agent",
        metavar="ROLE",
        help="admin (default), project:NAME or skill:NAME: what the agent reads and writes ($MEMLANE_AGENT)",
    )
    p.set_defaults(func=_cmd_mcp)

    p = sub.add_parser("hook", parents=list(parents), help="handle an agent hook event (what install-hooks wires in)")
    add_hook_arguments(p, parents)
    p.set_defaults(func=_cmd_hook)

    where = argparse.ArgumentParser(add_help=False)
    where.add_argument("--settings", help="Claude Code settings file (default ~/.claude/settings.json)")
    where.add_argument("--claude-json", help="Claude Code user state file holding mcpServers (default ~/.claude.json)")
    where.add_argument("--codex-home", help="Codex folder (default $CODEX_HOME or ~/.codex)")

    p = sub.add_parser(
        "install-hooks",
        parents=[*parents, where],
        help="wire memlane into Claude Code or Codex (idempotent, backs files up)",
    )
    p.add_argument("client", choices=["claude-code", "codex"])
    p.add_argument(
        "--embed", default="local", help="embedder the background indexer uses: local (default), bedrock…, none"
    )
    p.add_argument(
        "--distill",
        choices=["extractive", "bedrock", "off"],
        help="how the hooks distil sessions into DailyActivity and MEMORY.md (default: extractive, offline; off turns it off)",
    )
    p.add_argument("--no-mcp", action="store_true", help="do not register the MCP server")
    p.add_argument(
        "--notify", action="store_true", help="Codex: also set notify = [memlane …] (for Codex versions without hooks)"
    )
    p.add_argument(
        "--no-backfill", action="store_true", help="do not index the client's existing transcripts in the background"
    )
    p.set_defaults(func=_cmd_install_hooks)

    p = sub.add_parser(
        "uninstall-hooks",
        parents=[*parents, where],
        help="take memlane's hooks and MCP server out of Claude Code or Codex (idempotent, others' entries kept)",
    )
    p.add_argument("client", choices=["claude-code", "codex"])
    p.set_defaults(func=_cmd_uninstall_hooks)

    p = sub.add_parser(
        "doctor",
        parents=[*parents, where],
        help="check the setup: home, hooks, MCP server, transcript retention, queue",
    )
    p.set_defaults(func=_cmd_doctor)
