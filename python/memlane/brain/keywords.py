"""The words that stand for a brain entry: its index keywords and its keyword score for a query.

:func:`keywords` picks the most telling words of an entry (identifiers, names, long words) for
the compact index line :func:`index_line` writes; :func:`keyword_scores` ranks entries for a
query by the share of the query's IDF mass each holds. :data:`STOPWORDS` are the words neither counts.

Example:
    >>> keywords("Run `cargo test --release` before pushing to CI.")
    ['release', 'pushing', 'cargo', 'test']
"""

from __future__ import annotations

import math
import re
from collections import Counter

from memlane.brain.document import Entry

__all__ = ["STOPWORDS", "index_line", "keyword_scores", "keywords"]

STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "all",
        "also",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "done",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "him",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "let",
        "me",
        "more",
        "most",
        "my",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "us",
        "use",
        "used",
        "uses",
        "using",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "instead",
        "now",
        "no",
        "longer",
        "new",
        "old",
        "via",
        "per",
        "vs",
        "always",
        "never",
        "make",
        "sure",
        "run",
        "find",
        "moved",
        "stores",
        "still",
    ]
)
_WORD_RE = re.compile(r"[A-Za-z0-9][\w.+#/-]*[\w+#]|[A-Za-z0-9]")
_TOKEN_RE = re.compile(r"[a-z0-9]+")


def keywords(text: str, n: int = 4) -> list[str]:
    """The most telling words of ``text`` for the index (identifiers, names, long words).

    Example:
        >>> keywords("Billing moved from Postgres to DynamoDB; see `billing_db.py`.")
        ['billing_db.py', 'dynamodb', 'postgres', 'billing']
    """
    scored: dict[str, float] = {}
    for i, m in enumerate(_WORD_RE.finditer(text)):
        word = m.group(0).strip(".")
        low = word.lower()
        if low in STOPWORDS or len(low) < 3 or low.isdigit() or low in scored or "'" in text[m.end() : m.end() + 1]:
            continue
        score = 1.0 + min(len(low), 12) / 12
        if re.search(r"[_./#+]|\d", word) or re.search(r"[a-z][A-Z]", word):
            score += 2.0
        elif word[0].isupper() and i > 0:
            score += 1.0
        scored[low] = score - i * 0.01
    return sorted(scored, key=lambda w: -scored[w])[:n]


def index_line(entry: Entry) -> str:
    """One line of the compact index: key, date, description, state and keywords.

    Example:
        >>> index_line(Entry("KD15", "2026-04-02", "Billing uses Postgres.", meta={"superseded_by": "KD22"}))
        '- [KD15] 2026-04-02 Billing uses Postgres. (superseded by KD22) · postgres, billing\\n'
    """
    desc = entry.text if len(entry.text) <= 80 else entry.text[:79].rsplit(" ", 1)[0] + "…"
    state = ""
    if entry.superseded_by:
        state = f" (superseded by {entry.superseded_by})"
    elif entry.superseded:
        state = " (superseded)"
    elif entry.resolved:
        state = f" ({entry.meta['status']})"
    words = list(dict.fromkeys([*(a.lower() for a in entry.aliases), *keywords(entry.text)]))
    tail = f" · {', '.join(words)}" if words else ""
    return f"- [{entry.key}] {entry.date or 'undated'} {desc}{state}{tail}\n"


def keyword_scores(entries: list[Entry], query: str) -> list[tuple[Entry, float]]:
    """Entries matching ``query``, best first: the share of the query's IDF mass each matches, times its weight.

    Example:
        >>> [(e.key, round(s, 2)) for e, s in keyword_scores([Entry("KD01", None, "Billing uses Postgres.")], "postgres")]
        [('KD01', 1.0)]
    """
    docs = [
        set(_TOKEN_RE.findall(" ".join([e.key.lower(), e.text, e.detail or "", *e.aliases]).lower())) for e in entries
    ]
    terms = list(dict.fromkeys(_TOKEN_RE.findall(query.lower())))
    df = Counter(t for d in docs for t in d if t in terms)
    idf = {t: math.log(1 + (len(docs) + 1) / (df[t] + 0.5)) for t in terms}
    total = sum(idf.values()) or 1.0
    scored = []
    for e, d in zip(entries, docs):
        s = sum(idf[t] for t in terms if t in d) / total * e.weight
        if s > 0:
            scored.append((e, s))
    scored.sort(key=lambda x: (-x[1], x[0].key))
    return scored
