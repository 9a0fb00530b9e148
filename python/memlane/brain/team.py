"""Team memory: team-scoped brain entries exported to a shared folder, and imported from it.

``memlane brain export --scope team DIR`` writes one plain markdown file per person,
``DIR/<name>-<id>.md``, holding that person's team entries of MEMORY.md and EVOLUTION.md
(private entries never leave the machine). Each entry's team key is its local key and the
person's id, ``KD07-3f9a2c1d``: local keys are never reused, and the id (8 random hex digits,
made once per brain in ``<brain>/team.json``) is the person's, so keys are stable and cannot
collide between people. Only its owner rewrites a file, sections in order and entries by key,
with no timestamp: two people's exports never conflict in git, and an export with nothing new
changes nothing.

``memlane brain import DIR`` reads everyone else's files. A team entry seen for the first time
becomes a local entry under the section's next key, with ``team: KD07-3f9a2c1d`` in its
metadata; seen again, its local copy follows the owner's text and state (superseded, resolved).
Every imported line passes MemoryGuard like any other write; an entry that fails it is skipped
and named. Imported entries are not exported again: they are their owner's.

The folder is shared, so anyone (or a bad merge) may have put anything in it: each file is read
on its own, and one that is not a team file — not UTF-8 text, without the header export writes,
holding a line that is no entry (a git conflict marker), not a regular file — is skipped with its
reason while the others are imported. Only what export itself writes is taken from a good file:
entries marked ``scope: team``, keyed with the file owner's id (the header's); any other entry
is left out and named.

Example:
    >>> import tempfile
    >>> from memlane.brain import Brain
    >>> alice, bob = (Brain(tempfile.mkdtemp(), home=tempfile.mkdtemp()) for _ in range(2))
    >>> _ = alice.add("kd", "Billing uses Postgres 16.", project="billing", on="2026-04-01")
    >>> _ = alice.add("ll", "I like terse answers.", type="user", on="2026-04-01")
    >>> shared = tempfile.mkdtemp()
    >>> export_team(alice, shared).entries
    1
    >>> report = import_team(bob, shared)
    >>> report.added, [(e.text, e.meta["project"]) for e in bob.entries()]
    (1, [('Billing uses Postgres 16.', 'billing')])
"""

from __future__ import annotations

import getpass
import json
import re
import secrets as random
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from memlane._fs import atomic_write, read_text
from memlane.brain.brain import Brain, Transaction
from memlane.brain.document import Entry, Schema, parse_meta, render_meta
from memlane.brain.scopes import entry_scope, entry_type
from memlane.errors import MemlaneError

IDENTITY_FILE = "team.json"
"""In the brain folder: who exports (``{"name", "id"}``), made on the first export or import."""

_TEAM_KEY = re.compile(r"^(?P<key>[A-Z]{1,5}\d{1,5})-(?P<id>[0-9a-f]{8})$")
# The first line export writes (see _render): whose file it is.
_HEADER = re.compile(r"^# Team memory · (?P<name>[A-Za-z0-9_.-]+)-(?P<id>[0-9a-f]{8})[ \t]*$")
HEADER_EXAMPLE = "# Team memory · NAME-0123abcd"
# A merge git could not finish leaves these in the file: its entries cannot be trusted.
_CONFLICT = re.compile(r"^(?:<{7}|={7}|>{7})(?:[ \t]|$)")
_LINE = re.compile(
    r"^- \[(?P<key>[A-Z]{1,5}\d{1,5}-[0-9a-f]{8})\][ \t]*(?:(?P<date>\d{4}-\d{2}-\d{2})[ \t]*)?(?:—[ \t]*)?(?P<text>.*?)\s*$"
)
_HEADING = re.compile(r"^##[ \t]+(?P<name>.*?)[ \t#]*$")
# Metadata that is about this machine's copy, not the memory: not shared.
_LOCAL_META = ("team", "author", "archived")
# Metadata naming other entries: rewritten between local and team keys.
_LINKS = ("supersedes", "superseded_by")


@dataclass
class ExportReport:
    """What :func:`export_team` wrote."""

    path: str
    entries: int
    private_kept: int
    """Private entries left on this machine."""
    changed: bool

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return asdict(self)


