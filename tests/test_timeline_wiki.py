"""The wiki (supersession, as-of, stub, lint, merge, rename) and dreaming (signals, watermark, diary, gate)."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest

import memlane
from memlane.bench.timeline import generate
from memlane.brain import Brain
from memlane.cli import main
from memlane.timeline.decisions import decisions
from memlane.timeline.dream import DREAMS_FILE, dream
from memlane.timeline.wiki import Page, Wiki


def daily(brain: Path, day: str, body: str, time: str = "10:00") -> None:
    path = brain / "DailyActivity" / f"{day}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    old = path.read_text() if path.exists() else f"# {day}\n"
    path.write_text(old + f"\n## {time} | work\n{body}\n")


@pytest.fixture
def brain_home(tmp_path: Path):
    brain_dir = tmp_path / "brain"
    daily(brain_dir, "2026-01-12", "- We decided to use Postgres as the billing database.")
    daily(brain_dir, "2026-02-02", "- Reviewed the billing dashboards with Grafana.")
    daily(brain_dir, "2026-03-03", "- We switched the billing database from Postgres to DynamoDB.")
    daily(brain_dir, "2026-03-04", "- Grafana alerts for billing were noisy.")
    daily(brain_dir, "2026-04-20", "- We decided to use Aurora as the billing database.")
    daily(brain_dir, "2026-04-21", "- Grafana dashboards moved to a new folder.")
    home = tmp_path / "home"
    mem = memlane.open(home, embedder="none")
    mem.index([brain_dir], embed=False)
    return mem, Brain(brain_dir, home=home), brain_dir


def test_decision_sentences():
    assert [
        (d.subject, d.value, d.change) for d in decisions("Replaced RabbitMQ with SQS for the ingest message queue.")
    ] == [("ingest message queue", "SQS", True)]
    assert [
        (d.subject, d.value, d.change) for d in decisions("We decided to use GitHub Actions as the CI runner.")
    ] == [("ci runner", "GitHub Actions", False)]
    assert decisions("Lunch was fine.") == []


def test_supersession_keeps_both_values_and_answers_as_of():
    page = Page("billing database")
    assert page.set_value("Postgres", "DailyActivity/2026-01-12.md › 10:00", "use Postgres", change=False) == "first"
    assert page.set_value("DynamoDB", "DailyActivity/2026-03-03.md › 10:00", "switched", change=True) == "superseded"
    assert page.set_value("dynamodb", "DailyActivity/2026-03-05.md › 10:00", "again", change=False) == "same"
    assert (
        page.set_value("Aurora", "DailyActivity/2026-04-20.md › 10:00", "use Aurora", change=False) == "contradiction"
    )
    assert page.supersedes == [
        {
            "fact": "use Postgres",
            "value": "Postgres",
            "source": "DailyActivity/2026-01-12.md › 10:00",
            "since": "2026-01-12",
            "superseded_on": "2026-03-03",
        }
    ]
    assert [page.as_of(d).value for d in ("2026-01-12", "2026-03-02", "2026-03-03", "2026-12-31")] == [
        "Postgres",
        "Postgres",
        "DynamoDB",
        "DynamoDB",
    ]
    assert page.as_of("2025-12-31") is None
    late = Page("queue")  # dailies read newest first (a backfill): each older value holds until the next one
    late.set_value("Kafka", "DailyActivity/2026-05-01.md › 09:00", "switched to Kafka", change=True)
    late.set_value("SQS", "DailyActivity/2026-03-01.md › 09:00", "switched to SQS", change=True)
    late.set_value("RabbitMQ", "DailyActivity/2026-01-01.md › 09:00", "use RabbitMQ", change=False)
    assert [(s["value"], s["superseded_on"]) for s in late.supersedes] == [
        ("RabbitMQ", "2026-03-01"),
        ("SQS", "2026-05-01"),
    ]
    assert [late.as_of(d).value for d in ("2026-02-01", "2026-04-01", "2026-06-01")] == ["RabbitMQ", "SQS", "Kafka"]
    again = Page.parse(page.render(), "x")
    assert (again.current["value"], again.supersedes, again.contradictions, again.sources) == (
        "DynamoDB",
        page.supersedes,
        page.contradictions,
        page.sources,
    )


def test_dream_builds_pages_flags_contradictions_keeps_a_diary_and_consumes_input_once(brain_home):
    mem, brain, brain_dir = brain_home
    mem.search("what is our billing database", k=3)
    mem.search("how do we deploy the mobile app", k=3)  # nothing answers it
    report = dream(mem, brain, today=date(2026, 5, 1))
    assert report.published and report.counts() == {"value": 1, "supersede": 1, "flag": 1, "entity": 1}
    wiki = Wiki(brain)
    page = wiki.get("billing database")
    assert page.current["value"] == "DynamoDB" and page.contradictions[0]["value"] == "Aurora"
    assert wiki.answer("Which billing database did we use as of 2026-02-15?", on="2026-02-15").value == "Postgres"
    grafana = wiki.get("Grafana")
    assert grafana.category == "entity" and grafana.status == "synthesized" and len(grafana.sources) == 3
    assert report.unanswered == ["how do we deploy the mobile app"]
    diary = (brain_dir / DREAMS_FILE).read_text()
    assert "Contradiction: billing database" in diary and "Unanswered: how do we deploy the mobile app" in diary
    assert brain.check() == []  # every wiki line resolves
    # With the watermark, nothing is consumed twice; a new daily is.
    again = dream(mem, brain, today=date(2026, 5, 1), watermark=report.watermark)
    assert again.operations == [] and not again.published
    daily(brain_dir, "2026-05-04", "- Moved the billing database from DynamoDB over to Spanner.")
    third = dream(mem, brain, today=date(2026, 5, 5), watermark=again.watermark)
    assert third.counts() == {"supersede": 1} and wiki.get("billing database").current["value"] == "Spanner"
    mem.index([brain_dir], embed=False)  # the new daily too (hooks index it as it is written)
    hits = mem.search("billing database", k=5)
    assert hits and all(h.source == "knowledge" for h in hits)  # the page hands its place to its dailies


def test_lint_stub_merge_rename(brain_home, capsys):
    mem, brain, brain_dir = brain_home
    wiki = Wiki(brain)
    wiki.stub("Grafana", "entity", "DailyActivity/2026-02-02.md › 10:00")
    with pytest.raises(ValueError, match="does not resolve"):
        wiki.stub("Other", "entity", "DailyActivity/2026-02-03.md › 10:00")
    wiki.stub("dashboards", "theme", "DailyActivity/2026-04-21.md › 10:00")
    assert [x["problem"] for x in wiki.lint(date(2026, 5, 30))] == ["stale"]  # Grafana: newest source 2026-02-02
    (brain_dir / "DailyActivity" / "2026-04-21.md").unlink()
    assert {x["problem"] for x in wiki.lint(date(2026, 5, 30))} == {"stale", "orphan"}
    page = wiki.get("dashboards")
    page.related = ["Grafana"]
    wiki.write([page])
    wiki.rename("Grafana", "Grafana Cloud")
    assert wiki.get("dashboards").related == ["Grafana Cloud"] and not (brain_dir / "wiki" / "grafana.md").exists()
    merged = wiki.merge("grafana-cloud", "dashboards")
    assert merged.sources == ["DailyActivity/2026-02-02.md › 10:00", "DailyActivity/2026-04-21.md › 10:00"]
    assert [p.slug for p in wiki.pages()] == ["grafana-cloud"]
    home, brain_arg = str(mem.home), str(brain_dir)
    assert main(["wiki", "list", "--home", home, "--brain", brain_arg, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["slug"] == "grafana-cloud"
    assert main(["wiki", "show", "nope", "--home", home, "--brain", brain_arg]) == 2
    assert capsys.readouterr().err.startswith("memlane wiki: no wiki page 'nope'")


def test_cli_dream_as_of_and_status(brain_home, capsys):
    mem, brain, brain_dir = brain_home
    home, b = str(mem.home), str(brain_dir)
    assert main(["dream", "--home", home, "--brain", b, "--embed", "none", "--today", "2026-05-01"]) == 0
    capsys.readouterr()
    assert (
        main(["wiki", "show", "billing database", "--as-of", "2026-03-10", "--home", home, "--brain", b, "--json"]) == 0
    )
    assert json.loads(capsys.readouterr().out)["value"] == "DynamoDB"
    assert main(["dream", "--home", home, "--brain", b, "--embed", "none", "--if-due"]) == 2
    assert "runs again after 24.0 h" in capsys.readouterr().err
    assert main(["dream", "status", "--home", home, "--brain", b, "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["ledger"][0]["status"] == "ok" and json.loads(status["state"]["watermark"])["daily"] == "2026-04-21"


def test_the_generated_corpus_is_seeded_and_its_gold_resolves(tmp_path):
    a, b = generate(5), generate(5)
    assert a.dailies == b.dailies and a.questions == b.questions and generate(6).dailies != a.dailies
    a.write(tmp_path)
    from memlane.brain import provenance

    assert all(provenance.resolves(provenance.Ref(*g.split(" › ")), tmp_path) for q in a.questions for g in q.gold)
    as_of = [q for q in a.questions if q.kind == "as_of"]
    assert as_of and all(q.answer and q.as_of for q in as_of)
