"""The injection audit: what each hook and MCP call injected, recorded by key (never the
text), bounded by its cap, and read back newest first by a long-lived reader."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import generic_session, write_jsonl

import memlane
from memlane import audit
from memlane.agents import hooks
from memlane.errors import InvalidArgumentError

REPO = Path(__file__).resolve().parents[1]

PLANTED = "quokkaplinth"  # a word only a chunk's text holds: it must never reach the audit log
AWS_ID = "AKIA" + "QYLPMN5HHHFP8WVY"
GITHUB = "ghp_" + "R8aZk3vPq0sLmN2bXc4dEfGh5iJkLmNoPqRs"
PROMPT = "why does the nightly exporter die with exit code 137"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home with transcripts about the exporter (one chunk holding the planted word), an
    unrelated session, and two MEMORY.md entries."""
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "user" / ".claude"))
    monkeypatch.delenv("MEMLANE_BRAIN_DIR", raising=False)
    monkeypatch.delenv(audit.MAX_BYTES_ENV, raising=False)
    monkeypatch.delenv(hooks.DEADLINE_ENV, raising=False)
    h = tmp_path / "memhome"
    exporter = [
        (
            "The nightly exporter dies with exit code 137 on the invoices job.",
            f"Exit code 137 is an OOM kill: stream the invoice rows in batches of 5000 ({PLANTED} buffer). "
            + "The worker held every row of the month in memory before writing the file. " * 3,
        ),
        (
            "Does the exporter retry after exit code 137?",
            "It retries twice with backoff; after that the exporter job pages the on-call engineer. "
            + "Retries reuse the same batch cursor, so rows are never exported twice. " * 3,
        ),
    ]
    cooking = [("how long should pasta boil?", "About nine minutes for spaghetti, taste it before draining. " * 4)]
    sources = [
        write_jsonl(tmp_path / "src" / "exporter.jsonl", generic_session("exp-1", exporter)),
        write_jsonl(tmp_path / "src" / "cooking.jsonl", generic_session("cook-1", cooking)),
    ]
    memlane.open(h, embedder="none").index(sources, embed=False)
    brain = memlane.Brain(h / "brain", home=h)
    brain.add("KD", "The exporter uses SQS FIFO queues; invoice ordering matters.")
    brain.add("LL", "Stream large exports in batches; never hold a month of rows in memory.")
    return h


def injections(home: Path) -> list[dict]:
    return [json.loads(line) for line in (home / audit.INJECTIONS_NAME).read_text(encoding="utf-8").splitlines()]


