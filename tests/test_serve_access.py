"""Who may ask a served index what (memlane.cluster.access), without Ray: the bearer scheme read
case-insensitively, the tokens file parsed with one-line errors and refused when others may
read it, tokens mapped to roles, a project agent's request narrowed to its project (against a
real home's project keys), show_secrets refused unless allowed and then for admin tokens only;
and ``memlane serve``'s refusals before Ray starts, with and without Ray installed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import write_jsonl
from test_projects import claude_lines

import memlane
from memlane.cli import main
from memlane.cluster.access import OPEN, Access, Forbidden, bearer, parse_tokens, read_tokens
from memlane.roles import Role


def _tokens_file(folder: Path, text: str, mode: int = 0o600) -> Path:
    path = folder / "tokens.txt"
    path.write_text(text)
    path.chmod(mode)
    return path


@pytest.mark.parametrize(
    ("header", "token"),
    [
        ("Bearer abc", "abc"),
        ("bearer abc", "abc"),
        ("BEARER abc", "abc"),
        ("  Bearer   abc  ", "abc"),
        ("Basic YWJj", None),
        ("Bearer", None),
        ("", None),
        ("abc", None),
    ],  # fmt: skip
)
def test_bearer_scheme_is_case_insensitive(header: str, token: str | None) -> None:
    assert bearer(header) == token


def test_tokens_file_maps_tokens_to_roles(tmp_path: Path) -> None:
    path = _tokens_file(
        tmp_path,
        "# memlane serve tokens\n\nk-admin admin\nk-alpha project:alpha   # the alpha agent\n\tk-beta\tproject:beta\n",
    )
    pairs = read_tokens(path)
    assert [(t, str(g.role), g.source) for t, g in pairs] == [
        ("k-admin", "admin", f"{path}:3"),
        ("k-alpha", "project:alpha", f"{path}:4"),
        ("k-beta", "project:beta", f"{path}:5"),
    ]
    access = Access.build("k-main", pairs)
    assert access.grant("Bearer k-main") == access.grant("bearer k-main") != None  # noqa: E711
    assert access.grant("Bearer k-main").source == "--token" and access.grant("Bearer k-main").role == Role()
    assert access.grant("bearer k-alpha").role == Role("project", "alpha")
    assert access.grant("Bearer k-beta").source == f"{path}:5"
    for refused in ("Bearer k-alph", "Bearer k-alpha2", "Bearer", "", "Basic k-main", "k-main"):
        assert access.grant(refused) is None, refused
    # No token at all: every request is the admin's (a server on loopback, or --insecure).
    assert Access.build().grant("") is OPEN and OPEN.role == Role()


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("k1\n", "tokens:1: expected TOKEN ROLE (e.g. 7f3c… project:billing), got 1 field"),
        (
            "k1 admin\nk2 project:beta extra\n",
            "tokens:2: expected TOKEN ROLE (e.g. 7f3c… project:billing), got 3 fields",
        ),
        ("k1 owner\n", "tokens:1: unknown agent role 'owner': use admin, project:NAME or skill:NAME"),
        ("k1 project:\n", "tokens:1: unknown agent role 'project:'"),
        (
            "# header\nk1 skill:review\n",
            "tokens:2: a skill agent reads the project its session runs in, which a server cannot see",
        ),
        (
            "k1 admin\nk2 project:a\nk1 project:b\n",
            "tokens:3: the same token as line 1: each token stands for one role",
        ),
    ],
)
def test_a_bad_tokens_line_is_one_line_naming_it(text: str, says: str) -> None:
    with pytest.raises(ValueError) as error:
        parse_tokens(text, "tokens")
    assert str(error.value).startswith(says) and "\n" not in str(error.value)


def test_tokens_file_others_may_read_is_refused(tmp_path: Path) -> None:
    for mode in (0o644, 0o604, 0o602):
        path = _tokens_file(tmp_path, "k1 admin\n", mode)
        with pytest.raises(ValueError, match=f"other users may read or write it: `chmod 600 {path}`"):
            read_tokens(path)
    assert len(read_tokens(_tokens_file(tmp_path, "k1 admin\n", 0o640))) == 1  # the group: the operator's to decide
    with pytest.raises(ValueError, match="no such file"):
        read_tokens(tmp_path / "missing.txt")
    with pytest.raises(ValueError, match="holds no token"):
        read_tokens(_tokens_file(tmp_path, "# nothing yet\n"))
    # The admin token given again in the file would stand for two roles.
    with pytest.raises(ValueError, match=r"tokens:1: the same token as --token/MEMLANE_TOKEN"):
        Access.build("k1", parse_tokens("k1 project:alpha", "tokens"))


@pytest.fixture(scope="module")
def two_projects(tmp_path_factory: pytest.TempPathFactory) -> memlane.Memory:
    """A real home (keywords only) of sessions in two projects, /src/alpha and /src/beta."""
    root = tmp_path_factory.mktemp("projects")
    for name, db in (("alpha", "Postgres 16"), ("beta", "MySQL 8")):
        write_jsonl(
            root / f"{name}.jsonl",
            claude_lines(f"{name}-1", [("which database?", f"{name} uses {db}", f"/src/{name}", "main")]),
        )
    mem = memlane.open(root / "home", embedder="none")
    mem.index([str(root)], embed=False)
    assert set(mem.projects()) == {"/src/alpha", "/src/beta"}
    return mem


def test_a_project_token_is_narrowed_to_its_project(two_projects: memlane.Memory) -> None:
    keys = two_projects.project_keys
    access = Access.build("k-admin", parse_tokens("k-alpha project:alpha", "tokens"))
    admin, alpha = access.grant("Bearer k-admin"), access.grant("Bearer k-alpha")
    assert admin is not None and alpha is not None
    body = {"query": "which database?", "k": 5}
    # The admin reads what it asks, every project when it asks none.
    assert access.narrow(admin, body, keys) == body
    assert access.narrow(admin, {**body, "project": "beta"}, keys)["project"] == "beta"
    # The agent reads its project when it asks none, what it asks within it, and never another.
    assert access.narrow(alpha, body, keys) == {**body, "project": "alpha"}
    assert access.narrow(alpha, {**body, "project": "/src/alpha"}, keys)["project"] == "/src/alpha"
    assert access.narrow(alpha, {**body, "project": None}, keys)["project"] == "alpha"
    for other in ("beta", "/src/beta", "/src"):
        with pytest.raises(Forbidden, match=f"agent project:alpha reads project alpha only, not {other}"):
            access.narrow(alpha, {**body, "project": other}, keys)
    with pytest.raises(TypeError, match="project must be a string"):
        access.narrow(alpha, {**body, "project": ["beta"]}, keys)
    # Narrowed as served: the agent's search holds alpha's session only.
    hits = two_projects.search(**access.narrow(alpha, body, keys))
    assert hits and {h.project for h in hits} == {"/src/alpha"}
    assert {h.project for h in two_projects.search(**access.narrow(admin, body, keys))} == {"/src/alpha", "/src/beta"}


def test_show_secrets_refused_unless_allowed_and_then_for_admin_tokens_only(two_projects: memlane.Memory) -> None:
    keys = two_projects.project_keys
    body = {"query": "key", "show_secrets": True}
    pairs = parse_tokens("k-alpha project:alpha\nk-admin2 admin", "tokens")
    closed, allowed = Access.build("k-admin", pairs), Access.build("k-admin", pairs, allow_show_secrets=True)
    for access in (closed, allowed, Access.build()):
        assert (
            access.narrow(access.grant("Bearer k-admin") or OPEN, {**body, "show_secrets": False}, keys)["show_secrets"]
            is False
        )
    for grant in (
        closed.grant("Bearer k-admin"),
        closed.grant("Bearer k-admin2"),
        closed.grant("Bearer k-alpha"),
        OPEN,
    ):
        with pytest.raises(
            Forbidden,
            match=r"show_secrets refused: this server hands out texts with secrets masked \(`memlane serve --allow-show-secrets`",
        ):
            closed.narrow(grant, body, keys)
    assert allowed.narrow(allowed.grant("Bearer k-admin"), body, keys) == body
    assert allowed.narrow(allowed.grant("Bearer k-admin2"), body, keys) == body
    with pytest.raises(Forbidden, match="show_secrets refused: agent project:alpha gets texts with secrets masked"):
        allowed.narrow(allowed.grant("Bearer k-alpha"), body, keys)
    with pytest.raises(TypeError, match="show_secrets must be True or False"):
        allowed.narrow(allowed.grant("Bearer k-admin"), {**body, "show_secrets": "yes"}, keys)


def test_serve_refuses_a_bad_tokens_file_before_ray_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMLANE_TOKEN", raising=False)
    readable = _tokens_file(tmp_path, "k1 admin\n", 0o644)
    assert main(["--index", "s3://nowhere/index/", "serve", "--token-file", str(readable)]) == 2
    err = capsys.readouterr().err
    assert err == f"memlane serve: --token-file {readable}: other users may read or write it: `chmod 600 {readable}`\n"
    bad = _tokens_file(tmp_path, "k1 admin\nk2 skill:review\n")
    assert main(["--index", "s3://nowhere/index/", "serve", "--token-file", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{bad}:2: a skill agent reads" in err
    # A tokens file is a token: binding beyond loopback with one is not refused for want of a token.
    assert main(["--index", "s3://nowhere/index/", "serve", "--host", "0.0.0.0"]) == 2
    assert "--token-file" in capsys.readouterr().err
    assert main(["--index", "s3://nowhere/index/", "serve", "--host", "0.0.0.0", "--token-file", str(bad)]) == 2
    assert "beyond loopback" not in capsys.readouterr().err


def test_serve_without_ray_says_which_extra_to_install(tmp_path: Path) -> None:
    """Ray not installed (its import fails): one line naming the extra, not a reinstall of memlane."""
    code = "import sys; sys.modules['ray'] = None; from memlane.cli import main; sys.exit(main(sys.argv[1:]))"
    done = subprocess.run(
        [sys.executable, "-c", code, "--index", str(tmp_path / "index"), "serve"],
        capture_output=True, text=True, env={k: v for k, v in os.environ.items() if k != "MEMLANE_TOKEN"},
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr == "memlane serve: memlane serve needs Ray Serve: pip install 'memlane[ray]'\n"
