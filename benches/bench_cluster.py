"""Scale-out on Ray (issue 22): Ray's overhead against one process at equal cores, the no-op
re-run over many unchanged S3 objects, and the per-core rates a capacity model starts from.

Measures, through the product's own paths (``Memory.index`` for one process,
``memlane.cluster.index_sources`` on a local Ray cluster for the distributed one):

* keyword-only indexing of a generated Claude Code archive: one process vs Ray with 1 and 2
  worker CPUs (wall seconds, MB/s, and Ray's overhead as a ratio at equal cores);
* the same with local vectors (``--vectors``: the local ONNX model, one thread per actor);
* list + diff of ``--objects`` unchanged objects on a moto S3 server (the re-run that indexes
  nothing: the paginator's pages and the catalog diff).

Run on a quiet machine: ``python benches/bench_cluster.py --files 300 --pairs 40 --objects 100000``
(add ``--vectors`` for the local-vector rows; a small ``--vector-files`` keeps them short).
Results print as a markdown table and are saved to bench-results/cluster.json.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from archive import generate

# One Ray cluster per measurement: a fresh process, so cores, workers and caches start alike.
# CPU is summed over the driver's process tree from /proc (Ray's GCS and raylet are its
# children, workers and actors the raylet's; an exited process counts in its parent's
# cutime/cstime): ``start_cpu`` once the cluster is up, ``tree_cpu`` when the run is done.
_RAY_RUN = """
import glob, json, os, sys, time
import ray
from memlane.cluster.index import index_sources

def tree_cpu(root):
    kids, own = {}, {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = open(f"/proc/{d}/stat").read()
        except OSError:
            continue
        rest = stat[stat.rindex(")") + 2 :].split()
        kids.setdefault(int(rest[1]), []).append(int(d))
        own[int(d)] = sum(int(x) for x in rest[11:15])
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += own.get(pid, 0)
        todo += kids.get(pid, [])
    return total / os.sysconf("SC_CLK_TCK")

cpus, src, out, embed = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False, configure_logging=False,
         object_store_memory=200 * 1024 * 1024)
ray.get(ray.remote(lambda: 0).remote())  # the cluster is up: its start is not indexing time
start_cpu = tree_cpu(os.getpid())
t = time.perf_counter()
r = index_sources([src], out, shards=2 * cpus, embed=embed, embed_threads=1)
wall = time.perf_counter() - t
tree = tree_cpu(os.getpid())
# CPU seconds of the shard builds (in the workers), upload excluded.
cpu = sum(json.load(open(f)).get("cpu_seconds", 0) for f in glob.glob(out + "/shards/*/versions/*.json"))
print(json.dumps({"wall": wall, "cpu": cpu, "start_cpu": start_cpu, "tree_cpu": tree, "files": r.files_indexed, "chunks": r.chunks, "embedded": r.chunks_embedded}))
"""

_ONE_RUN = """
import json, os, sys, time
import memlane
home, src, embed = sys.argv[1], sys.argv[2], sys.argv[3]
mem = memlane.open(home, embedder=embed)
if embed != "none":
    mem.embedder  # load the model outside the timing, as the Ray actors do before their first batch
