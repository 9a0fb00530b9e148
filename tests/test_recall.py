"""Recall: token budget, provenance, weights, decay, threshold, MMR, session snapshots, CLI."""

from __future__ import annotations

import json
import os
import time
from datetime import datetime, timezone

import pytest
from conftest import generic_session, write_deploy_and_cooking, write_jsonl

import memlane
from memlane.brain import Brain
from memlane.cli import main
from memlane.memory import Hit
from memlane.recall import (
    DRIFT_CAVEAT,
    Recall,
    estimate_tokens,
    focus_query,
    hit_provenance,
    recall,
    session_snapshot,
)

# Twelve deploy incidents of one shape and one size: every one matches "deploy incident", each
# is distinct.
SERVICES = [
    "auth",
    "billing",
    "search",
    "exporter",
    "gateway",
    "scheduler",
    "mailer",
    "ledger",
    "indexer",
    "uploader",
    "webhooks",
    "reports",
]
CAUSES = [
    "an expired certificate",
    "a missing env var",
    "the OOM killer",
    "a schema drift",
    "DNS caching",
    "a stale lockfile",
    "disk pressure",
    "a bad feature flag",
    "clock skew",
    "a leaked socket",
    "rate limiting",
    "a broken migration",
]
INCIDENTS = [
    (
        f"deploy incident on {svc}: what happened?".ljust(48, "?"),
        f"The {svc} deploy incident came from {cause}; fixed in {svc}/release.py.".ljust(120, "."),
    )
    for svc, cause in zip(SERVICES, CAUSES)
]


@pytest.fixture
def mem(tmp_path, fake_embedder):
    root = tmp_path / "transcripts"
    write_deploy_and_cooking(root)
    for i, pair in enumerate(INCIDENTS):
        write_jsonl(
            root / f"incident-{i:02d}.jsonl",
            generic_session(f"inc-{i:02d}", [pair], start=f"2026-02-{i + 1:02d}T09:00:00Z"),
        )
    m = memlane.open(tmp_path / "home", embedder=fake_embedder)
    m.index([root])
    return m


def _hit(
    id_: str,
    text: str,
    score: float,
    *,
    source: str = "knowledge",
    path: str = "/notes/billing.md",
    heading: str = "Storage",
    timestamp: str | None = "2026-04-10T08:00:00Z",
    session: str = "",
) -> Hit:
    # A constructed hit is as relevant as it scores.
    return Hit(
        id_,
        source,
        text,
        score,
        {"bm25": score, "vector": None},
        path,
        session,
        0,
        1,
        timestamp,
        heading,
        relevance=score,
    )


def _serve(monkeypatch, mem, hits: list[Hit]) -> None:
    """Make the hybrid search answer with constructed hits (the shape knowledge chunks have)."""
    monkeypatch.setattr(mem, "search", lambda *a, **k: list(hits))


# ---------------------------------------------------------------------------- budget


def test_budget_is_never_exceeded_and_the_best_items_are_kept(mem):
    full = mem.recall("deploy incident what happened", max_tokens=100_000, include_brain=False)
    assert len(full.items) == len(INCIDENTS)
    assert len({len(f"{i.provenance}{i.text}") for i in full.items}) == 1  # same size: a budget keeps a prefix
    for budget in (1, 20, 60, 120, 200, 333, 500, 800, 1200):
        r = mem.recall("deploy incident what happened", max_tokens=budget, include_brain=False)
        assert r.tokens <= budget
        assert r.tokens == estimate_tokens(r.text)
        assert [i.id for i in r.items] == [i.id for i in full.items[: len(r.items)]]
    small = mem.recall("deploy incident what happened", max_tokens=300, include_brain=False)
    assert 0 < len(small.items) < len(full.items)
    assert small.items[0].score == max(i.score for i in full.items)


