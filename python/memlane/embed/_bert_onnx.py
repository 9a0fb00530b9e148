"""Build an ONNX graph of a BERT encoder straight from safetensors weights, fp32 or int8.

The fp32 all-MiniLM-L6-v2 weights ship as ``model.safetensors`` without an ONNX
export, and exporting through torch would drag in a 2 GB dependency. The encoder
is small enough to write out by hand with ``onnx.helper``: embeddings, then per
layer self-attention and a feed-forward block, each closed by residual +
LayerNorm. The result is cached on disk so the graph is built once per machine, its
weights in a file beside it that onnxruntime memory-maps (:func:`weights_file`).

Three graphs: the fp32 one uses standard operators only; its fp16 form (:func:`half_precision`)
is what a GPU runs; the int8 one is first written
with onnxruntime's fused operators (``Attention``, ``SkipLayerNormalization``,
``BiasGelu``, which onnxruntime cannot recognise in the plain graph), then quantised
by ``onnxruntime.quantization.quantize_dynamic``: int8 per-channel weights, activations
quantised per batch, so matrix products run as integer kernels.

Example:
    >>> from memlane.embed.weights import minilm_dir
    >>> onnx_path = ensure_bert_onnx(minilm_dir(), "all-MiniLM-L6-v2")
    >>> onnx_path.parent == default_model_dir(), onnx_path.suffix
    (True, '.onnx')
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import logging
import math
import os
import shutil
import struct
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from memlane._paths import default_cache_dir
from memlane.errors import InvalidArgumentError, InvalidDataError

if TYPE_CHECKING:
    from onnx import ModelProto, NodeProto, TensorProto

# Bump whenever the emitted graph changes, so stale cache files are not reused.
BUILDER_VERSION = 1
# Age past which a build's temporary folder is taken for a killed build's: building the q8
# graph takes seconds, so ten minutes is never a live one.
_KILLED_BUILD_S = 600
# The fp32 graph's second output: each row's tokens averaged over its attention mask,
# L2-normalised (what the local embedder does on the host with ``last_hidden_state``). A GPU
# returns this [batch, hidden] array instead of [batch, sequence, hidden] hidden states: 1/sequence
# of the copy back to the host, and no pooling there. The q8 graph (CPU only) has none, so its
# cached file, and every q8 home's vectors, stay as they were.
MEAN_POOLED = "mean_pooled"

# opset 17 is the first with a standard LayerNormalization; IR 8 is what opset 17
# was released with, which keeps the file loadable by older onnxruntime builds.
_OPSET = 17
_IR_VERSION = 8
# Where onnxruntime's own fused operators live.
_CONTRIB = "com.microsoft"

_SAFETENSORS_DTYPES: dict[str, str] = {
    "F64": "<f8",
    "F32": "<f4",
    "F16": "<f2",
    "I64": "<i8",
    "I32": "<i4",
    "I16": "<i2",
    "I8": "i1",
    "U8": "u1",
    "BOOL": "?",
}


def read_safetensors(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """Read every tensor of a ``.safetensors`` file into numpy arrays.

    The format is an 8-byte little-endian header length, a JSON header mapping
    tensor names to dtype, shape and byte offsets, then the raw data.

    Args:
        path: The ``.safetensors`` file.

    Returns:
        Tensor name to read-only array (the ``__metadata__`` entry is skipped).

    Raises:
        memlane.errors.InvalidDataError: If the file is truncated, malformed or uses an unsupported dtype.

    Example:
        >>> from memlane.embed.weights import minilm_dir
        >>> tensors = read_safetensors(minilm_dir() / "model.safetensors")
        >>> tensors["embeddings.word_embeddings.weight"].shape
        (30522, 384)
    """
    data = Path(path).read_bytes()
    if len(data) < 8:
        raise InvalidDataError(f"{path}: too short to be a safetensors file")
    (header_len,) = struct.unpack("<Q", data[:8])
    if 8 + header_len > len(data):
        raise InvalidDataError(f"{path}: header length {header_len} exceeds file size")
    header = json.loads(data[8 : 8 + header_len])
    base = 8 + header_len
    tensors: dict[str, np.ndarray] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype_code = info["dtype"]
        if dtype_code not in _SAFETENSORS_DTYPES:
            raise InvalidDataError(f"{path}: tensor {name!r} has unsupported dtype {dtype_code}")
        dtype = np.dtype(_SAFETENSORS_DTYPES[dtype_code])
        shape = tuple(int(d) for d in info["shape"])
        begin, end = (int(o) for o in info["data_offsets"])
        count = math.prod(shape)
        if end - begin != count * dtype.itemsize or base + end > len(data):
            raise InvalidDataError(f"{path}: tensor {name!r} has inconsistent offsets")
        tensors[name] = np.frombuffer(data, dtype=dtype, count=count, offset=base + begin).reshape(shape)
    return tensors


@dataclass(frozen=True)
class BertConfig:
    """The hyper-parameters of a BERT encoder that the graph depends on.

    Example:
        >>> from memlane.embed.weights import minilm_dir
        >>> BertConfig.from_json(minilm_dir() / "config.json").num_hidden_layers
        6
    """

    hidden_size: int
    num_attention_heads: int
    num_hidden_layers: int
    intermediate_size: int
    layer_norm_eps: float

    @classmethod
    def from_json(cls, path: str | os.PathLike[str]) -> BertConfig:
        """Load a Hugging Face ``config.json`` of a ``bert`` model.

        Args:
            path: The ``config.json`` file.

        Returns:
            The config.

        Raises:
            memlane.errors.InvalidDataError: If the model uses an activation or position embedding
                that the graph builder does not implement.
        """
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
        if raw.get("hidden_act", "gelu") != "gelu":
            raise InvalidDataError(f"{path}: hidden_act {raw['hidden_act']!r} is not supported (only exact 'gelu')")
        if raw.get("position_embedding_type", "absolute") != "absolute":
            raise InvalidDataError(f"{path}: only absolute position embeddings are supported")
        if raw["hidden_size"] % raw["num_attention_heads"]:
            raise InvalidDataError(f"{path}: hidden_size is not a multiple of num_attention_heads")
        return cls(
            hidden_size=int(raw["hidden_size"]),
            num_attention_heads=int(raw["num_attention_heads"]),
            num_hidden_layers=int(raw["num_hidden_layers"]),
            intermediate_size=int(raw["intermediate_size"]),
            layer_norm_eps=float(raw.get("layer_norm_eps", 1e-12)),
        )


class _Graph:
    """Accumulates nodes and initializers; every node has a single output named like the node."""

    def __init__(self) -> None:
        # onnx is imported here, not at module level, so a cache hit never pays for importing it.
        from onnx import helper, numpy_helper

        self._helper = helper
        self._numpy_helper = numpy_helper
        self.nodes: list[NodeProto] = []
        self.initializers: list[TensorProto] = []

    def const(self, name: str, value: np.ndarray) -> str:
        self.initializers.append(self._numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(self, op_type: str, inputs: list[str], name: str, **attrs: Any) -> str:
        self.nodes.append(self._helper.make_node(op_type, inputs, [name], name=name, **attrs))
        return name


def build_bert_onnx(
    tensors: Mapping[str, np.ndarray], config: BertConfig, *, fused: bool = False, pooled: bool = False
) -> ModelProto:
    """Build the encoder graph: ``(input_ids, attention_mask, token_type_ids) -> last_hidden_state``.

    All three inputs are int64 ``[batch, sequence]``; ``last_hidden_state`` is float32
    ``[batch, sequence, hidden_size]``, matching Hugging Face ``BertModel`` (exact erf GELU,
    additive attention mask, post-LayerNorm residuals). With ``pooled``, a second output,
    :data:`MEAN_POOLED`: its rows averaged over the mask and L2-normalised, ``[batch, hidden_size]``.

    Args:
        tensors: Weights named as in a Hugging Face ``BertModel`` state dict.
        config: The model's hyper-parameters.
        fused: Write each attention block, residual + LayerNorm and bias + GELU as one of
            onnxruntime's ``com.microsoft`` operators (what its quantiser turns into integer
            kernels) instead of standard operators; the same function to float rounding.
        pooled: Add the :data:`MEAN_POOLED` output.

    Returns:
        An ``onnx.ModelProto`` (opset 17; only default-domain operators unless ``fused``).

    Raises:
        KeyError: If a weight is missing.

    Example:
        >>> from memlane.embed.weights import minilm_dir
        >>> config = BertConfig.from_json(minilm_dir() / "config.json")
        >>> model = build_bert_onnx(read_safetensors(minilm_dir() / "model.safetensors"), config)
        >>> [i.name for i in model.graph.input], [o.name for o in model.graph.output]
        (['input_ids', 'attention_mask', 'token_type_ids'], ['last_hidden_state'])
    """
    from onnx import TensorProto, helper

    hidden = config.hidden_size
    heads = config.num_attention_heads
    head_dim = hidden // heads
    eps = config.layer_norm_eps
    g = _Graph()

    def weight(name: str) -> np.ndarray:
        return np.asarray(tensors[name], dtype=np.float32)

    def matmul(x: str, prefix: str, out: str) -> str:
        # Stored pre-transposed (torch keeps [out, in]) so no Transpose runs per call.
        return g.op("MatMul", [x, g.const(f"{prefix}.weight_t", weight(f"{prefix}.weight").T)], out)

    def linear(x: str, prefix: str, out: str) -> str:
        return g.op(
            "Add", [matmul(x, prefix, f"{out}/matmul"), g.const(f"{prefix}.bias", weight(f"{prefix}.bias"))], out
        )

    def to_heads(x: str, prefix: str, out: str, perm: list[int]) -> str:
        split = g.op("Reshape", [linear(x, prefix, out), split_heads], f"{out}/split")
        return g.op("Transpose", [split], f"{out}/heads", perm=perm)

    def layer_norm(x: str, prefix: str, out: str) -> str:
        scale = g.const(f"{prefix}.weight", weight(f"{prefix}.weight"))
        bias = g.const(f"{prefix}.bias", weight(f"{prefix}.bias"))
        return g.op("LayerNormalization", [x, scale, bias], out, axis=-1, epsilon=eps)

    def attention(x: str, prefix: str, out: str) -> str:
        """Self-attention of ``x`` up to the merged heads (before the output projection)."""
        if fused:
            parts = ("query", "key", "value")
            qkv_w = np.concatenate([weight(f"{prefix}.{k}.weight").T for k in parts], axis=1)
            qkv_b = np.concatenate([weight(f"{prefix}.{k}.bias") for k in parts])
            inputs = [x, g.const(f"{prefix}.qkv.weight_t", qkv_w), g.const(f"{prefix}.qkv.bias", qkv_b), mask_int]
            return g.op("Attention", inputs, out, domain=_CONTRIB, num_heads=heads)
        # [batch, seq, hidden] -> [batch, heads, seq, head_dim]; keys go straight to [.., head_dim, seq].
        q = to_heads(x, f"{prefix}.query", f"{out}/query", [0, 2, 1, 3])
        k_t = to_heads(x, f"{prefix}.key", f"{out}/key", [0, 2, 3, 1])
        v = to_heads(x, f"{prefix}.value", f"{out}/value", [0, 2, 1, 3])
        scores = g.op("MatMul", [q, k_t], f"{out}/scores")
        scores = g.op("Mul", [scores, attn_scale], f"{out}/scores_scaled")
        scores = g.op("Add", [scores, mask_bias], f"{out}/scores_masked")
        probs = g.op("Softmax", [scores], f"{out}/probs", axis=-1)
        context = g.op("MatMul", [probs, v], f"{out}/context")
        context = g.op("Transpose", [context], f"{out}/context_t", perm=[0, 2, 1, 3])
        return g.op("Reshape", [context, merge_heads], out)

    def dense_residual_norm(x: str, dense: str, residual: str, norm: str, out: str) -> str:
        """LayerNorm(x @ W + b + residual)."""
        if fused:
            scale = g.const(f"{norm}.weight", weight(f"{norm}.weight"))
            bias = g.const(f"{norm}.bias", weight(f"{norm}.bias"))
            dense_bias = g.const(f"{dense}.bias", weight(f"{dense}.bias"))
            projected = matmul(x, dense, f"{out}/matmul")
            return g.op(
                "SkipLayerNormalization",
                [projected, residual, scale, bias, dense_bias],
                out,
                domain=_CONTRIB,
                epsilon=eps,
            )
        return layer_norm(g.op("Add", [linear(x, dense, f"{out}/dense"), residual], f"{out}/residual"), norm, out)

    def gelu(x: str, dense: str, out: str) -> str:
        """Exact GELU of ``x @ W + b``."""
        if fused:
            bias = g.const(f"{dense}.bias", weight(f"{dense}.bias"))
            return g.op("BiasGelu", [matmul(x, dense, f"{out}/matmul"), bias], out, domain=_CONTRIB)
        inter = linear(x, dense, f"{out}/dense")
        # 0.5 * x * (1 + erf(x / sqrt(2))), spelled the way onnxruntime fuses into one BiasGelu.
        erf = g.op("Erf", [g.op("Div", [inter, sqrt2], f"{out}/div")], f"{out}/erf")
        return g.op("Mul", [g.op("Mul", [inter, g.op("Add", [erf, one], f"{out}/add")], f"{out}/mul"), half], out)

    one = g.const("const/one", np.array(1.0, np.float32))
    half = g.const("const/half", np.array(0.5, np.float32))
    sqrt2 = g.const("const/sqrt2", np.array(math.sqrt(2.0), np.float32))
    attn_scale = g.const("const/attn_scale", np.array(1.0 / math.sqrt(head_dim), np.float32))
    # Same masking value as transformers' BertModel; exp() of it underflows to exactly 0.
    mask_min = g.const("const/mask_min", np.array(np.finfo(np.float32).min, np.float32))
    split_heads = g.const("const/split_heads", np.array([0, 0, heads, head_dim], np.int64))
    merge_heads = g.const("const/merge_heads", np.array([0, 0, hidden], np.int64))
    zero_1d = g.const("const/zero_1d", np.array([0], np.int64))
    mask_axes = g.const("const/mask_axes", np.array([1, 2], np.int64))

    # Embeddings: word + position + token type, then LayerNorm.
    word_table, pos_table, type_table = (
        g.const(f"embeddings.{kind}_embeddings.weight", weight(f"embeddings.{kind}_embeddings.weight"))
        for kind in ("word", "position", "token_type")
    )
    words = g.op("Gather", [word_table, "input_ids"], "emb/words")
    seq_len = g.op("Shape", ["input_ids"], "emb/seq_len", start=1, end=2)
    positions = g.op("Slice", [pos_table, zero_1d, seq_len, zero_1d], "emb/positions")
    types = g.op("Gather", [type_table, "token_type_ids"], "emb/types")
    summed = g.op("Add", [g.op("Add", [words, positions], "emb/words_pos"), types], "emb/sum")
    x = layer_norm(summed, "embeddings.LayerNorm", "emb/out")

    if fused:
        # The fused Attention takes the raw [batch, seq] 0/1 mask as int32.
        mask_int = g.op("Cast", ["attention_mask"], "mask/int32", to=TensorProto.INT32)
    else:
        # Additive mask [batch, 1, 1, seq]: 0 where attended, very negative on padding.
        mask_f = g.op("Cast", ["attention_mask"], "mask/float", to=TensorProto.FLOAT)
        mask_4d = g.op("Unsqueeze", [mask_f, mask_axes], "mask/4d")
        mask_bias = g.op("Mul", [g.op("Sub", [one, mask_4d], "mask/inverted"), mask_min], "mask/bias")

    for i in range(config.num_hidden_layers):
        p = f"encoder.layer.{i}"
        n = f"layer{i}"
        context = attention(x, f"{p}.attention.self", f"{n}/attn")
        x = dense_residual_norm(
            context, f"{p}.attention.output.dense", x, f"{p}.attention.output.LayerNorm", f"{n}/attn_out"
        )
        inter = gelu(x, f"{p}.intermediate.dense", f"{n}/inter")
        is_last = i == config.num_hidden_layers - 1
        x = dense_residual_norm(
            inter, f"{p}.output.dense", x, f"{p}.output.LayerNorm", "last_hidden_state" if is_last else f"{n}/ffn_out"
        )

    outputs = [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", hidden])]
    if pooled:
        # Mean pooling over the mask, then L2 normalisation (the host's eps: 1e-12).
        weights = g.op("Cast", ["attention_mask"], "pool/weights", to=TensorProto.FLOAT)
        last_axis = g.const("const/last_axis", np.array([2], np.int64))
        per_token = g.op("Unsqueeze", [weights, last_axis], "pool/per_token")
        seq_axis = g.const("const/seq_axis", np.array([1], np.int64))
        summed = g.op("ReduceSum", [g.op("Mul", [x, per_token], "pool/masked"), seq_axis], "pool/sum", keepdims=0)
        counted = g.op("ReduceSum", [weights, seq_axis], "pool/count", keepdims=1)
        mean = g.op("Div", [summed, counted], "pool/mean")
        norm = g.op("ReduceL2", [mean], "pool/norm", axes=[1], keepdims=1)
        floor = g.const("const/norm_floor", np.array(1e-12, np.float32))
        g.op("Div", [mean, g.op("Max", [norm, floor], "pool/norm_floored")], MEAN_POOLED)
        outputs.append(helper.make_tensor_value_info(MEAN_POOLED, TensorProto.FLOAT, ["batch", hidden]))

    inputs = [
        helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "sequence"])
        for name in ("input_ids", "attention_mask", "token_type_ids")
    ]
    graph = helper.make_graph(
        g.nodes,
        "bert_encoder",
        inputs,
        outputs,
        initializer=g.initializers,
    )
    opsets = [helper.make_opsetid("", _OPSET)] + ([helper.make_opsetid(_CONTRIB, 1)] if fused else [])
    model = helper.make_model(graph, opset_imports=opsets, producer_name="memlane")
    model.ir_version = _IR_VERSION
    return model


def half_precision(model: ModelProto) -> ModelProto:
    """``model`` (an fp32 graph from :func:`build_bert_onnx`) with its weights and activations in
    fp16, inputs and outputs as they were: what a GPU runs on its fp16 units.

    onnxruntime's own converter does it. The mean pooling stays fp32 (a sum over up to 256
    tokens, then a norm): only the encoder's rounding reaches the vectors. With every activation
    rounded to fp16 and fp32 arithmetic inside each operator (how the CUDA provider computes),
    vectors stay within cosine 0.99999 of the fp32 ones and recall on LoCoMo dev is unchanged
    (benches/LOG.md, "fp16 on a GPU").

    Example:
        >>> from memlane.embed.weights import minilm_dir
        >>> config = BertConfig.from_json(minilm_dir() / "config.json")
        >>> model = build_bert_onnx(read_safetensors(minilm_dir() / "model.safetensors"), config, pooled=True)
        >>> half = half_precision(model)
        >>> from onnx import TensorProto
        >>> {i.data_type for i in half.graph.initializer if i.name.endswith(".weight_t")} == {TensorProto.FLOAT16}
        True
        >>> [o.type.tensor_type.elem_type for o in half.graph.output] == [TensorProto.FLOAT] * 2
        True
    """
    from onnx import ModelProto as Model
    from onnxruntime.transformers.float16 import convert_float_to_float16

    # The converter rounds even the outputs of nodes it is told to leave alone, so the pooling
    # is taken out, the encoder converted (its last_hidden_state output cast back to fp32), and
    # the pooling put back, fp32 throughout.
    encoder = Model()
    encoder.CopyFrom(model)
    graph = encoder.graph
    pooling = [node for node in graph.node if node.name.startswith("pool/") or node.name == MEAN_POOLED]
    encoder_inputs = {name for node in graph.node if node not in pooling for name in node.input}
    pooling_consts = [i for i in graph.initializer if i.name not in encoder_inputs]
    pooled = [o for o in graph.output if o.name == MEAN_POOLED]
    for removed, field in ((pooling, graph.node), (pooling_consts, graph.initializer), (pooled, graph.output)):
        for item in removed:
            field.remove(item)
    # Values beyond fp16's range are clamped to it: the attention mask's most negative float
    # becomes -65504, which still leaves a padded token no weight after the softmax.
    half: ModelProto = convert_float_to_float16(encoder, keep_io_types=True)
    half.graph.node.extend(pooling)
    half.graph.initializer.extend(pooling_consts)
    half.graph.output.extend(pooled)
    return half


def quantize_bert_onnx(model: ModelProto, out: Path, keep_fp32: Sequence[str] = ()) -> None:
    """Write ``model`` (a ``fused`` graph) with int8 matrix products, dynamically quantised.

    onnxruntime's quantiser stores the weights as int8 per output channel and quantises the
    activations of each batch on the fly (``DynamicQuantizeMatMul``, ``QAttention``).

    Args:
        model: A graph from :func:`build_bert_onnx` with ``fused=True``.
        out: The ``.onnx`` file to write.
        keep_fp32: Names of ``MatMul`` nodes left in fp32 (e.g. ``"layer0/ffn_out/matmul"``):
            products whose inputs have outlier channels that one int8 range per batch resolves poorly.

    Raises:
        memlane.errors.InvalidArgumentError: If a name in ``keep_fp32`` is not a ``MatMul`` of the graph.

    Example:
        >>> from memlane.embed.weights import minilm_dir
        >>> tensors = read_safetensors(minilm_dir() / "model.safetensors")
        >>> fused = build_bert_onnx(tensors, BertConfig.from_json(minilm_dir() / "config.json"), fused=True)
        >>> quantize_bert_onnx(fused, Path("q.onnx"), keep_fp32=["layer9/ffn_out/matmul"])
        Traceback (most recent call last):
        memlane.errors.InvalidArgumentError: no MatMul named layer9/ffn_out/matmul in the graph
    """
    from onnx import TensorProto
    from onnxruntime.quantization import QuantType, quantize_dynamic

    products = {node.name for node in model.graph.node if node.op_type in ("MatMul", "Attention")}
    if unknown := sorted(set(keep_fp32) - products):
        raise InvalidArgumentError(f"no MatMul named {', '.join(unknown)} in the graph")
    # The quantiser logs a hint on the root logger (to run its pre-processing, which fits static
    # quantisation) that a user building the graph should not see.
    logging.disable(logging.WARNING)
    try:
        quantize_dynamic(
            model,
            str(out),
            op_types_to_quantize=["MatMul", "Attention"],
            nodes_to_exclude=list(keep_fp32),
            per_channel=True,
            weight_type=QuantType.QInt8,
            # The fused operators carry no type information the quantiser's shape inference can read.
            extra_options={"DefaultTensorType": TensorProto.FLOAT},
        )
    finally:
        logging.disable(logging.NOTSET)


def default_model_dir() -> Path:
    """Where built models are cached: the ``models`` folder of memlane's shared cache.

    Returns:
        ``$MEMLANE_CACHE_DIR/models`` if set, else ``${XDG_CACHE_HOME:-~/.cache}/memlane/models``.

    Example:
        >>> default_model_dir() == default_cache_dir() / "models"
        True
    """
    return default_cache_dir() / "models"


def file_fingerprint(path: Path, cache_dir: Path, salt: str) -> str:
    """Hash of a file's bytes and ``salt``, memoised by (path, size, mtime, salt).

    Hashing the weights on every `memlane search` would cost a noticeable part of a second; a
    reinstall changes size or mtime, so the memo never hides a changed model.

    Example:
        >>> from memlane.embed.weights import minilm_dir
        >>> file_fingerprint(minilm_dir() / "config.json", default_model_dir(), "memlane-weights-v1")
        'c9214979f6621b99'
    """
    return _memoised_digest(path, cache_dir, salt)[:16]


def file_sha256(path: Path, cache_dir: Path) -> str:
    """The plain sha256 (hex) of a file's bytes, memoised like :func:`file_fingerprint`.

    Example:
        >>> from memlane.embed.weights import PINNED_SHA256, minilm_dir
        >>> file_sha256(minilm_dir() / "config.json", default_model_dir()) == PINNED_SHA256["config.json"]
        True
    """
    return _memoised_digest(path, cache_dir, None)


def _memoised_digest(path: Path, cache_dir: Path, salt: str | None) -> str:
    """sha256 hex of ``salt`` + NUL + the file's bytes (of the bytes alone if ``salt`` is None)."""
    st = path.stat()
    key = f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}|{salt if salt is not None else 'sha256'}"
    memo = cache_dir / "fingerprints.json"
    try:
        known = json.loads(memo.read_text())
    except (OSError, ValueError):
        known = {}
    cached = known.get(key) if isinstance(known, dict) else None
    if isinstance(cached, str):
        return cached
    digest = hashlib.sha256(f"{salt}\0".encode() if salt is not None else b"")
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    value = digest.hexdigest()
    known = {**(known if isinstance(known, dict) else {}), key: value}
    cache_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".fingerprints.", suffix=".tmp", dir=cache_dir)
    with os.fdopen(fd, "w") as f:
        json.dump(known, f)
    os.replace(tmp, memo)
    return value


