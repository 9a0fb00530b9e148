"""memlane's exceptions: one base class, one subclass per failure a caller can act on.

The classes raised by the Rust core are defined in the native module (so its errors map to
them one to one) and re-exported here, their public import site. File-not-found errors are
Python's own :class:`FileNotFoundError`. A bad argument raises :class:`InvalidArgumentError`
(a :class:`ValueError`) or :class:`ArgumentTypeError` (a :class:`TypeError`) at the call,
naming the argument, so ``except ValueError`` / ``except TypeError`` keep working.

Example:
    >>> from memlane.errors import MemlaneError, IndexLockedError, InvalidArgumentError
    >>> issubclass(IndexLockedError, MemlaneError)
    True
    >>> issubclass(InvalidArgumentError, MemlaneError) and issubclass(InvalidArgumentError, ValueError)
    True
"""

from memlane._core import (
    CorruptIndexError,
    DiskFullError,
    EmbedderMismatchError,
    IndexLockedError,
    MemlaneError,
    ParseError,
)

__all__ = [
    "ArgumentTypeError",
    "CorruptIndexError",
    "DiskFullError",
    "EmbedderMismatchError",
    "IndexInterrupted",
    "IndexLockedError",
    "InvalidArgumentError",
    "MemlaneError",
    "ParseError",
    "WeightsMismatchError",
]


class InvalidArgumentError(MemlaneError, ValueError):
    """An argument of the right type with a value memlane cannot use (the message names it)."""


class ArgumentTypeError(MemlaneError, TypeError):
    """An argument of the wrong type (the message names it and the type it got)."""


class WeightsMismatchError(MemlaneError, ValueError):
    """A model file's bytes differ from the sha256 memlane pins for it (a changed or damaged package)."""


class IndexInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped :meth:`memlane.Memory.index` after it committed what it had done.

    Still a :class:`KeyboardInterrupt` (``except Exception`` never swallows it). ``report``
    is the :class:`memlane.memory.IndexReport` of what was committed; ``files_to_index`` the
    files the run set out to read; ``chunks_pending`` the chunks left without vectors for
    ``memlane embed`` (or the same index run) to fill in.
    """

    def __init__(self, report: object, files_to_index: int, chunks_pending: int) -> None:
        super().__init__("index interrupted")
        self.report = report
        self.files_to_index = files_to_index
        self.chunks_pending = chunks_pending
