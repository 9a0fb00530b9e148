"""Serving a sharded index over HTTP on Ray Serve: ``memlane serve --index URI --ray …``.

Shape:

- **The router** (:class:`Router`, a Ray Serve deployment with ``--replicas`` replicas) is a
  :class:`memlane.cluster.search.ShardedIndex`: it embeds the query once, sums the shards' term
  statistics, fans the query out, fuses the union of candidates once with the core's fusion
  and applies the time-aware reordering — the in-process code, nothing re-implemented.
- **Where the shards live**: on a cluster of several machines, in **shard actors**
  (:class:`ShardActor`, plain Ray actors restarted by Ray when they die), each holding the
  shards of one group (shard ``n`` is in group ``n % groups``), downloaded to local disk and
  opened as homes (:class:`memlane.cluster.search.LocalShard`), read only; the router's index
  is then a :class:`ServedIndex`. On one machine (``shard_actors=0``, the default there) in
  the router replica itself (:class:`ReplicaIndex`): every round of a query is then a call in
  the same process instead of a message to another.
- **Fresh**: every router replica reads the catalog pointer every ``refresh_seconds``; on a new
  version it opens the new shard versions (in its shard actors, kept beside the old ones, or
  in itself), then swaps its shard set in one assignment. Queries under way finish on the
  versions they started with; none fails for the switch.
- **Failures**: Serve restarts a router replica that dies. A shard call that fails or times
  out marks its shard actor down; until a probe (``ping``) answers again — Ray restarts the
  actor — queries are answered from the other shards with ``partial: true`` and
  ``missing_shards``.
- **HTTP ingress**: with one replica on a cluster this process starts (``memlane serve``'s
  default) the replica itself listens on the port — Serve's direct ingress, see
  :func:`direct_ingress` — instead of Serve's HTTP proxy, one process hop less (a bare request
  answers several times faster); with several replicas, or on a cluster
  started elsewhere, Serve's proxy listens and balances the replicas.
- **HTTP API** (read only): ``POST /search``, ``POST /recall`` (JSON bodies: the keyword
  arguments of :meth:`memlane.Memory.search`, ``k`` at most :data:`MAX_K`, and
  :meth:`~memlane.Memory.recall`), ``GET /status``.
  A search answers ``{"hits": [...], "partial", "missing_shards", "generation"}`` with hits as
  ``memlane search --json`` prints them; a recall, ``memlane recall --json``'s object plus the
  same three fields. With a token every request needs ``Authorization: Bearer <token>`` (401).
- **Who reads what** (:mod:`memlane.cluster.access`): ``--token`` is an admin token;
  ``--token-file`` maps more tokens to agent roles, and a project agent's token reads its
  project only (another ``project`` asked: 403). ``show_secrets`` is refused (403) unless the
  server runs with ``--allow-show-secrets``, and then granted to admin tokens only, each
  request logged as a warning on the ``ray.serve`` logger: in the replica's log, under the Ray
  session's ``logs/serve/replica_<app>_router_*.log`` (a served index has no home, so no events
  log to write to).
- **HTTPS**: with a certificate and its key (``--tls-cert``/``--tls-key``) the same port speaks
  TLS (Serve's own HTTPS, in the replica under direct ingress): a token sent from beyond
  loopback then does not cross the network readable.

The client side (:mod:`memlane.cluster.client`, ``memlane.connect``) imports no Ray.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

try:
    import ray
    from ray.exceptions import ActorUnavailableError, GetTimeoutError, RayActorError

    # What a shard that does not answer raises (its actor died, is restarting, or is too slow).
    _UNANSWERED: tuple[type[BaseException], ...] = (RayActorError, ActorUnavailableError, GetTimeoutError)
except ImportError:  # the module still imports (docs, doctests); start() says what to install
    _UNANSWERED = ()

from memlane import _check
from memlane.cluster import catalog as cat
from memlane.cluster.access import Access, Forbidden, Grant, read_tokens
from memlane.cluster.client import loopback
from memlane.cluster.search import LocalShard, ShardedIndex, ShardSet, local_root, shard_home, threads
from memlane.cluster.storage import location
from memlane.errors import InvalidArgumentError

__all__ = [
    "Router",
    "ServedIndex",
    "Server",
    "ShardActor",
    "ShardPool",
    "check_binding",
    "direct_ingress",
    "start",
    "tls_options",
]

NAMESPACE = "memlane"
_LOG = logging.getLogger(__name__)
# Serve writes this logger's lines to the replica's log file: where an operator finds who was
# handed secrets in clear.
_AUDIT = logging.getLogger("ray.serve")
# Versions of a shard a shard actor keeps open: the current one and the one queries started
# before the last switch may still be reading.
_KEEP_VERSIONS = 2
_SEARCH_FIELDS = {
    "k",
    "sources",
    "session_id",
    "since",
    "until",
    "fusion",
    "vector_weight",
    "threshold",
    "recency",
    "temporal",
    "hierarchy",
    "project",
    "branch",
}
_RECALL_FIELDS = {
    "max_tokens",
    "half_life_days",
    "include_brain",
    "show_secrets",
    "project",
    "branch",
    "label_projects",
}
# Hits one search may ask for over HTTP: one request cannot make the server read and send a
# whole index (a recall's pool is bounded by its own rules).
MAX_K = 1000


class ShardActor:
    """A Ray actor holding the shard versions of one group of shards, opened as homes.

    Versions open on first use, so an actor Ray restarted answers at once for the versions it is
    asked about (from local disk: they were downloaded before); :meth:`prepare` opens a new
    version before the router switches to it.
    """

    def __init__(self, uri: str, root: str, group: int) -> None:
        self.uri = uri
        self.root = Path(root)
        # One object folder per actor: the actors download in parallel, each under its own
        # folder's lock (see memlane.cluster.catalog.materialize).
        self.objects = self.root / f"objects-{group}"
        self.open: dict[tuple[int, str], LocalShard] = {}
        self.lock = threading.Lock()
        self.queries: dict[int, int] = {}
        # Threads start on first use: the pool costs nothing until a round holds two shards.
        self.run = threads(ThreadPoolExecutor(max_workers=8, thread_name_prefix="memlane-shard"))

    def _shard(self, shard: int, version: str) -> LocalShard:
        found = self.open.get((shard, version))
        if found is not None:
            return found
        with self.lock:
            if (shard, version) not in self.open:
                record = cat.version_record(location(self.uri), shard, version)
                if record is None:
                    raise FileNotFoundError(f"{self.uri}: shard {shard} has no version {version}")
                self.open[(shard, version)] = LocalShard(shard_home(self.uri, record, self.root, self.objects))
                for old in [key for key in self.open if key[0] == shard][:-_KEEP_VERSIONS]:
                    del self.open[old]  # a query still reading it holds its own reference
            return self.open[(shard, version)]

    def prepare(self, shard: int, version: str) -> None:
        """Download and open a shard version (before the router sends it queries)."""
        self._shard(shard, version)

    def call(self, shard: int, version: str, method: str, *args: Any) -> Any:
        """Run a :class:`LocalShard` method on one shard version."""
        if method == "candidates":
            self.queries[shard] = self.queries.get(shard, 0) + 1
        return getattr(self._shard(shard, version), method)(*args)

    def call_many(self, calls: list[tuple[int, str, str, tuple[Any, ...]]]) -> list[Any]:
        """:meth:`call` for several shards at once, on threads (the core releases the GIL): one
        round trip per actor and round of a query, whatever the shards it holds."""
        return self.run([partial(self.call, shard, version, method, *args) for shard, version, method, args in calls])

    def ping(self) -> bool:
        """Alive (the router's probe of an actor it saw fail)."""
        return True

    def counts(self) -> dict[int, int]:
        """Queries (candidate requests) each shard answered since the actor started."""
        return dict(self.queries)


@dataclass(frozen=True)
class _Call:
    """One shard call of a query round, sent by :meth:`ShardPool.call` with the others to its actor."""

    shard: int
    version: str
    method: str
    args: tuple[Any, ...]


class ShardPool:
    """The shard actors of a served index as a router sees them: calls fan out to every shard
    at once; a shard whose actor fails or does not answer within ``timeout`` seconds is left
    out (its actor probed until it answers again) and named in :meth:`missing`."""

    def __init__(self, names: list[str], timeout: float) -> None:
        self.names = names
        self.timeout = timeout
        self._actors: dict[int, Any] = {}
        self._probes: dict[int, Any] = {}
        self._lock = threading.Lock()
        self._request = threading.local()

    def actor(self, group: int) -> Any:
        """The handle of a group's actor."""
        if group not in self._actors:
            self._actors[group] = ray.get_actor(self.names[group], namespace=NAMESPACE)
        return self._actors[group]

    def group(self, shard: int) -> int:
        """The group (actor) a shard lives in."""
        return shard % len(self.names)

    def up(self, group: int) -> bool:
        """Whether a group's actor answers (a failed one is up again once its probe returns)."""
        with self._lock:
            probe = self._probes.get(group)
            if probe is None:
                return True
            ready, _ = ray.wait([probe], timeout=0)
            if not ready:
                return False
            try:
                ray.get(probe)
            except Exception:
                self._probes[group] = self.actor(group).ping.remote()
                return False
            del self._probes[group]
            return True

    def mark_down(self, group: int) -> None:
        """Leave a group's actor out of queries until a probe finds it answering."""
        with self._lock:
            if group not in self._probes:
                self._probes[group] = self.actor(group).ping.remote()

    def call(self, calls: list[Any]) -> list[Any]:
        """The ``call`` of a :class:`ShardSet`: results in order, None for a shard that did not
        answer. The calls (:class:`_Call`) go to their actors in one message per actor."""
        wanted: list[_Call] = [c() for c in calls]
        by_group: dict[int, list[int]] = {}
        for i, c in enumerate(wanted):
            by_group.setdefault(self.group(c.shard), []).append(i)
        sent = {
            g: self.actor(g).call_many.remote(
                [(wanted[i].shard, wanted[i].version, wanted[i].method, wanted[i].args) for i in idx]
            )
            for g, idx in by_group.items()
            if self.up(g)
        }
        deadline = time.monotonic() + self.timeout
        out: list[Any] = [None] * len(wanted)
        for g, idx in by_group.items():
            if g in sent:
                try:
                    for i, result in zip(idx, ray.get(sent[g], timeout=max(0.0, deadline - time.monotonic()))):
                        out[i] = result
                    continue
                except _UNANSWERED:
                    self.mark_down(g)
            self._missing().update(wanted[i].shard for i in idx)
        return out

    def _missing(self) -> set[int]:
        if not hasattr(self._request, "missing"):
            self._request.missing = set()
        missing: set[int] = self._request.missing
        return missing

    def begin(self) -> None:
        """Start a request on this thread (its missing shards are counted from here)."""
        self._request.missing = set()

    def missing(self) -> list[int]:
        """The shards that did not answer this thread's request."""
        return sorted(self._missing())

    def down(self) -> list[int]:
        """Groups whose actor is down now."""
        return [g for g in range(len(self.names)) if not self.up(g)]


class RemoteShard:
    """A shard version in a shard actor, with the methods a :class:`ShardSet` calls; each
    returns the call for :meth:`ShardPool.call` to send."""

    def __init__(self, shard: int, version: str) -> None:
        self.shard, self.version = shard, version

    def term_stats(self, *args: Any) -> _Call:
        """See :meth:`LocalShard.term_stats`."""
        return _Call(self.shard, self.version, "term_stats", args)

    def candidates(self, *args: Any) -> _Call:
        """See :meth:`LocalShard.candidates`."""
        return _Call(self.shard, self.version, "candidates", args)

    def get(self, *args: Any) -> _Call:
        """See :meth:`LocalShard.get`."""
        return _Call(self.shard, self.version, "get", args)

    def passages(self, *args: Any) -> _Call:
        """See :meth:`LocalShard.passages`."""
        return _Call(self.shard, self.version, "passages", args)

    def windows(self, *args: Any) -> _Call:
        """See :meth:`LocalShard.windows`."""
        return _Call(self.shard, self.version, "windows", args)


class ServedIndex(ShardedIndex):
    """A :class:`ShardedIndex` whose shards live in shard actors (the router's index)."""

    def __init__(self, uri: str, embedder: Any, pool: ShardPool, *, cache_dir: str | None = None) -> None:
        self.actors = pool  # before the base class opens the catalog's shards through it
        super().__init__(uri, embedder, cache_dir=cache_dir)

    def _open_shards(self, catalog: cat.Catalog, records: dict[int, dict[str, Any]]) -> ShardSet:
        # Every version is open in its actor before the first query reaches it.
        ray.get([self.actors.actor(self.actors.group(n)).prepare.remote(n, r["version"]) for n, r in records.items()])
        shards = {n: RemoteShard(n, r["version"]) for n, r in records.items()}
        return ShardSet(catalog, records, shards, self.actors.call)

    def status(self) -> dict[str, Any]:
        """The index's status, the shards whose actor is down and the queries each shard answered."""
        status = super().status()
        down = set(self.actors.down())
        counts: dict[str, int] = {}
        for g in range(len(self.actors.names)):
            if g in down:
                continue
            try:
                counts.update(
                    {
                        str(n): c
                        for n, c in ray.get(self.actors.actor(g).counts.remote(), timeout=self.actors.timeout).items()
                    }
                )
            except _UNANSWERED:
                self.actors.mark_down(g)
                down.add(g)
        status["missing_shards"] = sorted(n for n in self._store.shards if self.actors.group(n) in down)
        status["shard_queries"] = counts
        status["shard_actors"] = len(self.actors.names)
        return status

    def begin(self) -> None:
        """Start a request on this thread (see :meth:`ShardPool.begin`)."""
        self.actors.begin()

    def missing(self) -> list[int]:
        """The shards that did not answer this thread's request."""
        return self.actors.missing()


class ReplicaIndex(ShardedIndex):
    """A :class:`ShardedIndex` whose shards are open in the router replica itself
    (``shard_actors=0``): a round of a query costs no hop to another process; the replica is
    the unit of failure (Serve restarts it) and answers whole or not at all."""

    def begin(self) -> None:
        """Start a request (every shard is here: nothing to count)."""

    def missing(self) -> list[int]:
        """No shard is ever missing from an answer."""
        return []

    def status(self) -> dict[str, Any]:
        """The index's status, in the fields a served index with shard actors reports."""
        return {**super().status(), "missing_shards": [], "shard_queries": {}, "shard_actors": 0}


class Router:
    """The HTTP ingress, one Ray Serve deployment: ``POST /search``, ``POST /recall``, ``GET /status``."""

    def __init__(
        self,
        uri: str,
        names: list[str],
        embedder: Any,
        access: Access,
        refresh_seconds: float,
        cache_dir: str | None,
        timeout: float,
        ingress: str,
    ) -> None:
        if names:
            self.index: ServedIndex | ReplicaIndex = ServedIndex(
                uri, embedder, ShardPool(names, timeout), cache_dir=cache_dir
            )
        else:
            self.index = ReplicaIndex(uri, embedder, cache_dir=cache_dir)
        self.access = access
        self.ingress = ingress
        self.replica = _replica_id()
        threading.Thread(target=self._watch, args=(refresh_seconds,), daemon=True, name="memlane-catalog").start()

    def _watch(self, every: float) -> None:
        """Follow the catalog: a new version is opened in the actors, then searched."""
        while True:
            time.sleep(every)
            try:
                if self.index.refresh():
                    _LOG.info("now serving catalog version %s", self.index.catalog.generation)
            except Exception as exc:
                _LOG.warning(
                    "catalog refresh failed (still serving version %s): %s", self.index.catalog.generation, exc
                )

    async def __call__(self, request: Any) -> Any:
        grant = self.access.grant(request.headers.get("authorization", ""))
        if grant is None:
            return _json_response(
                {"error": "unauthorized: send Authorization: Bearer <token> (MEMLANE_TOKEN)"},
                401,
                {"WWW-Authenticate": "Bearer"},
            )
        route = request.url.path.rstrip("/").rsplit("/", 1)[-1]
        expected = {"search": "POST", "recall": "POST", "status": "GET"}.get(route)
        if expected is None:
            return _json_response(
                {"error": f"no such endpoint {request.url.path}: POST /search, POST /recall, GET /status"}, 404
            )
        if request.method != expected:
            return _json_response({"error": f"/{route} takes {expected}"}, 405)
        body: Any = {}
        if expected == "POST":
            try:
                body = await request.json()
            except ValueError:
                return _json_response({"error": "the body is not JSON"}, 400)
            if not isinstance(body, dict):
                return _json_response({"error": "the body must be a JSON object"}, 400)
        try:
            started = time.perf_counter()
            answer = await asyncio.to_thread(self.answer, route, body, grant)
            # The router's own time, HTTP and the proxy excluded (what benches/bench_serve.py compares).
            took = f"{route};dur={(time.perf_counter() - started) * 1000:.3f}"
            return _json_response(answer, headers={"Server-Timing": took})
        except Forbidden as exc:
            return _json_response({"error": str(exc)}, 403)
        except (ValueError, TypeError, LookupError) as exc:
            return _json_response({"error": str(exc) or type(exc).__name__}, 400)

    def answer(self, route: str, body: dict[str, Any], grant: Grant) -> dict[str, Any]:
        """The JSON answer of one request made with ``grant`` (run on a thread: the shard calls block).

        Raises:
            Forbidden: What the grant may not ask (secrets in clear, another project).
        """
        from memlane import secrets

        index = self.index
        index.begin()
        generation = index.catalog.generation
        if route == "status":
            status = index.status()
            return {
                **status,
                "ingress": self.ingress,
                "replica": self.replica,
                "partial": bool(status["missing_shards"]),
                "role": str(grant.role),
            }
        query = body.get("query")
        if not isinstance(query, str):
            raise InvalidArgumentError("the body needs a query (a string)")
        allowed = _SEARCH_FIELDS | {"show_secrets", "snippet_chars"} if route == "search" else _RECALL_FIELDS
        unknown = sorted(set(body) - allowed - {"query"})
        if unknown:
            raise InvalidArgumentError(
                f"unknown field(s) {', '.join(unknown)}; /{route} takes query and {', '.join(sorted(allowed))}"
            )
        if route == "search" and "k" in body:
            _check.integer("k", body["k"], minimum=1, maximum=MAX_K)
        body = self.access.narrow(grant, body, index.project_keys)
        if body.get("show_secrets"):
            _AUDIT.warning("show_secrets granted: POST /%s by %s (token of %s)", route, grant.role, grant.source)
        if route == "recall":
            payload = index.recall(query, **{k: body[k] for k in _RECALL_FIELDS & set(body)}).to_dict()
        else:
            hits = index.search(query, **{k: body[k] for k in _SEARCH_FIELDS & set(body)})
            show, chars = bool(body.get("show_secrets")), body.get("snippet_chars")
            if chars and not show:  # masked before the snippet is cut, as the command line does
                hits = [replace(h, text=secrets.mask(h.text)) for h in hits]
            payload = {"hits": [h.to_dict() for h in hits]}
            if chars:
                payload["snippets"] = index.snippets(query, hits, int(chars))
            if not show:
                payload = secrets.mask_json(payload)
        missing = index.missing()
        return {**payload, "partial": bool(missing), "missing_shards": missing, "generation": generation}


def _json_response(content: Any, status_code: int = 200, headers: dict[str, str] | None = None) -> Any:
    """A JSON response rendered by orjson: the bytes Starlette's ``JSONResponse`` renders (UTF-8,
    no spaces) in a fraction of the time, on the event loop every request shares."""
    import orjson
    from starlette.responses import Response

    return Response(orjson.dumps(content), status_code, headers, media_type="application/json")


def _replica_id() -> str | None:
    """Which Serve replica this router is (``GET /status`` says, so an operator can tell the
    replicas' answers apart); None outside a Serve replica."""
    from ray import serve
    from ray.serve.exceptions import RayServeException

    try:
        return serve.get_replica_context().replica_id.unique_id
    except RayServeException:  # not in a replica
        return None


def direct_ingress(port: int) -> dict[str, str]:
    """The environment under which a Ray cluster started next serves HTTP from the router
    replica itself on ``port`` (Serve's direct ingress, a Ray Serve setting read when the
    cluster starts): one replica answers on ``port`` with no proxy in between, and a released
    port goes back at once (no quarantine), so a replica Serve restarts takes it again. The
    router's code runs on the replica's own event loop, not a second one in another thread:
    a request then crosses no thread to reach it. The
    router never blocks that loop: a search runs on a worker thread. A replica stopping does
    not stay reachable for a load balancer to deregister it (Serve's default: 30 s, all of which
    Ctrl-C would wait): none stands in front of it.

    Example:
        >>> direct_ingress(8765)["RAY_SERVE_DIRECT_INGRESS_MIN_HTTP_PORT"]
        '8765'
    """
    return {
        "RAY_SERVE_ENABLE_DIRECT_INGRESS": "1",
        "RAY_SERVE_DIRECT_INGRESS_MIN_HTTP_PORT": str(port),
        "RAY_SERVE_DIRECT_INGRESS_MAX_HTTP_PORT": str(port + 1),  # exclusive: the one port
        "RAY_SERVE_PORT_QUARANTINE_S": "0",
        "RAY_SERVE_RUN_USER_CODE_IN_SEPARATE_THREAD": "0",
        "RAY_SERVE_DIRECT_INGRESS_MIN_DRAINING_PERIOD_S": "0",
    }


def _direct_on(port: int) -> bool:
    """Whether the cluster this process started serves ``port`` by direct ingress (a cluster
    serving another port that way has no proxy to serve this one)."""
    if os.environ.get("RAY_SERVE_ENABLE_DIRECT_INGRESS") != "1":
        return False
    served = os.environ.get("RAY_SERVE_DIRECT_INGRESS_MIN_HTTP_PORT")
    if served != str(port):
        raise InvalidArgumentError(
            f"this Ray cluster serves HTTP from its router replica on port {served} (direct ingress): serve on --port {served}"
        )
    return True


def _check_running_serve(host: str, port: int, tls: dict[str, str]) -> None:
    """Refuse HTTP options a Serve already running on the cluster would ignore (it keeps those it
    started with, and a served index stopped leaves Serve running): the URL said would be one
    nothing answers on, or plain HTTP where HTTPS was asked for."""
    try:
        from ray.serve.context import _get_global_client
    except ImportError:  # Serve's internals moved: serve.start() still warns in the log
        return
    client = _get_global_client(raise_if_no_controller_running=False)
    if client is None:
        return
    http = client.http_config
    if (http.host, http.port, http.ssl_certfile or None, http.ssl_keyfile or None) != (
        host,
        port,
        tls.get("ssl_certfile"),
        tls.get("ssl_keyfile"),
    ):
        scheme = "https" if http.ssl_certfile else "http"
        raise InvalidArgumentError(
            f"Ray Serve already runs on this cluster at {scheme}://{http.host}:{http.port} and keeps the HTTP options it started with: "
            "serve with its host, port and certificate, or stop it first (`serve shutdown -y`)"
        )


def check_binding(host: str, token: str | None, insecure: bool, token_file: str | None = None) -> None:
    """Refuse to serve beyond loopback without a token (unless ``insecure``).

    Example:
        >>> check_binding("127.0.0.1", None, False)
        >>> check_binding("0.0.0.0", None, False)
        Traceback (most recent call last):
        memlane.errors.InvalidArgumentError: refusing to serve on 0.0.0.0 (beyond loopback) without a token: set --token, MEMLANE_TOKEN or --token-file, or pass --insecure
    """
    if not loopback(host) and not token and not token_file and not insecure:
        raise InvalidArgumentError(
            f"refusing to serve on {host} (beyond loopback) without a token: set --token, MEMLANE_TOKEN or --token-file, or pass --insecure"
        )


def tls_options(cert: str | None, key: str | None) -> dict[str, str]:
    """Serve's HTTPS options for a certificate (PEM, its chain after it) and its private key;
    none without either. The pair is checked here, before Ray starts, so a wrong one is one line.

    Example:
        >>> tls_options(None, None)
        {}
        >>> tls_options("cert.pem", None)
        Traceback (most recent call last):
        memlane.errors.InvalidArgumentError: HTTPS needs both --tls-cert and --tls-key
    """
    import ssl

    if not cert and not key:
        return {}
    if not cert or not key:
        raise InvalidArgumentError("HTTPS needs both --tls-cert and --tls-key")
    for flag, path in (("--tls-cert", cert), ("--tls-key", key)):
        if not Path(path).is_file():
            raise InvalidArgumentError(f"{flag} {path}: no such file")
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(cert, key)
    except ssl.SSLError as exc:
        raise InvalidArgumentError(f"{cert} and {key} are not a PEM certificate and its private key: {exc}") from None
    # Absolute: Serve's processes do not share this one's working directory.
    return {"ssl_certfile": str(Path(cert).resolve()), "ssl_keyfile": str(Path(key).resolve())}


@dataclass
class Server:
    """A running served index: its URL, shard actors and Serve application."""

    url: str
    """``http://HOST:PORT`` (``https://`` with a certificate)."""
    app: str
    actors: list[str]
    """The shard actors' names (namespace ``memlane``)."""
    generation: int
    """The catalog version served when it started."""
    handles: list[Any]
    ingress: str = "proxy"
    """``direct`` (the router replica listens on the port) or ``proxy`` (Serve's HTTP proxy)."""

    def stop(self) -> None:
        """Delete the Serve application and its shard actors."""
        from ray import serve

        serve.delete(self.app)
        for handle in self.handles:
            ray.kill(handle)


def start(
    uri: str,
    *,
    ray_address: str = "local",
    host: str = "127.0.0.1",
    port: int = 8765,
    replicas: int = 1,
    token: str | None = None,
    token_file: str | None = None,
    allow_show_secrets: bool = False,
    insecure: bool = False,
    embedder: Any = "local",
    shard_actors: int | None = None,
    refresh_seconds: float = 2.0,
    timeout: float = 2.0,
    cache_dir: str | None = None,
    app: str = "memlane",
    route_prefix: str = "/",
    tls_cert: str | None = None,
    tls_key: str | None = None,
    **ray_init: Any,
) -> Server:
    """Serve the sharded index at ``uri`` over HTTP on a Ray cluster; returns once it answers.

    Args:
        uri: The index (``s3://…`` or a shared folder) ``memlane index --ray`` built.
        ray_address: ``local``, ``auto`` or a cluster address.
        host: Address to bind (default loopback; beyond it needs ``token`` or ``insecure``).
        port: HTTP port (Serve's proxy: one per cluster, fixed when Serve first starts).
        replicas: Router replicas.
        token: Bearer token every request must carry (an admin token; see :mod:`memlane.cluster.access`).
        token_file: A file of ``TOKEN ROLE`` lines: more tokens, each read as its agent role.
        allow_show_secrets: Let admin tokens ask ``show_secrets`` (each request logged); refused otherwise.
        insecure: Allow binding beyond loopback without a token.
        embedder: Query embedder of an index with vectors (``local``, an embedder object …).
        shard_actors: Shard actors; 0: the shards open in each router replica (default on a
            one-machine cluster; otherwise one actor per shard with data, at most one per CPU).
        refresh_seconds: How often each router reads the catalog pointer.
        timeout: Seconds a router waits for a shard before answering without it.
        cache_dir: Where the actors keep downloaded shards (default: memlane's cache folder).
        app: Serve application name; ``route_prefix``: its URL prefix.
        tls_cert: Serve HTTPS with this certificate (PEM) and ``tls_key``, its private key.
        **ray_init: Passed to ``ray.init`` for a local cluster (e.g. ``num_cpus``).
    """
    from memlane.cluster.index import init_ray

    check_binding(host, token, insecure, token_file)
    access = Access.build(token, read_tokens(token_file) if token_file else None, allow_show_secrets)
    tls = tls_options(tls_cert, tls_key)
    # Ray Serve runs the service; orjson renders the answers.
    if importlib.util.find_spec("ray") is None or importlib.util.find_spec("orjson") is None:
        raise ImportError("memlane serve needs Ray Serve: pip install 'memlane[ray]'")
    catalog = cat.load(location(uri))
    if catalog is None:
        raise FileNotFoundError(
            f"no memlane index at {uri}: `memlane index SOURCES --ray local --out {uri}` builds one"
        )
    uri = location(uri).uri
    if ray_address == "local" and replicas == 1 and not ray.is_initialized():
        os.environ.update(direct_ingress(port))  # the cluster's processes inherit it
    init_ray(ray_address, **ray_init)
    direct = _direct_on(port)
    if direct and replicas > 1:
        raise InvalidArgumentError(
            f"this Ray cluster serves port {port} from one router replica (direct ingress): --replicas 1, or a cluster started without it"
        )
    if not direct:
        _check_running_serve(host, port, tls)
    from ray import serve

    if shard_actors is None:
        # On one machine the shards open in the router replica: a query's rounds then cost no
        # hop between processes (a round through an actor costs milliseconds more than one in
        # process). Across machines shard actors spread the shards; a round costs one
        # message per actor, and an actor answers for its shards on threads, so more actors
        # than cores only add messages.
        with_data = sum(1 for s in catalog.shards if s.version)
        # ray.nodes and ray.cluster_resources carry no annotations.
        one_node = len([node for node in ray.nodes() if node.get("Alive")]) == 1  # type: ignore[no-untyped-call]
        cpus = int(ray.cluster_resources().get("CPU", 1))  # type: ignore[no-untyped-call]
        shard_actors = 0 if one_node else max(1, min(with_data, cpus))
    groups = shard_actors
    tag = hashlib.sha256(f"{uri}\0{app}".encode()).hexdigest()[:10]
    names = [f"memlane-shards-{tag}-{g}" for g in range(groups)]
    root = str(local_root(uri, cache_dir) / "serve")
    actor = ray.remote(ShardActor)
    # Owned by this process (their handles live in the Server): they go when it goes.
    handles = [
        actor.options(
            name=name,
            namespace=NAMESPACE,
            max_restarts=-1,
            max_task_retries=0,
            max_concurrency=32,
            num_cpus=0,
            get_if_exists=True,
        ).remote(uri, root, g)
        for g, name in enumerate(names)
    ]
    # Ray types an actor handle's methods as the class's plain methods, without ``remote``.
    ray.get([h.ping.remote() for h in handles])  # type: ignore[union-attr]
    # No access log: a line written per request is work on every query that nothing reads.
    quiet = {"enable_access_log": False}
    # Under direct ingress the replica takes the port; Serve's proxy (started all the same) must not.
    serve.start(http_options={"host": host, "port": 0 if direct else port, **tls}, logging_config=quiet)
    # A stopping replica checks for requests still in flight every 0.2 s (Serve's default: 2 s)
    # and waits for them at most 5 s (20): an answer takes milliseconds.
    deployment = serve.deployment(
        Router, name="router", num_replicas=replicas, ray_actor_options={"num_cpus": 0}, max_ongoing_requests=64, logging_config=quiet,
        graceful_shutdown_wait_loop_s=0.2, graceful_shutdown_timeout_s=5,
    )  # fmt: skip
    ingress = "direct" if direct else "proxy"
    serve.run(
        # Ray's overloads of serve.deployment take a class with options for the decorator form.
        deployment.bind(uri, names, embedder, access, refresh_seconds, cache_dir, timeout, ingress),  # type: ignore[attr-defined]
        name=app,
        route_prefix=route_prefix,
    )
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    scheme = "https" if tls else "http"
    return Server(
        f"{scheme}://{shown}:{port}{route_prefix.rstrip('/')}", app, names, catalog.generation, handles, ingress
    )
