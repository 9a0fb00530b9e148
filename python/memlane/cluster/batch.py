"""Bedrock batch inference for a sharded index: the bulk backfill of a cluster's vectors.

``memlane --index URI embed --batch s3://bucket/prefix --batch-role ARN --embed bedrock`` does
for a sharded index what ``memlane embed --batch`` does for one home, with the same code
(:class:`memlane.embed.batch_backfill.BatchRun`: job inputs streamed to S3, jobs submitted,
waited for, requeued when the service fails them, outputs joined by content hash):

1. **Collect** (one Ray task per shard): the texts of the shard's chunks that have no vector
   and whose content hash is neither in the shard's embedding cache nor in the index's vector
   cache; the driver keeps each distinct text once, however many shards hold it.
2. **Embed**: one batch run on the driver; the vectors land in the run's local cache.
3. **Share**: each shard's vectors go to the index's vector cache,
   ``shards/shard-0007/vectors/<pack>.sqlite`` — immutable embedding-cache files (SQLite, the
   format of every home's cache) that the fill tasks read on whatever node they run (the
   driver's cache is out of their reach) and that a later collection counts as embedded.
4. **Fill** (one Ray task per affected shard): the shard's version, its packs merged into its
   cache, gets its vectors from the cache alone (:meth:`memlane.Memory.embed_pending` with
   ``cache_only``; the task has no Bedrock client, so no online call can happen) and is
   committed as a new shard version; then one new catalog version is published (the pointer
   swap of :func:`memlane.cluster.catalog.publish`).

The run's state lives on the driver's machine (beside the index's downloaded shards): the
plan (catalog version, shard versions, which content hashes each shard waits for) and the
``BatchRun`` state file. Running the same command again resumes: finished jobs are not
submitted again, committed shard versions are not built again. Texts too few for one more job
(Bedrock's minimum) and records a job failed stay pending: a later run, or ``memlane index
… --embed bedrock`` on demand, embeds them.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from memlane.cluster import catalog as cat
from memlane.cluster.storage import Location, location
from memlane.embed.batch_backfill import BatchBackfillReport, BatchRun, pending_texts
from memlane.errors import InvalidArgumentError, InvalidDataError, MemlaneError

__all__ = [
    "CacheOnlyEmbedder",
    "ClusterBatchReport",
    "FillJob",
    "embed_index_batch",
    "fill_shard",
    "packs_dir",
    "saved_embedder",
    "shard_pending",
]

PLAN_FILE = "cluster-batch.json"
_PENDING_FILE = "pending.sqlite"
_RUN_CACHE = "vectors.sqlite"
# Hashes looked up per SQLite statement (its parameter limit is 999 on old builds).
_SLICE = 900


def packs_dir(shard: int) -> str:
    """The folder of a shard's packs in the index's vector cache."""
    return f"{cat.shard_dir(shard)}/vectors"


@dataclass
class ClusterBatchReport(BatchBackfillReport):
    """What a batch backfill of a sharded index did (the batch part as for one home).

    ``chunks_embedded`` are chunks given vectors from the cache, ``embedded_on_demand`` is
    always 0 (the shards are filled from the cache alone) and ``chunks_pending`` is what the
    filled shards still lack.
    """

    shards_filled: int = 0
    shards_resumed: int = 0
    """Shard versions an interrupted run had committed (not built again)."""
    packs: int = 0
    """Packs written to the index's vector cache."""
    generation: int | None = None
    """The catalog version published (None: no shard had anything to fill)."""


class CacheOnlyEmbedder:
    """The embedder of a shard being filled: the id, dimension and window of the Bedrock
    embedder, and no client; any call to it is a bug (the shards are filled from the cache)."""

    def __init__(self, embedder_id: str, dim: int, max_window_tokens: int) -> None:
        self.id, self.dim, self.max_window_tokens = embedder_id, dim, max_window_tokens

    def embed_documents(self, texts: Any) -> list[np.ndarray]:
        """Never called: ``embed_pending(cache_only=True)`` takes vectors from the cache only."""
        raise MemlaneError(f"a shard filled from the vector cache asked to embed {len(texts)} texts online")

    def embed_query(self, text: str) -> np.ndarray:
        """Never called: a shard being filled answers no query."""
        raise MemlaneError("a shard being filled embeds no query")


