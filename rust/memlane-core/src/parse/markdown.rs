//! Markdown notes — the knowledge library, level L3 of DESIGN.md §1 — split into sections.
//!
//! What a file becomes (see [`Note`] and [`Section`]):
//!
//! * **Frontmatter**: a first line `---`, YAML-looking `key: value` lines, then `---` or `...`.
//!   Values become strings, `[a, b]` and `- a` blocks lists of strings, `|`/`>` blocks and
//!   nested mappings their raw text; it is metadata only and lands in no section. `title`
//!   names the note, `date` dates it, `tags`/`tag` (a list or a comma/space separated
//!   string, `#` optional) tag every chunk, `type: signal|daily` forces the kind, and
//!   `type: weekly|monthly|wisdom|wiki|summary` makes it a [`NoteKind::Summary`].
//! * **Sections**: a new one starts at every `#` and `##` heading (ATX, or setext with a
//!   one-line text underlined by `===`/`---`). Deeper headings stay inside their section.
//!   Lines inside fenced code (```` ``` ````/`~~~`, CommonMark rules: an unclosed fence runs
//!   to the end) never start one. The lines before the first heading form the first section.
//! * **Daily notes** ([`NoteKind::Daily`]: the file stem starts with `YYYY-MM-DD`, the file
//!   sits in a `DailyActivity` folder, or `type: daily`): a heading of any level from `##`
//!   whose text starts with `HH:MM` also starts an entry, timestamped with the note's date
//!   plus that time.
//! * **Signal notes** ([`NoteKind::Signal`]: a `signals` folder anywhere in the path, or
//!   `type: signal`): every unindented list item (`-`, `*`, `+`, `1.`, `1)`) and every `###`
//!   or deeper heading starts an entry; lines after an item (continuations, nested items,
//!   paragraphs) stay with it.
//! * **Context**: each section carries its heading path — the current `#` heading, else the
//!   frontmatter `title`, else the file stem; then the `##` heading; then the entry heading.
//! * **Tiny sections**: a section holding only blank lines, or only its own heading line, is
//!   merged into the next section when that one lies under it (its heading path extends this
//!   one's), so `# Title` followed by `## A` gives one section `Title › A`, not an empty one;
//!   an empty section with no child is kept.
//! * **Time** (naive dates and times are read as UTC, like the transcripts' local times): a
//!   heading or list item that starts with `YYYY-MM-DD` (optionally `[`, `**`, `(` before it,
//!   and `HH:MM` after it) dates its section and the entries under it; a daily note's
//!   `HH:MM` entries take the note's date. Otherwise a section takes its `##`/`#` heading's
//!   date, else the note's (`date:`, else a `YYYY-MM-DD` file stem), else none: the file's
//!   mtime is not used, as a checkout or a touch would re-date every note.
//! * **Tags**: inline `#tag` (a letter first, then letters, digits, `_`, `-`, `/`) after a
//!   space or at a line start, outside fenced and inline code, belong to their section.
//!
//! Robustness: never fails. Invalid UTF-8 is replaced (counted as `invalid_utf8`), a BOM is
//! dropped, CRLF and LF both end lines.

use std::borrow::Cow;
use std::path::Path;

use chrono::NaiveDate;
use serde_json::{Map, Value};

use super::clean::parse_ts_str;
use crate::model::{Note, NoteKind, ParsedFile, Section};

/// Files the brain package owns (L1/L2, always injected): never indexed as knowledge when a
/// folder walk meets them, so a library that holds the brain folder does not store them twice.
/// `DREAMS.md` is the dreaming diary (what a run did), a log rather than memory.
const BRAIN_FILES: [&str; 3] = ["MEMORY.md", "EVOLUTION.md", "DREAMS.md"];
/// The brain's archive folder (`Archives/MEMORY-archive-YYYY-MM.md`), searched by the brain.
const BRAIN_ARCHIVE_DIR: &str = "Archives";
const MINUTE_MS: i64 = 60_000;

