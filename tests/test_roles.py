"""Agent roles through the MCP server (issue 25): what an admin, a project agent and a skill
agent read and write, each rule exercised by a real MCP client over stdio."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from conftest import write_jsonl
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from test_projects import ALPHA_ANSWER, BETA_ANSWER, claude_lines

import memlane
from memlane.brain import Brain
from memlane.roles import Role

REPO = Path(__file__).resolve().parents[1]
QUESTION = "which database does billing use?"


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    """Repositories alpha and beta, a home indexing a billing session in each, and a brain
    with an entry of each project and one of the admin's (bound to none)."""
    out = {"home": tmp_path / "home"}
    for name, answer, day in (("alpha", ALPHA_ANSWER, 1), ("beta", BETA_ANSWER, 20)):
        out[name] = tmp_path / "src" / name
        (out[name] / ".git").mkdir(parents=True)
        write_jsonl(
            tmp_path / "t" / f"{name}.jsonl",
            claude_lines(name, [(QUESTION, answer, str(out[name]), "main")], start_day=day),
        )
    memlane.open(out["home"], embedder="none").index([tmp_path / "t"], embed=False)
    brain = Brain(home=out["home"])
    brain.add("kd", "Alpha billing invoices are archived after seven years.", project="alpha")  # KD01
    brain.add("kd", "Beta billing invoices are archived after five years.", project="beta")  # KD02
    brain.add("kd", "Every billing service keeps invoices in UTC.")  # KD03: the admin's, for everyone
    return out


def tools_of(home: Path, *args: str, cwd: Path | None = None, env: dict[str, str] | None = None):
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memlane.cli", "mcp", "--home", str(home), "--embed", "none", *args],
        env={
            "PYTHONPATH": str(REPO / "python"),
            "MEMLANE_CACHE_DIR": os.environ["MEMLANE_CACHE_DIR"],
            "HF_HUB_OFFLINE": "1",
            **(env or {}),
        },
        cwd=str(cwd) if cwd else None,
    )
    return Client(params)


def text(result) -> str:
    return "".join(c.text for c in result.content)


async def session(client: Client, calls: list[tuple[str, dict]]) -> list[tuple[bool, str]]:
    out = []
    for name, arguments in calls:
        result = await client.call_tool(name, arguments)
        out.append((bool(result.is_error), text(result)))
    return out


def chunk_id(recalled: str) -> str:
    return recalled.split("ids for get: [1] ")[1].split()[0]


def test_admin_reads_every_project_and_writes_anything(world: dict[str, Path]) -> None:
    async def go():
        async with tools_of(world["home"], "--agent", "admin") as client:
            names = sorted(t.name for t in (await client.list_tools()).tools)
            return names, await session(client, [
                ("recall", {"query": QUESTION}),
                ("recall", {"query": QUESTION, "project": "beta"}),
                ("get", {"id": "KD02"}),
                ("remember", {"section": "LL", "text": "The user reviews billing changes on Mondays.", "type": "user"}),
                ("status", {}),
            ])  # fmt: skip

    names, [every, beta, kd02, user, status] = asyncio.run(go())
    assert names == ["get", "recall", "remember", "status", "supersede", "tasks"]
    assert ALPHA_ANSWER in every[1] and BETA_ANSWER in every[1]
    assert BETA_ANSWER in beta[1] and ALPHA_ANSWER not in beta[1]
    assert not kd02[0] and "five years" in kd02[1]
    assert not user[0] and "(user, private)" in user[1]
    assert "agent: admin, reads every project" in status[1]


