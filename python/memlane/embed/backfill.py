"""Give a home's chunks their vectors: from the embedding cache first, else from the embedder.

:func:`backfill` embeds every chunk a writer holds without a vector, a batch at a time,
committing as it goes so an interruption loses little (and even that is in the cache);
:func:`embed_chunks` is one batch of it; :func:`embed_batch` runs a Bedrock batch-inference
backfill (:mod:`memlane.embed.batch_backfill`) and then fills the index from the cache.
:meth:`memlane.Memory.index`, :meth:`~memlane.Memory.embed_pending`,
:meth:`~memlane.Memory.embed_batch` and :meth:`~memlane.Memory.repair` use them.

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> from memlane import _core
    >>> from memlane.embed.cache import EmbeddingCache
    >>> cache = EmbeddingCache(Path(tempfile.mkdtemp()) / "embeddings.sqlite")
    >>> with _core.Store(tempfile.mkdtemp()).writer() as writer:
    ...     backfill(writer, cache, CacheOnly("local/x/1"), None, cache_only=True)
    (0, 0)
"""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from memlane.embed.feed import feed_closed
from memlane.errors import EmbedderMismatchError, InvalidArgumentError, MemlaneError

if TYPE_CHECKING:
    import numpy as np

    # (key, content hash, text) of a chunk, as the writer's chunk_texts gives it.
    Row = tuple[int, str, str]
    # Keys whose texts are read from the committed index, or the rows themselves.
    Arrival = np.ndarray | list[Row]
    Arrivals = queue.SimpleQueue[Arrival | BaseException | None]

    from memlane import _core
    from memlane.embed import Embedder
    from memlane.embed.batch_backfill import BatchBackfillReport
    from memlane.embed.cache import EmbeddingCache

__all__ = ["CacheOnly", "DocumentEmbedder", "Progress", "backfill", "embed_batch", "embed_chunks"]

# Chunks a batch looks up in the cache and hands to the embedder at a time.
_CHUNKS_PER_EMBED_BATCH = 256
# How often a wait for the keyword pass's next hand-over looks whether the feed was closed.
_ARRIVAL_POLL_S = 0.05
# Batches of vectors waiting to be written while the model goes on: a write waits while the
# keyword pass commits (40-270 ms on two cores), and the model should not wait with it. 32
# batches are ~24 MB of vectors, 0.8 s of a GPU at 20,000 windows/s.
_WRITES_AHEAD = 32

Progress = Callable[[str, int, int], None]
"""Progress callback: ``(stage, done, total)``; stages are ``parse`` (bytes) and ``embed`` (chunks)."""


class DocumentEmbedder(Protocol):
    """What a backfill needs of an embedder: its id (whose vectors the cache holds) and documents embedded."""

    @property
    def id(self) -> str: ...

    def embed_documents(self, texts: Sequence[str]) -> list[np.ndarray]: ...


@dataclass(frozen=True)
class CacheOnly:
    """An embedder that is only an id: a repair reads vectors from the cache and never embeds
    (into an index of as many parts as the home it rebuilds)."""

    id: str
    vector_parts: int = 1

    def embed_documents(self, texts: Sequence[str]) -> list[np.ndarray]:
        raise MemlaneError("a repair makes no embedding call")


def _record_embedder(writer: _core.Writer, embedder: DocumentEmbedder) -> None:
    """Have ``memlane.json`` name ``embedder`` (see :func:`backfill`), if it says its dimension."""
    import numpy as np

    dim: int | None = getattr(embedder, "dim", None)
    if dim is None:
        return
    nothing = np.empty(0, dtype=np.uint64)
    writer.add_vectors(embedder.id, nothing, nothing, np.empty((0, dim), dtype=np.float32), _vector_parts(embedder))


def _vector_parts(embedder: object) -> int:
    """How many graphs a vector index that ``embedder`` starts is split into: what it asks for
    (a GPU embeds faster than one graph takes windows), else one."""
    parts: int = getattr(embedder, "vector_parts", 1)
    return parts


