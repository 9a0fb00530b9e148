"""Looking after a home: verify and repair it, forget what should go, find the secrets it holds.

The :class:`memlane.Memory` methods of the same names delegate here and document what each
promises; these functions do the work on the memory's store, cache and event log (what they
read of it is :class:`Home`: this module sits below ``memory.py`` and does not import it). A
repair rebuilds the home beside itself with the product's own indexing (a fresh keyword-only
:class:`~memlane.Memory` the caller opens, see :data:`OpenHome`), vectors from the embedding
cache, then from the old vector file: never an embedding call.

Example:
    >>> import memlane, tempfile
    >>> verify(memlane.open(tempfile.mkdtemp(), embedder="none"), thorough=False)["sound"]
    True
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from memlane import _check, _core
from memlane.embed.backfill import CacheOnly, Progress, backfill
from memlane.errors import InvalidArgumentError
from memlane.ranking.hit import Hit
from memlane.report import Report

if TYPE_CHECKING:
    from memlane.embed import Embedder
    from memlane.embed.cache import EmbeddingCache
    from memlane.events import EventLog

__all__ = [
    "DEFAULT_QUANTIZATION",
    "QUANTIZATIONS",
    "Home",
    "Indexed",
    "OpenHome",
    "RepairReport",
    "forget",
    "forget_all",
    "forget_missing",
    "remove_sources",
    "repair",
    "secrets",
    "verify",
]

QUANTIZATIONS = ("i8", "f16", "f32")
"""How a home may store its vectors (see :class:`memlane.Memory`)."""
DEFAULT_QUANTIZATION = "i8"
"""A new home's vector storage: a byte a dimension, finding what ``f16`` finds."""

_LOCK_FILE = "write.lock"
"""The core's write lock (:class:`memlane._core.HomeLock`): held while a home is cleared, so it stays."""


class Indexed(Protocol):
    """What a repair reads of an index run's report (:class:`memlane.memory.IndexReport`)."""

    @property
    def files_indexed(self) -> int: ...

    @property
    def files(self) -> list[dict[str, Any]]: ...


class Home(Protocol):
    """What maintenance works on: a :class:`memlane.Memory`'s home, store, embedding cache and
    event log, and its indexing (a forget indexes changed notes again, a repair its sources)."""

    home: Path
    _store: _core.Store
    _cache_dir: Path
    events: EventLog

    @property
    def cache(self) -> EmbeddingCache: ...

    @property
    def embedder(self) -> Embedder | None: ...

    def index(
        self,
        paths: Iterable[str | PathLike[str]] | None = None,
        *,
        embed: bool = True,
        format: str | None = None,
        progress: Progress | None = None,
    ) -> Indexed: ...

    def close(self) -> None: ...


OpenHome = Callable[[Path, str], Home]
"""``open_home(path, quantization)``: a keyword-only home at ``path`` sharing the embedding cache
of the home repaired, into which a repair indexes the sources again."""


@dataclass
class RepairReport(Report):
    """What :meth:`memlane.Memory.repair` found and did."""

    problems: list[str] = field(default_factory=list)
    """What :meth:`memlane.Memory.verify` found broken before the repair (one line each)."""
    repaired: bool = False
    """The home was rebuilt (False: it was sound, nothing to do)."""
    files_reindexed: int = 0
    chunks: int = 0
    """Chunks in the rebuilt home."""
    files_restored: int = 0
    """Transcripts gone or unreadable read again from the copies the home kept of them."""
    files_carried_over: int = 0
    """Source files gone or unreadable whose chunks were kept from the old index."""
    lost: list[str] = field(default_factory=list)
    """Source files gone whose chunks could not be read either."""
    vectors_from_cache: int = 0
    vectors_from_old_index: int = 0
    chunks_without_vectors: int = 0
    """Left for ``memlane embed`` (a repair makes no embedding call)."""
    embedding_calls: int = 0
    quantization: str = ""
    """How the rebuilt home stores its vectors."""
    cache_set_aside: str | None = None
    """Where a damaged embedding cache was moved (a fresh one replaced it)."""
    seconds: float = 0.0


# -- forgetting -----------------------------------------------------------------------------


def forget(
    mem: Home,
    *,
    session: str | None = None,
    path: str | PathLike[str] | None = None,
    chunk: str | None = None,
    dry_run: bool = False,
    undo: bool = False,
    cascade: bool = False,
) -> dict[str, Any]:
    """Remove a session, a source file or a chunk for good, or bring it back (:meth:`memlane.Memory.forget`)."""
    given = [(k, v) for k, v in (("session", session), ("path", path), ("chunk", chunk)) if v is not None]
    if len(given) != 1:
        raise InvalidArgumentError("forget needs exactly one of session, path or chunk")
    kind, value = given[0]
    if kind == "path":
        value = str(Path(value).expanduser().resolve())
    with mem._store.writer() as writer:
        if undo:
            report = dict(writer.unforget(kind, str(value)))
            writer.commit()
        else:
            report = dict(writer.forget(kind, str(value), dry_run))
            if not dry_run:
                writer.commit()
                writer.purge_deleted()
    report.update(dry_run=dry_run, undo=undo, cache_rows=0)
    if undo:
        mem.index([p for p in report["files"] if Path(p).exists()], embed=mem.embedder is not None)
    elif not dry_run:
        report["cache_rows"] = mem.cache.delete(report["content_hashes"])
    if kind == "session" and not undo:
        report.update(_forget_in_brain(mem, str(value), remove=cascade and not dry_run))
    if not dry_run:
        mem.events.append(
            "forget",
            what=kind,
            id=str(value) if kind != "path" else None,
            path=str(value) if kind == "path" else None,
            chunks=report["chunks"],
            undo=undo,
        )
    return report


