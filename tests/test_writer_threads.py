"""One writer shared by Python threads: a thread waiting for the writer never holds the GIL
while it waits (the thread inside the writer needs the GIL back to return, so that wait was a
deadlock; the embedding feed hit it, writing vectors while another thread read the pending rows).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent(
    """
    import sys, threading
    from pathlib import Path
    sys.path.insert(0, sys.argv[2])
    from archive import generate
    from memlane import _core

    work = Path(sys.argv[1])
    generate(work / "archive", 120, 20)
    paths = sorted(str(p) for p in (work / "archive").rglob("*.jsonl"))
    writer = _core.Store(str(work / "home")).writer()
    started = threading.Event()

    def index():
        started.set()
        writer.index_files(paths)  # seconds, with the GIL released and the writer's mutex held

    t = threading.Thread(target=index)
    t.start()
    started.wait()
    for _ in range(200):  # each call waits for the mutex the indexing thread holds
        writer.pending_vectors()
    t.join()
    writer.commit()
    writer.close()
    print("done")
    """
)


def test_two_threads_sharing_a_writer_both_finish(tmp_path: Path) -> None:
    r = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path), str(REPO / "benches")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0 and r.stdout.strip() == "done", r.stderr
