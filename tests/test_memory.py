"""End-to-end behaviour of Memory: index → search, incremental updates, dedup, locks, filters."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from conftest import DEPLOY, FakeEmbedder, generic_session, write_deploy_and_cooking, write_jsonl

import memlane
from memlane.errors import EmbedderMismatchError, IndexLockedError


@pytest.fixture
def corpus(tmp_path):
    root = tmp_path / "transcripts"
    write_deploy_and_cooking(root)
    return root


@pytest.fixture
def mem(tmp_path, fake_embedder):
    return memlane.open(tmp_path / "home", embedder=fake_embedder)


def test_index_then_search_finds_exact_identifiers_with_provenance(mem, corpus):
    report = mem.index([corpus])
    assert (report.files_seen, report.files_indexed) == (2, 2)
    assert report.chunks_added == 5
    assert report.chunks_embedded == 5
    for query, expected in [("ERR_CONN_RESET", "keepalive_timeout"), ("src/app/main.py", "exit code 137")]:
        hits = mem.search(query, k=3)
        assert hits, query
        top = hits[0]
        assert expected in top.text
        assert top.session_id == "deploy-1"
        assert top.path.endswith("deploy.jsonl")
        assert top.source == "transcript"
        assert top.timestamp.startswith("2026-03-01T10:")
        assert top.scores["bm25"] == 1.0
        assert top.scores["vector"] is not None


def test_hit_turn_ranges_point_at_the_pair(mem, corpus):
    mem.index([corpus])
    hit = mem.search("billing database Postgres", k=1)[0]
    assert (hit.turn_start, hit.turn_end) == (4, 5)
    assert hit.text.startswith("User: which database does billing use?")


def test_hits_made_from_the_core_are_whole_dataclass_hits(mem, corpus):
    """``Hit._from_core`` fills the frozen dataclass past its ``__init__``: every field is set,
    and the hit equals, hashes and copies as one the constructor made."""
    import dataclasses
    from datetime import datetime, timezone

    from memlane.ranking.hit import Hit, _iso

    mem.index([corpus])
    hits = mem.search("billing database deploy", k=5)
    assert len(hits) >= 2
    for hit in hits:
        assert set(vars(hit)) == {f.name for f in dataclasses.fields(Hit)}
        made = Hit(**{f.name: getattr(hit, f.name) for f in dataclasses.fields(Hit)})
        assert made == hit and hit.to_dict() == made.to_dict()
        assert dataclasses.replace(hit, superseded_by="x").superseded_by == "x"
        with pytest.raises(dataclasses.FrozenInstanceError):
            hit.score = 0.0  # type: ignore[misc]
    # The naive formatting says what the timezone-aware one says, to the millisecond.
    rng = np.random.default_rng(7)
    for ms in [0, 1, -1, 999, 1000, -1001, 1773652500123, *rng.integers(-(10**12), 4 * 10**12, 2000).tolist()]:
        aware = datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat().replace("+00:00", "Z")
        assert _iso(ms) == aware, ms


def test_unchanged_reindex_is_a_noop_and_embeds_nothing(mem, corpus, fake_embedder):
    mem.index([corpus])
    embedded = fake_embedder.texts_embedded
    again = mem.index([corpus])
    assert (again.files_seen, again.files_indexed, again.chunks_added, again.chunks_removed) == (2, 0, 0, 0)
    assert again.chunks_embedded == 0
    assert fake_embedder.texts_embedded == embedded


# Makes a reply long enough that its exchange is never packed with another (one chunk each).
LONG = (
    " The runbook entry was updated with the steps we took, the dashboards were checked twice"
    " during the following hour, and the change was noted in the weekly operations review so"
    " that the on-call rotation knows what to look for next time. Nothing else in the service"
    " needed a change, and the follow-up ticket was closed once the numbers stayed flat for a day."
)


def test_append_adds_only_new_chunks_and_embeds_only_them(mem, corpus, fake_embedder):
    mem.index([corpus])
    before = fake_embedder.texts_embedded
    path = corpus / "deploy.jsonl"
    extra = generic_session(
        "deploy-1", DEPLOY + [("is the pager quiet now?", "Yes, no alerts since the rollback." + LONG)]
    )[-2:]
    with path.open("a") as f:
        import json

        for r in extra:
            f.write(json.dumps(r) + "\n")
    report = mem.index([corpus])
    assert report.files_indexed == 1
    assert (report.chunks_added, report.chunks_removed) == (1, 0)
    assert fake_embedder.texts_embedded - before == 1
    assert "rollback" in mem.search("pager alerts rollback", k=1)[0].text


def claude_records(
    session_id: str, pairs: list[tuple[str, str]], parent: str | None = None, first: int = 0
) -> list[dict]:
    """Claude Code session lines: each prompt's uuid chains to the previous record."""
    out = []
    for i, (q, a) in enumerate(pairs, start=first):
        ts = f"2026-03-01T10:{i // 60:02d}:{i % 60:02d}Z"
        for kind, uid, message in (
            ("user", f"u{i}", {"role": "user", "content": q}),
            ("assistant", f"a{i}", {"id": f"m{i}", "role": "assistant", "content": [{"type": "text", "text": a}]}),
        ):
            out.append(
                {
                    "type": kind,
                    "uuid": uid,
                    "parentUuid": parent,
                    "sessionId": session_id,
                    "timestamp": ts,
                    "isSidechain": False,
                    "message": message,
                }
            )
            parent = uid
    return out


