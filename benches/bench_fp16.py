"""fp16 on a GPU, measured on a CPU (issue 41 item 1): how far fp16 moves the local model's vectors and recall.

A GPU runs the fp32 graph's fp16 form (``memlane.embed._bert_onnx.half_precision``). A CPU's
onnxruntime runs that graph in fp32 between its fp16 weights (it casts around the operators it
has no fp16 kernel for and drops the casts in between), so it shows only the weights' rounding.
This bench also builds, from the fp32 graph, one that rounds every weight and every float
activation to fp16 while each operator computes in fp32: what the CUDA provider computes with
the fp16 graph (its products accumulate in fp32). Through memlane's own code, for each graph:

* cosine against the fp32 graph on every window of the shared transcripts' chunks and of the
  turns of LoCoMo conversations 0-4;
* LoCoMo dev (conversations 0-4, the tuning split) evidence recall@10 by granularity,
  ``memlane.bench.runner.run_benchmark`` with the embedder running that graph, each in a fresh
  embedding cache.

    .venv/bin/python benches/bench_fp16.py     # about two minutes on 2 cores

Needs ../shared/data (transcripts, locomo/locomo10.json).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from bench_feed import chunk_texts, with_session

from memlane.bench.datasets import load_dataset
from memlane.bench.runner import GRANULARITIES, run_benchmark
from memlane.embed.local import LocalEmbedder

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
LOCOMO = DATA / "locomo" / "locomo10.json"
FP16_MAX = 65504.0


def rounded_everywhere(fp32_graph: Path, out: Path) -> Path:
    """``fp32_graph`` with its float weights rounded to fp16 (clamped to fp16's range, as the
    converter does) and a Cast to fp16 and back after every float activation."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper, shape_inference

    model = shape_inference.infer_shapes(onnx.load(fp32_graph))
    graph = model.graph
    for init in graph.initializer:
        if init.data_type == TensorProto.FLOAT:
            value = np.clip(numpy_helper.to_array(init), -FP16_MAX, FP16_MAX).astype(np.float16).astype(np.float32)
            init.CopyFrom(numpy_helper.from_array(value, init.name))
    floats = {v.name for v in graph.value_info if v.type.tensor_type.elem_type == TensorProto.FLOAT}
    outputs = {o.name for o in graph.output}
    nodes, renamed = [], {}
    for node in graph.node:
        node.input[:] = [renamed.get(name, name) for name in node.input]
        nodes.append(node)
        for name in node.output:
            if name in floats and name not in outputs:
                nodes.append(helper.make_node("Cast", [name], [f"{name}/fp16"], to=TensorProto.FLOAT16))
                nodes.append(helper.make_node("Cast", [f"{name}/fp16"], [f"{name}/rounded"], to=TensorProto.FLOAT))
                renamed[name] = f"{name}/rounded"
    del graph.node[:]
    graph.node.extend(nodes)
    onnx.save(model, out)
    return out


def running(graph: Path | None) -> LocalEmbedder:
    """The local fp32 embedder (its id, its feed), running ``graph`` in place of the fp32 graph."""
    import onnxruntime as ort

    if graph is None:
        return LocalEmbedder(mode="fp32")
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return with_session(
        LocalEmbedder(mode="fp32"), ort.InferenceSession(str(graph), options, providers=["CPUExecutionProvider"])
    )


def locomo_turns() -> list[str]:
    conversations = json.loads(LOCOMO.read_text())[:5]
    return [
        turn["text"]
        for conv in conversations
        for key, session in conv["conversation"].items()
        if key.startswith("session_") and isinstance(session, list)
        for turn in session
        if turn.get("text")
    ]


def dev_recall(emb: LocalEmbedder) -> list[float]:
    """LoCoMo dev evidence recall@10 (session, session_top, turn), in a fresh embedding cache."""
    with tempfile.TemporaryDirectory(prefix="memlane-bench-fp16-cache-") as cache:
        os.environ["MEMLANE_CACHE_DIR"] = cache
        result = run_benchmark(load_dataset("locomo", LOCOMO, "dev"), embedder=emb, granularities=list(GRANULARITIES))
    return [100 * result["results"][g]["groups"]["all"]["metrics"]["evidence_recall@10"] for g in GRANULARITIES]


def main() -> None:
    if not (DATA / "transcripts").is_dir() or not LOCOMO.is_file():
        sys.exit(f"bench_fp16: the shared data is not at {DATA} (../shared/data beside the repo)")
    from memlane.embed._bert_onnx import ensure_bert_onnx
    from memlane.embed.weights import minilm_dir

    with tempfile.TemporaryDirectory(prefix="memlane-bench-fp16-") as tmp:
        work = Path(tmp)
        texts = chunk_texts(work / "keywords", DATA / "transcripts") + locomo_turns()
        exact = running(None)
        graphs = {
            "fp16 graph (half_precision) on this CPU": ensure_bert_onnx(minilm_dir(), "all-MiniLM-L6-v2", half=True),
            "every activation rounded to fp16": rounded_everywhere(exact.onnx_path, work / "rounded.onnx"),
        }
        reference = np.concatenate(exact.embed_documents(texts))
        print(f"{len(texts)} texts, {len(reference)} windows; LoCoMo dev evidence recall@10 {', '.join(GRANULARITIES)}")
        print(f"  fp32 graph: {' / '.join(f'{r:.2f}' for r in dev_recall(exact))}")
        for name, graph in graphs.items():
            emb = running(graph)
            vectors = np.concatenate(emb.embed_documents(texts))
            cos = np.sum(vectors * reference, axis=1) / (
                np.linalg.norm(vectors, axis=1) * np.linalg.norm(reference, axis=1)
            )
            print(f"  {name}: {' / '.join(f'{r:.2f}' for r in dev_recall(emb))}; cosine to fp32 min {cos.min():.6f}, "
                  f"p01 {np.percentile(cos, 1):.6f}, mean {cos.mean():.7f}")  # fmt: skip


if __name__ == "__main__":
    main()
