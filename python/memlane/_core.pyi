"""Typed stubs for the native module built from rust/memlane-py."""

from os import PathLike
from types import TracebackType
from typing import Any, final

import numpy as np
import numpy.typing as npt
from typing_extensions import Self

__all__ = [
    "DEFAULT_THRESHOLD",
    "RELEVANCE_VECTOR_WEIGHT",
    "REPAIR_DIR",
    "CorruptIndexError",
    "DiskFullError",
    "EmbedderMismatchError",
    "HomeLock",
    "IndexLockedError",
    "Literals",
    "MemlaneError",
    "ParseError",
    "Store",
    "TextFeatures",
    "WordPiece",
    "Writer",
    "__version__",
    "chunk_file",
    "clear_repair_leftovers",
    "fuse_candidates",
    "install_rebuilt",
    "is_candidate",
    "merge_term_stats",
    "parse_file",
    "project_of",
    "query_tokens",
    "repository_root",
    "search_across",
]

__version__: str
DEFAULT_THRESHOLD: float
RELEVANCE_VECTOR_WEIGHT: float

class MemlaneError(Exception): ...
class IndexLockedError(MemlaneError): ...
class CorruptIndexError(MemlaneError): ...
class EmbedderMismatchError(MemlaneError): ...
class ParseError(MemlaneError): ...
class DiskFullError(MemlaneError): ...

REPAIR_DIR: str

@final
class HomeLock:
    """The write lock of a home, held until ``close()`` or the end of a ``with`` block."""

    def __new__(cls, home: str | PathLike[str]) -> Self: ...
    def close(self) -> None: ...
    def __enter__(self) -> HomeLock: ...
    def __exit__(self, a: type[BaseException] | None, b: BaseException | None, c: TracebackType | None) -> bool: ...

def install_rebuilt(lock: HomeLock) -> None:
    """Swap the home rebuilt in the locked home's repair folder in place of its files."""

def clear_repair_leftovers(lock: HomeLock) -> None:
    """Remove what an interrupted repair of the locked home left."""

@final
class Literals:
    """A set of literal strings (ASCII letters of either case with ``ignore_case``), compiled once."""

    def __new__(cls, literals: list[str], ignore_case: bool = False) -> Self: ...
    def find(self, text: str) -> list[tuple[int, int]]:
        """Every occurrence as (character offset, literal index), overlapping ones included,
        by offset then literal: one pass over ``text``."""

@final
class TextFeatures:
    """What the time-aware reordering reads from a text, its patterns compiled once; number words
    (lowercase letters) are tried in the order given."""

    def __new__(cls, stop_words: list[str], number_words: list[tuple[str, str]]) -> Self: ...
    def words(self, text: str) -> list[str]:
        """The distinct words of ``text``, lowercased, stop words aside."""
    def stems(self, text: str) -> list[str]:
        """The distinct stems of :meth:`words`."""
    def features(self, text: str) -> tuple[list[str], list[str], int, list[tuple[str, list[str]]]]:
        """(stems, identifiers, change, quantities): dates and clock times aside; change 1 for
        change language, -1 for additive, 0 for both or neither; quantities as (stem of the
        word counted or ``<named version>``, numbers)."""

@final
class WordPiece:
    """A BERT WordPiece vocabulary, read once: the ids of texts' plain ASCII parts, equal to the
    tokenizers library's (its ``BertNormalizer`` with ``lowercase``, ``BertPreTokenizer`` and
    ``WordPiece``); texts naming an added token (ASCII case ignored) are left whole to it. With
    ``runs_as_first_mark``, an ASCII punctuation mark or symbol (``_`` aside) right after another
    gives no id: the ids are those of the text with such marks deleted."""

    def __new__(
        cls,
        vocab: dict[str, int],
        unk_token: str,
        continuing_prefix: str,
        max_chars: int,
        lowercase: bool,
        added_tokens: list[str],
        *,
        runs_as_first_mark: bool = False,
    ) -> Self: ...
    def encode(self, texts: list[str]) -> list[tuple[npt.NDArray[np.int64], list[tuple[int, str]]]]:
        """Per text, on every core: the int64 ids of its plain ASCII parts, and the rest as
        (position in those ids where the library's ids of the span go, the span)."""

