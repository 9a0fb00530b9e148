//! Gemini CLI (FORMATS.md §3.1): the JSONL upsert log (≥0.39) and the legacy whole-file JSON
//! session (≤0.38).
//!
//! The JSONL log is replayed before anything is rendered: the same message `id` is rewritten
//! in full whenever its tool calls or tokens change (last write wins, in its first position),
//! `{"$rewindTo": id}` drops that message and everything after it (an unknown id clears the
//! list), and `{"$set": {"messages": [...]}}` replaces the whole list.

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Map, Value};

use crate::model::{Format, ParsedFile, Role, Session};

use super::clean;
use super::lines::{self, LineSink};
use super::turns::TurnBuilder;

fn s<'a>(o: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    o.get(key).and_then(Value::as_str).filter(|x| !x.is_empty())
}

#[derive(Default)]
struct Log {
    session_id: Option<String>,
    subagent: bool,
    title: Option<String>,
    msgs: Vec<Value>,
    index: HashMap<String, usize>,
}

impl Log {
    fn reindex(&mut self) {
        self.index.clear();
        for (i, m) in self.msgs.iter().enumerate() {
            if let Some(id) = m.get("id").and_then(Value::as_str) {
                self.index.entry(id.to_owned()).or_insert(i);
            }
        }
    }

    fn upsert(&mut self, m: Value) {
        match m.get("id").and_then(Value::as_str).map(str::to_owned) {
            Some(id) => match self.index.get(&id) {
                Some(&i) if i < self.msgs.len() => self.msgs[i] = m,
                _ => {
                    self.index.insert(id, self.msgs.len());
                    self.msgs.push(m);
                }
            },
            None => self.msgs.push(m),
        }
    }

    fn rewind(&mut self, id: &str) {
        let at = self
            .index
            .get(id)
            .copied()
            .unwrap_or(0)
            .min(self.msgs.len());
        for m in self.msgs.drain(at..) {
            if let Some(id) = m.get("id").and_then(Value::as_str) {
                self.index.remove(id);
            }
        }
    }

    fn take(&mut self, v: Value) {
        let Value::Object(o) = v else { return };
        if let Some(id) = o.get("$rewindTo") {
            self.rewind(id.as_str().unwrap_or(""));
            return;
        }
        if let Some(Value::Object(set)) = o.get("$set") {
            if let Some(Value::Array(list)) = set.get("messages") {
                self.msgs.clone_from(list);
                self.reindex();
            }
            if let Some(t) = s(set, "summary") {
                self.title = Some(t.to_owned());
            }
            return;
        }
        if o.contains_key("type") {
            self.upsert(Value::Object(o));
        } else if let Some(sid) = s(&o, "sessionId") {
            // The metadata line (no `type`).
            if self.session_id.is_none() {
                self.session_id = Some(sid.to_owned());
                self.subagent = s(&o, "kind") == Some("subagent");
            }
            if let Some(t) = s(&o, "summary") {
                self.title = Some(t.to_owned());
            }
        }
    }
}

impl LineSink for Log {
    fn line(&mut self, line: &[u8]) -> Result<(), serde_json::Error> {
        let v: Value = serde_json::from_slice(line)?;
        self.take(v);
        Ok(())
    }
}

/// Text of one tool result: `functionResponse.response.output|error|content`, else
/// `resultDisplay`.
fn tool_result_text(call: &Map<String, Value>) -> String {
    let mut parts = Vec::new();
    if let Some(Value::Array(res)) = call.get("result") {
        for r in res {
            let resp = r.get("functionResponse").and_then(|f| f.get("response"));
            match resp {
                Some(Value::Object(o)) => {
                    for key in ["output", "error", "content", "llmContent"] {
                        if let Some(v) = o.get(key) {
                            let t = clean::value_text(v);
                            if !t.is_empty() {
                                parts.push(t);
                                break;
                            }
                        }
                    }
                }
                Some(Value::String(t)) => parts.push(t.clone()),
                _ => {}
            }
        }
    }
    if parts.is_empty() {
        if let Some(d) = s(call, "resultDisplay") {
            parts.push(d.to_owned());
        }
    }
    parts.join("\n")
}

