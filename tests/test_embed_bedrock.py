"""Bedrock Titan V2 embedder: request bodies, parsing, errors and retries through botocore's Stubber.

Nothing here touches the network except ``test_real_bedrock``, which runs only with
``-m bedrock`` and AWS credentials that resolve.
"""

from __future__ import annotations

import io
import json
import random
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

boto3 = pytest.importorskip("boto3")

from botocore.config import Config  # noqa: E402
from botocore.exceptions import (  # noqa: E402
    ConnectionClosedError,
    EndpointConnectionError,
    ReadTimeoutError,
)
from botocore.response import StreamingBody  # noqa: E402
from botocore.stub import Stubber  # noqa: E402
from conftest import AWS_TEST_REGION  # noqa: E402

from memlane.embed import Embedder, make_embedder  # noqa: E402
from memlane.embed.bedrock import (  # noqa: E402
    MAX_INPUT_CHARS,
    MAX_INPUT_TOKENS,
    MODEL_ID,
    PRICE_PER_1K_TOKENS_USD,
    BedrockEmbedder,
    BedrockError,
    BedrockUsage,
    RetryPolicy,
    cap_text,
    estimate_tokens,
)
from memlane.errors import MemlaneError  # noqa: E402

REGION = AWS_TEST_REGION


# -- helpers ------------------------------------------------------------------------------


_SESSION: list[Any] = []


def runtime_client(**config: Any) -> Any:
    """A bedrock-runtime client (botocore retries off unless ``retries`` says otherwise) on dummy credentials."""
    config.setdefault("retries", {"mode": "standard", "total_max_attempts": 1})
    if not _SESSION:
        # One session for the module: loading the service model dominates client creation.
        _SESSION.append(boto3.Session(aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION))
    return _SESSION[0].client("bedrock-runtime", config=Config(**config))


def no_sleep() -> RetryPolicy:
    return RetryPolicy(sleep=lambda _: None)


def titan_response(vector: list[float] | np.ndarray, tokens: int = 7) -> dict[str, Any]:
    """An InvokeModel response as Titan V2 sends it."""
    values = [float(x) for x in vector]
    raw = json.dumps(
        {"embedding": values, "inputTextTokenCount": tokens, "embeddingsByType": {"float": values}}
    ).encode()
    return {"body": StreamingBody(io.BytesIO(raw), len(raw)), "contentType": "application/json"}


def invoke_params(text: str, dimensions: int = 1024, normalize: bool = True) -> dict[str, Any]:
    body = json.dumps({"inputText": text, "dimensions": dimensions, "normalize": normalize})
    return {"modelId": MODEL_ID, "body": body, "contentType": "application/json", "accept": "application/json"}


def vector_for(text: str, dim: int) -> np.ndarray:
    """A deterministic unit vector per text, so a test can tell which response went where."""
    rng = np.random.default_rng(abs(hash(text)) % 2**32)
    v = rng.standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)


@pytest.fixture
def stubbed(fake_aws: None):
    """``make(**embedder_kw) -> (embedder, stubber)`` on a Stubber-backed client; checks every stub was used."""
    made: list[tuple[BedrockEmbedder, Stubber]] = []

    def make(**kw: Any) -> tuple[BedrockEmbedder, Stubber]:
        kw.setdefault("retry", no_sleep())
        emb = BedrockEmbedder(client=runtime_client(), **kw)
        stubber = Stubber(emb.client)
        stubber.activate()
        made.append((emb, stubber))
        return emb, stubber

    yield make
    for emb, stubber in made:
        stubber.assert_no_pending_responses()
        stubber.deactivate()
        emb.close()


def raise_before_call(client: Any, errors: list[Exception]) -> list[int]:
    """Make the next ``len(errors)`` calls raise those errors before the Stubber answers; returns a call log."""
    calls: list[int] = []

    def handler(**_: Any) -> None:
        calls.append(1)
        if errors:
            raise errors.pop(0)

    # '*.*' handlers run before exact-name ones, and the Stubber's is one: go first among them.
    client.meta.events.register_first("before-call.*.*", handler)
    return calls


# -- construction, factory, lazy import ---------------------------------------------------