@dataclass
class ImportReport:
    """What :func:`import_team` did."""

    files: list[str] = field(default_factory=list)
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    refused: list[str] = field(default_factory=list)
    """Team keys whose text fails MemoryGuard, each with the rule: not imported."""
    skipped: list[dict[str, str]] = field(default_factory=list)
    """Files not read, ``{"path", "reason"}``: not team files (see the module doc)."""
    skipped_entries: list[dict[str, str]] = field(default_factory=list)
    """Entries of good files left out, ``{"path", "key", "reason"}``: not team-scoped, or not the owner's."""
    private_skipped: int = 0
    """How many of those were not marked ``scope: team``."""

    @property
    def complete(self) -> bool:
        """Whether every file and entry in the folder was taken (nothing skipped or refused)."""
        return not (self.skipped or self.skipped_entries or self.refused)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return asdict(self)


def identity(brain: Brain) -> dict[str, str]:
    """This brain's team identity ``{"name", "id"}``, made once (name: the login; id: random)."""
    path = brain.dir / IDENTITY_FILE
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(found, dict) and re.fullmatch(r"[0-9a-f]{8}", str(found.get("id"))):
            return {"name": str(found.get("name") or "someone"), "id": str(found["id"])}
    except (OSError, ValueError):
        pass
    try:
        login = getpass.getuser()
    except (KeyError, OSError):
        login = "someone"
    made = {"name": re.sub(r"[^A-Za-z0-9_.-]+", "-", login).strip("-.") or "someone", "id": random.token_hex(4)}
    brain.dir.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps(made) + "\n")
    return made


def _team_key(entry: Entry, author: str) -> str:
    return entry.meta.get("team") or f"{entry.key}-{author}"


def _render(brain: Brain, who: dict[str, str], entries: list[Entry]) -> str:
    keys = {e.key: _team_key(e, who["id"]) for e in entries}
    lines = [
        f"# Team memory · {who['name']}-{who['id']}\n",
        "\n",
        "<!-- memlane team memory: one file per person, rewritten by `memlane brain export --scope team`; "
        "read by `memlane brain import`. Change these entries with memlane in their owner's brain, not here. -->\n",
    ]
    for schema in (brain.memory_schema, brain.evolution_schema):
        for spec in schema.sections:
            mine = sorted((e for e in entries if e.prefix == spec.prefix), key=lambda e: e.number)
            if not mine:
                continue
            lines += ["\n", f"## {spec.name}\n"]
            for e in mine:
                meta = {k: v for k, v in e.meta.items() if k not in _LOCAL_META}
                meta.update({k: keys.get(v, v) for k, v in meta.items() if k in _LINKS})
                meta |= {"type": entry_type(e), "scope": "team"}
                lines.append(f"- [{keys[e.key]}] {e.date} — {e.text}\n" if e.date else f"- [{keys[e.key]}] {e.text}\n")
                lines += [f"  {x}\n" for x in e.extra]
                if e.detail:
                    lines.append(f"  Detail: {e.detail}\n")
                lines.append(f"  {render_meta(meta)}\n")
    return "".join(lines)


def export_team(brain: Brain, folder: str | Path) -> ExportReport:
    """Write this brain's team entries to ``folder/<name>-<id>.md`` (private ones stay here).

    Returns:
        The file, how many entries it holds, how many private ones were kept back, and
        whether it changed.
    """
    who = identity(brain)
    every = brain.entries(evolution=True)
    own = [e for e in every if not e.withheld and not e.meta.get("team")]
    team = [e for e in own if entry_scope(e) == "team"]
    text = _render(brain, who, team)
    folder = Path(folder).expanduser()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{who['name']}-{who['id']}.md"
    changed = read_text(path) != text
    if changed:
        brain.guard.check(text, path=str(path))  # the brain's text passed it already: a second look costs little
        atomic_write(path, text)
    brain.log("export", path=str(path), entries=len(team), private=len(own) - len(team))
    return ExportReport(str(path), len(team), len(own) - len(team), changed)