def test_claude_code_append_reads_only_the_new_exchange(mem, tmp_path, fake_embedder):
    root = tmp_path / "projects"
    pairs = [(f"question {i} about shard {i}", f"answer {i}: shard {i} lives on node-{i}." + LONG) for i in range(40)]
    path = write_jsonl(root / "s1.jsonl", claude_records("s1", pairs))
    first = mem.index([root])
    assert (first.chunks_added, first.files_resumed) == (40, 0)
    size_before = path.stat().st_size
    new = claude_records(
        "s1", [("where is the pager config?", "In ops/pager.yaml since the rollback." + LONG)], parent="a39", first=40
    )
    with path.open("a") as f:
        import json

        f.writelines(json.dumps(r) + "\n" for r in new)
    report = mem.index([root])
    assert (report.files_indexed, report.files_resumed) == (1, 1)
    assert (report.chunks_added, report.chunks_removed) == (1, 0)
    # Only the last exchange before the append and the new bytes are read again.
    assert report.bytes_parsed < (path.stat().st_size - size_before) * 3
    assert "ops/pager.yaml" in mem.search("pager config", k=1)[0].text
    fresh = memlane.open(tmp_path / "fresh", embedder=fake_embedder)
    fresh.index([root])
    assert fresh.status()["chunks"] == mem.status()["chunks"] == 41
    # Same chunks (ids are content keys) as a fresh index of the whole file.
    assert {h.id for h in fresh.search("shard node pager", k=41)} == {
        h.id for h in mem.search("shard node pager", k=41)
    }


def codex_records(pairs: list[tuple[str, str]], first: int = 0) -> list[dict]:
    """Codex envelope lines of `pairs`, each message in both logs as the CLI writes them."""
    out = (
        []
        if first
        else [
            {
                "timestamp": "2026-01-01T00:00:00Z",
                "type": "session_meta",
                "payload": {"id": "0199aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee"},
            }
        ]
    )
    for i, (q, a) in enumerate(pairs, start=first):
        ts = f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}Z"
        out += [
            {
                "timestamp": ts,
                "type": "response_item",
                "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": q}]},
            },
            {"timestamp": ts, "type": "event_msg", "payload": {"type": "user_message", "message": q}},
            {
                "timestamp": ts,
                "type": "response_item",
                "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": a}]},
            },
            {"timestamp": ts, "type": "event_msg", "payload": {"type": "agent_message", "message": a}},
        ]
    return out


def test_codex_append_reads_only_the_new_exchange(mem, tmp_path, fake_embedder):
    import json

    root = tmp_path / "sessions"
    pairs = [(f"question {i} about shard {i}", f"answer {i}: shard {i} lives on node-{i}." + LONG) for i in range(40)]
    path = write_jsonl(
        root / "rollout-2026-01-01T00-00-00-0199aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee.jsonl", codex_records(pairs)
    )
    assert mem.index([root]).chunks_added == 40
    size_before = path.stat().st_size
    with path.open("a") as f:
        f.writelines(
            json.dumps(r) + "\n"
            for r in codex_records([("where is the pager config?", "In ops/pager.yaml." + LONG)], first=40)
        )
    report = mem.index([root])
    assert (report.files_indexed, report.files_resumed, report.chunks_added) == (1, 1, 1)
    assert report.bytes_parsed < (path.stat().st_size - size_before) * 3
    fresh = memlane.open(tmp_path / "fresh", embedder=fake_embedder)
    fresh.index([root])
    # Each prompt and reply once (the event log's copies are not indexed twice), as in a fresh index.
    assert {h.id for h in fresh.search("shard node pager", k=50)} == {
        h.id for h in mem.search("shard node pager", k=50)
    }
    assert fresh.status()["chunks"] == mem.status()["chunks"] == 41