t, cpu = time.perf_counter(), time.process_time()
r = mem.index([src], embed=embed != "none")
wall, cpu = time.perf_counter() - t, time.process_time() - cpu
keys = [int(k) for k in mem._store.keys()]
text_bytes = sum(len(c["text"].encode()) for at in range(0, len(keys), 512) for c in mem._store.get(keys[at : at + 512]))
print(json.dumps({"wall": wall, "cpu": cpu, "files": r.files_indexed, "chunks": r.chunks_added, "embedded": r.chunks_embedded, "text_bytes": text_bytes}))
"""


def _run(code: str, args: list[str], env: dict[str, str], cores: int) -> dict:
    """Run ``code`` in a fresh Python pinned to ``cores`` cores (it and every process it starts:
    equal cores for one process and for a Ray cluster); its JSON result."""
    pin = ["taskset", "-c", ",".join(str(c) for c in range(cores))]
    run = subprocess.run([*pin, sys.executable, "-c", code, *args], capture_output=True, text=True, env=env)
    results = [line for line in run.stdout.splitlines() if line.startswith("{")]
    if run.returncode or not results:
        sys.exit(f"a measured run failed:\n{run.stdout[-2000:]}\n{run.stderr[-3000:]}")
    return json.loads(results[-1])


def _throughput(src: Path, mb: float, embed: str, work: Path) -> dict:
    rows = {}
    for cores in (1, 2):
        # A fresh embedding cache per run: a vector cached by the previous run is not embedded again.
        # Ray lowers its workers' priority by 15 (`worker_niceness`): on a shared machine they
        # would then lose the core to everyone else's work, so the Ray run keeps the driver's.
        cache = tempfile.mkdtemp(dir=work, prefix="cache-")
        env = {**os.environ, "RAYON_NUM_THREADS": str(cores), "OMP_NUM_THREADS": "1", "MEMLANE_CACHE_DIR": cache}
        one = _run(_ONE_RUN, [str(work / f"one-{embed}-{cores}"), str(src), embed], env, cores)
        ray = _run(
            _RAY_RUN,
            [str(cores), str(src), str(work / f"ray-{embed}-{cores}"), embed],
            {**env, "RAYON_NUM_THREADS": "1", "RAY_worker_niceness": "0"},
            cores,
        )
        assert ray["chunks"] == one["chunks"], (ray, one)
        rows[cores] = {
            "one_process_s": round(one["wall"], 2),
            "ray_s": round(ray["wall"], 2),
            "one_process_mb_s": round(mb / one["wall"], 2),
            "ray_mb_s": round(mb / ray["wall"], 2),
            "ray_overhead": round(ray["wall"] / one["wall"] - 1, 3),
            # CPU of the indexing: one process; every Ray process during the run (driver,
            # daemons, workers, embedding actors and their model load); the shard builds alone.
            "one_process_cpu_s": round(one["cpu"], 2),
            "ray_run_cpu_s": round(ray["tree_cpu"] - ray["start_cpu"], 2),
            "ray_cpu_overhead": round((ray["tree_cpu"] - ray["start_cpu"]) / one["cpu"] - 1, 3),
            "ray_builds_cpu_s": round(ray["cpu"], 2),
            "ray_cluster_start_cpu_s": round(ray["start_cpu"], 2),
            "chunks": one["chunks"],
            # What an embedder reads per MB of archive (Bedrock bills ~1 token per 4 bytes of it).
            "text_mb_per_archive_mb": round(one["text_bytes"] / 1e6 / mb, 3),
        }
        print(
            f"  {embed} {cores} core(s): one process {one['wall']:.1f}s ({one['cpu']:.1f} CPU-s), Ray {ray['wall']:.1f}s "
            f"({ray['tree_cpu'] - ray['start_cpu']:.1f} CPU-s, builds {ray['cpu']:.1f}, cluster start {ray['start_cpu']:.1f}), "
            f"load {os.getloadavg()[0]:.1f}",
            file=sys.stderr,
        )
    return rows


def _list_diff(objects: int) -> dict:
    """A catalog whose sources are ``objects`` unchanged S3 objects; time the re-run."""
    from moto.server import ThreadedMotoServer

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    os.environ.update(
        AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}",
        AWS_ACCESS_KEY_ID="x",
        AWS_SECRET_ACCESS_KEY="x",
        AWS_DEFAULT_REGION="us-east-1",
    )
    import logging

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    from memlane.cluster import catalog as cat
    from memlane.cluster import storage
    from memlane.cluster.index import index_sources

    client = storage._s3_client()
    client.create_bucket(Bucket="logs")
    client.create_bucket(Bucket="index")
    t = time.perf_counter()
    # Seeded straight into the server's in-process backend (100k PUTs over HTTP take many
    # minutes on a busy machine); the listing and the diff timed below go through the server.
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.s3.models import s3_backends

    backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
    src = storage.location("s3://logs/")
    partition = cat.Partition(64)
    sources = {}
    for i in range(objects):
        key = backend.put_object("logs", f"p{i % 100}/s{i:07d}.jsonl", f"{i}\n".encode())
        sources[src.uri_of(key.name)] = cat.Source(
            key.etag.strip('"'), key.size, partition.shard_of(src.uri, key.name), src.uri
        )
    put_s = time.perf_counter() - t
    cat.publish(
        storage.location("s3://index/"),
        cat.Catalog(1, [cat.ShardRef(n, None) for n in range(64)], partition, sources=sources),
    )
    # The server answers in its own threads: the caller's thread CPU (time.thread_time) is the
    # product's client-side cost (boto3 parsing the pages, memlane's diff), whatever moto
    # spends (moto sorts every key of the bucket for each page of 1,000, so it dominates wall).
    t, cpu = time.perf_counter(), time.thread_time()
    listed = sum(
        len(page.get("Contents", ())) for page in client.get_paginator("list_objects_v2").paginate(Bucket="logs")
    )
    raw_list, raw_cpu = time.perf_counter() - t, time.thread_time() - cpu
    assert listed == objects
    times, cpus = [], []
    for _ in range(2):
        cpu = time.thread_time()
        r = index_sources(["s3://logs/"], "s3://index/", embed="none")
        cpus.append(time.thread_time() - cpu)
        assert r.files_indexed == 0 and r.files_unchanged == objects and r.generation is None
        times.append(r.seconds)
    server.stop()
    return {
        "objects": objects,
        "list_pages": -(-objects // 1000),
        "put_seconds": round(put_s, 1),
        "paginator_only_seconds": round(raw_list, 2),
        "paginator_only_client_cpu_s": round(raw_cpu, 2),
        "rerun_seconds": [round(x, 2) for x in times],
        "rerun_client_cpu_s": [round(x, 2) for x in cpus],
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--files", type=int, default=300)
    p.add_argument("--pairs", type=int, default=40)
    p.add_argument("--vectors", action="store_true", help="also measure local vectors (slow: tens of KB/s per core)")
    p.add_argument("--vector-files", type=int, default=24)
    p.add_argument(
        "--objects", type=int, default=100_000, help="unchanged S3 objects for the list + diff row (0: skip)"
    )
    p.add_argument("--no-keyword", action="store_true", help="skip the keyword-only rows")
    args = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="memlane-bench-cluster-"))
    results: dict = {"machine": {"cpus": os.cpu_count(), "load_before": os.getloadavg()}}
    if not args.no_keyword:
        src = work / "archive"
        mb = generate(src, args.files, args.pairs) / 1e6
        results["keyword"] = {"archive_mb": round(mb, 2), "files": args.files, **_throughput(src, mb, "none", work)}
    if args.vectors:
        vsrc = work / "varchive"
        vmb = generate(vsrc, args.vector_files, args.pairs, seed=11) / 1e6
        results["local_vectors"] = {
            "archive_mb": round(vmb, 3),
            "files": args.vector_files,
            **_throughput(vsrc, vmb, "local", work),
        }
    if args.objects:
        results["list_diff"] = _list_diff(args.objects)
    results["machine"]["load_after"] = os.getloadavg()
    out = Path("bench-results")
    out.mkdir(exist_ok=True)
    (out / "cluster.json").write_text(json.dumps(results, indent=2))
    print(json.dumps(results))
    print("| measurement | 1 core | 2 cores |\n|---|---|---|")
    for kind in ("keyword", "local_vectors"):
        if kind in results:
            r = results[kind]
            for name, key in (
                ("one process MB/s", "one_process_mb_s"),
                ("Ray MB/s", "ray_mb_s"),
                ("Ray overhead, wall", "ray_overhead"),
                ("one process CPU-s", "one_process_cpu_s"),
                ("Ray CPU-s (all processes)", "ray_run_cpu_s"),
                ("Ray overhead, CPU", "ray_cpu_overhead"),
            ):
                print(f"| {kind} {name} ({r['archive_mb']} MB) | {r[1][key]} | {r[2][key]} |")
    if "list_diff" in results:
        d = results["list_diff"]
        print(
            f"| list + diff of {d['objects']:,} unchanged objects (moto) | {d['rerun_seconds']} s, client CPU {d['rerun_client_cpu_s']} s "
            f"(paginator alone {d['paginator_only_seconds']} s, client CPU {d['paginator_only_client_cpu_s']} s) | |"
        )


if __name__ == "__main__":
    main()
