"""Bedrock batch-inference plumbing: JSONL to S3, job control through Stubber, output joined back.

S3 is moto's in-memory S3; the ``bedrock`` control-plane client is always behind botocore's
Stubber, and a small simulator plays the part of the batch service (reads the input JSONL
from S3, writes ``.jsonl.out`` files the way Bedrock does). No network.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import asdict
from datetime import datetime, timezone
from typing import Any

import numpy as np
import pytest

boto3 = pytest.importorskip("boto3")
moto = pytest.importorskip("moto")

from botocore.stub import ANY, Stubber  # noqa: E402
from conftest import AWS_TEST_REGION  # noqa: E402

from memlane.embed.bedrock import BATCH_PRICE_PER_1K_TOKENS_USD, MODEL_ID, cap_text  # noqa: E402
from memlane.embed.bedrock_batch import (  # noqa: E402
    BatchJob,
    BatchJobError,
    prepare_jobs,
    read_job_output,
    run_batch_embedding,
    run_jobs,
    submit_job,
    wait_for_job,
    write_job_input,
)

REGION = AWS_TEST_REGION
BUCKET = "memlane-batch"
ROLE = "arn:aws:iam::123456789012:role/BedrockBatch"


@pytest.fixture
def aws(fake_aws: None) -> Iterator[tuple[Any, Any, Stubber]]:
    """``(s3, bedrock, stubber)``: moto S3 with one bucket, and a Stubber-backed control-plane client."""
    with moto.mock_aws():
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(Bucket=BUCKET)
        bedrock = boto3.client("bedrock", region_name=REGION)
        with Stubber(bedrock) as stubber:
            yield s3, bedrock, stubber
            stubber.assert_no_pending_responses()


def raw_vector(text: str, dim: int) -> np.ndarray:
    """What the simulated service returns for a text: deterministic, deliberately not unit length."""
    seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=4).digest(), "little")
    return (np.random.default_rng(seed).standard_normal(dim) * 2.5).astype(np.float32)


def unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


def read_text(s3: Any, key: str) -> str:
    return s3.get_object(Bucket=BUCKET, Key=key)["Body"].read().decode()


def simulate_service(s3: Any, *, errors: frozenset[str] = frozenset(), drop: frozenset[str] = frozenset()) -> None:
    """Play Bedrock batch: for each job folder with input but no output, write its output files.

    Records come out in reverse order; texts in ``errors`` get an error object instead of a
    model output, texts in ``drop`` get no output line at all.
    """
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])]
    for key in keys:
        if "/input/" not in key or not key.endswith(".jsonl"):
            continue
        base, part = key.split("/input/")
        if any(k.startswith(f"{base}/output/") and k.endswith(f"{part}.out") for k in keys):
            continue
        lines = []
        for line in reversed(read_text(s3, key).splitlines()):
            record = json.loads(line)
            text, dim = record["modelInput"]["inputText"], record["modelInput"]["dimensions"]
            if text in drop:
                continue
            if text in errors:
                record["error"] = {"errorCode": 400, "errorMessage": "Malformed input request"}
            else:
                embedding = [float(x) for x in raw_vector(text, dim)]
                record["modelOutput"] = {
                    "embedding": embedding,
                    "inputTextTokenCount": len(text.split()),
                    "embeddingsByType": {"float": embedding},
                }
            lines.append(json.dumps(record))
        job_id = hashlib.md5(base.encode()).hexdigest()[:12]
        s3.put_object(Bucket=BUCKET, Key=f"{base}/output/{job_id}/{part}.out", Body="\n".join(lines).encode() + b"\n")
        s3.put_object(Bucket=BUCKET, Key=f"{base}/output/{job_id}/manifest.json.out", Body=b'{"totalRecordCount": 0}')


def description(job_arn: str, status: str, message: str | None = None) -> dict[str, Any]:
    """A GetModelInvocationJob response with every required field."""
    response: dict[str, Any] = {
        "jobArn": job_arn,
        "jobName": job_arn.rsplit("/", 1)[-1],
        "modelId": MODEL_ID,
        "roleArn": ROLE,
        "status": status,
        "submitTime": datetime(2026, 3, 1, tzinfo=timezone.utc),
        "inputDataConfig": {"s3InputDataConfig": {"s3Uri": f"s3://{BUCKET}/in/"}},
        "outputDataConfig": {"s3OutputDataConfig": {"s3Uri": f"s3://{BUCKET}/out/"}},
    }
    if message is not None:
        response["message"] = message
    return response


def arn(n: int) -> str:
    return f"arn:aws:bedrock:{REGION}:123456789012:model-invocation-job/job{n:04d}"


def expect_two_jobs_then_polling(control: Any) -> None:
    """The control plane's answers (a Stubber's) to a backfill run that submits two jobs, the
    first with the caller's role, and is then polling the first, still in progress."""
    from botocore.stub import ANY

    control.add_response("create_model_invocation_job", {"jobArn": arn(0)}, {
        "jobName": ANY, "clientRequestToken": ANY, "roleArn": ROLE, "modelId": ANY,
        "inputDataConfig": ANY, "outputDataConfig": ANY,
    })  # fmt: skip
    control.add_response("create_model_invocation_job", {"jobArn": arn(1)})
    control.add_response("get_model_invocation_job", description(arn(0), "InProgress"), {"jobIdentifier": arn(0)})


