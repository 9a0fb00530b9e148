"""Benchmark datasets: loaders, evidence normalisation and the fixed LoCoMo split.

Each loader turns one public benchmark file (or folder) into :class:`Conversation` objects:
what to index (written by :meth:`Conversation.write` as a file the product's own parsers read)
and the questions to ask, with their gold evidence at two granularities:

* ``turn``: source record ids, the ones the parser puts in ``Hit.meta["turn_ids"]``
  (LoCoMo / REALTALK ``dia_id`` like ``"D3:5"``, BEAM message ``id`` like ``"28"``,
  LongMemEval ``"<session_id>:<turn index>"``);
* ``session``: the ``Hit.session_id`` those turns belong to.

Gold evidence is normalised (REALTALK and a few LoCoMo ids are dirty) and checked against the
conversation; every repair and every dropped id is counted, never fatal.

**Split discipline.** Retrieval may be tuned only on LoCoMo conversations 0-4 of
``locomo10.json`` (``split="dev"``); conversations 5-9 (``split="test"``), BEAM, REALTALK and
LongMemEval are report-only. The split is fixed here (:data:`LOCOMO_SPLITS`), not a parameter.

Example:
    >>> ids, issues = normalise_evidence(["D1:3", "D2:1-D2:3", "D30:05"], known={"D1:3", "D2:1", "D2:3", "D30:5"})
    >>> ids
    ['D1:3', 'D2:1', 'D2:3', 'D30:5']
    >>> dict(issues)
    {'range': 1, 'range_gap': 1, 'reformatted': 1}
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Container, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memlane.errors import InvalidArgumentError, InvalidDataError

__all__ = [
    "DATASETS",
    "LOCOMO_SPLITS",
    "LONGMEMEVAL_SHA256",
    "Conversation",
    "Dataset",
    "Question",
    "iter_json_array",
    "load_beam",
    "load_dataset",
    "load_locomo",
    "load_longmemeval",
    "load_realtalk",
    "normalise_evidence",
    "sha256_file",
]

DATASETS = ("locomo", "beam", "realtalk", "longmemeval")
# session: the sessions of the first k hits (a session counts once, where it first appears);
# session_top: the first k distinct sessions of a deeper list of hits (see runner.SESSION_DEPTH),
# the ranking a corpus of one document per session is scored on; turn: the dialog ids of the
# first k hits.
GRANULARITIES = ("session", "session_top", "turn")

# Positions in locomo10.json (conv-26 … conv-43 are dev, conv-44 … conv-50 test). Fixed in
# code so that no run can tune on the conversations it reports.
LOCOMO_SPLITS: dict[str, range] = {"dev": range(5), "test": range(5, 10), "all": range(10)}
LOCOMO_SHA256 = "79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4"

# Category numbering of the LoCoMo repository's task_eval/evaluation.py (the paper's table
# orders them differently; some third-party harnesses mislabel them).
LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
REALTALK_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "commonsense"}

# From ../shared/data/longmemeval/README.md (the HF dataset xiaowu0162/longmemeval-cleaned).
# M has no published checksum: it loads only with allow_unverified.
LONGMEMEVAL_SHA256 = {
    "821a2034d219ab45846873dd14c14f12cfe7776e73527a483f9dac095d38620c": "longmemeval_oracle",
    "d6f21ea9d60a0d56f34a05b609c79c88a451d2ae03597821ea3d5a9678c3a442": "longmemeval_s_cleaned",
}

_SESSION_KEY = re.compile(r"session_(\d+)")
# BEAM generation artefact at the end of user messages: "... ->-> 1,3".
_BEAM_SUFFIX = re.compile(r"\s*->->\s*\d+\s*,\s*\d+\s*$")
_CLEAN_ID = re.compile(r"D[1-9]\d*:[1-9]\d*")
_ID = re.compile(r"D:?(\d+):(\d+)")
_GLUED = re.compile(r"D:?\d+:\d+(?::?D:?\d+:\d+)*")
_RANGE = re.compile(r"D:?(\d+):(\d+)-(?:D:?(\d+):)?(\d+)")


@dataclass(frozen=True)
class Question:
    """One benchmark question with its gold evidence.

    Attributes:
        qid: Unique id within the dataset.
        text: The query sent to :meth:`memlane.Memory.search`.
        category: Category label used for per-category metrics.
        gold_turns: Gold turn ids (normalised, existing in the conversation).
        gold_sessions: Gold session ids.
        raw_evidence: The evidence exactly as the dataset gives it (for the per-question log).
        abstention: The question is unanswerable by design (LongMemEval ``_abs``, BEAM abstention).
        skip: Per granularity, why the question cannot be scored (no usable gold), if so.
    """

    qid: str
    text: str
    category: str
    gold_turns: frozenset[str]
    gold_sessions: frozenset[str]
    raw_evidence: Any = None
    abstention: bool = False
    skip: dict[str, str] = field(default_factory=dict)

    def gold(self, granularity: str) -> frozenset[str]:
        """Gold ids at ``granularity`` (one of :data:`GRANULARITIES`)."""
        return self.gold_turns if granularity == "turn" else self.gold_sessions

    def skip_reason(self, granularity: str) -> str | None:
        """Why the question cannot be scored at ``granularity``, if so (session-level reasons
        hold for both session rankings)."""
        return self.skip.get("turn" if granularity == "turn" else "session")


@dataclass
class Conversation:
    """One haystack, indexed into its own fresh home, and the questions asked against it.

    Attributes:
        cid: Conversation id (LoCoMo ``sample_id``, file or folder name, LongMemEval ``question_id``).
        questions: Questions for this conversation.
        fmt: Parser format passed to :meth:`memlane.Memory.index` (``locomo``, ``generic``, ``longmemeval``).
        payload: What :meth:`write` serialises: a JSON document, or JSONL records for ``generic``.
        evidence_issues: Counts of evidence repairs and drops (see :func:`normalise_evidence`).
        conversion_issues: Counts of source records the adapter could not turn into lines.
    """

    cid: str
    questions: list[Question]
    fmt: str
    payload: Any
    evidence_issues: Counter[str] = field(default_factory=Counter)
    conversion_issues: Counter[str] = field(default_factory=Counter)

    def write(self, directory: Path) -> Path:
        """Write the haystack as a file the product's parser reads; returns its path."""
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", self.cid)
        if self.fmt == "generic":
            path = directory / f"{safe}.jsonl"
            with path.open("w", encoding="utf-8") as f:
                for record in self.payload:
                    f.write(json.dumps(record, ensure_ascii=False) + "\n")
        else:
            path = directory / f"{safe}.json"
            path.write_text(json.dumps(self.payload, ensure_ascii=False), encoding="utf-8")
        return path