def test_a_deleted_transcript_keeps_its_chunks_until_forgotten(mem, corpus):
    mem.index([corpus])
    (corpus / "cooking.jsonl").unlink()
    report = mem.index([corpus])
    assert (report.files_gone, report.files_removed, report.chunks_removed) == (1, 0, 0)
    assert any(h.session_id == "cook-1" for h in mem.search("pasta sauce spaghetti", k=5))
    assert mem.forget_missing()["files"] == [str(corpus / "cooking.jsonl")]
    assert all(h.session_id != "cook-1" for h in mem.search("pasta sauce spaghetti", k=5))
    assert mem.status()["chunks"] == 3


def test_same_conversation_exported_twice_is_indexed_once(mem, corpus):
    shutil.copy(corpus / "deploy.jsonl", corpus / "deploy-copy.jsonl")
    report = mem.index([corpus])
    assert report.files_indexed == 3
    assert report.chunks_added == 5
    (corpus / "deploy.jsonl").unlink()
    report = mem.index([corpus])
    assert report.chunks_removed == 0
    assert mem.search("ERR_CONN_RESET", k=1)


def test_keyword_search_works_before_vectors_then_backfill(tmp_path, corpus, fake_embedder):
    mem = memlane.open(tmp_path / "home", embedder=fake_embedder)
    report = mem.index([corpus], embed=False)
    assert report.chunks_embedded == 0
    assert mem.status()["chunks_with_vectors"] == 0
    hit = mem.search("exit code 137", k=1)[0]
    assert hit.scores["vector"] is None
    assert mem.embed_pending() == 5
    status = mem.status()
    assert status["chunks_with_vectors"] == 5
    assert status["embedder_id"] == fake_embedder.id
    assert mem.search("exit code 137", k=1)[0].scores["vector"] is not None


def test_a_long_lived_reader_uses_vectors_another_writer_added(tmp_path, corpus, fake_embedder):
    # An MCP server opens the home once; vectors written later by a hook's worker must be used
    # from its very next query, not the one after.
    writer = memlane.open(tmp_path / "home", embedder=fake_embedder)
    writer.index([corpus], embed=False)
    reader = memlane.open(tmp_path / "home", embedder=fake_embedder)
    assert reader.search("exit code 137", k=1)[0].scores["vector"] is None
    writer.embed_pending()
    assert reader.search("exit code 137", k=1)[0].scores["vector"] is not None


def test_keyword_search_does_not_read_the_vector_file(tmp_path, corpus, fake_embedder):
    # Keyword-only search never loads the vectors (nor fails for them); a vector search still
    # reports the damaged file.
    from memlane.errors import CorruptIndexError

    memlane.open(tmp_path / "home", embedder=fake_embedder).index([corpus])
    (tmp_path / "home" / "vectors.usearch").write_bytes(b"not an index")
    keyword_only = memlane.open(tmp_path / "home", embedder="none")
    assert "keepalive_timeout" in keyword_only.search("ERR_CONN_RESET", k=1)[0].text
    with pytest.raises(CorruptIndexError):
        memlane.open(tmp_path / "home", embedder=fake_embedder).search("ERR_CONN_RESET", k=1)


def test_a_new_home_stores_vectors_in_i8_and_an_old_home_keeps_its_own(tmp_path, corpus, fake_embedder):
    # i8 (one byte a dimension) is the default; a home made with f16 stays f16 when opened with
    # the default, keeps indexing in it, and both rank the same chunks alike.
    new = memlane.open(tmp_path / "new", embedder=fake_embedder)
    memlane.open(tmp_path / "old", embedder=fake_embedder, quantization="f16").index([corpus])
    new.index([corpus])
    old = memlane.open(tmp_path / "old", embedder=fake_embedder)
    assert (new.status()["quantization"], old.status()["quantization"]) == ("i8", "f16")
    vectors = new.status()["vectors"]
    saved = (tmp_path / "old" / "vectors.usearch").stat().st_size - (
        tmp_path / "new" / "vectors.usearch"
    ).stat().st_size
    assert saved == vectors * fake_embedder.dim  # two bytes a dimension against one
    write_jsonl(
        corpus / "later.jsonl",
        generic_session("later", [("user", "the quokka cache warms at noon"), ("assistant", "noted")]),
    )
    old.index([corpus])
    assert old.status()["quantization"] == "f16" and old.status()["vectors"] > vectors
    assert "quokka" in old.search("quokka cache warms", k=1)[0].text
    for query in ("exit code 137", "which database does billing use"):
        a, b = (
            {h.id: h.scores["vector"] for h in new.search(query, k=3)},
            {h.id: h.scores["vector"] for h in old.search(query, k=3)},
        )
        assert list(a)[0] == list(b)[0]
        assert all(abs(a[i] - b[i]) < 0.02 for i in a.keys() & b.keys())


