"""Distributed indexing on Ray: list the sources, diff them against the catalog, build the
shards that changed (one Ray task each), publish a new catalog version.

The driver (the process that runs ``memlane index … --ray``) lists sources with the S3
paginator (or walks a folder), maps each object to a shard by a stable hash of its key
(:class:`memlane.cluster.catalog.Partition`), and compares ETags with the catalog: only new,
changed and deleted objects make work. An object identical to another (same ETag and size:
the same export uploaded twice) is indexed once. Each shard with work becomes one
:func:`memlane.cluster.build.build_shard` task; Ray retries a task whose worker dies, and a
task that finds its version already committed returns it, so running the same command after
the driver itself died resumes without building committed shards again. With nothing
changed the driver lists, diffs and exits without publishing.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from memlane import _check, _core
from memlane.cluster import catalog as cat
from memlane.cluster.build import (
    EmbedWorker,
    PoolEmbedder,
    RateLimiter,
    ShardJob,
    build_shard,
    local_spec,
    may_be_bedrock,
)
from memlane.cluster.storage import location
from memlane.errors import InvalidArgumentError
from memlane.memory import DEFAULT_QUANTIZATION, QUANTIZATIONS
from memlane.report import Report

__all__ = ["ClusterReport", "index_sources", "init_ray", "shard_ref"]

Progress = Callable[[str, int, int], None]

# Bumped when what a shard build produces from the same inputs changes (then every shard
# is built again rather than mixed with versions of the old kind).
_BUILD_FORMAT = 1
_DEFAULT_STAGE = "/tmp/memlane-stage"


@dataclass
class ClusterReport(Report):
    """What a distributed index run did."""

    files_seen: int = 0
    files_indexed: int = 0
    files_removed: int = 0
    files_unchanged: int = 0
    duplicates: int = 0
    """Objects identical to another one (same ETag and size), indexed once."""
    shards: int = 0
    shards_built: int = 0
    shards_resumed: int = 0
    """Shard versions a previous, interrupted run had committed (not built again)."""
    chunks_added: int = 0
    chunks_removed: int = 0
    chunks_embedded: int = 0
    bytes_parsed: int = 0
    records_skipped: dict[str, int] = field(default_factory=dict)
    chunks: int = 0
    """Chunks in the index after the run."""
    generation: int | None = None
    """The catalog version published (None: nothing changed, nothing published)."""
    embedder_id: str | None = None
    embed_usage: dict[str, Any] = field(default_factory=dict)
    """Bedrock: tokens, requests, retries and the cost estimate over the embedding actors
    (an actor restarted by Ray starts its count again), and the rate limiter's counts."""
    list_seconds: float = 0.0
    seconds: float = 0.0


def init_ray(address: str, **kwargs: Any) -> Any:
    """Connect to Ray: ``local`` starts a cluster in this process, ``auto`` joins the one
    ``ray start`` made on this machine, anything else is a cluster address. An already
    connected process keeps its connection."""
    try:
        import ray
    except ImportError:
        raise ImportError("--ray needs Ray: pip install 'memlane[ray]'") from None
    if not ray.is_initialized():
        quiet: dict[str, Any] = {"log_to_driver": False, "include_dashboard": False, "configure_logging": False}
        if address == "local":
            ray.init(**quiet, **kwargs)
        else:
            ray.init(address=address, log_to_driver=False, configure_logging=False)
    return ray


def shard_ref(shard: int, record: dict[str, Any]) -> cat.ShardRef:
    """The catalog's entry for a committed shard version."""
    return cat.ShardRef(
        shard, record["version"], chunks=record["chunks"], files=record["source_files"], sessions=record["sessions"],
        docs=record["docs"], tokens=record["tokens"], bytes=sum(f["size"] for f in record["files"].values()),
        ts_min=record["ts_min"], ts_max=record["ts_max"], sources=record["sources"], partitions=record["partitions"],
    )  # fmt: skip


def _version_id(
    shard: int, base: str | None, index: list[tuple[str, str]], remove: list[str], embedder: str | None
) -> str:
    """A shard version's id: a hash of everything that decides its content."""
    what = json.dumps([_BUILD_FORMAT, shard, base, sorted(index), sorted(remove), embedder], separators=(",", ":"))
    return hashlib.sha256(what.encode()).hexdigest()[:20]


def _is_source(key: str, format: str | None) -> bool:
    name = key.removesuffix(".gz")
    return _core.is_candidate(name, format) and not any(part.startswith(".") for part in key.split("/"))