@final
class Store:
    """Read side of a memlane home (creates the home if missing)."""

    def __new__(cls, home: str | PathLike[str], quantization: str = "i8") -> Self: ...
    def search(
        self,
        query: str,
        k: int = 10,
        vector: npt.NDArray[np.float32] | None = None,
        embedder_id: str | None = None,
        sources: list[str] | None = None,
        session_id: str | None = None,
        since: int | None = None,
        until: int | None = None,
        fusion: str = "weighted",
        vector_weight: float = 0.6,
        threshold: float = ...,
        candidates: int = 50,
        projects: list[str] | None = None,
        branch: str | None = None,
        libraries: list[str] | None = None,
    ) -> list[dict[str, Any]]:
        """Hits, best first; ``libraries``: project keys whose notes a project filter keeps too."""
    def summary(self) -> dict[str, Any]:
        """``docs``, ``tokens``, ``sources``, ``sessions``, ``ts_min``, ``ts_max`` of the home."""
    def term_stats(self, query: str) -> str:
        """This home's share of the query's BM25 statistics (JSON), for ``merge_term_stats``."""
    def candidates(
        self,
        query: str,
        k: int = 10,
        vector: npt.NDArray[np.float32] | None = None,
        embedder_id: str | None = None,
        sources: list[str] | None = None,
        session_id: str | None = None,
        since: int | None = None,
        until: int | None = None,
        candidates: int = 50,
        stats: str | None = None,
        projects: list[str] | None = None,
        branch: str | None = None,
    ) -> bytes:
        """Unfused keyword and vector candidates (wire form for ``fuse_candidates``), BM25 scored
        with ``stats`` (the whole corpus's) when given."""
    def passages(
        self, query: str, texts: list[str], max_chars: int = 300, stats: str | None = None
    ) -> list[tuple[bool, str, bool] | None]:
        """Per text, its best passage for ``query``: ``(cut before, passage, cut after)``, or None when no term occurs;
        terms weighed by ``stats`` (the whole corpus's, from ``merge_term_stats``) when given."""
    def get(self, keys: list[int], reload: bool = True) -> list[dict[str, Any]]:
        """Stored chunks by key; ``reload=False`` reads as of the commit last seen (a home no one writes)."""
    def keys(self) -> npt.NDArray[np.uint64]:
        """Keys of every live chunk, ascending."""
    def status(self) -> dict[str, Any]: ...
    def records_projects(self) -> bool:
        """Whether chunks record their project and branch (homes built before they did do not)."""
    def projects(self) -> dict[str, int]:
        """Live chunks per project key."""
    def sessions(self) -> list[tuple[str, int, int | None, int | None, str, str, int]]:
        """One ``(session_id, chunks, first_ts_ms, last_ts_ms, project, branch, key)`` per session of
        the live transcript chunks, latest ``last_ts_ms`` first (none last), then by id; read from
        the index's terms and fast fields, never the stored chunks. ``key`` is the session's
        earliest chunk (fetch it with ``get`` for its path and format); ``project`` and ``branch``
        are ``""`` when unknown."""
    def session_keys(self, session_id: str) -> list[int]:
        """Keys of every live chunk of ``session_id`` (any source), ascending; an empty id raises
        ``InvalidArgumentError``."""
    def formats(self) -> dict[str, int]:
        """Files per detected format (``unknown`` where none was detected), from the manifest."""
    def has_vectors(self, keys: list[int]) -> list[bool]:
        """Whether each of ``keys`` has a vector, in the order given."""
    def libraries(self) -> list[dict[str, Any]]:
        """The project keys holding notes: ``[{"key", "notes", "global"}]``, by key."""
    def meta(self) -> dict[str, Any]:
        """``memlane.json`` as on disk (version, embedder_id, dim, quantization); loads no vectors."""
    def prefetch_vectors(self) -> None:
        """Start loading the vectors on a thread of their own, unless loaded or loading."""
    def verify(self, lock: HomeLock, thorough: bool = True) -> dict[str, Any]:
        """Findings (problems and notes) and counts of the home; the caller holds its lock."""
    def sources(self) -> list[str]:
        """The source files a rebuild reads."""
    def writer(self, format: str | None = None) -> Writer:
        """The writer; ``format`` (e.g. ``markdown``) forces a format and narrows folder walks to its files."""