def ensure_bert_onnx(
    model_dir: str | os.PathLike[str],
    name: str,
    cache_dir: str | os.PathLike[str] | None = None,
    *,
    quantize: bool = False,
    keep_fp32: Sequence[str] = (),
    half: bool = False,
) -> Path:
    """Return the cached ONNX graph for a safetensors BERT model, building it on first use.

    The cache file name carries a hash of the weights and the builder version (for the int8
    graph also the fp32 products and the onnxruntime version, whose quantiser writes it),
    so a changed model or builder never reuses a stale graph. The graph and its weights
    (:func:`weights_file`) are written in a temporary folder and renamed into place, the weights
    first, so concurrent builders and interrupted builds never leave a partial file behind (a
    killed build's folder is removed by a later build). A graph written whole, as memlane wrote
    them before, has its weights moved beside it rather than being built again.

    Args:
        model_dir: Directory holding ``model.safetensors`` and ``config.json``.
        name: Human-readable model name used as the cache file's prefix.
        cache_dir: Cache directory; defaults to :func:`default_model_dir`.
        quantize: Build the int8 graph (:func:`quantize_bert_onnx`) instead of the fp32 one (which
            also has the :data:`MEAN_POOLED` output a GPU fetches).
        keep_fp32: With ``quantize``, the ``MatMul`` nodes left in fp32.
        half: Build the fp32 graph's fp16 form (:func:`half_precision`), for a GPU.

    Returns:
        Path of the ``.onnx`` file (its weights: :func:`weights_file`).

    Example:
        >>> from memlane.embed.weights import minilm_dir
        >>> ensure_bert_onnx(minilm_dir(), "all-MiniLM-L6-v2").name  # doctest: +ELLIPSIS
        'all-MiniLM-L6-v2-fp32-....onnx'
    """
    model_dir = Path(model_dir)
    weights = model_dir / "model.safetensors"
    target_dir = Path(cache_dir) if cache_dir is not None else default_model_dir()
    salt = f"memlane-bert-onnx-v{BUILDER_VERSION}"
    if quantize and half:
        raise InvalidArgumentError("a graph is either quantised (q8) or fp16, not both")
    salt += f"|q8|{','.join(keep_fp32)}" if quantize else f"|{MEAN_POOLED}" + ("|fp16" if half else "")
    if quantize or half:  # onnxruntime's quantiser or converter writes it
        import onnxruntime

        salt += f"|onnxruntime-{onnxruntime.__version__}"
    fingerprint = file_fingerprint(weights, target_dir, salt)
    kind = "q8" if quantize else "fp16" if half else "fp32"
    target = target_dir / f"{name}-{kind}-{fingerprint}.onnx"
    if target.is_file() and weights_file(target).is_file():
        return target

    # A graph an older memlane wrote whole only has its weights moved beside it (0.1 s, where
    # building the q8 graph again takes seconds: a hook's deadline may not leave them).
    whole = _written_whole(target)
    try:
        target_dir.mkdir(parents=True, exist_ok=True)
        _remove_killed_builds(target)
        work = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target_dir))
        try:
            model = whole or _build(model_dir, work, quantize=quantize, keep_fp32=keep_fp32, half=half)
            _save_with_weights_beside(model, work / target.name)
            # The weights first: a graph in place always finds its weights beside it.
            for built in (weights_file(work / target.name), work / target.name):
                with open(built, "rb+") as f:
                    os.fsync(f.fileno())
                os.replace(built, target_dir / built.name)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    except OSError:
        if whole is None:
            raise
        # A cache this process cannot write (read-only, full) still serves that graph as it is.
    return target


