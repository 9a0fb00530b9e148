"""Projects and branches: every chunk filed under the repository it was written in (issue 25).

Two repositories whose billing services use different databases, as the issue tells it: the
answer is per project, and a newer statement in one never supersedes the other's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import generic_session, write_jsonl

import memlane
from memlane.cli import main

ALPHA_ANSWER = "Billing in alpha stores invoices in Postgres 16 on the billing-db cluster, with nightly backups."
BETA_ANSWER = "Billing in beta moved to MySQL 8 last month; the invoices table lives in the orders database now."


def claude_lines(session_id: str, turns: list[tuple[str, str, str, str]], start_day: int = 1) -> list[dict]:
    """Claude Code records: (question, answer, cwd, gitBranch) per exchange, chained by uuid."""
    records, parent = [], None
    for i, (question, answer, cwd, branch) in enumerate(turns):
        for role, text in (("user", question), ("assistant", answer)):
            uid = f"{session_id}-{role[0]}{i}"
            message = {"role": role, "content": [{"type": "text", "text": text}]}
            if role == "assistant":
                message = {"id": f"msg_{uid}", **message}
            records.append({"type": role, "timestamp": f"2026-03-{start_day:02d}T10:{2 * i + (role == 'assistant'):02d}:00.000Z",
                            "parentUuid": parent, "cwd": cwd, "gitBranch": branch, "sessionId": session_id, "uuid": uid,
                            "message": message})  # fmt: skip
            parent = uid
    return records


@pytest.fixture
def repos(tmp_path: Path) -> dict[str, Path]:
    """Two git checkouts, alpha and beta, and a folder of transcripts written in them."""
    out = {}
    for name in ("alpha", "beta"):
        root = tmp_path / "src" / name
        (root / ".git").mkdir(parents=True)
        (root / "services" / "billing").mkdir(parents=True)
        out[name] = root
    t = tmp_path / "transcripts"
    write_jsonl(
        t / "claude" / "a1.jsonl",
        claude_lines(
            "a1",
            [
                ("which database does billing use?", ALPHA_ANSWER, str(out["alpha"] / "services" / "billing"), "main"),
            ],
            start_day=1,
        ),
    )
    write_jsonl(
        t / "claude" / "b1.jsonl",
        claude_lines(
            "b1",
            [
                ("which database does billing use?", BETA_ANSWER, str(out["beta"]), "feature/mysql"),
            ],
            start_day=20,
        ),
    )
    out["transcripts"] = t
    return out


def test_the_two_project_example_is_answered_per_project(
    repos: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    assert main(["--home", str(home), "index", str(repos["transcripts"]), "--embed", "none"]) == 0
    capsys.readouterr()
    assert (
        main(["--home", str(home), "--json", "search", "which database does billing use now?", "--embed", "none"]) == 0
    )
    hits = json.loads(capsys.readouterr().out)
    by_project = {Path(h["project"]).name: h for h in hits}
    assert set(by_project) == {"alpha", "beta"}
    # The repository root, not the subfolder the session ran in; the branch as recorded.
    assert by_project["alpha"]["project"] == str(repos["alpha"]) and by_project["alpha"]["branch"] == "main"
    assert by_project["beta"]["branch"] == "feature/mysql"
    # Beta's statement is newer, but about another repository: it supersedes nothing.
    assert all(h["superseded_by"] is None for h in hits)

    # Unscoped, both answers come, each naming the repository it is about.
    assert main(["--home", str(home), "recall", "which database does billing use?", "--embed", "none"]) == 0
    block = capsys.readouterr().out
    assert "· project alpha" in block and "· project beta" in block and "superseded" not in block
    for name, answer, other in (("alpha", ALPHA_ANSWER, BETA_ANSWER), ("beta", BETA_ANSWER, ALPHA_ANSWER)):
        assert (
            main(
                [
                    "--home",
                    str(home),
                    "recall",
                    "which database does billing use?",
                    "--project",
                    name,
                    "--embed",
                    "none",
                ]
            )
            == 0
        )
        block = capsys.readouterr().out
        assert answer in block and other not in block and "superseded" not in block and "· project" not in block
    # A path names the repository around it; a key as hits show it works as well.
    mem = memlane.open(home, embedder="none")
    assert mem.project_keys(str(repos["beta"] / "services")) == [str(repos["beta"])]
    assert [h.text for h in mem.search("billing database", project=str(repos["alpha"]))] == [
        h.text for h in mem.search("billing database", project="alpha")
    ]
    assert [h.branch for h in mem.search("billing database", branch="feature/mysql")] == ["feature/mysql"]


def test_an_unknown_project_name_finds_nothing_and_says_so(
    repos: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    memlane.open(home, embedder="none").index([repos["transcripts"]], embed=False)
    assert main(["--home", str(home), "search", "billing", "--project", "gamma", "--embed", "none"]) == 0
    captured = capsys.readouterr()
    assert "nothing relevant in memory" in captured.out
    assert "no project named 'gamma' in this home (projects: alpha, beta)" in captured.err
    assert memlane.open(home, embedder="none").status()["projects"] == {str(repos["alpha"]): 1, str(repos["beta"]): 1}


def test_the_project_filter_restricts_the_vector_search_too(
    repos: dict[str, Path], tmp_path: Path, fake_embedder
) -> None:
    mem = memlane.Memory(tmp_path / "home", embedder=fake_embedder)
    mem.index([repos["transcripts"]])
    # Words only beta's answer has: found by vectors and keywords alike, but not inside alpha.
    assert any(Path(h.project).name == "beta" for h in mem.search("orders invoices MySQL"))
    scoped = mem.search("orders invoices MySQL", project="alpha", threshold=0.0)
    assert scoped and {Path(h.project).name for h in scoped} == {"alpha"}
    assert all(h.scores["vector"] is not None for h in scoped)


def test_every_format_records_where_it_was_written(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "web").mkdir()
    src = tmp_path / "src"
    write_jsonl(src / "rollout-2026-03-01T10-00-00-019fc8be-3658-7ca3-9e29-000000000001.jsonl", [
        {"timestamp": "2026-03-01T10:00:00Z", "type": "session_meta", "payload": {
            "id": "019fc8be-3658-7ca3-9e29-000000000001", "cwd": str(repo), "git": {"branch": "release", "commit_hash": "abc"}}},
        {"timestamp": "2026-03-01T10:00:01Z", "type": "event_msg", "payload": {"type": "user_message", "message": "codex question about quotas"}},
        {"timestamp": "2026-03-01T10:00:02Z", "type": "event_msg", "payload": {"type": "agent_message", "message": "codex answer about quotas"}},
    ])  # fmt: skip
    write_jsonl(src / "pi.jsonl", [
        {"type": "session", "id": "pi-1", "version": 3, "timestamp": "2026-03-01T10:00:00Z", "cwd": str(repo / "web")},
        {"type": "message", "id": "m1", "parentId": "pi-1", "timestamp": "2026-03-01T10:00:01Z",
         "message": {"role": "user", "content": [{"type": "text", "text": "openclaw question about quotas"}]}},
        {"type": "message", "id": "m2", "parentId": "m1", "timestamp": "2026-03-01T10:00:02Z",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "openclaw answer about quotas"}]}},
    ])  # fmt: skip
    write_jsonl(
        src / "chat.jsonl", generic_session("g1", [("generic question about quotas", "generic answer about quotas")])
    )
    library = tmp_path / "notes"
    (library / "DailyActivity").mkdir(parents=True)
    (library / "quotas.md").write_text("# Quotas\n\nNote about quotas.\n")
    (library / "DailyActivity" / "2026-03-01.md").write_text("## 10:00 Quotas\n\nDaily entry about quotas.\n")
    (repo / "docs").mkdir()
    (repo / "docs" / "quotas.md").write_text("# Quotas\n\nRepository doc about quotas.\n")
    (repo / ".aider.chat.history.md").write_text(
        "# aider chat started at 2026-03-01 10:00:00\n\n#### aider question about quotas\n\naider answer about quotas\n"
    )

    mem = memlane.open(tmp_path / "home", embedder="none")
    mem.index([src, library, repo / "docs", repo / ".aider.chat.history.md"], embed=False)
    found = {h.text.split()[1] if h.source == "transcript" else h.text.split("\n")[-1].split()[0]: (h.project, h.branch)
             for h in mem.search("quotas", k=20)}  # fmt: skip
    assert found["codex"] == (str(repo), "release")
    assert found["openclaw"] == (str(repo), "")  # its workspace, inside the repository
    assert found["aider"] == (str(repo), "")  # the history file sits in the repository's root
    assert found["generic"] == ("", "")  # a chat with no working directory: no project
    assert found["Note"] == (str(library), "")  # a note: its library folder
    assert found["Daily"] == (str(library), "")  # a journal folder belongs to the library around it
    assert found["Repository"] == (str(repo), "")  # a note inside a repository: that repository


def test_an_appended_transcript_keeps_the_project_and_branch_of_each_turn(
    repos: dict[str, Path], tmp_path: Path
) -> None:
    path = repos["transcripts"] / "claude" / "a1.jsonl"
    alpha = str(repos["alpha"])

    def answer(workers: int, cache: int) -> str:
        return f"We kept the pool at {workers} workers after the incident review, and the cache at {cache} MB. " * 6

    main_turns = [
        (f"how many workers in pool {i}?", answer(i, i), alpha, "main") for i in range(20)
    ]  # big enough to resume
    write_jsonl(path, claude_lines("a1", main_turns))
    resumed = memlane.open(tmp_path / "resumed", embedder="none")
    resumed.index([path], embed=False)
    # The session moves to another branch: its later turns carry it, its earlier ones keep theirs.
    later = [(f"did branch {i} change the cache size?", answer(i, 2 * i), alpha, "perf/cache") for i in range(20, 22)]
    with path.open("a") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in claude_lines("a1", main_turns + later)[2 * len(main_turns) :])
    assert resumed.index([path], embed=False).files_resumed == 1
    fresh = memlane.open(tmp_path / "fresh", embedder="none")
    fresh.index([path], embed=False)

    def places(mem: memlane.Memory) -> list[tuple[int, str, str]]:
        return sorted((h.turn_start, h.project, h.branch) for h in mem.search("workers pool cache branch", k=20))

    assert places(resumed) == places(fresh)
    assert {(p, b) for t, p, b in places(fresh) if t >= 2 * len(main_turns)} == {(alpha, "perf/cache")}
    assert {(p, b) for t, p, b in places(fresh) if t < 2 * len(main_turns)} == {(alpha, "main")}


def test_a_repair_keeps_projects(repos: dict[str, Path], tmp_path: Path) -> None:
    mem = memlane.open(tmp_path / "home", embedder="none")
    mem.index([repos["transcripts"]], embed=False)
    before = mem.projects()
    assert mem.repair(force=True).repaired
    assert mem.projects() == before


def hook_context(out: str | None) -> str:
    return json.loads(out)["hookSpecificOutput"]["additionalContext"] if out else ""


def test_hooks_scope_recall_to_the_sessions_project(repos: dict[str, Path], tmp_path: Path) -> None:
    from memlane.agents.hooks import session_start, user_prompt_submit
    from memlane.brain import Brain

    home = tmp_path / "home"
    memlane.open(home, embedder="none").index([repos["transcripts"]], embed=False)
    brain = Brain(home=home)
    brain.add("kd", "Alpha releases go out on Fridays after the billing freeze.", project="alpha")
    brain.add("kd", "Beta releases go out every Tuesday morning.", project="beta")
    brain.add("ll", "The user prefers short answers with the command first.", type="user")
    gamma = tmp_path / "src" / "gamma"
    (gamma / ".git").mkdir(parents=True)

    def session(name: str, cwd: Path) -> tuple[str, str]:
        payload = {
            "session_id": f"s-{name}",
            "transcript_path": str(tmp_path / f"{name}.jsonl"),
            "cwd": str(cwd),
            "prompt": "which database does billing use?",
        }
        return hook_context(session_start(home, payload)), hook_context(user_prompt_submit(home, payload))

    for name, answer, other in (("alpha", ALPHA_ANSWER, BETA_ANSWER), ("beta", BETA_ANSWER, ALPHA_ANSWER)):
        snapshot, recalled = session(name, repos[name] / "services")
        # The brain: this project's entries and the user's, never the other project's.
        assert f"{name.capitalize()} releases" in snapshot and "short answers" in snapshot
        assert ("Beta releases" if name == "alpha" else "Alpha releases") not in snapshot
        assert answer in recalled and other not in recalled and "other projects" not in recalled
    # Nothing in gamma clears the floor: the other projects' memories come in, each labelled.
    snapshot, recalled = session("gamma", gamma)
    assert "Alpha releases" not in snapshot and "Beta releases" not in snapshot and "short answers" in snapshot
    assert "nothing in this project (gamma) clears the relevance floor" in recalled
    assert ALPHA_ANSWER in recalled and BETA_ANSWER in recalled
    assert "project alpha" in recalled and "project beta" in recalled
    # A project agent never reaches into other projects, even when its own has nothing.
    from memlane.roles import Role

    payload = {"session_id": "s-gamma-2", "cwd": str(gamma), "prompt": "which database does billing use?"}
    assert user_prompt_submit(home, payload, role=Role.parse("project:gamma")) is None
    assert ALPHA_ANSWER in hook_context(
        user_prompt_submit(home, {**payload, "session_id": "s3"}, role=Role.parse("project:alpha"))
    )


def test_a_journal_outside_any_repository_still_supersedes_but_another_repository_never_does(
    repos: dict[str, Path], tmp_path: Path
) -> None:
    # A notes library kept outside the repositories is the person's journal across projects:
    # its newer statement may supersede a transcript's; the same note inside another
    # repository (its docs/) may not.
    statement = "## 10:00 Which database does billing use\n\nBilling in alpha stores invoices in CockroachDB on the billing-db cluster, with nightly backups.\n"
    journal = tmp_path / "notes" / "DailyActivity"
    journal.mkdir(parents=True)
    (journal / "2026-03-25.md").write_text(statement)
    docs = repos["beta"] / "docs" / "DailyActivity"
    docs.mkdir(parents=True)
    (docs / "2026-03-25.md").write_text(statement)
    transcript = repos["transcripts"] / "claude" / "a1.jsonl"

    def hits(notes: Path) -> dict[str, memlane.Hit]:
        mem = memlane.open(tmp_path / notes.parent.parent.name, embedder="none")
        mem.index([transcript, notes.parent], embed=False)
        return {h.source: h for h in mem.search("which database does billing use now?", k=10)}

    found = hits(journal)
    assert (
        found["knowledge"].project == str(journal.parent) and found["transcript"].superseded_by == found["knowledge"].id
    )
    found = hits(docs)
    assert found["knowledge"].project == str(repos["beta"]) and found["transcript"].superseded_by is None
