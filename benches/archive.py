"""Generate a realistic Claude Code transcript archive for benchmarks (deterministic, no data files).

Each session is a chain of user prompts, assistant replies with tool calls (Bash, Read, Edit),
tool results and file paths, written as Claude Code session JSONL (one assistant content block
per line sharing `message.id`, as the real CLI does). The same conversations can be written as
Codex rollouts (`codex_lines`, both logs) and generic role/content lines (`generic_lines`).
"""

from __future__ import annotations

import itertools
import json
import random
from datetime import datetime, timedelta, timezone
from pathlib import Path

WORDS = [
    "deploy",
    "build",
    "cache",
    "index",
    "query",
    "latency",
    "memory",
    "vector",
    "token",
    "parser",
    "chunk",
    "session",
    "commit",
    "branch",
    "merge",
    "review",
    "test",
    "failure",
    "timeout",
    "retry",
    "backoff",
    "database",
    "postgres",
    "mysql",
    "redis",
    "kafka",
    "queue",
    "worker",
    "billing",
    "invoice",
    "customer",
    "schema",
    "migration",
    "rollback",
    "release",
    "canary",
    "metric",
    "alert",
    "pager",
    "incident",
    "config",
    "yaml",
    "docker",
    "kubernetes",
    "pod",
    "container",
    "node",
    "cluster",
    "region",
    "bucket",
    "policy",
    "secret",
    "rotate",
    "function",
    "module",
    "class",
    "method",
    "trait",
    "struct",
    "enum",
    "error",
    "panic",
    "stack",
    "trace",
    "log",
    "warning",
    "debug",
    "fix",
    "refactor",
    "rename",
    "extract",
    "inline",
    "benchmark",
    "profile",
    "flamegraph",
    "allocation",
    "thread",
    "lock",
    "mutex",
    "async",
]
FILES = [
    f"src/{a}/{b}.{ext}"
    for a in ("api", "core", "db", "ui", "jobs")
    for b in ("main", "handlers", "models", "utils", "config")
    for ext in ("py", "rs", "ts")
]
ERRORS = [
    "ERR_CONN_RESET",
    "ECONNREFUSED",
    "exit code 137",
    "OOMKilled",
    "SIGSEGV",
    "E0502",
    "HTTP 503",
    "deadlock detected",
]


def _pseudo_words(count: int, seed: int = 1) -> list[str]:
    """Pronounceable made-up words: a long tail of rare terms, as real text has."""
    rng = random.Random(seed)
    onsets, vowels, codas = "bcdfghjklmnprstvwz", "aeiou", ["", "n", "r", "s", "t", "l", "x"]
    out = set()
    while len(out) < count:
        out.add("".join(rng.choice(onsets) + rng.choice(vowels) + rng.choice(codas) for _ in range(rng.randint(2, 4))))
    return sorted(out)


STOPWORDS = [
    "the",
    "of",
    "and",
    "to",
    "a",
    "in",
    "is",
    "it",
    "that",
    "for",
    "on",
    "was",
    "with",
    "as",
    "be",
    "this",
    "are",
    "not",
    "but",
    "at",
    "by",
    "have",
    "from",
    "or",
    "an",
    "they",
    "which",
    "you",
    "one",
    "were",
    "all",
    "we",
    "when",
    "there",
    "can",
    "if",
    "has",
    "more",
    "will",
    "would",
    "so",
    "no",
    "out",
    "up",
    "what",
    "about",
    "into",
    "them",
]
# Zipf-distributed vocabulary (s = 1.07, like English): function words at the head, then the
# technical words, then 30k pseudo-words as the tail, so posting lists have realistic lengths.
VOCAB = STOPWORDS + WORDS + _pseudo_words(30_000)
_CUM_WEIGHTS = list(itertools.accumulate(1.0 / (rank + 1) ** 1.07 for rank in range(len(VOCAB))))


def words(rng: random.Random, n: int) -> list[str]:
    """`n` words drawn from the Zipf vocabulary."""
    return rng.choices(VOCAB, cum_weights=_CUM_WEIGHTS, k=n)


def _sentence(rng: random.Random, n: int) -> str:
    words_ = words(rng, n)
    if rng.random() < 0.3:
        words_.insert(rng.randrange(len(words_)), rng.choice(ERRORS))
    if rng.random() < 0.4:
        words_.insert(rng.randrange(len(words_)), rng.choice(FILES))
    return " ".join(words_).capitalize() + "."


def _paragraph(rng: random.Random, sentences: int) -> str:
    return " ".join(_sentence(rng, rng.randint(8, 20)) for _ in range(sentences))


