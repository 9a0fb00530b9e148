"""The relevance floor, snippets that show the match, and answers that do not depend on the build."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import generic_session, write_deploy_and_cooking, write_jsonl

import memlane
from memlane.cli import main
from memlane.ranking.hit import Hit
from memlane.ranking.relevance import FLOOR, ITEM_FLOOR
from memlane.ranking.rerank import rerank
from memlane.recall import recall

# One word in common with the cooking session ("water"), the rest in no chunk at all.
OFF_TOPIC = "favourite pizza topping for a weekend picnic with water"


@pytest.fixture
def mem(tmp_path):
    """The deploy and cooking corpus, keyword-only: relevance is BM25 coverage, deterministic."""
    write_deploy_and_cooking(tmp_path / "transcripts")
    m = memlane.open(tmp_path / "home", embedder="none")
    m.index([tmp_path / "transcripts"])
    return m


def test_the_floor_is_read_on_relevance_not_on_the_relative_keyword_score(mem):
    off = mem.search(OFF_TOPIC, k=5, threshold=0.0)
    answered = mem.search("which database does billing use?", k=5, threshold=0.0)
    # Both best hits are "perfect" keyword matches relative to their query's best...
    assert off[0].scores["bm25"] == answered[0].scores["bm25"] == 1.0
    # ... but one holds a single common word of its question, the other most of it.
    assert "Postgres 16" in answered[0].text and answered[0].relevance > 2 * off[0].relevance
    assert 0 < off[0].scores["coverage"] < answered[0].scores["coverage"] <= 1
    between = (off[0].relevance + answered[0].relevance) / 2
    assert mem.search(OFF_TOPIC, k=5, threshold=between) == []
    assert not recall(mem, OFF_TOPIC, threshold=between)
    assert mem.search("which database does billing use?", k=5, threshold=between)


def test_one_relevant_hit_keeps_the_ranking_and_recall_injects_only_the_relevant(mem):
    query = "billing database and pasta sauce"
    ranked = mem.search(query, k=10, threshold=0.0)
    floor = (ranked[0].relevance + ranked[-1].relevance) / 2
    assert ranked[-1].relevance < floor <= ranked[0].relevance
    assert mem.search(query, k=10, threshold=floor) == ranked, "the weaker hits stay, ranked, with their own relevance"
    recalled = recall(mem, query, include_brain=False, threshold=floor)
    item_floor = min(floor, ITEM_FLOOR)
    assert recalled and {i.id for i in recalled.items} == {h.id for h in ranked if h.relevance >= item_floor}


def test_json_hits_carry_their_relevance(tmp_path, capsys):
    write_deploy_and_cooking(tmp_path / "t")
    home = str(tmp_path / "home")
    assert main(["--home", home, "index", str(tmp_path / "t"), "--embed", "none"]) == 0
    capsys.readouterr()
    assert main(["--home", home, "--json", "search", "exit code 137", "--embed", "none"]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert hits and all(isinstance(h["relevance"], float) for h in hits) and hits[0]["relevance"] >= FLOOR
    assert main(["--home", home, "search", "exit code 137", "--threshold", "1.01", "--embed", "none"]) == 0
    assert capsys.readouterr().out.strip() == "nothing relevant in memory for this query"


def test_the_cli_shows_the_passage_that_matched_not_the_first_lines(tmp_path, capsys):
    setup = " ".join(f"Step {i}: installed the dependencies and read the contributing guide." for i in range(12))
    pairs = [
        (
            "set up the project and run the tests",
            setup + " Then the test run stopped with ERR_SSL_PROTOCOL_ERROR on the mirror.",
        )
    ]
    write_jsonl(tmp_path / "t" / "s.jsonl", generic_session("s1", pairs))
    home = str(tmp_path / "home")
    assert main(["--home", home, "index", str(tmp_path / "t"), "--embed", "none"]) == 0
    capsys.readouterr()
    assert main(["--home", home, "search", "ERR_SSL_PROTOCOL_ERROR", "--embed", "none"]) == 0
    out = capsys.readouterr().out
    snippet = out.splitlines()[-1].strip()
    assert "ERR_SSL_PROTOCOL_ERROR" in snippet and snippet.startswith("…") and len(snippet) <= 302
    assert "relevance=" in out


def test_snippets_fall_back_to_the_start_for_a_hit_without_the_query_words(tmp_path):
    mem = memlane.open(tmp_path / "home", embedder="none")
    hit = Hit("c1", "transcript", "word " * 100, 0.5, {}, "/s.jsonl", "s", 0, 1, None, "")
    (snippet,) = mem.snippets("nothing in common", [hit], max_chars=20)
    assert snippet == "word word word word…"
    with pytest.raises(ValueError):
        mem.snippets("x", [hit], max_chars=0)


def test_two_builds_of_the_same_sources_answer_identically(tmp_path):
    # Chunks that tie exactly in BM25 (same words, same length): their order must come from the
    # chunks themselves, not from the order files were indexed in.
    root = tmp_path / "src"
    for i in range(8):
        write_jsonl(
            root / f"s{i}.jsonl",
            generic_session(f"s{i}", [(f"ticket {i}", "the release checklist was reviewed and signed off")]),
        )
    answers = []
    for n, order in enumerate((sorted(root.iterdir()), sorted(root.iterdir(), reverse=True))):
        mem = memlane.open(tmp_path / f"home{n}", embedder="none")
        for path in order:
            mem.index([path])
        hits = mem.search("release checklist reviewed", k=5)
        answers.append([(h.id, h.score) for h in hits])
    assert answers[0] == answers[1]
    ids = [i for i, _ in answers[0]]
    assert len({s for _, s in answers[0]}) == 1 and ids == sorted(ids)


def test_time_reordering_breaks_ties_by_chunk_id():
    def hit(id_: str) -> Hit:
        return Hit(
            id_, "transcript", "the cadence is weekly", 0.5, {}, "/s.jsonl", "s", 0, 1, "2026-04-10T09:00:00Z", ""
        )

    out = rerank(
        [hit("000000000000ff"), hit("000000000000aa"), hit("000000000000cc")], "what was the cadence in April?", None
    )
    assert [h.id for h in out] == ["000000000000aa", "000000000000cc", "000000000000ff"]


def test_bench_runs_search_with_the_floor():
    from memlane.bench.runner import search_defaults

    assert search_defaults()["threshold"] == FLOOR


@pytest.mark.model
def test_real_transcripts_answer_what_they_hold_and_nothing_for_an_everyday_question(tmp_path, shared_data):
    src = tmp_path / "src"
    shutil.copytree(shared_data / "transcripts", src)
    mem = memlane.open(tmp_path / "home")  # the local model
    mem.index([src])
    held = mem.search("hello world function", k=3)
    assert held and held[0].relevance >= FLOOR
    assert mem.search("what did the doctor say about my blood test results?", k=3) == []
    assert not mem.recall("how do I fix a leaking kitchen faucet?")