/// Whether `path` is named like markdown (`.md`, `.markdown`, any case).
#[must_use]
pub fn has_markdown_extension(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("md") || e.eq_ignore_ascii_case("markdown"))
}

/// Whether a directory walk should index `path` as a note: markdown by extension, not a
/// hidden file (e.g. Aider's `.aider.chat.history.md`, a transcript), not a brain file
/// (`MEMORY.md`, `EVOLUTION.md`, `Archives/*-archive-*.md`). A file named explicitly is
/// indexed whatever its name.
#[must_use]
pub fn is_note_candidate(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    let in_archive = path
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|d| d == BRAIN_ARCHIVE_DIR);
    let brain_archive = in_archive && name.contains("-archive-");
    has_markdown_extension(path)
        && !name.starts_with('.')
        && !BRAIN_FILES.contains(&name)
        && !brain_archive
}

/// The text of a whole-file markdown document without its BOM; invalid UTF-8 is replaced and
/// counted. The file is always complete: markdown is never resumed.
pub(crate) fn decode<'a>(bytes: &'a [u8], out: &mut ParsedFile) -> Cow<'a, str> {
    out.complete_bytes = bytes.len() as u64;
    let body = bytes.strip_prefix("\u{feff}".as_bytes()).unwrap_or(bytes);
    let text = String::from_utf8_lossy(body);
    if matches!(text, Cow::Owned(_)) {
        out.skip("invalid_utf8");
    }
    text
}

/// Parse a markdown file into `out.note`.
pub(crate) fn parse(bytes: &[u8], path: &Path, out: &mut ParsedFile) {
    let text = decode(bytes, out);
    let text = text.as_ref();
    let mut lines: Vec<&str> = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    if text.is_empty() || text.ends_with('\n') {
        lines.pop();
    }
    out.note = Some(split_note(&lines, path));
}

fn split_note(lines: &[&str], path: &Path) -> Note {
    let fm_len = frontmatter_len(lines);
    let frontmatter = if fm_len > 0 {
        parse_frontmatter(&lines[1..fm_len - 1])
    } else {
        Map::new()
    };
    let fm_str = |key: &str| {
        frontmatter
            .get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
    };
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem_date = leading_date(&stem);
    let timestamp = fm_str("date")
        .and_then(|d| parse_ts_str(d).or_else(|| leading_date(d)))
        .or(stem_date);
    let declared = fm_str("type").map(str::to_ascii_lowercase);
    let in_folder = |name: &str| {
        path.parent().is_some_and(|p| {
            p.components()
                .any(|c| c.as_os_str().eq_ignore_ascii_case(name))
        })
    };
    let kind = match declared.as_deref() {
        Some("signal" | "signals") => NoteKind::Signal,
        Some("daily") => NoteKind::Daily,
        Some("weekly" | "monthly" | "wisdom" | "wiki" | "summary") => NoteKind::Summary,
        _ if in_folder("signals") => NoteKind::Signal,
        _ if stem_date.is_some() || in_folder("DailyActivity") => NoteKind::Daily,
        _ => NoteKind::Note,
    };
    let tags = frontmatter
        .get("tags")
        .or_else(|| frontmatter.get("tag"))
        .map(frontmatter_tags)
        .unwrap_or_default();
    let root = fm_str("title").map_or(stem, str::to_owned);
    let mut splitter = Splitter {
        lines,
        kind,
        note_ts: timestamp,
        root: root.clone(),
        h1: None,
        h2: None,
        first_h1: None,
        sections: Vec::new(),
        open: None,
    };
    splitter.run(fm_len);
    let title = fm_str("title")
        .map(str::to_owned)
        .or(splitter.first_h1)
        .unwrap_or(root);
    Note {
        title,
        kind,
        frontmatter,
        tags,
        timestamp,
        frontmatter_lines: u32::try_from(fm_len).unwrap_or(u32::MAX),
        lines: u32::try_from(lines.len()).unwrap_or(u32::MAX),
        sections: merge_tiny(splitter.sections),
    }
}

/// A heading in the context stack: its text and the date it carries down, if any.
#[derive(Clone)]
struct Level {
    text: String,
    ts: Option<i64>,
}

