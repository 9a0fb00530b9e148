"""Secrets: found by kind, masked in everything memlane hands out or prints, refused by the brain.

Every key below is made up (random characters in the vendor's shape), and assembled from two
parts so that this file itself holds no token-shaped string.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import generic_session, write_jsonl

import memlane
from memlane import secrets
from memlane.brain import Brain, MemoryGuardError
from memlane.cli import main

AWS_ID = "AKIA" + "QYLPMN5HHHFP8WVY"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG" + "/bPxRfiCYzQ3hT9LmKp"
GITHUB = "ghp_" + "R8aZk3vPq0sLmN2bXc4dEfGh5iJkLmNoPqRs"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    + ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)

# kind → a line holding one secret of that kind, and the secret itself.
KEYS: dict[str, tuple[str, str]] = {
    "aws_access_key_id": ("export AWS_ACCESS_KEY_ID={}", AWS_ID),
    "aws_secret_access_key": ("aws_secret_access_key = {}", AWS_SECRET),
    "github_token": ("export GH_TOKEN={}", GITHUB),
    "gitlab_token": (
        "curl --header 'PRIVATE-TOKEN: {}' https://gitlab.example.com/api/v4/projects",
        "glpat-" + "xY7kLm3NpQ9rStUv2WzA",
    ),
    "slack_token": ("SLACK_BOT_TOKEN={}", "xoxb-" + "1234567890123-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"),
    "stripe_key": ("stripe.api_key = '{}'", "sk_live_" + "51HqLyjWDarjtT1zdp7dcXYZabcdefghij0123456789"),
    "anthropic_key": (
        "ANTHROPIC_API_KEY={}",
        "sk-ant-api03-"
        + "Zx8Yw7Vu6Ts5Rq4Po3Nm2Lk1Ji0Hg9Fe8Dc7Ba6Zx5Yw4Vu3Ts2Rq1Po0Nm9Lk8Ji7Hg6Fe5Dc4Ba3Zx2Yw1Vu0Ts9-AbCdEfAA",
    ),
    "openai_key": (
        "OPENAI_API_KEY={}",
        "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cD0eFg3hIj6kLm9nT3BlbkFJuV4wX7yZ0aB3cD6eF9gH2iJ5kL8mN1",
    ),
    "private_key": (
        "key.pem:\n{}\nthen chmod 600 key.pem",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi1Ygd4jU2aHq0nKM2sFR5kB8pXy"
        "\nq1w2e3r4t5y6u7i8o9p0aSdFgHjKlZxCvBnM1234567890abcdefghijklmnop==\n-----END RSA PRIVATE KEY-----",
    ),
    "jwt": ("curl -H 'Authorization: Bearer {}' https://api.example.com/me", JWT),
    "url_password": ("DATABASE_URL=postgres://billing:{}@db.internal:5432/billing", "S3cr3t-Pa55w0rd"),
    "password": ("the staging admin password is {} until Friday", "Kx9!qz-hunter7"),
    "high_entropy": ("the webhook signing token: {}", "9f8e7d6c5b4a39281706f5e4d3c2b1a0ffeeddcc"),
}

# Ordinary engineering text: hashes, ids, paths, references to secrets, placeholders.
ORDINARY = [
    "Reverted 3f9c2a1b7e4d5c6f8a9b0c1d2e3f4a5b6c7d8e9f after the CI failure",
    'rev = "3f9c2a1b7e4d5c6f8a9b0c1d2e3f4a5b6c7d8e9f"',
    "session 0b5c8f2e-3d4a-4b6c-9e1f-2a3b4c5d6e7f turns 12-15",
    "sha256:9b2f1c0e4d8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c",
    '"integrity": "sha512-Vn3PmJ8cTRVGdnh8rvZlFf1KZ7bxLqMjY6Rc4GpDTp1yRQ0yiYWsqLgxm0IVO9JlVT0jV5aNcN3PsMJmTAl0Bg=="',
    "image: ghcr.io/org/app@sha256:4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a1f0e9d8c7b6a5f4e3d",
    "Edited src/memlane/brain/guard.py and rust/memlane-core/src/store.rs",
    "Rotated the Stripe API key after the leak drill; the new key lives in AWS Secrets Manager.",
    "export GITHUB_TOKEN=$(op read op://dev/gh/token)",
    'curl -H "Authorization: Bearer $GITHUB_TOKEN" https://api.github.com/user',
    "password: ${{ secrets.DB_PASSWORD }}",
    "DATABASE_URL=postgres://postgres:postgres@localhost:5432/test",
    'api_key = "<your-api-key>"',
    "SECRET_KEY = os.environ['DJANGO_SECRET_KEY']",
    "the password policy needs 12 characters; password reset emails go through SES",
    "token budget is 15000 tokens; max_tokens=4000",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl alice@laptop",
    "The file starts with -----BEGIN RSA PRIVATE KEY----- and must be chmod 600.",
    "chunk id 7c1e9a0b4d2f6e83 from the index; cache key 5d41402abc4b2a76b9719d911017c592",
    "AWS documents the key pair AKIAIOSFODNN7EXAMPLE / wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "provided_password = 'secure_password123'  # test fixture",
    "pwd: /home/dev/project; PWD=$(pwd)",
]


def _line(kind: str) -> tuple[str, str]:
    template, value = KEYS[kind]
    return template.format(value), value


@pytest.mark.parametrize("kind", sorted(KEYS))
def test_each_kind_is_found_and_masked(kind: str) -> None:
    text, value = _line(kind)
    found = secrets.find(text)
    assert [s.kind for s in found] == [kind]
    masked = secrets.mask(text)
    assert value not in masked and secrets.ELLIPSIS in masked
    # The masked form never shows more than a quarter of the secret, nor grows the text.
    shown = found[0].masked.replace(secrets.ELLIPSIS, "")
    assert len(shown) <= len(value) // 4 + 13  # a public prefix (sk-ant-api03-) may show
    assert len(masked.encode()) <= len(text.encode())
    assert secrets.mask(masked) == masked and secrets.find(masked) == []


def test_masked_form_keeps_the_public_prefix_and_a_short_suffix() -> None:
    assert secrets.mask(f"id {AWS_ID} here") == "id AKIA…8WVY here"
    assert secrets.mask(GITHUB) == "ghp_…PqRs"
    assert secrets.mask("https://deploy:Xk93mPq7Lz@git.example.com/r.git") == "https://deploy:…@git.example.com/r.git"
    assert secrets.mask(_line("private_key")[0]) == "key.pem:\n-----BEGIN RSA PRIVATE KEY-----…\nthen chmod 600 key.pem"


def test_several_secrets_in_one_text_and_json() -> None:
    text = f"{AWS_ID},{AWS_SECRET}\nGH_TOKEN={GITHUB}"
    assert [s.kind for s in secrets.find(text)] == ["aws_access_key_id", "aws_secret_access_key", "github_token"]
    doc = secrets.mask_json({"text": text, "hits": [{"text": JWT, "score": 0.5}], "n": 3})
    assert AWS_ID not in json.dumps(doc) and JWT not in json.dumps(doc)
    assert doc["n"] == 3 and doc["hits"][0]["score"] == 0.5


def test_masking_a_batch_equals_masking_each_text() -> None:
    texts = [_line(k)[0] for k in sorted(KEYS)] + ORDINARY + ["", "a\n\x1f\nb " + AWS_ID]
    assert secrets.mask_many(texts) == [secrets.mask(t) for t in texts]
    assert secrets.mask_many(texts[:-1]) == [secrets.mask(t) for t in texts[:-1]]
    assert secrets.mask_many([]) == []


def test_literals_give_character_offsets_of_every_occurrence() -> None:
    from memlane import _core

    finder = _core.Literals(["sk-", "sk-ant-", "://"], ignore_case=True)
    text = "é — https://x SK-ANT-y"
    assert finder.find(text) == [(9, 2), (14, 0), (14, 1)]
    assert [text[at : at + 3].lower() for at, _ in finder.find(text)] == ["://", "sk-", "sk-"]
    assert _core.Literals(["sk-"]).find("SK-") == []
    with pytest.raises(ValueError, match="empty literal"):
        _core.Literals(["ok", ""])


def _every_scan(text: str) -> list[tuple[str, int, int, str]]:
    """What :func:`secrets.find` found before it tried patterns only where their start
    literals stand: every pattern scanning the whole text."""
    plain = text if text.isascii() else text.encode("ascii", secrets._ERRORS).decode("ascii")
    taken: list[tuple[str, int, int, str]] = []
    for kind in secrets.KINDS:
        subject = plain.lower() if kind.ignorecase else plain
        for m in (m for n in range(len(kind.sources)) for m in kind.pattern(n).finditer(subject)):
            inner = "secret" in m.re.groupindex
            start, end = m.span("secret") if inner else m.span()
            value = text[start:end]
            if (kind.check is not None and not kind.check(value)) or (
                kind.context is not None and not kind.context(text, m.start())
            ):
                continue
            if any(a < end and start < b for _, a, b, _ in taken):
                continue
            prefix = "" if inner or "pre" not in m.re.groupindex else text[m.start("pre") : m.end("pre")]
            taken.append((kind.name, start, end, secrets.mask_value(value, kind.name, prefix)))
    return sorted(taken, key=lambda t: t[1])


def test_patterns_tried_at_their_start_literals_find_what_whole_scans_find() -> None:
    # Each kind's ``starts`` must name every literal a match of its pattern can begin with:
    # a missing one would hide secrets. The texts put every kind's secret in many contexts
    # (cases changed, JSON-escaped, non-ASCII around, start literals overlapping and repeated).
    lines = [_line(k)[0] for k in sorted(KEYS)] + ORDINARY
    texts = lines + [t.upper() for t in lines] + [t.lower() for t in lines] + [json.dumps(t) for t in lines]
    texts += ["é " + t + " — ü" for t in lines] + ["\n".join(lines), " ".join(lines)]
    texts += [f"{lit}{lit}{t}" for t in lines for lit in ("sk-", "key", "token", "pass", "://", "eyJ", "xox", "gh")]
    texts += [
        f"monkeyJ {JWT}",
        f"apikey={JWT}",
        f"tokentoken: {AWS_SECRET}1a",
        f"sk-sk-ant-api03-{'x' * 40}",
        f"{AWS_ID}{AWS_ID} {AWS_SECRET}",
    ]
    texts += ["x eyJ0eXAiOiJKV1QiLCJhbGciOiJIUzI1NiJ9" + ".eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2ln"]
    # Every start literal, then bodies in the shapes the patterns take after one.
    bodies = ["QYLPMN5HHHFP8WVY " + AWS_SECRET, "1234567890123-1234567890123-AbCdEf", "1-A1B2C3-123-abc9", "1-" + "A1b2C3d4E5" * 4, "api03-" + "Zx8Yw7Vu6T" * 5,
              "proj-" + "Ab3dEf6hIj" * 5, "_" + "R8aZk3vPq0sLmN2bXc4d" * 2, "=" + "9f8e7d6c5b4a39281706f5e4d3c2b1a0", " RSA PRIVATE KEY-----\n" + "MIIEpA" * 8]  # fmt: skip
    # The prefixes the vendors document and the words the patterns follow, spelled here
    # independently of the kinds' ``starts``.
    prefixes = ["AKIA", "ASIA", "ABIA", "ACCA", "A3T", "akia", "asia", "ghp", "gho", "ghu", "ghs", "ghr", "github_pat", "GR1348941", "xoxa-",
                "xoxb-", "xoxp-", "xoxo-", "xoxs-", "xoxr-", "xoxe-", "xoxe.xoxb-1-", "xapp-", "sk_live", "sk_test", "rk_live", "rk_test",
                "whsec", "sk-ant-", "sk-", "sk-proj-", "sk-svcacct-", "sk-admin-", "sk-None-", "eyJ", "://u:p4ss9w0rd@h", "https://hooks.slack.com/services/TA1/BB2/",
                "PASS", "Password", "passwd", "passphrase", "pwd", "--password ", "Key", "api_key", "SECRET", "token", "Credentials", "Bearer ",
                "-----BEGIN OPENSSH PRIVATE KEY-----", "Private-Lines: 4\n"]  # fmt: skip
    prefixes += [f"gl{p}-" for p in ("pat", "dt", "ft", "soat", "rt", "cbt", "imt", "ptt", "agent", "oas")]
    texts += [f"{pre}{prefix}{body}" for prefix in prefixes for body in bodies for pre in ("", "x ", "X=")]
    found = 0
    for text in texts:
        want = _every_scan(text)
        assert [(s.kind, s.start, s.end, s.masked) for s in secrets.find(text)] == want, text
        found += len(want)
    assert found >= 4 * len(KEYS)  # the texts do hold secrets to find


SHA = "3f9c2a1b7e4d5c6f8a9b0c1d2e3f4a5b6c7d8e9f"


@pytest.mark.parametrize(
    "text",
    [
        f"{AWS_ID}\n{AWS_SECRET}\n",  # alone on the line after its key id (aws configure, a paste)
        f"{AWS_SECRET}\n{AWS_ID}",  # before it
        json.dumps({"id": AWS_ID, "key": AWS_SECRET}, indent=2),
        json.dumps({"key": AWS_SECRET, "id": AWS_ID}),
        f"User name,Password,Access key ID,Secret access key\nci,,{AWS_ID},{AWS_SECRET}\n",
        f"{AWS_ID}\ncommit {SHA}\n{AWS_SECRET}",  # a SHA between them hides nothing
        f"ASIA{AWS_ID[4:]} (session) and then, two lines down,\n\n  {AWS_SECRET}",
    ],
)
def test_a_bare_aws_secret_key_beside_its_key_id_is_masked(text: str) -> None:
    found = secrets.find(text)
    assert sorted(s.kind for s in found) == ["aws_access_key_id", "aws_secret_access_key"], text
    masked = secrets.mask(text)
    assert AWS_SECRET not in masked and "wJal…LmKp" in masked and secrets.mask(masked) == masked


@pytest.mark.parametrize(
    "text",
    [
        AWS_SECRET,  # no key id nor name near it: as likely a line of base64 (below) as a key
        f"{AWS_ID} " + "words " * 50 + AWS_SECRET,  # further than a few lines from the id
        f"{AWS_SECRET} " + "words " * 50 + AWS_ID,
        f"{AWS_ID}\ncommit {SHA}\n{SHA.upper()}",  # SHAs beside a key id: hex, not a secret key
        f"{AWS_ID}\nQ0VSVELGSUNBVEUTLS0TLQPNSUL/EFRDQ0FXMMDB",  # upper case only: no secret key
        # The last line of a PEM certificate: 40 characters of base64, mixed case, a slash.
        "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJ\n"
        "Qc8Bsem4yWb02ybzOqR08kkkW8mw0FfB+j564ZfJ\n-----END CERTIFICATE-----",
    ],
)
def test_a_40_character_value_without_an_aws_signal_is_left_alone(text: str) -> None:
    assert [s.kind for s in secrets.find(text) if s.kind == "aws_secret_access_key"] == []


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_engineering_text_is_left_alone(text: str) -> None:
    assert secrets.find(text) == [], [(s.kind, text[s.start : s.end]) for s in secrets.find(text)]


def test_finds_everything_detect_secrets_regex_plugins_find() -> None:
    # detect-secrets (Yelp) is the reference for the token shapes; its regex plugins report
    # values, ours positions: every value it finds must lie inside one of our secrets.
    pytest.importorskip("detect_secrets")
    from detect_secrets.plugins.aws import AWSKeyDetector
    from detect_secrets.plugins.basic_auth import BasicAuthDetector
    from detect_secrets.plugins.github_token import GitHubTokenDetector
    from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
    from detect_secrets.plugins.jwt import JwtTokenDetector
    from detect_secrets.plugins.openai import OpenAIDetector
    from detect_secrets.plugins.private_key import PrivateKeyDetector
    from detect_secrets.plugins.slack import SlackDetector
    from detect_secrets.plugins.stripe import StripeDetector

    plugins = [AWSKeyDetector(), BasicAuthDetector(), GitHubTokenDetector(), GitLabTokenDetector(), JwtTokenDetector(),
               OpenAIDetector(), PrivateKeyDetector(), SlackDetector(), StripeDetector()]  # fmt: skip
    checked = 0
    for kind in KEYS:
        text, _ = _line(kind)
        spans = [(s.start, s.end) for s in secrets.find(text)]
        for plugin in plugins:
            for value in plugin.analyze_string(text):
                at, end = text.find(value), text.find(value) + len(value)
                inside = any(a <= at < b for a, b in spans)
                if isinstance(plugin, PrivateKeyDetector):  # it matches the header, which stays readable
                    inside = any(0 <= a - end <= len("-----") for a, _ in spans)
                assert inside, (plugin.secret_type, value, text)
                checked += 1
    assert checked >= 9


def test_real_transcripts_hold_no_false_finding(shared_data: Path) -> None:
    files = [p for p in (shared_data / "transcripts").rglob("*") if p.is_file()]
    assert files
    found = {
        p.name: [(s.kind, s.masked) for s in secrets.find(p.read_text(encoding="utf-8", errors="replace"))]
        for p in files
    }
    assert not any(found.values()), {k: v for k, v in found.items() if v}


# ---------------------------------------------------------------------------- the brain refuses


@pytest.mark.parametrize("kind", ["aws_access_key_id", "github_token", "private_key", "url_password", "password"])
def test_brain_writes_refuse_a_secret_naming_its_kind(tmp_path: Path, kind: str) -> None:
    brain = Brain(tmp_path / "brain", home=tmp_path / "home")
    brain.add("kd", "Billing uses Postgres 16.", on="2026-04-01")
    brain.add("ot", "Find the slow export query.", on="2026-04-01")
    before = brain.memory_path.read_bytes()
    text, value = _line(kind)
    label = secrets.KIND_BY_NAME[kind].label
    for write in (
        lambda: brain.add("ll", text, on="2026-04-02"),
        lambda: brain.supersede("KD01", text, on="2026-04-02"),
        lambda: brain.resolve("OT01", note=text, on="2026-04-02"),
    ):
        with pytest.raises(MemoryGuardError) as info:
            write()
        assert info.value.rule == f"secret.{kind}" and label in str(info.value)
        assert value not in str(info.value) and "\n" not in str(info.value)
    assert brain.memory_path.read_bytes() == before
    assert value not in (brain.home / "events.jsonl").read_text()


def test_cli_brain_add_refuses_a_secret_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--home", str(tmp_path), "brain", "add", "kd", f"Deploy with AWS_ACCESS_KEY_ID={AWS_ID}"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "AWS access key id AKIA…8WVY" in err and AWS_ID not in err
    assert not (tmp_path / "brain" / "MEMORY.md").exists()


def test_distill_keeps_a_line_with_a_secret_out_of_the_brain(tmp_path: Path) -> None:
    from datetime import timezone

    from memlane.brain.distill import distill

    rows = [
        {"role": "user", "content": "How do we deploy the exporter?", "timestamp": "2026-03-02T10:00:00Z", "session_id": "s1"},
        {"role": "assistant", "content": f"We decided to deploy the exporter with the key {AWS_ID} and region eu-west-1.",
         "timestamp": "2026-03-02T10:01:00Z", "session_id": "s1"},
        {"role": "assistant", "content": "We decided to use SQS FIFO queues for `exporter.py`; ordering matters for invoices.",
         "timestamp": "2026-03-02T10:02:00Z", "session_id": "s1"},
    ]  # fmt: skip
    write_jsonl(tmp_path / "s1.jsonl", rows)
    brain = Brain(tmp_path / "brain", home=tmp_path / "home")
    [result] = distill(tmp_path / "s1.jsonl", brain=brain, tz=timezone.utc)
    assert result.added  # the SQS decision
    assert any(w["rule"] == "secret.aws_access_key_id" and "AKIA…8WVY" in w["text"] for w in result.withheld)
    written = "".join(p.read_text() for p in brain.dir.rglob("*.md"))
    assert "SQS FIFO" in written and AWS_ID not in written
    assert AWS_ID not in json.dumps(result.to_dict())


def test_mcp_remember_refuses_a_secret(tmp_path: Path) -> None:
    from memlane.agents.mcp import MemoryTools

    tools = MemoryTools(tmp_path, embedder="none")
    with pytest.raises(MemoryGuardError, match="GitHub token ghp_…PqRs"):
        tools.remember("LL", f"CI pushes with {GITHUB}")
    assert tools.brain.entries() == []


# ---------------------------------------------------------------------------- masked on the way out


@pytest.fixture
def leaky_home(tmp_path: Path) -> tuple[Path, Path]:
    """A home indexing one transcript where keys were pasted into the chat."""
    pairs = [
        (
            f"the deploy fails with AccessDenied; my keys are {AWS_ID} and {AWS_SECRET}",
            "Those keys lack s3:PutObject on the artifacts bucket.",
        ),
        (
            f"and the CI token {GITHUB} gets 403 from the releases API",
            "The token needs the contents:write scope to publish a release.",
        ),
        ("which region is the artifacts bucket in?", "eu-west-1, next to the build runners."),
    ]
    transcript = write_jsonl(tmp_path / "t" / "leak.jsonl", generic_session("leak-1", pairs))
    home = tmp_path / "home"
    with memlane.open(home, embedder="none") as mem:
        mem.index([transcript], embed=False)
    return home, transcript


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_search_finds_a_key_and_shows_it_masked(
    leaky_home: tuple[Path, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    home, transcript = leaky_home
    # The index keeps the transcript verbatim: searching the key finds where it leaked.
    code, out, _ = _cli(capsys, "--home", str(home), "search", AWS_ID, "--embed", "none")
    assert code == 0 and "leak.jsonl" in out and "AKIA…8WVY" in out
    assert AWS_ID not in out and AWS_SECRET not in out
    code, out, _ = _cli(capsys, "--home", str(home), "--json", "search", AWS_ID, "--embed", "none")
    hits = json.loads(out)
    assert hits and hits[0]["path"] == str(transcript) and AWS_ID not in out and "AKIA…8WVY" in hits[0]["text"]
    # Unmasked only for a person at a terminal: into a pipe or a file (capsys is neither a
    # terminal), one line saying so and exit 2.
    code, out, err = _cli(capsys, "--home", str(home), "search", AWS_ID, "--embed", "none", "--show-secrets")
    assert code == 2 and out == "" and err.count("\n") == 1 and "only at a terminal" in err and AWS_ID not in err
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    code, out, _ = _cli(capsys, "--home", str(home), "search", AWS_ID, "--embed", "none", "--show-secrets")
    assert code == 0 and AWS_ID in out


def test_recall_masks_unless_asked(
    leaky_home: tuple[Path, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    home, _ = leaky_home
    with memlane.open(home, embedder="none") as mem:
        block = mem.recall("deploy AccessDenied keys and CI token 403")
        assert block and AWS_ID not in block.text and GITHUB not in block.text and "ghp_…PqRs" in block.text
        assert all(AWS_ID not in i.text for i in block.items)
        assert GITHUB in mem.recall("CI token 403", show_secrets=True).text
    code, out, _ = _cli(capsys, "--home", str(home), "--json", "recall", "CI token 403 releases", "--embed", "none")
    assert code == 0 and GITHUB not in out and "ghp_…PqRs" in json.loads(out)["text"]
    code, out, err = _cli(
        capsys, "--home", str(home), "--json", "recall", "CI token 403 releases", "--embed", "none", "--show-secrets"
    )
    assert code == 2 and GITHUB not in out and "only at a terminal" in json.loads(out)["error"] and err == ""
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    code, out, _ = _cli(
        capsys, "--home", str(home), "recall", "CI token 403 releases", "--embed", "none", "--show-secrets"
    )
    assert GITHUB in out


def test_show_secrets_unmasks_at_a_terminal_and_refuses_a_pipe(leaky_home: tuple[Path, Path]) -> None:
    # The command as an agent's shell tool runs it (stdout a pipe), then as a person does (a pty).
    import pty

    home, _ = leaky_home
    argv = [
        sys.executable,
        "-m",
        "memlane.cli",
        "--home",
        str(home),
        "search",
        AWS_ID,
        "--embed",
        "none",
        "--show-secrets",
    ]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "python")}
    piped = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)
    assert piped.returncode == 2 and piped.stdout == "" and AWS_ID not in piped.stderr
    assert piped.stderr.count("\n") == 1 and piped.stderr.startswith(
        "memlane search: --show-secrets prints keys and passwords only at a terminal"
    )
    leader, follower = pty.openpty()
    try:
        at_terminal = subprocess.run(argv, stdout=follower, stderr=subprocess.PIPE, text=True, env=env, timeout=60)
        os.close(follower)
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the terminal's other end is closed and drained
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(leader)
    assert at_terminal.returncode == 0, at_terminal.stderr
    assert AWS_ID in shown.decode()


def test_memlane_secrets_lists_where_they_occur(
    leaky_home: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    home, transcript = leaky_home
    code, out, _ = _cli(capsys, "--home", str(home), "--json", "secrets")
    assert code == 0 and AWS_ID not in out and GITHUB not in out
    report = json.loads(out)
    assert report["chunks_scanned"] >= 1
    got = sorted((s["kind"], s["masked"], s["session_id"], s["turn_start"], s["path"]) for s in report["secrets"])
    assert [g[:2] for g in got] == [
        ("aws_access_key_id", "AKIA…8WVY"),
        ("aws_secret_access_key", "wJal…LmKp"),
        ("github_token", "ghp_…PqRs"),
    ]
    assert {g[2] for g in got} == {"leak-1"} and {g[4] for g in got} == {str(transcript)}
    code, out, _ = _cli(capsys, "--home", str(home), "secrets")
    assert code == 0 and out.startswith("3 secrets in") and "AWS access key id" in out and "leak.jsonl" in out


def test_hook_and_mcp_outputs_are_masked(leaky_home: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    from memlane.agents.hooks import session_start, user_prompt_submit
    from memlane.agents.mcp import MemoryTools

    monkeypatch.delenv("MEMLANE_BRAIN_DIR", raising=False)
    home, _ = leaky_home
    brain = Brain(home=home)
    brain.add("kd", "Artifacts live in the eu-west-1 bucket.", on="2026-04-01")
    # A key hand-edited into MEMORY.md: the file keeps it, every session sees it masked.
    brain.memory_path.write_text(brain.memory_path.read_text() + f"- [KD02] 2026-04-02 — CI uses {GITHUB}\n")
    out = session_start(home, {"session_id": "s1", "cwd": "/src/artifacts"})
    assert (
        out is not None
        and GITHUB not in out
        and "ghp_…PqRs" in json.loads(out)["hookSpecificOutput"]["additionalContext"]
    )
    out = user_prompt_submit(home, {"session_id": "s2", "prompt": "why does the deploy fail with AccessDenied keys"})
    assert out is not None and "AKIA…8WVY" in out and AWS_ID not in out
    tools = MemoryTools(home, embedder="none")
    text = tools.recall("CI token 403 releases API")
    assert "ghp_…PqRs" in text and GITHUB not in text
    chunk = text.rsplit("[1] ", 1)[1].split()[0]
    assert GITHUB not in tools.get(chunk) and GITHUB not in tools.get("KD02")


def test_the_events_log_never_keeps_a_secret_a_query_holds(tmp_path: Path) -> None:
    """Every search logs its query (the brain's keyword search too): masked, at the one door."""
    from memlane.brain import Brain
    from memlane.events import EventLog

    key = AWS_ID
    brain = Brain(tmp_path / "brain", home=tmp_path)
    brain.search(f"where did {key} leak")
    memlane.open(tmp_path, embedder="none").search(f"who pasted {key}")
    logged = (tmp_path / "events.jsonl").read_text()
    assert [e["type"] for e in EventLog(tmp_path).read()] == ["search", "search"]
    assert key not in logged and "AKIA…" in logged