def test_import_memlane_does_not_import_boto3() -> None:
    code = (
        "import sys, memlane, memlane.embed; print(any(m.split('.')[0] in ('boto3', 'botocore') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize(
    ("spec", "dim"), [("bedrock", 1024), ("bedrock:1024", 1024), ("bedrock:512", 512), ("bedrock:256", 256)]
)
def test_factory_specs(fake_aws: None, spec: str, dim: int) -> None:
    emb = make_embedder(spec, concurrency=32)
    assert isinstance(emb, Embedder)
    assert (emb.id, emb.dim, emb.max_window_tokens) == (f"bedrock/{MODEL_ID}/{dim}", dim, MAX_INPUT_TOKENS)
    config = emb.client.meta.config
    # One retry layer: botocore's is off, ours does the work.
    assert config.retries["total_max_attempts"] == 1
    assert config.max_pool_connections == 32
    assert emb.client.meta.region_name == REGION


def test_bad_dimensions_and_concurrency(fake_aws: None) -> None:
    with pytest.raises(ValueError, match="dimensions"):
        BedrockEmbedder(dimensions=768)
    with pytest.raises(ValueError, match="concurrency"):
        BedrockEmbedder(concurrency=0)
    with pytest.raises(ValueError, match="unknown embedder spec"):
        make_embedder("bedrock:768")


def test_client_that_retries_itself_is_refused(fake_aws: None) -> None:
    with pytest.raises(ValueError, match="retries by itself"):
        BedrockEmbedder(client=runtime_client(retries={"mode": "adaptive", "total_max_attempts": 4}))
    with pytest.raises(ValueError, match="retries by itself"):
        BedrockEmbedder(client=runtime_client(retries=None))