def read_team_file(text: str, schema: Schema, evolution: Schema) -> list[Entry]:
    """The entries of one team file, keyed by team key (``KD07-3f9a2c1d``), with their section.

    Example:
        >>> from memlane.brain.document import EVOLUTION_SCHEMA, MEMORY_SCHEMA
        >>> text = "## Key Decisions\\n- [KD07-3f9a2c1d] 2026-04-02 — Use uv.\\n  <!-- scope: team -->\\n"
        >>> [(e.key, e.text, e.section) for e in read_team_file(text, MEMORY_SCHEMA, EVOLUTION_SCHEMA)]
        [('KD07-3f9a2c1d', 'Use uv.', 'Key Decisions')]
    """
    out: list[Entry] = []
    section = ""
    current: Entry | None = None
    for line in text.splitlines():
        if m := _HEADING.match(line):
            spec = schema.by_heading(m.group("name")) or evolution.by_heading(m.group("name"))
            section, current = (spec.name if spec else ""), None
        elif (m := _LINE.match(line)) and section:
            current = Entry(m.group("key"), m.group("date"), m.group("text"), section=section)
            out.append(current)
        elif current is not None and line[:1] in (" ", "\t") and line.strip():
            body = line.strip()
            if body[:7].lower() == "detail:" and current.detail is None:
                current.detail = body[7:].strip() or None
            elif (meta := parse_meta(body)) is not None and not current.meta:
                current.meta = meta
            else:
                current.extra.append(body)
        else:
            current = None
    return out


class NotATeamFileError(MemlaneError, ValueError):
    """A file of the team folder that :func:`import_team` skips; the message says why."""


def read_team_export(path: Path, schema: Schema, evolution: Schema) -> tuple[str, list[Entry]]:
    """The owner's id (from the header) and the entries of one file export wrote.

    Stricter than :func:`read_team_file`, which reads what it can: a shared folder may hold
    anything, and a file export did not write is refused whole rather than half read.

    Raises:
        NotATeamFileError: Not a regular file, unreadable, not UTF-8 text, no team header, or a
            line that is neither an entry nor a known section (a git conflict marker).

    Example:
        >>> import tempfile
        >>> from memlane.brain.document import EVOLUTION_SCHEMA, MEMORY_SCHEMA
        >>> path = Path(tempfile.mkdtemp()) / "notes.md"
        >>> _ = path.write_text("## Key Decisions\\n- [KD07-3f9a2c1d] Use uv.\\n")
        >>> read_team_export(path, MEMORY_SCHEMA, EVOLUTION_SCHEMA)
        Traceback (most recent call last):
        memlane.brain.team.NotATeamFileError: no team header (export starts its files with '# Team memory · NAME-0123abcd')
    """
    if not path.is_file():
        raise NotATeamFileError("not a regular file")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise NotATeamFileError(f"unreadable ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotATeamFileError(f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start})") from None
    if "\x00" in text:
        raise NotATeamFileError("binary (it holds NUL bytes)")
    lines = text.splitlines()
    header = _HEADER.match(lines[0]) if lines else None
    if header is None:
        raise NotATeamFileError(f"no team header (export starts its files with {HEADER_EXAMPLE!r})")
    section = False
    for n, line in enumerate(lines[1:], 2):
        if _CONFLICT.match(line):
            raise NotATeamFileError(f"line {n} is a git conflict marker: finish the merge first")
        if m := _HEADING.match(line):
            section = bool(schema.by_heading(m.group("name")) or evolution.by_heading(m.group("name")))
            if not section:
                raise NotATeamFileError(f"line {n}: unknown section {m.group('name')!r}")
        elif line.startswith("- [") and not (section and _LINE.match(line)):
            raise NotATeamFileError(
                f"line {n} is not a team entry ('- [KD07-3f9a2c1d] YYYY-MM-DD — text' under a section)"
            )
    return header.group("id"), read_team_file(text, schema, evolution)


def _local_meta(theirs: Entry, links: dict[str, str]) -> dict[str, str]:
    meta = {k: v for k, v in theirs.meta.items() if k not in _LOCAL_META and k not in _LINKS}
    meta.update({k: links[theirs.meta[k]] for k in _LINKS if theirs.meta.get(k) in links})
    return meta | {"scope": "team", "team": theirs.key}


