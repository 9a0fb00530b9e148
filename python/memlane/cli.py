"""The ``memlane`` command line: a thin shell over :class:`memlane.Memory`.

Every command takes ``--home DIR`` and ``--json`` (one JSON document on stdout). Every failure
prints one line on stderr (with ``--json``, ``{"error": …, "kind": …}`` on stdout) and exits
with status 2, ``verify`` with 1 when the home is unsound; no tracebacks (``MEMLANE_DEBUG=1``
shows them). A closed pipe (``memlane status | head``) ends the command quietly.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from memlane._paths import TRANSCRIPT_FORMATS, agent_transcript_dirs, default_home
from memlane.cli_output import emit
from memlane.embed.device import DEVICE_CHOICES
from memlane.errors import IndexInterrupted, InvalidArgumentError
from memlane.events import format_summary
from memlane.knowledge import library_dirs
from memlane.memory import DEFAULT_QUANTIZATION, QUANTIZATIONS
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


def _require_home(args: argparse.Namespace) -> None:
    """A read-only command on a home that does not exist says so instead of creating it."""
    if getattr(args, "index", None) or getattr(args, "remote", None):
        return
    home = Path(args.home).expanduser()
    if not home.is_dir():
        raise FileNotFoundError(f"no memlane home at {home}: `memlane index PATH` creates one (or pass --home DIR)")


def _open(args: argparse.Namespace, embedder: str) -> Any:
    import memlane

    if getattr(args, "remote", None):
        if args.command not in ("search", "recall", "status"):
            raise InvalidArgumentError(
                f"--remote asks a served index: search, recall and status only (`memlane {args.command}` works on a --home)"
            )
        from memlane.cluster.client import connect

        return connect(args.remote)
    spec: Any = embedder
    if embedder.startswith("bedrock"):
        from memlane.embed import make_embedder

        spec = make_embedder(embedder, region=args.aws_region, profile=args.aws_profile, concurrency=args.concurrency)
    if getattr(args, "index", None):
        if args.command not in ("search", "recall", "status"):
            raise InvalidArgumentError(
                f"--index searches a sharded index: search, recall and status only (`memlane {args.command}` works on a --home)"
            )
        from memlane.cluster import open_index

        return open_index(args.index, embedder=spec)
    return memlane.open(args.home, embedder=spec, quantization=getattr(args, "quantization", None) or DEFAULT_QUANTIZATION,
                        device=getattr(args, "device", "auto"))  # fmt: skip


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
    mem = _open(args, args.embed)
    if args.quantization and mem.quantization != args.quantization:
        print(f"note: {mem.home} stores its vectors as {mem.quantization} (a home keeps its own): "
              f"`memlane repair --quantization {args.quantization}` converts it", file=sys.stderr)  # fmt: skip
    placement = _placement(mem)
    bar = _Bar(enabled=sys.stderr.isatty() and not args.json)
    try:
        report = mem.index(paths, embed=args.embed != "none", format=args.format, progress=bar)
    except IndexInterrupted as stop:
        return _index_interrupted(args, stop, bar.enabled)
    d = report.to_dict()
    skipped = ", ".join(f"{k}: {v}" for k, v in sorted(report.records_skipped.items())) or "none"
    text = ""
    if report.repaired:
        text += _repair_text(report.repaired) + "\n"
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
    d.update(_device_fields(placement))
    text += _device_line(placement)
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


def _placement(mem: Any) -> Any:
    """Where ``index``/``embed`` will run the local model, decided before any work (``--device
    gpu`` where none can be used fails here, in one line); a note on stderr when a usable GPU is
    left idle for a q8 home."""
    placement = mem.placement
    if placement is not None and placement.note:
        print(f"note: {placement.note}", file=sys.stderr)
    return placement


def _device_fields(placement: Any) -> dict[str, str]:
    """``device`` and ``device_reason`` for a ``--json`` report (none for another embedder than the local model)."""
    return {"device": placement.device, "device_reason": placement.reason} if placement else {}


def _device_line(placement: Any) -> str:
    """The summary's line on the device the local model ran on."""
    return f"\nembedded on the {placement.device.upper()} ({placement.reason})" if placement else ""


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


def _format_hit(i: int, hit: Any, snippet: str) -> str:
    when = hit.timestamp[:16].replace("T", " ") if hit.timestamp else "undated"
    if hit.source in ("knowledge", "summary"):
        where = f"{hit.heading} · lines {hit.meta.get('line_start')}-{hit.meta.get('line_end')} · {when}"
    else:
        where = f"{hit.session_id} · turns {hit.turn_start}-{hit.turn_end} · {when}"
    if hit.project:
        where += f" · {Path(hit.project).name}" + (f"@{hit.branch}" if hit.branch else "")
    scores = " ".join(f"{k}={v:.2f}" for k, v in {"relevance": hit.relevance, **hit.scores}.items() if v is not None)
    earlier = f"\n   earlier statement: superseded by {hit.superseded_by}" if hit.superseded_by else ""
    if context := hit.meta.get("context"):
        earlier += f"\n   found through the summary {context}"
    return f"{i}. [{hit.score:.3f} {scores}] {hit.id} {where}\n   {hit.path}{earlier}\n   {snippet}"


