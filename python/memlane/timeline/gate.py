"""The gate: recall on a fixed question set before and after a change, through the product's search.

A compaction or a dream run stages its new files; the gate indexes the brain folder as it is
and as it would be into two scratch homes (same embedder, same shared embedding cache: only
new text is embedded), asks every question of both through :meth:`memlane.Memory.search`, and
reports recall@k — a question counts when a daily entry it is about is among the first k hits
— and how often a summary or wiki page citing that entry ranks above it or without it
(``summary_above_evidence``, the failure a hierarchy must never show). A change that lowers
recall is refused unless forced.

The questions: a generated corpus brings its own (``memlane bench timeline``); a user's home
gets a fixed probe set, made once from its dailies (a salient sentence stating a number, date
or identifier, asked without that detail) and kept in ``<home>/timeline/gate-questions.jsonl``;
dailies added later add probes, and a probe once written never changes.

Example:
    >>> probe_query("We set the exporter batch size to 512 on 2026-03-02.")
    'We set the exporter batch size to on'
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlane.brain import provenance
from memlane.brain.provenance import Ref
from memlane.timeline import notes
from memlane.timeline.engines import _sentences, details, score

if TYPE_CHECKING:
    from memlane.memory import Memory
    from memlane.ranking.hit import Hit

K = 5
QUESTIONS_FILE = "gate-questions.jsonl"
MAX_PROBES = 200
_MIN_QUERY_WORDS = 3
# What the scratch homes copy from the brain folder: the evidence and every summary.
_COPIED = ("DailyActivity", *provenance.SUMMARY_DIRS)


@dataclass(frozen=True)
class Question:
    """A question with the daily entries that answer it.

    Attributes:
        query: What is asked.
        gold: Refs (``DailyActivity/2026-03-02.md › 14:40``) of the entries holding the answer.
        kind: ``probe``, or the corpus generator's kind (``number``, ``reversal``, ``as_of``…).
        answer: The expected value, when there is one (``as_of`` questions).
        as_of: The date an ``as_of`` question asks about.
    """

    query: str
    gold: tuple[str, ...]
    kind: str = "probe"
    answer: str | None = None
    as_of: str | None = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Question:
        """From a JSON line."""
        return cls(str(d["query"]), tuple(d["gold"]), str(d.get("kind") or "probe"), d.get("answer"), d.get("as_of"))


@dataclass
class GateResult:
    """Recall before and after a change."""

    k: int
    questions: int
    before: float
    after: float
    summary_above_evidence_before: int = 0
    summary_above_evidence_after: int = 0
    lost: list[str] = field(default_factory=list)
    """Questions answered before and not after (at most 20)."""

    @property
    def lowers(self) -> bool:
        """The change loses recall."""
        return self.after < self.before

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return {**asdict(self), "lowers": self.lowers}


def probe_query(sentence: str) -> str:
    """A sentence asked without its numbers, dates and identifiers."""
    out = sentence
    for d in details(sentence):
        out = out.replace(d, " ")
    return " ".join(re.sub(r"[^\w\s'-]", " ", out).split())


def probes(brain_dir: Path) -> list[Question]:
    """One probe per daily entry that states a detail: its most salient such sentence, asked without it."""
    found = []
    for _, path in sorted(notes.dailies(brain_dir).items()):
        _, sections = notes.read_note(path, brain_dir)
        for s in sections:
            best = max(((score(x)[1], x) for x in _sentences(s.text) if details(x)), default=None)
            if best is None:
                continue
            query = probe_query(best[1])
            if len(query.split()) >= _MIN_QUERY_WORDS:
                found.append(Question(query, (str(s.ref),)))
    return found


def questions_for(mem: Memory, brain_dir: Path) -> list[Question]:
    """The home's fixed probe set, extended with probes of dailies it does not cover yet."""
    path = mem.home / "timeline" / QUESTIONS_FILE
    kept: list[Question] = []
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                kept.append(Question.from_dict(json.loads(line)))
            except (ValueError, KeyError, TypeError):
                continue
    covered = {g for q in kept for g in q.gold}
    new = [q for q in probes(brain_dir) if q.gold[0] not in covered]
    # A deterministic sample when there are more than fit: by a hash of the entry.
    new.sort(key=lambda q: hashlib.sha256(q.gold[0].encode()).hexdigest())
    new = new[: max(MAX_PROBES - len(kept), 0)]
    if new:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as f:
            for q in new:
                f.write(json.dumps({"query": q.query, "gold": list(q.gold), "kind": q.kind}) + "\n")
    return kept + new