def test_an_item_too_big_for_what_is_left_is_skipped_for_smaller_ones(tmp_path, monkeypatch):
    mem = memlane.open(tmp_path / "home", embedder="none")
    big = _hit("big", "alpha " * 400, 0.9, heading="Big")
    small = _hit("small", "beta gamma delta", 0.5, heading="Small")
    _serve(monkeypatch, mem, [big, small])
    r = mem.recall("alpha beta", max_tokens=200, include_brain=False)
    assert [i.id for i in r.items] == ["small"]
    assert r.tokens <= 200


# ---------------------------------------------------------------------------- provenance


def test_provenance_lines_for_transcript_knowledge_and_brain(mem, monkeypatch):
    r = mem.recall("which database does billing use Postgres", include_brain=False)
    top = r.items[0]
    assert top.source == "transcript"
    assert top.provenance == "session deploy-1 · turns 4-5 · 2026-03-01 10:04 UTC"
    assert f"[1] {top.provenance}\n{top.text}" in r.text

    note = _hit("n1", "Invoices live in DynamoDB since April.", 0.8, heading="Storage › Invoices")
    daily = _hit(
        "d1",
        "Moved billing invoices to DynamoDB.",
        0.7,
        path="/brain/DailyActivity/2026-04-09.md",
        heading="14:02 | billing move",
        timestamp="2026-04-12T00:00:00Z",
    )
    assert hit_provenance(note) == "/notes/billing.md › Storage › Invoices · 2026-04-10"
    assert hit_provenance(daily) == "/brain/DailyActivity/2026-04-09.md › 14:02 | billing move · 2026-04-09"
    one_turn = Hit("t", "transcript", "x", 0.5, {}, "/t.jsonl", "s9", 3, 3, None, "")
    assert hit_provenance(one_turn) == "session s9 · turn 3 · undated"

    brain = Brain(home=mem.home)
    brain.add("kd", "Billing invoices are stored in DynamoDB.", on="2026-04-10", detail="transcript deploy-1 turns 4-5")
    _serve(monkeypatch, mem, [note])
    r = mem.recall("billing invoices DynamoDB")
    by_id = {i.id: i for i in r.items}
    assert by_id["n1"].provenance == "/notes/billing.md › Storage › Invoices · 2026-04-10"
    assert by_id["KD01"].provenance == "MEMORY.md › Key Decisions › KD01 · 2026-04-10"
    assert by_id["KD01"].text == "Billing invoices are stored in DynamoDB.\nDetail: transcript deploy-1 turns 4-5"
    assert by_id["KD01"].timestamp == "2026-04-10"


# ---------------------------------------------------------------------------- weights and decay


def test_superseded_brain_entries_weigh_a_tenth(tmp_path):
    mem = memlane.open(tmp_path / "home", embedder="none")
    brain = Brain(home=mem.home)
    old = brain.add("kd", "Billing stores invoices in Postgres.", on="2026-04-01")
    brain.supersede(old.key, "Billing moved invoices to DynamoDB.", on="2026-04-10")
    r = mem.recall("billing invoices postgres")
    assert [i.id for i in r.items] == ["KD02", "KD01"]
    kd01 = r.items[1]
    # Every query term is in KD01, so its relevance is 1.0 and its score is the weight alone.
    assert kd01.score == pytest.approx(0.1)
    assert kd01.superseded and not r.items[0].superseded
    assert kd01.provenance.endswith("· superseded by KD02")


def test_recall_sees_brain_writes_at_once(tmp_path):
    mem = memlane.open(tmp_path / "home", embedder="none")
    brain = Brain(home=mem.home)
    brain.add("kd", "Billing stores invoices in Postgres.", on="2026-04-01")
    assert [i.id for i in mem.recall("billing invoices").items] == ["KD01"]
    brain.add("ll", "Billing invoices need a retry on Stripe timeouts.", on="2026-04-02")
    brain.supersede("KD01", "Billing stores invoices in DynamoDB.", on="2026-04-03")
    r = mem.recall("billing invoices")
    assert {i.id for i in r.items} == {"KD01", "KD02", "LL01"}
    assert next(i for i in r.items if i.id == "KD01").superseded