def session_lines(
    rng: random.Random,
    session_id: str,
    pairs: int,
    start: datetime,
    parent: str | None = None,
    uuid_prefix: str | None = None,
) -> list[str]:
    """JSONL lines of one session with `pairs` user/assistant exchanges.

    `parent` continues an existing uuid chain (an append to a live transcript); `uuid_prefix`
    keeps appended uuids unique.
    """
    lines: list[str] = []
    prefix = uuid_prefix or session_id
    t = start
    n = 0

    def emit(record: dict) -> None:
        nonlocal parent, n, t
        n += 1
        t += timedelta(seconds=rng.randint(2, 40))
        uid = f"{prefix}-{n}"
        record.update(
            uuid=uid,
            parentUuid=parent,
            sessionId=session_id,
            timestamp=t.isoformat().replace("+00:00", "Z"),
            cwd="/home/dev/project",
            version="2.1.0",
            userType="external",
            isSidechain=False,
        )
        parent = uid
        lines.append(json.dumps(record))

    for p in range(pairs):
        emit({"type": "user", "message": {"role": "user", "content": _paragraph(rng, rng.randint(1, 3))}})
        msg_id = f"msg_{session_id}_{p}"
        emit(
            {
                "type": "assistant",
                "message": {
                    "id": msg_id,
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-sonnet",
                    "content": [{"type": "text", "text": _paragraph(rng, rng.randint(2, 6))}],
                },
            }
        )
        if rng.random() < 0.6:
            tool = rng.choice(["Bash", "Read", "Edit"])
            path = rng.choice(FILES)
            tool_input = (
                {"command": f"pytest {path} -x"} if tool == "Bash" else {"file_path": f"/home/dev/project/{path}"}
            )
            emit(
                {
                    "type": "assistant",
                    "message": {
                        "id": msg_id,
                        "type": "message",
                        "role": "assistant",
                        "model": "claude-sonnet",
                        "content": [{"type": "tool_use", "id": f"toolu_{p}", "name": tool, "input": tool_input}],
                    },
                }
            )
            output = "\n".join(_sentence(rng, 12) for _ in range(rng.randint(3, 30)))
            emit(
                {
                    "type": "user",
                    "message": {
                        "role": "user",
                        "content": [{"type": "tool_result", "tool_use_id": f"toolu_{p}", "content": output}],
                    },
                    "toolUseResult": {"stdout": output, "stderr": "", "interrupted": False},
                }
            )
            emit(
                {
                    "type": "assistant",
                    "message": {
                        "id": msg_id + "b",
                        "type": "message",
                        "role": "assistant",
                        "model": "claude-sonnet",
                        "content": [{"type": "text", "text": _paragraph(rng, rng.randint(1, 3))}],
                    },
                }
            )
    return lines


def _exchanges(rng: random.Random, pairs: int):
    """(prompt, reply, tool call or None, tool output, follow-up) of `pairs` exchanges."""
    for p in range(pairs):
        prompt, reply = _paragraph(rng, rng.randint(1, 3)), _paragraph(rng, rng.randint(2, 6))
        call, output, follow = None, "", ""
        if rng.random() < 0.6:
            call = f"pytest {rng.choice(FILES)} -x"
            output = "\n".join(_sentence(rng, 12) for _ in range(rng.randint(3, 30)))
            follow = _paragraph(rng, rng.randint(1, 3))
        yield p, prompt, reply, call, output, follow


def codex_lines(rng: random.Random, session_id: str, pairs: int, start: datetime, header: bool = True) -> list[str]:
    """A Codex rollout (envelope layout) of `pairs` exchanges, with both the `response_item`
    and the `event_msg` log, as the CLI writes them; `header=False` for an append."""
    lines: list[str] = []
    t = start

    def emit(kind: str, payload: dict) -> None:
        nonlocal t
        t += timedelta(seconds=rng.randint(2, 40))
        lines.append(json.dumps({"timestamp": t.isoformat().replace("+00:00", "Z"), "type": kind, "payload": payload}))

    if header:
        emit(
            "session_meta",
            {"id": session_id, "cwd": "/home/dev/project", "originator": "codex_cli_rs", "source": "cli"},
        )
    for p, prompt, reply, call, output, follow in _exchanges(rng, pairs):
        emit("turn_context", {"cwd": "/home/dev/project", "model": "gpt-5"})
        emit("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]})
        emit("event_msg", {"type": "user_message", "message": prompt})
        emit(
            "response_item",
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": reply}]},
        )
        emit("event_msg", {"type": "agent_message", "message": reply})
        if call:
            args = json.dumps({"command": call.split()})
            emit(
                "response_item",
                {"type": "function_call", "name": "shell", "arguments": args, "call_id": f"call_{session_id}_{p}"},
            )
            emit(
                "response_item", {"type": "function_call_output", "call_id": f"call_{session_id}_{p}", "output": output}
            )
            emit(
                "response_item",
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": follow}]},
            )
            emit("event_msg", {"type": "agent_message", "message": follow})
    return lines


def generic_lines(rng: random.Random, session_id: str, pairs: int, start: datetime) -> list[str]:
    """Generic `{"id","role","content","timestamp"}` lines of `pairs` exchanges."""
    lines: list[str] = []
    t = start

    def emit(role: str, content: str, **extra: object) -> None:
        nonlocal t
        t += timedelta(seconds=rng.randint(2, 40))
        lines.append(
            json.dumps(
                {
                    "id": f"{session_id}-{len(lines)}",
                    "role": role,
                    "content": content,
                    "timestamp": t.isoformat().replace("+00:00", "Z"),
                    **extra,
                }
            )
        )

    for _, prompt, reply, call, output, follow in _exchanges(rng, pairs):
        emit("user", prompt)
        emit("assistant", reply)
        if call:
            emit("tool_call", "", tool_name="Bash", parameters={"command": call})
            emit("tool_result", output)
            emit("assistant", follow)
    return lines


def generate(root: Path, files: int, pairs_per_file: int, seed: int = 7) -> int:
    """Write `files` sessions under `root/<project>/<uuid>.jsonl`; returns total bytes."""
    rng = random.Random(seed)
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    total = 0
    for i in range(files):
        project = root / f"-home-dev-project{i % 12}"
        project.mkdir(parents=True, exist_ok=True)
        sid = f"{i:08x}-0000-4000-8000-{i:012x}"
        text = "\n".join(session_lines(rng, sid, pairs_per_file, start + timedelta(hours=i))) + "\n"
        (project / f"{sid}.jsonl").write_text(text)
        total += len(text)
    return total
