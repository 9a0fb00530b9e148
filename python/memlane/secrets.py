"""Secrets in text: find them, name their kind, mask them.

Transcripts keep what was pasted into them, keys included; memlane keeps them verbatim on disk
and in the keyword index (so ``memlane search AKIA…`` finds where a key leaked), but every
text it hands to an agent or prints passes through :func:`mask`, and the brain refuses to
store one (:class:`~memlane.brain.guard.MemoryGuard` reports each as a ``secret.<kind>``
finding).

Kinds (:data:`KINDS`), most specific first; a match inside a span an earlier kind took is
dropped:

- ``private_key``: PEM/OpenSSH/PGP ``-----BEGIN … PRIVATE KEY-----`` blocks with a key body
  (a header alone is prose) and PuTTY key files' private lines;
- ``aws_access_key_id`` (``AKIA``/``ASIA``/… + 16), ``aws_secret_access_key`` (40 characters
  of base64 after an AWS secret-key name, or within :data:`AWS_PAIR_REACH` characters of a key
  id, before or after it: a pasted pair, the credentials csv, a key alone on the next line).
  A bare 40-character value with no id or name near it is left alone: nothing tells it from a
  line of base64 (the last line of a PEM certificate has the same shape and entropy), and a
  git SHA is 40 characters too;
- ``github_token`` (``ghp_``/``gho_``/``ghu_``/``ghs_``/``ghr_``, fine-grained ``github_pat_``),
  ``gitlab_token`` (``glpat-`` and GitLab's other prefixes), ``slack_token`` (``xox?-``,
  ``xapp-``, incoming-webhook URLs), ``stripe_key`` (secret and restricted keys, live and
  test, webhook secrets; publishable keys are public), ``anthropic_key`` (``sk-ant-…``),
  ``openai_key`` (``sk-…T3BlbkFJ…``, ``sk-proj-…``);
- ``jwt``: three base64url parts whose header decodes to a JSON object;
- ``url_password``: the password of ``scheme://user:password@host`` URLs and connection
  strings;
- ``password``: a value assigned to a password-named variable, flag or phrase
  (``DB_PASSWORD=…``, ``--password …``, "the password is …") that is not a reference to one
  (``$VAR``, ``os.environ[…]``, ``${{ secrets.X }}``, a path) nor a placeholder;
- ``high_entropy``: a random-looking value (mixed letters and digits, 16+ characters, high
  Shannon entropy) right after a key/secret/token/credential/bearer word.

The token shapes follow detect-secrets 1.5.0's plugins (Yelp, Apache-2.0) and the vendors'
documented prefixes. detect-secrets itself is not used at run time: importing it costs
about 0.2 s (its package loads the whole scanning engine and ``requests``) against a 0.3 s
hook budget, its keyword plugin scans about 2.5 ms per KB, it reports values rather than
positions (``ghp`` for a GitHub token), and it lacks several kinds above. The tests check
that what its regex plugins find in their lines lies inside what this module finds.

Every pattern starts with one of a few literals (``AKIA``, ``ghp_``, ``://``, ``token``…): one
pass of the core's Aho–Corasick automaton (``memlane._core.Literals``) finds them all, and each
pattern is tried only where one of its literals stands, on an ASCII copy of the text with the
same offsets — not 25 regex scans of the whole text. Masking costs ~12 µs per KB of real
transcripts (benches/bench_guard.py).

Example:
    >>> mask("export AWS_ACCESS_KEY_ID=AKIAQYLPMN5HHHFP8WVY")
    'export AWS_ACCESS_KEY_ID=AKIA…8WVY'
    >>> [s.kind for s in find("postgres://billing:S3cr3tPa55w0rd@db.internal/billing")]
    ['url_password']
    >>> mask("the cache key is 7c1e9a0b4d2f6e83; see src/memlane/recall.py")
    'the cache key is 7c1e9a0b4d2f6e83; see src/memlane/recall.py'
"""

from __future__ import annotations

import codecs
import math
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from memlane import _core
from memlane.errors import InvalidArgumentError

