//! The normalised conversation model every parser produces and the chunker consumes.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Who speaks in a [`Turn`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// A human prompt (scaffolding stripped).
    #[default]
    User,
    /// The agent's reply, with tool calls and capped tool results rendered inline.
    Assistant,
    /// A compaction / continuation summary: kept, but never treated as a human turn.
    Summary,
}

impl Role {
    /// Lower-case name, as stored in the index.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Summary => "summary",
        }
    }
}

/// Transcript formats the parser recognises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// Claude Code session JSONL (`~/.claude/projects/<slug>/<uuid>.jsonl`, subagent files).
    ClaudeCode,
    /// Codex rollout JSONL, envelope or pre-envelope layout, plain or `.jsonl.zst`.
    Codex,
    /// OpenClaw / pi session JSONL (v1–v3).
    Openclaw,
    /// Gemini CLI: JSONL upsert log or legacy single JSON.
    Gemini,
    /// Generic `{"id","role","content","timestamp"}` lines.
    Generic,
    /// Cursor agent transcript JSONL (`~/.cursor/projects/<slug>/agent-transcripts/…`).
    Cursor,
    /// Aider chat history markdown (`.aider.chat.history.md`).
    Aider,
    /// ChatGPT data export (`conversations.json`: one or many mapping trees).
    Chatgpt,
    /// Claude.ai data export (`conversations.json` with `chat_messages`).
    ClaudeAi,
    /// GitHub Copilot CLI session events JSONL (`~/.copilot/session-state/<id>/events.jsonl`).
    Copilot,
    /// Slack export channel-day file (`<channel>/<YYYY-MM-DD>.json`).
    Slack,
    /// Hermes Agent legacy session JSON (`~/.hermes/sessions/session_*.json`).
    Hermes,
    /// LongMemEval benchmark file (array of instances with `haystack_sessions`).
    Longmemeval,
    /// LoCoMo benchmark file (array of samples with `conversation`).
    Locomo,
    /// A markdown note of the knowledge library (`.md`, `.markdown`): sections, not turns.
    Markdown,
}

impl Format {
    /// Every format, in detection order.
    pub const ALL: [Format; 15] = [
        Format::Codex,
        Format::Openclaw,
        Format::Copilot,
        Format::Gemini,
        Format::ClaudeCode,
        Format::Cursor,
        Format::Hermes,
        Format::Chatgpt,
        Format::ClaudeAi,
        Format::Slack,
        Format::Longmemeval,
        Format::Locomo,
        Format::Generic,
        Format::Aider,
        Format::Markdown,
    ];

    /// The name used on the command line (`--format`) and in the index.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Format::ClaudeCode => "claude-code",
            Format::Codex => "codex",
            Format::Openclaw => "openclaw",
            Format::Gemini => "gemini",
            Format::Generic => "generic",
            Format::Longmemeval => "longmemeval",
            Format::Locomo => "locomo",
            Format::Markdown => "markdown",
            Format::Cursor => "cursor",
            Format::Aider => "aider",
            Format::Chatgpt => "chatgpt",
            Format::ClaudeAi => "claude-ai",
            Format::Copilot => "copilot",
            Format::Slack => "slack",
            Format::Hermes => "hermes",
        }
    }

    /// Formats written as append-only logs of JSON lines, whose detection a few appended
    /// lines could sway while the file is short.
    #[must_use]
    pub fn is_line_log(self) -> bool {
        matches!(
            self,
            Format::ClaudeCode
                | Format::Codex
                | Format::Openclaw
                | Format::Gemini
                | Format::Generic
                | Format::Cursor
                | Format::Copilot
        )
    }

    /// Inverse of [`Format::as_str`].
    #[must_use]
    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.as_str() == name)
    }
}

