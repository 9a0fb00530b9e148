"""The command line: JSON shapes of DESIGN.md §4 and one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import generic_session, write_jsonl

from memlane.cli import main

PAIRS = [("why did the deploy fail with exit code 137?", "The pod was OOM-killed; raise the memory limit to 2Gi.")]


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_index_search_status_json(tmp_path, capsys):
    write_jsonl(tmp_path / "t" / "a.jsonl", generic_session("a", PAIRS))
    home = str(tmp_path / "home")
    code, out, _ = run(capsys, "--home", home, "--json", "index", str(tmp_path / "t"), "--embed", "none")
    assert code == 0
    report = json.loads(out)
    assert {"files_seen", "files_indexed", "chunks_added", "chunks_removed", "records_skipped", "seconds"} <= report.keys()
    assert (report["files_seen"], report["chunks_added"]) == (1, 1)

    code, out, _ = run(capsys, "search", "exit code 137", "-k", "5", "--home", home, "--json", "--embed", "none")
    hits = json.loads(out)
    assert code == 0 and len(hits) == 1
    assert {"id", "source", "text", "score", "scores", "relevance", "path", "session_id", "turn_start", "turn_end", "timestamp", "heading"} <= hits[0].keys()
    assert hits[0]["scores"]["bm25"] == 1.0 and hits[0]["scores"]["vector"] is None
    assert 0 < hits[0]["scores"]["coverage"] <= 1 and hits[0]["relevance"] >= 0.225

    code, out, _ = run(capsys, "status", "--home", home, "--json")
    status = json.loads(out)
    assert (status["files"], status["chunks"]) == (1, 1)
    assert status["quantization"] == "i8"

    # Another storage asked of an existing home is not applied silently: one line says how.
    code, out, err = run(capsys, "--home", home, "index", str(tmp_path / "t"), "--embed", "none", "--quantization", "f16")
    assert code == 0 and err.count("\n") == 1 and "stores its vectors as i8" in err and "repair --quantization f16" in err
    code, _, err = run(capsys, "--home", home, "index", str(tmp_path / "t"), "--embed", "none", "--quantization", "i8")
    assert code == 0 and err == ""


def test_human_output_and_errors_are_one_line(tmp_path, capsys):
    home = str(tmp_path / "home")
    code, out, err = run(capsys, "--home", home, "index", str(tmp_path / "missing"), "--embed", "none")
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and "missing" in err and "Traceback" not in err

    code, _, err = run(capsys, "--home", home, "search", "x", "-k", "0", "--embed", "none")
    assert code == 2 and "-k must be at least 1" in err

    write_jsonl(tmp_path / "t" / "a.jsonl", generic_session("a", PAIRS))
    run(capsys, "--home", home, "index", str(tmp_path / "t"), "--embed", "none")
    code, out, _ = run(capsys, "--home", home, "search", "OOM memory limit", "--embed", "none")
    assert code == 0 and out.startswith("1. [") and "a.jsonl" in out


def test_console_script_entry_point_runs(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "memlane.cli", "--home", str(tmp_path), "--json", "status"],
        capture_output=True, text=True, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["chunks"] == 0


def test_embed_resumes_a_keyword_only_index(tmp_path, capsys, monkeypatch, fake_embedder):
    import memlane
    import memlane.cli as cli

    write_jsonl(tmp_path / "t" / "a.jsonl", generic_session("a", PAIRS))
    home = str(tmp_path / "home")
    run(capsys, "--home", home, "index", str(tmp_path / "t"), "--embed", "none")
    monkeypatch.setattr(cli, "_open", lambda args, embedder: memlane.open(args.home, embedder=fake_embedder))
    code, out, _ = run(capsys, "--home", home, "--json", "embed", "--resume")
    assert code == 0 and json.loads(out)["chunks_embedded"] == 1
    code, out, _ = run(capsys, "--home", home, "--json", "embed")
    assert json.loads(out)["chunks_embedded"] == 0
