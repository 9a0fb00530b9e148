"""memlane's exceptions: one base class, one subclass per failure a caller can act on.

The classes are defined in the native module (so Rust errors map to them one to one) and
re-exported here, their public import site. File-not-found errors are Python's own
:class:`FileNotFoundError`; invalid arguments are :class:`ValueError`.

Example:
    >>> from memlane.errors import MemlaneError, IndexLockedError
    >>> issubclass(IndexLockedError, MemlaneError)
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
    "CorruptIndexError",
    "DiskFullError",
    "EmbedderMismatchError",
    "IndexLockedError",
    "MemlaneError",
    "ParseError",
]
