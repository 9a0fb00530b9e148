"""``memlane install-hooks``, ``uninstall-hooks`` and ``doctor``: wire memlane into Claude Code and Codex, check it, take it out.

Claude Code (``~/.claude/settings.json``, or ``$CLAUDE_CONFIG_DIR/settings.json``):

- ``SessionStart`` → ``memlane hook claude-code session-start`` (snapshot + pre-session recall);
- ``UserPromptSubmit`` → recall on the first prompt of a session;
- ``Stop``, ``PreCompact``, ``SessionEnd`` → queue the transcript for the detached indexer;
  ``PreCompact`` and ``SessionEnd`` also distil what no distillation covered yet (``--distill
  off`` turns that off);
- the MCP server, user scope, in ``~/.claude.json`` (``mcpServers.memlane``), the file
  ``claude mcp add --scope user`` writes.

Codex (``~/.codex`` or ``$CODEX_HOME``): the same ``SessionStart``, ``UserPromptSubmit`` and
``Stop`` hooks in ``hooks.json`` (Codex has no session-end or pre-compact event that carries a
transcript, so its sessions are indexed turn by turn and distilled every twenty turns), the MCP server as
``[mcp_servers.memlane]`` in ``config.toml``, and with ``--notify`` the legacy
``notify = [...]`` program for Codex versions without hooks (which can only index: ``notify``
cannot inject context, so those versions reach memory through the MCP server alone).

Installing is idempotent: memlane's own entries are replaced, everything else is kept, and a
file that changes is first copied to ``<file>.memlane-backup-<time>``. Uninstalling is too: it puts
a backup back when memlane's entries are all the file gained since, else it takes out only
memlane's entries; other tools' hooks and servers stay.

Example:
    >>> import tempfile, json, pathlib
    >>> settings = pathlib.Path(tempfile.mkdtemp()) / "settings.json"
    >>> r = install_claude_code(settings, home="/data/memlane", memlane="/usr/bin/memlane", claude_json=None)
    >>> sorted(json.loads(settings.read_text())["hooks"])
    ['PreCompact', 'SessionEnd', 'SessionStart', 'Stop', 'UserPromptSubmit']
    >>> install_claude_code(settings, home="/data/memlane", memlane="/usr/bin/memlane", claude_json=None).changed
    []
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from os import PathLike
from pathlib import Path
from typing import Any

from memlane.errors import InvalidDataError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

# (client event name, our event, matcher or None, timeout seconds)
CLAUDE_HOOKS = (
    ("SessionStart", "session-start", "startup|resume|clear|compact", 30),
    ("UserPromptSubmit", "user-prompt-submit", None, 30),
    ("Stop", "stop", None, 10),
    ("PreCompact", "pre-compact", None, 10),
    ("SessionEnd", "session-end", None, 10),
)
CODEX_HOOKS = (
    ("SessionStart", "session-start", "startup|resume|clear", 30),
    ("UserPromptSubmit", "user-prompt-submit", None, 30),
    ("Stop", "stop", None, 10),
)
CLAUDE_DEFAULT_CLEANUP_DAYS = 30
"""Claude Code deletes transcripts older than ``cleanupPeriodDays`` (default 30) at start-up."""
_EXPIRY_MARGIN_DAYS = 2
_OURS = re.compile(r"(?:^|[\s/\\'\"])(?:memlane|memlane\.cli)['\"]?\s.*\bhook\s.*\b(?:claude-code|codex)\s")


@dataclass
class InstallReport:
    """What ``install-hooks`` wrote."""

    client: str
    changed: list[str] = field(default_factory=list)
    backups: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return asdict(self)


def memlane_executable() -> list[str]:
    """How hooks should start memlane: the console script beside this Python, else on PATH, else ``python -m``."""
    script = Path(sys.executable).parent / ("memlane.exe" if sys.platform == "win32" else "memlane")
    if script.is_file():
        return [str(script)]
    found = shutil.which("memlane")
    return [found] if found else [sys.executable, "-m", "memlane.cli"]


def claude_dir() -> Path:
    """``$CLAUDE_CONFIG_DIR``, else ``~/.claude``."""
    return Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude").expanduser()


def claude_json_path() -> Path:
    """Claude Code's user-scope state file holding ``mcpServers``: ``~/.claude.json`` (inside ``$CLAUDE_CONFIG_DIR`` when set)."""
    if env := os.environ.get("CLAUDE_CONFIG_DIR"):
        return Path(env).expanduser() / ".claude.json"
    return Path.home() / ".claude.json"


