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
    assert {
        "files_seen",
        "files_indexed",
        "chunks_added",
        "chunks_removed",
        "records_skipped",
        "seconds",
    } <= report.keys()
    assert (report["files_seen"], report["chunks_added"]) == (1, 1)

    code, out, _ = run(capsys, "search", "exit code 137", "-k", "5", "--home", home, "--json", "--embed", "none")
    hits = json.loads(out)
    assert code == 0 and len(hits) == 1
    assert {
        "id",
        "source",
        "text",
        "score",
        "scores",
        "relevance",
        "path",
        "session_id",
        "turn_start",
        "turn_end",
        "timestamp",
        "heading",
    } <= hits[0].keys()
    assert hits[0]["scores"]["bm25"] == 1.0 and hits[0]["scores"]["vector"] is None
    assert 0 < hits[0]["scores"]["coverage"] <= 1 and hits[0]["relevance"] >= 0.225

    code, out, _ = run(capsys, "status", "--home", home, "--json")
    status = json.loads(out)
    assert (status["files"], status["chunks"]) == (1, 1)
    assert status["quantization"] == "i8"

    # Another storage asked of an existing home is not applied silently: one line says how.
    code, out, err = run(
        capsys, "--home", home, "index", str(tmp_path / "t"), "--embed", "none", "--quantization", "f16"
    )
    assert (
        code == 0 and err.count("\n") == 1 and "stores its vectors as i8" in err and "repair --quantization f16" in err
    )
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
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["chunks"] == 0


def test_embed_resumes_a_keyword_only_index(tmp_path, capsys, monkeypatch, fake_embedder):
    import memlane
    from memlane.cli import common

    write_jsonl(tmp_path / "t" / "a.jsonl", generic_session("a", PAIRS))
    home = str(tmp_path / "home")
    run(capsys, "--home", home, "index", str(tmp_path / "t"), "--embed", "none")
    monkeypatch.setattr(common, "open_memory", lambda args, embedder: memlane.open(args.home, embedder=fake_embedder))
    code, out, _ = run(capsys, "--home", home, "--json", "embed", "--resume")
    assert code == 0 and json.loads(out)["chunks_embedded"] == 1
    code, out, _ = run(capsys, "--home", home, "--json", "embed")
    assert json.loads(out)["chunks_embedded"] == 0


# A `memlane` whose embedder is the fake one, slowed down in its second batch so that a test
# can interrupt it there: the keywords are committed and one batch of vectors added by then.
_INTERRUPTIBLE = """
import pathlib, sys, time
sys.path.insert(0, {tests!r})
import memlane, memlane.cli as cli, memlane.cli.common, memlane.embed.backfill
from conftest import FakeEmbedder

class Slow(FakeEmbedder):
    def embed_documents(self, texts):
        if self.calls == 1 and not pathlib.Path({ready!r}).exists():  # the first run only
            pathlib.Path({ready!r}).touch()
            time.sleep(120)
        return super().embed_documents(texts)

memlane.embed.backfill._CHUNKS_PER_EMBED_BATCH = 4
memlane.cli.common.open_memory = lambda args, embedder: memlane.open(args.home, embedder="none" if embedder == "none" else Slow())
sys.exit(cli.main(sys.argv[1:]))
"""


def test_ctrl_c_during_index_says_what_was_committed_and_embed_resumes(tmp_path):
    import os
    import signal
    import time
    from pathlib import Path

    src = tmp_path / "src"
    for n in range(3):
        pairs = [
            (
                f"what broke in release {n}.{k}?",
                f"Release {n}.{k} broke " + " ".join(f"module{n}x{k}x{j}" for j in range(90)),
            )
            for k in range(4)
        ]
        write_jsonl(src / f"s{n}.jsonl", generic_session(f"s{n}", pairs))
    home, ready = tmp_path / "home", tmp_path / "ready"
    script = _INTERRUPTIBLE.format(tests=str(Path(__file__).parent), ready=str(ready))
    env = {**os.environ, "MEMLANE_CACHE_DIR": str(tmp_path / "cache")}

    def memlane(*argv, **kw):
        return subprocess.Popen([sys.executable, "-c", script, "--home", str(home), *argv], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env, **kw)  # fmt: skip

    proc = memlane("index", str(src))
    deadline = time.monotonic() + 120
    while not ready.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ready.exists(), proc.communicate(timeout=10)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert (
        err
        == "memlane index: interrupted: keywords for all 3 files committed, 8 chunks await vectors; run `memlane embed` (or the same `memlane index`) to resume\n"
    )

    verify = memlane("--json", "verify")
    out, err = verify.communicate(timeout=60)
    verdict = json.loads(out)
    assert verify.returncode == 0 and verdict["sound"] and (verdict["chunks"], verdict["vectors_pending"]) == (12, 8), (
        err
    )
    status = memlane("status")
    out, _ = status.communicate(timeout=60)
    assert "vectors pending: 8 chunks have none yet: `memlane embed` adds them" in out

    embed = memlane("embed")
    out, err = embed.communicate(timeout=60)
    assert embed.returncode == 0 and out.startswith("embedded 8 chunks"), err
    verify = memlane("verify")
    out, _ = verify.communicate(timeout=60)
    assert verify.returncode == 0 and "sound (3 files, 12 chunks, 12 with vectors)" in out and "pending" not in out


