"""The sharded index on Ray (issue 22): built from S3 on a local Ray cluster against a moto S3
server on 127.0.0.1, searched in process; equal to one home built from the same files.

Needs the ``ray`` extra (``pip install 'memlane[ray]'``) and ``moto[server]``; skipped without.
"""

from __future__ import annotations

import gzip
import io
import json
import logging
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import SHARED_DATA, FakeEmbedder, free_port, generic_session, write_jsonl

ray = pytest.importorskip("ray")
pytest.importorskip("moto.server")

import memlane  # noqa: E402
from memlane.cluster import catalog as cat  # noqa: E402
from memlane.cluster import storage  # noqa: E402
from memlane.cluster.index import index_sources  # noqa: E402
from memlane.cluster.storage import location  # noqa: E402

BUCKET = "team-logs"
OUT_BUCKET = "team-memory"

# Queries with common and rare terms, and no term at all in the corpus.
QUERIES = [
    "deploy failed with exit code 137",
    "postgres migration billing",
    "temporary directory test",
    "memory alert worker pool",
    "keepalive timeout proxy",
    "git commit message",
    "python function error",
    "zzzunknownterm",
]

_WORDS = [
    "deploy",
    "release",
    "rollback",
    "postgres",
    "billing",
    "invoice",
    "ledger",
    "proxy",
    "timeout",
    "socket",
    "worker",
    "pool",
    "memory",
    "alert",
    "cache",
    "index",
    "shard",
    "query",
    "latency",
    "budget",
    "migration",
    "replica",
    "backup",
    "restore",
    "kubernetes",
    "node",
    "container",
    "image",
    "registry",
    "token",
    "secret",
    "rotate",
    "schedule",
    "cron",
    "nightly",
    "import",
    "export",
    "parser",
    "chunk",
    "vector",
    "embedding",
    "model",
]


class SlowFakeEmbedder(FakeEmbedder):
    """The fake embedder, slow enough (per batch) that a shard build lasts long enough to be killed."""

    def embed_documents(self, texts):
        time.sleep(0.4)
        return super().embed_documents(texts)


class Bow256(FakeEmbedder):
    """The fake embedder's bag-of-words vectors at Titan's 256 dimensions (what the fake Titan answers)."""

    dim = 256


class _Body(io.BytesIO):
    """An HTTP response body as botocore reads it (streamed or read)."""

    def stream(self, **_: object):
        yield self.getvalue()


class FakeTitan:
    """Builds, in each embedding actor, a real :class:`BedrockEmbedder` on a real botocore client
    whose HTTP exchange is played by a ``before-send`` hook: Titan's answer (a bag-of-words
    vector of the text), and a 429 ThrottlingException for every ``throttle_every``-th request."""

    def __init__(self, throttle_every: int = 0) -> None:
        self.throttle_every = throttle_every

    def __call__(self):
        import itertools

        import boto3
        from botocore.awsrequest import AWSResponse
        from botocore.config import Config

        from memlane.embed.bedrock import BedrockEmbedder, RetryPolicy

        session = boto3.Session(aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1")
        client = session.client("bedrock-runtime", config=Config(retries={"total_max_attempts": 1}))
        calls = itertools.count(1)
        bow = Bow256()

        def answer(request, **_):
            text = json.loads(request.body)["inputText"]
            if self.throttle_every and next(calls) % self.throttle_every == 0:
                body = json.dumps({"message": "Too many requests, please wait before trying again."}).encode()
                return AWSResponse(request.url, 429, {"x-amzn-ErrorType": "ThrottlingException"}, _Body(body))
            body = json.dumps(
                {"embedding": [float(x) for x in bow._vector(text)], "inputTextTokenCount": len(text.split())}
            ).encode()
            return AWSResponse(request.url, 200, {"content-type": "application/json"}, _Body(body))

        client.meta.events.register("before-send.bedrock-runtime.InvokeModel", answer)
        return BedrockEmbedder(
            256, client=client, concurrency=4, retry=RetryPolicy(max_attempts=8, base_delay=0.001, max_delay=0.01)
        )


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory):
    """A moto S3 server on 127.0.0.1, and the environment that points boto3 (here and in every
    Ray worker, which inherit it from the cluster started below) at it."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # a line per request otherwise
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    env = {
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_CONFIG_FILE": str(tmp_path_factory.mktemp("aws") / "none"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path_factory.mktemp("aws") / "none"),
        "AWS_EC2_METADATA_DISABLED": "true",
        # The workers' staging folder, the same path on every worker (one machine here).
        "MEMLANE_STAGE_DIR": str(tmp_path_factory.mktemp("stage")),
    }
    with pytest.MonkeyPatch.context() as mp:
        for name, value in env.items():
            mp.setenv(name, value)
        storage._CLIENT = None
        client = storage._s3_client()
        for bucket in (BUCKET, OUT_BUCKET):
            client.create_bucket(Bucket=bucket)
        yield client
        storage._CLIENT = None
    server.stop()


@pytest.fixture(scope="module")
def cluster(s3):
    """A local Ray cluster of 2 CPUs (as CI has), started after the S3 environment is set."""
    tests = str(Path(__file__).parent)
    for attempt in (1, 2):
        try:
            ray.init(
                num_cpus=2,
                object_store_memory=150 * 1024 * 1024,
                include_dashboard=False,
                log_to_driver=False,
                configure_logging=False,
                # The workers unpickle this module's embedders from conftest.
                runtime_env={"env_vars": {"PYTHONPATH": tests + os.pathsep + os.environ.get("PYTHONPATH", "")}},
            )
            break
        except Exception as exc:  # Ray gives its raylet a fixed 30 s to register: a loaded machine can miss it
            ray.shutdown()
            if attempt == 2 or "timed out during startup" not in str(exc):
                raise
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield ray
    ray.shutdown()


def _synthetic(root: Path, n: int, seed: int = 7) -> None:
    """``n`` generic-JSONL sessions of seeded random words (shared words, many ties), in
    project folders."""
    rng = random.Random(seed)
    for i in range(n):
        pairs = [
            (" ".join(rng.choices(_WORDS, k=12)) + "?", " ".join(rng.choices(_WORDS, k=60)) + ".")
            for _ in range(rng.randint(2, 5))
        ]
        day = 1 + i % 27
        write_jsonl(
            root / f"proj-{i % 4}" / f"s{i:03d}.jsonl",
            generic_session(f"syn-{i}", pairs, start=f"2026-02-{day:02d}T09:00:00Z"),
        )


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Real transcripts of every format (when the shared data is there) and synthetic
    sessions: the files a local home and the S3 archive both get."""
    root = tmp_path_factory.mktemp("corpus")
    from conftest import write_deploy_and_cooking

    write_deploy_and_cooking(root / "proj-x")
    _synthetic(root, 24)
    real = SHARED_DATA / "transcripts"
    if real.is_dir():
        shutil.copytree(real, root / "real", ignore=shutil.ignore_patterns("*.md5", "PROVENANCE.md"))
    return root


