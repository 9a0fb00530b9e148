"""The core reads a hit's text (stems, identifiers, change language, quantities) as the Python
reference the time-aware reordering was tuned with did, on real transcripts chunked by the
product, on LoCoMo's conversations and on the corner cases of each pattern."""

from __future__ import annotations

import json
import re
from pathlib import Path

from memlane import _core
from memlane.ranking import rerank

# ------------------------------------------------------------------ the Python reference
# The reordering's text features as Python's `re` read them before memlane-core did (the
# patterns and their order as they were): the oracle the core must equal.
_CLOCK = re.compile(r"\b\d(?:\d{3}-\d\d-\d\d|\d?:\d\d)\b")
_WORD = re.compile(r"[a-z0-9][a-z0-9_.-]*[a-z0-9]|[a-z0-9]")
_SUFFIX = re.compile(r"(?:ing|ed|es|(?<!s)s)$")
_CHANGE = re.compile(
    r"\b(now|no longer|any ?more|instead|switch(?:ed|ing)?|mov(?:ed|ing)|migrat(?:ed|ing|ion)|replac(?:ed|ing)|"
    r"took over|taken over|upgraded|downgraded|raised|lowered|increased|decreased|reduced|scaled|renamed|"
    r"retired|decommissioned|deprecated|dropped|ported|changed|became|grew|rewritten|rewrite|cut ?over|"
    r"phased out|shut down|turned off|is gone|are gone|from \S+ to)\b"
)
_IDENTIFIER = re.compile(r"\b\w+[-_/.]\w[\w/.-]*")
_NOT_COMPOUND = re.compile(r"[\d_/.]")
_NUMBER = re.compile(r"\b(\d+(?:\.\d+)*|" + "|".join(rerank._NUMBER_WORDS) + r")\b")
_COUNTED = re.compile(r"[ \t]+([a-z]+)(?:[ \t]+([a-z]+))?")
_VERSIONED = re.compile(r"([a-z]{3,})[ \t]+$")
_NAME_VERSION = re.compile(r"\b([A-Z][A-Za-z]{2,})[ \t]+v?(\d+(?:\.\d+)*)\b")
_ADDITION = re.compile(r"\b(also|as well|in addition|additionally|now (?:has|have|supports|offers|includes|shows))\b")


def _words(text: str) -> frozenset[str]:
    return frozenset(w for w in _WORD.findall(text.lower()) if w not in rerank._STOP)


def _stem(word: str) -> str:
    return _SUFFIX.sub("", word).removesuffix("e") if len(word) > 3 else word


def _quantities(text: str) -> dict[str, frozenset[str]]:
    lower = text.lower()
    found: dict[str, set[str]] = {}
    for name, number in _NAME_VERSION.findall(text):
        if name.lower() not in rerank._STOP:
            found.setdefault("<named version>", set()).add(f"{name.lower()} {number}")
    for m in _NUMBER.finditer(lower):
        after = _COUNTED.match(lower, m.end())
        units = list(after.groups()) if after else []
        if m.group(1)[0].isdigit() and (before := _VERSIONED.search(lower, max(0, m.start() - 40), m.start())):
            units.append(before.group(1))
        for unit in units:
            if unit and len(unit) > 2 and unit not in rerank._STOP:
                found.setdefault(_stem(unit), set()).add(rerank._NUMBER_WORDS.get(m.group(1), m.group(1)))
    return {unit: frozenset(numbers) for unit, numbers in found.items()}


def _reference(text: str) -> rerank._Features:
    plain = _CLOCK.sub(" ", text)
    found = (m.lower().rstrip(".") for m in _IDENTIFIER.findall(plain))
    lower = text.lower()
    return rerank._Features(
        stems=frozenset(map(_stem, _words(plain))),
        identifiers=frozenset(v for v in found if _NOT_COMPOUND.search(v)),
        change=float(bool(_CHANGE.search(lower)) - bool(_ADDITION.search(lower))),
        quantities=_quantities(plain),
    )