ELLIPSIS = "…"
"""What stands for the hidden part of a masked secret."""

_ERRORS = "memlane-secrets-ascii"


def _as_x(err: UnicodeError) -> tuple[str, int]:
    """Each character that has no ASCII form becomes ``x``: the ASCII copy keeps the text's offsets."""
    if not isinstance(err, UnicodeEncodeError):
        raise err
    return "x" * (err.end - err.start), err.end


codecs.register_error(_ERRORS, _as_x)


@dataclass(frozen=True)
class Kind:
    """A shape of secret.

    Attributes:
        name: ``aws_access_key_id``; guard findings are ``secret.<name>``.
        label: For people: ``AWS access key id``.
        sources: Patterns; the named group ``secret`` (else the whole match) is the secret,
            ``pre`` its public prefix.
        starts: For each pattern, the literals one of which every match of it starts with (a
            pattern is tried only where one stands); lower case for an ``ignorecase`` kind.
        ignorecase: The patterns are lower case and match the lower-cased text.
        check: Whether a matched value really is a secret (placeholders, references…).
        context: Whether the text before a match (the text, the match's offset) lets it count.
        reveal: Show a prefix and suffix when masked (tokens); passwords and keys show nothing.
        behind: For each pattern, how far before one of its literals a match may start (a
            secret named by what follows it); empty: every match starts at a literal.
    """

    name: str
    label: str
    sources: tuple[str, ...]
    starts: tuple[tuple[str, ...], ...]
    ignorecase: bool = False
    check: Callable[[str], bool] | None = None
    context: Callable[[str, int], bool] | None = None
    reveal: bool = True
    behind: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if len(self.starts) != len(self.sources) or not all(isinstance(s, tuple) and s for s in self.starts):
            raise InvalidArgumentError(f"{self.name}: starts needs a non-empty tuple of literals for each pattern")
        if self.behind and len(self.behind) != len(self.sources):
            raise InvalidArgumentError(f"{self.name}: behind needs one distance for each pattern")

    def pattern(self, n: int) -> re.Pattern[str]:
        """The ``n``-th pattern, compiled the first time one of its start literals turns up (a
        process that masks only texts without them compiles none: ~10 ms saved)."""
        return _compiled(self.sources[n])


@dataclass(frozen=True)
class Secret:
    """One secret found in a text.

    Attributes:
        kind: The :class:`Kind`'s name.
        start: Offset of the secret in the text.
        end: Offset just past it.
        masked: What :func:`mask` puts in its place.
    """

    kind: str
    start: int
    end: int
    masked: str

    @property
    def label(self) -> str:
        """The kind for people (``AWS access key id``)."""
        return KIND_BY_NAME[self.kind].label


# ---------------------------------------------------------------------------- checks


def entropy(value: str) -> float:
    """Shannon entropy of ``value`` in bits per character.

    Example:
        >>> round(entropy("aaaa"), 2), round(entropy("abcd"), 2)
        (0.0, 2.0)
    """
    n = len(value)
    return sum(c / n * math.log2(n / c) for c in Counter(value).values()) if n else 0.0


# Values people write where a real secret would go.
_PLACEHOLDERS = frozenset(
    [
        "password",
        "passwd",
        "pass",
        "pwd",
        "pw",
        "secret",
        "secrets",
        "changeme",
        "change_me",
        "changeit",
        "example",
        "test",
        "testing",
        "postgres",
        "postgresql",
        "mysql",
        "root",
        "admin",
        "administrator",
        "user",
        "username",
        "guest",
        "default",
        "redacted",
        "masked",
        "placeholder",
        "hidden",
        "mypassword",
        "yourpassword",
        "your_password",
        "your-password",
        "mysecret",
        "yoursecret",
        "dbpass",
        "dbpassword",
        "token",
        "apikey",
        "api_key",
        "none",
        "null",
        "nil",
        "empty",
        "foobar",
        "foo",
        "bar",
        "baz",
        "qwerty",
        "letmein",
        "welcome",
        "password1",
        "password123",
        "hunter2",
        "dummy",
        "fake",
        "sample",
        "testpass",
        "testpassword",
        "test123",
        "secret123",
    ]
)
# Sample values in code and docs ("secure_password123", "your-api-key", "changeme-in-prod").
_PLACEHOLDER_PARTS = (
    "password",
    "passwd",
    "example",
    "changeme",
    "change-me",
    "placeholder",
    "dummy",
    "redacted",
    "your",
)
_REFERENCE = re.compile(
    r"[<>\[\]()…*]|^[$%{]|\$\{|\$\(|%\(|\{\{|^(?:os\.|env\.|process\.|getenv|secrets\.|settings\.|config\.|vault:|op://|ssm:|"
    r"arn:|sm://|file:|/|~|\./|\.\./)",
    re.IGNORECASE,
)


