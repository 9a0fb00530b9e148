"""An index run: scan the roots, parse what changed a batch at a time and commit, embedding
the new chunks meanwhile.

:meth:`memlane.Memory.index` checks its arguments and calls :func:`index`, which does the
run on the memory's store (what it reads of the memory is :class:`Indexer`: this module sits
below ``memory.py``). With an embedder, the keyword pass runs on a thread of its own and
commits as it goes (:class:`_KeywordPass`), while the calling thread embeds each batch's new
chunks (:mod:`memlane.embed.backfill`): the model starts after the first batch, not after
the last. Ctrl-C commits what was done and raises
:class:`~memlane.errors.IndexInterrupted`, so the next run resumes there.

Example:
    >>> import memlane, tempfile, time
    >>> index(memlane.open(tempfile.mkdtemp(), embedder="none"), [], embed=False, format=None,
    ...       progress=None, started=time.perf_counter()).files_seen
    0
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from memlane import _core
from memlane.embed.backfill import Progress, backfill
from memlane.errors import CorruptIndexError
from memlane.maintenance import Home, RepairReport
from memlane.report import Report

if TYPE_CHECKING:
    import numpy as np

    from memlane.embed import Embedder, Placement

__all__ = ["IndexReport", "Indexer", "index"]

# Files per parse batch: 32 a core, so that a batch's last files, which leave cores idle until
# the next call, are a small part of it; bytes bound, for a smooth progress bar and prompt Ctrl-C.
_FILES_PER_BATCH = 32 * (os.cpu_count() or 1)
_BYTES_PER_BATCH = 64 << 20
# A run that embeds parses a first batch this many times smaller than a full one (see _batches).
_FIRST_BATCH_SHARE = 32


@dataclass
class IndexReport(Report):
    """What :meth:`memlane.Memory.index` did."""

    files_seen: int = 0
    files_indexed: int = 0
    files_removed: int = 0
    files_gone: int = 0
    """Transcripts found gone this run: their chunks stay (the home keeps a copy); only
    ``forget`` removes them."""
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
    files: list[dict[str, Any]] = field(default_factory=list)
    """Per file read this run: ``path``, ``format``, ``sessions``, ``turns``, ``chunks``,
    ``skipped`` (by reason), ``resumed``, ``empty_reason`` when it gave no chunk
    (``binary``, ``unknown_format``, ``oversize_line``, ``empty_file``, ``no_conversation``,
    ``not_a_regular_file``, ``unreadable: …``, ``corrupt: …``), and ``plans`` when its agents wrote plans
    (:mod:`memlane.brain.tasks`)."""
    tasks_changed: int = 0
    """Tasks of the agents' own plans added or changed (``memlane tasks``)."""
    empty_roots: list[str] = field(default_factory=list)
    """Paths named in the run from which the home holds no chunk at all."""
    repaired: RepairReport | None = None
    """The repair this run did first, when the home was damaged."""


def _fill(report: IndexReport, core_report: dict[str, Any]) -> None:
    """Copy the core's counts of an index run into ``report``."""
    report.files_seen = core_report["files_seen"]
    report.files_indexed = core_report["files_indexed"]
    report.files_removed = core_report["files_removed"]
    report.files_gone = core_report["files_gone"]
    report.chunks_added = core_report["chunks_added"]
    report.chunks_removed = core_report["chunks_removed"]
    report.bytes_parsed = core_report["bytes_parsed"]
    report.files_resumed = core_report["files_resumed"]
    report.records_skipped = dict(core_report["records_skipped"])


class Indexer(Home, Protocol):
    """What an index run reads of a :class:`memlane.Memory`: its home (:class:`~memlane.maintenance.Home`),
    the embedder it was opened with, where that runs, and its repair (a damaged index is rebuilt
    before it is indexed over)."""

    _embedder_spec: str | Embedder | None
    _placement: Placement | None

    def repair(
        self, *, force: bool = False, quantization: str | None = None, progress: Progress | None = None
    ) -> RepairReport: ...


