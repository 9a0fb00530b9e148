"""Bulk backfill through Bedrock batch inference, for archives too large for on-demand calls.

Texts keyed by content hash go to S3 as JSONL (``recordId`` + Titan ``modelInput``), one
model-invocation job runs per at most 50,000 records, and the output JSONL is read back and
joined by ``recordId`` into ``{content_hash: vector}``. Vectors are the ones the on-demand
:class:`~memlane.embed.bedrock.BedrockEmbedder` of the same dimension returns (same model,
same request body, same capping, unit rows), so they belong in the embedding cache under its
id: a following on-demand backfill then finds them there and makes no call for them.

Layout under ``s3://<bucket>/<prefix>/<job name>/``: ``input/part-NNNNN.jsonl``,
``records.json`` (content hashes in record order; record ``R0000000042`` is entry 42) and
``output/`` (Bedrock writes ``<job id>/part-NNNNN.jsonl.out`` there).

Two phases, so that a caller holding a lock while it reads texts can let go before the
hours a job may take: :func:`prepare_jobs` streams texts into S3, :func:`run_jobs` submits,
waits and reads back (a :class:`BatchJob` is JSON-ready, so a run can be resumed from saved
jobs). :func:`run_batch_embedding` does both.

The control-plane and S3 clients keep botocore's standard retries (4 attempts): that is the
one retry layer of this path. Needs an IAM service role that Bedrock can assume with read
access to the input and write access to the output location.

Example, with AWS credentials and an S3 bucket Bedrock may read and write::

    result = run_batch_embedding(
        texts_by_hash, bucket="my-bucket", prefix="memlane/batch",
        role_arn="arn:aws:iam::123456789012:role/BedrockBatch", dimensions=1024,
        sink=lambda vectors: cache.put_many("bedrock/amazon.titan-embed-text-v2:0/1024", vectors))
    result.embedded, len(result.missing), round(result.estimated_cost_usd, 2)
    # (224812, 188, 1.12)
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any

import numpy as np

from memlane.embed.bedrock import (
    BATCH_PRICE_PER_1K_TOKENS_USD,
    DIMENSIONS,
    MODEL_ID,
    blank_vector,
    cap_text,
    make_session,
    model_input,
)
from memlane.embed.feed import batched
from memlane.errors import InvalidArgumentError, MemlaneError

__all__ = [
    "BatchJob",
    "BatchJobError",
    "BatchResult",
    "make_batch_clients",
    "prepare_jobs",
    "read_job_output",
    "run_batch_embedding",
    "run_jobs",
    "submit_job",
    "wait_for_job",
    "write_job_input",
]

# Bedrock service quotas (defaults, adjustable per account): "Minimum number of records per
# batch inference job", "Records per batch inference job", "Records per input file per batch
# inference job", and the 1 GB "Batch inference input file size" (parts stay well below it so
# that each is uploaded from memory in one request).
MIN_RECORDS_PER_JOB = 100
MAX_RECORDS_PER_JOB = 50_000
MAX_RECORDS_PER_FILE = 50_000
MAX_BYTES_PER_FILE = 256 << 20
# "Batch inference jobs in progress or submitted per model" is small; more jobs wait their turn.
MAX_CONCURRENT_JOBS = 10
DONE_STATUSES = frozenset({"Completed", "PartiallyCompleted"})
FAILED_STATUSES = frozenset({"Failed", "Stopped", "Expired"})

Sink = Callable[[dict[str, np.ndarray]], None]
"""Receives slices of ``{content_hash: (1, dim) vector}`` as they are read (e.g. ``cache.put_many``)."""


class BatchJobError(MemlaneError):
    """A batch job failed, stopped, expired or timed out, or its output does not match its input.

    Example:
        >>> raise BatchJobError("batch job memlane-x Failed: no access to the output bucket")
        Traceback (most recent call last):
        memlane.embed.bedrock_batch.BatchJobError: batch job memlane-x Failed: no access to the output bucket
    """


@dataclass(frozen=True)
class BatchJob:
    """One model-invocation job and where its files are; JSON-ready (``asdict``) to resume later.

    Attributes:
        name: Job name, also its idempotency token.
        input_uri: S3 folder of the input JSONL parts.
        output_uri: S3 folder Bedrock writes to.
        records_uri: S3 object listing the content hashes in record order.
        records: Records in the job.
        dimensions: Vector dimension requested.
        arn: Job ARN once submitted.

    Example:
        >>> job = BatchJob("memlane-1", "s3://b/p/memlane-1/input/", "s3://b/p/memlane-1/output/",
        ...                "s3://b/p/memlane-1/records.json", 120, 256)
        >>> BatchJob(**asdict(job)) == job
        True
    """

    name: str
    input_uri: str
    output_uri: str
    records_uri: str
    records: int
    dimensions: int
    arn: str | None = None


@dataclass
class BatchResult:
    """What a batch backfill produced.

    Attributes:
        vectors: ``{content_hash: (1, dim) float32 unit vector}``; empty when a sink took them.
        embedded: Vectors produced (handed to the sink or kept in ``vectors``).
        missing: ``{content_hash: why}`` for texts without a vector (record errors, or too few
            left over for a job); embed these on demand.
        input_tokens: Tokens billed (sum of ``inputTextTokenCount``).
        jobs: The jobs run.

    Example:
        >>> BatchResult(input_tokens=10_000_000).estimated_cost_usd
        0.1
    """

    vectors: dict[str, np.ndarray] = field(default_factory=dict)
    embedded: int = 0
    missing: dict[str, str] = field(default_factory=dict)
    input_tokens: int = 0
    jobs: list[BatchJob] = field(default_factory=list)

    @property
    def estimated_cost_usd(self) -> float:
        """``input_tokens`` at the batch price: an estimate, not a bill."""
        return self.input_tokens / 1000 * BATCH_PRICE_PER_1K_TOKENS_USD

    def merge(self, other: BatchResult) -> None:
        """Add another job's result to this one."""
        self.vectors.update(other.vectors)
        self.embedded += other.embedded
        self.missing.update(other.missing)
        self.input_tokens += other.input_tokens
        self.jobs.extend(other.jobs)