def test_a_project_agent_reads_its_project_and_the_admins_and_writes_its_own(world: dict[str, Path]) -> None:
    async def go():
        async with tools_of(world["home"], env={"MEMLANE_AGENT": "admin"}) as admin:
            beta_chunk = chunk_id(text(await admin.call_tool("recall", {"query": QUESTION, "project": "beta"})))
        async with tools_of(world["home"], "--agent", "project:alpha") as client:
            return await session(client, [
                ("recall", {"query": QUESTION}),
                ("recall", {"query": "billing invoices archived years UTC"}),
                ("recall", {"query": QUESTION, "project": "beta"}),
                ("get", {"id": beta_chunk}),
                ("get", {"id": "KD02"}),
                ("get", {"id": "KD03"}),
                ("remember", {"section": "KD", "text": "Alpha billing retries failed charges twice."}),
                ("remember", {"section": "KD", "text": "Beta billing retries failed charges once.", "project": "beta"}),
                ("remember", {"section": "LL", "text": "The user likes tables.", "type": "user"}),
                ("supersede", {"key": "KD02", "text": "Beta billing invoices are archived after six years."}),
                ("supersede", {"key": "KD01", "text": "Alpha billing invoices are archived after ten years."}),
                ("status", {}),
            ])  # fmt: skip

    [recall, entries, other, chunk, kd02, kd03, own, elsewhere, user, theirs, mine, status] = asyncio.run(go())
    assert ALPHA_ANSWER in recall[1] and BETA_ANSWER not in recall[1]
    assert "seven years" in entries[1] and "UTC" in entries[1] and "five years" not in entries[1]
    assert other[0] and "reads project alpha only, not beta" in other[1]
    assert chunk[0] and "outside agent project:alpha's projects" in chunk[1]
    assert kd02[0] and "no entry KD02 in agent project:alpha's memory" in kd02[1]
    assert not kd03[0] and "UTC" in kd03[1]
    assert not own[0] and "project alpha" in own[1]  # bound to its project without asking
    assert elsewhere[0] and "writes to project alpha only, not beta" in elsewhere[1]
    assert user[0] and "not user entries" in user[1]
    assert theirs[0] and "supersedes its project's entries only; KD02" in theirs[1]
    assert not mine[0] and "[KD01] superseded by" in mine[1]
    assert "agent: project:alpha, reads project alpha" in status[1]
    entries_now = {e.text: e for e in Brain(home=world["home"]).entries()}
    assert entries_now["Alpha billing retries failed charges twice."].meta["project"] == "alpha"
    assert (
        "Beta billing retries failed charges once." not in entries_now and "The user likes tables." not in entries_now
    )


def test_a_skill_agent_receives_its_projects_context_and_writes_nothing(world: dict[str, Path]) -> None:
    async def go():
        async with tools_of(world["home"], "--agent", "skill:review", cwd=world["beta"]) as client:
            names = sorted(t.name for t in (await client.list_tools()).tools)
            return names, await session(client, [
                ("recall", {"query": QUESTION}),
                ("remember", {"section": "KD", "text": "Reviews need two approvals."}),
                ("status", {}),
            ])  # fmt: skip

    names, [recall, remember, status] = asyncio.run(go())
    assert names == ["get", "recall", "status", "tasks"]  # no write tool is offered at all
    assert BETA_ANSWER in recall[1] and ALPHA_ANSWER not in recall[1]
    assert remember[0] and "remember" in remember[1]
    assert "agent: skill:review" in status[1] and "writes nothing" in status[1]
    assert len(Brain(home=world["home"]).entries()) == 3


def test_a_bad_role_is_one_line(world: dict[str, Path], tmp_path: Path) -> None:
    import subprocess

    env = {**os.environ, "PYTHONPATH": str(REPO / "python"), "MEMLANE_AGENT": "owner"}
    r = subprocess.run([sys.executable, "-m", "memlane.cli", "mcp", "--home", str(world["home"]), "--embed", "none"],
                       env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)  # fmt: skip
    assert r.returncode == 2 and r.stderr.strip().endswith(
        "unknown agent role 'owner': use admin, project:NAME or skill:NAME"
    )
    assert len(r.stderr.strip().splitlines()) == 1
    assert Role.parse("project:alpha").writes("KD", None, None) == (None, "alpha")
