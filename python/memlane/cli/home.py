"""``memlane status``, ``serve``, ``verify``, ``forget``, ``repair`` and ``secrets``: a home's
(or a sharded index's) state, its upkeep, and serving a sharded index.

Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="memlane")
    >>> add_parsers(parser.add_subparsers(dest="command"), [])
    >>> parser.parse_args(["forget", "--session", "s1", "--dry-run"]).dry_run
    True
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memlane.cli import common
from memlane.cli_output import emit
from memlane.errors import InvalidArgumentError
from memlane.events import format_summary
from memlane.memory import QUANTIZATIONS


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
    common.require_home(args)
    mem = common.open_memory(args, "none")
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
    parts = status["vector_parts"]
    text = (
        f"home        {status['home']}\n"
        f"files       {status['files']}  sessions {status['sessions']}\n"
        f"chunks      {status['chunks']}  with vectors {status['chunks_with_vectors']} "
        f"({status['vectors']} window vectors)\n"
        f"embedder    {status['embedder_id'] or '-'}"
        + (f", weights from {status['weights']}" if status["weights"] else "")
        + (f", vectors stored as {status['quantization']}" if status["vectors"] else "")
        + (f" in {parts} graphs" if status["vectors"] and parts > 1 else "")
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


def _add_status(sub: Any, parents: Sequence[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("status", parents=parents, help="what this home holds")
    p.set_defaults(func=_cmd_status)


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


def _add_serve(sub: Any, parents: Sequence[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "serve", parents=parents, help="serve a sharded index (--index URI) over HTTP on Ray Serve, read only"
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


def _cmd_verify(args: argparse.Namespace) -> int:
    common.require_home(args)
    report = common.open_memory(args, "none").verify(thorough=not args.fast)
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


def _add_verify(sub: Any, parents: Sequence[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "verify",
        parents=parents,
        help="check the home: manifest, keyword index, vectors, embedding cache (exit 1 if unsound)",
    )
    p.add_argument(
        "--fast", action="store_true", help="skip file checksums and resume states (what `memlane doctor` runs)"
    )
    p.set_defaults(func=_cmd_verify)


def repair_text(r: Any) -> str:
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
    common.require_home(args)
    report = common.open_memory(args, "none").repair(
        force=args.force,
        quantization=args.quantization,
        progress=common.ProgressBar(enabled=sys.stderr.isatty() and not args.json),
    )
    emit(args, report.to_dict(), repair_text(report))
    return 0


def _add_repair(sub: Any, parents: Sequence[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "repair",
        parents=parents,
        help="rebuild what verify finds broken from the sources and the embedding cache",
    )
    p.add_argument("--force", action="store_true", help="rebuild even when verify finds nothing wrong")
    p.add_argument(
        "--quantization",
        choices=QUANTIZATIONS,
        help="store the rebuilt vectors so (default: as the home has them; another storage rebuilds a sound home too)",
    )
    p.set_defaults(func=_cmd_repair)


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
    common.require_home(args)
    if args.missing:
        report = common.open_memory(args, "none").forget_missing(dry_run=args.dry_run)
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
        report = common.open_memory(args, "none").forget_all(cache=args.cache)
        cache = (
            " and the shared embedding cache"
            if report["cache_removed"]
            else " (the shared embedding cache stays: --cache removes it)"
        )
        emit(args, report, f"cleared {report['home']}: {len(report['removed'])} parts removed{cache}")
        return 0
    what = {"session": args.session, "path": args.path, "chunk": args.chunk}
    mem = common.open_memory(args, "none" if not args.undo else args.embed)
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


def _add_forget(sub: Any, parents: Sequence[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "forget",
        parents=parents,
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


def _cmd_secrets(args: argparse.Namespace) -> int:
    common.require_home(args)
    report = common.open_memory(args, "none").secrets()
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


def _add_secrets(sub: Any, parents: Sequence[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "secrets",
        parents=parents,
        help="where keys, tokens and passwords occur in the index (masked), to rotate and forget them",
    )
    p.set_defaults(func=_cmd_secrets)


def add_parsers(sub: Any, parents: Sequence[argparse.ArgumentParser]) -> None:
    """Add ``status``, ``serve``, ``verify``, ``forget``, ``repair``, ``secrets`` to the ``memlane`` parser,
    in the order ``memlane --help`` lists them."""
    for add in (_add_status, _add_serve, _add_verify, _add_forget, _add_repair, _add_secrets):
        add(sub, parents)
