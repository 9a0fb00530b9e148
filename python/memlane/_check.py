"""Argument checks for the public API: wrong input fails at the call, naming the argument.

Each check raises :class:`memlane.errors.ArgumentTypeError` (a ``TypeError``) for a wrong
type and :class:`memlane.errors.InvalidArgumentError` (a ``ValueError``) for a wrong value,
so callers' existing ``except ValueError`` / ``except TypeError`` clauses still catch them.

Example:
    >>> integer("k", 5, minimum=1)
    5
    >>> integer("k", "5", minimum=1)
    Traceback (most recent call last):
    memlane.errors.ArgumentTypeError: k must be an int, got str '5'
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable
from typing import Any

from memlane.errors import ArgumentTypeError, InvalidArgumentError

ECHO_LIMIT = 80
"""How many characters of a caller's input an error message repeats."""


def echo(value: Any, limit: int = ECHO_LIMIT, *, quote: bool = False) -> str:
    """``value`` as an error message repeats it: whole when short, else its first ``limit``
    characters, ``…`` and its length; ``quote``: in quotes, as ``repr`` shows a string (a value
    of another type is shown by its ``repr``). A 1 MB argument makes a one-line error, not a
    1 MB one: every message that quotes input goes through here.

    Example:
        >>> echo("KD07"), echo("KD07", quote=True)
        ('KD07', "'KD07'")
        >>> echo("ab" * 1000, limit=6, quote=True)
        "'ababab…' (2,000 characters)"
    """
    if not isinstance(value, str):
        value, quote = repr(value), False
    if len(value) <= limit:
        return repr(value) if quote else value
    head = value[:limit] + "…"
    return f"{head!r} ({len(value):,} characters)" if quote else f"{head} ({len(value):,} characters)"


def _got(value: Any) -> str:
    return f"{type(value).__name__} {echo(value, 40, quote=True)}"


def text(name: str, value: Any) -> str:
    """``value`` if it is a ``str``.

    Example:
        >>> text("query", None)
        Traceback (most recent call last):
        memlane.errors.ArgumentTypeError: query must be a string, got NoneType None
    """
    if not isinstance(value, str):
        raise ArgumentTypeError(f"{name} must be a string, got {_got(value)}")
    return value


def optional_text(name: str, value: Any) -> str | None:
    """``value`` if it is a ``str`` or None."""
    return None if value is None else text(name, value)


def integer(name: str, value: Any, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """``value`` if it is an ``int`` (not a bool) of at least ``minimum`` and at most ``maximum``.

    Example:
        >>> integer("k", 1001, minimum=1, maximum=1000)
        Traceback (most recent call last):
        memlane.errors.InvalidArgumentError: k must be at most 1000, got 1001
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgumentTypeError(f"{name} must be an int, got {_got(value)}")
    if minimum is not None and value < minimum:
        raise InvalidArgumentError(f"{name} must be at least {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise InvalidArgumentError(f"{name} must be at most {maximum}, got {value}")
    return value


def number(name: str, value: Any, *, low: float | None = None, high: float | None = None) -> float:
    """``value`` as a float if it is a real number (not a bool) within ``[low, high]``.

    Example:
        >>> number("vector_weight", 1.5, low=0, high=1)
        Traceback (most recent call last):
        memlane.errors.InvalidArgumentError: vector_weight must be between 0 and 1, got 1.5
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ArgumentTypeError(f"{name} must be a number, got {_got(value)}")
    if value != value or (low is not None and value < low) or (high is not None and value > high):
        bounds = (
            f"between {low} and {high}"
            if low is not None and high is not None
            else (f"at least {low}" if low is not None else f"at most {high}")
        )
        raise InvalidArgumentError(f"{name} must be {bounds}, got {value}")
    return float(value)


def positive(name: str, value: Any) -> float:
    """``value`` as a float if it is a real number above 0."""
    if number(name, value) <= 0:
        raise InvalidArgumentError(f"{name} must be positive, got {value}")
    return float(value)


def flag(name: str, value: Any) -> bool:
    """``value`` if it is a ``bool``."""
    if not isinstance(value, bool):
        raise ArgumentTypeError(f"{name} must be True or False, got {_got(value)}")
    return value


def choice(name: str, value: Any, accepted: Collection[str]) -> str:
    """``value`` if it is one of the ``accepted`` strings."""
    checked = text(name, value)
    if checked not in accepted:
        raise InvalidArgumentError(
            f"{name} must be one of {', '.join(sorted(accepted))}, got {echo(value, quote=True)}"
        )
    return checked


def paths(name: str, value: Any) -> list[str | os.PathLike[str]]:
    """One path (``str`` or ``os.PathLike``) as a one-item list, or an iterable of paths as a list.

    Example:
        >>> paths("paths", "notes")
        ['notes']
        >>> paths("paths", [1])
        Traceback (most recent call last):
        memlane.errors.ArgumentTypeError: paths must be a path (str or os.PathLike) or an iterable of them; item 0 is int 1
    """
    if isinstance(value, (str, os.PathLike)):
        return [value]
    if isinstance(value, bytes) or not isinstance(value, Iterable):
        raise ArgumentTypeError(f"{name} must be a path (str or os.PathLike) or an iterable of them, got {_got(value)}")
    items = list(value)
    for i, item in enumerate(items):
        if not isinstance(item, (str, os.PathLike)):
            raise ArgumentTypeError(
                f"{name} must be a path (str or os.PathLike) or an iterable of them; item {i} is {_got(item)}"
            )
    return items


def strings(name: str, value: Any, accepted: Collection[str]) -> list[str]:
    """One accepted string as a one-item list, or an iterable of accepted strings as a list."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, Iterable):
        raise ArgumentTypeError(f"{name} must be a string or an iterable of strings, got {_got(value)}")
    items = list(items)
    for item in items:
        choice(name, item, accepted)
    return items