/// A section being collected: from `start` (0-based line) with this context.
struct Open {
    start: usize,
    heading: Vec<String>,
    ts: Option<i64>,
}

struct Splitter<'a> {
    lines: &'a [&'a str],
    kind: NoteKind,
    note_ts: Option<i64>,
    root: String,
    h1: Option<Level>,
    h2: Option<Level>,
    first_h1: Option<String>,
    sections: Vec<Section>,
    open: Option<Open>,
}

impl Splitter<'_> {
    fn run(&mut self, body_start: usize) {
        if body_start >= self.lines.len() {
            return;
        }
        self.open = Some(Open {
            start: body_start,
            heading: vec![self.root.clone()],
            ts: self.note_ts,
        });
        let code = code_lines(&self.lines[body_start..]);
        // Whether the previous line could be the text of a setext heading.
        let mut prev_paragraph = false;
        let mut prev_prev_paragraph = false;
        for i in body_start..self.lines.len() {
            let line = self.lines[i];
            let was_paragraph = prev_paragraph;
            let before = prev_prev_paragraph;
            prev_prev_paragraph = prev_paragraph;
            prev_paragraph = false;
            if code[i - body_start] {
                continue;
            }
            if let Some((level, text)) = atx_heading(line) {
                self.heading(i, level, text);
                continue;
            }
            if let Some(level) = setext_underline(line) {
                // Only under a one-line paragraph (never a heading or a list item).
                if was_paragraph && !before {
                    let text: &str = self.lines[i - 1];
                    self.heading(i - 1, level, text.trim());
                    continue;
                }
            }
            let item = list_item(line);
            if let (NoteKind::Signal, Some(item)) = (self.kind, item) {
                self.entry(i, None, leading_date(item));
                continue;
            }
            prev_paragraph = item.is_none()
                && !line.trim().is_empty()
                && !is_thematic_break(line)
                && strip_indent(line).is_some_and(|l| !l.starts_with('>'));
        }
        self.close(self.lines.len());
    }

    fn root(&self) -> &str {
        self.h1.as_ref().map_or(&self.root, |h| &h.text)
    }

    fn inherited_ts(&self) -> Option<i64> {
        self.h2
            .as_ref()
            .and_then(|h| h.ts)
            .or_else(|| self.h1.as_ref().and_then(|h| h.ts))
            .or(self.note_ts)
    }

    /// A heading at line `i`: a new section for `#`/`##`, an entry for a daily `HH:MM`
    /// heading or a signal note's deeper heading; nothing otherwise.
    fn heading(&mut self, i: usize, level: usize, text: &str) {
        let time = leading_time(text)
            .filter(|_| self.kind == NoteKind::Daily)
            .and_then(|minutes| self.note_ts.map(|d| d + minutes));
        let ts = leading_date(text).or(time);
        match level {
            1 => {
                self.close(i);
                self.first_h1.get_or_insert_with(|| text.to_owned());
                self.h1 = Some(Level {
                    text: text.to_owned(),
                    ts,
                });
                self.h2 = None;
                self.start(i, vec![text.to_owned()], ts.or(self.note_ts));
            }
            2 => {
                self.close(i);
                self.h2 = Some(Level {
                    text: text.to_owned(),
                    ts,
                });
                let heading = vec![self.root().to_owned(), text.to_owned()];
                let ts = ts.or_else(|| self.inherited_ts());
                self.start(i, heading, ts);
            }
            _ if self.kind == NoteKind::Signal || time.is_some() => self.entry(i, Some(text), ts),
            _ => {}
        }
    }

    /// An entry (signal item or heading, daily `HH:MM` heading) at line `i`.
    fn entry(&mut self, i: usize, text: Option<&str>, ts: Option<i64>) {
        self.close(i);
        let mut heading = vec![self.root().to_owned()];
        heading.extend(self.h2.as_ref().map(|h| h.text.clone()));
        heading.extend(text.map(str::to_owned));
        let ts = ts.or_else(|| self.inherited_ts());
        self.start(i, heading, ts);
    }

    fn start(&mut self, i: usize, heading: Vec<String>, ts: Option<i64>) {
        self.open = Some(Open {
            start: i,
            heading,
            ts,
        });
    }

    /// End the open section just before line `end`.
    fn close(&mut self, end: usize) {
        let Some(open) = self.open.take() else {
            return;
        };
        if end <= open.start {
            return;
        }
        let lines = &self.lines[open.start..end];
        self.sections.push(Section {
            heading: open.heading,
            line_start: line_number(open.start),
            line_end: line_number(end - 1),
            text: lines.join("\n"),
            timestamp: open.ts,
            tags: inline_tags(lines),
        });
    }
}