def _cmd_search(args: argparse.Namespace) -> int:
    if args.k < 1:
        raise InvalidArgumentError("-k must be at least 1")
    _secrets_at_terminal(args)
    _require_home(args)
    mem = _open(args, args.embed)
    if args.type:
        return _search_items(args, mem)
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
        project=args.project,
        branch=args.branch,
        # A served index masks and cuts the passages itself (the hits' statistics live there).
        **({"show_secrets": args.show_secrets, "snippet_chars": 300} if args.remote else {}),
    )
    _say_partial(args, mem)
    _unknown_project(mem, args.project)  # even with hits: the user's global notes answer any name
    if not args.show_secrets:
        from dataclasses import replace

        from memlane import secrets

        # Masked before the snippet is cut: a key cut in half would no longer be recognised.
        hits = [replace(h, text=secrets.mask(h.text)) for h in hits]
    # The passage that matched, not the chunk's first lines: an error at a chunk's end shows.
    snippets = mem.snippets(args.query, hits)
    text = (
        "\n".join(_format_hit(i, h, s) for i, (h, s) in enumerate(zip(hits, snippets), 1))
        or "nothing relevant in memory for this query"
    )
    _emit_masked(args, [h.to_dict() for h in hits], text)
    return 0


def _search_items(args: argparse.Namespace, mem: Any) -> int:
    """``search --type``: typed, cited items (decisions, entities, claims, tasks, notes)."""
    from memlane import secrets

    if args.remote or args.index:
        raise InvalidArgumentError(
            "--type reads the home's brain and tasks: use it with --home, not a served or sharded index"
        )
    found = mem.items(args.query, types=args.type, project=args.project, k=args.k)
    lines = [
        f"[{n}] {i.type} {i.id}: {secrets.mask(i.text).splitlines()[0] if i.text else ''}\n    cited: {i.citation}"
        + (f" · confidence {i.confidence}" if i.confidence else "")
        for n, i in enumerate(found, 1)
    ]
    emit(
        args,
        secrets.mask_json([i.to_dict() for i in found]),
        "\n".join(lines) or f"no {' or '.join(args.type)} in memory for this query",
    )
    return 0


def _cmd_items(args: argparse.Namespace) -> int:
    """``memlane items``: every typed, cited item (of a project), or ``--export`` them as items.json."""
    from collections import Counter

    from memlane import secrets

    _require_home(args)
    mem = _open(args, "none")
    project = mem.project_keys(".")[0] if args.project == "." else args.project
    found = [i.to_dict() for i in mem.items(types=args.type, project=project, k=None)]
    doc = secrets.mask_json({"project": project, "items": found})
    if args.export:
        Path(args.export).write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    counts = Counter(i["type"] for i in found)
    where = f" in {project}" if project else ""
    text = f"{len(found)} items{where}: " + (", ".join(f"{n} {t}" for t, n in sorted(counts.items())) or "none")
    emit(args, doc, text + (f"; written to {args.export}" if args.export else " (`--export items.json` writes them)"))
    return 0


def _cmd_recall(args: argparse.Namespace) -> int:
    if args.max_tokens < 1:
        raise InvalidArgumentError("--max-tokens must be at least 1")
    _secrets_at_terminal(args)
    _require_home(args)
    mem = _open(args, args.embed)
    result = mem.recall(
        args.query,
        max_tokens=args.max_tokens,
        half_life_days=args.half_life,
        include_brain=not args.no_brain,
        show_secrets=args.show_secrets,
        project=args.project,
        branch=args.branch,
    )
    _say_partial(args, mem)
    _unknown_project(mem, args.project)  # even with hits: the user's global notes answer any name
    if not result:
        sys.stderr.write("memlane recall: nothing relevant in memory for this query\n")
        if args.json:
            _emit_masked(args, result.to_dict(), "")
        return 0
    _emit_masked(args, result.to_dict(), result.text.rstrip("\n"))
    return 0


def _secrets_at_terminal(args: argparse.Namespace) -> None:
    """Refuse ``--show-secrets`` unless stdout is a terminal: keys are shown to a person
    reading them, never into a pipe or a file (an agent's shell tool reads a pipe)."""
    if args.show_secrets and not sys.stdout.isatty():
        raise InvalidArgumentError(
            "--show-secrets prints keys and passwords only at a terminal, and stdout is not one; leave it out to get them masked"
        )