def _split_uri(uri: str) -> tuple[str, str]:
    if not uri.startswith("s3://"):
        raise InvalidArgumentError(f"not an S3 URI: {uri!r}")
    bucket, _, key = uri[5:].partition("/")
    return bucket, key


def _record_id(index: int) -> str:
    # Bedrock's examples use 11 alphanumeric characters; the index fits 10 digits.
    return f"R{index:010d}"


def write_job_input(
    s3: Any,
    items: Iterable[tuple[str, str]],
    *,
    bucket: str,
    prefix: str,
    job_name: str,
    dimensions: int = 1024,
    normalize: bool = True,
    max_records_per_file: int = MAX_RECORDS_PER_FILE,
    max_bytes_per_file: int = MAX_BYTES_PER_FILE,
) -> BatchJob:
    """Upload one job's input: JSONL parts and the record-to-hash list.

    Texts are capped to the model's limits exactly as on demand; pass no blank texts
    (Titan rejects them; :func:`prepare_jobs` filters them out).

    Args:
        s3: An S3 client.
        items: ``(content_hash, text)`` pairs, hashes unique.
        bucket: S3 bucket.
        prefix: Key prefix; the job's files go under ``<prefix>/<job_name>/``.
        job_name: The job's name.
        dimensions: 1024, 512 or 256.
        normalize: Ask for unit vectors.
        max_records_per_file: Records per JSONL part.
        max_bytes_per_file: Bytes per JSONL part (soft: a part closes once it reaches this).

    Returns:
        The job, not yet submitted.

    Example, with an S3 client::

        job = write_job_input(s3, [("ab12", "hi")], bucket="b", prefix="memlane", job_name="j1")
        job.input_uri
        # 's3://b/memlane/j1/input/'
    """
    if dimensions not in DIMENSIONS:
        raise InvalidArgumentError(f"Titan V2 dimensions must be one of {DIMENSIONS}, got {dimensions}")
    base = f"{prefix.strip('/')}/{job_name}" if prefix.strip("/") else job_name
    hashes: list[str] = []
    part: list[bytes] = []
    part_bytes = parts = 0

    def flush() -> None:
        nonlocal part, part_bytes, parts
        s3.put_object(Bucket=bucket, Key=f"{base}/input/part-{parts:05d}.jsonl", Body=b"".join(part))
        parts += 1
        part, part_bytes = [], 0

    for content_hash, text in items:
        record = {"recordId": _record_id(len(hashes)), "modelInput": model_input(cap_text(text), dimensions, normalize)}
        line = json.dumps(record).encode() + b"\n"
        hashes.append(content_hash)
        part.append(line)
        part_bytes += len(line)
        if len(part) >= max_records_per_file or part_bytes >= max_bytes_per_file:
            flush()
    if part:
        flush()
    s3.put_object(Bucket=bucket, Key=f"{base}/records.json", Body=json.dumps(hashes).encode())
    return BatchJob(
        name=job_name,
        input_uri=f"s3://{bucket}/{base}/input/",
        output_uri=f"s3://{bucket}/{base}/output/",
        records_uri=f"s3://{bucket}/{base}/records.json",
        records=len(hashes),
        dimensions=dimensions,
    )