/// One utterance after normalisation.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Turn {
    /// Speaker role.
    pub role: Role,
    /// Clean text: scaffolding stripped, images replaced by `[image]`, tool calls rendered
    /// as short lines and tool results capped.
    pub text: String,
    /// Milliseconds since the Unix epoch (UTC), when the source has a time.
    pub timestamp: Option<i64>,
    /// Tool names used in this turn.
    pub tools: Vec<String>,
    /// File paths mentioned by tool inputs or results.
    pub files: Vec<String>,
    /// Speaker name when the source names people (LoCoMo), else `None`.
    pub speaker: Option<String>,
    /// Source record ids this turn came from (LoCoMo `dia_id`, message ids, …), for provenance
    /// and benchmark scoring.
    pub ids: Vec<String>,
    /// Working directory of the record that opened this turn, when the source records one per
    /// line (Claude Code writes `cwd` on every line); else the session's applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Git branch of that record (Claude Code `gitBranch`), likewise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// The agent's own plan as this turn last wrote it (Claude Code's `TodoWrite`, Codex's
    /// `update_plan`: each call replaces the whole plan), for task memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<Vec<PlanItem>>,
}

/// One item of a plan an agent keeps for itself.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PlanItem {
    /// What is to be done (TodoWrite's `content`, update_plan's `step`).
    pub text: String,
    /// As the agent wrote it, lowercased: `pending`, `in_progress`, `completed` (or another word).
    pub status: String,
    /// TodoWrite's `priority`, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<String>,
}

/// One conversation thread.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Session {
    /// Stable id: the tool's own session id (see FORMATS.md §7.10).
    pub id: String,
    /// For subagent/sidechain sessions, the parent session id.
    pub parent_id: Option<String>,
    /// Format the session was parsed from.
    pub format: Option<Format>,
    /// Working directory when known (the project of its chunks is the repository around it).
    pub cwd: Option<String>,
    /// Git branch when known.
    pub branch: Option<String>,
    /// Title when the source has one.
    pub title: Option<String>,
    /// Turns in conversation order (active branch only for tree formats).
    pub turns: Vec<Turn>,
}

/// Where a session's agent left its own plan: the last plan it wrote in the turns read, and the
/// items of its earlier plans that this last one no longer holds.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SessionPlan {
    /// The session.
    pub session_id: String,
    /// Working directory of the turn that wrote the last plan (else the session's).
    pub cwd: Option<String>,
    /// Milliseconds since the Unix epoch (UTC) of that turn, when known.
    pub timestamp: Option<i64>,
    /// The last plan, whole.
    pub items: Vec<PlanItem>,
    /// Items of earlier plans that the last one left out (the agent rewrote its plan), each as
    /// the latest plan holding it had it.
    pub dropped: Vec<PlanItem>,
}

impl Session {
    /// The session's plan state, if its agent wrote a plan in these turns.
    #[must_use]
    pub fn plan(&self) -> Option<SessionPlan> {
        let mut planned = self.turns.iter().filter(|t| t.plan.is_some());
        let last = planned.next_back()?;
        let items = last.plan.clone().unwrap_or_default();
        let mut dropped: Vec<PlanItem> = Vec::new();
        for item in planned.rev().flat_map(|t| t.plan.iter().flatten()) {
            let known = |i: &PlanItem| i.text == item.text;
            if !items.iter().any(known) && !dropped.iter().any(known) {
                dropped.push(item.clone());
            }
        }
        Some(SessionPlan {
            session_id: self.id.clone(),
            cwd: last.cwd.clone().or_else(|| self.cwd.clone()),
            timestamp: last.timestamp,
            items,
            dropped,
        })
    }
}

/// What parsing one file produced.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ParsedFile {
    /// Sessions found in the file (most files hold one).
    pub sessions: Vec<Session>,
    /// Records skipped, by reason (`invalid_json`, `oversize_line`, …).
    pub skipped: BTreeMap<String, u64>,
    /// Byte offset just after the last complete line; a trailing partial line is left for
    /// the next run.
    pub complete_bytes: u64,
    /// Format the file was parsed as (`None` when nothing was recognised).
    pub format: Option<Format>,
    /// Why no format was recognised, when none was: `binary`, `empty_file`, `oversize_line`
    /// (every line over the limit) or `unknown_format`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unrecognised: Option<String>,
    /// blake3 (32 hex chars) of the file's first `complete_bytes` bytes, set by
    /// [`crate::parse::parse_file`] from the bytes it already read.
    pub content_hash: Option<String>,
    /// The note, when the file is markdown (then `sessions` is empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<Note>,
}