def index(
    mem: Indexer, roots: list[str], *, embed: bool, format: str | None, progress: Progress | None, started: float
) -> IndexReport:
    """Index ``roots`` into ``mem``'s home (what :meth:`memlane.Memory.index` documents); ``started``
    is when the call began (``time.perf_counter()``), which the report's times count from."""
    report = IndexReport()
    try:
        opened = mem._store.writer(format)
    except CorruptIndexError:
        # A keyword index or manifest that cannot be read is rebuilt, not indexed over: an
        # empty one in its place would drop every chunk of the sources not named here.
        report.repaired = mem.repair(progress=progress)
        opened = mem._store.writer(format)
    with opened as writer:
        plan = writer.scan(roots)
        writer.remove_files(plan["deleted"])
        writer.mark_gone(plan["gone"])
        todo: list[str] = plan["to_index"]
        keywords = _KeywordPass(writer, todo, plan["bytes_to_index"], progress)
        embedding = embed and mem._embedder_spec not in (None, "none")
        with _kept_on_interrupt(writer, report, len(todo), embedding, keywords):
            if embedding:
                core_report = _parse_and_embed(mem, writer, keywords, report, progress)
                report.keyword_seconds = keywords.finished - started
            else:
                core_report = keywords.run()
                report.keyword_seconds = time.perf_counter() - started
    _fill(report, core_report)
    report.files = core_report["files"]
    report.empty_roots = core_report["empty_roots"]
    if any(f.get("plans") for f in report.files):
        from memlane.brain import tasks

        report.tasks_changed = tasks.record(mem.home, report.files)
    report.seconds = time.perf_counter() - started
    mem.events.append(
        "index",
        paths=roots,
        files_indexed=report.files_indexed,
        chunks_added=report.chunks_added,
        chunks_removed=report.chunks_removed,
        chunks_embedded=report.chunks_embedded,
        device=mem._placement.device if embed and mem._placement else None,
    )
    return report


def _parse_and_embed(
    mem: Indexer, writer: _core.Writer, keywords: _KeywordPass, report: IndexReport, progress: Progress | None
) -> dict[str, Any]:
    """The keyword pass on a thread of its own while this one loads the embedder and embeds
    the chunks it hands over; the report of the last commit."""
    keywords.start()
    try:
        embedder = mem.embedder
        assert embedder is not None  # a spec other than "none" gives one
        # Billed backends (Bedrock) expose cumulative usage; report this run's share.
        before = getattr(embedder, "usage", None)
        report.chunks_embedded, report.embed_cache_hits = backfill(
            writer, mem.cache, embedder, progress, arriving=keywords.handed
        )
        after = getattr(embedder, "usage", None)
        if before is not None and after is not None:
            report.embed_usage = (after - before).to_dict()
    except KeyboardInterrupt:
        keywords.stop()
        raise
    finally:
        # An embedding error (a wrong embedder, no credentials) lets the keyword pass end and
        # commit first: keyword search does not depend on it.
        keywords.join()
    return writer.commit()