def _forget_in_brain(mem: Home, session_id: str, *, remove: bool) -> dict[str, Any]:
    """What the brain holds from ``session_id`` alone, removed when ``remove`` (the daily
    notes it changed are indexed again at once, so their text leaves the index too)."""
    from memlane.brain import Brain, cascade, default_brain_dir, tasks

    brain = Brain(default_brain_dir(mem.home), home=mem.home)
    found = cascade.remove_citing(brain, session_id) if remove else cascade.citing(brain, session_id)
    notes = sorted({str(note) for note, _ in found.daily})
    if remove and notes:
        mem.index(notes, embed=mem.embedder is not None)
    return {
        "brain_entries": [e.key for e in found.entries],
        "daily_entries": [f"{Path(n).name} › {h}" for n, h in found.daily],
        "tasks": tasks.forget_session(mem.home, session_id) if remove else 0,
    }


def forget_missing(mem: Home, *, dry_run: bool = False) -> dict[str, Any]:
    """Forget every source whose file is gone (:meth:`memlane.Memory.forget_missing`)."""
    gone = [p for p in mem._store.sources() if not Path(p).exists()]
    reports = [forget(mem, path=p, dry_run=dry_run) for p in gone]
    return {"chunks": sum(r["chunks"] for r in reports), "files": gone, "dry_run": dry_run}


def forget_all(mem: Home, *, cache: bool = False) -> dict[str, Any]:
    """Clear the home, leaving an empty one that verifies sound (:meth:`memlane.Memory.forget_all`)."""
    import shutil

    with _core.HomeLock(mem.home):  # no writer, repair or worker is halfway through it
        removed = []
        for child in sorted(mem.home.iterdir()):
            if child.name == _LOCK_FILE:
                continue
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
            removed.append(child.name)
    mem._store = _core.Store(str(mem.home), DEFAULT_QUANTIZATION)
    with mem._store.writer() as writer:
        writer.commit()
    if cache:
        mem.cache.close()
        for f in mem._cache_dir.glob("embeddings.sqlite*"):
            f.unlink()
    mem.events.append("forget", what="all", removed=len(removed), cache=cache)
    return {"home": str(mem.home), "removed": removed, "cache_removed": cache}


def remove_sources(mem: Home, paths: Iterable[str | PathLike[str]]) -> int:
    """Drop the chunks of these source files as if deleted (:meth:`memlane.Memory.remove_sources`)."""
    gone = [str(p) for p in _check.paths("paths", paths)]
    with mem._store.writer() as writer:
        writer.remove_files(gone)
        removed = int(writer.commit()["chunks_removed"])
    mem.events.append("remove_sources", paths=gone, chunks_removed=removed)
    return removed


# -- secrets --------------------------------------------------------------------------------


def secrets(mem: Home) -> dict[str, Any]:
    """Where keys, tokens and passwords occur in the home's chunks, masked (:meth:`memlane.Memory.secrets`)."""
    from memlane import secrets as scanner

    keys = [int(k) for k in mem._store.keys()]
    found = []
    # A batch of chunks at a time: the index holds every transcript verbatim.
    for at in range(0, len(keys), 512):
        for chunk in mem._store.get(keys[at : at + 512]):
            hit = Hit._from_stored(chunk)
            found += [
                {"kind": s.kind, "label": s.label, "masked": s.masked, "chunk": hit.id, "source": hit.source, "path": hit.path,
                 "session_id": hit.session_id, "turn_start": hit.turn_start, "turn_end": hit.turn_end, "heading": hit.heading,
                 "timestamp": hit.timestamp}
                for s in scanner.find(hit.text)
            ]  # fmt: skip
    return {"chunks_scanned": len(keys), "secrets": found}


# -- integrity ------------------------------------------------------------------------------


def verify(mem: Home, *, thorough: bool = True) -> dict[str, Any]:
    """Check the home and the shared embedding cache (:meth:`memlane.Memory.verify`)."""
    with _core.HomeLock(mem.home) as lock:
        report = dict(mem._store.verify(lock, thorough))
    cache = mem._cache_dir / "embeddings.sqlite"
    if cache.exists():
        for message in mem.cache.check(thorough):
            report["findings"].append(
                {"severity": "problem", "part": "embedding_cache", "path": str(cache), "message": message}
            )
    report["sound"] = not any(f["severity"] == "problem" for f in report["findings"])
    return report