def _upload(client, root: Path, prefix: str) -> None:
    for p in sorted(root.rglob("*")):
        if p.is_file():
            client.put_object(Bucket=BUCKET, Key=f"{prefix}/{p.relative_to(root).as_posix()}", Body=p.read_bytes())


def _one_home(tmp: Path, root: Path, embedder="none") -> memlane.Memory:
    mem = memlane.open(tmp, embedder=embedder)
    mem.index([str(root)], embed=embedder != "none")
    return mem


def _raw(store, query: str, **kw):
    return [
        (h["key"], h["score"], h["bm25"], h["vector"], h["coverage"], h["relevance"])
        for h in store.search(query, k=10, **kw)
    ]


def _same_up_to_ties(a: list, b: list) -> None:
    """Equal scores in the same order; the keys of each run of equal scores equal as sets."""
    assert [round(x[1], 5) for x in a] == [round(x[1], 5) for x in b]
    groups_a: dict[float, set] = {}
    groups_b: dict[float, set] = {}
    for x in a:
        groups_a.setdefault(round(x[1], 5), set()).add(x[0])
    for x in b:
        groups_b.setdefault(round(x[1], 5), set()).add(x[0])
    last = round(a[-1][1], 5) if a else None
    for score, keys in groups_a.items():
        if score != last:  # the cut at k may take any of the last run's ties
            assert keys == groups_b[score]


FILTERS = [
    {},
    {"session_id": "deploy-1"},
    {"sources": ["transcript"]},
    {"since": 1_771_000_000_000},  # mid-February 2026 (ms)
    {"until": 1_771_000_000_000},
]


def test_bm25_sharded_equals_one_home(cluster, s3, corpus: Path, tmp_path: Path) -> None:
    _upload(s3, corpus, "claude")
    out = f"s3://{OUT_BUCKET}/bm25/"
    report = index_sources([f"s3://{BUCKET}/claude/"], out, shards=5, embed="none")
    assert report.generation == 1 and report.files_indexed == report.files_seen > 20
    one = _one_home(tmp_path / "one", corpus)
    assert report.chunks == one.status()["chunks"]
    index = memlane.open_index(out, embedder="none", cache_dir=tmp_path / "cache")
    assert index.status()["chunks"] == report.chunks and index.status()["shards_with_data"] == 5
    compared = 0
    for query in QUERIES:
        for filters in FILTERS:
            expected = _raw(one._store, query, **filters)
            assert _raw(index._store, query, **filters) == expected, (query, filters)
            compared += bool(expected)
        hits, want = index.search(query), one.search(query)
        assert [(h.id, h.score, h.scores, h.session_id, h.text) for h in hits] == [
            (h.id, h.score, h.scores, h.session_id, h.text) for h in want
        ]
        assert all(h.path.startswith(f"s3://{BUCKET}/claude/") for h in hits)
        assert index.snippets(query, hits, 80) == one.snippets(query, want, 80)
    assert compared >= 25  # most query × filter pairs have hits: the comparison is not vacuous
    # Its local folder is a cache: searches leave no events log there to grow without bound.
    assert not list((tmp_path / "cache").rglob("events.jsonl"))
    assert (tmp_path / "one" / "events.jsonl").exists()  # one home does keep it
    # A scoped query asks only the shards that can hold its session.
    assert len(index._store.select(None, "deploy-1", None, None)) == 1