def submit_job(
    bedrock: Any,
    job: BatchJob,
    role_arn: str,
    *,
    timeout_hours: int | None = None,
    tags: Mapping[str, str] | None = None,
) -> BatchJob:
    """Create the model-invocation job (idempotent: the job name is the client request token).

    Args:
        bedrock: A ``bedrock`` (control-plane) client.
        job: The job from :func:`write_job_input`.
        role_arn: IAM service role Bedrock assumes to read the input and write the output.
        timeout_hours: Job timeout, 24 to 168 hours (service default if ``None``).
        tags: Tags for the job.

    Returns:
        ``job`` with its ARN.

    Example, with AWS credentials::

        submit_job(bedrock, job, "arn:aws:iam::123456789012:role/BedrockBatch").arn
        # 'arn:aws:bedrock:us-east-1:123456789012:model-invocation-job/abcd1234'
    """
    request: dict[str, Any] = {
        "jobName": job.name,
        "roleArn": role_arn,
        "clientRequestToken": job.name,
        "modelId": MODEL_ID,
        "inputDataConfig": {"s3InputDataConfig": {"s3Uri": job.input_uri, "s3InputFormat": "JSONL"}},
        "outputDataConfig": {"s3OutputDataConfig": {"s3Uri": job.output_uri}},
    }
    if timeout_hours is not None:
        request["timeoutDurationInHours"] = timeout_hours
    if tags:
        request["tags"] = [{"key": k, "value": v} for k, v in tags.items()]
    response = bedrock.create_model_invocation_job(**request)
    return BatchJob(**{**asdict(job), "arn": response["jobArn"]})


