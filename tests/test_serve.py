"""Serving a sharded index on Ray Serve (issue 23): over HTTP equal to one home, fresh across
a re-index without a failed request, partial while a shard actor is down, token and binding
rules, project-scoped queries that touch only the project's shards.

A local Ray cluster (2 CPUs) and a moto S3 server on 127.0.0.1, as in tests/test_cluster.py
(whose fixtures it reuses); skipped without the ``ray`` extra or ``moto[server]``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from conftest import FakeEmbedder, free_port, generic_session, write_jsonl
from test_cluster import (  # noqa: F401 - fixtures
    BUCKET,
    OUT_BUCKET,
    QUERIES,
    _one_home,
    _same_up_to_ties,
    _synthetic,
    _upload,
    cluster,
    corpus,
    s3,
)
from test_projects import claude_lines

with warnings.catch_warnings():  # Ray Serve's own models use deprecated pydantic options on import
    warnings.simplefilter("ignore", DeprecationWarning)
    import ray.serve  # noqa: F401

import memlane
from memlane.cli import main
from memlane.cluster.client import RemoteError
from memlane.cluster.index import index_sources

TOKEN = "s3cret-token"
AGENT_TOKEN = "alpha-agent-token"  # the hybrid server's tokens file: project:alpha
PROJECT_QUERY = "which database does billing use"
SECRET = "AKIAQYLPMN5HHHFP8WVY"  # an AWS key id pasted into a beta session
SECRET_QUERY = "billing deploy key rotation"


def _projects(root: Path) -> None:
    """Sessions written in two repositories, each under its own top folder (one shard each);
    beta's second session holds a key."""
    for name, db in (("alpha", "Postgres 16"), ("beta", "MySQL 8")):
        turns = [
            (
                PROJECT_QUERY + "?",
                f"Billing in {name} stores invoices in {db}, backed up nightly.",
                f"/src/{name}",
                "main",
            )
        ]
        write_jsonl(root / f"team-{name}" / f"{name}.jsonl", claude_lines(f"{name}-1", turns))
    turns = [(SECRET_QUERY + "?", f"The billing deploy key is {SECRET}; its rotation is monthly.", "/src/beta", "main")]
    write_jsonl(root / "team-beta" / "keys.jsonl", claude_lines("beta-2", turns))


@pytest.fixture(scope="module")
def served(cluster, s3, corpus: Path, tmp_path_factory: pytest.TempPathFactory):
    """One hybrid index (fake vectors) in 4 shards partitioned by top folder, served twice:
    ``bm25`` (no query embedder, no token) and ``hybrid`` (the fake embedder, an admin token, a
    tokens file giving AGENT_TOKEN the role project:alpha, show_secrets allowed)."""
    root = tmp_path_factory.mktemp("served-corpus")
    import shutil

    shutil.copytree(corpus, root, dirs_exist_ok=True)
    _projects(root)
    _upload(s3, root, "serve")
    out = f"s3://{OUT_BUCKET}/served/"
    report = index_sources([f"s3://{BUCKET}/serve/"], out, shards=4, partition_depth=1, embed=FakeEmbedder())
    assert report.generation == 1
    from memlane.cluster import serve as srv

    port = free_port()
    cache = str(tmp_path_factory.mktemp("serve-cache"))
    bm25 = srv.start(
        out,
        port=port,
        embedder="none",
        shard_actors=2,
        refresh_seconds=0.5,
        cache_dir=cache,
        app="bm25",
        route_prefix="/bm25",
    )
    tokens = tmp_path_factory.mktemp("tokens") / "tokens.txt"
    tokens.write_text(f"# agents of the served index\n{AGENT_TOKEN} project:alpha\n")
    tokens.chmod(0o600)
    hybrid = srv.start(
        out, port=port, embedder=FakeEmbedder(), token=TOKEN, token_file=str(tokens), allow_show_secrets=True, shard_actors=2, cache_dir=cache,
        app="hybrid", route_prefix="/hybrid",
    )  # fmt: skip
    yield {"root": root, "out": out, "bm25": bm25, "hybrid": hybrid, "report": report}
    from ray import serve

    serve.shutdown()


def _hits(hits) -> list[tuple[str, float]]:
    return [(h.id, h.score) for h in hits]


