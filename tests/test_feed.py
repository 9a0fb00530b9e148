"""Tests of the local embedder's feed (memlane.embed.feed): the next batches prepared while the
model runs, on several workers, give the same vectors in the same order as one batch after
another; a failure anywhere surfaces; closing or Ctrl-C leaves no thread behind."""

from __future__ import annotations

import random
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest import generic_session, write_jsonl
from test_embed_local import long_text
from test_embed_model_dir import make_model_dir

from memlane import _core
from memlane.embed.backfill import backfill
from memlane.embed.cache import EmbeddingCache
from memlane.embed.feed import Prepared, closing, run_ahead
from memlane.embed.local import LocalEmbedder

WORDS = ["deploy", "failed", "because", "the", "cache", "timeout", "was", "too", "short", "so", "we", "retried"]


def texts(n: int, seed: int = 0) -> list[str]:
    """``n`` texts of 0 to ~150 words from the tiny model's vocabulary: one window to several."""
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.choice([0, 3, 20, 60, 150]))) for _ in range(n)]


def feed_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(("memlane-feed", "memlane-embed"))]


@pytest.fixture(autouse=True)
def no_thread_left_behind() -> Iterator[None]:
    yield
    assert feed_threads() == []


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> LocalEmbedder:
    """A real LocalEmbedder (tiny random BERT, fp32) with two workers and small batches."""
    model_dir = make_model_dir(tmp_path_factory.mktemp("feed") / "tiny-bert")
    return LocalEmbedder(model_dir=model_dir, threads=2, batch_size=4)


def one_batch_after_another(emb: LocalEmbedder, batch: Sequence[str]) -> list[np.ndarray]:
    """The plain path: the same batches, run in turn on this thread."""
    prepared = emb._prepare(batch)
    for task in prepared.tasks:
        task()
    return prepared.result()