def _build(model_dir: Path, work: Path, *, quantize: bool, keep_fp32: Sequence[str], half: bool) -> ModelProto:
    """The graph :func:`ensure_bert_onnx` caches, built from ``model_dir``'s weights (``work``: a
    scratch folder for the quantiser, which writes a file)."""
    # Checkpoints saved from a task model (BertForMaskedLM, ...) prefix the encoder's weights with "bert.".
    tensors = {k.removeprefix("bert."): v for k, v in read_safetensors(model_dir / "model.safetensors").items()}
    model = build_bert_onnx(
        tensors, BertConfig.from_json(model_dir / "config.json"), fused=quantize, pooled=not quantize
    )
    if half:
        model = half_precision(model)
    if quantize:
        import onnx

        quantize_bert_onnx(model, work / "quantized.onnx", keep_fp32)
        model = onnx.load(work / "quantized.onnx")
    return model


def _written_whole(graph: Path) -> ModelProto | None:
    """The graph at ``graph`` if it holds its weights itself, as memlane wrote its graphs before
    their weights moved beside them; None if there is none or it refers to a weights file."""
    import onnx

    if not graph.is_file():
        return None
    try:
        model = onnx.load(graph, load_external_data=False)
    except Exception:  # protobuf's DecodeError and onnx's own: a damaged graph is built again
        return None
    if any(t.data_location == onnx.TensorProto.EXTERNAL for t in model.graph.initializer):
        return None
    return model