def _not_placeholder(value: str) -> bool:
    low = value.lower().strip("'\"`")
    if low in _PLACEHOLDERS or len(set(low)) <= 2 or any(p in low for p in _PLACEHOLDER_PARTS):
        return False
    # "<password>", "${DB_PASSWORD}", "$(pass show db)", "os.environ[...]", "xxxx": references
    # to a secret kept elsewhere, or stand-ins.
    return not _REFERENCE.search(low) and not re.fullmatch(r"x+|\.+|_+|-+", low)


def _password_value(value: str) -> bool:
    # An identifier (settings.password, DB_PASSWORD, required) names a password, it is not
    # one: a value must hold a digit or a symbol.
    return _not_placeholder(value) and bool(re.search(r"[^A-Za-z_.]", value)) and not value.isdigit()


def _random_looking(value: str) -> bool:
    """Long, mixed letters and digits, high entropy: a generated token, not a word or a path."""
    if len(value) < 16 or not _not_placeholder(value):
        return False
    # A generated token has a long run of letters mixed with digits; identifiers
    # (my_api_token_v2), paths (src/app/main.py), versions and UUIDs do not.
    runs = re.findall(r"[A-Za-z0-9]{12,}", value)
    if not any(re.search(r"\d", r) and re.search(r"[A-Za-z]", r) for r in runs):
        return False
    if re.fullmatch(r"[0-9a-fA-F]+", value) and len(value) < 32:
        return False  # short hex: ids and hashes (chunk ids, short SHAs)
    return entropy(value) >= 3.3


def _aws_secret(value: str) -> bool:
    return (
        bool(re.search(r"[A-Z]", value) and re.search(r"[a-z]", value) and re.search(r"\d", value))
        and "EXAMPLE" not in value
    )


def _aws_key_id(value: str) -> bool:
    return "EXAMPLE" not in value  # AWS's documentation keys (AKIAIOSFODNN7EXAMPLE)


def _jwt(value: str) -> bool:
    import base64
    import binascii
    import json

    header = value.split(".", 1)[0]
    try:
        decoded = json.loads(base64.urlsafe_b64decode(header + "=" * (-len(header) % 4)))
    except (ValueError, binascii.Error, UnicodeDecodeError):
        return False
    return isinstance(decoded, dict)


def _key_body(value: str) -> bool:
    # A header in prose ("the file starts with -----BEGIN RSA PRIVATE KEY-----") is no key.
    return bool(re.search(r"[A-Za-z0-9+/=]{32,}", value[:600]))


# ---------------------------------------------------------------------------- kinds

# "api_key", "AccessKey", "signing-key": the word before "key" makes it a credential's name
# (a cache key, a primary key or a partition key is none).
_KEY_QUALIFIER = re.compile(r"(?:api|access|auth|private|signing|encryption|client|master|service|account)[ _-]?$")


def _qualified_key(text: str, start: int) -> bool:
    return (
        text[start : start + 3].lower() != "key"
        or _KEY_QUALIFIER.search(text[max(0, start - 12) : start].lower()) is not None
    )


