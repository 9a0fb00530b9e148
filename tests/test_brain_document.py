"""MEMORY.md / EVOLUTION.md model: lossless round trips (hypothesis), canonical form, edits."""

from __future__ import annotations

import string

from hypothesis import given, settings
from hypothesis import strategies as st

from memlane.brain.document import (
    EVOLUTION_SCHEMA,
    MEMORY_SCHEMA,
    Document,
    Entry,
    Section,
    new_document,
    parse,
    parse_meta,
)

# -- lossless: any text survives parse → render byte for byte -----------------------------

FRAGMENTS = [
    "# MEMORY",
    "## Key Decisions",
    "## Open Threads (cap 10)",
    "##  lessons learned ##",
    "## Something Else",
    "### Sub heading",
    "- [KD01] 2026-04-01 — Use Postgres.",
    "- [KD2] no date here",
    "* [LL03] 2026-01-01: colon separator",
    "+ [OT07] 2026-01-01 - dash separator",
    "- [COE01] 2026-02-30 — not a real date",
    "- [KD01] 2026-04-01",
    "- [KD01]",
    "  Detail: docs/billing.md § Storage",
    "\tDetail: tabbed",
    "  <!-- valid_from: 2026-04-01 | superseded_by: KD22 | confidence: high -->",
    "  <!-- not metadata -->",
    "  <!-- a: 1 | a: 2 -->",
    "  more text under the entry",
    "  - nested bullet",
    "```",
    "~~~~",
    "    ```",
    "",
    "   ",
    "<!-- memlane:index — generated -->",
    "<!-- /memlane:index -->",
    "Free prose with a KD15 reference.",
    "\ufeffBOM line",
]

line = st.one_of(st.sampled_from(FRAGMENTS), st.text(st.characters(blacklist_characters="\n"), max_size=30))


@st.composite
def documents_text(draw: st.DrawFn) -> str:
    lines = draw(st.lists(line, max_size=40))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    text = newline.join(lines)
    if lines and draw(st.booleans()):
        text += newline
    return text


@settings(max_examples=400, deadline=None)
@given(documents_text())
def test_render_of_parse_is_the_original_text(text):
    for schema in (MEMORY_SCHEMA, EVOLUTION_SCHEMA):
        assert parse(text, schema).render() == text


@settings(max_examples=200, deadline=None)
@given(documents_text())
def test_parse_render_parse_is_identity(text):
    doc = parse(text, MEMORY_SCHEMA)
    assert parse(doc.render(), MEMORY_SCHEMA) == doc


def _subsequence(small: list[str], big: list[str]) -> bool:
    it = iter(big)
    return all(any(x == y for y in it) for x in small)


@settings(max_examples=200, deadline=None)
@given(documents_text(), st.sampled_from(MEMORY_SCHEMA.sections))
def test_adding_an_entry_only_inserts_lines(text, spec):
    # Hand edits survive our writes: after an add and an index refresh, every original line is
    # still there, in order, and the new entry parses back.
    if "```" in text or "~~~" in text or "memlane:index" in text:
        return  # an unclosed fence swallows what follows it; the index block is ours to replace
    doc = parse(text, MEMORY_SCHEMA)
    entry = Entry(
        f"{spec.prefix}999", "2026-04-01", "Added by memlane.", "notes.md § Added", {"valid_from": "2026-04-01"}
    )
    doc.add(spec, entry)
    doc.set_index(["- [X] index line\n"])
    out = doc.render()
    assert _subsequence([l.rstrip("\r\n") for l in text.splitlines()], [l.rstrip("\r\n") for l in out.splitlines()])
    assert parse(out, MEMORY_SCHEMA).find(entry.key) == entry


# -- canonical: documents we build render to text that parses back to them -----------------

one_line = (
    st.text(
        st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp"), blacklist_characters="\ufeff\x85"),
        min_size=1,
        max_size=40,
    )
    .map(str.strip)
    .filter(bool)
)
meta_value = one_line.filter(lambda v: "|" not in v and "-->" not in v and not v.endswith("--"))
extra_line = one_line.filter(
    lambda v: not v.lower().startswith("detail:") and parse_meta(v) is None and not v.startswith(("```", "~~~"))
)
prose = (
    st.text(string.ascii_letters + string.digits + " .,;:'()", min_size=1, max_size=40)
    .map(str.strip)
    .filter(lambda v: bool(v) and v[0].isalnum())
)


