"""Every transcript format of the shared sample corpus, through the product: index, then search."""

from __future__ import annotations

import json
from pathlib import Path

from memlane.cli import main

# Sample folder -> the format its transcripts are detected as.
FOLDERS = {
    "aider": "aider",
    "chatgpt-export": "chatgpt",
    "claude-ai-export": "claude-ai",
    "claude-code": "claude-code",
    "codex": "codex",
    "copilot-cli": "copilot",
    "cursor-agent": "cursor",
    "gemini-cli": "gemini",
    "hermes": "hermes",
    "longmemeval": "longmemeval",
    "openclaw-pi": "openclaw",
    "slack-export": "slack",
}
# Sidecars: indexes and metadata next to transcripts, never opened.
SIDECARS = {"channels.json", "agent-showcol1.meta.json"}


def run(capsys, *argv):
    code = main(list(argv))
    out, _ = capsys.readouterr()
    assert code == 0
    return json.loads(out)


def test_every_format_folder_is_indexed_and_searchable(tmp_path, capsys, shared_data):
    transcripts = (shared_data / "transcripts").resolve()
    home = tmp_path / "home"
    report = run(capsys, "--home", str(home), "--json", "index", str(transcripts), "--embed", "none")
    # Only the bad line of codex/daaain/malformed, and the records two Claude Code samples hold
    # on branches a rewind abandoned (two each).
    assert report["records_skipped"] == {"invalid_json": 1, "abandoned_branch": 4}

    # Which files produced chunks, and as what format (the manifest of DESIGN.md's home layout).
    manifest = json.loads((home / "manifest.json").read_text())["files"]
    chunked: dict[str, set[str]] = {}
    for path, entry in manifest.items():
        if entry["keys"] and Path(path).parent != transcripts:  # not PROVENANCE.md
            folder = Path(path).relative_to(transcripts).parts[0]
            chunked.setdefault(folder, set()).add(entry["format"])
    on_disk = {
        p.relative_to(transcripts).parts[0] for p in transcripts.rglob("*") if p.is_file() and p.parent != transcripts
    }
    assert set(FOLDERS) == on_disk, "a new sample folder needs an expected format here"
    assert chunked == {folder: {fmt} for folder, fmt in FOLDERS.items()}
    assert not any(Path(p).name in SIDECARS for p in manifest)

    for phrase, folder, session in [
        ("Privacy-safe tool result", "chatgpt-export", "chatgpt-fixture-conversation"),
        ("repository is clean", "cursor-agent", "jazzyalex-cursor-test-session"),
        ("contain the executor", "slack-export", "enrique/2016-01-15"),
        ("inlined custom spinner", "aider", "aider:aider:2024-08-05T19:33:32"),
        ("directory contains file1 and file2", "copilot-cli", "aaaabbbb-1111-2222-3333-ccccddddeeee"),
    ]:
        hits = run(capsys, "--home", str(home), "--json", "search", phrase, "-k", "3", "--embed", "none")
        assert hits, phrase
        top = hits[0]
        assert Path(top["path"]).relative_to(transcripts).parts[0] == folder, (phrase, top["path"])
        assert top["session_id"] == session


def test_a_slack_export_zip_is_indexed_as_downloaded(tmp_path, capsys, shared_data):
    """Exports arrive as ZIPs: memlane reads the transcript members in place, and keeps what
    the archive held when it is deleted, until `forget --missing`."""
    import zipfile

    slack = (shared_data / "transcripts" / "slack-export").resolve()
    archive = tmp_path / "exports" / "slack.zip"
    archive.parent.mkdir()
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        for f in slack.rglob("*"):
            if f.is_file():
                z.write(f, f.relative_to(slack).as_posix())
    home = tmp_path / "home"
    report = run(capsys, "--home", str(home), "--json", "index", str(archive.parent), "--embed", "none")
    assert report["chunks_added"] > 0 and report["records_skipped"] == {}

    hits = run(capsys, "--home", str(home), "--json", "search", "contain the executor", "-k", "3", "--embed", "none")
    assert hits[0]["path"] == str(archive)
    assert hits[0]["session_id"] == "enrique/2016-01-15"

    archive.unlink()
    assert (
        run(capsys, "--home", str(home), "--json", "index", str(archive.parent), "--embed", "none")["files_gone"] == 1
    )
    assert run(capsys, "--home", str(home), "--json", "search", "contain the executor", "-k", "3", "--embed", "none")[
        0
    ]["path"] == str(archive)
    run(capsys, "--home", str(home), "--json", "forget", "--missing")
    assert (
        run(capsys, "--home", str(home), "--json", "search", "contain the executor", "-k", "3", "--embed", "none") == []
    )
