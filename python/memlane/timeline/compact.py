"""Compaction: dailies → weeklies → monthlies → WISDOM.md, never touching a daily.

* ``Weekly/YYYY-Www.md`` for each complete ISO week with at least :data:`MIN_DAILIES` dailies;
* ``Monthly/YYYY-MM.md`` for each complete month with at least :data:`MIN_WEEKLIES` weeklies
  (a week belongs to the month of its Thursday);
* ``WISDOM.md``: at most :data:`WISDOM_CAP` lessons and decisions, deduplicated across months,
  each with every month that states it; a decision a later month reverses is left out.

Each summary's frontmatter says what it is and what it was made from: ``type``, ``period``,
``pointers`` (its children), ``salience`` (child → weight from length, entity density and
decision markers, each normalised by the siblings' maximum), ``engine`` and ``inputs`` (the
children's content hashes). A summary whose inputs and engine are unchanged is left alone; a
late or edited daily changes its week's inputs and the week is compacted again (then its month,
then the wisdom).

Every statement ends with its provenance (:mod:`memlane.brain.provenance`). A line stating a
number, date or identifier its sources do not state is dropped and logged (an LLM's
invention); a secret is masked; a line MemoryGuard refuses is dropped and logged; the files are
written in one brain transaction (lock, guard, atomic replace).

Before anything is published the gate (:mod:`memlane.timeline.gate`) measures recall on a
fixed question set with the current summaries and with the new ones, and refuses a change that
lowers it unless ``force``.

Example:
    >>> import tempfile, pathlib
    >>> from datetime import date
    >>> brain = pathlib.Path(tempfile.mkdtemp())
    >>> (brain / "DailyActivity").mkdir()
    >>> for d in ("02", "03", "04"):
    ...     _ = (brain / "DailyActivity" / f"2026-03-{d}.md").write_text(
    ...         f"# 2026-03-{d}\\n\\n## 09:00 | work\\n- We decided to pin numpy<2 in build {d}.\\n")
    >>> plan = plan_compaction(brain, today=date(2026, 3, 20))
    >>> [(p.level, p.period, p.statements) for p in plan.summaries]
    [('weekly', '2026-W10', 3)]
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlane import secrets
from memlane.brain import engines as distill_engines
from memlane.brain import provenance
from memlane.brain.guard import MemoryGuard
from memlane.brain.provenance import Ref
from memlane.errors import InvalidArgumentError
from memlane.llm import Usage
from memlane.timeline import notes
from memlane.timeline.decisions import decisions
from memlane.timeline.engines import SECTIONS, Engine, Source, Statement, dropped_for_details, make_engine
from memlane.timeline.publish import index_summaries, publish

if TYPE_CHECKING:
    from memlane.brain import Brain
    from memlane.memory import Memory
    from memlane.timeline.gate import GateResult

LEVELS = ("weekly", "monthly", "wisdom")
MIN_DAILIES = 3
MIN_WEEKLIES = 2
WISDOM_CAP = 20
# Statements per summary. A weekly is an index to its dailies: more lines are more routes to
# the evidence (set on the dev seeds of the timeline corpus, benches/bench_timeline.py).
LIMITS = {"weekly": 12, "monthly": 15, "wisdom": WISDOM_CAP}
_PRINCIPLES = ("Lessons", "Decisions")


@dataclass
class Summary:
    """One summary compaction would write.

    Attributes:
        level: ``weekly``, ``monthly`` or ``wisdom``.
        period: ``2026-W10``, ``2026-03``, or ``2026-01..2026-06`` for the wisdom.
        path: Where it goes.
        text: Its full text.
        inputs: Its children's content hashes (in the frontmatter).
        reason: ``new``, ``inputs changed`` or ``engine changed``.
        statements: Statements kept.
        dropped: ``{"text", "reason"}`` for each line left out (unsupported detail, guard rule).
    """

    level: str
    period: str
    path: Path
    text: str
    inputs: dict[str, str]
    reason: str
    statements: int
    dropped: list[dict[str, str]] = field(default_factory=list)

    def to_dict(self, brain_dir: Path) -> dict[str, Any]:
        """JSON-ready fields (path relative to the brain, no text)."""
        d = asdict(self)
        d.pop("text")
        d["path"] = self.path.relative_to(brain_dir).as_posix()
        return d


@dataclass
class Plan:
    """What a compaction run would write, and what it found up to date."""

    summaries: list[Summary] = field(default_factory=list)
    up_to_date: int = 0
    usage: Usage = field(default_factory=Usage)
    stopped_by_budget: list[str] = field(default_factory=list)
    """Periods left for a later run because the token budget would be exceeded."""


@dataclass
class CompactReport:
    """What :func:`compact` did."""

    brain: str
    engine: str
    dry_run: bool
    summaries: list[dict[str, Any]]
    up_to_date: int
    published: bool
    forced: bool = False
    refused: str | None = None
    gate: dict[str, Any] | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    stopped_by_budget: list[str] = field(default_factory=list)
    indexed: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return asdict(self)


# ---------------------------------------------------------------------------- salience


def _markers(text: str) -> int:
    patterns = [p for p, _ in distill_engines._MARKERS["decision"]]
    return sum(len(p.findall(text)) for p in patterns) + sum(
        distill_engines.reversal(s) is not None for s in distill_engines.sentences(text)
    )


def salience(children: dict[str, str]) -> dict[str, float]:
    """Child → weight: length, entity density and decision markers, each over the siblings' maximum, averaged.

    Example:
        >>> salience({"a.md": "We decided to use `uv` for builds.", "b.md": "lunch"})
        {'a.md': 1.0, 'b.md': 0.048}
    """
    raw = {}
    for name, text in children.items():
        words = max(len(text.split()), 1)
        raw[name] = (len(text.split()), len(distill_engines._ENTITY.findall(text)) / words, _markers(text))
    tops = [max((r[i] for r in raw.values()), default=0) for i in range(3)]
    return {name: round(sum(v / t for v, t in zip(r, tops) if t) / 3, 3) for name, r in raw.items()}


# ---------------------------------------------------------------------------- reading summaries


def read_statements(text: str) -> list[tuple[str, str, list[Ref]]]:
    """``(section, text, refs)`` of each statement of a summary's text."""
    out = []
    section = "Facts"
    body = text
    if text.startswith("---\n"):
        end = text.find("\n---\n", 4)
        body = text[end + 5 :] if end >= 0 else text
    for line in body.splitlines():
        if m := re.match(r"^##\s+(.*?)\s*$", line):
            section = m.group(1) if m.group(1) in SECTIONS else "Facts"
        elif re.match(r"^\s*[-*] ", line) and (found := provenance.refs(line)):
            out.append((section, provenance.strip(line).strip()[2:].strip(), found))
    return out


