"""A generated half-year of DailyActivity notes with planted facts, and the questions about them.

:func:`generate` writes a work log the way ``memlane distill`` and people write dailies
(``## HH:MM | topic`` entries, bulleted, some in the distiller's Done/Decisions/Outcome shape,
some free-form), weekdays only, a few days and weeks thin, from a seed. Planted in it:

* **numbers** (a worker's concurrency, a latency, a retry limit), **dates** (a freeze, a
  cut-over) and **identifiers** (tickets, buckets, environment variables), each stated once;
* **decisions and reversals**: a subject (``the billing database``) decided, then switched once
  or twice with change language, its older values left standing in older dailies;
* filler: routine entries sharing the same service names, so no question is answered by a name alone.

Every question names what it asks about in other words than the daily, never the value, and
carries the daily entry (``DailyActivity/2026-03-02.md › 14:40``) that answers it:
``number``, ``date``, ``identifier``, ``current`` (a reversed subject now) and ``as_of`` (a
reversed subject at a date between two decisions, with the value then in ``answer``).

Example:
    >>> corpus = generate(1)
    >>> len(corpus.dailies) > 100, {q.kind for q in corpus.questions} >= {"number", "as_of"}
    (True, True)
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

from memlane.timeline.gate import Question

START = date(2026, 1, 5)
WEEKS = 26
AREAS = [
    "billing",
    "exporter",
    "search",
    "auth",
    "ingest",
    "notifications",
    "payments",
    "reporting",
    "scheduler",
    "mobile sync",
    "analytics",
    "checkout",
]
PROJECTS = ["OPS", "BILL", "SRCH", "AUTH", "ING", "PAY"]

# (daily sentence, question); {a} area, {n} number, {d} date, {i} identifier.
NUMBER_FACTS = [
    (
        "Set the {a} worker concurrency to {n} after the load test.",
        "How many concurrent workers does the {a} service run with after load testing?",
    ),
    (
        "The {a} p99 latency came down to {n} ms once the cache was warm.",
        "What tail latency did {a} reach with a warm cache?",
    ),
    ("Raised the {a} retry limit to {n} attempts.", "How many attempts may {a} retry before giving up?"),
    (
        "The {a} nightly batch now processes {n} records per shard.",
        "How many records per shard does the {a} nightly job handle?",
    ),
    (
        "Capped the {a} connection pool at {n} connections.",
        "What is the maximum pool size for {a} database connections?",
    ),
    (
        "The {a} queue backlog peaked at {n} messages during the incident.",
        "How large did the {a} backlog get at its worst?",
    ),
]
DATE_FACTS = [
    ("The {a} code freeze starts on {d}.", "When does the {a} freeze begin?"),
    ("We agreed the {a} cut-over happens on {d}.", "What day was chosen for moving {a} over?"),
    ("The {a} certificate expires on {d}, renew before then.", "By when must the {a} TLS cert be renewed?"),
]
ID_FACTS = [
    ("Opened ticket {i} for the {a} memory leak.", "Which ticket tracks the leak in {a}?"),
    ("The {a} archive lives in bucket {i} from now on.", "Where are {a} archives stored?"),
    ("Added the environment variable {i} for the {a} read replica.", "Which env setting points {a} at its replica?"),
    ("The {a} hotfix shipped in commit {i}.", "What commit carried the {a} hotfix?"),
]
SUBJECTS = [
    ("database", ["Postgres", "DynamoDB", "Aurora", "CockroachDB"]),
    ("message queue", ["RabbitMQ", "SQS", "Kafka", "NATS"]),
    ("feature flag service", ["LaunchDarkly", "Unleash", "Flagsmith"]),
    ("CI runner", ["Jenkins", "GitHub Actions", "Buildkite"]),
    ("log shipper", ["Fluentd", "Vector", "Logstash"]),
    ("cache", ["Memcached", "Redis", "Valkey"]),
]
DECIDE = "We decided to use {v} as the {a} {s}."
SWITCH = [
    "We switched the {a} {s} from {old} to {v}.",
    "Moved the {a} {s} from {old} over to {v}.",
    "Replaced {old} with {v} for the {a} {s}.",
]
AS_OF_Q = "Which {s} did {a} use as of {d}?"
CURRENT_Q = "Which {s} does {a} use now?"
FILLER = [
    "Reviewed pull requests for the {a} service and answered questions in the team channel.",
    "Standup with the {a} team: synced on priorities for the week.",
    "Paired on {a} tests; nothing decided yet.",
    "Cleaned up dashboards for {a} and archived old alerts.",
    "Read through the {a} design doc and left comments.",
    "Triaged incoming {a} bugs with support.",
    "Updated the {a} runbook wording, no behaviour change.",
]
TOPICS = ["sync", "planning", "follow-up", "review", "ops", "debugging", "design", "cleanup"]


@dataclass
class Corpus:
    """A generated brain folder's dailies and the questions about them."""

    seed: int
    dailies: dict[str, str] = field(default_factory=dict)
    """``DailyActivity/YYYY-MM-DD.md`` → text."""
    questions: list[Question] = field(default_factory=list)
    today: date = START + timedelta(weeks=WEEKS, days=7)
    """A day after the last week: every week and month is complete."""

    def write(self, brain_dir: Path) -> None:
        """Write the dailies into ``brain_dir``."""
        for rel, text in self.dailies.items():
            path = brain_dir / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")