def test_region_and_profile_errors(fake_aws: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    with pytest.raises(BedrockError, match="no AWS region configured") as info:
        BedrockEmbedder()
    assert info.value.reason == "no-region"
    assert isinstance(info.value, MemlaneError)
    with pytest.raises(BedrockError, match="profile not found") as info:
        BedrockEmbedder(region=REGION, profile="nope")
    assert info.value.reason == "no-credentials"
    assert BedrockEmbedder(region="eu-central-1").region == "eu-central-1"


# -- request body and response parsing -----------------------------------------------------


def test_exact_request_body_and_parsing(stubbed) -> None:
    emb, stubber = stubbed()
    vector = np.linspace(-1, 1, 1024, dtype=np.float32)
    vector /= np.linalg.norm(vector)
    stubber.add_response(
        "invoke_model",
        titan_response(vector, tokens=3),
        {
            "modelId": "amazon.titan-embed-text-v2:0",
            "body": '{"inputText": "hello world", "dimensions": 1024, "normalize": true}',
            "contentType": "application/json",
            "accept": "application/json",
        },
    )
    (out,) = emb.embed_documents(["hello world"])
    assert out.shape == (1, 1024) and out.dtype == np.float32 and out.flags.c_contiguous
    np.testing.assert_allclose(out[0], vector, rtol=1e-6)
    assert emb.usage == BedrockUsage(input_tokens=3, requests=1, retries=0, capped_texts=0)


@pytest.mark.parametrize("dimensions", [512, 256])
def test_normalize_false_still_returns_unit_rows(stubbed, dimensions: int) -> None:
    emb, stubber = stubbed(dimensions=dimensions, normalize=False)
    raw = np.arange(1, dimensions + 1, dtype=np.float32)
    stubber.add_response("invoke_model", titan_response(raw), invoke_params("note", dimensions, normalize=False))
    assert '"normalize": false' in invoke_params("note", dimensions, normalize=False)["body"]
    (out,) = emb.embed_documents(["note"])
    assert out.shape == (1, dimensions)
    assert np.isclose(np.linalg.norm(out[0]), 1.0, atol=1e-6)
    np.testing.assert_allclose(out[0], raw / np.linalg.norm(raw), rtol=1e-6)
    assert emb.id == f"bedrock/{MODEL_ID}/{dimensions}"


def test_embed_query_and_blank_texts(stubbed) -> None:
    emb, stubber = stubbed(dimensions=256, concurrency=4)
    stubber.add_response("invoke_model", titan_response(vector_for("q", 256), tokens=2), invoke_params("q", 256))
    query = emb.embed_query("q")
    assert query.shape == (256,) and query.dtype == np.float32
    # Titan refuses empty input: blank texts cost no request and get a fixed unit vector.
    blank, spaces = emb.embed_documents(["", "  \n "])
    assert blank.shape == (1, 256) and np.array_equal(blank, spaces) and blank[0, 0] == 1.0
    assert emb.usage.requests == 1 and emb.usage.input_tokens == 2


def test_single_string_is_refused(stubbed) -> None:
    emb, _ = stubbed()
    with pytest.raises(TypeError):
        emb.embed_documents("not a list")


@pytest.mark.parametrize(
    "payload",
    [
        {"inputTextTokenCount": 1},
        {"embedding": [0.0, 1.0], "inputTextTokenCount": 1},
        {"embedding": [0.0] * 256, "inputTextTokenCount": 1},
        None,
    ],
    ids=["no-embedding", "wrong-dim", "zero-vector", "not-json"],
)
def test_malformed_response(stubbed, payload: dict[str, Any] | None) -> None:
    emb, stubber = stubbed(dimensions=256)
    raw = json.dumps(payload).encode() if payload is not None else b"<html>gateway error</html>"
    stubber.add_response(
        "invoke_model", {"body": StreamingBody(io.BytesIO(raw), len(raw)), "contentType": "application/json"}
    )
    with pytest.raises(BedrockError) as info:
        emb.embed_documents(["x"])
    assert info.value.reason == "invalid-response"


# -- input caps ----------------------------------------------------------------------------


def test_cap_text_limits() -> None:
    assert cap_text("fits") == "fits"
    long_prose = "word " * 20_000  # 100k characters, ~20k estimated tokens
    capped = cap_text(long_prose)
    assert long_prose.startswith(capped)
    assert len(capped) <= MAX_INPUT_CHARS and estimate_tokens(capped) <= MAX_INPUT_TOKENS
    assert estimate_tokens(long_prose[: len(capped) + 5]) > MAX_INPUT_TOKENS  # longest prefix that fits
    digits = "1234567890" * 2000  # 20k characters, each digit a token
    assert len(cap_text(digits)) == MAX_INPUT_TOKENS
    spaces = " " * 60_000  # a character limit independent of the token estimate
    assert len(cap_text(spaces, max_tokens=10**9)) == MAX_INPUT_CHARS
    emoji = "\U0001f600" * 30_000  # counted as 2 UTF-16 units and 4 estimated tokens each
    assert len(cap_text(emoji, max_tokens=10**9)) == MAX_INPUT_CHARS // 2
    assert len(cap_text(emoji)) == MAX_INPUT_TOKENS // 4


def test_estimate_is_monotone_in_prefix_length() -> None:
    rng = random.Random(0)
    alphabet = "ab Z9.\n\t\u00e9\u4e2d\U0001f600 "
    text = "".join(rng.choice(alphabet) for _ in range(3000))
    counts = [estimate_tokens(text[:n]) for n in range(0, len(text), 7)]
    assert counts == sorted(counts)
    assert all(estimate_tokens(text[:n]) <= 4 * n for n in range(0, 3000, 97))


def test_oversized_input_is_capped_before_sending(stubbed) -> None:
    emb, stubber = stubbed(dimensions=256)
    text = "memory " * 10_000
    stubber.add_response(
        "invoke_model", titan_response(vector_for("t", 256), tokens=8192), invoke_params(cap_text(text), 256)
    )
    emb.embed_documents([text])
    sent = cap_text(text)
    assert len(sent) < len(text) and estimate_tokens(sent) <= MAX_INPUT_TOKENS
    assert emb.usage.capped_texts == 1


# -- errors and retries ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("ThrottlingException", 429),
        ("ModelNotReadyException", 429),
        ("ModelTimeoutException", 408),
        ("InternalServerException", 500),
        ("ServiceUnavailableException", 503),
        ("BadGateway", 502),
    ],
)
def test_transient_errors_are_retried(stubbed, code: str, status: int) -> None:
    emb, stubber = stubbed(dimensions=256)
    stubber.add_client_error("invoke_model", code, "try again", status, expected_params=invoke_params("x", 256))
    stubber.add_response("invoke_model", titan_response(vector_for("x", 256)), invoke_params("x", 256))
    emb.embed_documents(["x"])
    assert (emb.usage.requests, emb.usage.retries) == (2, 1)