def _say_partial(args: argparse.Namespace, mem: Any) -> None:
    """One line on stderr when a served index answered without some of its shards."""
    if getattr(mem, "missing_shards", None):
        shards = ", ".join(map(str, mem.missing_shards))
        sys.stderr.write(
            f"memlane {args.command}: partial answer: shard(s) {shards} of {args.remote} did not answer (Ray restarts them)\n"
        )


def _unknown_project(mem: Any, project: str | None) -> None:
    """Say so when ``--project`` names no project of the home (a typo, not an empty answer)."""
    if project is not None and hasattr(mem, "project_keys") and not mem.project_keys(project):
        names = ", ".join(sorted({Path(k).name for k in mem.projects()})) or "none yet"
        from memlane._check import echo

        sys.stderr.write(f"memlane: no project named {echo(project, quote=True)} in this home (projects: {names})\n")


def _emit_masked(args: argparse.Namespace, payload: Any, text: str) -> None:
    """:func:`emit` with secrets masked, unless the user asked ``--show-secrets``."""
    if not args.show_secrets:
        from memlane import secrets

        payload, text = secrets.mask_json(payload), secrets.mask(text)
    emit(args, payload, text)


def _cmd_secrets(args: argparse.Namespace) -> int:
    _require_home(args)
    report = _open(args, "none").secrets()
    found = report["secrets"]
    chunks = len({f["chunk"] for f in found})
    lines = [
        f"{len(found)} secrets in {chunks} of {report['chunks_scanned']} chunks"
        + (": rotate them, then forget the chunks (`memlane forget --chunk ID`)" if found else "")
    ]
    for f in found:
        where = (
            f"session {f['session_id']} · turns {f['turn_start']}-{f['turn_end']}"
            if f["source"] == "transcript"
            else f["heading"] or "note"
        )
        lines.append(f"{f['label']:<24} {f['masked']:<22} {where} · {f['path']} (chunk {f['chunk']})")
    emit(args, report, "\n".join(lines))
    return 0


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
    mem = _open(args, args.embed)
    placement = _placement(mem)
    bar = _Bar(enabled=sys.stderr.isatty() and not args.json)
    started = time.perf_counter()
    done = mem.embed_pending(progress=bar)
    seconds = time.perf_counter() - started
    d = {"chunks_embedded": done, "seconds": round(seconds, 3), **_device_fields(placement)}
    emit(args, d, f"embedded {done} chunks in {seconds:.1f}s" + _device_line(placement))
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
    mem = _open(args, args.embed)
    s3, bedrock = make_batch_clients(args.aws_region or mem.embedder.region, args.aws_profile)
    on_status = _job_status_lines(args)
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


def _weights(embedder_id: str | None) -> str | None:
    """Where the local model's weights come from, for a home built with them."""
    from memlane.embed import is_bundled_model

    if not is_bundled_model(embedder_id):
        return None
    from memlane.embed.weights import minilm_source

    return minilm_source()


def _last_index_device(mem: Any) -> str | None:
    """The device the home's last ``index`` with the local model embedded on, from its events log."""
    devices = [e["device"] for e in mem.events.read() if e.get("type") == "index" and e.get("device")]
    return devices[-1] if devices else None


def _served_shards(status: dict[str, Any]) -> str:
    """Where a server keeps its shards and how it takes HTTP, for ``status``."""
    where = f"{status['shard_actors']} shard actors" if status["shard_actors"] else "shards in the router"
    return where + (f", {status['ingress']} ingress" if "ingress" in status else "")