def _listing(roots: Sequence[str], format: str | None) -> dict[str, tuple[str, int, str, str]]:
    """Every source object under ``roots``: URI → (etag, size, root, key under the root)."""
    found: dict[str, tuple[str, int, str, str]] = {}
    for root in roots:
        loc = location(root)
        for obj in loc.list():
            if _is_source(obj.key, format):
                found[loc.uri_of(obj.key)] = (obj.etag, obj.size, loc.uri, obj.key)
    return found


def _embedding(
    ray: Any,
    embed: Any,
    embed_options: dict[str, Any] | None,
    actors: int | None,
    threads: int,
    requests_per_second: float | None,
    index_embedder_id: str | None = None,
) -> tuple[list[Any], tuple[str, int, int] | None, Any, Any]:
    """The embedding actors, what they write (embedder id, dimension, window; None for
    keyword-only), the Bedrock rate limiter they share (None when not Bedrock) and the placement
    group that holds their cores (None when they hold none): remove it once they are killed."""
    if embed == "none" or embed is None:
        return [], None, None, None
    resources = ray.cluster_resources()
    gpus = int(resources.get("GPU", 0))
    if isinstance(embed, str) and embed.startswith("local"):
        embed = local_spec(embed, index_embedder_id, gpu=bool(gpus))
    limiter = None
    if may_be_bedrock(embed):
        limiter = (
            ray.remote(RateLimiter)
            .options(num_cpus=0, max_restarts=-1, max_task_retries=-1)
            .remote(requests_per_second or 20.0)
        )
    options: dict[str, Any] = {"max_restarts": -1, "max_task_retries": -1}
    if gpus and isinstance(embed, str) and embed.startswith("local"):
        # One actor per GPU; each runs onnxruntime's CUDA provider (EmbedWorker).
        options["num_gpus"], count = 1, gpus
    elif isinstance(embed, str) and embed.startswith("bedrock"):
        options["num_cpus"], count = 0, actors or 4  # network-bound: no core each
    else:
        cpus = int(resources.get("CPU", 2))
        # Embedding is the work (a shard task parses ~1,000 times faster than a core embeds and
        # then waits for its vectors), so the actors get every core. Actors holding every core
        # would starve the shard tasks they serve: then they hold none, spread over the nodes.
        count = actors or max(1, cpus // threads)
        options["num_cpus"] = threads if count * threads < cpus else 0
        options["scheduling_strategy"] = "SPREAD"
    actor = ray.remote(EmbedWorker)
    reserved = None
    if options.get("num_cpus"):
        # The actors' cores are held in a placement group, so that an actor that dies gets its
        # own back when Ray restarts it. Back in the common pool, a core it freed went to a shard
        # task queued meanwhile, which then waited for the actor that had no core left to start
        # on: a hang on 2 cores (tests/test_cluster.py kills an actor mid-run).
        from ray.util.placement_group import placement_group
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        reserved = placement_group([{"CPU": options["num_cpus"]}] * count, strategy="SPREAD")
        ray.get(reserved.ready())
        bundles = [PlacementGroupSchedulingStrategy(reserved, placement_group_bundle_index=i) for i in range(count)]
        placed = [actor.options(**{**options, "scheduling_strategy": bundle}) for bundle in bundles]
    else:
        placed = [actor.options(**options)] * count
    pool = [p.remote(embed, threads, limiter, embed_options) for p in placed]
    described = ray.get(pool[0].describe.remote())
    if limiter is not None and not described[0].startswith("bedrock/"):
        ray.kill(limiter)
        limiter = None
    return pool, described, limiter, reserved


def _usage(ray: Any, actors: list[Any], limiter: Any) -> dict[str, Any]:
    """What the embedding actors spent (Bedrock's tokens, requests, retries, cost estimate)
    and the rate limiter's counts; empty for a local embedder."""
    total: dict[str, Any] = {}
    for part in ray.get([a.usage.remote() for a in actors]):
        for name, value in part.items():
            if name != "price_per_1k_tokens_usd":
                total[name] = total.get(name, 0) + value
    if limiter is not None:
        total.update({f"limiter_{k}": v for k, v in ray.get(limiter.stats.remote()).items()})
    return total


def index_sources(
    sources: Sequence[str],
    out: str,
    *,
    shards: int | None = None,
    partition_depth: int | None = None,
    embed: Any = "none",
    embed_options: dict[str, Any] | None = None,
    ray_address: str = "local",
    embed_actors: int | None = None,
    embed_threads: int = 1,
    requests_per_second: float | None = None,
    format: str | None = None,
    quantization: str = DEFAULT_QUANTIZATION,
    stage_root: str | None = None,
    progress: Progress | None = None,
    **ray_init: Any,
) -> ClusterReport:
    """Index S3 prefixes or folders into a sharded index at ``out`` on a Ray cluster.

    Args:
        sources: ``s3://bucket/prefix/`` URIs or local (shared) folders.
        out: Where the catalog and shards go (``s3://…`` or a shared folder).
        shards: Number of shards of a new index (default 64; an existing one keeps its own).
        partition_depth: Map sources to shards by their first N folders below the source
            root (e.g. 1: the project folder) instead of by their whole key.
        embed: ``none`` (keyword only), an embedder spec (``local``, ``bedrock:512``, …), an
            embedder object, or a zero-argument callable that builds one in each actor.
        embed_options: Keyword arguments for :func:`memlane.embed.make_embedder` in each
            actor, with a spec (e.g. Bedrock's ``region``, ``profile``, ``concurrency``).
        ray_address: ``local``, ``auto`` or a cluster address (see :func:`init_ray`).
        embed_actors: Embedding actors (default: one per ``embed_threads`` cores, one per GPU, 4 for Bedrock).
        embed_threads: Cores per local embedding actor (on a CPU, each runs windows of its own; see
            :class:`memlane.embed.local.LocalEmbedder`'s ``parallel``).
        requests_per_second: Bedrock requests per second, cluster-wide (default 20).
        format: Force a transcript format (as ``memlane index --format``).
        quantization: Vector storage of a new shard (as ``memlane index --quantization``; a
            shard keeps the storage it was made with).
        stage_root: Where workers put objects while indexing them (same path on every node).
        progress: Optional ``(stage, done, total)`` callback; stages ``list`` and ``shards``.
        **ray_init: Passed to ``ray.init`` for a local cluster (e.g. ``num_cpus``).

    Returns:
        What was done.

    Raises:
        memlane.errors.InvalidArgumentError: ``shards``, ``partition_depth`` or the embedder contradict
            the existing catalog (a ValueError).
    """
    _check.choice("quantization", quantization, QUANTIZATIONS)
    started = time.perf_counter()
    out_loc = location(out)
    previous = cat.load(out_loc)
    if previous is not None:
        if shards is not None and shards != previous.partition.shards:
            raise InvalidArgumentError(
                f"{out} has {previous.partition.shards} shards: run with --shards {previous.partition.shards} (or a new --out)"
            )
        if partition_depth is not None and partition_depth != previous.partition.depth:
            raise InvalidArgumentError(
                f"{out} is partitioned at depth {previous.partition.depth}: keep it, or index into a new --out"
            )
        partition = previous.partition
    else:
        if shards is not None and not 1 <= shards <= 9999:
            raise InvalidArgumentError(f"--shards must be between 1 and 9999, got {shards}")
        partition = cat.Partition(shards or 64, partition_depth)
    stage = os.path.realpath(stage_root or os.environ.get("MEMLANE_STAGE_DIR") or _DEFAULT_STAGE)
    report = ClusterReport(shards=partition.shards)

    listing = _listing(sources, format)
    if progress:
        progress("list", len(listing), len(listing))
    old = previous.sources if previous else {}
    # The same export uploaded twice (identical ETag and size) is indexed once, under the URI
    # indexed already if one is, else the first; local files have no content ETag and a
    # multipart ETag is no content hash, so only plain S3 ETags are matched.
    canonical: dict[tuple[str, int], str] = {}
    kept = sorted(uri for uri, (etag, size, _, _) in listing.items()
                  if uri in old and not old[uri].duplicate_of and (old[uri].etag, old[uri].size) == (etag, size))  # fmt: skip
    sources_now: dict[str, cat.Source] = {}
    for uri in [*kept, *sorted(set(listing) - set(kept))]:
        etag, size, root, key = listing[uri]
        first = canonical.setdefault((etag, size), uri) if uri.startswith("s3://") and "-" not in etag else uri
        sources_now[uri] = cat.Source(etag, size, partition.shard_of(root, key), root, None if first == uri else first)
    named_roots = {location(s).uri for s in sources}
    index: dict[int, list[tuple[str, str]]] = {}
    remove: dict[int, list[str]] = {}
    for uri, now in sources_now.items():
        was = old.get(uri)
        before = was is not None and was.duplicate_of is None
        changed = was is None or (was.etag, was.size) != (now.etag, now.size)
        if was is not None and before and (changed or now.duplicate_of):
            remove.setdefault(was.shard, []).append(uri)
        if now.duplicate_of is None and (changed or not before):
            index.setdefault(now.shard, []).append((uri, now.etag))
        report.duplicates += now.duplicate_of is not None
        report.files_unchanged += before and not changed and now.duplicate_of is None
    # Objects gone from a root named in this run; other roots' objects stay as they are.
    gone = [u for u, was in old.items() if u not in sources_now and was.root in named_roots]
    for uri in gone:
        if old[uri].duplicate_of is None:
            remove.setdefault(old[uri].shard, []).append(uri)
            report.files_removed += 1
    report.files_removed += sum(
        1 for u, now in sources_now.items() if now.duplicate_of and u in old and not old[u].duplicate_of
    )
    all_sources = {**{u: s for u, s in old.items() if u not in gone}, **sources_now}
    report.files_seen = len(listing)
    report.list_seconds = time.perf_counter() - started
    work = sorted(set(index) | set(remove))
    refs_by_shard = {s.shard: s for s in previous.shards} if previous else {}
    if not work and previous is not None:
        report.chunks = sum(s.chunks for s in previous.shards)
        report.embedder_id = previous.embedder_id
        report.seconds = time.perf_counter() - started
        return report

    ray = init_ray(ray_address, **ray_init)
    actors, described, limiter, reserved = _embedding(
        ray,
        embed,
        embed_options,
        embed_actors,
        embed_threads,
        requests_per_second,
        previous.embedder_id if previous else None,
    )
    embedder_id = described[0] if described else None
    if previous is not None and previous.embedder_id and embedder_id and embedder_id != previous.embedder_id:
        raise InvalidArgumentError(
            f"{out} holds vectors of {previous.embedder_id}; {embedder_id} cannot be mixed in (index into a new --out)"
        )
    shard_embedder = PoolEmbedder(actors, described) if described else "none"
    task = ray.remote(build_shard).options(num_cpus=1, max_retries=5, retry_exceptions=False)
    pending = {}
    records: dict[int, dict[str, Any]] = {}
    for shard in work:
        prev = refs_by_shard.get(shard)
        base = prev.version if prev else None
        version = _version_id(shard, base, index.get(shard, []), remove.get(shard, []), embedder_id)
        base_record = cat.version_record(out_loc, shard, base) if base else None
        parts = sorted({"/".join(k.split("/")[: partition.depth]) for u, (_, _, _, k) in listing.items()
                        if partition.depth and sources_now[u].shard == shard})  # fmt: skip
        committed = cat.version_record(out_loc, shard, version)
        if committed is not None:  # an interrupted run of the same work committed it
            records[shard] = committed
            report.shards_resumed += 1
            continue
        job = ShardJob(
            shard,
            version,
            out_loc.uri,
            stage,
            base_record,
            [u for u, _ in index.get(shard, [])],
            remove.get(shard, []),
            parts,
            quantization,
        )
        pending[task.remote(job, shard_embedder)] = shard
    done = len(records)
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1)
        for ref in ready:
            records[pending.pop(ref)] = ray.get(ref)
            done += 1
            if progress:
                progress("shards", done, len(work))
    report.embed_usage = _usage(ray, actors, limiter)
    for actor in [*actors, *([limiter] if limiter is not None else [])]:
        ray.kill(actor)
    if reserved is not None:
        from ray.util.placement_group import remove_placement_group

        remove_placement_group(reserved)

    refs: list[cat.ShardRef] = []
    for shard in range(partition.shards):
        record = records.get(shard)
        if record is None:
            refs.append(refs_by_shard.get(shard) or cat.ShardRef(shard, None))
            continue
        r = record.get("report", {})
        report.shards_built += 1
        report.files_indexed += r.get("files_indexed", 0)
        report.bytes_parsed += r.get("bytes_parsed", 0)
        report.chunks_added += r.get("chunks_added", 0)
        report.chunks_removed += r.get("chunks_removed", 0)
        report.chunks_embedded += r.get("chunks_embedded", 0)
        for reason, n in r.get("records_skipped", {}).items():
            report.records_skipped[reason] = report.records_skipped.get(reason, 0) + n
        refs.append(shard_ref(shard, record))
    report.shards_built -= report.shards_resumed
    ids = {r.get("embedder_id") for r in records.values()} - {None}
    catalog = cat.Catalog(
        generation=(previous.generation if previous else 0) + 1,
        shards=refs,
        partition=partition,
        embedder_id=(previous.embedder_id if previous else None) or (ids.pop() if ids else None),
        dim=(previous.dim if previous else None)
        or next((r.get("dim") for r in records.values() if r.get("dim")), None),
        stage_root=stage,
        roots=sorted({*(previous.roots if previous else ()), *named_roots}),
        sources=all_sources,
    )
    cat.publish(out_loc, catalog)
    report.generation = catalog.generation
    report.embedder_id = catalog.embedder_id
    report.chunks = sum(s.chunks for s in refs)
    report.seconds = time.perf_counter() - started
    return report
