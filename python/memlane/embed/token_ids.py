"""Token ids of many texts at once, the plain ASCII parts tokenised by the core.

The tokenizers library's ``BertNormalizer`` and ``BertPreTokenizer`` keep every byte's
alignment to the original text through each step: that bookkeeping was most of what feeding a
GPU cost the host. For a BERT tokenizer (that normaliser, that pre-tokenizer, a ``WordPiece``
model, added tokens matched in the raw text), :class:`memlane._core.WordPiece` gives the ids of
each text's whitespace-separated parts of printable ASCII, on every core without the GIL, and
hands back the other parts (accents, CJK, control characters), each run of them as one span,
for the library to encode; a text naming an added token (``[MASK]``) goes to the library whole.
The ids are the library's own (the core's module docs say why). Any other tokenizer takes the
library for everything. Only ids come back, never offsets.

Example:
    >>> from tokenizers import Tokenizer
    >>> from memlane.embed.weights import minilm_dir
    >>> tokenizer = Tokenizer.from_file(str(minilm_dir() / "tokenizer.json"))
    >>> texts = ["Hello World", "Grüße, World", "a [MASK] b"]
    >>> [ids.tolist() for ids in TokenIds(tokenizer)(texts)] == [
    ...     e.ids for e in tokenizer.encode_batch(texts, add_special_tokens=False)]
    True
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from memlane import _core

__all__ = ["TokenIds"]


class TokenIds:
    """Token ids (no special tokens) of texts, as int64 arrays: the core's for plain ASCII parts
    of a BERT tokenizer's texts, else ``tokenizer``'s ``encode_batch_fast`` (which releases the
    GIL, tokenises a list on every core and tracks no offsets)."""

    def __init__(self, tokenizer: Any) -> None:
        self._tokenizer = tokenizer
        self._wordpiece = _wordpiece(json.loads(tokenizer.to_str()))

    def __call__(self, texts: Sequence[str]) -> list[np.ndarray]:
        if self._wordpiece is None:
            return [_array(e.ids) for e in self._library(list(texts))]
        encoded = self._wordpiece.encode(list(texts))
        library = iter(self._library([span for _, spans in encoded for _, span in spans]))
        out = []
        for ids, spans in encoded:
            if spans:
                pieces, start = [], 0
                for at, _ in spans:
                    pieces += [ids[start:at], _array(next(library).ids)]
                    start = at
                pieces.append(ids[start:])
                ids = np.concatenate(pieces)
            out.append(ids)
        return out

    def _library(self, texts: list[str]) -> list[Any]:
        return self._tokenizer.encode_batch_fast(texts, add_special_tokens=False) if texts else []


def _array(ids: list[int]) -> np.ndarray:
    return np.array(ids, dtype=np.int64)


def _wordpiece(config: dict[str, Any]) -> _core.WordPiece | None:
    """The core's tokeniser for a tokenizer.json that describes BERT's, else None."""
    normalizer, model = config.get("normalizer") or {}, config.get("model") or {}
    if (
        # The library would truncate or pad each span it is handed as if it were a text.
        config.get("truncation")
        or config.get("padding")
        or normalizer.get("type") != "BertNormalizer"
        or (config.get("pre_tokenizer") or {}).get("type") != "BertPreTokenizer"
        or model.get("type") != "WordPiece"
        or model.get("unk_token") not in model.get("vocab", {})
        # A normalised added token is matched in the lowercased, accent-stripped text, which the
        # core does not build; BERT's are all matched in the raw text.
        or any(token.get("normalized") for token in config.get("added_tokens") or [])
    ):
        return None
    return _core.WordPiece(
        model["vocab"],
        model["unk_token"],
        model.get("continuing_subword_prefix", "##"),
        model.get("max_input_chars_per_word", 100),
        bool(normalizer.get("lowercase", True)),
        [token["content"] for token in config.get("added_tokens") or []],
    )