# -- input ------------------------------------------------------------------------------------


def test_write_job_input_exact_jsonl_and_record_list(aws) -> None:
    s3, _, _ = aws
    long_text = "log line " * 10_000
    items = [("h0", "alpha"), ("h1", 'quote " and \u00e9'), ("h2", long_text)]
    job = write_job_input(
        s3, items, bucket=BUCKET, prefix="/memlane/batch/", job_name="j1", dimensions=256, max_records_per_file=2
    )
    assert job == BatchJob(
        name="j1",
        input_uri=f"s3://{BUCKET}/memlane/batch/j1/input/",
        output_uri=f"s3://{BUCKET}/memlane/batch/j1/output/",
        records_uri=f"s3://{BUCKET}/memlane/batch/j1/records.json",
        records=3,
        dimensions=256,
    )
    assert read_text(s3, "memlane/batch/j1/input/part-00000.jsonl") == (
        '{"recordId": "R0000000000", "modelInput": {"inputText": "alpha", "dimensions": 256, "normalize": true}}\n'
        '{"recordId": "R0000000001", "modelInput": {"inputText": "quote \\" and \\u00e9", "dimensions": 256, "normalize": true}}\n'
    )
    (last,) = read_text(s3, "memlane/batch/j1/input/part-00001.jsonl").splitlines()
    assert json.loads(last) == {
        "recordId": "R0000000002",
        "modelInput": {"inputText": cap_text(long_text), "dimensions": 256, "normalize": True},
    }
    assert len(cap_text(long_text)) < len(long_text)  # capped exactly as on demand
    assert json.loads(read_text(s3, "memlane/batch/j1/records.json")) == ["h0", "h1", "h2"]


def test_write_job_input_splits_parts_by_bytes(aws) -> None:
    s3, _, _ = aws
    items = [(f"h{i}", "x" * 100) for i in range(10)]
    write_job_input(s3, items, bucket=BUCKET, prefix="p", job_name="j", max_bytes_per_file=500)
    parts = sorted(o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix="p/j/input/")["Contents"])
    # Each line is 200 bytes, so a part closes at its third line (600 >= 500): 3 + 3 + 3 + 1.
    assert [len(read_text(s3, k).splitlines()) for k in parts] == [3, 3, 3, 1]


# -- job control --------------------------------------------------------------------------------