def test_hybrid_recall_embeds_the_query_once_and_brain_entries_once(mem, fake_embedder, monkeypatch):
    Brain(home=mem.home).add("kd", "Billing stores invoices in Postgres.", on="2026-04-01")
    queries = []
    original = fake_embedder.embed_query
    monkeypatch.setattr(fake_embedder, "embed_query", lambda text: queries.append(text) or original(text))
    first = mem.recall("which database does billing use")
    assert queries == ["which database does billing use"]
    assert "KD01" in [i.id for i in first.items]
    calls = fake_embedder.calls
    mem.recall("billing invoices postgres")
    assert fake_embedder.calls == calls  # brain vectors come from the cache
    assert queries == ["which database does billing use", "billing invoices postgres"]


def test_decay_is_off_by_default_and_spares_evergreen_items(tmp_path, monkeypatch):
    mem = memlane.open(tmp_path / "home", embedder="none")
    Brain(home=mem.home).add("kd", "Quarterly report numbers come from the ledger service.", on="2020-01-01")
    hits = [
        _hit(
            "topic", "quarterly report ledger totals", 0.8, path="/notes/reports.md", timestamp="2020-01-01T00:00:00Z"
        ),
        _hit("dated", "quarterly report ledger run", 0.8, path="/brain/DailyActivity/2026-04-20.md"),
        _hit(
            "chat",
            "quarterly report ledger question",
            0.8,
            source="transcript",
            path="/t/s.jsonl",
            timestamp="2026-04-10T00:00:00Z",
            session="s",
        ),
    ]
    _serve(monkeypatch, mem, hits)
    now = datetime(2026, 4, 30, tzinfo=timezone.utc)
    plain = {i.id: i.score for i in recall(mem, "quarterly report ledger", now=now).items}
    assert plain["topic"] == plain["dated"] == plain["chat"] == 0.8
    decayed = {i.id: i.score for i in recall(mem, "quarterly report ledger", half_life_days=10, now=now).items}
    assert decayed["topic"] == 0.8  # topic-named note: evergreen however old
    assert decayed["KD01"] == plain["KD01"]  # MEMORY.md: evergreen
    assert decayed["dated"] == pytest.approx(0.4)  # named 10 days ago: one half-life
    assert decayed["chat"] == pytest.approx(0.2)  # transcript 20 days old: two half-lives
    with pytest.raises(ValueError, match="half_life_days"):
        recall(mem, "x", half_life_days=0)


# ---------------------------------------------------------------------------- threshold


def test_nothing_relevant_gives_an_empty_recall(mem):
    r = mem.recall("zygote quasar marmalade")
    assert not r and r.items == [] and r.text == "" and r.tokens == 0 and str(r) == ""
    assert not mem.recall("   ")
    assert not recall(mem, "deploy incident", threshold=1.01)
    assert mem.recall("deploy incident")


def test_items_under_the_threshold_are_dropped_one_by_one(tmp_path, monkeypatch):
    mem = memlane.open(tmp_path / "home", embedder="none")
    _serve(
        monkeypatch,
        mem,
        [_hit("good", "billing ledger", 0.6, heading="A"), _hit("weak", "billing misc", 0.15, heading="B")],
    )
    assert [i.id for i in mem.recall("billing").items] == ["good"]


# ---------------------------------------------------------------------------- MMR


