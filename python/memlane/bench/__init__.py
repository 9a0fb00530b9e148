"""Retrieval benchmarks through the product pipeline: LoCoMo, BEAM, REALTALK, LongMemEval.

* :mod:`memlane.bench.datasets`: loaders, evidence normalisation, the fixed LoCoMo dev/test split;
* :mod:`memlane.bench.metrics`: recall_any / recall_all / evidence recall / NDCG at k;
* :mod:`memlane.bench.runner`: index each conversation in a fresh home, search, score;
* :mod:`memlane.bench.cli`: the ``memlane bench`` subcommand.

Example:
    >>> from memlane.bench import load_dataset, run_benchmark
    >>> ds = load_dataset("locomo", "tests/fixtures/bench/locomo_mini.json", split="dev")
    >>> turn = run_benchmark(ds, embedder="none")["results"]["turn"]["groups"]["all"]
    >>> turn["questions"], turn["metrics"]["recall_all@3"]
    (25, 1.0)
"""

from memlane.bench.datasets import LOCOMO_SPLITS, load_dataset
from memlane.bench.runner import run_benchmark, save_result

__all__ = ["LOCOMO_SPLITS", "load_dataset", "run_benchmark", "save_result"]