def test_submit_job_exact_request(aws) -> None:
    s3, bedrock, stubber = aws
    job = write_job_input(s3, [("h", "t")], bucket=BUCKET, prefix="p", job_name="memlane-run1-abcd-000")
    stubber.add_response(
        "create_model_invocation_job",
        {"jobArn": arn(1)},
        {
            "jobName": "memlane-run1-abcd-000",
            "roleArn": ROLE,
            "clientRequestToken": "memlane-run1-abcd-000",
            "modelId": "amazon.titan-embed-text-v2:0",
            "inputDataConfig": {
                "s3InputDataConfig": {
                    "s3Uri": f"s3://{BUCKET}/p/memlane-run1-abcd-000/input/",
                    "s3InputFormat": "JSONL",
                }
            },
            "outputDataConfig": {"s3OutputDataConfig": {"s3Uri": f"s3://{BUCKET}/p/memlane-run1-abcd-000/output/"}},
            "timeoutDurationInHours": 48,
            "tags": [{"key": "app", "value": "memlane"}],
        },
    )
    submitted = submit_job(bedrock, job, ROLE, timeout_hours=48, tags={"app": "memlane"})
    assert submitted.arn == arn(1) and submitted.name == job.name


def test_wait_for_job_polls_until_done(aws) -> None:
    _, bedrock, stubber = aws
    for status in ("Submitted", "Validating", "Scheduled", "InProgress", "PartiallyCompleted"):
        stubber.add_response("get_model_invocation_job", description(arn(1), status), {"jobIdentifier": arn(1)})
    slept: list[float] = []
    seen: list[str] = []
    job = BatchJob("j", "s3://b/i/", "s3://b/o/", "s3://b/r.json", 100, 1024, arn=arn(1))
    final = wait_for_job(
        bedrock, job, poll_seconds=30, sleep=slept.append, on_status=lambda _, d: seen.append(d["status"])
    )
    assert final["status"] == "PartiallyCompleted"
    assert slept == [30, 30, 30, 30]
    assert seen == ["Submitted", "Validating", "Scheduled", "InProgress", "PartiallyCompleted"]


@pytest.mark.parametrize("status", ["Failed", "Stopped", "Expired"])
def test_wait_for_job_failure(aws, status: str) -> None:
    _, bedrock, stubber = aws
    stubber.add_response("get_model_invocation_job", description(arn(2), "InProgress"))
    stubber.add_response(
        "get_model_invocation_job", description(arn(2), status, "access denied to s3://memlane-batch/p")
    )
    job = BatchJob("j2", "s3://b/i/", "s3://b/o/", "s3://b/r.json", 100, 1024, arn=arn(2))
    with pytest.raises(BatchJobError, match=f"batch job j2 {status}: access denied"):
        wait_for_job(bedrock, job, sleep=lambda _: None)


def test_wait_for_job_timeout_and_unsubmitted(aws) -> None:
    _, bedrock, stubber = aws
    for _ in range(3):
        stubber.add_response("get_model_invocation_job", description(arn(3), "InProgress"))
    job = BatchJob("j3", "s3://b/i/", "s3://b/o/", "s3://b/r.json", 100, 1024, arn=arn(3))
    with pytest.raises(BatchJobError, match="still InProgress after 120 s"):
        wait_for_job(bedrock, job, poll_seconds=60, timeout_seconds=120, sleep=lambda _: None)
    with pytest.raises(ValueError, match="not submitted"):
        wait_for_job(bedrock, BatchJob("j4", "s3://b/i/", "s3://b/o/", "s3://b/r.json", 1, 1024))


# -- output ---------------------------------------------------------------------------------------


def test_read_job_output_joins_by_record_id(aws) -> None:
    s3, _, _ = aws
    texts = {f"hash{i:03d}": f"chunk {i} about topic {i % 7}" for i in range(12)}
    job = write_job_input(
        s3, texts.items(), bucket=BUCKET, prefix="p", job_name="j", dimensions=512, max_records_per_file=5
    )
    simulate_service(s3, errors=frozenset({texts["hash003"]}), drop=frozenset({texts["hash007"]}))
    result = read_job_output(s3, job)
    assert set(result.vectors) == set(texts) - {"hash003", "hash007"}
    for h, v in result.vectors.items():
        assert v.shape == (1, 512) and v.dtype == np.float32
        np.testing.assert_allclose(v[0], unit(raw_vector(texts[h], 512)), rtol=1e-5, atol=1e-6)
    assert result.missing == {"hash003": "400: Malformed input request", "hash007": "no output record"}
    assert result.embedded == 10
    assert result.input_tokens == sum(len(texts[h].split()) for h in result.vectors)
    assert result.estimated_cost_usd == pytest.approx(result.input_tokens / 1000 * BATCH_PRICE_PER_1K_TOKENS_USD)


