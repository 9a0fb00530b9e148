"""`memlane brain import` reads each file of the shared folder on its own (issue 38, items 7 and 9).

A bad file (undecodable, without the team header, half-merged) is named and skipped while the
good ones are imported; from a good file only what export writes is taken: team-scoped entries
keyed with the file owner's id.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memlane.brain import Brain
from memlane.brain.team import export_team, import_team
from memlane.cli import main


@pytest.fixture(autouse=True)
def _own_brain(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMLANE_BRAIN_DIR", raising=False)


def exported(tmp_path: Path, name: str, text: str, shared: Path) -> Path:
    """A real export: ``name``'s brain with one team entry, written to ``shared``."""
    brain = Brain(tmp_path / name / "brain", home=tmp_path / name)
    brain.add("kd", text, project="billing", on="2026-04-01")
    return Path(export_team(brain, shared).path)


def test_one_bad_file_does_not_stop_the_others_and_each_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shared = tmp_path / "team"
    alice = exported(tmp_path, "alice", "Invoices live in Postgres 16.", shared)
    bob = exported(tmp_path, "bob", "The web app caches pages in Redis.", shared)
    # A file that is not UTF-8 (what the issue found aborting the whole import) ...
    (shared / "carol-33333333.md").write_bytes(b"# Team memory \x83\x00\x01 carol\n\xff\xfe")
    # ... one without the header export writes (a note someone dropped in the folder) ...
    (shared / "notes.md").write_text(
        "## Key Decisions\n- [KD01-44444444] 2026-04-01 — Deploys need two approvals.\n  <!-- scope: team -->\n"
    )
    # ... and someone else's file holding a private entry beside a team one.
    (shared / "mallory-0badc0de.md").write_text(
        "# Team memory · mallory-0badc0de\n\n## Key Decisions\n"
        "- [KD01-0badc0de] 2026-04-02 — Releases go out on Tuesdays.\n  <!-- type: project | scope: team -->\n"
        "- [KD02-0badc0de] 2026-04-02 — Mallory's salary review is in May.\n  <!-- type: project | scope: private -->\n"
    )
    home = tmp_path / "me"

    assert main(["--home", str(home), "--json", "brain", "import", str(shared)]) == 1
    report = json.loads(capsys.readouterr().out)
    assert (report["added"], report["updated"], report["unchanged"]) == (3, 0, 0)
    assert sorted(report["files"]) == sorted([str(alice), str(bob), str(shared / "mallory-0badc0de.md")])
    skipped = {Path(s["path"]).name: s["reason"] for s in report["skipped"]}
    assert skipped.keys() == {"carol-33333333.md", "notes.md"}
    assert skipped["carol-33333333.md"].startswith("not UTF-8 text (byte 0x83 at offset 14)")
    assert skipped["notes.md"].startswith("no team header")
    assert report["private_skipped"] == 1
    assert [(Path(e["path"]).name, e["key"], e["reason"]) for e in report["skipped_entries"]] == [
        ("mallory-0badc0de.md", "KD02-0badc0de", "scope: private (only team entries are shared)")
    ]

    texts = sorted(e.text for e in Brain(home / "brain", home=home).entries())
    assert texts == [
        "Invoices live in Postgres 16.",
        "Releases go out on Tuesdays.",
        "The web app caches pages in Redis.",
    ]

    # Without --json: one line per file or entry left out, each naming it; exit 1 again (nothing new added).
    assert main(["--home", str(home), "brain", "import", str(shared)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "imported from 3 files: 0 added, 0 updated, 3 unchanged"
    assert f"skipped {shared / 'carol-33333333.md'}: not UTF-8 text (byte 0x83 at offset 14)" in out
    assert any(line.startswith(f"skipped {shared / 'notes.md'}: no team header") for line in out)
    assert (
        f"left out KD02-0badc0de of {shared / 'mallory-0badc0de.md'}: scope: private (only team entries are shared)"
        in out
    )

    # A folder of good files only: exit 0.
    for bad in ("carol-33333333.md", "notes.md", "mallory-0badc0de.md"):
        (shared / bad).unlink()
    assert main(["--home", str(home), "brain", "import", str(shared)]) == 0


def test_a_file_export_did_not_write_is_skipped_whole(tmp_path: Path) -> None:
    shared = tmp_path / "team"
    exported(tmp_path, "alice", "Invoices live in Postgres 16.", shared)
    # A merge git could not finish: neither side can be trusted.
    (shared / "dave-55555555.md").write_text(
        "# Team memory · dave-55555555\n\n## Key Decisions\n<<<<<<< HEAD\n"
        "- [KD01-55555555] 2026-04-01 — Use uv.\n  <!-- scope: team -->\n=======\n"
        "- [KD01-55555555] 2026-04-01 — Use poetry.\n  <!-- scope: team -->\n>>>>>>> origin/main\n"
    )
    (shared / "erin-66666666.md").write_text("# Team memory · erin-66666666\n\n## Hot Takes\n- [HT01-66666666] Tabs.\n")
    (shared / "folder.md").mkdir()
    # An entry keyed with alice's id in frank's file would overwrite alice's entry here.
    alice_id = json.loads((tmp_path / "alice" / "brain" / "team.json").read_text())["id"]
    (shared / "frank-77777777.md").write_text(
        "# Team memory · frank-77777777\n\n## Key Decisions\n"
        f"- [KD01-{alice_id}] 2026-04-03 — Invoices moved to a spreadsheet.\n  <!-- scope: team -->\n"
        "- [KD01-77777777] 2026-04-03 — Frank owns the exporter.\n"
    )
    brain = Brain(tmp_path / "me" / "brain", home=tmp_path / "me")

    report = import_team(brain, shared)
    reasons = {Path(s["path"]).name: s["reason"] for s in report.skipped}
    assert reasons == {
        "dave-55555555.md": "line 4 is a git conflict marker: finish the merge first",
        "erin-66666666.md": "line 3: unknown section 'Hot Takes'",
        "folder.md": "not a regular file",
    }
    assert [(e["key"], e["reason"]) for e in report.skipped_entries] == [
        (f"KD01-{alice_id}", "not keyed with the file owner's id 77777777"),
        ("KD01-77777777", "not marked scope: team"),
    ]
    assert report.added == 1 and not report.complete
    assert [e.text for e in brain.entries()] == ["Invoices live in Postgres 16."]
