"""Every CLI failure is one line (or one JSON object with --json), never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import generic_session, write_deploy_and_cooking, write_jsonl

from memlane.cli import main


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_read_only_commands_on_a_missing_home_say_so_and_create_nothing(tmp_path, capsys):
    home = tmp_path / "typo"
    for argv in (["search", "billing"], ["recall", "billing"], ["status"], ["verify"]):
        code, out, err = _run(["--home", str(home), *argv], capsys)
        assert code == 2 and out == ""
        assert err.count("\n") == 1 and f"no memlane home at {home}" in err
    assert not home.exists()


def test_json_failures_are_one_object_on_stdout(tmp_path, capsys):
    code, out, err = _run(["--home", str(tmp_path / "nowhere"), "status", "--json"], capsys)
    assert code == 2 and err == ""
    doc = json.loads(out)
    assert doc["kind"] == "FileNotFoundError" and "no memlane home" in doc["error"]
    with pytest.raises(SystemExit) as exit_:
        main(["--json", "search"])
    assert exit_.value.code == 2 and json.loads(capsys.readouterr().out)["kind"] == "UsageError"


def test_a_usage_error_is_one_line(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["search", "q", "-k", "many"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1 and "invalid int value" in err


def test_a_home_that_is_a_file_is_one_line(tmp_path, capsys):
    home = tmp_path / "home"
    home.write_text("not a folder")
    code, _, err = _run(["--home", str(home), "index", str(tmp_path), "--embed", "none"], capsys)
    assert code == 2 and err.count("\n") == 1 and str(home) in err


def test_a_corrupt_index_is_one_line_naming_the_file(tmp_path, capsys):
    src = write_deploy_and_cooking(tmp_path / "src")
    home = tmp_path / "home"
    assert _run(["--home", str(home), "index", str(src), "--embed", "none"], capsys)[0] == 0
    (home / "lexical" / "meta.json").unlink()
    code, _, err = _run(["--home", str(home), "search", "exit code 137", "--embed", "none"], capsys)
    assert code == 2 and err.count("\n") == 1 and "meta.json" in err and "memlane repair" in err
    code, out, _ = _run(["--home", str(home), "verify"], capsys)
    assert code == 1 and "unsound" in out
    code, out, _ = _run(["--home", str(home), "repair"], capsys)
    assert code == 0 and "repaired" in out and "0 embedding calls" in out
    code, out, _ = _run(["--home", str(home), "verify"], capsys)
    assert code == 0 and "sound" in out


def test_index_names_what_each_file_gave_and_fails_when_a_named_path_gives_nothing(tmp_path, capsys):
    src = write_deploy_and_cooking(tmp_path / "src")
    (src / "blob.jsonl").write_bytes(b"\x00\x01\x02" * 100)
    home = tmp_path / "home"
    code, out, _ = _run(["--home", str(home), "index", str(src), "--embed", "none"], capsys)
    assert code == 0 and "blob.jsonl: nothing indexed (binary)" in out
    code, out, _ = _run(["--home", str(home), "index", str(src), "--embed", "none", "--verbose"], capsys)
    assert code == 0 and "deploy.jsonl" not in out, "unchanged files are not read again"
    lonely = tmp_path / "lonely.jsonl"
    lonely.write_bytes(b"\x7fELF" + b"\x00" * 64)
    code, out, err = _run(["--home", str(home), "index", str(lonely), "--embed", "none"], capsys)
    assert code == 1 and err.count("\n") == 1 and str(lonely) in err
    code, out, _ = _run(["--home", str(home), "index", str(lonely), "--embed", "none", "--json"], capsys)
    doc = json.loads(out)
    assert code == 1 and doc["empty_roots"] == [str(lonely)]


def test_a_closed_pipe_ends_quietly(tmp_path):
    src = tmp_path / "src"
    for n in range(30):
        pairs = [(f"deploy step {n}-{k} failed?", "The deploy " + "log line " * 200) for k in range(5)]
        write_jsonl(src / f"s{n}.jsonl", generic_session(f"s{n}", pairs))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "python")}
    home = str(tmp_path / "home")
    cli = f"{sys.executable} -m memlane.cli --home {home}"
    subprocess.run(f"{cli} index {src} --embed none", shell=True, check=True, capture_output=True, env=env)
    # The reader leaves after 100 bytes of a much longer answer.
    done = subprocess.run(
        f"{cli} search deploy -k 100 --embed none --json | head -c 100",
        shell=True,
        capture_output=True,
        text=True,
        env=env,
    )
    assert len(done.stdout) == 100
    assert done.stderr == ""