def test_read_job_output_streams_to_a_sink(aws) -> None:
    s3, _, _ = aws
    texts = {f"h{i}": f"text {i}" for i in range(7)}
    job = write_job_input(s3, texts.items(), bucket=BUCKET, prefix="p", job_name="j", dimensions=256)
    simulate_service(s3)
    slices: list[dict[str, np.ndarray]] = []
    result = read_job_output(s3, job, sink=slices.append, flush_every=3)
    assert [len(s) for s in slices] == [3, 3, 1]
    assert result.vectors == {} and result.embedded == 7
    assert set().union(*slices) == set(texts)


def test_read_job_output_rejects_foreign_records(aws) -> None:
    s3, _, _ = aws
    job = write_job_input(s3, [("h0", "a")], bucket=BUCKET, prefix="p", job_name="j", dimensions=256)
    record = {"recordId": "R0000000005", "modelOutput": {"embedding": [1.0] * 256, "inputTextTokenCount": 1}}
    s3.put_object(Bucket=BUCKET, Key="p/j/output/x/part-00000.jsonl.out", Body=json.dumps(record).encode())
    with pytest.raises(BatchJobError, match="R0000000005"):
        read_job_output(s3, job)


# -- end to end -------------------------------------------------------------------------------------


def test_run_batch_embedding_end_to_end(aws) -> None:
    s3, bedrock, stubber = aws
    texts = {f"hash{i:04d}": f"turn {i}: the deploy of service {i % 13} failed" for i in range(250)}
    texts["blank"] = "   "
    # Jobs of 100, 100 and 50 records, at most two in flight: the third is submitted once the first ends.
    stubber.add_response(
        "create_model_invocation_job",
        {"jobArn": arn(0)},
        {
            **dict.fromkeys(["jobName", "clientRequestToken", "inputDataConfig", "outputDataConfig"], ANY),
            "roleArn": ROLE,
            "modelId": MODEL_ID,
        },
    )
    stubber.add_response("create_model_invocation_job", {"jobArn": arn(1)})
    stubber.add_response("get_model_invocation_job", description(arn(0), "InProgress"), {"jobIdentifier": arn(0)})
    stubber.add_response("get_model_invocation_job", description(arn(0), "Completed"), {"jobIdentifier": arn(0)})
    stubber.add_response("create_model_invocation_job", {"jobArn": arn(2)})
    stubber.add_response("get_model_invocation_job", description(arn(1), "Completed"), {"jobIdentifier": arn(1)})
    stubber.add_response("get_model_invocation_job", description(arn(2), "InProgress"), {"jobIdentifier": arn(2)})
    stubber.add_response("get_model_invocation_job", description(arn(2), "Completed"), {"jobIdentifier": arn(2)})
    failing = texts["hash0042"]
    polls: list[str] = []
    cached: dict[str, np.ndarray] = {}

    result = run_batch_embedding(
        texts,
        bucket=BUCKET,
        prefix="memlane",
        role_arn=ROLE,
        dimensions=256,
        run_id="run1",
        max_records_per_job=100,
        min_records_per_job=50,
        max_concurrent_jobs=2,
        poll_seconds=5,
        sink=cached.update,
        s3=s3,
        bedrock=bedrock,
        sleep=lambda _: simulate_service(s3, errors=frozenset({failing})),
        on_status=lambda job, d: polls.append(f"{job.name[-3:]}:{d['status']}"),
    )
    assert polls == ["000:InProgress", "000:Completed", "001:Completed", "002:InProgress", "002:Completed"]
    assert [j.records for j in result.jobs] == [100, 100, 50]
    assert [j.arn for j in result.jobs] == [arn(0), arn(1), arn(2)]
    assert all(j.name.startswith("memlane-run1-") for j in result.jobs)
    assert result.missing == {"hash0042": "400: Malformed input request"}
    assert result.embedded == 250 and result.vectors == {}
    assert set(cached) == set(texts) - {"hash0042"}
    assert cached["blank"].shape == (1, 256) and cached["blank"][0, 0] == 1.0
    np.testing.assert_allclose(cached["hash0007"][0], unit(raw_vector(texts["hash0007"], 256)), rtol=1e-5, atol=1e-6)
    assert result.input_tokens == sum(len(t.split()) for h, t in texts.items() if h not in {"blank", "hash0042"})


