"""Benchmark loaders, evidence normalisation and the split (memlane.bench.datasets)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from conftest import bench_fixture_dir

from memlane import _core
from memlane.bench.datasets import (
    LONGMEMEVAL_SHA256,
    iter_json_array,
    load_beam,
    load_dataset,
    load_locomo,
    load_longmemeval,
    load_realtalk,
    normalise_evidence,
    sha256_file,
)

FIXTURES = bench_fixture_dir()
KNOWN = {"D1:1", "D1:3", "D1:4", "D2:1", "D2:2", "D8:6", "D9:17", "D11:26", "D13:45", "D20:19", "D30:5"}


@pytest.mark.parametrize(
    ("raw", "ids", "issues"),
    [
        (["D1:3"], ["D1:3"], {}),
        (["D8:6; D9:17"], ["D8:6", "D9:17"], {"list": 1}),
        (["D1:1 D2:1,D2:2"], ["D1:1", "D2:1", "D2:2"], {"list": 1}),
        (["D13:45:D20:19"], ["D13:45", "D20:19"], {"list": 1}),
        (["D:11:26"], ["D11:26"], {"reformatted": 1}),
        (["D30:05"], ["D30:5"], {"reformatted": 1}),
        (["D 2:1"], ["D2:1"], {"reformatted": 1}),
        (["D1:3."], ["D1:3"], {"reformatted": 1}),
        (["D1:1-D1:4"], ["D1:1", "D1:3", "D1:4"], {"range": 1, "range_gap": 1}),
        (["D1:3-4"], ["D1:3", "D1:4"], {"range": 1}),
        (["D1:1-D2:2"], [], {"unparseable": 1}),
        (["D", "23:29", "D58", "D:56"], [], {"unparseable": 4}),
        (["", "  "], [], {"empty": 2}),
        ([7, None], [], {"not_a_string": 2}),
        (["D4:36", "D1:3"], ["D1:3"], {"unknown_id": 1}),
        (["D1:3", "D1:3; D1:3"], ["D1:3"], {"list": 1}),
    ],
)
def test_normalise_evidence(raw, ids, issues):
    got_ids, got_issues = normalise_evidence(raw, KNOWN)
    assert got_ids == ids
    assert dict(got_issues) == issues


# -- LoCoMo ------------------------------------------------------------------------------


def test_locomo_split_is_fixed_by_position():
    path = FIXTURES / "locomo_mini.json"
    dev = load_locomo(path, "dev")
    test = load_locomo(path, "test")
    everything = load_locomo(path, "all")
    assert [c.cid for c in dev.conversations] == ["conv-a", "conv-b", "conv-c", "conv-d", "conv-e"]
    assert [c.cid for c in test.conversations] == ["conv-f"]
    assert len(everything.conversations) == 6
    assert dev.verified is False  # not the published locomo10.json
    assert any("6 conversations, not 10" in n for n in dev.notes)
    assert dev.sha256 == sha256_file(path)
    assert load_dataset("locomo", path).split == "test"  # the default never tunes


def test_locomo_questions_gold_and_skips():
    conv = load_locomo(FIXTURES / "locomo_mini.json", "dev").conversations[0]
    q = {x.text: x for x in conv.questions}
    both = q["What did Ann start and what pet did Ben adopt?"]
    assert both.gold_turns == {"D1:1", "D2:1"}
    assert both.gold_sessions == {"conv-a:session_1", "conv-a:session_2"}
    assert q["What ribbon did Ben show?"].gold_turns == {"D1:4"}
    assert q["When does the parrot say hello?"].gold_turns == {"D2:3"}
    assert q["What did Ann say about rockets?"].skip == {"turn": "no_valid_evidence", "session": "no_valid_evidence"}
    assert q["What did Ann say about rockets?"].category == "5:adversarial"
    assert q["Unanswerable item with no evidence"].skip == {"turn": "no_evidence", "session": "no_evidence"}
    assert q["Who is Ann's sourdough teacher?"].skip == {}
    assert conv.evidence_issues == Counter(
        {"evidence_strings": 7, "list": 1, "reformatted": 2, "unknown_id": 1, "unparseable": 1}
    )


def test_locomo_gold_ids_are_the_ids_the_parser_emits(tmp_path):
    for conv in load_locomo(FIXTURES / "locomo_mini.json", "all").conversations:
        path = conv.write(tmp_path)
        parsed = _core.parse_file(str(path), conv.fmt)
        turn_ids = {i for s in parsed["sessions"] for t in s["turns"] for i in t["ids"]}
        sessions = {s["id"] for s in parsed["sessions"]}
        for q in conv.questions:
            assert q.gold_turns <= turn_ids
            assert q.gold_sessions <= sessions


def test_locomo_bad_input(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_locomo(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "locomo"}')
    with pytest.raises(ValueError, match="not a LoCoMo file"):
        load_locomo(bad)
    bad.write_text("[")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_locomo(bad)
    with pytest.raises(ValueError, match="unknown split"):
        load_locomo(FIXTURES / "locomo_mini.json", "train")


# -- split discipline ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "path"), [("beam", "beam"), ("realtalk", "realtalk"), ("longmemeval", "longmemeval_mini.json")]
)
def test_only_locomo_has_a_dev_split(name, path):
    with pytest.raises(ValueError, match="tuning is only allowed on LoCoMo dev"):
        load_dataset(name, FIXTURES / path, "dev")
    with pytest.raises(ValueError, match="report-only"):
        load_dataset(name, FIXTURES / path, "test")


# -- REALTALK ------------------------------------------------------------------------------


def test_realtalk_conversion_and_evidence():
    ds = load_realtalk(FIXTURES / "realtalk")
    assert ds.split == "all" and ds.verified is None
    (conv,) = ds.conversations
    assert conv.cid == "Chat_1_Ann_Bob" and conv.fmt == "generic"
    lines = {r["id"]: r for r in conv.payload}
    assert lines["D1:1"] == {
        "id": "D1:1",
        "role": "user",
        "content": "Ann: I just got back from Lisbon, the trams are lovely",
        "session_id": "Chat_1_Ann_Bob:session_1",
        "timestamp": "2023-12-29T22:42:04Z",
    }
    assert lines["D1:3"]["role"] == "assistant"
    assert lines["D1:5"]["content"] == "Ann: [image: a plate of custard tarts]"
    assert "D2:3" not in lines  # empty message, no caption
    assert conv.conversion_issues == {"empty_message": 1}
    q = {x.text: x for x in conv.questions}
    assert q["Which city did Ann visit?"].gold_turns == {"D1:1", "D1:3"}
    assert q["What did Ann eat in Lisbon?"].gold_turns == {"D1:3", "D1:4"}
    assert q["What is the name of Bob's cat?"].gold_turns == {"D2:1"}
    assert q["Is the cat okay?"].gold_turns == {"D2:2"}
    assert q["What photo did Ann share?"].gold_turns == {"D1:5", "D2:3"}
    assert q["Nothing to find"].skip["turn"] == "no_evidence"
    assert q["Unknown ids only"].skip == {"turn": "no_valid_evidence", "session": "no_valid_evidence"}
    assert conv.evidence_issues == Counter(
        {
            "evidence_strings": 10,
            "range": 1,
            "range_gap": 1,
            "list": 1,
            "reformatted": 2,
            "empty": 1,
            "unparseable": 1,
            "unknown_id": 2,
        }
    )


def test_realtalk_ids_survive_the_generic_parser(tmp_path):
    conv = load_realtalk(FIXTURES / "realtalk" / "Chat_1_Ann_Bob.json").conversations[0]
    chunks = _core.chunk_file(str(conv.write(tmp_path)), "generic")
    ids = {i for c in chunks for i in c["turn_ids"]}
    assert ids == {r["id"] for r in conv.payload}
    assert {c["session_id"] for c in chunks} == {"Chat_1_Ann_Bob:session_1", "Chat_1_Ann_Bob:session_2"}


# -- BEAM ----------------------------------------------------------------------------------


def test_beam_conversion_and_gold(tmp_path):
    ds = load_beam(FIXTURES / "beam")
    (conv,) = ds.conversations
    assert conv.cid == "1"
    first = conv.payload[0]
    assert first == {
        "id": "0",
        "role": "user",
        "content": "I am building a budget tracker in Flask 2.3.1, can you plan my sprints?",
        "session_id": "1:batch_1",
    }
    assert not any("->->" in r["content"] for r in conv.payload)
    q = {x.category: x for x in conv.questions}
    assert q["information_extraction"].gold_turns == {"1"}
    assert q["knowledge_update"].gold_turns == {"2", "4"}
    assert q["knowledge_update"].gold_sessions == {"1:batch_1", "1:batch_2"}
    assert q["event_ordering"].gold_turns == {"0", "6", "7"}
    assert q["multi_session_reasoning"].gold_turns == {"6"}
    assert q["abstention"].skip == {"turn": "abstention", "session": "abstention"} and q["abstention"].abstention
    assert q["summarization"].skip["turn"] == "no_evidence"
    assert conv.evidence_issues == Counter({"evidence_strings": 8, "unknown_id": 1})
    chunks = _core.chunk_file(str(conv.write(tmp_path)), "generic")
    assert {i for c in chunks for i in c["turn_ids"]} == {str(i) for i in range(8)}


def test_beam_needs_a_folder(tmp_path):
    with pytest.raises(ValueError, match="not a file"):
        load_beam(FIXTURES / "beam" / "1" / "chat.json")
    with pytest.raises(ValueError, match="no BEAM conversations"):
        load_beam(tmp_path)
    assert [c.cid for c in load_beam(FIXTURES / "beam" / "1").conversations] == ["1"]


# -- LongMemEval ---------------------------------------------------------------------------


def test_longmemeval_refuses_an_unpublished_checksum():
    with pytest.raises(ValueError, match="not a published LongMemEval checksum"):
        load_longmemeval(FIXTURES / "longmemeval_mini.json")


def test_longmemeval_accepts_a_published_checksum(tmp_path, monkeypatch):
    path = FIXTURES / "longmemeval_mini.json"
    monkeypatch.setitem(LONGMEMEVAL_SHA256, sha256_file(path), "longmemeval_oracle")
    ds = load_longmemeval(path)
    assert ds.verified is True
    assert any("longmemeval_oracle" in n for n in ds.notes)


def test_longmemeval_questions_and_gold(tmp_path):
    ds = load_longmemeval(FIXTURES / "longmemeval_mini.json", allow_unverified=True)
    assert ds.verified is False
    convs = list(ds.conversations)
    assert [c.cid for c in convs] == ["q_user_1", "q_multi_2", "q_pref_3_abs"]
    user, multi, abstention = (c.questions[0] for c in convs)
    assert user.gold_sessions == {"answer_s1"} and user.gold_turns == {"answer_s1:2"}
    assert multi.gold_turns == {"answer_g1:0", "answer_g2:0"} and multi.category == "multi-session"
    assert abstention.abstention and abstention.skip == {"turn": "no_has_answer_turn"}
    assert not ds.groups["no_abstention"](abstention) and ds.groups["no_abstention"](user)
    # Each question's haystack is its own file; the native parser must emit the gold ids.
    for conv in convs:
        parsed = _core.parse_file(str(conv.write(tmp_path)), "longmemeval")
        ids = {i for s in parsed["sessions"] for t in s["turns"] for i in t["ids"]}
        assert conv.questions[0].gold_turns <= ids
        assert conv.questions[0].gold_sessions <= {s["id"] for s in parsed["sessions"]}


def test_published_checksums_match_the_data_readme(shared_data):
    readme = shared_data / "longmemeval" / "README.md"
    if not readme.is_file():
        pytest.skip(f"{readme} not found")
    text = readme.read_text()
    for digest in LONGMEMEVAL_SHA256:
        assert digest in text


def test_iter_json_array_streams_like_json_load(tmp_path):
    items = [{"a": [1, 2, {"b": "x, ] y"}]}, 12345, "s", None, [], {"long": "z" * 1000}, 3.5]
    p = tmp_path / "a.json"
    p.write_text(" [ " + " ,\n".join(json.dumps(i) for i in items) + " ] ")
    for block in (1, 3, 7, 64, 1 << 20):
        assert list(iter_json_array(p, block=block)) == items
    (tmp_path / "empty.json").write_text("[ ]")
    assert list(iter_json_array(tmp_path / "empty.json")) == []


@pytest.mark.parametrize("text", ['{"a": 1}', '[{"a": 1}, {"b"', "[1, 2", "[1 2]"])
def test_iter_json_array_rejects_bad_documents(tmp_path, text):
    p = tmp_path / "bad.json"
    p.write_text(text)
    with pytest.raises(ValueError):
        list(iter_json_array(p, block=4))


# -- the real data (skipped when ../shared/data is absent) ---------------------------------


def _need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"evaluation data not found at {path}")
    return path


def test_real_locomo_counts_match_its_provenance(shared_data):
    path = _need(shared_data / "locomo" / "locomo10.json")
    ds = load_locomo(path, "all")
    assert ds.verified is True
    issues = Counter()
    for c in ds.conversations:
        issues.update(c.evidence_issues)
    # PROVENANCE.md lists 9 malformed strings: 4 lists, 2 missing ids, 'D', 'D:11:26', 'D30:05'.
    assert issues == Counter({"evidence_strings": 2815, "list": 4, "unknown_id": 2, "unparseable": 1, "reformatted": 2})
    assert sum(len(c.questions) for c in ds.conversations) == 1986
    assert [c.cid for c in load_locomo(path, "dev").conversations] == [
        "conv-26",
        "conv-30",
        "conv-41",
        "conv-42",
        "conv-43",
    ]
    assert [c.cid for c in load_locomo(path, "test").conversations] == [
        "conv-44",
        "conv-47",
        "conv-48",
        "conv-49",
        "conv-50",
    ]


def test_real_beam_and_realtalk_load(shared_data):
    beam = load_beam(_need(shared_data / "beam" / "100K"))
    questions = [q for c in beam.conversations for q in c.questions]
    assert len(beam.conversations) == 20 and len(questions) == 400
    assert sum(not q.skip for q in questions) == 355  # PROVENANCE: 45 questions have no ids
    assert sum(len(q.gold_turns) for q in questions) <= 1109
    assert all(c.evidence_issues.get("unknown_id", 0) == 0 for c in beam.conversations)
    realtalk = load_realtalk(_need(shared_data / "realtalk"))
    assert len(realtalk.conversations) == 10
    assert sum(len(c.questions) for c in realtalk.conversations) == 728
    assert sum(c.evidence_issues["evidence_strings"] for c in realtalk.conversations) == 1742
