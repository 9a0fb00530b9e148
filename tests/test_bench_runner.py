"""The benchmark runner and the ``memlane bench`` command (memlane.bench.runner, memlane.bench.cli)."""

from __future__ import annotations

import argparse
import functools
import json
import re

import pytest
from conftest import bench_fixture_dir

import memlane
from memlane.bench import cli as bench_cli
from memlane.bench.datasets import load_beam, load_dataset, load_locomo, load_longmemeval, load_realtalk, sha256_file
from memlane.bench.metrics import aggregate
from memlane.bench.runner import SESSION_DEPTH, git_revision, run_benchmark, search_defaults

FIXTURES = bench_fixture_dir()


@pytest.fixture
def locomo_dev():
    return load_locomo(FIXTURES / "locomo_mini.json", "dev")


@pytest.fixture
def search_calls(monkeypatch):
    """Record every Memory.search call the runner makes (it must use the product's search)."""
    calls = []
    original = memlane.Memory.search

    @functools.wraps(original)  # keeps the signature the runner reads the defaults from
    def spy(self, query, k=10, **kwargs):
        calls.append({"home": str(self.home), "query": query, "k": k, **kwargs})
        return original(self, query, k, **kwargs)

    monkeypatch.setattr(memlane.Memory, "search", spy)
    return calls


def test_locomo_end_to_end_with_bm25(locomo_dev, search_calls):
    result = run_benchmark(locomo_dev, embedder="none")
    assert result["dataset"] == "locomo" and result["split"] == "dev"
    assert result["conversations"] == ["conv-a", "conv-b", "conv-c", "conv-d", "conv-e"]
    assert result["embedder"] == "none"
    assert result["file_sha256"] == sha256_file(FIXTURES / "locomo_mini.json")
    assert result["core_sha256"] == sha256_file(memlane._core.__file__)
    assert result["parameters"]["k"] == [1, 3, 5, 10] and result["parameters"]["search_k"] == 10
    assert result["parameters"]["search"] == search_defaults()
    counts = result["counts"]
    assert counts["questions"] == 35
    assert counts["questions_scored"] == {"session": 25, "session_top": 25, "turn": 25}
    assert counts["questions_skipped"] == {
        g: {"no_evidence": 5, "no_valid_evidence": 5} for g in ("session", "session_top", "turn")
    }
    assert counts["evidence_issues"] == {"list": 5, "reformatted": 10, "unknown_id": 5, "unparseable": 5}
    assert counts["gold_turns_not_indexed"] == 0
    assert counts["chunks"] > 0 and counts["chunks_embedded"] == 0

    # Every question went through Memory.search with k = max(k), and once more with k = 50 for
    # the session_top ranking, in its own fresh home.
    assert len(search_calls) == 2 * 35
    assert sorted(c["k"] for c in search_calls) == [10] * 35 + [SESSION_DEPTH] * 35
    assert len({c["home"] for c in search_calls}) == 5
    for entry in result["questions"]:
        assert all(h["session"].startswith(entry["conversation"] + ":") for h in entry["hits"])
        assert all(re.fullmatch(r"D\d+:\d+", t) for h in entry["hits"] for t in h["turn_ids"])

    # A question with a word found in one turn only: its turn ranks first.
    teacher = next(e for e in result["questions"] if e["id"] == "conv-a/0")
    assert teacher["gold"]["turn"] == ["D1:3"]
    assert teacher["metrics"]["turn"]["recall_any@1"] == 1.0
    assert "D1:3" in teacher["hits"][0]["turn_ids"]

    # The deeper session ranking sees at least the sessions the first hits do, and never
    # scores lower on this fixture.
    ranks = result["results"]
    for key in ("recall_any@10", "evidence_recall@10"):
        assert (
            ranks["session_top"]["groups"]["all"]["metrics"][key] >= ranks["session"]["groups"]["all"]["metrics"][key]
        )

    # Aggregates are the means of the per-question scores in the log.
    for gran in ("session", "session_top", "turn"):
        rows = [e["metrics"][gran] for e in result["questions"] if gran in e["metrics"]]
        assert result["results"][gran]["groups"]["all"] == {"questions": 25, "metrics": aggregate(rows)}
        cats = result["results"][gran]["categories"]
        assert sum(c["questions"] for c in cats.values()) == 25
        assert set(cats) == {"1:multi-hop", "2:temporal", "4:single-hop"}
        assert result["results"][gran]["groups"]["no_adversarial"]["questions"] == 25


