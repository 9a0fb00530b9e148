"""Shared pytest configuration."""

import pytest


def pytest_configure(config: pytest.Config) -> None:
    # Tests that load real model weights are slower; deselect them with -m "not model".
    config.addinivalue_line("markers", "model: loads real embedding model weights (seconds, not milliseconds)")
    config.addinivalue_line(
        "markers", "bedrock: calls real Amazon Bedrock; runs only with -m bedrock and AWS credentials"
    )


import hashlib  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


class FakeEmbedder:
    """Deterministic bag-of-words hashing embedder: fast, and texts sharing words are close."""

    dim = 64
    max_window_tokens = 64
    id = "fake/hash-bow/64"

    def __init__(self) -> None:
        self.calls = 0
        self.texts_embedded = 0

    def _vector(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for word in re.findall(r"[a-z0-9]+", text.lower()):
            h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "little")
            v[h % self.dim] += 1.0 if (h >> 16) & 1 else -1.0
        n = np.linalg.norm(v)
        return v / n if n else np.eye(1, self.dim, dtype=np.float32)[0]

    def embed_documents(self, texts):
        self.calls += 1
        self.texts_embedded += len(texts)
        out = []
        for t in texts:
            words = t.split()
            windows = [
                " ".join(words[i : i + self.max_window_tokens])
                for i in range(0, max(len(words), 1), self.max_window_tokens)
            ]
            out.append(np.ascontiguousarray(np.stack([self._vector(w) for w in windows])))
        return out

    def embed_query(self, text):
        return self._vector(text)


@pytest.fixture
def fake_embedder() -> FakeEmbedder:
    return FakeEmbedder()


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    # Never touch the user's shared embedding cache or home from tests.
    monkeypatch.setenv("MEMLANE_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    monkeypatch.setenv("MEMLANE_HOME", str(tmp_path_factory.mktemp("home")))


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"evaluation data not found at {SHARED_DATA} (it lives in ../shared/data beside the repo)")
    return SHARED_DATA


def run_python(code: str, **env: str) -> str:
    """Run ``code`` in a fresh interpreter that imports memlane from where this process does;
    its stdout, stripped."""
    import memlane

    search_path = [str(Path(memlane.__file__).parents[1]), *(p for p in sys.path if p)]
    full_env = {**os.environ, "PYTHONPATH": os.pathsep.join(search_path), **env}
    result = subprocess.run([sys.executable, "-c", code], env=full_env, capture_output=True, text=True, check=True)
    return result.stdout.strip()


def write_jsonl(path: Path, records: list[dict]) -> Path:
    import json

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def generic_session(session_id: str, pairs: list[tuple[str, str]], start: str = "2026-03-01T10:00:00Z") -> list[dict]:
    from datetime import datetime, timedelta

    t0 = datetime.fromisoformat(start.replace("Z", "+00:00"))
    out = []
    for i, (q, a) in enumerate(pairs):
        ts = (t0 + timedelta(minutes=2 * i)).isoformat().replace("+00:00", "Z")
        out.append(
            {"id": f"{session_id}-u{i}", "role": "user", "content": q, "timestamp": ts, "session_id": session_id}
        )
        out.append(
            {"id": f"{session_id}-a{i}", "role": "assistant", "content": a, "timestamp": ts, "session_id": session_id}
        )
    return out