def embed_chunks(
    cache: EmbeddingCache, rows: Sequence[tuple[int, str, str]], embedder: DocumentEmbedder, cache_only: bool = False
) -> tuple[list[int], list[np.ndarray], int]:
    """Vectors for (key, hash, text) rows: from the cache, else from the embedder (unless ``cache_only``).

    Returns:
        The keys that got vectors, their vectors, and how many rows the cache answered.
    """
    lookup = _Lookup(rows, cache.get_many(embedder.id, (h for _, h, _ in rows)), cache_only)
    fresh = embedder.embed_documents(lookup.texts()) if lookup.missing else []
    return lookup.found(cache, embedder.id, fresh)


class _Lookup:
    """One batch of rows and what the cache held of them: the texts still to embed, once per
    distinct text (identical chunks share a content hash)."""

    def __init__(
        self,
        rows: Sequence[tuple[int, str, str]],
        cached: dict[str, np.ndarray],
        cache_only: bool,
        embedding_elsewhere: frozenset[str] = frozenset(),
    ) -> None:
        self.rows = rows
        self.cached = cached
        absent = {h: text for _, h, text in rows if h not in cached}
        # Texts an earlier batch of this run is embedding: in the cache by the time this one is written.
        self.later = [h for h in absent if h in embedding_elsewhere]
        self.missing = [] if cache_only else [(h, t) for h, t in absent.items() if h not in embedding_elsewhere]
        # Rows that cost no embedding call of their own: cached, a repeat of a text in this batch, or embedded earlier.
        self.hits = len(rows) - len(absent) + len(self.later)

    def texts(self) -> list[str]:
        return [text for _, text in self.missing]

    def found(
        self,
        cache: EmbeddingCache,
        embedder_id: str,
        fresh: Sequence[np.ndarray],
        put: Callable[[str, dict[str, np.ndarray]], object] | None = None,
    ) -> tuple[list[int], list[np.ndarray], int]:
        """Store ``fresh`` (the vectors of :meth:`texts`) in the cache, with ``put`` in place of
        its ``put_many`` if given; the keys that have vectors now, their vectors, and how many
        rows the cache answered."""
        if self.missing:
            from memlane.embed.cache import as_cached

            stored, read_back = as_cached(fresh)
            hashes = [h for h, _ in self.missing]
            (put or cache.put_many)(embedder_id, dict(zip(hashes, stored)))
            self.cached.update(zip(hashes, read_back))
        if self.later:
            self.cached.update(cache.get_many(embedder_id, self.later, count=False))
        found = [(k, h) for k, h, _ in self.rows if h in self.cached]
        return [k for k, _ in found], [self.cached[h] for _, h in found], self.hits


def backfill(
    writer: _core.Writer,
    cache: EmbeddingCache,
    embedder: DocumentEmbedder,
    progress: Progress | None,
    cache_only: bool = False,
    *,
    arriving: Arrivals | None = None,
) -> tuple[int, int]:
    """Embed every chunk ``writer`` holds without a vector (see :func:`embed_chunks`).

    With an embedder that streams (``embed_stream``, as the local one does), the next batches'
    texts are read, looked up in the cache and tokenised on the embedder's feed thread while the
    model runs and this thread writes the vectors; other embedders take the batches in turn.
    Before the first is embedded, ``memlane.json`` names the embedder (unless ``cache_only``):
    a run stopped before its first vectors then leaves a home that reads as waiting for them
    (``memlane embed`` resumes), not as keyword-only. The vectors are saved as they are added,
    when ``Writer.commit_vectors`` finds enough of them to be worth rewriting the vector file
    (what an interruption loses is in the cache); the caller commits at the end.

    Args:
        arriving: The chunks to embed as another thread adds them (an index run's keyword pass,
            see :mod:`memlane.indexing`), in place of the chunks pending now: each parse batch's
            new chunks as (key, hash, text) rows, or keys still without vectors (read here from
            the committed index), then None at the pass's end, or the exception that ended it.
            One pipeline for them all, so the model does not wait out a drained pipeline at each
            hand-over. That thread commits the keyword index.

    Returns:
        Chunks given vectors, and how many of them the cache answered.
    """
    run = _Backfill(writer, cache, embedder, progress, cache_only)
    if arriving is not None:
        run.embed(_arrivals(arriving))
    elif len(pending := writer.pending_vectors()):
        run.embed([pending])
    return run.done, run.hits