impl ParsedFile {
    /// Count one skipped record under `reason`.
    pub fn skip(&mut self, reason: &str) {
        *self.skipped.entry(reason.to_owned()).or_insert(0) += 1;
    }
}

/// What kind of note a markdown file is; it decides how entries are split and dated
/// (see [`crate::parse::markdown`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NoteKind {
    /// A design, a note, anything else: one section per `#`/`##` heading.
    #[default]
    Note,
    /// A dated journal (`DailyActivity/YYYY-MM-DD.md`, any file named by a date): also one
    /// entry per `HH:MM` heading, timestamped with the file's date and that time.
    Daily,
    /// A list of separate entries (under a `signals/` folder or `type: signal`): one entry
    /// per top-level list item and per `###`-or-deeper heading.
    Signal,
    /// A summary of other notes (`type: weekly|monthly|wisdom|wiki|summary`, written by
    /// memlane's compaction and wiki): sectioned like a note, searched as `source="summary"`
    /// so ranking can keep it below the evidence it points to.
    Summary,
}

/// A markdown note split into sections (lines are numbered from 1).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Note {
    /// Frontmatter `title`, else the first `#` heading, else the file stem.
    pub title: String,
    /// How the note was split.
    pub kind: NoteKind,
    /// Frontmatter fields: strings, lists of strings, nested blocks as raw text.
    pub frontmatter: serde_json::Map<String, serde_json::Value>,
    /// Frontmatter `tags` (without `#`).
    pub tags: Vec<String>,
    /// The note's date (frontmatter `date`, else a `YYYY-MM-DD` file name), ms since epoch.
    pub timestamp: Option<i64>,
    /// Lines taken by the frontmatter block (0 when there is none).
    pub frontmatter_lines: u32,
    /// Lines in the file.
    pub lines: u32,
    /// Sections in file order; together with the frontmatter they cover every line once.
    pub sections: Vec<Section>,
}

/// One heading's section, or one entry of a daily or signal note.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Section {
    /// Context from the root down: the note's title (or current `#` heading), the `##`
    /// heading, the entry heading; rendered as `A › B › C`.
    pub heading: Vec<String>,
    /// First line (1-based).
    pub line_start: u32,
    /// Last line (inclusive).
    pub line_end: u32,
    /// The lines, joined with `\n` (carriage returns removed).
    pub text: String,
    /// Entry time, else the note's date, ms since epoch.
    pub timestamp: Option<i64>,
    /// Inline `#tags` of these lines (outside code).
    pub tags: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(text: &str, status: &str) -> PlanItem {
        PlanItem {
            text: text.into(),
            status: status.into(),
            priority: None,
        }
    }

    #[test]
    fn a_sessions_plan_is_its_last_with_what_earlier_ones_dropped() {
        let planned = |plan: Vec<PlanItem>, ts: i64| Turn {
            role: Role::Assistant,
            text: "[tool TodoWrite]".into(),
            timestamp: Some(ts),
            plan: Some(plan),
            ..Turn::default()
        };
        let session = Session {
            id: "s".into(),
            cwd: Some("/w".into()),
            turns: vec![
                planned(vec![item("a", "pending"), item("b", "pending")], 1),
                planned(vec![item("b", "completed"), item("c", "pending")], 2),
                Turn::default(),
                planned(vec![item("c", "in_progress")], 3),
            ],
            ..Session::default()
        };
        let plan = session.plan().unwrap();
        assert_eq!(plan.items, [item("c", "in_progress")]);
        assert_eq!(plan.timestamp, Some(3));
        assert_eq!(plan.cwd.as_deref(), Some("/w"));
        // Each dropped item as the latest plan holding it had it: b done, a never done.
        assert_eq!(plan.dropped, [item("b", "completed"), item("a", "pending")]);
        assert_eq!(Session::default().plan(), None);
    }
}
