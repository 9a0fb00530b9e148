"""What time a question is about: English heuristics, no LLM, no subject lists.

Two readings of a query drive recall's handling of time:

* :func:`asks_present_state` — "which database does billing use *now*?", "what *is* the
  release cadence?": the newest of several conflicting statements should answer.
* :func:`time_window` — "what did we use *in January*?", "*last March*", "*two weeks before
  August 11, 2023*", "*yesterday*": memories dated in that window should come first.

Relative expressions are resolved against a reference date that the caller supplies — the
newest memory among the candidates — because an archive's questions are relative to the
conversation's own dates, not to the wall clock.

Example:
    >>> from datetime import datetime, timezone
    >>> ref = datetime(2026, 6, 10, tzinfo=timezone.utc)
    >>> w = time_window("what did billing use in January?", ref)
    >>> w.start.date().isoformat(), w.end.date().isoformat()
    ('2026-01-01', '2026-02-01')
    >>> asks_present_state("which database does billing use now?")
    True
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

__all__ = ["NUMBER_WORDS", "TimeWindow", "affinity", "asks_present_state", "time_window"]

_MONTHS = {
    name: n
    for n, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_MONTH = r"\b(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\b\.?"
# Number words, here in relative times ("three weeks ago") and in memlane.rerank in restated
# quantities ("two approving reviews").
NUMBER_WORDS = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}
_NUMBERS = {"a": 1, "an": 1, **NUMBER_WORDS, "couple of": 2, "few": 3}
_COUNT = r"(?P<count>\d+|" + "|".join(sorted(_NUMBERS, key=len, reverse=True)) + r")"
_UNIT = r"(?P<unit>day|week|weekend|month|year)s?"
_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]

# A date written out: "May 7, 2023", "7 May 2023", "on 1 February, 2023", "2023-05-07".
_ISO_DATE = re.compile(r"\b(?P<year>(?:19|20)\d\d)-(?P<m>\d\d)-(?P<d>\d\d)\b")
_MONTH_DAY = re.compile(_MONTH + r"\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?\b(?:(?:\s*,\s*|\s+)(?P<year>(?:19|20)\d\d)\b)?")
_DAY_MONTH = re.compile(
    r"\b(?P<day>\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MONTH + r"(?:(?:\s*,\s*|\s+)(?P<year>(?:19|20)\d\d)\b)?"
)
_MONTH_YEAR = re.compile(_MONTH + r"(?:(?:\s*,\s*|\s+)(?P<year>(?:19|20)\d\d)\b)?")
_YEAR = re.compile(r"\b(?:in|during|of|since|from)\s+(?P<year>(?:19|20)\d\d)\b|\b(?P<bare>(?:19|20)\d\d)\b")
# "two weeks before <date>", "the week after <date>", "the weekend before <date>".
_OFFSET = re.compile(
    r"\b(?:(?:the\s+)?" + _COUNT + r"\s+|the\s+|a\s+)?" + _UNIT + r"\s+(?P<dir>before|after|prior to)\s+"
)
_AGO = re.compile(r"\b" + _COUNT + r"\s+" + _UNIT + r"\s+ago\b")
_LAST_MONTH_NAME = re.compile(r"\blast\s+" + _MONTH + r"(?!\s+\d)")
_LAST_UNIT = re.compile(r"\b(?P<which>last|this|past|previous)\s+(?P<unit>week|weekend|month|year)\b")
_DAY_WORD = re.compile(r"\b(?P<word>yesterday|today|tonight|last night|the day before yesterday)\b")
_LAST_WEEKDAY = re.compile(r"\b(?:last|on)\s+(?P<weekday>" + "|".join(_WEEKDAYS) + r")\b")

_PRESENT_MARKERS = re.compile(
    r"\b(now|currently|current|nowadays|these days|at the moment|at present|as of today|today|still|anymore|"
    r"latest|most recent|up to date|right now)\b"
)
_PAST_MARKERS = re.compile(
    r"\b(did|was|were|had|used to|previously|before|originally|formerly|at first|initially|ago|last)\b"
)
_PRESENT_AUX = re.compile(
    r"\b(is|are|does|do|has|have|am|can|may|must|uses?|runs?|lives?|works?|what's|who's|where's|how's)\b"
)
# A verb in the third person present right after the question word or a short noun phrase:
# "who leads payments on-call?", "which object storage holds the uploads?".
_PRESENT_VERB = re.compile(r"^\s*(?:who|what|which)(?:\s+[a-z-]+){0,3}?\s+[a-z]+[^\Ws]s\b")
_QUESTION = re.compile(r"^\s*(what|which|who|where|when|how|is|are|does|do|has|have)\b")


@dataclass(frozen=True)
class TimeWindow:
    """A half-open span ``[start, end)`` the query names (UTC)."""

    start: datetime
    end: datetime


def asks_present_state(query: str) -> bool:
    """True when the query asks how things are now, not how they were.

    Explicit markers ("now", "currently", "still", "latest") always count; otherwise a question
    in the present tense ("which database does billing use?", "what is the cadence?") counts
    unless it names a time or uses the past ("did", "was", "last", "ago").

    Example:
        >>> asks_present_state("What did Caroline research?"), asks_present_state("what is the release cadence?")
        (False, True)
    """
    q = query.lower()
    if _PRESENT_MARKERS.search(q):
        return True
    # Whether a window exists does not depend on the reference date.
    if _PAST_MARKERS.search(q) or time_window(query, datetime.now(timezone.utc)) is not None:
        return False
    return bool(_QUESTION.search(q) and (_PRESENT_AUX.search(q) or _PRESENT_VERB.search(q)))


def _count(text: str) -> int:
    return int(text) if text.isdigit() else _NUMBERS[text]


def _day(year: int, month: int, day: int) -> datetime | None:
    try:
        return datetime(year, month, day, tzinfo=timezone.utc)
    except ValueError:
        return None


def _month_start(year: int, month: int) -> datetime:
    return datetime(year + (month - 1) // 12, (month - 1) % 12 + 1, 1, tzinfo=timezone.utc)


def _latest_year_for(month: int, day: int, ref: datetime) -> int:
    """The year that puts a month (and day) without a year at or before the reference date."""
    return ref.year if (month, day) <= (ref.month, ref.day) else ref.year - 1


def _absolute(q: str, original: str, ref: datetime) -> tuple[TimeWindow, re.Match[str]] | None:
    """The first written-out date or month in the (lower-cased) query, as a window."""
    found: list[tuple[int, TimeWindow, re.Match[str]]] = []
    for pattern in (_ISO_DATE, _MONTH_DAY, _DAY_MONTH):
        for m in pattern.finditer(q):
            gd = m.groupdict()
            month = int(gd["m"]) if "m" in gd else _MONTHS[gd["month"]]
            if gd.get("month") == "may" and not gd.get("year") and "May" not in original:
                continue  # "you may 3 times": the verb, not the month
            day_n = int(gd["d"] if "d" in gd else gd["day"])
            year = int(gd["year"]) if gd.get("year") else _latest_year_for(month, day_n, ref)
            day = _day(year, month, day_n)
            if day is not None:
                found.append((m.start(), TimeWindow(day, day + timedelta(days=1)), m))
    if not found:
        for m in _MONTH_YEAR.finditer(q):
            month = _MONTHS[m.group("month")]
            if m.group("month") == "may" and not m.group("year") and "May" not in original:
                continue
            year = int(m.group("year")) if m.group("year") else _latest_year_for(month, 1, ref)
            found.append((m.start(), TimeWindow(_month_start(year, month), _month_start(year, month + 1)), m))
    if not found:
        for m in _YEAR.finditer(q):
            year = int(m.group("year") or m.group("bare"))
            found.append(
                (
                    m.start(),
                    TimeWindow(
                        datetime(year, 1, 1, tzinfo=timezone.utc), datetime(year + 1, 1, 1, tzinfo=timezone.utc)
                    ),
                    m,
                )
            )
    if not found:
        return None
    _, window, match = min(found, key=lambda f: f[0])
    return window, match


def _span(unit: str, count: int) -> timedelta:
    days = {"day": 1, "week": 7, "weekend": 7, "month": 30, "year": 365}[unit]
    return timedelta(days=days * count)


def time_window(query: str, reference: datetime) -> TimeWindow | None:
    """The span of time the query names, or None when it names none.

    Args:
        query: The question.
        reference: "Now" for relative expressions ("yesterday", "last March", "two weeks
            ago", a month without a year): the newest memory's date.

    Example:
        >>> from datetime import datetime, timezone
        >>> ref = datetime(2023, 8, 20, tzinfo=timezone.utc)
        >>> w = time_window("What is the name of the puppy she got two weeks before August 11, 2023?", ref)
        >>> w.start.date().isoformat(), w.end.date().isoformat()
        ('2023-07-25', '2023-08-12')
        >>> time_window("What did Caroline research?", ref) is None
        True
    """
    q = query.lower()
    ref = reference.astimezone(timezone.utc)
    today = datetime(ref.year, ref.month, ref.day, tzinfo=timezone.utc)
    absolute = _absolute(q, query, ref)
    if absolute is not None:
        window, match = absolute
        offset = None
        for found in _OFFSET.finditer(q[: match.start()]):
            if found.end() == match.start() or q[found.end() : match.start()].strip() in ("", "on", "the"):
                offset = found
        if offset is None:
            return window
        count = _count(offset.group("count")) if offset.group("count") else 1
        span = _span(offset.group("unit"), count)
        # "two weeks before X": around X - 2 weeks, through X (the event is told on or after it).
        if offset.group("dir") == "after":
            return TimeWindow(window.start, window.end + span + timedelta(days=3))
        return TimeWindow(window.start - span - timedelta(days=3), window.end)
    if m := _AGO.search(q):
        span = _span(m.group("unit"), _count(m.group("count")))
        slack = max(span / 4, timedelta(days=1))
        return TimeWindow(today - span - slack, today - span + slack + timedelta(days=1))
    if m := _LAST_MONTH_NAME.search(q):
        month = _MONTHS[m.group("month")]
        year = ref.year if month < ref.month else ref.year - 1
        return TimeWindow(_month_start(year, month), _month_start(year, month + 1))
    if m := _LAST_UNIT.search(q):
        unit, which = m.group("unit"), m.group("which")
        if unit == "year":
            year = ref.year if which == "this" else ref.year - 1
            return TimeWindow(datetime(year, 1, 1, tzinfo=timezone.utc), datetime(year + 1, 1, 1, tzinfo=timezone.utc))
        if unit == "month":
            start = _month_start(ref.year, ref.month) if which == "this" else _month_start(ref.year, ref.month - 1)
            return TimeWindow(start, _month_start(start.year, start.month + 1))
        week_start = today - timedelta(days=today.weekday())
        if which == "this":
            return TimeWindow(week_start, week_start + timedelta(days=7))
        return TimeWindow(
            week_start - timedelta(days=7), week_start + (timedelta(days=1) if unit == "weekend" else timedelta(0))
        )
    if m := _DAY_WORD.search(q):
        back = {"today": 0, "tonight": 0, "yesterday": 1, "last night": 1, "the day before yesterday": 2}[
            m.group("word")
        ]
        day = today - timedelta(days=back)
        return TimeWindow(day, day + timedelta(days=1))
    if m := _LAST_WEEKDAY.search(q):
        back = (today.weekday() - _WEEKDAYS.index(m.group("weekday"))) % 7 or 7
        day = today - timedelta(days=back)
        return TimeWindow(day, day + timedelta(days=1))
    return None


def affinity(when: datetime | None, window: TimeWindow, lag: timedelta, scale: timedelta) -> float:
    """How close a memory's date is to the window: 1 inside ``[start, end + lag)``, decaying
    linearly to 0 over ``scale`` outside; 0 for undated memories.

    ``lag`` covers telling after the fact: what happened "in June" is often said in early July.

    Example:
        >>> from datetime import datetime, timedelta, timezone
        >>> w = TimeWindow(datetime(2026, 1, 1, tzinfo=timezone.utc), datetime(2026, 2, 1, tzinfo=timezone.utc))
        >>> affinity(datetime(2026, 1, 15, tzinfo=timezone.utc), w, timedelta(days=7), timedelta(days=30))
        1.0
        >>> affinity(datetime(2026, 5, 1, tzinfo=timezone.utc), w, timedelta(days=7), timedelta(days=30))
        0.0
    """
    if when is None:
        return 0.0
    end = window.end + lag
    if window.start <= when < end:
        return 1.0
    distance = window.start - when if when < window.start else when - end
    return max(0.0, 1.0 - distance / scale)
