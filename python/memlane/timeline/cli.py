"""``memlane compact``, ``memlane wiki …`` and ``memlane dream``: subcommands added to the main parser.

Every command honours ``--home`` and ``--json`` and adds ``--brain DIR``. ``compact`` and
``dream`` run under their job's lease (:mod:`memlane.timeline.lease`): a second one waits for
nothing and says who holds it; ``--if-due`` also honours the cooldown (what the hooks use).

Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="memlane")
    >>> add_parsers(parser.add_subparsers(dest="command"), [])
    >>> parser.parse_args(["compact", "--level", "weekly", "--dry-run"]).level
    'weekly'
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import Any

from memlane.brain.cli import _existing_brain, _key_errors, emit
from memlane.errors import InvalidDataError
from memlane.timeline.engines import ENGINES


def _date(value: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a date like 2026-03-20") from None


def _questions(path: str | None) -> list[Any] | None:
    if path is None:
        return None
    from memlane.timeline.gate import Question

    out = []
    for n, line in enumerate(Path(path).expanduser().read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(Question.from_dict(json.loads(line)))
        except (ValueError, KeyError, TypeError):
            raise InvalidDataError(
                f'{path}:{n}: not a question line ({{"query": …, "gold": ["DailyActivity/….md › HH:MM"]}})'
            ) from None
    return out


def _memory(args: argparse.Namespace) -> Any:
    import memlane

    return memlane.open(args.home, embedder=args.embed)


def _cmd_compact(args: argparse.Namespace) -> int:
    from memlane.timeline.compact import compact
    from memlane.timeline.engines import make_engine
    from memlane.timeline.lease import Jobs

    brain = _existing_brain(args)
    engine = make_engine(args.engine, model_id=args.model, region=args.region)
    jobs = Jobs(args.home)
    with (
        jobs.lease("compact", cooldown=None if args.if_due else 0.0, force=args.force, budget=args.budget) as run,
        _memory(args) as mem,
    ):
        run.engine = engine.name
        report = compact(
            mem,
            brain,
            level=args.level,
            engine=engine,
            dry_run=args.dry_run,
            force=args.force,
            today=args.today,
            budget=args.budget,
            questions=_questions(args.questions),
            before_publish=run.check,
        )
        u = engine.usage
        run.spend(calls=u.calls, input_tokens=u.input_tokens, output_tokens=u.output_tokens, cost_usd=u.cost_usd)
        run.detail = report.refused or _compact_outcome(report, args.dry_run, brain.dir)
    lines = [
        _compact_outcome(report, args.dry_run, brain.dir)
        + (f" with the {report.engine} engine" if report.summaries else "")
    ]
    for s in report.summaries:
        dropped = f"; {len(s['dropped'])} lines dropped" if s["dropped"] else ""
        lines.append(f"  {s['path']}: {s['statements']} statements ({s['reason']}){dropped}")
        lines += [f"    dropped: {d['text'][:100]!r}: {d['reason']}" for d in s["dropped"][:5]]
    if g := report.gate:
        lines.append(
            f"gate: recall@{g['k']} {g['before']:.3f} -> {g['after']:.3f} on {g['questions']} questions; "
            f"summary above its evidence {g['summary_above_evidence_before']} -> {g['summary_above_evidence_after']}"
        )
    if report.refused:
        lines.append(f"refused: {report.refused} (--force publishes anyway)")
    elif report.forced and report.gate and report.gate["lowers"]:
        lines.append("published despite the gate (--force)")
    if report.stopped_by_budget:
        lines.append(f"left for a later run (token budget): {', '.join(report.stopped_by_budget)}")
    if report.usage.get("calls"):
        lines.append(
            f"engine: {report.usage['calls']} calls, {report.usage['input_tokens'] + report.usage['output_tokens']:,} tokens, ${report.usage['cost_usd']:.4f}"
        )
    emit(args, report.to_dict(), "\n".join(lines))
    return 1 if report.refused else 0


def _compact_outcome(report: Any, dry_run: bool, brain_dir: Path) -> str:
    """What a compaction did, in words (never "did not write 0 summaries")."""
    from memlane.timeline import notes
    from memlane.timeline.compact import MIN_DAILIES, MIN_WEEKLIES

    def summaries(k: int) -> str:
        return f"{k} {'summary' if k == 1 else 'summaries'}"

    n, fresh = len(report.summaries), f"{summaries(report.up_to_date)} up to date"
    if n == 0 and report.stopped_by_budget:
        return f"nothing written: the token budget leaves {len(report.stopped_by_budget)} periods for a later run ({fresh})"
    if n == 0:
        return (
            f"nothing due ({len(notes.dailies(brain_dir))} dailies, {fresh}): a week is compacted once it is over with "
            f"{MIN_DAILIES} dailies, a month once it is over with {MIN_WEEKLIES} weeklies"
        )
    verb = "would write" if dry_run else "wrote" if report.published else "did not write"
    return f"{verb} {summaries(n)} ({fresh})"


def _page_line(page: Any) -> str:
    current = f" = {page.current['value']} since {page.current['since']}" if page.current else ""
    return f"{page.slug:<32} {page.category:<9} {page.status:<11} {len(page.sources):>3} sources, confidence {page.confidence}{current}"


def _cmd_wiki(args: argparse.Namespace) -> int:
    from memlane.timeline.wiki import Wiki, slugify

    wiki = Wiki(_existing_brain(args))
    action = args.wiki_command
    if action == "list":
        pages = wiki.pages()
        emit(
            args,
            [
                {
                    "slug": p.slug,
                    "name": p.name,
                    "category": p.category,
                    "status": p.status,
                    "sources": len(p.sources),
                    "confidence": p.confidence,
                    "current": p.current,
                }
                for p in pages
            ],
            "\n".join(_page_line(p) for p in pages)
            or f"no wiki pages yet in {wiki.dir}: `memlane dream` or `memlane wiki stub` makes them",
        )
        return 0
    if action == "show":
        page = wiki.get(args.name)
        if args.as_of:
            answer = page.as_of(args.as_of.isoformat())
            payload = {
                "page": page.slug,
                "as_of": args.as_of.isoformat(),
                "value": answer.value if answer else None,
                "source": answer.source if answer else None,
                "since": answer.since if answer else None,
            }
            text = (
                f"{page.name} as of {args.as_of}: {answer.value} (since {answer.since}, {answer.source})"
                if answer
                else f"{page.name} as of {args.as_of}: nothing recorded yet"
            )
            emit(args, payload, text)
            return 0
        emit(
            args,
            {"page": page.slug, "text": wiki.path(page.name).read_text(encoding="utf-8")},
            wiki.path(page.name).read_text(encoding="utf-8").rstrip("\n"),
        )
        return 0
    if action == "stub":
        page = wiki.stub(args.name, args.category, args.source)
        emit(
            args,
            {"page": page.slug, "facts": len(page.facts)},
            f"wrote {wiki.path(page.name)} ({len(page.facts)} facts from {args.source})",
        )
        return 0
    if action == "lint":
        problems = wiki.lint(args.today)
        emit(
            args,
            {"problems": problems},
            "\n".join(f"{p['problem']:<14} {p['message']}" for p in problems)
            or "ok: no stale, orphan or contradicting page",
        )
        return 1 if problems else 0
    if action == "merge":
        page = wiki.merge(args.into, args.other)
        emit(
            args,
            {"page": page.slug, "merged": slugify(args.other)},
            f"merged {slugify(args.other)} into {page.slug} ({len(page.sources)} sources)",
        )
        return 0
    page = wiki.rename(args.old, args.new)
    emit(args, {"page": page.slug}, f"renamed {slugify(args.old)} to {page.slug}")
    return 0


def _cmd_dream(args: argparse.Namespace) -> int:
    from memlane.timeline.dream import dream, dream_status
    from memlane.timeline.engines import make_engine
    from memlane.timeline.lease import Jobs

    brain = _existing_brain(args)
    if args.action == "status":
        status = dream_status(Path(args.home).expanduser(), brain.dir)
        st = status["state"]
        lines = [
            f"lease       {'held by ' + st['held_by'] if st['held_by'] else 'free'}",
            f"last run    {_when(st['last_success'])} ok; {st['failures']} failures since"
            + (f", next try {_when(st['retry_after'])}" if st["retry_after"] else ""),
            f"watermark   {st['watermark'] or 'none (the next run reads everything)'}",
        ]
        lines += [
            f"run {r['run']} {r['status']:<9} {_when(r['started'])} {r['engine'] or '-'}: {r['calls']} calls, {r['tokens']:,} tokens, ${r['cost_usd']:.4f}"
            + (f" (budget {r['budget_tokens']:,})" if r["budget_tokens"] else "")
            for r in status["ledger"]
        ]
        if status["last_entry"]:
            lines.append(status["last_entry"])
        emit(args, status, "\n".join(lines))
        return 0
    engine = make_engine(args.engine, model_id=args.model, region=args.region)
    jobs = Jobs(args.home)
    with (
        jobs.lease("dream", cooldown=None if args.if_due else 0.0, force=args.force, budget=args.budget) as run,
        _memory(args) as mem,
    ):
        run.engine = engine.name
        mark = json.loads(run.watermark) if run.watermark else None
        report = dream(
            mem,
            brain,
            engine=engine,
            dry_run=args.dry_run,
            force=args.force,
            today=args.today,
            watermark=mark,
            budget=args.budget,
            questions=_questions(args.questions),
            before_publish=run.check,
        )
        u = engine.usage
        run.spend(calls=u.calls, input_tokens=u.input_tokens, output_tokens=u.output_tokens, cost_usd=u.cost_usd)
        if not args.dry_run and not report.refused:
            run.watermark = json.dumps(report.watermark, sort_keys=True)
        else:
            run.watermark = json.dumps(mark, sort_keys=True) if mark else None
        run.detail = report.refused or f"{len(report.operations)} operations"
    verb = "would apply" if args.dry_run else "applied" if report.published else "did not apply"
    lines = [
        f"{verb} {len(report.operations)} wiki operations {report.counts() or ''}".rstrip()
        if report.operations or report.published
        else "nothing to apply: no daily or search since the last run calls for a wiki change"
    ]
    lines += [f"  contradiction: {c}" for c in report.contradictions[:10]]
    lines += [f"  unanswered: {q}" for q in report.unanswered[:10]]
    if g := report.gate:
        lines.append(f"gate: recall@{g['k']} {g['before']:.3f} -> {g['after']:.3f} on {g['questions']} questions")
    if report.refused:
        lines.append(f"refused: {report.refused} (--force publishes anyway)")
    emit(args, report.to_dict(), "\n".join(lines))
    return 1 if report.refused else 0


def _when(ts: float | None) -> str:
    if not ts:
        return "never"
    from datetime import datetime, timezone

    return datetime.fromtimestamp(ts, tz=timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def add_parsers(sub: Any, parents: Sequence[argparse.ArgumentParser]) -> None:
    """Add ``compact``, ``wiki`` and ``dream`` to the main CLI's subparsers.

    Args:
        sub: The main parser's ``add_subparsers()`` object.
        parents: Parsers carrying the global ``--home`` and ``--json`` options.
    """
    where = argparse.ArgumentParser(add_help=False)
    where.add_argument(
        "--brain", default=argparse.SUPPRESS, help="brain folder (default: $MEMLANE_BRAIN_DIR or <home>/brain)"
    )
    common = [*parents, where]

    def run_options(p: argparse.ArgumentParser, force: str, today: str) -> None:
        """The options a compact or dream run shares: engine, dry run, force, today, the gate's questions."""
        engine_options(p)
        p.add_argument("--dry-run", action="store_true", help="only say what would be done")
        p.add_argument("--force", action="store_true", help=force)
        p.add_argument("--today", type=_date, help=today)
        p.add_argument(
            "--questions", metavar="FILE", help="the gate's questions (JSON lines; default: the home's fixed probe set)"
        )

    def engine_options(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--engine",
            choices=ENGINES,
            default="offline",
            help="offline (extractive, default), bedrock, claude or codex (the agent CLI)",
        )
        p.add_argument("--model", help="Bedrock model id (default $MEMLANE_BEDROCK_MODEL or a Claude Haiku model)")
        p.add_argument("--region", help="AWS region for Bedrock")
        p.add_argument(
            "--budget",
            type=int,
            metavar="TOKENS",
            help="tokens the LLM calls may spend (what does not fit waits for a later run)",
        )
        p.add_argument(
            "--embed",
            default="local",
            help="embedder of the home the results are indexed into: local (default), none, …",
        )
        p.add_argument(
            "--if-due", action="store_true", help="honour the cooldown after the last success (what the hooks use)"
        )

    p = sub.add_parser(
        "compact",
        parents=common,
        help="roll dailies up into weekly, monthly and WISDOM.md summaries (dailies are never touched)",
    )
    p.add_argument("--level", choices=["weekly", "monthly", "wisdom"], help="only this level (default: all three)")
    run_options(
        p,
        force="rewrite up-to-date summaries and publish even if the gate measures a loss",
        today="periods ending before this day are complete (default today)",
    )
    p.set_defaults(func=_cmd_compact)

    wiki = sub.add_parser(
        "wiki", parents=common, help="topical pages kept by dreaming: list, show, stub, lint, merge, rename"
    )
    actions = wiki.add_subparsers(dest="wiki_command", required=True, metavar="ACTION")
    p = actions.add_parser("list", parents=common, help="every page with its category, sources and current value")
    p.set_defaults(func=_key_errors(_cmd_wiki))
    p = actions.add_parser("show", parents=common, help="print a page, or (--as-of) its value on a date")
    p.add_argument("name")
    p.add_argument("--as-of", type=_date, help="the value that held on this day (YYYY-MM-DD)")
    p.set_defaults(func=_key_errors(_cmd_wiki))
    p = actions.add_parser("stub", parents=common, help="a new page from one source")
    p.add_argument("name")
    p.add_argument("--category", choices=["entity", "concept", "project", "reference", "theme"], default="concept")
    p.add_argument("--source", required=True, help="a daily entry: 'DailyActivity/YYYY-MM-DD.md › HH:MM'")
    p.set_defaults(func=_key_errors(_cmd_wiki))
    p = actions.add_parser(
        "lint", parents=common, help="stale (90 days), orphan and contradicting pages (exit 1 if any)"
    )
    p.add_argument("--today", type=_date, help="staleness is counted to this day (default today)")
    p.set_defaults(func=_key_errors(_cmd_wiki))
    p = actions.add_parser("merge", parents=common, help="merge the second page into the first")
    p.add_argument("into")
    p.add_argument("other")
    p.set_defaults(func=_key_errors(_cmd_wiki))
    p = actions.add_parser("rename", parents=common, help="rename a page and the links to it")
    p.add_argument("old")
    p.add_argument("new")
    p.set_defaults(func=_key_errors(_cmd_wiki))

    p = sub.add_parser(
        "dream",
        parents=common,
        help="update the wiki from new dailies and the search log; `dream status` shows the last runs",
    )
    p.add_argument("action", nargs="?", choices=["run", "status"], default="run", help="run (default) or status")
    run_options(
        p,
        force="run despite the cooldown and publish even if the gate measures a loss",
        today="staleness is counted to this day (default today)",
    )
    p.set_defaults(func=_cmd_dream)
