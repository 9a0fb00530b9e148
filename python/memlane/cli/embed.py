"""``memlane embed``: vectors for the chunks that have none, locally or by Bedrock batch inference.

Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="memlane")
    >>> add_parsers(parser.add_subparsers(dest="command"), [])
    >>> parser.parse_args(["embed", "--batch", "s3://bucket/prefix/"]).batch
    's3://bucket/prefix/'
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any

from memlane.cli import common
from memlane.cli.parser import device_option, embed_options
from memlane.cli_output import emit
from memlane.errors import InvalidArgumentError


def _cmd_embed(args: argparse.Namespace) -> int:
    from pathlib import Path

    from memlane.embed.batch_backfill import BatchRun

    if args.index:
        return _embed_batch_index(args)

    saved = BatchRun.load(Path(args.home).expanduser())
    if args.embed is None:
        # A batch run in progress names its embedder; resuming should not need it spelled out again.
        args.embed = _batch_spec(saved.embedder_id) if saved else "local"
    if args.batch or (saved and args.embed.startswith("bedrock")):
        return _embed_batch(args)
    if args.batch_role or args.batch_only:
        raise InvalidArgumentError("--batch-role and --batch-only go with --batch s3://bucket/prefix")
    mem = common.open_memory(args, args.embed)
    placement = common.device_placement(mem)
    bar = common.ProgressBar(enabled=sys.stderr.isatty() and not args.json)
    started = time.perf_counter()
    done = mem.embed_pending(progress=bar)
    seconds = time.perf_counter() - started
    d = {"chunks_embedded": done, "seconds": round(seconds, 3), **common.device_fields(placement)}
    emit(args, d, f"embedded {done} chunks in {seconds:.1f}s" + common.device_line(placement))
    return 0


def _batch_spec(embedder_id: str) -> str:
    """The ``--embed`` spec of a saved batch run's embedder (``bedrock/<model>/<dims>``)."""
    return f"bedrock:{embedder_id.rsplit('/', 1)[-1]}"


def _job_status_lines(args: argparse.Namespace) -> Any:
    """A batch run's ``on_status``: one line on stderr each time a job's status changes."""
    last: dict[str, str] = {}

    def on_status(job: Any, description: dict[str, Any]) -> None:
        status = description.get("status", "")
        if not args.json and last.get(job.name) != status:
            last[job.name] = status
            sys.stderr.write(f"batch job {job.name} ({job.records} records): {status}\n")

    return on_status


def _embed_batch(args: argparse.Namespace) -> int:
    from memlane.embed.bedrock_batch import make_batch_clients

    if not args.embed.startswith("bedrock"):
        raise InvalidArgumentError(
            f"--batch runs Bedrock batch inference: use --embed bedrock[:1024|512|256], not {args.embed}"
        )
    mem = common.open_memory(args, args.embed)
    s3, bedrock = make_batch_clients(args.aws_region or mem.embedder.region, args.aws_profile)
    on_status = _job_status_lines(args)
    report = mem.embed_batch(
        args.batch, args.batch_role, fill_on_demand=not args.batch_only, s3=s3, bedrock=bedrock,
        progress=common.ProgressBar(enabled=sys.stderr.isatty() and not args.json), poll_seconds=args.poll_seconds, on_status=on_status,
    )  # fmt: skip
    text = (
        f"{'resumed' if report.resumed else 'ran'} {report.jobs} batch jobs: {report.records} records, "
        f"{report.embedded} vectors to the cache, {len(report.failed)} failed, {report.leftover} left over; "
        f"{report.input_tokens:,} tokens, about ${report.estimated_cost_usd:.4f} at the batch list price\n"
        f"index: {report.chunks_embedded} chunks embedded ({report.embedded_on_demand} on demand), "
        f"{report.chunks_pending} still pending, in {report.seconds:.1f}s"
    )
    emit(args, report.to_dict(), text)
    return 0


def _embed_batch_index(args: argparse.Namespace) -> int:
    """``memlane --index URI embed --batch S3_URI --batch-role ARN``: a sharded index's bulk backfill on Ray."""
    from memlane.cluster import batch
    from memlane.cluster.storage import location
    from memlane.embed import make_embedder
    from memlane.embed.bedrock_batch import make_batch_clients

    # A sharded index is always filled from the cache alone: --batch-only changes nothing here.
    if args.embed is None:
        # A run in progress names its embedder; resuming should not need it spelled out again.
        from memlane.cluster.search import local_root

        saved = batch.saved_embedder(local_root(location(args.index).uri) / "batch")
        args.embed = _batch_spec(saved) if saved else "bedrock"
    if not args.embed.startswith("bedrock"):
        raise InvalidArgumentError(
            f"a sharded index is backfilled by Bedrock batch inference: use --embed bedrock[:1024|512|256], not {args.embed}"
        )
    embedder: Any = make_embedder(args.embed, region=args.aws_region, profile=args.aws_profile)
    s3, bedrock = make_batch_clients(args.aws_region or embedder.region, args.aws_profile)
    on_status = _job_status_lines(args)
    report = batch.embed_index_batch(
        args.index, args.batch, args.batch_role, embedder=embedder, ray_address=args.ray, s3=s3, bedrock=bedrock,
        poll_seconds=args.poll_seconds, on_status=on_status,
    )  # fmt: skip
    published = (
        f"published catalog version {report.generation}"
        if report.generation
        else "no shard to fill: catalog left as it was"
    )
    text = (
        f"{'resumed' if report.resumed else 'ran'} {report.jobs} batch jobs: {report.records} records, "
        f"{report.embedded} vectors, {len(report.failed)} failed, {report.leftover} left over; "
        f"{report.input_tokens:,} tokens, about ${report.estimated_cost_usd:.4f} at the batch list price\n"
        f"index: {report.packs} vector packs shared, {report.shards_filled} shards filled "
        f"({report.shards_resumed} resumed), {report.chunks_embedded} chunks embedded from the cache, "
        f"{report.chunks_pending} still pending; {published} in {report.seconds:.1f}s"
    )
    emit(args, report.to_dict(), text)
    return 0


def add_parsers(sub: Any, parents: Sequence[argparse.ArgumentParser]) -> None:
    """Add ``embed`` to the ``memlane`` parser."""
    p = sub.add_parser(
        "embed", parents=parents, help="embed chunks that have no vector yet (resumes an interrupted index)"
    )
    p.add_argument(
        "--resume", action="store_true", help="accepted for clarity: embedding always resumes where it stopped"
    )
    embed_options(p, "embedder (default: local, or the one of a batch run in progress)", default=None)
    p.add_argument(
        "--batch",
        metavar="S3_URI",
        help="Bedrock batch inference through s3://bucket/prefix (large archives; resumable)",
    )
    p.add_argument(
        "--batch-role", metavar="ARN", help="IAM service role Bedrock assumes to read and write the --batch location"
    )
    p.add_argument(
        "--batch-only",
        action="store_true",
        help="leave records the batch failed pending instead of embedding them on demand",
    )
    device_option(p)
    p.add_argument(
        "--poll-seconds", type=float, default=60.0, help="pause between batch job status checks (default 60)"
    )
    p.add_argument(
        "--ray",
        metavar="ADDRESS",
        default="local",
        help="with --index: the Ray cluster that reads and fills the shards: local (default), auto or an address",
    )
    p.set_defaults(func=_cmd_embed)