def test_retry_schedule_and_give_up_after_four_attempts(fake_aws: None) -> None:
    delays: list[float] = []
    emb = BedrockEmbedder(
        client=runtime_client(), dimensions=256, retry=RetryPolicy(sleep=delays.append, jitter=lambda: 1.0)
    )
    with Stubber(emb.client) as stubber:
        for _ in range(3):
            stubber.add_client_error("invoke_model", "ThrottlingException", "Too many requests, please wait", 429)
        stubber.add_response("invoke_model", titan_response(vector_for("x", 256), tokens=5))
        emb.embed_documents(["x"])
        assert delays == [1.0, 2.0, 4.0]  # exponential, capped by jitter=1.0 at the ceiling
        assert (emb.usage.requests, emb.usage.retries, emb.usage.input_tokens) == (4, 3, 5)

        for _ in range(4):
            stubber.add_client_error("invoke_model", "ThrottlingException", "Too many requests, please wait", 429)
        with pytest.raises(BedrockError, match="still throttled .* after 4 attempt") as info:
            emb.embed_documents(["x"])
        assert info.value.reason == "throttled"
        assert (emb.usage.requests, emb.usage.retries) == (8, 6)
        stubber.assert_no_pending_responses()


def test_jitter_and_cap() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=5.0, jitter=lambda: 0.5)
    assert [policy.delay(n) for n in (1, 2, 3, 4, 5)] == [0.5, 1.0, 2.0, 2.5, 2.5]
    with pytest.raises(ValueError):
        RetryPolicy(max_attempts=0)


@pytest.mark.parametrize(
    ("code", "status", "message", "reason", "says"),
    [
        ("AccessDeniedException", 403, "You don't have access to the model.", "no-model-access", "Model access"),
        ("ValidationException", 400, "The provided model identifier is invalid.", "wrong-region", "not available"),
        ("ResourceNotFoundException", 404, "Could not resolve the foundation model", "wrong-region", "region"),
        (
            "UnrecognizedClientException",
            403,
            "The security token is invalid.",
            "bad-credentials",
            "rejected the credentials",
        ),
        (
            "ExpiredTokenException",
            403,
            "The security token included in the request is expired",
            "bad-credentials",
            "expired",
        ),
        (
            "ValidationException",
            400,
            "Malformed input request: expected maxLength: 50000",
            "invalid-request",
            "rejected the request",
        ),
        ("ServiceQuotaExceededException", 400, "Your request exceeds the service quota", "quota", "quota"),
        ("ModelErrorException", 424, "The model failed", "model-error", "failed on the input"),
    ],
)
def test_permanent_errors_are_not_retried(
    stubbed, code: str, status: int, message: str, reason: str, says: str
) -> None:
    emb, stubber = stubbed(dimensions=256)
    stubber.add_client_error("invoke_model", code, message, status, expected_params=invoke_params("x", 256))
    with pytest.raises(BedrockError, match=says) as info:
        emb.embed_documents(["x"])
    assert info.value.reason == reason
    assert REGION in str(info.value) and "\n" not in str(info.value)
    assert (emb.usage.requests, emb.usage.retries) == (1, 0)


@pytest.mark.parametrize(
    "error",
    [
        EndpointConnectionError(endpoint_url="https://bedrock-runtime.us-east-1.amazonaws.com"),
        ReadTimeoutError(endpoint_url="https://bedrock-runtime.us-east-1.amazonaws.com"),
        ConnectionClosedError(endpoint_url="https://bedrock-runtime.us-east-1.amazonaws.com"),
    ],
    ids=["endpoint", "read-timeout", "closed"],
)
def test_connection_errors_are_retried(stubbed, error: Exception) -> None:
    emb, stubber = stubbed(dimensions=256)
    calls = raise_before_call(emb.client, [error, error])
    stubber.add_response("invoke_model", titan_response(vector_for("x", 256)), invoke_params("x", 256))
    emb.embed_documents(["x"])
    assert len(calls) == 3 and (emb.usage.requests, emb.usage.retries) == (3, 2)


def test_unreachable_region_names_the_region(fake_aws: None) -> None:
    emb = BedrockEmbedder(client=runtime_client(), dimensions=256, retry=no_sleep())
    calls: list[int] = []

    def unreachable(**_: Any) -> None:
        # Raised on every call, so no request can ever reach the network.
        calls.append(1)
        raise EndpointConnectionError(endpoint_url="https://bedrock-runtime.us-east-1.amazonaws.com")

    emb.client.meta.events.register_first("before-call.*.*", unreachable)
    with pytest.raises(BedrockError, match="could not reach Bedrock in region us-east-1 after 4 attempt") as info:
        emb.embed_documents(["x"])
    assert info.value.reason == "connection" and len(calls) == 4


