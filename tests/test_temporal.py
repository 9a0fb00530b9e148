"""English heuristics for the time a question is about: present state, named windows, affinity."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from memlane.ranking.temporal import TimeWindow, affinity, asks_present_state, time_window

REF = datetime(2026, 6, 10, 15, 30, tzinfo=timezone.utc)  # a Wednesday


def day(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    "query",
    [
        "which database does billing use now?",
        "What CI system do we currently run the builds on?",
        "what is the release cadence these days?",
        "Which database does the billing service use?",
        "How many API replicas are there?",
        "is Jenkins still running?",
        "What's the latest on the auth provider?",
        # A present-tense verb of its own, a modal or a contraction; "may" the verb is no month.
        "Who leads the payments on-call?",
        "Which object storage holds the uploads?",
        "When does standup start?",
        "What's the Berlin office address?",
        "How many requests per minute may a client send?",
    ],
)
def test_present_state_questions(query):
    assert asks_present_state(query)


@pytest.mark.parametrize(
    "query",
    [
        "which database did billing use in January?",
        "What did Caroline research?",
        "When did Melanie go camping in June?",
        "what was the release cadence last year?",
        "How many times has Melanie gone to the beach in 2023?",
        "the deploy failed with exit code 137",
        "Who designed the company logo?",
        "When does the build run in May?",
    ],
)
def test_not_present_state(query):
    assert not asks_present_state(query)


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("what did we use in January?", day(2026, 1, 1), day(2026, 2, 1)),
        # A month later in the year than the reference date is last year's.
        ("what did we deploy in September?", day(2025, 9, 1), day(2025, 10, 1)),
        ("what happened last March?", day(2026, 3, 1), day(2026, 4, 1)),
        ("in December 2023", day(2023, 12, 1), day(2024, 1, 1)),
        ("anything from 2023?", day(2023, 1, 1), day(2024, 1, 1)),
        ("what did we decide on May 7?", day(2026, 5, 7), day(2026, 5, 8)),
        ("on 1 February, 2023", day(2023, 2, 1), day(2023, 2, 2)),
        ("shared on December 1,2023", day(2023, 12, 1), day(2023, 12, 2)),
        ("on 8th December, 2023", day(2023, 12, 8), day(2023, 12, 9)),
        ("the 2026-04-02 incident", day(2026, 4, 2), day(2026, 4, 3)),
        ("yesterday", day(2026, 6, 9), day(2026, 6, 10)),
        ("what broke today", day(2026, 6, 10), day(2026, 6, 11)),
        ("last month", day(2026, 5, 1), day(2026, 6, 1)),
        ("last year", day(2025, 1, 1), day(2026, 1, 1)),
        ("last week", day(2026, 6, 1), day(2026, 6, 8)),
        ("last Monday", day(2026, 6, 8), day(2026, 6, 9)),
        # "two weeks before X": from X minus the span (and a few days' slack) through X.
        ("the puppy she got two weeks before August 11, 2023", day(2023, 7, 25), day(2023, 8, 12)),
        ("where was Tim the week before 16 November 2023", day(2023, 11, 6), day(2023, 11, 17)),
        ("three days after May 2, 2026", day(2026, 5, 2), day(2026, 5, 9)),
    ],
)
def test_time_windows(query, start, end):
    assert time_window(query, REF) == TimeWindow(start, end)


def test_ago_is_centred_on_the_span_back():
    w = time_window("what did we try two weeks ago?", REF)
    assert w is not None
    assert w.start < day(2026, 5, 27) < w.end
    assert w.end <= day(2026, 6, 1)


@pytest.mark.parametrize(
    "query",
    [
        "What did Caroline research?",
        "Why did Maria start blogging?",  # "mar" inside a name is not March
        "what's the decision on caching?",  # nor "dec" inside a word
        "you may 3 times retry",  # "may" the verb
        "exit code 137",
    ],
)
def test_no_time_named(query):
    assert time_window(query, REF) is None


def test_affinity_inside_lag_fading_and_undated():
    w = TimeWindow(day(2026, 1, 1), day(2026, 2, 1))
    lag, scale = timedelta(days=7), timedelta(days=14)
    assert affinity(day(2026, 1, 15), w, lag, scale) == 1.0
    assert affinity(day(2026, 2, 5), w, lag, scale) == 1.0  # told a few days after the fact
    assert affinity(day(2025, 12, 25), w, lag, scale) == pytest.approx(0.5)
    assert affinity(day(2026, 3, 30), w, lag, scale) == 0.0
    assert affinity(None, w, lag, scale) == 0.0
