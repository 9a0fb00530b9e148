"""Read a sentence-embedding model directory ("bring your own model") for the local embedder.

A directory works if it holds ``tokenizer.json`` (Hugging Face ``tokenizers`` format) and
either ``model.onnx`` / ``onnx/model.onnx`` (any encoder with ``input_ids`` and
``attention_mask`` inputs and a ``[batch, sequence, hidden]`` output) or a BERT
``model.safetensors`` with its ``config.json`` (turned into ONNX once by
:mod:`memlane.embed._bert_onnx`). That is the layout sentence-transformers saves and the Hub
serves, e.g. ``BAAI/bge-small-en-v1.5`` or ``sentence-transformers/all-MiniLM-L6-v2``.

What sentence-transformers would do is read from its own files:

* pooling: the ``Pooling`` module named in ``modules.json`` (else ``1_Pooling/``), its
  ``config.json`` choosing CLS or mean pooling; mean when there is none (its default for a
  bare transformer);
* longest sequence: ``max_seq_length`` of ``sentence_bert_config.json``, capped by
  ``max_position_embeddings`` of ``config.json``.

A ``Normalize`` module in ``modules.json`` needs no reading: memlane always returns unit
vectors, since its indexes rank by cosine, which normalising does not change.

Example (the built-in all-MiniLM-L6-v2's files are such a directory):
    >>> from memlane.embed.weights import minilm_dir
    >>> model = ModelDir.read(minilm_dir())
    >>> model.name, model.pooling, model.max_tokens
    ('sentence-transformers__all-MiniLM-L6-v2', 'mean', 256)
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memlane.errors import InvalidArgumentError, InvalidDataError

POOLINGS = ("mean", "cls")
_ONNX_CANDIDATES = ("model.onnx", "onnx/model.onnx")
# Pooling modes sentence-transformers knows that memlane does not implement.
_OTHER_POOLING_KEYS = (
    "pooling_mode_max_tokens",
    "pooling_mode_mean_sqrt_len_tokens",
    "pooling_mode_weightedmean_tokens",
    "pooling_mode_lasttoken",
)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InvalidDataError(f"{path}: not readable JSON ({exc})") from None


def _pooling(root: Path) -> str:
    folder = root / "1_Pooling"
    modules = root / "modules.json"
    if modules.is_file():
        for module in _read_json(modules):
            if str(module.get("type", "")).endswith(".Pooling"):
                folder = root / module.get("path", "")
    config_path = folder / "config.json"
    if not config_path.is_file():
        return "mean"
    config = _read_json(config_path)
    chosen = [
        name
        for name, key in (("cls", "pooling_mode_cls_token"), ("mean", "pooling_mode_mean_tokens"))
        if config.get(key)
    ]
    others = [key for key in _OTHER_POOLING_KEYS if config.get(key)]
    if others or len(chosen) != 1:
        raise InvalidDataError(
            f"{config_path}: pooling {', '.join(others + chosen) or 'none'} is not supported; "
            "the local embedder pools by CLS token or by mean, one of them"
        )
    return chosen[0]


def _max_tokens(root: Path) -> int:
    limits = []
    st_config = root / "sentence_bert_config.json"
    if st_config.is_file() and (value := _read_json(st_config).get("max_seq_length")):
        limits.append(int(value))
    hf_config = root / "config.json"
    if hf_config.is_file() and (value := _read_json(hf_config).get("max_position_embeddings")):
        limits.append(int(value))
    if not limits:
        raise InvalidDataError(
            f"{root}: cannot tell the model's longest sequence; add config.json (max_position_embeddings) "
            "or sentence_bert_config.json (max_seq_length)"
        )
    return min(limits)


def _file_digest(path: Path) -> str:
    # Memoised by (path, size, mtime): hashing hundreds of MB of weights on every start is too slow.
    from memlane.embed._bert_onnx import default_model_dir, file_fingerprint

    return file_fingerprint(path, default_model_dir(), salt="memlane-weights-v1")


@dataclass(frozen=True)
class ModelDir:
    """A local sentence-embedding model: where its files are and how it pools.

    Attributes:
        path: The directory.
        name: Its folder name, shown in the embedder id.
        tokenizer: ``tokenizer.json``.
        weights: ``model.onnx`` (preferred) or ``model.safetensors``.
        pooling: ``"mean"`` or ``"cls"``.
        max_tokens: Longest sequence the model takes, special tokens included.

    Example:
        >>> ModelDir.read("/no/such/dir")
        Traceback (most recent call last):
        memlane.errors.InvalidArgumentError: model directory /no/such/dir does not exist
    """

    path: Path
    name: str
    tokenizer: Path
    weights: Path
    pooling: str
    max_tokens: int

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> ModelDir:
        """Inspect a model directory (reads small JSON files only, no weights).

        Args:
            path: The directory.

        Returns:
            The model description.

        Raises:
            memlane.errors.InvalidArgumentError: If the directory does not exist.
            memlane.errors.InvalidDataError: If a file is missing or unreadable, or the pooling is not CLS or mean.
        """
        root = Path(path).expanduser()
        if not root.is_dir():
            raise InvalidArgumentError(f"model directory {root} does not exist")
        tokenizer = root / "tokenizer.json"
        if not tokenizer.is_file():
            raise InvalidDataError(f"{root}: no tokenizer.json (a Hugging Face tokenizers file) in the model directory")
        onnx = [root / c for c in _ONNX_CANDIDATES if (root / c).is_file()]
        if onnx:
            weights = onnx[0]
        elif (root / "model.safetensors").is_file() and (root / "config.json").is_file():
            weights = root / "model.safetensors"
        else:
            raise InvalidDataError(
                f"{root}: no model.onnx (or onnx/model.onnx), nor model.safetensors with config.json, in the model directory"
            )
        return cls(
            path=root,
            # The Hub's layout keeps exports in <model>/onnx/: name the model, not the folder.
            name=root.resolve().parent.name if root.resolve().name == "onnx" else root.resolve().name,
            tokenizer=tokenizer,
            weights=weights,
            pooling=_pooling(root),
            max_tokens=_max_tokens(root),
        )

    def onnx_path(self) -> Path:
        """The ONNX file to run: ``weights`` itself, or the graph built (once, cached) from safetensors."""
        if self.weights.suffix == ".onnx":
            return self.weights
        from memlane.embed._bert_onnx import ensure_bert_onnx

        try:
            return ensure_bert_onnx(self.path, self.name)
        except KeyError as exc:
            raise InvalidDataError(
                f"{self.weights}: not a BERT encoder (no weight {exc}); give an ONNX export (model.onnx) instead"
            ) from None

    def fingerprint(self) -> str:
        """Hash of everything that shapes the vectors: weights, tokenizer, pooling, longest sequence.

        Example:
            >>> from memlane.embed.weights import minilm_dir
            >>> ModelDir.read(minilm_dir()).fingerprint()
            '0608a0fa2953'
        """
        parts = [_file_digest(self.weights), _file_digest(self.tokenizer), self.pooling, str(self.max_tokens)]
        return hashlib.sha256("|".join(parts).encode()).hexdigest()[:12]