class SlowSession:
    """The embedder's session, each run delayed at random (so batches finish out of order),
    failing on the run that ``fail_on`` names."""

    def __init__(self, real: Any, fail_on: int | None = None) -> None:
        self._real = real
        self._fail_on = fail_on
        self._rng = random.Random(1)
        self._lock = threading.Lock()
        self.runs = 0

    def run(self, outputs: Sequence[str], feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        with self._lock:
            self.runs += 1
            n, delay = self.runs, self._rng.random() * 0.01
        if n == self._fail_on:
            raise RuntimeError(f"run {n} failed")
        time.sleep(delay)
        result: list[np.ndarray] = self._real.run(outputs, feed)
        return result


@pytest.fixture
def slow(tiny: LocalEmbedder, monkeypatch: pytest.MonkeyPatch) -> SlowSession:
    session = SlowSession(tiny._session)
    monkeypatch.setattr(tiny, "_session", session)
    return session


def test_the_stream_gives_each_batch_the_vectors_of_the_plain_path_in_order(
    tiny: LocalEmbedder, slow: SlowSession
) -> None:
    batches = [texts(n, seed) for seed, n in enumerate([7, 0, 13, 1, 9, 20, 2])]
    streamed = list(tiny.embed_stream((f"batch {i}", b) for i, b in enumerate(batches)))
    assert [tag for tag, _ in streamed] == [f"batch {i}" for i in range(len(batches))]
    assert slow.runs > len(batches)  # several model runs per batch of texts, on two workers
    for batch, (_, vectors) in zip(batches, streamed):
        expected = one_batch_after_another(tiny, batch)
        assert len(vectors) == len(batch)
        for got, want in zip(vectors, expected):
            assert got.dtype == np.float32 and got.flags.c_contiguous
            np.testing.assert_array_equal(got, want)
    assert [len(v) for v in tiny.embed_documents(batches[2])] == [len(v) for v in streamed[2][1]]


def test_a_failing_model_run_surfaces_in_the_caller(tiny: LocalEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tiny, "_session", SlowSession(tiny._session, fail_on=3))
    with pytest.raises(RuntimeError, match="run 3 failed"):
        list(tiny.embed_stream((i, texts(10, i)) for i in range(5)))


def test_a_failure_reading_the_items_surfaces_in_the_caller(tiny: LocalEmbedder) -> None:
    def items() -> Iterator[tuple[int, list[str]]]:
        yield 0, texts(5)
        raise OSError("the store went away")

    stream = tiny.embed_stream(items())
    assert next(stream)[0] == 0
    with pytest.raises(OSError, match="store went away"):
        next(stream)


def test_closing_the_stream_early_stops_its_threads(tiny: LocalEmbedder, slow: SlowSession) -> None:
    with closing(tiny.embed_stream((i, texts(20, i)) for i in range(50))) as stream:
        next(stream)
        assert feed_threads()
    assert slow.runs < 50 * 20  # it did not embed everything before stopping


def test_ctrl_c_in_the_consumer_stops_the_threads(tiny: LocalEmbedder, slow: SlowSession) -> None:
    with pytest.raises(KeyboardInterrupt), closing(tiny.embed_stream((i, texts(20, i)) for i in range(50))) as stream:
        for _ in stream:
            raise KeyboardInterrupt


def test_run_ahead_raises_what_a_task_raised_and_keeps_order_otherwise() -> None:
    def prepare(n: int) -> Prepared[int]:
        done: list[int] = []

        def task(i: int) -> None:
            time.sleep(random.random() * 0.002)
            if n == 13:
                raise ValueError("thirteen")
            done.append(i)

        return Prepared([lambda i=i: task(i) for i in range(n)], lambda: len(done))

    assert list(run_ahead(((n, n) for n in range(12)), prepare, workers=3, ahead=1)) == [(n, n) for n in range(12)]
    with pytest.raises(ValueError, match="thirteen"):
        list(run_ahead(((n, n) for n in range(20)), prepare, workers=3))


def test_a_backfill_through_the_stream_writes_the_vectors_of_the_plain_path(
    tiny: LocalEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import memlane

    monkeypatch.setattr("memlane.embed.backfill._CHUNKS_PER_EMBED_BATCH", 3)
    archive = tmp_path / "sessions"
    for i in range(8):
        pairs = [(f"question {i} {j}?", f"{texts(1, seed=10 * i + j)[0]} {long_text(120)}") for j in range(2)]
        write_jsonl(archive / f"{i}.jsonl", generic_session(f"s{i}", pairs))
    home = tmp_path / "home"
    memlane.open(home, embedder="none").index([archive], embed=False)
    store = _core.Store(str(home))
    cache = EmbeddingCache(tmp_path / "embeddings.sqlite")
    with store.writer() as writer:
        rows = writer.chunk_texts([int(k) for k in writer.pending_vectors()])
        assert backfill(writer, cache, tiny, None) == (len(rows), 0)
        writer.commit()
        assert len(writer.pending_vectors()) == 0
    got = cache.get_many(tiny.id, [h for _, h, _ in rows])
    for _, h, text in rows:
        np.testing.assert_allclose(got[h], one_batch_after_another(tiny, [text])[0], atol=1e-3)  # float16 cached


class StubWriter:
    """The writer calls a backfill makes, over rows given up front; what it was given, by key."""

    def __init__(self, rows: list[tuple[int, str, str]]) -> None:
        self.rows = {k: (k, h, t) for k, h, t in rows}
        self.vectors: dict[int, np.ndarray] = {}

    def pending_vectors(self) -> np.ndarray:
        return np.array([k for k in self.rows if k not in self.vectors], dtype=np.uint64)

    def chunk_texts(self, keys: list[int]) -> list[tuple[int, str, str]]:
        return [self.rows[k] for k in keys]

    def add_vectors(self, _: str, keys: np.ndarray, counts: np.ndarray, flat: np.ndarray, parts: int) -> None:
        for key, end, count in zip(keys, np.cumsum(counts), counts):
            self.vectors[int(key)] = flat[end - count : end]

    def commit_vectors(self) -> None:
        pass


def test_a_text_in_batches_in_flight_together_is_embedded_once(
    tiny: LocalEmbedder, slow: SlowSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Knowledge chunks of different notes can share a text: a later batch read while an
    earlier one still embeds it takes its vectors from the cache once written, as a backfill
    one batch at a time would."""
    monkeypatch.setattr("memlane.embed.backfill._CHUNKS_PER_EMBED_BATCH", 2)
    distinct = texts(5, seed=3)
    rows = [(key, f"hash{key % 5}", distinct[key % 5]) for key in range(20)]
    embedded: list[str] = []
    real_prepare = tiny._prepare
    monkeypatch.setattr(tiny, "_prepare", lambda batch: embedded.extend(batch) or real_prepare(batch))
    writer = StubWriter(rows)
    cache = EmbeddingCache(tmp_path / "embeddings.sqlite")
    assert backfill(writer, cache, tiny, None) == (20, 15)  # type: ignore[arg-type]
    assert sorted(embedded) == sorted(distinct)
    for key, h, _ in rows:
        np.testing.assert_array_equal(writer.vectors[key], cache.get_many(tiny.id, [h])[h])


@pytest.mark.model
def test_the_real_model_gives_the_same_vectors_streamed_and_on_one_core(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMLANE_CACHE_DIR", str(tmp_path))
    batch = [long_text(n) for n in (5, 40, 300, 700)] * 5
    streamed = LocalEmbedder(threads=2)
    one_core = LocalEmbedder(threads=1)
    on_intra_op_threads = LocalEmbedder(threads=2, parallel="intra_op")
    assert (streamed._workers, one_core._workers, on_intra_op_threads._workers) == (2, 1, 1)
    expected = one_batch_after_another(one_core, batch)
    for emb in (streamed, on_intra_op_threads):
        for got, want in zip(emb.embed_documents(batch), expected):
            assert got.shape == want.shape
            assert float(np.min(np.sum(got * want, axis=1))) >= 0.99999