fn line_number(index: usize) -> u32 {
    u32::try_from(index + 1).unwrap_or(u32::MAX)
}

/// Fold blank-only and heading-only sections into the next one when it lies under them.
fn merge_tiny(sections: Vec<Section>) -> Vec<Section> {
    let mut out: Vec<Section> = Vec::with_capacity(sections.len());
    let mut carry: Option<Section> = None;
    for mut section in sections {
        if let Some(prev) = carry.take() {
            let blank = prev.text.trim().is_empty();
            if blank || section.heading.starts_with(&prev.heading) {
                section.line_start = prev.line_start;
                section.text = format!("{}\n{}", prev.text, section.text);
                for tag in prev.tags {
                    if !section.tags.contains(&tag) {
                        section.tags.push(tag);
                    }
                }
            } else {
                out.push(prev);
            }
        }
        // Nothing but blank lines and headings (its own, and its parents' folded into it).
        let tiny = section
            .text
            .lines()
            .all(|l| l.trim().is_empty() || atx_heading(l).is_some());
        if tiny {
            carry = Some(section);
        } else {
            out.push(section);
        }
    }
    out.extend(carry);
    out
}

/// Which of `lines` are fenced code (the fence lines included): never headings, entries or
/// tags, and never cut apart by the chunker.
#[must_use]
pub fn code_lines(lines: &[&str]) -> Vec<bool> {
    let mut fence: Option<Fence> = None;
    lines
        .iter()
        .map(|line| {
            if let Some(f) = fence {
                if f.closed_by(line) {
                    fence = None;
                }
                return true;
            }
            fence = Fence::open(line);
            fence.is_some()
        })
        .collect()
}

/// A code fence: its character and length.
#[derive(Clone, Copy)]
struct Fence {
    ch: u8,
    len: usize,
}

impl Fence {
    fn open(line: &str) -> Option<Fence> {
        let rest = strip_indent(line)?;
        let ch = *rest.as_bytes().first()?;
        if ch != b'`' && ch != b'~' {
            return None;
        }
        let len = rest.bytes().take_while(|&b| b == ch).count();
        if len < 3 || (ch == b'`' && rest[len..].contains('`')) {
            return None;
        }
        Some(Fence { ch, len })
    }

    fn closed_by(self, line: &str) -> bool {
        let Some(rest) = strip_indent(line) else {
            return false;
        };
        let len = rest.bytes().take_while(|&b| b == self.ch).count();
        len >= self.len && rest[len..].trim().is_empty()
    }
}

/// The line without up to three spaces of indentation (`None` when indented more: code).
fn strip_indent(line: &str) -> Option<&str> {
    let spaces = line.bytes().take_while(|&b| b == b' ').count();
    (spaces <= 3).then(|| &line[spaces..])
}

