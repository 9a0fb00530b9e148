"""Serving a sharded index over HTTP (issue 23): latency against one home, throughput, freshness.

Builds, through the product's paths, the archive of bench_scale.py (generic JSONL, about one
chunk a user/assistant pair) as

- one home: ``Memory.index`` plus one synthetic clustered 384-dim vector per chunk through the
  writer (``bench_pipeline.add_random_vectors``, as bench_scale.py does), and
- a sharded index of ``--shards`` shards in a local folder: ``index_sources`` on a local Ray
  cluster (keyword only), then the same synthetic vectors added to each shard's home and
  committed as a new shard version and catalog (the bench's stand-in for embedding).

Then it serves the index (``memlane.cluster.serve.start`` as ``memlane serve`` does: one router
replica taking HTTP itself, the shards in it — or ``--shard-actors N``, ``--ingress proxy``,
``--replicas N`` behind the proxy) on
loopback and measures, each query asked four ways interleaved (so a busy machine weighs on all
of them alike), without query embedding (pre-made query vectors):

- one home in process (``Memory.search``), the sharded index in process
  (``memlane.open_index``), over HTTP (a new connection per request, ``urllib``) and through
  the product's client (``memlane.connect(url).search``: a kept connection, hits parsed):
  p50/p99; beside them the router's own time (its ``Server-Timing`` header: HTTP excluded);
- the same over HTTP with the server alone on the machine (other queries, nothing searched in
  the bench's process between them): ``*_alone`` rows;
- queries per second with 1, 4 and 16 concurrent clients (threads, one HTTP request each);
- a new catalog version (one new file indexed by ``index_sources``) to the first answer that
  comes from it, with the router reading the pointer every ``--refresh`` seconds.

Run (about 4 GB of disk at 1M chunks; ``--keep`` keeps the builds for a re-run):
``python benches/bench_serve.py --chunks 1000000 --workdir /tmp/serve-bench --keep``.
Results go to bench-results/serve.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from bench_pipeline import DIM, GivenVectors, add_random_vectors, clustered_unit_vectors, pct
from bench_scale import generate

import memlane
from memlane.cluster import catalog as cat
from memlane.cluster.storage import location

os.environ.setdefault("RAY_worker_niceness", "0")  # Ray's workers otherwise lose a shared machine's cores


def build_home(archive: Path, home: Path) -> dict:
    t = time.perf_counter()
    report = memlane.open(home, embedder="none").index([archive], embed=False, format="generic")
    vectors = add_random_vectors(home)
    return {
        "home_chunks": report.chunks_added,
        "home_vectors": vectors,
        "home_build_s": round(time.perf_counter() - t, 1),
    }


def build_sharded(archive: Path, out: Path, shards: int, work: Path) -> dict:
    """Keyword shards by the product's Ray build, then synthetic vectors in each (a new version)."""
    from memlane.cluster.index import index_sources

    t = time.perf_counter()
    report = index_sources(
        [str(archive)], str(out), shards=shards, embed="none", format="generic", stage_root=str(work / "stage")
    )
    loc = location(out)
    catalog = cat.load(loc)
    assert catalog is not None
    refs = []
    for ref in catalog.shards:
        if ref.version is None:
            refs.append(ref)
            continue
        record = cat.version_record(loc, ref.shard, ref.version)
        home = cat.materialize(loc, ref.shard, record, work / f"vec-{ref.shard}")
        (home / ".complete").unlink()
        add_random_vectors(home, seed=100 + ref.shard)
        version = ref.version + "-vectors"
        info = {k: v for k, v in record.items() if k not in ("files", "shard", "version")}
        new = cat.upload_home(home, loc, ref.shard, version, {**info, "embedder_id": GivenVectors.id, "dim": DIM})
        refs.append(
            cat.ShardRef(**{**ref.__dict__, "version": version, "bytes": sum(f["size"] for f in new["files"].values())})
        )
        shutil.rmtree(home)
    catalog.shards, catalog.embedder_id, catalog.dim = refs, GivenVectors.id, DIM
    catalog.generation += 1
    catalog.created = ""
    cat.publish(loc, catalog)
    return {"sharded_chunks": report.chunks, "sharded_build_s": round(time.perf_counter() - t, 1)}


def _timed_post(url: str, body: dict) -> tuple[float, float]:
    """Wall ms of one search over HTTP and the router's own ms (Server-Timing)."""
    request = urllib.request.Request(f"{url}/search", json.dumps(body).encode(), {"Content-Type": "application/json"})
    t = time.perf_counter()
    with urllib.request.urlopen(request) as response:
        response.read()
        wall = (time.perf_counter() - t) * 1000
        server = float(response.headers["Server-Timing"].split("dur=")[1])
    return wall, server


