"""Recency-aware search: the current statement first on present-state questions, the named time
first on past ones, unique old facts untouched, through Memory.index → Memory.search."""

from __future__ import annotations

import sys
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest
from conftest import FakeEmbedder

import memlane
import memlane.ranking.rerank as rerank_module
from memlane.agents.mcp import MemoryTools
from memlane.cli import main as cli_main
from memlane.memory import Hit
from memlane.ranking.rerank import rerank

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benches"))
from reversal_corpus import write_session

OLD_DB = "Billing uses the MySQL database on host db-billing-01."
NEW_DB = "Yes: billing uses the Postgres database now, on host db-billing-02."
INVOICES = "The invoice job runs on the first day of each month at 02:00 UTC."
FILLER = [
    ("Can you review the README wording?", "Sure, I tightened the introduction and fixed two broken links."),
    ("Lint is failing on main", "Ruff flagged an unused import in tools/report.py; removed it."),
    ("Add a unit test for the parser", "Added tests with cases for empty input, unicode and a truncated line."),
    ("Why is the laptop fan so loud?", "The file watcher was scanning node_modules; excluding it fixed it."),
    ("Bump the version", "Version bumped to 2.4.1 in pyproject.toml and the changelog updated."),
    ("Any idea for the team lunch?", "The ramen place near the office takes group bookings on Fridays."),
    ("Rename the env var", "Renamed APP_DEBUG to APP_LOG_LEVEL in the three places that read it."),
    ("Is the docs site down?", "A DNS propagation delay after the certificate renewal; it resolves again."),
]


def padded(pair: tuple[str, str]) -> tuple[str, str]:
    """A filler exchange long enough (over 185 estimated tokens) that the short statements
    between fillers are never packed into one chunk with one (see PACK_TOKENS in rust/memlane-core/src/chunk/session.rs):
    its reply said over and over, so its words and their proportions stay the same."""
    return pair[0], " ".join([pair[1]] * 12)


def utc(m: int, d: int) -> datetime:
    return datetime(2026, m, d, 9, tzinfo=timezone.utc)


@pytest.fixture(params=["fake", "none"])
def mem(request, tmp_path):
    """A home holding a decision reversed across formats, a unique old fact and filler."""
    src = tmp_path / "src"
    f = [padded(p) for p in FILLER]
    write_session(src, "claude-code", "s-jan", [f[0], ("Which database does billing use?", OLD_DB), f[1]], utc(1, 12))
    write_session(src, "generic", "s-feb", [f[2], ("When does the invoice job run?", INVOICES), f[3]], utc(2, 3))
    write_session(src, "codex", "s-mar", [f[4], ("Is the billing database migration done?", NEW_DB), f[5]], utc(3, 20))
    write_session(src, "generic", "s-apr", [f[6], f[7]], utc(4, 2))
    m = memlane.open(tmp_path / "home", embedder=FakeEmbedder() if request.param == "fake" else "none")
    m.index([src])
    return m


def rank_of(hits: list[Hit], text: str) -> int:
    return next(i for i, h in enumerate(hits) if text in h.text)


def test_current_statement_first_and_earlier_one_marked(mem):
    hits = mem.search("which database does billing use now?", k=5)
    assert NEW_DB in hits[0].text
    assert hits[0].superseded_by is None
    old = hits[rank_of(hits, OLD_DB)]
    assert old.superseded_by == hits[0].id
    assert old.timestamp.startswith("2026-01-12") and hits[0].timestamp.startswith("2026-03-20")
    # Without the feature the stale statement wins: its question is worded like the query.
    plain = mem.search("which database does billing use now?", k=5, recency=False)
    assert OLD_DB in plain[0].text
    assert all(h.superseded_by is None for h in plain)


def test_unique_old_fact_is_not_buried(mem):
    on = mem.search("when does the invoice job run?", k=5)
    off = mem.search("when does the invoice job run?", k=5, recency=False, temporal=False)
    assert INVOICES in on[0].text and INVOICES in off[0].text
    assert on[0].superseded_by is None