def wait_for_job(
    bedrock: Any,
    job: BatchJob,
    *,
    poll_seconds: float = 60.0,
    timeout_seconds: float | None = None,
    sleep: Callable[[float], None] = time.sleep,
    on_status: Callable[[BatchJob, dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Poll ``get_model_invocation_job`` until the job ends.

    Args:
        bedrock: A ``bedrock`` (control-plane) client.
        job: A submitted job.
        poll_seconds: Pause between polls.
        timeout_seconds: Give up after polling this long (``None``: wait for the service's own timeout).
        sleep: How to pause.
        on_status: Called with the job and each description (progress display).

    Returns:
        The last description (status ``Completed`` or ``PartiallyCompleted``).

    Raises:
        BatchJobError: On ``Failed``, ``Stopped`` or ``Expired``, or on timeout.
        memlane.errors.InvalidArgumentError: If the job was never submitted.

    Example, with AWS credentials::

        wait_for_job(bedrock, job, poll_seconds=300)["status"]
        # 'Completed'
    """
    if job.arn is None:
        raise InvalidArgumentError(f"batch job {job.name} was not submitted")
    waited = 0.0
    while True:
        description: dict[str, Any] = bedrock.get_model_invocation_job(jobIdentifier=job.arn)
        status = description.get("status", "")
        if on_status is not None:
            on_status(job, description)
        if status in DONE_STATUSES:
            return description
        if status in FAILED_STATUSES:
            raise BatchJobError(f"batch job {job.name} {status}: {description.get('message') or 'no message'}")
        if timeout_seconds is not None and waited >= timeout_seconds:
            raise BatchJobError(f"batch job {job.name} still {status} after {waited:.0f} s; its ARN is {job.arn}")
        sleep(poll_seconds)
        waited += poll_seconds


def _output_keys(s3: Any, output_uri: str) -> Iterator[tuple[str, str]]:
    bucket, prefix = _split_uri(output_uri)
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for obj in page.get("Contents", []):
            # One ``.jsonl.out`` per input part; ``manifest.json.out`` is only a summary.
            if obj["Key"].endswith(".jsonl.out"):
                yield bucket, obj["Key"]


def read_job_output(s3: Any, job: BatchJob, *, sink: Sink | None = None, flush_every: int = 5000) -> BatchResult:
    """Read a finished job's output and join it back to content hashes by ``recordId``.

    Args:
        s3: An S3 client.
        job: A finished job.
        sink: If given, receives the vectors in slices of ``flush_every`` (and the result
            keeps none), so a 50,000-record job never sits in memory at once.
        flush_every: Slice size for ``sink``.

    Returns:
        Vectors (unit rows, float32 ``(1, dim)``), record errors and missing records in
        ``missing``, and the tokens billed.

    Raises:
        BatchJobError: If an output record's id is not one of the job's records.

    Example, with an S3 client and a finished job::

        result = read_job_output(s3, job)
        result.embedded, result.missing
        # (119, {'9f2c...': '400: Malformed input request'})
    """
    bucket, key = _split_uri(job.records_uri)
    hashes: list[str] = json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
    result = BatchResult(jobs=[job])
    pending: dict[str, np.ndarray] = {}
    seen = bytearray(len(hashes))

    def flush() -> None:
        if sink is not None and pending:
            sink(dict(pending))
        else:
            result.vectors.update(pending)
        pending.clear()

    for out_bucket, out_key in _output_keys(s3, job.output_uri):
        for line in s3.get_object(Bucket=out_bucket, Key=out_key)["Body"].iter_lines():
            if not line.strip():
                continue
            record = json.loads(line)
            record_id = str(record.get("recordId", ""))
            index = int(record_id[1:]) if record_id[:1] == "R" and record_id[1:].isdigit() else -1
            if not 0 <= index < len(hashes):
                raise BatchJobError(f"{out_key}: record {record_id!r} is not one of job {job.name}'s records")
            content_hash = hashes[index]
            seen[index] = 1
            output = record.get("modelOutput")
            if output is None:
                error = record.get("error") or {}
                code, message = error.get("errorCode", "?"), error.get("errorMessage", "no output")
                result.missing[content_hash] = f"{code}: {message}"
                continue
            result.input_tokens += int(output.get("inputTextTokenCount", 0))
            vector = np.asarray(output.get("embedding", ()), dtype=np.float32)
            norm = float(np.linalg.norm(vector)) if vector.shape == (job.dimensions,) else 0.0
            if not np.isfinite(norm) or norm == 0.0:
                result.missing[content_hash] = f"invalid embedding of shape {vector.shape}"
                continue
            pending[content_hash] = (vector / norm).reshape(1, -1)
            result.embedded += 1
            if len(pending) >= flush_every:
                flush()
    flush()
    for index, content_hash in enumerate(hashes):
        if not seen[index]:
            result.missing[content_hash] = "no output record"
    return result


def make_batch_clients(region: str | None = None, profile: str | None = None) -> tuple[Any, Any]:
    """``(s3, bedrock)`` clients for batch jobs, with botocore's standard retries (4 attempts).

    Example:
        >>> s3, bedrock = make_batch_clients(region="us-east-1")  # no call, no credentials needed
        >>> s3.meta.service_model.service_name, bedrock.meta.service_model.service_name
        ('s3', 'bedrock')
    """
    from botocore.config import Config

    session = make_session(region, profile)
    config = Config(retries={"mode": "standard", "total_max_attempts": 4})
    return session.client("s3", config=config), session.client("bedrock", config=config)


def prepare_jobs(
    s3: Any,
    texts: Iterable[tuple[str, str]] | Mapping[str, str],
    *,
    bucket: str,
    prefix: str,
    dimensions: int = 1024,
    normalize: bool = True,
    run_id: str | None = None,
    max_records_per_job: int = MAX_RECORDS_PER_JOB,
    min_records_per_job: int = MIN_RECORDS_PER_JOB,
) -> tuple[list[BatchJob], BatchResult]:
    """Phase 1: stream texts into job inputs on S3 (nothing is submitted).

    Texts are read once, in order, and cut into jobs of ``max_records_per_job``, so a
    generator over a huge archive needs memory for one input part, not the archive. A last
    job smaller than ``min_records_per_job`` (Bedrock's minimum) is not written: its texts
    go to the result's ``missing`` for on-demand embedding. Blank texts get the fixed vector
    the on-demand embedder gives them, without a record.

    Args:
        s3: An S3 client.
        texts: ``(content_hash, text)`` pairs or a mapping hash -> text.
        bucket: S3 bucket (in the region the jobs will run in).
        prefix: Key prefix under which each job gets a folder.
        dimensions: 1024, 512 or 256 (match the on-demand embedder whose cache this fills).
        normalize: Ask for unit vectors (returned vectors are unit either way).
        run_id: Part of the job names (default: the UTC time), so a new run makes new jobs.
        max_records_per_job: Records per job (Bedrock quota, default 50,000).
        min_records_per_job: Fewest records Bedrock accepts in a job (quota, default 100).

    Returns:
        The jobs to run, and a result holding the blank texts' vectors and the leftovers.

    Raises:
        memlane.errors.InvalidArgumentError: On bad limits or dimensions.

    Example, with an S3 client::

        jobs, partial = prepare_jobs(s3, texts_by_hash, bucket="b", prefix="memlane")
        [j.records for j in jobs], len(partial.missing)
        # ([50000, 50000, 12345], 0)
    """
    if dimensions not in DIMENSIONS:
        raise InvalidArgumentError(f"Titan V2 dimensions must be one of {DIMENSIONS}, got {dimensions}")
    if not 1 <= min_records_per_job <= max_records_per_job:
        raise InvalidArgumentError("need 1 <= min_records_per_job <= max_records_per_job")
    run_id = run_id or datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    items = texts.items() if isinstance(texts, Mapping) else texts
    result = BatchResult()
    blank = blank_vector(dimensions).reshape(1, -1)

    def sendable() -> Iterator[tuple[str, str]]:
        for content_hash, text in items:
            if text.strip():
                yield content_hash, text
            else:
                result.vectors[content_hash] = blank
                result.embedded += 1

    jobs: list[BatchJob] = []
    for n, chunk in enumerate(batched(sendable(), max_records_per_job)):
        if len(chunk) < min_records_per_job:
            why = f"only {len(chunk)} record(s) left for a job; Bedrock needs {min_records_per_job}: embed on demand"
            result.missing.update({h: why for h, _ in chunk})
            break
        digest = hashlib.sha256("\n".join(h for h, _ in chunk).encode()).hexdigest()[:8]
        jobs.append(
            write_job_input(
                s3,
                chunk,
                bucket=bucket,
                prefix=prefix,
                job_name=f"memlane-{run_id}-{digest}-{n:03d}",
                dimensions=dimensions,
                normalize=normalize,
            )
        )
    return jobs, result


def run_jobs(
    jobs: Iterable[BatchJob],
    *,
    role_arn: str,
    s3: Any,
    bedrock: Any,
    max_concurrent_jobs: int = MAX_CONCURRENT_JOBS,
    poll_seconds: float = 60.0,
    timeout_seconds: float | None = None,
    sink: Sink | None = None,
    sleep: Callable[[float], None] = time.sleep,
    on_status: Callable[[BatchJob, dict[str, Any]], None] | None = None,
    on_submit: Callable[[BatchJob], None] | None = None,
    on_finish: Callable[[BatchJob, BatchResult], None] | None = None,
) -> BatchResult:
    """Phase 2: submit prepared jobs, wait for them and read their outputs.

    At most ``max_concurrent_jobs`` are submitted and unfinished at once; the next goes in
    when the oldest finishes. A job that already has an ARN (resumed from a saved
    :class:`BatchJob`) is waited for, not submitted again.

    Args:
        jobs: Jobs from :func:`prepare_jobs` (or saved ones).
        role_arn: IAM service role for Bedrock batch inference.
        s3: An S3 client.
        bedrock: A ``bedrock`` (control-plane) client.
        max_concurrent_jobs: Jobs in flight at once (Bedrock quota per model).
        poll_seconds: Pause between status polls.
        timeout_seconds: Per-job wait limit (``None``: the service's own timeout).
        sink: Receives vectors as they are read (else they are returned in ``vectors``).
        sleep: How to pause between polls.
        on_status: Called with each job status description.
        on_submit: Called with each job once it has an ARN (e.g. to save it for resuming).
        on_finish: Called with each job and its result once its output is read (and sunk).

    Returns:
        Vectors (or a count, with ``sink``), record errors in ``missing``, tokens billed.

    Raises:
        BatchJobError: If a job fails, stops, expires or times out.

    Example, with AWS credentials and an S3 bucket Bedrock may read and write::

        run_jobs(jobs, role_arn=role, s3=s3, bedrock=bedrock, sink=store).embedded
        # 112345
    """
    if max_concurrent_jobs < 1:
        raise InvalidArgumentError("max_concurrent_jobs must be >= 1")
    result = BatchResult()
    running: list[BatchJob] = []

    def finish_oldest() -> None:
        job = running.pop(0)
        wait_for_job(
            bedrock, job, poll_seconds=poll_seconds, timeout_seconds=timeout_seconds, sleep=sleep, on_status=on_status
        )
        finished = read_job_output(s3, job, sink=sink)
        if on_finish is not None:
            on_finish(job, finished)
        result.merge(finished)

    for job in jobs:
        if len(running) >= max_concurrent_jobs:
            finish_oldest()
        if job.arn is None:
            job = submit_job(bedrock, job, role_arn)
        if on_submit is not None:
            on_submit(job)
        running.append(job)
    while running:
        finish_oldest()
    return result


def run_batch_embedding(
    texts: Iterable[tuple[str, str]] | Mapping[str, str],
    *,
    bucket: str,
    prefix: str,
    role_arn: str,
    dimensions: int = 1024,
    normalize: bool = True,
    region: str | None = None,
    profile: str | None = None,
    run_id: str | None = None,
    max_records_per_job: int = MAX_RECORDS_PER_JOB,
    min_records_per_job: int = MIN_RECORDS_PER_JOB,
    max_concurrent_jobs: int = MAX_CONCURRENT_JOBS,
    poll_seconds: float = 60.0,
    timeout_seconds: float | None = None,
    sink: Sink | None = None,
    s3: Any = None,
    bedrock: Any = None,
    sleep: Callable[[float], None] = time.sleep,
    on_status: Callable[[BatchJob, dict[str, Any]], None] | None = None,
) -> BatchResult:
    """Embed many texts with Bedrock batch inference, end to end: :func:`prepare_jobs` then :func:`run_jobs`.

    Args:
        texts: ``(content_hash, text)`` pairs or a mapping hash -> text; may be a generator.
        bucket: S3 bucket for input and output (in the jobs' region).
        prefix: Key prefix under which each job gets a folder.
        role_arn: IAM service role for Bedrock batch inference.
        dimensions: 1024, 512 or 256.
        normalize: Ask for unit vectors (returned vectors are unit either way).
        region: AWS region for clients built here.
        profile: AWS profile for clients built here.
        run_id: Part of the job names (default: the UTC time).
        max_records_per_job: Records per job.
        min_records_per_job: Fewest records Bedrock accepts in a job.
        max_concurrent_jobs: Jobs in flight at once.
        poll_seconds: Pause between status polls.
        timeout_seconds: Per-job wait limit.
        sink: Receives vectors as they are read (else they are returned in ``vectors``).
        s3: S3 client (default: :func:`make_batch_clients`).
        bedrock: ``bedrock`` control-plane client (same default).
        sleep: How to pause between polls.
        on_status: Called with each job status description.

    Returns:
        Vectors (or a count, with ``sink``), texts left to embed on demand, tokens billed.

    Raises:
        BatchJobError: If a job fails, stops, expires or times out.
        memlane.errors.InvalidArgumentError: On bad limits or dimensions.

    Example, with AWS credentials and an S3 bucket Bedrock may read and write::

        run_batch_embedding({"ab12": "hello"}, bucket="b", prefix="p", role_arn=role).missing
        # {'ab12': 'only 1 record(s) left for a job; Bedrock needs 100: embed on demand'}
    """
    if s3 is None or bedrock is None:
        built_s3, built_bedrock = make_batch_clients(region, profile)
        s3, bedrock = s3 or built_s3, bedrock or built_bedrock
    jobs, result = prepare_jobs(
        s3,
        texts,
        bucket=bucket,
        prefix=prefix,
        dimensions=dimensions,
        normalize=normalize,
        run_id=run_id,
        max_records_per_job=max_records_per_job,
        min_records_per_job=min_records_per_job,
    )
    result.merge(
        run_jobs(
            jobs,
            role_arn=role_arn,
            s3=s3,
            bedrock=bedrock,
            max_concurrent_jobs=max_concurrent_jobs,
            poll_seconds=poll_seconds,
            timeout_seconds=timeout_seconds,
            sink=sink,
            sleep=sleep,
            on_status=on_status,
        )
    )
    if sink is not None and result.vectors:
        sink(dict(result.vectors))
        result.vectors.clear()
    return result
