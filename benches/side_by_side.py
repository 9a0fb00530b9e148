"""memlane and MemPalace on the same conversations, questions and metric functions.

memlane runs through ``memlane.bench.runner.run_benchmark`` (what ``memlane bench`` runs).
MemPalace runs in its own venv (``benches/mempalace_worker.py``, a subprocess) through its own
product API: its conversation miner files the transcripts into a fresh palace, its searcher
answers each question with ``n_results = k`` (and ``n_results = 50`` for the session_top
ranking, as memlane's harness asks ``k = 50``). Both rankings are scored here by
``memlane.bench.metrics`` against the gold of ``memlane.bench.datasets``.

What MemPalace is given: each session of the conversation as one transcript file in its
plain-text convention (``> `` before a user turn, the reply on the next line), with the turns
exactly as memlane's own parser reads them (``_core.parse_file``) and rendered the way memlane's
chunker renders them (``Speaker: text``), one line per turn. A hit counts for the session of
its source file; at turn level for the turns whose lines its drawer text holds (a drawer cut
mid-turn counts for the turn the fragment comes from), nothing wider.

Setup (once per machine; see benches/LOG.md, "Side by side with MemPalace"):
    python3 -m venv .venv-mempalace && .venv-mempalace/bin/pip install mempalace
    python benches/side_by_side.py setup        # MiniLM ONNX for ChromaDB, built offline

Run (shared venv, from the repository root):
    python benches/side_by_side.py locomo ../shared/data/locomo/locomo10.json --split test
    python benches/side_by_side.py beam ../shared/data/beam/100K
    python benches/side_by_side.py realtalk ../shared/data/realtalk
    python benches/side_by_side.py reversal --seed 11   # benches/reversal_corpus.py, no FILE
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_MEMPALACE_PYTHON = REPO / ".venv-mempalace" / "bin" / "python"
# Where ChromaDB's ONNXMiniLM_L6_V2 looks for the extracted model; it downloads the archive
# only when one of these files is missing (the archive's sha256 is checked only then).
CHROMA_MODEL_DIR = Path.home() / ".cache" / "chroma" / "onnx_models" / "all-MiniLM-L6-v2" / "onnx"
CHROMA_MODEL_FILES = ("config.json", "special_tokens_map.json", "tokenizer_config.json", "tokenizer.json", "vocab.txt")
ROW_METRICS = (("session", "recall_any@10"), ("session", "evidence_recall@10"), ("session_top", "evidence_recall@10"),
               ("turn", "recall_any@10"), ("turn", "evidence_recall@10"), ("turn", "recall_all@10"), ("turn", "ndcg@10"))  # fmt: skip
GRANULARITIES = ("session", "session_top", "turn")


def install_chroma_model(target: Path = CHROMA_MODEL_DIR) -> Path:
    """Put the all-MiniLM-L6-v2 ONNX model where ChromaDB (so MemPalace) loads it, without downloading.

    The graph is the fp32 one memlane's local embedder builds from the official safetensors
    (``memlane.embed._bert_onnx``, files from ``memlane.embed.weights``), the tokenizer files come
    from the same package: the same weights ChromaDB would download, so both systems embed identically.
    """
    import onnx

    from memlane.embed._bert_onnx import ensure_bert_onnx
    from memlane.embed.weights import verified_minilm_dir

    source = verified_minilm_dir()
    target.mkdir(parents=True, exist_ok=True)
    for name in CHROMA_MODEL_FILES:
        shutil.copyfile(source / name, target / name)
    # One self-contained file, as ChromaDB expects (memlane keeps the weights in a file beside the graph).
    onnx.save_model(onnx.load(ensure_bert_onnx(source, "all-MiniLM-L6-v2")), target / "model.onnx")
    return target


def render_session(session: dict[str, Any]) -> tuple[str, list[tuple[str, list[str]]]]:
    """One parsed session as a MemPalace plain-text transcript, and per turn its rendered line
    and turn ids."""
    lines = []
    for turn in session["turns"]:
        label = turn["speaker"] or turn["role"].capitalize()
        line = f"{label}: {' '.join(turn['text'].split())}"
        lines.append((line, list(turn["ids"]), turn["role"] == "user"))
    text = "\n".join(f"> {line}" if user else line for line, _, user in lines) + "\n"
    return text, [(line, ids) for line, ids, _ in lines]


def transcript_files(
    conv: Any, directory: Path
) -> tuple[dict[str, str], dict[str, str], dict[str, list[tuple[str, list[str]]]]]:
    """MemPalace transcript files for one conversation.

    Returns ``files`` (file name → text), ``session_of`` (file name → session id) and
    ``lines_of`` (file name → per turn: its rendered line and its turn ids).
    """
    from memlane import _core

    parsed = _core.parse_file(str(conv.write(directory)), conv.fmt)
    files: dict[str, str] = {}
    session_of: dict[str, str] = {}
    lines_of: dict[str, list[tuple[str, list[str]]]] = {}
    for n, session in enumerate(parsed["sessions"]):
        name = f"session_{n:04d}.txt"
        files[name], lines_of[name] = render_session(session)
        session_of[name] = session["id"]
    return files, session_of, lines_of


def drawer_turn_ids(text: str, lines: list[tuple[str, list[str]]]) -> list[str]:
    """Turn ids whose rendered line (or a fragment of it) is in a drawer's text, in order."""
    exact = {line: ids for line, ids in lines}
    out: list[str] = []
    for raw in text.split("\n"):
        fragment = raw.strip().removeprefix(">").strip()
        if not fragment:
            continue
        ids = exact.get(fragment) or next((ids for line, ids in lines if fragment in line), [])
        out.extend(i for i in ids if i not in out)
    return out


