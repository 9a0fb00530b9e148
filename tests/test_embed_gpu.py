"""GPU embedding actors: provider and graph choice (issue 22).

There is no GPU here: onnxruntime's provider list and Ray's GPU ids are monkeypatched, and the
real model is loaded through the fallback path (this onnxruntime has no CUDA provider). That
a session really runs on CUDA is untested on hardware.
"""

from __future__ import annotations

import logging

import pytest

import memlane.embed
from conftest import FakeEmbedder
from memlane.cluster import build
from memlane.cluster.build import EmbedWorker, local_spec
from memlane.embed import local

ort = pytest.importorskip("onnxruntime")

Q8 = "local/all-MiniLM-L6-v2/q8/384"
FP32 = "local/all-MiniLM-L6-v2/fp32/384"


@pytest.fixture(autouse=True)
def fresh_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local, "_WARNED", set())


def test_cuda_first_when_onnxruntime_offers_it(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(ort, "get_available_providers", lambda: ["CUDAExecutionProvider", "CPUExecutionProvider"])
    with caplog.at_level(logging.WARNING, logger="memlane.embed.local"):
        assert local.execution_providers("gpu") == ["CUDAExecutionProvider", "CPUExecutionProvider"]
        assert local.execution_providers("cpu") == ["CPUExecutionProvider"]
    assert caplog.records == []


def test_cpu_with_one_warning_line_when_onnxruntime_has_no_cuda(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(ort, "get_available_providers", lambda: ["CPUExecutionProvider"])
    with caplog.at_level(logging.WARNING, logger="memlane.embed.local"):
        assert local.execution_providers("gpu") == ["CPUExecutionProvider"]
        assert local.execution_providers("gpu") == ["CPUExecutionProvider"]
    assert len(caplog.records) == 1 and "onnxruntime-gpu" in caplog.records[0].getMessage()
    with pytest.raises(ValueError, match="unknown device"):
        local.execution_providers("tpu")


def test_gpu_actors_run_the_fp32_graph_unless_the_index_holds_q8_vectors() -> None:
    assert local_spec("local", None, gpu=True) == "local:fp32"
    assert local_spec("local", None, gpu=False) == "local"
    assert local_spec("local", Q8, gpu=True) == "local"  # vector spaces never mix
    assert local_spec("local", FP32, gpu=False) == "local:fp32"  # a GPU-built index re-run on CPUs
    assert local_spec("local:q8", None, gpu=True) == "local:q8"  # pinned: as asked
    assert local_spec("local:int8", None, gpu=True) == "local:int8"


def test_an_actor_given_a_gpu_asks_for_the_gpu_device(monkeypatch: pytest.MonkeyPatch) -> None:
    built = []

    def make_embedder(spec, **kw):
        built.append((spec, kw))
        return FakeEmbedder()

    monkeypatch.setattr(memlane.embed, "make_embedder", make_embedder)
    monkeypatch.setattr(build, "_gpu_ids", lambda: [0])
    EmbedWorker("local:fp32", threads=2)
    monkeypatch.setattr(build, "_gpu_ids", lambda: [])
    EmbedWorker("local:fp32", threads=2)
    assert built == [("local:fp32", {"threads": 2, "device": "gpu"}), ("local:fp32", {"threads": 2})]


@pytest.mark.model
def test_a_gpu_embedder_asks_for_cuda_and_falls_back_to_the_cpu_with_one_warning(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    cpu = local.LocalEmbedder(mode="fp32", threads=1)
    # onnxruntime offers CUDA (as onnxruntime-gpu does) but cannot start it, as on a node without
    # the CUDA libraries: onnxruntime-gpu then builds the session on the CPU provider alone.
    monkeypatch.setattr(ort, "get_available_providers", lambda: ["CUDAExecutionProvider", "CPUExecutionProvider"])
    asked, real = [], ort.InferenceSession

    def session(path, sess_options=None, providers=None):
        asked.append(providers)
        return real(path, sess_options=sess_options, providers=[p for p in providers if p != "CUDAExecutionProvider"])

    monkeypatch.setattr(ort, "InferenceSession", session)
    with caplog.at_level(logging.WARNING, logger="memlane.embed.local"):
        gpu = local.LocalEmbedder(mode="fp32", threads=1, device="gpu")
    assert asked == [["CUDAExecutionProvider", "CPUExecutionProvider"]]
    assert gpu.providers == ["CPUExecutionProvider"] and gpu.id == cpu.id == FP32
    assert [r.getMessage() for r in caplog.records if r.name == "memlane.embed.local"] == [
        "memlane: a GPU was assigned but onnxruntime could not start CUDA (are CUDA 12 and cuDNN 9 installed?): embedding on the CPU"
    ]
    text = "the deploy failed with exit code 137"
    assert (gpu.embed_query(text) == cpu.embed_query(text)).all()


class _FakeRay:
    """Ray's calls ``_embedding`` makes, recording the actors it asks for."""

    def __init__(self, resources: dict[str, float]) -> None:
        self.resources, self.actors = resources, []

    def cluster_resources(self) -> dict[str, float]:
        return self.resources

    def remote(self, cls):
        ray = self

        class Remote:
            def options(self, **options):
                self.opts = options
                return self

            def remote(self, *args):
                ray.actors.append((cls.__name__, self.opts, args))
                describe = type("M", (), {"remote": staticmethod(lambda: (f"{args[0]}-id", 384, 256))})
                return type("Actor", (), {"describe": describe})()

        return Remote()

    def get(self, ref):
        return ref


@pytest.mark.parametrize(("gpus", "index_id", "spec"), [(2, None, "local:fp32"), (2, Q8, "local"), (0, None, "local")])
def test_the_cluster_places_one_actor_per_gpu_with_the_graph_for_it(gpus: int, index_id, spec: str) -> None:
    from memlane.cluster.index import _embedding

    ray = _FakeRay({"CPU": 2.0, "GPU": float(gpus)})
    pool, described, limiter = _embedding(ray, "local", None, None, 1, None, index_id)
    assert {a[2][0] for a in ray.actors} == {spec} and described == (f"{spec}-id", 384, 256) and limiter is None
    if gpus:
        assert len(pool) == gpus and all(a[1]["num_gpus"] == 1 for a in ray.actors)
    else:
        assert all("num_gpus" not in a[1] for a in ray.actors)