def test_no_credentials_is_one_clear_error(fake_aws: None, monkeypatch: pytest.MonkeyPatch) -> None:
    # The real credential chain, emptied: botocore fails while signing, before any network access.
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    emb = BedrockEmbedder(region=REGION, dimensions=256, retry=no_sleep())
    with pytest.raises(BedrockError, match="no usable AWS credentials") as info:
        emb.embed_documents(["x"])
    assert info.value.reason == "no-credentials"
    assert (emb.usage.requests, emb.usage.retries) == (1, 0)


# -- concurrency -------------------------------------------------------------------------------


class KeyedStubber(Stubber):
    """A Stubber that answers each call with the queued stub whose expected params match it.

    botocore's Stubber hands out stubs in arrival order, which concurrent callers make
    arbitrary; matching by params lets a test queue one stub per text and still check
    every request's exact parameters. ``on_call`` runs where the HTTP exchange would.
    """

    def __init__(self, client: Any, on_call: Any = None) -> None:
        super().__init__(client)
        self._match_lock = threading.Lock()
        self._on_call = on_call

    def _assert_expected_params(
        self, model: Any, params: dict[str, Any], context: dict[str, Any], **kwargs: Any
    ) -> None:
        with self._match_lock:
            for n, stub in enumerate(self._queue):
                if stub["operation_name"] == model.name and stub["expected_params"] == params:
                    del self._queue[n]
                    context["keyed_stub"] = stub
                    return
        raise AssertionError(f"no stub left for {params}")

    def _get_response_handler(self, model: Any, params: Any, context: dict[str, Any], **kwargs: Any) -> Any:
        if self._on_call is not None:
            self._on_call(json.loads(context["keyed_stub"]["expected_params"]["body"])["inputText"])
        return context.pop("keyed_stub")["response"]


@pytest.mark.parametrize("concurrency", [2, 8])
def test_bounded_concurrency_keeps_order(fake_aws: None, concurrency: int) -> None:
    texts = [f"chunk number {i}" for i in range(4 * concurrency)]
    lock = threading.Lock()
    in_flight, peak = [0], [0]
    # Every wave must gather `concurrency` requests at once: proves the pool really fills up
    # (a smaller pool times the barrier out instead of hanging).
    barrier = threading.Barrier(concurrency, timeout=10)
    delays = {t: random.Random(t).uniform(0, 0.01) for t in texts}

    def on_call(text: str) -> None:
        with lock:
            in_flight[0] += 1
            peak[0] = max(peak[0], in_flight[0])
        barrier.wait()
        time.sleep(delays[text])  # finish out of order
        with lock:
            in_flight[0] -= 1

    emb = BedrockEmbedder(client=runtime_client(), dimensions=256, concurrency=concurrency, retry=no_sleep())
    stubber = KeyedStubber(emb.client, on_call)
    for i, t in enumerate(texts):
        stubber.add_response("invoke_model", titan_response(vector_for(t, 256), tokens=i), invoke_params(t, 256))
    with stubber:
        out = emb.embed_documents(texts)
    emb.close()
    stubber.assert_no_pending_responses()
    assert peak[0] == concurrency
    for t, v in zip(texts, out):
        np.testing.assert_allclose(v[0], vector_for(t, 256), rtol=1e-6)
    assert emb.usage.input_tokens == sum(range(len(texts)))
    assert emb.usage.requests == len(texts)


def test_first_permanent_failure_stops_the_batch(fake_aws: None) -> None:
    texts = [f"t{i}" for i in range(64)]
    emb = BedrockEmbedder(client=runtime_client(), dimensions=256, concurrency=4, retry=no_sleep())
    stubber = KeyedStubber(emb.client, lambda _: time.sleep(0.001))
    for t in texts:
        if t == "t1":
            stubber.add_client_error(
                "invoke_model", "AccessDeniedException", "no access", 403, expected_params=invoke_params(t, 256)
            )
        else:
            stubber.add_response("invoke_model", titan_response(vector_for(t, 256)), invoke_params(t, 256))
    with stubber, pytest.raises(BedrockError) as info:
        emb.embed_documents(texts)
    emb.close()
    assert info.value.reason == "no-model-access"
    # Requests not yet started were cancelled rather than sent.
    assert emb.usage.requests < len(texts)


