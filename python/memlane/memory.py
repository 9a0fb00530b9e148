"""The :class:`Memory` façade: index sources, embed what is new, search hybrid.

Example:
    >>> import memlane, tempfile
    >>> mem = memlane.open(tempfile.mkdtemp(), embedder="none")
    >>> mem.search("anything")
    []
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlane import _core
from memlane._paths import agent_transcript_dirs, default_cache_dir, default_home
from memlane.embed import Embedder, make_embedder
from memlane.events import EventLog
from memlane.events import summarize as summarize_events
from memlane.knowledge import library_dirs
from memlane.ranking.hit import Hit
from memlane.ranking.relevance import FLOOR

if TYPE_CHECKING:
    import numpy as np

    from memlane.embed.batch_backfill import BatchBackfillReport
    from memlane.embed.cache import EmbeddingCache
    from memlane.recall import Recall

# Files per parse batch: big enough for rayon to keep both cores busy, small enough for a
# smooth progress bar and prompt Ctrl-C.
_FILES_PER_BATCH = 64
_BYTES_PER_BATCH = 64 << 20
# Chunks embedded between two vector commits: an interruption loses at most this much work,
# and even that is in the embedding cache.
_CHUNKS_PER_EMBED_BATCH = 256
_EMBED_BATCHES_PER_COMMIT = 16

Progress = Callable[[str, int, int], None]
"""Progress callback: ``(stage, done, total)``; stages are ``parse`` (bytes) and ``embed`` (chunks)."""


@dataclass
class IndexReport:
    """What :meth:`Memory.index` did."""

    files_seen: int = 0
    files_indexed: int = 0
    files_removed: int = 0
    chunks_added: int = 0
    chunks_removed: int = 0
    chunks_embedded: int = 0
    embed_cache_hits: int = 0
    records_skipped: dict[str, int] = field(default_factory=dict)
    bytes_parsed: int = 0
    files_resumed: int = 0
    seconds: float = 0.0
    keyword_seconds: float = 0.0
    embed_usage: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


def _parse_time(value: str | int | float | datetime | None) -> int | None:
    """Milliseconds since the epoch from an ISO date/time, a datetime or epoch seconds."""
    if value is None:
        return None
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, (int, float)):
        return int(value * 1000)
    else:
        try:
            dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"cannot read time {value!r}: use ISO-8601 like 2026-03-01 or 2026-03-01T12:00Z") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(dt.timestamp() * 1000)


class Memory:
    """A memlane home: index transcripts, then search them.

    Args:
        home: Directory of the indexes (created if missing).
        embedder: ``"local"`` (default, offline MiniLM), ``"local:int8"``, ``"local:/model/dir"``
            (a sentence-embedding model of your own), ``"bedrock[:dims]"``, ``"none"`` for
            keyword-only, or any object implementing :class:`memlane.embed.Embedder`.
        quantization: Vector storage for a new home: ``f16`` (default), ``i8`` or ``f32``.
        cache_dir: Shared embedding cache (default ``$MEMLANE_CACHE_DIR`` or ``~/.cache/memlane``).

    Example:
        >>> import memlane, tempfile
        >>> mem = memlane.Memory(tempfile.mkdtemp(), embedder="none")
        >>> mem.status()["chunks"]
        0
    """

    def __init__(
        self,
        home: str | PathLike[str],
        embedder: str | Embedder | None = "local",
        *,
        quantization: str = "f16",
        cache_dir: str | PathLike[str] | None = None,
    ) -> None:
        self.home = Path(home).expanduser()
        self._store = _core.Store(str(self.home), quantization)
        self._embedder_spec = embedder
        self._embedder: Embedder | None = embedder if not isinstance(embedder, (str, type(None))) else None
        self._cache_dir = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
        self._cache: EmbeddingCache | None = None
        self.events = EventLog(self.home)
        self._last_query: tuple[tuple[str, str], np.ndarray] | None = None

    # -- embedding -------------------------------------------------------------------------

    @property
    def embedder(self) -> Embedder | None:
        """The embedder, loaded on first use (``None`` in keyword-only mode)."""
        if self._embedder is None and isinstance(self._embedder_spec, str) and self._embedder_spec != "none":
            self._embedder = make_embedder(self._embedder_spec)
        return self._embedder

    @property
    def cache(self) -> EmbeddingCache:
        """The shared embedding cache."""
        if self._cache is None:
            from memlane.embed.cache import EmbeddingCache

            self._cache = EmbeddingCache(self._cache_dir / "embeddings.sqlite")
        return self._cache

    def _query_vector(self, embedder: Embedder, query: str) -> np.ndarray:
        """The query's vector; the last one is kept, so recall scores the brain and searches with one embedding."""
        key = (embedder.id, query)
        if self._last_query is None or self._last_query[0] != key:
            import numpy as np

            self._last_query = (key, np.ascontiguousarray(embedder.embed_query(query), dtype=np.float32))
        return self._last_query[1]

    def _embed_chunks(
        self, rows: Sequence[tuple[int, str, str]], embedder: Embedder, cache_only: bool = False
    ) -> tuple[list[int], list[np.ndarray], int]:
        """Vectors for (key, hash, text) rows: from the cache, else from the embedder (unless ``cache_only``)."""
        cached = self.cache.get_many(embedder.id, (h for _, h, _ in rows))
        # One request per distinct text: identical chunks share a content hash.
        missing = list({h: text for _, h, text in rows if h not in cached}.items())
        if missing and not cache_only:
            fresh = embedder.embed_documents([text for _, text in missing])
            new = {h: v for (h, _), v in zip(missing, fresh)}
            self.cache.put_many(embedder.id, new)
            cached.update(new)
        found = [(k, h) for k, h, _ in rows if h in cached]
        return [k for k, _ in found], [cached[h] for _, h in found], len(rows) - len(missing)

    # -- indexing --------------------------------------------------------------------------

    def index(
        self,
        paths: Iterable[str | PathLike[str]] | None = None,
        *,
        embed: bool = True,
        format: str | None = None,
        progress: Progress | None = None,
    ) -> IndexReport:
        """Index transcript files, markdown notes and folders of both incrementally.

        New and changed files are parsed and chunked (markdown by section, see
        :mod:`memlane.knowledge`); unchanged ones cost a stat; files gone from a folder lose
        their chunks. Keyword search sees the new chunks as soon as parsing
        ends; then chunks without vectors are embedded (cache first) unless ``embed`` is false.

        Args:
            paths: Files or folders; default: the agent transcript folders on this machine and
                the knowledge library (:func:`memlane.knowledge.library_dirs`).
            embed: Embed new chunks after the keyword index is committed.
            format: Force a format (``claude-code``, ``codex``, ``openclaw``, ``gemini``,
                ``cursor``, ``copilot``, ``hermes``, ``aider``, ``chatgpt``, ``claude-ai``,
                ``slack``, ``generic``, ``longmemeval``, ``locomo``, ``markdown``) instead of
                auto-detection; folder walks then take only that format's files.
            progress: Optional callback ``(stage, done, total)``.

        Returns:
            What was done.

        Raises:
            IndexLockedError: Another process is writing to this home.
            FileNotFoundError: A path does not exist.
        """
        started = time.perf_counter()
        if paths is None:
            paths = [*agent_transcript_dirs(), *library_dirs(self.home)]
        roots = [str(Path(p).expanduser()) for p in paths]
        report = IndexReport()
        with self._store.writer(format) as writer:
            plan = writer.scan(roots)
            writer.remove_files(plan["deleted"])
            todo: list[str] = plan["to_index"]
            total_bytes, done_bytes = plan["bytes_to_index"], 0
            batch: list[str] = []
            batch_bytes = 0
            for i, path in enumerate(todo):
                try:
                    size = Path(path).stat().st_size
                except OSError:  # vanished since the scan; index_files counts it
                    size = 0
                batch.append(path)
                batch_bytes += size
                if len(batch) >= _FILES_PER_BATCH or batch_bytes >= _BYTES_PER_BATCH or i == len(todo) - 1:
                    writer.index_files(batch)
                    done_bytes += batch_bytes
                    if progress:
                        progress("parse", done_bytes, total_bytes)
                    batch, batch_bytes = [], 0
            core_report = writer.commit()
            report.keyword_seconds = time.perf_counter() - started
            if embed and self.embedder is not None:
                # Billed backends (Bedrock) expose cumulative usage; report this run's share.
                before = getattr(self.embedder, "usage", None)
                report.chunks_embedded, report.embed_cache_hits = self._backfill(writer, self.embedder, progress)
                core_report = writer.commit()
                if before is not None:
                    report.embed_usage = (self.embedder.usage - before).to_dict()
        for name in ("files_seen", "files_indexed", "files_removed", "chunks_added", "chunks_removed", "bytes_parsed",
                     "files_resumed"):
            setattr(report, name, core_report[name])
        report.records_skipped = dict(core_report["records_skipped"])
        report.seconds = time.perf_counter() - started
        self.events.append("index", paths=roots, files_indexed=report.files_indexed, chunks_added=report.chunks_added,
                           chunks_removed=report.chunks_removed, chunks_embedded=report.chunks_embedded)
        return report

    def embed_pending(self, progress: Progress | None = None) -> int:
        """Embed every chunk that has no vector yet (resumes an interrupted backfill).

        Returns:
            Chunks embedded (including cache hits).
        """
        if self.embedder is None:
            return 0
        with self._store.writer() as writer:
            done, _ = self._backfill(writer, self.embedder, progress)
            writer.commit()
        return done

    def embed_batch(
        self,
        s3_uri: str | None = None,
        role_arn: str | None = None,
        *,
        fill_on_demand: bool = True,
        progress: Progress | None = None,
        s3: Any = None,
        bedrock: Any = None,
        **options: Any,
    ) -> BatchBackfillReport:
        """Embed every chunk without a vector through Bedrock batch inference; resumable.

        The first call streams the texts of pending chunks (cache hits left out) to
        ``s3_uri`` as job inputs and saves the run in the home; every call then submits what
        is not submitted, waits for the jobs and joins their outputs into the embedding cache,
        and finally fills the index from the cache without a call. Interrupted, it resumes on
        the next call (``s3_uri`` and ``role_arn`` may then be omitted): running jobs are
        polled, not submitted again. Records a job failed, and the few texts left over below
        Bedrock's minimum job size, are embedded on demand, or with ``fill_on_demand=False``
        stay pending for a later :meth:`embed_pending`.

        Args:
            s3_uri: ``s3://bucket/prefix`` in the embedder's region (needed to start a run).
            role_arn: IAM service role Bedrock assumes to read and write there (same).
            fill_on_demand: Embed failed and leftover texts with on-demand calls.
            progress: Optional callback; stage ``embed`` while the index is filled.
            s3: S3 client (default: built for the embedder's region).
            bedrock: ``bedrock`` control-plane client (same).
            **options: ``poll_seconds``, ``timeout_seconds``, ``max_concurrent_jobs``, ``sleep``,
                ``on_status`` for waiting; ``max_records_per_job``, ``min_records_per_job``
                for a new run.

        Returns:
            What was done, with billed tokens and the cost estimate.

        Raises:
            ValueError: Not a Bedrock embedder, no run to resume and no ``s3_uri``/``role_arn``,
                or a run of another embedder or location in progress.
            EmbedderMismatchError: The home holds another embedder's vectors.
            BatchJobError: A job failed (resubmitted on the next call) or timed out.
        """
        from memlane.embed.batch_backfill import BatchRun, pending_texts
        from memlane.embed.bedrock_batch import make_batch_clients
        from memlane.errors import EmbedderMismatchError

        started = time.perf_counter()
        embedder = self.embedder
        if embedder is None or not embedder.id.startswith("bedrock/"):
            raise ValueError(f"batch embedding needs a Bedrock embedder (bedrock[:dims]), not {getattr(embedder, 'id', 'none')}")
        home_embedder = self._store.status()["embedder_id"]  # fresh from disk (meta() is per-process)
        if home_embedder and home_embedder != embedder.id:
            raise EmbedderMismatchError(f"{self.home} holds vectors of {home_embedder}; a batch of {embedder.id} cannot go in it")
        if s3 is None or bedrock is None:
            built_s3, built_bedrock = make_batch_clients(embedder.region)  # type: ignore[attr-defined]
            s3, bedrock = s3 or built_s3, bedrock or built_bedrock
        start_options = {k: options.pop(k) for k in ("max_records_per_job", "min_records_per_job") if k in options}
        run = BatchRun.load(self.home)
        resumed = run is not None
        if run is None:
            if not s3_uri or not role_arn:
                raise ValueError("no batch run to resume in this home: give an S3 location and an IAM role to start one")
            with self._store.writer() as writer:
                texts = pending_texts(writer, self.cache, embedder.id)
                run = BatchRun.start(self.home, embedder, s3_uri, role_arn, texts=texts, cache=self.cache, s3=s3, **start_options)
        elif run.embedder_id != embedder.id or (s3_uri or run.s3_uri) != run.s3_uri:
            raise ValueError(
                f"a batch run of {run.embedder_id} to {run.s3_uri} is in progress in this home: resume it with "
                f"that embedder and location, or delete {run.path} to abandon it"
            )
        report = run.wait(cache=self.cache, s3=s3, bedrock=bedrock, **options)
        report.resumed = resumed
        with self._store.writer() as writer:
            report.chunks_embedded, hits = self._backfill(writer, embedder, progress, cache_only=not fill_on_demand)
            report.embedded_on_demand = report.chunks_embedded - hits if fill_on_demand else 0
            writer.commit()
            report.chunks_pending = len(writer.pending_vectors())
        report.seconds = time.perf_counter() - started
        self.events.append("embed_batch", jobs=report.jobs, records=report.records, failed=len(report.failed),
                           chunks_embedded=report.chunks_embedded)
        return report

    def _backfill(
        self, writer: Any, embedder: Embedder, progress: Progress | None, cache_only: bool = False
    ) -> tuple[int, int]:
        pending = writer.pending_vectors()
        total, done, hits = len(pending), 0, 0
        for n, start in enumerate(range(0, total, _CHUNKS_PER_EMBED_BATCH), start=1):
            batch = [int(k) for k in pending[start : start + _CHUNKS_PER_EMBED_BATCH]]
            rows = writer.chunk_texts(batch)
            keys, vectors, batch_hits = self._embed_chunks(rows, embedder, cache_only)
            hits += batch_hits
            if keys:
                import numpy as np

                counts = np.array([v.shape[0] for v in vectors], dtype=np.uint64)
                flat = np.ascontiguousarray(np.concatenate(vectors), dtype=np.float32)
                writer.add_vectors(embedder.id, np.array(keys, dtype=np.uint64), counts, flat)
            done += len(keys)
            if n % _EMBED_BATCHES_PER_COMMIT == 0:
                writer.commit()
            if progress:
                progress("embed", done, total)
        return done, hits

    # -- reading ---------------------------------------------------------------------------

    def search(
        self,
        query: str,
        k: int = 10,
        *,
        sources: Sequence[str] | None = None,
        session_id: str | None = None,
        since: str | int | float | datetime | None = None,
        until: str | int | float | datetime | None = None,
        fusion: str = "weighted",
        vector_weight: float = 0.6,
        threshold: float = FLOOR,
        recency: bool = True,
        temporal: bool = True,
    ) -> list[Hit]:
        """Hybrid search: BM25 and vector candidates fused, best first, then ordered for time.

        When no candidate's relevance reaches ``threshold`` the result is empty; otherwise the
        hits rank by their fused score and each carries its ``relevance`` (an absolute scale,
        see :mod:`memlane.ranking.relevance`). Vectors are used when the home has them and an
        embedder is configured; otherwise BM25 answers alone. See :mod:`memlane.ranking.rerank`
        for how ``recency`` and ``temporal`` reorder the fused hits.

        Args:
            query: Free text; code identifiers, paths and error codes match exactly.
            k: Hits wanted.
            sources: Keep only these sources (``transcript``, ``knowledge``, ``brain``).
            session_id: Keep only this session.
            since: Keep chunks from this time on (ISO-8601, datetime or epoch seconds).
            until: Keep chunks before this time.
            fusion: ``weighted`` (default) or ``rrf``.
            vector_weight: Weight of the vector score in weighted fusion (BM25 gets the rest).
            threshold: Relevance floor: nothing when no candidate reaches it (0 turns it off).
            recency: On present-state questions ("which database does billing use now?"), the
                newest of several hits about the same subject ranks first; the older ones are
                marked ``superseded_by``. Unique old facts never move for being old.
            temporal: When the question names a time ("in January", "two weeks before May 7"),
                hits dated near it rank higher (relative times read against the newest hit's date).

        Returns:
            Hits with provenance and score breakdown.

        Example:
            >>> import memlane, tempfile
            >>> memlane.open(tempfile.mkdtemp(), embedder="none").search("exit code 137", k=5)
            []
        """
        if k < 1:
            raise ValueError("k must be at least 1")
        vector = None
        embedder_id = None
        # Keyword-only homes never ask for the vectors' meta: that would load them.
        if self._embedder_spec != "none" and self._store.meta().get("embedder_id"):
            embedder = self.embedder
            if embedder is not None:
                vector = self._query_vector(embedder, query)
                embedder_id = embedder.id
        from memlane.ranking.rerank import POOL, needs_rerank, rerank  # compiles its regexes: only once searching
        from memlane.ranking.temporal import asks_present_state

        time_aware = (recency or temporal) and needs_rerank(query, recency=recency, temporal=temporal)
        pool = max(k, POOL) if time_aware else k
        raw = self._store.search(
            query,
            k=pool,
            vector=vector,
            embedder_id=embedder_id,
            sources=list(sources) if sources else None,
            session_id=session_id,
            since=_parse_time(since),
            until=_parse_time(until),
            fusion=fusion,
            vector_weight=vector_weight,
            threshold=threshold,
            candidates=max(50, 5 * k, pool),
        )
        hits = [Hit._from_core(d) for d in raw]
        if time_aware:
            # Same-subject grouping compares chunk vectors; only present-state questions group.
            grouping = recency and asks_present_state(query)
            vectors = self._unit_vectors([d["content_hash"] for d in raw], embedder_id) if grouping else None
            hits = rerank(hits, query, vectors, recency=recency, temporal=temporal)[:k]
        self.events.append("search", query=query, results=len(hits))
        return hits

    def snippets(self, query: str, hits: Sequence[Hit], max_chars: int = 300) -> list[str]:
        """Per hit, the passage of its text that best matches ``query``, for display.

        The passage of at most ``max_chars`` characters holding the most of the query's terms
        (rarer terms weigh more; matched as the keyword search matches them), whitespace
        collapsed, with ``…`` where the text goes on; a hit that matched by meaning alone shows
        its beginning. An error message at the end of a long chunk is what shows, not the
        chunk's first lines.

        Example:
            >>> import memlane, tempfile
            >>> mem = memlane.open(tempfile.mkdtemp(), embedder="none")
            >>> hit = Hit("c1", "transcript", "setup " * 80 + "then exit code 137 killed it", 1.0, {}, "/s.jsonl", "s", 0, 1, None, "")
            >>> mem.snippets("exit code 137", [hit], max_chars=40)
            ['…setup setup then exit code 137 killed…']
        """
        if max_chars < 1:
            raise ValueError("max_chars must be at least 1")
        found = self._store.passages(query, [h.text for h in hits], max_chars)
        out = []
        for hit, passage in zip(hits, found):
            cut_before, text, cut_after = passage or (False, hit.text[:max_chars], len(hit.text) > max_chars)
            out.append(("…" if cut_before else "") + " ".join(text.split()) + ("…" if cut_after else ""))
        return out

    def _unit_vectors(self, content_hashes: list[str], embedder_id: str | None) -> np.ndarray | None:
        """One unit vector per chunk (its windows averaged) from the embedding cache, or None
        when any is missing (then hits are compared by their words)."""
        if embedder_id is None or not content_hashes:
            return None
        import numpy as np

        cached = self.cache.get_many(embedder_id, content_hashes, count=False)
        if len(cached) < len(set(content_hashes)):
            return None
        rows = np.stack([w[0] if len(w) == 1 else w.mean(axis=0) for w in (cached[h] for h in content_hashes)])
        return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)

    def recall(
        self,
        query: str,
        max_tokens: int = 15_000,
        *,
        half_life_days: float | None = None,
        include_brain: bool = True,
    ) -> Recall:
        """Brain entries and hybrid hits for ``query`` as one block within ``max_tokens``.

        See :func:`memlane.recall.recall`.
        """
        from memlane.recall import recall

        return recall(self, query, max_tokens, half_life_days=half_life_days, include_brain=include_brain)

    def get(self, chunk_id: str) -> Hit | None:
        """The chunk with this id (a hit's ``id``), in full with its provenance; None if gone.

        The returned hit's scores are empty: it was looked up, not matched.

        Raises:
            ValueError: ``chunk_id`` is not a hex chunk id.

        Example:
            >>> import memlane, tempfile
            >>> memlane.open(tempfile.mkdtemp(), embedder="none").get("32c3114a17a2cb") is None
            True
        """
        try:
            key = int(chunk_id, 16)
        except ValueError:
            raise ValueError(f"{chunk_id!r} is not a chunk id (hex digits, as search and recall print them)") from None
        found = self._store.get([key])
        if not found:
            return None
        return Hit._from_core({**found[0], "score": 0.0, "bm25": None, "vector": None})

    def status(self) -> dict[str, Any]:
        """Counts, sizes and the embedder of this home, plus the embedding cache."""
        status = dict(self._store.status())
        cache = self._cache_dir / "embeddings.sqlite"
        empty = {"path": str(cache), "entries": 0, "bytes": 0, "hits": 0, "misses": 0}
        status["embedding_cache"] = self.cache.summary() if cache.exists() else empty
        from memlane.embed.batch_backfill import BatchRun

        run = BatchRun.load(self.home)
        status["batch_run"] = run.summary() if run else None
        status["memory_events"] = summarize_events(self.home)
        return status

    def close(self) -> None:
        """Release the embedding cache (indexes hold no open writer between calls)."""
        if self._cache is not None:
            self._cache.close()
            self._cache = None

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open(  # noqa: A001 - the public name DESIGN.md §4 promises
    home: str | PathLike[str] | None = None,
    embedder: str | Embedder | None = "local",
    **kwargs: Any,
) -> Memory:
    """Open (or create) a memlane home.

    Args:
        home: Directory; default ``$MEMLANE_HOME`` or ``~/.local/share/memlane``.
        embedder: See :class:`Memory`.
        **kwargs: Passed to :class:`Memory`.

    Example:
        >>> import memlane, tempfile
        >>> memlane.open(tempfile.mkdtemp(), embedder="none").status()["files"]
        0
    """
    return Memory(home if home is not None else default_home(), embedder, **kwargs)
