"""Bring your own model: a sentence-embedding model directory read by the local embedder.

Every model here is a tiny random BERT made in the test (safetensors or ONNX, a WordPiece
tokenizer.json built with the tokenizers library), checked against a plain numpy forward pass.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import generic_session, write_jsonl
from test_embed_local import _write_safetensors, numpy_bert_forward

import memlane
from memlane.cli import main
from memlane.embed import make_embedder
from memlane.embed.local import LocalEmbedder
from memlane.embed.model_dir import ModelDir
from memlane.errors import EmbedderMismatchError

WORDS = [
    "the",
    "a",
    "deploy",
    "failed",
    "with",
    "exit",
    "code",
    "oom",
    "pod",
    "memory",
    "limit",
    "billing",
    "database",
    "postgres",
    "runs",
    "on",
    "since",
    "march",
    "pasta",
    "boil",
    "minutes",
    "sauce",
    "garlic",
    "basil",
    "why",
    "did",
    "what",
    "which",
    "how",
    "long",
    "should",
    "and",
    "about",
    "for",
]
CONFIG = {
    "model_type": "bert",
    "hidden_size": 16,
    "num_attention_heads": 2,
    "num_hidden_layers": 2,
    "intermediate_size": 32,
    "max_position_embeddings": 40,
    "type_vocab_size": 2,
    "hidden_act": "gelu",
    "layer_norm_eps": 1e-12,
}
TEXTS = ["why did the deploy fail", "pasta", "", "billing runs on postgres since march " * 10]


def tiny_weights(seed: int, vocab_size: int, prefix: str = "") -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    h, inter = CONFIG["hidden_size"], CONFIG["intermediate_size"]

    def r(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.5).astype(np.float32)

    w = {
        "embeddings.word_embeddings.weight": r(vocab_size, h),
        "embeddings.position_embeddings.weight": r(CONFIG["max_position_embeddings"], h),
        "embeddings.token_type_embeddings.weight": r(CONFIG["type_vocab_size"], h),
        "embeddings.LayerNorm.weight": 1 + r(h) * 0.2,
        "embeddings.LayerNorm.bias": r(h) * 0.2,
    }
    for i in range(CONFIG["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        for name, (rows, cols) in {
            "attention.self.query": (h, h), "attention.self.key": (h, h), "attention.self.value": (h, h),
            "attention.output.dense": (h, h), "intermediate.dense": (inter, h), "output.dense": (h, inter),
        }.items():  # fmt: skip
            w[p + name + ".weight"] = r(rows, cols)
            w[p + name + ".bias"] = r(rows) * 0.2
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            w[p + norm + ".weight"] = 1 + r(h) * 0.2
            w[p + norm + ".bias"] = r(h) * 0.2
    return {prefix + k: v for k, v in w.items()}


def make_model_dir(
    root: Path,
    *,
    pooling: str = "mean",
    seed: int = 0,
    onnx: bool = False,
    max_seq_length: int | None = None,
    weight_prefix: str = "",
) -> Path:
    """A sentence-transformers style directory holding a tiny random BERT."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    root.mkdir(parents=True)
    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS, "##s", "##ed", "##ing"])}
    tokenizer = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    tokenizer.save(str(root / "tokenizer.json"))
    (root / "config.json").write_text(json.dumps({**CONFIG, "vocab_size": len(vocab)}))
    weights = tiny_weights(seed, len(vocab), weight_prefix)
    if onnx:
        import onnx as onnx_lib

        from memlane.embed._bert_onnx import BertConfig, build_bert_onnx

        onnx_lib.save_model(
            build_bert_onnx(weights, BertConfig.from_json(root / "config.json")), str(root / "model.onnx")
        )
    else:
        _write_safetensors(root / "model.safetensors", weights)
    (root / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
    ]))  # fmt: skip
    (root / "1_Pooling").mkdir()
    (root / "1_Pooling" / "config.json").write_text(json.dumps({
        "word_embedding_dimension": CONFIG["hidden_size"],
        "pooling_mode_cls_token": pooling == "cls",
        "pooling_mode_mean_tokens": pooling == "mean",
        "pooling_mode_max_tokens": pooling == "max",
        "pooling_mode_mean_sqrt_len_tokens": False,
    }))  # fmt: skip
    if max_seq_length is not None:
        (root / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": max_seq_length}))
    return root


def expected_vectors(emb: LocalEmbedder, model_dir: Path, text: str, pooling: str) -> np.ndarray:
    """What the model should give for ``text``: numpy forward pass per window, pooled, unit rows."""
    from memlane.embed._bert_onnx import read_safetensors

    weights = {k.removeprefix("bert."): v for k, v in read_safetensors(model_dir / "model.safetensors").items()}
    config = json.loads((model_dir / "config.json").read_text())
    rows = []
    for window in emb._windows([text])[0]:
        hidden = numpy_bert_forward(weights, config, window)
        pooled = hidden[0] if pooling == "cls" else hidden.mean(axis=0)
        rows.append(pooled / np.linalg.norm(pooled))
    return np.array(rows)


@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_pooling_matches_a_numpy_forward_pass(tmp_path: Path, pooling: str) -> None:
    model_dir = make_model_dir(tmp_path / "tiny-bert", pooling=pooling)
    emb = make_embedder(f"local:{model_dir}")
    assert isinstance(emb, LocalEmbedder)
    assert (emb.pooling, emb.dim, emb.max_window_tokens, emb.mode) == (pooling, 16, 40, "dir")
    assert (emb._prefix, emb._suffix) == ([2], [3])
    vectors = emb.embed_documents(TEXTS)
    assert [v.shape[0] for v in vectors] == [1, 1, 1, 2]  # the long text needs two 40-token windows
    for text, got in zip(TEXTS, vectors):
        assert got.dtype == np.float32 and got.flags.c_contiguous
        np.testing.assert_allclose(got, expected_vectors(emb, model_dir, text, pooling), atol=1e-4)
    assert all(len(w) <= 40 for w in emb._windows([TEXTS[3]])[0])
    query = emb.embed_query("deploy failed")
    np.testing.assert_allclose(query, expected_vectors(emb, model_dir, "deploy failed", pooling)[0], atol=1e-4)


@pytest.mark.model
@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_same_vectors_as_sentence_transformers(tmp_path: Path, pooling: str) -> None:
    sentence_transformers = pytest.importorskip("sentence_transformers")
    model_dir = make_model_dir(tmp_path / "tiny-bert", pooling=pooling)
    # What transformers' AutoTokenizer needs besides tokenizer.json; memlane reads neither.
    (model_dir / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "BertTokenizerFast", "cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]",
        "unk_token": "[UNK]", "mask_token": "[MASK]", "model_max_length": 40,
    }))  # fmt: skip
    (model_dir / "2_Normalize").mkdir()
    reference = sentence_transformers.SentenceTransformer(str(model_dir), device="cpu")
    short = TEXTS[:3]  # one window each: sentence-transformers truncates where memlane windows
    expected = reference.encode(short, normalize_embeddings=True)
    got = np.stack([v[0] for v in make_embedder(f"local:{model_dir}").embed_documents(short)])
    np.testing.assert_allclose(got, expected, atol=1e-5)