# ---------------------------------------------------------------------------- rendering

_TITLES = {"weekly": "Week", "monthly": "Month", "wisdom": "Wisdom"}


def _render(
    level: str,
    period: str,
    title_extra: str,
    pointers: list[str],
    children: dict[str, str],
    engine: str,
    inputs: dict[str, str],
    statements: Sequence[Statement],
) -> str:
    fields = {
        "type": level,
        "period": period,
        "pointers": pointers,
        "salience": salience(children),
        "engine": engine,
        "inputs": inputs,
    }
    lines = [notes.render_frontmatter(fields), f"# {_TITLES[level]} {period}{title_extra}\n"]
    for section in SECTIONS:
        mine = [s for s in statements if s.section == section]
        if mine:
            lines.append(f"\n## {section}\n")
            lines += [f"- {s.text} {provenance.render(list(s.refs))}\n" for s in mine]
    if not statements:
        lines.append("\nNothing in these sources reached a summary line; the children hold it all.\n")
    return "".join(lines)


# ---------------------------------------------------------------------------- checking lines


def _checked(
    statements: list[Statement], sources: Sequence[Source], guard: MemoryGuard, dropped: list[dict[str, str]]
) -> list[Statement]:
    """Statements whose details their sources state, secrets masked, guard-clean; the rest into ``dropped``."""
    by_ref: dict[Ref, list[str]] = {}
    for s in sources:
        by_ref.setdefault(s.ref, []).append(s.text)
    kept = []
    for st in statements:
        cited = " ".join(t for r in st.refs for t in by_ref.get(r, []))
        if record := dropped_for_details(st.text, cited):
            dropped.append(record)
            continue
        text = secrets.mask(st.text)
        findings = guard.scan(text)
        if findings:
            dropped.append({"text": text[:200], "reason": f"MemoryGuard rule {findings[0].rule}"})
            continue
        kept.append(Statement(st.section, text, st.refs, st.salience))
    return kept