def test_near_duplicates_collapse_and_distinct_items_stay(tmp_path, monkeypatch):
    mem = memlane.open(tmp_path / "home", embedder="none")
    base = "The nightly export job failed because the S3 bucket policy denied PutObject for the exporter role; we added the grant."
    hits = [
        _hit("a", base, 0.9, heading="Export"),
        _hit("a-copy", base.replace("we added", "so we added"), 0.88, heading="Export (resumed)"),
        _hit(
            "b",
            "The nightly export job now retries PutObject three times with backoff before paging.",
            0.7,
            heading="Retries",
        ),
        _hit(
            "c",
            "Exporter role grants live in infra/iam/exporter.tf; review them with the platform team.",
            0.6,
            heading="IAM",
        ),
    ]
    _serve(monkeypatch, mem, hits)
    r = mem.recall("nightly export PutObject", include_brain=False)
    assert [i.id for i in r.items] == ["a", "b", "c"]
    assert r.text.count("bucket policy denied") == 1


def test_mmr_keeps_every_distinct_turn_of_a_real_conversation(shared_data):
    """Distinct turn pairs of a LoCoMo conversation never look like duplicates to the collapse."""
    from memlane.recall import RecallItem, _Candidate, _words, select

    path = shared_data / "locomo" / "locomo10.json"
    if not path.exists():
        pytest.skip(f"{path} not found")
    conv = json.loads(path.read_text())[0]["conversation"]
    texts = []
    for key in sorted(k for k in conv if k.startswith("session_") and not k.endswith("date_time")):
        turns = conv[key]
        texts += [" ".join(f"{t['speaker']}: {t['text']}" for t in turns[i : i + 2]) for i in range(0, len(turns), 2)]
    texts = list(dict.fromkeys(texts))
    pool = [
        _Candidate(RecallItem(str(n), "transcript", t, 1.0 - n / 1e4, "p", None), _words(t), 1)
        for n, t in enumerate(texts)
    ]
    assert len(pool) > 100
    assert len(select(pool, budget=10**9)) == len(pool)


# ---------------------------------------------------------------------------- session snapshot


def test_snapshot_is_frozen_for_the_session_and_fresh_for_the_next(mem):
    brain = Brain(home=mem.home)
    brain.add("kd", "Billing stores invoices in Postgres.", on="2026-04-01")
    brain.add("cr", "Run the integration tests with --release.", on="2026-04-02")
    first = session_snapshot(mem, "sess-1")
    assert "Billing stores invoices in Postgres." in first
    assert "Run the integration tests with --release." in first  # EVOLUTION.md too
    assert DRIFT_CAVEAT in first
    assert "17 chunks from 14 sessions in 14 files are searchable" in first
    brain.supersede("KD01", "Billing moved invoices to DynamoDB.", on="2026-04-10")
    again = session_snapshot(mem, "sess-1")
    assert again.encode() == first.encode()
    assert "DynamoDB" not in again
    nxt = session_snapshot(mem, "sess-2")
    assert "Billing moved invoices to DynamoDB." in nxt
    assert (mem.home / "snapshots" / "sess-1.md").read_bytes() == first.encode()


def test_snapshots_are_pruned_and_ids_cannot_escape_the_folder(tmp_path):
    mem = memlane.open(tmp_path / "home", embedder="none")
    old = session_snapshot(mem, "old-session")
    Brain(home=mem.home).add("ll", "Pin the protobuf version in CI.", on="2026-04-01")
    stale = mem.home / "snapshots" / "old-session.md"
    month_ago = time.time() - 30 * 86_400
    os.utime(stale, (month_ago, month_ago))
    session_snapshot(mem, "new-session")
    assert not stale.exists()
    assert "Pin the protobuf version" not in old
    assert "Pin the protobuf version" in session_snapshot(mem, "old-session")  # a fresh one
    session_snapshot(mem, "../../etc/passwd")
    assert {p.parent for p in (mem.home / "snapshots").iterdir()} == {mem.home / "snapshots"}
    assert not (tmp_path / "etc").exists()
    with pytest.raises(ValueError, match="session id"):
        session_snapshot(mem, "  ")


# ---------------------------------------------------------------------------- focus query