def test_onnx_subfolder_is_named_after_its_model(tmp_path: Path) -> None:
    model_dir = make_model_dir(tmp_path / "bge-tiny" / "onnx", onnx=True)
    assert make_embedder(f"local:{model_dir}").id.startswith("local/bge-tiny@")


def test_cls_and_mean_give_different_vectors(tmp_path: Path) -> None:
    cls = make_embedder(f"local:{make_model_dir(tmp_path / 'a', pooling='cls')}")
    mean = make_embedder(f"local:{make_model_dir(tmp_path / 'b', pooling='mean')}")
    # Same weights (seed 0): only the pooling differs, and it reaches the vectors.
    assert np.abs(cls.embed_query(TEXTS[0]) - mean.embed_query(TEXTS[0])).max() > 1e-2


def test_task_checkpoint_weights_with_bert_prefix_load(tmp_path: Path) -> None:
    model_dir = make_model_dir(tmp_path / "mlm", weight_prefix="bert.")
    emb = make_embedder(f"local:{model_dir}")
    np.testing.assert_allclose(
        emb.embed_documents(TEXTS[:1])[0], expected_vectors(emb, model_dir, TEXTS[0], "mean"), atol=1e-4
    )


def test_onnx_directory_gives_the_same_vectors_as_safetensors(tmp_path: Path) -> None:
    from_safetensors = make_embedder(f"local:{make_model_dir(tmp_path / 'st')}")
    from_onnx = make_embedder(f"local:{make_model_dir(tmp_path / 'ox', onnx=True)}")
    assert from_onnx.onnx_path == tmp_path / "ox" / "model.onnx"
    for a, b in zip(from_safetensors.embed_documents(TEXTS), from_onnx.embed_documents(TEXTS)):
        np.testing.assert_allclose(a, b, atol=1e-5)


def test_id_encodes_name_weights_pooling_length_and_dimension(tmp_path: Path) -> None:
    base = make_model_dir(tmp_path / "tiny-bert")
    ident = make_embedder(f"local:{base}").id
    assert re.fullmatch(r"local/tiny-bert@[0-9a-f]{12}/16", ident), ident
    assert make_embedder(f"local:{base}").id == ident  # stable
    copy = shutil.copytree(base, tmp_path / "copy" / "tiny-bert")
    assert make_embedder(f"local:{copy}").id == ident  # identity is the content, not the location
    variants = [
        make_model_dir(tmp_path / "w" / "tiny-bert", seed=1),
        make_model_dir(tmp_path / "p" / "tiny-bert", pooling="cls"),
        make_model_dir(tmp_path / "l" / "tiny-bert", max_seq_length=24),
    ]
    ids = {make_embedder(f"local:{v}").id for v in variants}
    assert len(ids) == 3 and ident not in ids


