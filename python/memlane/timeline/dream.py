"""Dreaming: an asynchronous pass that keeps the wiki current from what memory lived and was asked.

Signals, read from what is new since the last run's watermark (dailies after its day, search
events after its byte offset in ``events.jsonl``):

* **decision markers** (:mod:`memlane.timeline.decisions`): "we decided to use X as the S", "switched the S from X to Y",
  "replaced X with Y for the S" → a subject page ``S`` whose value changes with a supersession
  (both values kept with their dates); a new value stated with no change language is a
  **contradiction flag**, not a silent overwrite;
* **entity scans**: names (``DynamoDB``, ``OPS-4821``, ``GitHub Actions``) in at least
  :data:`MIN_ENTITY_DAILIES` dailies → an entity page citing them (a stub, synthesized from three);
* **the search log**: how often a question was asked and how varied the questions are, the
  questions memory could not answer (no hit), and bursts of the same question (temporal clusters);
* **stale pages** (:meth:`memlane.timeline.wiki.Wiki.lint`).

Candidates are scored (marker strength, sources, how often they were searched) and the best
:data:`MAX_OPERATIONS` become wiki operations. The run writes a ``DREAMS.md`` diary entry
(what it did, proposed and flagged, the unanswered questions) and publishes only through the
gate (:mod:`memlane.timeline.gate`). The lease, cooldown, watermark, retries and the token
ledger are the caller's (``memlane dream`` runs it under :mod:`memlane.timeline.lease`).

Example:
    >>> [(d.subject, d.value, d.change) for d in decisions("We switched the billing database from Postgres to DynamoDB.")]
    [('billing database', 'DynamoDB', True)]
"""

from __future__ import annotations

import re
import stat
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import date, datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlane import secrets
from memlane.brain.brain import DAILY_DIR
from memlane.brain.provenance import Ref
from memlane.events import EVENTS_NAME, parse_lines
from memlane.timeline import notes
from memlane.timeline.decisions import Decision, decisions
from memlane.timeline.engines import Engine, Source, _sentences, dropped_for_details, make_engine
from memlane.timeline.wiki import Page, Wiki, slugify

if TYPE_CHECKING:
    from memlane.brain import Brain
    from memlane.memory import Memory

DREAMS_FILE = "DREAMS.md"
MAX_OPERATIONS = 60
MIN_ENTITY_DAILIES = 3
MAX_ENTITY_SOURCES = 12
FREQUENT = 3
_ENTITY = re.compile(
    r"\b(?:[A-Z][a-z]+[A-Z]\w*|[A-Z]{3,}[a-z]*\d*|[A-Z][A-Z0-9]+-\d+|[A-Z][a-z]{2,}(?: [A-Z][a-z]+)?)\b"
)
_COMMON = frozenset(
    [
        "The",
        "We",
        "Our",
        "This",
        "That",
        "Set",
        "Added",
        "Opened",
        "Raised",
        "Capped",
        "Moved",
        "Replaced",
        "Reviewed",
        "Standup",
        "Paired",
        "Cleaned",
        "Read",
        "Triaged",
        "Updated",
        "Done",
        "Decisions",
        "Outcome",
        "Asked",
        "Files",
        "Commands",
        "Lunch",
        "Turns",
        "Nothing",
    ]
)


@dataclass
class DreamReport:
    """What a dream run did (or would do, with ``dry_run``)."""

    run: str
    dry_run: bool
    operations: list[dict[str, Any]] = field(default_factory=list)
    unanswered: list[str] = field(default_factory=list)
    frequent: list[dict[str, Any]] = field(default_factory=list)
    clusters: list[dict[str, Any]] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    contradictions: list[str] = field(default_factory=list)
    dropped: list[dict[str, str]] = field(default_factory=list)
    gate: dict[str, Any] | None = None
    refused: str | None = None
    published: bool = False
    watermark: dict[str, Any] = field(default_factory=dict)
    usage: dict[str, Any] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        """Operations by kind."""
        return dict(Counter(o["op"] for o in self.operations))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return asdict(self)


def _search_signals(home: Path, offset: int) -> tuple[list[dict[str, Any]], int]:
    """Search events after byte ``offset`` of the events log, and the new offset. When the log
    rotated since (it is shorter than ``offset``), the rest of the rotated file comes first,
    then the new one from its start."""
    path = home / EVENTS_NAME
    try:
        size = path.stat().st_size
    except OSError:
        return [], offset
    if size < offset:
        older, _ = _searches_from(path.with_name(f"{path.name}.1"), offset)
        newer, end = _searches_from(path, 0)
        return older + newer, end
    return _searches_from(path, offset)


