"""Token ids of many texts at once, plain ASCII ones without the cost of BERT's normaliser.

``BertNormalizer`` (clean the text, split CJK characters, strip accents through an NFD pass,
lowercase) keeps every character's alignment to the original through each step, which is a
third of what tokenising transcripts costs. On ASCII text without control characters other
than tab and line breaks, all it does is lowercase (tab and line breaks become spaces, which the
pre-tokenizer splits on exactly as on them): such texts are lowercased in Python and tokenised
by a copy of the tokenizer without a normaliser, giving the same ids. The rest, and texts that
name one of the tokenizer's added tokens (``[MASK]`` is matched before normalising, so
lowercasing first would change it), take the tokenizer as it is. Only ids come back, never
offsets, which would be those of the lowercased text.

Example:
    >>> from tokenizers import Tokenizer
    >>> from memlane.embed.weights import minilm_dir
    >>> tokenizer = Tokenizer.from_file(str(minilm_dir() / "tokenizer.json"))
    >>> ids = TokenIds(tokenizer)(["Hello World", "Grüße", "a [MASK] b"])
    >>> ids == [e.ids for e in tokenizer.encode_batch(["Hello World", "Grüße", "a [MASK] b"], add_special_tokens=False)]
    True
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

__all__ = ["TokenIds"]

# ASCII control characters BertNormalizer deletes (tab, line feed and carriage return it turns into spaces).
_DELETED = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


class TokenIds:
    """Token ids (no special tokens) of texts, through ``tokenizer``'s ``encode_batch_fast``,
    which releases the GIL, tokenises a list on every core and tracks no offsets."""

    def __init__(self, tokenizer: Any) -> None:
        self._tokenizer = tokenizer
        self._plain: Any = None
        normalizer = json.loads(tokenizer.to_str()).get("normalizer") or {}
        if normalizer.get("type") == "BertNormalizer":
            from tokenizers import Tokenizer

            self._plain = Tokenizer.from_str(tokenizer.to_str())
            self._plain.normalizer = None
            self._lowercase = bool(normalizer.get("lowercase"))
            self._added = [t.content.lower() for t in tokenizer.get_added_tokens_decoder().values()]

    def __call__(self, texts: Sequence[str]) -> list[list[int]]:
        if self._plain is None:
            return [e.ids for e in self._tokenizer.encode_batch_fast(list(texts), add_special_tokens=False)]
        plain: list[int] = []
        plain_texts: list[str] = []
        full: list[int] = []
        for i, text in enumerate(texts):
            if text.isascii() and not _DELETED.search(text):
                lowered = text.lower()
                if not any(token in lowered for token in self._added):
                    plain.append(i)
                    plain_texts.append(lowered if self._lowercase else text)
                    continue
            full.append(i)
        ids: list[list[int]] = [[] for _ in texts]
        for rows, tokenizer, batch in (
            (plain, self._plain, plain_texts),
            (full, self._tokenizer, [texts[i] for i in full]),
        ):
            if rows:
                for row, encoding in zip(rows, tokenizer.encode_batch_fast(batch, add_special_tokens=False)):
                    ids[row] = encoding.ids
        return ids
