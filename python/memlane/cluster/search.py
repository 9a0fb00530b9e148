"""Searching a sharded index as one home: global BM25 statistics, one fusion, one reordering.

A query runs in up to three rounds over the shards of one catalog version:

1. every shard reports its share of the query's BM25 statistics (documents, text tokens, the
   documents holding each query token: term-dictionary look-ups, no postings read), and the
   shares are summed — skipped when every token of the query was asked about before (the
   sums are kept per catalog version: its shards never change);
2. the shards that can hold a match (scoped queries skip the others: see :meth:`ShardSet.select`)
   rank their keyword candidates with the summed statistics, so every chunk scores exactly
   as it would in one home holding all of them, and their vector candidates with exact
   similarities;
3. the union is merged and fused by the core's own fusion (``memlane._core.fuse_candidates``)
   and the winners' stored chunks are fetched from their shards.

:class:`ShardedIndex` is a :class:`memlane.Memory` whose store is a :class:`ShardSet`, so
``search`` and ``recall`` are the single machine's own code — the time-aware reordering
included (it reads chunk vectors from the shards' embedding caches, which travel with them).
A :class:`ShardSet` only calls its shards' methods through ``call``, so the shards can as well
be Ray actors (the serving router, :mod:`memlane.cluster.serve`) as objects in this process;
a ``call`` that gets no answer from a shard returns None in its place, and the query is
answered from the others.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from memlane import _core
from memlane.cluster import catalog as cat
from memlane.cluster.storage import location
from memlane.errors import InvalidArgumentError
from memlane.events import NoEventLog
from memlane.memory import Memory

__all__ = ["LocalShard", "LocalShardSet", "ShardSet", "ShardedIndex", "open_index"]

# Tokens whose whole-index statistics a shard set keeps (~100 bytes each) before starting over.
_KNOWN_TOKENS = 200_000


class LocalShard:
    """One shard version on local disk, opened as a home (read only)."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.store = _core.Store(str(home))
        self._cache: Any = None
        self._lock = threading.Lock()

    def term_stats(self, query: str) -> str:
        """This shard's share of the query's BM25 statistics."""
        return self.store.term_stats(query)

    def candidates(self, query: str, request: dict[str, Any], stats: str) -> bytes:
        """The shard's candidates, BM25 scored with the corpus statistics ``stats``."""
        return self.store.candidates(query, stats=stats, **request)

    def get(self, keys: list[int]) -> list[dict[str, Any]]:
        """Stored chunks by key (a shard version never changes: no reload)."""
        return self.store.get(keys, reload=False)

    def passages(self, query: str, texts: list[str], max_chars: int, stats: str) -> list[tuple[bool, str, bool] | None]:
        """Each text's best passage for ``query``, terms weighed by the corpus statistics ``stats``."""
        return self.store.passages(query, texts, max_chars, stats)

    def windows(self, embedder_id: str, hashes: list[str]) -> dict[str, np.ndarray]:
        """Window vectors of these chunks from the shard's embedding cache (those it has)."""
        path = self.home / "cache" / "embeddings.sqlite"
        if not path.exists():
            return {}
        with self._lock:
            if self._cache is None:
                from memlane.embed.cache import EmbeddingCache

                self._cache = EmbeddingCache(path)
        found: dict[str, np.ndarray] = self._cache.get_many(embedder_id, hashes, count=False)
        return found

    def status(self) -> dict[str, Any]:
        """The shard home's status."""
        return dict(self.store.status())


Call = Callable[[list[Callable[[], Any]]], list[Any]]


def threads(pool: ThreadPoolExecutor) -> Call:
    """Run shard calls on a thread pool (the core releases the GIL while it works)."""

    def run(calls: list[Callable[[], Any]]) -> list[Any]:
        if len(calls) == 1:
            return [calls[0]()]
        return list(pool.map(lambda c: c(), calls))

    return run


def inline(calls: list[Callable[[], Any]]) -> list[Any]:
    """Run shard calls one after another in the caller's thread."""
    return [c() for c in calls]


