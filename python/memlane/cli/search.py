"""``memlane search``, ``items`` and ``recall``: what memory holds, with secrets masked.

Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="memlane")
    >>> add_parsers(parser.add_subparsers(dest="command"), [])
    >>> parser.parse_args(["recall", "why did the release break", "--max-tokens", "2000"]).max_tokens
    2000
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memlane.cli import common
from memlane.cli.parser import embed_options, scope_options
from memlane.cli_output import emit
from memlane.errors import InvalidArgumentError
from memlane.ranking.relevance import FLOOR


def _format_hit(i: int, hit: Any, snippet: str) -> str:
    when = hit.timestamp[:16].replace("T", " ") if hit.timestamp else "undated"
    if hit.source in ("knowledge", "summary"):
        where = f"{hit.heading} · lines {hit.meta.get('line_start')}-{hit.meta.get('line_end')} · {when}"
    else:
        where = f"{hit.session_id} · turns {hit.turn_start}-{hit.turn_end} · {when}"
    if hit.project:
        where += f" · {Path(hit.project).name}" + (f"@{hit.branch}" if hit.branch else "")
    scores = " ".join(f"{k}={v:.2f}" for k, v in {"relevance": hit.relevance, **hit.scores}.items() if v is not None)
    earlier = f"\n   earlier statement: superseded by {hit.superseded_by}" if hit.superseded_by else ""
    if context := hit.meta.get("context"):
        earlier += f"\n   found through the summary {context}"
    return f"{i}. [{hit.score:.3f} {scores}] {hit.id} {where}\n   {hit.path}{earlier}\n   {snippet}"


def _cmd_search(args: argparse.Namespace) -> int:
    if args.k < 1:
        raise InvalidArgumentError("-k must be at least 1")
    _secrets_at_terminal(args)
    common.require_home(args)
    mem = common.open_memory(args, args.embed)
    if args.type:
        return _search_items(args, mem)
    hits = mem.search(
        args.query,
        k=args.k,
        sources=args.source or None,
        session_id=args.session,
        since=args.since,
        until=args.until,
        fusion=args.fusion,
        threshold=args.threshold,
        recency=args.recency,
        temporal=args.temporal,
        project=args.project,
        branch=args.branch,
        # A served index masks and cuts the passages itself (the hits' statistics live there).
        **({"show_secrets": args.show_secrets, "snippet_chars": 300} if args.remote else {}),
    )
    _say_partial(args, mem)
    _unknown_project(mem, args.project)  # even with hits: the user's global notes answer any name
    if not args.show_secrets:
        from dataclasses import replace

        from memlane import secrets

        # Masked before the snippet is cut: a key cut in half would no longer be recognised.
        hits = [replace(h, text=secrets.mask(h.text)) for h in hits]
    # The passage that matched, not the chunk's first lines: an error at a chunk's end shows.
    snippets = mem.snippets(args.query, hits)
    text = (
        "\n".join(_format_hit(i, h, s) for i, (h, s) in enumerate(zip(hits, snippets), 1))
        or "nothing relevant in memory for this query"
    )
    _emit_masked(args, [h.to_dict() for h in hits], text)
    return 0


def _search_items(args: argparse.Namespace, mem: Any) -> int:
    """``search --type``: typed, cited items (decisions, entities, claims, tasks, notes)."""
    from memlane import secrets

    if args.remote or args.index:
        raise InvalidArgumentError(
            "--type reads the home's brain and tasks: use it with --home, not a served or sharded index"
        )
    found = mem.items(args.query, types=args.type, project=args.project, k=args.k)
    lines = [
        f"[{n}] {i.type} {i.id}: {secrets.mask(i.text).splitlines()[0] if i.text else ''}\n    cited: {i.citation}"
        + (f" · confidence {i.confidence}" if i.confidence else "")
        for n, i in enumerate(found, 1)
    ]
    emit(
        args,
        secrets.mask_json([i.to_dict() for i in found]),
        "\n".join(lines) or f"no {' or '.join(args.type)} in memory for this query",
    )
    return 0


def _add_search(sub: Any, parents: Sequence[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("search", parents=parents, help="hybrid search over what is indexed")
    p.add_argument("query")
    p.add_argument("-k", type=int, default=10, help="hits wanted (default 10)")
    p.add_argument(
        "--source",
        action="append",
        choices=["transcript", "knowledge", "summary", "brain"],
        help="keep only this source (repeatable)",
    )
    p.add_argument("--session", help="keep only this session id")
    p.add_argument("--since", help="keep chunks from this time on (ISO-8601)")
    p.add_argument("--until", help="keep chunks before this time (ISO-8601)")
    p.add_argument("--fusion", choices=["weighted", "rrf"], default="weighted")
    p.add_argument(
        "--threshold",
        type=float,
        default=FLOOR,
        help=f"relevance floor: nothing when no hit reaches it (default {FLOOR})",
    )
    p.add_argument(
        "--no-recency", dest="recency", action="store_false", help="do not put the newest of same-subject hits first"
    )
    p.add_argument(
        "--no-temporal", dest="temporal", action="store_false", help="do not favour hits near a time the query names"
    )
    p.add_argument(
        "--show-secrets",
        action="store_true",
        help="print keys and passwords as indexed (default: masked, like AKIA…8WVY)",
    )
    p.add_argument(
        "--type",
        action="append",
        metavar="TYPE",
        help="typed, cited items instead of hits: decision, entity, claim, task or note (repeatable)",
    )
    scope_options(p)
    embed_options(p, "embedder for the query (must match the index)")
    p.set_defaults(func=_cmd_search)


def _cmd_items(args: argparse.Namespace) -> int:
    """``memlane items``: every typed, cited item (of a project), or ``--export`` them as items.json."""
    from collections import Counter

    from memlane import secrets

    common.require_home(args)
    mem = common.open_memory(args, "none")
    project = mem.project_keys(".")[0] if args.project == "." else args.project
    found = [i.to_dict() for i in mem.items(types=args.type, project=project, k=None)]
    doc = secrets.mask_json({"project": project, "items": found})
    if args.export:
        Path(args.export).write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    counts = Counter(i["type"] for i in found)
    where = f" in {project}" if project else ""
    text = f"{len(found)} items{where}: " + (", ".join(f"{n} {t}" for t, n in sorted(counts.items())) or "none")
    emit(args, doc, text + (f"; written to {args.export}" if args.export else " (`--export items.json` writes them)"))
    return 0


def _add_items(sub: Any, parents: Sequence[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "items",
        parents=parents,
        help="typed, cited items: decisions, entities, claims, tasks, notes (--export items.json)",
    )
    p.add_argument(
        "--type", action="append", metavar="TYPE", help="only decision, entity, claim, task or note (repeatable)"
    )
    p.add_argument("--project", help="only this project (a name, a repository path, or . for this directory's)")
    p.add_argument(
        "--export", metavar="FILE", help="write them as JSON (the project, then each item with its citation)"
    )
    p.set_defaults(func=_cmd_items)


def _cmd_recall(args: argparse.Namespace) -> int:
    if args.max_tokens < 1:
        raise InvalidArgumentError("--max-tokens must be at least 1")
    _secrets_at_terminal(args)
    common.require_home(args)
    mem = common.open_memory(args, args.embed)
    result = mem.recall(
        args.query,
        max_tokens=args.max_tokens,
        half_life_days=args.half_life,
        include_brain=not args.no_brain,
        show_secrets=args.show_secrets,
        project=args.project,
        branch=args.branch,
    )
    _say_partial(args, mem)
    _unknown_project(mem, args.project)  # even with hits: the user's global notes answer any name
    if not result:
        sys.stderr.write("memlane recall: nothing relevant in memory for this query\n")
        if args.json:
            _emit_masked(args, result.to_dict(), "")
        return 0
    _emit_masked(args, result.to_dict(), result.text.rstrip("\n"))
    return 0


def _add_recall(sub: Any, parents: Sequence[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "recall",
        parents=parents,
        help="what memory knows about a query, as one block to inject (with provenance)",
    )
    p.add_argument("query")
    p.add_argument("--max-tokens", type=int, default=15_000, help="token budget of the block (default 15000)")
    p.add_argument(
        "--half-life", type=float, metavar="DAYS", help="decay dated items by half every DAYS (default: no decay)"
    )
    p.add_argument("--no-brain", action="store_true", help="leave out MEMORY.md and EVOLUTION.md entries")
    p.add_argument(
        "--show-secrets",
        action="store_true",
        help="print keys and passwords as indexed (default: masked, like AKIA…8WVY)",
    )
    scope_options(p)
    embed_options(p, "embedder for the query (must match the index)")
    p.set_defaults(func=_cmd_recall)


def _secrets_at_terminal(args: argparse.Namespace) -> None:
    """Refuse ``--show-secrets`` unless stdout is a terminal: keys are shown to a person
    reading them, never into a pipe or a file (an agent's shell tool reads a pipe)."""
    if args.show_secrets and not sys.stdout.isatty():
        raise InvalidArgumentError(
            "--show-secrets prints keys and passwords only at a terminal, and stdout is not one; leave it out to get them masked"
        )


def _say_partial(args: argparse.Namespace, mem: Any) -> None:
    """One line on stderr when a served index answered without some of its shards."""
    if getattr(mem, "missing_shards", None):
        shards = ", ".join(map(str, mem.missing_shards))
        sys.stderr.write(
            f"memlane {args.command}: partial answer: shard(s) {shards} of {args.remote} did not answer (Ray restarts them)\n"
        )


def _unknown_project(mem: Any, project: str | None) -> None:
    """Say so when ``--project`` names no project of the home (a typo, not an empty answer)."""
    if project is not None and hasattr(mem, "project_keys") and not mem.project_keys(project):
        names = ", ".join(sorted({Path(k).name for k in mem.projects()})) or "none yet"
        from memlane._check import echo

        sys.stderr.write(f"memlane: no project named {echo(project, quote=True)} in this home (projects: {names})\n")


def _emit_masked(args: argparse.Namespace, payload: Any, text: str) -> None:
    """:func:`emit` with secrets masked, unless the user asked ``--show-secrets``."""
    if not args.show_secrets:
        from memlane import secrets

        payload, text = secrets.mask_json(payload), secrets.mask(text)
    emit(args, payload, text)


def add_parsers(sub: Any, parents: Sequence[argparse.ArgumentParser]) -> None:
    """Add ``search``, ``items``, ``recall`` to the ``memlane`` parser, in the order ``memlane --help`` lists them."""
    for add in (_add_search, _add_items, _add_recall):
        add(sub, parents)
