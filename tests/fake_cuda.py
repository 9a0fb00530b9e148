"""A pytest plugin that makes this machine look like a GPU one: onnxruntime offers CUDA and its
sessions asked for it say they run on it, while they run on the CPU. It dry-runs the GPU checks
before spending a GPU machine's minutes on them (not part of the suite):

    PYTHONPATH=tests .venv/bin/python -m pytest -p fake_cuda --noconftest -o addopts="" tests/test_gpu_real.py

The vectors are the CPU's, so the figures say nothing of a GPU; what fails here fails there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import onnxruntime as ort

import memlane.embed.device as devices

_SESSION = ort.InferenceSession
_CUDA, _CPU = "CUDAExecutionProvider", "CPUExecutionProvider"


class _SessionSayingCuda:
    def __init__(self, path: Any, sess_options: Any = None, providers: list[str] | None = None) -> None:
        self._on_cuda = _CUDA in (providers or [])
        self._session = _SESSION(path, sess_options=sess_options, providers=[_CPU])

    def get_providers(self) -> list[str]:
        return [_CUDA, _CPU] if self._on_cuda else [_CPU]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)


def pretend_cuda(patch: Callable[[Any, str, Any], None] = setattr) -> None:
    """Make onnxruntime offer CUDA and the GPU probe find it usable, through ``patch`` (``setattr``,
    or a test's ``monkeypatch.setattr`` to undo it after the test)."""
    patch(devices, "gpu_unusable", lambda: None)
    patch(ort, "get_available_providers", lambda: [_CUDA, _CPU])
    patch(ort, "InferenceSession", _SessionSayingCuda)


def pytest_configure(config: Any) -> None:
    """Patch onnxruntime when pytest loads this file as a plugin (``-p fake_cuda``), not when it
    merely imports it (``--doctest-modules`` imports every module under tests/)."""
    pretend_cuda()
