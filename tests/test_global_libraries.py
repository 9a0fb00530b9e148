"""A notes library in no repository is the user's own and joins every project's recall; a library
inside a repository is that repository's (issue 38's scoping decision).

Two repositories, alpha and beta, each with a session; a personal notes folder outside both;
beta's own docs/ library; and a session run inside the notes folder itself. The notes folder
and beta's docs say the same thing about alpha's deploy in words only they use, so each hit
shows which library it came from.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import write_jsonl
from test_projects import claude_lines

import memlane
from memlane.cli import main

ALPHA_TURN = ("how do we deploy alpha?", "Alpha deploys run through make release-alpha from the main branch.")
BETA_TURN = ("how do we deploy beta?", "Beta deploys go through the beta pipeline, with a checklist like alpha's.")
NOTES_SESSION = (
    "tidy my alpha deploy checklist notes",
    "Reordered the alpha deploy checklist notes; the zephyr step stays.",
)
PERSONAL = "# Alpha deploy checklist\n\nBefore an alpha deploy, freeze the zephyr queue and page the on-call (personal runbook).\n"
BETA_DOC = "# Alpha deploy checklist\n\nBefore an alpha deploy, freeze the zephyr queue and page the on-call (beta repository copy).\n"


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for name in ("alpha", "beta"):
        (tmp_path / "src" / name / ".git").mkdir(parents=True)
        (tmp_path / "src" / name / "services").mkdir()
        out[name] = tmp_path / "src" / name
    notes = tmp_path / "notes"
    (notes / "DailyActivity").mkdir(parents=True)
    (notes / "checklists.md").write_text(PERSONAL)
    (notes / "DailyActivity" / "2026-03-02.md").write_text(
        "## 09:00 Zephyr\n\nMoved the zephyr queue freeze to the alpha checklist.\n"
    )
    (out["beta"] / "docs").mkdir()
    (out["beta"] / "docs" / "checklists.md").write_text(BETA_DOC)
    t = tmp_path / "transcripts"
    write_jsonl(t / "a1.jsonl", claude_lines("a1", [(*ALPHA_TURN, str(out["alpha"]), "main")]))
    write_jsonl(t / "b1.jsonl", claude_lines("b1", [(*BETA_TURN, str(out["beta"]), "main")]))
    # A session run in the notes folder: a transcript, never part of another project's recall.
    write_jsonl(t / "n1.jsonl", claude_lines("n1", [(*NOTES_SESSION, str(notes), "")]))
    out["notes"], out["transcripts"], out["home"] = notes, t, tmp_path / "home"
    return out


def _index(world: dict[str, Path], embedder: object = "none") -> memlane.Memory:
    mem = memlane.open(world["home"], embedder=embedder)
    mem.index([world["transcripts"], world["notes"], world["beta"] / "docs"], embed=embedder != "none")
    return mem


def _kinds(hits: list[memlane.Hit], world: dict[str, Path]) -> set[str]:
    """What each hit is: alpha/beta/notes transcript, personal note, beta doc."""
    named = {str(world["alpha"]): "alpha", str(world["beta"]): "beta", str(world["notes"]): "notes"}
    return {f"{named.get(h.project, h.project)} {h.source}" for h in hits}


def test_libraries_are_listed_and_marked_global_outside_any_repository(world: dict[str, Path]) -> None:
    mem = _index(world)
    libraries = {lib["path"]: lib for lib in mem.libraries()}
    assert libraries == {
        str(world["notes"]): {"path": str(world["notes"]), "notes": 2, "global": True},
        str(world["beta"]): {"path": str(world["beta"]), "notes": 1, "global": False},
    }
    # Read from the folder when asked, so no re-index is needed either way: a notes folder
    # that becomes a repository is its own project from then on.
    (world["notes"] / ".git").mkdir()
    with memlane.open(world["home"], embedder="none") as again:
        assert {lib["path"]: lib["global"] for lib in again.libraries()} == {
            str(world["notes"]): False,
            str(world["beta"]): False,
        }


@pytest.mark.parametrize("embedded", [False, True])
def test_a_project_search_reads_the_global_library_but_no_other_project(
    world: dict[str, Path], embedded: bool, request: pytest.FixtureRequest
) -> None:
    embedder = request.getfixturevalue("fake_embedder") if embedded else "none"
    mem = _index(world, embedder)
    query = "alpha deploy zephyr queue checklist"
    everything = _kinds(mem.search(query, k=20, threshold=0), world)
    assert everything == {
        "alpha transcript",
        "beta transcript",
        "notes transcript",
        "notes knowledge",
        "beta knowledge",
    }
    for project in ("alpha", str(world["alpha"] / "services"), str(world["alpha"])):
        hits = mem.search(query, k=20, threshold=0, project=project)
        # Alpha's own and the personal notes; never beta's transcripts or its repository notes,
        # nor the session that ran inside the notes folder.
        assert _kinds(hits, world) == {"alpha transcript", "notes knowledge"}, project
        assert any("personal runbook" in h.text for h in hits) and not any(
            "beta repository copy" in h.text for h in hits
        )
    # Beta's search reads its own docs and the personal notes.
    assert _kinds(mem.search(query, k=20, threshold=0, project="beta"), world) == {
        "beta transcript",
        "beta knowledge",
        "notes knowledge",
    }
    # A branch names where transcripts were written: notes carry none.
    assert _kinds(mem.search(query, k=20, threshold=0, project="alpha", branch="main"), world) == {"alpha transcript"}


def test_the_hooks_of_a_session_in_a_repository_recall_the_global_notes(
    world: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from test_projects import hook_context

    from memlane.agents.hooks import session_start, user_prompt_submit

    monkeypatch.delenv("MEMLANE_BRAIN_DIR", raising=False)
    _index(world).close()
    payload = {
        "session_id": "s-alpha",
        "cwd": str(world["alpha"]),
        "prompt": "what is on the alpha deploy checklist, the zephyr step?",
    }
    for recalled in (
        hook_context(session_start(world["home"], payload)),
        hook_context(user_prompt_submit(world["home"], payload)),
    ):
        assert "personal runbook" in recalled and "beta repository copy" not in recalled
        assert "beta pipeline" not in recalled and "Reordered the alpha deploy checklist notes" not in recalled


def test_mcp_project_agent_recalls_and_gets_global_notes_only_beside_its_project(
    world: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from memlane.agents.mcp import MemoryTools
    from memlane.roles import Role

    monkeypatch.delenv("MEMLANE_BRAIN_DIR", raising=False)
    mem = _index(world)
    by_text = {h.text: h for h in mem.search("alpha deploy zephyr queue checklist", k=20, threshold=0)}
    personal = next(h for t, h in by_text.items() if "personal runbook" in t)
    beta_doc = next(h for t, h in by_text.items() if "beta repository copy" in t)
    notes_session = next(h for t, h in by_text.items() if "Reordered" in t)
    for role in ("project:alpha", "skill:review"):
        tools = MemoryTools(world["home"], embedder="none", role=Role.parse(role), cwd=str(world["alpha"]))
        recalled = tools.recall("alpha deploy zephyr queue checklist")
        assert "personal runbook" in recalled and "beta repository copy" not in recalled and "Reordered" not in recalled
        assert "personal runbook" in tools.get(personal.id)
        for outside in (beta_doc, notes_session):
            with pytest.raises(KeyError):
                tools.get(outside.id)
        assert "global libraries" in tools.status()


def test_status_lists_the_libraries_and_marks_the_global_ones(
    world: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _index(world).close()
    assert main(["--home", str(world["home"]), "--json", "status"]) == 0
    libraries = json.loads(capsys.readouterr().out)["libraries"]
    assert [(lib["path"], lib["global"]) for lib in libraries] == sorted(
        [(str(world["notes"]), True), (str(world["beta"]), False)]
    )
    assert main(["--home", str(world["home"]), "status"]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("libraries"))
    assert line.startswith("libraries   2, 1 global (read in every project): ")
    assert f"{world['notes']} (global, 2 notes)" in line and f"{world['beta']} (project only, 1 note)" in line


def test_a_mistyped_project_gets_the_global_notes_and_a_line_saying_so(
    world: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _index(world).close()
    argv = [
        "--home",
        str(world["home"]),
        "--json",
        "search",
        "alpha deploy zephyr queue checklist",
        "--embed",
        "none",
        "--project",
        "alpah",
    ]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert {h["source"] for h in json.loads(out)} == {"knowledge"} and all(
        h["project"] == str(world["notes"]) for h in json.loads(out)
    )
    assert "no project named 'alpah' in this home (projects: alpha, beta, notes)" in err
    assert main([*argv[:-1], "alpha"]) == 0
    assert capsys.readouterr().err == ""
