"""What the ``memlane`` commands share: the progress bar, opening the memory a command names
(a home, a sharded index, a served one), and the lines on the device the local model runs on.

Example:
    >>> import argparse
    >>> require_home(argparse.Namespace(home="/nonexistent/memlane"))
    Traceback (most recent call last):
    FileNotFoundError: no memlane home at /nonexistent/memlane: `memlane index PATH` creates one (or pass --home DIR)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from memlane.errors import InvalidArgumentError
from memlane.memory import DEFAULT_QUANTIZATION


class ProgressBar:
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


def require_home(args: argparse.Namespace) -> None:
    """A read-only command on a home that does not exist says so instead of creating it."""
    if getattr(args, "index", None) or getattr(args, "remote", None):
        return
    home = Path(args.home).expanduser()
    if not home.is_dir():
        raise FileNotFoundError(f"no memlane home at {home}: `memlane index PATH` creates one (or pass --home DIR)")


def open_memory(args: argparse.Namespace, embedder: str) -> Any:
    """The memory a command works on: a served index (``--remote``), a sharded one (``--index``)
    or the home, with ``embedder`` (a ``--embed`` spec) for its queries and what it indexes."""
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
        if args.command not in ("search", "recall", "status", "ui"):
            raise InvalidArgumentError(
                f"--index searches a sharded index: search, recall, status and ui only (`memlane {args.command}` works on a --home)"
            )
        from memlane.cluster import open_index

        return open_index(args.index, embedder=spec)
    return memlane.open(args.home, embedder=spec, quantization=getattr(args, "quantization", None) or DEFAULT_QUANTIZATION,
                        device=getattr(args, "device", "auto"))  # fmt: skip


def device_placement(mem: Any) -> Any:
    """Where ``index``/``embed`` will run the local model, decided before any work (``--device
    gpu`` where none can be used fails here, in one line); a note on stderr when a usable GPU is
    left idle for a q8 home."""
    placement = mem.placement
    if placement is not None and placement.note:
        print(f"note: {placement.note}", file=sys.stderr)
    return placement


def device_fields(placement: Any) -> dict[str, str]:
    """``device`` and ``device_reason`` for a ``--json`` report (none for another embedder than the local model)."""
    return {"device": placement.device, "device_reason": placement.reason} if placement else {}


def device_line(placement: Any) -> str:
    """The summary's line on the device the local model ran on."""
    return f"\nembedded on the {placement.device.upper()} ({placement.reason})" if placement else ""
