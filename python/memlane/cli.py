"""The ``memlane`` command line: a thin shell over :class:`memlane.Memory`.

Every command takes ``--home DIR`` and ``--json`` (one JSON document on stdout). User errors
print one line on stderr and exit with status 2; no tracebacks.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any

from memlane._paths import TRANSCRIPT_FORMATS, agent_transcript_dirs, default_home
from memlane.cli_output import emit
from memlane.events import format_summary
from memlane.knowledge import library_dirs
from memlane.ranking.relevance import FLOOR

_FORMATS = [*TRANSCRIPT_FORMATS, "markdown"]


class _Bar:
    """A one-line progress bar on stderr (only when stderr is a terminal)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.started: dict[str, float] = {}
        self.last = 0.0

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.enabled or total <= 0:
            return
        now = time.monotonic()
        start = self.started.setdefault(stage, now)
        if done < total and now - self.last < 0.1:
            return
        self.last = now
        frac = min(done / total, 1.0)
        filled = int(frac * 30)
        if stage == "parse":
            amount = f"{done / 1e6:.1f}/{total / 1e6:.1f} MB"
        else:
            amount = f"{done}/{total} chunks"
        eta = ""
        if 0 < frac < 1 and now > start:
            eta = f" ETA {(now - start) * (1 - frac) / frac:.0f}s"
        sys.stderr.write(f"\r{stage:<5} [{'#' * filled}{'.' * (30 - filled)}] {frac:4.0%} {amount}{eta}\x1b[K")
        if done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def _open(args: argparse.Namespace, embedder: str) -> Any:
    import memlane

    spec: Any = embedder
    if embedder.startswith("bedrock"):
        from memlane.embed import make_embedder

        spec = make_embedder(embedder, region=args.aws_region, profile=args.aws_profile, concurrency=args.concurrency)
    return memlane.open(args.home, embedder=spec, quantization=getattr(args, "quantization", "f16"))


def _cmd_index(args: argparse.Namespace) -> int:
    paths = args.paths or [str(p) for p in (*agent_transcript_dirs(), *library_dirs(args.home))]
    if not paths:
        raise ValueError("no transcript or library folders found (~/.claude/projects, ~/.codex/sessions, $MEMLANE_LIBRARY, …): name the paths to index")
    mem = _open(args, args.embed)
    bar = _Bar(enabled=sys.stderr.isatty() and not args.json)
    report = mem.index(paths, embed=args.embed != "none", format=args.format, progress=bar)
    d = report.to_dict()
    skipped = ", ".join(f"{k}: {v}" for k, v in sorted(report.records_skipped.items())) or "none"
    text = (
        f"indexed {report.files_indexed} of {report.files_seen} files ({report.bytes_parsed / 1e6:.1f} MB) "
        f"in {report.seconds:.2f}s: +{report.chunks_added} chunks, -{report.chunks_removed}, "
        f"{report.chunks_embedded} embedded ({report.embed_cache_hits} from cache); skipped records: {skipped}"
    )
    if report.embed_usage:
        u = report.embed_usage
        text += (
            f"\nbedrock: {u['input_tokens']:,} tokens billed over {u['requests']:,} requests ({u['retries']} retries, "
            f"{u['capped_texts']} capped), about ${u['estimated_cost_usd']:.4f} at ${u['price_per_1k_tokens_usd']}/1k tokens "
            "(list price, may change)"
        )
    emit(args, d, text)
    return 0


def _format_hit(i: int, hit: Any, snippet: str) -> str:
    when = hit.timestamp[:16].replace("T", " ") if hit.timestamp else "undated"
    if hit.source == "knowledge":
        where = f"{hit.heading} · lines {hit.meta.get('line_start')}-{hit.meta.get('line_end')} · {when}"
    else:
        where = f"{hit.session_id} · turns {hit.turn_start}-{hit.turn_end} · {when}"
    scores = " ".join(f"{k}={v:.2f}" for k, v in {"relevance": hit.relevance, **hit.scores}.items() if v is not None)
    earlier = f"\n   earlier statement: superseded by {hit.superseded_by}" if hit.superseded_by else ""
    return f"{i}. [{hit.score:.3f} {scores}] {hit.id} {where}\n   {hit.path}{earlier}\n   {snippet}"


def _cmd_search(args: argparse.Namespace) -> int:
    if args.k < 1:
        raise ValueError("-k must be at least 1")
    mem = _open(args, args.embed)
    hits = mem.search(
        args.query,
        k=args.k,
        sources=args.source or None,
        session_id=args.session,
        since=args.since,
        until=args.until,
        fusion=args.fusion,
        threshold=args.threshold,
        recency=args.recency,
        temporal=args.temporal,
    )
    # The passage that matched, not the chunk's first lines: an error at a chunk's end shows.
    snippets = mem.snippets(args.query, hits)
    text = "\n".join(_format_hit(i, h, s) for i, (h, s) in enumerate(zip(hits, snippets), 1)) or "nothing relevant in memory for this query"
    emit(args, [h.to_dict() for h in hits], text)
    return 0


