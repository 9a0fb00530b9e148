"""benches/side_by_side.py: the MemPalace transcripts mirror memlane's parse, and drawer hits map to turns honestly."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from conftest import bench_fixture_dir

from memlane.bench.datasets import load_locomo

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = bench_fixture_dir()


def _side_by_side():
    spec = importlib.util.spec_from_file_location("side_by_side", ROOT / "benches" / "side_by_side.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_transcripts_hold_every_turn_once_with_user_turns_quoted(tmp_path: Path) -> None:
    sbs = _side_by_side()
    conv = next(iter(load_locomo(FIXTURES / "locomo_mini.json", "dev").conversations))
    files, session_of, lines_of = sbs.transcript_files(conv, tmp_path)
    assert set(files) == set(session_of) == set(lines_of)
    assert {s for q in conv.questions for s in q.gold_sessions} <= set(session_of.values())
    ids = [i for lines in lines_of.values() for _, turn_ids in lines for i in turn_ids]
    assert len(ids) == len(set(ids)) and ids
    for name, text in files.items():
        rendered = text.rstrip("\n").split("\n")
        assert [r.removeprefix("> ") for r in rendered] == [line for line, _ in lines_of[name]]
        assert any(r.startswith("> ") for r in rendered)
    # Every gold turn of the fixture is in some transcript.
    assert {t for q in conv.questions for t in q.gold_turns} <= set(ids)


def test_drawer_counts_only_for_the_turns_it_shows() -> None:
    sbs = _side_by_side()
    lines = [
        ("Ann: I adopted a cat named Tom.", ["D1:1"]),
        ("Bob: Nice! How old is he?", ["D1:2"]),
        ("Ann: Two years.", ["D1:3"]),
    ]
    assert sbs.drawer_turn_ids("> Ann: I adopted a cat named Tom.\nBob: Nice! How old is he?", lines) == [
        "D1:1",
        "D1:2",
    ]
    # A line cut by the drawer size limit counts for the turn it comes from, and nothing else.
    assert sbs.drawer_turn_ids("How old is he?", lines) == ["D1:2"]
    assert sbs.drawer_turn_ids("something MemPalace added", lines) == []
