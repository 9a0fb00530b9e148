"""``memlane bench``: the retrieval benchmarks on the command line.

``memlane bench locomo|beam|realtalk|longmemeval FILE`` loads the data, runs
:func:`memlane.bench.runner.run_benchmark`, writes the full result (with the per-question log)
to ``bench-results/<dataset>-<split>-<timestamp>.json`` and prints a markdown table, or with
``--json`` the result without the per-question log.

Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="memlane")
    >>> add_parser(parser.add_subparsers(dest="command"), [])
    >>> args = parser.parse_args(["bench", "locomo", "locomo10.json", "--split", "dev", "--k", "1,10"])
    >>> args.split, args.k, args.embedder
    ('dev', [1, 10], 'local')
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from memlane.bench.datasets import DATASETS, GRANULARITIES, load_dataset
from memlane.bench.metrics import METRICS
from memlane.bench.runner import DEFAULT_KS, run_benchmark, save_result
from memlane.errors import InvalidArgumentError

__all__ = ["add_parser", "format_markdown", "run_cli"]


def _ks(text: str) -> list[int]:
    try:
        ks = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--k takes comma-separated positive integers like 1,3,5,10, not {text!r}"
        ) from None
    if not ks or ks[0] < 1:
        raise argparse.ArgumentTypeError(f"--k takes comma-separated positive integers like 1,3,5,10, not {text!r}")
    return ks


def add_parser(sub: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add the ``bench`` subcommand to the ``memlane`` subparsers.

    Args:
        sub: The object returned by ``ArgumentParser.add_subparsers``.
        parents: Parsers carrying the global options (``--home`` is ignored: every
            conversation gets a fresh temporary home; ``--json`` is honoured).

    Example:
        >>> import argparse
        >>> p = argparse.ArgumentParser()
        >>> add_parser(p.add_subparsers(dest="command"), [])
        >>> p.parse_args(["bench", "beam", "data/100K"]).func is run_cli
        True
    """
    p = sub.add_parser(
        "bench",
        parents=parents,
        help="retrieval benchmarks (LoCoMo, BEAM, REALTALK, LongMemEval) through the product pipeline",
        description=(
            "Index each conversation into a fresh temporary home with the product's parser, chunker and "
            "indexes, ask every question through search, score hits against the gold evidence. "
            "Tuning is allowed only on LoCoMo --split dev (conversations 0-4); LoCoMo test (5-9), BEAM, "
            "REALTALK and LongMemEval are report-only."
        ),
    )
    p.add_argument("dataset", choices=DATASETS, help="benchmark")
    p.add_argument(
        "file", help="data: locomo10.json, the beam/100K folder, the realtalk folder (or one chat), a LongMemEval JSON"
    )
    p.add_argument(
        "--split",
        choices=["dev", "test", "all"],
        help="LoCoMo only: dev = conversations 0-4, test = 5-9 (default), all",
    )
    p.add_argument(
        "--granularity",
        choices=[*GRANULARITIES, "all"],
        default="all",
        help="score at session (sessions of the first k hits), session_top (top k sessions of 50 hits), turn (dialog) or all (default)",
    )
    p.add_argument(
        "--k",
        type=_ks,
        default=list(DEFAULT_KS),
        help="cut-offs, comma-separated (default 1,3,5,10); queries ask for the largest",
    )
    p.add_argument(
        "--embedder",
        "--embed",
        default="local",
        help="local (default, MiniLM q8), local:fp32, local:int8, local:MODEL_DIR, or none (BM25 only)",
    )
    p.add_argument("--limit", type=int, help="run only the first N conversations (quick runs)")
    p.add_argument("--fusion", choices=["weighted", "rrf"], help="search fusion (default: the product's)")
    p.add_argument("--vector-weight", type=float, help="vector weight in weighted fusion (default: the product's)")
    p.add_argument("--threshold", type=float, help="empty-result threshold (default: the product's)")
    p.add_argument(
        "--no-recency",
        dest="recency",
        action="store_false",
        default=None,
        help="turn off current-first ordering of same-subject hits (to measure it)",
    )
    p.add_argument(
        "--no-temporal",
        dest="temporal",
        action="store_false",
        default=None,
        help="turn off the boost of hits near a time the question names (to measure it)",
    )
    p.add_argument("--out", help="result file (default bench-results/<dataset>-<split>-<timestamp>.json)")
    p.add_argument(
        "--allow-unverified", action="store_true", help="LongMemEval: run a file whose sha256 is not a published one"
    )
    p.set_defaults(func=run_cli)


