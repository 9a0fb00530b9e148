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

from memlane.brain.cli import _brain, emit
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
            raise ValueError(f"{path}:{n}: not a question line ({{\"query\": …, \"gold\": [\"DailyActivity/….md › HH:MM\"]}})") from None
    return out


def _memory(args: argparse.Namespace) -> Any:
    import memlane

    return memlane.open(args.home, embedder=args.embed)


def _cmd_compact(args: argparse.Namespace) -> int:
    from memlane.timeline.compact import compact
    from memlane.timeline.engines import make_engine
    from memlane.timeline.lease import Jobs

    brain = _brain(args)
    engine = make_engine(args.engine, model_id=args.model, region=args.region)
    jobs = Jobs(args.home)
    with jobs.lease("compact", cooldown=None if args.if_due else 0.0, force=args.force, budget=args.budget) as run, _memory(args) as mem:
        run.engine = engine.name
        report = compact(mem, brain, level=args.level, engine=engine, dry_run=args.dry_run, force=args.force, today=args.today,
                         budget=args.budget, questions=_questions(args.questions), before_publish=run.check)
        u = engine.usage
        run.spend(calls=u.calls, input_tokens=u.input_tokens, output_tokens=u.output_tokens, cost_usd=u.cost_usd)
        run.detail = report.refused or f"{len(report.summaries)} summaries {'planned' if args.dry_run else 'written' if report.published else 'not written'}"
    lines = [f"{'would write' if args.dry_run else 'wrote' if report.published else 'did not write'} {len(report.summaries)} summaries "
             f"({report.up_to_date} up to date) with the {report.engine} engine"]
    for s in report.summaries:
        dropped = f"; {len(s['dropped'])} lines dropped" if s["dropped"] else ""
        lines.append(f"  {s['path']}: {s['statements']} statements ({s['reason']}){dropped}")
        lines += [f"    dropped: {d['text'][:100]!r}: {d['reason']}" for d in s["dropped"][:5]]
    if g := report.gate:
        lines.append(f"gate: recall@{g['k']} {g['before']:.3f} -> {g['after']:.3f} on {g['questions']} questions; "
                     f"summary above its evidence {g['summary_above_evidence_before']} -> {g['summary_above_evidence_after']}")
    if report.refused:
        lines.append(f"refused: {report.refused} (--force publishes anyway)")
    elif report.forced and report.gate and report.gate["lowers"]:
        lines.append("published despite the gate (--force)")
    if report.stopped_by_budget:
        lines.append(f"left for a later run (token budget): {', '.join(report.stopped_by_budget)}")
    if report.usage.get("calls"):
        lines.append(f"engine: {report.usage['calls']} calls, {report.usage['input_tokens'] + report.usage['output_tokens']:,} tokens, ${report.usage['cost_usd']:.4f}")
    emit(args, report.to_dict(), "\n".join(lines))
    return 1 if report.refused else 0


def add_parsers(sub: Any, parents: Sequence[argparse.ArgumentParser]) -> None:
    """Add ``compact``, ``wiki`` and ``dream`` to the main CLI's subparsers.

    Args:
        sub: The main parser's ``add_subparsers()`` object.
        parents: Parsers carrying the global ``--home`` and ``--json`` options.
    """
    where = argparse.ArgumentParser(add_help=False)
    where.add_argument("--brain", default=argparse.SUPPRESS, help="brain folder (default: $MEMLANE_BRAIN_DIR or <home>/brain)")
    common = [*parents, where]

    def engine_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("--engine", choices=ENGINES, default="offline", help="offline (extractive, default), bedrock, claude or codex (the agent CLI)")
        p.add_argument("--model", help="Bedrock model id (default $MEMLANE_BEDROCK_MODEL or a Claude Haiku model)")
        p.add_argument("--region", help="AWS region for Bedrock")
        p.add_argument("--budget", type=int, metavar="TOKENS", help="tokens the LLM calls may spend (what does not fit waits for a later run)")
        p.add_argument("--embed", default="local", help="embedder of the home the results are indexed into: local (default), none, …")
        p.add_argument("--if-due", action="store_true", help="honour the cooldown after the last success (what the hooks use)")

    p = sub.add_parser("compact", parents=common, help="roll dailies up into weekly, monthly and WISDOM.md summaries (dailies are never touched)")
    p.add_argument("--level", choices=["weekly", "monthly", "wisdom"], help="only this level (default: all three)")
    engine_options(p)
    p.add_argument("--dry-run", action="store_true", help="only say what would be written")
    p.add_argument("--force", action="store_true", help="rewrite up-to-date summaries and publish even if the gate measures a loss")
    p.add_argument("--today", type=_date, help="periods ending before this day are complete (default today)")
    p.add_argument("--questions", metavar="FILE", help="the gate's questions (JSON lines; default: the home's fixed probe set)")
    p.set_defaults(func=_cmd_compact)
