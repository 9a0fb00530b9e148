//! Cursor agent transcripts (FORMATS.md §3.2): `agent-transcripts/<uuid>/<uuid>.jsonl`, one
//! `{"role", "message": {"content": [blocks]}}` per line plus `{"type": "turn_ended"}`
//! markers. There are no timestamps, ids, tool results, models or tokens in the file: the
//! session id is the file stem and turns are undated (the file's modification time would
//! re-date every earlier turn whenever a line is appended).

use std::path::Path;

use serde_json::Value;

use crate::model::{Format, ParsedFile, Role, Session};

use super::clean;
use super::lines::{self, LineSink};
use super::turns::{Piece, TurnBuilder};

/// Cursor's placeholder for withheld assistant text.
const REDACTED: &str = "[REDACTED]";

/// What the user typed: the inside of `<user_query>…</user_query>` when present (Cursor puts
/// attached files, rules and environment blocks around it), else the whole text.
fn user_query(text: &str) -> &str {
    const OPEN: &str = "<user_query>";
    const CLOSE: &str = "</user_query>";
    let Some(start) = text.find(OPEN).map(|i| i + OPEN.len()) else {
        return text;
    };
    let end = text[start..].find(CLOSE).map_or(text.len(), |i| start + i);
    &text[start..end]
}

#[derive(Default)]
struct Sink {
    b: TurnBuilder,
}

impl Sink {
    fn take(&mut self, v: &Value) {
        let Some(o) = v.as_object() else { return };
        if o.get("type").and_then(Value::as_str) == Some("turn_ended") {
            if let Some(err) = o.get("error").filter(|e| !e.is_null()) {
                let text = clean::value_text(err);
                let text = if text.is_empty() {
                    err.to_string()
                } else {
                    text
                };
                self.b.tool_result(&clean::render_result(&text), true, None);
            }
            return;
        }
        let blocks = o
            .get("message")
            .and_then(|m| m.get("content"))
            .unwrap_or(&Value::Null);
        match o.get("role").and_then(Value::as_str) {
            Some("user") => {
                let text = clean::value_text(blocks);
                self.b
                    .push(Role::User, clean::clean_text(user_query(&text)), None, None);
            }
            Some("assistant") => {
                let items = match blocks {
                    Value::Array(items) => items.as_slice(),
                    other => std::slice::from_ref(other),
                };
                for block in items {
                    self.block(block);
                }
            }
            _ => {}
        }
    }

    fn block(&mut self, block: &Value) {
        match block.get("type").and_then(Value::as_str) {
            Some("tool_use") => {
                let name = block
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("unknown");
                let input = clean::decode_arguments(block.get("input").unwrap_or(&Value::Null));
                self.b
                    .piece(&Piece::call(name.to_owned(), &input), None, None);
            }
            // Reasoning is not what the agent said.
            Some("thinking" | "redacted_thinking") => {}
            _ => {
                let text = clean::value_text(block);
                if text.trim() != REDACTED {
                    self.b.text(&text, None, None);
                }
            }
        }
    }
}

impl LineSink for Sink {
    fn line(&mut self, line: &[u8]) -> Result<(), serde_json::Error> {
        let v: Value = serde_json::from_slice(line)?;
        self.take(&v);
        Ok(())
    }
}

/// Parse a Cursor agent transcript. A subagent file (`<uuid>/subagents/<id>.jsonl`) becomes
/// session `<uuid>:<id>` with parent `<uuid>`.
pub(crate) fn parse(bytes: &[u8], path: &Path, out: &mut ParsedFile) {
    let mut sink = Sink::default();
    lines::drive(bytes, out, &mut sink);
    let turns = sink.b.finish();
    if turns.is_empty() {
        return;
    }
    let stem = super::claude::stem(path);
    let parent = path
        .parent()
        .filter(|d| d.file_name().is_some_and(|n| n == "subagents"))
        .and_then(Path::parent)
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned());
    out.sessions.push(Session {
        id: parent
            .as_ref()
            .map_or_else(|| stem.clone(), |p| format!("{p}:{stem}")),
        parent_id: parent,
        format: Some(Format::Cursor),
        cwd: None,
        branch: None,
        title: None,
        turns,
    });
}