def codex_dir() -> Path:
    """``$CODEX_HOME``, else ``~/.codex``."""
    return Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex").expanduser()


def _command(memlane: list[str], *args: str) -> str:
    return " ".join(shlex.quote(a) for a in [*memlane, *args])


def _read_json(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidDataError(
            f"cannot read {path}: not JSON ({exc.msg} at line {exc.lineno}); fix it first, nothing was written"
        ) from None
    if not isinstance(data, dict):
        raise InvalidDataError(f"cannot read {path}: expected a JSON object; fix it first, nothing was written")
    return data


def _read_toml(path: Path) -> tuple[str, dict[str, Any]]:
    """A TOML file's text and data (empty when it does not exist)."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    try:
        return text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidDataError(f"cannot read {path}: {exc}; fix it first, nothing was written") from None


def _write(path: Path, text: str, report: InstallReport) -> None:
    """Back the old file up, then replace it atomically; record what happened."""
    from memlane._fs import atomic_write

    old = path.read_text(encoding="utf-8") if path.exists() else None
    if old == text:
        report.unchanged.append(str(path))
        return
    if old is not None:
        stamp = time.strftime("%Y%m%dT%H%M%S")
        backup = path.with_name(f"{path.name}.memlane-backup-{stamp}")
        # A second write within the same second keeps the first backup (uninstall restores from it).
        n = 1
        while backup.exists():
            n += 1
            backup = path.with_name(f"{path.name}.memlane-backup-{stamp}-{n}")
        shutil.copy2(path, backup)
        report.backups.append(str(backup))
    atomic_write(path, text)
    report.changed.append(str(path))


def _is_ours(handler: Any) -> bool:
    return (
        isinstance(handler, dict)
        and isinstance(handler.get("command"), str)
        and bool(_OURS.search(" " + handler["command"]))
    )


def merge_hooks(settings: dict[str, Any], wanted: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """``settings`` with memlane's hook handlers replaced by ``wanted`` (event → matcher groups), others kept.

    Example:
        >>> s = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}}
        >>> new = {"Stop": [{"hooks": [{"type": "command", "command": "memlane hook claude-code stop"}]}]}
        >>> [h["command"] for g in merge_hooks(s, new)["hooks"]["Stop"] for h in g["hooks"]]
        ['say done', 'memlane hook claude-code stop']
    """
    out: dict[str, Any] = json.loads(json.dumps(settings))
    hooks = out.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise InvalidDataError('the settings\' "hooks" is not an object; fix it first, nothing was written')
    for event, groups in list(hooks.items()):
        if not isinstance(groups, list):
            continue
        kept = []
        for g in groups:
            if isinstance(g, dict) and isinstance(g.get("hooks"), list):
                g = {**g, "hooks": [h for h in g["hooks"] if not _is_ours(h)]}
                if not g["hooks"]:
                    continue
            kept.append(g)
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]
    for event, groups in wanted.items():
        hooks.setdefault(event, []).extend(groups)
    return out


def _wanted(
    table: tuple[tuple[str, str, str | None, int], ...],
    client: str,
    memlane: list[str],
    home: str,
    embed: str,
    distill: str | None,
) -> dict[str, list[dict[str, Any]]]:
    from memlane.agents.queue import distill_min_turns

    wanted: dict[str, list[dict[str, Any]]] = {}
    for name, event, matcher, timeout in table:
        args = ["hook", client, event, "--home", home]
        if event not in ("session-start", "user-prompt-submit") and embed != "local":
            args += ["--embed", embed]
        if distill and distill_min_turns(client, event) is not None:
            args += ["--distill", distill]
        group: dict[str, Any] = {"matcher": matcher} if matcher else {}
        group["hooks"] = [{"type": "command", "command": _command(memlane, *args), "timeout": timeout}]
        wanted[name] = [group]
    return wanted


def _dump(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def install_claude_code(
    settings: str | PathLike[str] | None = None,
    *,
    home: str | PathLike[str],
    memlane: str | list[str] | None = None,
    claude_json: str | PathLike[str] | bool | None = True,
    embed: str = "local",
    distill: str | None = None,
) -> InstallReport:
    """Write memlane's hooks into Claude Code's settings and register its MCP server.

    Args:
        settings: The settings file (default ``~/.claude/settings.json``).
        home: The memlane home the hooks and the server use.
        memlane: The memlane executable (default :func:`memlane_executable`).
        claude_json: Where to register the MCP server: ``True`` for :func:`claude_json_path`,
            a path, or ``None``/``False`` to skip it.
        embed: Embedder the indexing worker uses (``local``, ``bedrock…``, ``none``).
        distill: The session hooks' distillation: ``extractive``, ``bedrock`` or ``off`` (default:
            the hooks' own, ``$MEMLANE_DISTILL`` else ``extractive``).

    Raises:
        InvalidDataError: A settings file is not valid JSON (nothing is written).
    """
    exe = [memlane] if isinstance(memlane, str) else (memlane or memlane_executable())
    home_s = str(Path(home).expanduser())
    path = Path(settings).expanduser() if settings else claude_dir() / "settings.json"
    report = InstallReport("claude-code")
    data = merge_hooks(_read_json(path), _wanted(CLAUDE_HOOKS, "claude-code", exe, home_s, embed, distill))
    days = data.get("cleanupPeriodDays", CLAUDE_DEFAULT_CLEANUP_DAYS)
    if isinstance(days, (int, float)) and days < 7:
        report.notes.append(
            f"cleanupPeriodDays is {days}: Claude Code deletes transcripts that old; memlane indexes each at every Stop and keeps a copy, so what it indexed stays"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    _write(path, _dump(data), report)
    if claude_json:
        cj = claude_json_path() if claude_json is True else Path(claude_json).expanduser()
        state = _read_json(cj)
        servers = state.setdefault("mcpServers", {})
        servers["memlane"] = {
            "type": "stdio",
            "command": exe[0],
            "args": [*exe[1:], "mcp", "--home", home_s],
            "env": {},
        }
        _write(cj, _dump(state), report)
    return report


def _toml_str(value: str) -> str:
    # A JSON string is a valid TOML basic string (same escapes, \uXXXX included).
    return json.dumps(value)


def _toml_array(values: list[str]) -> str:
    return "[" + ", ".join(_toml_str(v) for v in values) + "]"


def install_codex(
    codex_home: str | PathLike[str] | None = None,
    *,
    home: str | PathLike[str],
    memlane: str | list[str] | None = None,
    mcp: bool = True,
    notify: bool = False,
    embed: str = "local",
    distill: str | None = None,
) -> InstallReport:
    """Write memlane's hooks into Codex's ``hooks.json`` and its MCP server (and ``notify``) into ``config.toml``.

    ``distill`` is as :func:`install_claude_code`'s (Codex distils every twenty turns).

    Raises:
        InvalidDataError: ``hooks.json`` or ``config.toml`` does not parse (nothing is written).
    """
    exe = [memlane] if isinstance(memlane, str) else (memlane or memlane_executable())
    home_s = str(Path(home).expanduser())
    root = Path(codex_home).expanduser() if codex_home else codex_dir()
    report = InstallReport("codex")
    hooks_path = root / "hooks.json"
    config_path = root / "config.toml"
    config_text, config = _read_toml(config_path)
    data = merge_hooks(_read_json(hooks_path), _wanted(CODEX_HOOKS, "codex", exe, home_s, embed, distill))
    root.mkdir(parents=True, exist_ok=True)
    _write(hooks_path, _dump(data), report)

    features = config.get("features", {})
    if features.get("hooks") is False or features.get("codex_hooks") is False:
        report.notes.append(f"{config_path} turns hooks off ([features] hooks = false): memlane's hooks will not run")
    new_text = config_text
    if mcp and "memlane" not in config.get("mcp_servers", {}):
        table = f"\n[mcp_servers.memlane]\ncommand = {_toml_str(exe[0])}\nargs = {_toml_array([*exe[1:], 'mcp', '--home', home_s])}\n"
        new_text = new_text.rstrip("\n") + ("\n" if new_text.strip() else "") + table
    if notify:
        # Codex appends the payload as the last argument: options go before the event, so
        # argparse reads the event and the payload as one run of positionals.
        opts = (["--embed", embed] if embed != "local" else []) + (["--distill", distill] if distill else [])
        line = f"notify = {_toml_array([*exe, 'hook', '--home', home_s, 'codex', *opts, 'notify'])}\n"
        current = config.get("notify")
        if current is None:
            # A top-level key must come before the first table header.
            m = re.search(r"^\s*\[", new_text, re.MULTILINE)
            new_text = new_text[: m.start()] + line + "\n" + new_text[m.start() :] if m else new_text + line
        elif not any("memlane" in str(a) for a in current):
            report.notes.append(
                f"{config_path} already has notify = {current}: left as is (the Stop hook indexes anyway)"
            )
    if new_text != config_text:
        tomllib.loads(new_text)  # never write a file Codex cannot read
        _write(config_path, new_text, report)
    else:
        report.unchanged.append(str(config_path))
    return report


# -- uninstall-hooks ------------------------------------------------------------------------


def _backups(path: Path) -> list[Path]:
    """The copies :func:`_write` made of ``path``, newest first (their names sort by time)."""
    return sorted(path.parent.glob(f"{path.name}.memlane-backup-*"), reverse=True)


def _without_hooks(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` without memlane's hook handlers, and without a ``hooks`` object left empty."""
    out = merge_hooks(data, {})
    if not out["hooks"]:
        del out["hooks"]
    return out