@dataclass
class Dataset:
    """A loaded benchmark.

    Attributes:
        name: ``locomo`` | ``beam`` | ``realtalk`` | ``longmemeval``.
        split: ``dev`` | ``test`` | ``all``.
        path: The file or folder read.
        sha256: sha256 of the file; for a folder, of its ``sha256sum``-style listing.
        verified: Whether ``sha256`` matches the published/canonical one (``None``: none known).
        conversations: Conversations in order (a lazy iterator for LongMemEval).
        groups: Extra aggregates over questions besides ``all`` (e.g. LoCoMo without category 5).
        notes: Facts a reader of the result needs (split, adapter choices).
    """

    name: str
    split: str
    path: Path
    sha256: str
    verified: bool | None
    conversations: Iterable[Conversation]
    groups: dict[str, Callable[[Question], bool]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


# -- helpers -------------------------------------------------------------------------------


def sha256_file(path: str | Path) -> str:
    """sha256 hex digest of a file, read in 1 MiB blocks.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "x"
        >>> _ = p.write_bytes(b"abc")
        >>> sha256_file(p)[:16]
        'ba7816bf8f01cfea'
    """
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _sha256_files(root: Path, files: list[Path]) -> str:
    # A digest of the `sha256sum` listing: stable under renaming of the root folder.
    listing = "".join(f"{sha256_file(p)}  {p.relative_to(root).as_posix()}\n" for p in sorted(files))
    return hashlib.sha256(listing.encode()).hexdigest()


def _canonical(session: str, turn: str) -> str:
    return f"D{int(session)}:{int(turn)}"


def normalise_evidence(raw: Iterable[object], known: Container[str]) -> tuple[list[str], Counter[str]]:
    """Normalise LoCoMo/REALTALK evidence strings to existing ``D<session>:<turn>`` ids.

    Repairs what is unambiguous and counts it: lists in one string (``"D8:6; D9:17"``,
    ``"D9:1 D4:4"``, glued ``"D13:45:D20:19"``), same-session ranges (``"D12:3-D12:5"``),
    formatting (``"D:11:26"``, ``"D30:05"``, ``"D 2:18"``, trailing ``"."``). Anything else is
    dropped and counted; well-formed ids absent from the conversation are dropped as
    ``unknown_id``, except ids inside an expanded range, which count as ``range_gap`` (the
    source skipped media-only message numbers).

    Args:
        raw: Evidence entries as found in the dataset.
        known: Every turn id of the conversation.

    Returns:
        The ids (deduplicated, in order) and issue counts by kind: ``not_a_string``,
        ``empty``, ``list``, ``range``, ``range_gap``, ``reformatted``, ``unparseable``,
        ``unknown_id``.

    Example:
        >>> normalise_evidence(["D8:6; D9:17", "D", "D4:36"], known={"D8:6", "D9:17"})
        (['D8:6', 'D9:17'], Counter({'list': 1, 'unparseable': 1, 'unknown_id': 1}))
    """
    out: list[str] = []
    issues: Counter[str] = Counter()

    def keep(candidate: str, *, in_range: bool = False) -> None:
        if candidate in known:
            if candidate not in out:
                out.append(candidate)
        else:
            issues["range_gap" if in_range else "unknown_id"] += 1

    for item in raw:
        if not isinstance(item, str):
            issues["not_a_string"] += 1
            continue
        text = item.strip()
        if not text:
            issues["empty"] += 1
            continue
        if _CLEAN_ID.fullmatch(text):
            keep(text)
            continue
        prepared = re.sub(r"D\s+(?=\d)", "D", text)
        ids_in_item = 0
        reformatted = prepared != text
        for piece in re.split(r"[;,\s]+", prepared):
            stripped = piece.rstrip(".")
            if not stripped:
                continue
            if m := _RANGE.fullmatch(stripped):
                s1, t1, s2, t2 = m.groups()
                if s2 is not None and int(s2) != int(s1):
                    issues["unparseable"] += 1  # a range across sessions has no defined members
                    continue
                issues["range"] += 1
                ids_in_item += 1
                lo, hi = sorted((int(t1), int(t2)))
                for turn in range(lo, hi + 1):
                    keep(_canonical(s1, str(turn)), in_range=True)
                continue
            if not _GLUED.fullmatch(stripped):
                issues["unparseable"] += 1
                continue
            found = _ID.findall(stripped)
            ids_in_item += len(found)
            reformatted |= len(found) == 1 and _canonical(*found[0]) != piece
            for session, turn in found:
                keep(_canonical(session, turn))
        if ids_in_item > 1:
            issues["list"] += 1
        if reformatted:
            issues["reformatted"] += 1
    return out, issues


def _question_skip(
    gold_turns: Iterable[str], gold_sessions: Iterable[str], raw_empty: bool, abstention: bool
) -> dict[str, str]:
    reason_if_empty = "abstention" if abstention else ("no_evidence" if raw_empty else "no_valid_evidence")
    skip = {}
    if not list(gold_turns):
        skip["turn"] = reason_if_empty
    if not list(gold_sessions):
        skip["session"] = reason_if_empty
    return skip


def _check_split(name: str, split: str) -> None:
    if split not in ("dev", "test", "all"):
        raise InvalidArgumentError(f"unknown split {split!r}: use dev, test or all")
    if name != "locomo" and split != "all":
        if split == "dev":
            raise InvalidArgumentError(
                f"tuning is only allowed on LoCoMo dev: {name} is report-only, run it without --split"
            )
        raise InvalidArgumentError(f"{name} has no dev/test split (it is report-only): run it without --split")


def _require(path: str | Path, what: str) -> Path:
    p = Path(path).expanduser()
    if not p.exists():
        raise FileNotFoundError(f"{what} not found: {p}")
    return p


# -- LoCoMo --------------------------------------------------------------------------------


def load_locomo(path: str | Path, split: str = "test") -> Dataset:
    """Load ``locomo10.json`` restricted to a split.

    Conversations are indexed through the native LoCoMo parser (``format="locomo"``), so
    sessions are ``"<sample_id>:session_<n>"`` and turn ids are ``dia_id``s. Every question is
    kept, adversarial category 5 included (as in MemPalace's published LoCoMo numbers); the
    result also aggregates ``no_adversarial`` (categories 1-4).

    Args:
        path: ``locomo10.json``.
        split: ``dev`` (conversations 0-4, the only ones tuning may look at), ``test`` (5-9)
            or ``all``.

    Returns:
        The dataset.

    Raises:
        FileNotFoundError: No such file.
        memlane.errors.InvalidArgumentError: Unknown split.
        memlane.errors.InvalidDataError: The file is not LoCoMo-shaped.

    Example:
        >>> ds = load_locomo("tests/fixtures/bench/locomo_mini.json", split="dev")
        >>> [c.cid for c in ds.conversations]
        ['conv-a', 'conv-b', 'conv-c', 'conv-d', 'conv-e']
    """
    _check_split("locomo", split)
    p = _require(path, "LoCoMo file")
    if p.is_dir():
        p = p / "locomo10.json"
        _require(p, "LoCoMo file")
    try:
        samples = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InvalidDataError(f"{p} is not valid JSON: {exc}") from None
    if not isinstance(samples, list) or not all(isinstance(s, dict) and "conversation" in s for s in samples):
        raise InvalidDataError(f"{p} is not a LoCoMo file (expected a list of samples with 'conversation')")
    digest = sha256_file(p)
    notes = [
        "split fixed in code: dev = conversations 0-4, test = 5-9 of the file (tune on dev only)",
        "category 5 (adversarial) is included in 'all' like MemPalace's LoCoMo numbers; 'no_adversarial' = categories 1-4",
    ]
    if len(samples) != 10:
        notes.append(f"file has {len(samples)} conversations, not 10: the split is by position")
    chosen = [samples[i] for i in LOCOMO_SPLITS[split] if i < len(samples)]
    conversations = [_locomo_conversation(s, i) for i, s in zip(LOCOMO_SPLITS[split], chosen)]
    return Dataset(
        name="locomo",
        split=split,
        path=p,
        sha256=digest,
        verified=digest == LOCOMO_SHA256,
        conversations=conversations,
        groups={"no_adversarial": lambda q: q.category != _locomo_category(5)},
        notes=notes,
    )


def _locomo_category(n: object) -> str:
    return f"{n}:{LOCOMO_CATEGORIES.get(n, 'unknown')}" if isinstance(n, int) else f"{n}:unknown"


def _dialog_questions(
    cid: str, qas: list[dict[str, Any]], turn_session: dict[str, str], category_of: Callable[[Any], str]
) -> tuple[list[Question], Counter[str]]:
    """Questions of a LoCoMo-shaped conversation (LoCoMo, REALTALK), with evidence normalised.

    Returns the questions and the evidence problems counted by kind.
    """
    issues: Counter[str] = Counter()
    questions = []
    for i, qa in enumerate(qas):
        raw = qa.get("evidence") or []
        ids, found = normalise_evidence(raw if isinstance(raw, list) else [raw], turn_session)
        issues.update(found)
        issues["evidence_strings"] += len(raw) if isinstance(raw, list) else 1
        sessions = frozenset(turn_session[t] for t in ids)
        questions.append(
            Question(
                qid=f"{cid}/{i}",
                text=str(qa.get("question", "")),
                category=category_of(qa.get("category")),
                gold_turns=frozenset(ids),
                gold_sessions=sessions,
                raw_evidence=raw,
                skip=_question_skip(ids, sessions, not raw, abstention=False),
            )
        )
    return questions, issues


def _locomo_conversation(sample: dict[str, Any], position: int) -> Conversation:
    sid = str(sample.get("sample_id") or f"conv-{position}")
    conv = sample.get("conversation") or {}
    turn_session: dict[str, str] = {}
    for key, turns in conv.items():
        m = _SESSION_KEY.fullmatch(key)
        if not m or not isinstance(turns, list):
            continue
        for turn in turns:
            if isinstance(turn, dict) and isinstance(turn.get("dia_id"), str):
                # Same session id the native parser gives (rust parse/bench.rs).
                turn_session[turn["dia_id"]] = f"{sid}:session_{int(m.group(1))}"
    questions, issues = _dialog_questions(sid, sample.get("qa") or [], turn_session, _locomo_category)
    return Conversation(cid=sid, questions=questions, fmt="locomo", payload=[sample], evidence_issues=issues)


# -- REALTALK ------------------------------------------------------------------------------


def _realtalk_files(p: Path) -> list[Path]:
    if p.is_file():
        return [p]
    files = [f for f in p.glob("*.json") if f.is_file()]
    if not files:
        raise InvalidDataError(f"no REALTALK Chat_*.json files in {p}")

    def order(f: Path) -> tuple[int, str]:
        m = re.match(r"Chat_(\d+)_", f.name)
        return (int(m.group(1)) if m else 1 << 30, f.name)

    return sorted(files, key=order)


def _realtalk_time(value: object) -> str | None:
    # "29.12.2023, 22:42:04" (local time of the chat app; no zone is given, stored as UTC).
    if not isinstance(value, str):
        return None
    try:
        return datetime.strptime(value.strip(), "%d.%m.%Y, %H:%M:%S").isoformat() + "Z"
    except ValueError:
        return None


def load_realtalk(path: str | Path, split: str = "all") -> Dataset:
    """Load REALTALK chats (a folder of ``Chat_*.json`` or one file), report-only.

    Each chat becomes generic JSONL lines (``id`` = ``dia_id``, session ``"<file stem>:session_<n>"``,
    ``speaker_1`` → user, ``speaker_2`` → assistant), indexed with ``format="generic"``. The
    speaker's name prefixes each message (``"Emi: …"``) because the generic format has no
    speaker field and LoCoMo's native parser renders names the same way; an image message
    gets its caption as ``[image: …]`` like LoCoMo.

    Args:
        path: The ``realtalk`` folder or one chat file.
        split: Must be ``all``: REALTALK is report-only.

    Returns:
        The dataset.

    Raises:
        FileNotFoundError: No such path.
        memlane.errors.InvalidArgumentError: ``split`` is not ``all``.
        memlane.errors.InvalidDataError: A file is not REALTALK-shaped, or there is none.

    Example:
        >>> ds = load_realtalk("tests/fixtures/bench/realtalk_ann_bob.json")  # one chat file
        >>> ds.conversations[0].cid, ds.conversations[0].fmt
        ('realtalk_ann_bob', 'generic')
    """
    _check_split("realtalk", split)
    p = _require(path, "REALTALK data")
    files = _realtalk_files(p)
    conversations = [_realtalk_conversation(f) for f in files]
    root = p if p.is_dir() else p.parent
    return Dataset(
        name="realtalk",
        split="all",
        path=p,
        sha256=_sha256_files(root, files),
        verified=None,
        conversations=conversations,
        notes=[
            "report-only (no tuning)",
            "adapter: generic JSONL, speaker_1 -> user, speaker_2 -> assistant, message text prefixed with the speaker name",
            "evidence normalised (lists, ranges, formatting); unresolvable ids dropped and counted",
        ],
    )


def _realtalk_conversation(path: Path) -> Conversation:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InvalidDataError(f"{path} is not valid JSON: {exc}") from None
    if not isinstance(doc, dict) or "qa" not in doc:
        raise InvalidDataError(f"{path} is not a REALTALK chat (expected an object with 'qa' and session_<n> lists)")
    cid = path.stem
    names = doc.get("name") or {}
    assistant_name = names.get("speaker_2")
    sessions = sorted(
        ((int(m.group(1)), v) for k, v in doc.items() if (m := _SESSION_KEY.fullmatch(k)) and isinstance(v, list)),
        key=lambda kv: kv[0],
    )
    records: list[dict[str, Any]] = []
    turn_session: dict[str, str] = {}
    conversion: Counter[str] = Counter()
    for n, messages in sessions:
        session_id = f"{cid}:session_{n}"
        for msg in messages:
            if not isinstance(msg, dict) or not isinstance(msg.get("dia_id"), str):
                conversion["malformed_message"] += 1
                continue
            text = str(msg.get("clean_text") or "").strip()
            caption = str(msg.get("blip_caption") or "").strip()
            if caption:
                text = f"{text} [image: {caption}]".strip()
            turn_session[msg["dia_id"]] = session_id
            if not text:
                conversion["empty_message"] += 1
                continue
            speaker = str(msg.get("speaker") or "").strip()
            record: dict[str, Any] = {
                "id": msg["dia_id"],
                "role": "assistant" if speaker and speaker == assistant_name else "user",
                "content": f"{speaker}: {text}" if speaker else text,
                "session_id": session_id,
            }
            ts = _realtalk_time(msg.get("date_time"))
            if ts:
                record["timestamp"] = ts
            records.append(record)
    questions, issues = _dialog_questions(
        cid, doc.get("qa") or [], turn_session, lambda cat: f"{cat}:{REALTALK_CATEGORIES.get(cat, 'unknown')}"
    )
    return Conversation(
        cid=cid,
        questions=questions,
        fmt="generic",
        payload=records,
        evidence_issues=issues,
        conversion_issues=conversion,
    )


# -- BEAM ----------------------------------------------------------------------------------


def _beam_dirs(p: Path) -> list[Path]:
    if (p / "chat.json").is_file():
        return [p]
    dirs = [d for d in p.iterdir() if d.is_dir() and (d / "chat.json").is_file()]
    if not dirs:
        raise InvalidDataError(
            f"no BEAM conversations in {p}: expected <n>/chat.json and <n>/probing_questions.json (e.g. beam/100K)"
        )
    return sorted(dirs, key=lambda d: (0, int(d.name)) if d.name.isdigit() else (1, d.name))


def _flatten_ids(value: object, bad: Counter[str]) -> list[int]:
    # source_chat_ids: list of ints, a nested list, or a dict of lists (contradiction,
    # knowledge update, temporal pairs).
    if value is None:
        return []
    if isinstance(value, bool):
        bad["unparseable"] += 1
        return []
    if isinstance(value, int):
        return [value]
    if isinstance(value, str) and value.strip().isdigit():
        bad["reformatted"] += 1
        return [int(value)]
    if isinstance(value, list):
        return [i for v in value for i in _flatten_ids(v, bad)]
    if isinstance(value, dict):
        return [i for v in value.values() for i in _flatten_ids(v, bad)]
    bad["unparseable"] += 1
    return []


def load_beam(path: str | Path, split: str = "all") -> Dataset:
    """Load BEAM conversations (a folder of ``<n>/chat.json`` + ``probing_questions.json``), report-only.

    Messages become generic JSONL lines (``id`` = the message ``id``, session = the batch,
    ``"<n>:batch_<b>"``) with the ``"->-> b,t"`` generation suffix stripped. Gold turn ids are
    the flattened ``source_chat_ids``; abstention questions have none and are counted as
    skipped.

    Args:
        path: The split folder (``beam/100K``) or one conversation folder.
        split: Must be ``all``: BEAM is report-only.

    Returns:
        The dataset.

    Raises:
        FileNotFoundError: No such path.
        memlane.errors.InvalidArgumentError: ``split`` is not ``all``, or ``path`` is a file.
        memlane.errors.InvalidDataError: No conversations are found, or one holds invalid JSON.

    Example:
        >>> import shutil, tempfile
        >>> from pathlib import Path
        >>> with tempfile.TemporaryDirectory() as folder:  # one conversation folder
        ...     _ = shutil.copy("tests/fixtures/bench/beam_chat.json", Path(folder) / "chat.json")
        ...     _ = shutil.copy("tests/fixtures/bench/beam_probing_questions.json", Path(folder) / "probing_questions.json")
        ...     ds = load_beam(folder)
        >>> sorted(ds.conversations[0].questions[2].gold_turns)
        ['2', '4']
    """
    _check_split("beam", split)
    p = _require(path, "BEAM data")
    if not p.is_dir():
        raise InvalidArgumentError(f"BEAM is a folder of conversations (e.g. beam/100K), not a file: {p}")
    dirs = _beam_dirs(p)
    files = [f for d in dirs for f in (d / "chat.json", d / "probing_questions.json") if f.is_file()]
    root = p if len(dirs) > 1 or dirs[0] != p else p.parent
    return Dataset(
        name="beam",
        split="all",
        path=p,
        sha256=_sha256_files(root, files),
        verified=None,
        conversations=[_beam_conversation(d, d.name if d != p else p.name) for d in dirs],
        notes=[
            "report-only (no tuning)",
            f"folder {p.name}: the BEAM repository calls the 128K-token split '100K'",
            "adapter: generic JSONL, one line per message, session = batch (3-5 per conversation, so session level is nearly trivial)",
            "abstention questions have no gold messages and are skipped",
        ],
    )


def _beam_conversation(d: Path, cid: str) -> Conversation:
    try:
        chat = json.loads((d / "chat.json").read_text(encoding="utf-8"))
        probing_path = d / "probing_questions.json"
        probing = json.loads(probing_path.read_text(encoding="utf-8")) if probing_path.is_file() else {}
    except json.JSONDecodeError as exc:
        raise InvalidDataError(f"{d} holds invalid JSON: {exc}") from None
    records: list[dict[str, Any]] = []
    turn_session: dict[str, str] = {}
    conversion: Counter[str] = Counter()
    for b, batch in enumerate(chat if isinstance(chat, list) else [], start=1):
        number = batch.get("batch_number", b) if isinstance(batch, dict) else b
        session_id = f"{cid}:batch_{number}"
        for group in (batch.get("turns") or []) if isinstance(batch, dict) else []:
            for msg in group if isinstance(group, list) else [group]:
                if not isinstance(msg, dict) or msg.get("id") is None or msg.get("role") not in ("user", "assistant"):
                    conversion["malformed_message"] += 1
                    continue
                mid = str(msg["id"])
                turn_session[mid] = session_id
                text = _BEAM_SUFFIX.sub("", str(msg.get("content") or "")).strip()
                if not text:
                    conversion["empty_message"] += 1
                    continue
                records.append({"id": mid, "role": msg["role"], "content": text, "session_id": session_id})
    issues: Counter[str] = Counter()
    questions = []
    for category, items in probing.items() if isinstance(probing, dict) else []:
        for i, item in enumerate(items if isinstance(items, list) else []):
            raw = item.get("source_chat_ids")
            flat = _flatten_ids(raw, issues)
            ids: list[str] = []
            for n in flat:
                issues["evidence_strings"] += 1
                key = str(n)
                if key not in turn_session:
                    issues["unknown_id"] += 1
                elif key not in ids:
                    ids.append(key)
            sessions = frozenset(turn_session[t] for t in ids)
            questions.append(
                Question(
                    qid=f"{cid}/{category}/{i}",
                    text=str(item.get("question", "")),
                    category=category,
                    gold_turns=frozenset(ids),
                    gold_sessions=sessions,
                    raw_evidence=raw,
                    abstention=category == "abstention",
                    skip=_question_skip(ids, sessions, not flat, abstention=category == "abstention"),
                )
            )
    return Conversation(
        cid=cid,
        questions=questions,
        fmt="generic",
        payload=records,
        evidence_issues=issues,
        conversion_issues=conversion,
    )


# -- LongMemEval ---------------------------------------------------------------------------


def iter_json_array(path: str | Path, block: int = 16 << 20) -> Iterator[Any]:
    """Yield the items of a top-level JSON array one at a time, without loading the whole file.

    LongMemEval M is about 2.7 GB; one item is a few MB, so memory stays at a few blocks.

    Args:
        path: File holding ``[item, item, …]``.
        block: Bytes read at a time.

    Yields:
        Each decoded item.

    Raises:
        memlane.errors.InvalidDataError: The file is not a JSON array or is truncated.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "a.json"
        >>> _ = p.write_text('[{"a": 1}, [2, 3], "x"]')
        >>> list(iter_json_array(p, block=4))
        [{'a': 1}, [2, 3], 'x']
    """
    decoder = json.JSONDecoder()
    with open(path, encoding="utf-8") as f:
        buf = ""
        pos = 0
        eof = False

        def more() -> bool:
            nonlocal buf, pos, eof
            if eof:
                return False
            data = f.read(block)
            eof = not data
            buf = buf[pos:] + data
            pos = 0
            return not eof

        def skip_ws() -> None:
            nonlocal pos
            while True:
                while pos < len(buf) and buf[pos].isspace():
                    pos += 1
                if pos < len(buf) or not more():
                    return

        skip_ws()
        if pos >= len(buf) or buf[pos] != "[":
            raise InvalidDataError(f"{path} is not a JSON array")
        pos += 1
        skip_ws()
        if pos < len(buf) and buf[pos] == "]":
            return
        count = 0
        while True:
            while True:
                try:
                    item, end = decoder.raw_decode(buf, pos)
                    # A number cut at the block edge ("3." of "3.5") decodes "successfully":
                    # accept an item only once the separator after it is in the buffer.
                    if not eof and buf.find(",", end) < 0 and buf.find("]", end) < 0:
                        raise json.JSONDecodeError("incomplete", buf, end)
                    break
                except json.JSONDecodeError:
                    if not more():
                        raise InvalidDataError(f"{path}: invalid or truncated JSON in array item {count + 1}") from None
            count += 1
            yield item
            pos = end
            skip_ws()
            if pos >= len(buf):
                raise InvalidDataError(f"{path}: truncated JSON array")
            if buf[pos] == "]":
                return
            if buf[pos] != ",":
                raise InvalidDataError(f"{path}: expected ',' between array items")
            pos += 1
            skip_ws()


def load_longmemeval(path: str | Path, split: str = "all", *, allow_unverified: bool = False) -> Dataset:
    """Load an official LongMemEval file (oracle, S or M), one haystack per question.

    The file's sha256 must match a published one (:data:`LONGMEMEVAL_SHA256`, from
    ``../shared/data/longmemeval/README.md``) unless ``allow_unverified`` (needed for M, which
    has no published checksum, and for test fixtures). Each question's haystack is indexed
    alone through the native parser (``format="longmemeval"``): sessions keep their
    ``haystack_session_ids`` and turn ids are ``"<session_id>:<index>"``.

    Gold: sessions = ``answer_session_ids``; turns = turns with ``has_answer: true``.
    Questions whose id ends in ``_abs`` are abstention questions: they stay in ``all``
    (MemPalace's recall_any@5 protocol) and are dropped from ``no_abstention`` (the official
    protocol, whose headline is recall_all@5).

    Args:
        path: ``longmemeval_oracle.json``, ``longmemeval_s_cleaned.json``, ``longmemeval_m_cleaned.json``.
        split: Must be ``all``: LongMemEval is report-only.
        allow_unverified: Accept a file whose checksum is not a published one.

    Returns:
        The dataset; ``conversations`` is a lazy iterator (the file is streamed).

    Raises:
        FileNotFoundError: No such file.
        memlane.errors.InvalidArgumentError: ``split`` is not ``all``.
        memlane.errors.InvalidDataError: Checksum mismatch (without ``allow_unverified``), or a malformed file.

    Example:
        >>> ds = load_longmemeval("tests/fixtures/bench/longmemeval_mini.json", allow_unverified=True)
        >>> ds.verified  # a test file, not a published one
        False
    """
    _check_split("longmemeval", split)
    p = _require(path, "LongMemEval file")
    digest = sha256_file(p)
    variant = LONGMEMEVAL_SHA256.get(digest)
    if variant is None and not allow_unverified:
        raise InvalidDataError(
            f"{p.name}: sha256 {digest[:16]}… is not a published LongMemEval checksum "
            "(oracle or S cleaned; see ../shared/data/longmemeval/README.md); pass --allow-unverified to run it anyway"
        )
    notes = [
        "report-only (no tuning)",
        "'all' = every question with gold (MemPalace recall_any@5 protocol); "
        "'no_abstention' drops _abs questions (official protocol, headline recall_all@5)",
        f"file: {variant or 'unverified (checksum not published)'}",
    ]
    return Dataset(
        name="longmemeval",
        split="all",
        path=p,
        sha256=digest,
        verified=variant is not None,
        conversations=(_lme_conversation(item, i) for i, item in enumerate(iter_json_array(p))),
        groups={"no_abstention": lambda q: not q.abstention},
        notes=notes,
    )


def _lme_conversation(item: dict[str, Any], position: int) -> Conversation:
    qid = str(item.get("question_id") or f"q{position}")
    abstention = qid.endswith("_abs")
    sids = [str(s) for s in item.get("haystack_session_ids") or []]
    turns: set[str] = set()
    gold_turns: list[str] = []
    for sid, session in zip(sids, item.get("haystack_sessions") or []):
        for idx, turn in enumerate(session if isinstance(session, list) else []):
            # The native parser numbers turns by position in the session list (rust parse/bench.rs).
            tid = f"{sid}:{idx}"
            turns.add(tid)
            if isinstance(turn, dict) and turn.get("has_answer") is True:
                gold_turns.append(tid)
    issues: Counter[str] = Counter()
    raw_sessions = [str(s) for s in item.get("answer_session_ids") or []]
    gold_sessions = []
    for s in raw_sessions:
        issues["evidence_strings"] += 1
        if s not in sids:
            issues["unknown_id"] += 1
        elif s not in gold_sessions:
            gold_sessions.append(s)
    question = Question(
        qid=qid,
        text=str(item.get("question", "")),
        category=str(item.get("question_type", "unknown")),
        gold_turns=frozenset(gold_turns),
        gold_sessions=frozenset(gold_sessions),
        raw_evidence=raw_sessions,
        abstention=abstention,
        skip=_lme_skip(gold_turns, gold_sessions, raw_sessions),
    )
    return Conversation(cid=qid, questions=[question], fmt="longmemeval", payload=[item], evidence_issues=issues)


def _lme_skip(gold_turns: list[str], gold_sessions: list[str], raw_sessions: list[str]) -> dict[str, str]:
    skip = {}
    if not gold_sessions:
        skip["session"] = "no_evidence" if not raw_sessions else "no_valid_evidence"
    if not gold_turns:
        skip["turn"] = "no_has_answer_turn"
    return skip


# -- dispatch ------------------------------------------------------------------------------


def load_dataset(name: str, path: str | Path, split: str | None = None, *, allow_unverified: bool = False) -> Dataset:
    """Load benchmark ``name`` from ``path``.

    Args:
        name: One of :data:`DATASETS`.
        path: File or folder of the data.
        split: LoCoMo: ``dev`` | ``test`` (default) | ``all``; others: ``all`` only (default).
        allow_unverified: LongMemEval only: accept an unpublished checksum.

    Returns:
        The dataset.

    Raises:
        memlane.errors.InvalidArgumentError: Unknown dataset or split.
        FileNotFoundError: ``path`` does not exist.

    Example:
        >>> load_dataset("beam", "/nonexistent", split="dev")
        Traceback (most recent call last):
        memlane.errors.InvalidArgumentError: tuning is only allowed on LoCoMo dev: beam is report-only, run it without --split
    """
    if name not in DATASETS:
        raise InvalidArgumentError(f"unknown benchmark {name!r}: use one of {', '.join(DATASETS)}")
    if name == "locomo":
        return load_locomo(path, split or "test")
    _check_split(name, split or "all")
    if name == "beam":
        return load_beam(path)
    if name == "realtalk":
        return load_realtalk(path)
    return load_longmemeval(path, allow_unverified=allow_unverified)
