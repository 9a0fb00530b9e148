"""Bulk backfill of a home through Bedrock batch inference, end to end, interrupted and resumed.

S3 is moto's; the ``bedrock`` control plane and the ``bedrock-runtime`` client (on-demand
fallback) are behind botocore's Stubber, so a call nobody expected fails the test; the batch
service itself is played by ``simulate_service`` (reads the JSONL inputs, writes outputs).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

boto3 = pytest.importorskip("boto3")
moto = pytest.importorskip("moto")

from botocore.stub import ANY, Stubber  # noqa: E402
from conftest import generic_session, write_jsonl  # noqa: E402
from test_embed_bedrock import invoke_params, no_sleep, runtime_client, titan_response  # noqa: E402
from test_embed_bedrock_batch import (  # noqa: E402
    BUCKET,
    ROLE,
    arn,
    aws,  # noqa: F401  (the fixture: moto S3 with one bucket, and the stubbed control plane)
    description,
    expect_two_jobs_then_polling,
    raw_vector,
    simulate_service,
    unit,
)

import memlane  # noqa: E402
from memlane.cli import main  # noqa: E402
from memlane.embed.batch_backfill import STATE_FILE  # noqa: E402
from memlane.embed.bedrock import BedrockEmbedder  # noqa: E402
from memlane.embed.bedrock_batch import BatchJobError  # noqa: E402
from memlane.errors import EmbedderMismatchError  # noqa: E402

S3_URI = f"s3://{BUCKET}/memlane/batch"
DIM = 256
SMALL_JOBS = {"max_records_per_job": 50, "min_records_per_job": 20, "poll_seconds": 5}


@pytest.fixture
def runtime(fake_aws: None):
    """``(embedder, stubber)``: a 256-dimension Titan embedder whose on-demand calls are stubbed."""
    emb = BedrockEmbedder(dimensions=DIM, client=runtime_client(), retry=no_sleep(), concurrency=1)
    with Stubber(emb.client) as stubber:
        yield emb, stubber
        stubber.assert_no_pending_responses()
    emb.close()


# Long enough that no two exchanges are packed into one chunk (see PACK_TOKENS in rust/memlane-core/src/chunk/session.rs).
LONG_REPLY = (
    " The scheduler kept placing new replicas on the same host, the kernel killed the largest"
    " process each time, and the restarts hid the pattern until the memory graphs were put side"
    " by side. Spreading the replicas and setting a request equal to the limit stopped it; the"
    " alert on restarts per hour now catches a repeat before users notice."
)


@pytest.fixture
def home_with_chunks(tmp_path: Path) -> Path:
    """A keyword-only home of 120 chunks (3 sessions of 40 turn pairs, each too long to be packed
    with another)."""
    for f in range(3):
        pairs = [
            (
                f"question {f}-{i}: why did service {i} fail?",
                f"answer {f}-{i}: the node ran out of memory." + LONG_REPLY,
            )
            for i in range(40)
        ]
        write_jsonl(tmp_path / "t" / f"s{f}.jsonl", generic_session(f"s{f}", pairs))
    home = tmp_path / "home"
    assert memlane.open(home, embedder="none").index([tmp_path / "t"], embed=False).chunks_added == 120
    return home


def pending_rows(mem: memlane.Memory) -> list[tuple[int, str, str]]:
    """``(key, hash, text)`` of the chunks without vectors, in the order the backfill visits them."""
    with mem._store.writer() as writer:
        return writer.chunk_texts([int(k) for k in writer.pending_vectors()])


def interrupt(_: float) -> None:
    raise KeyboardInterrupt


def test_batch_backfill_interrupted_resumed_with_failed_record_on_demand(aws, runtime, home_with_chunks: Path) -> None:
    s3, bedrock, control = aws
    emb, on_demand = runtime
    mem = memlane.open(home_with_chunks, embedder=emb)
    rows = pending_rows(mem)
    # Five chunks are already in the shared cache (another home embedded them): no record for them.
    seeded = {h: unit(raw_vector(text, DIM))[None, :] for _, h, text in rows[:5]}
    mem.cache.put_many(emb.id, seeded)

    # Run 1: 115 texts -> jobs of 50 and 50 (15 left: below the minimum of 20); interrupted while polling.
    expect_two_jobs_then_polling(control)
    with pytest.raises(KeyboardInterrupt):
        mem.embed_batch(S3_URI, ROLE, s3=s3, bedrock=bedrock, sleep=interrupt, **SMALL_JOBS)
    state = json.loads((home_with_chunks / STATE_FILE).read_text())
    assert [j["arn"] for j in state["jobs"]] == [arn(0), arn(1)]
    assert [j["records"] for j in state["jobs"]] == [50, 50] and len(state["leftover"]) == 15
    assert state["finished"] == [] and mem.status()["chunks_with_vectors"] == 0
    assert mem.cache.summary()["entries"] == 5
    sent = [
        json.loads(line)["modelInput"]["inputText"]
        for key in sorted(
            o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET)["Contents"] if o["Key"].endswith(".jsonl")
        )
        for line in s3.get_object(Bucket=BUCKET, Key=key)["Body"].read().decode().splitlines()
    ]
    assert len(sent) == 100 and not {text for _, h, text in rows if h in seeded} & set(sent)

    # The service finishes both jobs; one record comes back as an error.
    failing_text = sent[7]
    simulate_service(s3, errors=frozenset({failing_text}))
    # Run 2 resumes from the home alone: both jobs are polled, none is submitted again (the
    # Stubber would refuse a create call), their outputs go to the cache.
    control.add_response("get_model_invocation_job", description(arn(0), "Completed"), {"jobIdentifier": arn(0)})
    control.add_response("get_model_invocation_job", description(arn(1), "Completed"), {"jobIdentifier": arn(1)})
    by_hash = {h: text for _, h, text in rows}
    on_demand_texts = [by_hash[h] for h in state["leftover"]] + [failing_text]
    visit_order = [text for _, _, text in rows if text in set(on_demand_texts)]
    for text in visit_order:
        on_demand.add_response(
            "invoke_model", titan_response(unit(raw_vector(text, DIM)), tokens=5), invoke_params(text, DIM)
        )
    report = mem.embed_batch(s3=s3, bedrock=bedrock, sleep=interrupt)

    assert report.resumed and (report.jobs, report.records, report.leftover) == (2, 100, 15)
    failed_hash = next(h for h, text in by_hash.items() if text == failing_text)
    assert report.failed == {failed_hash: "400: Malformed input request"}
    assert report.embedded == 99
    assert report.input_tokens == sum(len(t.split()) for t in sent if t != failing_text)
    assert (report.chunks_embedded, report.embedded_on_demand, report.chunks_pending) == (120, 16, 0)
    assert not (home_with_chunks / STATE_FILE).exists()
    status = mem.status()
    assert status["chunks_with_vectors"] == 120 and status["embedder_id"] == emb.id
    # Batch vectors are the service's, made unit, joined back to the right chunk.
    some_hash = next(h for h, text in by_hash.items() if text == sent[0])
    np.testing.assert_allclose(
        mem.cache.get_many(emb.id, [some_hash])[some_hash][0], unit(raw_vector(sent[0], DIM)), atol=2e-3
    )
    with pytest.raises(ValueError, match="no batch run to resume"):
        mem.embed_batch(s3=s3, bedrock=bedrock)


def test_failed_records_can_stay_pending(aws, runtime, home_with_chunks: Path) -> None:
    s3, bedrock, control = aws
    emb, on_demand = runtime
    mem = memlane.open(home_with_chunks, embedder=emb)
    control.add_response("create_model_invocation_job", {"jobArn": arn(0)})
    control.add_response("get_model_invocation_job", description(arn(0), "Completed"))
    failing = pending_rows(mem)[3][2]
    report = mem.embed_batch(
        S3_URI, ROLE, s3=s3, bedrock=bedrock, fill_on_demand=False,
        sleep=interrupt, max_records_per_job=200, min_records_per_job=100,
        on_status=lambda *_: simulate_service(s3, errors=frozenset({failing})),
    )  # fmt: skip
    assert (report.jobs, report.records, len(report.failed)) == (1, 120, 1)
    assert (report.chunks_embedded, report.embedded_on_demand, report.chunks_pending) == (119, 0, 1)
    on_demand.add_response("invoke_model", titan_response(unit(raw_vector(failing, DIM))), invoke_params(failing, DIM))
    assert mem.embed_pending() == 1  # the ordinary on-demand backfill picks it up later
    assert mem.status()["chunks_with_vectors"] == 120


def test_a_job_the_service_failed_is_resubmitted_on_the_next_run(aws, runtime, home_with_chunks: Path) -> None:
    s3, bedrock, control = aws
    emb, _ = runtime
    mem = memlane.open(home_with_chunks, embedder=emb)
    options = {"max_records_per_job": 200, "min_records_per_job": 100, "sleep": interrupt}
    control.add_response("create_model_invocation_job", {"jobArn": arn(0)})
    control.add_response("get_model_invocation_job", description(arn(0), "Failed", "no access to s3://memlane-batch"))
    with pytest.raises(BatchJobError, match="Failed: no access"):
        mem.embed_batch(S3_URI, ROLE, s3=s3, bedrock=bedrock, **options)
    (job,) = json.loads((home_with_chunks / STATE_FILE).read_text())["jobs"]
    assert job["name"].endswith("-retry1") and job["arn"] is None
    control.add_response("create_model_invocation_job", {"jobArn": arn(1)}, {
        "jobName": job["name"], "clientRequestToken": job["name"], "roleArn": ROLE, "modelId": ANY,
        "inputDataConfig": ANY, "outputDataConfig": ANY,
    })  # fmt: skip
    control.add_response("get_model_invocation_job", description(arn(1), "Completed"), {"jobIdentifier": arn(1)})
    simulate_service(s3)
    report = mem.embed_batch(s3=s3, bedrock=bedrock, **options)
    assert (report.embedded, report.chunks_embedded, report.chunks_pending) == (120, 120, 0)


def test_refusals_before_anything_is_sent(aws, runtime, home_with_chunks: Path, fake_embedder) -> None:
    s3, bedrock, _ = aws
    emb, _ = runtime
    with pytest.raises(ValueError, match="needs a Bedrock embedder"):
        memlane.open(home_with_chunks, embedder=fake_embedder).embed_batch(S3_URI, ROLE, s3=s3, bedrock=bedrock)
    mem = memlane.open(home_with_chunks, embedder=emb)
    with pytest.raises(ValueError, match="s3://bucket/prefix"):
        mem.embed_batch("my-bucket/prefix", ROLE, s3=s3, bedrock=bedrock)
    with pytest.raises(ValueError, match="IAM role ARN"):
        mem.embed_batch(S3_URI, "BedrockBatch", s3=s3, bedrock=bedrock)
    with pytest.raises(ValueError, match="no batch run to resume"):
        mem.embed_batch(s3=s3, bedrock=bedrock)
    memlane.open(home_with_chunks, embedder=fake_embedder).embed_pending()
    with pytest.raises(EmbedderMismatchError, match="fake/hash-bow/64"):
        mem.embed_batch(S3_URI, ROLE, s3=s3, bedrock=bedrock)
    assert "Contents" not in s3.list_objects_v2(Bucket=BUCKET)


def test_cli_batch_interrupted_then_resumed_by_plain_rerun(
    aws, runtime, home_with_chunks: Path, monkeypatch, capsys
) -> None:
    import memlane.embed.bedrock_batch as bedrock_batch
    from memlane.cli import common

    s3, bedrock, control = aws
    emb, _ = runtime
    opened: list[str] = []

    def fake_open(args: Any, embedder: str) -> memlane.Memory:
        opened.append(embedder)
        return memlane.open(args.home, embedder=emb)

    monkeypatch.setattr(common, "open_memory", fake_open)
    monkeypatch.setattr(bedrock_batch, "make_batch_clients", lambda *a, **k: (s3, bedrock))
    polls: list[int] = []

    def service(model: Any, **_: Any) -> None:
        # First poll: the user presses Ctrl-C. Later polls: the service has finished the job.
        if model.name != "GetModelInvocationJob":
            return
        polls.append(1)
        if len(polls) == 1:
            raise KeyboardInterrupt
        simulate_service(s3)

    # '*.*' handlers run before exact-name ones and the Stubber's is one: go first among them.
    bedrock.meta.events.register_first("before-call.*.*", service)
    control.add_response("create_model_invocation_job", {"jobArn": arn(0)})
    control.add_response("get_model_invocation_job", description(arn(0), "Completed"), {"jobIdentifier": arn(0)})
    home = str(home_with_chunks)
    argv = [
        "--home",
        home,
        "embed",
        "--embed",
        "bedrock:256",
        "--batch",
        S3_URI,
        "--batch-role",
        ROLE,
        "--poll-seconds",
        "0",
    ]
    assert main(argv) == 130
    assert "run it again to resume" in capsys.readouterr().err
    assert (home_with_chunks / STATE_FILE).exists()

    assert main(["--home", home, "status"]) == 0
    assert "batch run   0/1 jobs read, 1 submitted, 120 records via s3://" in capsys.readouterr().out

    assert main(["--home", home, "--json", "embed"]) == 0  # no --embed, no --batch: the saved run says which
    report = json.loads(capsys.readouterr().out)
    assert opened == ["bedrock:256", "none", "bedrock:256"]  # first run, status, resume
    assert report["resumed"] and (report["jobs"], report["records"], report["chunks_embedded"]) == (1, 120, 120)
    assert report["estimated_cost_usd"] > 0 and report["failed"] == {}
    assert main(["--home", home, "--json", "status"]) == 0
    assert json.loads(capsys.readouterr().out)["batch_run"] is None

    assert main(["--home", home, "embed", "--batch-role", ROLE]) == 2
    assert "go with --batch" in capsys.readouterr().err