def expected_items(home: Path, query: str) -> list[dict]:
    """What the user-prompt-submit hook's recall injects for ``query``, as the audit should name it."""
    budget = min(hooks.DEFAULT_MAX_TOKENS, hooks.DEFAULT_MAX_CHARS // 4)
    with memlane.open(home, embedder="none") as mem:
        items = mem.recall(query, max_tokens=budget, include_brain=False).items
    assert items, "the fixture's prompt must recall something"
    return [
        {
            "key": i.id,
            "src": i.source,
            "rank": n,
            "rel": round(i.relevance, 4),
            **{
                short: round(i.parts[part], 4)
                for part, short in (("bm25", "bm25"), ("vector", "vec"), ("coverage", "cov"))
                if i.parts[part] is not None
            },
        }
        for n, i in enumerate(items, 1)
    ]


def test_a_user_prompt_records_each_injected_chunk_with_its_rank_relevance_and_parts(home: Path) -> None:
    out = hooks.user_prompt_submit(home, {"session_id": "sess-1", "prompt": PROMPT})
    assert out is not None and PLANTED in out  # the chunk went to the agent...
    want = expected_items(home, PROMPT)
    (rec,) = injections(home)
    assert (rec["type"], rec["client"], rec["session"], rec["event"]) == (
        "inject",
        "claude-code",
        "sess-1",
        "user-prompt-submit",
    )
    assert rec["query"] == PROMPT and rec["project"] is None
    assert [{k: v for k, v in i.items() if k != "tok"} for i in rec["items"]] == want
    assert all(i["tok"] > 0 for i in rec["items"])
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert rec["tokens"] == (len(context.encode("utf-8")) + 3) // 4
    # ...and its words never reach the log: keys, not text; each item under 200 bytes.
    raw = (home / audit.INJECTIONS_NAME).read_bytes()
    assert PLANTED.encode() not in raw and b"OOM kill" not in raw
    assert all(len(json.dumps(i, ensure_ascii=False).encode()) <= 200 for i in rec["items"])


def test_later_prompts_and_empty_recalls_record_nothing(home: Path) -> None:
    hooks.user_prompt_submit(home, {"session_id": "sess-1", "prompt": PROMPT})
    assert hooks.user_prompt_submit(home, {"session_id": "sess-1", "prompt": PROMPT}) is None  # not the first prompt
    assert hooks.user_prompt_submit(home, {"session_id": "sess-2", "prompt": "zygote quasar marmalade"}) is None
    assert [r["session"] for r in injections(home)] == ["sess-1"]


def test_the_query_is_masked_in_the_log(home: Path) -> None:
    prompt = f"{PROMPT} with key {AWS_ID} and token {GITHUB}"
    assert hooks.user_prompt_submit(home, {"session_id": "s-secret", "prompt": prompt}) is not None
    raw = (home / audit.INJECTIONS_NAME).read_text(encoding="utf-8")
    assert AWS_ID not in raw and GITHUB not in raw
    assert injections(home)[0]["query"] == f"{PROMPT} with key AKIA…8WVY and token ghp_…PqRs"


def test_session_start_records_the_snapshot_entries_in_order_then_its_recall(home: Path) -> None:
    out = hooks.session_start(home, {"session_id": "sess-s", "cwd": str(home.parent / "exporter")}, client="codex")
    assert out is not None
    (rec,) = injections(home)
    assert (rec["client"], rec["session"], rec["event"]) == ("codex", "sess-s", "session-start")
    brain = [i for i in rec["items"] if i["src"] == "brain"]
    assert [(i["key"], i["rank"]) for i in brain] == [("KD01", 1), ("LL01", 2)]
    assert all(i["tok"] > 0 and "rel" not in i for i in brain)
    assert b"SQS FIFO" not in (home / audit.INJECTIONS_NAME).read_bytes()
    # Resumed, the frozen snapshot is injected again: a second record, the same entries.
    hooks.session_start(home, {"session_id": "sess-s"}, client="codex")
    assert [i["key"] for i in injections(home)[1]["items"] if i["src"] == "brain"] == ["KD01", "LL01"]


def test_the_hook_command_records_after_answering(home: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO / "python")}
    payload = json.dumps({"session_id": "cli-1", "prompt": PROMPT, "hook_event_name": "UserPromptSubmit"})
    r = subprocess.run(
        [sys.executable, "-m", "memlane.cli", "hook", "codex", "user-prompt-submit", "--home", str(home)],
        input=payload,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0 and PLANTED in r.stdout, r.stderr
    (rec,) = injections(home)
    assert (rec["client"], rec["session"], rec["event"]) == ("codex", "cli-1", "user-prompt-submit")
    assert [i["key"] for i in rec["items"]] == [i["key"] for i in expected_items(home, PROMPT)]


def test_a_bad_cap_in_the_environment_never_fails_the_hook(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(audit.MAX_BYTES_ENV, "lots")
    with pytest.raises(InvalidArgumentError, match=r"MEMLANE_INJECTIONS_MAX_BYTES must be a whole number"):
        audit.max_bytes()
    assert hooks.user_prompt_submit(home, {"session_id": "s", "prompt": PROMPT}) is not None
    assert "memlane claude-code: injection not recorded: InvalidArgumentError" in capsys.readouterr().err
    # The MCP server records through the same door: the answer stands, one line says why.
    audit.record(home, client="mcp", session=None, event="recall", project=None, query="q", tokens=1, items=[])
    assert "memlane mcp: injection not recorded: InvalidArgumentError" in capsys.readouterr().err
    assert not (home / audit.INJECTIONS_NAME).exists()


# -- MCP -----------------------------------------------------------------------------------


def test_mcp_recall_and_get_are_recorded_with_client_mcp(home: Path) -> None:
    pytest.importorskip("mcp")
    from memlane.agents.mcp import MemoryTools

    tools = MemoryTools(home, embedder="none")
    answer = tools.recall(PROMPT)
    with memlane.open(home, embedder="none") as mem:
        recalled = mem.recall(PROMPT, max_tokens=4000)
    tools.get(recalled.items[0].id)
    tools.get("kd01")
    recall_rec, get_chunk, get_entry = injections(home)
    assert (recall_rec["client"], recall_rec["session"], recall_rec["event"]) == ("mcp", None, "recall")
    assert [(i["key"], i["rank"], i["rel"]) for i in recall_rec["items"]] == [
        (i.id, n, round(i.relevance, 4)) for n, i in enumerate(recalled.items, 1)
    ]
    assert recall_rec["tokens"] == (len(answer.encode("utf-8")) + 3) // 4
    assert all({"bm25", "cov"} <= set(i) for i in recall_rec["items"] if i["src"] == "transcript")
    assert [(i["key"], i["src"]) for i in get_chunk["items"]] == [(recalled.items[0].id, recalled.items[0].source)]
    assert (get_entry["event"], [i["key"] for i in get_entry["items"]]) == ("get", ["KD01"])
    assert PLANTED.encode() not in (home / audit.INJECTIONS_NAME).read_bytes()
    # A brain entry recalled: its relevance and keyword score (no vector in keyword-only mode).
    tools.recall("SQS FIFO queues invoice ordering")
    entry = next(i for i in injections(home)[-1]["items"] if i["src"] == "brain")
    assert entry["key"] == "KD01" and entry["rel"] > 0 and entry["kw"] > 0 and "vec" not in entry


def test_a_recall_through_the_mcp_server_is_recorded(home: Path) -> None:
    pytest.importorskip("mcp")
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memlane.cli", "mcp", "--home", str(home), "--embed", "none"],
        env={
            "PYTHONPATH": str(REPO / "python"),
            "MEMLANE_CACHE_DIR": os.environ["MEMLANE_CACHE_DIR"],
            "HF_HUB_OFFLINE": "1",
        },
    )

    async def go() -> str:
        async with Client(params) as client:
            result = await client.call_tool("recall", {"query": PROMPT})
            return "".join(c.text for c in result.content)

    assert PLANTED in asyncio.run(go())
    (rec,) = injections(home)
    assert (rec["client"], rec["event"], rec["query"]) == ("mcp", "recall", PROMPT)
    assert rec["items"] and PLANTED.encode() not in (home / audit.INJECTIONS_NAME).read_bytes()


# -- the log's bounds ------------------------------------------------------------------------


def fake(
    home: Path, n: int, session: str = "s", client: str = "claude-code", keys: tuple[str, ...] = ("k1", "k2")
) -> None:
    audit.record(
        home,
        client=client,
        session=session,
        event="user-prompt-submit",
        project=None,
        query=f"question {n}",
        tokens=100,
        items=[{"key": k, "src": "transcript", "rank": r, "rel": 0.5, "tok": 50} for r, k in enumerate(keys, 1)],
    )


def test_rotation_keeps_every_file_under_the_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(audit.MAX_BYTES_ENV, str(audit.MIN_BYTES))
    for n in range(3000):  # ~600 KB of records: the log rotates several times
        fake(tmp_path, n)
    files = sorted(
        p.name for p in tmp_path.iterdir() if p.name.startswith(audit.INJECTIONS_NAME) and not p.name.endswith(".lock")
    )
    assert files == ["injections.jsonl", "injections.jsonl.1", "injections.jsonl.2"]
    assert all((tmp_path / f).stat().st_size <= audit.MIN_BYTES for f in files)
    kept = audit.Injections(tmp_path).records(limit=10_000)
    assert kept[0]["query"] == "question 2999"  # newest first, none lost in what is kept
    assert [int(r["query"].split()[1]) for r in kept] == list(range(2999, 2999 - len(kept), -1))


def test_a_cap_below_the_minimum_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(audit.MAX_BYTES_ENV, "1000")
    with pytest.raises(InvalidArgumentError, match="≥ 65536, got '1000'"):
        audit.max_bytes()
    monkeypatch.setenv(audit.MAX_BYTES_ENV, " 1048576 ")
    assert audit.max_bytes() == 1 << 20


# -- reading ---------------------------------------------------------------------------------


def test_records_filter_by_session_key_and_client_newest_first(tmp_path: Path) -> None:
    fake(tmp_path, 1, session="a", keys=("k1",))
    fake(tmp_path, 2, session="b", keys=("k2", "k1"))
    fake(tmp_path, 3, session="a", client="mcp", keys=("k3",))
    seen = audit.Injections(tmp_path)
    assert [r["query"] for r in seen.records()] == ["question 3", "question 2", "question 1"]
    assert [r["query"] for r in seen.records(session="a")] == ["question 3", "question 1"]
    assert [r["query"] for r in seen.records(key="k1")] == ["question 2", "question 1"]
    assert [r["query"] for r in seen.records(client="mcp")] == ["question 3"]
    assert [r["query"] for r in seen.records(limit=1, offset=1)] == ["question 2"]
    assert seen.count(key="k1") == 2 and seen.count(session="zz") == 0
    by_session = seen.sessions_for("k1")
    assert [(s["session"], [(i["rank"], i["rel"]) for i in s["injections"]]) for s in by_session] == [
        ("b", [(2, 0.5)]),
        ("a", [(1, 0.5)]),
    ]
    seen.records()[0]["items"][0]["key"] = "changed"  # a copy: the reader's records stay as read
    assert seen.records()[0]["items"][0]["key"] == "k3"
    with pytest.raises(InvalidArgumentError):
        seen.records(limit=-1)


def test_a_reader_parses_only_what_was_appended_since_it_last_read(tmp_path: Path) -> None:
    for n in range(20):
        fake(tmp_path, n, session="old")
    seen = audit.Injections(tmp_path)
    assert seen.count() == 20
    # Change a record already read, in place and at the same length: a reader that parsed the
    # file again would see it; one that reads only the appended bytes keeps what it parsed.
    path = tmp_path / audit.INJECTIONS_NAME
    data = path.read_bytes()
    at = data.index(b'"session": "old"', len(data) // 2)
    with open(path, "r+b") as fh:
        fh.seek(at)
        fh.write(b'"session": "new"')
    fake(tmp_path, 20, session="late")
    assert seen.count() == 21 and seen.records(limit=1)[0]["session"] == "late"
    assert seen.count(session="new") == 0 and audit.Injections(tmp_path).count(session="new") == 1


def test_a_reader_waits_for_a_line_being_written(tmp_path: Path) -> None:
    fake(tmp_path, 1)
    seen = audit.Injections(tmp_path)
    path = tmp_path / audit.INJECTIONS_NAME
    line = path.read_bytes()
    with open(path, "ab") as fh:
        fh.write(line[:40])
    assert seen.count() == 1
    with open(path, "ab") as fh:
        fh.write(line[40:])
    assert seen.count() == 2


def test_a_reader_follows_the_log_across_a_rotation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(audit.MAX_BYTES_ENV, str(audit.MIN_BYTES))
    fake(tmp_path, 0)
    seen = audit.Injections(tmp_path)
    assert seen.count() == 1
    n = 1
    while not (tmp_path / f"{audit.INJECTIONS_NAME}.1").exists():
        fake(tmp_path, n)
        n += 1
    fake(tmp_path, n, session="after")
    fresh = audit.Injections(tmp_path).records(limit=100_000)
    assert seen.records(limit=100_000) == fresh and len(fresh) == n + 1
    assert fresh[0]["session"] == "after"
    # Past more rotations the oldest generations drop out, of both readers alike.
    for m in range(n + 1, n + 1500):
        fake(tmp_path, m)
    later = seen.records(limit=100_000)
    assert later == audit.Injections(tmp_path).records(limit=100_000)
    assert later[0]["query"] == f"question {n + 1499}" and later[-1]["query"] != "question 0"