def test_vectors_loaded_while_queries_are_embedded_answer_as_loaded_on_demand(tmp_path, corpus, fake_embedder):
    # A search starts loading the vectors on a thread of their own before it embeds its query:
    # searches racing that load get the same answers, and a load that fails is reported by the
    # search (never taken for a home without vectors).
    from concurrent.futures import ThreadPoolExecutor

    from memlane.errors import CorruptIndexError

    memlane.open(tmp_path / "home", embedder=fake_embedder).index([corpus])
    queries = ["exit code 137", "which database does billing use", "keepalive timeout"]
    expected = {
        q: [(h.id, h.score) for h in memlane.open(tmp_path / "home", embedder=fake_embedder).search(q)] for q in queries
    }
    assert all(expected.values())
    mem = memlane.open(tmp_path / "home", embedder=fake_embedder)
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda q: (q, [(h.id, h.score) for h in mem.search(q)]), queries * 4))
    assert all(hits == expected[q] for q, hits in got)
    (tmp_path / "home" / "vectors.usearch").write_bytes(b"not an index")
    broken = memlane.open(tmp_path / "home", embedder=fake_embedder)
    assert broken.vectors_embedder_id == fake_embedder.id  # read from memlane.json, the vectors not loaded
    broken._store.prefetch_vectors()
    for _ in range(2):  # the failed load is retried and reported by every search
        with pytest.raises(CorruptIndexError):
            broken.search("exit code 137")


def test_embedding_cache_is_shared_across_homes(tmp_path, corpus, fake_embedder):
    memlane.open(tmp_path / "a", embedder=fake_embedder).index([corpus])
    calls = fake_embedder.texts_embedded
    second = memlane.open(tmp_path / "b", embedder=fake_embedder).index([corpus])
    assert second.chunks_embedded == 5
    assert second.embed_cache_hits == 5
    assert fake_embedder.texts_embedded == calls


def test_unrelated_query_returns_nothing(mem, corpus):
    mem.index([corpus])
    assert mem.search("zebra quokka marsupial") == []


def test_filters_by_session_and_time(mem, corpus):
    mem.index([corpus])
    assert {h.session_id for h in mem.search("what", k=10, session_id="cook-1")} <= {"cook-1"}
    recent = mem.search("pasta deploy billing sauce", k=10, since="2026-02-01", threshold=0.0)  # filters, not the floor
    assert recent and all(h.session_id == "deploy-1" for h in recent)
    old = mem.search("pasta deploy billing sauce", k=10, until="2026-02-01", threshold=0.0)
    assert old and all(h.session_id == "cook-1" for h in old)
    with pytest.raises(ValueError, match="ISO-8601"):
        mem.search("x", since="last tuesday")


def test_rrf_fusion_ranks_the_double_match_first(mem, corpus):
    mem.index([corpus])
    hits = mem.search("billing database", k=3, fusion="rrf")
    assert "Postgres" in hits[0].text


def test_second_writer_gets_a_clear_lock_error(mem, corpus):
    mem.index([corpus])
    writer = mem._store.writer()
    try:
        with pytest.raises(IndexLockedError, match="locked"):
            mem.index([corpus])
        assert mem.search("ERR_CONN_RESET", k=1), "readers keep working during a write"
    finally:
        writer.close()
    assert mem.index([corpus]).files_indexed == 0


def test_interrupted_index_keeps_last_commit_and_resumes(tmp_path, corpus, fake_embedder):
    mem = memlane.open(tmp_path / "home", embedder=fake_embedder)
    mem.index([corpus / "deploy.jsonl"])
    # A writer that parses but never commits (the process died): nothing of it is visible.
    writer = mem._store.writer()
    writer.index_files([str(corpus / "cooking.jsonl")])
    writer.close()
    assert mem.status()["chunks"] == 3
    assert all(h.session_id == "deploy-1" for h in mem.search("pasta", k=5))
    report = mem.index([corpus])
    assert report.files_indexed == 1 and report.chunks_added == 2


def test_embedder_mismatch_is_refused(tmp_path, corpus, fake_embedder):
    mem = memlane.open(tmp_path / "home", embedder=fake_embedder)
    mem.index([corpus])

    class Other(FakeEmbedder):
        id = "other/model/64"

    other = memlane.open(tmp_path / "home", embedder=Other())
    with pytest.raises(EmbedderMismatchError, match="fake/hash-bow/64"):
        other.search("deploy")
    (corpus / "new.jsonl").write_text((corpus / "cooking.jsonl").read_text().replace("pasta", "risotto"))
    with pytest.raises(EmbedderMismatchError):
        other.index([corpus])