def test_focus_query_draws_on_recent_sessions_open_threads_and_daily_notes(tmp_path):
    mem = memlane.open(tmp_path / "home", embedder="none")
    project = tmp_path / "claude" / "projects" / "-src-billing-service"
    earlier = write_jsonl(
        project / "a.jsonl", generic_session("a", [("Why is the KafkaConsumer lagging?", "Partition skew.")])
    )
    current = write_jsonl(
        project / "b.jsonl", generic_session("b", [("Tune the ledger_reconcile batch size", "Done.")])
    )
    os.utime(earlier, (time.time() - 60, time.time() - 60))
    brain = Brain(home=mem.home)
    brain.add("ot", "Find why the nightly InvoiceExporter is slow.", on="2026-04-01")
    done = brain.add("ot", "Rotate the Stripe webhook secret.", on="2026-04-01")
    brain.resolve(done.key, on="2026-04-02")
    brain.daily_dir.mkdir(parents=True)
    (brain.daily_dir / "2026-04-02.md").write_text(
        "# 2026-04-02\n\n## 14:00 | Terraform drift in staging\n- **Done:** x\n"
    )
    q = focus_query(mem, cwd="/src/billing-service", transcript_path=str(current))
    words = q.split()
    assert words[0] == "billing-service"
    for expected in ("ledger_reconcile", "kafkaconsumer", "invoiceexporter", "terraform"):
        assert expected in words, (expected, q)
    assert "stripe" not in words  # a resolved thread is not a focus
    assert len(words) == len(set(words)) <= 24


def test_focus_query_finds_the_claude_project_folder_from_cwd(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    mem = memlane.open(tmp_path / "home", embedder="none")
    write_jsonl(
        tmp_path / "claude" / "projects" / "-src-my-app" / "s.jsonl",
        generic_session("s", [("Migrate the OrderService to gRPC", "Started.")]),
    )
    assert "orderservice" in focus_query(mem, cwd="/src/my.app").split()
    assert focus_query(mem) == ""


# ---------------------------------------------------------------------------- CLI


def test_cli_recall_prints_the_block_or_json(mem, capsys):
    home = str(mem.home)
    assert main(["--home", home, "recall", "which database does billing use", "--embed", "none"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# Recalled memory · which database does billing use\n")
    assert "session deploy-1 · turns 4-5" in out
    assert (
        main(
            [
                "--home",
                home,
                "--json",
                "recall",
                "billing Postgres",
                "--embed",
                "none",
                "--max-tokens",
                "500",
                "--half-life",
                "30",
            ]
        )
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) == {"query", "tokens", "text", "items"}
    assert doc["tokens"] <= 500 and doc["items"]
    assert set(doc["items"][0]) == {
        "id",
        "source",
        "text",
        "score",
        "provenance",
        "timestamp",
        "superseded",
        "relevance",
        "parts",
    }
    for item in doc["items"]:  # why each was recalled: its relevance and what made it
        assert isinstance(item["relevance"], float) and item["relevance"] > 0
        assert set(item["parts"]) == (
            {"keyword", "vector"} if item["source"] == "brain" else {"bm25", "vector", "coverage"}
        )


def test_cli_recall_empty_and_bad_input(mem, capsys):
    home = str(mem.home)
    assert main(["--home", home, "recall", "zygote quasar marmalade", "--embed", "none"]) == 0
    cap = capsys.readouterr()
    assert cap.out == ""
    assert cap.err == "memlane recall: nothing relevant in memory for this query\n"
    assert main(["--home", home, "recall", "billing", "--max-tokens", "0", "--embed", "none"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert main(["--home", home, "recall", "billing", "--half-life", "-3", "--embed", "none"]) == 2


def test_recall_result_shape():
    r = Recall("q", [], "", 0)
    assert not r and str(r) == "" and r.to_dict() == {"query": "q", "tokens": 0, "text": "", "items": []}
