"""LLM engines behind one interface: Bedrock through botocore's Stubber, the claude and codex CLIs as stub executables."""

from __future__ import annotations

import json
import stat
from datetime import date
from pathlib import Path

import pytest

import memlane
from memlane.brain import Brain
from memlane.brain.provenance import Ref
from memlane.cli import main
from memlane.timeline.compact import compact
from memlane.timeline.engines import AgentCliEngine, BedrockEngine, EngineError, Source, parse_answer
from memlane.timeline.lease import Jobs

SOURCES = [
    Source(Ref("DailyActivity/2026-03-02.md", "09:15"), "We decided to set the exporter batch size to 512."),
    Source(Ref("DailyActivity/2026-03-03.md", "10:00"), "Opened ticket OPS-4821 for the ingest leak."),
]
ANSWER = {
    "statements": [
        {"section": "Decisions", "text": "The exporter batch size is 512.", "sources": ["S1"]},
        {"section": "Facts", "text": "OPS-4821 tracks the ingest leak.", "sources": ["S2", "S9"]},
        {"section": "Facts", "text": "No source for this one.", "sources": []},
    ]
}


def test_parse_answer_maps_sources_and_drops_uncited_lines():
    out = parse_answer("```json\n" + json.dumps(ANSWER) + "\n```", SOURCES, limit=10)
    assert [(s.section, s.text, [str(r) for r in s.refs]) for s in out] == [
        ("Decisions", "The exporter batch size is 512.", ["DailyActivity/2026-03-02.md › 09:15"]),
        ("Facts", "OPS-4821 tracks the ingest leak.", ["DailyActivity/2026-03-03.md › 10:00"]),
    ]
    with pytest.raises(EngineError, match="statements"):
        parse_answer('{"items": []}', SOURCES, limit=10)


def test_bedrock_engine_through_the_stubber_counts_tokens_and_cost():
    pytest.importorskip("botocore")
    import botocore.session
    from botocore.stub import Stubber

    client = botocore.session.get_session().create_client(
        "bedrock-runtime", region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing"
    )
    engine = BedrockEngine("anthropic.claude-3-5-haiku-20241022-v1:0", client=client)
    with Stubber(client) as stub:
        stub.add_response(
            "converse",
            {
                "output": {"message": {"role": "assistant", "content": [{"text": json.dumps(ANSWER)}]}},
                "stopReason": "end_turn",
                "usage": {"inputTokens": 1200, "outputTokens": 300, "totalTokens": 1500},
                "metrics": {"latencyMs": 900},
            },
            engine.request("weekly", "2026-W10", SOURCES, 12),
        )
        out = engine.summarize("weekly", "2026-W10", SOURCES, limit=12)
    assert len(out) == 2
    assert (engine.usage.calls, engine.usage.input_tokens, engine.usage.output_tokens) == (1, 1200, 300)
    assert engine.usage.cost_usd == pytest.approx(1200 / 1000 * 0.0008 + 300 / 1000 * 0.004)
    with Stubber(client) as stub:
        stub.add_client_error("converse", "ThrottlingException", "slow down")
        with pytest.raises(EngineError, match="slow down"):
            engine.summarize("weekly", "2026-W10", SOURCES, limit=12)