def test_missing_path_raises_file_not_found(mem, tmp_path):
    with pytest.raises(FileNotFoundError):
        mem.index([tmp_path / "nope"])


def test_bad_lines_are_counted_not_fatal(mem, tmp_path):
    path = tmp_path / "t" / "s.jsonl"
    rows = generic_session("s", DEPLOY[:1])
    import json

    path.parent.mkdir()
    path.write_text(json.dumps(rows[0]) + "\n{not json\n" + json.dumps(rows[1]) + "\n")
    report = mem.index([path.parent])
    assert report.records_skipped.get("invalid_json") == 1
    assert report.chunks_added == 1


def test_vectors_cross_as_float32_arrays(mem, corpus):
    mem.index([corpus], embed=False)
    with mem._store.writer() as w:
        keys = w.pending_vectors()
        assert keys.dtype == np.uint64 and len(keys) == 5
        with pytest.raises(TypeError, match="contiguous"):
            vecs = np.ones((10, 64), dtype=np.float32)[::2]
            w.add_vectors("fake/hash-bow/64", keys, np.ones(5, dtype=np.uint64), vecs)


def test_indexing_one_file_never_drops_its_siblings(mem, corpus):
    mem.index([corpus])
    shutil.copy(corpus / "deploy.jsonl", corpus / "deploy.jsonl.bak.jsonl")
    mem.index([corpus])
    report = mem.index([corpus / "deploy.jsonl"])
    assert (report.files_removed, report.chunks_removed) == (0, 0)
    assert mem.status()["files"] == 3


class _AsksFor(FakeEmbedder):
    """Answers every query with the vector of one text: hits then come from the vector index alone."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def embed_query(self, text):
        return self._vector(self.text)


def test_a_hit_found_by_vector_alone_is_the_live_chunk_not_a_deleted_copy(tmp_path, corpus):
    # A chunk moved to another file is deleted from the first commit's segment and added again
    # in a later one; a hit only the vector index found is looked up by key, which must give
    # the live copy with its new path.
    chunk = "User: which database does billing use?\nAssistant: Billing runs on Postgres 16 since March."
    mem = memlane.open(tmp_path / "home", embedder=_AsksFor(chunk))
    mem.index([corpus])
    moved = tmp_path / "moved"
    moved.mkdir()
    shutil.move(corpus / "deploy.jsonl", moved / "deploy.jsonl")
    # The old path is gone (its chunks kept); the same chunks in the new file are filed there.
    assert (mem.index([corpus]).files_gone, mem.index([moved]).chunks_added) == (1, 0)
    hits = mem.search("zebra quokka marsupial", k=5, threshold=0.0)  # the lookup, not the floor
    assert hits and hits[0].scores["bm25"] is None
    assert "Postgres 16" in hits[0].text
    assert all(h.path.startswith(str(moved)) for h in hits if h.session_id == "deploy-1")
    assert mem.get(hits[0].id).path == str(moved / "deploy.jsonl")


def test_ctrl_c_while_parsing_keeps_the_batches_read_and_the_next_run_reads_the_rest(tmp_path, fake_embedder):
    from memlane.errors import IndexInterrupted

    src = tmp_path / "src"
    from memlane import indexing

    first = max(indexing._FILES_PER_BATCH // indexing._FIRST_BATCH_SHARE, 1)  # a run that embeds starts small
    for n in range(70):
        write_jsonl(src / f"s{n:02d}.jsonl", generic_session(f"s{n}", [(f"question {n}", f"answer about widget{n}")]))

    def stop(stage, done, total):
        raise KeyboardInterrupt  # Ctrl-C lands once the first batch was added

    mem = memlane.open(tmp_path / "home", embedder=fake_embedder)
    with pytest.raises(IndexInterrupted) as stopped:
        mem.index([src], progress=stop)
    assert (stopped.value.report.files_indexed, stopped.value.files_to_index) == (first, 70)
    # The batch's chunks went to the model as they were added: some may have their vectors.
    embedded = mem.status()["chunks_with_vectors"]
    assert stopped.value.chunks_pending == first - embedded
    assert mem.status()["files"] == first and mem.verify()["sound"]
    report = mem.index([src])
    assert (report.files_indexed, report.chunks_embedded) == (70 - first, 70 - embedded)
    assert mem.status()["chunks_with_vectors"] == 70