@st.composite
def entries(draw: st.DrawFn, prefix: str) -> Entry:
    return Entry(
        key=f"{prefix}{draw(st.integers(1, 999)):02d}",
        date=draw(st.dates()).isoformat(),
        text=draw(one_line),
        detail=draw(st.none() | one_line),
        meta=draw(
            st.dictionaries(
                st.sampled_from(["valid_from", "superseded_by", "supersedes", "confidence", "status", "x_custom"]),
                meta_value,
                max_size=4,
            )
        ),
        extra=draw(st.lists(extra_line, max_size=2)),
    )


@st.composite
def canonical_documents(draw: st.DrawFn) -> Document:
    schema = draw(st.sampled_from([MEMORY_SCHEMA, EVOLUTION_SCHEMA]))
    doc = Document(schema, preamble=[f"# {schema.title}\n", *[p + "\n" for p in draw(st.lists(prose, max_size=2))]])
    for spec in draw(st.lists(st.sampled_from(schema.sections), max_size=4)):
        body: list = []
        for node in draw(st.lists(st.one_of(entries(spec.prefix), prose, st.just("")), max_size=5)):
            body.append(node if isinstance(node, Entry) else node + "\n")
        doc.sections.append(Section(f"## {spec.name}\n", spec, body))
    return doc


@settings(max_examples=150, deadline=None)
@given(canonical_documents())
def test_built_documents_round_trip(doc):
    text = doc.render()
    again = parse(text, doc.schema)
    assert again == doc
    assert again.render() == text


# -- hand edits and targeted behaviour -------------------------------------------------------

HAND_WRITTEN = """\
# MEMORY
My own intro line, keep it.

## Key Decisions
Some prose I wrote about decisions.

* [KD01] 2026-04-01: Billing uses Postgres   (hand formatted)
    Detail:   docs/billing.md § Storage
    <!--valid_from:2026-04-01|confidence:high-->
    a note I added by hand

## My Own Section
- [KD99] 2026-01-01 — not an entry: this section is not managed

## Open Threads
- [OT01] 2026-04-02 — Find the slow export query.
"""


def test_hand_written_entries_parse_with_their_fields():
    doc = parse(HAND_WRITTEN, MEMORY_SCHEMA)
    kd = doc.find("KD01")
    assert kd is not None
    assert (kd.date, kd.text, kd.detail) == (
        "2026-04-01",
        "Billing uses Postgres   (hand formatted)",
        "docs/billing.md § Storage",
    )
    assert kd.meta == {"valid_from": "2026-04-01", "confidence": "high"}
    assert kd.extra == ["a note I added by hand"]
    assert kd.section == "Key Decisions"
    assert doc.find("KD99") is None
    assert [e.key for e in doc.entries()] == ["KD01", "OT01"]


def test_adding_keeps_every_hand_edit():
    doc = parse(HAND_WRITTEN, MEMORY_SCHEMA)
    doc.add(MEMORY_SCHEMA.by_prefix("KD"), Entry("KD02", "2026-04-05", "Exports run nightly."))
    doc.add(MEMORY_SCHEMA.by_prefix("LL"), Entry("LL01", "2026-04-05", "Vacuum after bulk deletes."))
    out = doc.render()
    for kept in HAND_WRITTEN.splitlines():
        assert kept in out
    assert out.index("a note I added by hand") < out.index("[KD02]") < out.index("## My Own Section")
    assert "## Lessons Learned\n- [LL01] 2026-04-05 — Vacuum after bulk deletes." in out
    assert out.index("## Lessons Learned") < out.index("## Open Threads")
    reparsed = parse(out, MEMORY_SCHEMA)
    assert [e.key for e in reparsed.entries()] == ["KD01", "KD02", "LL01", "OT01"]


