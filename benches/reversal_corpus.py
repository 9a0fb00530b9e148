"""A transcript corpus where decisions are reversed across sessions and formats (deterministic).

Each *subject* (billing's database, the CI provider, the deploy region, …) is decided in one
session and re-decided in later ones, each time in a different format (Claude Code, Codex,
generic JSONL) and in different words. Around them: *unique old facts* that nothing ever
contradicts (they must not be buried by any preference for new memories) and filler
conversation on unrelated work.

Queries come in three kinds, each with the turn text that answers it:

* ``current``: the present state ("which database does billing use now?") → the newest statement;
* ``past``: a named past time ("what database did billing use in January?") → that month's statement;
* ``unique``: a fact stated once, long ago ("when are invoices generated?") → its only statement.

Example:
    >>> import tempfile, pathlib
    >>> corpus = write_corpus(pathlib.Path(tempfile.mkdtemp()))
    >>> sorted({q.kind for q in corpus.queries})
    ['current', 'past', 'unique']
    >>> sorted({p.suffix for p in corpus.files})
    ['.jsonl']
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

FORMATS = ("claude-code", "codex", "generic")

# (present-state question, past question with {month}, statements oldest first as (user, assistant)).
SUBJECTS: list[tuple[str, str, list[tuple[str, str]]]] = [
    ("Which database does the billing service use now?", "Which database did billing use in {month}?", [
        ("Where does billing keep its data?", "Billing runs on MySQL 5.7 on the db-billing-01 host; the schema lives in billing/schema.sql."),
        ("Is the billing migration finished?", "Yes, we moved billing to Postgres 16 last week. MySQL is retired for billing; connection string is in BILLING_PG_URL."),
    ]),
    ("What CI system do we currently run the builds on?", "What CI system did we use for builds in {month}?", [
        ("How are builds triggered?", "Every push triggers a Jenkins pipeline defined in the Jenkinsfile at the repo root."),
        ("Did the CI switch happen?", "We replaced Jenkins with GitHub Actions; workflows are under .github/workflows and Jenkins is shut down."),
        ("Any news on CI?", "GitHub Actions runners were too slow, so builds now run on Buildkite with our own agents in the build VPC."),
    ]),
    ("Which AWS region is production deployed to now?", "Which AWS region was production in, back in {month}?", [
        ("Where does prod run?", "Production is deployed to us-east-1, with backups copied to us-west-2 nightly."),
        ("Why is latency better for EU users?", "Because production now lives in eu-west-1: we moved the whole stack for data residency."),
    ]),
    ("What logging library does the API use currently?", "What logging library did the API use in {month}?", [
        ("How do we log in the API?", "The API logs through the standard logging module with a JSON formatter we wrote in api/logfmt.py."),
        ("Should new code keep using logfmt.py?", "No, the API switched to structlog: use structlog.get_logger() everywhere; logfmt.py was deleted."),
    ]),
    ("What frontend framework is the dashboard built with now?", "What framework was the dashboard written in during {month}?", [
        ("What is the dashboard written in?", "The dashboard is an Angular 12 app under web/dashboard, built with the Angular CLI."),
        ("How is the dashboard rewrite going?", "The dashboard rewrite is done: it is React 18 with Vite now, and the Angular code is gone."),
    ]),
    ("Which package manager does the monorepo use now?", "Which package manager did the monorepo use in {month}?", [
        ("How do I install JS dependencies?", "Run npm install at the root; the monorepo uses npm workspaces."),
        ("npm install fails with a lockfile error", "We switched the monorepo to pnpm: run pnpm install, package-lock.json was replaced by pnpm-lock.yaml."),
    ]),
    ("What do we use for caching sessions at the moment?", "What did we use to cache sessions in {month}?", [
        ("Where are user sessions cached?", "Sessions are cached in memcached, two nodes behind the app servers."),
        ("Can sessions survive a cache restart?", "They do now: session caching moved to Redis 7 with persistence, memcached was decommissioned."),
    ]),
    ("Which message queue do the workers consume from currently?", "Which message queue did the workers consume from in {month}?", [
        ("How do jobs reach the workers?", "Jobs are published to RabbitMQ and the workers consume the jobs queue with prefetch 10."),
        ("Why did the worker config change?", "The workers consume from Kafka now, topic jobs.v2; RabbitMQ was turned off after the cutover."),
    ]),
    ("How many API replicas run in production now?", "How many API replicas ran in production in {month}?", [
        ("How many API pods do we run?", "Production runs 3 API replicas behind the load balancer."),
        ("Did the scaling change stick?", "Yes, production is at 8 API replicas since the traffic doubled."),
        ("Can we save money on the API?", "We scaled the API down to 5 replicas after the caching work; that is the current count."),
    ]),
    ("What is the release cadence these days?", "What was the release cadence in {month}?", [
        ("How often do we release?", "We ship a release every Tuesday, weekly cadence, cut from main on Monday evening."),
        ("Is the weekly release still a thing?", "We moved to a release every two weeks, biweekly on Wednesdays, to cut QA load."),
    ]),
    ("Who is the on-call lead for payments now?", "Who was the on-call lead for payments in {month}?", [
        ("Who leads payments on-call?", "Priya Raman is the on-call lead for payments this quarter."),
        ("Who do I page for payments incidents?", "Page Tomasz Nowak: he took over as on-call lead for payments from Priya."),
    ]),
    ("What Python version do the services run on now?", "What Python version did the services run on in {month}?", [
        ("Which Python do we target?", "All services run on Python 3.9; the Docker base image is python:3.9-slim."),
        ("Can I use match statements?", "Yes, the services were upgraded to Python 3.12 last sprint, so pattern matching is fine."),
    ]),
    ("Where is the staging environment hosted currently?", "Where was staging hosted in {month}?", [
        ("How do I reach staging?", "Staging is a single Hetzner VM, staging.acme.dev, deployed with docker compose."),
        ("staging.acme.dev does not resolve", "Staging moved to a Kubernetes namespace on the shared EKS cluster; use stage.acme.internal."),
    ]),
    ("What is the API rate limit per client now?", "What was the API rate limit per client in {month}?", [
        ("Are clients rate limited?", "Each API client may send 100 requests per minute; the gateway returns 429 beyond that."),
        ("A partner hits 429 errors", "We raised the API rate limit to 600 requests per minute per client after the partner launch."),
    ]),
    ("Which monitoring tool does the team use at present?", "Which monitoring tool did the team use in {month}?", [
        ("Where are the dashboards?", "Monitoring is Datadog: dashboards and monitors live in the acme-prod Datadog org."),
        ("Why did the Datadog bill go away?", "We replaced Datadog with Grafana Cloud and Prometheus to cut costs; dashboards were ported."),
    ]),
    ("What is the test coverage threshold in CI now?", "What was the test coverage threshold in CI during {month}?", [
        ("Does CI enforce coverage?", "CI fails when line coverage drops below 70 percent."),
        ("My PR failed on coverage at 78%", "The coverage gate was raised to 80 percent, so 78 fails now; add tests."),
    ]),
    ("Which code review rule applies to merges now?", "Which code review rule applied to merges in {month}?", [
        ("How many approvals does a PR need?", "One approving review is enough to merge into main."),
        ("Why can't I merge with one approval?", "Branch protection now requires two approving reviews, one from a code owner, to merge into main."),
    ]),
    ("Which auth provider handles login today?", "Which auth provider handled login in {month}?", [
        ("How does login work?", "Login goes through Auth0 with the universal login page and our tenant acme-prod."),
        ("Why is the login page different?", "Login moved from Auth0 to Keycloak, self-hosted at sso.acme.internal, to cut costs."),
    ]),
]

# (question, answering turn pair): facts stated once and never contradicted.
UNIQUE_FACTS: list[tuple[str, tuple[str, str]]] = [
    ("When are billing invoices generated?", ("When do invoices go out?", "Billing invoices are generated on the 1st of every month at 02:00 UTC by the invoice-gen cron job.")),
    ("What port does the metrics exporter listen on?", ("Where do I scrape metrics?", "The metrics exporter listens on port 9464 and exposes /metrics in Prometheus format.")),
    ("Why was the search index rebuilt?", ("Why is search empty this morning?", "The search index is being rebuilt because the analyzer changed to handle accents; it takes about four hours.")),
    ("Which team owns the mobile app?", ("Who should review the mobile PR?", "The mobile app is owned by the Falcon team; ask Lena Fischer for reviews.")),
    ("What is the max upload size for attachments?", ("Users complain uploads fail", "Attachments are limited to 25 MB per file by the upload gateway; larger files get HTTP 413.")),
    ("How do we rotate the database passwords?", ("How do secrets get rotated?", "Database passwords are rotated every 90 days by the vault-rotator job, which updates the Kubernetes secrets.")),
    ("What causes the flaky test in test_checkout?", ("test_checkout keeps failing randomly", "The flaky test_checkout failure comes from a race on the cart fixture; it needs the freeze_time decorator.")),
    ("What timezone are the cron jobs scheduled in?", ("The report ran an hour late", "All cron jobs are scheduled in UTC, so daylight saving shifts local times by an hour.")),
    ("Who designed the company logo?", ("Where did the logo come from?", "The company logo was designed by Studio Kiln in Lisbon, delivered as SVG in brand/logo.svg.")),
    ("What does error code E4021 mean?", ("Customers see E4021", "E4021 means the card issuer declined the payment for suspected fraud; tell users to call their bank.")),
]

FILLER: list[tuple[str, str]] = [
    ("Can you review the README wording?", "Sure, I tightened the introduction and fixed two broken links in the install section."),
    ("Lint is failing on main", "Ruff flagged an unused import in tools/report.py; I removed it and the check passes."),
    ("What's a good name for the helper?", "normalize_path says what it does; avoid util or helper in the name."),
    ("Add a unit test for the parser", "Added tests/test_parser.py with cases for empty input, unicode and a truncated line."),
    ("Why is the laptop fan so loud?", "The file watcher was scanning node_modules; excluding it dropped CPU to idle."),
    ("Summarise the standup", "Three items: the flaky dashboard chart, the docs sprint, and the offsite planning."),
    ("Bump the version", "Version bumped to 2.4.1 in pyproject.toml and the changelog entry added."),
    ("Format the SQL in the report query", "Reformatted with one clause per line and uppercase keywords."),
    ("Is the docs site down?", "It was a DNS propagation delay after the certificate renewal; it resolves again."),
    ("Rename the env var", "Renamed APP_DEBUG to APP_LOG_LEVEL and updated the three places that read it."),
    ("Any idea for the team lunch?", "The ramen place near the office takes group bookings on Fridays."),
    ("Speed up the test suite", "Marked the slow integration tests and run them only in the nightly job; the suite takes 40 s now."),
]

MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"]


@dataclass
class Query:
    """One evaluation question and the text its answer chunk contains."""

    kind: str
    text: str
    answer: str
    subject: int = -1
    earlier: list[str] = field(default_factory=list)


@dataclass
class Corpus:
    """The files written and the queries to ask."""

    files: list[Path] = field(default_factory=list)
    queries: list[Query] = field(default_factory=list)


def _iso(t: datetime) -> str:
    return t.isoformat().replace("+00:00", "Z")


def _claude(sid: str, pairs: list[tuple[str, str]], start: datetime) -> list[dict]:
    out, parent = [], None
    for i, (q, a) in enumerate(pairs):
        t = start + timedelta(minutes=3 * i)
        for role, text, n in (("user", q, 0), ("assistant", a, 1)):
            uid = f"{sid}-{i}-{n}"
            message = {"role": "user", "content": text} if role == "user" else {
                "id": f"msg_{sid}_{i}", "type": "message", "role": "assistant", "model": "claude-sonnet",
                "content": [{"type": "text", "text": text}]}
            out.append({"type": role, "message": message, "uuid": uid, "parentUuid": parent, "sessionId": sid,
                        "timestamp": _iso(t + timedelta(seconds=20 * n)), "cwd": "/home/dev/acme", "version": "2.1.0",
                        "userType": "external", "isSidechain": False})
            parent = uid
    return out


def _codex(sid: str, pairs: list[tuple[str, str]], start: datetime) -> list[dict]:
    out = [{"timestamp": _iso(start), "type": "session_meta",
            "payload": {"id": sid, "timestamp": _iso(start), "cwd": "/home/dev/acme", "originator": "codex_cli_rs", "cli_version": "0.40.0"}}]
    for i, (q, a) in enumerate(pairs):
        t = start + timedelta(minutes=3 * i)
        out.append({"timestamp": _iso(t), "type": "response_item",
                    "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": q}]}})
        out.append({"timestamp": _iso(t + timedelta(seconds=20)), "type": "response_item",
                    "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": a}]}})
    return out


def _generic(sid: str, pairs: list[tuple[str, str]], start: datetime) -> list[dict]:
    out = []
    for i, (q, a) in enumerate(pairs):
        t = start + timedelta(minutes=3 * i)
        out.append({"id": f"{sid}-u{i}", "role": "user", "content": q, "timestamp": _iso(t), "session_id": sid})
        out.append({"id": f"{sid}-a{i}", "role": "assistant", "content": a, "timestamp": _iso(t + timedelta(seconds=20)), "session_id": sid})
    return out


_WRITERS = {"claude-code": _claude, "codex": _codex, "generic": _generic}


def write_session(root: Path, fmt: str, sid: str, pairs: list[tuple[str, str]], start: datetime) -> Path:
    """Write one session of (user, assistant) pairs, three minutes apart, as a ``fmt`` transcript
    under ``root/<fmt>/``; returns its path."""
    path = root / fmt / f"{start:%Y-%m-%d}-{sid}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in _WRITERS[fmt](sid, pairs, start)))
    return path


def write_corpus(root: Path, seed: int = 11, start: datetime = datetime(2026, 1, 5, 9, tzinfo=timezone.utc)) -> Corpus:
    """Write the corpus under ``root/<format>/`` and return its files and queries.

    Statement ``n`` of every subject is told in month ``2n + 1`` (January, March, May), so each
    past query names a month that holds exactly one statement; unique facts are told in January
    and February; every session mixes in filler pairs.
    """
    rng = random.Random(seed)
    corpus = Corpus()
    sessions: list[tuple[datetime, list[tuple[str, str]]]] = []
    for s, (current_q, past_q, statements) in enumerate(SUBJECTS):
        for n, pair in enumerate(statements):
            when = start + timedelta(days=61 * n + rng.randint(0, 20), hours=rng.randint(0, 8))
            sessions.append((when, [pair]))
            if n < len(statements) - 1 or rng.random() < 0.5:
                corpus.queries.append(Query("past", past_q.format(month=MONTHS[when.month - 1]), pair[1], s))
        corpus.queries.append(Query("current", current_q, statements[-1][1], s, [a for _, a in statements[:-1]]))
    for f, (question, pair) in enumerate(UNIQUE_FACTS):
        sessions.append((start + timedelta(days=rng.randint(0, 50), hours=rng.randint(0, 8)), [pair]))
        corpus.queries.append(Query("unique", question, pair[1]))
    sessions.sort(key=lambda s: s[0])
    for i, (when, pairs) in enumerate(sessions):
        mixed = rng.sample(FILLER, 3) + pairs + rng.sample(FILLER, 2)
        fmt = FORMATS[i % len(FORMATS)]
        sid = f"{i:08x}-0000-4000-8000-{rng.getrandbits(48):012x}"
        corpus.files.append(write_session(root, fmt, sid, mixed, when))
    return corpus