def _identifier(rng: random.Random, template: str, area: str) -> str:
    slug = area.replace(" ", "-")
    if "ticket" in template:
        return f"{rng.choice(PROJECTS)}-{rng.randint(1000, 9999)}"
    if "bucket" in template:
        return f"s3://acme-{slug}-{rng.choice(['archive', 'cold', 'vault', 'history'])}-{rng.randint(10, 99)}"
    if "environment" in template:
        return f"{slug.upper().replace('-', '_')}_REPLICA_{rng.choice(['URL', 'DSN', 'HOST'])}_{rng.randint(2, 9)}"
    return f"{rng.getrandbits(28):07x}"


def generate(seed: int, *, start: date = START, weeks: int = WEEKS) -> Corpus:
    """A half-year (by default) of dailies with planted facts and questions (see the module doc)."""
    rng = random.Random(seed)
    days = [start + timedelta(days=i) for i in range(weeks * 7) if (start + timedelta(days=i)).weekday() < 5]
    # Some days off, and a few thin weeks (fewer than three dailies: no weekly for them).
    thin = set(rng.sample(range(weeks), 3))
    days = [d for d in days if rng.random() > 0.12 and not ((d - start).days // 7 in thin and d.weekday() > 1)]
    entries: dict[date, list[tuple[str, str, list[str]]]] = {d: [] for d in days}
    questions: list[Question] = []

    def slot(day: date, topic: str, lines: list[str]) -> str:
        taken = {t for t, _, _ in entries[day]}
        hour = rng.choice([t for t in range(9, 18) if f"{t:02d}:" not in "".join(taken)] or [18])
        time = f"{hour:02d}:{rng.choice(['00', '10', '20', '30', '40', '50'])}"
        entries[day].append((time, topic, lines))
        return f"DailyActivity/{day.isoformat()}.md › {time}"

    areas = list(AREAS)
    for kind, pool, count in (("number", NUMBER_FACTS, 30), ("date", DATE_FACTS, 12), ("identifier", ID_FACTS, 18)):
        used: set[tuple[str, str]] = set()
        while len(used) < count:
            sentence, question = rng.choice(pool)
            area = rng.choice(areas)
            if (sentence, area) in used:
                continue
            used.add((sentence, area))
            day = rng.choice(days)
            value = {
                "number": lambda: str(
                    rng.choice([rng.randint(3, 64), rng.randint(100, 990), rng.randint(1000, 50000)])
                ),
                "date": lambda: (day + timedelta(days=rng.randint(5, 60))).isoformat(),
                "identifier": lambda: _identifier(rng, sentence, area),
            }[kind]()
            line = sentence.format(a=area, n=value, d=value, i=value)
            ref = slot(day, f"{area} {rng.choice(TOPICS)}", [line])
            questions.append(Question(question.format(a=area), (ref,), kind, value))
    for s_name, values in SUBJECTS:
        area = rng.choice(areas)
        chain = rng.sample(values, rng.choice([2, 3]))
        when = sorted(rng.sample(days[: len(days) - 10], len(chain)))
        refs = []
        for n, (v, day) in enumerate(zip(chain, when)):
            line = (
                DECIDE.format(v=v, a=area, s=s_name)
                if n == 0
                else rng.choice(SWITCH).format(a=area, s=s_name, old=chain[n - 1], v=v)
            )
            refs.append(slot(day, f"{area} {s_name}", [line]))
        for n in range(len(chain)):
            end = when[n + 1] if n + 1 < len(chain) else days[-1]
            if (end - when[n]).days < 2:
                continue
            asked = when[n] + timedelta(days=rng.randint(1, (end - when[n]).days - 1))
            questions.append(
                Question(
                    AS_OF_Q.format(s=s_name, a=area, d=asked.isoformat()),
                    (refs[n],),
                    "as_of",
                    chain[n],
                    asked.isoformat(),
                )
            )
        questions.append(Question(CURRENT_Q.format(s=s_name, a=area), (refs[-1],), "current", chain[-1]))
    for day in days:
        for _ in range(rng.randint(1, 3)):
            area = rng.choice(areas)
            slot(
                day,
                f"{area} {rng.choice(TOPICS)}",
                [rng.choice(FILLER).format(a=area) for _ in range(rng.randint(1, 2))],
            )
    corpus = Corpus(seed, today=days[-1] + timedelta(days=7 + (6 - days[-1].weekday())))
    for day in days:
        parts = [f"# {day.isoformat()}\n"]
        for time, topic, lines in sorted(entries[day]):
            parts.append(f"\n## {time} | {topic}\n")
            if rng.random() < 0.5:
                decided = [
                    x for x in lines if x.startswith(("We decided", "We switched", "Moved", "Replaced", "We agreed"))
                ]
                done = [x for x in lines if x not in decided]
                parts.append(
                    "- **Done:**\n" + "".join(f"  - {x}\n" for x in done) if done else "- **Done:** (nothing stated)\n"
                )
                parts.append(
                    "- **Decisions:**\n" + "".join(f"  - {x}\n" for x in decided)
                    if decided
                    else "- **Decisions:** none\n"
                )
                parts.append(f"- **Outcome:** {rng.choice(['done', 'merged', 'in review', 'to be continued'])}\n")
            else:
                parts += [f"- {x}\n" for x in lines]
        corpus.dailies[f"DailyActivity/{day.isoformat()}.md"] = "".join(parts)
    corpus.questions = questions
    return corpus