def _merge_packs(out: Location, shard: int, cache_path: Path, work: Path) -> int:
    """Merge the shard's packs from the index's vector cache into a home's cache file; rows added."""
    from memlane.embed.cache import EmbeddingCache

    EmbeddingCache(cache_path).close()  # the schema, for a shard that never had a cache
    added = 0
    db = sqlite3.connect(cache_path, isolation_level=None)
    try:
        for obj in out.list(packs_dir(shard)):
            pack = work / "packs" / obj.key.rsplit("/", 1)[-1]
            out.download(obj.key, pack)
            db.execute("ATTACH DATABASE ? AS pack", (str(pack),))
            before = db.total_changes
            db.execute("INSERT OR IGNORE INTO main.vectors SELECT * FROM pack.vectors")
            added += db.total_changes - before
            db.execute("DETACH DATABASE pack")
    finally:
        db.close()
    return added


def _materialize(out: Location, shard: int, record: dict[str, Any], work: Path) -> Path:
    home = cat.materialize(out, shard, record, work / "home")
    (home / ".complete").unlink()
    _merge_packs(out, shard, home / "cache" / "embeddings.sqlite", work)
    return home


def shard_pending(
    out_uri: str, shard: int, record: dict[str, Any], embedder_id: str
) -> tuple[int, list[tuple[str, str]]]:
    """A Ray task: the shard's chunks without a vector (a count) and the ``(content_hash, text)``
    of those whose vector neither the shard's cache nor the index's vector cache has."""
    from memlane import _core
    from memlane.embed.cache import EmbeddingCache

    work = Path(tempfile.mkdtemp(prefix=f"memlane-pending-{shard:04d}-"))
    try:
        home = _materialize(location(out_uri), shard, record, work)
        cache = EmbeddingCache(home / "cache" / "embeddings.sqlite")
        with _core.Store(str(home)).writer() as writer:
            pending = len(writer.pending_vectors())
            texts = list(pending_texts(writer, cache, embedder_id))
        cache.close()
        return pending, texts
    finally:
        shutil.rmtree(work, ignore_errors=True)


@dataclass
class FillJob:
    """One shard version to fill from the vector cache."""

    shard: int
    version: str
    out: str
    base: dict[str, Any]
    embedder: tuple[str, int, int]
    """The Bedrock embedder's id, dimension and window."""


def fill_shard(job: FillJob) -> dict[str, Any]:
    """A Ray task: give the shard's chunks the vectors the cache has and commit the result as
    version ``job.version``; returns its record. Idempotent like a shard build."""
    from memlane import _core
    from memlane.cluster.build import shard_info
    from memlane.memory import Memory

    out = location(job.out)
    done = cat.version_record(out, job.shard, job.version)
    if done is not None:
        return done
    work = Path(tempfile.mkdtemp(prefix=f"memlane-fill-{job.shard:04d}-"))
    try:
        home = _materialize(out, job.shard, job.base, work)
        mem = Memory(home, embedder=CacheOnlyEmbedder(*job.embedder), cache_dir=home / "cache")
        embedded = mem.embed_pending(cache_only=True)
        mem.close()
        with _core.Store(str(home)).writer() as writer:
            pending = len(writer.pending_vectors())
        info = shard_info(
            home, job.base.get("partitions", []), {"chunks_embedded": embedded, "chunks_pending": pending}
        )
        return cat.upload_home(home, out, job.shard, job.version, info)
    finally:
        shutil.rmtree(work, ignore_errors=True)


@dataclass
class _Plan:
    """What a run works on, saved on the driver so that the same command resumes it."""

    index: str
    generation: int
    embedder_id: str
    bases: dict[str, str]
    """Shard → the version whose pending chunks were collected."""
    pending: dict[str, int] = field(default_factory=dict)
    """Shard → chunks without a vector when collected."""
    needed: dict[str, int] = field(default_factory=dict)
    """Shard → of those, distinct texts no cache had (the rest are filled from the caches)."""
    started: bool = False
    """The batch run is saved (its jobs prepared): from here on it is resumed, not redone."""
    batch: dict[str, Any] = field(default_factory=dict)
    """The batch part of the report, once every job was read."""

    def save(self, folder: Path) -> None:
        tmp = folder / f".{PLAN_FILE}.tmp"
        tmp.write_text(json.dumps(asdict(self)), encoding="utf-8")
        os.replace(tmp, folder / PLAN_FILE)

    @classmethod
    def load(cls, folder: Path) -> _Plan | None:
        try:
            return cls(**json.loads((folder / PLAN_FILE).read_text(encoding="utf-8")))
        except FileNotFoundError:
            return None
        except (OSError, ValueError, TypeError) as exc:
            raise InvalidDataError(
                f"{folder / PLAN_FILE}: unreadable batch plan ({exc}); delete {folder} to abandon the run"
            ) from None