def test_ui_shows_a_sharded_index_read_only(cluster, s3, corpus: Path, tmp_path: Path) -> None:
    """`memlane ui --index`: the overview and search of the shards, every action refused, and
    the pages only a home has say so."""
    from starlette.testclient import TestClient

    from memlane.ui import create_app
    from memlane.ui.guard import Access

    _upload(s3, corpus, "ui")
    out = f"s3://{OUT_BUCKET}/ui/"
    report = index_sources([f"s3://{BUCKET}/ui/"], out, shards=3, embed="none")
    index = memlane.open_index(out, embedder="none", cache_dir=tmp_path / "cache")
    c = TestClient(create_app(index, Access("127.0.0.1", 8765, read_only=True)), base_url="http://127.0.0.1:8765")
    assert f'id="chunk-count">{report.chunks:,}<' in c.get("/").text
    hit = index.search(QUERIES[0], 1)[0]
    assert f'data-id="{hit.id}"' in c.get("/search", params={"q": QUERIES[0]}).text
    assert c.get("/chunk", params={"id": hit.id}).status_code == 200
    assert c.get("/sessions").status_code == 404 and "a sharded index" in c.get("/sessions").text
    assert c.post("/forget", data={"kind": "chunk", "value": hit.id}).status_code == 403
    assert index.search(QUERIES[0], 1)[0].id == hit.id


def test_hybrid_sharded_equals_one_home_and_vectors_travel(cluster, s3, corpus: Path, tmp_path: Path) -> None:
    _upload(s3, corpus, "hybrid")
    out = f"s3://{OUT_BUCKET}/hybrid/"
    report = index_sources([f"s3://{BUCKET}/hybrid/"], out, shards=3, embed=FakeEmbedder())
    assert report.embedder_id == FakeEmbedder.id and report.chunks_embedded == report.chunks > 0
    one = _one_home(tmp_path / "one", corpus, FakeEmbedder())
    index = memlane.open_index(out, embedder=FakeEmbedder(), cache_dir=tmp_path / "cache")
    fake = FakeEmbedder()
    for query in QUERIES:
        vector = np.ascontiguousarray(fake.embed_query(query))
        for filters in FILTERS[:3]:
            kw = {"vector": vector, "embedder_id": FakeEmbedder.id, **filters}
            _same_up_to_ties(_raw(index._store, query, **kw), _raw(one._store, query, **kw))
        a, b = index.search(query), one.search(query)
        _same_up_to_ties([(h.id, h.score) for h in a], [(h.id, h.score) for h in b])
    # recall uses the chunk vectors from the shards' embedding caches (time-aware reordering)
    assert index.recall("which database does billing use?").text == one.recall("which database does billing use?").text


def test_rerun_lists_diffs_and_indexes_only_what_changed(cluster, s3, tmp_path: Path) -> None:
    root = tmp_path / "src"
    _synthetic(root, 10, seed=3)
    _upload(s3, root, "incr")
    src, out = f"s3://{BUCKET}/incr/", f"s3://{OUT_BUCKET}/incr/"
    first = index_sources([src], out, shards=4, embed="none")
    assert first.files_indexed == 10
    again = index_sources([src], out, embed="none")
    assert (again.files_indexed, again.files_removed, again.shards_built, again.generation) == (0, 0, 0, None)
    assert again.files_unchanged == 10 and cat.load(location(out)).generation == 1
    # Change one object, delete one, add one, and upload an exact copy of another.
    changed = root / "proj-1" / "s001.jsonl"
    write_jsonl(
        changed,
        generic_session("syn-1", [("what changed in the rollback?", "the rollback now keeps the ledger replica")]),
    )
    s3.put_object(Bucket=BUCKET, Key="incr/proj-1/s001.jsonl", Body=changed.read_bytes())
    (root / "proj-2" / "s002.jsonl").unlink()
    s3.delete_object(Bucket=BUCKET, Key="incr/proj-2/s002.jsonl")
    write_jsonl(
        root / "proj-9" / "new.jsonl",
        generic_session("new-1", [("a brand new question about cron", "cron runs nightly")]),
    )
    s3.put_object(Bucket=BUCKET, Key="incr/proj-9/new.jsonl", Body=(root / "proj-9" / "new.jsonl").read_bytes())
    s3.put_object(Bucket=BUCKET, Key="incr/copies/s003.jsonl", Body=(root / "proj-3" / "s003.jsonl").read_bytes())
    third = index_sources([src], out, embed="none")
    assert (third.files_indexed, third.files_removed, third.duplicates, third.files_unchanged) == (2, 1, 1, 8)
    assert 1 <= third.shards_built <= 3 and third.generation == 2
    one = _one_home(tmp_path / "one", root)
    index = memlane.open_index(out, embedder="none", cache_dir=tmp_path / "cache")
    assert index.status()["chunks"] == one.status()["chunks"]
    for query in [*QUERIES, "rollback ledger replica", "cron nightly"]:
        assert _raw(index._store, query) == _raw(one._store, query)