def test_a_fifo_named_like_a_transcript_is_reported_not_opened(tmp_path):
    import os

    write_jsonl(tmp_path / "t" / "a.jsonl", generic_session("a", PAIRS))
    os.mkfifo(tmp_path / "t" / "pipe.jsonl")
    argv = [
        sys.executable,
        "-m",
        "memlane.cli",
        "--home",
        str(tmp_path / "home"),
        "--json",
        "index",
        str(tmp_path / "t"),
        "--embed",
        "none",
    ]
    # A FIFO opened for reading waits for a writer: a timeout here is the hang this prevents.
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["records_skipped"] == {"not_a_regular_file": 1}
    assert (report["files_seen"], report["files_indexed"], report["chunks_added"]) == (2, 1, 1)
    [fifo] = [f for f in report["files"] if f["path"].endswith("pipe.jsonl")]
    assert fifo["empty_reason"] == "not_a_regular_file"
    proc = subprocess.run(
        [*argv[:5], "index", str(tmp_path / "t"), "--embed", "none"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "pipe.jsonl: nothing indexed (not a regular file)" in proc.stdout and "not_a_regular_file: 1" in proc.stdout


def test_ctrl_c_while_parsing_names_the_files_committed(tmp_path, capsys, monkeypatch):
    from memlane.cli import common

    for n in range(70):  # two parse batches: 64 files, then 6
        write_jsonl(tmp_path / "t" / f"s{n:02d}.jsonl", generic_session(f"s{n}", PAIRS))

    def interrupt(self, stage, done, total):
        raise KeyboardInterrupt

    monkeypatch.setattr(common.ProgressBar, "__call__", interrupt)
    code, out, err = run(capsys, "--home", str(tmp_path / "home"), "index", str(tmp_path / "t"), "--embed", "none")
    assert code == 130 and out == ""
    assert (
        err
        == "memlane index: interrupted: keywords for 64 of 70 files committed; run the same `memlane index` again to resume\n"
    )
    code, out, _ = run(
        capsys, "--home", str(tmp_path / "home"), "--json", "index", str(tmp_path / "t"), "--embed", "none"
    )
    assert (
        code == 130
        and json.loads(out)["kind"] == "IndexInterrupted"
        and json.loads(out)["report"]["files_indexed"] == 6
    )


def test_the_progress_bar_shows_stages_that_run_at_once_on_one_line(capsys, monkeypatch):
    from itertools import count

    from memlane.cli import common

    clock = count(1)
    monkeypatch.setattr(common.time, "monotonic", lambda: float(next(clock)))  # a second a call
    bar = common.ProgressBar(enabled=True)
    bar("parse", 5_000_000, 10_000_000)
    bar("embed", 100, 400)  # an index run embeds while it parses
    bar("parse", 10_000_000, 10_000_000)
    bar("embed", 400, 400)
    bar("embed", 50, 50)  # a later run starts a line of its own
    frames = capsys.readouterr().err.split("\r")[1:]
    assert "parse" in frames[0] and "embed" not in frames[0]
    assert all("parse" in f and "embed" in f for f in frames[1:4])
    assert "100% 10.0/10.0 MB" in frames[2] and "25% 100/400 chunks" in frames[2]
    assert [f.endswith("\n") for f in frames] == [False, False, False, True, True]
    assert "parse" not in frames[4] and "100% 50/50 chunks" in frames[4]


def test_a_memlane_process_starts_numpy_blas_on_one_thread(tmp_path):
    # OpenBLAS starts a thread per core at numpy's import, each spinning ~0.1 s: ~90 ms of CPU
    # in a hook on 2 cores (benches/LOG.md, "OpenBLAS on one thread"). A user's setting stands.
    import os

    code = (
        "import os, sys; from memlane import cli; home = sys.argv[1]; "
        "sys.argv = ['memlane', '--home', home, 'status']; cli.main(); print(os.environ.get('OPENBLAS_NUM_THREADS'))"
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    for preset, expected in ((None, "1"), ("3", "3")):
        run_env = env if preset is None else {**env, "OPENBLAS_NUM_THREADS": preset}
        result = subprocess.run(
            [sys.executable, "-c", code, str(tmp_path / "home")],
            env=run_env,
            capture_output=True,
            text=True,
            check=True,
        )
        assert result.stdout.splitlines()[-1] == expected