def _cmd_status(args: argparse.Namespace) -> int:
    _require_home(args)
    mem = _open(args, "none")
    status = mem.status()
    if args.index or args.remote:
        text = (
            (
                f"server      {args.remote}: {_served_shards(status)}, shards down: "
                f"{', '.join(map(str, status['missing_shards'])) or 'none'}\n"
                if args.remote
                else ""
            )
            + f"index       {status['index']} (catalog version {status['generation']}, {status['created']})\n"
            f"shards      {status['shards_with_data']} of {status['shards']} hold data"
            + ("" if args.remote else f", kept at {status['local']}")
            + "\n"
            f"files       {status['files']}  sessions {status['sessions']}\n"
            f"chunks      {status['chunks']}\n"
            f"embedder    {status['embedder_id'] or '-'}\n"
            f"size        {status['disk_bytes'] / 1e6:.1f} MB"
        )
        emit(args, status, text)
        return 0
    status["weights"] = _weights(status["embedder_id"])
    cache = status["embedding_cache"]
    text = (
        f"home        {status['home']}\n"
        f"files       {status['files']}  sessions {status['sessions']}\n"
        f"chunks      {status['chunks']}  with vectors {status['chunks_with_vectors']} "
        f"({status['vectors']} window vectors)\n"
        f"embedder    {status['embedder_id'] or '-'}"
        + (f", weights from {status['weights']}" if status["weights"] else "")
        + (f", vectors stored as {status['quantization']}" if status["vectors"] else "")
        + "\n"
        f"disk        {status['disk_bytes'] / 1e6:.1f} MB\n"
        f"emb. cache  {cache['entries']} entries, {cache['bytes'] / 1e6:.1f} MB, {cache['hits']} hits, "
        f"{cache['misses']} misses (all homes, all time) at {cache['path']}\n"
        f"events      {format_summary(status['memory_events'])}"
    )
    if status.get("archived_bytes"):
        kept = status["archived_bytes"]
        gone = status["sources_gone"]
        text += (
            f"\nkept        copies of {kept / 1e6:.1f} MB of transcripts in {status['archive_disk_bytes'] / 1e6:.1f} MB "
            f"({status['archive_disk_bytes'] / kept:.2f} bytes a byte)"
            + (f"; {gone} of them gone from their folders (`memlane forget --missing` lets them go)" if gone else "")
        )
    status["last_index_device"] = _last_index_device(mem)
    if status["last_index_device"]:
        text += f"\ndevice      the last index embedded on the {status['last_index_device'].upper()} (`memlane index --device` chooses)"
    if status["projects"]:
        shown = sorted(status["projects"].items(), key=lambda kv: -kv[1])
        text += f"\nprojects    {len(shown)}: " + ", ".join(f"{Path(k).name} ({n:,})" for k, n in shown[:8])
        text += f", … and {len(shown) - 8} more (--json lists them)" if len(shown) > 8 else ""
    if libraries := sorted(status["libraries"], key=lambda lib: (not lib["global"], -lib["notes"])):
        # Global libraries (in no repository) are the user's own: every project's search reads them.
        text += (
            f"\nlibraries   {len(libraries)}, {sum(lib['global'] for lib in libraries)} global (read in every project): "
            + ", ".join(
                f"{lib['path']} ({'global' if lib['global'] else 'project only'}, {lib['notes']:,} note{'' if lib['notes'] == 1 else 's'})"
                for lib in libraries[:8]
            )
        )
        text += f", … and {len(libraries) - 8} more (--json lists them)" if len(libraries) > 8 else ""
    if status["vectors_pending"]:
        text += f"\nnote        vectors pending: {status['vectors_pending']:,} chunks have none yet: `memlane embed` adds them"
    if status["quantization"] == "f16" and status["vectors"]:
        text += "\nnote        vectors stored in f16: `memlane repair --quantization i8` makes the vector file ~40% smaller, no embedding call"
    if not status["records_projects"] and status["chunks"]:
        text += "\nnote        indexed before memlane recorded projects: `memlane repair --force` rebuilds it with them"
    if run := status["batch_run"]:
        text += (
            f"\nbatch run   {run['jobs_finished']}/{run['jobs']} jobs read, {run['jobs_submitted']} submitted, "
            f"{run['records']} records via {run['s3_uri']}: `memlane embed` resumes it"
        )
    emit(args, status, text)
    return 0


def _cmd_serve(args: argparse.Namespace) -> int:
    """``memlane serve --index URI``: run until interrupted."""
    if not args.index:
        raise InvalidArgumentError(
            "serve needs the sharded index to serve: --index s3://bucket/prefix/ (or a shared folder)"
        )
    if args.replicas < 1 or not 0 < args.port < 65536:
        raise InvalidArgumentError("--replicas must be at least 1 and --port between 1 and 65535")
    from memlane.cluster.client import loopback
    from memlane.cluster.serve import check_binding

    check_binding(args.host, args.token, args.insecure, args.token_file)  # before Ray starts: a refusal is instant
    from memlane.cluster.serve import start

    server = start(
        args.index, ray_address=args.ray, host=args.host, port=args.port, replicas=args.replicas, token=args.token,
        token_file=args.token_file, allow_show_secrets=args.allow_show_secrets, insecure=args.insecure, embedder=args.embed,
        shard_actors=args.shard_actors, refresh_seconds=args.refresh, tls_cert=args.tls_cert, tls_key=args.tls_key,
    )  # fmt: skip
    auth = ", token required" if args.token or args.token_file else ""
    if args.allow_show_secrets:
        auth += ", show_secrets granted to admin tokens (each request logged in the router replica's Ray Serve log)"
    if (args.token or args.token_file) and not args.tls_cert and not loopback(args.host):
        auth += (
            ", plain HTTP beyond loopback: the token crosses the network readable (--tls-cert/--tls-key serve HTTPS)"
        )
    shards = f"{len(server.actors)} shard actors" if server.actors else "shards in the router"
    sys.stderr.write(
        f"serving {args.index} (catalog version {server.generation}, {shards}, "
        f"{args.replicas} router replica{'s' if args.replicas > 1 else ''}{auth}) at {server.url}: POST /search, POST /recall, GET /status; Ctrl-C stops\n"
    )
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        sys.stderr.write("memlane serve: stopped\n")
        return 0
    finally:
        server.stop()