def _ask_over_http(url: str, client: Any, q: str, i: int, rows: dict[str, list[float]], suffix: str = "") -> None:
    """Ask ``q`` over HTTP both ways (urllib, the product's client), into ``rows``."""

    def over_http() -> None:
        wall, server = _timed_post(url, {"query": q, "k": 10})
        rows["http" + suffix].append(wall)
        rows["router" + suffix].append(server)

    def through_client() -> None:
        t = time.perf_counter()
        client.search(q, k=10)
        rows["client" + suffix].append((time.perf_counter() - t) * 1000)

    # The server's second search of a query finds its index pages in the CPU's caches: each
    # way goes first for half the queries.
    for way in (over_http, through_client) if i % 2 == 0 else (through_client, over_http):
        way()


def alone(url: str, queries: list[str]) -> dict:
    """HTTP latency with the server alone on the machine: queries asked with nothing searched in
    this process between them (in :func:`latency` a 1M home and a sharded index searched here
    share the CPU's caches and memory bandwidth with the server)."""
    client = memlane.connect(url)
    rows: dict[str, list[float]] = {"http_alone": [], "router_alone": [], "client_alone": []}
    for i, q in enumerate(queries):
        _ask_over_http(url, client, q, i, rows, "_alone")
    client.close()
    return {f"{k}_ms_p{int(p * 100)}": round(pct(v, p), 2) for k, v in rows.items() for p in (0.5, 0.99)}


def latency(home: Path, out: Path, url: str, queries: list[str], embedder: GivenVectors) -> dict:
    one = memlane.Memory(home, embedder=embedder)
    sharded = memlane.open_index(str(out), embedder=embedder, cache_dir=out.parent / "cache")
    client = memlane.connect(url)  # the product's client: a kept connection, Hit objects back
    for q in queries[:20]:  # warm all four
        one.search(q, k=10)
        sharded.search(q, k=10)
        _timed_post(url, {"query": q, "k": 10})
        client.search(q, k=10)
    rows: dict[str, list[float]] = {"home": [], "sharded_in_process": [], "http": [], "router": [], "client": []}
    cpu = {"home": 0.0, "sharded_in_process": 0.0}
    for i, q in enumerate(queries):
        for name, mem in (("home", one), ("sharded_in_process", sharded)):
            c, t = time.process_time(), time.perf_counter()
            mem.search(q, k=10)
            rows[name].append((time.perf_counter() - t) * 1000)
            cpu[name] += time.process_time() - c
        _ask_over_http(url, client, q, i, rows)
    out_rows = {f"{k}_ms_p50": round(pct(v, 0.5), 2) for k, v in rows.items()}
    out_rows |= {f"{k}_ms_p99": round(pct(v, 0.99), 2) for k, v in rows.items()}
    out_rows |= {f"{k}_cpu_ms": round(v * 1000 / len(queries), 2) for k, v in cpu.items()}
    out_rows["http_over_home_p50"] = round(out_rows["http_ms_p50"] / out_rows["home_ms_p50"], 2)
    out_rows["router_over_home_p50"] = round(out_rows["router_ms_p50"] / out_rows["home_ms_p50"], 2)
    out_rows["router_over_sharded_in_process_p50"] = round(
        out_rows["router_ms_p50"] / out_rows["sharded_in_process_ms_p50"], 2
    )
    sharded.close()
    client.close()
    return out_rows


def throughput(url: str, queries: list[str], clients: int, seconds: float) -> float:
    done = [0] * clients
    stop = time.monotonic() + seconds

    def run(i: int) -> None:
        remote = memlane.connect(url)
        n = i
        while time.monotonic() < stop:
            remote.search(queries[n % len(queries)], k=10)
            n += clients
            done[i] += 1

    threads = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
    t = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return round(sum(done) / (time.perf_counter() - t), 1)


