//! Knowledge chunks: the sections of a markdown note ([`crate::parse::markdown`]) → [`Chunk`]s
//! that share the transcripts' index, manifest, delta sync and hybrid search.
//!
//! One chunk per section. A section over the budget is cut at paragraph boundaries (blank
//! lines outside fenced code; a code block is never cut while it fits), a paragraph over it at
//! line boundaries, and a single line over it by [`split_text`] (its parts share the line
//! range). Chunks never span two sections, so each has one exact heading path.
//!
//! Text: the heading path (`Title › Section › Entry`) on the first line, a blank line, then
//! the section's lines — BM25 and the embedder both see the context.
//!
//! Fields: `source` `knowledge` (`summary` for a [`NoteKind::Summary`]); `heading` the path; `session_id` empty; `turn_start` =
//! `turn_end` = the section's index in the note; `ts_start` = `ts_end` = the section's time;
//! `format` `markdown`; `meta` = `{kind, title, tags, frontmatter, line_start, line_end, part}`
//! with 1-based inclusive lines and the note's frontmatter tags followed by the section's
//! inline tags.
//!
//! Keys: the content hash (the embedding-cache key) covers the text alone, so unchanged text
//! never re-embeds; the chunk key also covers the path and first line, so the stored
//! provenance is always exact — a section that moves is re-keyed (a tantivy delete + add, its
//! vector a cache hit), and the same section in two files is one chunk per file.

use super::text::{content_key, estimate_tokens, split_text, Chunk};
use crate::model::{Format, Note, NoteKind, Section};
use crate::parse::markdown::code_lines;

/// Chunk a parsed note from `path` within `budget` estimated tokens per chunk.
#[must_use]
pub fn chunk_note(note: &Note, path: &str, budget: usize) -> Vec<Chunk> {
    let budget = budget.max(1);
    let mut chunks = Vec::new();
    for (index, section) in note.sections.iter().enumerate() {
        let named: Vec<&str> = section
            .heading
            .iter()
            .map(String::as_str)
            .filter(|h| !h.is_empty())
            .collect();
        let heading = named.join(" › ");
        // The heading line costs budget too, but never more than half of it.
        let room = budget
            .saturating_sub(estimate_tokens(&heading))
            .max(budget / 2)
            .max(1);
        let lines: Vec<&str> = section.text.split('\n').collect();
        let mut parts: Vec<(usize, usize, String)> = Vec::new();
        for (first, last) in pack(&lines, room) {
            let body = lines[first..=last].join("\n");
            if estimate_tokens(&body) > room {
                parts.extend(
                    split_text(&body, room)
                        .into_iter()
                        .map(|p| (first, last, p)),
                );
            } else {
                parts.push((first, last, body));
            }
        }
        for (part, (first, last, body)) in parts.into_iter().enumerate() {
            chunks.push(build(
                note,
                section,
                path,
                &heading,
                (index, part),
                (first, last),
                body,
            ));
        }
    }
    chunks
}

fn build(
    note: &Note,
    section: &Section,
    path: &str,
    heading: &str,
    (index, part): (usize, usize),
    (first, last): (usize, usize),
    body: String,
) -> Chunk {
    let text = if heading.is_empty() {
        body
    } else {
        format!("{heading}\n\n{body}")
    };
    let line_start = section.line_start + u32::try_from(first).unwrap_or(u32::MAX);
    let line_end = section.line_start + u32::try_from(last).unwrap_or(u32::MAX);
    let (key, _) = content_key(&format!("{path}\n{line_start}\n{text}"));
    let (_, content_hash) = content_key(&text);
    let mut tags = note.tags.clone();
    for tag in &section.tags {
        if !tags.contains(tag) {
            tags.push(tag.clone());
        }
    }
    let kind = match note.kind {
        NoteKind::Note => "note",
        NoteKind::Daily => "daily",
        NoteKind::Signal => "signal",
        NoteKind::Summary => "summary",
    };
    let index = u32::try_from(index).unwrap_or(u32::MAX);
    let part = u32::try_from(part).unwrap_or(u32::MAX);
    Chunk {
        key,
        content_hash,
        session_id: String::new(),
        parent_session_id: None,
        path: path.to_owned(),
        format: Format::Markdown.as_str().to_owned(),
        turn_start: index,
        turn_end: index,
        part,
        role: String::new(),
        ts_start: section.timestamp,
        ts_end: section.timestamp,
        tools: Vec::new(),
        files: Vec::new(),
        turn_ids: Vec::new(),
        meta: serde_json::json!({
            "kind": kind,
            "title": note.title,
            "tags": tags,
            "frontmatter": note.frontmatter,
            "line_start": line_start,
            "line_end": line_end,
            "part": part,
        }),
        text,
        // Summaries are their own source: search keeps them below the evidence they cite.
        source: if note.kind == NoteKind::Summary {
            "summary"
        } else {
            "knowledge"
        }
        .to_owned(),
        heading: heading.to_owned(),
        // The library folder the note is indexed from decides its project (the store knows it).
        cwd: None,
        branch: None,
    }
}

