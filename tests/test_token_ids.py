"""Token ids from the core's WordPiece (memlane.embed.token_ids) are the tokenizers library's own:
fuzzed ASCII and mixed-script texts, the built-in MiniLM's vocabulary and the shared real
transcripts; tokenizers the core does not cover take the library for everything."""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_embed_local import long_text
from test_embed_model_dir import make_model_dir
from test_feed import texts

import memlane
from memlane import _core
from memlane.embed.token_ids import TokenIds, read_text

# Parts a text is made of: ASCII words and marks, words the library must take (accents, CJK,
# a combining mark, the Kelvin sign and dotted I that lowercase to ASCII, final sigma, full-width
# letters, an emoji, control characters, Unicode spaces), added tokens and a word over 100
# characters.
PARTS = [
    "deploy", "Failed", "CACHE", "retried", "src/app/main.py", "ERR_CONN_RESET", "##ing", "x=1;", "(a,b)",
    "café", "Grüße", "naïve", "中文", "e\u0301", "\u0301x", "\u212aelvin", "İstanbul", "ΟΔΟΣ", "ｆｕｌｌ", "😀",
    "a\x0bb", "\x1c", "\x00", "\x7f", "\ufffd", "\u00a0", "\u2028", "[MASK]", "[mask]", "[CLS]x", "a" * 120,
]  # fmt: skip
SEPARATORS = [" ", " ", "\t", "\n", "\r\n", "  ", ""]


def fuzz_texts(n: int) -> list[str]:
    """Short strings of every ASCII character, the tokenizer's added tokens, accents, CJK and odd spaces."""
    rng = random.Random(7)
    alphabet = [chr(i) for i in range(128)] + [
        "[MASK]",
        "[mask]",
        "[CLS]",
        "É",
        "ß",
        "中",
        "\u00a0",
        "\ufffd",
        "\u200b",
    ]
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(n)]


def mixed_texts(n: int) -> list[str]:
    """Texts of up to 60 parts, plain ASCII or not, joined by ASCII whitespace or nothing."""
    rng = random.Random(11)
    return ["".join(rng.choice(PARTS) + rng.choice(SEPARATORS) for _ in range(rng.randint(0, 60))) for _ in range(n)]


def library_ids(tokenizer: Any, batch: list[str], read: bool = False) -> list[list[int]]:
    """The library's ids of ``batch``, each text read as the local embedder reads it if ``read``."""
    batch = [read_text(text) for text in batch] if read else batch
    return [e.ids for e in tokenizer.encode_batch(batch, add_special_tokens=False)]


def core_ids(tokenizer: Any, batch: list[str], read: bool = False) -> list[list[int]]:
    token_ids = TokenIds(tokenizer, runs_as_first_mark=read)
    assert token_ids._wordpiece is not None, "a BERT tokenizer is tokenised by the core"
    return [ids.tolist() for ids in token_ids(batch)]


@pytest.mark.parametrize("read", [False, True])
@pytest.mark.parametrize("lowercase", [True, False])
def test_the_cores_ids_are_the_tokenizers_own(tmp_path: Path, lowercase: bool, read: bool) -> None:
    from tokenizers import Tokenizer, normalizers

    tokenizer = Tokenizer.from_file(str(make_model_dir(tmp_path / "tiny") / "tokenizer.json"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=lowercase)
    batch = fuzz_texts(3000) + mixed_texts(1000) + texts(50) + [t.upper() for t in texts(50)]
    assert core_ids(tokenizer, batch, read) == library_ids(tokenizer, batch, read)


def test_marks_dropped_in_reading_can_make_an_added_token(tmp_path: Path) -> None:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(make_model_dir(tmp_path / "tiny") / "tokenizer.json"))
    batch = ["see [-MASK] here", "([MASK])", "[[MASK]]", "é [-MASK]", "a--b é--f"]
    assert core_ids(tokenizer, batch, read=True) == library_ids(tokenizer, batch, read=True)
    assert core_ids(tokenizer, batch) != library_ids(tokenizer, batch, read=True)


@pytest.mark.parametrize("read", [False, True])
@pytest.mark.model
def test_the_cores_ids_are_minilms_own(read: bool) -> None:
    from tokenizers import Tokenizer

    from memlane.embed.weights import minilm_dir

    tokenizer = Tokenizer.from_file(str(minilm_dir() / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    batch = fuzz_texts(5000) + mixed_texts(3000) + [long_text(n) for n in (10, 300)]
    batch += ["Line one\r\n\tLine TWO [SEP] done", "unaffable antidisestablishmentarianism 12345678 ПРИВЕТ мир"]
    assert core_ids(tokenizer, batch, read) == library_ids(tokenizer, batch, read)


@pytest.mark.parametrize("read", [False, True])
@pytest.mark.model
def test_the_cores_ids_of_the_shared_transcripts_are_minilms_own(shared_data: Path, tmp_path: Path, read: bool) -> None:
    from tokenizers import Tokenizer

    from memlane.embed.weights import minilm_dir

    home = tmp_path / "home"
    memlane.open(home, embedder="none").index([shared_data / "transcripts"], embed=False)
    store = _core.Store(str(home))
    chunks = [c["text"] for c in store.get(sorted(int(k) for k in store.keys()))]
    assert len(chunks) > 100
    tokenizer = Tokenizer.from_file(str(minilm_dir() / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    assert core_ids(tokenizer, chunks, read) == library_ids(tokenizer, chunks, read)


def test_tokenizers_the_core_does_not_cover_take_the_library(tmp_path: Path) -> None:
    from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers

    bert = Tokenizer.from_file(str(make_model_dir(tmp_path / "tiny") / "tokenizer.json"))
    normalised_added = Tokenizer.from_str(bert.to_str())
    normalised_added.add_tokens([AddedToken("Retried", normalized=True)])  # matches "retried" once lowercased
    whitespace = Tokenizer.from_str(bert.to_str())
    whitespace.pre_tokenizer = pre_tokenizers.Whitespace()
    truncating = Tokenizer.from_str(bert.to_str())
    truncating.enable_truncation(8)
    word_level = Tokenizer(models.WordLevel({"[UNK]": 0, "deploy": 1}, unk_token="[UNK]"))
    batch = mixed_texts(200) + texts(20)
    for tokenizer in (
        normalised_added,
        whitespace,
        truncating,
        word_level,
    ):
        for read in (False, True):
            token_ids = TokenIds(tokenizer, runs_as_first_mark=read)
            assert token_ids._wordpiece is None
            assert [ids.tolist() for ids in token_ids(batch)] == library_ids(tokenizer, batch, read)
