"""Error messages repeat at most the start of what the caller sent (issue 38): a 1 MB id makes a
one-line error, not a 1 MB one, wherever input is quoted (one helper, ``_check.echo``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import generic_session, write_jsonl

import memlane
from memlane import _check
from memlane.brain import Brain
from memlane.cli import main
from memlane.roles import Role

HUGE = 1_000_000
BOUND = 200  # what "one short line" means here: the message's fixed words plus 80 echoed characters


def test_echo_keeps_short_input_and_cuts_long_input_saying_how_long() -> None:
    assert _check.echo("KD07") == "KD07"
    assert _check.echo("x" * 80) == "x" * 80
    cut = _check.echo("y" * HUGE)
    assert cut == "y" * 80 + "… (1,000,000 characters)"
    assert _check.echo("z" * HUGE, quote=True) == repr("z" * 80 + "…") + " (1,000,000 characters)"
    assert _check.echo(["a" * 500]).startswith("['aaa") and _check.echo(["a" * 500]).endswith("… (504 characters)")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    src = write_jsonl(
        tmp_path / "src" / "s1.jsonl",
        generic_session("s1", [("Which database does billing use?", "Postgres 15 on RDS.")]),
    )
    with memlane.open(h, embedder="none") as mem:
        mem.index([src], embed=False)
    return h


@pytest.mark.parametrize("ident", ["z" * HUGE, "f" * HUGE, "KD" + "7" * HUGE, "0" * HUGE + "1"])
def test_mcp_get_of_a_huge_id_answers_a_short_error(home: Path, ident: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from memlane.agents.mcp import MemoryTools

    monkeypatch.delenv("MEMLANE_BRAIN_DIR", raising=False)
    tools = MemoryTools(home, embedder="none")
    with pytest.raises((KeyError, ValueError)) as err:
        tools.get(ident)
    message = err.value.args[0]
    assert len(message) < BOUND and f"({len(ident):,} characters)" in message, message[:300]


def test_mcp_writes_and_roles_echo_a_bounded_name(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from memlane.agents.mcp import MemoryTools

    monkeypatch.delenv("MEMLANE_BRAIN_DIR", raising=False)
    tools = MemoryTools(home, embedder="none", role=Role.parse("project:billing"))
    with pytest.raises(PermissionError) as err:
        tools.supersede("KD" + "1" * HUGE, "x")
    assert len(str(err.value)) < BOUND
    with pytest.raises(PermissionError) as err:
        tools.remember("KD", "Billing keeps invoices in Postgres.", project="p" * HUGE)
    assert len(str(err.value)) < BOUND + 40  # the role's own name is echoed too
    with pytest.raises(ValueError) as err:
        Role.parse("owner" * HUGE)
    assert len(str(err.value)) < BOUND


def test_brain_key_lookups_echo_a_bounded_key(tmp_path: Path) -> None:
    brain = Brain(tmp_path / "brain", home=tmp_path / "home")
    brain.add("kd", "Billing keeps invoices in Postgres.", on="2026-04-01")
    for call in (
        lambda: brain.load("KD" + "9" * HUGE),
        lambda: brain.supersede("KD" + "9" * HUGE, "x"),
        lambda: brain.archive(["KD" + "9" * HUGE]),
    ):
        with pytest.raises((KeyError, ValueError)) as err:
            call()
        message = err.value.args[0]
        assert len(message) < BOUND + len(str(tmp_path)) + 40, message[:300]


def test_argument_checks_and_the_command_line_echo_bounded_values(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with memlane.open(home, embedder="none") as mem:
        with pytest.raises(ValueError) as err:
            mem.search("billing", fusion="w" * HUGE)
        assert len(str(err.value)) < BOUND
        with pytest.raises(ValueError) as err:
            mem.get("q" * HUGE)
        assert len(str(err.value)) < BOUND
    assert main(["--home", str(home), "search", "billing", "--embed", "none", "--project", "n" * HUGE]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and len(err) < BOUND + 40