def mempalace_answers(job: dict[str, Any], python: Path) -> dict[str, Any]:
    """Run ``mempalace_worker.py`` on ``job`` in MemPalace's venv, with a fresh config folder;
    its answers by conversation id."""
    with tempfile.TemporaryDirectory(prefix="side-by-side-job-") as tmp:
        job_path, out_path = Path(tmp) / "job.json", Path(tmp) / "out.json"
        job_path.write_text(json.dumps(job), encoding="utf-8")
        config_dir = Path(tmp) / "mempalace-config"
        config_dir.mkdir()
        env = {**os.environ, "MEMPALACE_CONFIG_DIR": str(config_dir)}
        env.pop("PYTHONPATH", None)
        worker = Path(__file__).with_name("mempalace_worker.py")
        subprocess.run([str(python), str(worker), str(job_path), str(out_path)], env=env, check=True)
        return {c["cid"]: c for c in json.loads(out_path.read_text(encoding="utf-8"))["conversations"]}


def run_mempalace(dataset: Any, conversations: list[Any], k: int, python: Path) -> dict[str, Any]:
    """Mine and search with MemPalace in its venv; score with memlane's metrics."""
    from memlane.bench.metrics import aggregate, score, session_ranking, turn_ranking
    from memlane.bench.runner import SESSION_DEPTH

    with tempfile.TemporaryDirectory(prefix="side-by-side-") as tmp:
        job: dict[str, Any] = {"k": k, "depth": max(SESSION_DEPTH, k), "conversations": []}
        maps = {}
        for conv in conversations:
            src = Path(tmp) / "src" / conv.cid.replace("/", "_")
            src.mkdir(parents=True)
            files, session_of, lines_of = transcript_files(conv, src)
            maps[conv.cid] = (session_of, lines_of)
            job["conversations"].append(
                {"cid": conv.cid, "files": files, "questions": [{"qid": q.qid, "text": q.text} for q in conv.questions]}
            )
        answers = mempalace_answers(job, python)

    rows: dict[str, list[dict[str, float]]] = {g: [] for g in GRANULARITIES}
    unmapped = 0
    seconds = {"mine": 0.0, "search": 0.0}
    for conv in conversations:
        session_of, lines_of = maps[conv.cid]
        got = answers[conv.cid]
        seconds["mine"] += got["seconds"]["mine"]
        seconds["search"] += got["seconds"]["search"]
        for q in conv.questions:
            hits, deep = got["answers"][q.qid]["hits"], got["answers"][q.qid]["deep"]
            turn_ids = [drawer_turn_ids(h["text"], lines_of.get(h["source_file"], [])) for h in hits]
            unmapped += sum(1 for ids in turn_ids if not ids)
            rankings = {
                "session": session_ranking(session_of.get(h["source_file"], "?") for h in hits),
                "session_top": session_ranking(session_of.get(h["source_file"], "?") for h in deep),
                "turn": turn_ranking(turn_ids),
            }
            for gran in rows:
                if not q.skip_reason(gran):
                    rows[gran].append(score(rankings[gran], q.gold(gran), (k,)))
    return {
        "results": {g: {"questions": len(r), "metrics": aggregate(r)} for g, r in rows.items()},
        "hits_without_turn_ids": unmapped,
        "seconds": {key: round(v, 1) for key, v in seconds.items()},
    }


def run_mempalace_reversal(seed: int, k: int, python: Path) -> dict[str, Any]:
    """The reversal corpus (``benches/reversal_corpus.py``) in one palace; scored like
    ``bench_recency.py`` scores memlane. Transcripts go in as plain-text sessions (rendered as
    for the other datasets), markdown notes as written."""
    from bench_recency import summarize
    from reversal_corpus import write_corpus

    from memlane import _core

    with tempfile.TemporaryDirectory(prefix="side-by-side-reversal-") as tmp:
        src = Path(tmp) / "src"
        corpus = write_corpus(src, seed=seed)
        files: dict[str, str] = {}
        for path in corpus.files:
            fmt = path.relative_to(src).parts[0]
            if fmt == "markdown":
                files[f"{len(files):04d}-{path.stem}.md"] = path.read_text(encoding="utf-8")
                continue
            for session in _core.parse_file(str(path), fmt)["sessions"]:
                files[f"{len(files):04d}-{path.stem}.txt"] = render_session(session)[0]
    questions = [{"qid": str(i), "text": q.text} for i, q in enumerate(corpus.queries)]
    job = {"k": k, "depth": k, "conversations": [{"cid": "reversal", "files": files, "questions": questions}]}
    got = mempalace_answers(job, python)["reversal"]
    texts = [[h["text"] for h in got["answers"][q["qid"]]["hits"]] for q in questions]
    return {"results": summarize(corpus.queries, texts, k), "files": len(files), "seconds": got["seconds"]}


