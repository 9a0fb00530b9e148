"""Client-side overhead per call of the Bedrock embedding path, at concurrency 1, 8 and 32.

No network and no AWS account: every response is canned. Two ways of canning it:

* ``stubber``: botocore's Stubber answers at ``before-call``, so a call costs parameter
  validation, the Stubber's bookkeeping, JSON parsing of the Titan body and memlane's own
  work (capping, pool, retry loop, normalisation, usage counters).
* ``wire``: a ``before-send`` hook answers with raw HTTP bytes, so a call also pays for
  request serialisation, endpoint resolution, SigV4 signing and response parsing, i.e.
  everything a real call costs on this side except the socket.

``raw`` rows time the bare ``client.invoke_model`` + ``json.loads`` loop with the same
canned responses: the floor memlane's embedder sits on. Responses are Titan-shaped
(``embedding`` and ``embeddingsByType.float``, 9 significant digits) at the chosen dimension.

Run from the repository root:

    .venv/bin/python benches/bench_bedrock_overhead.py --calls 2000

Output on the 2-core dev VM (Python 3.11, botocore 1.44.5, 1024 dims, 2,000-character
texts, median of 3 runs of 2,000 calls; other sessions' jobs were intermittently busy on the
same VM, and repeated runs varied by about 20%):

    mode     path      concurrency  calls  us/call  calls/s
    stubber  raw                 1   2000      524     1909
    stubber  embedder            1   2000      764     1309
    stubber  embedder            8   2000     1017      983
    stubber  embedder           32   2000     1167      857
    wire     raw                 1   2000     1298      770
    wire     embedder            1   2000     1445      692
    wire     embedder            8   2000     1659      603
    wire     embedder           32   2000     1809      553

About half of a stubbed call is ``json.loads`` of the Titan body (1,024 floats, twice:
``embedding`` and ``embeddingsByType``). Threads do not cut CPU per call (the GIL
serialises the Python work, and handing it between 8-32 busy threads costs 15-50%); they
exist to overlap network waits, ~50-150 ms per real Titan call. One process can still drive
~550 calls/s (33,000 a minute) at concurrency 32, well above Bedrock's default on-demand
requests-per-minute quota for this model (check yours in Service Quotas), so the quota, not
this path, bounds an on-demand backfill.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import statistics
import time
from collections.abc import Iterator
from typing import Any

import boto3
from botocore.awsrequest import AWSResponse
from botocore.config import Config
from botocore.response import StreamingBody
from botocore.stub import Stubber

from memlane.embed.bedrock import MODEL_ID, BedrockEmbedder, RetryPolicy

REGION = "us-east-1"


class _RawStream(io.BytesIO):
    """What botocore expects of urllib3's raw response: a readable that can also ``stream()``."""

    def stream(self, amt: int = 1024, decode_content: bool | None = None) -> Iterator[bytes]:
        while chunk := self.read(amt):
            yield chunk


def titan_body(dim: int, seed: int) -> bytes:
    """A Titan V2 response body with a unit vector printed the way the service prints floats."""
    rng = random.Random(seed)
    values = [rng.gauss(0, 1) for _ in range(dim)]
    norm = sum(v * v for v in values) ** 0.5
    embedding = [float(f"{v / norm:.9g}") for v in values]
    return json.dumps(
        {"embedding": embedding, "inputTextTokenCount": 480, "embeddingsByType": {"float": embedding}}
    ).encode()


def make_client(concurrency: int) -> Any:
    session = boto3.Session(aws_access_key_id="bench", aws_secret_access_key="bench", region_name=REGION)
    config = Config(retries={"mode": "standard", "total_max_attempts": 1}, max_pool_connections=max(10, concurrency))
    return session.client("bedrock-runtime", config=config)


def stubbed(client: Any, bodies: list[bytes], calls: int) -> Stubber:
    """Queue ``calls`` responses (one fresh stream each) on a Stubber."""
    stubber = Stubber(client)
    for n in range(calls):
        body = bodies[n % len(bodies)]
        stubber.add_response(
            "invoke_model", {"body": StreamingBody(io.BytesIO(body), len(body)), "contentType": "application/json"}
        )
    stubber.activate()
    return stubber