def test_longest_sequence_from_the_configs(tmp_path: Path) -> None:
    assert ModelDir.read(make_model_dir(tmp_path / "a", max_seq_length=24)).max_tokens == 24
    assert ModelDir.read(make_model_dir(tmp_path / "b", max_seq_length=512)).max_tokens == 40  # capped by positions
    emb = make_embedder(f"local:{tmp_path / 'a'}")
    assert emb.max_window_tokens == 24
    assert all(len(w) <= 24 for w in emb._windows([TEXTS[3]])[0])


def test_pooling_defaults_to_mean_without_sentence_transformers_files(tmp_path: Path) -> None:
    model_dir = make_model_dir(tmp_path / "bare", pooling="cls")
    shutil.rmtree(model_dir / "1_Pooling")
    (model_dir / "modules.json").unlink()
    assert ModelDir.read(model_dir).pooling == "mean"


def test_embedders_of_one_model_share_one_session(tmp_path: Path) -> None:
    model_dir = make_model_dir(tmp_path / "m")
    assert LocalEmbedder(model_dir=model_dir)._session is LocalEmbedder(model_dir=model_dir)._session


@pytest.mark.parametrize(
    ("breakage", "message"),
    [
        (lambda d: (d / "tokenizer.json").unlink(), "no tokenizer.json"),
        (lambda d: (d / "model.safetensors").unlink(), "no model.onnx"),
        (
            lambda d: (d / "1_Pooling" / "config.json").write_text('{"pooling_mode_max_tokens": true}'),
            "pooling pooling_mode_max_tokens is not supported",
        ),
        (lambda d: (d / "1_Pooling" / "config.json").write_text("{oops"), "not readable JSON"),
        (
            lambda d: _write_safetensors(d / "model.safetensors", {"roberta.weight": np.ones(2, np.float32)}),
            "not a BERT encoder",
        ),
    ],
)
def test_unusable_directories_say_why_in_one_line(tmp_path: Path, breakage, message: str) -> None:
    model_dir = make_model_dir(tmp_path / "m")
    breakage(model_dir)
    with pytest.raises(ValueError, match=message) as info:
        make_embedder(f"local:{model_dir}")
    assert "\n" not in str(info.value)


def test_onnx_model_wanting_other_inputs_is_refused(tmp_path: Path) -> None:
    import onnx
    from onnx import TensorProto, helper

    model_dir = make_model_dir(tmp_path / "m")
    (model_dir / "model.safetensors").unlink()
    ids = helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["b", "s"])
    positions = helper.make_tensor_value_info("position_ids", TensorProto.INT64, ["b", "s"])
    out = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["b", "s", 1])
    nodes = [
        helper.make_node("Cast", ["input_ids"], ["ids_float"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["ids_float", "axis"], ["last_hidden_state"]),
    ]
    axis = helper.make_tensor("axis", TensorProto.INT64, [1], [2])
    graph = helper.make_graph(nodes, "g", [ids, positions], [out], initializer=[axis])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save_model(model, str(model_dir / "model.onnx"))
    with pytest.raises(ValueError, match="wants inputs position_ids"):
        make_embedder(f"local:{model_dir}")
    (model_dir / "model.onnx").write_bytes(b"not a model")
    with pytest.raises(ValueError, match="onnxruntime cannot load") as info:
        make_embedder(f"local:{model_dir}")
    assert "\n" not in str(info.value)
    (model_dir / "tokenizer.json").write_text("{}")
    with pytest.raises(ValueError, match="not a tokenizers file"):
        make_embedder(f"local:{model_dir}")


def test_unknown_local_spec(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="neither q8, fp32, int8 nor a model directory"):
        make_embedder(f"local:{tmp_path / 'missing'}")
    with pytest.raises(ValueError, match="mode applies to the built-in MiniLM only"):
        LocalEmbedder(mode="int8", model_dir=make_model_dir(tmp_path / "m"))


def test_memory_and_cli_use_a_model_directory_and_refuse_to_mix(tmp_path: Path, capsys) -> None:
    write_jsonl(
        tmp_path / "t" / "a.jsonl", generic_session("a", [("why did the deploy fail", "the pod hit its memory limit")])
    )
    mean_dir = make_model_dir(tmp_path / "mean")
    home = tmp_path / "home"
    assert main(["--home", str(home), "--json", "index", str(tmp_path / "t"), "--embed", f"local:{mean_dir}"]) == 0
    assert json.loads(capsys.readouterr().out)["chunks_embedded"] == 1
    mem = memlane.open(home, embedder=f"local:{mean_dir}")
    assert mem.status()["embedder_id"] == mem.embedder.id
    assert mem.search("deploy memory", k=1)[0].scores["vector"] is not None
    # Another model's vectors never land in this home.
    other = memlane.open(home, embedder=f"local:{make_model_dir(tmp_path / 'cls', pooling='cls')}")
    write_jsonl(tmp_path / "t" / "b.jsonl", generic_session("b", [("pasta", "boil it for nine minutes")]))
    with pytest.raises(EmbedderMismatchError):
        other.index([tmp_path / "t"])
    code = main(["--home", str(home), "index", str(tmp_path / "t"), "--embed", f"local:{tmp_path / 'nowhere'}"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "nowhere" in err
