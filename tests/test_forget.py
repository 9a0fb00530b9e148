"""Forgetting on request: a session, a file or a chunk leaves for good, and can come back."""

from __future__ import annotations

import json

import pytest
from conftest import DEPLOY, generic_session, write_deploy_and_cooking, write_jsonl

import memlane
from memlane.cli import main

LEAK = "AKIAQ7LQXKZ3MPT2W8VY"


def _index(tmp_path, fake_embedder):
    src = write_deploy_and_cooking(tmp_path / "src")
    write_jsonl(
        src / "leak.jsonl",
        generic_session(
            "leak-1",
            [("set up the deploy credentials", f"Use the key {LEAK} with region eu-west-1 for the deploy bucket.")],
        ),
    )
    mem = memlane.open(tmp_path / "home", embedder=fake_embedder)
    mem.index([src])
    return mem, src


def _found(mem, query: str, session: str) -> bool:
    return any(h.session_id == session for h in mem.search(query, k=20, threshold=0.0))


def test_a_forgotten_session_stays_gone_through_re_indexing_until_undone(tmp_path, fake_embedder):
    mem, src = _index(tmp_path, fake_embedder)
    assert _found(mem, LEAK, "leak-1")
    hashes = [
        c["content_hash"]
        for c in mem._store.get([int(h.id, 16) for h in mem.search(LEAK, k=5) if h.session_id == "leak-1"])
    ]
    assert mem.cache.get_many(fake_embedder.id, hashes)

    preview = mem.forget(session="leak-1", dry_run=True)
    assert preview["chunks"] == 1 and preview["files"] == [str((src / "leak.jsonl").resolve())]
    assert _found(mem, LEAK, "leak-1"), "a dry run changes nothing"

    report = mem.forget(session="leak-1")
    assert report["chunks"] == 1 and report["cache_rows"] == 1
    assert not _found(mem, LEAK, "leak-1")
    assert not mem.cache.get_many(fake_embedder.id, hashes)
    assert mem.verify()["sound"]

    # Re-indexing the folder, even after the file grows, does not bring the session back.
    mem.index([src])
    with open(src / "leak.jsonl", "a") as fh:
        for r in generic_session(
            "leak-1", [("and the bucket name?", "deploy-artifacts-prod")], start="2026-03-02T10:00:00Z"
        ):
            fh.write(json.dumps(r) + "\n")
    report = mem.index([src])
    assert report.files[0]["skipped"].get("forgotten", 0) >= 1
    assert not _found(mem, LEAK, "leak-1") and not _found(mem, "deploy-artifacts-prod", "leak-1")
    assert _found(mem, "exit code 137", "deploy-1"), "the other sessions are untouched"

    forgets = [
        e for e in map(json.loads, (mem.home / "events.jsonl").read_text().splitlines()) if e["type"] == "forget"
    ]
    assert forgets and forgets[0]["id"] == "leak-1" and LEAK not in json.dumps(forgets)

    mem.forget(session="leak-1", undo=True)
    assert _found(mem, LEAK, "leak-1") and _found(mem, "deploy-artifacts-prod", "leak-1")


def test_a_forgotten_file_is_never_read_again(tmp_path, fake_embedder):
    mem, src = _index(tmp_path, fake_embedder)
    report = mem.forget(path=src / "cooking.jsonl")
    assert report["chunks"] == 2
    assert not _found(mem, "pasta sauce basil", "cook-1")
    report = mem.index([src])
    assert str((src / "cooking.jsonl").resolve()) not in {f["path"] for f in report.files}
    assert not _found(mem, "pasta sauce basil", "cook-1")
    mem.forget(path=src / "cooking.jsonl", undo=True)
    assert _found(mem, "pasta sauce basil", "cook-1")


def test_a_forgotten_chunk_stays_out_wherever_its_text_turns_up(tmp_path, fake_embedder):
    mem, src = _index(tmp_path, fake_embedder)
    [hit] = [h for h in mem.search("keepalive timeout", k=3) if "keepalive" in h.text][:1]
    mem.forget(chunk=hit.id)
    assert mem.get(hit.id) is None
    # The same exchange exported again elsewhere is the same chunk: it stays out.
    write_jsonl(tmp_path / "copy" / "again.jsonl", generic_session("copy-1", DEPLOY))
    mem.index([tmp_path / "copy"])
    assert mem.get(hit.id) is None
    assert any("exit code 137" in h.text for h in mem.search("exit code 137", k=3)), "the rest of it is there"