def saved_embedder(folder: Path) -> str | None:
    """The embedder id of the run saved in ``folder`` (None: no run)."""
    plan = _Plan.load(folder)
    return plan.embedder_id if plan is not None else None


def _wanted(folder: Path) -> sqlite3.Connection:
    """Which content hashes each shard waits for, on disk: a backfill's hashes outgrow memory."""
    db = sqlite3.connect(folder / _PENDING_FILE, isolation_level=None)
    db.execute(
        "CREATE TABLE IF NOT EXISTS wanted (shard INTEGER NOT NULL, hash TEXT NOT NULL, PRIMARY KEY (shard, hash)) WITHOUT ROWID"
    )
    db.execute("CREATE INDEX IF NOT EXISTS wanted_hash ON wanted (hash)")
    return db


def _collect(
    ray: Any, out: Location, catalog: cat.Catalog, plan: _Plan, folder: Path, cache: Any
) -> Iterator[tuple[str, str]]:
    """Every shard's pending texts (one Ray task a shard), recorded in ``plan`` and on disk;
    yields each distinct text to embed once, one shard at a time (a shard's texts in memory,
    not the index's)."""
    task = ray.remote(shard_pending).options(num_cpus=1, max_retries=5, retry_exceptions=False)
    refs = [(s, task.remote(out.uri, s.shard, cat.version_record(out, s.shard, s.version), plan.embedder_id))
            for s in catalog.shards if s.version]  # fmt: skip
    (folder / _PENDING_FILE).unlink(missing_ok=True)
    db = _wanted(folder)
    try:
        while refs:
            ref_shard, ref = refs.pop(0)
            pending, found = ray.get(ref)
            del ref  # its texts leave the object store
            if not pending:
                continue
            plan.bases[str(ref_shard.shard)] = str(ref_shard.version)
            plan.pending[str(ref_shard.shard)] = pending
            plan.needed[str(ref_shard.shard)] = len(found)
            for start in range(0, len(found), _SLICE):
                part = dict(found[start : start + _SLICE])
                marks = ",".join("?" * len(part))
                # Another shard's text already yielded, or one an earlier run read into the run's cache.
                skip = {h for (h,) in db.execute(f"SELECT hash FROM wanted WHERE hash IN ({marks})", list(part))}
                skip |= cache.known(plan.embedder_id, part)
                db.executemany("INSERT OR IGNORE INTO wanted VALUES (?, ?)", [(ref_shard.shard, h) for h in part])
                yield from ((h, t) for h, t in part.items() if h not in skip)
    finally:
        db.close()


def _share(out: Location, folder: Path, embedder_id: str, cache: Any) -> dict[int, str]:
    """Each shard's vectors from the run's cache into the index's vector cache; shard → pack written."""
    from memlane.embed.cache import EmbeddingCache

    db = _wanted(folder)
    packs: dict[int, str] = {}
    try:
        for (shard,) in db.execute("SELECT DISTINCT shard FROM wanted").fetchall():
            hashes = [h for (h,) in db.execute("SELECT hash FROM wanted WHERE shard = ?", (shard,))]
            vectors = cache.get_many(embedder_id, hashes, count=False)
            if not vectors:
                continue
            # Named by what it holds: a resumed run writes the same pack again, not a second one.
            name = hashlib.sha256(json.dumps([embedder_id, sorted(vectors)]).encode()).hexdigest()[:24]
            with tempfile.TemporaryDirectory(prefix="memlane-pack-") as tmp:
                pack = EmbeddingCache(Path(tmp) / "pack.sqlite")
                pack.put_many(embedder_id, vectors)
                pack.close()  # the last connection folds the WAL into the file
                out.upload(Path(tmp) / "pack.sqlite", f"{packs_dir(shard)}/{name}.sqlite")
            packs[shard] = name
    finally:
        db.close()
    return packs