# ------------------------------------------------------------------ the texts
CORNERS = [
    "2026-05-10 › 17:00 We moved billing to db-billing-01 in us-east-1 with 3 API replicas.",
    "Billing uses the MySQL 5.7 database; now it runs on Postgres 16 and python 3.12.",
    "We run python \n3.12 there, and node\t18 here.",
    "x" * 60 + " 3.12 and " + "é" * 45 + " python 3.12",
    "The admin panel now has a dark mode toggle, also two themes and a single switch.",
    "The admin panel also has dark themes as well.",
    "Renamed APP_DEBUG to APP_LOG_LEVEL in .github/workflows/ci.yml and jobs.v2.",
    "Scaled from 70 percent to 80 percent; three reviewers, twelve approving reviews, eleven.",
    "seventeen sevens: seven1 one-two 1.2.3.4 v2.0 React v18 Go 1.22.1 ~ 10:30pm 9:5 123:45",
    "Sessions, deploys, deployed, caching, classes, bless, uses, bus, gas, settings, releases.",
    "Ça a changé : la base est passée de MySQL 5.7 à Postgres 16 — 3 répliques, ２ serveurs.",
    "日本語のテキスト 2026-01-02 と us-west-2 と 5 replicas “quoted” ‘single’ 🚀 done.",
    "é5 apples and │5 pears; café-2 naïve-x1 │ db-1 ⋮ v2.0 — 10:30 … now “moved” →3 hosts",
    "│ 2026-03-04 │ MySQL 8 │ 4 replicas │ switched │ ⋮ █ ✨ 🍰",
    "from staging to prod; from db-1 to db-2; any more, anymore, cutover, cut over, no longer.",
    "Is gone. ARE GONE. Shut down. TURNED OFF. Phased out... took over, taken over.",
    "trailing dots... a.b.c. end_. __init__.py ./run.sh ../x/y-z_1 http://h.example.com/a/b",
    "",
    "   \n\n\t ",
    "one",
    "Python 3",
    "MySQL\t5.7",
    "Mysql 5.7.1.",
    "  3 apis\n  4 apis",
    "5\tcores\tper node",
]


def _transcript_chunks(shared_data: Path) -> list[str]:
    """Every chunk the product makes of the shared real transcripts, and each one's paragraphs."""
    files = [p for p in sorted((shared_data / "transcripts").rglob("*")) if p.is_file() and _core.is_candidate(p)]
    texts = [chunk["text"] for p in files for chunk in _core.chunk_file(p)]
    return texts + [p for t in texts for p in t.split("\n\n")]


def _locomo_texts(shared_data: Path) -> list[str]:
    """LoCoMo's turns, five at a time, as a chunk of a chat would hold them."""
    conversations = json.loads((shared_data / "locomo" / "locomo10.json").read_text(encoding="utf-8"))
    texts = []
    for conversation in conversations:
        turns = [
            f"{turn['speaker']}: {turn['text']}"
            for key, session in conversation["conversation"].items()
            if key.startswith("session_") and isinstance(session, list)
            for turn in session
        ]
        texts += ["\n\n".join(turns[i : i + 5]) for i in range(0, len(turns), 5)]
    return texts


def _differences(texts: list[str]) -> list[tuple[str, rerank._Features, rerank._Features]]:
    return [(t, got, want) for t in texts if (got := rerank._features.__wrapped__(t)) != (want := _reference(t))]


def test_the_core_reads_the_corner_cases_as_the_reference() -> None:
    assert _differences(CORNERS) == []
    # The cases are not vacuous: every feature is found somewhere.
    read = [rerank._features.__wrapped__(t) for t in CORNERS]
    assert {f.change for f in read} == {-1.0, 0.0, 1.0}
    assert sum(bool(f.identifiers) for f in read) >= 6
    assert sum(bool(f.quantities) for f in read) >= 8
    assert any("<named version>" in f.quantities for f in read)


def test_the_core_reads_real_transcripts_as_the_reference(shared_data: Path) -> None:
    texts = _transcript_chunks(shared_data)
    assert len(texts) > 100
    assert _differences(texts) == []


def test_the_core_reads_locomo_as_the_reference(shared_data: Path) -> None:
    texts = _locomo_texts(shared_data)
    assert len(texts) > 1000
    assert _differences(texts) == []


def test_words_and_stems_are_the_references() -> None:
    for text in CORNERS:
        assert rerank._words(text) == _words(text), text
        assert rerank._stems(text) == frozenset(map(_stem, _words(text))), text
