"""The local model's device: provider and graph choice for GPU actors (issue 22) and for
``memlane index|embed --device`` and ``Memory(device=)`` (issue 41).

There is no GPU here: onnxruntime's provider list, Ray's GPU ids and the GPU probe are
monkeypatched, and the real model is loaded through the fallback path (this onnxruntime has no
CUDA provider). A session really running on CUDA is tests/test_gpu_real.py's, on a GPU machine.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import fake_cuda
import numpy as np
import pytest
from conftest import SHARED_DATA, FakeEmbedder

import memlane
import memlane.embed
from memlane import _core
from memlane.cli import main
from memlane.cluster import build
from memlane.cluster.build import EmbedWorker, local_spec
from memlane.embed import device as devices
from memlane.embed import local, place
from memlane.embed.cache import EmbeddingCache
from memlane.errors import InvalidArgumentError

ort = pytest.importorskip("onnxruntime")

Q8 = "local/all-MiniLM-L6-v2/q8/384"
FP32 = "local/all-MiniLM-L6-v2/fp32/384"


@pytest.fixture(autouse=True)
def fresh_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local, "_WARNED", set())


PROBE = devices.gpu_unusable


@pytest.fixture(autouse=True)
def fresh_probe() -> None:
    # The probe's answer is kept for the process: one a test provoked must not reach the next test.
    PROBE.cache_clear()
    yield
    PROBE.cache_clear()


@pytest.fixture
def gpu_usable(monkeypatch: pytest.MonkeyPatch) -> None:
    """The probe finds a usable GPU (the sessions built still run on this onnxruntime's CPU)."""
    monkeypatch.setattr(devices, "gpu_unusable", lambda: None)


def test_cuda_first_when_onnxruntime_offers_it(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(ort, "get_available_providers", lambda: ["CUDAExecutionProvider", "CPUExecutionProvider"])
    with caplog.at_level(logging.WARNING, logger="memlane.embed.local"):
        assert local.execution_providers("gpu") == ["CUDAExecutionProvider", "CPUExecutionProvider"]
        assert local.execution_providers("cpu") == ["CPUExecutionProvider"]
    assert caplog.records == []


def test_cpu_with_one_warning_line_when_onnxruntime_has_no_cuda(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
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
    monkeypatch.setattr(build, "_gpu_ids", list)
    EmbedWorker("local:fp32", threads=2)
    assert built == [("local:fp32", {"threads": 2, "device": "gpu"}), ("local:fp32", {"threads": 2})]


@pytest.mark.model
def test_a_gpu_embedder_asks_for_cuda_and_falls_back_to_the_cpu_with_one_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    cpu = local.LocalEmbedder(mode="fp32", threads=1)
    # onnxruntime offers CUDA (as onnxruntime-gpu does) but cannot start it, as on a node without
    # the CUDA libraries: onnxruntime-gpu then builds the session on the CPU provider alone.
    monkeypatch.setattr(ort, "get_available_providers", lambda: ["CUDAExecutionProvider", "CPUExecutionProvider"])
    asked, real = [], ort.InferenceSession

    def session(path, sess_options=None, providers=None):
        asked.append(("fp16" if "-fp16-" in Path(path).name else "fp32", providers))
        return real(path, sess_options=sess_options, providers=[p for p in providers if p != "CUDAExecutionProvider"])

    monkeypatch.setattr(ort, "InferenceSession", session)
    with caplog.at_level(logging.WARNING, logger="memlane.embed.local"):
        gpu = local.LocalEmbedder(mode="fp32", threads=1, device="gpu")
    # The fp16 graph a GPU runs; CUDA not started, the exact one on the CPU (loaded for `cpu` already).
    assert asked == [("fp16", ["CUDAExecutionProvider", "CPUExecutionProvider"])]
    assert gpu.providers == ["CPUExecutionProvider"] and gpu.id == cpu.id == FP32
    assert not gpu.half and gpu.onnx_path == cpu.onnx_path
    assert gpu.vector_parts == cpu.vector_parts == 1, "one graph unless a GPU embeds"
    [message] = [r.getMessage() for r in caplog.records if r.name == "memlane.embed.local"]
    assert message.startswith("memlane: a GPU was assigned but onnxruntime could not start CUDA (")
    assert (
        message.endswith("): embedding on the CPU")
        and "cuDNN 9" in message
        and "onnxruntime-gpu[cuda,cudnn]" in message
    )
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
    pool, described, limiter, reserved = _embedding(ray, "local", None, None, 1, None, index_id)
    assert {a[2][0] for a in ray.actors} == {spec} and described == (f"{spec}-id", 384, 256) and limiter is None
    assert reserved is None  # actors that hold no core need no placement group
    if gpus:
        assert len(pool) == gpus and all(a[1]["num_gpus"] == 1 for a in ray.actors)
    else:
        assert all("num_gpus" not in a[1] for a in ray.actors)


# -- the device of `memlane index|embed --device` and Memory(device=) (issue 41) ----------------

TRANSCRIPTS = SHARED_DATA / "transcripts" / "claude-code"


def transcripts() -> Path:
    if not TRANSCRIPTS.is_dir():
        pytest.skip(f"real transcripts not found at {TRANSCRIPTS} (they live in ../shared/data beside the repo)")
    return TRANSCRIPTS


def test_this_onnxruntime_offers_no_gpu_and_the_probe_says_what_to_install() -> None:
    if "CUDAExecutionProvider" in ort.get_available_providers():
        pytest.skip("this onnxruntime is onnxruntime-gpu")
    why = devices.gpu_unusable()
    assert why == "this onnxruntime has no CUDA provider (pip install onnxruntime-gpu in place of onnxruntime)"


def test_a_cpu_wheel_shadowing_the_gpu_one_is_named_with_the_way_out(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Both wheels write the package `onnxruntime`: the one installed last wins, and
    # `pip install 'memlane[gpu]'` can leave the CPU one's files in place.
    monkeypatch.setattr(ort, "get_available_providers", lambda: ["CPUExecutionProvider"])
    monkeypatch.setattr(ort, "__file__", str(tmp_path / "onnxruntime" / "__init__.py"))
    (tmp_path / "onnxruntime-1.32.0.dist-info").mkdir()
    assert (
        devices.gpu_unusable()
        == "this onnxruntime has no CUDA provider (pip install onnxruntime-gpu in place of onnxruntime)"
    )
    PROBE.cache_clear()
    (tmp_path / "onnxruntime_gpu-1.31.1.dist-info").mkdir()
    assert devices.gpu_unusable() == (
        "onnxruntime-gpu 1.31.1 is installed, but the CPU wheel onnxruntime beside it shadows its files "
        "(pip uninstall -y onnxruntime onnxruntime-gpu, then pip install 'onnxruntime-gpu[cuda,cudnn]')"
    )


def test_a_cuda_provider_without_a_driver_is_no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    # onnxruntime-gpu installs on machines without a GPU: the provider listed proves nothing.
    monkeypatch.setattr(ort, "get_available_providers", lambda: ["CUDAExecutionProvider", "CPUExecutionProvider"])
    started = []
    monkeypatch.setattr(devices, "_cuda_does_not_start", lambda ort: started.append(ort))
    monkeypatch.setattr(
        devices.ctypes, "CDLL", lambda name: (_ for _ in ()).throw(OSError(f"{name}: cannot open shared object file"))
    )
    assert devices.gpu_unusable() == "no NVIDIA driver on this machine (libcuda.so.1 does not load)"
    assert started == []  # no session is tried without a device


def test_a_driver_showing_no_device_names_cuda_visible_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    class Driver:
        def cuInit(self, flags: int) -> int:
            return 100  # CUDA_ERROR_NO_DEVICE, what CUDA_VISIBLE_DEVICES=-1 gives

    monkeypatch.setattr(devices.ctypes, "CDLL", lambda name: Driver())
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
    assert (
        devices._no_visible_device()
        == "the NVIDIA driver shows this process no CUDA device (CUDA_VISIBLE_DEVICES='-1')"
    )


def test_the_probe_model_is_a_model_onnxruntime_runs() -> None:
    session = ort.InferenceSession(devices._PROBE_MODEL, providers=["CPUExecutionProvider"])
    (y,) = session.run(None, {"x": np.array([1.5], dtype=np.float32)})
    assert y.tolist() == [3.0]


def test_cuda_that_does_not_start_names_the_libraries_of_the_installed_build(monkeypatch: pytest.MonkeyPatch) -> None:
    # onnxruntime-gpu without its CUDA libraries builds the session on the CPU provider alone.
    real = ort.InferenceSession
    monkeypatch.setattr(
        ort, "InferenceSession", lambda model, providers=None: real(model, providers=["CPUExecutionProvider"])
    )
    monkeypatch.setattr(ort, "cuda_version", "13.0", raising=False)
    why = devices._cuda_does_not_start(ort)
    assert why.startswith(
        "onnxruntime could not start CUDA: this onnxruntime-gpu is a CUDA 13 build: it needs the CUDA 13 runtime libraries and cuDNN 9"
    )
    assert "pip install 'onnxruntime-gpu[cuda,cudnn]'" in why


def test_device_gpu_where_none_can_be_used_fails_in_one_line_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    assert main(["--home", str(home), "index", "--device", "gpu", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("memlane index: device gpu: no GPU can be used here: ")
    assert devices.gpu_unusable() in err and not home.exists()
    assert main(["--home", str(home), "embed", "--device", "gpu", "--json"]) == 2
    error = json.loads(capsys.readouterr().out)
    assert error["kind"] == "InvalidArgumentError" and "no GPU can be used here" in error["error"]


def test_a_device_that_does_not_exist_or_does_not_apply_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(InvalidArgumentError, match=r"^device must be one of auto, cpu, gpu, got 'bogus'$"):
        memlane.Memory(tmp_path / "a", device="bogus")
    with pytest.raises(InvalidArgumentError, match="applies to the local model, not to embedder 'none'"):
        memlane.open(tmp_path / "b", embedder="none", device="cpu")
    with pytest.raises(InvalidArgumentError, match="not to embedder object FakeEmbedder"):
        memlane.open(tmp_path / "c", embedder=FakeEmbedder(), device="gpu")
    with pytest.raises(SystemExit, match="2"):
        main(["--home", str(tmp_path / "d"), "index", "--device", "tpu", str(tmp_path)])
    assert capsys.readouterr().err == (
        "memlane index: argument --device: invalid choice: 'tpu' (choose from 'auto', 'cpu', 'gpu') (see `memlane index --help`)\n"
    )
    assert (
        main(
            [
                "--home",
                str(tmp_path / "e"),
                "index",
                "--ray",
                "local",
                "--out",
                str(tmp_path / "out"),
                "--device",
                "gpu",
                str(tmp_path),
            ]
        )
        == 2
    )
    assert "leave --device at auto" in capsys.readouterr().err


def test_a_usable_gpu_embeds_a_new_home_in_fp32_and_leaves_a_q8_home_on_the_cpu_with_a_note(gpu_usable: None) -> None:
    new = place("local", None)
    reason = "auto: a CUDA device is usable, fp16 arithmetic into fp32 vectors"
    assert (new.spec, new.device, new.reason, new.note) == ("local:fp32", "gpu", reason, None)
    assert new.options() == {"device": "gpu"}
    assert place("local", FP32, "gpu").spec == "local:fp32" and place("local:fp32", None, "gpu").device == "gpu"
    for spec, home in (("local", Q8), ("local:q8", None)):
        kept = place(spec, home, "gpu")
        assert (kept.spec, kept.device, kept.options()) == (spec, "cpu", {})
        assert "which it does not run" in kept.note and "index into a new home" in kept.note and "\n" not in kept.note
    assert place("local", None, "cpu") == memlane.embed.Placement("local", "cpu", "device cpu asked for")
    with pytest.raises(InvalidArgumentError, match="applies to the local model"):
        place("bedrock", None, "gpu")


@pytest.fixture
def cuda_session(monkeypatch: pytest.MonkeyPatch) -> None:
    """onnxruntime offers CUDA and its sessions asked for it say they run on it (they run on
    this CPU; tests/fake_cuda.py)."""
    fake_cuda.pretend_cuda(monkeypatch.setattr)
    monkeypatch.setattr(local, "_RUNTIMES", {})


@pytest.mark.model
def test_a_gpu_runs_the_fp32_graph_in_fp16_into_the_fp32_vectors(
    cuda_session: None, gpu_usable: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMLANE_GPU_PRECISION", raising=False)
    exact = local.LocalEmbedder(mode="fp32", threads=1, device="cpu")
    half = local.LocalEmbedder(mode="fp32", threads=1, device="gpu")
    assert (half.device, half.half, half.id) == ("gpu", True, FP32)
    assert "-fp16-" in half.onnx_path.name and "-fp32-" in exact.onnx_path.name
    # Here onnxruntime's CPU runs the fp16 graph (in fp32 between its fp16-rounded weights): a
    # sanity check of the graph, not of a GPU's rounding (tests/test_gpu_real.py bounds that).
    texts = ["the deploy failed because the staging token expired", "def main():\n    return run(sys.argv)"]
    for a, b in zip(half.embed_documents(texts), exact.embed_documents(texts)):
        assert a.shape == b.shape and float(np.min(np.sum(a * b, axis=1))) > 0.9999
    monkeypatch.setenv("MEMLANE_GPU_PRECISION", "fp32")
    asked_exact = local.LocalEmbedder(mode="fp32", threads=1, device="gpu")
    assert (asked_exact.half, asked_exact.onnx_path) == (False, exact.onnx_path)
    assert "fp16" not in place("local", None, "gpu").reason
    # q8 is a CPU graph and stays what it is; the setting applies to a GPU only.
    assert not local.LocalEmbedder(threads=1, device="gpu").half
    monkeypatch.setenv("MEMLANE_GPU_PRECISION", "bf16")
    assert not local.LocalEmbedder(mode="fp32", threads=1, device="cpu").half
    with pytest.raises(
        InvalidArgumentError, match="MEMLANE_GPU_PRECISION='bf16' is not a GPU precision; accepted: fp16, fp32"
    ):
        local.LocalEmbedder(mode="fp32", threads=1, device="gpu")


def _vectors(home: Path, cache_dir: Path, embedder_id: str) -> tuple[list[int], dict[str, np.ndarray]]:
    """A home's chunk keys and, by content hash, the window vectors it was given (from its cache)."""
    store = _core.Store(str(home))
    keys = [int(k) for k in store.keys()]
    hashes = [c["content_hash"] for c in store.get(keys)]
    cache = EmbeddingCache(cache_dir / "embeddings.sqlite")
    try:
        return keys, cache.get_many(embedder_id, hashes)
    finally:
        cache.close()


def _index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], name: str, *flags: str
) -> tuple[dict, str]:
    """``memlane index --json`` of the real transcripts into a home and embedding cache of its own."""
    monkeypatch.setenv("MEMLANE_CACHE_DIR", str(tmp_path / name / "cache"))
    assert main(["--home", str(tmp_path / name / "home"), "index", "--json", *flags, str(transcripts())]) == 0
    out, err = capsys.readouterr()
    return json.loads(out), err


@pytest.mark.model
def test_auto_without_a_gpu_indexes_exactly_as_the_cpu_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    if "CUDAExecutionProvider" in ort.get_available_providers():
        pytest.skip("this onnxruntime is onnxruntime-gpu")
    reports = {name: _index(tmp_path, monkeypatch, capsys, name, *flags)[0]
               for name, flags in (("plain", ()), ("auto", ("--device", "auto")), ("cpu", ("--device", "cpu")))}  # fmt: skip
    assert {r["device"] for r in reports.values()} == {"cpu"}
    assert (
        reports["auto"]["device_reason"]
        == reports["plain"]["device_reason"]
        == f"auto: no usable GPU: {devices.gpu_unusable()}"
    )
    assert reports["cpu"]["device_reason"] == "device cpu asked for"
    built = {name: _vectors(tmp_path / name / "home", tmp_path / name / "cache", Q8) for name in reports}
    keys, vectors = built["cpu"]
    assert (
        keys
        and len(vectors) == len(set(vectors)) > 0
        and memlane.open(tmp_path / "auto" / "home").vectors_embedder_id == Q8
    )
    for name in ("plain", "auto"):
        assert built[name][0] == keys
        assert built[name][1].keys() == vectors.keys()
        assert all(np.array_equal(built[name][1][h], vectors[h]) for h in vectors)
    monkeypatch.setenv("MEMLANE_CACHE_DIR", str(tmp_path / "auto" / "cache"))
    assert main(["--home", str(tmp_path / "auto" / "home"), "status"]) == 0
    assert "device      the last index embedded on the CPU" in capsys.readouterr().out


@pytest.mark.model
def test_a_usable_gpu_gives_a_new_home_fp32_vectors_and_a_q8_home_a_note(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    q8, _ = _index(tmp_path, monkeypatch, capsys, "q8", "--device", "cpu")
    monkeypatch.setattr(devices, "gpu_unusable", lambda: None)
    # This onnxruntime has no CUDA: the session falls back to the CPU (one warning line); the
    # graph chosen for the GPU is what is under test.
    with caplog.at_level(logging.WARNING, logger="memlane.embed.local"):
        fp32, err = _index(tmp_path, monkeypatch, capsys, "fp32")
    reason = "auto: a CUDA device is usable, fp16 arithmetic into fp32 vectors"
    assert (fp32["device"], fp32["device_reason"]) == ("gpu", reason) and err == ""
    assert memlane.open(tmp_path / "fp32" / "home").vectors_embedder_id == FP32
    keys, vectors = _vectors(tmp_path / "fp32" / "home", tmp_path / "fp32" / "cache", FP32)
    assert keys == _vectors(tmp_path / "q8" / "home", tmp_path / "q8" / "cache", Q8)[0] and len(vectors) > 0

    assert main(["--home", str(tmp_path / "q8" / "home"), "embed", "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["device"] == "cpu" and q8["chunks_embedded"] > 0
    assert err.startswith("note: a GPU is usable but this home holds q8 vectors") and err.count("\n") == 1
    assert memlane.open(tmp_path / "q8" / "home").vectors_embedder_id == Q8
