"""What runs on the Ray workers: staging source objects, building one shard, embedding.

A shard is built by one task (one writer per shard): it lays out the shard's previous
version as a home, drops the sources that went or changed, stages the new and changed
objects on local disk (streamed; ``.gz`` decompressed on the way, ``.zst`` read by the core),
indexes them with :meth:`memlane.Memory.index` — the single machine's parsing, chunking and
embedding, nothing re-implemented — and uploads the result as a new immutable version.

Embedding runs in a pool of actors (:class:`EmbedWorker`), so a model is loaded once per
actor, not once per shard; the shard's ``Memory`` sees them as one embedder
(:class:`PoolEmbedder`) and still takes every vector it can from the shard's embedding cache,
which travels with the shard (``cache/embeddings.sqlite`` in every version).
"""

from __future__ import annotations

import gzip
import shutil
import tempfile
import time
from collections.abc import Generator, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from memlane import _core
from memlane.cluster import catalog as cat
from memlane.cluster.storage import location
from memlane.errors import InvalidArgumentError, MemlaneError
from memlane.memory import DEFAULT_QUANTIZATION

__all__ = [
    "EmbedWorker",
    "PoolEmbedder",
    "RateLimiter",
    "ShardJob",
    "build_shard",
    "local_spec",
    "may_be_bedrock",
    "shard_info",
    "stage_path",
]

# Texts per call to an embedding actor: large enough to batch well on a CPU, small enough to
# spread one shard's backlog over every actor.
_EMBED_BATCH = 32
# A shard's backfill calls in flight at once: one with the actors while the shard writes the last.
_CALLS_IN_FLIGHT = 2
T = TypeVar("T")


@dataclass
class ShardJob:
    """What one shard task builds."""

    shard: int
    version: str
    out: str
    stage_root: str
    base: dict[str, Any] | None = None
    """The record of the version it starts from (None: an empty shard)."""
    index: list[str] = field(default_factory=list)
    """Source URIs to read (new or changed)."""
    remove: list[str] = field(default_factory=list)
    """Source URIs whose chunks go (deleted, changed, or now a duplicate)."""
    partitions: list[str] = field(default_factory=list)
    quantization: str = DEFAULT_QUANTIZATION
    """Vector storage of a new shard home (a shard version keeps its base's)."""


def stage_path(stage_root: str, uri: str) -> Path:
    """Where a worker puts a source object: ``<stage>/s3/<bucket>/<key>`` (``.gz`` off).

    The path is the same on every worker, so a shard's manifest names a source the same way
    whichever worker indexed it, and a later run can drop it by that name. Local files are
    read in place unless gzipped.
    """
    if uri.startswith("s3://"):
        path = Path(stage_root) / "s3" / uri.removeprefix("s3://")
    elif uri.endswith(".gz"):
        path = Path(stage_root) / "local" / uri.lstrip("/")
    else:
        return Path(uri)
    return path.with_name(path.name.removesuffix(".gz"))


def _stage(uri: str, dest: Path) -> None:
    """Copy a source object to ``dest``, streamed, decompressing ``.gz``."""
    if not uri.startswith("s3://") and not uri.endswith(".gz"):
        return
    parent, _, name = uri.rpartition("/")
    src = location(parent)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.part")
    with src.open_read(name) as raw, open(tmp, "wb") as out:
        stream = gzip.GzipFile(fileobj=raw) if uri.endswith(".gz") else raw
        shutil.copyfileobj(stream, out, 1 << 20)
    tmp.replace(dest)


def build_shard(job: ShardJob, embedder: Any = "none") -> dict[str, Any]:
    """Build one shard version and commit it; returns its record.

    Idempotent: a retry (after the worker died) starts again from the base version and
    overwrites whatever the failed attempt uploaded; the record is written last.
    """
    from memlane.memory import IndexReport, Memory

    cpu = time.process_time()
    if isinstance(embedder, PoolEmbedder):
        embedder.next = job.shard
    out = location(job.out)
    done = cat.version_record(out, job.shard, job.version)
    if done is not None:  # a retry after the commit, or another driver's identical build
        return done
    work = Path(tempfile.mkdtemp(prefix=f"memlane-shard-{job.shard:04d}-"))
    staged: list[Path] = []
    try:
        home = work / "home"
        if job.base is not None:
            cat.materialize(out, job.shard, job.base, home)
            (home / ".complete").unlink()
        mem = Memory(home, embedder=embedder, quantization=job.quantization, cache_dir=home / "cache")
        removed = mem.remove_sources([str(stage_path(job.stage_root, u)) for u in job.remove]) if job.remove else 0
        for uri in job.index:
            path = stage_path(job.stage_root, uri)
            _stage(uri, path)
            if path != Path(uri):
                staged.append(path)
        embed = embedder != "none"
        report = (
            mem.index([str(stage_path(job.stage_root, u)) for u in job.index], embed=embed)
            if job.index
            else IndexReport()
        )
        mem.close()
        info = shard_info(home, job.partitions, {
            "files_indexed": report.files_indexed,
            "bytes_parsed": report.bytes_parsed,
            "chunks_added": report.chunks_added,
            "chunks_removed": report.chunks_removed + removed,
            "chunks_embedded": report.chunks_embedded,
            "embed_cache_hits": report.embed_cache_hits,
            "records_skipped": report.records_skipped,
            "seconds": report.seconds,
        })  # fmt: skip
        info["cpu_seconds"] = time.process_time() - cpu  # the build's own, upload excluded
        return cat.upload_home(home, out, job.shard, job.version, info)
    finally:
        for path in staged:
            path.unlink(missing_ok=True)
        shutil.rmtree(work, ignore_errors=True)