def import_team(brain: Brain, folder: str | Path) -> ImportReport:
    """Bring everyone else's team entries from ``folder`` into this brain (see the module doc).

    Files that are not team files, and entries a good file should not hold, are skipped and
    listed in the report (:attr:`ImportReport.skipped`, :attr:`ImportReport.skipped_entries`);
    the rest is imported.

    Raises:
        FileNotFoundError: ``folder`` does not exist.
        CapError: A section would pass its character cap; nothing is imported.
    """
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise FileNotFoundError(f"no team folder at {folder}")
    me = identity(brain)["id"]
    report = ImportReport()
    incoming: list[Entry] = []
    owners: dict[str, str] = {}
    for path in sorted(folder.glob("*.md")):
        try:
            owner, entries = read_team_export(path, brain.memory_schema, brain.evolution_schema)
        except NotATeamFileError as exc:
            report.skipped.append({"path": str(path), "reason": str(exc)})
            continue
        if owner == me:
            continue  # this brain's own export
        if owner in owners:
            report.skipped.append(
                {"path": str(path), "reason": f"a second file of {owner} (the first: {owners[owner]})"}
            )
            continue
        owners[owner] = str(path)
        if entries:
            report.files.append(str(path))
        for e in entries:
            if rule := next((f.rule for f in brain.guard.scan("\n".join([e.text, e.detail or "", *e.extra]))), None):
                report.refused.append(f"{e.key} ({rule})")
            elif (m := _TEAM_KEY.match(e.key)) is None or m.group("id") != owner:
                # Only its owner writes a file: a key of someone else's would overwrite their entry here.
                report.skipped_entries.append(
                    {"path": str(path), "key": e.key, "reason": f"not keyed with the file owner's id {owner}"}
                )
            elif e.meta.get("scope") != "team":
                report.private_skipped += 1
                scope = e.meta.get("scope")
                reason = f"scope: {scope} (only team entries are shared)" if scope else "not marked scope: team"
                report.skipped_entries.append({"path": str(path), "key": e.key, "reason": reason})
            else:
                incoming.append(e)
    with brain.transaction() as txn:
        _merge(brain, txn, incoming, report)
    return report


def _merge(brain: Brain, txn: Transaction, incoming: list[Entry], report: ImportReport) -> None:
    docs = {False: txn.memory, True: txn.evolution}
    local = {e.meta["team"]: (e, evolution) for evolution, d in docs.items() for e in d.entries() if e.meta.get("team")}
    # A copy this brain archived stays archived: importing it again would undo the archive.
    archived = {e.meta["team"] for e in brain._archived() if e.meta.get("team")} - set(local)
    report.unchanged += sum(theirs.key in archived for theirs in incoming)
    incoming = [theirs for theirs in incoming if theirs.key not in archived]
    fresh = set()
    for theirs in incoming:  # first every key, so links between team entries find their local key
        if theirs.key not in local:
            spec, evolution = brain._spec(theirs.section)
            local[theirs.key] = (brain._new_entry(txn, spec, evolution, theirs.text, theirs.detail, {}), evolution)
            fresh.add(theirs.key)
    links = {key: mine.key for key, (mine, _) in local.items()}
    for theirs in incoming:
        mine, evolution = local[theirs.key]
        meta = _local_meta(theirs, links)
        if "superseded_by" not in meta and mine.meta.get("superseded_by"):
            # Superseded here, by an entry of this brain: the owner's copy cannot know.
            meta |= {k: mine.meta[k] for k in ("superseded_by", "valid_until") if k in mine.meta}
        new = Entry(mine.key, theirs.date, theirs.text, theirs.detail, meta, list(theirs.extra))
        if theirs.key in fresh:
            report.added += 1
        elif (mine.date, mine.text, mine.detail, mine.meta, mine.extra) == (
            new.date,
            new.text,
            new.detail,
            new.meta,
            new.extra,
        ):
            report.unchanged += 1
            continue
        else:
            report.updated += 1
        docs[evolution].replace(mine.key, new)
        txn.event("import", key=mine.key, team=theirs.key)
    for evolution in (False, True):
        brain._archive_overflow(txn, evolution)
        for spec in (brain.evolution_schema if evolution else brain.memory_schema).sections:
            brain._check_chars(txn, evolution, spec)