def test_two_phases_and_resume_from_saved_jobs(aws) -> None:
    s3, bedrock, stubber = aws
    texts = ((f"h{i}", f"text number {i}") for i in range(40))  # a generator, read once
    jobs, partial = prepare_jobs(
        s3, texts, bucket=BUCKET, prefix="p", dimensions=256, run_id="r", max_records_per_job=20, min_records_per_job=10
    )
    assert [j.records for j in jobs] == [20, 20] and all(j.arn is None for j in jobs)
    assert partial.missing == {} and partial.vectors == {}
    stubber.add_response("create_model_invocation_job", {"jobArn": arn(0)})
    saved: list[dict[str, Any]] = []
    stubber.add_response("get_model_invocation_job", description(arn(0), "InProgress"))

    def interrupted(_: float) -> None:
        raise KeyboardInterrupt

    # The process is interrupted while the first job runs: the saved job is all that is left of it.
    with pytest.raises(KeyboardInterrupt):
        run_jobs(
            jobs[:1],
            role_arn=ROLE,
            s3=s3,
            bedrock=bedrock,
            sleep=interrupted,
            on_submit=lambda j: saved.append(asdict(j)),
        )
    resumed = BatchJob(**json.loads(json.dumps(saved[0])))
    assert resumed.arn == arn(0)
    # Resuming waits for the saved job without submitting it again; the second one is new.
    stubber.add_response("get_model_invocation_job", description(arn(0), "Completed"), {"jobIdentifier": arn(0)})
    stubber.add_response("create_model_invocation_job", {"jobArn": arn(1)})
    stubber.add_response("get_model_invocation_job", description(arn(1), "Completed"), {"jobIdentifier": arn(1)})
    simulate_service(s3)
    result = run_jobs(
        [resumed, jobs[1]], role_arn=ROLE, s3=s3, bedrock=bedrock, max_concurrent_jobs=1, sleep=lambda _: None
    )
    assert result.embedded == 40 and result.missing == {}
    assert [j.arn for j in result.jobs] == [arn(0), arn(1)]


def test_leftover_below_minimum_is_returned_for_on_demand(aws) -> None:
    s3, bedrock, stubber = aws
    texts = [(f"h{i}", f"text {i}") for i in range(130)]
    stubber.add_response("create_model_invocation_job", {"jobArn": arn(0)})
    stubber.add_response("get_model_invocation_job", description(arn(0), "InProgress"))
    stubber.add_response("get_model_invocation_job", description(arn(0), "Completed"))
    result = run_batch_embedding(
        iter(texts),
        bucket=BUCKET,
        prefix="p",
        role_arn=ROLE,
        dimensions=256,
        run_id="r",
        max_records_per_job=100,
        s3=s3,
        bedrock=bedrock,
        sleep=lambda _: simulate_service(s3),
    )
    assert result.embedded == 100 and len(result.vectors) == 100
    assert set(result.missing) == {f"h{i}" for i in range(100, 130)}
    assert "Bedrock needs 100: embed on demand" in result.missing["h100"]


def test_too_few_records_makes_no_call(aws) -> None:
    s3, bedrock, _ = aws
    result = run_batch_embedding({"a": "x", "b": "y"}, bucket=BUCKET, prefix="p", role_arn=ROLE, s3=s3, bedrock=bedrock)
    assert set(result.missing) == {"a", "b"} and result.jobs == []
    assert "Contents" not in s3.list_objects_v2(Bucket=BUCKET)
    with pytest.raises(ValueError):
        run_batch_embedding({}, bucket=BUCKET, prefix="p", role_arn=ROLE, dimensions=300, s3=s3, bedrock=bedrock)