def shard_info(home: Path, partitions: Sequence[str], report: dict[str, Any]) -> dict[str, Any]:
    """What a shard version's record says of the home beside its files: the core's own counts
    (Memory.status would also load the embedding backends' modules) and the build's report."""
    store = _core.Store(str(home))
    status, summary = store.status(), store.summary()
    return {
        "chunks": status["chunks"],
        "source_files": status["files"],
        "sessions": status["sessions"],
        "embedder_id": status["embedder_id"],
        "dim": status["dim"],
        "docs": summary["docs"],
        "tokens": summary["tokens"],
        "ts_min": summary["ts_min"],
        "ts_max": summary["ts_max"],
        "sources": summary["sources"],
        "session_ids": summary["sessions"],
        # Project key → chunks: a project-scoped query skips the shards without it.
        "projects": dict(store.projects()),
        "partitions": sorted(partitions),
        "report": report,
    }


class RateLimiter:
    """A cluster-wide request budget (one Ray actor): Bedrock's request quota is per account,
    not per worker, so every embedding actor draws from this one token bucket.

    The bucket lends: :meth:`acquire` takes the tokens at once and returns how long the
    caller must wait before sending, so a batch larger than the bucket still goes, at the
    configured rate, and the actor never blocks on a sleep. :meth:`throttled` is the
    cluster-wide backoff: Bedrock refused a request somewhere, so everyone slows down
    (the rate halves, then creeps back up with every request that goes through).

    Example:
        >>> now = [0.0]
        >>> limiter = RateLimiter(10, clock=lambda: now[0])
        >>> limiter.acquire(10), limiter.acquire(5)  # a second's burst, then half a second's debt
        (0.0, 0.5)
        >>> limiter.throttled(); limiter.rate
        5.0
    """

    # A throttle halves the rate, never below this share of the configured one; each request
    # that goes through gives back this share of it (additive increase, multiplicative decrease).
    FLOOR = 1 / 16
    RECOVERY = 0.002

    def __init__(self, per_second: float, clock: Any = time.monotonic) -> None:
        if per_second <= 0:
            raise InvalidArgumentError(f"the request rate must be positive, got {per_second}")
        self.max_rate = self.rate = float(per_second)
        self.tokens = self.rate  # a second's burst
        self.clock = clock
        self.last = clock()
        self.granted = 0
        self.throttles = 0

    def acquire(self, n: int = 1) -> float:
        """Take ``n`` requests from the budget; returns the seconds to wait before sending them."""
        now = self.clock()
        self.tokens = min(self.rate, self.tokens + (now - self.last) * self.rate)
        self.last = now
        self.tokens -= n
        self.granted += n
        wait = max(0.0, -self.tokens / self.rate)
        self.rate = min(self.max_rate, self.rate + n * self.RECOVERY * self.max_rate)
        return wait

    def throttled(self) -> None:
        """Bedrock throttled a request: halve the cluster's rate."""
        self.throttles += 1
        self.rate = max(self.max_rate * self.FLOOR, self.rate / 2)

    def stats(self) -> dict[str, float]:
        """Requests granted, throttles reported, and the rate now (requests per second)."""
        return {"granted": self.granted, "throttles": self.throttles, "rate": self.rate}


def may_be_bedrock(spec: Any) -> bool:
    """Whether an embedder spec could name Bedrock (then its actors share a :class:`RateLimiter`)."""
    if isinstance(spec, str):
        return spec.startswith("bedrock")
    return str(getattr(spec, "id", "bedrock/")).startswith("bedrock/")  # a factory: not known yet


def _gpu_ids() -> list[Any]:
    """The GPUs Ray assigned to this worker (none outside Ray)."""
    import ray

    return list(ray.get_gpu_ids()) if ray.is_initialized() else []


def local_spec(spec: str, index_embedder_id: str | None, gpu: bool) -> str:
    """The local embedder spec embedding actors run: plain ``local`` means the graph of the
    vectors the index holds, and on GPU actors of a new index the fp32 graph, as for one home
    (:func:`memlane.embed.spec_for_home` says why q8 stays on CPUs).

    Example:
        >>> local_spec("local", None, gpu=True), local_spec("local", None, gpu=False)
        ('local:fp32', 'local')
        >>> local_spec("local", "local/all-MiniLM-L6-v2/q8/384", gpu=True)
        'local'
    """
    from memlane.embed import spec_for_home

    return spec_for_home(spec, index_embedder_id, gpu=gpu)


