"""Whether this process can run the local model on a GPU, and if not, why.

A GPU is usable when three things hold, checked cheapest first and once per process:

1. onnxruntime offers its CUDA provider: the ``onnxruntime-gpu`` wheel is installed in place
   of ``onnxruntime``. Being listed proves little (the wheel installs on machines without a
   GPU), but where it is not listed nothing else is tried, so a CPU machine pays nothing.
   Both wheels write the same ``onnxruntime`` package, so where both are installed the one
   installed last wins: ``pip install 'memlane[gpu]'`` can leave the CPU one in place, which
   the reason then names.
2. The NVIDIA driver shows this process a device: ``cuInit`` and ``cuDeviceGetCount`` from
   ``libcuda.so.1``, the driver's own answer, which honours ``CUDA_VISIBLE_DEVICES`` and a
   container's device mounts. ``/dev/nvidia0`` can exist where no device is usable (and be
   absent where one is, under some runtimes), and ``nvidia-smi`` is a process to start that
   may not be installed; the driver call takes milliseconds.
3. A session really starts on CUDA: a one-node model is loaded with the CUDA provider and
   ``session.get_providers()`` read back. onnxruntime-gpu falls back to the CPU on its own when
   the CUDA runtime libraries or cuDNN it was built against do not load, so this is the only
   reliable test that they do. onnxruntime's ``preload_dlls`` runs first: it loads them from
   the ``nvidia-*`` wheels that ``pip install 'onnxruntime-gpu[cuda,cudnn]'`` puts beside
   onnxruntime, which the provider library would not find on its own.

Example, on a machine with the CPU-only ``onnxruntime`` wheel (the answer depends on the machine)::

    print(gpu_unusable())
    # this onnxruntime has no CUDA provider (pip install onnxruntime-gpu in place of onnxruntime)
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import io
import os
import sys
from pathlib import Path
from typing import Any

DEVICE_CHOICES = ("auto", "cpu", "gpu")
"""Where the local model may be asked to run: ``auto`` takes a GPU when :func:`gpu_unusable` finds none wrong."""

GPU_PRECISIONS = ("fp16", "fp32")
"""What the local model computes in on a GPU (:func:`gpu_precision`); its vectors are fp32 ones either way."""

CUDA_PROVIDER = "CUDAExecutionProvider"
CPU_PROVIDER = "CPUExecutionProvider"

# y = x + x on a float tensor, serialised with onnx.helper (opset 13, IR 8): the smallest model
# whose session proves the CUDA provider starts, kept as bytes so the probe needs no onnx import.
_PROBE_MODEL = (
    b'\x08\x08:9\n\x0e\n\x01x\n\x01x\x12\x01y"\x03Add\x12\x05probeZ\x0f\n\x01x\x12\n\n\x08\x08\x01\x12\x04\n\x02\x08\x01'
    b"b\x0f\n\x01y\x12\n\n\x08\x08\x01\x12\x04\n\x02\x08\x01B\x04\n\x00\x10\r"
)
# CUDA_ERROR_NO_DEVICE: the driver runs but shows this process no device.
_NO_DEVICE = 100
# onnxruntime's default logger severity (warning); 4 (fatal) keeps its own lines about a CUDA
# provider that failed to load off stderr while the probe runs, the reason being ours to give.
_ORT_DEFAULT_SEVERITY, _ORT_FATAL_ONLY = 2, 4


@functools.cache
def gpu_unusable() -> str | None:
    """Why the local model cannot run on a GPU in this process, or ``None`` when it can.

    Probed once per process (see the module doc for the three checks and their order); the
    reason is one line naming what is missing and what to do about it.

    Example, with onnxruntime-gpu installed and the devices hidden::

        gpu_unusable()
        # 'the NVIDIA driver shows this process no CUDA device (CUDA_VISIBLE_DEVICES=\'-1\')'
    """
    import onnxruntime as ort

    if CUDA_PROVIDER not in ort.get_available_providers():
        return _no_cuda_provider(Path(ort.__file__).parent.parent)
    return _no_visible_device() or _cuda_does_not_start(ort)


def gpu_precision() -> str:
    """What the local model computes in on a GPU: ``fp16`` (the default) or ``fp32``, as
    ``MEMLANE_GPU_PRECISION`` says.

    fp16 runs on the GPU's half-precision units and writes into the fp32 vector space: its
    vectors are within cosine 0.99999 of the exact ones and recall on LoCoMo dev is unchanged
    (benches/LOG.md, "fp16 on a GPU"); ``fp32`` computes them exactly.

    Raises:
        memlane.errors.InvalidArgumentError: ``MEMLANE_GPU_PRECISION`` names neither.

    Example:
        >>> os.environ.pop("MEMLANE_GPU_PRECISION", None) and None
        >>> gpu_precision()
        'fp16'
    """
    from memlane.errors import InvalidArgumentError

    value = os.environ.get("MEMLANE_GPU_PRECISION") or "fp16"
    if value not in GPU_PRECISIONS:
        raise InvalidArgumentError(
            f"MEMLANE_GPU_PRECISION={value!r} is not a GPU precision; accepted: {', '.join(GPU_PRECISIONS)}"
        )
    return value


def _no_cuda_provider(site: Path) -> str:
    """Why the onnxruntime installed in ``site`` offers no CUDA provider: the GPU wheel is
    missing, or the CPU wheel installed beside it shadows its files."""
    from memlane.embed.weights import installed_versions

    # Both wheels install the package `onnxruntime`; their dist-info folders tell them apart.
    # Every `auto` placement on a machine without a GPU asks, a hook's query embedding among them.
    gpu_wheels = installed_versions(site, "onnxruntime-gpu")
    if not gpu_wheels or not installed_versions(site, "onnxruntime"):
        return "this onnxruntime has no CUDA provider (pip install onnxruntime-gpu in place of onnxruntime)"
    return (
        f"onnxruntime-gpu {gpu_wheels[-1]} is installed, but the CPU wheel onnxruntime beside it shadows its files "
        "(pip uninstall -y onnxruntime onnxruntime-gpu, then pip install 'onnxruntime-gpu[cuda,cudnn]')"
    )


def _hidden_by_env() -> str:
    value = os.environ.get("CUDA_VISIBLE_DEVICES")
    return "" if value is None else f" (CUDA_VISIBLE_DEVICES={value!r})"


def _no_visible_device() -> str | None:
    """Why the NVIDIA driver shows this process no CUDA device, or ``None`` when it shows one."""
    library = "nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1"
    try:
        driver = ctypes.CDLL(library)
    except OSError:
        return f"no NVIDIA driver on this machine ({library} does not load)"
    count = ctypes.c_int(0)
    error = driver.cuInit(0)
    if error == 0:
        error = driver.cuDeviceGetCount(ctypes.byref(count))
    if error == _NO_DEVICE or (error == 0 and count.value == 0):
        return "the NVIDIA driver shows this process no CUDA device" + _hidden_by_env()
    if error:
        return f"the NVIDIA driver did not start (cuInit error {error}){_hidden_by_env()}"
    return None


def _cuda_does_not_start(ort: Any) -> str | None:
    """Why a session asked to run on CUDA starts without it, or ``None`` when it starts on CUDA."""
    if hasattr(ort, "preload_dlls"):  # onnxruntime >= 1.21
        # It prints what it could not load; the session below is the verdict, the reason ours.
        with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(Exception):
            ort.preload_dlls()
    ort.set_default_logger_severity(_ORT_FATAL_ONLY)
    try:
        providers = ort.InferenceSession(_PROBE_MODEL, providers=[CUDA_PROVIDER, CPU_PROVIDER]).get_providers()
    except Exception as exc:  # onnxruntime's errors have no common base class
        return f"onnxruntime could not start CUDA ({str(exc).splitlines()[0]})"
    finally:
        ort.set_default_logger_severity(_ORT_DEFAULT_SEVERITY)
    if CUDA_PROVIDER in providers:
        return None
    return f"onnxruntime could not start CUDA: {cuda_libraries_hint(ort)}"


def cuda_libraries_hint(ort: Any = None) -> str:
    """What this onnxruntime-gpu needs to run on CUDA, naming the first library that does not load.

    The CUDA major version is the one the installed wheel was built with (``ort.cuda_version``:
    13 for onnxruntime-gpu 1.31); its libraries come with ``pip install 'onnxruntime-gpu[cuda,cudnn]'``.

    Example:
        >>> cuda_libraries_hint(type("ort", (), {"cuda_version": "13.0"}))  # doctest: +ELLIPSIS
        "this onnxruntime-gpu is a CUDA 13 build: it needs the CUDA 13 runtime libraries and cuDNN 9 ...
    """
    if ort is None:
        import onnxruntime

        ort = onnxruntime
    major = str(getattr(ort, "cuda_version", "") or "").split(".")[0]
    if not major.isdigit():
        return "it needs the CUDA runtime libraries and cuDNN 9 its onnxruntime-gpu was built for (pip install 'onnxruntime-gpu[cuda,cudnn]')"
    missing = _first_missing(
        [
            f"libcudart.so.{major}",
            f"libcublasLt.so.{major}",
            f"libcublas.so.{major}",
            "libcurand.so.10",
            "libcudnn.so.9",
        ]
    )
    return (
        f"this onnxruntime-gpu is a CUDA {major} build: it needs the CUDA {major} runtime libraries and cuDNN 9 "
        f"(pip install 'onnxruntime-gpu[cuda,cudnn]', or CUDA {major} and cuDNN 9 on the library path)"
        + (f"; {missing} does not load" if missing else "")
    )


def _first_missing(libraries: list[str]) -> str | None:
    if sys.platform != "linux":
        return None
    for name in libraries:
        try:
            ctypes.CDLL(name)
        except OSError:
            return name
    return None
