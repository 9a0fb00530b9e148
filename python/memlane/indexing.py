"""An index run: scan the roots, parse what changed a batch at a time, commit, then embed.

:meth:`memlane.Memory.index` checks its arguments and calls :func:`index`, which does the
run on the memory's store (what it reads of the memory is :class:`Indexer`: this module sits
below ``memory.py``). Keyword search sees the new chunks at the first commit; vectors follow
(:mod:`memlane.embed.backfill`). Ctrl-C commits what was done and raises
:class:`~memlane.errors.IndexInterrupted`, so the next run resumes there.

Example:
    >>> import memlane, tempfile, time
    >>> index(memlane.open(tempfile.mkdtemp(), embedder="none"), [], embed=False, format=None,
    ...       progress=None, started=time.perf_counter()).files_seen
    0
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from memlane import _core
from memlane.embed.backfill import Progress, backfill, record_embedder
from memlane.errors import CorruptIndexError
from memlane.maintenance import Home, RepairReport
from memlane.report import Report

if TYPE_CHECKING:
    from memlane.embed import Embedder, Placement

__all__ = ["IndexReport", "Indexer", "index"]

# Files per parse batch: 32 a core, so that a batch's last files, which leave cores idle until
# the next call, are a small part of it; bytes bound, for a smooth progress bar and prompt Ctrl-C.
_FILES_PER_BATCH = 32 * (os.cpu_count() or 1)
_BYTES_PER_BATCH = 64 << 20


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
        total_bytes, done_bytes = plan["bytes_to_index"], 0
        batch: list[str] = []
        batch_bytes = 0
        with _kept_on_interrupt(mem, writer, report, len(todo), embed):
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
            if embed and mem.embedder is not None:
                # Billed backends (Bedrock) expose cumulative usage; report this run's share.
                before = getattr(mem.embedder, "usage", None)
                record_embedder(writer, mem.embedder)
                report.chunks_embedded, report.embed_cache_hits = backfill(writer, mem.cache, mem.embedder, progress)
                core_report = writer.commit()
                if before is not None:
                    after = getattr(mem.embedder, "usage", None)
                    report.embed_usage = (after - before).to_dict()
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


@contextmanager
def _kept_on_interrupt(
    mem: Indexer, writer: _core.Writer, report: IndexReport, files_to_index: int, embed: bool
) -> Iterator[None]:
    """Turn Ctrl-C during an index run into :class:`~memlane.errors.IndexInterrupted`, after
    committing what the run had done: the batches of files parsed (whole files: a batch is
    added in one call) and the vectors added, so that running it again resumes there."""
    try:
        yield
    except KeyboardInterrupt:
        from memlane.errors import IndexInterrupted

        committed = writer.commit()
        _fill(report, committed)
        report.files = committed["files"]
        embedding = embed and mem._embedder_spec not in (None, "none")
        pending = len(writer.pending_vectors()) if embedding else 0
        raise IndexInterrupted(report, files_to_index, pending) from None
