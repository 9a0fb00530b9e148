//! GitHub Copilot CLI session events (FORMATS.md §3.9): `~/.copilot/session-state/<id>/
//! events.jsonl` (legacy flat `<id>.jsonl`), one `{type, data, id, timestamp, parentId}`
//! event per line with dotted types (`session.start`, `user.message`, `assistant.message`,
//! `tool.execution_start`, `tool.execution_complete`, …).
//!
//! Events form a `parentId` tree; the active branch is the path from the last event back to
//! the root ([`super::tree`]). A tool call is announced twice — in
//! `assistant.message.toolRequests` and by `tool.execution_start` — and rendered once.

use std::collections::HashSet;
use std::path::Path;

use serde_json::{Map, Value};

use crate::model::{Format, ParsedFile, Role, Session};

use super::clean;
use super::lines::{self, LineSink};
use super::tree::{self, Link};
use super::turns::{Piece, TurnBuilder};

fn s<'a>(o: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    o.get(key).and_then(Value::as_str).filter(|x| !x.is_empty())
}

#[derive(Default)]
struct Sink {
    events: Vec<Map<String, Value>>,
}

impl LineSink for Sink {
    fn line(&mut self, line: &[u8]) -> Result<(), serde_json::Error> {
        if let Value::Object(o) = serde_json::from_slice(line)? {
            if o.get("type").and_then(Value::as_str).is_some() {
                self.events.push(o);
            }
        }
        Ok(())
    }
}

#[derive(Default)]
struct Render {
    b: TurnBuilder,
    calls: HashSet<String>,
    session_id: Option<String>,
    cwd: Option<String>,
    /// `session.start.data.context.branch`.
    branch: Option<String>,
}

impl Render {
    fn call(&mut self, call_id: Option<&str>, name: &str, args: &Value, ts: Option<i64>) {
        if let Some(id) = call_id {
            if !self.calls.insert(id.to_owned()) {
                return;
            }
        }
        let args = clean::decode_arguments(args);
        self.b.piece(&Piece::call(name.to_owned(), &args), ts, None);
    }

    fn event(&mut self, e: &Map<String, Value>) {
        let ts = e.get("timestamp").and_then(clean::value_ts);
        let id = s(e, "id").map(str::to_owned);
        let empty = Map::new();
        let data = e.get("data").and_then(Value::as_object).unwrap_or(&empty);
        match s(e, "type").unwrap_or("") {
            "session.start" => {
                self.session_id = self
                    .session_id
                    .take()
                    .or_else(|| s(data, "sessionId").map(str::to_owned));
                let ctx = data.get("context").and_then(Value::as_object);
                self.cwd = self
                    .cwd
                    .take()
                    .or_else(|| ctx.and_then(|c| s(c, "cwd")).map(str::to_owned));
                self.branch = self
                    .branch
                    .take()
                    .or_else(|| ctx.and_then(|c| s(c, "branch")).map(str::to_owned));
            }
            "user.message" => {
                let text = clean::value_text(data.get("content").unwrap_or(&Value::Null));
                self.b.push(Role::User, clean::clean_text(&text), ts, id);
            }
            "assistant.message" => {
                let text = clean::value_text(data.get("content").unwrap_or(&Value::Null));
                self.b.text(&text, ts, None);
                if let Some(Value::Array(reqs)) = data.get("toolRequests") {
                    for r in reqs.iter().filter_map(Value::as_object) {
                        let name = s(r, "name").unwrap_or("unknown");
                        let args = r.get("arguments").unwrap_or(&Value::Null);
                        self.call(s(r, "toolCallId"), name, args, ts);
                    }
                }
                self.b.assistant_id(id, ts);
            }
            "tool.execution_start" => {
                let name = s(data, "toolName").unwrap_or("unknown");
                let args = data.get("arguments").unwrap_or(&Value::Null);
                self.call(s(data, "toolCallId"), name, args, ts);
            }
            "tool.execution_complete" => {
                let result = data.get("result").unwrap_or(&Value::Null);
                let mut text = clean::value_text(result);
                if text.is_empty() {
                    let err = data.get("error").unwrap_or(&Value::Null);
                    text = match err.get("message").and_then(Value::as_str) {
                        Some(m) => m.to_owned(),
                        None => clean::value_text(err),
                    };
                }
                let failed = data.get("success").and_then(Value::as_bool) == Some(false);
                self.b.tool_result(&clean::render_result(&text), failed, ts);
            }
            // turn_start / turn_end, session.info, model changes, …: bookkeeping.
            _ => {}
        }
    }
}

/// Session id when `session.start` does not name one: the `<id>` directory of
/// `<id>/events.jsonl`, else the file stem (legacy `<id>.jsonl`).
fn id_from_path(path: &Path) -> String {
    let stem = super::claude::stem(path);
    if stem == "events" {
        if let Some(dir) = path.parent().and_then(Path::file_name) {
            return dir.to_string_lossy().into_owned();
        }
    }
    stem
}

/// Whether an event adds to the conversation (only such an event may be the leaf of the
/// active branch).
fn carries_content(e: &Map<String, Value>) -> bool {
    let data = e.get("data");
    let has = |key: &str| {
        data.and_then(|d| d.get(key))
            .is_some_and(|v| !clean::value_text(v).trim().is_empty())
    };
    match s(e, "type").unwrap_or("") {
        "user.message" => has("content"),
        "assistant.message" => {
            has("content")
                || data
                    .and_then(|d| d.get("toolRequests"))
                    .and_then(Value::as_array)
                    .is_some_and(|a| !a.is_empty())
        }
        "tool.execution_start" | "tool.execution_complete" => true,
        _ => false,
    }
}

/// Parse a Copilot CLI events file.
pub(crate) fn parse(bytes: &[u8], path: &Path, out: &mut ParsedFile) {
    let mut sink = Sink::default();
    lines::drive(bytes, out, &mut sink);
    let ids: Vec<Option<&str>> = sink.events.iter().map(|e| s(e, "id")).collect();
    let links: Vec<Link> = sink
        .events
        .iter()
        .map(|e| match e.get("parentId") {
            Some(Value::String(p)) if !p.is_empty() => Link::To(p.clone()),
            _ => Link::Root,
        })
        .collect();
    let content: Vec<bool> = sink.events.iter().map(carries_content).collect();
    let mut r = Render::default();
    let Some(branch) = tree::active_branch(&ids, &links, &content, None) else {
        return;
    };
    if branch.abandoned > 0 {
        *out.skipped.entry(tree::ABANDONED.to_owned()).or_insert(0) += branch.abandoned;
    }
    for i in branch.path {
        r.event(&sink.events[i]);
    }
    // session.start may sit off the active branch (it is the root, so normally it is on it).
    if r.session_id.is_none() {
        r.session_id = sink
            .events
            .iter()
            .find(|e| s(e, "type") == Some("session.start"))
            .and_then(|e| e.get("data")?.get("sessionId")?.as_str().map(str::to_owned));
    }
    let turns = r.b.finish();
    if turns.is_empty() {
        return;
    }
    out.sessions.push(Session {
        id: r.session_id.unwrap_or_else(|| id_from_path(path)),
        parent_id: None,
        format: Some(Format::Copilot),
        cwd: r.cwd,
        branch: r.branch,
        title: None,
        turns,
    });
}