def _arrivals(arriving: Arrivals) -> Iterator[Arrival]:
    """What ``arriving`` hands over, until its end. On an embedder's feed thread the wait
    also ends when the pipeline is closed, which a blocking wait would not see; on the calling
    thread Ctrl-C lands in it."""
    while not feed_closed():
        try:
            got = arriving.get(timeout=_ARRIVAL_POLL_S)
        except queue.Empty:
            continue
        if got is None:
            return
        if isinstance(got, BaseException):
            raise got
        yield got


class _Backfill:
    """The state of a backfill: what it has done, and the texts being embedded."""

    def __init__(
        self,
        writer: _core.Writer,
        cache: EmbeddingCache,
        embedder: DocumentEmbedder,
        progress: Progress | None,
        cache_only: bool,
    ) -> None:
        self.writer, self.cache, self.embedder, self.progress = writer, cache, embedder, progress
        self.cache_only = cache_only
        self.total = self.done = self.hits = 0
        self.recorded = cache_only
        self.in_flight: dict[str, int] = {}  # hash -> batches embedding it and not yet written
        self.lock = threading.Lock()  # the writer serialises its own calls (taking its mutex without the GIL)

    def embed(self, arrivals: Iterable[Arrival]) -> None:
        """Give the chunks of each arrival (keys, or rows) their vectors."""
        stream = getattr(self.embedder, "embed_stream", None)
        lookups = (lookup for chunks in arrivals if len(chunks) for lookup in self._lookups(chunks))
        embedded: Generator[tuple[_Lookup, list[np.ndarray]], None, None] = (
            stream(lookups)
            if stream and not self.cache_only
            else ((lookup, self.embedder.embed_documents(texts) if texts else []) for lookup, texts in lookups)
        )
        writes: deque[Future[object]] = deque()
        with (
            closing(embedded),
            ThreadPoolExecutor(1, thread_name_prefix="memlane-cache-writes") as cache_writes,
            ThreadPoolExecutor(1, thread_name_prefix="memlane-vector-writes") as index_writes,
        ):
            try:
                for lookup, fresh in embedded:
                    writes.append(index_writes.submit(self._write, lookup, fresh, cache_writes))
                    # A write's error ends the run at the next batch; memory stays bounded.
                    while writes and (writes[0].done() or len(writes) > _WRITES_AHEAD):
                        writes.popleft().result()
                while writes:
                    writes.popleft().result()
            finally:
                for write in writes:
                    write.cancel()

    def _lookups(self, chunks: Arrival) -> Iterator[tuple[_Lookup, list[str]]]:
        if not self.recorded:
            _record_embedder(self.writer, self.embedder)
            self.recorded = True
        self.total += len(chunks)
        for start in range(0, len(chunks), _CHUNKS_PER_EMBED_BATCH):
            part = chunks[start : start + _CHUNKS_PER_EMBED_BATCH]
            rows = part if isinstance(part, list) else self.writer.chunk_texts([int(k) for k in part])
            # In flight is read before the cache: a batch written in between is then in the cache.
            with self.lock:
                elsewhere = frozenset(h for _, h, _ in rows if h in self.in_flight)
            cached = self.cache.get_many(self.embedder.id, (h for _, h, _ in rows))
            lookup = _Lookup(rows, cached, self.cache_only, elsewhere)
            with self.lock:
                for h, _ in lookup.missing:
                    self.in_flight[h] = self.in_flight.get(h, 0) + 1
            yield lookup, lookup.texts()

    def _write(self, lookup: _Lookup, fresh: list[np.ndarray], cache_writes: ThreadPoolExecutor) -> None:
        """Add a batch's vectors to the index while ``cache_writes`` stores its fresh ones (both
        let go of the GIL: on a fast model this thread is what it waits on), on a thread of its
        own, a batch at a time in order, then report progress. The cache write ends before the
        batch's texts leave ``in_flight``: a text is always in one or the other."""
        puts: list[Future[None]] = []
        keys, vectors, batch_hits = lookup.found(
            self.cache,
            self.embedder.id,
            fresh,
            lambda *args: puts.append(cache_writes.submit(self.cache.put_many, *args)),
        )
        try:
            if keys:
                import numpy as np

                counts = np.array([v.shape[0] for v in vectors], dtype=np.uint64)
                flat = np.ascontiguousarray(np.concatenate(vectors), dtype=np.float32)
                self.writer.add_vectors(
                    self.embedder.id, np.array(keys, dtype=np.uint64), counts, flat, _vector_parts(self.embedder)
                )
                self.writer.commit_vectors()  # saves once enough are unsaved
        finally:
            for put in puts:
                put.result()
        with self.lock:
            for h, _ in lookup.missing:
                self.in_flight[h] -= 1
                if not self.in_flight[h]:
                    del self.in_flight[h]
        self.hits += batch_hits
        self.done += len(keys)
        if self.progress:
            self.progress("embed", self.done, self.total)