def test_failure_cuts_other_backoffs_short(fake_aws: None) -> None:
    # "t0" is throttled and would back off for 1000 s; "t1" then fails for good. The batch must
    # end with t1's error instead of waiting out t0's backoff (the default sleep is interruptible).
    emb = BedrockEmbedder(
        client=runtime_client(),
        dimensions=256,
        concurrency=2,
        retry=RetryPolicy(base_delay=1000, max_delay=1000, jitter=lambda: 1.0),
    )
    stubber = KeyedStubber(emb.client, lambda text: time.sleep(0.05 if text == "t1" else 0))
    stubber.add_client_error(
        "invoke_model", "ThrottlingException", "slow down", 429, expected_params=invoke_params("t0", 256)
    )
    stubber.add_client_error(
        "invoke_model", "AccessDeniedException", "no access", 403, expected_params=invoke_params("t1", 256)
    )
    errors: list[BaseException] = []

    def embed() -> None:
        try:
            emb.embed_documents(["t0", "t1"])
        except BedrockError as exc:
            errors.append(exc)

    with stubber:
        worker = threading.Thread(target=embed, daemon=True)
        worker.start()
        worker.join(timeout=60)  # a liveness bound, not a timing assertion: the backoff alone is 1000 s
    assert not worker.is_alive()
    assert [getattr(e, "reason", None) for e in errors] == ["no-model-access"]
    stubber.assert_no_pending_responses()
    emb.close()


def test_usage_snapshot_and_cost() -> None:
    u = BedrockUsage(input_tokens=2_000_000, requests=10, retries=1, capped_texts=1)
    assert u.estimated_cost_usd == pytest.approx(2_000 * PRICE_PER_1K_TOKENS_USD)
    d = u.to_dict()
    assert set(d) == {
        "input_tokens",
        "requests",
        "retries",
        "capped_texts",
        "price_per_1k_tokens_usd",
        "estimated_cost_usd",
    }
    json.dumps(d)
    assert (u - u).input_tokens == 0


# -- real Bedrock (opt-in) --------------------------------------------------------------------


@pytest.fixture
def real_bedrock(request: pytest.FixtureRequest) -> str:
    """The region to use against real Bedrock; skips unless ``-m bedrock`` was given and credentials resolve."""
    expr = request.config.getoption("markexpr") or ""
    if "bedrock" not in expr or "not bedrock" in expr:
        pytest.skip("real Bedrock test: select it with -m bedrock")
    session = boto3.Session()
    if session.get_credentials() is None:
        pytest.skip("real Bedrock test: no AWS credentials resolve")
    return session.region_name or REGION


@pytest.mark.bedrock
def test_real_bedrock(real_bedrock: str) -> None:
    emb = BedrockEmbedder(dimensions=256, region=real_bedrock, concurrency=2)
    docs = emb.embed_documents(
        ["the billing service moved to PostgreSQL", "billing now uses Postgres", "a recipe for bread"]
    )
    assert all(d.shape == (1, 256) and np.isclose(np.linalg.norm(d), 1.0, atol=1e-4) for d in docs)
    assert float(docs[0][0] @ docs[1][0]) > float(docs[0][0] @ docs[2][0])
    assert emb.embed_query("which database does billing use?").shape == (256,)
    assert emb.usage.input_tokens > 0 and emb.usage.requests >= 4  # more if throttled
    emb.close()


def test_index_reports_billed_tokens_and_cost(stubbed, tmp_path: Path) -> None:
    from conftest import DEPLOY, generic_session, write_jsonl

    import memlane

    # Two exchanges too long to be packed into one chunk.
    write_jsonl(tmp_path / "t" / "a.jsonl", generic_session("a", DEPLOY[:2]))
    emb, stubber = stubbed(dimensions=256, concurrency=1)
    chunks = memlane._core.chunk_file(tmp_path / "t" / "a.jsonl")
    for c in sorted(chunks, key=lambda c: c["key"]):  # the backfill embeds in key order
        stubber.add_response(
            "invoke_model", titan_response(vector_for(c["text"], 256), tokens=11), invoke_params(c["text"], 256)
        )
    report = memlane.open(tmp_path / "home", embedder=emb).index([tmp_path / "t"])
    assert report.chunks_embedded == 2
    assert report.embed_usage["input_tokens"] == 22
    assert report.embed_usage["requests"] == 2
    assert report.embed_usage["estimated_cost_usd"] > 0