def stub_cli(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / name
    path.write_text(
        f"#!{__import__('sys').executable}\nimport json, sys\nprompt = sys.stdin.read()\n{body}\n", encoding="utf-8"
    )
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def claude_stub(tmp_path: Path) -> Path:
    # Answers with the first source's first line, verbatim: the details check lets it through.
    return stub_cli(
        tmp_path,
        "claude",
        """
import re
assert sys.argv[1:] == ["-p", "--output-format", "json"], sys.argv
first = re.search(r"\\[S1\\] \\(.*?\\)\\n- (.*)", prompt).group(1)
answer = {"statements": [{"section": "Facts", "text": first, "sources": ["S1"]},
                         {"section": "Facts", "text": "Latency fell to 12 ms.", "sources": ["S1"]}]}
print(json.dumps({"type": "result", "is_error": False, "result": json.dumps(answer), "total_cost_usd": 0.0042,
                  "usage": {"input_tokens": 1000, "cache_read_input_tokens": 200, "output_tokens": 150}}))
""",
    )


def test_claude_and_codex_clis_as_subprocesses(tmp_path):
    claude = AgentCliEngine("claude", executable=str(claude_stub(tmp_path)))
    prompt_sources = [Source(SOURCES[0].ref, "- " + SOURCES[0].text)]
    out = claude.summarize("weekly", "2026-W10", prompt_sources, limit=5)
    assert out[0].text == SOURCES[0].text
    assert (claude.usage.calls, claude.usage.input_tokens, claude.usage.output_tokens, claude.usage.cost_usd) == (
        1,
        1200,
        150,
        0.0042,
    )
    codex = AgentCliEngine(
        "codex",
        executable=str(
            stub_cli(
                tmp_path,
                "codex",
                f"""
assert sys.argv[1:3] == ["exec", "--json"], sys.argv
answer = {json.dumps(json.dumps(ANSWER))}
for event in [{{"type": "thread.started", "thread_id": "t"}}, {{"type": "item.completed", "item": {{"type": "agent_message", "text": answer}}}},
              {{"type": "turn.completed", "usage": {{"input_tokens": 700, "cached_input_tokens": 0, "output_tokens": 90}}}}]:
    print(json.dumps(event))
""",
            )
        ),
    )
    assert len(codex.summarize("weekly", "2026-W10", SOURCES, limit=5)) == 2
    assert (codex.usage.input_tokens, codex.usage.output_tokens) == (700, 90)
    failing = AgentCliEngine(
        "claude", executable=str(stub_cli(tmp_path, "bad", "sys.stderr.write('not logged in\\n'); sys.exit(3)"))
    )
    with pytest.raises(EngineError, match="status 3: not logged in"):
        failing.summarize("weekly", "2026-W10", SOURCES, limit=5)
    with pytest.raises(EngineError, match="needs the `codex` CLI"):
        AgentCliEngine("codex", executable="").command()


def test_an_llm_compaction_run_is_in_the_ledger_with_its_cost(tmp_path, monkeypatch, capsys):
    brain_dir = tmp_path / "brain"
    for d in ("02", "03", "04"):
        p = brain_dir / "DailyActivity" / f"2026-03-{d}.md"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"# 2026-03-{d}\n\n## 09:00 | work\n- We decided to pin the exporter to release 3.{d}.\n")
    monkeypatch.setenv("MEMLANE_CLAUDE_BIN", str(claude_stub(tmp_path)))
    home = tmp_path / "home"
    args = [
        "compact",
        "--home",
        str(home),
        "--brain",
        str(brain_dir),
        "--embed",
        "none",
        "--engine",
        "claude",
        "--today",
        "2026-04-20",
        "--json",
    ]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["published"] and report["usage"]["calls"] == 1  # one weekly; a monthly needs two
    dropped = [d for s in report["summaries"] for d in s["dropped"]]
    assert dropped and all("12" in d["reason"] for d in dropped)  # "12 ms" is in no source
    row = Jobs(home).ledger("compact")[0]
    assert (row["status"], row["engine"], row["calls"], row["tokens"], row["cost_usd"]) == (
        "ok",
        "claude",
        1,
        1350,
        0.0042,
    )


def test_a_budget_leaves_periods_for_a_later_run(tmp_path, monkeypatch):
    brain_dir = tmp_path / "brain"
    for week in ("02", "09"):
        for d in range(3):
            day = f"2026-03-{int(week) + d:02d}"
            p = brain_dir / "DailyActivity" / f"{day}.md"
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(f"# {day}\n\n## 09:00 | work\n- We decided to pin the exporter to release {day}.\n")
    engine = AgentCliEngine("claude", executable=str(claude_stub(tmp_path)))
    mem = memlane.open(tmp_path / "home", embedder="none")
    need = engine.estimate("weekly", "2026-W10", [Source(Ref("x.md"), "y")])
    report = compact(
        mem,
        Brain(brain_dir, home=tmp_path / "home"),
        engine=engine,
        level="weekly",
        today=date(2026, 4, 20),
        budget=need + 100,
    )
    assert len(report.summaries) == 1 and report.stopped_by_budget == ["weekly 2026-W11"]
    assert engine.usage.calls == 1