def test_custom_ks_granularity_search_options_and_limit(locomo_dev, search_calls):
    result = run_benchmark(
        locomo_dev,
        embedder="none",
        ks=[2, 1, 2],
        granularities=["turn"],
        search={"threshold": 0.0, "fusion": "rrf"},
        limit=2,
    )
    assert result["parameters"]["k"] == [1, 2] and result["parameters"]["search_k"] == 2
    assert result["parameters"]["search"]["threshold"] == 0.0 and result["parameters"]["search"]["fusion"] == "rrf"
    assert result["conversations"] == ["conv-a", "conv-b"]
    assert set(result["results"]) == {"turn"}
    assert set(result["results"]["turn"]["groups"]["all"]["metrics"]) == {
        f"{m}@{k}" for m in ("recall_any", "recall_all", "evidence_recall", "ndcg") for k in (1, 2)
    }
    assert {(c["k"], c["threshold"], c["fusion"]) for c in search_calls} == {(2, 0.0, "rrf")}
    assert all(len(e["hits"]) <= 2 for e in result["questions"])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"ks": [0, 5]}, "positive integers"),
        ({"granularities": ["dialog"]}, "granularities"),
        ({"search": {"candidates": 9}}, "unknown search options"),
        ({"limit": 0}, "limit"),
    ],
)
def test_bad_parameters(locomo_dev, kwargs, message):
    with pytest.raises(ValueError, match=message):
        run_benchmark(locomo_dev, embedder="none", **kwargs)


def test_realtalk_with_an_embedder(fake_embedder):
    result = run_benchmark(load_realtalk(FIXTURES / "realtalk"), embedder=fake_embedder)
    assert result["embedder"] == fake_embedder.id
    counts = result["counts"]
    assert counts["chunks_embedded"] == counts["chunks"] > 0
    assert fake_embedder.texts_embedded == counts["chunks"]
    # D2:3 is an empty message: gold, but nothing to index.
    assert counts["gold_turns_not_indexed"] == 1
    assert counts["conversion"] == {"empty_message": 1}
    assert counts["questions_scored"] == {"session": 5, "session_top": 5, "turn": 5}
    assert counts["questions_skipped"]["turn"] == {"no_evidence": 1, "no_valid_evidence": 1}
    cat = next(e for e in result["questions"] if e["question"] == "What is the name of Bob's cat?")
    assert cat["metrics"]["turn"]["recall_any@1"] == 1.0


def test_gold_lost_to_identical_chunks_is_counted(tmp_path):
    # The store keeps one copy of chunks with identical text (keys are content hashes), so
    # one of these two gold turns cannot be retrieved; the runner must say so.
    def msg(dia_id, text):
        return {"clean_text": text, "speaker": "Ann", "date_time": "01.01.2024, 10:00:00", "dia_id": dia_id}

    chat = {
        "name": {"speaker_1": "Ann", "speaker_2": "Bob"},
        # One turn a session, so no other turn is packed into their chunks.
        "session_1": [msg("D1:1", "See you soon!")],
        "session_2": [msg("D2:1", "See you soon!")],
        "session_3": [msg("D3:1", "Bring the maps")],
        "qa": [{"question": "see you soon", "answer": "x", "evidence": ["D1:1", "D2:1"], "category": 1}],
    }
    (tmp_path / "Chat_1_Ann_Bob.json").write_text(json.dumps(chat))
    result = run_benchmark(load_realtalk(tmp_path), embedder="none")
    assert result["counts"]["gold_turns_not_indexed"] == 1
    assert result["results"]["turn"]["groups"]["all"]["metrics"]["recall_all@10"] == 0.0


def test_beam_fixture_runs(fake_embedder):
    result = run_benchmark(load_beam(FIXTURES / "beam"), embedder=fake_embedder)
    assert result["counts"]["questions_skipped"]["turn"] == {"abstention": 1, "no_evidence": 1}
    assert result["counts"]["questions_scored"]["turn"] == 4
    update = next(e for e in result["questions"] if e["category"] == "knowledge_update")
    assert update["gold"]["turn"] == ["2", "4"]
    assert update["metrics"]["turn"]["recall_all@10"] == 1.0