def reversal_main(args: argparse.Namespace) -> None:
    """memlane (current statement first on and off) and MemPalace on the reversal corpus."""
    from bench_recency import run

    k = 10
    ours = run(args.embedder, k, verbose=False, seed=args.seed)
    theirs = run_mempalace_reversal(args.seed, k, args.mempalace_python)
    version = mempalace_version(args.mempalace_python)
    print(
        f"\nreversal corpus, seed {args.seed}, k = {k}, percent: current first / current above every earlier "
        f"statement of its subject / past time first / unique old fact first\n"
    )
    print("| system | part | current first | current above earlier | past first | unique first |")
    print("|---|---|---:|---:|---:|---:|")
    parts = ("tune", "heldout")
    rows = [(f"memlane ({args.embedder})", p, ours["results"][p]["on"]) for p in parts]
    rows += [(f"memlane, reordering off ({args.embedder})", p, ours["results"][p]["off"]) for p in parts]
    rows += [(f"MemPalace {version}", p, theirs["results"][p]) for p in parts]
    for name, part, result in rows:
        current = result["current"]
        cells = [current["first"], current["above_earlier"], result["past"]["first"], result["unique"]["first"]]
        print(f"| {name} | {part} | " + " | ".join(f"{100 * c:.1f}" for c in cells) + " |")


def mempalace_version(python: Path) -> str:
    """``mempalace.__version__`` in its venv."""
    cmd = [str(python), "-c", "import mempalace; print(mempalace.__version__)"]
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()


def row(name: str, questions: int, metrics: dict[str, dict[str, float]]) -> str:
    """One markdown table row of the ROW_METRICS in percent."""
    cells = [f"{100 * metrics[gran].get(key, 0.0):.1f}" for gran, key in ROW_METRICS]
    return f"| {name} | {questions} | " + " | ".join(cells) + " |"


def main(argv: list[str] | None = None) -> None:
    """CLI: ``setup``, ``reversal [--seed]`` or ``DATASET FILE [--split] [--limit] [--mempalace-python]``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dataset", choices=["setup", "locomo", "beam", "realtalk", "reversal"])
    parser.add_argument("file", nargs="?")
    parser.add_argument("--split", default=None)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--embedder", default="local")
    parser.add_argument("--seed", type=int, default=11, help="reversal corpus: picks paraphrases, days and formats")
    parser.add_argument("--mempalace-python", type=Path, default=DEFAULT_MEMPALACE_PYTHON)
    args = parser.parse_args(argv)
    if args.dataset == "setup":
        print(f"ChromaDB MiniLM model installed in {install_chroma_model()}")
        return
    if not args.mempalace_python.exists():
        parser.error(
            f'no MemPalace venv at {args.mempalace_python} (see benches/LOG.md, "Side by side with MemPalace")'
        )
    if args.dataset == "reversal":
        reversal_main(args)
        return
    if not args.file:
        parser.error("FILE is required")

    from memlane.bench.datasets import load_dataset
    from memlane.bench.runner import run_benchmark

    k = 10
    dataset = load_dataset(args.dataset, args.file, args.split)
    conversations = list(dataset.conversations)[: args.limit]
    dataset = dataclasses.replace(dataset, conversations=conversations)
    ours = run_benchmark(dataset, embedder=args.embedder, ks=(k,), progress=lambda line: print(line, file=sys.stderr))
    theirs = run_mempalace(dataset, conversations, k, args.mempalace_python)

    print(f"\n{dataset.name} {dataset.split}: {len(conversations)} conversations, k = {k}, percent\n")
    print(
        "| system | questions | session R_any@10 | session ev.R@10 | top-10 sessions ev.R | turn R_any@10 | turn ev.R@10 | turn R_all@10 | turn NDCG@10 |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    ours_metrics = {g: ours["results"][g]["groups"]["all"]["metrics"] for g in GRANULARITIES}
    print(
        row(
            f"memlane {ours['memlane_version']} ({ours['embedder']})",
            ours["counts"]["questions_scored"]["session"],
            ours_metrics,
        )
    )
    theirs_metrics = {g: theirs["results"][g]["metrics"] for g in GRANULARITIES}
    version = mempalace_version(args.mempalace_python)
    print(row(f"MemPalace {version} (ChromaDB MiniLM)", theirs["results"]["session"]["questions"], theirs_metrics))
    print(
        f"\nmemlane: index {ours['seconds']['index']:.0f}s, search {ours['seconds']['search']:.0f}s; "
        f"MemPalace: mine {theirs['seconds']['mine']:.0f}s, search {theirs['seconds']['search']:.0f}s; "
        f"MemPalace hits mapped to no turn: {theirs['hits_without_turn_ids']}"
    )


if __name__ == "__main__":
    main()