/// `# Heading` … `###### Heading` (closing `#`s dropped) → (level, text).
fn atx_heading(line: &str) -> Option<(usize, &str)> {
    let rest = strip_indent(line)?;
    let level = rest.bytes().take_while(|&b| b == b'#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let after = &rest[level..];
    if !(after.is_empty() || after.starts_with([' ', '\t'])) {
        return None;
    }
    let mut text = after.trim();
    let stripped = text.trim_end_matches('#');
    if stripped.is_empty() || stripped.ends_with([' ', '\t']) {
        text = stripped.trim_end();
    }
    Some((level, text))
}

/// `===` (level 1) or `---` (level 2) under a paragraph line.
fn setext_underline(line: &str) -> Option<usize> {
    let rest = strip_indent(line)?.trim_end();
    let ch = *rest.as_bytes().first()?;
    if !(ch == b'=' || ch == b'-') || !rest.bytes().all(|b| b == ch) {
        return None;
    }
    Some(if ch == b'=' { 1 } else { 2 })
}

fn is_thematic_break(line: &str) -> bool {
    let Some(rest) = strip_indent(line) else {
        return false;
    };
    let mut marks = rest.bytes().filter(|b| !b.is_ascii_whitespace());
    let Some(first @ (b'-' | b'*' | b'_')) = marks.next() else {
        return false;
    };
    let mut count = 1;
    for b in marks {
        if b != first {
            return false;
        }
        count += 1;
    }
    count >= 3
}

/// An unindented list item's text (after its marker).
fn list_item(line: &str) -> Option<&str> {
    if is_thematic_break(line) {
        return None;
    }
    let bytes = line.as_bytes();
    let marker = match bytes.first()? {
        b'-' | b'*' | b'+' => 1,
        b'0'..=b'9' => {
            let digits = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
            if digits > 9 || !matches!(bytes.get(digits), Some(b'.' | b')')) {
                return None;
            }
            digits + 1
        }
        _ => return None,
    };
    let rest = &line[marker..];
    (rest.is_empty() || rest.starts_with([' ', '\t'])).then(|| rest.trim_start())
}

/// `HH:MM` (or `H:MM`, optionally `:SS`) at the start of `text` → minutes after midnight, in ms.
fn leading_time(text: &str) -> Option<i64> {
    let t = text.trim_start().trim_start_matches(['[', '(', '*', '_']);
    let b = t.as_bytes();
    let h_len = b.iter().take_while(|c| c.is_ascii_digit()).count();
    if !(1..=2).contains(&h_len) || b.get(h_len) != Some(&b':') {
        return None;
    }
    let m = b.get(h_len + 1..h_len + 3)?;
    if !m.iter().all(u8::is_ascii_digit) || b.get(h_len + 3).is_some_and(u8::is_ascii_digit) {
        return None;
    }
    let hours: i64 = t[..h_len].parse().ok()?;
    let minutes: i64 = t[h_len + 1..h_len + 3].parse().ok()?;
    (hours < 24 && minutes < 60).then_some((hours * 60 + minutes) * MINUTE_MS)
}

/// `YYYY-MM-DD` (then optionally ` HH:MM` or `THH:MM`) at the start of `text` → ms.
fn leading_date(text: &str) -> Option<i64> {
    let t = text
        .trim_start()
        .trim_start_matches(['[', '(', '*', '_', '~']);
    let date = NaiveDate::parse_from_str(t.get(..10)?, "%Y-%m-%d").ok()?;
    if t.as_bytes().get(10).is_some_and(u8::is_ascii_digit) {
        return None;
    }
    let day = date.and_hms_opt(0, 0, 0)?.and_utc().timestamp_millis();
    let time = t[10..].strip_prefix([' ', 'T']).and_then(leading_time);
    Some(day + time.unwrap_or(0))
}

/// Lines in the frontmatter block (both fences included), 0 when there is none.
fn frontmatter_len(lines: &[&str]) -> usize {
    if lines.first().map(|l| l.trim_end()) != Some("---") {
        return 0;
    }
    for (i, line) in lines.iter().enumerate().skip(1) {
        let t = line.trim_end();
        if t == "---" || t == "..." {
            return i + 1;
        }
        let yaml_like = t.is_empty()
            || t.starts_with([' ', '\t', '#', '-'])
            || t.split_once(':').is_some_and(|(k, _)| !k.trim().is_empty());
        if !yaml_like {
            // A `---` thematic break opening a note, not frontmatter.
            return 0;
        }
    }
    0
}

/// The subset of YAML notes use: `key: scalar`, `key: [a, b]`, `key:` + `- item` lines,
/// `key: |` blocks; anything nested is kept as raw text.
fn parse_frontmatter(lines: &[&str]) -> Map<String, Value> {
    let mut map = Map::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        i += 1;
        if line.trim().is_empty() || line.starts_with([' ', '\t', '#', '-']) {
            continue;
        }
        let Some((key, rest)) = line.split_once(':') else {
            continue;
        };
        let block_start = i;
        while i < lines.len()
            && (lines[i].starts_with([' ', '\t', '-']) || lines[i].trim().is_empty())
        {
            i += 1;
        }
        let block: Vec<&str> = lines[block_start..i]
            .iter()
            .map(|l| l.trim())
            .filter(|l| !l.is_empty())
            .collect();
        let rest = rest.trim();
        let value = if rest.starts_with('[') && rest.ends_with(']') {
            Value::Array(
                rest[1..rest.len() - 1]
                    .split(',')
                    .map(unquote)
                    .filter(|s| !s.is_empty())
                    .map(Value::String)
                    .collect(),
            )
        } else if rest.is_empty() && !block.is_empty() && block.iter().all(|l| l.starts_with('-')) {
            Value::Array(
                block
                    .iter()
                    .map(|l| unquote(&l[1..]))
                    .map(Value::String)
                    .collect(),
            )
        } else if rest.is_empty() || rest.starts_with(['|', '>']) {
            Value::String(block.join("\n"))
        } else {
            Value::String(unquote(rest))
        };
        map.insert(key.trim().to_owned(), value);
    }
    map
}

