"""An index run embeds while it parses: the keyword pass runs on a thread of its own and hands
each batch's new chunks to the backfill as it adds them (issue 41: parse -> embed overlapped)."""

from __future__ import annotations

import os
import queue
import signal
import sqlite3
import threading

import numpy as np
import pytest
from conftest import FakeEmbedder, generic_session, write_jsonl

import memlane
from memlane import _core, indexing
from memlane.embed.feed import Prepared, run_ahead
from memlane.errors import IndexInterrupted


class StreamingFake(FakeEmbedder):
    """The fake embedder fed as the local one is: its items are read on a feed thread."""

    def embed_stream(self, items):
        return run_ahead(items, lambda texts: Prepared([], lambda: self.embed_documents(texts)), workers=1)


def sessions(root, n):
    for i in range(n):
        pairs = [(f"what does step {i}.{k} do?", f"Step {i}.{k} rotates the zephyr{i}x{k} keys.") for k in range(3)]
        write_jsonl(root / f"s{i:02d}.jsonl", generic_session(f"s{i}", pairs))
    return root


@pytest.fixture
def small_batches(monkeypatch):
    monkeypatch.setattr(indexing, "_FILES_PER_BATCH", 2)


@pytest.mark.parametrize("embedder", [FakeEmbedder, StreamingFake])
def test_embedding_starts_before_the_keyword_pass_ends(tmp_path, small_batches, embedder):
    src = sessions(tmp_path / "src", 8)
    embedded = threading.Event()
    waited: list[bool] = []

    def progress(stage, done, total):
        if stage == "embed" and done:
            embedded.set()
        elif stage == "parse" and len(waited) < 2:
            # The second batch waits for vectors of the first: a run that embeds only once
            # every file is parsed never gives them.
            waited.append(len(waited) == 0 or embedded.wait(30))

    mem = memlane.open(tmp_path / "home", embedder=embedder(), cache_dir=tmp_path / "cache")
    report = mem.index([src], progress=progress)
    assert waited == [True, True]
    status = mem.status()
    assert report.files_indexed == 8 and report.chunks_added == report.chunks_embedded == status["chunks"] == 8
    assert status["vectors"] == 8 and status["vectors_pending"] == 0
    assert report.keyword_seconds <= report.seconds
    assert mem.search("zephyr5x2 keys", k=1)[0].text.count("zephyr5x2") == 1


def test_an_embedding_error_lets_the_keyword_pass_end_and_commit(tmp_path, small_batches):
    class Broken(StreamingFake):
        def embed_documents(self, texts):
            raise RuntimeError("the model is gone")

    src = sessions(tmp_path / "src", 8)
    mem = memlane.open(tmp_path / "home", embedder=Broken(), cache_dir=tmp_path / "cache")
    with pytest.raises(RuntimeError, match="the model is gone"):
        mem.index([src])
    status = _core.Store(str(tmp_path / "home")).status()
    assert (status["files"], status["chunks"], status["vectors"]) == (8, 8, 0)
    # Named the embedder whose vectors the chunks wait for.
    assert status["embedder_id"] == Broken.id


def test_a_cache_write_that_fails_beside_the_index_writes_ends_the_run_and_loses_nothing(
    tmp_path, small_batches, monkeypatch
):
    """The embedding cache is written on a thread of its own while vectors go into the index: its
    error must still end the run, and a second run embeds what the first could not keep."""
    from memlane.embed.cache import EmbeddingCache

    src = sessions(tmp_path / "src", 8)
    put_many = EmbeddingCache.put_many
    puts = 0

    def fails_second(self, embedder_id, vectors):
        nonlocal puts
        puts += 1
        if puts == 2:
            raise sqlite3.OperationalError("database is locked")
        put_many(self, embedder_id, vectors)

    monkeypatch.setattr(EmbeddingCache, "put_many", fails_second)
    mem = memlane.open(tmp_path / "home", embedder=StreamingFake(), cache_dir=tmp_path / "cache")
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        mem.index([src])
    assert not [t for t in threading.enumerate() if t.name.startswith("memlane-cache-writes")]
    status = _core.Store(str(tmp_path / "home")).status()
    assert (status["files"], status["chunks"]) == (8, 8) and status["vectors"] < 8

    monkeypatch.setattr(EmbeddingCache, "put_many", put_many)
    mem = memlane.open(tmp_path / "home", embedder=StreamingFake(), cache_dir=tmp_path / "cache")
    assert mem.index([src]).chunks_embedded == 8 - status["vectors"]
    again = mem.status()
    assert (again["chunks_with_vectors"], again["vectors_pending"]) == (8, 0) and mem.verify()["sound"]


def test_ctrl_c_while_parsing_commits_the_batches_parsed_and_resumes(tmp_path, small_batches):
    src = sessions(tmp_path / "src", 6)

    def progress(stage, done, total):
        if stage == "parse" and done >= total / 2:
            raise KeyboardInterrupt

    mem = memlane.open(tmp_path / "home", embedder=StreamingFake(), cache_dir=tmp_path / "cache")
    with pytest.raises(IndexInterrupted) as stopped:
        mem.index([src], progress=progress)
    assert stopped.value.report.files_indexed == 3
    again = mem.index([src])
    status = mem.status()
    assert again.files_indexed == 3 and status["chunks"] == status["vectors"] == 6