def _cmd_verify(args: argparse.Namespace) -> int:
    _require_home(args)
    report = _open(args, "none").verify(thorough=not args.fast)
    lines = [f"{f['severity']:<8}{f['part']:<16}{f['path']}: {f['message']}" for f in report["findings"]]
    verdict = (
        f"{report['home']}: sound ({report['files']:,} files, {report['chunks']:,} chunks, "
        f"{report['chunks_with_vectors']:,} with vectors"
        + (f", {report['vectors_pending']:,} pending" if report["vectors_pending"] else "")
        + ")"
        if report["sound"]
        else f"{report['home']}: unsound: `memlane repair` rebuilds it from the sources and the embedding cache"
    )
    emit(args, report, "\n".join([*lines, verdict]))
    return 0 if report["sound"] else 1


def _repair_text(r: Any) -> str:
    if not r.repaired:
        aside = f"; set the damaged embedding cache aside as {r.cache_set_aside}" if r.cache_set_aside else ""
        return f"nothing to rebuild: the home is sound{aside}"
    lost = f"; lost (source gone, index unreadable): {', '.join(r.lost)}" if r.lost else ""
    pending = (
        f"; {r.chunks_without_vectors} chunks without vectors: `memlane embed` adds them"
        if r.chunks_without_vectors
        else ""
    )
    return (
        f"repaired in {r.seconds:.1f}s ({len(r.problems)} problems): {r.files_reindexed} files re-indexed, "
        f"{r.files_restored} from the copies the home kept, {r.files_carried_over} carried over from the old index, "
        f"{r.chunks} chunks; vectors: "
        f"{r.vectors_from_cache} from the embedding cache, {r.vectors_from_old_index} from the old vector file, "
        f"{r.embedding_calls} embedding calls, stored as {r.quantization}{pending}{lost}"
    )


def _cmd_repair(args: argparse.Namespace) -> int:
    _require_home(args)
    report = _open(args, "none").repair(
        force=args.force, quantization=args.quantization, progress=_Bar(enabled=sys.stderr.isatty() and not args.json)
    )
    emit(args, report.to_dict(), _repair_text(report))
    return 0


def _confirm_wipe(args: argparse.Namespace) -> None:
    """``forget --all`` goes ahead only with ``--yes`` or the home's folder name typed at a terminal."""
    home = Path(args.home).expanduser()
    if args.yes:
        return
    if not sys.stdin.isatty():
        raise InvalidArgumentError(
            f"memlane forget --all clears everything in {home}: run it at a terminal to confirm, or add --yes"
        )
    typed = input(
        f"This removes everything memlane holds in {home} (the index, kept transcripts, brain, tasks).\n"
        f"Type the folder's name ({home.name}) to go on: "
    )
    if typed.strip() != home.name:
        raise InvalidArgumentError("not confirmed: nothing was removed")