/// Greedy packing of a section's lines into inclusive ranges of at most `room` tokens whose
/// first and last lines are not blank; blank-only sections yield nothing. Units are
/// paragraphs (fenced code counts as one), or the lines of a paragraph too big alone.
fn pack(lines: &[&str], room: usize) -> Vec<(usize, usize)> {
    let max_bytes = room * 4;
    // Byte offsets of each line start in `lines.join("\n")`, for O(1) range sizes.
    let mut starts = Vec::with_capacity(lines.len() + 1);
    let mut offset = 0;
    for line in lines {
        starts.push(offset);
        offset += line.len() + 1;
    }
    starts.push(offset);
    let size = |first: usize, last: usize| starts[last + 1] - starts[first] - 1;
    let code = code_lines(lines);
    let content = |i: usize| code[i] || !lines[i].trim().is_empty();
    let mut units: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if !content(i) {
            i += 1;
            continue;
        }
        let first = i;
        while i + 1 < lines.len() && content(i + 1) {
            i += 1;
        }
        if size(first, i) <= max_bytes {
            units.push((first, i));
        } else {
            units.extend((first..=i).filter(|&l| content(l)).map(|l| (l, l)));
        }
        i += 1;
    }
    let mut pieces: Vec<(usize, usize)> = Vec::new();
    for (first, last) in units {
        match pieces.last_mut() {
            Some(piece) if size(piece.0, last) <= max_bytes => piece.1 = last,
            _ => pieces.push((first, last)),
        }
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_bytes;
    use std::path::Path;

    fn chunks(path: &str, text: &str, budget: usize) -> Vec<Chunk> {
        let parsed = parse_bytes(text.as_bytes(), Path::new(path), None);
        chunk_note(parsed.note.as_ref().expect("a note"), path, budget)
    }

    #[test]
    fn text_starts_with_the_heading_path() {
        let c = chunks(
            "/lib/design.md",
            "# Billing\n\nIntro.\n\n## Storage\nPostgres, then DynamoDB.\n",
            500,
        );
        assert_eq!(c.len(), 2);
        assert_eq!(c[1].heading, "Billing › Storage");
        assert_eq!(
            c[1].text,
            "Billing › Storage\n\n## Storage\nPostgres, then DynamoDB."
        );
        assert_eq!(c[1].source, "knowledge");
        assert_eq!(
            (
                c[1].meta["line_start"].as_u64(),
                c[1].meta["line_end"].as_u64()
            ),
            (Some(5), Some(6))
        );
        assert_eq!(c[1].turn_start, 1);
    }

    #[test]
    fn oversized_section_splits_at_paragraphs_and_keeps_code_whole() {
        let para = "word ".repeat(60).trim_end().to_owned(); // ~75 tokens
        let code = "```\nfn a() {}\n\n## not a heading\n```";
        let text = format!("## Big\n{para}\n\n{para}\n\n{code}\n\n{para}\n");
        let c = chunks("/lib/n.md", &text, 100);
        assert!(c.len() >= 3, "{}", c.len());
        assert!(c.iter().all(|c| c.heading == "n › Big"));
        assert!(
            c.iter().any(|c| c.text.contains(code)),
            "code block cut apart"
        );
        let parts: Vec<u64> = c.iter().map(|c| c.meta["part"].as_u64().unwrap()).collect();
        assert_eq!(parts, (0..c.len() as u64).collect::<Vec<_>>());
    }

    #[test]
    fn keys_depend_on_path_and_position_hashes_on_text_only() {
        let a = chunks("/lib/a.md", "# T\n\nsame text\n", 500);
        let b = chunks("/lib/b.md", "# T\n\nsame text\n", 500);
        let moved = chunks("/lib/a.md", "\n# T\n\nsame text\n", 500);
        assert_eq!(a[0].content_hash, b[0].content_hash);
        assert_ne!(a[0].key, b[0].key);
        assert_ne!(a[0].key, moved[0].key);
        assert_eq!(
            a[0].key,
            chunks("/lib/a.md", "# T\n\nsame text\n", 500)[0].key
        );
    }

    #[test]
    fn summaries_are_their_own_source() {
        let text = "---\ntype: weekly\nperiod: 2026-W10\n---\n# Week 2026-W10\n\n## Decisions\n- Use uv. (DailyActivity/2026-03-02.md \u{203a} 14:40)\n";
        let c = chunks("/brain/Weekly/2026-W10.md", text, 500);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].source, "summary");
        assert_eq!(c[0].meta["kind"], "summary");
        assert_eq!(c[0].heading, "Week 2026-W10 \u{203a} Decisions");
        assert_eq!(c[0].ts_start, None);
        let daily = chunks(
            "/brain/DailyActivity/2026-03-02.md",
            "# 2026-03-02\n\n## 14:40 | a\nx\n",
            500,
        );
        assert_eq!(daily[0].source, "knowledge");
    }

    #[test]
    fn blank_sections_make_no_chunk() {
        assert!(chunks("/lib/e.md", "", 500).is_empty());
        assert!(chunks("/lib/e.md", "\n\n  \n", 500).is_empty());
    }
}