def _without_server(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` without ``mcpServers.memlane``, and without an ``mcpServers`` object left empty."""
    out: dict[str, Any] = json.loads(json.dumps(data))
    servers = out.get("mcpServers")
    if isinstance(servers, dict):
        servers.pop("memlane", None)
        if not servers:
            del out["mcpServers"]
    return out


def _has_hooks(data: dict[str, Any]) -> bool:
    return isinstance(data.get("hooks"), dict) and bool(_hook_commands(data))


def _has_server(data: dict[str, Any]) -> bool:
    servers = data.get("mcpServers")
    return isinstance(servers, dict) and "memlane" in servers


def _uninstall_json(
    path: Path,
    ours: Callable[[dict[str, Any]], bool],
    strip: Callable[[dict[str, Any]], dict[str, Any]],
    report: InstallReport,
) -> None:
    """Take memlane's entries out of a JSON file, restoring a backup when they are all it adds.

    A backup is put back byte for byte only when, memlane's entries aside, the file holds the
    same as the backup: whatever another tool or the user wrote since install stays. Otherwise
    only memlane's entries go. A file that install-hooks created (no backup) and that holds
    nothing else is removed.
    """
    if not path.exists():
        return
    data = _read_json(path)
    if not ours(data):
        report.unchanged.append(str(path))
        return
    stripped = strip(data)
    for backup in _backups(path):
        try:
            before = _read_json(backup)
        except InvalidDataError:
            continue
        if not ours(before) and strip(before) == stripped:
            _write(path, backup.read_text(encoding="utf-8"), report)
            report.notes.append(f"{path} restored from {backup}")
            return
    if not stripped and not _backups(path):
        path.unlink()
        report.changed.append(str(path))
        report.notes.append(f"{path} removed: install-hooks created it and it held nothing else")
        return
    _write(path, _dump(stripped), report)


def uninstall_claude_code(
    settings: str | PathLike[str] | None = None,
    *,
    claude_json: str | PathLike[str] | bool | None = True,
) -> InstallReport:
    """Take memlane's hooks out of Claude Code's settings and its MCP server out of ``~/.claude.json``.

    Idempotent; other tools' hooks and servers are never touched.

    Args:
        settings: The settings file (default ``~/.claude/settings.json``).
        claude_json: Where the MCP server is registered: ``True`` for :func:`claude_json_path`,
            a path, or ``None``/``False`` to leave it.

    Raises:
        InvalidDataError: A file is not valid JSON (nothing is written).
    """
    path = Path(settings).expanduser() if settings else claude_dir() / "settings.json"
    cj = None
    if claude_json:
        cj = claude_json_path() if claude_json is True else Path(claude_json).expanduser()
    for p in (path, cj):  # both readable before either is written
        if p is not None:
            _read_json(p)
    report = InstallReport("claude-code")
    _uninstall_json(path, _has_hooks, _without_hooks, report)
    if cj is not None:
        _uninstall_json(cj, _has_server, _without_server, report)
    return report


_MEMLANE_TABLE = re.compile(r"^\s*\[\s*mcp_servers\s*\.\s*(?:memlane|\"memlane\")\s*[\].]")
_TABLE = re.compile(r"^\s*\[")


def _is_our_notify(line: str) -> bool:
    """Is ``line`` a one-line ``notify = [...]`` that runs memlane (what ``--notify`` writes)?"""
    if not line.lstrip().startswith("notify"):
        return False
    try:
        value = tomllib.loads(line).get("notify")
    except tomllib.TOMLDecodeError:
        return False
    return isinstance(value, list) and any("memlane" in str(a) for a in value)


def _without_codex_entries(text: str) -> str:
    """``config.toml`` text without ``[mcp_servers.memlane]`` (and its sub-tables) and without the
    top-level ``notify`` that runs memlane, with the blank line install-hooks put beside each;
    every other line is kept as it was."""
    kept: list[str] = []
    in_ours, top_level, after_notify = False, True, False
    for line in text.splitlines(keepends=True):
        if _TABLE.match(line):
            top_level = False
            in_ours = bool(_MEMLANE_TABLE.match(line))
            if in_ours:
                while kept and not kept[-1].strip():
                    kept.pop()
        if in_ours:
            continue
        if after_notify and not line.strip():
            after_notify = False
            continue
        after_notify = top_level and _is_our_notify(line)
        if not after_notify:
            kept.append(line)
    return "".join(kept)


def uninstall_codex(codex_home: str | PathLike[str] | None = None) -> InstallReport:
    """Take memlane's hooks out of Codex's ``hooks.json`` and its MCP server and ``notify`` out of ``config.toml``.

    Idempotent; other tools' entries are never touched. ``config.toml`` goes back to its backup
    when memlane's entries are all that differ from it, else only those entries are cut out.

    Raises:
        InvalidDataError: ``hooks.json`` or ``config.toml`` does not parse (nothing is written).
    """
    root = Path(codex_home).expanduser() if codex_home else codex_dir()
    hooks_path, config_path = root / "hooks.json", root / "config.toml"
    _read_json(hooks_path)
    config_text, _ = _read_toml(config_path)
    report = InstallReport("codex")
    _uninstall_json(hooks_path, _has_hooks, _without_hooks, report)
    if not config_path.exists():
        return report
    new_text = _without_codex_entries(config_text)
    if new_text == config_text:
        report.unchanged.append(str(config_path))
        return report
    new = tomllib.loads(new_text)
    for backup in _backups(config_path):
        old_text = backup.read_text(encoding="utf-8")
        try:
            if _without_codex_entries(old_text) == old_text and tomllib.loads(old_text) == new:
                _write(config_path, old_text, report)
                report.notes.append(f"{config_path} restored from {backup}")
                return report
        except tomllib.TOMLDecodeError:
            continue
    if not new_text.strip() and not _backups(config_path):
        config_path.unlink()
        report.changed.append(str(config_path))
        report.notes.append(f"{config_path} removed: install-hooks created it and it held nothing else")
        return report
    _write(config_path, new_text, report)
    return report


def queue_backfill(home: str | PathLike[str], folder: Path, *, client: str, embed: str = "local") -> bool:
    """Queue the client's existing transcripts for the background indexer and start it; False if there are none."""
    from memlane.agents.queue import queue_entry, spawn_worker

    if not folder.is_dir():
        return False
    queue_entry(home, {"transcript_path": str(folder), "session_id": ""}, client=client, event="backfill", embed=embed)
    spawn_worker(home)
    return True


# -- doctor -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Check:
    """One finding of :func:`doctor`: ``level`` is ``ok``, ``warning`` or ``error``."""

    name: str
    level: str
    message: str

    def to_dict(self) -> dict[str, str]:
        """JSON-ready fields."""
        return asdict(self)


def _hook_commands(settings: dict[str, Any]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for event, groups in (settings.get("hooks") or {}).items():
        for g in groups if isinstance(groups, list) else []:
            for h in g.get("hooks", []) if isinstance(g, dict) else []:
                if _is_ours(h):
                    out.setdefault(event, []).append(h["command"])
    return out


def _runnable(command: str) -> bool:
    try:
        exe = shlex.split(command)[0]
    except (ValueError, IndexError):
        return False
    return Path(exe).is_file() or shutil.which(exe) is not None


def _check_hooks(name: str, path: Path, table: tuple[tuple[str, str, str | None, int], ...]) -> list[Check]:
    try:
        data = _read_json(path)
    except ValueError as exc:
        return [Check(name, "error", str(exc))]
    client = name.split()[0]
    found = _hook_commands(data)
    missing = [event for event, *_ in table if event not in found]
    if len(missing) == len(table):
        return [Check(name, "error", f"no memlane hooks in {path}: run `memlane install-hooks {client}`")]
    checks = []
    if data.get("disableAllHooks") is True:
        checks.append(Check(name, "error", f"{path} sets disableAllHooks: true, so no hook runs"))
    if missing:
        checks.append(
            Check(
                name,
                "warning",
                f"{path} lacks memlane's {', '.join(missing)} hook(s): run `memlane install-hooks {client}` again",
            )
        )
    broken = sorted({c for cmds in found.values() for c in cmds if not _runnable(c)})
    if broken:
        checks.append(
            Check(
                name,
                "error",
                f"hook command not found: {broken[0]} (memlane moved? run `memlane install-hooks {client}` again)",
            )
        )
    if not checks:
        checks.append(Check(name, "ok", f"{len(found)} hooks installed in {path}"))
    return checks


def _indexed_files(home: Path) -> dict[str, dict[str, Any]]:
    try:
        return dict(json.loads((home / "manifest.json").read_text(encoding="utf-8")).get("files", {}))
    except (OSError, ValueError):
        return {}


def _retention(home: Path, settings: dict[str, Any], projects: Path, now: float) -> Check:
    """Will Claude Code delete a transcript before memlane indexed it?"""
    days = settings.get("cleanupPeriodDays", CLAUDE_DEFAULT_CLEANUP_DAYS)
    if not isinstance(days, (int, float)) or days < 0:
        return Check("transcript retention", "warning", f"cleanupPeriodDays = {days!r} is not a number of days")
    indexed = _indexed_files(home)
    at_risk, unindexed = [], 0
    for f in projects.rglob("*.jsonl") if projects.is_dir() else []:
        try:
            st = f.stat()
        except OSError:
            continue
        known = indexed.get(str(f))
        if known and known.get("size") == st.st_size:
            continue
        unindexed += 1
        if now - st.st_mtime > (days - _EXPIRY_MARGIN_DAYS) * 86400:
            at_risk.append(f)
    if days == 0:
        return Check(
            "transcript retention",
            "error",
            "cleanupPeriodDays = 0: Claude Code keeps no transcripts, memlane has nothing to index; raise it (default 30)",
        )
    if at_risk:
        return Check(
            "transcript retention",
            "error",
            f"{len(at_risk)} transcript(s) are not indexed and Claude Code deletes them within {_EXPIRY_MARGIN_DAYS} days "
            f"(cleanupPeriodDays = {days}), e.g. {at_risk[0]}: run `memlane index` now",
        )
    if unindexed:
        return Check(
            "transcript retention",
            "warning",
            f"{unindexed} transcript(s) not indexed yet, none near the {days}-day cleanup: the hooks queue them; `memlane index` catches up at once",
        )
    return Check(
        "transcript retention",
        "ok",
        f"no transcript waits to be indexed; Claude Code deletes them after {days} days (cleanupPeriodDays), "
        "memlane keeps what it indexed (`memlane forget --missing` lets them go)",
    )


def _check_queue(home: Path, now: float) -> Check:
    from memlane.agents.queue import QUEUE_DIR, pending

    entries = pending(home)
    log = home / QUEUE_DIR / "worker.log"
    if not entries:
        return Check("index queue", "ok", "empty: every queued transcript is indexed")
    oldest = min((e.get("queued_at") or "" for e in entries), default="")
    try:
        from datetime import datetime

        age = now - datetime.fromisoformat(oldest).timestamp()
    except ValueError:
        age = 0.0
    if age > 3600:
        return Check(
            "index queue",
            "warning",
            f"{len(entries)} transcript(s) queued for over an hour: see {log}, or run `memlane hook drain`",
        )
    return Check("index queue", "ok", f"{len(entries)} transcript(s) being indexed")


def _check_home(home: Path) -> Check:
    """The fast part of ``memlane verify``: what would make searches miss or fail."""
    import memlane

    try:
        v = memlane.open(home, embedder="none").verify(thorough=False)
    except memlane.IndexLockedError:
        return Check("home", "ok", f"{home}: an index run is writing to it; `memlane verify` checks it afterwards")
    except Exception as exc:
        return Check("home", "error", f"{home} does not open: {exc}")
    problems = [f for f in v["findings"] if f["severity"] == "problem"]
    if problems:
        first = problems[0]
        more = f" (and {len(problems) - 1} more: `memlane verify`)" if len(problems) > 1 else ""
        return Check("home", "error", f"{first['path']}: {first['message']}{more}; `memlane repair` mends it")
    return Check("home", "ok", f"{home}: {v['chunks']:,} chunks from {v['files']:,} files, consistent")


def _client_absent(client: str, folder: Path) -> list[Check]:
    """The hooks and MCP checks of a client whose folder does not exist: nothing of memlane's is
    installed there. Warnings, not errors: a machine may well have one agent and not the other."""
    fix = f"`memlane install-hooks {client}` installs them"
    return [
        Check(
            f"{client} hooks",
            "warning",
            f"no memlane hooks: {folder} does not exist ({client} not set up here?); {fix}",
        ),
        Check(f"{client} mcp", "warning", f"memlane is not registered: `memlane install-hooks {client}` registers it"),
    ]


def doctor(
    home: str | PathLike[str],
    *,
    settings: str | PathLike[str] | None = None,
    claude_json: str | PathLike[str] | None = None,
    codex_home: str | PathLike[str] | None = None,
    now: float | None = None,
) -> list[Check]:
    """Check the memlane setup: the home, the hooks, the MCP server, transcript retention, the queue."""
    home_p = Path(home).expanduser()
    now = time.time() if now is None else now
    checks: list[Check] = []
    if (home_p / "manifest.json").exists() or (home_p / "lexical").exists():
        checks.append(_check_home(home_p))
    else:
        checks.append(Check("home", "warning", f"nothing indexed in {home_p} yet: run `memlane index`"))

    cdir = claude_dir()
    settings_p = Path(settings).expanduser() if settings else cdir / "settings.json"
    if not (settings or cdir.is_dir()):
        checks += _client_absent("claude-code", cdir)
    else:
        checks += _check_hooks("claude-code hooks", settings_p, CLAUDE_HOOKS)
        try:
            cj = _read_json(Path(claude_json).expanduser() if claude_json else claude_json_path())
            level, msg = (
                ("ok", "memlane is registered (user scope)")
                if "memlane" in (cj.get("mcpServers") or {})
                else (
                    "warning",
                    "not registered: run `memlane install-hooks claude-code` (or `claude mcp add memlane -- memlane mcp`)",
                )
            )
        except ValueError as exc:
            level, msg = "warning", str(exc)
        checks.append(Check("claude-code mcp", level, msg))
        try:
            settings_data = _read_json(settings_p)
        except ValueError:
            settings_data = {}
        checks.append(_retention(home_p, settings_data, settings_p.parent / "projects", now))

    xdir = Path(codex_home).expanduser() if codex_home else codex_dir()
    if not (codex_home or xdir.is_dir()):
        checks += _client_absent("codex", xdir)
    else:
        checks += _check_hooks("codex hooks", xdir / "hooks.json", CODEX_HOOKS)
        try:
            config = (
                tomllib.loads((xdir / "config.toml").read_text(encoding="utf-8"))
                if (xdir / "config.toml").exists()
                else {}
            )
            features = config.get("features", {})
            if features.get("hooks") is False or features.get("codex_hooks") is False:
                checks.append(
                    Check("codex hooks", "error", f"{xdir / 'config.toml'} turns hooks off ([features] hooks = false)")
                )
            registered = "memlane" in config.get("mcp_servers", {})
            checks.append(
                Check(
                    "codex mcp",
                    "ok" if registered else "warning",
                    "memlane is registered in config.toml"
                    if registered
                    else "not registered: run `memlane install-hooks codex`",
                )
            )
        except (OSError, ValueError) as exc:
            checks.append(Check("codex mcp", "warning", f"cannot read {xdir / 'config.toml'}: {exc}"))

    checks.append(_check_queue(home_p, now))
    return checks
