//! Aider chat history (FORMATS.md §3.3): `<git root>/.aider.chat.history.md`, one
//! ever-growing markdown file per repository, appended by every `aider` launch.
//!
//! Grammar (aider `io.py`): `# aider chat started at YYYY-MM-DD HH:MM:SS` (local time, no
//! zone) opens a session — the only boundary, there are no ids; every line of user input is
//! prefixed `#### `; tool and UI output (command line, model banner, token costs, `Applied
//! edit to …`, `Commit …`, errors) is prefixed `> `; anything else is the assistant's
//! markdown, SEARCH/REPLACE edit blocks included (the line before the fence names the file).
//!
//! Mapping: a session per header, id `aider:<directory of the file>:<header time>` (text
//! before the first header, when the file starts mid-conversation, is session
//! `aider:<directory>` with no time); consecutive `####` lines are one user turn (a slash
//! command names itself as its tool); `>` output attaches to the assistant turn as a capped
//! result, except the launch banner before the session's first prompt, of which only the
//! `Added <file> to the chat.` files are kept (on that prompt). Every turn carries the header
//! time. Aider writes it in the writer's local time with no zone; like every zone-less time
//! in the parsers it is stored as written (read as UTC), so it is off by the writer's UTC
//! offset (the core builds chrono without a clock or time-zone database).

use std::path::Path;

use chrono::NaiveDateTime;

use crate::model::{Format, ParsedFile, Role, Session, Turn};

use super::clean;
use super::markdown;
use super::turns::TurnBuilder;

const HEADER: &str = "# aider chat started at ";

/// Output lines that are bookkeeping, not content.
const NOISE_PREFIXES: [&str; 3] = ["Tokens: ", "^C", "You can use /undo"];

/// The header's time, when `line` is a session header.
fn header_time(line: &str) -> Option<Option<i64>> {
    let raw = line.strip_prefix(HEADER)?.trim();
    let naive = NaiveDateTime::parse_from_str(raw, "%Y-%m-%d %H:%M:%S").ok();
    Some(naive.map(|n| n.and_utc().timestamp_millis()))
}

/// Whether `bytes` is an Aider chat history: it has a `# aider chat started at <time>` line
/// outside code fences (a note that quotes one in a fence stays a note).
pub(crate) fn is_aider(bytes: &[u8]) -> bool {
    if memchr::memmem::find(bytes, HEADER.as_bytes()).is_none() {
        return false;
    }
    let mut fenced = false;
    for line in bytes.split(|&b| b == b'\n') {
        if line.starts_with(b"```") || line.starts_with(b"~~~") {
            fenced = !fenced;
        } else if !fenced && line.starts_with(HEADER.as_bytes()) {
            let line = String::from_utf8_lossy(line);
            if matches!(header_time(&line), Some(Some(_))) {
                return true;
            }
        }
    }
    false
}

#[derive(Clone, Copy, PartialEq)]
enum Block {
    None,
    User,
    Output,
    Assistant,
}

/// One session being read.
struct Reader<'a> {
    id: String,
    ts: Option<i64>,
    b: TurnBuilder,
    block: Block,
    buf: Vec<&'a str>,
    /// Files added to the chat by the launch banner, for the first prompt.
    pending_files: Vec<String>,
    prompted: bool,
}

impl<'a> Reader<'a> {
    fn new(id: String, ts: Option<i64>) -> Self {
        Reader {
            id,
            ts,
            b: TurnBuilder::default(),
            block: Block::None,
            buf: Vec::new(),
            pending_files: Vec::new(),
            prompted: false,
        }
    }

    fn line(&mut self, kind: Block, text: &'a str) {
        if kind != self.block {
            self.flush();
            self.block = kind;
        }
        self.buf.push(text);
    }

    /// A blank line ends a prompt or an output block; inside prose it is a paragraph break.
    fn blank(&mut self) {
        if self.block == Block::Assistant {
            self.buf.push("");
        } else {
            self.flush();
        }
    }

    fn flush(&mut self) {
        let lines = std::mem::take(&mut self.buf);
        let block = std::mem::replace(&mut self.block, Block::None);
        match block {
            Block::None => {}
            Block::User => self.prompt(&lines),
            Block::Output => self.output(&lines),
            Block::Assistant => {
                let text = lines.join("\n");
                self.b.text(&text, self.ts, None);
                self.b.files(&edited_files(&lines), self.ts);
            }
        }
    }