_B64 = r"[A-Za-z0-9/+]"
_SEP = r"[\"'\]]{0,2}\s*(?::=|=>|[:=])\s*[\"'`]?|\s+(?:is|was)\s+[\"'`]?"
_VALUE = r"(?P<secret>[A-Za-z0-9+/=_\-.~]{16,512})(?![A-Za-z0-9+/=_\-.~])"
_ENTROPY_TAIL = r"[\w-]*(?:" + _SEP + r"|\s+[\"'`]?)" + _VALUE
# A backslash ends a value: in JSON-escaped text it starts "\n", never a password.
_PASSWORD_VALUE = r"(?P<secret>[^\s\"'`,;\\]{6,128})"
_PASSWORD_TAIL = r"(?:" + _SEP + r")" + _PASSWORD_VALUE
_AWS_SECRET_VALUE = r"(?P<secret>" + _B64 + r"{40})(?![A-Za-z0-9/+=])"
AWS_PAIR_REACH = 200
"""How many characters may stand between an AWS key id and a bare secret key beside it (a few
lines: the pair pasted together, the key id's line then the secret's)."""
# The patterns match the lower-cased text: the check sees the case. A value all hex digits is a
# SHA, never a secret key: skipped here, so a SHA between a key id and its secret hides nothing.
_AWS_BARE_SECRET = r"(?<![A-Za-z0-9/+=])(?![0-9a-f]{40}(?![A-Za-z0-9/+=]))" + _AWS_SECRET_VALUE
_AWS_KEY_ID = r"a[ks]ia[a-z0-9]{16}(?![a-z0-9])"

