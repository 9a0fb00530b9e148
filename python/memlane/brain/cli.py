"""``memlane brain …`` and ``memlane distill …``: subcommands added to the main parser.

``memlane.cli`` calls :func:`add_parsers`; every command honours ``--home`` and ``--json``
and adds ``--brain DIR`` (default ``$MEMLANE_BRAIN_DIR`` or ``<home>/brain``).

Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="memlane")
    >>> add_parsers(parser.add_subparsers(dest="command"), [])
    >>> parser.parse_args(["brain", "add", "kd", "Use uv for envs."]).section
    'kd'
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from datetime import timezone
from pathlib import Path
from typing import Any

from memlane import secrets
from memlane._paths import TRANSCRIPT_FORMATS, default_home
from memlane.brain.brain import Brain, default_brain_dir, parse_caps
from memlane.brain.document import Entry
from memlane.brain.scopes import DEFAULT_SCOPES, entry_project, entry_scope, entry_type
from memlane.cli_output import emit as _emit
from memlane.errors import InvalidArgumentError
from memlane.events import format_summary, summarize


def _brain(args: argparse.Namespace) -> Brain:
    home = Path(getattr(args, "home", None) or default_home())
    folder = getattr(args, "brain", None)
    return Brain(
        folder or default_brain_dir(home),
        home=home,
        caps=parse_caps(getattr(args, "cap", None) or []),
        char_caps=parse_caps(getattr(args, "char_cap", None) or [], "--char-cap"),
    )


def _existing_brain(args: argparse.Namespace) -> Brain:
    """:func:`_brain` for a command that reads or maintains a brain: a folder that does not exist
    is refused, where a mistyped ``--brain`` would be created or shown as an empty brain."""
    brain = _brain(args)
    if not brain.dir.is_dir():
        named = (
            "--brain"
            if getattr(args, "brain", None)
            else "$MEMLANE_BRAIN_DIR"
            if os.environ.get("MEMLANE_BRAIN_DIR")
            else "the home's default"
        )
        raise FileNotFoundError(
            f"no brain folder at {brain.dir} ({named}): check the path, or start a brain with `memlane brain add`"
        )
    return brain


def emit(args: argparse.Namespace, payload: Any, text: str) -> None:
    """:func:`memlane.cli.emit` with secrets masked: what the brain commands print may reach an agent."""
    _emit(args, secrets.mask_json(payload), secrets.mask(text))


def _line(e: Entry) -> str:
    if e.withheld:
        return f"[{e.key}] withheld: {e.withheld} (it fails MemoryGuard: open {Path(e.source).name} to read or fix it)"
    state = (
        f" [superseded by {e.superseded_by}]" if e.superseded else (f" [{e.meta.get('status')}]" if e.resolved else "")
    )
    # Type and scope when they say more than the section's default; a bound project always.
    kind, scope, project = entry_type(e), entry_scope(e), entry_project(e)
    tags = [t for t in (kind if "type" in e.meta else "", scope if scope != DEFAULT_SCOPES[kind] or "scope" in e.meta else "",
                        f"project {project}" if project else "", f"from {e.meta['team']}" if e.meta.get("team") else "") if t]  # fmt: skip
    lines = [f"[{e.key}] {e.date or 'undated'} — {e.text}{state}" + (f" ({', '.join(tags)})" if tags else "")]
    if e.detail:
        lines.append(f"    Detail: {e.detail}")
    return "\n".join(lines)


def _entry_json(e: Entry) -> dict[str, Any]:
    # A withheld entry's words stay in the file: --json output may be read by an agent too.
    d = e.to_dict()
    if e.withheld:
        d.update(text=None, detail=None, extra=[])
    return d


def _key_errors(func: Any) -> Any:
    # The main CLI prints ValueError in one line; KeyError's str() would add quotes.
    def run(args: argparse.Namespace) -> int:
        try:
            return int(func(args))
        except KeyError as exc:
            raise InvalidArgumentError(exc.args[0] if exc.args else "no such entry") from None

    return run


def _cmd_show(args: argparse.Namespace) -> int:
    brain = _brain(args)
    if args.key:
        loaded = brain.load(args.key)
        text = "\n".join([_line(loaded[0]), *(f"  → {_line(e)}" for e in loaded[1:])])
        emit(args, {"entry": _entry_json(loaded[0]), "references": [_entry_json(e) for e in loaded[1:]]}, text)
        return 0
    entries = brain.entries(include_archived=args.archived, evolution=args.evolution)
    if args.section:
        spec, _ = brain._spec(args.section)
        entries = [e for e in entries if e.prefix == spec.prefix]
    if args.json:
        emit(args, {"brain": str(brain.dir), "entries": [_entry_json(e) for e in entries]}, "")
    elif args.section or args.archived:
        emit(args, None, "\n".join(_line(e) for e in entries) or "no entries")
    else:
        # As a session sees it: entries failing the guard withheld, secrets masked.
        text = brain.inject() if args.evolution else brain._screened(brain.memory_path, brain.memory_schema)
        emit(args, None, text.rstrip("\n") or f"no MEMORY.md yet in {brain.dir}: add one with `memlane brain add`")
    return 0


def _project_arg(value: str | None) -> str | None:
    """``--project``: a path (``.``, ``~/src/alpha``) names the repository around it; a name stays."""
    import os

    from memlane import _core

    if value is None or not (os.sep in value or value.startswith((".", "~"))):
        return value
    return _core.project_of(os.path.abspath(os.path.expanduser(value)))


def _advised(args: argparse.Namespace, brain: Brain, entry: Entry, text: str) -> None:
    """Print the entry, and warn when it holds what the repository already holds (what not to save)."""
    warnings = [f"{f.rule}: {f.excerpt!r}" for f in brain.advise(entry.text)]
    notes = "".join(
        f"\nwarning: {w} — the repository already holds this (code, paths, git history); memory is for what it "
        f"does not say: supersede or archive {entry.key} if so"
        for w in warnings
    )
    emit(args, {**_entry_json(entry), "warnings": warnings}, text + notes)


def _cmd_add(args: argparse.Namespace) -> int:
    brain = _brain(args)
    entry = brain.add(
        args.section,
        args.text,
        detail=args.detail,
        confidence=args.confidence,
        aliases=args.alias or [],
        on=args.date,
        type=args.type,
        scope=args.scope,
        project=_project_arg(args.project),
    )
    _advised(args, brain, entry, f"added {_line(entry)}")
    return 0


def _cmd_supersede(args: argparse.Namespace) -> int:
    brain = _existing_brain(args)
    new = brain.supersede(args.key, args.text, detail=args.detail, confidence=args.confidence, on=args.date)
    _advised(args, brain, new, f"{args.key.upper()} superseded by {_line(new)}")
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    from memlane.brain.team import export_team

    if args.scope != "team":
        raise InvalidArgumentError("private entries never leave this machine: only --scope team exports")
    r = export_team(_existing_brain(args), args.folder)
    state = "wrote" if r.changed else "unchanged:"
    emit(
        args,
        r.to_dict(),
        f"{state} {r.path}: {r.entries} team entries ({r.private_kept} private entries stay on this machine)",
    )
    return 0


def _cmd_import(args: argparse.Namespace) -> int:
    from memlane.brain.team import import_team

    r = import_team(_brain(args), args.folder)
    refused = f"; refused by MemoryGuard: {', '.join(r.refused)}" if r.refused else ""
    lines = [
        f"imported from {len(r.files)} files: {r.added} added, {r.updated} updated, {r.unchanged} unchanged{refused}"
    ]
    lines += [f"skipped {s['path']}: {s['reason']}" for s in r.skipped]
    lines += [f"left out {e['key']} of {e['path']}: {e['reason']}" for e in r.skipped_entries]
    emit(args, r.to_dict(), "\n".join(lines))
    # What was good is in; the exit status tells a script that not everything was.
    return 0 if r.complete else 1


def _cmd_resolve(args: argparse.Namespace) -> int:
    entry = _existing_brain(args).resolve(args.key, note=args.note, close=args.close, on=args.date)
    emit(args, _entry_json(entry), f"{entry.key} {entry.meta['status']}")
    return 0


def _cmd_archive(args: argparse.Namespace) -> int:
    brain = _existing_brain(args)
    moved = brain.archive(args.keys, on=args.date)
    text = (
        f"archived {', '.join(e.key for e in moved)} to {brain.archive_dir}"
        if moved
        else "nothing to archive: every section is within its cap"
    )
    emit(args, {"archived": [_entry_json(e) for e in moved]}, text)
    return 0


def _cmd_index(args: argparse.Namespace) -> int:
    brain = _existing_brain(args)
    n = brain.reindex()
    emit(args, {"entries": n, "path": str(brain.memory_path)}, f"index regenerated: {n} entries")
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    problems = _existing_brain(args).check()
    errors = sum(p.level == "error" for p in problems)
    text = "\n".join(f"{p.level:<7} {p.code:<18} {p.message}" for p in problems) or "ok: no problems"
    emit(
        args,
        {
            "ok": errors == 0,
            "errors": errors,
            "warnings": len(problems) - errors,
            "problems": [p.to_dict() for p in problems],
        },
        text,
    )
    return 1 if errors else 0


def _cmd_search(args: argparse.Namespace) -> int:
    if args.k < 1:
        raise InvalidArgumentError("-k must be at least 1")
    hits = _existing_brain(args).search(args.query, k=args.k)
    text = "\n".join(f"{s:.2f} {_line(e)}" for e, s in hits) or "no match"
    emit(args, [{**_entry_json(e), "score": round(s, 6)} for e, s in hits], text)
    return 0


def _cmd_tasks(args: argparse.Namespace) -> int:
    from memlane import _core
    from memlane.brain import tasks
    from memlane.brain.scopes import in_project

    home = Path(getattr(args, "home", None) or default_home())
    project = _core.project_of(str(Path.cwd())) if args.project == "." else args.project
    if args.export:
        doc = tasks.export(home, project)
        Path(args.export).write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        emit(
            args, {"path": args.export, "tasks": len(doc["tasks"])}, f"wrote {len(doc['tasks'])} tasks to {args.export}"
        )
        return 0
    found = tasks.tasks_of(home, project, include_closed=args.all)
    # Open threads the brain holds are open work too (the distiller and people write them).
    threads = [
        e
        for e in _brain(args).entries()
        if e.prefix == "OT" and e.active and not e.resolved and (project is None or in_project(e, [project]))
    ]
    lines = [
        f"[{t.status}] {t.description}  ({Path(t.project).name or 'no project'}, session {t.session_id[:8]}, {t.updated[:10]})"
        for t in found
    ]
    lines += [f"[open thread] {e.text}  ({e.key}, {e.date or 'undated'})" for e in threads]
    where = f" in {project}" if project else ""
    emit(
        args,
        {"tasks": [t.to_dict() for t in found], "open_threads": [_entry_json(e) for e in threads]},
        "\n".join(lines)
        or f"no open tasks{where}: the agents' plans (TodoWrite, update_plan) land here when their sessions are indexed",
    )
    return 0


def _cmd_status(args: argparse.Namespace) -> int:
    brain = _existing_brain(args)
    entries = brain.entries(include_archived=True, evolution=True)
    live = [e for e in entries if "Archives" not in Path(e.source).parts]
    sections = []
    for spec in brain.memory_schema.sections + brain.evolution_schema.sections:
        mine = [e for e in live if e.prefix == spec.prefix]
        sections.append(
            {
                "section": spec.name,
                "prefix": spec.prefix,
                "entries": len(mine),
                "active": sum(e.active for e in mine),
                "cap": spec.cap,
            }
        )
    events = summarize(brain.home)
    daily = sorted(brain.daily_dir.glob("*.md")) if brain.daily_dir.is_dir() else []
    payload = {
        "brain": str(brain.dir),
        "sections": sections,
        "archived": len(entries) - len(live),
        "daily_notes": len(daily),
        "events": events,
    }
    rows = "\n".join(
        f"  {s['prefix']:<4}{s['section']:<17}{s['entries']:>3} entries ({s['active']} active), cap {s['cap'] or '-'}"
        for s in sections
    )
    text = f"brain       {brain.dir}\n{rows}\narchived    {payload['archived']}  daily notes {len(daily)}\n{format_summary(events)}"
    emit(args, payload, text)
    return 0


def _cmd_distill(args: argparse.Namespace) -> int:
    from memlane.brain.distill import distill

    results = distill(
        args.source,
        brain=_brain(args),
        engine=args.engine,
        session_id=args.session,
        promote=not args.no_promote,
        tz=timezone.utc if args.utc else None,
        format=args.format,
        model_id=args.model,
        region=args.region,
    )
    lines = []
    for r in results:
        if r.skipped:
            lines.append(f"{r.session_id}: already distilled, nothing added")
            continue
        sup = ", ".join(f"{s['new']} supersedes {s['old']}" for s in r.superseded)
        extra = f"; {sup}" if sup else ""
        held = f"; {len(r.withheld)} line(s) withheld by MemoryGuard" if r.withheld else ""
        lines.append(f"{r.session_id}: {r.daily} {r.heading!r}; added {', '.join(r.added) or 'nothing'}{extra}{held}")
    emit(args, [r.to_dict() for r in results], "\n".join(lines))
    return 0


def add_parsers(sub: Any, parents: Sequence[argparse.ArgumentParser]) -> None:
    """Add ``brain`` (show, add, supersede, resolve, archive, index, check, search, status),
    ``tasks`` and ``distill`` to the main CLI's subparsers.

    Args:
        sub: The main parser's ``add_subparsers()`` object.
        parents: Parsers carrying the global ``--home`` and ``--json`` options.
    """
    where = argparse.ArgumentParser(add_help=False)
    where.add_argument(
        "--brain", default=argparse.SUPPRESS, help="brain folder (default: $MEMLANE_BRAIN_DIR or <home>/brain)"
    )
    where.add_argument(
        "--cap",
        action="append",
        default=argparse.SUPPRESS,
        metavar="PREFIX=N",
        help="override a section cap, e.g. KD=40 (repeatable)",
    )
    where.add_argument(
        "--char-cap",
        action="append",
        default=argparse.SUPPRESS,
        metavar="PREFIX=N",
        help="override a section's character cap, e.g. KD=3000 (repeatable; also $MEMLANE_CHAR_CAPS)",
    )
    common = [*parents, where]

    brain = sub.add_parser(
        "brain",
        parents=common,
        help="MEMORY.md and EVOLUTION.md: show, add, supersede, resolve, archive, export, import, index, check",
    )
    actions = brain.add_subparsers(dest="brain_command", required=True, metavar="ACTION")

    def dated(p: argparse.ArgumentParser) -> None:
        p.add_argument("--date", help="date of the change, YYYY-MM-DD (default today)")

    p = actions.add_parser("show", parents=common, help="print MEMORY.md, a section, or one entry with its references")
    p.add_argument("key", nargs="?", help="an entry key (KD07): show it and up to 3 entries it references")
    p.add_argument("--section", help="only this section (KD, Lessons Learned, …)")
    p.add_argument("--evolution", action="store_true", help="include EVOLUTION.md")
    p.add_argument("--archived", action="store_true", help="include archived entries")
    p.set_defaults(func=_key_errors(_cmd_show))

    p = actions.add_parser("add", parents=common, help="add an entry (next key, valid from today)")
    p.add_argument("section", help="COE, KD, LL, RC, OT (MEMORY.md) or CR, CP, FA (EVOLUTION.md), or a section name")
    p.add_argument("text", help="one line")
    p.add_argument("--detail", help="provenance: 'path § heading' or 'transcript SESSION turns A-B'")
    p.add_argument("--confidence", choices=["high", "medium", "low"])
    p.add_argument("--alias", action="append", help="extra keyword for the index (repeatable)")
    p.add_argument(
        "--type",
        choices=["user", "feedback", "project", "reference"],
        help="what it is about (default: the section's: project, or feedback for CR/CP)",
    )
    p.add_argument(
        "--scope",
        choices=["private", "team"],
        help="who may see it (default: the type's: user and feedback private, project and reference team)",
    )
    p.add_argument(
        "--project",
        help="bind a project or reference entry to a project (a name, or . for this directory's): injected only there",
    )
    dated(p)
    p.set_defaults(func=_key_errors(_cmd_add))

    p = actions.add_parser("supersede", parents=common, help="replace an entry; the old one stays, marked superseded")
    p.add_argument("key", help="the entry to supersede (KD07)")
    p.add_argument("text", help="the new entry, one line")
    p.add_argument("--detail")
    p.add_argument("--confidence", choices=["high", "medium", "low"])
    dated(p)
    p.set_defaults(func=_key_errors(_cmd_supersede))

    p = actions.add_parser("resolve", parents=common, help="resolve (or --close) an open thread")
    p.add_argument("key", help="an open thread (OT03)")
    p.add_argument("--note", help="how it was resolved")
    p.add_argument("--close", action="store_true", help="closed without resolution")
    dated(p)
    p.set_defaults(func=_key_errors(_cmd_resolve))

    p = actions.add_parser("archive", parents=common, help="move over-cap (or named) entries to Archives/")
    p.add_argument("keys", nargs="*", help="entries to archive (default: what each over-cap section may give up)")
    dated(p)
    p.set_defaults(func=_key_errors(_cmd_archive))

    p = actions.add_parser(
        "export", parents=common, help="write your team entries to a shared folder (one markdown file per person)"
    )
    p.add_argument("folder", metavar="DIR", help="the shared folder (a git checkout, a synced drive)")
    p.add_argument(
        "--scope", choices=["team", "private"], default="team", help="team (the only one that leaves the machine)"
    )
    p.set_defaults(func=_key_errors(_cmd_export))

    p = actions.add_parser(
        "import", parents=common, help="bring the team entries of everyone else's files in DIR into your brain"
    )
    p.add_argument("folder", metavar="DIR", help="the shared folder")
    p.set_defaults(func=_key_errors(_cmd_import))

    p = actions.add_parser("index", parents=common, help="regenerate the compact index at the top of MEMORY.md")
    p.set_defaults(func=_key_errors(_cmd_index))

    p = actions.add_parser(
        "check", parents=common, help="validate: unique keys, caps, references, guard re-scan (exit 1 on errors)"
    )
    p.set_defaults(func=_key_errors(_cmd_check))

    p = actions.add_parser("search", parents=common, help="keyword search over entries (superseded ones weigh 0.1)")
    p.add_argument("query")
    p.add_argument("-k", type=int, default=10, help="results wanted (default 10)")
    p.set_defaults(func=_key_errors(_cmd_search))

    p = actions.add_parser(
        "status", parents=common, help="entries per section, archives, daily notes and memory events"
    )
    p.set_defaults(func=_key_errors(_cmd_status))

    p = sub.add_parser(
        "tasks",
        parents=common,
        help="open work carried across sessions: the agents' own plans (TodoWrite, update_plan) and open threads",
    )
    p.add_argument("--project", help="only this project (a name, a repository path, or . for this directory's)")
    p.add_argument("--all", action="store_true", help="closed tasks too (completed, dropped)")
    p.add_argument(
        "--export",
        metavar="FILE",
        help="write the project's tasks as tasks.json (id, priority, status, description, …)",
    )
    p.set_defaults(func=_key_errors(_cmd_tasks))

    p = sub.add_parser("distill", parents=common, help="turn a session into a DailyActivity note and MEMORY.md entries")
    p.add_argument(
        "source", metavar="SESSION_OR_PATH", help="a transcript file, or the id of a session indexed in --home"
    )
    p.add_argument(
        "--engine",
        choices=["extractive", "bedrock"],
        default="extractive",
        help="extractive (offline, default) or bedrock (LLM)",
    )
    p.add_argument("--model", help="Bedrock model id (default $MEMLANE_BEDROCK_MODEL or a Claude Haiku model)")
    p.add_argument("--region", help="AWS region for Bedrock")
    p.add_argument("--session", help="only this session of the file")
    p.add_argument("--format", choices=TRANSCRIPT_FORMATS, help="force the transcript format")
    p.add_argument("--no-promote", action="store_true", help="write the DailyActivity note only")
    p.add_argument("--utc", action="store_true", help="date and time the note in UTC instead of local time")
    p.set_defaults(func=_cmd_distill)