def embed_batch(
    store: _core.Store,
    home: Path,
    embedder: Embedder | None,
    cache: EmbeddingCache,
    s3_uri: str | None,
    role_arn: str | None,
    *,
    fill_on_demand: bool,
    progress: Progress | None,
    s3: Any,
    bedrock: Any,
    **options: Any,
) -> BatchBackfillReport:
    """A Bedrock batch-inference backfill of ``home``, started or resumed, then the index filled
    from the cache (what :meth:`memlane.Memory.embed_batch` documents)."""
    from memlane.embed.batch_backfill import BatchRun, pending_texts
    from memlane.embed.bedrock_batch import make_batch_clients

    started = time.perf_counter()
    if embedder is None or not embedder.id.startswith("bedrock/"):
        raise InvalidArgumentError(
            f"batch embedding needs a Bedrock embedder (bedrock[:dims]), not {getattr(embedder, 'id', 'none')}"
        )
    home_embedder = store.status()["embedder_id"]  # fresh from disk (meta() is per-process)
    if home_embedder and home_embedder != embedder.id:
        raise EmbedderMismatchError(
            f"{home} holds vectors of {home_embedder}; a batch of {embedder.id} cannot go in it"
        )
    if s3 is None or bedrock is None:
        built_s3, built_bedrock = make_batch_clients(embedder.region)  # type: ignore[attr-defined]
        s3, bedrock = s3 or built_s3, bedrock or built_bedrock
    start_options = {k: options.pop(k) for k in ("max_records_per_job", "min_records_per_job") if k in options}
    run = BatchRun.load(home)
    resumed = run is not None
    if run is None:
        if not s3_uri or not role_arn:
            raise InvalidArgumentError(
                "no batch run to resume in this home: give an S3 location and an IAM role to start one"
            )
        with store.writer() as writer:  # held while the pending texts stream to S3
            texts = pending_texts(writer, cache, embedder.id)
            new_run = BatchRun.start(home, embedder, s3_uri, role_arn, texts=texts, cache=cache, s3=s3, **start_options)
        run = new_run
    elif run.embedder_id != embedder.id or (s3_uri or run.s3_uri) != run.s3_uri:
        raise InvalidArgumentError(
            f"a batch run of {run.embedder_id} to {run.s3_uri} is in progress in this home: resume it with "
            f"that embedder and location, or delete {run.path} to abandon it"
        )
    report = run.wait(cache=cache, s3=s3, bedrock=bedrock, **options)
    report.resumed = resumed
    with store.writer() as writer:
        report.chunks_embedded, hits = backfill(writer, cache, embedder, progress, cache_only=not fill_on_demand)
        report.embedded_on_demand = report.chunks_embedded - hits if fill_on_demand else 0
        writer.commit()
        report.chunks_pending = len(writer.pending_vectors())
    report.seconds = time.perf_counter() - started
    return report