def _fill_version(shard: int, base: str, embedder_id: str, pack: str | None) -> str:
    """A filled shard version's id: a hash of what decides its content."""
    what = json.dumps(["embed-batch", shard, base, embedder_id, pack], separators=(",", ":"))
    return hashlib.sha256(what.encode()).hexdigest()[:20]


def embed_index_batch(
    uri: str,
    s3_uri: str | None = None,
    role_arn: str | None = None,
    *,
    embedder: Any,
    ray_address: str = "local",
    state_dir: str | os.PathLike[str] | None = None,
    s3: Any = None,
    bedrock: Any = None,
    progress: Any = None,
    **options: Any,
) -> ClusterBatchReport:
    """Embed every chunk of a sharded index that has no vector through Bedrock batch inference.

    Args:
        uri: The index (``s3://…`` or a shared folder) ``memlane index --ray`` built.
        s3_uri: ``s3://bucket/prefix`` for the jobs' inputs and outputs (needed to start a run).
        role_arn: IAM service role Bedrock assumes to read and write there (same).
        embedder: The :class:`~memlane.embed.bedrock.BedrockEmbedder` whose vectors the jobs
            make (its id, dimension and normalisation; it makes no call itself).
        ray_address: ``local``, ``auto`` or a cluster address.
        state_dir: Where the run is saved (default: beside the index's shards on this machine).
        s3: S3 client for the job files (default: built for the embedder's region).
        bedrock: ``bedrock`` control-plane client (same).
        progress: Optional ``(stage, done, total)``; stage ``shards`` as filled shards commit.
        **options: As :meth:`memlane.Memory.embed_batch`: ``poll_seconds``, ``timeout_seconds``,
            ``max_concurrent_jobs``, ``sleep``, ``on_status``, ``max_records_per_job``,
            ``min_records_per_job``; and ``ray_init`` (a dict for ``ray.init``).

    Returns:
        What was done.

    Raises:
        FileNotFoundError: No index at ``uri``.
        memlane.errors.InvalidArgumentError: Not a Bedrock embedder; no run to resume and no
            ``s3_uri``/``role_arn``.
        memlane.errors.InvalidDataError: The run's saved plan is unreadable, or the catalog
            changed while the run waited (run the command again).
        EmbedderMismatchError: The index holds another embedder's vectors.
        BatchJobError: A job failed (resubmitted on the next run) or timed out.

    Example, on a Ray cluster with AWS credentials::

        from memlane.embed import make_embedder
        report = embed_index_batch(
            "s3://team-memory/index/", "s3://team-memory/batch", "arn:aws:iam::123456789012:role/BedrockBatch",
            embedder=make_embedder("bedrock:1024"), ray_address="auto")
        report.chunks_embedded, report.chunks_pending, report.generation
        # (224812, 188, 7)
    """
    from memlane.cluster.index import init_ray, shard_ref
    from memlane.cluster.search import local_root
    from memlane.embed.bedrock_batch import make_batch_clients
    from memlane.embed.cache import EmbeddingCache
    from memlane.errors import CorruptIndexError, EmbedderMismatchError

    started = time.perf_counter()
    out = location(uri)
    catalog = cat.load(out)
    if catalog is None:
        raise FileNotFoundError(
            f"no memlane index at {uri}: `memlane index SOURCES --ray local --out {uri}` builds one"
        )
    if not str(getattr(embedder, "id", "")).startswith("bedrock/"):
        raise InvalidArgumentError(
            f"batch embedding needs a Bedrock embedder (bedrock[:dims]), not {getattr(embedder, 'id', 'none')}"
        )
    if catalog.embedder_id and catalog.embedder_id != embedder.id:
        raise EmbedderMismatchError(
            f"{out.uri} holds vectors of {catalog.embedder_id}; a batch of {embedder.id} cannot go in it"
        )
    folder = Path(state_dir) if state_dir else local_root(out.uri) / "batch"
    folder.mkdir(parents=True, exist_ok=True)
    start_options = {k: options.pop(k) for k in ("max_records_per_job", "min_records_per_job") if k in options}
    ray_init = options.pop("ray_init", {})
    plan = _Plan.load(folder)
    if plan is not None and (plan.index, plan.embedder_id) != (out.uri, embedder.id):
        raise InvalidArgumentError(
            f"{folder} holds a batch run of {plan.embedder_id} for {plan.index}: resume it there, or delete {folder} to abandon it"
        )
    report = ClusterBatchReport(resumed=plan is not None and plan.started)
    cache = EmbeddingCache(folder / _RUN_CACHE)
    try:
        start: tuple[str, str] | None = None  # the S3 location and IAM role of a new run
        if plan is None or not plan.started:  # nothing saved, or saved before its jobs were
            if not (s3_uri and role_arn):
                raise InvalidArgumentError(
                    "no batch run to resume for this index: give an S3 location (--batch) and an IAM role (--batch-role) to start one"
                )
            plan, start = _Plan(out.uri, catalog.generation, embedder.id, bases={}), (s3_uri, role_arn)
        ray = init_ray(ray_address, **ray_init)
        if s3 is None or bedrock is None:
            built_s3, built_bedrock = make_batch_clients(embedder.region)
            s3, bedrock = s3 or built_s3, bedrock or built_bedrock
        if start is not None:
            texts = _collect(ray, out, catalog, plan, folder, cache)
            BatchRun.start(folder, embedder, *start, texts=texts, cache=cache, s3=s3, **start_options)
            plan.started = True  # saved after the run's jobs: an interruption before collects again
            plan.save(folder)
        run = BatchRun.load(folder)  # None once every job was read
        if run is not None:
            batch = run.wait(cache=cache, s3=s3, bedrock=bedrock, **options)
            plan.batch = {
                k: v
                for k, v in asdict(batch).items()
                if k in ("jobs", "records", "embedded", "failed", "leftover", "input_tokens")
            }
            plan.save(folder)
        for name, value in plan.batch.items():
            setattr(report, name, value)
        packs = _share(out, folder, embedder.id, cache)
        report.packs = len(packs)
        # A shard gains vectors from this run's pack, or from hits in the caches it had.
        fills = {int(n): _fill_version(int(n), base, embedder.id, packs.get(int(n))) for n, base in plan.bases.items()
                 if int(n) in packs or plan.pending[n] > plan.needed.get(n, 0)}  # fmt: skip
        if catalog.generation != plan.generation:
            if fills and all(s.version == fills.get(s.shard, s.version) for s in catalog.shards):
                report.generation = catalog.generation  # the driver died after publishing: done
                fills = {}
            else:
                # Collected from another catalog version: the vectors are shared now, and a new
                # collection from the current version finds them there.
                (folder / PLAN_FILE).unlink()
                raise InvalidDataError(
                    f"{out.uri} changed while the batch ran (catalog version {catalog.generation}, the run "
                    f"started on {plan.generation}): run the command again to fill the new version from the cache"
                )

        task = ray.remote(fill_shard).options(num_cpus=1, max_retries=5, retry_exceptions=False)
        described = (embedder.id, int(embedder.dim), int(embedder.max_window_tokens))
        refs = {}
        for n, version in sorted(fills.items()):
            if cat.version_record(out, n, version) is not None:
                report.shards_resumed += 1
            base = cat.version_record(out, n, plan.bases[str(n)])
            if base is None:
                raise CorruptIndexError(f"{out.uri}: shard {n} has no record of its version {plan.bases[str(n)]}")
            refs[task.remote(FillJob(n, version, out.uri, base, described))] = n
        records: dict[int, dict[str, Any]] = {}
        for ref, shard in refs.items():
            records[shard] = ray.get(ref)
            if progress:
                progress("shards", len(records), len(refs))
        for record in records.values():
            report.chunks_embedded += record["report"]["chunks_embedded"]
            report.chunks_pending += record["report"]["chunks_pending"]
        report.shards_filled = len(records) - report.shards_resumed

        if records:
            current = cat.load(out)
            if current is None or current.generation != plan.generation:
                (folder / PLAN_FILE).unlink()
                raise InvalidDataError(f"{out.uri} changed while its shards were filled: run the command again")
            current.shards = [shard_ref(s.shard, records[s.shard]) if s.shard in records else s for s in current.shards]
            current.generation += 1
            current.embedder_id, current.dim, current.created = embedder.id, embedder.dim, ""
            cat.publish(out, current)
            report.generation = current.generation
    finally:
        cache.close()
    # Done: the run's files go (only its own: the folder may be the caller's).
    for name in (PLAN_FILE, _PENDING_FILE, _RUN_CACHE, f"{_RUN_CACHE}-wal", f"{_RUN_CACHE}-shm"):
        (folder / name).unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        folder.rmdir()
    report.seconds = time.perf_counter() - started
    return report
