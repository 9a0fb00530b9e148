"""Paths and folders given to the timeline commands (issue 38, items 8 and 10).

A source named to ``wiki stub`` resolves inside the brain folder (after ``..`` and symlinks) or
is refused in one line; a brain folder that does not exist is refused by the commands that only
read or maintain one, and compaction says what happened when nothing was due.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from test_timeline_wiki import daily

from memlane.brain import Brain
from memlane.cli import main
from memlane.timeline.wiki import Wiki


@pytest.fixture(autouse=True)
def _own_brain(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMLANE_BRAIN_DIR", raising=False)


@pytest.fixture
def brain_dir(tmp_path: Path) -> Path:
    brain = tmp_path / "brain"
    daily(brain, "2026-03-02", "- Grafana dashboards for billing were rebuilt.")
    daily(brain, "2026-03-03", "- We switched the billing database from Postgres to DynamoDB.")
    return brain


def stub(tmp_path: Path, brain: str | Path, source: str, name: str = "Grafana") -> int:
    return main(
        [
            "wiki",
            "stub",
            name,
            "--category",
            "entity",
            "--source",
            source,
            "--home",
            str(tmp_path / "home"),
            "--brain",
            str(brain),
        ]
    )


@pytest.mark.parametrize(
    "source", ["../../etc/passwd", "../../../../etc/passwd › 00:00", "/etc/passwd", "DailyActivity/../../outside.md"]
)
def test_a_source_outside_the_brain_folder_is_refused_in_one_line(
    tmp_path: Path, brain_dir: Path, capsys, source: str
) -> None:
    (tmp_path / "outside.md").write_text("# outside\n\n## 00:00 | secret\n- Grafana password hunter2 lives here.\n")
    assert stub(tmp_path, brain_dir, source) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("memlane wiki: ")
    assert "is not a file in the brain folder" in err and "DailyActivity/YYYY-MM-DD.md › HH:MM" in err
    assert not (brain_dir / "wiki").exists()


def test_a_symlink_out_of_the_brain_folder_is_refused(tmp_path: Path, brain_dir: Path, capsys) -> None:
    (tmp_path / "outside.md").write_text("# 2026-03-04\n\n## 10:00 | work\n- Grafana admin password is hunter2.\n")
    os.symlink(tmp_path / "outside.md", brain_dir / "DailyActivity" / "2026-03-04.md")
    assert stub(tmp_path, brain_dir, "DailyActivity/2026-03-04.md › 10:00") == 2
    assert "is not a file in the brain folder" in capsys.readouterr().err
    assert not (brain_dir / "wiki").exists()


def test_an_absolute_source_inside_the_brain_works_and_is_stored_relative(
    tmp_path: Path, brain_dir: Path, monkeypatch, capsys
) -> None:
    # The brain named relative to the working directory: the case that failed with "is not in the subpath".
    monkeypatch.chdir(tmp_path)
    assert stub(tmp_path, "brain", f"{brain_dir}/DailyActivity/2026-03-02.md › 10:00") == 0
    assert "wrote" in capsys.readouterr().out
    page = Wiki(Brain(brain_dir, home=tmp_path / "home")).get("Grafana")
    assert page.sources == ["DailyActivity/2026-03-02.md › 10:00"]
    assert page.facts == [("Grafana dashboards for billing were rebuilt.", ["DailyActivity/2026-03-02.md › 10:00"])]
    # A relative source that wanders and comes back is the same daily.
    assert stub(tmp_path, brain_dir, "wiki/../DailyActivity/2026-03-03.md › 10:00", name="billing database") == 0
    assert Wiki(Brain(brain_dir, home=tmp_path / "home")).get("billing database").sources == [
        "DailyActivity/2026-03-03.md › 10:00"
    ]


@pytest.mark.parametrize(
    "argv",
    [
        ["dream", "--embed", "none"],
        ["dream", "status"],
        ["compact", "--embed", "none"],
        ["wiki", "list"],
        ["wiki", "stub", "Grafana", "--source", "DailyActivity/2026-03-02.md › 10:00"],
        ["brain", "check"],
        ["brain", "status"],
        ["brain", "index"],
        ["brain", "archive"],
    ],
)
def test_a_mistyped_brain_folder_is_refused_and_not_created(
    tmp_path: Path, brain_dir: Path, capsys, argv: list[str]
) -> None:
    typo = tmp_path / "brian"
    assert main([*argv, "--home", str(tmp_path / "home"), "--brain", str(typo)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"no brain folder at {typo} (--brain)" in err and "memlane brain add" in err
    assert not typo.exists()


def test_commands_that_start_a_brain_still_may(tmp_path: Path, capsys) -> None:
    new = tmp_path / "new-brain"
    assert main(["--home", str(tmp_path / "home"), "brain", "--brain", str(new), "add", "kd", "Use uv for envs."]) == 0
    assert (new / "MEMORY.md").exists()


def test_compact_says_nothing_was_due_instead_of_not_writing_zero_summaries(
    tmp_path: Path, brain_dir: Path, capsys
) -> None:
    base = [
        "compact",
        "--home",
        str(tmp_path / "home"),
        "--brain",
        str(brain_dir),
        "--embed",
        "none",
        "--today",
        "2026-03-20",
    ]
    assert main(base) == 0  # two dailies: no week holds three
    out = capsys.readouterr().out
    assert (
        out
        == "nothing due (2 dailies, 0 summaries up to date): a week is compacted once it is over with 3 dailies, a month once it is over with 2 weeklies\n"
    )

    daily(brain_dir, "2026-03-04", "- Grafana alerts for billing were noisy.")
    assert main(base) == 0
    assert capsys.readouterr().out.startswith("wrote 1 summary (0 summaries up to date) with the offline engine")
    assert main([*base, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["summaries"], report["up_to_date"]) == ([], 1)
    assert main(base) == 0
    assert capsys.readouterr().out.startswith("nothing due (3 dailies, 1 summary up to date): ")
    assert main([*base, "--dry-run"]) == 0
    assert "would write 0" not in capsys.readouterr().out