def test_changing_metadata_rewrites_only_the_comment_line():
    doc = parse(HAND_WRITTEN, MEMORY_SCHEMA)
    kd = doc.find("KD01")
    doc.replace("KD01", kd.with_meta(superseded_by="KD02", valid_until="2026-04-05"))
    out = doc.render()
    assert "* [KD01] 2026-04-01: Billing uses Postgres   (hand formatted)\n" in out
    assert "    Detail:   docs/billing.md § Storage\n" in out
    assert (
        "    <!-- valid_from: 2026-04-01 | confidence: high | superseded_by: KD02 | valid_until: 2026-04-05 -->\n"
        in out
    )
    assert parse(out, MEMORY_SCHEMA).find("KD01").superseded


def test_metadata_added_to_an_entry_without_any():
    doc = parse("## Open Threads\n- [OT01] 2026-04-02 — Find it.", MEMORY_SCHEMA)
    doc.replace("OT01", doc.find("OT01").with_meta(status="resolved"))
    assert doc.render() == "## Open Threads\n- [OT01] 2026-04-02 — Find it.\n  <!-- status: resolved -->\n"


def test_crlf_and_missing_final_newline_survive_an_append():
    text = "# MEMORY\r\n\r\n## Key Decisions\r\n- [KD01] 2026-04-01 — A."
    doc = parse(text, MEMORY_SCHEMA)
    doc.add(MEMORY_SCHEMA.by_prefix("KD"), Entry("KD02", "2026-04-02", "B."))
    out = doc.render()
    assert out.startswith("# MEMORY\r\n\r\n## Key Decisions\r\n- [KD01] 2026-04-01 — A.\n- [KD02]")
    assert [e.key for e in parse(out, MEMORY_SCHEMA).entries()] == ["KD01", "KD02"]


def test_code_fences_hide_headings_and_entries():
    text = "## Key Decisions\n```md\n## Not a heading\n- [KD05] 2026-01-01 — not an entry\n```\n- [KD01] 2026-01-01 — real\n"
    doc = parse(text, MEMORY_SCHEMA)
    assert len(doc.sections) == 1
    assert [e.key for e in doc.entries()] == ["KD01"]


def test_new_document_has_title_index_and_sections_in_order():
    doc = new_document(MEMORY_SCHEMA)
    text = doc.render()
    assert text.startswith("# MEMORY\n\n<!-- memlane:index")
    assert [s.name for s in parse(text, MEMORY_SCHEMA).sections] == [s.name for s in MEMORY_SCHEMA.sections]
    assert "\n\n## Key Decisions\n" in text


def test_set_index_replaces_only_the_block():
    doc = parse("# MEMORY\nintro\n\n## Key Decisions\n", MEMORY_SCHEMA)
    doc.set_index(["- one\n"])
    doc.set_index(["- two\n"])
    text = doc.render()
    assert text.count("memlane:index") == 2  # start and end markers, once each
    assert "- two\n" in text and "- one" not in text
    assert text.startswith("# MEMORY\n\n<!-- memlane:index") and "\nintro\n" in text


def test_references_and_temporal_properties():
    e = Entry("KD22", "2026-04-10", "Replaces KD15; see LL03, COE01 and KD22 itself.", meta={"supersedes": "KD15"})
    assert e.references() == ["KD15", "LL03", "COE01"]
    assert (e.active, e.weight) == (True, 1.0)
    old = Entry("KD15", "2026-04-01", "x", meta={"superseded_by": "KD22"})
    assert (old.superseded, old.active, old.weight) == (True, False, 0.1)
    thread = Entry("OT01", "2026-04-01", "x", meta={"status": "closed"})
    assert (thread.resolved, thread.active, thread.weight) == (True, False, 1.0)


def test_schema_lookup_and_caps():
    assert MEMORY_SCHEMA.lookup("kd").name == "Key Decisions"
    assert MEMORY_SCHEMA.lookup("Lessons").prefix == "LL"
    assert MEMORY_SCHEMA.by_heading("Open Threads (max 10)").prefix == "OT"
    assert [s.cap for s in MEMORY_SCHEMA.sections] == [15, 30, 25, 30, 10]
    assert MEMORY_SCHEMA.with_caps({"kd": 40}).by_prefix("KD").cap == 40
    assert EVOLUTION_SCHEMA.lookup("failed attempts").prefix == "FA"