# A small two-session corpus: exact identifiers and a database fact (deploy), and an unrelated
# topic (cooking) that must not come back for them. Every exchange is over 100 estimated tokens,
# so no two are packed into one chunk (see PACK_TOKENS in rust/memlane-core/src/chunk/session.rs): one chunk an exchange.
DEPLOY = [
    (
        "why did the deploy fail?",
        "The container was OOM-killed: exit code 137 in src/app/main.py under load. The worker pool had"
        " grown to sixteen processes after the last release and each one loaded the full model, so the"
        " node ran out of memory during the nightly import. We lowered the pool to eight workers, added"
        " a memory alert and reran the import without trouble. The next release also caps the model cache"
        " per worker.",
    ),
    (
        "what about the ERR_CONN_RESET errors?",
        "They come from the proxy idle timeout; set keepalive_timeout to 75s. The upstream kept idle"
        " sockets open for ninety seconds while the proxy closed them after sixty, so every request that"
        " reused a socket in that window was reset. With the longer timeout on the proxy side the"
        " resets stopped within an hour of the change. The health check now also reports open sockets"
        " per upstream.",
    ),
    (
        "which database does billing use?",
        "Billing runs on Postgres 16 since March. The move from the old cluster took two weekends: the"
        " first copied the invoices and ledgers with logical replication, the second switched writes"
        " over during a short maintenance window. Reports now read from a replica so month-end jobs no"
        " longer slow down checkout. Nightly backups go to object storage and a restore is tested every"
        " quarter.",
    ),
]
COOKING = [
    (
        "how long should pasta boil?",
        "About nine minutes for spaghetti, taste it before draining. Use plenty of water, salt it well"
        " once it is at a rolling boil, and stir during the first minute so the strands do not stick"
        " together. Keep a cup of the starchy cooking water aside: a splash of it loosens the sauce and"
        " helps it cling to every strand. Thick shapes like rigatoni need two or three minutes"
        " longer.",
    ),
    (
        "and the sauce?",
        "Simmer tomatoes with garlic and basil for twenty minutes. Start with olive oil over low heat,"
        " let the sliced garlic turn golden but never brown, then add crushed tomatoes and a pinch of"
        " sugar if they taste sharp. Tear the basil in at the end so it stays bright, and finish with"
        " a knob of butter. A spoonful of the tomato paste at the start deepens the colour and the"
        " flavour of the whole pot.",
    ),
]


def write_deploy_and_cooking(root: Path) -> Path:
    write_jsonl(root / "deploy.jsonl", generic_session("deploy-1", DEPLOY))
    write_jsonl(root / "cooking.jsonl", generic_session("cook-1", COOKING, start="2026-01-10T08:00:00Z"))
    return root


def keyword_home_with_markup(factory: pytest.TempPathFactory, evil: list[tuple[str, str]]) -> Path:
    """A keyword-only home of the deploy and cooking sessions and one whose turns ``evil`` plant
    markup (session ``evil-1``): what the viewer's tests render."""
    import memlane

    root = write_deploy_and_cooking(factory.mktemp("transcripts"))
    write_jsonl(root / "evil.jsonl", generic_session("evil-1", evil, start="2026-02-01T09:00:00Z"))
    home = factory.mktemp("home")
    memlane.open(home, embedder="none").index([root], embed=False)
    return home


os.environ.setdefault("HF_HUB_OFFLINE", "1")


def free_port() -> int:
    """A free port on 127.0.0.1 that no Ray process will take before the test binds it. The
    kernel's own pick comes from the ephemeral range (32768 and up), where Ray's many servers also
    bind port 0, so one of them can take it first (a CI run lost Serve's proxy that way). Below
    that range and above Ray's worker ports (10002-19999), only a port asked for by number is taken."""
    picks = random.Random()
    for _ in range(200):
        port = picks.randrange(20000, 32768)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port in 20000-32767")


AWS_TEST_REGION = "us-east-1"


@pytest.fixture
def fake_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Dummy credentials and region, and none of the user's AWS config, so nothing real is used."""
    for name in list(os.environ):
        if name.startswith("AWS_") and name != "AWS_CA_BUNDLE":
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", AWS_TEST_REGION)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


_BENCH_FIXTURES = Path(__file__).parent / "fixtures" / "bench"


def bench_fixture_dir() -> Path:
    """The synthetic benchmark fixtures laid out under the datasets' own file names.

    The files are stored under neutral names so nothing in the repository looks like a copy of
    the licensed datasets; this builds the `beam/<n>/chat.json` and `realtalk/Chat_<n>_*.json`
    layout the loaders expect, once per test session.
    """
    import atexit
    import tempfile

    global _BENCH_LAYOUT
    if _BENCH_LAYOUT is None:
        root = Path(tempfile.mkdtemp(prefix="memlane-bench-fixtures-"))
        atexit.register(shutil.rmtree, root, True)
        (root / "beam" / "1").mkdir(parents=True)
        (root / "realtalk").mkdir()
        for name in ("locomo_mini.json", "longmemeval_mini.json"):
            shutil.copy(_BENCH_FIXTURES / name, root / name)
        shutil.copy(_BENCH_FIXTURES / "beam_chat.json", root / "beam" / "1" / "chat.json")
        shutil.copy(_BENCH_FIXTURES / "beam_probing_questions.json", root / "beam" / "1" / "probing_questions.json")
        shutil.copy(_BENCH_FIXTURES / "realtalk_ann_bob.json", root / "realtalk" / "Chat_1_Ann_Bob.json")
        _BENCH_LAYOUT = root
    return _BENCH_LAYOUT


_BENCH_LAYOUT: Path | None = None
