"""``memlane index``: transcripts and notes into a home, or into a sharded index built on Ray.

Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="memlane")
    >>> add_parsers(parser.add_subparsers(dest="command"), [])
    >>> parser.parse_args(["index", "notes/", "--embed", "none"]).embed
    'none'
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memlane._paths import TRANSCRIPT_FORMATS, agent_transcript_dirs
from memlane.cli import common
from memlane.cli.home import repair_text
from memlane.cli.parser import device_option, embed_options
from memlane.cli_output import emit
from memlane.errors import IndexInterrupted, InvalidArgumentError
from memlane.knowledge import library_dirs
from memlane.memory import DEFAULT_QUANTIZATION, QUANTIZATIONS

_FORMATS = [*TRANSCRIPT_FORMATS, "markdown"]


def _cmd_index_cluster(args: argparse.Namespace) -> int:
    """``memlane index SOURCES --ray ADDRESS --out URI``: a sharded index built on Ray."""
    from memlane.cluster.index import index_sources

    if not args.out:
        raise InvalidArgumentError(
            "--ray builds a sharded index: name where it goes with --out s3://bucket/prefix/ (or a shared folder)"
        )
    if not args.paths:
        raise InvalidArgumentError("--ray needs the sources to index: s3://bucket/prefix/ URIs or shared folders")
    options = None
    if args.embed.startswith("bedrock"):
        from memlane.embed import make_embedder

        # The actors build their own clients (one cannot be pickled); building one here makes
        # a wrong region or profile a one-line error before any cluster work.
        options = {"region": args.aws_region, "profile": args.aws_profile, "concurrency": args.concurrency}
        probe: Any = make_embedder(args.embed, **options)
        probe.close()

    def progress(stage: str, done: int, total: int) -> None:
        if not args.json:
            what = "sources listed" if stage == "list" else "shards committed"
            sys.stderr.write(f"{stage}: {done}/{total} {what}\n")
            sys.stderr.flush()

    report = index_sources(
        args.paths, args.out, shards=args.shards, partition_depth=args.partition_depth, embed=args.embed,
        embed_options=options, ray_address=args.ray, embed_actors=args.embed_actors, embed_threads=args.embed_threads,
        requests_per_second=args.requests_per_second, format=args.format, quantization=args.quantization or DEFAULT_QUANTIZATION, progress=progress,
    )  # fmt: skip
    published = (
        f"published catalog version {report.generation}"
        if report.generation
        else "nothing changed: catalog left as it was"
    )
    skipped = ", ".join(f"{k}: {v}" for k, v in sorted(report.records_skipped.items())) or "none"
    text = (
        f"{report.files_seen} sources listed in {report.list_seconds:.2f}s: {report.files_indexed} indexed, "
        f"{report.files_removed} removed, {report.files_unchanged} unchanged, {report.duplicates} duplicates; "
        f"{report.shards_built} of {report.shards} shards built ({report.shards_resumed} resumed from an interrupted run); "
        f"+{report.chunks_added} chunks, -{report.chunks_removed}, {report.chunks_embedded} embedded; "
        f"{report.chunks} chunks in the index; skipped records: {skipped}; {published} in {report.seconds:.1f}s"
    )
    if report.embed_usage.get("requests"):
        u = report.embed_usage
        text += f"; Bedrock: {u['input_tokens']} tokens in {u['requests']} requests ({u['retries']} retried), about ${u['estimated_cost_usd']:.4f}"
    emit(args, report.to_dict(), text)
    return 0


def _cmd_index(args: argparse.Namespace) -> int:
    if args.ray or args.out:
        if not args.ray:
            raise InvalidArgumentError("--out writes a sharded index built on Ray: add --ray local|auto|ADDRESS")
        if args.device != "auto":
            raise InvalidArgumentError(
                "--ray places embedding actors itself (one per GPU of the cluster, fp32 there): leave --device at auto"
            )
        return _cmd_index_cluster(args)
    paths = (
        _present(args.paths) if args.paths else [str(p) for p in (*agent_transcript_dirs(), *library_dirs(args.home))]
    )
    if not paths:
        raise InvalidArgumentError(
            "no transcript or library folders found (~/.claude/projects, ~/.codex/sessions, $MEMLANE_LIBRARY, …): name the paths to index"
        )
    mem = common.open_memory(args, args.embed)
    if args.quantization and mem.quantization != args.quantization:
        print(f"note: {mem.home} stores its vectors as {mem.quantization} (a home keeps its own): "
              f"`memlane repair --quantization {args.quantization}` converts it", file=sys.stderr)  # fmt: skip
    placement = common.device_placement(mem)
    bar = common.ProgressBar(enabled=sys.stderr.isatty() and not args.json)
    try:
        report = mem.index(paths, embed=args.embed != "none", format=args.format, progress=bar)
    except IndexInterrupted as stop:
        return _index_interrupted(args, stop, bar.enabled)
    d = report.to_dict()
    skipped = ", ".join(f"{k}: {v}" for k, v in sorted(report.records_skipped.items())) or "none"
    text = ""
    if report.repaired:
        text += repair_text(report.repaired) + "\n"
    text += (
        f"indexed {report.files_indexed} of {report.files_seen} files ({report.bytes_parsed / 1e6:.1f} MB) "
        f"in {report.seconds:.2f}s: +{report.chunks_added} chunks, -{report.chunks_removed}, "
        f"{report.chunks_embedded} embedded ({report.embed_cache_hits} from cache); skipped records: {skipped}"
    )
    if report.files_gone:
        text += f"\nkept {report.files_gone} transcripts whose files are gone (`memlane forget --missing` removes them)"
    lines = [_file_line(f) for f in report.files if args.verbose or f["empty_reason"] or f["skipped"]]
    if len(lines) > _FILE_LINES and not args.verbose:
        lines = [*lines[:_FILE_LINES], f"  … and {len(lines) - _FILE_LINES} more files (--verbose lists them all)"]
    text += "".join(f"\n{line}" for line in lines)
    d.update(common.device_fields(placement))
    text += common.device_line(placement)
    if report.embed_usage:
        u = report.embed_usage
        text += (
            f"\nbedrock: {u['input_tokens']:,} tokens billed over {u['requests']:,} requests ({u['retries']} retries, "
            f"{u['capped_texts']} capped), about ${u['estimated_cost_usd']:.4f} at ${u['price_per_1k_tokens_usd']}/1k tokens "
            "(list price, may change)"
        )
    emit(args, d, text)
    # Only the paths the user named: a default agent folder with nothing in it is not an error.
    empty = [p for p in report.empty_roots if args.paths]
    if empty:
        sys.stderr.write(
            f"memlane index: nothing indexed from {', '.join(empty)}: no file there gave a conversation or a note\n"
        )
        return 1
    return 0


def _present(paths: list[str]) -> list[str]:
    """The named paths that exist, with one line on stderr naming those that do not.

    ``memlane index ~/.claude/projects ~/.codex/sessions`` is the same line for everyone: an agent
    not installed on this machine is no reason to index nothing. When no path exists, that is the
    error (a typo, not an agent left out).
    """
    present = [p for p in paths if Path(p).expanduser().exists()]
    absent = [p for p in paths if p not in present]
    if not present:
        raise FileNotFoundError(f"nothing to index: {', '.join(absent)} not found")
    if absent:
        sys.stderr.write(f"memlane index: not found, left out: {', '.join(absent)}\n")
    return present


def _index_interrupted(args: argparse.Namespace, stop: Any, bar: bool) -> int:
    """Ctrl-C during ``index``: one line on what was committed and how to resume; status 130."""
    done, total, pending = stop.report.files_indexed, stop.files_to_index, stop.chunks_pending
    kept = (
        f"keywords for {done} of {total} files committed"
        if done < total
        else f"keywords for all {total} files committed"
    )
    if pending:
        kept += f", {pending} chunks await vectors"
    if done < total:
        resume = "run the same `memlane index` again to resume"
    elif pending:
        resume = "run `memlane embed` (or the same `memlane index`) to resume"
    else:
        resume = "nothing is left to do"
    line = f"interrupted: {kept}; {resume}"
    if args.json:
        json.dump({"error": line, "kind": "IndexInterrupted", "files_to_index": total, "chunks_pending": pending,
                   "report": stop.report.to_dict()}, sys.stdout)  # fmt: skip
        sys.stdout.write("\n")
    else:
        sys.stderr.write(("\n" if bar else "") + f"memlane index: {line}\n")
    return 130


# Files listed by `index` without --verbose (those that gave nothing or skipped records).
_FILE_LINES = 20


def _file_line(f: dict[str, Any]) -> str:
    """One line on what a file gave: ``path: claude-code, 2 sessions, 40 turns, 12 chunks; skipped invalid_json 1``."""
    skipped = ", ".join(f"{k} {v}" for k, v in sorted(f["skipped"].items()))
    if f["empty_reason"]:
        what = f"nothing indexed ({f['empty_reason'].replace('_', ' ')})"
    else:
        unit = "sections" if f["format"] == "markdown" else "turns"
        what = f"{f['format']}, {f['sessions']} sessions, {f['turns']} {unit}, {f['chunks']} chunks" + (
            " (appended)" if f["resumed"] else ""
        )
    return f"  {f['path']}: {what}" + (f"; skipped {skipped}" if skipped else "")


def add_parsers(sub: Any, parents: Sequence[argparse.ArgumentParser]) -> None:
    """Add ``index`` to the ``memlane`` parser."""
    p = sub.add_parser(
        "index", parents=parents, help="index transcripts and markdown notes, files or folders (incremental)"
    )
    p.add_argument(
        "paths",
        nargs="*",
        help="files or folders (default: the agent transcript folders found on this machine, $MEMLANE_LIBRARY and the brain folder)",
    )
    embed_options(p, "embedder")
    p.add_argument("--format", choices=_FORMATS, help="force a format instead of auto-detection")
    p.add_argument(
        "--quantization",
        choices=QUANTIZATIONS,
        help="vector storage of a new home (default i8; a home keeps its own: `memlane repair --quantization` converts it)",
    )
    device_option(p)
    p.add_argument("-v", "--verbose", action="store_true", help="list what every file read gave")
    cluster = p.add_argument_group("on a Ray cluster (pip install 'memlane[ray]')")
    cluster.add_argument(
        "--ray",
        metavar="ADDRESS",
        help="build a sharded index on Ray: local (start a cluster here), auto (join `ray start`'s) or an address",
    )
    cluster.add_argument(
        "--out", metavar="URI", help="where the sharded index goes: s3://bucket/prefix/ or a shared folder"
    )
    cluster.add_argument(
        "--shards", type=int, help="shards of a new index (default 64; an existing index keeps its own)"
    )
    cluster.add_argument(
        "--partition-depth",
        type=int,
        metavar="N",
        help="shard by the first N folders of a key (e.g. 1: the project folder) so scoped queries touch few shards",
    )
    cluster.add_argument(
        "--embed-actors",
        type=int,
        metavar="N",
        help="embedding actors (default: one per --embed-threads cores, one per GPU, 4 for Bedrock)",
    )
    cluster.add_argument(
        "--embed-threads",
        type=int,
        default=1,
        metavar="N",
        help="cores per local embedding actor (default 1)",
    )
    cluster.add_argument(
        "--requests-per-second",
        type=float,
        metavar="N",
        help="Bedrock requests per second over the whole cluster (default 20)",
    )
    p.set_defaults(func=_cmd_index)
