"""File plumbing: an exclusive lock per folder and atomic writes (the brain's files, the events log's rotation).

Every read-modify-write of MEMORY.md, EVOLUTION.md, the archives and DailyActivity holds
:func:`brain_lock`, re-reads the files under it and replaces them with :func:`atomic_write`,
so concurrent writers queue instead of losing each other's entries and readers (who take no
lock) always see either the old or the new file, never a torn one.

Locking uses ``fcntl.flock`` on Linux and macOS. On Windows it falls back to
``msvcrt.locking`` on the lock file's first byte, which gives the same mutual exclusion
between processes on one machine. Neither is reliable on network file systems (NFS, SMB);
keep the brain folder on a local disk.

Example:
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> with brain_lock(d):
    ...     atomic_write(d / "MEMORY.md", "# MEMORY\\n")
    >>> (d / "MEMORY.md").read_text()
    '# MEMORY\\n'
"""

from __future__ import annotations

import contextlib
import glob
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from memlane.errors import MemlaneError

LOCK_NAME = ".memlane-brain.lock"
_POLL_SECONDS = 0.02


class BrainLockedError(MemlaneError):
    """Another process held the brain lock for longer than the timeout."""


def _try_lock(fd: int) -> bool:
    if sys.platform == "win32":
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _unlock(fd: int) -> None:
    if sys.platform == "win32":
        import msvcrt

        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
    else:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_UN)


@contextlib.contextmanager
def brain_lock(folder: Path, timeout: float = 30.0) -> Iterator[None]:
    """Hold the exclusive write lock of a brain folder (created if missing).

    Args:
        folder: The brain folder; the lock file is ``.memlane-brain.lock`` inside it.
        timeout: Seconds to wait for another writer before giving up.

    Raises:
        BrainLockedError: The lock stayed busy for ``timeout`` seconds.
    """
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + timeout
        # Polling rather than a blocking flock keeps the timeout portable and lets Ctrl-C in.
        while not _try_lock(fd):
            if time.monotonic() > deadline:
                raise BrainLockedError(f"{folder} is locked by another memlane writer (waited {timeout:.0f}s)")
            time.sleep(_POLL_SECONDS)
        try:
            yield
        finally:
            _unlock(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` (UTF-8) through a temporary file and a rename.

    The temporary file lives in the same folder so the rename is atomic; it is fsynced first
    (and the folder after the rename) so a crash leaves the old file or the new one, never a
    truncated one. Temporary files of ``path`` that a killed writer left are removed first:
    the caller holds :func:`brain_lock`, so no other write of it is in flight.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    for stale in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
        with contextlib.suppress(FileNotFoundError):
            stale.unlink()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        # mkstemp creates 0600; keep the old file's mode, or the usual 0644 for a new one.
        try:
            mode = path.stat().st_mode & 0o777
        except FileNotFoundError:
            mode = 0o644
        os.chmod(tmp, mode)
        os.replace(tmp, path)
        _sync_dir(path.parent)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _sync_dir(folder: Path) -> None:
    """Flush a folder's entries, so a rename in it survives a power loss (not on Windows)."""
    if sys.platform == "win32":
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_text(path: Path) -> str:
    """The file's text, or ``""`` when it does not exist yet (newlines kept as written)."""
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            return fh.read()
    except FileNotFoundError:
        return ""
