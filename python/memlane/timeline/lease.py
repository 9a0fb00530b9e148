"""One timeline job at a time across processes and crashes: a lease in SQLite, with a ledger.

``<home>/timeline/jobs.sqlite`` holds, per job (``compact``, ``dream``):

* the **lease**: an owner (host, pid), a random token, a heartbeat and an expiry. Taking it is
  one ``BEGIN IMMEDIATE`` transaction, so two processes never both hold it; a holder that dies
  stops renewing it and the next process takes it over once it expires. Every renewal and the
  release check the token, so a holder whose lease was taken over learns it
  (:class:`LeaseLostError`) and publishes nothing;
* the **state**: the last success (a cooldown follows it), consecutive failures and the time
  before which no retry starts (exponential backoff), and the **watermark** — how far the
  job's inputs were consumed, saved with the success, so no input is consumed twice and none
  is lost when a run fails;
* the **ledger**: one row per run with its status, engine, calls, tokens, cost and budget.

Codex guards its memory consolidation the same way (ownership token, heartbeat, a 6-hour
cooldown after success, a watermark, retries with backoff).

Example:
    >>> import tempfile
    >>> jobs = Jobs(tempfile.mkdtemp())
    >>> with jobs.lease("dream", cooldown=0) as run:
    ...     run.spend(calls=1, input_tokens=900, output_tokens=100, cost_usd=0.0012)
    ...     run.watermark = "events:4096"
    >>> jobs.status("dream")["watermark"], jobs.ledger("dream")[0]["tokens"]
    ('events:4096', 1000)
"""

from __future__ import annotations

import contextlib
import os
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from os import PathLike
from pathlib import Path
from typing import Any

from memlane.errors import MemlaneError

DB_NAME = "jobs.sqlite"
TTL_SECONDS = 120.0
"""A lease not renewed for this long is free to take over (a holder renews it every third of it)."""
COOLDOWNS = {"compact": 6 * 3600.0, "dream": 24 * 3600.0}
"""Seconds after a success before the job runs again (unless forced)."""
BACKOFF_BASE = 60.0
BACKOFF_MAX = 6 * 3600.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS lease (job TEXT PRIMARY KEY, owner TEXT NOT NULL, token TEXT NOT NULL,
    acquired REAL NOT NULL, heartbeat REAL NOT NULL, expires REAL NOT NULL);
CREATE TABLE IF NOT EXISTS state (job TEXT PRIMARY KEY, last_success REAL, last_failure REAL,
    failures INTEGER NOT NULL DEFAULT 0, retry_after REAL, watermark TEXT, last_error TEXT);
CREATE TABLE IF NOT EXISTS ledger (run TEXT PRIMARY KEY, job TEXT NOT NULL, owner TEXT NOT NULL,
    started REAL NOT NULL, finished REAL, status TEXT NOT NULL, engine TEXT, calls INTEGER NOT NULL DEFAULT 0,
    input_tokens INTEGER NOT NULL DEFAULT 0, output_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd REAL NOT NULL DEFAULT 0, budget_tokens INTEGER, detail TEXT);
"""


class LeaseError(MemlaneError):
    """A timeline job cannot run now."""


class LeaseHeldError(LeaseError):
    """Another process holds the job's lease."""


class CooldownError(LeaseError):
    """The job succeeded recently, or failed and waits for its retry time."""


class LeaseLostError(LeaseError):
    """This run's lease expired and another process took it over: it must publish nothing."""


class BudgetExceededError(LeaseError):
    """The run would spend more tokens than its budget."""


def _owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


