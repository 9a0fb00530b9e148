"""Every exception class memlane defines belongs to one family rooted at MemlaneError."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import memlane
from memlane.errors import IndexInterrupted, MemlaneError


def _exception_classes() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(memlane.__path__, "memlane."):
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__.startswith("memlane"):
                found[f"{obj.__module__}.{name}"] = obj
    return found


def test_every_memlane_exception_is_a_memlane_error() -> None:
    classes = _exception_classes()
    assert len(classes) >= 20  # the walk really found the package's classes
    # Ctrl-C's report stays a KeyboardInterrupt so that `except Exception` never swallows it.
    outside = sorted(n for n, c in classes.items() if not issubclass(c, MemlaneError) and c is not IndexInterrupted)
    assert outside == []