fn unquote(s: &str) -> String {
    let s = s.trim();
    let inner = s
        .strip_prefix('"')
        .and_then(|x| x.strip_suffix('"'))
        .or_else(|| s.strip_prefix('\'').and_then(|x| x.strip_suffix('\'')));
    inner.unwrap_or(s).to_owned()
}

fn frontmatter_tags(value: &Value) -> Vec<String> {
    let raw: Vec<String> = match value {
        Value::Array(items) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        Value::String(s) => s.split([',', ' ']).map(str::to_owned).collect(),
        _ => Vec::new(),
    };
    let mut tags = Vec::new();
    for tag in raw {
        let tag = tag.trim().trim_start_matches('#').to_owned();
        if !tag.is_empty() && !tags.contains(&tag) {
            tags.push(tag);
        }
    }
    tags
}

/// Inline `#tags` of `lines`, outside fenced and inline code, in order of first use.
fn inline_tags(lines: &[&str]) -> Vec<String> {
    let mut tags: Vec<String> = Vec::new();
    for (line, code) in lines.iter().zip(code_lines(lines)) {
        if code || !line.contains('#') {
            continue;
        }
        let mut in_code = false;
        let mut prev = ' ';
        for (at, c) in line.char_indices() {
            if c == '`' {
                in_code = !in_code;
            } else if c == '#' && !in_code && (prev.is_whitespace() || prev == '(') {
                let tag: String = line[at + 1..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '/'))
                    .collect();
                let tag = tag.trim_end_matches(['-', '/']);
                if tag.chars().next().is_some_and(char::is_alphabetic)
                    && !tags.iter().any(|t| t == tag)
                {
                    tags.push(tag.to_owned());
                }
            }
            prev = c;
        }
    }
    tags
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Format;
    use crate::parse::parse_bytes;

    fn note(path: &str, text: &[u8]) -> (Note, ParsedFile) {
        let parsed = parse_bytes(text, Path::new(path), None);
        assert_eq!(parsed.format, Some(Format::Markdown));
        (parsed.note.clone().expect("a note"), parsed)
    }

    fn headings(n: &Note) -> Vec<String> {
        n.sections.iter().map(|s| s.heading.join(" › ")).collect()
    }

    fn ms(date: &str) -> i64 {
        parse_ts_str(date).expect("a date")
    }

    #[test]
    fn daily_entries_split_at_times_and_take_date_plus_time() {
        let text = "# 2026-04-01\n\n## 09:30 | Fixed the importer\n- **Done:** x\n\n## 14:05 | Billing\nmoved to DynamoDB\n### 15:00 follow-up\nchecked\n### Details\nmore\n";
        let (n, _) = note("/brain/DailyActivity/2026-04-01.md", text.as_bytes());
        assert_eq!(n.kind, NoteKind::Daily);
        assert_eq!(
            headings(&n),
            [
                "2026-04-01 › 09:30 | Fixed the importer",
                "2026-04-01 › 14:05 | Billing",
                "2026-04-01 › 14:05 | Billing › 15:00 follow-up",
            ]
        );
        let stamps: Vec<_> = n.sections.iter().map(|s| s.timestamp).collect();
        assert_eq!(
            stamps,
            [
                Some(ms("2026-04-01T09:30:00Z")),
                Some(ms("2026-04-01T14:05:00Z")),
                Some(ms("2026-04-01T15:00:00Z")),
            ]
        );
        // `# 2026-04-01` alone folds into its first entry; `### Details` stays in its entry.
        assert_eq!(n.sections[0].line_start, 1);
        assert!(n.sections[2].text.ends_with("### Details\nmore"));
    }

    #[test]
    fn notes_split_at_h1_and_h2_only() {
        let text =
            "# Design\nintro\n## Storage\ntext\n### Detail\nstays\n# Appendix\n## Links\nurl\n";
        let (n, _) = note("/lib/design.md", text.as_bytes());
        assert_eq!(n.kind, NoteKind::Note);
        assert_eq!(n.title, "Design");
        assert_eq!(
            headings(&n),
            ["Design", "Design › Storage", "Appendix › Links"]
        );
        assert_eq!(n.sections[1].text, "## Storage\ntext\n### Detail\nstays");
        assert_eq!(
            n.sections[2].line_start, 7,
            "`# Appendix` folds into its child"
        );
        assert!(n.sections.iter().all(|s| s.timestamp.is_none()));
    }

    #[test]
    fn frontmatter_is_metadata_with_title_date_and_tags() {
        let text = "---\ntitle: \"Billing: design\"\ndate: 2026-03-02\ntags: [billing, '#db']\naliases:\n  - payments\n  - invoices\nsummary: |\n  two\n  lines\n---\n## Choice\nDynamoDB #decision and #db, not `#code` or a#b.\n";
        let (n, _) = note("/lib/x.md", text.as_bytes());
        assert_eq!(n.frontmatter_lines, 11);
        assert_eq!(n.title, "Billing: design");
        assert_eq!(n.timestamp, Some(ms("2026-03-02")));
        assert_eq!(n.tags, ["billing", "db"]);
        assert_eq!(
            n.frontmatter["aliases"],
            serde_json::json!(["payments", "invoices"])
        );
        assert_eq!(n.frontmatter["summary"], "two\nlines");
        assert_eq!(headings(&n), ["Billing: design › Choice"]);
        assert_eq!(n.sections[0].line_start, 12);
        assert_eq!(n.sections[0].tags, ["decision", "db"]);
        assert_eq!(n.sections[0].timestamp, Some(ms("2026-03-02")));
    }

    #[test]
    fn a_leading_thematic_break_is_not_frontmatter() {
        let (n, _) = note("/lib/x.md", b"---\nJust a line of prose.\n---\n## A\nb\n");
        assert_eq!(n.frontmatter_lines, 0);
        assert_eq!(n.sections[0].line_start, 1);
    }

    #[test]
    fn code_fences_hide_headings_and_tags() {
        let text = "## Script\n```bash\n## not a heading #nottag\necho hi\n```\n~~~~\n# nor this\n~~~\n~~~~\nafter #real\n## Next\nx\n";
        let (n, _) = note("/lib/x.md", text.as_bytes());
        assert_eq!(headings(&n), ["x › Script", "x › Next"]);
        assert_eq!(n.sections[0].tags, ["real"]);
        let (unclosed, _) = note("/lib/x.md", b"## A\n```\n## B\n");
        assert_eq!(headings(&unclosed), ["x › A"]);
    }

    #[test]
    fn setext_headings_split_but_thematic_breaks_do_not() {
        let text = "Title\n=====\nintro\n\nPart two\n--------\nbody\n\n---\n\nafter break\n- item\n---\nmulti\nline\n---\n";
        let (n, _) = note("/lib/s.md", text.as_bytes());
        assert_eq!(headings(&n), ["Title", "Title › Part two"]);
        assert_eq!(n.sections[1].line_start, 5);
        assert_eq!(n.sections[1].line_end, 16);
    }

    #[test]
    fn no_headings_is_one_section_named_after_the_file() {
        let (n, _) = note("/lib/plain notes.md", b"just text\n\nmore text");
        assert_eq!(headings(&n), ["plain notes"]);
        assert_eq!((n.sections[0].line_start, n.sections[0].line_end), (1, 3));
    }

    #[test]
    fn empty_file_has_no_sections() {
        let (n, parsed) = note("/lib/e.md", b"");
        assert!(n.sections.is_empty());
        assert_eq!(n.lines, 0);
        assert!(parsed.skipped.is_empty());
        let (only_frontmatter, _) = note("/lib/e.md", b"---\na: b\n---\n");
        assert!(only_frontmatter.sections.is_empty());
    }

    #[test]
    fn crlf_and_bom_are_handled() {
        let (n, _) = note(
            "/lib/w.md",
            "\u{feff}# T\r\n\r\n## A\r\nline\r\n".as_bytes(),
        );
        assert_eq!(headings(&n), ["T › A"]);
        assert_eq!(n.sections[0].text, "# T\n\n## A\nline");
        assert_eq!(n.lines, 4);
    }

    #[test]
    fn invalid_utf8_is_replaced_and_counted() {
        let (n, parsed) = note("/lib/bad.md", b"## A\nbad \xff\xfe byte\n");
        assert_eq!(parsed.skipped.get("invalid_utf8"), Some(&1));
        assert!(n.sections[0].text.contains("bad \u{fffd}\u{fffd} byte"));
        assert_eq!(parsed.complete_bytes, 17);
    }

    #[test]
    fn signal_notes_give_one_entry_per_item_or_deep_heading() {
        let text = "# Signals\n\n## 2026-04-02\n- pager fired twice\n  continued line\n  - nested\n- 2026-04-03 disk full on db-2\n\n### Latency spike\np99 doubled\n* third\n";
        let (n, _) = note("/lib/signals/ops.md", text.as_bytes());
        assert_eq!(n.kind, NoteKind::Signal);
        assert_eq!(
            headings(&n),
            [
                "Signals › 2026-04-02",
                "Signals › 2026-04-02",
                "Signals › 2026-04-02 › Latency spike",
                "Signals › 2026-04-02",
            ]
        );
        assert_eq!(
            n.sections[0].text,
            "# Signals\n\n## 2026-04-02\n- pager fired twice\n  continued line\n  - nested"
        );
        assert_eq!(n.sections[0].timestamp, Some(ms("2026-04-02")));
        assert_eq!(n.sections[1].timestamp, Some(ms("2026-04-03")));
        let (typed, _) = note("/lib/ops.md", b"---\ntype: signal\n---\n- a\n- b\n");
        assert_eq!(typed.kind, NoteKind::Signal);
        assert_eq!(typed.sections.len(), 2);
    }

    #[test]
    fn walks_skip_hidden_and_brain_files() {
        for yes in [
            "/n/a.md",
            "/n/DailyActivity/2026-01-01.md",
            "/n/B.MARKDOWN",
            "/n/Archives/notes.md",
        ] {
            assert!(is_note_candidate(Path::new(yes)), "{yes}");
        }
        for no in [
            "/n/MEMORY.md",
            "/n/EVOLUTION.md",
            "/n/Archives/MEMORY-archive-2026-03.md",
            "/r/.aider.chat.history.md",
            "/n/a.txt",
        ] {
            assert!(!is_note_candidate(Path::new(no)), "{no}");
        }
    }
}