class ShardSet:
    """The shards of one catalog version, answering the calls :class:`memlane.Memory` makes
    of its store (``search``, ``meta``, ``get``, ``status``) as one home would.

    ``shards`` maps a shard number to an object with ``term_stats``, ``candidates``, ``get``,
    ``windows`` (a :class:`LocalShard`, or a handle to a shard actor); ``call`` runs a list
    of zero-argument calls, one per shard, and returns their results in order, None for a
    shard that did not answer (a served index whose shard actor is down: the answer comes
    from the others).

    A shard version never changes, so the whole index's statistics of every token a query
    asked about are kept: a query whose tokens were all seen skips the statistics round.
    """

    def __init__(
        self, catalog: cat.Catalog, records: dict[int, dict[str, Any]], shards: dict[int, Any], call: Call
    ) -> None:
        self.catalog = catalog
        self.records = records
        self.shards = shards
        self.call = call
        self._stats: dict[str, Any] | None = None

    def select(
        self,
        sources: Sequence[str] | None,
        session_id: str | None,
        since: int | None,
        until: int | None,
        projects: Sequence[str] | None = None,
    ) -> list[int]:
        """The shards that can hold a chunk passing these filters (catalog facts: kinds of
        chunk, session ids, time range, projects), in shard order."""
        chosen = []
        for n in sorted(self.shards):
            r = self.records[n]
            if sources and not set(sources) & set(r.get("sources", ())):
                continue
            if session_id is not None and session_id not in r.get("session_ids", ()):
                continue
            if projects is not None and "projects" in r and not set(projects) & set(r["projects"]):
                continue
            if since is not None or until is not None:
                lo, hi = r.get("ts_min"), r.get("ts_max")
                if (
                    lo is None
                    or (since is not None and hi is not None and hi < since)
                    or (until is not None and lo >= until)
                ):
                    continue
            chosen.append(n)
        return chosen

    def search(
        self,
        query: str,
        k: int = 10,
        vector: np.ndarray | None = None,
        embedder_id: str | None = None,
        sources: list[str] | None = None,
        session_id: str | None = None,
        since: int | None = None,
        until: int | None = None,
        fusion: str = "weighted",
        vector_weight: float = 0.6,
        threshold: float = _core.DEFAULT_THRESHOLD,
        candidates: int = 50,
        projects: list[str] | None = None,
        branch: str | None = None,
        libraries: list[str] | None = None,
    ) -> list[dict[str, Any]]:
        """Hits as one home over every shard's chunks returns them (``_core.Store.search``).

        ``libraries`` is a home's list of the user's global libraries that join a project's
        search; a sharded index names none (:meth:`libraries`), so it is always empty here.
        """
        if libraries:
            raise InvalidArgumentError(
                "a sharded index does not tell the user's global libraries apart: search it without libraries"
            )
        filters = {
            "sources": sources,
            "session_id": session_id,
            "since": since,
            "until": until,
            "projects": projects,
            "branch": branch,
        }
        selected = self.select(sources, session_id, since, until, projects)
        request = {"k": k, "vector": vector, "embedder_id": embedder_id, "candidates": candidates, **filters}
        hits = self._ranked(selected, query, request, fusion, vector_weight, threshold)
        for hit in hits:
            hit["path"] = self.catalog.display_path(hit["path"])
        return hits

    def _ranked(
        self,
        selected: list[int],
        query: str,
        request: dict[str, Any],
        fusion: str,
        vector_weight: float,
        threshold: float,
    ) -> list[dict[str, Any]]:
        """The hits of the selected shards, fused as one home's: a round of candidates from
        every shard, then a round that reads each hit's chunk from its shard (a shard that
        does not answer, None from ``call``, is left out)."""
        # Statistics come from every shard, matching or not: one home's BM25 counts every chunk.
        stats = self.term_stats(query)
        answered = [
            (n, p)
            for n, p in zip(
                selected, self.call([self._bound(n, "candidates", query, request, stats) for n in selected])
            )
            if p is not None
        ]
        chosen, parts = [n for n, _ in answered], [p for _, p in answered]
        k, candidates = request["k"], request["candidates"]
        fused = _core.fuse_candidates(parts, k, candidates, fusion, vector_weight, threshold)
        owners: dict[int, list[int]] = {}
        for part, key, *_ in fused:
            owners.setdefault(chosen[part], []).append(key)
        found = self.call([self._bound(n, "get", keys) for n, keys in owners.items()])
        chunks = {c["key"]: c for batch in found if batch is not None for c in batch}
        hits = []
        for _, key, score, bm25, vec, coverage, relevance in fused:
            chunk = chunks.get(key)
            if chunk is not None:
                hits.append(
                    {**chunk, "score": score, "bm25": bm25, "vector": vec, "coverage": coverage, "relevance": relevance}
                )
        return hits

    def term_stats(self, query: str) -> str:
        """The whole index's BM25 statistics for ``query`` (every shard's, summed)."""
        known = self._stats
        if known is not None:
            tokens = _core.query_tokens(query)
            if all(t in known["doc_freqs"] for t in tokens):
                return json.dumps({**known, "doc_freqs": {t: known["doc_freqs"][t] for t in tokens}})
        shares = self.call([self._bound(n, "term_stats", query) for n in sorted(self.shards)])
        answered = [s for s in shares if s is not None]
        merged = _core.merge_term_stats(answered)
        if len(answered) == len(shares):  # a partial sum is this query's answer only
            self._remember(json.loads(merged))
        return merged

    def _remember(self, stats: dict[str, Any]) -> None:
        known = self._stats
        if known is None or len(known["doc_freqs"]) > _KNOWN_TOKENS:
            self._stats = stats
        else:
            known["doc_freqs"].update(stats["doc_freqs"])

    def passages(self, query: str, texts: list[str], max_chars: int = 300) -> list[tuple[bool, str, bool] | None]:
        """Each text's best passage for ``query``, terms weighed as one home would weigh them."""
        if not self.shards:
            return [None] * len(texts)
        stats = self.term_stats(query)
        for n in sorted(self.shards):  # any shard weighs terms alike with the corpus statistics
            found: list[tuple[bool, str, bool] | None] | None = self.call(
                [self._bound(n, "passages", query, texts, max_chars, stats)]
            )[0]
            if found is not None:
                return found
        return [None] * len(texts)

    def _bound(self, shard: int, method: str, *args: Any) -> Callable[[], Any]:
        target = getattr(self.shards[shard], method)
        return lambda: target(*args)

    def get(self, keys: list[int]) -> list[dict[str, Any]]:
        """Stored chunks by key, from whichever shard holds them."""
        every = sorted(self.shards)
        found = {
            c["key"]: c
            for batch in self.call([self._bound(n, "get", keys) for n in every])
            if batch is not None
            for c in batch
        }
        return [found[k] for k in keys if k in found]

    def windows(self, embedder_id: str, hashes: list[str]) -> dict[str, np.ndarray]:
        """Window vectors of these chunks from the shards' embedding caches."""
        out: dict[str, np.ndarray] = {}
        for part in self.call([self._bound(n, "windows", embedder_id, hashes) for n in sorted(self.shards)]):
            out.update(part or {})
        return out

    def libraries(self) -> list[dict[str, Any]]:
        """The user's global libraries (:meth:`memlane.Memory.libraries`): none, as the shards'
        catalog records chunks per project only (a project search reads the project's notes)."""
        return []

    def records_projects(self) -> bool:
        """Whether the shard versions record their chunks' projects (built since memlane does)."""
        return all("projects" in r for r in self.records.values())

    def projects(self) -> dict[str, int]:
        """Project key → live chunks, summed over the shards' version records."""
        out: dict[str, int] = {}
        for r in self.records.values():
            for key, n in r.get("projects", {}).items():
                out[key] = out.get(key, 0) + n
        return out

    def prefetch_vectors(self) -> None:
        """Nothing to start from here: each shard actor's store loads its vectors on its first search."""

    def meta(self) -> dict[str, Any]:
        """What built the vectors (as a home's ``memlane.json``)."""
        return {"version": 1, "embedder_id": self.catalog.embedder_id, "dim": self.catalog.dim}

    def status(self) -> dict[str, Any]:
        """Counts summed over the shards, from the catalog (no shard is opened)."""
        shards = self.catalog.shards
        return {
            "home": None,
            "files": sum(s.files for s in shards),
            "chunks": sum(s.chunks for s in shards),
            "chunks_with_vectors": None,
            "vectors": None,
            "embedder_id": self.catalog.embedder_id,
            "dim": self.catalog.dim,
            "disk_bytes": sum(s.bytes for s in shards),
            "sessions": sum(s.sessions for s in shards),
        }