def test_a_named_past_time_prefers_that_time(mem):
    hits = mem.search("which database did billing use in January?", k=5)
    assert OLD_DB in hits[0].text
    assert hits[0].scores["time"] == 1.0
    assert rank_of(hits, NEW_DB) > 0


def test_questions_about_no_time_rank_as_plain_fusion(mem):
    query = "billing database host"
    on = mem.search(query, k=4)
    off = mem.search(query, k=4, recency=False, temporal=False)
    assert [h.to_dict() for h in on] == [h.to_dict() for h in off]


def test_cli_search_shows_dates_and_marks_earlier_statements(mem, capsys):
    code = cli_main(
        ["search", "which database does billing use now?", "--home", str(mem.home), "--embed", "none", "-k", "5"]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "2026-03-20 09:" in out and "2026-01-12 09:" in out
    first, rest = out.split("\n2. ", 1)
    assert "Postgres" in first and "earlier statement" not in first
    assert "MySQL" in rest and "earlier statement: superseded by " + first.split("] ")[1].split()[0] in rest


def _hit(i: int, score: float, when: str | None) -> Hit:
    return Hit(
        id=f"h{i}",
        source="transcript",
        text=f"text {i}",
        score=score,
        scores={"bm25": None, "vector": score},
        path="p",
        session_id=f"s{i}",
        turn_start=0,
        turn_end=1,
        timestamp=when,
        heading="",
    )


def _vectors(groups: list[int], dim: int = 64) -> np.ndarray:
    """Unit vectors: hits with the same group number are alike (cosine about 0.8), others
    orthogonal-ish."""
    rng = np.random.default_rng(0)
    bases = {g: rng.normal(size=dim) for g in set(groups)}
    rows = np.stack([bases[g] + 0.5 * rng.normal(size=dim) for g in groups])
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_rerank_puts_the_newest_of_a_group_in_its_first_place_and_moves_nothing_else():
    hits = [
        _hit(0, 0.9, "2026-01-01T00:00:00Z"),  # old statement
        _hit(1, 0.8, "2025-06-01T00:00:00Z"),  # unique, older still
        _hit(2, 0.7, "2026-04-01T00:00:00Z"),  # the newer statement of hit 0's subject
        _hit(3, 0.6, None),  # undated: never grouped
    ] + [_hit(i, 0.5 - i / 100, f"2026-0{1 + i % 5}-02T00:00:00Z") for i in range(4, 12)]
    out = rerank(hits, "which database does billing use now?", _vectors([0, 1, 0, 0] + list(range(4, 12))))
    # The group's members swap places and scores; the unique and the undated hit stay put.
    assert [h.id for h in out[:4]] == ["h2", "h1", "h0", "h3"]
    assert [h.score for h in out] == sorted((h.score for h in out), reverse=True)
    assert out[0].score == 0.9 and out[2].score == 0.7
    assert out[2].superseded_by == "h2" and out[0].superseded_by is None
    assert sum(h.superseded_by is not None for h in out) == 1


def test_rerank_keeps_a_much_weaker_newer_hit_below():
    hits = [_hit(0, 0.9, "2026-01-01T00:00:00Z"), _hit(1, 0.3, "2026-04-01T00:00:00Z")]
    hits += [_hit(i, 0.29 - i / 100, "2026-02-01T00:00:00Z") for i in range(2, 12)]
    out = rerank(hits, "what is the cadence?", _vectors([0, 0] + list(range(2, 12))))
    # A weak neighbour is about another aspect: it neither moves up nor marks the fact as stale.
    assert [h.id for h in out[:2]] == ["h0", "h1"]
    assert out[0].superseded_by is None


def test_rerank_switches():
    hits = [_hit(0, 0.9, "2026-01-01T00:00:00Z"), _hit(1, 0.8, "2026-04-01T00:00:00Z")]
    hits += [_hit(i, 0.5 - i / 100, "2026-02-01T00:00:00Z") for i in range(2, 12)]
    vectors = _vectors([0, 0] + list(range(2, 12)))
    assert rerank(hits, "what is the cadence now?", vectors, recency=False) == hits
    assert rerank(hits, "what was the cadence in April?", vectors, temporal=False) == hits
    assert rerank(hits, "what was the cadence in April?", vectors)[0].id == "h1"


def test_recall_and_the_mcp_recall_put_the_current_statement_first_with_dates(mem):
    query = "which database does billing use now?"
    r = mem.recall(query, include_brain=False)
    texts = [i.text for i in r.items]
    new, old = (next(i for i, t in enumerate(texts) if s in t) for s in (NEW_DB, OLD_DB))
    assert new < old
    assert not r.items[new].superseded and r.items[old].superseded
    assert r.items[old].provenance.endswith(
        f"2026-01-12 09:03 UTC · earlier statement, superseded by {r.items[new].id}"
    )
    assert "2026-03-20" in r.items[new].provenance
    block = MemoryTools(mem.home, embedder="none").recall(query)
    assert block.index("Postgres") < block.index("MySQL")
    assert "earlier statement, superseded by" in block


def _texts(hits: list[Hit], texts: list[str]) -> list[Hit]:
    return [replace(h, text=t) for h, t in zip(hits, texts)]


# Unrelated turns around the statements under test: the background of a pool.
BACKGROUND = [text for _, text in FILLER]


def _pool(statements: list[tuple[float, str, str]]) -> list[Hit]:
    """Hits for (score, date, text) statements, then the filler as weaker, dated hits."""
    hits = [_hit(i, score, f"{day}T09:00:00Z") for i, (score, day, _) in enumerate(statements)]
    hits += [_hit(len(hits) + i, 0.45 - i / 100, f"2026-0{1 + i % 5}-1{i}T09:00:00Z") for i in range(len(BACKGROUND))]
    return _texts(hits, [t for _, _, t in statements] + BACKGROUND)


def test_without_vectors_a_reworded_decision_still_supersedes_the_old_one():
    hits = _pool(
        [
            (0.9, "2026-01-19", "Sessions are cached in memcached, two nodes behind the app servers."),
            (
                0.8,
                "2026-03-25",
                "They do now: session caching moved to Redis 7 with persistence, memcached was decommissioned.",
            ),
        ]
    )
    out = rerank(hits, "Where are user sessions cached?", None)
    assert "Redis" in out[0].text and out[0].superseded_by is None
    assert "two nodes" in out[1].text and out[1].superseded_by == out[0].id


def test_a_new_identifier_in_the_same_slot_restates_the_setting(monkeypatch):
    # Little shared wording and no change language: what ties the two is that both name an
    # identifier the question does not ask about, and the newer one names another. That is
    # enough to put the newer first, not to tell the agent the older one is outdated.
    hits = _pool(
        [
            (
                0.9,
                "2026-01-21",
                "Billing runs on MySQL on the db-billing-01 host; the schema lives in billing/schema.sql.",
            ),
            (0.55, "2026-03-19", "Read BILLING_PG_URL: billing data is in Postgres on the managed cluster."),
        ]
    )
    out = rerank(hits, "Which database does billing use now?", None)
    assert "Postgres" in out[0].text and "MySQL" in out[1].text
    assert all(h.superseded_by is None for h in out)
    monkeypatch.setattr(rerank_module, "IDENTIFIER_WEIGHT", 0.0)
    out = rerank(hits, "Which database does billing use now?", None)
    assert "MySQL" in out[0].text and all(h.superseded_by is None for h in out)


def test_a_new_number_for_what_both_count_restates_the_setting(monkeypatch):
    # Little shared wording: what ties the two is that both give a number of percent, and the
    # newer another one. Enough to put the newer first, not to call the older one outdated.
    hits = _pool(
        [
            (0.9, "2026-01-05", "CI fails when line coverage drops below 70 percent."),
            (0.8, "2026-03-12", "The gate was raised: 80 percent or the build goes red."),
        ]
    )
    query = "What coverage do PRs need now?"
    out = rerank(hits, query, None)
    assert "80 percent" in out[0].text and "70 percent" in out[1].text
    assert all(h.superseded_by is None for h in out)
    monkeypatch.setattr(rerank_module, "QUANTITY_WEIGHT", 0.0)
    assert "70 percent" in rerank(hits, query, None)[0].text


def test_a_new_named_version_restates_the_setting(monkeypatch):
    # No shared value, little shared wording: a framework and its version, then another one.
    hits = _pool(
        [
            (
                0.9,
                "2026-01-22",
                "How do I run the dashboard locally?\n\nRun ng serve in the dashboard folder; "
                "it is an Angular 12 project.",
            ),
            (
                0.6,
                "2026-03-21",
                "Why is the dev server different?\n\nUse pnpm dev for the dashboard: "
                "the React 18 app is served by Vite.",
            ),
        ]
    )
    query = "Which framework is the dashboard written in?"
    assert "React 18" in rerank(hits, query, None)[0].text
    monkeypatch.setattr(rerank_module, "QUANTITY_WEIGHT", 0.0)
    assert "Angular 12" in rerank(hits, query, None)[0].text


def test_the_unrelated_turns_of_a_pack_lend_it_no_values_or_change_language(monkeypatch):
    # A newer pack holds an unrelated turn with identifiers and a change verb, and a remark on
    # the dashboard: it is not a restatement of the dashboard's framework.
    pack = (
        "Rename the env var\n\nRenamed APP_DEBUG to APP_LOG_LEVEL in the three places that read it.\n\n"
        "Summarise the standup\n\nThree items: the flaky dashboard chart, the docs sprint, the offsite."
    )
    query = "Which framework is the dashboard written in?"
    terms = rerank_module._stems(query)
    assert rerank_module._about(pack, terms) == pack.split("\n\n")[-1]
    hits = _pool(
        [
            (
                0.9,
                "2026-03-21",
                "How do I start the dashboard dev server?\n\nRun pnpm dev in web/dashboard; "
                "the React app is served by Vite.",
            ),
            (0.7, "2026-05-16", pack),
        ]
    )
    assert "React" in rerank(hits, query, None)[0].text
    monkeypatch.setattr(rerank_module, "_about", lambda text, terms: text)
    assert "React" not in rerank(hits, query, None)[0].text


def test_an_addition_does_not_supersede_a_fact():
    # "now" alone would be change language; "also" and "now has" make it an addition to the fact.
    hits = _pool(
        [
            (0.9, "2026-01-17", "The metrics exporter listens on port 9464 and exposes /metrics in Prometheus format."),
            (0.7, "2026-05-26", "The metrics exporter now also serves /healthz, so the load balancer can check it."),
        ]
    )
    out = rerank(hits, "What port does the metrics exporter listen on?", None)
    assert "9464" in out[0].text
    assert all(h.superseded_by is None for h in out)
    hits = _pool(
        [
            (
                0.9,
                "2026-01-30",
                "Where is the admin panel?\n\nThe admin panel listens on port 8443 on the internal load balancer.",
            ),
            (
                0.55,
                "2026-03-07",
                "Can the admin panel do dark mode?\n\nThe admin panel now has a dark mode toggle in the header.",
            ),
        ]
    )
    out = rerank(hits, "What port does the admin panel listen on?", None)
    assert "8443" in out[0].text
    assert all(h.superseded_by is None for h in out)


def test_a_repeated_statement_is_not_an_earlier_statement():
    same = "Billing uses the MySQL database on host db-billing-01."
    hits = _pool([(0.9, "2026-01-12", same), (0.85, "2026-03-20", same)])
    out = rerank(hits, "which database does billing use now?", None)
    assert [h.id for h in out[:2]] == ["h0", "h1"]
    assert all(h.superseded_by is None for h in out)


def test_an_older_side_match_on_the_topic_is_not_marked_superseded():
    # The export turns are about another aspect of billing: they answer no part of the question,
    # so however they order among themselves, none is told to the agent as outdated.
    hits = _pool(
        [
            (0.9, "2026-03-20", "We moved billing to Postgres 16 last week; MySQL is retired for billing."),
            (0.85, "2026-01-12", "Billing runs on MySQL 5.7 on the db-billing-01 host."),
            (0.47, "2026-01-10", "The billing CSV export renders the PDFs inline, which is slow."),
            (0.46, "2026-04-02", "The billing CSV export now queues the PDFs instead of rendering them inline."),
        ]
    )
    out = rerank(hits, "which database does billing use now?", None)
    assert "Postgres" in out[0].text and next(h for h in out if "MySQL 5.7" in h.text).superseded_by == out[0].id
    assert all(h.superseded_by is None for h in out if "export" in h.text)


def test_a_repeat_under_another_dated_heading_is_not_an_earlier_statement():
    text = "The docs build warns about themes\n\nI switched the docs theme to the maintained fork; the warning is gone."
    hits = _pool(
        [(0.9, "2026-01-20", f"2026-01-20 › 15:03 {text}"), (0.85, "2026-05-10", f"2026-05-10 › 17:00 {text}")]
    )
    out = rerank(hits, "what docs theme do we use now?", None)
    assert all(h.superseded_by is None for h in out)


def test_a_hits_words_identifiers_and_change_language_leave_dates_and_clock_times_out():
    features = rerank_module._features
    moved = features("2026-05-10 › 17:30 We moved billing from db-billing-01 to db-billing-02 (us-east-1).")
    assert moved.identifiers == {"db-billing-01", "db-billing-02", "us-east-1"}
    assert "2026-05-10" not in moved.stems and "17:30" not in moved.stems
    assert {"bill", "mov"} <= moved.stems
    assert moved.change == 1.0
    assert features("The admin panel also shows a dark mode toggle.").change == -1.0
    assert features("The admin panel now has a dark mode toggle.").change == 0.0  # "now", then "now has"
    assert features("Lunch is at 12:00 near the office.").change == 0.0
    # A date-like run inside a longer number is not a date: the word boundary holds.
    assert "12026-05-101" in features("build 12026-05-101 passed").identifiers


def test_a_hits_quantities_are_the_numbers_by_the_words_they_count():
    features = rerank_module._features
    assert features("Production runs 3 API replicas.").quantities == {"api": {"3"}, "replica": {"3"}, "run": {"3"}}
    assert features("Branch protection requires two approving reviews.").quantities == {
        "approv": {"2"},
        "review": {"2"},
    }
    assert features("A single approval is enough.").quantities == {"approval": {"1"}}
    assert features("The services run Python 3.12.").quantities == {
        "python": {"3.12"},
        "<named version>": {"python 3.12"},
    }
    assert features("Billing data is in Postgres 16 now.").quantities == {
        "postgr": {"16"},
        "<named version>": {"postgres 16"},
    }
    # Dates and clock times count nothing, nor does a number count a stop word ("of", "the").
    assert features("2026-05-10 › 17:30 standup at the office").quantities == {}
    assert features("we moved 3 of the hosts").quantities == {"mov": {"3"}}


def test_the_reversal_bench_counts_a_stale_statement_above_the_answer_as_a_miss() -> None:
    from bench_recency import summarize
    from reversal_corpus import Query

    stale, older, answer = "Billing runs on MySQL.", "Billing ran on SQLite.", "Billing moved to Postgres."
    queries = [Query("current", "which database does billing use now?", answer, "tune", [older, stale])] * 4
    answers = [
        ["filler", f"Assistant: {answer}", stale],  # another subject first: not first, but above the stale one
        [stale, answer],  # the stale statement above the current one
        ["filler", older, answer],  # an older one, too
        ["filler", stale],  # the current statement not retrieved
    ]
    current = summarize(queries, answers, k=10)["tune"]["current"]
    assert (current["first"], current["above_earlier"], current["recall@10"]) == (0.0, 0.25, 0.75)
    # Only the top k count.
    assert summarize(queries[:1], answers[:1], k=1)["tune"]["current"]["above_earlier"] == 0.0