def wired(client: Any, bodies: list[bytes]) -> None:
    """Answer every request at ``before-send`` with raw HTTP bytes (thread-safe: a new stream per call)."""
    counter = iter(range(10**12))

    def send(request: Any, **_: Any) -> AWSResponse:
        body = bodies[next(counter) % len(bodies)]
        headers = {"Content-Type": "application/json", "Content-Length": str(len(body)), "x-amzn-RequestId": "bench"}
        return AWSResponse(request.url, 200, headers, _RawStream(body))

    client.meta.events.register("before-send.bedrock-runtime.InvokeModel", send)


def time_raw(client: Any, texts: list[str], dim: int) -> float:
    start = time.perf_counter()
    for text in texts:
        body = json.dumps({"inputText": text, "dimensions": dim, "normalize": True})
        response = client.invoke_model(
            modelId=MODEL_ID, body=body, contentType="application/json", accept="application/json"
        )
        json.loads(response["body"].read())
    return time.perf_counter() - start


def time_embedder(client: Any, texts: list[str], dim: int, concurrency: int) -> float:
    emb = BedrockEmbedder(dimensions=dim, client=client, concurrency=concurrency, retry=RetryPolicy(max_attempts=1))
    # Memory hands the embedder 256 chunks at a time; time it the same way.
    start = time.perf_counter()
    for i in range(0, len(texts), 256):
        emb.embed_documents(texts[i : i + 256])
    elapsed = time.perf_counter() - start
    emb.close()
    return elapsed


def run(mode: str, path: str, concurrency: int, texts: list[str], bodies: list[bytes], dim: int) -> float:
    """Seconds for one pass of ``texts`` in a fresh client."""
    client = make_client(concurrency)
    stubber = stubbed(client, bodies, len(texts)) if mode == "stubber" else None
    if mode == "wire":
        wired(client, bodies)
    if path == "raw":
        elapsed = time_raw(client, texts, dim)
    else:
        elapsed = time_embedder(client, texts, dim, concurrency)
    if stubber is not None:
        stubber.deactivate()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="calls per measurement")
    parser.add_argument("--dim", type=int, default=1024, choices=(1024, 512, 256))
    parser.add_argument("--chars", type=int, default=2000, help="characters per text (~500 tokens)")
    parser.add_argument("--concurrency", default="1,8,32", help="comma-separated pool sizes")
    parser.add_argument("--modes", default="stubber,wire", help="stubber, wire or both")
    parser.add_argument("--repeats", type=int, default=3, help="runs per row; the median is shown")
    args = parser.parse_args()

    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
    rng = random.Random(0)
    words = [
        "deploy",
        "failed",
        "exit",
        "code",
        "OOM",
        "killer",
        "container",
        "memory",
        "limit",
        "billing",
        "database",
        "migration",
    ]
    texts = []
    for n in range(args.calls):
        text = f"{n} "
        while len(text) < args.chars:
            text += rng.choice(words) + " "
        texts.append(text[: args.chars])
    bodies = [titan_body(args.dim, seed) for seed in range(16)]
    # Warm botocore's loaders and the import caches so the first row is not penalised.
    run("stubber", "raw", 1, texts[:50], bodies, args.dim)

    print(f"{'mode':<8} {'path':<9} {'concurrency':>11} {'calls':>6} {'us/call':>8} {'calls/s':>8}")
    for mode in args.modes.split(","):
        rows = [("raw", 1)] + [("embedder", int(c)) for c in args.concurrency.split(",")]
        for path, concurrency in rows:
            elapsed = statistics.median(
                run(mode, path, concurrency, texts, bodies, args.dim) for _ in range(args.repeats)
            )
            per_call = elapsed / len(texts)
            print(f"{mode:<8} {path:<9} {concurrency:>11} {len(texts):>6} {per_call * 1e6:>8.0f} {1 / per_call:>8.0f}")


if __name__ == "__main__":
    main()
