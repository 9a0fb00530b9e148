"""Decisions stated in a sentence: a subject's value, and whether the sentence says it changed.

"We switched the billing database from Postgres to DynamoDB" states the subject ``billing
database`` at ``DynamoDB`` with change language; "we decided to use Kafka as the event bus"
states a value without it. Compaction reads them to keep a reversed decision out of
``WISDOM.md``; dreaming turns them into wiki supersessions and contradiction flags.

Example:
    >>> [(d.subject, d.value, d.change) for d in decisions("We switched the billing database from Postgres to DynamoDB.")]
    [('billing database', 'DynamoDB', True)]
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_NAME = r"[A-Za-z0-9][\w.+#/-]*(?: [A-Z][\w.+#-]*)?"
_SUBJECT = r"(?:the |our )?(?P<subject>[a-z][\w -]{2,60}?)"
_DECISION_PATTERNS = [
    (
        re.compile(
            r"\b(?:switch(?:ed|ing)?|mov(?:ed|ing)|migrat(?:ed|ing)|chang(?:ed|ing)|went)\s+"
            + _SUBJECT
            + r"\s+from\s+(?P<old>"
            + _NAME
            + r")\s+(?:over\s+)?to\s+(?P<new>"
            + _NAME
            + r")",
            re.I,
        ),
        True,
    ),
    (
        re.compile(
            r"\breplac(?:ed|ing|e)\s+(?P<old>"
            + _NAME
            + r")\s+(?:with|by)\s+(?P<new>"
            + _NAME
            + r")\s+(?:for|as|in)\s+"
            + _SUBJECT
            + r"\s*(?:[.;,]|$)",
            re.I,
        ),
        True,
    ),
    (
        re.compile(
            r"\b(?:decided|agreed|chose|opted)\s+to\s+(?:use|go\s+with|adopt|keep)\s+(?P<new>"
            + _NAME
            + r")\s+(?:as|for)\s+"
            + _SUBJECT
            + r"\s*(?:[.;,]|$)",
            re.I,
        ),
        False,
    ),
    (
        re.compile(
            r"\b(?:standardi[sz]ed?|settled)\s+on\s+(?P<new>"
            + _NAME
            + r")\s+(?:as|for)\s+"
            + _SUBJECT
            + r"\s*(?:[.;,]|$)",
            re.I,
        ),
        False,
    ),
]


@dataclass(frozen=True)
class Decision:
    """A subject's value stated in a sentence; ``change`` when the sentence says it changed."""

    subject: str
    value: str
    change: bool
    sentence: str


def decisions(sentence: str) -> list[Decision]:
    """Decisions a sentence states (the first pattern that matches)."""
    for pattern, change in _DECISION_PATTERNS:
        m = pattern.search(sentence)
        if m:
            subject = " ".join(m.group("subject").lower().split())
            value = m.group("new").strip(" .,;`*\"'")
            if subject and value:
                return [Decision(subject, value, change, sentence)]
    return []
