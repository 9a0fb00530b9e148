"""Damage is found and mended: verify, repair, full disks, a corrupt embedding cache.

The corruption matrix copies one healthy home, damages one part of the copy, and checks that
``verify`` calls it unsound, that ``repair`` rebuilds a home equal to a clean build of the same
sources (same chunks, same answers), and that the repair made no embedding call.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import FakeEmbedder, generic_session, write_deploy_and_cooking, write_jsonl

import memlane
from memlane.errors import CorruptIndexError, DiskFullError

QUERIES = [
    "exit code 137",
    "keepalive timeout proxy",
    "billing database postgres",
    "pasta sauce basil",
    "invoice ledger 7",
]


def _corpus(root: Path) -> Path:
    """The deploy/cooking sessions and forty more, so the keyword index has real segments."""
    write_deploy_and_cooking(root)
    for n in range(40):
        pairs = [
            (
                f"what changed in invoice ledger {n} step {k}?",
                f"Ledger {n} step {k} moved the totals of account {n * 7 + k} to the replica; checksum {n:04d}{k}.",
            )
            for k in range(6)
        ]
        write_jsonl(root / f"ledger-{n:02d}.jsonl", generic_session(f"ledger-{n}", pairs))
    return root


def _answers(mem: memlane.Memory) -> dict[str, list[tuple[str, float]]]:
    """Keyword answers (exact and deterministic; the vector side is compared by its content:
    an HNSW graph built again can order borderline candidates differently)."""
    keyword = memlane.open(mem.home, embedder="none")
    answers = {}
    for q in QUERIES:
        hits = sorted(((round(h.score, 4), h.id) for h in keyword.search(q, k=8)), key=lambda s: (-s[0], s[1]))
        # Hits tied at the cut of the top 8 are left out: which of them make the cut is not
        # part of what a rebuild must reproduce.
        answers[q] = [(i, s) for s, i in hits if s > hits[-1][0]] if len(hits) == 8 else [(i, s) for s, i in hits]
    status = keyword.status()
    answers["vectors"] = [(status["embedder_id"], status["chunks_with_vectors"], status["vectors"])]
    return answers


def _chunk_ids(home: Path) -> set[str]:
    manifest = json.loads((home / "manifest.json").read_text())
    return {f"{k:014x}" for entry in manifest["files"].values() for k in entry["keys"]}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict, set[str]]:
    """A healthy home with vectors, its sources, its answers and chunk ids, and the cache."""
    root = tmp_path_factory.mktemp("integrity")
    src = _corpus(root / "src")
    cache = root / "cache"
    home = root / "home"
    with memlane.open(home, embedder=FakeEmbedder(), cache_dir=cache) as mem:
        mem.index([src])
        answers = _answers(mem)
    return home, src, answers, _chunk_ids(home)


def _largest(home: Path, suffix: str) -> Path:
    return max((home / "lexical").glob(f"*{suffix}"), key=lambda p: p.stat().st_size)


def _overwrite_middle(path: Path) -> None:
    data = bytearray(path.read_bytes())
    mid = len(data) // 2
    data[mid : mid + 64] = b"\xa5" * min(64, len(data) - mid)
    path.write_bytes(bytes(data))


DAMAGES = {
    "vectors truncated": lambda h: (h / "vectors.usearch").write_bytes(
        (h / "vectors.usearch").read_bytes()[: (h / "vectors.usearch").stat().st_size // 2]
    ),
    ".term damaged": lambda h: _overwrite_middle(_largest(h, ".term")),
    ".idx damaged": lambda h: _overwrite_middle(_largest(h, ".idx")),
    ".store damaged": lambda h: _overwrite_middle(_largest(h, ".store")),
    "meta.json deleted": lambda h: (h / "lexical" / "meta.json").unlink(),
    "manifest deleted": lambda h: (h / "manifest.json").unlink(),
    "manifest garbage": lambda h: (h / "manifest.json").write_bytes(b"\x00garbage{"),
    "memlane.json garbage": lambda h: (h / "memlane.json").write_text("{not json"),
}


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_damage_is_found_and_repair_equals_a_clean_build(built, damage, tmp_path):
    healthy, src, answers, ids = built
    home = tmp_path / "home"
    shutil.copytree(healthy, home)
    cache = healthy.parent / "cache"
    DAMAGES[damage](home)

    embedder = FakeEmbedder()
    mem = memlane.open(home, embedder=embedder, cache_dir=cache)
    verdict = mem.verify()
    assert not verdict["sound"], verdict
    assert [f for f in verdict["findings"] if f["severity"] == "problem"]

    report = mem.repair()
    assert report.repaired and report.problems
    assert report.embedding_calls == 0 and embedder.calls == 0
    assert report.lost == []
    assert report.chunks_without_vectors == 0
    assert mem.verify()["sound"]
    assert _chunk_ids(home) == ids
    assert _answers(mem) == answers
    assert embedder.calls == 0, "repair and the searches after it embedded no chunk"


def test_a_healthy_home_is_sound_and_repair_leaves_it_alone(built, tmp_path):
    healthy, *_ = built
    home = tmp_path / "home"
    shutil.copytree(healthy, home)
    mem = memlane.open(home, embedder="none", cache_dir=healthy.parent / "cache")
    verdict = mem.verify()
    assert verdict["sound"], verdict["findings"]
    assert verdict["chunks"] == verdict["chunks_with_vectors"] > 0
    before = (home / "manifest.json").read_bytes()
    assert not mem.repair().repaired
    assert (home / "manifest.json").read_bytes() == before


def test_repair_keeps_a_keyword_only_home_keyword_only(built, tmp_path):
    # The shared cache holds vectors of these very chunks (the `built` home's): a repair must
    # not take them for the vectors of a home that records it has none.
    healthy, src, _, ids = built
    cache = healthy.parent / "cache"
    home = tmp_path / "home"
    memlane.open(home, embedder="none", cache_dir=cache).index([src])
    embedder = FakeEmbedder()
    mem = memlane.open(home, embedder=embedder, cache_dir=cache)
    before = {q: [(h.id, h.score) for h in mem.search(q, k=5)] for q in QUERIES}
    DAMAGES[".store damaged"](home)
    assert not mem.verify()["sound"]

    report = mem.repair()
    assert (
        report.repaired
        and report.vectors_from_cache == report.vectors_from_old_index == report.chunks_without_vectors == 0
    )
    assert mem.vectors_embedder_id is None and not (home / "vectors.usearch").exists()
    status = mem.status()
    assert (status["chunks_with_vectors"], status["vectors_pending"]) == (0, 0)
    assert mem.verify()["sound"] and _chunk_ids(home) == ids
    assert {q: [(h.id, h.score) for h in mem.search(q, k=5)] for q in QUERIES} == before
    assert embedder.calls == 0, "a keyword-only home answers without embedding the query"


def test_vectors_an_index_did_not_finish_are_pending_not_damage(built, tmp_path):
    # memlane.json names the embedder at the first vector; the vector file comes at a later
    # commit. Without it, or with fewer chunks in it than the index holds, the home waits for
    # vectors (a note, `memlane embed`), which the cache gives back without an embedding call.
    healthy, *_ = built
    home = tmp_path / "home"
    shutil.copytree(healthy, home)
    (home / "vectors.usearch").unlink()
    embedder = FakeEmbedder()
    mem = memlane.open(home, embedder=embedder, cache_dir=healthy.parent / "cache")
    verdict = mem.verify()
    assert verdict["sound"], verdict["findings"]
    assert verdict["vectors_pending"] == verdict["chunks"] > 0 and verdict["chunks_with_vectors"] == 0
    [note] = [f for f in verdict["findings"] if f["part"] == "vectors"]
    assert note["severity"] == "note" and f"vectors pending: {verdict['chunks']} chunks" in note["message"]
    assert "memlane embed" in note["message"] and "repair" not in note["message"]
    assert mem.status()["vectors_pending"] == verdict["chunks"]
    assert not mem.repair().repaired  # nothing is broken

    assert mem.embed_pending() == verdict["chunks"] and embedder.calls == 0
    verdict = mem.verify()
    assert verdict["sound"] and verdict["vectors_pending"] == 0 and verdict["chunks_with_vectors"] == verdict["chunks"]
    assert not [f for f in verdict["findings"] if f["part"] == "vectors"]


def test_an_interrupted_index_commits_what_it_did_and_waits_for_the_rest(built, tmp_path, monkeypatch):
    import memlane.memory
    from memlane.errors import IndexInterrupted

    class StoppedInItsSecondBatch(FakeEmbedder):
        embedded = 0

        def embed_documents(self, texts):
            if self.calls == 1:
                raise KeyboardInterrupt  # as Ctrl-C raises it, between two batches' calls
            self.embedded += len(texts)
            return super().embed_documents(texts)

    _, src, _, ids = built
    monkeypatch.setattr(memlane.embed.backfill, "_CHUNKS_PER_EMBED_BATCH", 8)
    home = tmp_path / "home"
    stopping = StoppedInItsSecondBatch()
    mem = memlane.open(home, embedder=stopping, cache_dir=tmp_path / "cache")
    with pytest.raises(IndexInterrupted) as stopped:
        mem.index([src])
    report = stopped.value.report
    # The keyword pass, on its own thread, stops after the batch it was adding: where Ctrl-C lands
    # among its batches is the machine's timing, so the files it committed are some of the 42.
    assert 0 < report.files_indexed <= stopped.value.files_to_index == 42
    embedded = stopping.embedded  # the first call's chunks: up to 8, as the first commit gave
    assert 0 < embedded <= 8
    verdict = mem.verify()
    assert verdict["sound"], verdict["findings"]
    assert mem.status()["files"] == report.files_indexed
    assert stopped.value.chunks_pending == verdict["chunks"] - embedded
    assert (verdict["chunks_with_vectors"], verdict["vectors_pending"]) == (embedded, verdict["chunks"] - embedded)

    mem = memlane.open(home, embedder=FakeEmbedder(), cache_dir=tmp_path / "cache")
    again = mem.index([src])  # reads the files not yet read and embeds every chunk still waiting
    assert again.files_indexed == 42 - report.files_indexed and again.chunks_embedded == len(ids) - embedded
    assert mem.verify()["vectors_pending"] == 0 and _chunk_ids(home) == ids


def test_an_index_stopped_before_its_first_vector_still_waits_for_them(tmp_path):
    # Ctrl-C while the first batch is embedded: nothing of it reached the vector file, yet
    # the home records the embedder asked for, so it reads as waiting, not as keyword-only.
    class StoppedAtOnce(FakeEmbedder):
        def embed_documents(self, texts):
            raise KeyboardInterrupt

    from memlane.errors import IndexInterrupted

    src = write_deploy_and_cooking(tmp_path / "src")
    mem = memlane.open(tmp_path / "home", embedder=StoppedAtOnce(), cache_dir=tmp_path / "cache")
    with pytest.raises(IndexInterrupted) as stopped:
        mem.index([src])
    assert stopped.value.chunks_pending == 5
    assert mem.vectors_embedder_id == FakeEmbedder.id and not (tmp_path / "home" / "vectors.usearch").exists()
    verdict = mem.verify()
    assert verdict["sound"] and verdict["vectors_pending"] == 5


def test_repair_stores_an_f16_home_in_i8_as_a_clean_i8_build_without_embedding(built, tmp_path, capsys, monkeypatch):
    # A home made in f16 (the default before i8) is rebuilt in i8 on request, sound as it is:
    # its vectors from the embedding cache, no embedding call, every answer as a home built in
    # i8 from the same sources gives.
    from memlane.cli import main

    _, src, answers, ids = built
    cache = tmp_path / "cache"
    old = memlane.open(tmp_path / "home", embedder=FakeEmbedder(), quantization="f16", cache_dir=cache)
    old.index([src])
    clean = memlane.open(tmp_path / "clean", embedder=FakeEmbedder(), cache_dir=cache)
    clean.index([src])
    assert (old.status()["quantization"], clean.status()["quantization"]) == ("f16", "i8")
    assert not old.repair(quantization="f16").repaired  # the storage it has: nothing to do
    monkeypatch.setenv("MEMLANE_CACHE_DIR", str(cache))
    assert main(["--home", str(tmp_path / "home"), "status"]) == 0
    assert "vectors stored as f16" in (out := capsys.readouterr().out) and "repair --quantization i8" in out
    embedder = FakeEmbedder()
    mem = memlane.open(tmp_path / "home", embedder=embedder, cache_dir=cache)
    report = mem.repair(quantization="i8")
    assert report.repaired and not report.problems and report.quantization == "i8"
    assert report.vectors_from_cache > 0 and report.chunks_without_vectors == 0 and embedder.calls == 0
    assert mem.status()["quantization"] == "i8" and mem.verify()["sound"]
    assert (tmp_path / "home" / "vectors.usearch").stat().st_size == (
        tmp_path / "clean" / "vectors.usearch"
    ).stat().st_size
    assert _chunk_ids(tmp_path / "home") == ids and _answers(mem) == answers
    for q in QUERIES:
        assert [(h.id, h.score) for h in mem.search(q, k=5)] == [(h.id, h.score) for h in clean.search(q, k=5)], q
    assert embedder.calls == 0, "repair and the searches after it embedded no chunk"
    assert main(["--home", str(tmp_path / "home"), "status"]) == 0
    assert "vectors stored as i8" in (out := capsys.readouterr().out) and "repair --quantization" not in out
    assert main(["--home", str(tmp_path / "home"), "repair", "--quantization", "f16"]) == 0
    assert "stored as f16" in capsys.readouterr().out
    assert memlane.open(tmp_path / "home", embedder="none").status()["quantization"] == "f16"


def test_searching_a_home_without_its_index_says_so_and_index_mends_it(built, tmp_path):
    healthy, src, answers, ids = built
    home = tmp_path / "home"
    shutil.copytree(healthy, home)
    (home / "lexical" / "meta.json").unlink()
    mem = memlane.open(home, embedder=FakeEmbedder(), cache_dir=healthy.parent / "cache")
    with pytest.raises(CorruptIndexError, match="meta.json.*missing.*memlane repair"):
        mem.search("exit code 137")
    with pytest.raises(CorruptIndexError):
        mem.status()
    # Indexing one folder mends the whole home, not just what it names.
    report = mem.index([src / "deploy.jsonl"])
    assert report.repaired is not None and report.repaired.repaired
    assert _chunk_ids(home) == ids
    assert _answers(mem) == answers


def test_a_damaged_segment_gives_an_error_naming_the_index_not_a_panic(built, tmp_path):
    healthy, *_ = built
    home = tmp_path / "home"
    shutil.copytree(healthy, home)
    for part in (home / "lexical").glob("*.idx"):
        part.write_bytes(b"\xff" * part.stat().st_size)
    mem = memlane.open(home, embedder="none")
    failures = 0
    for q in QUERIES:
        try:
            mem.search(q)
        except CorruptIndexError as exc:
            assert "lexical" in str(exc)
            failures += 1
    assert failures, "a wholly overwritten postings index cannot answer every query"


def test_a_gone_source_is_restored_from_its_copy_or_carried_over_and_else_reported_lost(built, tmp_path):
    healthy, src, answers, ids = built
    home = tmp_path / "home"
    shutil.copytree(healthy, home)
    sources = tmp_path / "src"
    shutil.copytree(src, sources)
    # The copied home names the original sources: point it at the copies, then lose one.
    manifest = json.loads((home / "manifest.json").read_text())
    manifest["files"] = {p.replace(str(src), str(sources)): e for p, e in manifest["files"].items()}
    (home / "manifest.json").write_text(json.dumps(manifest))
    (sources / "deploy.jsonl").unlink()

    def repair(**kw: bool) -> Any:
        mem = memlane.open(home, embedder=FakeEmbedder(), cache_dir=healthy.parent / "cache")
        return mem, mem.repair(**kw)

    # The copy the home kept of the transcript is read again, whatever the old index holds.
    mem, report = repair(force=True)
    assert (report.files_restored, report.files_carried_over, report.lost) == (1, 0, [])
    assert any("exit code 137" in h.text for h in mem.search("exit code 137"))
    (home / "lexical" / "meta.json").unlink()
    mem, report = repair()
    assert (report.files_restored, report.lost) == (1, [])
    assert any("exit code 137" in h.text for h in mem.search("exit code 137"))
    # Without that copy, the chunks come from the old index.
    shutil.rmtree(home / "archive")
    mem, report = repair(force=True)
    assert (report.files_restored, report.files_carried_over, report.lost) == (0, 1, [])
    assert any("exit code 137" in h.text for h in mem.search("exit code 137"))
    # Neither copy nor index: the deleted source's chunks cannot be read anywhere.
    (home / "lexical" / "meta.json").unlink()
    _, report = repair()
    assert report.lost == [str(sources / "deploy.jsonl")]


def test_a_corrupt_embedding_cache_is_set_aside_and_the_home_keeps_working(built, tmp_path, caplog):
    healthy, src, answers, _ = built
    home = tmp_path / "home"
    shutil.copytree(healthy, home)
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "embeddings.sqlite").write_bytes(b"this is not a database" * 100)
    mem = memlane.open(home, embedder=FakeEmbedder(), cache_dir=cache)
    assert mem.status()["chunks"] > 0
    assert _answers(mem) == answers
    assert [p.name for p in cache.iterdir() if ".corrupt-" in p.name]
    assert "set aside" in caplog.text
    assert mem.verify()["sound"]


def test_a_stray_record_never_drops_a_claude_code_conversation(tmp_path):
    lines = [
        {
            "type": "user",
            "uuid": "u1",
            "parentUuid": None,
            "sessionId": "s",
            "message": {"role": "user", "content": "first question about the deploy"},
        },
        {
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "sessionId": "s",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "first answer"}]},
        },
        {
            "type": "user",
            "uuid": "u2",
            "parentUuid": "a1",
            "sessionId": "s",
            "message": {"role": "user", "content": "second question"},
        },
        {
            "type": "assistant",
            "uuid": "a2",
            "parentUuid": "u2",
            "sessionId": "s",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "second answer"}]},
        },
        {"type": "assistant", "uuid": "zz1", "message": {"content": 42}},
    ]
    path = write_jsonl(tmp_path / "src" / "s.jsonl", lines)
    mem = memlane.open(tmp_path / "home", embedder="none")
    report = mem.index([path])
    assert report.chunks_added >= 1
    [f] = report.files
    assert f["format"] == "claude-code" and f["turns"] == 4 and f["empty_reason"] is None


def test_every_file_is_accounted_for(tmp_path):
    src = tmp_path / "src"
    write_deploy_and_cooking(src)
    (src / "tool.jsonl").write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 8)
    (src / "notes.jsonl").write_text("just some words\nnot a transcript\n")
    (src / "empty.jsonl").write_text("")
    (src / "half.jsonl").write_text(
        '{"role": "user", "content": "hello there"}\n{"role": "assistant", "content": "hi"}\n{broken\n'
    )
    (src / "cold.jsonl.zst").write_bytes(b"not zstd at all")
    report = memlane.open(tmp_path / "home", embedder="none").index([src])
    by_name = {Path(f["path"]).name: f for f in report.files}
    assert by_name["tool.jsonl"]["empty_reason"] == "binary"
    assert by_name["notes.jsonl"]["empty_reason"] == "unknown_format"
    assert by_name["empty.jsonl"]["empty_reason"] == "empty_file"
    assert by_name["half.jsonl"]["skipped"] == {"invalid_json": 1}
    assert by_name["half.jsonl"]["chunks"] == 1
    assert by_name["cold.jsonl.zst"]["empty_reason"].startswith("corrupt:")
    assert by_name["deploy.jsonl"]["format"] == "generic" and by_name["deploy.jsonl"]["turns"] == 6
    assert report.empty_roots == []


def test_an_oversize_single_line_file_is_counted(tmp_path, monkeypatch):
    path = tmp_path / "huge.jsonl"
    with open(path, "wb") as fh:
        fh.write(b'{"role": "user", "content": "')
        fh.write(b"x" * (65 << 20))
        fh.write(b'"}\n')
    report = memlane.open(tmp_path / "home", embedder="none").index([path])
    [f] = report.files
    assert f["empty_reason"] == "oversize_line" and f["skipped"] == {"oversize_line": 1}
    assert report.empty_roots == [str(path)]


# ---------------------------------------------------------------------------------------------
# A full disk: a small tmpfs as the home (needs root to mount; skipped otherwise)


@pytest.fixture
def small_disk(tmp_path):
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("the full-disk test mounts a small tmpfs: run the suite as root to include it")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(disk: Path, leave: int) -> Path:
    """Take all of the disk's free space but ``leave`` bytes."""
    filler = disk / "filler"
    free = shutil.disk_usage(disk).free
    with open(filler, "wb") as fh:
        fh.truncate(0)
        fh.write(b"\0" * max(0, free - leave))
    return filler