class LocalShardSet(ShardSet):
    """The shards of one catalog version open in this process (:class:`LocalShard`).

    A query is one core call that sums every shard's statistics, searches the selected shards
    and reads every hit side by side, as a home's search does (``_core.search_across``): no
    statistics round through Python (~0.25 ms a query at 1M chunks). Other calls run in the
    caller's thread, one shard after another: a shard's statistics take tens of µs, less than
    handing them to a thread and back.
    """

    def __init__(self, catalog: cat.Catalog, records: dict[int, dict[str, Any]], shards: dict[int, LocalShard]) -> None:
        super().__init__(catalog, records, shards, inline)

    def prefetch_vectors(self) -> None:
        """Every shard starts loading its vectors (see ``_core.Store.prefetch_vectors``)."""
        for shard in self.shards.values():
            shard.store.prefetch_vectors()

    def _ranked(
        self,
        selected: list[int],
        query: str,
        request: dict[str, Any],
        fusion: str,
        vector_weight: float,
        threshold: float,
    ) -> list[dict[str, Any]]:
        stores = [self.shards[n].store for n in selected]
        every = [self.shards[n].store for n in sorted(self.shards)]
        return _core.search_across(
            stores, query, corpus=every, fusion=fusion, vector_weight=vector_weight, threshold=threshold, **request
        )


