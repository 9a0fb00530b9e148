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
import threading
import time
from pathlib import Path
from typing import Any

from memlane.errors import InvalidArgumentError
from memlane.memory import DEFAULT_QUANTIZATION


class ProgressBar:
    """A one-line progress bar on stderr (only when stderr is a terminal), one bar a stage on
    that line while stages run at once (an index run embeds while it parses). Callable from
    any thread; the line ends when every stage shown is complete."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.stages: dict[str, tuple[int, int, float]] = {}  # stage -> (done, total, started)
        self.last = 0.0
        self.lock = threading.Lock()

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.enabled or total <= 0:
            return
        with self.lock:
            now = time.monotonic()
            started = self.stages[stage][2] if stage in self.stages else now
            self.stages[stage] = (done, total, started)
            complete = all(d >= t for d, t, _ in self.stages.values())
            if not complete and now - self.last < 0.1:
                return
            self.last = now
            width = 30 if len(self.stages) == 1 else 12  # two bars still fit 100 columns
            line = "  ".join(_bar(name, *state, now, width) for name, state in self.stages.items())
            sys.stderr.write(f"\r{line}\x1b[K")
            if complete:
                sys.stderr.write("\n")
                self.stages.clear()
            sys.stderr.flush()


def _bar(stage: str, done: int, total: int, started: float, now: float, width: int) -> str:
    """One stage's bar: how far, how much and, while under way, about how long is left."""
    frac = min(done / total, 1.0)
    filled = int(frac * width)
    amount = f"{done / 1e6:.1f}/{total / 1e6:.1f} MB" if stage == "parse" else f"{done}/{total} chunks"
    eta = f" ETA {(now - started) * (1 - frac) / frac:.0f}s" if 0 < frac < 1 and now > started else ""
    return f"{stage:<5} [{'#' * filled}{'.' * (width - filled)}] {frac:4.0%} {amount}{eta}"


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