def test_ctrl_c_while_waiting_for_the_next_batch_stops_the_run_at_once(tmp_path, small_batches, monkeypatch):
    """The embedding side waits for the keyword pass's next batch (the feed thread, polling
    whether the pipeline was closed) while the calling thread waits for the feed, where Ctrl-C
    lands: the run stops at once and tells the pass, which ends after its current batch."""
    src = sessions(tmp_path / "src", 6)
    stopped, released = threading.Event(), []

    def progress(stage, done, total):
        if stage == "parse" and done < total and not released:
            if done > total / 3:  # the second batch: the pass stays between two batches
                released.append(stopped.wait(30))
        elif stage == "embed":  # the first batch's chunks have vectors: Ctrl-C
            threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()

    stop = indexing._KeywordPass.stop
    monkeypatch.setattr(indexing._KeywordPass, "stop", lambda self: (stop(self), stopped.set()))
    mem = memlane.open(tmp_path / "home", embedder=StreamingFake(), cache_dir=tmp_path / "cache")
    with pytest.raises(IndexInterrupted) as interrupted:
        mem.index([src], progress=progress)
    assert released == [True]
    assert interrupted.value.report.files_indexed == 3  # the batch being added is committed too
    again = mem.index([src])
    status = mem.status()
    assert again.files_indexed == 3 and status["chunks"] == status["vectors"] == 6


class KeptUp(list):
    """A hand-over queue whose consumer always keeps up: it has taken every item."""

    def put(self, item):
        self.append(item)

    def empty(self):
        return True


def hand_over(home, src, handed, commits, monkeypatch):
    """Run the keyword pass over ``src`` on this thread, handing over into ``handed`` and counting
    its commits in ``commits``; every chunk waiting for vectors, read back after the last commit
    as (key, hash, text)."""
    commit_and_hand_over = indexing._KeywordPass._commit_and_hand_over
    monkeypatch.setattr(
        indexing._KeywordPass, "_commit_and_hand_over", lambda self: commits.append(1) or commit_and_hand_over(self)
    )
    with _core.Store(str(home)).writer() as writer:
        plan = writer.scan([str(src)])
        keywords = indexing._KeywordPass(writer, plan["to_index"], plan["bytes_to_index"], None)
        keywords.handed = handed
        keywords.run(hand_over=True)
        assert writer.pending_vectors().size == 9
        return writer.chunk_texts(writer.pending_vectors().tolist())


def test_each_chunk_is_handed_over_once_an_earlier_runs_first_then_each_batch_with_its_texts(
    tmp_path, small_batches, monkeypatch
):
    src = sessions(tmp_path / "src", 9)
    home = tmp_path / "home"
    memlane.open(home, embedder="none").index([str(src / "s00.jsonl"), str(src / "s01.jsonl")], embed=False)
    handed, commits = KeptUp(), []
    committed = hand_over(home, src, handed, commits, monkeypatch)
    # The earlier run's keys first, then the new chunks of each batch (1, 2, 2 and 2 files of
    # one chunk each) as rows, before any commit: the texts the commit stores.
    assert isinstance(handed[0], np.ndarray) and all(isinstance(h, list) for h in handed[1:])
    assert [len(h) for h in handed] == [2, 1, 2, 2, 2] and len(commits) == 1  # 7 files: far from a full batch
    rows = [row for h in handed[1:] for row in h]
    assert sorted(rows) == sorted(row for row in committed if row[0] not in handed[0].tolist())


def test_a_batch_the_embedding_side_has_not_kept_up_with_goes_as_keys_at_the_next_commit(
    tmp_path, small_batches, monkeypatch
):
    """A CPU model falls behind the keyword pass at once: a batch's texts are not held in memory
    for it, its keys follow at the next commit (texts read back from the index)."""
    src = sessions(tmp_path / "src", 9)
    handed: queue.SimpleQueue = queue.SimpleQueue()
    committed = hand_over(tmp_path / "home", src, handed, [], monkeypatch)
    got = [handed.get_nowait() for _ in range(handed.qsize())]
    # The first batch's rows (nothing waited), then the other 8 chunks' keys at the one commit.
    assert isinstance(got[0], list) and [len(g) for g in got] == [1, 8] and isinstance(got[1], np.ndarray)
    assert sorted(got[0] + [row for row in committed if row[0] in got[1].tolist()]) == sorted(committed)


def test_a_run_that_embeds_parses_small_batches_first_doubling_to_full(tmp_path, monkeypatch):
    monkeypatch.setattr(indexing, "_FILES_PER_BATCH", 64)
    paths = [str(p) for p in sorted(sessions(tmp_path / "src", 40).iterdir())]
    assert [len(b) for b, _ in indexing._batches(paths, small_first=True)] == [2, 4, 8, 16, 10]
    assert [len(b) for b, _ in indexing._batches(paths, small_first=False)] == [40]
    sizes = {p: os.path.getsize(p) for p in paths}
    assert all(size == sum(sizes[p] for p in batch) for batch, size in indexing._batches(paths, small_first=True))