class Run:
    """A run holding a job's lease: renew it, spend within the budget, set the watermark."""

    def __init__(
        self, jobs: Jobs, job: str, token: str, run_id: str, budget: int | None, watermark: str | None
    ) -> None:
        self.jobs = jobs
        self.job = job
        self.token = token
        self.id = run_id
        self.budget = budget
        self.watermark = watermark
        """Where the inputs were consumed to; saved only when the run succeeds."""
        self.engine: str | None = None
        self.detail: str | None = None
        self.calls = self.input_tokens = self.output_tokens = 0
        self.cost_usd = 0.0
        self._stop = threading.Event()
        self._lost = threading.Event()

    @property
    def tokens(self) -> int:
        """Tokens spent so far."""
        return self.input_tokens + self.output_tokens

    def affordable(self, tokens: int) -> bool:
        """Whether spending ``tokens`` more stays within the budget."""
        return self.budget is None or self.tokens + tokens <= self.budget

    def spend(self, *, calls: int = 0, input_tokens: int = 0, output_tokens: int = 0, cost_usd: float = 0.0) -> None:
        """Record what a call cost (written to the ledger at once, so a crash keeps it).

        Raises:
            BudgetExceededError: The run is now over its budget.
        """
        self.calls += calls
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        self.cost_usd = round(self.cost_usd + cost_usd, 6)
        with self.jobs._db() as db:
            db.execute(
                "UPDATE ledger SET calls=?, input_tokens=?, output_tokens=?, cost_usd=? WHERE run=?",
                (self.calls, self.input_tokens, self.output_tokens, self.cost_usd, self.id),
            )
        if self.budget is not None and self.tokens > self.budget:
            raise BudgetExceededError(f"{self.job} spent {self.tokens:,} tokens, over its budget of {self.budget:,}")

    def renew(self) -> None:
        """Push the expiry forward.

        Raises:
            LeaseLostError: The lease expired and another process took it.
        """
        now = time.time()
        with self.jobs._db() as db:
            changed = db.execute(
                "UPDATE lease SET heartbeat=?, expires=? WHERE job=? AND token=?",
                (now, now + self.jobs.ttl, self.job, self.token),
            ).rowcount
        if not changed:
            self._lost.set()
            raise LeaseLostError(
                f"the {self.job} lease expired and another process took it over: this run publishes nothing"
            )

    def check(self) -> None:
        """Raise :class:`LeaseLostError` if the heartbeat found the lease gone (call before publishing)."""
        if self._lost.is_set():
            raise LeaseLostError(f"the {self.job} lease was lost during the run: nothing published")
        self.renew()

    def _beat(self) -> None:
        while not self._stop.wait(self.jobs.ttl / 3):
            try:
                self.renew()
            except LeaseLostError:
                return
            except sqlite3.Error:
                continue  # a busy database: the next beat tries again, well before expiry


