"""A transcript corpus where decisions are reversed across sessions and formats (deterministic).

Each *subject* (billing's database, the CI provider, the deploy region, …) is decided in one
session and re-decided in later ones — sometimes later in the same session — each time in a
different format (Claude Code, Codex, generic JSONL, markdown daily notes) and in different
words: every statement has paraphrases, some announcing the change ("we moved billing to
Postgres"), some just stating the value ("billing data is in Postgres 16"); the seed picks one.
Around them: *unique old facts* that nothing ever contradicts (they must not be buried by any
preference for new memories), *neighbours* — newer turns on another aspect of a subject or a
unique fact ("the billing CSV export now queues PDFs") that answer nothing — and filler.

Subjects and unique facts come in two halves: ``tune`` (the rules were developed looking at
these) and ``heldout`` (written at the same time, never looked at while tuning), so a result on
``heldout`` says how the rules carry over to decisions they were not fitted to.

Queries come in three kinds, each with the turn text that answers it:

* ``current``: the present state ("which database does billing use now?", "where does billing
  store its data?") → the newest statement;
* ``past``: a named past time ("what database did billing use in January?") → that month's statement;
* ``unique``: a fact stated once, long ago ("what port does the metrics exporter listen on?") →
  its only statement.

Example:
    >>> import tempfile, pathlib
    >>> corpus = write_corpus(pathlib.Path(tempfile.mkdtemp()))
    >>> sorted({q.kind for q in corpus.queries}), sorted({q.part for q in corpus.queries})
    (['current', 'past', 'unique'], ['heldout', 'tune'])
    >>> sorted({p.suffix for p in corpus.files})
    ['.jsonl', '.md']
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

FORMATS = ("claude-code", "codex", "generic", "markdown")

Pair = tuple[str, str]


@dataclass(frozen=True)
class Subject:
    """A decision taken and re-taken.

    Attributes:
        current: Present-state questions (with and without "now").
        past: A question naming a past ``{month}``.
        versions: The statements, oldest first; each as paraphrases (user, assistant) of which
            the seed picks one.
        neighbour: A newer turn about another aspect of the subject that answers no question.
        one_session: The last change is told later in the same session as the one before.
    """

    current: tuple[str, ...]
    past: str
    versions: tuple[tuple[Pair, ...], ...]
    neighbour: Pair | None = None
    one_session: bool = False


@dataclass(frozen=True)
class Fact:
    """A fact stated once and never contradicted, with an optional newer neighbour."""

    question: str
    pair: Pair
    neighbour: Pair | None = None


S = Subject

# The rules in memlane.rerank were developed looking at these.
TUNE_SUBJECTS: list[Subject] = [
    S(
        ("Which database does the billing service use now?", "Where does billing store its data?"),
        "Which database did billing use in {month}?",
        (
            (
                (
                    "Where does billing keep its data?",
                    "Billing runs on MySQL 5.7 on the db-billing-01 host; the schema lives in billing/schema.sql.",
                ),
                (
                    "What's behind the billing service?",
                    "The billing service stores everything in a MySQL 5.7 database on db-billing-01.",
                ),
            ),
            (
                (
                    "Is the billing migration finished?",
                    "Yes, we moved billing to Postgres 16 last week. MySQL is retired for billing; connection string is in BILLING_PG_URL.",
                ),
                (
                    "Which connection string should billing code read?",
                    "Read BILLING_PG_URL: billing data is in Postgres 16 on the managed cluster.",
                ),
            ),
        ),
        neighbour=(
            "The billing export is slow",
            "The billing CSV export was slow because it rendered PDFs inline; it now queues them.",
        ),
    ),
    S(
        ("What CI system do we currently run the builds on?", "Which CI runs our builds?"),
        "What CI system did we use for builds in {month}?",
        (
            (
                (
                    "How are builds triggered?",
                    "Every push triggers a Jenkins pipeline defined in the Jenkinsfile at the repo root.",
                ),
                (
                    "Where do I see build logs?",
                    "Build logs are in Jenkins at ci.acme.internal; each branch has its own job.",
                ),
            ),
            (
                (
                    "Did the CI switch happen?",
                    "We replaced Jenkins with GitHub Actions; workflows are under .github/workflows and Jenkins is shut down.",
                ),
                (
                    "Where do I add a build step?",
                    "Add it to a workflow under .github/workflows; builds run in GitHub Actions.",
                ),
            ),
            (
                (
                    "Any news on CI?",
                    "GitHub Actions runners were too slow, so builds now run on Buildkite with our own agents in the build VPC.",
                ),
                (
                    "Why do builds show up in Buildkite?",
                    "Builds run on Buildkite agents in the build VPC; the pipeline is .buildkite/pipeline.yml.",
                ),
            ),
        ),
        neighbour=("CI is red on main", "The build broke on a flaky snapshot test; I re-ran it and it is green."),
    ),
    S(
        ("Which AWS region is production deployed to now?", "Where is production hosted?"),
        "Which AWS region was production in, back in {month}?",
        (
            (
                (
                    "Where does prod run?",
                    "Production is deployed to us-east-1, with backups copied to us-west-2 nightly.",
                ),
                (
                    "What region do I pick for the prod bucket?",
                    "Use us-east-1: that is where all production services run.",
                ),
            ),
            (
                (
                    "Why is latency better for EU users?",
                    "Because production now lives in eu-west-1: we moved the whole stack for data residency.",
                ),
                (
                    "What region for the new prod queue?",
                    "Create it in eu-west-1, the production region since the data residency move.",
                ),
            ),
        ),
    ),
    S(
        ("What logging library does the API use currently?", "How does the API log?"),
        "What logging library did the API use in {month}?",
        (
            (
                (
                    "How do we log in the API?",
                    "The API logs through the standard logging module with a JSON formatter we wrote in api/logfmt.py.",
                ),
                (
                    "Where is the API log format defined?",
                    "In api/logfmt.py: the API uses stdlib logging with our own JSON formatter.",
                ),
            ),
            (
                (
                    "Should new code keep using logfmt.py?",
                    "No, the API switched to structlog: use structlog.get_logger() everywhere; logfmt.py was deleted.",
                ),
                (
                    "How do I get a logger in an API module?",
                    "Call structlog.get_logger(); the API logs with structlog, configured in api/logging.py.",
                ),
            ),
        ),
    ),
    S(
        ("What frontend framework is the dashboard built with now?", "Which framework is the dashboard written in?"),
        "What framework was the dashboard written in during {month}?",
        (
            (
                (
                    "What is the dashboard written in?",
                    "The dashboard is an Angular 12 app under web/dashboard, built with the Angular CLI.",
                ),
                ("How do I run the dashboard locally?", "Run ng serve in web/dashboard; it is an Angular 12 project."),
            ),
            (
                (
                    "How is the dashboard rewrite going?",
                    "The dashboard rewrite is done: it is React 18 with Vite now, and the Angular code is gone.",
                ),
                (
                    "How do I start the dashboard dev server?",
                    "Run pnpm dev in web/dashboard; the React 18 app is served by Vite.",
                ),
            ),
        ),
        neighbour=(
            "The dashboard charts look off",
            "The dashboard chart colors were wrong in dark mode; I fixed the palette.",
        ),
    ),
    S(
        ("Which package manager does the monorepo use now?", "How do I install the monorepo's dependencies?"),
        "Which package manager did the monorepo use in {month}?",
        (
            (
                ("How do I install JS dependencies?", "Run npm install at the root; the monorepo uses npm workspaces."),
                (
                    "Why is there a package-lock.json at the root?",
                    "The monorepo is managed with npm workspaces, so npm keeps one package-lock.json.",
                ),
            ),
            (
                (
                    "npm install fails with a lockfile error",
                    "We switched the monorepo to pnpm: run pnpm install, package-lock.json was replaced by pnpm-lock.yaml.",
                ),
                ("What lockfile does the monorepo keep?", "pnpm-lock.yaml: the monorepo installs with pnpm install."),
            ),
        ),
    ),
    S(
        ("What do we use for caching sessions at the moment?", "Where are user sessions cached?"),
        "What did we use to cache sessions in {month}?",
        (
            (
                (
                    "Where are user sessions cached?",
                    "Sessions are cached in memcached, two nodes behind the app servers.",
                ),
                (
                    "Why do users get logged out after a deploy?",
                    "Sessions live in memcached, which loses them when the nodes restart.",
                ),
            ),
            (
                (
                    "Can sessions survive a cache restart?",
                    "They do now: session caching moved to Redis 7 with persistence, memcached was decommissioned.",
                ),
                ("Which cache holds sessions?", "User sessions are in Redis 7 with persistence turned on."),
            ),
        ),
    ),
    S(
        ("Which message queue do the workers consume from currently?", "What do the workers read jobs from?"),
        "Which message queue did the workers consume from in {month}?",
        (
            (
                (
                    "How do jobs reach the workers?",
                    "Jobs are published to RabbitMQ and the workers consume the jobs queue with prefetch 10.",
                ),
                ("Jobs pile up", "The workers are slow to ack on RabbitMQ; the jobs queue has 40k messages."),
            ),
            (
                (
                    "Why did the worker config change?",
                    "The workers consume from Kafka now, topic jobs.v2; RabbitMQ was turned off after the cutover.",
                ),
                ("Where do I publish a new job type?", "Publish to the Kafka topic jobs.v2; the workers consume it."),
            ),
        ),
        neighbour=(
            "A worker crashed overnight",
            "The worker ran out of memory on a huge PDF job; I raised its memory limit to 2 GiB.",
        ),
    ),
    S(
        ("How many API replicas run in production now?", "How many API pods are there in production?"),
        "How many API replicas ran in production in {month}?",
        (
            (
                ("How many API pods do we run?", "Production runs 3 API replicas behind the load balancer."),
                ("Is the API horizontally scaled?", "Yes, three API replicas run in production."),
            ),
            (
                ("Did the scaling change stick?", "Yes, production is at 8 API replicas since the traffic doubled."),
                ("Why did the API node pool grow?", "Production runs 8 API replicas now, the traffic doubled."),
            ),
            (
                (
                    "Can we save money on the API?",
                    "We scaled the API down to 5 replicas after the caching work; that is the current count.",
                ),
                ("What is the API replica count?", "The API runs 5 replicas in production."),
            ),
        ),
        one_session=True,
    ),
    S(
        ("What is the release cadence these days?", "How often do we release?"),
        "What was the release cadence in {month}?",
        (
            (
                (
                    "How often do we release?",
                    "We ship a release every Tuesday, weekly cadence, cut from main on Monday evening.",
                ),
                (
                    "When is the release cut?",
                    "Releases are cut from main every Monday evening and shipped on Tuesday, every week.",
                ),
            ),
            (
                (
                    "Is the weekly release still a thing?",
                    "We moved to a release every two weeks, biweekly on Wednesdays, to cut QA load.",
                ),
                ("When is the next release?", "Releases go out every other Wednesday, a biweekly cadence."),
            ),
        ),
    ),
    S(
        ("Who is the on-call lead for payments now?", "Who leads the payments on-call?"),
        "Who was the on-call lead for payments in {month}?",
        (
            (
                ("Who leads payments on-call?", "Priya Raman is the on-call lead for payments this quarter."),
                ("Who owns payments incidents?", "Priya Raman leads the payments on-call rotation."),
            ),
            (
                (
                    "Who do I page for payments incidents?",
                    "Page Tomasz Nowak: he took over as on-call lead for payments from Priya.",
                ),
                ("Who runs the payments on-call rotation?", "Tomasz Nowak is the payments on-call lead."),
            ),
        ),
    ),
    S(
        ("What Python version do the services run on now?", "Which Python do the services use?"),
        "What Python version did the services run on in {month}?",
        (
            (
                (
                    "Which Python do we target?",
                    "All services run on Python 3.9; the Docker base image is python:3.9-slim.",
                ),
                ("What base image do services build from?", "python:3.9-slim: every service runs Python 3.9."),
            ),
            (
                (
                    "Can I use match statements?",
                    "Yes, the services were upgraded to Python 3.12 last sprint, so pattern matching is fine.",
                ),
                ("Which Python should the Dockerfile use?", "Use python:3.12-slim; the services run Python 3.12."),
            ),
        ),
    ),
    S(
        ("Where is the staging environment hosted currently?", "Where does staging run?"),
        "Where was staging hosted in {month}?",
        (
            (
                (
                    "How do I reach staging?",
                    "Staging is a single Hetzner VM, staging.acme.dev, deployed with docker compose.",
                ),
                (
                    "How is staging deployed?",
                    "Staging runs on one Hetzner VM with docker compose; ssh to staging.acme.dev.",
                ),
            ),
            (
                (
                    "staging.acme.dev does not resolve",
                    "Staging moved to a Kubernetes namespace on the shared EKS cluster; use stage.acme.internal.",
                ),
                (
                    "How do I deploy to staging?",
                    "Deploy with helm into the staging namespace on the shared EKS cluster.",
                ),
            ),
        ),
    ),
    S(
        ("What is the API rate limit per client now?", "How many requests per minute may a client send?"),
        "What was the API rate limit per client in {month}?",
        (
            (
                (
                    "Are clients rate limited?",
                    "Each API client may send 100 requests per minute; the gateway returns 429 beyond that.",
                ),
                ("What does a 429 from the gateway mean?", "The client went over its 100 requests per minute."),
            ),
            (
                (
                    "A partner hits 429 errors",
                    "We raised the API rate limit to 600 requests per minute per client after the partner launch.",
                ),
                ("What limit should the SDK docs state?", "600 requests per minute per client is the API limit."),
            ),
        ),
    ),
    S(
        ("Which monitoring tool does the team use at present?", "Where do we monitor the services?"),
        "Which monitoring tool did the team use in {month}?",
        (
            (
                (
                    "Where are the dashboards?",
                    "Monitoring is Datadog: dashboards and monitors live in the acme-prod Datadog org.",
                ),
                ("How do I add a monitor?", "Create it in Datadog under the acme-prod org; alerts go to Slack."),
            ),
            (
                (
                    "Why did the Datadog bill go away?",
                    "We replaced Datadog with Grafana Cloud and Prometheus to cut costs; dashboards were ported.",
                ),
                ("How do I add an alert?", "Write a Prometheus alert rule; Grafana Cloud routes it to Slack."),
            ),
        ),
    ),
    S(
        ("What is the test coverage threshold in CI now?", "How much line coverage does CI require?"),
        "What was the test coverage threshold in CI during {month}?",
        (
            (
                ("Does CI enforce coverage?", "CI fails when line coverage drops below 70 percent."),
                ("Why did CI fail with 68% coverage?", "The coverage gate in CI is 70 percent of lines."),
            ),
            (
                (
                    "My PR failed on coverage at 78%",
                    "The coverage gate was raised to 80 percent, so 78 fails now; add tests.",
                ),
                ("What coverage do PRs need?", "PRs need 80 percent line coverage to pass CI."),
            ),
        ),
        one_session=True,
    ),
    S(
        ("Which code review rule applies to merges now?", "How many approvals does a PR need to merge?"),
        "Which code review rule applied to merges in {month}?",
        (
            (
                ("How many approvals does a PR need?", "One approving review is enough to merge into main."),
                ("Can I merge after one review?", "Yes, a single approval is enough to merge into main."),
            ),
            (
                (
                    "Why can't I merge with one approval?",
                    "Branch protection now requires two approving reviews, one from a code owner, to merge into main.",
                ),
                ("Who must approve my PR?", "Two approvals are needed for main, one of them from a code owner."),
            ),
        ),
    ),
    S(
        ("Which auth provider handles login today?", "What handles user login?"),
        "Which auth provider handled login in {month}?",
        (
            (
                (
                    "How does login work?",
                    "Login goes through Auth0 with the universal login page and our tenant acme-prod.",
                ),
                ("Where are login users managed?", "Users are managed in the Auth0 tenant acme-prod."),
            ),
            (
                (
                    "Why is the login page different?",
                    "Login moved from Auth0 to Keycloak, self-hosted at sso.acme.internal, to cut costs.",
                ),
                ("Where do I add an SSO client?", "Add the client in Keycloak at sso.acme.internal, realm acme."),
            ),
        ),
    ),
]

TUNE_FACTS: list[Fact] = [
    Fact(
        "When are billing invoices generated?",
        (
            "When do invoices go out?",
            "Billing invoices are generated on the 1st of every month at 02:00 UTC by the invoice-gen cron job.",
        ),
    ),
    Fact(
        "What port does the metrics exporter listen on?",
        (
            "Where do I scrape metrics?",
            "The metrics exporter listens on port 9464 and exposes /metrics in Prometheus format.",
        ),
        neighbour=(
            "Can the load balancer health-check the exporter?",
            "The metrics exporter now also serves /healthz, so the load balancer can check it.",
        ),
    ),
    Fact(
        "Why was the search index rebuilt?",
        (
            "Why is search empty this morning?",
            "The search index is being rebuilt because the analyzer changed to handle accents; it takes about four hours.",
        ),
    ),
    Fact(
        "Which team owns the mobile app?",
        (
            "Who should review the mobile PR?",
            "The mobile app is owned by the Falcon team; ask Lena Fischer for reviews.",
        ),
        neighbour=(
            "The mobile app crashes on start",
            "The mobile app crashed on Android 14 because of a missing permission; the hotfix is in review.",
        ),
    ),
    Fact(
        "What is the max upload size for attachments?",
        (
            "Users complain uploads fail",
            "Attachments are limited to 25 MB per file by the upload gateway; larger files get HTTP 413.",
        ),
    ),
    Fact(
        "How do we rotate the database passwords?",
        (
            "How do secrets get rotated?",
            "Database passwords are rotated every 90 days by the vault-rotator job, which updates the Kubernetes secrets.",
        ),
    ),
    Fact(
        "What causes the flaky test in test_checkout?",
        (
            "test_checkout keeps failing randomly",
            "The flaky test_checkout failure comes from a race on the cart fixture; it needs the freeze_time decorator.",
        ),
    ),
    Fact(
        "What timezone are the cron jobs scheduled in?",
        (
            "The report ran an hour late",
            "All cron jobs are scheduled in UTC, so daylight saving shifts local times by an hour.",
        ),
        neighbour=(
            "Add a cron job for the digest",
            "Added the digest cron job; it runs at 06:00 and mails the weekly summary.",
        ),
    ),
    Fact(
        "Who designed the company logo?",
        (
            "Where did the logo come from?",
            "The company logo was designed by Studio Kiln in Lisbon, delivered as SVG in brand/logo.svg.",
        ),
    ),
    Fact(
        "What does error code E4021 mean?",
        (
            "Customers see E4021",
            "E4021 means the card issuer declined the payment for suspected fraud; tell users to call their bank.",
        ),
    ),
]

# Written together with the tune half and never looked at while tuning: results on these say
# how the rules carry over.
HELDOUT_SUBJECTS: list[Subject] = [
    S(
        ("Where are user uploads stored now?", "Which object storage holds the uploads?"),
        "Where were user uploads stored in {month}?",
        (
            (
                ("Where do uploaded files go?", "Uploads are written to the S3 bucket acme-uploads in us-east-1."),
                (
                    "How do I fetch an uploaded file?",
                    "Uploaded files sit in S3, bucket acme-uploads; use a presigned URL.",
                ),
            ),
            (
                (
                    "Why did the storage bill drop?",
                    "We migrated uploads from S3 to Cloudflare R2, bucket uploads-r2, to avoid egress fees.",
                ),
                ("Which bucket should the new upload code write to?", "Write to uploads-r2 on Cloudflare R2."),
            ),
        ),
        neighbour=(
            "Uploads of HEIC photos fail",
            "HEIC uploads failed in the image resizer; it converts them to JPEG first now.",
        ),
    ),
    S(
        ("Which ORM does the backend use now?", "How does the backend talk to the database?"),
        "Which ORM did the backend use in {month}?",
        (
            (
                (
                    "How do I write a query in the backend?",
                    "Use the Django ORM models in backend/models.py; raw SQL is discouraged.",
                ),
                ("Where are the backend models?", "backend/models.py holds the Django ORM models for every table."),
            ),
            (
                (
                    "Are we still on Django models?",
                    "No, the backend was ported to SQLAlchemy 2.0; models are declarative classes in backend/db.py.",
                ),
                (
                    "How do I add a column?",
                    "Add it to the SQLAlchemy model in backend/db.py and write an Alembic migration.",
                ),
            ),
        ),
    ),
    S(
        ("How is the web app deployed currently?", "What deploys the web app?"),
        "How was the web app deployed in {month}?",
        (
            (
                (
                    "How do I ship the web app?",
                    "Run cap production deploy; Capistrano pushes the release to the three web hosts.",
                ),
                (
                    "The web deploy hangs",
                    "Capistrano waits on the asset precompile step on web-2; restart it and rerun cap production deploy.",
                ),
            ),
            (
                (
                    "Do I still run cap deploy?",
                    "No, deploys are GitOps now: merge to main and ArgoCD syncs the web app to the cluster.",
                ),
                (
                    "How do I roll back the web app?",
                    "Revert the commit in the deploy repo; ArgoCD syncs the web app back.",
                ),
            ),
        ),
    ),
    S(
        ("What language do we write new services in now?", "Which language is standard for new services?"),
        "What language did we write new services in during {month}?",
        (
            (
                (
                    "What should the notification service be written in?",
                    "New services are written in Node.js with TypeScript, like the rest of the platform.",
                ),
                (
                    "Template for a new service?",
                    "Copy templates/node-service: TypeScript on Node.js 18 is our default for services.",
                ),
            ),
            (
                (
                    "Can I start the ledger service in TypeScript?",
                    "New services are Go now; the architecture group dropped Node.js as the default.",
                ),
                (
                    "Which template for the ledger service?",
                    "Use templates/go-service; Go 1.22 is the standard for new services.",
                ),
            ),
        ),
    ),
    S(
        ("What time is the daily standup now?", "When does standup start?"),
        "What time was the daily standup in {month}?",
        (
            (
                ("When is standup?", "Daily standup is at 9:30 in the Orion room and on Meet."),
                ("Can I skip the 9:30 call?", "Standup at 9:30 is optional on Fridays only."),
            ),
            (
                ("Did the standup time change?", "Standup moved to 10:15 so the Lisbon folks can join."),
                ("I missed standup again", "It starts at 10:15 these days, not earlier."),
            ),
        ),
    ),
    S(
        ("Which feature flag service do we use now?", "Where do I toggle a feature flag?"),
        "Which feature flag service did we use in {month}?",
        (
            (
                (
                    "How do I add a feature flag?",
                    "Create the flag in LaunchDarkly, project acme-web, and read it with the LD client.",
                ),
                ("Who can flip flags?", "Anyone in the LaunchDarkly acme-web project with the writer role."),
            ),
            (
                (
                    "LaunchDarkly login doesn't work",
                    "We dropped LaunchDarkly; flags are in Unleash at flags.acme.internal.",
                ),
                (
                    "Where is the flag for the new checkout?",
                    "In Unleash, flags.acme.internal, under the checkout project.",
                ),
            ),
        ),
        neighbour=("Clean up old flags?", "I removed 14 stale feature flags from the checkout code paths."),
    ),
    S(
        ("Which email provider sends our transactional mail now?", "What sends the password reset emails?"),
        "Which email provider sent transactional mail in {month}?",
        (
            (
                (
                    "Password reset emails are delayed",
                    "Transactional mail goes through SendGrid; their status page shows a delay.",
                ),
                (
                    "Where are the email templates?",
                    "Templates live in SendGrid as dynamic templates, edited in their UI.",
                ),
            ),
            (
                (
                    "Why are the SendGrid keys revoked?",
                    "Transactional email moved to Amazon SES; the SendGrid account was closed.",
                ),
                (
                    "How do I test an email template?",
                    "Templates are in the repo under mail/ and are sent with Amazon SES.",
                ),
            ),
        ),
    ),
    S(
        ("How many engineers are on the platform team now?", "What is the platform team's headcount?"),
        "How many engineers were on the platform team in {month}?",
        (
            (
                ("How big is platform?", "The platform team has 6 engineers and one manager."),
                ("Who is on platform?", "Six engineers work on the platform team, led by Dana."),
            ),
            (
                ("Did platform hire?", "Platform grew to 9 engineers after the three new hires started."),
                ("Platform team size for the org chart?", "Nine engineers on platform."),
            ),
            (
                (
                    "Did platform lose people in the reorg?",
                    "After the reorg platform has 7 engineers; two moved to the data team.",
                ),
                ("Headcount for the platform budget?", "Platform is 7 engineers as of the reorg."),
            ),
        ),
        one_session=True,
    ),
    S(
        ("Which search engine powers product search now?", "What backs the product search?"),
        "Which search engine powered product search in {month}?",
        (
            (
                (
                    "What does product search run on?",
                    "Product search is Elasticsearch 7 on a three-node cluster, index products_v3.",
                ),
                (
                    "Product search is slow",
                    "The Elasticsearch 7 cluster is at 90 percent heap; products_v3 needs fewer shards.",
                ),
            ),
            (
                (
                    "Is the Elastic license issue solved?",
                    "Yes, product search runs on OpenSearch 2 now, managed by AWS, and the Elasticsearch cluster is gone.",
                ),
                ("Where is the products index?", "products_v4 on the managed OpenSearch 2 domain."),
            ),
        ),
        neighbour=(
            "Search returns duplicates",
            "Product search returned duplicates because two variants shared an id; deduplicated at indexing.",
        ),
    ),
    S(
        ("Which Python formatter do we use now?", "What formats the Python code?"),
        "Which Python formatter did we use in {month}?",
        (
            (
                (
                    "pre-commit complains about formatting",
                    "Run black . before committing; pre-commit checks Black formatting.",
                ),
                ("Line length for Python?", "Black with line length 100 is our Python formatter."),
            ),
            (
                (
                    "Is black still in pre-commit?",
                    "No, we replaced Black with ruff format; it is faster and the output is the same style.",
                ),
                ("How do I format Python files?", "Run ruff format; pre-commit runs it too."),
            ),
        ),
    ),
    S(
        ("How do engineers reach the internal network now?", "Which VPN do we use?"),
        "How did engineers reach the internal network in {month}?",
        (
            (
                (
                    "I can't reach grafana from home",
                    "Connect the OpenVPN profile acme.ovpn first; internal hosts are only reachable through it.",
                ),
                (
                    "Where do I get the VPN config?",
                    "Download acme.ovpn from the IT portal and import it in OpenVPN Connect.",
                ),
            ),
            (
                (
                    "Does acme.ovpn still work?",
                    "OpenVPN was retired; install Tailscale and log in with SSO to reach the internal network.",
                ),
                (
                    "New laptop, how do I get on the network?",
                    "Install Tailscale, sign in with your acme account, and internal hosts resolve.",
                ),
            ),
        ),
    ),
    S(
        ("Which version of the public API is the default now?", "What API version do clients get by default?"),
        "Which version of the public API was the default in {month}?",
        (
            (
                ("Which API version should docs show?", "The public API defaults to v2; v1 is deprecated."),
                ("Clients without a version header get what?", "They get v2 of the public API."),
            ),
            (
                (
                    "Is v3 live?",
                    "Yes, v3 became the default public API version on the 1st; v2 stays available until December.",
                ),
                ("What should the SDK pin?", "Pin v3: it is the default public API version."),
            ),
        ),
    ),
    S(
        ("Where is the Berlin office now?", "What's the Berlin office address?"),
        "Where was the Berlin office in {month}?",
        (
            (
                ("Address for the courier?", "The Berlin office is at Oranienstraße 25 in Kreuzberg, third floor."),
                ("Directions to the office?", "Take the U1 to Kottbusser Tor; the office is on Oranienstraße 25."),
            ),
            (
                (
                    "Did the office move?",
                    "The Berlin office moved to Torstraße 140 in Mitte; the Kreuzberg floor was handed back.",
                ),
                (
                    "Where do I send the new monitors?",
                    "Ship them to Torstraße 140, Berlin Mitte, reception on the ground floor.",
                ),
            ),
        ),
        neighbour=(
            "Berlin office wifi is down",
            "The Berlin office wifi controller needed a firmware update; it is back.",
        ),
    ),
    S(
        ("Where do services read their secrets from now?", "Which secrets store do the services use?"),
        "Where did services read their secrets from in {month}?",
        (
            (
                (
                    "How does a service get its API keys?",
                    "Services read secrets from HashiCorp Vault through the vault-agent sidecar.",
                ),
                (
                    "Where do I put a new secret?",
                    "Write it to Vault under secret/services/<name>; the sidecar picks it up.",
                ),
            ),
            (
                (
                    "The vault-agent sidecar is missing",
                    "That is expected: secrets moved to AWS Secrets Manager and services read them with the SDK at startup.",
                ),
                ("Where do I store the new Stripe key?", "In AWS Secrets Manager, under services/payments/stripe."),
            ),
        ),
    ),
    S(
        ("How long are sprints now?", "What is our sprint length?"),
        "How long were sprints in {month}?",
        (
            (
                ("When does the sprint end?", "Sprints are two weeks long and end on Friday with the demo."),
                ("Planning cadence?", "We plan every two weeks, Monday morning, for a two-week sprint."),
            ),
            (
                ("Why is there no demo this Friday?", "Sprints are three weeks now; the demo is next Friday."),
                ("How many weeks per sprint?", "Three weeks per sprint since the process change."),
            ),
        ),
        one_session=True,
    ),
    S(
        ("Which error tracker do we use now?", "Where do exceptions get reported?"),
        "Which error tracker did we use in {month}?",
        (
            (
                ("Where do I see production exceptions?", "Exceptions are reported to Rollbar, project acme-api."),
                ("Silence a noisy error?", "Mute it in Rollbar with a fingerprint rule."),
            ),
            (
                (
                    "Rollbar shows nothing since Monday",
                    "Error tracking moved to Sentry; the Rollbar SDK was removed from the API.",
                ),
                (
                    "How do I link an exception to a release?",
                    "Sentry tags each event with the release; look it up in sentry.acme.dev.",
                ),
            ),
        ),
    ),
    S(
        ("What is the default branch called now?", "Which branch do PRs target?"),
        "What was the default branch called in {month}?",
        (
            (
                ("Which branch do I open the PR against?", "Open it against master, the default branch."),
                ("Where do hotfixes go?", "Hotfixes branch off master and merge back into master."),
            ),
            (
                (
                    "master disappeared from the repo",
                    "The default branch was renamed from master to main; update your local checkout.",
                ),
                ("Which branch does CI deploy from?", "CI deploys from main, the default branch."),
            ),
        ),
    ),
    S(
        ("Who is the product manager for checkout now?", "Who owns checkout on the product side?"),
        "Who was the product manager for checkout in {month}?",
        (
            (
                ("Who decides checkout priorities?", "Marta Silva is the product manager for checkout."),
                ("Who signs off checkout specs?", "Checkout specs go to Marta Silva, the PM."),
            ),
            (
                (
                    "Marta is out, who do I ask about checkout?",
                    "Marta moved to growth; Kenji Ito is the checkout product manager now.",
                ),
                ("Who approves the checkout roadmap?", "Kenji Ito, product manager for checkout."),
            ),
        ),
    ),
]

HELDOUT_FACTS: list[Fact] = [
    Fact(
        "What port does the admin panel listen on?",
        ("Where is the admin panel?", "The admin panel listens on port 8443 on the internal load balancer."),
        neighbour=("Can the admin panel do dark mode?", "The admin panel now has a dark mode toggle in the header."),
    ),
    Fact(
        "Which team owns the data warehouse?",
        ("Who maintains the warehouse?", "The data warehouse is owned by the Atlas team; Omar Haddad is the contact."),
    ),
    Fact(
        "What is the retention period for application logs?",
        ("How long do we keep logs?", "Application logs are retained for 30 days, audit logs for a year."),
    ),
    Fact(
        "How does the nightly backup verify itself?",
        (
            "Are backups tested?",
            "The nightly backup is restored into a scratch database every morning and checked with row counts.",
        ),
        neighbour=(
            "The nightly backup ran long",
            "The nightly backup took five hours because of the new analytics tables; it finished fine.",
        ),
    ),
    Fact(
        "What does the checkout service do on a payment timeout?",
        (
            "Payment timeouts in checkout",
            "On a payment timeout checkout retries once after 2 seconds and then shows the pending page.",
        ),
    ),
    Fact(
        "Which library does the API use to validate requests?",
        (
            "How are request bodies validated?",
            "Request bodies are validated with pydantic models declared next to each route.",
        ),
    ),
    Fact(
        "What is the SLA for the public API?",
        (
            "What uptime do we promise?",
            "The public API has a 99.9 percent monthly uptime SLA in the enterprise contract.",
        ),
    ),
    Fact(
        "Where does the product search synonym list live?",
        ("How do I add a search synonym?", "Search synonyms are in search/synonyms.txt, loaded at index time."),
    ),
    Fact(
        "How are the staging databases seeded?",
        (
            "Staging has no data",
            "Staging databases are seeded nightly from anonymised production snapshots by the seed-staging job.",
        ),
    ),
    Fact(
        "Who is the security contact for vulnerability reports?",
        ("Where do vulnerability reports go?", "Vulnerability reports go to security@acme.dev, triaged by Ines Costa."),
        neighbour=(
            "We got a bug bounty report",
            "The bug bounty report was a duplicate of a known XSS; I replied and closed it.",
        ),
    ),
]

FILLER: list[Pair] = [
    (
        "Can you review the README wording?",
        "Sure, I tightened the introduction and fixed two broken links in the install section.",
    ),
    ("Lint is failing on main", "Ruff flagged an unused import in tools/report.py; I removed it and the check passes."),
    ("What's a good name for the helper?", "normalize_path says what it does; avoid util or helper in the name."),
    (
        "Add a unit test for the parser",
        "Added tests/test_parser.py with cases for empty input, unicode and a truncated line.",
    ),
    ("Why is the laptop fan so loud?", "The file watcher was scanning node_modules; excluding it dropped CPU to idle."),
    ("Summarise the standup", "Three items: the flaky dashboard chart, the docs sprint, and the offsite planning."),
    ("Bump the version", "Version bumped to 2.4.1 in pyproject.toml and the changelog entry added."),
    ("Format the SQL in the report query", "Reformatted with one clause per line and uppercase keywords."),
    ("Is the docs site down?", "It was a DNS propagation delay after the certificate renewal; it resolves again."),
    ("Rename the env var", "Renamed APP_DEBUG to APP_LOG_LEVEL and updated the three places that read it."),
    ("Any idea for the team lunch?", "The ramen place near the office takes group bookings on Fridays."),
    (
        "Speed up the test suite",
        "Marked the slow integration tests and run them only in the nightly job; the suite takes 40 s now.",
    ),
    ("The docs build warns about themes", "I switched the docs theme to the maintained fork; the warning is gone."),
    ("Why is the changelog out of order?", "Two entries were added by hand under the wrong heading; I moved them."),
    (
        "Can you tidy the Makefile?",
        "Replaced the copy-pasted targets with one pattern rule and removed the stale clean target.",
    ),
    ("Is the coffee machine fixed?", "Facilities replaced the grinder; it works again."),
    (
        "Help me word the incident summary",
        "Lead with the customer impact and the duration, then the cause and the follow-ups.",
    ),
    (
        "Why does the notebook use so much memory?",
        "It loads the whole events table; reading it in chunks of 100k rows keeps it under 2 GB.",
    ),
]

MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
PARTS = {"tune": (TUNE_SUBJECTS, TUNE_FACTS), "heldout": (HELDOUT_SUBJECTS, HELDOUT_FACTS)}


@dataclass
class Query:
    """One evaluation question and the text its answer chunk contains."""

    kind: str
    text: str
    answer: str
    part: str
    earlier: list[str] = field(default_factory=list)


@dataclass
class Corpus:
    """The files written and the queries to ask."""

    files: list[Path] = field(default_factory=list)
    queries: list[Query] = field(default_factory=list)


def _iso(t: datetime) -> str:
    return t.isoformat().replace("+00:00", "Z")


def _claude(sid: str, pairs: list[Pair], start: datetime) -> list[dict]:
    out, parent = [], None
    for i, (q, a) in enumerate(pairs):
        t = start + timedelta(minutes=3 * i)
        for role, text, n in (("user", q, 0), ("assistant", a, 1)):
            uid = f"{sid}-{i}-{n}"
            message = (
                {"role": "user", "content": text}
                if role == "user"
                else {
                    "id": f"msg_{sid}_{i}",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-sonnet",
                    "content": [{"type": "text", "text": text}],
                }
            )
            out.append(
                {
                    "type": role,
                    "message": message,
                    "uuid": uid,
                    "parentUuid": parent,
                    "sessionId": sid,
                    "timestamp": _iso(t + timedelta(seconds=20 * n)),
                    "cwd": "/home/dev/acme",
                    "version": "2.1.0",
                    "userType": "external",
                    "isSidechain": False,
                }
            )
            parent = uid
    return out


def _codex(sid: str, pairs: list[Pair], start: datetime) -> list[dict]:
    out = [
        {
            "timestamp": _iso(start),
            "type": "session_meta",
            "payload": {
                "id": sid,
                "timestamp": _iso(start),
                "cwd": "/home/dev/acme",
                "originator": "codex_cli_rs",
                "cli_version": "0.40.0",
            },
        }
    ]
    for i, (q, a) in enumerate(pairs):
        t = start + timedelta(minutes=3 * i)
        out.append(
            {
                "timestamp": _iso(t),
                "type": "response_item",
                "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": q}]},
            }
        )
        out.append(
            {
                "timestamp": _iso(t + timedelta(seconds=20)),
                "type": "response_item",
                "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": a}]},
            }
        )
    return out


def _generic(sid: str, pairs: list[Pair], start: datetime) -> list[dict]:
    out = []
    for i, (q, a) in enumerate(pairs):
        t = start + timedelta(minutes=3 * i)
        out.append({"id": f"{sid}-u{i}", "role": "user", "content": q, "timestamp": _iso(t), "session_id": sid})
        out.append(
            {
                "id": f"{sid}-a{i}",
                "role": "assistant",
                "content": a,
                "timestamp": _iso(t + timedelta(seconds=20)),
                "session_id": sid,
            }
        )
    return out


_WRITERS = {"claude-code": _claude, "codex": _codex, "generic": _generic}


def write_session(root: Path, fmt: str, sid: str, pairs: list[Pair], start: datetime) -> Path:
    """Write one session of (user, assistant) pairs, three minutes apart, under ``root/<fmt>/``:
    a transcript in that format, or for ``markdown`` a daily note with one ``## HH:MM`` entry
    per pair (the question as its heading); returns its path."""
    if fmt == "markdown":
        path = root / fmt / "DailyActivity" / f"{start:%Y-%m-%d}-{sid[:8]}.md"
        entries = [f"## {start + timedelta(minutes=3 * i):%H:%M} {q}\n\n{a}\n" for i, (q, a) in enumerate(pairs)]
        text = f"# {start:%Y-%m-%d}\n\n" + "\n".join(entries)
    else:
        path = root / fmt / f"{start:%Y-%m-%d}-{sid}.jsonl"
        text = "".join(json.dumps(r) + "\n" for r in _WRITERS[fmt](sid, pairs, start))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def write_corpus(root: Path, seed: int = 11, start: datetime = datetime(2026, 1, 5, 9, tzinfo=timezone.utc)) -> Corpus:
    """Write the corpus under ``root/<format>/`` and return its files and queries.

    Statement ``n`` of every subject is told in month ``2n + 1`` (January, March, May), so each
    past query names a month that holds exactly one statement — except a ``one_session``
    subject's last two, told in one session (no past query for those); neighbours come after the
    last statement. Unique facts are told in January and February, their neighbours in March to
    May; every session mixes in filler pairs. The seed picks paraphrases, days and formats.
    """
    rng = random.Random(seed)
    corpus = Corpus()
    sessions: list[tuple[datetime, list[Pair]]] = []

    def day(month_offset: int) -> datetime:
        return start + timedelta(days=61 * month_offset + rng.randint(0, 20), hours=rng.randint(0, 8))

    for part, (subjects, facts) in PARTS.items():
        for subject in subjects:
            told = [rng.choice(paraphrases) for paraphrases in subject.versions]
            last = len(told) - 1
            for n, pair in enumerate(told):
                if subject.one_session and n == last:
                    sessions[-1][1].extend([rng.choice(FILLER), pair])
                    continue
                when = day(n)
                sessions.append((when, [pair]))
                in_one_session = subject.one_session and n == last - 1
                if not in_one_session and (n < last or rng.random() < 0.5):
                    corpus.queries.append(
                        Query("past", subject.past.format(month=MONTHS[when.month - 1]), pair[1], part)
                    )
            if subject.neighbour:
                sessions.append((day(len(told)), [subject.neighbour]))
            earlier = [a for _, a in told[:-1]]
            corpus.queries += [Query("current", q, told[-1][1], part, earlier) for q in subject.current]
        for fact in facts:
            sessions.append((start + timedelta(days=rng.randint(0, 50), hours=rng.randint(0, 8)), [fact.pair]))
            if fact.neighbour:
                sessions.append((day(1 + rng.randint(0, 1)), [fact.neighbour]))
            corpus.queries.append(Query("unique", fact.question, fact.pair[1], part))
    sessions.sort(key=lambda s: s[0])
    for i, (when, pairs) in enumerate(sessions):
        mixed = rng.sample(FILLER, 3) + pairs + rng.sample(FILLER, 2)
        fmt = rng.choice(FORMATS)
        sid = f"{i:08x}-0000-4000-8000-{rng.getrandbits(48):012x}"
        corpus.files.append(write_session(root, fmt, sid, mixed, when))
    return corpus