def local_root(uri: str, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Where an index's shards are kept on this machine (one folder per index URI)."""
    from memlane._paths import default_cache_dir

    base = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
    return base / "index" / hashlib.sha256(uri.encode()).hexdigest()[:16]


def shard_records(uri: str, catalog: cat.Catalog) -> dict[int, dict[str, Any]]:
    """The version record of every shard of ``catalog`` that holds data."""
    out = location(uri)
    records: dict[int, dict[str, Any]] = {}
    for ref in catalog.shards:
        if ref.version is None:
            continue
        record = cat.version_record(out, ref.shard, ref.version)
        if record is None:
            raise FileNotFoundError(
                f"{uri}: catalog {catalog.generation} names shard {ref.shard} version {ref.version}, which is missing"
            )
        records[ref.shard] = record
    return records


def shard_home(uri: str, record: dict[str, Any], root: Path, objects: Path) -> Path:
    """A shard version laid out as a home under ``root`` (downloaded once: versions never
    change; its files hard links into the object folder ``objects``)."""
    shard, version = record["shard"], record["version"]
    return cat.materialize(location(uri), shard, record, root / cat.shard_dir(shard) / version, objects)


class ShardedIndex(Memory):
    """A sharded index (a catalog of shards) searched in this process, with the
    :class:`memlane.Memory` interface: ``search``, ``recall``, ``get``, ``status``.

    The shards are downloaded into ``cache_dir`` (default: memlane's cache folder) on first
    use; :meth:`refresh` moves to a newer catalog version. Writing (``index``, ``forget`` …)
    is the cluster's job: ``memlane index SOURCES --ray … --out URI``.
    """

    def __init__(self, uri: str, embedder: Any = "local", *, cache_dir: str | os.PathLike[str] | None = None) -> None:
        self.uri = location(uri).uri
        self._root = local_root(self.uri, cache_dir)
        shards = self._load()
        if shards is None:
            raise FileNotFoundError(
                f"no memlane index at {uri}: `memlane index SOURCES --ray local --out {uri}` builds one"
            )
        self._shards: ShardSet = shards
        super().__init__(
            self._root / "home", embedder=embedder if self._shards.catalog.embedder_id else "none", cache_dir=cache_dir
        )
        self.events = NoEventLog()

    def _load(self) -> ShardSet | None:
        catalog = cat.load(location(self.uri))
        if catalog is None:
            return None
        return self._open_shards(catalog, shard_records(self.uri, catalog))

    def _open_shards(self, catalog: cat.Catalog, records: dict[int, dict[str, Any]]) -> ShardSet:
        """The shards of ``catalog``, downloaded and opened in this process (a served index
        opens them in shard actors instead)."""
        shards = {
            n: LocalShard(shard_home(self.uri, r, self._root, self._root / "objects")) for n, r in records.items()
        }
        return LocalShardSet(catalog, records, shards)

    _store: ShardSet  # type: ignore[assignment]  # the shards answer a Store's reading calls

    def _open_store(self, quantization: str) -> ShardSet:  # type: ignore[override]
        return self._shards

    def _cached_windows(self, embedder_id: str, content_hashes: list[str]) -> dict[str, np.ndarray]:
        return self._store.windows(embedder_id, content_hashes)

    @property
    def catalog(self) -> cat.Catalog:
        """The catalog version searched."""
        return self._store.catalog

    def refresh(self) -> bool:
        """Move to the newest catalog version if there is one (searches under way finish on
        the old one); True when it moved."""
        current = cat.load(location(self.uri))
        if current is None or current.generation == self._store.catalog.generation:
            return False
        fresh = self._load()
        if fresh is None:
            return False
        self._store = fresh
        return True

    def status(self) -> dict[str, Any]:
        """Counts of the whole index (from the catalog), its shards and the catalog version."""
        status = self._store.status()
        c = self._store.catalog
        status.update(
            home=None,
            index=self.uri,
            generation=c.generation,
            created=c.created,
            shards=len(c.shards),
            shards_with_data=sum(1 for s in c.shards if s.version),
            partition_depth=c.partition.depth,
            local=str(self._root),
        )
        return status

    def _read_only(self, *args: Any, **kwargs: Any) -> Any:
        raise InvalidArgumentError(
            f"{self.uri} is a sharded index: it is written by `memlane index SOURCES --ray … --out {self.uri}`"
        )

    index = embed_pending = embed_batch = remove_sources = forget = repair = verify = secrets = _read_only


def open_index(uri: str, embedder: Any = "local", **kwargs: Any) -> ShardedIndex:
    """Open a sharded index for searching in this process.

    Example:
        >>> import memlane, tempfile
        >>> memlane.open_index(tempfile.mkdtemp())  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        FileNotFoundError: no memlane index at ...
    """
    return ShardedIndex(uri, embedder, **kwargs)