def _cmd_recall(args: argparse.Namespace) -> int:
    if args.max_tokens < 1:
        raise ValueError("--max-tokens must be at least 1")
    mem = _open(args, args.embed)
    result = mem.recall(args.query, max_tokens=args.max_tokens, half_life_days=args.half_life, include_brain=not args.no_brain)
    if not result:
        sys.stderr.write("memlane recall: nothing relevant in memory for this query\n")
        if args.json:
            emit(args, result.to_dict(), "")
        return 0
    emit(args, result.to_dict(), result.text.rstrip("\n"))
    return 0


def _cmd_embed(args: argparse.Namespace) -> int:
    from pathlib import Path

    from memlane.embed.batch_backfill import BatchRun

    saved = BatchRun.load(Path(args.home).expanduser())
    if args.embed is None:
        # A batch run in progress names its embedder; resuming should not need it spelled out again.
        args.embed = f"bedrock:{saved.embedder_id.rsplit('/', 1)[-1]}" if saved else "local"
    if args.batch or (saved and args.embed.startswith("bedrock")):
        return _embed_batch(args)
    if args.batch_role or args.batch_only:
        raise ValueError("--batch-role and --batch-only go with --batch s3://bucket/prefix")
    mem = _open(args, args.embed)
    bar = _Bar(enabled=sys.stderr.isatty() and not args.json)
    started = time.perf_counter()
    done = mem.embed_pending(progress=bar)
    seconds = time.perf_counter() - started
    emit(args, {"chunks_embedded": done, "seconds": round(seconds, 3)}, f"embedded {done} chunks in {seconds:.1f}s")
    return 0


