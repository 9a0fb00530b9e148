"""Resumable Bedrock batch backfill of a home: pending chunks → batch jobs → the embedding cache.

For archives too large for on-demand calls. The run is one state file in the home,
``bedrock-batch.json``, rewritten atomically after every step (jobs prepared, each job
submitted, each job's output read), so an interrupted run — Ctrl-C, a closed laptop, a job
that takes a day — resumes where it stopped: submitted jobs are polled again, never
submitted twice, and finished jobs are not read twice.

Vectors go to the embedding cache under the on-demand Bedrock embedder's id (same model,
request body and capping), never straight into the index: :meth:`memlane.Memory.embed_batch`
then fills the index from the cache with the ordinary backfill, which makes no call for them.

A run in outline (it needs S3 and Bedrock, so this is prose rather than a doctest):
``BatchRun.start(home, embedder, "s3://my-bucket/memlane", role_arn, texts=pending_texts(writer,
cache, embedder.id), cache=cache, s3=s3)`` streams the job inputs and saves the state; then
``run.wait(cache=cache, s3=s3, bedrock=bedrock)`` submits, polls and joins the outputs, and its
report's ``failed`` maps each record a job returned no vector for to the reason
(``{'9f2c…': '400: Malformed input request'}``).

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> BatchRun.load(Path(tempfile.mkdtemp())) is None  # no run saved in this home
    True
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlane.embed.bedrock import BATCH_PRICE_PER_1K_TOKENS_USD
from memlane.embed.bedrock_batch import (
    FAILED_STATUSES,
    MAX_CONCURRENT_JOBS,
    MAX_RECORDS_PER_JOB,
    MIN_RECORDS_PER_JOB,
    BatchJob,
    BatchResult,
    prepare_jobs,
    run_jobs,
)
from memlane.errors import InvalidArgumentError, InvalidDataError
from memlane.report import Report

if TYPE_CHECKING:
    from memlane.embed.cache import EmbeddingCache

STATE_FILE = "bedrock-batch.json"
_STATE_VERSION = 1
# Chunks read from the index per slice while streaming texts to S3.
_TEXTS_PER_READ = 1000


def pending_texts(writer: Any, cache: EmbeddingCache, embedder_id: str) -> Iterator[tuple[str, str]]:
    """``(content_hash, text)`` of the home's chunks without vectors, once per hash, cache hits left out.

    Args:
        writer: An open ``_core.Writer`` of the home (holds its lock while this is read).
        cache: The embedding cache.
        embedder_id: Whose vectors count as hits.
    """
    pending = writer.pending_vectors()
    seen: set[str] = set()
    for start in range(0, len(pending), _TEXTS_PER_READ):
        rows = writer.chunk_texts([int(k) for k in pending[start : start + _TEXTS_PER_READ]])
        known = cache.known(embedder_id, (h for _, h, _ in rows))
        for _, content_hash, text in rows:
            if content_hash not in known and content_hash not in seen:
                seen.add(content_hash)
                yield content_hash, text


def _split_s3_uri(uri: str) -> tuple[str, str]:
    if not uri.startswith("s3://") or not uri[5:].split("/", 1)[0]:
        raise InvalidArgumentError(f"--batch needs an S3 location like s3://bucket/prefix, got {uri!r}")
    bucket, _, prefix = uri[5:].partition("/")
    return bucket, prefix.strip("/")


@dataclass
class BatchBackfillReport(Report):
    """What a batch backfill did.

    Attributes:
        resumed: A run saved in the home was continued.
        jobs: Batch jobs in the run.
        records: Texts sent in those jobs.
        embedded: Vectors put in the cache from job outputs (and blank texts).
        failed: ``{content_hash: why}`` for records the jobs returned no vector for.
        leftover: Texts too few for one more job (Bedrock's minimum), left to on-demand calls.
        input_tokens: Tokens billed by the jobs.
        chunks_embedded: Chunks of the home given vectors afterwards (from the cache, plus on demand).
        embedded_on_demand: Of those, texts embedded by on-demand calls (failed and leftover ones).
        chunks_pending: Chunks still without a vector.
        seconds: Wall time of this call.

    Example:
        >>> BatchBackfillReport(input_tokens=2_000_000).estimated_cost_usd
        0.02
    """

    resumed: bool = False
    jobs: int = 0
    records: int = 0
    embedded: int = 0
    failed: dict[str, str] = field(default_factory=dict)
    leftover: int = 0
    input_tokens: int = 0
    chunks_embedded: int = 0
    embedded_on_demand: int = 0
    chunks_pending: int = 0
    seconds: float = 0.0

    @property
    def estimated_cost_usd(self) -> float:
        """``input_tokens`` at the batch list price: an estimate, not a bill."""
        return self.input_tokens / 1000 * BATCH_PRICE_PER_1K_TOKENS_USD

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the CLI's ``--json`` shape), with the cost estimate."""
        return {**super().to_dict(), "estimated_cost_usd": round(self.estimated_cost_usd, 6)}


@dataclass
class BatchRun:
    """A batch backfill in progress, as saved in the home.

    Attributes:
        path: The state file.
        embedder_id: Cache key space the vectors go to (``bedrock/<model>/<dims>``).
        s3_uri: Where inputs and outputs live.
        role_arn: IAM service role Bedrock assumes.
        jobs: Every job of the run, with its ARN once submitted.
        finished: Names of the jobs whose output is in the cache.
        failed: Record errors of finished jobs.
        leftover: Hashes too few for a job.
        embedded: Vectors put in the cache so far.
        input_tokens: Tokens billed so far.
        retries: Jobs resubmitted after the service failed them.
    """

    path: Path
    embedder_id: str
    s3_uri: str
    role_arn: str
    jobs: list[BatchJob] = field(default_factory=list)
    finished: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    leftover: list[str] = field(default_factory=list)
    embedded: int = 0
    input_tokens: int = 0
    retries: int = 0

    @staticmethod
    def state_path(home: Path) -> Path:
        """Where a home keeps its batch run."""
        return home / STATE_FILE

    @classmethod
    def load(cls, home: Path) -> BatchRun | None:
        """The run saved in ``home``, or ``None``.

        Raises:
            memlane.errors.InvalidDataError: If the state file is unreadable (it is left in place; a ValueError).
        """
        path = cls.state_path(home)
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise InvalidDataError(f"{path}: unreadable batch state ({exc}); delete it to abandon the run") from None
        if raw.get("version") != _STATE_VERSION:
            raise InvalidDataError(f"{path}: batch state version {raw.get('version')!r} is not {_STATE_VERSION}")
        return cls(
            path=path,
            embedder_id=raw["embedder_id"],
            s3_uri=raw["s3_uri"],
            role_arn=raw["role_arn"],
            jobs=[BatchJob(**job) for job in raw["jobs"]],
            finished=list(raw["finished"]),
            failed=dict(raw["failed"]),
            leftover=list(raw["leftover"]),
            embedded=int(raw["embedded"]),
            input_tokens=int(raw["input_tokens"]),
            retries=int(raw["retries"]),
        )

    @classmethod
    def start(
        cls,
        home: Path,
        embedder: Any,
        s3_uri: str,
        role_arn: str,
        *,
        texts: Iterable[tuple[str, str]],
        cache: EmbeddingCache,
        s3: Any,
        max_records_per_job: int = MAX_RECORDS_PER_JOB,
        min_records_per_job: int = MIN_RECORDS_PER_JOB,
    ) -> BatchRun:
        """Write the job inputs to S3 (nothing submitted) and save the run in ``home``.

        Args:
            home: The memlane home.
            embedder: The on-demand :class:`~memlane.embed.bedrock.BedrockEmbedder` whose
                cache entries the jobs fill (gives dimensions and normalisation).
            s3_uri: ``s3://bucket/prefix`` for inputs and outputs, in the embedder's region.
            role_arn: IAM service role Bedrock assumes to read and write there.
            texts: ``(content_hash, text)`` to embed (see :func:`pending_texts`).
            cache: Receives the blank texts' fixed vectors at once.
            s3: An S3 client.
            max_records_per_job: Records per job.
            min_records_per_job: Fewest records Bedrock accepts in a job.

        Raises:
            memlane.errors.InvalidArgumentError: On a malformed S3 URI or role, or bad limits (a ValueError).
        """
        bucket, prefix = _split_s3_uri(s3_uri)
        if not role_arn.startswith("arn:"):
            raise InvalidArgumentError(
                f"--batch-role needs an IAM role ARN (arn:aws:iam::<account>:role/<name>), got {role_arn!r}"
            )
        jobs, partial = prepare_jobs(
            s3, texts, bucket=bucket, prefix=prefix, dimensions=embedder.dim, normalize=embedder.normalize,
            max_records_per_job=max_records_per_job, min_records_per_job=min_records_per_job,
        )  # fmt: skip
        if partial.vectors:
            cache.put_many(embedder.id, partial.vectors)
        run = cls(
            path=cls.state_path(home), embedder_id=embedder.id, s3_uri=s3_uri, role_arn=role_arn,
            jobs=jobs, leftover=sorted(partial.missing), embedded=partial.embedded,
        )  # fmt: skip
        run.save()
        return run

    def summary(self) -> dict[str, Any]:
        """What ``memlane status`` shows of a run in progress."""
        return {
            "state": str(self.path),
            "embedder_id": self.embedder_id,
            "s3_uri": self.s3_uri,
            "jobs": len(self.jobs),
            "jobs_submitted": sum(j.arn is not None for j in self.jobs),
            "jobs_finished": len(self.finished),
            "records": sum(j.records for j in self.jobs),
        }

    def save(self) -> None:
        """Write the state atomically (a crash leaves the old or the new file, never half of one)."""
        state = {
            "version": _STATE_VERSION,
            "embedder_id": self.embedder_id,
            "s3_uri": self.s3_uri,
            "role_arn": self.role_arn,
            "jobs": [asdict(job) for job in self.jobs],
            "finished": self.finished,
            "failed": self.failed,
            "leftover": self.leftover,
            "embedded": self.embedded,
            "input_tokens": self.input_tokens,
            "retries": self.retries,
        }
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(state, f)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def _replace(self, job: BatchJob) -> None:
        self.jobs = [job if j.name == job.name else j for j in self.jobs]
        self.save()

    def _finish(self, job: BatchJob, result: BatchResult) -> None:
        self.finished.append(job.name)
        self.failed.update(result.missing)
        self.embedded += result.embedded
        self.input_tokens += result.input_tokens
        self.save()

    def _requeue_if_failed(self, job: BatchJob, description: dict[str, Any]) -> None:
        # A failed job stays failed: the next run submits its (still uploaded) input again under
        # a new name, which is also a new idempotency token.
        if description.get("status") in FAILED_STATUSES:
            self.retries += 1
            self.jobs = [
                BatchJob(**{**asdict(j), "name": f"{j.name.split('-retry')[0]}-retry{self.retries}", "arn": None})
                if j.name == job.name
                else j
                for j in self.jobs
            ]
            self.save()

    def wait(
        self,
        *,
        cache: EmbeddingCache,
        s3: Any,
        bedrock: Any,
        max_concurrent_jobs: int = MAX_CONCURRENT_JOBS,
        poll_seconds: float = 60.0,
        timeout_seconds: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
        on_status: Callable[[BatchJob, dict[str, Any]], None] | None = None,
    ) -> BatchBackfillReport:
        """Submit what is not submitted, poll what runs, read finished outputs into the cache.

        The state is saved after every submission and every job read, so an interruption
        loses nothing; a run whose jobs are all read deletes its state file.

        Raises:
            BatchJobError: If a job fails, stops, expires or times out (the run is kept: a
                failed job is resubmitted by the next call, a timed-out one polled again).
        """

        def status(job: BatchJob, description: dict[str, Any]) -> None:
            self._requeue_if_failed(job, description)
            if on_status is not None:
                on_status(job, description)

        run_jobs(
            [j for j in self.jobs if j.name not in self.finished],
            role_arn=self.role_arn, s3=s3, bedrock=bedrock, max_concurrent_jobs=max_concurrent_jobs,
            poll_seconds=poll_seconds, timeout_seconds=timeout_seconds,
            sink=lambda vectors: cache.put_many(self.embedder_id, vectors),
            sleep=sleep, on_status=status, on_submit=self._replace, on_finish=self._finish,
        )  # fmt: skip
        self.path.unlink(missing_ok=True)
        return BatchBackfillReport(
            jobs=len(self.jobs),
            records=sum(j.records for j in self.jobs),
            embedded=self.embedded,
            failed=dict(self.failed),
            leftover=len(self.leftover),
            input_tokens=self.input_tokens,
        )
