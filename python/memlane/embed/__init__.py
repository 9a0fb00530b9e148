"""Text embedders: the :class:`Embedder` protocol and the :func:`make_embedder` factory.

Nothing heavy is imported here; each backend loads its runtime only when built.

Example:
    >>> emb = make_embedder("local")  # doctest: +SKIP
    >>> emb.id  # doctest: +SKIP
    'local/all-MiniLM-L6-v2/fp32/384'
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np

__all__ = ["Embedder", "make_embedder"]


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
    "local": _local("fp32"),
    "local:fp32": _local("fp32"),
    "local:int8": _local("int8"),
    "bedrock": _bedrock(1024),
    "bedrock:1024": _bedrock(1024),
    "bedrock:512": _bedrock(512),
    "bedrock:256": _bedrock(256),
}


def make_embedder(spec: str, **kw: Any) -> Embedder:
    """Build the embedder named by ``spec``.

    Args:
        spec: ``"local"`` (= ``"local:fp32"``, all-MiniLM-L6-v2 on onnxruntime),
            ``"local:int8"`` (its int8-quantised export), ``"local:DIR"`` (a sentence-embedding
            model directory of your own, see :mod:`memlane.embed.model_dir`), or ``"bedrock"``
            (= ``"bedrock:1024"``), ``"bedrock:512"``, ``"bedrock:256"`` (Amazon Titan Text
            Embeddings V2 at that dimension; needs boto3 and AWS credentials).
        **kw: Passed to the backend's constructor (for local: ``threads``, ``batch_size``;
            for bedrock: ``region``, ``profile``, ``concurrency``, ``normalize``, ``retry``, ``client``).

    Returns:
        The embedder.

    Raises:
        ValueError: If ``spec`` names no known embedder.

    Example:
        >>> make_embedder("local:int8", threads=2).id  # doctest: +SKIP
        'local/all-MiniLM-L6-v2/int8/384'
        >>> make_embedder("bedrock:512", region="us-east-1", concurrency=16).id  # doctest: +SKIP
        'bedrock/amazon.titan-embed-text-v2:0/512'
        >>> make_embedder("nope")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ValueError: unknown embedder spec 'nope'; accepted: local, local:fp32, local:int8...
    """
    factory = _FACTORIES.get(spec)
    if factory is None and spec.startswith("local:"):
        path = spec.removeprefix("local:")
        if not os.path.isdir(os.path.expanduser(path)):
            raise ValueError(f"unknown embedder spec {spec!r}: {path!r} is neither fp32, int8 nor a model directory")
        factory = _local_dir(path)
    if factory is None:
        raise ValueError(f"unknown embedder spec {spec!r}; accepted: {', '.join(_FACTORIES)}, local:DIR")
    return factory(**kw)
