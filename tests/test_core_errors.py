"""A bad argument the native module refuses raises memlane's argument errors: InvalidArgumentError
(still a ValueError) for a value, ArgumentTypeError (still a TypeError) for a type or layout."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memlane import _core
from memlane.errors import ArgumentTypeError, InvalidArgumentError, MemlaneError


def test_an_unknown_quantization_is_an_invalid_argument(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="unknown vector quantization") as caught:
        _core.Store(tmp_path / "home", quantization="f64")
    assert isinstance(caught.value, MemlaneError)
    assert isinstance(caught.value, ValueError)


def test_an_empty_literal_is_an_invalid_argument() -> None:
    with pytest.raises(InvalidArgumentError, match="empty literal"):
        _core.Literals(["token", ""])


def test_an_unknown_fusion_is_an_invalid_argument(tmp_path: Path) -> None:
    store = _core.Store(tmp_path / "home")
    with pytest.raises(InvalidArgumentError, match="unknown fusion"):
        store.search("deploy", fusion="max")


def test_a_strided_query_vector_is_an_argument_type_error(tmp_path: Path) -> None:
    store = _core.Store(tmp_path / "home")
    strided = np.ones(16, dtype=np.float32)[::2]
    with pytest.raises(ArgumentTypeError, match="C-contiguous") as caught:
        store.search("deploy", vector=strided)
    assert isinstance(caught.value, TypeError)


def test_a_closed_writer_raises_a_memlane_error(tmp_path: Path) -> None:
    store = _core.Store(str(tmp_path / "home"))
    writer = store.writer()
    writer.close()
    with pytest.raises(MemlaneError, match="writer is closed"):
        writer.scan([str(tmp_path)])
