"""The Python API checks its arguments at the call: a clear error naming the argument, nothing done."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FakeEmbedder, write_deploy_and_cooking

import memlane
import memlane.memory
from memlane.errors import ArgumentTypeError, InvalidArgumentError, MemlaneError


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "transcripts"
    write_deploy_and_cooking(root)
    return root


@pytest.fixture
def mem(tmp_path: Path, fake_embedder: FakeEmbedder) -> memlane.Memory:
    return memlane.open(tmp_path / "home", embedder=fake_embedder)


def test_error_classes_keep_existing_except_clauses_working() -> None:
    assert issubclass(InvalidArgumentError, ValueError) and issubclass(InvalidArgumentError, MemlaneError)
    assert issubclass(ArgumentTypeError, TypeError) and issubclass(ArgumentTypeError, MemlaneError)


@pytest.mark.parametrize("as_path", [str, Path])
def test_a_single_str_or_path_is_one_path(mem: memlane.Memory, corpus: Path, as_path: type) -> None:
    report = mem.index(as_path(corpus))
    assert report.files_indexed == 2
    assert mem.search("pasta", k=3)


def test_a_single_missing_path_names_the_path_not_its_first_character(mem: memlane.Memory, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="notes"):
        mem.index(str(tmp_path / "notes"))


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"paths": 42}, ArgumentTypeError, "paths must be a path"),
        ({"paths": [b"bytes/path"]}, ArgumentTypeError, "item 0 is bytes"),
        ({"paths": b"bytes/path"}, ArgumentTypeError, "paths must be a path"),
        ({"embed": "yes"}, ArgumentTypeError, "embed must be True or False"),
        ({"format": 3}, ArgumentTypeError, "format must be a string"),
        ({"progress": "bar"}, ArgumentTypeError, "progress must be callable"),
    ],
)
def test_index_rejects_wrong_arguments_before_touching_the_home(
    mem: memlane.Memory, corpus: Path, kwargs: dict, error: type, message: str
) -> None:
    kwargs = {"paths": [corpus], **kwargs}
    with pytest.raises(error, match=message):
        mem.index(**kwargs)
    assert mem.status()["files"] == 0


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "message"),
    [
        ((None,), {}, ArgumentTypeError, "query must be a string, got NoneType"),
        ((["deploy"],), {}, ArgumentTypeError, "query must be a string"),
        (("deploy",), {"k": "5"}, ArgumentTypeError, "k must be an int, got str '5'"),
        (("deploy",), {"k": 2.0}, ArgumentTypeError, "k must be an int"),
        (("deploy",), {"k": True}, ArgumentTypeError, "k must be an int"),
        (("deploy",), {"k": 0}, InvalidArgumentError, "k must be at least 1, got 0"),
        (("deploy",), {"fusion": "max"}, InvalidArgumentError, "fusion must be one of rrf, weighted"),
        (("deploy",), {"vector_weight": 1.5}, InvalidArgumentError, "vector_weight must be between 0 and 1"),
        (("deploy",), {"vector_weight": "0.5"}, ArgumentTypeError, "vector_weight must be a number"),
        (("deploy",), {"threshold": None}, ArgumentTypeError, "threshold must be a number"),
        (
            ("deploy",),
            {"sources": ["transcripts"]},
            InvalidArgumentError,
            "sources must be one of brain, knowledge, summary, transcript",
        ),
        (("deploy",), {"session_id": 7}, ArgumentTypeError, "session_id must be a string"),
    ],
)
def test_search_rejects_wrong_arguments_naming_them(
    mem: memlane.Memory, corpus: Path, args: tuple, kwargs: dict, error: type, message: str
) -> None:
    mem.index([corpus])
    with pytest.raises(error, match=message):
        mem.search(*args, **kwargs)


def test_search_takes_a_single_source_name(mem: memlane.Memory, corpus: Path) -> None:
    mem.index([corpus])
    hits = mem.search("pasta", k=3, sources="transcript")
    assert hits and all(h.source == "transcript" for h in hits)
    assert mem.search("pasta", k=3, sources="knowledge") == []


def test_existing_value_error_handlers_still_catch_bad_k(mem: memlane.Memory) -> None:
    with pytest.raises(ValueError):
        mem.search("deploy", k=0)
    with pytest.raises(TypeError):
        mem.search("deploy", k="5")


def test_unknown_embedder_fails_in_open_and_creates_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with pytest.raises(InvalidArgumentError, match="unknown embedder spec 'nonsense'"):
        memlane.open(home, embedder="nonsense")
    with pytest.raises(InvalidArgumentError, match="neither q8, fp32, int8 nor a model directory"):
        memlane.open(home, embedder="local:/no/such/model")
    assert not home.exists()


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"embedder": 42}, ArgumentTypeError, "embedder must be a spec such as 'local' or an Embedder, got int"),
        ({"quantization": "f8"}, InvalidArgumentError, "quantization must be one of f16, f32, i8"),
        ({"home": 3.5}, ArgumentTypeError, "home must be a path"),
    ],
)
def test_open_rejects_wrong_arguments(tmp_path: Path, kwargs: dict, error: type, message: str) -> None:
    kwargs = {"home": tmp_path / "home", **kwargs}
    with pytest.raises(error, match=message):
        memlane.open(**kwargs)


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "message"),
    [
        ((None,), {}, ArgumentTypeError, "query must be a string"),
        (("deploy",), {"max_tokens": "100"}, ArgumentTypeError, "max_tokens must be an int"),
        (("deploy",), {"max_tokens": 0}, InvalidArgumentError, "max_tokens must be at least 1"),
        (("deploy",), {"half_life_days": 0}, InvalidArgumentError, "half_life_days must be positive"),
        (("deploy",), {"half_life_days": "30"}, ArgumentTypeError, "half_life_days must be a number"),
    ],
)
def test_recall_rejects_wrong_arguments(
    mem: memlane.Memory, args: tuple, kwargs: dict, error: type, message: str
) -> None:
    with pytest.raises(error, match=message):
        mem.recall(*args, **kwargs)


def test_a_home_built_by_the_fp32_local_embedder_keeps_it(
    tmp_path: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`local` became the q8 graph; a home whose vectors are fp32 ones goes on with fp32."""

    class OldLocal(FakeEmbedder):
        id = "local/all-MiniLM-L6-v2/fp32/384"

    memlane.open(tmp_path / "old", embedder=OldLocal()).index([corpus])
    memlane.open(tmp_path / "new", embedder="none").index([corpus])
    asked: list[str] = []

    def fake_make_embedder(spec: str) -> FakeEmbedder:
        asked.append(spec)
        return OldLocal()

    monkeypatch.setattr(memlane.memory, "make_embedder", fake_make_embedder)
    assert memlane.open(tmp_path / "old").search("pasta", k=3)
    assert memlane.open(tmp_path / "new").embedder is not None
    assert asked == ["local:fp32", "local"]