def freshness(archive: Path, out: Path, url: str, work: Path, rounds: int) -> dict:
    """A new file indexed into the served index, ``rounds`` times: catalog published → the
    first answer that comes from it (polled every 10 ms)."""
    from memlane.cluster.index import index_sources

    remote = memlane.connect(url)
    waits, reindex = [], []
    new = archive / "zz-fresh.jsonl"
    try:
        for r in range(rounds):
            marker = f"quokkafreshness{r}"
            new.write_text(
                json.dumps(
                    {"session_id": f"fresh{r}", "role": "user", "content": marker, "timestamp": "2026-06-01T00:00:00Z"}
                )
                + "\n"
            )
            t = time.perf_counter()
            report = index_sources(
                [str(archive)], str(out), embed="none", format="generic", stage_root=str(work / "stage")
            )
            published = time.perf_counter()
            # Keyword-ranked: the new chunk has no vector yet, so a hybrid ranking would put
            # the query vector's neighbours before it.
            while not any(marker in h.text for h in remote.search(marker, k=3, vector_weight=0.0)):
                time.sleep(0.01)
            waits.append(round(time.perf_counter() - published, 2))
            reindex.append(round(published - t, 1))
    finally:
        new.unlink(missing_ok=True)
    return {"generation_after": report.generation, "reindex_s": reindex, "new_catalog_to_first_answer_s": waits}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", type=int, default=1_000_000)
    ap.add_argument("--shards", type=int, default=4)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--seconds", type=float, default=10.0, help="each throughput run")
    ap.add_argument("--refresh", type=float, default=1.0, help="the router's catalog polling interval")
    ap.add_argument("--port", type=int, default=8799)
    ap.add_argument("--fresh-rounds", type=int, default=3, help="re-index rounds timed from catalog to first answer")
    ap.add_argument(
        "--build-only", action="store_true", help="build the home and the sharded index, measure nothing (with --keep)"
    )
    ap.add_argument("--workdir", type=Path, default=None, help="where to build (default: a temp dir, deleted after)")
    ap.add_argument("--keep", action="store_true", help="keep the archive, home and sharded index")
    ap.add_argument("--out", type=Path, default=Path("bench-results/serve.json"))
    ap.add_argument(
        "--ingress",
        choices=("direct", "proxy"),
        default="direct",
        help="HTTP from the router replica itself (memlane serve's default) or through Serve's proxy",
    )
    ap.add_argument(
        "--shard-actors",
        type=int,
        default=None,
        help="shard actors (default as memlane serve: 0 on one machine, the shards in the router)",
    )
    ap.add_argument("--replicas", type=int, default=1, help="router replicas (more than one: behind Serve's proxy)")
    args = ap.parse_args()

    work = args.workdir or Path(tempfile.mkdtemp(prefix="memlane-serve-"))
    archive, home, out = work / "archive", work / "home", work / "index"
    results: dict = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "load_average_start": os.getloadavg(),
    }
    if not archive.exists():
        results["archive_mb"] = round(generate(archive, args.chunks) / 1e6, 1)
    if not (home / "vectors.usearch").exists():
        results |= build_home(archive, home)
        print(f"one home built: {results}", file=sys.stderr)
    from memlane.cluster.index import init_ray
    from memlane.cluster.serve import direct_ingress

    if args.ingress == "direct" and args.replicas == 1:  # as `memlane serve` starts its cluster
        os.environ.update(direct_ingress(args.port))
    # The router unpickles the bench's query embedder (bench_pipeline.GivenVectors).
    init_ray("local", num_cpus=os.cpu_count(), runtime_env={"env_vars": {"PYTHONPATH": str(Path(__file__).parent)}})
    if cat.load(location(out)) is None:
        results |= build_sharded(archive, out, args.shards, work)
        print(f"sharded index built: {results}", file=sys.stderr)
    if args.build_only:
        (work / "build.json").write_text(json.dumps(results, indent=2))
        return

    import random

    from archive import words

    rng = random.Random(11)
    queries = [" ".join(words(rng, rng.randint(2, 6))) for _ in range(args.queries)]
    queries += [f"quokkafreshness{r}" for r in range(args.fresh_rounds)]
    vectors = clustered_unit_vectors(np.random.default_rng(5), len(queries))
    # Queries the server has not seen, for the latency with the server alone.
    rng_alone = random.Random(12)
    unseen = [" ".join(words(rng_alone, rng_alone.randint(2, 6))) for _ in range(args.queries)]
    vectors = np.vstack([vectors, clustered_unit_vectors(np.random.default_rng(6), len(unseen))])
    embedder = GivenVectors(queries + unseen, vectors)
    from memlane.cluster.serve import start

    t = time.perf_counter()
    server = start(
        str(out),
        port=args.port,
        embedder=embedder,
        refresh_seconds=args.refresh,
        cache_dir=str(work / "serve-cache"),
        shard_actors=args.shard_actors,
        replicas=args.replicas,
    )
    results["serve_start_s"] = round(time.perf_counter() - t, 1)
    results["ingress"] = server.ingress
    results["shard_actors"] = len(server.actors)
    results["replicas"] = args.replicas
    results["refresh_s"] = args.refresh
    results["chunks"] = memlane.connect(server.url).status()["chunks"]
    results |= latency(home, out, server.url, queries[: args.queries], embedder)
    results |= alone(server.url, unseen)
    print(f"latency: {results}", file=sys.stderr)
    for clients in (1, 4, 16):
        results[f"qps_{clients}_clients"] = throughput(server.url, queries[: args.queries], clients, args.seconds)
    results |= freshness(archive, out, server.url, work, args.fresh_rounds)
    results["load_average_end"] = os.getloadavg()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2))
    server.stop()
    if not args.keep:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