def test_remote_search_equals_one_home(served, tmp_path: Path) -> None:
    one = _one_home(tmp_path / "one", served["root"], embedder=FakeEmbedder())
    keywords = memlane.open(tmp_path / "one", embedder="none")
    bm25 = memlane.connect(served["bm25"].url)
    hybrid = memlane.connect(served["hybrid"].url, token=TOKEN)
    assert bm25.status()["chunks"] == one.status()["chunks"] == served["report"].chunks
    for query in QUERIES + [PROJECT_QUERY]:
        # BM25 only: identical ids and scores, in order.
        assert _hits(bm25.search(query, k=10)) == _hits(keywords.search(query, k=10)), query
        assert not bm25.partial
        # Hybrid, the same query vector on both sides: identical up to ties.
        got = [(h.id, h.score) for h in hybrid.search(query, k=10)]
        want = [(h.id, h.score) for h in one.search(query, k=10)]
        _same_up_to_ties(got, want)
    got_recall, want_recall = hybrid.recall(PROJECT_QUERY, max_tokens=2000), one.recall(PROJECT_QUERY, max_tokens=2000)
    assert [i.id for i in got_recall.items] == [i.id for i in want_recall.items] and got_recall.text == want_recall.text


def test_cli_remote_search_json_is_the_home_s(served, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    home = tmp_path / "one"
    _one_home(home, served["root"])
    assert main(["--home", str(home), "--json", "search", "deploy failed with exit code 137", "--embed", "none"]) == 0
    local = json.loads(capsys.readouterr().out)
    assert main(["--remote", served["bm25"].url, "--json", "search", "deploy failed with exit code 137"]) == 0
    remote = json.loads(capsys.readouterr().out)
    # The same hits field by field; paths name the S3 objects the shards were built from, and
    # a project taken from a file's folder (aider) is that of the worker's staged copy.
    root, staged = str(served["root"]), os.path.realpath(os.environ["MEMLANE_STAGE_DIR"]) + f"/s3/{BUCKET}/serve"
    for hit in local:
        hit["path"] = f"s3://{BUCKET}/serve" + hit["path"].removeprefix(root)
        hit["project"] = hit["project"].replace(root, staged)
    assert remote == local and remote
    assert main(["--remote", served["bm25"].url, "search", "deploy failed with exit code 137", "-k", "2"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("1. [") and "exit code 137" in text


def test_token_401_without_200_with(
    served, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import urllib.error
    import urllib.request

    url = served["hybrid"].url
    monkeypatch.delenv("MEMLANE_TOKEN", raising=False)
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{url}/status")
    assert refused.value.code == 401
    with pytest.raises(RemoteError, match="401 unauthorized: the server needs a token"):
        memlane.connect(url).search("deploy")
    with pytest.raises(RemoteError, match="refused the token"):
        memlane.connect(url, token="wrong").status()
    assert main(["--remote", url, "search", "deploy"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "401" in err and "Traceback" not in err
    monkeypatch.setenv("MEMLANE_TOKEN", TOKEN)  # the client reads the same variable
    assert memlane.connect(url).status()["generation"] == 1
    # The scheme's case is free (RFC 7235): any spelling of bearer carries the token.
    for scheme in ("bearer", "BEARER", "Bearer"):
        assert _ask(url, "/status", token=TOKEN, scheme=scheme) == (
            200,
            _ask(url, "/status", token=TOKEN)[1] | {"role": "admin"},
        )
    assert _ask(url, "/status", token=TOKEN, scheme="Basic")[0] == 401
    # A client process never imports Ray (nor an HTTP package beyond the standard library's).
    code = f"import sys, memlane; memlane.connect({url!r}).search('deploy'); print(sorted({{'ray', 'requests', 'httpx'}} & set(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "MEMLANE_TOKEN": TOKEN},
        check=True,
    )
    assert done.stdout.strip() == "[]"


def test_bad_requests_get_a_json_error_and_a_status_saying_which(served) -> None:
    import json

    from memlane.cluster.serve import MAX_K

    url = served["bm25"].url

    def ask(path: str, body: bytes) -> tuple[int, dict]:
        return _ask(url, path, body)

    assert ask("/search", b'{"query": "deploy", "k": 3}')[0] == 200
    for path, body, status, says in [
        ("/search", b"not json", 400, "the body is not JSON"),
        ("/search", b"[1, 2]", 400, "the body must be a JSON object"),
        ("/search", b'{"k": 3}', 400, "needs a query"),
        ("/search", b'{"query": "deploy", "limit": 3}', 400, "unknown field(s) limit"),
        ("/search", json.dumps({"query": "deploy", "k": MAX_K + 1}).encode(), 400, f"at most {MAX_K}"),
        ("/status", b"{}", 405, "/status takes GET"),
        ("/nothing", b"{}", 404, "no such endpoint /bm25/nothing"),
    ]:
        got = ask(path, body)
        assert got[0] == status and says in got[1]["error"], (path, body, got)


def _ask(
    url: str, path: str, body: dict | bytes | None = None, *, token: str | None = None, scheme: str = "Bearer"
) -> tuple[int, dict]:
    """One request with the standard library (a dict body sent as JSON, bytes as they are): its
    status and JSON answer (an error's too)."""
    import json
    import urllib.error
    import urllib.request

    headers = {"Content-Type": "application/json", **({"Authorization": f"{scheme} {token}"} if token else {})}
    data = body if body is None or isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(f"{url}{path}", data, headers)
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        assert error.headers["Content-Type"] == "application/json"
        return error.code, json.loads(error.read())


def test_show_secrets_is_refused_by_a_server_not_started_to_allow_it(
    served, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    url = served["bm25"].url
    masked = _ask(url, "/search", {"query": SECRET_QUERY, "k": 3})
    assert (
        masked[0] == 200
        and "AKIA…8WVY" in json.dumps(masked[1], ensure_ascii=False)
        and SECRET not in json.dumps(masked[1])
    )
    for route, body in (
        ("/search", {"query": SECRET_QUERY, "show_secrets": True}),
        ("/recall", {"query": SECRET_QUERY, "show_secrets": True}),
    ):
        status, answer = _ask(url, route, body)
        assert status == 403 and SECRET not in json.dumps(answer), (route, answer)
        assert answer["error"] == (
            "show_secrets refused: this server hands out texts with secrets masked "
            "(`memlane serve --allow-show-secrets` lets admin tokens ask, each request logged)"
        )
    with pytest.raises(
        RemoteError,
        match=r"/search: 403 forbidden: show_secrets refused: this server hands out texts with secrets masked",
    ):
        memlane.connect(url).search(SECRET_QUERY, show_secrets=True)
    assert main(["--remote", url, "recall", SECRET_QUERY]) == 0  # masked, as by default
    out = capsys.readouterr().out
    assert "AKIA…8WVY" in out and SECRET not in out


def _serve_log(app: str) -> str:
    """What the router replicas of Serve application ``app`` wrote to their log files."""
    from ray._private import worker

    logs = Path(worker._global_node.get_session_dir_path()) / "logs" / "serve"
    return "".join(path.read_text(errors="replace") for path in sorted(logs.glob(f"replica_{app}_router_*.log")))


def test_show_secrets_allowed_is_granted_to_admin_tokens_only_and_logged(served) -> None:
    url = served["hybrid"].url
    admin, agent = memlane.connect(url, token=TOKEN), memlane.connect(url, token=AGENT_TOKEN)
    assert SECRET in " ".join(h.text for h in admin.search(SECRET_QUERY, show_secrets=True))
    assert SECRET in admin.recall(SECRET_QUERY, show_secrets=True).text
    assert SECRET not in " ".join(h.text for h in admin.search(SECRET_QUERY)) + admin.recall(SECRET_QUERY).text
    with pytest.raises(
        RemoteError, match="403 forbidden: show_secrets refused: agent project:alpha gets texts with secrets masked"
    ):
        agent.search(SECRET_QUERY, show_secrets=True)
    # Each granted request is a line of the router replica's log, naming the role and where its
    # token was given (never the token).
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and _serve_log("hybrid").count("show_secrets granted") < 2:
        time.sleep(0.2)
    log = _serve_log("hybrid")
    assert "show_secrets granted: POST /search by admin (token of --token)" in log
    assert "show_secrets granted: POST /recall by admin (token of --token)" in log
    assert log.count("show_secrets granted") == 2 and TOKEN not in log and AGENT_TOKEN not in log


def test_a_project_agent_s_token_reads_its_project_only(
    served, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = served["hybrid"].url
    admin, agent = memlane.connect(url, token=TOKEN), memlane.connect(url, token=AGENT_TOKEN)
    assert agent.status()["role"] == "project:alpha" and admin.status()["role"] == "admin"
    # The admin reads every project; the agent, asking for none, alpha's only.
    assert {"/src/alpha", "/src/beta"} <= {h.project for h in admin.search(PROJECT_QUERY, k=20)}
    hits = agent.search(PROJECT_QUERY, k=20)
    assert hits and {h.project for h in hits} == {"/src/alpha"}
    assert "/src/beta" in {h.project for h in admin.search(SECRET_QUERY)} and "/src/beta" not in {
        h.project for h in agent.search(SECRET_QUERY, k=20)
    }
    assert [h.id for h in agent.search(PROJECT_QUERY, project="/src/alpha", k=20)] == [h.id for h in hits]
    recalled = agent.recall(PROJECT_QUERY, max_tokens=2000).text
    assert "Postgres 16" in recalled and "MySQL 8" not in recalled
    # Another project asked is refused, not quietly answered from alpha's.
    for route, body in (
        ("/search", {"query": PROJECT_QUERY, "project": "beta"}),
        ("/recall", {"query": PROJECT_QUERY, "project": "/src/beta"}),
    ):
        status, answer = _ask(url, route, body, token=AGENT_TOKEN)
        assert (status, answer["error"]) == (
            403,
            f"agent project:alpha reads project alpha only, not {body['project']}",
        )
    with pytest.raises(RemoteError, match="403 forbidden: agent project:alpha reads project alpha only, not beta"):
        agent.search(PROJECT_QUERY, project="beta")
    assert {h.project for h in admin.search(PROJECT_QUERY, project="beta")} == {"/src/beta"}
    # The command line says so in one line.
    monkeypatch.setenv("MEMLANE_TOKEN", AGENT_TOKEN)
    assert main(["--remote", url, "search", PROJECT_QUERY, "--project", "beta"]) == 2
    out, err = capsys.readouterr()
    assert (
        out == ""
        and err
        == f"memlane search: {url}/search: 403 forbidden: agent project:alpha reads project alpha only, not beta\n"
    )
    assert main(["--remote", url, "recall", PROJECT_QUERY]) == 0
    out = capsys.readouterr().out
    assert "Postgres 16" in out and "MySQL 8" not in out


def test_loopback_only_without_a_token_and_errors_are_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMLANE_TOKEN", raising=False)
    assert main(["--index", "s3://nowhere/index/", "serve", "--host", "0.0.0.0", "--port", str(free_port())]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "refusing to serve on 0.0.0.0" in err and "--insecure" in err
    # A server that is not there: one line, no traceback.
    assert main(["--remote", f"http://127.0.0.1:{free_port()}", "status"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot reach a memlane server" in err
    # HTTPS needs a certificate and its key, and a pair that loads: refused before Ray starts.
    assert main(["--index", "s3://nowhere/index/", "serve", "--tls-cert", __file__]) == 2
    assert capsys.readouterr().err.count("HTTPS needs both --tls-cert and --tls-key") == 1
    assert main(["--index", "s3://nowhere/index/", "serve", "--tls-cert", __file__, "--tls-key", __file__]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a PEM certificate and its private key" in err
    # Ray without the rest of the extra (orjson renders the answers): what to install, before Ray starts.
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "orjson" else find_spec(name, *a))
    assert main(["--index", "s3://nowhere/index/", "serve", "--port", str(free_port())]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'memlane[ray]'" in err and "force-reinstall" not in err


def test_project_scoped_query_touches_only_the_project_s_shards(served, tmp_path: Path) -> None:
    remote = memlane.connect(served["bm25"].url)
    status = remote.status()
    before = status["shard_queries"]
    home = memlane.open(tmp_path / "one", embedder="none")
    home.index([str(served["root"])], embed=False)
    hits = remote.search(PROJECT_QUERY, project="alpha")
    assert hits and {h.project for h in hits} == {"/src/alpha"}
    assert _hits(hits) == _hits(home.search(PROJECT_QUERY, project="alpha"))
    after = remote.status()["shard_queries"]
    touched = {n for n in after if after[n] != before.get(n, 0)}
    catalog = memlane.open_index(served["out"], embedder="none", cache_dir=tmp_path / "cache")
    holding = {str(n) for n, r in catalog._store.records.items() if "/src/alpha" in r["projects"]}
    assert touched == holding and len(holding) < status["shards_with_data"]
    assert _hits(catalog.search(PROJECT_QUERY, project="alpha")) == _hits(hits)  # in process: the same select


def test_a_killed_shard_actor_gives_partial_answers_then_recovers(served) -> None:
    import ray

    from memlane.cluster.serve import NAMESPACE

    remote = memlane.connect(served["bm25"].url)
    query = "postgres migration billing"
    full = _hits(remote.search(query))
    assert full and not remote.partial
    ray.kill(ray.get_actor(served["bm25"].actors[0], namespace=NAMESPACE), no_restart=False)
    seen: list[list[int]] = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        hits = remote.search(query)  # never fails
        if remote.partial:
            seen.append(remote.missing_shards)
        elif seen:
            assert _hits(hits) == full  # restarted by Ray: the whole answer again
            break
        time.sleep(0.05)
    assert seen, "no answer was partial while the actor was down"
    assert all(m == [0, 2] for m in seen)  # group 0 of 2 actors holds shards 0 and 2
    assert not remote.partial


def test_a_new_catalog_version_is_served_without_a_failed_request(served, s3, tmp_path: Path) -> None:
    remote = memlane.connect(served["bm25"].url)
    query = "keepalive timeout proxy"
    errors: list[BaseException] = []
    generations: list[int] = []
    stop = threading.Event()

    def loop() -> None:
        client = memlane.connect(served["bm25"].url)
        while not stop.is_set():
            try:
                client.search(query)
                assert not client.partial
                generations.append(client.generation)
            except BaseException as exc:
                errors.append(exc)

    extra = tmp_path / "extra"
    _synthetic(extra, 6, seed=99)
    write_jsonl(
        extra / "proj-9" / "new.jsonl",
        generic_session("fresh-1", [("keepalive timeout proxy again?", "the proxy keepalive timeout is now 75s")]),
    )
    thread = threading.Thread(target=loop)
    thread.start()
    try:
        _upload(s3, extra, "serve/extra")
        report = index_sources([f"s3://{BUCKET}/serve/"], served["out"], embed=FakeEmbedder())
        assert report.generation == 2 and report.files_indexed == 7
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (not generations or generations[-1] != 2):
            time.sleep(0.1)
    finally:
        stop.set()
        thread.join()
    assert not errors, errors[:3]
    assert generations[0] == 1 and generations[-1] == 2 and generations == sorted(generations)
    one = memlane.open(tmp_path / "one", embedder="none")
    one.index([str(served["root"]), str(extra)], embed=False)
    assert _hits(remote.search(query)) == _hits(one.search(query))


def test_mcp_and_hooks_recall_from_the_served_index(served, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    from mcp import Client
    from test_mcp import server_params, text

    from memlane.agents.hooks import user_prompt_submit

    url = served["bm25"].url
    home = tmp_path / "home"  # an empty home: every memory comes from the server

    async def session() -> tuple[list[str], str]:
        async with Client(server_params(home, "--remote", url)) as client:
            tools = sorted(t.name for t in (await client.list_tools()).tools)
            return tools, text(await client.call_tool("recall", {"query": PROJECT_QUERY, "project": "/src/alpha"}))

    tools, recalled = asyncio.run(session())
    assert tools == ["recall", "status"]  # the brain and chunk look-ups are a home's
    assert "Postgres 16" in recalled and "MySQL 8" not in recalled
    monkeypatch.setenv("MEMLANE_REMOTE", url)
    out = user_prompt_submit(home, {"session_id": "s-1", "cwd": "/src/beta", "prompt": PROJECT_QUERY})
    assert out is not None and "MySQL 8" in out and "Postgres 16" not in out


def test_known_statistics_save_a_round_not_answers(served, tmp_path: Path) -> None:
    """The statistics round a query makes of shards in actors (a :class:`ShardSet` whose calls
    are messages) is skipped for tokens asked about before; shards open in this process sum
    their statistics in the core, with no round at all."""
    from memlane.cluster.search import ShardSet, inline

    index = memlane.open_index(served["out"], embedder="none", cache_dir=tmp_path / "cache")
    local = index._store
    asked = []
    for shard in local.shards.values():
        shard.term_stats = lambda query, inner=shard.term_stats: asked.append(query) or inner(query)
    fresh = memlane.open_index(served["out"], embedder="none", cache_dir=tmp_path / "cache")
    for q in QUERIES:
        assert _hits(index.search(q)) == _hits(fresh.search(q)), q
    assert asked == []
    # The same shards called one by one, as shard actors are.
    index._store = store = ShardSet(local.catalog, local.records, local.shards, inline)
    query = "deploy failed with exit code 137"
    assert _hits(index.search(query)) == _hits(fresh.search(query)) != []
    assert len(asked) == len(store.shards)
    # Every token known (the words in another order and case): no statistics round, the same answer.
    again = "Exit code 137: DEPLOY failed with"
    assert _hits(index.search(again)) == _hits(fresh.search(again))
    assert len(asked) == len(store.shards)
    # One new token: asked again, and from then on known as well.
    for q in (query + " postgres", "postgres " + query, *QUERIES):
        assert _hits(index.search(q)) == _hits(fresh.search(q)), q
    assert asked.count(query + " postgres") == len(store.shards) and "postgres " + query not in asked


def test_two_router_replicas_each_hold_the_shards_and_answer_alike(served, tmp_path: Path) -> None:
    """``--replicas 2`` on one machine: Serve's proxy spreads the requests over both replicas,
    each with every shard open in it (no shard actors), and every answer equals the index
    searched in process."""
    from ray import serve

    from memlane.cluster import serve as srv

    port = urlsplit(served["bm25"].url).port
    server = srv.start(
        served["out"],
        port=port,
        embedder="none",
        replicas=2,
        shard_actors=0,
        cache_dir=str(tmp_path / "cache"),
        app="replicas",
        route_prefix="/replicas",
    )
    try:
        assert (server.ingress, server.actors) == ("proxy", [])
        remote = memlane.connect(server.url)
        index = memlane.open_index(served["out"], embedder="none", cache_dir=tmp_path / "in-process")
        replicas = set()
        for query in QUERIES:
            for _ in range(3):
                assert _hits(remote.search(query)) == _hits(index.search(query)), query
                assert not remote.partial
            status = remote.status()
            assert (status["shard_actors"], status["chunks"], status["generation"]) == (
                0,
                index.status()["chunks"],
                index.catalog.generation,
            )
            replicas.add(status["replica"])
        for _ in range(50):  # the proxy picks a replica per request, at random when both are idle
            if len(replicas) == 2:
                break
            replicas.add(remote.status()["replica"])
        assert len(replicas) == 2, replicas  # both answered
    finally:
        serve.delete(server.app)


def test_memlane_serve_serves_from_its_router_replica(
    served, s3, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The command as a user runs it: its own local Ray cluster, one router replica listening on
    the port itself (Serve's direct ingress) with the shards open in it, answers equal to the
    index searched in process, and a new catalog version served without a failed request."""
    import signal

    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}  # a cluster of its own
    env["MEMLANE_CACHE_DIR"] = str(tmp_path / "cache")
    command = [
        sys.executable,
        "-m",
        "memlane.cli",
        "--index",
        served["out"],
        "serve",
        "--embed",
        "none",
        "--port",
        str(port),
        "--refresh",
        "0.5",
    ]
    with subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True) as server:  # closes its pipe, waits
        try:
            said = []
            while not said or not said[-1].startswith("serving "):  # Ray may warn first
                said.append(server.stderr.readline())
                assert said[-1], "".join(said)  # it exited without serving
            assert f"shards in the router, 1 router replica) at http://127.0.0.1:{port}:" in said[-1], said[-1]
            remote = memlane.connect(f"http://127.0.0.1:{port}")
            index = memlane.open_index(served["out"], embedder="none", cache_dir=tmp_path / "in-process")
            for query in QUERIES:
                assert _hits(remote.search(query)) == _hits(index.search(query)), query
            status = remote.status()
            assert status["generation"] == index.catalog.generation
            assert (status["ingress"], status["shard_actors"], status["partial"]) == ("direct", 0, False)
            assert main(["--remote", f"http://127.0.0.1:{port}", "status"]) == 0
            assert "shards in the router, direct ingress, shards down: none" in capsys.readouterr().out
            extra = tmp_path / "extra"
            write_jsonl(
                extra / "proj-9" / "late.jsonl",
                generic_session("late-1", [("quokka gateway timeout?", "the quokka gateway times out after 30s")]),
            )
            _upload(s3, extra, "serve/late")
            assert index_sources([f"s3://{BUCKET}/serve/"], served["out"], embed=FakeEmbedder()).files_indexed == 1
            deadline = time.monotonic() + 60
            while not remote.search("quokka gateway") and time.monotonic() < deadline:  # never fails meanwhile
                assert not remote.partial
                time.sleep(0.1)
            assert remote.status()["generation"] == index.catalog.generation + 1
            server.send_signal(signal.SIGINT)
            assert server.wait(timeout=60) == 0
            assert "memlane serve: stopped" in server.stderr.read()
        finally:
            if server.poll() is None:
                server.kill()


def _self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 signed by its own key (``cryptography``, which moto brings)."""
    import datetime
    import ipaddress

    pytest.importorskip("cryptography")
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "memlane test server")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


def test_memlane_serve_speaks_https_with_a_certificate(served, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--tls-cert``/``--tls-key``: the router replica answers HTTPS on the port (direct
    ingress), a client trusts a certificate of its own through SSL_CERT_FILE, and the answers
    are the index's in process."""
    import signal

    cert, key = _self_signed(tmp_path)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}  # a cluster of its own
    env.update(MEMLANE_CACHE_DIR=str(tmp_path / "cache"), MEMLANE_TOKEN=TOKEN)
    command = [sys.executable, "-m", "memlane.cli", "--index", served["out"], "serve", "--embed", "none", "--port", str(port),
               "--tls-cert", str(cert), "--tls-key", str(key)]  # fmt: skip
    with subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True) as server:
        try:
            said = []
            while not said or not said[-1].startswith("serving "):
                said.append(server.stderr.readline())
                assert said[-1], "".join(said)
            url = f"https://127.0.0.1:{port}"
            assert f"token required) at {url}:" in said[-1], said[-1]
            monkeypatch.setenv("MEMLANE_TOKEN", TOKEN)
            monkeypatch.delenv("SSL_CERT_FILE", raising=False)
            with pytest.raises(RemoteError, match="point SSL_CERT_FILE at it"):  # not a certificate the system trusts
                memlane.connect(url).status()
            monkeypatch.setenv("SSL_CERT_FILE", str(cert))
            remote = memlane.connect(url)
            index = memlane.open_index(served["out"], embedder="none", cache_dir=tmp_path / "in-process")
            for query in QUERIES[:3]:
                assert _hits(remote.search(query)) == _hits(index.search(query)), query
            assert remote.status()["ingress"] == "direct"
            with pytest.raises(RemoteError, match="cannot reach"):  # plain HTTP gets no answer from a TLS port
                memlane.connect(f"http://127.0.0.1:{port}").status()
            server.send_signal(signal.SIGINT)
            assert server.wait(timeout=60) == 0
        finally:
            if server.poll() is None:
                server.kill()


def test_options_a_running_serve_would_ignore_are_refused(served, tmp_path: Path) -> None:
    """On a cluster where Serve already runs (an index served before, since stopped, leaves it
    running), Serve keeps the HTTP options it started with: another port, or HTTPS it was not
    started with, is refused in one line naming where it listens, before any shard actor starts,
    instead of a URL nothing answers on."""
    import ray
    from ray import serve

    from memlane.cluster import serve as srv

    port = urlsplit(served["bm25"].url).port
    actors = len(ray.util.list_named_actors(all_namespaces=True))
    cert, key = _self_signed(tmp_path)
    for asked in ({"port": free_port()}, {"port": port, "tls_cert": str(cert), "tls_key": str(key)}):
        with pytest.raises(ValueError, match=f"already runs on this cluster at http://127.0.0.1:{port} "):
            srv.start(
                served["out"],
                embedder="none",
                shard_actors=1,
                cache_dir=str(tmp_path / "cache"),
                app="elsewhere",
                route_prefix="/elsewhere",
                **asked,
            )
    assert len(ray.util.list_named_actors(all_namespaces=True)) == actors
    assert "elsewhere" not in serve.status().applications
    # The options it runs with still serve another application.
    server = srv.start(
        served["out"],
        port=port,
        embedder="none",
        shard_actors=0,
        cache_dir=str(tmp_path / "cache"),
        app="same",
        route_prefix="/same",
    )
    try:
        assert server.url == f"http://127.0.0.1:{port}/same"
        assert (
            memlane.connect(server.url).status()["generation"]
            == memlane.connect(served["bm25"].url).status()["generation"]
        )
    finally:
        serve.delete(server.app)