@pytest.mark.parametrize("damaged", ["vectors.usearch", "manifest.json"])
def test_what_was_forgotten_stays_forgotten_through_a_repair(tmp_path, fake_embedder, damaged):
    # A repair rebuilds the home from its sources, which still hold the forgotten text: it
    # must keep the tombstones, as a re-index does, or `forget` would last until the next
    # repair; they live in the manifest and, for a repair that cannot read it, beside it.
    mem, src = _index(tmp_path, fake_embedder)
    write_jsonl(
        src / "leak.jsonl",
        generic_session(
            "leak-1",
            [
                ("set up the deploy credentials", f"Use the key {LEAK} with region eu-west-1 for the deploy bucket."),
                ("and the retention policy?", "Keep deploy logs for ninety days in the archive bucket."),
            ],
        )
        + generic_session("leak-2", [("which region again?", "The bucket lives in eu-west-1 near the leak")]),
    )
    mem.index([src])
    [leaked] = [h.id for h in mem.search(LEAK, k=5, threshold=0.0) if h.session_id == "leak-1"]
    mem.forget(session="leak-1")
    mem.forget(path=src / "cooking.jsonl")
    kept = mem.search("ninety days retention", k=3, threshold=0.0)
    assert not any(h.session_id == "leak-1" for h in kept)
    (mem.home / damaged).write_bytes(b"damaged")
    report = mem.repair()
    assert report.repaired and report.files_reindexed > 0
    assert mem.verify()["sound"]
    assert mem.get(leaked) is None and not _found(mem, LEAK, "leak-1")
    assert not _found(mem, "ninety days retention", "leak-1") and not _found(mem, "pasta sauce basil", "cook-1")
    assert _found(mem, "which region again", "leak-2"), "the file's other session is indexed again"
    # The tombstones came along: the repaired home can still lift them.
    mem.forget(session="leak-1", undo=True)
    assert _found(mem, LEAK, "leak-1")


@pytest.mark.parametrize("damage", ["garbage", "missing", "stale"])
def test_a_damaged_copy_of_the_tombstones_is_noted_and_rewritten_by_the_next_index_run(tmp_path, fake_embedder, damage):
    # The copy beside the manifest is what a repair reads when the manifest is lost: a copy
    # that is gone or wrong would let forgotten sessions back then. Verify notes it, and the
    # next commit rewrites it even when nothing else changed.
    mem, src = _index(tmp_path, fake_embedder)
    mem.forget(session="leak-1")
    copy = mem.home / "forgotten.json"
    assert "leak-1" in copy.read_text()
    assert not [f for f in mem.verify()["findings"] if f["path"] == str(copy)]
    if damage == "garbage":
        copy.write_bytes(b"\x00not json")
    elif damage == "missing":
        copy.unlink()
    else:
        copy.write_text("{}")
    [note] = [f for f in mem.verify()["findings"] if f["path"] == str(copy)]
    assert note["severity"] == "note" and "tombstones" in note["message"]
    assert mem.index([src]).files_indexed == 0
    assert "leak-1" in copy.read_text()
    assert not [f for f in mem.verify()["findings"] if f["path"] == str(copy)]
    (mem.home / "manifest.json").write_bytes(b"damaged")
    mem.repair()
    assert not _found(mem, LEAK, "leak-1"), "the rewritten copy kept the session forgotten"


def test_forget_from_the_cli(tmp_path, capsys):
    src = write_deploy_and_cooking(tmp_path / "src")
    home = str(tmp_path / "home")
    assert main(["--home", home, "index", str(src), "--embed", "none"]) == 0
    capsys.readouterr()
    assert main(["--home", home, "forget", "--session", "cook-1", "--dry-run", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["chunks"] == 2
    assert main(["--home", home, "forget", "--session", "cook-1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("forgot 2 chunks") and "--undo --session cook-1" in out
    assert main(["--home", home, "forget", "--session", "nope"]) == 2
    assert "no chunk of session nope" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--home", home, "forget"])


def test_a_key_searched_for_by_its_value_stays_out_of_the_events_log(tmp_path, fake_embedder):
    mem, _ = _index(tmp_path, fake_embedder)
    assert _found(mem, LEAK, "leak-1")
    log = (mem.home / "events.jsonl").read_text()
    assert LEAK not in log and "AKIA…" in log