def _ray_processes(title: str) -> list[int]:
    """Pids of the Ray workers whose process title is ``ray::TITLE`` (Ray names a worker after
    the task or actor it runs)."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and (proc / "cmdline").read_bytes().startswith(f"ray::{title}".encode()):
                pids.append(int(proc.name))
        except OSError:  # gone meanwhile
            continue
    return pids


def _kill_when_running(title: str, killed: list, stop: threading.Event) -> None:
    while not stop.is_set() and not killed:
        for pid in _ray_processes(title):
            time.sleep(0.5)  # let it get some way in
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
            return
        time.sleep(0.1)


def test_killed_worker_and_actor_are_retried_and_the_result_is_undisturbed(cluster, s3, tmp_path: Path) -> None:
    root = tmp_path / "src"
    _synthetic(root, 8, seed=5)
    _upload(s3, root, "faults")
    out = f"s3://{OUT_BUCKET}/faults/"
    killed_task: list = []
    killed_actor: list = []
    stop = threading.Event()
    killers = [
        threading.Thread(target=_kill_when_running, args=("build_shard", killed_task, stop)),
        threading.Thread(target=_kill_when_running, args=("EmbedWorker.embed", killed_actor, stop)),
    ]
    for t in killers:
        t.start()
    try:
        report = index_sources([f"s3://{BUCKET}/faults/"], out, shards=2, embed=SlowFakeEmbedder(), embed_actors=1)
    finally:
        stop.set()
        for t in killers:
            t.join()
    assert killed_task and killed_actor  # both a shard worker and the embedding actor were kill -9'd
    assert report.files_indexed == 8 and report.chunks_embedded == report.chunks
    one = _one_home(tmp_path / "one", root, FakeEmbedder())
    index = memlane.open_index(out, embedder=FakeEmbedder(), cache_dir=tmp_path / "cache")
    assert index.status()["chunks"] == one.status()["chunks"]
    fake = FakeEmbedder()
    for query in QUERIES:
        kw = {"vector": np.ascontiguousarray(fake.embed_query(query)), "embedder_id": FakeEmbedder.id}
        _same_up_to_ties(_raw(index._store, query, **kw), _raw(one._store, query, **kw))


def test_killed_driver_is_resumed_by_the_same_command(cluster, s3, tmp_path: Path) -> None:
    root = tmp_path / "src"
    _synthetic(root, 24, seed=11)
    src, out = str(root), f"s3://{OUT_BUCKET}/driver/"
    address = ray.get_runtime_context().gcs_address
    command = [
        sys.executable,
        "-m",
        "memlane.cli",
        "index",
        src,
        "--ray",
        address,
        "--shards",
        "8",
        "--out",
        out,
        "--embed",
        "none",
    ]
    driver = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    assert driver.stderr is not None
    for line in driver.stderr:
        if line.startswith("shards: "):  # the first shard version is committed
            driver.send_signal(signal.SIGKILL)
            break
    driver.wait(timeout=120)
    driver.stderr.close()
    assert driver.returncode == -signal.SIGKILL
    assert cat.load(location(out)) is None  # killed before publishing: readers see nothing yet
    resumed = index_sources([src], out, shards=8, embed="none")  # the same command
    with_work = len({s.shard for s in cat.load(location(out)).sources.values()})
    assert resumed.shards_resumed >= 1 and resumed.shards_resumed + resumed.shards_built == with_work
    assert resumed.generation == 1 and resumed.files_indexed == 24
    one = _one_home(tmp_path / "one", root)
    index = memlane.open_index(out, embedder="none", cache_dir=tmp_path / "cache")
    for query in QUERIES:
        assert _raw(index._store, query) == _raw(one._store, query)


def test_cli_index_search_status_and_a_downloaded_shard_is_a_home(
    cluster, s3, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from memlane.cli import main

    root = tmp_path / "src"
    _synthetic(root, 6, seed=13)
    # A gzipped object is read through (the core reads .zst itself).
    data = (root / "proj-0" / "s000.jsonl").read_bytes()
    (root / "proj-0" / "s000.jsonl").unlink()
    s3.put_object(Bucket=BUCKET, Key="cli/proj-0/s000.jsonl.gz", Body=gzip.compress(data))
    _upload(s3, root, "cli")
    out = f"s3://{OUT_BUCKET}/cli/"
    assert main(["index", f"s3://{BUCKET}/cli/", "--ray", "auto", "--shards", "2", "--partition-depth", "1", "--out", out, "--embed", "none",
                 "--quantization", "f16", "--json"]) == 0  # fmt: skip
    report = json.loads(capsys.readouterr().out)
    assert report["files_indexed"] == 6 and report["generation"] == 1
    catalog = cat.load(location(out))
    assert catalog.partition.depth == 1
    # Partitioned by project folder: every project's sessions live in one shard.
    assert {s.root for s in catalog.sources.values()} == {f"s3://{BUCKET}/cli"}
    for project in ("proj-0", "proj-1"):
        assert len({s.shard for u, s in catalog.sources.items() if f"/{project}/" in u}) == 1
    assert main(["--index", out, "search", "deploy rollback", "-k", "3", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert hits and all(h["path"].startswith(f"s3://{BUCKET}/cli/") for h in hits)
    assert main(["--index", out, "status", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["files"] == 6
    # A shard downloaded by hand is an ordinary home, with the vector storage asked for.
    ref = next(s for s in catalog.shards if s.version)
    record = cat.version_record(location(out), ref.shard, ref.version)
    home = cat.materialize(location(out), ref.shard, record, tmp_path / "shard")
    assert memlane.open(home, embedder="none").status()["quantization"] == "f16"
    assert main(["--home", str(home), "search", "deploy rollback", "--embed", "none", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)
    assert main(["--index", out, "forget", "--session", "syn-1"]) == 2
    assert "search, recall, status and ui only" in capsys.readouterr().err


def test_bedrock_actors_share_one_rate_limit_and_back_off_on_throttling(cluster, s3, tmp_path: Path) -> None:
    root = tmp_path / "src"
    _synthetic(root, 6, seed=17)
    _upload(s3, root, "bedrock")
    out = f"s3://{OUT_BUCKET}/bedrock/"
    report = index_sources(
        [f"s3://{BUCKET}/bedrock/"],
        out,
        shards=2,
        embed=FakeTitan(throttle_every=5),
        embed_actors=2,
        requests_per_second=500,
    )
    assert report.embedder_id == "bedrock/amazon.titan-embed-text-v2:0/256"
    assert report.chunks_embedded == report.chunks > 0
    u = report.embed_usage
    # Every first attempt went through the one limiter; Bedrock's throttles were retried by
    # the embedder and slowed the whole cluster down.
    assert u["retries"] >= 1 and u["requests"] == u["limiter_granted"] + u["retries"]
    assert u["limiter_throttles"] >= 1 and u["input_tokens"] > 0 and u["estimated_cost_usd"] > 0
    titan = FakeTitan()()
    one = _one_home(tmp_path / "one", root, titan)
    index = memlane.open_index(out, embedder=titan, cache_dir=tmp_path / "cache")
    for query in QUERIES:
        kw = {"vector": np.ascontiguousarray(titan.embed_query(query)), "embedder_id": report.embedder_id}
        _same_up_to_ties(_raw(index._store, query, **kw), _raw(one._store, query, **kw))


def test_local_model_by_spec_from_folder_to_folder(cluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from conftest import write_deploy_and_cooking

    from memlane.cli import main

    src, out = write_deploy_and_cooking(tmp_path / "src"), tmp_path / "index"
    # The actors build the real local model from its spec (the CLI's path), one thread each.
    assert (
        main(["index", str(src), "--ray", "auto", "--shards", "2", "--out", str(out), "--embed", "local", "--json"])
        == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert (
        report["embedder_id"].startswith("local/all-MiniLM-L6-v2/")
        and report["chunks_embedded"] == report["chunks"] > 0
    )
    assert main(["--index", str(out), "search", "the container ran out of memory", "-k", "3", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert hits[0]["session_id"] == "deploy-1" and hits[0]["scores"]["vector"] > 0


def test_rate_limiter_lends_halves_on_throttling_and_recovers() -> None:
    from memlane.cluster.build import RateLimiter

    now = [0.0]
    limiter = RateLimiter(100, clock=lambda: now[0])
    assert limiter.acquire(100) == 0.0  # a second's burst
    assert limiter.acquire(50) == pytest.approx(0.5)  # a batch beyond the bucket waits its share
    limiter.throttled()
    limiter.throttled()
    assert limiter.rate == pytest.approx(25)  # halved twice
    for _ in range(10):
        limiter.throttled()
    assert limiter.rate == pytest.approx(100 / 16)  # never below the floor
    now[0] += 100.0
    for _ in range(20):
        limiter.acquire(50)
    assert limiter.rate == pytest.approx(100)  # requests that go through win the rate back
    assert limiter.stats()["granted"] == 1150
    with pytest.raises(ValueError):
        RateLimiter(0)


def test_open_index_refresh_a_zst_object_and_an_export_uploaded_twice(cluster, s3, tmp_path: Path) -> None:
    zstd = shutil.which("zstd")
    if zstd is None:
        pytest.skip("needs the zstd command to write a .zst object")
    root = tmp_path / "src"
    _synthetic(root, 6, seed=19)
    _upload(s3, root, "refresh")
    src, out = f"s3://{BUCKET}/refresh/", f"s3://{OUT_BUCKET}/refresh/"
    index_sources([src], out, shards=4, embed="none")
    index = memlane.open_index(out, embedder="none", cache_dir=tmp_path / "cache")
    assert index.refresh() is False and not index.search("zebra archive frobnicated")
    # A zstd-compressed session, and one conversation exported twice into two shards.
    cold = write_jsonl(
        tmp_path / "cold.jsonl",
        generic_session(
            "zst-1", [("where is the frobnicated zebra archive?", "the zebra archive sits in cold storage")]
        ),
    )
    (root / "proj-z").mkdir()
    subprocess.run([zstd, "-q", str(cold), "-o", str(root / "proj-z" / "cold.jsonl.zst")], check=True)
    s3.put_object(
        Bucket=BUCKET, Key="refresh/proj-z/cold.jsonl.zst", Body=(root / "proj-z" / "cold.jsonl.zst").read_bytes()
    )
    twice = write_jsonl(
        root / "export-a" / "dup.jsonl",
        generic_session("dup-1", [("why did the quokka canary stall?", "the quokka canary waited on a lock")]),
    )
    partition = cat.Partition(4)
    first = partition.shard_of(f"s3://{BUCKET}/refresh", "export-a/dup.jsonl")
    other = next(
        f"export-{i}/dup.jsonl"
        for i in range(100)
        if partition.shard_of(f"s3://{BUCKET}/refresh", f"export-{i}/dup.jsonl") != first
    )
    for key in ("export-a/dup.jsonl", other):
        s3.put_object(Bucket=BUCKET, Key=f"refresh/{key}", Body=twice.read_bytes())
    second = index_sources([src], out, embed="none")
    assert (second.files_indexed, second.duplicates, second.files_unchanged) == (2, 1, 6)
    # An open index moves to the new catalog version when asked, and only then.
    assert index.catalog.generation == 1 and not index.search("zebra archive frobnicated")
    assert index.refresh() is True and index.catalog.generation == 2 and index.refresh() is False
    hits = index.search("zebra archive frobnicated")
    assert hits and hits[0].session_id == "zst-1" and hits[0].path == f"s3://{BUCKET}/refresh/proj-z/cold.jsonl.zst"
    # The sharded index equals one home holding the conversation once.
    one = _one_home(tmp_path / "one", root)
    assert index.status()["chunks"] == one.status()["chunks"]
    for query in [*QUERIES, "zebra archive frobnicated", "quokka canary lock"]:
        assert _raw(index._store, query) == _raw(one._store, query)
    assert len([h for h in index.search("quokka canary lock") if h.session_id == "dup-1"]) == 1


def test_catalog_pointer_swap_is_atomic(s3, tmp_path: Path) -> None:
    for out in (location(tmp_path / "idx"), location(f"s3://{OUT_BUCKET}/atomic/")):
        big = {f"s3://b/k{i}": cat.Source(f"e{i}", i, i % 3, "s3://b") for i in range(3000)}
        cat.publish(
            out, cat.Catalog(generation=1, shards=[cat.ShardRef(0, None)], partition=cat.Partition(3), sources=big)
        )
        seen: list[int] = []
        stop = threading.Event()

        def read() -> None:
            while not stop.is_set():
                seen.append(cat.load(out).generation)  # never a partial catalog: no error here

        reader = threading.Thread(target=read)
        reader.start()
        for g in range(2, 12):
            cat.publish(
                out, cat.Catalog(generation=g, shards=[cat.ShardRef(0, None)], partition=cat.Partition(3), sources=big)
            )
        stop.set()
        reader.join()
        assert seen and seen == sorted(seen) and cat.load(out).generation == 11
        # A writer that died after writing a catalog version but before the swap changed nothing.
        out.write_bytes("catalogs/00000012.json", b'{"half":')
        assert cat.load(out).generation == 11


def test_partition_is_stable_and_keeps_a_prefix_together() -> None:
    by_key = cat.Partition(64)
    assert by_key.shard_of("s3://b/logs", "p/a.jsonl") == cat.Partition(64).shard_of("s3://b/logs/", "p/a.jsonl")
    assert len({by_key.shard_of("s3://b/logs", f"p/{i}.jsonl") for i in range(200)}) > 40
    by_project = cat.Partition(64, depth=1)
    assert len({by_project.shard_of("s3://b/logs", f"p/{i}.jsonl") for i in range(200)}) == 1


def test_import_memlane_does_not_import_ray_or_boto3() -> None:
    code = "import sys, memlane; memlane.open_index; import memlane.cluster.search; print(sorted(m for m in ('ray', 'boto3') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# -- Bedrock batch inference for a sharded index (memlane.cluster.batch) ----------------------


class QueryTitan:
    """Titan's vectors as the simulated batch service makes them (unit ``raw_vector``), for
    queries only: the shards' vectors must all come from the batch jobs."""

    dim, max_window_tokens = 256, 8192
    id = "bedrock/amazon.titan-embed-text-v2:0/256"

    def embed_query(self, text: str) -> np.ndarray:
        from test_embed_bedrock_batch import raw_vector, unit

        return unit(raw_vector(text, self.dim)).astype(np.float32)

    def embed_documents(self, texts):
        raise AssertionError("only the batch jobs embed documents")