KINDS: tuple[Kind, ...] = (
    Kind(
        "private_key",
        "private key",
        (
            # The body runs to the END line, or, in a cut-off text, to the first character no
            # key body holds (PEM headers and JSON-escaped newlines included).
            r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----(?P<secret>(?:[A-Za-z0-9+/=\s]|\\[nr]|"
            r"(?:Proc-Type|DEK-Info|Comment|Version):[^\n\\]*)+?(?:-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|"
            r"(?=[^A-Za-z0-9+/=\s\\])|\Z))",
            r"Private-Lines:\s*\d+(?P<secret>\s+[A-Za-z0-9+/=\s]{32,}?)(?=Private-MAC:|\Z)",
        ),
        (("-----BEGIN",), ("Private-Lines:",)),
        check=_key_body,
        reveal=False,
    ),
    Kind(
        "aws_access_key_id",
        "AWS access key id",
        (r"(?P<pre>A(?:KIA|SIA|BIA|CCA|3T[A-Z0-9]))(?<![A-Z0-9]A....)[A-Z0-9]{16}(?![A-Za-z0-9])",),
        (("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),),
        check=_aws_key_id,
    ),
    Kind(
        "aws_secret_access_key",
        "AWS secret access key",
        (
            r"secret[ _-]?(?:access[ _-]?)?key\w*(?:" + _SEP + r"|\s+)" + _AWS_SECRET_VALUE,
            # The credentials csv, the console and people pasting both: the key id, then its
            # secret, on its line or a line or two below.
            _AWS_KEY_ID + r"[\s\S]{0," + str(AWS_PAIR_REACH) + r"}?" + _AWS_BARE_SECRET,
            # The secret first, its key id after it.
            _AWS_BARE_SECRET + r"(?=[\s\S]{0," + str(AWS_PAIR_REACH) + r"}?" + _AWS_KEY_ID + ")",
        ),
        (("secret",), ("akia", "asia"), ("akia", "asia")),
        ignorecase=True,
        check=_aws_secret,
        behind=(0, 0, AWS_PAIR_REACH + 40),
    ),
    Kind(
        "github_token",
        "GitHub token",
        (r"(?P<pre>g(?<![A-Za-z0-9_]g)(?:h[pousr]_|ithub_pat_))[A-Za-z0-9_]{22,255}(?![A-Za-z0-9_])",),
        (("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),),
        check=lambda v: len(v) >= (40 if v[3] == "_" else 33),  # ghp_ + 36; github_pat_ + 22 or more
    ),
    Kind(
        "gitlab_token",
        "GitLab token",
        (
            r"(?P<pre>gl(?:pat|dt|ft|soat|rt|cbt|imt|ptt|agent|oas)-)[A-Za-z0-9_\-]{20,1024}(?![A-Za-z0-9_\-])",
            r"(?P<pre>GR1348941)[A-Za-z0-9_\-]{20,50}(?![A-Za-z0-9_\-])",
        ),
        (
            tuple(f"gl{p}-" for p in ("pat", "dt", "ft", "soat", "rt", "cbt", "imt", "ptt", "agent", "oas")),
            ("GR1348941",),
        ),
    ),
    Kind(
        "slack_token",
        "Slack token",
        (
            r"(?P<pre>xox(?:[abposr]-|(?P<refresh>e(?:\.xox[bp])?-\d-)))(?(refresh)[A-Za-z0-9]{40,}|(?:\d+-)+[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*)",
            r"(?P<pre>xapp-\d-)[A-Z0-9]+-\d+-[a-z0-9]+",
            r"https://hooks\.slack\.com/services/T[A-Za-z0-9_]+/B[A-Za-z0-9_]+/(?P<secret>[A-Za-z0-9_]{8,})",
        ),
        (("xox",), ("xapp-",), ("https://hooks.slack.com/",)),
    ),
    Kind(
        "stripe_key",
        "Stripe secret key",
        (
            r"(?P<pre>sk_(?:live|test)_)[0-9A-Za-z]{24,247}(?![0-9A-Za-z])",
            r"(?P<pre>rk_(?:live|test)_)[0-9A-Za-z]{24,247}(?![0-9A-Za-z])",
            r"(?P<pre>whsec_)[A-Za-z0-9]{32,}",
        ),
        (("sk_live_", "sk_test_"), ("rk_live_", "rk_test_"), ("whsec_",)),
    ),
    Kind(
        "anthropic_key",
        "Anthropic API key",
        (r"(?P<pre>sk-ant-(?:api|admin|oat|ort|sid)\d\d-)[A-Za-z0-9_\-]{32,}",),
        (("sk-ant-",),),
    ),
    Kind(
        "openai_key",
        "OpenAI API key",
        (
            # Every OpenAI key holds "T3BlbkFJ" (base64 of "OpenAI"); project, service
            # account and admin keys are also known by their prefix.
            r"(?P<pre>sk-(?:(?P<named>proj|svcacct|admin)-|None-)?)(?:[A-Za-z0-9_\-]{16,}T3BlbkFJ[A-Za-z0-9_\-]{16,}|"
            r"(?(named)[A-Za-z0-9_\-]{40,}|(?!)))",
        ),
        (("sk-",),),
    ),
    Kind(
        "jwt",
        "JSON Web Token",
        (r"eyJ(?<![A-Za-z0-9_\-]eyJ)[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*",),
        (("eyJ",),),
        check=_jwt,
    ),
    Kind(
        "url_password",
        "password in a URL",
        (r"://[^\s:/?#@'\"<>\[\]{}`\\]*:(?P<secret>[^\s/?@'\"<>\[\]{}`\\]+)@(?=[\w.\-\[])",),
        (("://",),),
        check=_not_placeholder,
        reveal=False,
    ),
    Kind(
        "password",
        "password",
        (
            # password, passwd, passphrase (and DB_PASSWORD…), or "pass" as a word; a
            # command-line flag (--password VALUE) may use a plain space.
            r"pass(?:w(?:or)?d\w*|phrase\w*|(?<![a-z0-9]pass)\b)(?:"
            + _SEP
            + r"|(?<=--pass)\s+|(?<=--password)\s+|(?<=--passwd)\s+)"
            + _PASSWORD_VALUE,
            r"pwd(?<![a-z0-9]pwd)\b" + _PASSWORD_TAIL,
        ),
        (("pass",), ("pwd",)),
        ignorecase=True,
        check=_password_value,
        reveal=False,
    ),
    Kind(
        "high_entropy",
        "secret-looking value after a key/secret/token word",
        (
            r"key" + _ENTROPY_TAIL,
            r"secret" + _ENTROPY_TAIL,
            r"token" + _ENTROPY_TAIL,
            r"credential" + _ENTROPY_TAIL,
            r"bearer" + _ENTROPY_TAIL,
        ),
        (("key",), ("secret",), ("token",), ("credential",), ("bearer",)),
        ignorecase=True,
        check=_random_looking,
        context=_qualified_key,
    ),
)
"""Every kind, most specific first."""

KIND_BY_NAME: dict[str, Kind] = {k.name: k for k in KINDS}


# ---------------------------------------------------------------------------- finding and masking


def mask_value(value: str, kind: str, prefix: str = "") -> str:
    """The masked form of one secret: its public prefix, ``…`` and at most a quarter of the rest.

    Enough to tell two keys apart and to find the one to rotate, never enough to use. Passwords
    show nothing.

    Example:
        >>> mask_value("AKIAQYLPMN5HHHFP8WVY", "aws_access_key_id", "AKIA")
        'AKIA…8WVY'
        >>> mask_value("hunter2-Kx9!qz", "password")
        '…'
    """
    if not KIND_BY_NAME[kind].reveal:
        return ELLIPSIS
    rest = value[len(prefix) :]
    shown = min(4, len(rest) // 4)
    head = prefix or rest[:shown]
    return head + ELLIPSIS + (rest[-shown:] if shown else "")


def find(text: str) -> list[Secret]:
    """Every secret in ``text``, in order of position; overlapping matches count once.

    Example:
        >>> [(s.kind, s.masked) for s in find("token: ghp_R8aZk3vPq0sLmN2bXc4dEfGh5iJkLmNoPqRs")]
        [('github_token', 'ghp_…PqRs')]
    """
    # Every secret shape is ASCII: match on an ASCII copy with the same offsets (a letter for
    # each other character), whose passes cost a quarter of a wide string's, and whose
    # lower-casing moves no offset.
    plain = text if text.isascii() else text.encode("ascii", _ERRORS).decode("ascii")
    starts = _starts(plain)
    if not starts:
        return []
    lower = plain.lower() if any(KINDS[kind].ignorecase for kind, _ in starts) else plain
    taken: list[Secret] = []
    for i, n in sorted(starts):  # the kinds most specific first, each kind's patterns in order
        kind = KINDS[i]
        behind = kind.behind[n] if kind.behind else 0
        for m in _matches(kind.pattern(n), lower if kind.ignorecase else plain, starts[(i, n)], behind):
            # A ``secret`` group is the secret (its public context lies outside it); else the
            # whole match is, its ``pre`` group the public prefix.
            inner = "secret" in m.re.groupindex
            start, end = m.span("secret") if inner else m.span()
            value = text[start:end]
            if kind.check is not None and not kind.check(value):
                continue
            if kind.context is not None and not kind.context(text, m.start()):
                continue
            if any(s.start < end and start < s.end for s in taken):
                continue
            prefix = "" if inner or "pre" not in m.re.groupindex else text[m.start("pre") : m.end("pre")]
            taken.append(Secret(kind.name, start, end, mask_value(value, kind.name, prefix)))
    taken.sort(key=lambda s: s.start)
    return taken


# How far past its first character a literal and the token it starts may run (an AWS key id:
# 20 characters and the one after it).
_LITERAL_REACH = 21


@cache
def _compiled(source: str) -> re.Pattern[str]:
    return re.compile(source)


@cache
def _literals() -> tuple[_core.Literals, list[list[tuple[int, int]]]]:
    """One automaton for the start literals of every pattern (case aside: a pattern that
    minds it simply fails to match where only the case differs), and for each literal the
    patterns (kind, pattern) it starts."""
    owners: dict[str, list[tuple[int, int]]] = {}
    for i, kind in enumerate(KINDS):
        for j, literals in enumerate(kind.starts):
            for literal in literals:
                owners.setdefault(literal.lower(), []).append((i, j))
    return _core.Literals(list(owners), ignore_case=True), list(owners.values())


def _starts(plain: str) -> dict[tuple[int, int], list[int]]:
    """Where in ``plain`` each pattern (kind, pattern) may match: the offsets of its start
    literals, ascending."""
    finder, owners = _literals()
    starts: dict[tuple[int, int], list[int]] = {}
    for at, literal in finder.find(plain):
        for pattern in owners[literal]:
            starts.setdefault(pattern, []).append(at)
    return starts


def _matches(pattern: re.Pattern[str], subject: str, starts: Sequence[int], behind: int = 0) -> Iterator[re.Match[str]]:
    """``pattern.finditer(subject)`` for a pattern whose every match begins at one of
    ``starts`` (ascending), or at most ``behind`` characters before one and holds it: the same
    matches, the pattern tried only there."""
    end = 0
    for at in starts:
        if at < end:
            continue  # inside the last match, or a second literal at the same offset
        if behind:
            # Its literal is the last the match may reach (``endpos``): a literal further on
            # has its own turn.
            m = pattern.search(subject, max(at - behind, end), at + _LITERAL_REACH)
            if m is not None:
                yield m
                end = m.end()
            continue
        m = pattern.match(subject, at)
        if m is not None:
            yield m
            end = m.end()
        else:
            end = at + 1


def mask(text: str) -> str:
    """``text`` with every secret replaced by its masked form (``AKIA…8WVY``).

    Idempotent: a masked text has no secrets left to find.

    Example:
        >>> mask("git clone https://deploy:Xk93mPq7Lz@git.example.com/org/repo.git")
        'git clone https://deploy:…@git.example.com/org/repo.git'
    """
    return replace(text, find(text))


def replace(text: str, found: list[Secret]) -> str:
    """``text`` with the secrets :func:`find` returned for it replaced by their masked forms."""
    if not found:
        return text
    out, at = [], 0
    for s in found:
        out += [text[at : s.start], s.masked]
        at = s.end
    out.append(text[at:])
    return "".join(out)


# Between the texts of one batch: whitespace to every pattern, and never inside a secret.
_BATCH_SEPARATOR = "\n\x1f\n"


def mask_many(texts: list[str]) -> list[str]:
    """:func:`mask` of each text, in one pass over them all (a call has a fixed cost of its own).

    Example:
        >>> mask_many(["no secret here", "AKIAQYLPMN5HHHFP8WVY"])
        ['no secret here', 'AKIA…8WVY']
    """
    joined = _BATCH_SEPARATOR.join(texts)
    if joined.count(_BATCH_SEPARATOR) != max(len(texts) - 1, 0):
        return [mask(t) for t in texts]  # a text holds the separator itself
    found = [s for s in find(joined) if _BATCH_SEPARATOR not in joined[s.start : s.end]]
    return replace(joined, found).split(_BATCH_SEPARATOR) if found else list(texts)


def mask_json(value: Any) -> Any:
    """A JSON-ready value with every string in it masked (dict keys stay as they are), all
    strings in one pass (:func:`mask_many`); the value itself when it holds no secret.

    Example:
        >>> mask_json({"text": "AKIAQYLPMN5HHHFP8WVY", "k": [1, "ok"]})
        {'text': 'AKIA…8WVY', 'k': [1, 'ok']}
    """
    strings: list[str] = []
    _strings(value, strings)
    masked = mask_many(strings)
    if all(m is s for m, s in zip(masked, strings)):
        return value  # nothing to hide: rebuilding it would only copy it
    return _rebuilt(value, iter(masked))


def _strings(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for v in value.values():
            _strings(v, out)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _strings(v, out)


def _rebuilt(value: Any, masked: Iterator[str]) -> Any:
    if isinstance(value, str):
        return next(masked)
    if isinstance(value, dict):
        return {k: _rebuilt(v, masked) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_rebuilt(v, masked) for v in value]
    return value