    fn prompt(&mut self, lines: &[&str]) {
        let text = lines.join("\n").trim().to_owned();
        let tools = text
            .strip_prefix('/')
            .and_then(|c| c.split_whitespace().next())
            .map(|c| vec![format!("/{c}")])
            .unwrap_or_default();
        let files = if text.is_empty() {
            Vec::new()
        } else {
            std::mem::take(&mut self.pending_files)
        };
        self.prompted |= !text.is_empty();
        self.b.push_full(Turn {
            role: Role::User,
            text,
            timestamp: self.ts,
            tools,
            files,
            ..Turn::default()
        });
    }

    fn output(&mut self, lines: &[&str]) {
        let mut files = Vec::new();
        let mut tools: Vec<&str> = Vec::new();
        for l in lines {
            if let Some(f) = l
                .strip_prefix("Added ")
                .and_then(|r| r.strip_suffix(" to the chat."))
            {
                clean::push_unique(&mut files, f.trim());
            } else if let Some(f) = l.strip_prefix("Applied edit to ") {
                clean::push_unique(&mut files, f.trim());
                tools.push("edit");
            } else if l.starts_with("Commit ") {
                tools.push("commit");
            }
        }
        if !self.prompted {
            // The launch banner: command line, version, model, repo map.
            self.pending_files.extend(files);
            return;
        }
        let kept: Vec<&str> = lines
            .iter()
            .copied()
            .filter(|l| !NOISE_PREFIXES.iter().any(|p| l.starts_with(p)))
            .collect();
        self.b
            .tool_result(&clean::render_result(&kept.join("\n")), false, self.ts);
        self.b.tool_names(&tools, self.ts);
        self.b.files(&files, self.ts);
    }

    fn finish(mut self, out: &mut ParsedFile) {
        self.flush();
        let turns = self.b.finish();
        if !turns.is_empty() {
            out.sessions.push(Session {
                id: self.id,
                parent_id: None,
                format: Some(Format::Aider),
                cwd: None,
                branch: None,
                title: None,
                turns,
            });
        }
    }
}

/// Files named by SEARCH/REPLACE blocks: the line before the opening fence of a block whose
/// first line is `<<<<<<< SEARCH`.
fn edited_files(lines: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if l.trim_end() != "<<<<<<< SEARCH" || i < 2 || !lines[i - 1].starts_with("```") {
            continue;
        }
        let path = lines[i - 2].trim();
        if !path.is_empty() && path.len() <= 1024 && !path.starts_with('`') {
            clean::push_unique(&mut out, path);
        }
    }
    out
}

/// An editor mode line (`-*- mode: fundamental -*-`) that some histories start with.
fn is_modeline(line: &str) -> bool {
    let l = line.trim();
    l.len() > 6 && l.starts_with("-*-") && l.ends_with("-*-")
}

/// `aider:<directory of the file>` (`.aider.chat.history.md` lives in the repository root).
fn base_id(path: &Path) -> String {
    let dir = path.parent().and_then(Path::file_name).map_or_else(
        || super::claude::stem(path),
        |d| d.to_string_lossy().into_owned(),
    );
    format!("aider:{dir}")
}

/// Parse an Aider chat history file.
pub(crate) fn parse(bytes: &[u8], path: &Path, out: &mut ParsedFile) {
    let text = markdown::decode(bytes, out);
    let text = text.as_ref();
    let base = base_id(path);
    let mut reader = Reader::new(base.clone(), None);
    // Inside a code fence of the assistant's answer a line is the answer's, verbatim: the `>` of
    // an edit block's `>>>>>>> REPLACE` is not aider's output marker.
    let mut in_fence = false;
    for line in text.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if let Some(ts) = header_time(line) {
            let raw = line[HEADER.len()..].trim().replace(' ', "T");
            let next = Reader::new(format!("{base}:{raw}"), ts);
            std::mem::replace(&mut reader, next).finish(out);
            in_fence = false;
        } else if let Some(rest) = line.strip_prefix("####") {
            let rest = rest.strip_prefix(' ').unwrap_or(rest);
            reader.line(Block::User, rest.trim_end());
            in_fence = false;
        } else if in_fence {
            in_fence = !line.trim_start().starts_with("```");
            reader.line(Block::Assistant, line);
        } else if let Some(rest) = line.strip_prefix('>') {
            let rest = rest.strip_prefix(' ').unwrap_or(rest).trim_end();
            if !rest.is_empty() {
                reader.line(Block::Output, rest);
            }
        } else if line.trim().is_empty() || is_modeline(line) {
            reader.blank();
        } else {
            in_fence = line.trim_start().starts_with("```");
            reader.line(Block::Assistant, line);
        }
    }
    reader.finish(out);
    // Aider writes its history in the repository's root: the folder is where it ran.
    let cwd = path.parent().map(|d| d.to_string_lossy().into_owned());
    for session in &mut out.sessions {
        session.cwd.clone_from(&cwd);
    }
}