def run_cli(args: argparse.Namespace) -> int:
    """Run ``memlane bench`` from parsed arguments; returns the exit code.

    Raises:
        memlane.errors.InvalidArgumentError: A bad split for the dataset or a bad limit.
        memlane.errors.InvalidDataError: A data file that is not the dataset (malformed, checksum mismatch).
        FileNotFoundError: The data path does not exist.
    """
    if args.limit is not None and args.limit < 1:
        raise InvalidArgumentError("--limit must be at least 1")
    dataset = load_dataset(args.dataset, args.file, args.split, allow_unverified=args.allow_unverified)
    search = {
        name: value
        for name, value in (
            ("fusion", args.fusion),
            ("vector_weight", args.vector_weight),
            ("threshold", args.threshold),
            ("recency", args.recency),
            ("temporal", args.temporal),
        )
        if value is not None
    }
    granularities = list(GRANULARITIES) if args.granularity == "all" else [args.granularity]
    result = run_benchmark(
        dataset,
        embedder=args.embedder,
        ks=args.k,
        granularities=granularities,
        search=search,
        limit=args.limit,
        progress=lambda line: print(line, file=sys.stderr, flush=True),
    )
    path = save_result(result, args.out)
    summary = {key: value for key, value in result.items() if key != "questions"}
    summary["result_file"] = str(path)
    if getattr(args, "json", False):
        json.dump(summary, sys.stdout, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        print(format_markdown(summary))
    return 0


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


def format_markdown(result: dict[str, Any]) -> str:
    """Markdown report: identity lines, then per granularity a table of metric@k (rows) by
    group and category (columns), values in percent.

    Example:
        >>> r = {"dataset": "x", "split": "all", "embedder": "none", "git_revision": "abc", "git_dirty": False,
        ...      "file_sha256": "f" * 64, "file_verified": None, "parameters": {"k": [1], "search": {}},
        ...      "counts": {"conversations": 1, "questions": 2, "questions_scored": {"turn": 1},
        ...                 "questions_skipped": {"turn": {"no_evidence": 1}}, "evidence_strings": 1,
        ...                 "evidence_issues": {}, "empty_results": 0,
        ...                 "gold_turns_not_indexed": 0},
        ...      "seconds": {"total": 1.0}, "notes": [],
        ...      "results": {"turn": {"groups": {"all": {"questions": 1, "metrics": {"recall_any@1": 1.0}}},
        ...                           "categories": {}}}}
        >>> print(format_markdown(r).splitlines()[-1])
        | recall_any@1 | 100.0 |
    """
    c = result["counts"]
    lines = [
        f"## memlane bench {result['dataset']} (split {result['split']})",
        "",
        f"- embedder `{result['embedder']}`, memlane {result.get('memlane_version', '?')} at "
        f"`{result['git_revision'][:12]}`{' (modified tree)' if result.get('git_dirty') else ''}, "
        f"native module sha256 `{result.get('core_sha256', '?')[:12]}`",
        f"- data sha256 `{result['file_sha256'][:16]}…`"
        + {True: " (matches the published file)", False: " (NOT the published file)", None: ""}[
            result.get("file_verified")
        ],
        f"- {c['conversations']} conversations, {c['questions']} questions; scored "
        + ", ".join(f"{g} {n}" for g, n in c["questions_scored"].items())
        + "; skipped: "
        + (
            "; ".join(
                f"{g} " + (", ".join(f"{r} {n}" for r, n in s.items()) or "none")
                for g, s in c["questions_skipped"].items()
            )
        ),
        f"- evidence: {c['evidence_strings']} gold entries; repaired/dropped: "
        f"{', '.join(f'{k} {v}' for k, v in c['evidence_issues'].items()) or 'none'}; "
        f"gold turns not indexed {c['gold_turns_not_indexed']}; queries with no hit {c['empty_results']}",
        f"- search k {result['parameters'].get('search_k', max(result['parameters']['k']))}, "
        f"options {json.dumps(result['parameters']['search'])}; {result['seconds']['total']:.1f}s",
    ]
    lines += [f"- {note}" for note in result.get("notes", [])]
    if "result_file" in result:
        lines.append(f"- result file `{result['result_file']}`")
    for gran, res in result["results"].items():
        columns = [(name, g) for name, g in res["groups"].items()] + [(cat, v) for cat, v in res["categories"].items()]
        lines += ["", f"### {gran} level (percent)", ""]
        lines.append("| metric | " + " | ".join(name for name, _ in columns) + " |")
        lines.append("|---|" + "---:|" * len(columns))
        lines.append("| questions | " + " | ".join(str(v["questions"]) for _, v in columns) + " |")
        for metric in METRICS:
            for k in result["parameters"]["k"]:
                key = f"{metric}@{k}"
                if any(key in v["metrics"] for _, v in columns):
                    lines.append(f"| {key} | " + " | ".join(_pct(v["metrics"].get(key)) for _, v in columns) + " |")
    return "\n".join(lines)