# ---------------------------------------------------------------------------- planning


class _View:
    """The brain folder with this run's planned files laid over it."""

    def __init__(self, brain_dir: Path) -> None:
        self.dir = brain_dir
        self.staged: dict[Path, str] = {}

    def text(self, path: Path) -> str | None:
        if path in self.staged:
            return self.staged[path]
        try:
            return path.read_text(encoding="utf-8")
        except OSError:
            return None

    def frontmatter(self, path: Path) -> dict[str, Any]:
        if path in self.staged:
            import yaml

            text = self.staged[path]
            return yaml.safe_load(text[4 : text.find("\n---\n", 4)]) or {}
        return notes.frontmatter(path)


def _hash_text(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _reason(existing: dict[str, Any], inputs: dict[str, str], engine: str) -> str | None:
    """Why a summary must be (re)written, or None when it is up to date."""
    if not existing:
        return "new"
    if existing.get("inputs") != inputs:
        return "inputs changed"
    if existing.get("engine") != engine:
        return "engine changed"
    return None


class _Run:
    def __init__(self, brain_dir: Path, engine: Engine, today: date, force: bool, budget: int | None) -> None:
        self.view = _View(brain_dir)
        self.engine = engine
        self.today = today
        self.force = force
        self.budget = budget
        self.guard = MemoryGuard()
        self.plan = Plan()

    @property
    def dir(self) -> Path:
        return self.view.dir

    def _affordable(self, level: str, period: str, sources: Sequence[Source]) -> bool:
        if self.budget is None:
            return True
        need = self.engine.estimate(level, period, sources)
        if self.engine.usage.tokens + need > self.budget:
            self.plan.stopped_by_budget.append(f"{level} {period}")
            return False
        return True

    def _summarize(
        self,
        level: str,
        period: str,
        path: Path,
        title_extra: str,
        children: dict[str, str],
        sources: list[Source],
        inputs: dict[str, str],
    ) -> None:
        reason = "forced" if self.force else _reason(self.view.frontmatter(path), inputs, self.engine.name)
        if reason is None:
            self.plan.up_to_date += 1
            return
        if not self._affordable(level, period, sources):
            return
        dropped: list[dict[str, str]] = []
        # No source, no call: an LLM would be paid to say nothing.
        written = self.engine.summarize(level, period, sources, limit=LIMITS[level]) if sources else []
        statements = _checked(written, sources, self.guard, dropped)
        if level == "wisdom":
            statements = _without_reversed(statements)
        text = _render(level, period, title_extra, sorted(children), children, self.engine.name, inputs, statements)
        if text == self.view.text(path):
            self.plan.up_to_date += 1
            return
        self.view.staged[path] = text
        self.plan.summaries.append(Summary(level, period, path, text, inputs, reason, len(statements), dropped))

    def weekly(self) -> None:
        by_week: dict[str, list[tuple[date, Path]]] = {}
        for day, path in notes.dailies(self.dir).items():
            by_week.setdefault(notes.iso_week(day), []).append((day, path))
        for week, days in sorted(by_week.items()):
            monday, sunday = notes.week_days(week)
            if sunday >= self.today or len(days) < MIN_DAILIES:
                continue
            children: dict[str, str] = {}
            sources: list[Source] = []
            inputs: dict[str, str] = {}
            for _, path in sorted(days):
                rel = path.relative_to(self.dir).as_posix()
                children[rel] = path.read_text(encoding="utf-8")
                inputs[rel] = notes.file_hash(path)
                _, sections = notes.read_note(path, self.dir)
                sources += [Source(s.ref, s.text) for s in sections if s.text]
            self._summarize(
                "weekly",
                week,
                self.dir / notes.WEEKLY_DIR / f"{week}.md",
                f" ({monday} – {sunday})",
                children,
                sources,
                inputs,
            )

    def _summaries(self, folder: str) -> dict[str, tuple[Path, str]]:
        """Summaries of a folder by period: those on disk and those this run plans."""
        found: dict[str, tuple[Path, str]] = {}
        paths = set((self.dir / folder).glob("*.md")) | {p for p in self.view.staged if p.parent == self.dir / folder}
        for path in sorted(paths):
            text = self.view.text(path)
            if text is not None:
                found[path.stem] = (path, text)
        return found

    def _from_summaries(
        self,
        level: str,
        period: str,
        path: Path,
        title_extra: str,
        parents: list[tuple[Path, str]],
        sections: tuple[str, ...] | None = None,
    ) -> None:
        children: dict[str, str] = {}
        inputs: dict[str, str] = {}
        sources: list[Source] = []
        for p, text in parents:
            rel = p.relative_to(self.dir).as_posix()
            children[rel] = text
            inputs[rel] = _hash_text(text)
            for section, line, _ in read_statements(text):
                if sections is None or section in sections:
                    sources.append(Source(Ref(rel), line))
        self._summarize(level, period, path, title_extra, children, sources, inputs)

    def monthly(self) -> None:
        by_month: dict[str, list[tuple[Path, str]]] = {}
        for week, found in self._summaries(notes.WEEKLY_DIR).items():
            try:
                by_month.setdefault(notes.week_month(week), []).append(found)
            except ValueError:
                continue
        for month, weeklies in sorted(by_month.items()):
            first, last = notes.month_days(month)
            if last >= self.today or len(weeklies) < MIN_WEEKLIES:
                continue
            self._from_summaries(
                "monthly", month, self.dir / notes.MONTHLY_DIR / f"{month}.md", f" ({first} – {last})", weeklies
            )

    def wisdom(self) -> None:
        monthlies = [
            found
            for month, found in sorted(self._summaries(notes.MONTHLY_DIR).items())
            if re.fullmatch(r"\d{4}-\d{2}", month)
        ]
        if not monthlies:
            return
        period = f"{monthlies[0][0].stem}..{monthlies[-1][0].stem}"
        self._from_summaries("wisdom", period, self.dir / provenance.WISDOM_FILE, "", monthlies, _PRINCIPLES)


def _without_reversed(statements: list[Statement]) -> list[Statement]:
    """Leave out a decision a later statement reverses ("switched from X to Y" drops the one naming
    X) or replaces (a later decision gives its subject another value, as dreaming reads them).

    Later: from a later month, or from the same month and listed after it (the engines keep a
    month's statements in reading order).
    """

    def when(i: int) -> tuple[str, int]:
        return max(r.path for r in statements[i].refs), i

    stated = [{d.subject: d.value.lower() for d in decisions(s.text)} for s in statements]
    out = []
    for i, st in enumerate(statements):
        words = set(re.findall(r"[a-z0-9]+", st.text.lower()))
        later = [j for j in range(len(statements)) if when(j) > when(i)]
        replaced = any(stated[j].get(subject, value) != value for subject, value in stated[i].items() for j in later)
        reversed_ = False
        for j in later:
            old = distill_engines.reversal(statements[j].text)
            old_words = set(re.findall(r"[a-z0-9]+", (old or "").lower())) - {"the", "a", "an", "to", "from"}
            if old_words and len(old_words & words) >= max(1, len(old_words) // 2 + 1):
                reversed_ = True
                break
        if st.section != "Decisions" or not (replaced or reversed_):
            out.append(st)
    return out


def plan_compaction(
    brain_dir: str | Path,
    *,
    level: str | None = None,
    engine: str | Engine = "offline",
    today: date | None = None,
    force: bool = False,
    budget: int | None = None,
) -> Plan:
    """What compaction would write (nothing is written).

    Args:
        brain_dir: The brain folder.
        level: ``weekly``, ``monthly`` or ``wisdom`` only; default all three, each from the last.
        engine: ``offline`` (default), ``bedrock``, ``claude``, ``codex`` or an engine object.
        today: Periods ending before this day are complete (default: today).
        force: Rewrite summaries whose inputs did not change.
        budget: Tokens the LLM calls may spend; periods past it are left for a later run.
    """
    if level is not None and level not in LEVELS:
        raise InvalidArgumentError(f"unknown level {level!r}: use one of {', '.join(LEVELS)}")
    run = _Run(Path(brain_dir).expanduser(), make_engine(engine), today or date.today(), force, budget)
    for name in LEVELS:
        if level in (None, name):
            getattr(run, name)()
    run.plan.usage = run.engine.usage
    return run.plan


def compact(
    mem: Memory,
    brain: Brain,
    *,
    level: str | None = None,
    engine: str | Engine = "offline",
    dry_run: bool = False,
    force: bool = False,
    today: date | None = None,
    budget: int | None = None,
    questions: Sequence[Any] | None = None,
    before_publish: Callable[[], None] | None = None,
) -> CompactReport:
    """Plan, gate, publish and index a compaction (see the module doc).

    Args:
        mem: The home the summaries are indexed into (and whose embedder the gate uses).
        brain: The brain whose dailies are compacted.
        level, engine, today, budget: See :func:`plan_compaction`.
        dry_run: Only say what would be written.
        force: Rewrite up-to-date summaries, and publish even when the gate measures a loss.
        questions: The gate's questions (default: the home's fixed probe set, see
            :func:`memlane.timeline.gate.questions_for`).
        before_publish: Called right before writing (the lease's check: a run that lost its
            lease raises there and publishes nothing).

    Returns:
        What was planned, measured and written.
    """
    from memlane.timeline import gate

    plan = plan_compaction(brain.dir, level=level, engine=engine, today=today, force=force, budget=budget)
    report = CompactReport(
        brain=str(brain.dir), engine=make_engine(engine).name if isinstance(engine, str) else engine.name, dry_run=dry_run,
        summaries=[s.to_dict(brain.dir) for s in plan.summaries], up_to_date=plan.up_to_date, published=False, forced=force,
        usage=plan.usage.to_dict(), stopped_by_budget=plan.stopped_by_budget,
    )  # fmt: skip
    for s in plan.summaries:
        for d in s.dropped:
            brain.log(
                "compact_dropped", path=s.path.relative_to(brain.dir).as_posix(), text=d["text"], reason=d["reason"]
            )
    if dry_run or not plan.summaries:
        return report
    staged = {s.path: s.text for s in plan.summaries}
    result: GateResult = gate.evaluate(
        mem, brain.dir, staged, questions if questions is not None else gate.questions_for(mem, brain.dir)
    )
    report.gate = result.to_dict()
    if result.lowers and not force:
        report.refused = f"recall@{result.k} would fall from {result.before:.3f} to {result.after:.3f} on {result.questions} questions"
        brain.log("compact_refused", before=result.before, after=result.after, questions=result.questions)
        return report
    if before_publish is not None:
        before_publish()
    publish(brain, staged, "compact")
    report.published = True
    report.indexed = index_summaries(mem, list(staged))
    brain.log(
        "compact",
        written=len(staged),
        engine=report.engine,
        forced=force,
        gate_before=result.before,
        gate_after=result.after,
        tokens=plan.usage.tokens,
        cost_usd=plan.usage.cost_usd,
    )
    return report