def hit_ref(hit: Hit, brain_dir: Path) -> Ref | None:
    """The daily entry (or summary file) a hit is, relative to ``brain_dir``; None outside it."""
    try:
        rel = Path(hit.path).resolve().relative_to(brain_dir.resolve()).as_posix()
    except ValueError:
        return None
    entry = hit.heading.rsplit(" › ", 1)[-1] if " › " in hit.heading else ""
    m = re.match(r"(\d{1,2}:\d{2})\b", entry)
    return Ref(rel, m.group(1) if m and rel.startswith("DailyActivity/") else None)


def judge(hits: Sequence[Hit], question: Question, brain_dir: Path, k: int = K) -> tuple[bool, bool]:
    """Whether a gold entry is in the first ``k`` hits, and whether a summary citing it ranks above it (or without it)."""
    gold = set(question.gold)
    top = list(hits)[:k]
    refs = [hit_ref(h, brain_dir) for h in top]
    found_at = next((i for i, r in enumerate(refs) if r is not None and str(r) in gold), None)
    buried = False
    for i, h in enumerate(top):
        if h.source != "summary" or (found_at is not None and i > found_at):
            continue
        cited = {str(r) for line in h.text.splitlines() for r in provenance.refs(line)}
        if cited & gold:
            buried = True
            break
    return found_at is not None, buried


def _sync(src: Path, dst: Path, staged: dict[Path, str]) -> None:
    """Make ``dst`` a copy of ``src``'s evidence and summaries with ``staged`` laid over it."""
    wanted: dict[Path, bytes] = {}
    for name in _COPIED:
        for p in sorted((src / name).glob("*.md")):
            wanted[dst / p.relative_to(src)] = p.read_bytes()
    if (src / provenance.WISDOM_FILE).is_file():
        wanted[dst / provenance.WISDOM_FILE] = (src / provenance.WISDOM_FILE).read_bytes()
    for p, text in staged.items():
        wanted[dst / p.relative_to(src)] = text.encode("utf-8")
    for p, data in wanted.items():
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)


def measure(
    mem: Memory, brain_dir: Path, questions: Sequence[Question], *, k: int = K, hierarchy: bool = True
) -> tuple[list[bool], int]:
    """Recall and buried counts of ``questions`` on a brain folder indexed in ``mem`` (per question found, buried total)."""
    found, buried = [], 0
    for q in questions:
        hits = mem.search(q.query, k=k, hierarchy=hierarchy)
        ok, bad = judge(hits, q, brain_dir, k)
        found.append(ok)
        buried += bad
    return found, buried


def scratch_home(mem: Memory, where: Path, brain_dir: Path) -> Memory:
    """A home at ``where`` indexing ``brain_dir`` with ``mem``'s embedder and embedding cache."""
    import memlane
    from memlane.timeline.publish import index_summaries

    spec = mem._embedder_spec if isinstance(mem._embedder_spec, str) or mem._embedder_spec is None else mem.embedder
    scratch = memlane.open(where, embedder=spec if spec is not None else "none", cache_dir=mem._cache_dir)
    summaries = provenance.summary_files(brain_dir)
    if scratch.embedder is not None and summaries and (brain_dir / "DailyActivity").is_dir():
        # Dailies first: a summary's children's vector is read from their cached vectors.
        scratch.index([brain_dir / "DailyActivity"], format="markdown")
        index_summaries(scratch, summaries)
    scratch.index([brain_dir], embed=scratch.embedder is not None, format="markdown")
    return scratch


def evaluate(
    mem: Memory, brain_dir: Path, staged: dict[Path, str], questions: Sequence[Question], *, k: int = K
) -> GateResult:
    """Recall@k of ``questions`` with the brain as it is and with ``staged`` written (nothing is published)."""
    result = GateResult(k, len(questions), 1.0, 1.0)
    if not questions:
        return result
    mem.home.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="gate-", dir=mem.home) as tmp:
        outcomes = {}
        # Both at the same paths, one after the other: a chunk's key depends on its file's path,
        # and keys break ties and order the vector graph, so two folders would differ in more
        # than the change measured.
        folder, home = Path(tmp) / "brain", Path(tmp) / "home"
        for name, overlay in (("before", {}), ("after", staged)):
            shutil.rmtree(folder, ignore_errors=True)
            shutil.rmtree(home, ignore_errors=True)
            _sync(brain_dir, folder, overlay)
            scratch = scratch_home(mem, home, folder)
            try:
                outcomes[name] = measure(scratch, folder, questions, k=k)
            finally:
                scratch.close()
        shutil.rmtree(tmp, ignore_errors=True)
    (before, buried_before), (after, buried_after) = outcomes["before"], outcomes["after"]
    result.before = round(sum(before) / len(questions), 4)
    result.after = round(sum(after) / len(questions), 4)
    result.summary_above_evidence_before, result.summary_above_evidence_after = buried_before, buried_after
    result.lost = [q.query for q, a, b in zip(questions, before, after) if a and not b][:20]
    return result
