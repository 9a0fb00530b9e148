"""Task memory: the agents' own plans (Claude Code TodoWrite, Codex update_plan) carried across
sessions, through the real parser, `memlane index` and `memlane tasks`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import write_jsonl

from memlane.brain import tasks
from memlane.cli import main


def repo(root: Path, name: str) -> Path:
    d = root / name
    (d / ".git").mkdir(parents=True)
    return d


def claude_session(session_id: str, cwd: Path, plans: list[list[dict]], day: str = "2026-03-02") -> list[dict]:
    """A Claude Code transcript: a user turn, then one assistant turn per TodoWrite call."""
    rows: list[dict] = []
    parent = None
    for i, todos in enumerate(plans):
        common = {
            "isSidechain": False,
            "userType": "external",
            "cwd": str(cwd),
            "sessionId": session_id,
            "version": "2.1.0",
        }
        uid, aid = f"{session_id}-u{i}", f"{session_id}-a{i}"
        rows.append(
            {
                "type": "user",
                "timestamp": f"{day}T10:{i:02d}:00.000Z",
                "parentUuid": parent,
                "uuid": uid,
                **common,
                "message": {
                    "role": "user",
                    "content": [{"type": "text", "text": f"Step {i}: carry on with the exporter work."}],
                },
            }
        )
        rows.append(
            {
                "type": "assistant",
                "timestamp": f"{day}T10:{i:02d}:30.000Z",
                "parentUuid": uid,
                "uuid": aid,
                **common,
                "message": {
                    "id": f"msg_{aid}",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-sonnet-4",
                    "content": [
                        {"type": "text", "text": "Updating the plan."},
                        {"type": "tool_use", "id": f"tu_{aid}", "name": "TodoWrite", "input": {"todos": todos}},
                    ],
                },
            }
        )
        parent = aid
    return rows


def todo(content: str, status: str, **extra: str) -> dict:
    return {"content": content, "status": status, "activeForm": content, **extra}


def run(home: Path, *args: str) -> int:
    return main(["--home", str(home), *args])


def tasks_json(home: Path, capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    capsys.readouterr()
    assert run(home, "--json", "tasks", *args) == 0
    return json.loads(capsys.readouterr().out)


def test_open_items_carry_to_the_project_and_close_in_a_later_session(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home, logs = tmp_path / "home", tmp_path / "logs"
    app, web = repo(tmp_path, "app"), repo(tmp_path, "web")
    (app / "src").mkdir()
    write_jsonl(
        logs / "s1.jsonl",
        claude_session(
            "s1",
            app / "src",
            [
                [
                    todo("Add retry to the exporter", "in_progress", priority="high"),
                    todo("Write the changelog", "pending"),
                    todo("Rename the flag", "pending"),
                ],
                # The agent rewrote its plan: the flag rename is gone (dropped), the changelog done.
                [
                    todo("Add retry to the exporter", "in_progress", priority="high"),
                    todo("Write the changelog", "completed"),
                    todo("Bump the version", "pending"),
                ],
            ],
        ),
    )
    write_jsonl(logs / "w1.jsonl", claude_session("w1", web, [[todo("Fix the login page", "pending")]]))
    assert run(home, "index", str(logs), "--embed", "none") == 0

    found = tasks_json(home, capsys, "--project", str(app))["tasks"]
    assert [(t["description"], t["status"]) for t in found] == [
        ("Add retry to the exporter", "in_progress"),
        ("Bump the version", "pending"),
    ]
    assert found[0]["priority"] == "high" and found[0]["session_id"] == "s1" and found[0]["project"] == str(app)
    assert [t["description"] for t in tasks_json(home, capsys, "--project", "web")["tasks"]] == ["Fix the login page"]
    closed = {t["description"]: t["status"] for t in tasks_json(home, capsys, "--project", "app", "--all")["tasks"]}
    assert closed == {
        "Add retry to the exporter": "in_progress",
        "Bump the version": "pending",
        "Write the changelog": "completed",
        "Rename the flag": "dropped",
    }
    assert "Open from last time" in tasks.carried_block(home, str(app), 2000)
    assert "Fix the login page" not in tasks.carried_block(home, str(app), 2000)
    assert tasks.carried_block(home, str(web), 2000).count("\n- ") == 1

    # Re-indexing what is unchanged changes nothing; a later session closes the retry.
    before = (home / tasks.TASKS_NAME).read_text()
    assert run(home, "index", str(logs), "--embed", "none") == 0
    assert (home / tasks.TASKS_NAME).read_text() == before
    write_jsonl(
        logs / "s2.jsonl",
        claude_session("s2", app, [[todo("Add retry to the exporter", "completed")]], day="2026-03-03"),
    )
    assert run(home, "index", str(logs), "--embed", "none") == 0
    assert [t["description"] for t in tasks_json(home, capsys, "--project", "app")["tasks"]] == ["Bump the version"]

    # An older transcript indexed late does not re-open what a newer session closed.
    write_jsonl(
        logs / "s0.jsonl", claude_session("s0", app, [[todo("Add retry to the exporter", "pending")]], day="2026-03-01")
    )
    assert run(home, "index", str(logs), "--embed", "none") == 0
    assert [t["description"] for t in tasks_json(home, capsys, "--project", "app")["tasks"]] == ["Bump the version"]


def test_a_plan_appended_to_a_growing_transcript_updates_its_tasks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home, app = tmp_path / "home", repo(tmp_path, "app")
    path = tmp_path / "s1.jsonl"
    rows = claude_session(
        "s1",
        app,
        [
            [todo("Port the parser", "in_progress"), todo("Drop Python 3.8", "pending")],
            [todo("Port the parser", "completed")],
        ],
    )
    write_jsonl(path, rows[:2])
    assert run(home, "index", str(path), "--embed", "none") == 0
    assert len(tasks_json(home, capsys)["tasks"]) == 2
    # The hook's incremental index reads only the appended turn: its plan drops 3.8 and closes the port.
    with path.open("a", encoding="utf-8") as f:
        f.write("".join(json.dumps(r) + "\n" for r in rows[2:]))
    assert run(home, "index", str(path), "--embed", "none") == 0
    assert tasks_json(home, capsys)["tasks"] == []
    statuses = {t["description"]: t["status"] for t in tasks_json(home, capsys, "--all")["tasks"]}
    assert statuses == {"Port the parser": "completed", "Drop Python 3.8": "dropped"}


def test_codex_update_plan_is_read_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home, app = tmp_path / "home", repo(tmp_path, "app")
    plan = {
        "explanation": "two steps",
        "plan": [
            {"step": "Profile the query path", "status": "in_progress"},
            {"step": "Cache the embeddings", "status": "pending"},
        ],
    }
    rows = [
        {
            "timestamp": "2026-03-02T10:00:00.000Z",
            "type": "session_meta",
            "payload": {"id": "c1", "cwd": str(app), "timestamp": "2026-03-02T10:00:00.000Z"},
        },
        {
            "timestamp": "2026-03-02T10:00:01.000Z",
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "Make search faster."}],
            },
        },
        {
            "timestamp": "2026-03-02T10:00:02.000Z",
            "type": "response_item",
            "payload": {
                "type": "function_call",
                "name": "update_plan",
                "arguments": json.dumps(plan),
                "call_id": "call_1",
            },
        },
    ]
    write_jsonl(tmp_path / "rollout-2026-03-02T10-00-00-c1.jsonl", rows)
    assert run(home, "index", str(tmp_path / "rollout-2026-03-02T10-00-00-c1.jsonl"), "--embed", "none") == 0
    found = tasks_json(home, capsys, "--project", "app")["tasks"]
    assert [(t["description"], t["status"], t["session_id"]) for t in found] == [
        ("Profile the query path", "in_progress", "c1"),
        ("Cache the embeddings", "pending", "c1"),
    ]


def test_export_writes_the_designs_schema_and_open_threads_are_listed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home, app = tmp_path / "home", repo(tmp_path, "app")
    write_jsonl(tmp_path / "s1.jsonl", claude_session("s1", app, [[todo("Ship 2.0", "pending", priority="medium")]]))
    assert run(home, "index", str(tmp_path / "s1.jsonl"), "--embed", "none") == 0
    assert run(home, "brain", "add", "ot", "Decide whether the exporter keeps CSV.", "--project", str(app)) == 0
    listed = tasks_json(home, capsys, "--project", "app")
    assert [e["text"] for e in listed["open_threads"]] == ["Decide whether the exporter keeps CSV."]
    out = tmp_path / "tasks.json"
    assert run(home, "tasks", "--project", "app", "--export", str(out)) == 0
    doc = json.loads(out.read_text())
    (task,) = doc["tasks"]
    assert {
        "id",
        "priority",
        "status",
        "description",
        "acceptance_criteria",
        "created",
        "completed",
        "blocked_by",
    } <= set(task)
    assert (task["description"], task["priority"], task["status"], task["completed"]) == (
        "Ship 2.0",
        "medium",
        "pending",
        None,
    )
    assert task["id"] == tasks.task_id(str(app), "ship 2.0")


def test_the_mcp_tasks_tool_lists_the_sessions_project_and_a_project_agent_its_own(tmp_path: Path) -> None:
    from memlane.agents.mcp import MemoryTools
    from memlane.roles import Role

    home, app, web = tmp_path / "home", repo(tmp_path, "app"), repo(tmp_path, "web")
    write_jsonl(tmp_path / "s1.jsonl", claude_session("s1", app, [[todo("Ship 2.0", "pending")]]))
    write_jsonl(tmp_path / "w1.jsonl", claude_session("w1", web, [[todo("Fix the login page", "in_progress")]]))
    assert run(home, "index", str(tmp_path / "s1.jsonl"), str(tmp_path / "w1.jsonl"), "--embed", "none") == 0
    here = MemoryTools(home, embedder="none", cwd=str(app)).tasks()
    assert "Ship 2.0" in here and "Fix the login page" not in here
    assert "Fix the login page" in MemoryTools(home, embedder="none", cwd=str(app)).tasks("web")
    agent = MemoryTools(home, embedder="none", role=Role.parse("project:app"), cwd=str(app))
    with pytest.raises(PermissionError):
        agent.tasks("web")