def _embed_batch(args: argparse.Namespace) -> int:
    from memlane.embed.bedrock_batch import make_batch_clients

    if not args.embed.startswith("bedrock"):
        raise ValueError(f"--batch runs Bedrock batch inference: use --embed bedrock[:1024|512|256], not {args.embed}")
    mem = _open(args, args.embed)
    s3, bedrock = make_batch_clients(args.aws_region or mem.embedder.region, args.aws_profile)
    last: dict[str, str] = {}

    def on_status(job: Any, description: dict[str, Any]) -> None:
        status = description.get("status", "")
        if not args.json and last.get(job.name) != status:
            last[job.name] = status
            sys.stderr.write(f"batch job {job.name} ({job.records} records): {status}\n")

    report = mem.embed_batch(
        args.batch, args.batch_role, fill_on_demand=not args.batch_only, s3=s3, bedrock=bedrock,
        progress=_Bar(enabled=sys.stderr.isatty() and not args.json), poll_seconds=args.poll_seconds, on_status=on_status,
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


def _cmd_status(args: argparse.Namespace) -> int:
    mem = _open(args, "none")
    status = mem.status()
    cache = status["embedding_cache"]
    text = (
        f"home        {status['home']}\n"
        f"files       {status['files']}  sessions {status['sessions']}\n"
        f"chunks      {status['chunks']}  with vectors {status['chunks_with_vectors']} "
        f"({status['vectors']} window vectors)\n"
        f"embedder    {status['embedder_id'] or '-'}\n"
        f"disk        {status['disk_bytes'] / 1e6:.1f} MB\n"
        f"emb. cache  {cache['entries']} entries, {cache['bytes'] / 1e6:.1f} MB, {cache['hits']} hits, "
        f"{cache['misses']} misses (all homes, all time) at {cache['path']}\n"
        f"events      {format_summary(status['memory_events'])}"
    )
    if run := status["batch_run"]:
        text += (
            f"\nbatch run   {run['jobs_finished']}/{run['jobs']} jobs read, {run['jobs_submitted']} submitted, "
            f"{run['records']} records via {run['s3_uri']}: `memlane embed` resumes it"
        )
    emit(args, status, text)
    return 0


def _parser() -> argparse.ArgumentParser:
    def common(defaults: bool) -> argparse.ArgumentParser:
        # Subcommands repeat the global options with SUPPRESS defaults, so `memlane --json
        # status` and `memlane status --json` both work without one resetting the other.
        p = argparse.ArgumentParser(add_help=False)
        home = str(default_home()) if defaults else argparse.SUPPRESS
        p.add_argument("--home", default=home, help="memlane home (default: $MEMLANE_HOME or ~/.local/share/memlane)")
        p.add_argument("--json", action="store_true", default=False if defaults else argparse.SUPPRESS, help="print one JSON document on stdout")
        return p

    parser = argparse.ArgumentParser(prog="memlane", description="Memory for AI agents: index transcripts, recall them.", parents=[common(True)])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def embed_options(p: argparse.ArgumentParser, what: str, default: str | None = "local") -> None:
        p.add_argument("--embed", default=default, help=f"{what}: local (default), local:int8, local:MODEL_DIR, bedrock[:1024|512|256], none")
        p.add_argument("--aws-region", help="Bedrock region (default: AWS_REGION / your AWS config)")
        p.add_argument("--aws-profile", help="AWS profile for Bedrock")
        p.add_argument("--concurrency", type=int, default=8, help="Bedrock requests in flight (default 8)")

    p = sub.add_parser("index", parents=[common(False)], help="index transcripts and markdown notes, files or folders (incremental)")
    p.add_argument("paths", nargs="*", help="files or folders (default: the agent transcript folders found on this machine, $MEMLANE_LIBRARY and the brain folder)")
    embed_options(p, "embedder")
    p.add_argument("--format", choices=_FORMATS, help="force a format instead of auto-detection")
    p.add_argument("--quantization", choices=["f16", "i8", "f32"], default="f16", help="vector storage of a new home (default f16)")
    p.set_defaults(func=_cmd_index)

    p = sub.add_parser("search", parents=[common(False)], help="hybrid search over what is indexed")
    p.add_argument("query")
    p.add_argument("-k", type=int, default=10, help="hits wanted (default 10)")
    p.add_argument("--source", action="append", choices=["transcript", "knowledge", "brain"], help="keep only this source (repeatable)")
    p.add_argument("--session", help="keep only this session id")
    p.add_argument("--since", help="keep chunks from this time on (ISO-8601)")
    p.add_argument("--until", help="keep chunks before this time (ISO-8601)")
    p.add_argument("--fusion", choices=["weighted", "rrf"], default="weighted")
    p.add_argument("--threshold", type=float, default=FLOOR, help=f"relevance floor: nothing when no hit reaches it (default {FLOOR})")
    p.add_argument("--no-recency", dest="recency", action="store_false", help="do not put the newest of same-subject hits first")
    p.add_argument("--no-temporal", dest="temporal", action="store_false", help="do not favour hits near a time the query names")
    embed_options(p, "embedder for the query (must match the index)")
    p.set_defaults(func=_cmd_search)

    p = sub.add_parser("recall", parents=[common(False)], help="what memory knows about a query, as one block to inject (with provenance)")
    p.add_argument("query")
    p.add_argument("--max-tokens", type=int, default=15_000, help="token budget of the block (default 15000)")
    p.add_argument("--half-life", type=float, metavar="DAYS", help="decay dated items by half every DAYS (default: no decay)")
    p.add_argument("--no-brain", action="store_true", help="leave out MEMORY.md and EVOLUTION.md entries")
    embed_options(p, "embedder for the query (must match the index)")
    p.set_defaults(func=_cmd_recall)

    p = sub.add_parser("embed", parents=[common(False)], help="embed chunks that have no vector yet (resumes an interrupted index)")
    p.add_argument("--resume", action="store_true", help="accepted for clarity: embedding always resumes where it stopped")
    embed_options(p, "embedder (default: local, or the one of a batch run in progress)", default=None)
    p.add_argument("--batch", metavar="S3_URI", help="Bedrock batch inference through s3://bucket/prefix (large archives; resumable)")
    p.add_argument("--batch-role", metavar="ARN", help="IAM service role Bedrock assumes to read and write the --batch location")
    p.add_argument("--batch-only", action="store_true", help="leave records the batch failed pending instead of embedding them on demand")
    p.add_argument("--poll-seconds", type=float, default=60.0, help="pause between batch job status checks (default 60)")
    p.set_defaults(func=_cmd_embed)

    p = sub.add_parser("status", parents=[common(False)], help="what this home holds")
    p.set_defaults(func=_cmd_status)

    from memlane.bench.cli import add_parser as add_bench_parser
    from memlane.agents_cli import add_parsers as add_agent_parsers
    from memlane.brain.cli import add_parsers as add_brain_parsers

    add_brain_parsers(sub, [common(False)])
    add_bench_parser(sub, [common(False)])
    add_agent_parsers(sub, [common(False)])
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``memlane`` console script."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["hook"]:
        # Hooks start a process per agent event: skip the full parser and its imports.
        from memlane.hooks import main as hook_main

        return hook_main(argv[1:])
    args = _parser().parse_args(argv)
    from memlane.errors import MemlaneError

    try:
        return int(args.func(args))
    except (MemlaneError, FileNotFoundError, ValueError, PermissionError) as exc:
        sys.stderr.write(f"memlane {args.command}: {exc}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write(f"\nmemlane {args.command}: interrupted; committed work is kept, run it again to resume\n")
        return 130


if __name__ == "__main__":
    sys.exit(main())
