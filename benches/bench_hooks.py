"""Latency of the agent hooks as Claude Code runs them: the installed command, a fresh process per event.

Builds a home of about 100k chunks from a generated Claude Code archive (benches/archive.py,
keyword index only: hooks recall keyword-only, so vectors would not be read) plus a MEMORY.md
of generated entries, installs the hooks with `memlane install-hooks claude-code` into a
temporary settings file, then runs each installed command through the shell with the exact
payload JSON on stdin and times it, wall clock, end to end (interpreter start-up included):

  * SessionStart: a new session id each run (the snapshot is rendered and frozen, the focus
    query reads the project's recent transcripts, recall runs over the home);
  * UserPromptSubmit: the first prompt of a new session (recall on the user's words); and again
    on a home of ../shared/data/transcripts with the local model's vectors, where the hook
    loads the model to embed the prompt (skipped with a message when the samples are absent);
  * Stop: queue the transcript and spawn the detached worker (the worker lock is held during
    the runs, so workers exit at once instead of competing for the 2 cores);
  * UserPromptSubmit with a pasted prompt of 1, 5 and 10 MB (`--big-mb`): the hook reads and
    parses the whole payload but recalls on its first 4,000 characters (memlane.ranking.query),
    and must stay under its own deadline (DESIGN §5: wall p99 ≤ the deadline, never exit 2);
  * `python -c pass`: the interpreter alone, the floor under every hook.

Wall clock is what the agent waits; CPU time (user + system of the shell and the hook, from
getrusage) is what the hook costs whatever else the machine runs. The load average is printed
with the results: on a shared machine wall clock grows with it.

Run: `python benches/bench_hooks.py` (defaults: 930 files × 70 exchanges ≈ 100k chunks, 40 runs
per hook). `--home DIR` keeps the generated home for a re-run (`--reuse`).
Results print as a markdown table and are saved to bench-results/hooks.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from archive import generate, words

import memlane
from memlane.agents.hooks import DEFAULT_DEADLINE_S
from memlane.agents.install import install_claude_code
from memlane.brain import Brain

REPO = Path(__file__).resolve().parents[1]


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def build_home(work: Path, files: int, pairs: int, entries: int) -> Path:
    archive, home = work / "projects", work / "home"
    t = time.perf_counter()
    size = generate(archive, files, pairs)
    print(f"generated {files} files, {size / 1e6:.0f} MB in {time.perf_counter() - t:.0f}s", file=sys.stderr)
    t = time.perf_counter()
    mem = memlane.open(home, embedder="none")
    mem.index([archive], embed=False)
    print(f"indexed {mem.status()['chunks']} chunks in {time.perf_counter() - t:.0f}s", file=sys.stderr)
    rng = random.Random(5)
    brain = Brain(home / "brain", home=home)
    for i in range(entries):
        brain.add(["kd", "ll", "rc", "ot"][i % 4], " ".join(words(rng, 14)).capitalize() + ".", on="2026-03-01")
    return home


def time_runs(command: str, payloads: list[dict], env: dict[str, str]) -> tuple[list[float], list[float]]:
    """Wall-clock and CPU (user + system of the shell and the hook) milliseconds per run."""
    wall, cpu = [], []
    for payload in payloads:
        data = json.dumps(payload)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        r = subprocess.run(command, shell=True, input=data, env=env, capture_output=True, text=True)
        wall.append((time.perf_counter() - t) * 1000)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000)
        if r.returncode != 0:
            raise SystemExit(f"hook failed: {r.stderr.strip()}")
    return wall, cpu


def summary(runs: tuple[list[float], list[float]]) -> dict[str, float]:
    wall, cpu = runs
    return {
        "p50_ms": round(pct(wall, 0.5), 1),
        "p90_ms": round(pct(wall, 0.9), 1),
        "p99_ms": round(pct(wall, 0.99), 1),
        "cpu_p50_ms": round(pct(cpu, 0.5), 1),
        "runs": len(wall),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=930)
    ap.add_argument("--pairs", type=int, default=70, help="exchanges per file")
    ap.add_argument("--entries", type=int, default=40, help="MEMORY.md entries")
    ap.add_argument("--runs", type=int, default=40, help="runs per hook")
    ap.add_argument("--big-mb", default="1,5,10", help="sizes of the pasted prompts, in MB (empty: none)")
    ap.add_argument("--big-runs", type=int, default=10, help="runs per pasted-prompt size")
    ap.add_argument("--home", help="work folder to keep (default: a temporary one)")
    ap.add_argument("--reuse", action="store_true", help="reuse the home already built in --home")
    args = ap.parse_args()

    work = Path(args.home) if args.home else Path(tempfile.mkdtemp(prefix="memlane-bench-hooks-"))
    home = work / "home"
    if not (args.reuse and (home / "manifest.json").exists()):
        home = build_home(work, args.files, args.pairs, args.entries)
    chunks = memlane.open(home, embedder="none").status()["chunks"]

    settings = work / "settings.json"
    install_claude_code(settings, home=home, claude_json=None, embed="none")
    hooks = json.loads(settings.read_text())["hooks"]
    command = {event: hooks[event][0]["hooks"][0]["command"] for event in hooks}
    env = {**os.environ, "PYTHONPATH": str(REPO / "python")}
    project = sorted((work / "projects").iterdir())[0]
    cwd = "/home/dev/" + project.name.rsplit("-", 1)[-1]
    rng = random.Random(11)

    def payload(event: str, n: int, **extra: object) -> dict:
        sid = f"bench-{event}-{n:04d}-{time.time_ns()}"
        return {
            "session_id": sid,
            "transcript_path": str(project / f"{sid}.jsonl"),
            "cwd": cwd,
            "permission_mode": "default",
            "hook_event_name": event,
            **extra,
        }

    results: dict[str, object] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}, Python {platform.python_version()}",
        "chunks": chunks,
        "brain_entries": args.entries,
        "load_average_before": os.getloadavg()[0],
    }
    results["python -c pass"] = summary(time_runs(f"{sys.executable} -c pass", [{}] * args.runs, env))
    # One untimed run first: the page cache and the snapshot folder are warm, as in daily use.
    time_runs(command["SessionStart"], [payload("SessionStart", -1, source="startup", model="claude-sonnet-4-5")], env)
    results["SessionStart"] = summary(
        time_runs(
            command["SessionStart"],
            [payload("SessionStart", n, source="startup", model="claude-sonnet-4-5") for n in range(args.runs)],
            env,
        )
    )
    prompts = [payload("UserPromptSubmit", n, prompt=" ".join(words(rng, 12))) for n in range(args.runs)]
    results["UserPromptSubmit (first prompt)"] = summary(time_runs(command["UserPromptSubmit"], prompts, env))
    for mb in [int(x) for x in args.big_mb.split(",") if x.strip()]:
        # The user's words first, then the paste: the recall must still find what they ask about.
        paste = " ".join(words(rng, 1_000)) + "\n"
        big = [
            payload(
                "UserPromptSubmit", n, prompt=" ".join(words(rng, 12)) + "\n" + paste * (mb * 1_000_000 // len(paste))
            )
            for n in range(args.big_runs)
        ]
        results[f"UserPromptSubmit, {mb} MB prompt"] = summary(time_runs(command["UserPromptSubmit"], big, env))
    results["deadline_s"] = DEFAULT_DEADLINE_S

    samples = REPO.parent / "shared" / "data" / "transcripts"
    if samples.is_dir():
        vector_home = work / "home-local-vectors"
        with memlane.open(vector_home) as mem:
            mem.index([samples])
        vector_command = command["UserPromptSubmit"].replace(str(home), str(vector_home))
        assert vector_command != command["UserPromptSubmit"], "the installed command names its home"
        vector_prompts = [payload("UserPromptSubmit", n, prompt=" ".join(words(rng, 12))) for n in range(args.runs)]
        results["UserPromptSubmit (first prompt), home with local vectors"] = summary(
            time_runs(vector_command, vector_prompts, env)
        )
    else:
        print(f"{samples} is missing: the first prompt on a home with vectors is not measured", file=sys.stderr)

    from memlane._fs import _try_lock, _unlock

    (home / "queue").mkdir(exist_ok=True)
    fd = os.open(home / "queue" / "worker.lock", os.O_RDWR | os.O_CREAT)
    try:
        assert _try_lock(fd)
        transcripts = sorted(project.glob("*.jsonl"))
        stops = [
            {**payload("Stop", n, stop_hook_active=False), "transcript_path": str(transcripts[n % len(transcripts)])}
            for n in range(args.runs)
        ]
        results["Stop (queue + spawn worker)"] = summary(time_runs(command["Stop"], stops, env))
    finally:
        _unlock(fd)
        os.close(fd)
    for f in (home / "queue").glob("*.json"):
        f.unlink()

    results["load_average_after"] = os.getloadavg()[0]
    out = REPO / "bench-results" / "hooks.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(
        f"\n{results['machine']}; home of {chunks} chunks, {args.entries} MEMORY.md entries; "
        f"load average {results['load_average_before']:.1f} → {results['load_average_after']:.1f}\n"
    )
    print("| hook (fresh process, through the shell) | wall p50 | wall p90 | wall p99 | CPU p50 |")
    print("|---|---|---|---|---|")
    for name, r in results.items():
        if isinstance(r, dict):
            print(f"| {name} | {r['p50_ms']} ms | {r['p90_ms']} ms | {r['p99_ms']} ms | {r['cpu_p50_ms']} ms |")


if __name__ == "__main__":
    main()