def _remove_killed_builds(target: Path) -> None:
    """Remove what builds of ``target`` killed mid-way left: a hook past its deadline ends its
    process at once. Older than :data:`_KILLED_BUILD_S`, so never a live builder's folder."""
    for left in target.parent.glob(f".{glob.escape(target.name)}.*"):
        with contextlib.suppress(OSError):
            if time.time() - left.stat().st_mtime <= _KILLED_BUILD_S:
                continue
            if left.is_dir():
                shutil.rmtree(left)
            else:  # a temporary file of the whole graphs memlane wrote before
                left.unlink()


def weights_file(graph: Path) -> Path:
    """The file beside a graph built by :func:`ensure_bert_onnx` that holds its weights.

    Example:
        >>> weights_file(Path("models/all-MiniLM-L6-v2-q8-0123.onnx")).name
        'all-MiniLM-L6-v2-q8-0123.onnx.data'
    """
    return graph.with_name(graph.name + ".data")


def _save_with_weights_beside(model: ModelProto, path: Path) -> None:
    """Write ``model`` to ``path`` with its weights in :func:`weights_file`.

    onnxruntime memory-maps weights kept outside the graph's protobuf instead of parsing and
    copying them out of it: a session of the q8 graph (64 MB, 47 of them the word embeddings)
    opens in ~10 ms instead of ~55, which every process that embeds a query pays (benches/LOG.md,
    "The model's weights beside its graph"), and the processes on one machine share the pages.
    """
    import onnx

    onnx.save_model(
        model, path, save_as_external_data=True, all_tensors_to_one_file=True, location=weights_file(path).name
    )
