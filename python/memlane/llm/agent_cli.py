"""The user's coding-agent CLI (``claude`` or ``codex``) as a :class:`~memlane.llm.model.LanguageModel`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

from memlane.errors import InvalidArgumentError, LLMError
from memlane.llm.model import Usage, estimate_tokens

AGENT_CLIS = ("claude", "codex")
"""The coding-agent CLIs :class:`AgentCli` can run."""


class AgentCli:
    """A coding-agent CLI run as a subprocess, the prompt on stdin.

    ``claude``: ``claude -p --output-format json``; its JSON result carries the answer,
    ``usage`` and ``total_cost_usd``. ``codex``: ``codex exec --json -``; its JSONL events carry
    the answer (the last ``agent_message``) and the usage (``turn.completed``). A CLI that
    reports no usage is counted at 4 bytes a token. The executable is ``$MEMLANE_CLAUDE_BIN`` /
    ``$MEMLANE_CODEX_BIN`` or found on ``PATH``.

    Args:
        name: ``claude`` or ``codex``.
        executable: Path of the CLI (default as above).
        timeout: Seconds one call may take.

    Example:
        >>> AgentCli("claude", executable="/opt/bin/claude").command()
        ['/opt/bin/claude', '-p', '--output-format', 'json']
    """

    max_tokens = 2_000
    """The answer budget assumed for estimates (the CLI sets its own)."""

    def __init__(self, name: str, *, executable: str | None = None, timeout: float = 600.0) -> None:
        if name not in AGENT_CLIS:
            raise InvalidArgumentError(f"unknown agent CLI {name!r}: use claude or codex")
        self.name = name
        self.executable = executable or os.environ.get(f"MEMLANE_{name.upper()}_BIN") or shutil.which(name)
        self.timeout = timeout
        self.usage = Usage()

    def command(self) -> list[str]:
        """The command line (the prompt goes on stdin).

        Raises:
            LLMError: The CLI is not installed.
        """
        if not self.executable:
            raise LLMError(
                f"the {self.name} engine needs the `{self.name}` CLI on PATH (or ${'MEMLANE_' + self.name.upper() + '_BIN'})"
            )
        if self.name == "claude":
            return [self.executable, "-p", "--output-format", "json"]
        return [self.executable, "exec", "--json", "--skip-git-repo-check", "-"]

    def complete(self, system: str, prompt: str) -> str:
        """The CLI's answer; its tokens and cost are added to :attr:`usage`.

        Raises:
            LLMError: The CLI is missing, failed, timed out or printed no answer.
        """
        try:
            done = subprocess.run(
                self.command(),
                input=f"{system}\n\n{prompt}",
                capture_output=True,
                text=True,
                timeout=self.timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise LLMError(f"{self.name} did not answer within {self.timeout:.0f}s") from None
        except OSError as exc:
            raise LLMError(f"cannot run {self.executable}: {exc.strerror}") from None
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            raise LLMError(f"{self.name} exited with status {done.returncode}: {tail[0][:200]}")
        answer, used = (_claude_answer if self.name == "claude" else _codex_answer)(done.stdout)
        if not used.input_tokens and not used.output_tokens:
            used.input_tokens, used.output_tokens = estimate_tokens(system + prompt), estimate_tokens(answer)
        self.usage.add(used)
        return answer


def _claude_answer(stdout: str) -> tuple[str, Usage]:
    try:
        data = json.loads(stdout)
    except json.JSONDecodeError:
        raise LLMError("claude printed no JSON result (is it `claude -p --output-format json`?)") from None
    if not isinstance(data, dict) or data.get("is_error"):
        raise LLMError(f"claude reported an error: {str(data.get('result') if isinstance(data, dict) else data)[:200]}")
    u = data.get("usage") or {}
    tokens_in = sum(
        int(u.get(k) or 0) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    )
    return str(data.get("result") or ""), Usage(
        1, tokens_in, int(u.get("output_tokens") or 0), round(float(data.get("total_cost_usd") or 0.0), 6)
    )


def _codex_answer(stdout: str) -> tuple[str, Usage]:
    answer, used = "", Usage(1)
    for line in stdout.splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(event, dict):
            continue
        item = event.get("item") or {}
        if event.get("type") == "item.completed" and item.get("type") in ("agent_message", "assistant_message"):
            answer = str(item.get("text") or "")
        elif event.get("type") == "turn.completed":
            u = event.get("usage") or {}
            used.input_tokens += int(u.get("input_tokens") or 0)
            used.output_tokens += int(u.get("output_tokens") or 0)
        elif event.get("type") in ("turn.failed", "error"):
            raise LLMError(f"codex failed: {str(event.get('error') or event.get('message'))[:200]}")
    if not answer:
        raise LLMError("codex gave no answer (no agent_message in its --json events)")
    return answer, used