fn render(b: &mut TurnBuilder, m: &Value) {
    let Some(m) = m.as_object() else { return };
    let ts = m.get("timestamp").and_then(clean::value_ts);
    let id = s(m, "id").map(str::to_owned);
    match s(m, "type").unwrap_or("") {
        "user" => {
            // displayContent is what the user typed, without injected context.
            let raw = match m.get("displayContent") {
                Some(d) if !clean::value_text(d).trim().is_empty() => clean::value_text(d),
                _ => clean::value_text(m.get("content").unwrap_or(&Value::Null)),
            };
            b.push(Role::User, clean::clean_text(&raw), ts, id);
        }
        "gemini" | "model" | "assistant" => {
            let text = clean::value_text(m.get("content").unwrap_or(&Value::Null));
            b.text(&text, ts, None);
            if let Some(Value::Array(calls)) = m.get("toolCalls") {
                for c in calls.iter().filter_map(Value::as_object) {
                    let name = s(c, "name").unwrap_or("unknown");
                    let args = clean::decode_arguments(c.get("args").unwrap_or(&Value::Null));
                    let summary = clean::tool_summary(name, &args);
                    let mut files = Vec::new();
                    clean::tool_files(name, &args, &mut files);
                    let cts = c.get("timestamp").and_then(clean::value_ts).or(ts);
                    b.tool_call(name, &summary, &files, cts, None);
                    let res = tool_result_text(c);
                    let is_error = s(c, "status") == Some("error");
                    b.tool_result(&clean::render_result(&res), is_error, cts);
                }
            }
            b.assistant_id(id, ts);
        }
        // info / error / warning: UI notices, not conversation.
        _ => {}
    }
}

fn session(
    id: String,
    parent_id: Option<String>,
    title: Option<String>,
    msgs: &[Value],
    out: &mut ParsedFile,
) {
    let mut b = TurnBuilder::default();
    for m in msgs {
        render(&mut b, m);
    }
    let turns = b.finish();
    if !turns.is_empty() {
        out.sessions.push(Session {
            id,
            parent_id,
            format: Some(Format::Gemini),
            cwd: None,
            title,
            turns,
        });
    }
}

/// A legacy single-document session: `{sessionId, messages: [...]}`.
fn legacy(bytes: &[u8]) -> Option<Map<String, Value>> {
    let first = bytes[lines::bom_len(bytes)..]
        .iter()
        .find(|b| !b.is_ascii_whitespace())?;
    if *first != b'{' {
        return None;
    }
    let v: Value = lines::parse_document(bytes, |b| serde_json::from_slice(b)).ok()?;
    match v {
        Value::Object(o) if matches!(o.get("messages"), Some(Value::Array(_))) => Some(o),
        _ => None,
    }
}

/// Parse a Gemini CLI session (either layout).
pub(crate) fn parse(bytes: &[u8], path: &Path, out: &mut ParsedFile) {
    if let Some(o) = legacy(bytes) {
        out.complete_bytes = bytes.len() as u64;
        let id = s(&o, "sessionId").map_or_else(|| super::claude::stem(path), str::to_owned);
        let title = s(&o, "summary").map(str::to_owned);
        if let Some(Value::Array(msgs)) = o.get("messages") {
            session(id, None, title, msgs, out);
        }
        return;
    }
    let mut log = Log::default();
    lines::drive(bytes, out, &mut log);
    let id = log
        .session_id
        .clone()
        .unwrap_or_else(|| super::claude::stem(path));
    // Subagent recordings live in `chats/<parentSessionId>/<id>.jsonl`.
    let parent = path.parent().filter(|_| log.subagent).and_then(|d| {
        let grand = d.parent()?.file_name()?;
        (grand == "chats").then(|| d.file_name().map(|n| n.to_string_lossy().into_owned()))?
    });
    session(id, parent, log.title.clone(), &log.msgs, out);
}
