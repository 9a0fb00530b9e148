"""A bad argument the Rust core refuses raises memlane's InvalidArgumentError, still a ValueError."""

from __future__ import annotations

from pathlib import Path

import pytest

from memlane import _core
from memlane.errors import InvalidArgumentError, MemlaneError


def test_an_unknown_quantization_is_an_invalid_argument(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="unknown vector quantization") as caught:
        _core.Store(tmp_path / "home", quantization="f64")
    assert isinstance(caught.value, MemlaneError)
    assert isinstance(caught.value, ValueError)


def test_an_empty_literal_is_an_invalid_argument() -> None:
    with pytest.raises(InvalidArgumentError, match="empty literal"):
        _core.Literals(["token", ""])
