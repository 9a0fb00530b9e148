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

:func:`read_text` is what the local embedder reads of a text (a run of ASCII marks as its
first); ``TokenIds(tokenizer, runs_as_first_mark=True)`` gives the ids of texts read so (the core
reads them itself, and hands back spans of the text as read).

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
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from memlane import _core

__all__ = ["TokenIds", "read_text", "read_with_positions"]

# What the local embedder reads of a text: an ASCII punctuation mark or symbol right after another
# is dropped, so that a run of them (``=======``, ``"]),``, ``-->``) reads as its first. Code and
# tool output are two-fifths marks, a word piece each, and their runs carry little the model can
# use: an agent transcript takes a seventh fewer windows, with recall unchanged (benches/LOG.md,
# "Fewer windows: a run of marks reads as one"). ASCII only: other scripts' marks include the
# combining vowel signs and tones of Thai or Devanagari, which are parts of words. The rule
# depends on the text alone, as vectors cached by content must, and queries are read the same way.
_MARK = r"!-/:-@\[-^`{-~"  # ASCII's printable characters but letters, digits, "_" and space
_MARK_RUNS = re.compile(f"(?<=[{_MARK}])[{_MARK}]+")


def read_text(text: str) -> str:
    """``text`` with each run of ASCII punctuation marks and symbols cut to its first (see
    ``_MARK_RUNS``).

    Example:
        >>> read_text('main(["--fast"])  # ok ====')
        'main(fast"  # ok ='
    """
    return _MARK_RUNS.sub("", text)


def read_with_positions(text: str) -> tuple[str, np.ndarray]:
    """:func:`read_text`'s reading of ``text``, and where each of its characters sits in ``text``
    (then ``len(text)``): maps offsets into the reading back to the text as written.

    Example:
        >>> read, at = read_with_positions("a==b")
        >>> read, at.tolist()
        ('a=b', [0, 1, 3, 4])
    """
    kept = np.ones(len(text) + 1, dtype=bool)
    pieces, start = [], 0
    for run in _MARK_RUNS.finditer(text):
        kept[run.start() : run.end()] = False
        pieces.append(text[start : run.start()])
        start = run.end()
    pieces.append(text[start:])
    return "".join(pieces), np.flatnonzero(kept)


class TokenIds:
    """Token ids (no special tokens) of texts, as int64 arrays: the core's for plain ASCII parts
    of a BERT tokenizer's texts, else ``tokenizer``'s ``encode_batch_fast`` (which releases the
    GIL, tokenises a list on every core and tracks no offsets). With ``runs_as_first_mark``, the
    ids of each text as :func:`read_text` reads it."""

    def __init__(self, tokenizer: Any, *, runs_as_first_mark: bool = False) -> None:
        self._tokenizer = tokenizer
        self._wordpiece = _wordpiece(json.loads(tokenizer.to_str()), runs_as_first_mark)
        self._runs_as_first_mark = runs_as_first_mark

    def __call__(self, texts: Sequence[str]) -> list[np.ndarray]:
        if self._wordpiece is None:
            read = [read_text(text) for text in texts] if self._runs_as_first_mark else list(texts)
            return [_array(e.ids) for e in self._library(read)]
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


def _wordpiece(config: dict[str, Any], runs_as_first_mark: bool) -> _core.WordPiece | None:
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
        runs_as_first_mark=runs_as_first_mark,
    )