@final
class Writer:
    """The one writer of a home; holds the write lock until close()."""

    def scan(self, roots: list[str]) -> dict[str, Any]: ...
    def remove_files(self, paths: list[str]) -> None: ...
    def mark_gone(self, paths: list[str]) -> None:
        """Keep these transcripts' chunks though their files are gone (a scan's ``gone``)."""
    def index_files(self, paths: list[str]) -> dict[str, Any]: ...
    def pending_vectors(self) -> npt.NDArray[np.uint64]: ...
    def collect_added_texts(self, on: bool) -> None:
        """From now on, keep each added chunk's (key, content hash, text) for :meth:`take_added_texts`, or stop."""
    def take_added_texts(self) -> list[tuple[int, str, str]]:
        """(key, content hash, text) of the chunks added since the last call, committed or not."""
    def chunk_texts(self, keys: list[int]) -> list[tuple[int, str, str]]: ...
    def add_vectors(
        self,
        embedder_id: str,
        keys: npt.NDArray[np.uint64],
        counts: npt.NDArray[np.uint64],
        vectors: npt.NDArray[np.float32],
        parts: int = 1,
    ) -> None:
        """Store vectors; ``parts`` splits a vector index this call creates into that many graphs."""
    def commit(self) -> dict[str, Any]: ...
    def commit_vectors(self) -> None:
        """Save the vectors added so far, and nothing else, once half again as many as saved (at least
        8,192) are unsaved and no chunk added awaits its commit; :meth:`commit` saves them all."""
    def forget(self, kind: str, value: str, dry_run: bool = False) -> dict[str, Any]:
        """Remove and tombstone a ``session``, ``path`` or ``chunk`` (hex id); ``dry_run`` only reports."""
    def unforget(self, kind: str, value: str) -> dict[str, Any]:
        """Lift a tombstone; ``files`` are read again by the next index run."""
    def purge_deleted(self) -> None:
        """Take deleted chunks' text off the disk (after a commit that forgot some)."""
    def adopt_forgotten(self, old: Store) -> bool:
        """Take ``old``'s tombstones before a rebuild reads any file; False when neither its manifest nor ``forgotten.json`` reads."""
    def restore_archived(self, old: Store, paths: list[str]) -> list[str]:
        """Index from the home's kept copies the transcripts a rebuild cannot read; the paths restored."""
    def adopt_files(self, old: Store, paths: list[str]) -> dict[str, Any]:
        """Carry over from ``old`` the chunks of source files a rebuild cannot read."""
    def adopt_vectors(self, old: Store, embedder_id: str) -> int:
        """Copy ``old``'s vectors to chunks that have none; how many got some."""
    def close(self) -> None: ...
    def __enter__(self) -> Writer: ...
    def __exit__(self, a: type[BaseException] | None, b: BaseException | None, c: TracebackType | None) -> bool: ...

def parse_file(path: str | PathLike[str], format: str | None = None) -> dict[str, Any]:
    """Parse one file: ``sessions`` of a transcript, or ``note`` (sections) of a markdown file."""

def project_of(cwd: str) -> str:
    """The project key of a working directory: the repository root around it, else itself."""

def repository_root(path: str | PathLike[str]) -> str | None:
    """The repository root holding ``path``, if it is inside a git checkout."""

def chunk_file(path: str | PathLike[str], format: str | None = None, budget: int = ...) -> list[dict[str, Any]]:
    """Chunk one file: turn pairs, short ones packed (``source`` ``transcript``), or note sections (``knowledge``, with ``heading`` and ``meta``)."""

def is_candidate(path: str | PathLike[str], format: str | None = None) -> bool:
    """Whether a folder walk would index this file (by its name)."""

def query_tokens(query: str) -> list[str]:
    """The distinct tokens BM25 looks up for ``query`` (the keys of ``term_stats``'s ``doc_freqs``)."""

def merge_term_stats(parts: list[str]) -> str:
    """The sum of shards' ``Store.term_stats`` for one query."""

def fuse_candidates(
    parts: list[bytes],
    k: int = 10,
    candidates: int = 50,
    fusion: str = "weighted",
    vector_weight: float = 0.6,
    threshold: float = ...,
) -> list[tuple[int, int, float, float | None, float | None, float | None, float]]:
    """Shards' ``Store.candidates`` merged and fused as one home's search: the best ``k`` as
    ``(part, key, score, bm25, vector, coverage, relevance)``."""

def search_across(
    stores: list[Store],
    query: str,
    k: int = 10,
    vector: npt.NDArray[np.float32] | None = None,
    embedder_id: str | None = None,
    sources: list[str] | None = None,
    session_id: str | None = None,
    since: int | None = None,
    until: int | None = None,
    fusion: str = "weighted",
    vector_weight: float = 0.6,
    threshold: float = ...,
    candidates: int = 50,
    projects: list[str] | None = None,
    branch: str | None = None,
    corpus: list[Store] | None = None,
) -> list[dict[str, Any]]:
    """``Store.search`` over several stores (the shards of one sharded index open in this
    process) as one home holding all their chunks would answer it, BM25 scored with the whole
    corpus's statistics: those of every store of ``corpus`` (default: ``stores``), summed: hit
    dicts, best first."""