def _searches_from(path: Path, offset: int) -> tuple[list[dict[str, Any]], int]:
    """The search events of ``path`` after byte ``offset``, and the offset after its last whole line."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):  # a FIFO would wait for a writer
            return [], offset
        with path.open("rb") as f:
            f.seek(offset)
            data = f.read()
    except OSError:
        return [], offset
    searches, end = parse_lines(data, "search")  # a torn last line waits for the next run
    return [e for e in searches if isinstance(e.get("query"), str)], offset + end


def _norm(query: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", query.lower()))


def dream(
    mem: Memory,
    brain: Brain,
    *,
    engine: str | Engine = "offline",
    dry_run: bool = False,
    force: bool = False,
    today: date | None = None,
    watermark: dict[str, Any] | None = None,
    budget: int | None = None,
    questions: Sequence[Any] | None = None,
    before_publish: Callable[[], None] | None = None,
) -> DreamReport:
    """One dream run (see the module doc).

    Args:
        mem: The home: its search log is read, the pages are indexed into it.
        brain: The brain whose dailies are read and whose wiki is written.
        engine: Writes a synthesized page's facts (``offline`` by default).
        dry_run: Only say what would be done.
        force: Publish even when the gate measures a loss.
        today: For staleness (default today).
        watermark: Where the last successful run stopped (``{"daily", "events"}``); default: the start.
        budget: Tokens the engine may spend; pages that do not fit stay stubs.
        questions: The gate's questions (default: the home's probe set).
        before_publish: Called right before writing (the lease's check).
    """
    from memlane.timeline import gate

    eng = make_engine(engine)
    today = today or date.today()
    mark = dict(watermark or {})
    report = DreamReport(uuid.uuid4().hex[:12], dry_run)
    wiki = Wiki(brain)
    pages = {p.slug: p for p in wiki.pages()}
    touched: dict[str, str] = {}

    def page(name: str, category: str) -> Page:
        slug = slugify(name)
        if slug not in pages:
            pages[slug] = Page(name, category)
        return pages[slug]

    days = notes.dailies(brain.dir)
    new_days = [d for d in days if mark.get("daily") is None or d.isoformat() > mark["daily"]]
    # (score, order of reading, label, operation): the best are chosen, then applied in the order
    # read, so a subject's values are seen oldest first.
    candidates: list[tuple[float, int, str, Callable[[], str | None]]] = []
    mentions: dict[str, dict[str, str]] = {}
    for day in sorted(days):
        _, sections = notes.read_note(days[day], brain.dir)
        for s in sections:
            for sentence in _sentences(s.text):
                if day in new_days:
                    for d in decisions(sentence):

                        def apply(d: Decision = d, ref: str = str(s.ref)) -> str | None:
                            p = page(d.subject, "concept")
                            outcome = p.set_value(d.value, ref, secrets.mask(d.sentence), change=d.change)
                            if outcome == "contradiction":
                                report.contradictions.append(
                                    f"{p.name}: {ref} says {d.value}, the page says {p.current['value'] if p.current else '?'}"
                                )
                            return (
                                None
                                if outcome == "same"
                                else (
                                    "supersede"
                                    if outcome == "superseded"
                                    else "value"
                                    if outcome == "first"
                                    else "flag"
                                )
                            )

                        candidates.append((3.0 + d.change, len(candidates), f"{d.subject}: {d.value}", apply))
                for m in _ENTITY.finditer(sentence):
                    name = m.group(0)
                    if name not in _COMMON and not name.isdigit():
                        mentions.setdefault(name, {}).setdefault(str(s.ref), sentence)
    events, offset = _search_signals(mem.home, int(mark.get("events") or 0))
    asked = Counter(_norm(e["query"]) for e in events)
    report.unanswered = sorted({e["query"] for e in events if e.get("results") == 0})[:50]
    report.frequent = [{"query": q, "times": n} for q, n in asked.most_common(20) if n >= FREQUENT]
    report.clusters = _clusters(events)
    # Entity pages: names in enough dailies, at least one of them new; searched names first.
    new_refs = {f"{DAILY_DIR}/{d.isoformat()}.md" for d in new_days}
    for name, refs in mentions.items():
        files = {r.split(" › ")[0] for r in refs}
        if len(files) < MIN_ENTITY_DAILIES or not files & new_refs:
            continue
        searched = sum(n for q, n in asked.items() if name.lower() in q)

        def make(name: str = name, refs: dict[str, str] = refs) -> str | None:
            p = page(name, "entity")
            before = (list(p.sources), list(p.facts))
            chosen = sorted(refs)[-MAX_ENTITY_SOURCES:]
            for r in chosen:
                p.add_source(r)
            p.facts = _facts(eng, name, [(r, refs[r]) for r in chosen], report, budget)
            return None if (p.sources, p.facts) == before else "entity"

        candidates.append((1.0 + len(files) / 10 + searched, len(candidates), name, make))
    chosen = sorted(candidates, key=lambda c: (-c[0], c[1]))[:MAX_OPERATIONS]
    for _, _, _, operation in sorted(chosen, key=lambda c: c[1]):
        op = operation()
        if op is not None:
            report.operations.append({"op": op})
    for p in pages.values():
        text = p.render()
        path = wiki.path(p.name)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            touched[p.slug] = text
    report.stale = [x["message"] for x in wiki.lint(today) if x["problem"] == "stale"]
    report.watermark = {"daily": max(days).isoformat() if days else mark.get("daily"), "events": offset}
    report.usage = eng.usage.to_dict()
    staged = {wiki.path(pages[slug].name): text for slug, text in touched.items()}
    if dry_run or not staged:
        if not dry_run:
            _diary(brain, report, today)
        return report
    result = gate.evaluate(
        mem, brain.dir, staged, questions if questions is not None else gate.questions_for(mem, brain.dir)
    )
    report.gate = result.to_dict()
    if result.lowers and not force:
        report.refused = f"recall@{result.k} would fall from {result.before:.3f} to {result.after:.3f}"
        _diary(brain, report, today)
        return report
    if before_publish is not None:
        before_publish()
    from memlane.timeline.publish import index_summaries, publish

    publish(brain, staged, "dream")
    report.published = True
    index_summaries(mem, list(staged))
    _diary(brain, report, today)
    return report


def _facts(
    eng: Engine, name: str, sources: list[tuple[str, str]], report: DreamReport, budget: int | None
) -> list[tuple[str, list[str]]]:
    """A page's facts: the sentences naming it (a stub), or an engine's choice from them (three sources or more)."""
    srcs = [Source(Ref(*r.split(" › ", 1)) if " › " in r else Ref(r), text) for r, text in sources]
    if len(srcs) < 3 or (budget is not None and eng.usage.tokens + eng.estimate("wiki", name, srcs) > budget):
        return [(secrets.mask(text), [r]) for r, text in sources]
    out = []
    for st in eng.summarize("wiki", name, srcs, limit=8):
        cited = " ".join(s.text for s in srcs if s.ref in st.refs)
        if record := dropped_for_details(st.text, cited):
            report.dropped.append(record)
            continue
        out.append((secrets.mask(st.text), [str(r) for r in st.refs]))
    return out


def _clusters(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same question asked three times or more within an hour."""
    times: dict[str, list[datetime]] = {}
    for e in events:
        try:
            t = datetime.fromisoformat(str(e.get("time", "")).replace("Z", "+00:00"))
        except ValueError:
            continue
        times.setdefault(_norm(e["query"]), []).append(t)
    out = []
    for q, ts in times.items():
        ts.sort()
        for i in range(len(ts) - 2):
            if (ts[i + 2] - ts[i]).total_seconds() <= 3600:
                out.append({"query": q, "from": ts[i].isoformat(), "times": len(ts)})
                break
    return out[:20]


def _diary(brain: Brain, report: DreamReport, today: date) -> None:
    """Append the run's entry to DREAMS.md (through the brain transaction)."""
    path = brain.dir / DREAMS_FILE
    stamp = datetime.now(timezone.utc).strftime("%H:%M")
    lines = [f"\n## {today.isoformat()} {stamp} run {report.run}\n"]
    state = (
        "published" if report.published else (f"refused: {report.refused}" if report.refused else "nothing to publish")
    )
    lines.append(f"- Result: {state}; operations {report.counts() or 'none'}\n")
    if report.gate:
        lines.append(
            f"- Gate: recall@{report.gate['k']} {report.gate['before']:.3f} -> {report.gate['after']:.3f} on {report.gate['questions']} questions\n"
        )
    lines += [f"- Contradiction: {c}\n" for c in report.contradictions[:20]]
    lines += [f"- Unanswered: {secrets.mask(q)}\n" for q in report.unanswered[:20]]
    lines += [f"- Asked often: {secrets.mask(f['query'])} ({f['times']} times)\n" for f in report.frequent[:10]]
    lines += [f"- Stale: {s}\n" for s in report.stale[:20]]
    lines.append(
        f"- Watermark: daily {report.watermark.get('daily')}, events offset {report.watermark.get('events')}\n"
    )
    with brain.transaction(today) as txn:
        old = txn.text(path) or "# DREAMS\n\nOne entry per `memlane dream` run: what it did, proposed and flagged.\n"
        txn.put(path, old + "".join(lines))


def dream_status(home: Path, brain_dir: Path) -> dict[str, Any]:
    """The dream job's lease, state and ledger, and the last DREAMS.md entry."""
    from memlane.timeline.lease import Jobs

    jobs = Jobs(home)
    text = (brain_dir / DREAMS_FILE).read_text(encoding="utf-8") if (brain_dir / DREAMS_FILE).exists() else ""
    last = text[text.rfind("\n## ") + 1 :] if "\n## " in text else ""
    return {"state": jobs.status("dream"), "ledger": jobs.ledger("dream", limit=5), "last_entry": last.strip()}