def test_longmemeval_fixture_reports_both_protocols():
    ds = load_longmemeval(FIXTURES / "longmemeval_mini.json", allow_unverified=True)
    result = run_benchmark(ds, embedder="none", ks=[1, 5])
    assert result["file_verified"] is False
    session = result["results"]["session"]["groups"]
    assert session["all"]["questions"] == 3  # MemPalace protocol: abstention questions included
    assert session["no_abstention"]["questions"] == 2  # official protocol: _abs dropped
    assert result["counts"]["questions_skipped"]["turn"] == {"no_has_answer_turn": 1}
    assert "recall_all@5" in session["no_abstention"]["metrics"] and "recall_any@5" in session["all"]["metrics"]
    degree = next(e for e in result["questions"] if e["id"] == "q_user_1")
    assert degree["metrics"]["session"]["recall_any@1"] == 1.0
    assert "answer_s1:2" in degree["hits"][0]["turn_ids"]


def test_git_revision_is_recorded():
    rev, dirty = git_revision()
    assert rev == "unknown" or re.fullmatch(r"[0-9a-f]{40}", rev)
    assert dirty in (True, False, None)


# -- CLI -----------------------------------------------------------------------------------


def _parse(argv: list[str]) -> argparse.Namespace:
    # Mirrors memlane.cli: global options come through `parents`.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--home")
    common.add_argument("--json", action="store_true")
    parser = argparse.ArgumentParser(prog="memlane")
    bench_cli.add_parser(parser.add_subparsers(dest="command", required=True), [common])
    return parser.parse_args(argv)


def test_cli_json_and_result_file(tmp_path, capsys):
    out = tmp_path / "r.json"
    args = _parse(
        [
            "bench",
            "locomo",
            str(FIXTURES / "locomo_mini.json"),
            "--split",
            "dev",
            "--embedder",
            "none",
            "--limit",
            "1",
            "--k",
            "1,5",
            "--granularity",
            "session",
            "--json",
            "--out",
            str(out),
        ]
    )
    assert bench_cli.run_cli(args) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["result_file"] == str(out)
    assert "questions" not in printed  # the per-question log is only in the file
    saved = json.loads(out.read_text())
    assert len(saved["questions"]) == 7
    assert saved["parameters"]["k"] == [1, 5] and list(saved["results"]) == ["session"]
    assert {k: v for k, v in saved.items() if k != "questions"} == {
        k: v for k, v in printed.items() if k != "result_file"
    }


def test_cli_markdown_and_default_path(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = _parse(["bench", "realtalk", str(FIXTURES / "realtalk"), "--embedder", "none"])
    assert bench_cli.run_cli(args) == 0
    text = capsys.readouterr().out
    assert "### turn level (percent)" in text and "### session level (percent)" in text
    assert re.search(r"^\| recall_any@10 \| [\d.]+ \|", text, re.M)
    (saved,) = (tmp_path / "bench-results").glob("realtalk-all-*.json")
    assert json.loads(saved.read_text())["dataset"] == "realtalk"


def test_cli_user_errors(tmp_path):
    with pytest.raises(ValueError, match="tuning is only allowed on LoCoMo dev"):
        bench_cli.run_cli(_parse(["bench", "beam", str(FIXTURES / "beam"), "--split", "dev", "--embedder", "none"]))
    with pytest.raises(ValueError, match="--limit"):
        bench_cli.run_cli(_parse(["bench", "locomo", str(FIXTURES / "locomo_mini.json"), "--limit", "0"]))
    with pytest.raises(FileNotFoundError):
        bench_cli.run_cli(_parse(["bench", "locomo", str(tmp_path / "nope.json"), "--embedder", "none"]))
    with pytest.raises(ValueError, match="published LongMemEval checksum"):
        bench_cli.run_cli(
            _parse(["bench", "longmemeval", str(FIXTURES / "longmemeval_mini.json"), "--embedder", "none"])
        )
    with pytest.raises(SystemExit):
        _parse(["bench", "locomo", "x.json", "--k", "0,5"])


# -- the real model on real data -----------------------------------------------------------


@pytest.mark.model
def test_locomo_first_conversation_with_the_local_model(shared_data):
    path = shared_data / "locomo" / "locomo10.json"
    if not path.is_file():
        pytest.skip(f"evaluation data not found at {path}")
    result = run_benchmark(load_dataset("locomo", path, "dev"), embedder="local", limit=1)
    assert result["conversations"] == ["conv-26"]
    assert result["embedder"].startswith("local/all-MiniLM-L6-v2/")
    assert result["counts"]["chunks_embedded"] == result["counts"]["chunks"] > 100
    assert result["counts"]["gold_turns_not_indexed"] == 0
    # Loose floors: a broken id mapping or scoring would give near zero, not these.
    assert result["results"]["session"]["groups"]["all"]["metrics"]["recall_any@10"] > 0.8
    assert result["results"]["turn"]["groups"]["all"]["metrics"]["evidence_recall@10"] > 0.6
