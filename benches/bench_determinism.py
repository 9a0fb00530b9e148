"""Do two clean builds of the same sources answer identically? Through Memory.index → Memory.search.

Indexes the same archive into fresh homes — twice as a user would (one ``index`` call per
folder: parsing runs in parallel, so documents land in segments in no fixed order), and once file
by file in reverse order (documents and vectors go in in another order altogether) — asks each
home every query and counts the queries whose hits (ids, in order) differ from the first
build's. Embeddings come from the shared cache after the first build, as a rebuild's would.

    python benches/bench_determinism.py [--corpus reversal|locomo] [--embedder local|none] [--k 10]

``reversal``: the reversal corpus (seed 11) and its queries; ``locomo``: LoCoMo conversation 5
(held out from tuning) and its questions.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import memlane


def _sources(corpus: str, src: Path) -> tuple[list[tuple[Path, str | None]], list[str]]:
    """Folders to index (with their format) and the queries."""
    if corpus == "reversal":
        from reversal_corpus import FORMATS, write_corpus

        written = write_corpus(src, seed=11)
        return [(src / fmt, fmt) for fmt in FORMATS], [q.text for q in written.queries]
    from memlane.bench.datasets import load_dataset

    data = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "locomo" / "locomo10.json"
    conv = load_dataset("locomo", data, "test").conversations[0]
    return [(conv.write(src), conv.fmt)], [q.text for q in conv.questions]


def run(corpus: str, embedder: str, k: int) -> dict[str, int]:
    """Build three times, ask every query of each build, count the answers that differ from the first's."""
    embed = embedder != "none"
    with tempfile.TemporaryDirectory(prefix="memlane-determinism-") as tmp:
        src = Path(tmp) / "src"
        src.mkdir()
        folders, queries = _sources(corpus, src)
        files = [
            (f, fmt) for folder, fmt in folders for f in (sorted(folder.rglob("*")) if folder.is_dir() else [folder])
        ]
        answers = []
        for n, order in enumerate((folders, folders, [f for f in files[::-1] if f[0].is_file()])):
            with memlane.open(Path(tmp) / f"home{n}", embedder=embedder) as mem:
                for path, fmt in order:
                    mem.index([path], format=fmt, embed=embed)
                answers.append([[h.id for h in mem.search(q, k=k)] for q in queries])
    first, again, reverse = answers
    return {
        "queries": len(queries),
        "rebuild_differs": sum(a != b for a, b in zip(first, again)),
        "reverse_differs": sum(a != b for a, b in zip(first, reverse)),
    }


def main() -> int:
    """Command line entry point."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--corpus", choices=["reversal", "locomo"], default="reversal")
    p.add_argument("--embedder", default="local")
    p.add_argument("--k", type=int, default=10)
    args = p.parse_args()
    r = run(args.corpus, args.embedder, args.k)
    print(
        f"{args.corpus}, embedder {args.embedder}, k {args.k}: of {r['queries']} queries, {r['rebuild_differs']} answer differently "
        f"after a clean rebuild, {r['reverse_differs']} after a rebuild file by file in reverse order"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
