"""The README's quick start works as written for a newcomer: a fresh HOME, no agent installed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from memlane.cli import _parser

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
sys.path.insert(0, str(REPO / "benches"))

from archive import generate  # noqa: E402 - benches/ is not a package


def _python_snippet() -> str:
    """The README's first Python block: its quick-start example."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    assert blocks, "README.md has no ```python block"
    return blocks[0]


def _demo_archive() -> str:
    """Where `make demo` writes its generated archive (the example's fallback), from the Makefile."""
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    venv = re.search(r"^VENV \?= (\S+)$", makefile, re.MULTILINE)
    archive = re.search(r"^DEMO_ARCHIVE := (\S+)$", makefile, re.MULTILINE)
    assert venv and archive
    return archive.group(1).replace("$(VENV)", venv.group(1))


def _fresh_env(home: Path) -> dict[str, str]:
    """The environment of a newcomer: this HOME, none of memlane's or the agents' variables."""
    drop = ("MEMLANE_", "XDG_", "CLAUDE_CONFIG_DIR", "CODEX_HOME")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    return {**env, "HOME": str(home), "PYTHONPATH": str(REPO / "python")}


@pytest.mark.model
def test_the_python_example_runs_as_written_on_a_fresh_home(tmp_path: Path) -> None:
    snippet = _python_snippet()
    archive = _demo_archive()
    assert archive in snippet, "the example's fallback is not the archive `make demo` generates"
    home = tmp_path / "user"
    home.mkdir()
    generate(tmp_path / archive, files=12, pairs_per_file=6)  # what `make demo` writes
    proc = subprocess.run(
        [sys.executable, "-c", snippet], cwd=tmp_path, env=_fresh_env(home), capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("12 files indexed"), proc.stdout
    hits = [line for line in lines[1:] if line.endswith(".jsonl")]
    assert hits and all(archive in hit for hit in hits), proc.stdout
    assert (home / ".local" / "share" / "memlane").is_dir()  # the default home, under the fresh HOME


def test_every_command_the_readme_shows_exists() -> None:
    text = README.read_text(encoding="utf-8")
    code = re.findall(r"```.*?```", text, re.DOTALL) + re.findall(
        r"`[^`\n]+`", re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    )
    named = set(re.findall(r"(?:^|[\s`(])memlane ([a-z][a-z-]+)", "\n".join(code), re.MULTILINE))
    commands = set(_parser()._subparsers._group_actions[0].choices)  # type: ignore[union-attr]
    assert "index" in named and named - commands == set()


def test_the_readme_stays_short() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 350