class EmbedWorker:
    """One embedding actor: an embedder loaded once, fed batches of texts.

    ``spec`` is an embedder spec (``local``, ``bedrock:512`` …; ``options`` go to
    :func:`memlane.embed.make_embedder`), an embedder object (pickled to the actor) or a
    zero-argument callable that builds one in the actor (for an embedder whose client cannot
    be pickled, e.g. Bedrock on a session of its own). Local ONNX actors
    run with a fixed number of threads so that several share a node's cores without
    oversubscribing them; an actor Ray gave a GPU runs onnxruntime's CUDA provider. A Bedrock
    embedder asks ``limiter`` (a :class:`RateLimiter` actor) before each batch and reports the
    batches Bedrock throttled.
    """

    def __init__(
        self, spec: Any, threads: int | None = None, limiter: Any = None, options: dict[str, Any] | None = None
    ) -> None:
        # An Embedder; a Bedrock one, the only kind a limiter paces, also counts its retries in ``usage``.
        self.embedder: Any
        if isinstance(spec, str):
            from memlane.embed import make_embedder

            kw: dict[str, Any] = {}
            if spec.startswith("local"):
                kw = {"threads": threads} if threads else {}
                if _gpu_ids():  # Ray gave this actor a GPU (num_gpus=1)
                    kw["device"] = "gpu"
            self.embedder = make_embedder(spec, **kw, **(options or {}))
        elif hasattr(spec, "embed_documents"):
            self.embedder = spec
        else:
            self.embedder = spec()
        self.limiter = limiter if str(self.embedder.id).startswith("bedrock/") else None

    def describe(self) -> tuple[str, int, int]:
        """The embedder's id (which vector space it writes), dimension and window size."""
        return str(self.embedder.id), int(self.embedder.dim), int(self.embedder.max_window_tokens)

    def embed(self, texts: list[str]) -> list[np.ndarray]:
        """Window vectors of each text."""
        vectors: list[np.ndarray]
        if self.limiter is None:
            vectors = self.embedder.embed_documents(texts)
            return vectors
        import ray

        time.sleep(ray.get(self.limiter.acquire.remote(len(texts))))  # one request per text
        retries = self.embedder.usage.retries
        vectors = self.embedder.embed_documents(texts)
        if self.embedder.usage.retries > retries:
            self.limiter.throttled.remote()
        return vectors

    def usage(self) -> dict[str, Any]:
        """What this actor's embedder spent (Bedrock: tokens, requests, cost estimate); empty otherwise."""
        usage = getattr(self.embedder, "usage", None)
        return {} if usage is None else usage.to_dict()


class PoolEmbedder:
    """The embedder a shard's ``Memory`` uses: it spreads texts over the embedding actors.

    Only documents: a shard build never embeds a query.
    """

    def __init__(self, actors: Sequence[Any], described: tuple[str, int, int]) -> None:
        self.actors = list(actors)
        self.id, self.dim, self.max_window_tokens = described
        self.next = 0

    def embed_documents(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Window vectors of each text, in order (batches go to the actors round robin)."""
        import ray

        # Texts of like length go together: a model pads each batch to its longest window, so
        # batches cut in arrival order cost Ray noticeably more CPU than one process (which
        # sorts the texts of a call at once) spends on the same texts.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        batches = [[texts[i] for i in order[b : b + _EMBED_BATCH]] for b in range(0, len(order), _EMBED_BATCH)]
        # Each call starts where the last one stopped, so calls of one batch do not all
        # land on the first actor; shards start at different actors (see build_shard). Two calls
        # of embed_stream may read the same start: only the spread over the actors changes.
        first, self.next = self.next, self.next + len(batches)
        refs = [self.actors[(first + i) % len(self.actors)].embed.remote(b) for i, b in enumerate(batches)]
        out: list[np.ndarray] = [np.empty(0)] * len(texts)
        for i, vectors in zip(order, (v for part in ray.get(refs) for v in part)):
            out[i] = vectors
        return out

    def embed_stream(
        self, items: Iterable[tuple[T, Sequence[str]]]
    ) -> Generator[tuple[T, list[np.ndarray]], None, None]:
        """:meth:`embed_documents` of every ``(tag, texts)`` of ``items``, in order, as
        ``(tag, vectors)``; the next calls' batches are with the actors while the shard writes
        the last call's vectors, so the actors do not wait on the shard's writes (see
        :mod:`memlane.embed.feed`). Close the iterator when not reading it to the end."""
        from memlane.embed.feed import Prepared, run_ahead

        def prepare(texts: Sequence[str]) -> Prepared[list[np.ndarray]]:
            out: list[list[np.ndarray]] = []
            return Prepared([lambda: out.append(self.embed_documents(texts))], lambda: out[0])

        return run_ahead(items, prepare, workers=_CALLS_IN_FLIGHT)

    def embed_query(self, text: str) -> np.ndarray:
        raise MemlaneError("a shard build embeds documents only")
