"""The job lease across processes and crashes: owner token, heartbeat, expiry, cooldown, backoff, watermark, ledger, budget."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memlane.timeline.lease import BudgetExceededError, CooldownError, Jobs, LeaseHeldError, LeaseLostError

HOLDER = """
import sys, time
from memlane.timeline.lease import Jobs
jobs = Jobs(sys.argv[1], ttl=float(sys.argv[2]))
with jobs.lease("dream", cooldown=0) as run:
    run.watermark = "from-child"
    print("held", flush=True)
    time.sleep(float(sys.argv[3]))
print("done", flush=True)
"""


def holder(home: Path, ttl: float, hold: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(home), str(ttl), str(hold)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_process_cannot_take_a_live_lease(tmp_path):
    proc = holder(tmp_path, ttl=30, hold=1.5)
    try:
        with (
            pytest.raises(LeaseHeldError, match=r"dream is running in .*:\d+"),
            Jobs(tmp_path).lease("dream", cooldown=0),
        ):
            pass
        assert Jobs(tmp_path).status("dream")["held_by"].endswith(f":{proc.pid}")
    finally:
        assert proc.wait(timeout=60) == 0
        proc.stdout.close()
    status = Jobs(tmp_path).status("dream")
    assert status["held_by"] is None and status["watermark"] == "from-child"
    assert [r["status"] for r in Jobs(tmp_path).ledger("dream")] == ["ok"]


def test_a_killed_holder_s_lease_expires_and_is_taken_over(tmp_path):
    # A lifetime of seconds, not one: on a busy machine the check below must come before expiry.
    proc = holder(tmp_path, ttl=4.0, hold=60)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    proc.stdout.close()
    with pytest.raises(LeaseHeldError):  # not expired yet: the heartbeat ran until the kill
        with Jobs(tmp_path, ttl=4.0).lease("dream", cooldown=0):
            pass
    deadline = time.monotonic() + 30
    while True:
        try:
            with Jobs(tmp_path, ttl=4.0).lease("dream", cooldown=0) as run:
                run.watermark = "after-crash"
            break
        except LeaseHeldError:
            assert time.monotonic() < deadline
            time.sleep(0.2)
    ledger = Jobs(tmp_path).ledger("dream")
    assert [r["status"] for r in ledger] == ["ok", "abandoned"]
    # The crashed run never saved its watermark: its inputs are consumed again, none lost.
    assert Jobs(tmp_path).status("dream")["watermark"] == "after-crash"


def test_a_run_whose_lease_was_taken_over_publishes_nothing(tmp_path):
    jobs = Jobs(tmp_path, ttl=0.3)
    with pytest.raises(LeaseLostError), jobs.lease("compact", cooldown=0) as run:
        run._stop.set()  # a frozen process: no heartbeat
        time.sleep(0.5)
        with Jobs(tmp_path, ttl=0.3).lease("compact", cooldown=0) as other:
            other.watermark = "other"
        run.check()
    assert Jobs(tmp_path).status("compact")["watermark"] == "other"
    assert sorted(r["status"] for r in Jobs(tmp_path).ledger("compact")) == ["lost", "ok"]


def test_cooldown_after_success_and_backoff_after_failure(tmp_path):
    jobs = Jobs(tmp_path)
    with jobs.lease("dream", cooldown=3600):
        pass
    with pytest.raises(CooldownError, match="--force"), jobs.lease("dream", cooldown=3600):
        pass
    with jobs.lease("dream", cooldown=3600, force=True):
        pass
    for n in (1, 2):
        with pytest.raises(RuntimeError), jobs.lease("compact", cooldown=0, force=True):
            raise RuntimeError("engine down")
        st = jobs.status("compact")
        assert st["failures"] == n and st["last_error"] == "engine down"
        assert st["retry_after"] - st["last_failure"] == pytest.approx(60 * 2 ** (n - 1))
    with pytest.raises(CooldownError, match="next try"), jobs.lease("compact", cooldown=0):
        pass
    with jobs.lease("compact", cooldown=0, force=True):
        pass
    assert jobs.status("compact")["failures"] == 0


def test_the_ledger_records_spend_and_enforces_the_budget(tmp_path):
    jobs = Jobs(tmp_path)
    with pytest.raises(BudgetExceededError), jobs.lease("dream", cooldown=0, budget=1500) as run:
        run.engine = "claude"
        assert run.affordable(1500) and not run.affordable(1501)
        run.spend(calls=1, input_tokens=900, output_tokens=100, cost_usd=0.01)
        run.spend(calls=1, input_tokens=900, output_tokens=100, cost_usd=0.01)
    row = jobs.ledger("dream")[0]
    assert (row["status"], row["calls"], row["tokens"], row["cost_usd"], row["budget_tokens"]) == (
        "failed",
        2,
        2000,
        0.02,
        1500,
    )
    assert "over its budget" in row["detail"]


def test_schedule_starts_compaction_and_dreaming_when_due(tmp_path):
    from datetime import date

    from memlane.timeline.schedule import due, run_due

    brain = tmp_path / "brain"
    for d in ("02", "03", "04", "05", "06"):
        p = brain / "DailyActivity" / f"2026-03-{d}.md"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"# 2026-03-{d}\n\n## 09:00 | w\n- We decided to pin uv to 0.4.{d}.\n")
    home = tmp_path / "home"
    assert due(home, brain, today=date(2026, 3, 6)) == ["dream"]  # the week is not over yet
    assert due(home, brain, today=date(2026, 3, 9)) == ["compact", "dream"]
    with Jobs(home).lease("dream", cooldown=0) as run:
        run.watermark = '{"daily": "2026-03-06", "events": 0}'
    assert due(home, brain, today=date(2026, 3, 9)) == ["compact"]  # nothing new since the watermark, and cooling down
    (brain / "Weekly").mkdir()
    (brain / "Weekly" / "2026-W10.md").write_text("---\ntype: weekly\n---\n")
    assert due(home, brain, today=date(2026, 3, 9)) == []
    assert run_due(home, brain, tmp_path / "log") == []
    (brain / "Weekly" / "2026-W10.md").unlink()
    assert run_due(home, brain, tmp_path / "log", embed="none") == ["compact"]  # a detached `memlane compact --if-due`
    from memlane.timeline import schedule

    assert schedule._SPAWNED[-1].wait(timeout=120) == 0, (tmp_path / "log").read_text()
    assert (brain / "Weekly" / "2026-W10.md").read_text().startswith("---\ntype: weekly\nperiod: 2026-W10\n")