def repair(
    mem: Home,
    open_home: OpenHome,
    *,
    force: bool = False,
    quantization: str | None = None,
    progress: Progress | None = None,
) -> RepairReport:
    """Rebuild what :func:`verify` finds broken, from the sources and the embedding cache
    (:meth:`memlane.Memory.repair`); the memory searches the rebuilt home afterwards."""
    if quantization is not None:
        _check.choice("quantization", quantization, QUANTIZATIONS)
    started = time.perf_counter()
    report = RepairReport()
    verification = verify(mem, thorough=True)
    problems = [f for f in verification["findings"] if f["severity"] == "problem"]
    report.problems = [f"{f['part']}: {f['path']}: {f['message']}" for f in problems]
    if any(f["part"] == "embedding_cache" for f in problems):
        report.cache_set_aside = str(mem.cache.set_aside())
    stored = _read_home_meta(mem.home).get("quantization")
    convert = quantization is not None and quantization != stored
    if not force and not convert and all(f["part"] == "embedding_cache" for f in problems):
        report.seconds = time.perf_counter() - started
        return report
    with _core.HomeLock(mem.home) as lock:
        _core.clear_repair_leftovers(lock)
        old_meta = _read_home_meta(mem.home)
        sources = mem._store.sources()
        present = [p for p in sources if Path(p).is_file()]
        # Without a readable memlane.json the rebuild stores vectors as a new home does.
        report.quantization = quantization or old_meta.get("quantization") or DEFAULT_QUANTIZATION
        rebuilt = open_home(mem.home / _core.REPAIR_DIR, report.quantization)
        with rebuilt._store.writer() as writer:
            # What was forgotten stays forgotten: the sources still hold it.
            writer.adopt_forgotten(mem._store)
            writer.commit()
        indexed = rebuilt.index(present, embed=False, progress=progress)
        report.files_reindexed = indexed.files_indexed
        unread = [f["path"] for f in indexed.files if (f["empty_reason"] or "").startswith(("unreadable", "corrupt"))]
        gone = [p for p in sources if p not in set(present)] + unread
        with rebuilt._store.writer() as writer:
            # Transcripts from the copies the home kept (the old index may be what is
            # damaged); the rest, as the old index holds them.
            restored = set(writer.restore_archived(mem._store, gone)) if gone else set()
            report.files_restored = len(restored)
            adopted = writer.adopt_files(mem._store, [p for p in gone if p not in restored])
            report.files_carried_over, report.lost = adopted["files"], adopted["lost"]
            writer.commit()
            embedder_id = _rebuilt_embedder(mem, old_meta, writer)
            if embedder_id:
                report.vectors_from_cache, _ = backfill(
                    writer,
                    rebuilt.cache,
                    CacheOnly(embedder_id, old_meta.get("vector_parts") or 1),
                    progress,
                    cache_only=True,
                )
                report.vectors_from_old_index = writer.adopt_vectors(mem._store, embedder_id)
            report.chunks_without_vectors = len(writer.pending_vectors()) if embedder_id else 0
            writer.commit()
        report.chunks = rebuilt._store.status()["chunks"]
        rebuilt.close()
        _core.install_rebuilt(lock)
    mem._store = _core.Store(str(mem.home))
    report.repaired = True
    report.seconds = time.perf_counter() - started
    mem.events.append(
        "repair",
        problems=len(problems),
        files_reindexed=report.files_reindexed,
        chunks=report.chunks,
        lost=len(report.lost),
        chunks_without_vectors=report.chunks_without_vectors,
    )
    return report


def _rebuilt_embedder(mem: Home, old_meta: dict[str, Any], writer: _core.Writer) -> str | None:
    """The embedder whose vectors a rebuilt home gets: the one ``memlane.json`` records.
    A readable record of none is a keyword-only home, and stays one (vectors of it in the
    shared cache come from other homes); only a record that cannot be read, or one that
    names no embedder beside a vector file, leaves the cache to tell."""
    if old_meta and (old_meta.get("embedder_id") or not (mem.home / "vectors.usearch").exists()):
        recorded: str | None = old_meta.get("embedder_id")
        return recorded
    return _cached_embedder(mem, writer)


def _cached_embedder(mem: Home, writer: _core.Writer) -> str | None:
    """The embedder whose cached vectors cover the most of a sample of the home's chunks
    (what a repair uses when ``memlane.json`` no longer says which built the vectors)."""
    sample = [int(k) for k in writer.pending_vectors()[:200]]
    counts = mem.cache.embedders_for(h for _, h, _ in writer.chunk_texts(sample)) if sample else {}
    return max(counts, key=counts.__getitem__) if counts else None


def _read_home_meta(home: Path) -> dict[str, Any]:
    """``memlane.json`` as written, or ``{}`` when it cannot be read."""
    import json

    try:
        meta = json.loads((home / "memlane.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}