class Jobs:
    """The lease, state and ledger of a home's timeline jobs.

    Args:
        home: The memlane home (``timeline/jobs.sqlite`` inside it).
        ttl: Lease lifetime without renewal, seconds.
    """

    def __init__(self, home: str | PathLike[str], *, ttl: float = TTL_SECONDS) -> None:
        self.path = Path(home).expanduser() / "timeline" / DB_NAME
        self.ttl = ttl
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=30.0)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(_SCHEMA)
        finally:
            db.close()

    @contextlib.contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        finally:
            db.close()

    def status(self, job: str) -> dict[str, Any]:
        """The job's lease holder (if any), last success, failures, retry time and watermark."""
        with self._db() as db:
            lease = db.execute("SELECT owner, acquired, heartbeat, expires FROM lease WHERE job=?", (job,)).fetchone()
            state = db.execute(
                "SELECT last_success, last_failure, failures, retry_after, watermark, last_error FROM state WHERE job=?",
                (job,),
            ).fetchone()
        now = time.time()
        held = lease is not None and lease[3] > now
        state = state or (None, None, 0, None, None, None)
        return {
            "job": job,
            "held_by": lease[0] if held else None,
            "lease_expires": lease[3] if held else None,
            "last_success": state[0],
            "last_failure": state[1],
            "failures": state[2],
            "retry_after": state[3],
            "watermark": state[4],
            "last_error": state[5],
        }

    def ledger(self, job: str | None = None, limit: int = 20) -> list[dict[str, Any]]:
        """The latest runs, newest first, with their tokens and cost."""
        query = "SELECT run, job, owner, started, finished, status, engine, calls, input_tokens, output_tokens, cost_usd, budget_tokens, detail FROM ledger"
        args: tuple[Any, ...] = ()
        if job is not None:
            query += " WHERE job=?"
            args = (job,)
        with self._db() as db:
            rows = db.execute(query + " ORDER BY started DESC, run DESC LIMIT ?", (*args, limit)).fetchall()
        keys = (
            "run",
            "job",
            "owner",
            "started",
            "finished",
            "status",
            "engine",
            "calls",
            "input_tokens",
            "output_tokens",
            "cost_usd",
            "budget_tokens",
            "detail",
        )
        return [{**dict(zip(keys, r)), "tokens": r[8] + r[9]} for r in rows]

    def _acquire(self, job: str, cooldown: float, force: bool, budget: int | None) -> Run:
        now = time.time()
        with self._db() as db:
            lease = db.execute("SELECT owner, expires FROM lease WHERE job=?", (job,)).fetchone()
            if lease is not None and lease[1] > now:
                raise LeaseHeldError(f"{job} is running in {lease[0]} (its lease expires in {lease[1] - now:.0f}s)")
            state = db.execute("SELECT last_success, retry_after, watermark FROM state WHERE job=?", (job,)).fetchone()
            if state is not None and not force:
                if state[0] is not None and now < state[0] + cooldown:
                    raise CooldownError(
                        f"{job} succeeded {(now - state[0]) / 60:.0f} min ago; it runs again after {cooldown / 3600:.1f} h (--force runs it now)"
                    )
                if state[1] is not None and now < state[1]:
                    raise CooldownError(
                        f"{job} failed recently; its next try is in {state[1] - now:.0f}s (--force runs it now)"
                    )
            if lease is not None:
                # The holder stopped renewing (a crash): its run is marked so in the ledger.
                db.execute(
                    "UPDATE ledger SET status='abandoned', finished=? WHERE job=? AND status='running'", (now, job)
                )
            token, run_id = uuid.uuid4().hex, uuid.uuid4().hex[:12]
            db.execute(
                "INSERT OR REPLACE INTO lease VALUES (?, ?, ?, ?, ?, ?)",
                (job, _owner(), token, now, now, now + self.ttl),
            )
            db.execute(
                "INSERT INTO ledger (run, job, owner, started, status, budget_tokens) VALUES (?, ?, ?, ?, 'running', ?)",
                (run_id, job, _owner(), now, budget),
            )
        return Run(self, job, token, run_id, budget, state[2] if state else None)

    def _finish(self, run: Run, error: BaseException | None) -> None:
        now = time.time()
        status = "ok" if error is None else ("lost" if isinstance(error, LeaseLostError) else "failed")
        with self._db() as db:
            db.execute(
                "UPDATE ledger SET finished=?, status=?, engine=?, calls=?, input_tokens=?, output_tokens=?, cost_usd=?, detail=? WHERE run=?",
                (
                    now,
                    status,
                    run.engine,
                    run.calls,
                    run.input_tokens,
                    run.output_tokens,
                    run.cost_usd,
                    run.detail if error is None else str(error)[:500],
                    run.id,
                ),
            )
            mine = db.execute("SELECT 1 FROM lease WHERE job=? AND token=?", (run.job, run.token)).fetchone()
            if not mine:
                return  # taken over: the new holder owns the state now
            db.execute("DELETE FROM lease WHERE job=? AND token=?", (run.job, run.token))
            db.execute("INSERT OR IGNORE INTO state (job) VALUES (?)", (run.job,))
            if error is None:
                db.execute(
                    "UPDATE state SET last_success=?, failures=0, retry_after=NULL, watermark=?, last_error=NULL WHERE job=?",
                    (now, run.watermark, run.job),
                )
            else:
                failures = (db.execute("SELECT failures FROM state WHERE job=?", (run.job,)).fetchone()[0] or 0) + 1
                delay = min(BACKOFF_BASE * 2 ** (failures - 1), BACKOFF_MAX)
                db.execute(
                    "UPDATE state SET last_failure=?, failures=?, retry_after=?, last_error=? WHERE job=?",
                    (now, failures, now + delay, str(error)[:500], run.job),
                )

    @contextlib.contextmanager
    def lease(
        self, job: str, *, cooldown: float | None = None, force: bool = False, budget: int | None = None
    ) -> Iterator[Run]:
        """Hold ``job``'s lease for the block, renewing it in the background.

        The block's success records the watermark and starts the cooldown; an exception counts a
        failure (the next try waits ``60 s × 2^(failures-1)``, at most 6 h) and is re-raised.

        Args:
            job: ``compact``, ``dream``…
            cooldown: Seconds after a success before the next run (default :data:`COOLDOWNS`).
            force: Run despite the cooldown or a pending retry (never despite a live lease).
            budget: Tokens the run may spend (:meth:`Run.spend` enforces it).

        Raises:
            LeaseHeldError: Another live process holds the lease.
            CooldownError: Too soon after a success or a failure.
        """
        run = self._acquire(job, COOLDOWNS.get(job, 0.0) if cooldown is None else cooldown, force, budget)
        beat = threading.Thread(target=run._beat, name=f"memlane-{job}-lease", daemon=True)
        beat.start()
        error: BaseException | None = None
        try:
            yield run
        except BaseException as exc:
            error = exc
            raise
        finally:
            run._stop.set()
            beat.join()
            self._finish(run, error)