def test_a_full_disk_fails_in_one_line_keeps_the_last_commit_and_recovers(small_disk, tmp_path, capsys):
    from memlane.cli import main

    src = _corpus(tmp_path / "src")
    more = tmp_path / "more"
    for n in range(60):
        pairs = [
            (
                f"capacity plan {n} item {k} for the warehouse",
                "Reserve " + " ".join(f"rack{n}-{k}-{j}" for j in range(60)),
            )
            for k in range(8)
        ]
        write_jsonl(more / f"plan-{n:02d}.jsonl", generic_session(f"plan-{n}", pairs))
    home = small_disk / "home"
    cache = tmp_path / "cache"
    with memlane.open(home, embedder=FakeEmbedder(), cache_dir=cache) as mem:
        mem.index([src])
        before = _answers(mem)
    filler = _fill(small_disk, 64 << 10)

    code = main(["--home", str(home), "index", str(more), "--embed", "none"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "no space left" in err[0] and "last commit is intact" in err[0], err
    with memlane.open(home, embedder=FakeEmbedder(), cache_dir=cache) as mem:
        with pytest.raises(DiskFullError):
            mem.index([more])
        # A failed commit takes its partial files with it, so a retry finds the space free:
        # every index file belongs to a committed segment, and no temp file is left.
        committed = {
            s["segment_id"].replace("-", "")
            for s in json.loads((home / "lexical" / "meta.json").read_text())["segments"]
        }
        segment_files = {
            p.name.split(".")[0] for p in (home / "lexical").iterdir() if p.suffix not in (".json", ".lock")
        }
        assert segment_files <= committed, segment_files - committed
        assert not [p for p in home.rglob("*.tmp")]
        # Reading needs no space: search, recall and status keep working.
        assert _answers(mem) == before
        assert mem.status()["chunks"] > 0
        assert mem.recall("exit code 137")
        assert main(["--home", str(home), "status"]) == 0
    capsys.readouterr()

    filler.unlink()
    with memlane.open(home, embedder=FakeEmbedder(), cache_dir=cache) as mem:
        report = mem.index([src, more])
        assert report.chunks_added > 0
        assert mem.verify()["sound"]
        assert [h.id for h in mem.search("rack7-3-5", k=3)]


def test_a_killed_brain_write_leaves_no_temp_file_behind(tmp_path):
    brain = memlane.Brain(home=tmp_path / "home")
    brain.add("KD", "Billing moved to Postgres 16.")
    stale = brain.dir / ".MEMORY.md.k9x2.tmp"
    stale.write_text("half a file")
    brain.add("KD", "Reports read from the replica.")
    assert not stale.exists()
    assert "replica" in (brain.dir / "MEMORY.md").read_text()


class PartedEmbedder(FakeEmbedder):
    """The fake embedder asking for a vector index in four graphs, as a GPU embedder asks for eight."""

    vector_parts = 4


def test_a_home_in_vector_parts_keeps_them_through_updates_and_repair(tmp_path, capsys, monkeypatch):
    from memlane.cli import main

    src = _corpus(tmp_path / "src")
    cache = tmp_path / "cache"
    home = tmp_path / "parted"
    parted = memlane.open(home, embedder=PartedEmbedder(), cache_dir=cache)
    one = memlane.open(tmp_path / "one", embedder=FakeEmbedder(), cache_dir=cache)
    parted.index([src])
    one.index([src])
    assert json.loads((home / "memlane.json").read_text())["vector_parts"] == 4
    assert "vector_parts" not in json.loads((tmp_path / "one" / "memlane.json").read_text())
    assert [p.name for p in sorted(home.glob("vectors*"))] == [f"vectors.{n}.usearch" for n in (1, 2, 3)] + [
        "vectors.usearch"
    ]
    status = parted.status()
    assert status["vector_parts"] == 4 and status["chunks_with_vectors"] == status["chunks"] > 50
    assert parted.verify()["sound"]
    # Under a hundred chunks: every graph finds the exact nearest, so the parts answer as one graph.
    answers = {q: [(h.id, h.score) for h in parted.search(q, k=5)] for q in QUERIES}
    assert answers == {q: [(h.id, h.score) for h in one.search(q, k=5)] for q in QUERIES}

    # An update adds to the same parts; forgetting takes a session's vectors out of theirs.
    write_jsonl(src / "late.jsonl", generic_session("late", [("what about the late invoice?", "Paid on Friday.")]))
    parted.index([src])
    status = parted.status()
    assert (status["vector_parts"], status["chunks_with_vectors"]) == (4, status["chunks"])
    assert parted.forget(session="ledger-3")["chunks"] > 0
    after = parted.status()
    assert after["chunks_with_vectors"] == after["chunks"] < status["chunks"] and after["vectors"] < status["vectors"]
    assert parted.verify()["sound"]
    answers = {q: [(h.id, h.score) for h in parted.search(q, k=5)] for q in QUERIES}

    # A missing part is damage; the repair rebuilds the four parts from the cache.
    (home / "vectors.2.usearch").unlink()
    verdict = parted.verify()
    assert not verdict["sound"]
    assert any("vectors.2.usearch" in f["path"] for f in verdict["findings"] if f["severity"] == "problem")
    embedder = PartedEmbedder()
    mem = memlane.open(home, embedder=embedder, cache_dir=cache)
    report = mem.repair()
    assert report.repaired and report.vectors_from_cache > 0 and report.chunks_without_vectors == 0
    assert mem.verify()["sound"] and mem.status()["vector_parts"] == 4 and embedder.calls == 0
    assert {q: [(h.id, h.score) for h in mem.search(q, k=5)] for q in QUERIES} == answers
    monkeypatch.setenv("MEMLANE_CACHE_DIR", str(cache))
    assert main(["--home", str(home), "status"]) == 0
    assert "vectors stored as i8 in 4 graphs" in capsys.readouterr().out


@pytest.mark.parametrize("embedder", [FakeEmbedder, PartedEmbedder])
def test_two_clean_builds_answer_identically(shared_data, tmp_path, embedder):
    """Same sources, same answers, to the last digit: segments, the vector graphs and ties at
    every cut do not depend on thread timing, nor on how many cores read the files and index
    them (the second home's keywords are indexed by a process held to one core)."""
    import random
    import re
    import sys

    src = shared_data / "transcripts"
    one_core = {min(os.sched_getaffinity(0))}
    keywords_only = 'import memlane, sys; memlane.open(sys.argv[1], embedder="none").index([sys.argv[2]], embed=False)'
    subprocess.run(
        [sys.executable, "-c", keywords_only, str(tmp_path / "h1"), str(src)],
        check=True,
        preexec_fn=lambda: os.sched_setaffinity(0, one_core),
    )
    homes = []
    for n in range(2):
        mem = memlane.open(tmp_path / f"h{n}", embedder=embedder(), cache_dir=tmp_path / "cache")
        mem.index([src])
        homes.append(mem)
    keys = sorted(int(k) for k in homes[0]._store.keys())
    texts = [c["text"] for c in homes[0]._store.get(keys)]
    rng = random.Random(5)
    queries = []
    for text in rng.sample(texts, min(80, len(texts))):
        words = re.findall(r"[A-Za-z][A-Za-z0-9_]{3,}", text)
        if len(words) >= 4:
            at = rng.randrange(len(words) - 3)
            queries.append(" ".join(words[at : at + 4]))
    assert len(queries) > 40
    for q in queries:
        a, b = ([(h.id, h.score, h.scores) for h in mem.search(q, k=10)] for mem in homes)
        assert a == b, q