def _cmd_forget(args: argparse.Namespace) -> int:
    _require_home(args)
    if args.missing:
        report = _open(args, "none").forget_missing(dry_run=args.dry_run)
        verb = "would forget" if args.dry_run else "forgot"
        emit(
            args,
            report,
            f"{verb} {report['chunks']} chunks of {len(report['files'])} transcripts whose files are gone"
            + "".join(f"\n  {f}" for f in report["files"]),
        )
        return 0
    if args.all:
        _confirm_wipe(args)
        report = _open(args, "none").forget_all(cache=args.cache)
        cache = (
            " and the shared embedding cache"
            if report["cache_removed"]
            else " (the shared embedding cache stays: --cache removes it)"
        )
        emit(args, report, f"cleared {report['home']}: {len(report['removed'])} parts removed{cache}")
        return 0
    what = {"session": args.session, "path": args.path, "chunk": args.chunk}
    mem = _open(args, "none" if not args.undo else args.embed)
    report = mem.forget(**what, dry_run=args.dry_run, undo=args.undo, cascade=args.cascade)
    kind, value = next((k, v) for k, v in what.items() if v is not None)
    if args.undo:
        text = f"lifted the tombstone of {kind} {value}: indexed its {len(report['files'])} files again"
    else:
        where = f"{report['chunks']} chunks of {len(report['sessions'])} sessions from {len(report['files'])} files"
        text = (
            f"would forget {where}"
            if args.dry_run
            else f"forgot {where} ({report['cache_rows']} embedding-cache rows); re-indexing will not bring them back "
            f"(`memlane forget --undo --{kind} {value}` lifts that)"
        )
        text += "".join(f"\n  {f}" for f in report["files"])
        cited = [*report.get("brain_entries", []), *report.get("daily_entries", [])]
        if cited:
            done = args.cascade and not args.dry_run
            text += f"\n{'removed' if done else 'cited by this session alone'} in the brain: {', '.join(cited)}" + (
                "" if done else " (`--cascade` removes them)"
            )
    emit(args, report, text)
    return 0


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line saying what to do (not the usage block), and
    a JSON object on stdout when ``--json`` was asked for."""

    json_errors = False

    def error(self, message: str) -> NoReturn:
        message = f"{message} (see `{self.prog} --help`)"
        if _Parser.json_errors:
            json.dump({"error": message, "kind": "UsageError"}, sys.stdout)
            self.exit(2, "\n")
        self.exit(2, f"{self.prog}: {message}\n")


def _parser() -> argparse.ArgumentParser:
    def common(defaults: bool) -> _Parser:
        # Subcommands repeat the global options with SUPPRESS defaults, so `memlane --json
        # status` and `memlane status --json` both work without one resetting the other.
        p = _Parser(add_help=False)
        home = str(default_home()) if defaults else argparse.SUPPRESS
        p.add_argument("--home", default=home, help="memlane home (default: $MEMLANE_HOME or ~/.local/share/memlane)")
        p.add_argument(
            "--json",
            action="store_true",
            default=False if defaults else argparse.SUPPRESS,
            help="print one JSON document on stdout",
        )
        p.add_argument(
            "--index",
            metavar="URI",
            default=None if defaults else argparse.SUPPRESS,
            help="search, recall or status a sharded index (s3://… or a folder, built by `memlane index --ray`) instead of --home",
        )
        p.add_argument(
            "--remote",
            metavar="URL",
            default=None if defaults else argparse.SUPPRESS,
            help="search, recall, status or mcp through a served index (`memlane serve`) at URL (token from $MEMLANE_TOKEN)",
        )
        return p

    parser = _Parser(
        prog="memlane", description="Memory for AI agents: index transcripts, recall them.", parents=[common(True)]
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)

    def scope_options(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--project",
            help="only this project's memories: a name (alpha), a path (. or ~/src/alpha) or a key as hits show it",
        )
        p.add_argument("--branch", help="only transcripts written on this git branch")

    def embed_options(p: argparse.ArgumentParser, what: str, default: str | None = "local") -> None:
        p.add_argument(
            "--embed",
            default=default,
            help=f"{what}: local (default), local:int8, local:MODEL_DIR, bedrock[:1024|512|256], none",
        )
        p.add_argument("--aws-region", help="Bedrock region (default: AWS_REGION / your AWS config)")
        p.add_argument("--aws-profile", help="AWS profile for Bedrock")
        p.add_argument("--concurrency", type=int, default=8, help="Bedrock requests in flight (default 8)")

    def device_option(p: argparse.ArgumentParser) -> None:
        p.add_argument("--device", choices=DEVICE_CHOICES, default="auto",
                       help="where the local model runs: auto (default: a GPU when onnxruntime-gpu can use one, else the CPU), cpu, gpu")  # fmt: skip

    p = sub.add_parser(
        "index", parents=[common(False)], help="index transcripts and markdown notes, files or folders (incremental)"
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
        help="onnxruntime threads per local embedding actor (default 1)",
    )
    cluster.add_argument(
        "--requests-per-second",
        type=float,
        metavar="N",
        help="Bedrock requests per second over the whole cluster (default 20)",
    )
    p.set_defaults(func=_cmd_index)

    p = sub.add_parser("search", parents=[common(False)], help="hybrid search over what is indexed")
    p.add_argument("query")
    p.add_argument("-k", type=int, default=10, help="hits wanted (default 10)")
    p.add_argument(
        "--source",
        action="append",
        choices=["transcript", "knowledge", "summary", "brain"],
        help="keep only this source (repeatable)",
    )
    p.add_argument("--session", help="keep only this session id")
    p.add_argument("--since", help="keep chunks from this time on (ISO-8601)")
    p.add_argument("--until", help="keep chunks before this time (ISO-8601)")
    p.add_argument("--fusion", choices=["weighted", "rrf"], default="weighted")
    p.add_argument(
        "--threshold",
        type=float,
        default=FLOOR,
        help=f"relevance floor: nothing when no hit reaches it (default {FLOOR})",
    )
    p.add_argument(
        "--no-recency", dest="recency", action="store_false", help="do not put the newest of same-subject hits first"
    )
    p.add_argument(
        "--no-temporal", dest="temporal", action="store_false", help="do not favour hits near a time the query names"
    )
    p.add_argument(
        "--show-secrets",
        action="store_true",
        help="print keys and passwords as indexed (default: masked, like AKIA…8WVY)",
    )
    p.add_argument(
        "--type",
        action="append",
        metavar="TYPE",
        help="typed, cited items instead of hits: decision, entity, claim, task or note (repeatable)",
    )
    scope_options(p)
    embed_options(p, "embedder for the query (must match the index)")
    p.set_defaults(func=_cmd_search)

    p = sub.add_parser(
        "items",
        parents=[common(False)],
        help="typed, cited items: decisions, entities, claims, tasks, notes (--export items.json)",
    )
    p.add_argument(
        "--type", action="append", metavar="TYPE", help="only decision, entity, claim, task or note (repeatable)"
    )
    p.add_argument("--project", help="only this project (a name, a repository path, or . for this directory's)")
    p.add_argument(
        "--export", metavar="FILE", help="write them as JSON (the project, then each item with its citation)"
    )
    p.set_defaults(func=_cmd_items)

    p = sub.add_parser(
        "recall",
        parents=[common(False)],
        help="what memory knows about a query, as one block to inject (with provenance)",
    )
    p.add_argument("query")
    p.add_argument("--max-tokens", type=int, default=15_000, help="token budget of the block (default 15000)")
    p.add_argument(
        "--half-life", type=float, metavar="DAYS", help="decay dated items by half every DAYS (default: no decay)"
    )
    p.add_argument("--no-brain", action="store_true", help="leave out MEMORY.md and EVOLUTION.md entries")
    p.add_argument(
        "--show-secrets",
        action="store_true",
        help="print keys and passwords as indexed (default: masked, like AKIA…8WVY)",
    )
    scope_options(p)
    embed_options(p, "embedder for the query (must match the index)")
    p.set_defaults(func=_cmd_recall)

    p = sub.add_parser(
        "embed", parents=[common(False)], help="embed chunks that have no vector yet (resumes an interrupted index)"
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

    p = sub.add_parser("status", parents=[common(False)], help="what this home holds")
    p.set_defaults(func=_cmd_status)

    p = sub.add_parser(
        "serve", parents=[common(False)], help="serve a sharded index (--index URI) over HTTP on Ray Serve, read only"
    )
    p.add_argument(
        "--ray",
        metavar="ADDRESS",
        default="local",
        help="local (default: start a cluster here), auto (join `ray start`'s) or an address",
    )
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind (default 127.0.0.1; beyond loopback needs --token or --insecure)",
    )
    p.add_argument("--port", type=int, default=8765, help="HTTP port (default 8765)")
    p.add_argument("--replicas", type=int, default=1, help="router replicas (default 1)")
    p.add_argument(
        "--token",
        default=os.environ.get("MEMLANE_TOKEN"),
        help="every request must send Authorization: Bearer TOKEN (default $MEMLANE_TOKEN)",
    )
    p.add_argument(
        "--token-file",
        metavar="FILE",
        help="more tokens, one `TOKEN ROLE` a line (admin or project:NAME: that project only); readable by its owner only",
    )
    p.add_argument(
        "--allow-show-secrets",
        action="store_true",
        help="let admin tokens ask for texts with secrets in clear (refused by default; each request logged)",
    )
    p.add_argument("--insecure", action="store_true", help="allow binding beyond loopback without a token")
    p.add_argument(
        "--tls-cert",
        metavar="PEM",
        help="serve HTTPS with this certificate (its chain after it); clients trust it through SSL_CERT_FILE if self-signed",
    )
    p.add_argument("--tls-key", metavar="PEM", help="the certificate's private key")
    p.add_argument("--embed", default="local", help="query embedder of an index with vectors: local (default), none, …")
    p.add_argument(
        "--shard-actors",
        type=int,
        metavar="N",
        help="shard actors; 0: shards open in the router replicas (default on one machine; else one per shard with data, at most one per CPU)",
    )
    p.add_argument(
        "--refresh",
        type=float,
        default=2.0,
        metavar="SECONDS",
        help="how often the router looks for a new catalog version (default 2)",
    )
    p.set_defaults(func=_cmd_serve)

    p = sub.add_parser(
        "verify",
        parents=[common(False)],
        help="check the home: manifest, keyword index, vectors, embedding cache (exit 1 if unsound)",
    )
    p.add_argument(
        "--fast", action="store_true", help="skip file checksums and resume states (what `memlane doctor` runs)"
    )
    p.set_defaults(func=_cmd_verify)

    p = sub.add_parser(
        "forget",
        parents=[common(False)],
        help="remove a session, a file or a chunk for good (re-indexing does not bring it back)",
    )
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("--session", help="a session id, as search and recall show it")
    target.add_argument("--path", help="a source file, as indexed")
    target.add_argument("--chunk", help="a chunk id, as search and recall show it")
    target.add_argument(
        "--missing",
        action="store_true",
        help="every transcript whose file is gone (kept until now: memlane keeps them)",
    )
    target.add_argument("--all", action="store_true", help="clear the whole home (asks you to type its name, or --yes)")
    p.add_argument(
        "--cascade",
        action="store_true",
        help="with --session: also remove the brain entries, daily notes and tasks it alone gave",
    )
    p.add_argument("--yes", action="store_true", help="with --all: do not ask")
    p.add_argument("--cache", action="store_true", help="with --all: remove the shared embedding cache too")
    p.add_argument("--dry-run", action="store_true", help="only say what would be removed")
    p.add_argument("--undo", action="store_true", help="lift the tombstone and index its files again")
    p.add_argument("--embed", default="local", help="embedder for what --undo indexes again: local (default), none, …")
    p.set_defaults(func=_cmd_forget)

    p = sub.add_parser(
        "repair",
        parents=[common(False)],
        help="rebuild what verify finds broken from the sources and the embedding cache",
    )
    p.add_argument("--force", action="store_true", help="rebuild even when verify finds nothing wrong")
    p.add_argument(
        "--quantization",
        choices=QUANTIZATIONS,
        help="store the rebuilt vectors so (default: as the home has them; another storage rebuilds a sound home too)",
    )
    p.set_defaults(func=_cmd_repair)

    p = sub.add_parser(
        "secrets",
        parents=[common(False)],
        help="where keys, tokens and passwords occur in the index (masked), to rotate and forget them",
    )
    p.set_defaults(func=_cmd_secrets)

    from memlane.agents.cli import add_parsers as add_agent_parsers
    from memlane.bench.cli import add_parser as add_bench_parser
    from memlane.brain.cli import add_parsers as add_brain_parsers
    from memlane.timeline.cli import add_parsers as add_timeline_parsers

    add_brain_parsers(sub, [common(False)])
    add_timeline_parsers(sub, [common(False)])
    add_bench_parser(sub, [common(False)])
    add_agent_parsers(sub, [common(False)])
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``memlane`` console script."""
    process = argv is None  # the hook may end the process at its deadline
    argv = sys.argv[1:] if argv is None else list(argv)
    if "hook" in argv:
        # Hooks start a process per agent event: skip the full parser and its imports. Global
        # options before `hook` go along, so no route reaches argparse's exit 2 (a client's "block").
        from memlane.agents.hooks import hook_arguments
        from memlane.agents.hooks import main as hook_main

        if (hook_argv := hook_arguments(argv)) is not None:
            return hook_main(hook_argv, hard_exit=process)
    _Parser.json_errors = "--json" in argv
    args = _parser().parse_args(argv)
    # Library warnings (a damaged embedding cache set aside) reach the user as one line each.
    logging.basicConfig(level=logging.WARNING, format=f"memlane {args.command}: %(message)s")
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        sys.stderr.write(f"\nmemlane {args.command}: interrupted; committed work is kept, run it again to resume\n")
        return 130
    except BrokenPipeError:
        # The reader went away (`memlane status | head`): stop quietly; Python would
        # otherwise complain again when it flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (SystemExit, GeneratorExit):
        raise
    # BaseException: a Rust panic surfaces as pyo3's PanicException, which is not an Exception.
    except BaseException as exc:
        if os.environ.get("MEMLANE_DEBUG"):
            raise
        return _fail(args, exc)


def _fail(args: argparse.Namespace, exc: BaseException) -> int:
    """Report a failure as one line (``--json``: one JSON object on stdout); exit status 2."""
    import sqlite3

    from memlane.errors import MemlaneError

    message = str(exc) or type(exc).__name__
    if isinstance(exc, OSError) and exc.strerror and exc.filename:
        message = f"{exc.strerror}: {exc.filename}"
    if isinstance(exc, sqlite3.DatabaseError):
        message = f"database error: {message}"
    elif isinstance(exc, ImportError):
        if "pip install" not in message:  # one that names what to install (an extra) says enough
            message = f"{message}: memlane's installation is incomplete (pip install --force-reinstall memlane)"
    elif not isinstance(exc, (MemlaneError, OSError, ValueError, TypeError, LookupError)):
        message = f"internal error ({type(exc).__name__}: {message}); MEMLANE_DEBUG=1 shows the traceback"
    if getattr(args, "json", False):
        json.dump({"error": message, "kind": type(exc).__name__}, sys.stdout)
        sys.stdout.write("\n")
    else:
        sys.stderr.write(f"memlane {args.command}: {message}\n")
    return 2


if __name__ == "__main__":
    sys.exit(main())
