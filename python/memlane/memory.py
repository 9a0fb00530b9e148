"""The :class:`Memory` façade: index sources, embed what is new, search hybrid.

Example:
    >>> import memlane, tempfile
    >>> mem = memlane.open(tempfile.mkdtemp(), embedder="none")
    >>> mem.search("anything")
    []
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlane import _check, _core, indexing, maintenance
from memlane._paths import agent_transcript_dirs, default_cache_dir, default_home
from memlane.embed import Embedder, Placement, check_device, check_spec, make_embedder, place
from memlane.embed.backfill import Progress, backfill
from memlane.errors import ArgumentTypeError, InvalidArgumentError
from memlane.events import EventLog
from memlane.events import summarize as summarize_events
from memlane.indexing import IndexReport
from memlane.knowledge import library_dirs
from memlane.maintenance import DEFAULT_QUANTIZATION, QUANTIZATIONS, RepairReport
from memlane.ranking import pipeline
from memlane.ranking.hit import Hit
from memlane.ranking.pipeline import SearchRequest
from memlane.ranking.query import bounded as bounded_query
from memlane.ranking.relevance import FLOOR
from memlane.recall import DEFAULT_MAX_TOKENS, Recall, RecallOptions, recall, shows_recall_options
from memlane.sessions import Session, catalog, chunks_of

__all__ = [
    "DEFAULT_QUANTIZATION",
    "QUANTIZATIONS",
    "Hit",
    "IndexReport",
    "Memory",
    "Progress",
    "RepairReport",
    "open",
]

if TYPE_CHECKING:
    import numpy as np
    from typing_extensions import Unpack

    from memlane.audit import Injections
    from memlane.embed.batch_backfill import BatchBackfillReport
    from memlane.embed.cache import EmbeddingCache


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
            raise InvalidArgumentError(
                f"cannot read time {value!r}: use ISO-8601 like 2026-03-01 or 2026-03-01T12:00Z"
            ) from None
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
        quantization: Vector storage for a new home: ``i8`` (default: 1 byte a dimension, with
            the evidence recall of ``f16``), ``f16`` or ``f32``. A home keeps the storage it was
            made with.
        cache_dir: Shared embedding cache (default ``$MEMLANE_CACHE_DIR`` or ``~/.cache/memlane``).
        device: Where the local model runs: ``auto`` (default: a GPU when one is usable, else the
            CPU), ``cpu`` or ``gpu`` (fails, saying why, where no GPU can be used). On a GPU a new
            home stores the fp32 model's vectors; a home holding q8 vectors keeps embedding on the
            CPU. :attr:`placement` says what is chosen and why. Other embedders take ``auto``.

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
        quantization: str = DEFAULT_QUANTIZATION,
        cache_dir: str | PathLike[str] | None = None,
        device: str = "auto",
    ) -> None:
        if not isinstance(home, (str, PathLike)):
            raise ArgumentTypeError(f"home must be a path (str or os.PathLike), got {type(home).__name__}")
        if isinstance(embedder, str):
            if embedder != "none":
                check_spec(embedder)
        elif embedder is not None and not isinstance(embedder, Embedder):
            raise ArgumentTypeError(
                f"embedder must be a spec such as 'local' or an Embedder, got {type(embedder).__name__}"
            )
        _check.choice("quantization", quantization, QUANTIZATIONS)
        self._device = check_device(embedder, device)
        self._placement: Placement | None = None
        self.home = Path(home).expanduser()
        self._store = self._open_store(quantization)
        self._embedder_spec = embedder
        self._embedder: Embedder | None = embedder if not isinstance(embedder, (str, type(None))) else None
        self._cache_dir = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
        self._cache: EmbeddingCache | None = None
        self.events = EventLog(self.home)
        self._audit: Injections | None = None
        self._last_query: tuple[tuple[str, str], np.ndarray] | None = None
        self._projects: tuple[int | None, dict[str, int]] | None = None
        self._libraries: tuple[int | None, list[dict[str, Any]]] | None = None

    def _open_store(self, quantization: str) -> _core.Store:
        """The indexes searched (a subclass may search something else with the same calls:
        :class:`memlane.cluster.ShardedIndex` searches a catalog of shards)."""
        return _core.Store(str(self.home), quantization)

    # -- embedding -------------------------------------------------------------------------

    @property
    def embedder(self) -> Embedder | None:
        """The embedder, loaded on first use (``None`` in keyword-only mode)."""
        if self._embedder is None and isinstance(self._embedder_spec, str) and self._embedder_spec != "none":
            placement = self.placement
            spec, options = (placement.spec, placement.options()) if placement else (self._embedder_spec, {})
            self._embedder = make_embedder(spec, **options)
        return self._embedder

    @property
    def placement(self) -> Placement | None:
        """Which graph of the local model embeds for this home, on which device, and why
        (``None`` for another embedder); decided on first use, loading no model.

        Raises:
            memlane.errors.InvalidArgumentError: ``device="gpu"`` where no GPU can be used.

        Example:
            >>> import memlane, tempfile
            >>> memlane.open(tempfile.mkdtemp(), device="cpu").placement.device
            'cpu'
        """
        if self._placement is None and isinstance(self._embedder_spec, str) and self._embedder_spec != "none":
            self._placement = place(self._embedder_spec, self.vectors_embedder_id, self._device)
        return self._placement

    @property
    def quantization(self) -> str | None:
        """How this home stores its vectors (``i8``, ``f16``, ``f32``), chosen when it was made.

        Example:
            >>> import memlane, tempfile
            >>> memlane.open(tempfile.mkdtemp(), embedder="none", quantization="f16").quantization
            'f16'
        """
        return self._store.meta().get("quantization")

    @property
    def vectors_embedder_id(self) -> str | None:
        """Id of the embedder whose vectors this home holds (``None``: no vectors yet).

        Example:
            >>> import memlane, tempfile
            >>> print(memlane.open(tempfile.mkdtemp(), embedder="none").vectors_embedder_id)
            None
        """
        return self._store.meta().get("embedder_id")

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
        their chunks. Unless ``embed`` is false, chunks without vectors are embedded (cache
        first) while the rest is parsed: the keyword index is committed after the first batch
        of files and again as the run goes on, and keyword search sees what each commit holds.

        Args:
            paths: Files or folders; default: the agent transcript folders on this machine and
                the knowledge library (:func:`memlane.knowledge.library_dirs`).
            embed: Embed the chunks that have no vector.
            format: Force a format (``claude-code``, ``codex``, ``openclaw``, ``gemini``,
                ``cursor``, ``copilot``, ``hermes``, ``aider``, ``chatgpt``, ``claude-ai``,
                ``slack``, ``generic``, ``longmemeval``, ``locomo``, ``markdown``) instead of
                auto-detection; folder walks then take only that format's files.
            progress: Optional callback ``(stage, done, total)``. While the run embeds,
                ``parse`` comes from the keyword pass's own thread and ``embed`` from the
                calling one, interleaved; the ``embed`` total grows as chunks are committed.

        Returns:
            What was done.

        Raises:
            IndexLockedError: Another process is writing to this home.
            FileNotFoundError: A path does not exist.
            memlane.errors.ArgumentTypeError: An argument has the wrong type (a TypeError).
        """
        started = time.perf_counter()
        # A single str or Path is one path, not an iterable of characters.
        paths = None if paths is None else _check.paths("paths", paths)
        _check.flag("embed", embed)
        _check.optional_text("format", format)
        if progress is not None and not callable(progress):
            raise ArgumentTypeError(f"progress must be callable, got {type(progress).__name__}")
        if paths is None:
            paths = [*agent_transcript_dirs(), *library_dirs(self.home)]
        roots = [str(Path(p).expanduser()) for p in paths]
        return indexing.index(self, roots, embed=embed, format=format, progress=progress, started=started)

    def forget_missing(self, *, dry_run: bool = False) -> dict[str, Any]:
        """Forget every source whose file is gone (transcripts are kept when their files go:
        this removes them on purpose), as :meth:`forget` with ``path`` does each.

        Returns:
            ``{"chunks", "files", "dry_run"}``.
        """
        return maintenance.forget_missing(self, dry_run=dry_run)

    def forget_all(self, *, cache: bool = False) -> dict[str, Any]:
        """Clear this home: its index, vectors, kept transcripts, brain (when it lives in the
        home), tasks, queue and events, leaving an empty home that verifies sound. The shared
        embedding cache stays unless ``cache`` (it holds vectors, never text; other homes use it).

        Returns:
            ``{"home", "removed": [names], "cache_removed": bool}``.
        """
        return maintenance.forget_all(self, cache=cache)

    def remove_sources(self, paths: Iterable[str | PathLike[str]]) -> int:
        """Drop the chunks of these source files as if they had been deleted (a home that
        mirrors an archive whose objects went; the files need not exist here).

        Returns:
            Chunks removed.

        Example:
            >>> import memlane, tempfile
            >>> memlane.open(tempfile.mkdtemp(), embedder="none").remove_sources(["/gone.jsonl"])
            0
        """
        return maintenance.remove_sources(self, paths)

    def embed_pending(self, progress: Progress | None = None, *, cache_only: bool = False) -> int:
        """Embed every chunk that has no vector yet (resumes an interrupted backfill).

        ``cache_only`` gives vectors only to the chunks the embedding cache has, with no call
        to the embedder (a sharded index's batch backfill); the others stay pending.

        Returns:
            Chunks embedded (including cache hits).
        """
        if self.embedder is None:
            return 0
        with self._store.writer() as writer:
            done, _ = backfill(writer, self.cache, self.embedder, progress, cache_only=cache_only)
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
            memlane.errors.InvalidArgumentError (a ValueError): Not a Bedrock embedder, no run to
                resume and no ``s3_uri``/``role_arn``, or a run of another embedder or location in progress.
            EmbedderMismatchError: The home holds another embedder's vectors.
            BatchJobError: A job failed (resubmitted on the next call) or timed out.
        """
        from memlane.embed.backfill import embed_batch

        report = embed_batch(
            self._store,
            self.home,
            self.embedder,
            self.cache,
            s3_uri,
            role_arn,
            fill_on_demand=fill_on_demand,
            progress=progress,
            s3=s3,
            bedrock=bedrock,
            **options,
        )
        self.events.append(
            "embed_batch",
            jobs=report.jobs,
            records=report.records,
            failed=len(report.failed),
            chunks_embedded=report.chunks_embedded,
        )
        return report

    # -- reading ---------------------------------------------------------------------------

    def items(
        self,
        query: str | None = None,
        *,
        types: Sequence[str] | None = None,
        project: str | None = None,
        k: int | None = 10,
    ) -> list[Any]:
        """Typed, cited items (:mod:`memlane.brain.items`): decisions, entities, claims and tasks
        from the brain and the agents' plans, and notes from the knowledge library (with a
        query: a search of its sections; without one: every section). Best match first, or
        every item (``k=None``) in order; ``project`` as :meth:`search` takes it.

        Example:
            >>> import memlane, tempfile
            >>> memlane.open(tempfile.mkdtemp(), embedder="none").items("billing", types=["decision"])
            []
        """
        from memlane.brain import Brain, default_brain_dir
        from memlane.brain.items import TYPES, Item, brain_items, check_types

        wanted = check_types(types or TYPES)
        found = brain_items(
            Brain(default_brain_dir(self.home), home=self.home),
            self.home,
            types=wanted,
            query=query,
            project=project,
            k=k,
        )
        if "note" in wanted and query:
            for h in self.search(query, k or 10, sources=["knowledge"], project=project):
                cited = f"{h.path} § {h.heading}" if h.heading else h.path
                found.append(Item(h.id, "note", h.text, cited, h.project or None, None, h.timestamp, h.relevance))
            found.sort(key=lambda i: -(i.score or 0.0))
        elif "note" in wanted:
            found += self._note_items(project)
        return found[:k] if k is not None else found

    def _note_items(self, project: str | None) -> list[Any]:
        """Every section of the knowledge library (of ``project`` and the user's global
        libraries), as items citing its file and heading."""
        from memlane.brain.items import Item

        keys = (
            None
            if project is None
            else {*self.project_keys(project), *(lib["path"] for lib in self.libraries() if lib["global"])}
        )
        every = [int(key) for key in self._store.keys()]
        out = []
        for start in range(0, len(every), 4096):
            for c in self._store.get(every[start : start + 4096]):
                if c["source"] == "knowledge" and (keys is None or c.get("project") in keys):
                    cited = f"{c['path']} § {c['heading']}" if c.get("heading") else c["path"]
                    out.append(
                        Item(
                            c["id"],
                            "note",
                            c.get("heading") or Path(c["path"]).name,
                            cited,
                            c.get("project") or None,
                            None,
                            c.get("timestamp"),
                        )
                    )
        return out

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
        hierarchy: bool = True,
        project: str | None = None,
        branch: str | None = None,
    ) -> list[Hit]:
        """Hybrid search: BM25 and vector candidates fused, best first, then ordered for time.

        When no candidate's relevance reaches ``threshold`` the result is empty; otherwise the
        hits rank by their fused score and each carries its ``relevance`` (an absolute scale,
        see :mod:`memlane.ranking.relevance`). Vectors are used when the home has them and an
        embedder is configured; otherwise BM25 answers alone. The steps are those of
        :mod:`memlane.ranking.pipeline`; see :mod:`memlane.ranking.rerank` for how ``recency`` and
        ``temporal`` reorder the fused hits.

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
            hierarchy: A summary or wiki page among the hits hands its place to the daily entries it
                cites that match the query (:mod:`memlane.ranking.hierarchy`): it never outranks its evidence.
            project: Keep only chunks of this project: a key as hits show it, a path (the
                repository around it) or a name (``alpha`` for ``/src/alpha``); see
                :meth:`project_keys`. The vector search is restricted too. The notes of the
                user's global libraries (:meth:`libraries`) are kept too; never another
                project's transcripts or repository notes.
            branch: Keep only chunks written on this git branch.

        Returns:
            Hits with provenance and score breakdown.

        Raises:
            memlane.errors.InvalidArgumentError (a ValueError): ``project`` or ``branch`` on a home
                indexed before memlane recorded them (``memlane repair --force`` rebuilds it with them).

        Example:
            >>> import memlane, tempfile
            >>> memlane.open(tempfile.mkdtemp(), embedder="none").search("exit code 137", k=5)
            []
        """
        _check.text("query", query)
        query = bounded_query(query)  # a pasted 5 MB log costs what its first 4,000 characters cost
        _check.integer("k", k, minimum=1)
        sources = (
            None
            if sources is None
            else _check.strings("sources", sources, ("transcript", "knowledge", "summary", "brain"))
        )
        _check.optional_text("session_id", session_id)
        _check.choice("fusion", fusion, ("weighted", "rrf"))
        _check.number("vector_weight", vector_weight, low=0, high=1)
        _check.number("threshold", threshold)
        _check.optional_text("project", project)
        _check.optional_text("branch", branch)
        projects = libraries = None
        if project is not None or branch is not None:
            if not self.records_projects():
                raise InvalidArgumentError(
                    f"{self.home} was indexed before memlane recorded projects and branches: "
                    "`memlane repair --force` rebuilds it with them (no embedding calls)"
                )
            projects = self.project_keys(project) if project is not None else None
            # The user's own libraries join every project's search: their notes, not transcripts.
            libraries = (
                None
                if projects is None
                else [lib["path"] for lib in self.libraries() if lib["global"] and lib["path"] not in projects]
            )
            if projects == [] and not libraries:  # a name no project has: nothing can match
                self.events.append("search", query=query, results=0)
                return []
        vector = None
        embedder_id = None
        # Keyword-only search (embedder "none") neither reads the vectors' meta nor loads them.
        if self._embedder_spec != "none" and self.vectors_embedder_id:
            # A process's first search loads the vectors (~0.1 s at 1M chunks) while it embeds the query.
            self._store.prefetch_vectors()
            embedder = self.embedder
            if embedder is not None:
                vector = self._query_vector(embedder, query)
                embedder_id = embedder.id
        request = SearchRequest(
            query,
            k,
            vector=vector,
            embedder_id=embedder_id,
            sources=list(sources) if sources else None,
            session_id=session_id,
            since_ms=_parse_time(since),
            until_ms=_parse_time(until),
            fusion=fusion,
            vector_weight=vector_weight,
            threshold=threshold,
            recency=recency,
            temporal=temporal,
            hierarchy=hierarchy,
            projects=projects,
            branch=branch,
            libraries=libraries,
        )
        hits = pipeline.search(self._store, request, self._cached_windows)
        self.events.append("search", query=query, results=len(hits))
        return hits

    def records_projects(self) -> bool:
        """Whether this home's chunks record their project and branch (a home indexed before
        memlane did, does not: ``memlane repair --force`` rebuilds it with them).

        Example:
            >>> import memlane, tempfile
            >>> memlane.open(tempfile.mkdtemp(), embedder="none").records_projects()
            True
        """
        return bool(self._store.records_projects())

    def projects(self) -> dict[str, int]:
        """The projects this home holds chunks of: project key → live chunks.

        Example:
            >>> import memlane, tempfile
            >>> memlane.open(tempfile.mkdtemp(), embedder="none").projects()
            {}
        """
        try:
            stamp: int | None = (self.home / "lexical" / "meta.json").stat().st_mtime_ns
        except OSError:
            stamp = None
        # Listing walks the project field's postings: once per commit, not once per query.
        if self._projects is None or self._projects[0] != stamp or stamp is None:
            self._projects = (stamp, dict(self._store.projects()))
        return dict(self._projects[1])

    def libraries(self) -> list[dict[str, Any]]:
        """The project keys holding notes, by key: ``{"path", "notes", "global"}``.

        A library folder in no git repository (a personal notes folder, the brain's
        DailyActivity journal) is ``global``: the user's own, its notes searched with every
        project (see :meth:`search`), as user-level memory is in Claude Code. A library inside
        a repository is filed under the repository's key and belongs to that project alone.

        Example:
            >>> import memlane, tempfile
            >>> memlane.open(tempfile.mkdtemp(), embedder="none").libraries()
            []
        """
        try:
            stamp: int | None = (self.home / "lexical" / "meta.json").stat().st_mtime_ns
        except OSError:
            stamp = None
        # Counting walks the project field's postings: once per commit, as projects() does.
        if self._libraries is None or self._libraries[0] != stamp or stamp is None:
            found = [
                {"path": lib["key"], "notes": lib["notes"], "global": lib["global"]} for lib in self._store.libraries()
            ]
            self._libraries = (stamp, found)
        return [dict(lib) for lib in self._libraries[1]]

    def project_keys(self, project: str) -> list[str]:
        """The project keys ``project`` names: a key as hits show it; a path (``.``, ``~/src/alpha``:
        the repository around it, whether or not anything of it is indexed yet); or a name, the
        last part of keys (``alpha`` names ``/src/alpha`` and ``/home/me/alpha``).

        Example:
            >>> import memlane, tempfile
            >>> mem = memlane.open(tempfile.mkdtemp(), embedder="none")
            >>> mem.project_keys("/no/such/repo"), mem.project_keys("alpha")
            (['/no/such/repo'], [])
        """
        import os

        if os.sep in project or project.startswith(("~", ".")):
            # A key is a path too, and its own project: no listing needed (hooks ask this).
            return [_core.project_of(os.path.abspath(os.path.expanduser(project)))]
        known = self.projects()
        return [project] if project in known else [key for key in known if Path(key).name == project]

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
            raise InvalidArgumentError("max_chars must be at least 1")
        found = self._store.passages(query, [h.text for h in hits], max_chars)
        out = []
        for hit, passage in zip(hits, found):
            cut_before, text, cut_after = passage or (False, hit.text[:max_chars], len(hit.text) > max_chars)
            out.append(("…" if cut_before else "") + " ".join(text.split()) + ("…" if cut_after else ""))
        return out

    def _cached_windows(self, embedder_id: str, content_hashes: list[str]) -> dict[str, np.ndarray]:
        """Window vectors of these chunks from the embedding cache (read, not counted as lookups)."""
        return self.cache.get_many(embedder_id, content_hashes, count=False)

    @shows_recall_options
    def recall(self, query: str, max_tokens: int = DEFAULT_MAX_TOKENS, **options: Unpack[RecallOptions]) -> Recall:
        """Brain entries and hybrid hits for ``query`` as one block within ``max_tokens``, secrets masked.

        ``options`` are :class:`memlane.recall.RecallOptions`: ``half_life_days``,
        ``include_brain``, ``show_secrets``, ``project`` and ``branch`` (which scope it as in
        :meth:`search`; brain entries of another project are left out too) and
        ``label_projects`` (each hit's project named in its provenance line). See
        :func:`memlane.recall.recall`.
        """
        return recall(self, query, max_tokens, **options)

    def get(self, chunk_id: str) -> Hit | None:
        """The chunk with this id (a hit's ``id``), in full with its provenance; None if gone.

        The returned hit's scores are empty: it was looked up, not matched.

        Raises:
            memlane.errors.InvalidArgumentError (a ValueError): ``chunk_id`` is not a hex chunk id.

        Example:
            >>> import memlane, tempfile
            >>> memlane.open(tempfile.mkdtemp(), embedder="none").get("32c3114a17a2cb") is None
            True
        """
        try:
            key = int(chunk_id, 16)
        except ValueError:
            key = -1
        if not 0 <= key < 1 << 64:  # ids are 64-bit: a longer one names no chunk
            raise InvalidArgumentError(
                f"{_check.echo(chunk_id, quote=True)} is not a chunk id (hex digits, as search and recall print them)"
            ) from None
        found = self._store.get([key])
        if not found:
            return None
        return Hit._from_stored(found[0])

    def sessions(self, *, project: str | None = None) -> list[Session]:
        """The transcript sessions this home holds, the most recent first (``project``: those
        filed under that project key), from the index's catalog without reading a chunk.

        Example:
            >>> import memlane, tempfile
            >>> memlane.open(tempfile.mkdtemp(), embedder="none").sessions()
            []
        """
        found = catalog(self._store)
        return found if project is None else [s for s in found if s.project == project]

    def session(self, session_id: str) -> list[Hit]:
        """A session's chunks in turn order, in full with their provenance (empty when the
        home holds none of it)."""
        _check.text("session_id", session_id)
        return chunks_of(self._store, session_id)

    def injections(
        self, *, session: str | None = None, key: str | None = None, limit: int = 100, offset: int = 0
    ) -> list[dict[str, Any]]:
        """What was injected into agents' contexts (hooks and MCP recalls), newest first: when,
        which client, session and event, the query (masked) and each item's key, rank, relevance
        and score parts (never its text). ``session`` or ``key`` (a chunk id or brain key) narrow
        it to one session or to the injections of one item (:mod:`memlane.audit`; the parsed log
        is kept, so a long-lived caller reads only what was appended since).

        Example:
            >>> import memlane, tempfile
            >>> memlane.open(tempfile.mkdtemp(), embedder="none").injections()
            []
        """
        if self._audit is None:
            from memlane.audit import Injections

            self._audit = Injections(self.home)
        return self._audit.records(session=session, key=key, limit=limit, offset=offset)

    def secrets(self) -> dict[str, Any]:
        """Where keys, tokens and passwords occur in this home's chunks, masked, so they can be
        rotated and forgotten (the index keeps transcripts verbatim; every output masks them).

        Returns:
            ``{"chunks_scanned", "secrets": [{"kind", "label", "masked", "chunk", "source",
            "path", "session_id", "turn_start", "turn_end", "heading", "timestamp"}]}``.

        Example:
            >>> import memlane, tempfile
            >>> memlane.open(tempfile.mkdtemp(), embedder="none").secrets()
            {'chunks_scanned': 0, 'secrets': []}
        """
        return maintenance.secrets(self)

    # -- forgetting -------------------------------------------------------------------------

    def forget(
        self,
        *,
        session: str | None = None,
        path: str | PathLike[str] | None = None,
        chunk: str | None = None,
        dry_run: bool = False,
        undo: bool = False,
        cascade: bool = False,
    ) -> dict[str, Any]:
        """Remove a session, a source file or a chunk for good, or (``undo``) bring it back.

        The chunks leave the keyword and vector indexes (their text is merged out of the
        index files, not only marked deleted), their embedding-cache rows go, and a tombstone
        in the manifest keeps re-indexing the same source from bringing them back. The source
        files themselves are not touched. The events log records the forget, never the text.

        Args:
            session: A session id (as hits show it).
            path: A source file as indexed.
            chunk: A chunk id (hex, as hits show it).
            dry_run: Only say what would be removed.
            undo: Lift the tombstone instead and index its files again.
            cascade: With ``session``, also remove what the brain holds from that session alone
                (entries whose ``Detail:`` cites only it, its DailyActivity entries, the tasks it
                last wrote: :mod:`memlane.brain.cascade`); without it they are only listed.

        Returns:
            ``{"chunks", "content_hashes", "files", "sessions", "cache_rows", "dry_run", "undo"}``,
            and for a session ``"brain_entries"`` and ``"daily_entries"`` (removed with
            ``cascade``, else what cites it alone) and ``"tasks"`` (removed).

        Raises:
            memlane.errors.InvalidArgumentError (a ValueError): Not exactly one of ``session``,
                ``path``, ``chunk``; or nothing indexed (or, for ``undo``, forgotten) matches.

        Example:
            >>> import memlane, tempfile
            >>> memlane.open(tempfile.mkdtemp(), embedder="none").forget(session="s1", dry_run=True)
            Traceback (most recent call last):
            ...
            memlane.errors.InvalidArgumentError: no chunk of session s1 is indexed in this home
        """
        return maintenance.forget(
            self, session=session, path=path, chunk=chunk, dry_run=dry_run, undo=undo, cascade=cascade
        )

    # -- integrity -------------------------------------------------------------------------

    def verify(self, *, thorough: bool = True) -> dict[str, Any]:
        """Check this home: manifest, keyword index, vectors and embedder record agree and read
        back, and the shared embedding cache passes SQLite's integrity check.

        ``thorough`` also checks every keyword-index file against its checksum and reads
        every resume state (``memlane doctor`` runs the fast part). Takes the home's lock for
        the duration, so it never sees a commit half-way.

        Returns:
            ``{"sound", "findings": [{"severity", "part", "path", "message"}], "files",
            "chunks", "chunks_with_vectors", "vectors_pending", ...}``; ``sound`` is false when
            any finding is a ``problem`` (notes are harmless). Chunks waiting for vectors (an
            index stopped while embedding) are ``vectors_pending``, a note for ``memlane embed``.

        Raises:
            IndexLockedError: An index run is writing to the home.

        Example:
            >>> import memlane, tempfile
            >>> memlane.open(tempfile.mkdtemp(), embedder="none").verify()["sound"]
            True
        """
        return maintenance.verify(self, thorough=thorough)

    def repair(
        self, *, force: bool = False, quantization: str | None = None, progress: Progress | None = None
    ) -> RepairReport:
        """Rebuild what :meth:`verify` finds broken, from the sources and the embedding cache.

        The home is rebuilt beside itself (``<home>/repair.tmp``) with the product's own
        indexing, its vectors taken from the embedding cache, then from the old vector file
        where that still reads back; no embedding call is made (chunks left without vectors
        are reported for ``memlane embed``). Chunks of source files that are gone are carried
        over from the old index where it can still be read; what cannot be is reported as
        lost. The old files stay in place until the new ones are complete. A damaged
        embedding cache is set aside and a fresh one started.

        Args:
            force: Rebuild even when verify finds nothing wrong.
            quantization: Store the rebuilt vectors as ``i8``, ``f16`` or ``f32`` (default: as
                the home has them); another storage than the home's rebuilds it, sound or not
                (e.g. an f16 home made before i8 was the default: ~42% smaller, no embedding call).
            progress: Optional callback, as for :meth:`index`.

        Raises:
            IndexLockedError: Another process is writing to the home.

        Example:
            >>> import memlane, tempfile
            >>> memlane.open(tempfile.mkdtemp(), embedder="none").repair().repaired
            False
        """

        def open_home(path: Path, quantization: str) -> Memory:
            return Memory(path, embedder="none", quantization=quantization, cache_dir=self._cache_dir)

        return maintenance.repair(self, open_home, force=force, quantization=quantization, progress=progress)

    def status(self) -> dict[str, Any]:
        """Counts, sizes and the embedder of this home, its projects, plus the embedding cache."""
        status = dict(self._store.status())
        # A home that records an embedder waits for the vectors its chunks lack (an index run
        # stopped while embedding, or one that left them to `memlane embed`).
        status["vectors_pending"] = status["chunks"] - status["chunks_with_vectors"] if status["embedder_id"] else 0
        status["projects"] = self.projects()
        status["libraries"] = self.libraries()
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


def open(
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
