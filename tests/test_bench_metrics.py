"""Retrieval metrics on hand-computed examples (memlane.bench.metrics)."""

from __future__ import annotations

import math

import pytest

from memlane.bench.metrics import (
    aggregate,
    evidence_recall,
    ndcg,
    recall_all,
    recall_any,
    score,
    session_ranking,
    turn_ranking,
)

# Twelve hits over ten sessions; after dedupe the gold sessions rank 2 (g1), 4 (g2) and 8 (g3).
HIT_SESSIONS = ["x1", "g1", "x1", "x2", "g2", "g1", "x3", "x4", "x5", "g3", "x6", "x7"]
GOLD = {"g1", "g2", "g3"}


def test_session_ranking_dedupes_by_first_occurrence():
    ranking = session_ranking(HIT_SESSIONS)
    assert [next(iter(p)) for p in ranking] == ["x1", "g1", "x2", "g2", "x3", "x4", "x5", "g3", "x6", "x7"]


@pytest.mark.parametrize(
    ("k", "any_", "all_", "evidence"),
    [(1, 0.0, 0.0, 0.0), (3, 1.0, 0.0, 1 / 3), (5, 1.0, 0.0, 2 / 3), (10, 1.0, 1.0, 1.0)],
)
def test_recalls_at_k_at_session_level(k, any_, all_, evidence):
    ranking = session_ranking(HIT_SESSIONS)
    assert recall_any(ranking, GOLD, k) == any_
    assert recall_all(ranking, GOLD, k) == all_
    assert evidence_recall(ranking, GOLD, k) == pytest.approx(evidence)


def test_ndcg_by_hand_at_session_level():
    ranking = session_ranking(HIT_SESSIONS)  # gold at deduped positions 2, 4, 8
    assert ndcg(ranking, GOLD, 1) == 0.0
    # k=3: DCG = 1/log2(3) = 0.630930; IDCG = 1 + 0.630930 + 0.5 = 2.130930
    assert ndcg(ranking, GOLD, 3) == pytest.approx(0.630930 / 2.130930, abs=1e-6)
    # k=5: DCG = 0.630930 + 1/log2(5) = 0.630930 + 0.430677 = 1.061606
    assert ndcg(ranking, GOLD, 5) == pytest.approx(1.061606 / 2.130930, abs=1e-6)
    # k=10: + 1/log2(9) = 0.315465 -> 1.377071
    assert ndcg(ranking, GOLD, 10) == pytest.approx(1.377071 / 2.130930, abs=1e-6)


def test_ndcg_perfect_and_single_gold():
    assert ndcg([{"g"}, {"x"}], {"g"}, 10) == 1.0
    assert ndcg([{"a"}, {"b"}, {"c"}], {"a", "b", "c"}, 3) == pytest.approx(1.0)
    # One gold found at rank 3 of 10: 1/log2(4) = 0.5 over an ideal of 1.
    assert ndcg([{"x"}, {"y"}, {"g"}], {"g"}, 10) == pytest.approx(0.5)


def test_session_duplicates_do_not_change_recall_or_push_gold_down():
    # Without dedupe, "g2" would sit at hit 3 and fall outside k=2.
    ranking = session_ranking(["g1", "g1", "g2"])
    assert recall_all(ranking, {"g1", "g2"}, 2) == 1.0
    assert ndcg(ranking, {"g1", "g2"}, 2) == pytest.approx(1.0)


def test_turn_level_a_hit_counts_for_every_turn_id():
    ranking = turn_ranking([["D1:1", "D1:2"], ["D4:4"], ["D2:7", "D2:8"]])
    gold = {"D1:2", "D2:8"}
    assert recall_any(ranking, gold, 1) == 1.0
    assert recall_all(ranking, gold, 1) == 0.0
    assert evidence_recall(ranking, gold, 1) == 0.5
    assert recall_all(ranking, gold, 3) == 1.0
    # Relevant positions 1 and 3: (1 + 0.5) / (1 + 1/log2(3)).
    assert ndcg(ranking, gold, 3) == pytest.approx(1.5 / (1 + 1 / math.log2(3)))


def test_turn_level_ndcg_gives_no_credit_twice_for_the_same_gold_turn():
    # Two chunks overlapping the same gold turn: the second adds nothing.
    ranking = turn_ranking([["D1:1"], ["D1:1", "D1:2"], ["D3:3"]])
    assert ndcg(ranking, {"D1:1", "D3:3"}, 3) == pytest.approx((1 + 0.5) / (1 + 1 / math.log2(3)))


def test_hits_without_ids_and_short_rankings():
    assert evidence_recall(turn_ranking([[], ["a"]]), {"a", "b"}, 10) == 0.5
    assert recall_any([], {"a"}, 5) == 0.0
    assert ndcg([], {"a"}, 5) == 0.0


def test_empty_gold_and_bad_k_are_errors():
    for fn in (recall_any, recall_all, evidence_recall, ndcg):
        with pytest.raises(ValueError, match="no gold"):
            fn([{"a"}], set(), 1)
        with pytest.raises(ValueError, match="k must be"):
            fn([{"a"}], {"a"}, 0)


def test_score_keys_and_values():
    row = score(session_ranking(HIT_SESSIONS), GOLD, ks=(1, 3, 5, 10))
    assert list(row)[:4] == ["recall_any@1", "recall_all@1", "evidence_recall@1", "ndcg@1"]
    assert len(row) == 16
    assert row["evidence_recall@5"] == pytest.approx(0.666667)
    assert row["recall_all@10"] == 1.0


def test_aggregate_means_per_key():
    rows = [{"recall_any@1": 1.0, "ndcg@1": 1.0}, {"recall_any@1": 0.0, "ndcg@1": 0.5}]
    assert aggregate(rows) == {"recall_any@1": 0.5, "ndcg@1": 0.75}
    assert aggregate([]) == {}