class _KeywordPass:
    """The files of an index run parsed and added a batch at a time, then committed.

    :meth:`run` does it on the calling thread (a keyword-only run: one commit at the end).
    :meth:`start` does it on a thread of its own while the caller embeds what it puts in
    :attr:`handed`: first the chunks an earlier run left without vectors, then each batch's new
    chunks with their texts as soon as they are added (while the embedding side keeps up; else
    their keys at the next commit). So the model starts after the first (small) batch is parsed
    and no commit stands between it and its next chunks: handing over only committed chunks, it
    idled through each commit (40–200 ms on two cores). The pass commits for durability and
    those keys: once a full batch's bytes are parsed, then whenever half again as many bytes as
    are committed have been (every commit together costs a few times the last one, whatever the
    archive's size: a commit writes the whole manifest).
    """

    def __init__(self, writer: _core.Writer, todo: list[str], total_bytes: int, progress: Progress | None) -> None:
        self._writer = writer
        self._todo = todo
        self._total_bytes = total_bytes
        self._progress = progress
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._handed_keys: np.ndarray | None = None  # sorted: pending when last looked at
        self._handed_since: list[np.ndarray] = []  # keys of the rows handed over since then
        self.handed: queue.SimpleQueue[np.ndarray | list[tuple[int, str, str]] | BaseException | None] = (
            queue.SimpleQueue()
        )
        """Each hand-over: keys without vectors that no batch handed (at the start, and any a
        commit shows), or a batch's new chunks as (key, hash, text) rows; then None at the pass's
        end, or the exception that ended it (see :func:`memlane.embed.backfill.backfill`)."""
        self.finished = 0.0
        """When the pass's last commit ended (``time.perf_counter()``)."""

    def run(self, hand_over: bool = False) -> dict[str, Any]:
        """Parse, add and commit every file; the last commit's report. With ``hand_over``, hand
        the chunks over and commit along the way as :class:`_KeywordPass` describes."""
        committed = parsed = 0
        core_report = None
        if hand_over:
            import numpy as np  # only a run that embeds needs it: `import memlane` stays without (see start)

            self._hand_over_pending()
        for batch, size in _batches(self._todo, small_first=hand_over):
            if self._stop.is_set():
                break
            if hand_over:
                # A batch's texts wait in memory until they are embedded: kept and handed over
                # only while the embedding side keeps up (it took every hand-over before; only
                # it takes from the queue), as on a GPU. Where it does not (a CPU model is a
                # hundred times slower than parsing), the keys go at the next commit and the
                # texts are read back then.
                self._writer.collect_added_texts(self.handed.empty())
            self._writer.index_files(batch)
            if hand_over and (rows := self._writer.take_added_texts()):
                self.handed.put(rows)
                self._handed_since.append(np.fromiter((key for key, _, _ in rows), np.uint64, len(rows)))
            parsed += size
            core_report = None  # not committed
            if self._progress:
                self._progress("parse", parsed, self._total_bytes)
            if hand_over and parsed - committed >= max(committed // 2, _BYTES_PER_BATCH):
                core_report = self._commit_and_hand_over()
                committed = parsed
        if core_report is None:
            core_report = self._commit_and_hand_over() if hand_over else self._writer.commit()
        self.finished = time.perf_counter()
        return core_report

    def _commit_and_hand_over(self) -> dict[str, Any]:
        core_report: dict[str, Any] = self._writer.commit()
        self._hand_over_pending()
        return core_report

    def _hand_over_pending(self) -> None:
        """Hand over the keys without vectors that were not handed over yet."""
        import numpy as np

        pending = self._writer.pending_vectors()
        fresh = pending if self._handed_keys is None else np.setdiff1d(pending, self._handed_keys, assume_unique=True)
        if self._handed_since:
            fresh = np.setdiff1d(fresh, np.concatenate(self._handed_since))
        if len(fresh):
            self.handed.put(fresh)
        self._handed_keys = pending
        self._handed_since.clear()

    def start(self) -> None:
        """Run on a thread of its own (see :class:`_KeywordPass`)."""
        # numpy is imported here, before the thread starts: the pass and the embedder's setup
        # importing it for the first time on two threads at once can fail half-initialised.
        import numpy  # noqa: F401

        self._thread = threading.Thread(target=self._run_handing_over, name="memlane-keywords")
        self._thread.start()

    def _run_handing_over(self) -> None:
        try:
            self.run(hand_over=True)
            self.handed.put(None)
        except BaseException as exc:  # raised where the chunks are taken
            self.handed.put(exc)

    def stop(self) -> None:
        """End after the batch being added (Ctrl-C): the caller commits."""
        self._stop.set()

    def join(self) -> None:
        """Wait for the thread to end."""
        if self._thread is not None:
            self._thread.join()


def _batches(todo: list[str], small_first: bool) -> Iterator[tuple[list[str], int]]:
    """``todo`` in parse batches (see ``_FILES_PER_BATCH``), each with its bytes. With
    ``small_first`` the first is ``_FIRST_BATCH_SHARE`` times smaller than the others and each
    next one twice the last until they are full: a run that embeds starts its model once the
    first is added (a few milliseconds in), and each batch then lands while the model still
    embeds the one before."""
    full_files, full_bytes = _FILES_PER_BATCH, _BYTES_PER_BATCH
    files, size = (
        (max(full_files // _FIRST_BATCH_SHARE, 1), full_bytes // _FIRST_BATCH_SHARE)
        if small_first
        else (full_files, full_bytes)
    )
    batch: list[str] = []
    batch_bytes = 0
    for i, path in enumerate(todo):
        try:
            size_of = Path(path).stat().st_size
        except OSError:  # vanished since the scan; index_files counts it
            size_of = 0
        batch.append(path)
        batch_bytes += size_of
        if len(batch) >= files or batch_bytes >= size or i == len(todo) - 1:
            yield batch, batch_bytes
            batch, batch_bytes = [], 0
            files, size = min(files * 2, full_files), min(size * 2, full_bytes)


@contextmanager
def _kept_on_interrupt(
    writer: _core.Writer, report: IndexReport, files_to_index: int, embedding: bool, keywords: _KeywordPass
) -> Iterator[None]:
    """Turn Ctrl-C during an index run into :class:`~memlane.errors.IndexInterrupted`, after
    committing what the run had done: the batches of files parsed (whole files: a batch is
    added in one call) and the vectors added, so that running it again resumes there."""
    try:
        yield
    except KeyboardInterrupt:
        from memlane.errors import IndexInterrupted

        keywords.stop()
        keywords.join()

        committed = writer.commit()
        _fill(report, committed)
        report.files = committed["files"]
        pending = len(writer.pending_vectors()) if embedding else 0
        raise IndexInterrupted(report, files_to_index, pending) from None