def _interrupt(_: float) -> None:
    raise KeyboardInterrupt


def test_bedrock_batch_backfill_of_a_sharded_index_interrupted_resumed_then_hybrid(
    cluster, s3, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import boto3
    from botocore.stub import Stubber
    from test_embed_batch_backfill import LONG_REPLY
    from test_embed_bedrock import no_sleep, runtime_client
    from test_embed_bedrock_batch import BUCKET as BATCH_BUCKET
    from test_embed_bedrock_batch import (
        ROLE,
        arn,
        description,
        expect_two_jobs_then_polling,
        raw_vector,
        simulate_service,
        unit,
    )

    from memlane.cluster.batch import PLAN_FILE, embed_index_batch
    from memlane.embed.batch_backfill import STATE_FILE
    from memlane.embed.bedrock import BedrockEmbedder

    root = tmp_path / "src"
    for f in range(3):
        pairs = [
            (
                f"question {f}-{i}: why did service {i} fail?",
                f"answer {f}-{i}: the node ran out of memory." + LONG_REPLY,
            )
            for i in range(40)
        ]
        write_jsonl(root / f"p{f}" / f"s{f}.jsonl", generic_session(f"batch-{f}", pairs))
    _upload(s3, root, "batch")
    out = f"s3://{OUT_BUCKET}/batch/"
    assert index_sources([f"s3://{BUCKET}/batch/"], out, shards=3, embed="none").chunks == 120
    s3.create_bucket(Bucket=BATCH_BUCKET)
    batch_uri, state = f"s3://{BATCH_BUCKET}/memlane/batch", tmp_path / "state"
    emb = BedrockEmbedder(dimensions=256, client=runtime_client(), retry=no_sleep(), concurrency=1)
    bedrock = boto3.client("bedrock", region_name="us-east-1")
    with Stubber(emb.client) as online, Stubber(bedrock) as control:  # no online response: any call fails
        # Run 1: 120 texts -> jobs of 50 and 50, 20 left over (below the minimum of 30);
        # the driver is interrupted while it polls the first job.
        expect_two_jobs_then_polling(control)
        with pytest.raises(KeyboardInterrupt):
            embed_index_batch(out, batch_uri, ROLE, embedder=emb, state_dir=state, s3=s3, bedrock=bedrock, sleep=_interrupt,
                              max_records_per_job=50, min_records_per_job=30, poll_seconds=1)  # fmt: skip
        saved = json.loads((state / STATE_FILE).read_text())
        assert [j["arn"] for j in saved["jobs"]] == [arn(0), arn(1)] and len(saved["leftover"]) == 20
        assert (state / PLAN_FILE).exists() and cat.load(location(out)).generation == 1

        # The service finishes both jobs. Run 2, the same command: polled, never submitted again
        # (the Stubber has no create response), read, shared, shards filled, one catalog swap.
        simulate_service(s3)
        control.add_response("get_model_invocation_job", description(arn(0), "Completed"), {"jobIdentifier": arn(0)})
        control.add_response("get_model_invocation_job", description(arn(1), "Completed"), {"jobIdentifier": arn(1)})
        report = embed_index_batch(
            out, batch_uri, ROLE, embedder=emb, state_dir=state, s3=s3, bedrock=bedrock, sleep=_interrupt
        )
        control.assert_no_pending_responses()
        online.assert_no_pending_responses()
    assert report.resumed and (report.jobs, report.records, report.embedded, report.leftover) == (2, 100, 100, 20)
    assert (report.chunks_embedded, report.chunks_pending, report.embedded_on_demand) == (100, 20, 0)
    assert report.generation == 2 and report.packs == report.shards_filled > 0 and not state.exists()
    catalog = cat.load(location(out))
    assert catalog.embedder_id == emb.id and catalog.dim == 256
    packs = [o.key for o in location(out).list("shards") if "/vectors/" in o.key]
    assert len(packs) == report.packs

    # The same vectors joined to the same chunks as one home given the vectors of the texts the
    # jobs were sent: hybrid search over the shards equals it up to ties.
    sent = [
        json.loads(line)["modelInput"]["inputText"]
        for key in sorted(
            o["Key"] for o in s3.list_objects_v2(Bucket=BATCH_BUCKET)["Contents"] if o["Key"].endswith(".jsonl")
        )
        for line in s3.get_object(Bucket=BATCH_BUCKET, Key=key)["Body"].read().decode().splitlines()
    ]
    assert len(sent) == 100
    one = memlane.open(tmp_path / "one", embedder=QueryTitan())
    one.index([str(root)], embed=False)
    with one._store.writer() as writer:
        rows = writer.chunk_texts([int(k) for k in writer.pending_vectors()])
    one.cache.put_many(QueryTitan.id, {h: unit(raw_vector(t, 256))[None, :] for _, h, t in rows if t in set(sent)})
    assert one.embed_pending(cache_only=True) == 100
    index = memlane.open_index(out, embedder=QueryTitan(), cache_dir=tmp_path / "cache")
    assert index.status()["chunks"] == 120
    for query in [*QUERIES[:4], sent[3], "why did service 7 fail"]:
        kw = {"vector": np.ascontiguousarray(QueryTitan().embed_query(query)), "embedder_id": QueryTitan.id}
        got, want = _raw(index._store, query, **kw), _raw(one._store, query, **kw)
        _same_up_to_ties(got, want)
        assert any(v > 0 for *_, v in got) or not got
    top = index.search(sent[3], k=1)[0]
    assert top.text.strip() == sent[3].strip() and top.scores["vector"] > 0.99

    # The 20 left over go in a later run (a job of 20 now allowed); the 100 are not sent again.
    before = len(sent)
    control = Stubber(bedrock)
    control.add_response("create_model_invocation_job", {"jobArn": arn(2)})
    control.add_response("get_model_invocation_job", description(arn(2), "InProgress"), {"jobIdentifier": arn(2)})
    with control, pytest.raises(KeyboardInterrupt):
        embed_index_batch(out, batch_uri, ROLE, embedder=emb, state_dir=state, s3=s3, bedrock=bedrock, sleep=_interrupt,
                          min_records_per_job=10, poll_seconds=1)  # fmt: skip
    simulate_service(s3)
    control = Stubber(bedrock)
    control.add_response("get_model_invocation_job", description(arn(2), "Completed"), {"jobIdentifier": arn(2)})
    publish = cat.publish

    def die(before: bool):
        def publish_then_die(out_loc, catalog):
            if not before:
                publish(out_loc, catalog)
            raise KeyboardInterrupt

        return publish_then_die

    # The driver dies with the filled shards committed but no catalog published, then again
    # right after publishing: the same command finishes each time without building anything twice.
    with control, pytest.MonkeyPatch.context() as mp:
        mp.setattr(cat, "publish", die(before=True))
        with pytest.raises(KeyboardInterrupt):
            embed_index_batch(out, embedder=emb, state_dir=state, s3=s3, bedrock=bedrock)
    assert cat.load(location(out)).generation == 2
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cat, "publish", die(before=False))
        with pytest.raises(KeyboardInterrupt):
            embed_index_batch(out, embedder=emb, state_dir=state, s3=s3, bedrock=bedrock)
    filled = embed_index_batch(out, embedder=emb, state_dir=state, s3=s3, bedrock=bedrock)
    assert (filled.generation, filled.shards_filled, filled.records) == (3, 0, 20) and not state.exists()
    again = cat.load(location(out))
    assert again.generation == 3
    inputs = [o["Key"] for o in s3.list_objects_v2(Bucket=BATCH_BUCKET)["Contents"] if o["Key"].endswith(".jsonl")]
    assert before == 100 and len(inputs) == 3
    final = cat.load(location(out))
    records = [cat.version_record(location(out), s.shard, s.version) for s in final.shards if s.version]
    assert sum(r["chunks"] for r in records) == 120 and all(r["report"]["chunks_pending"] == 0 for r in records)
    with pytest.raises(ValueError, match="no batch run to resume"):
        embed_index_batch(out, embedder=emb, state_dir=state, s3=s3, bedrock=bedrock)
    # The CLI, with nothing left to embed: no job, no shard filled, nothing published.
    import memlane.embed.bedrock_batch as bedrock_batch
    from memlane.cli import main

    with pytest.MonkeyPatch.context() as mp, Stubber(bedrock):
        mp.setattr(bedrock_batch, "make_batch_clients", lambda region, profile=None: (s3, bedrock))
        capsys.readouterr()
        argv = ["--index", out, "--json", "embed", "--batch", batch_uri, "--batch-role", ROLE, "--embed", "bedrock:256"]
        assert main(argv) == 0
        done = json.loads(capsys.readouterr().out)
        assert main([a for a in argv if a != "--json"]) == 0
    assert (done["jobs"], done["records"], done["shards_filled"], done["generation"]) == (0, 0, 0, None)
    assert "ran 0 batch jobs" in capsys.readouterr().out
    assert cat.load(location(out)).generation == 3
    # With no run saved and no --batch it says so in one line.
    capsys.readouterr()
    assert main(["--index", out, "embed", "--embed", "bedrock:256"]) != 0
    err = capsys.readouterr().err.strip()
    assert "no batch run to resume for this index" in err and "\n" not in err
