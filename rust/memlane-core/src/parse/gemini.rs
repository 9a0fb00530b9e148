//! Gemini CLI (FORMATS.md §3.1): the JSONL upsert log (≥0.39) and the legacy whole-file JSON
//! session (≤0.38).
//!
//! The JSONL log is replayed before anything is rendered: the same message `id` is rewritten
//! in full whenever its tool calls or tokens change (last write wins, in its first position),
//! `{"$rewindTo": id}` drops that message and everything after it (an unknown id clears the
//! list), and `{"$set": {"messages": [...]}}` replaces the whole list.

use std::collections::HashMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::model::{Format, ParsedFile, Role, Session};

use super::clean;
use super::lines::{self, LineSink};
use super::turns::TurnBuilder;
use super::Anchor;

fn s<'a>(o: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    o.get(key).and_then(Value::as_str).filter(|x| !x.is_empty())
}

#[derive(Default)]
struct Log<'k> {
    session_id: Option<String>,
    subagent: bool,
    title: Option<String>,
    msgs: Vec<Value>,
    index: HashMap<String, usize>,
    /// Offset of the line being replayed.
    offset: usize,
    /// (list position, line offset) of messages with an id that were appended at the end of
    /// the list by that line and whose predecessors no later line touched: a replay from
    /// that line rebuilds the list from that position on. Positions increase.
    marks: Vec<(usize, usize)>,
    /// Replaying a region after an anchor: ids of the messages before it (fingerprints).
    before: Option<&'k [u32]>,
    /// A line of the region touched the messages before the anchor.
    escaped: bool,
    /// Messages a rewind or a `$set` took off the list (reported as `abandoned_branch`).
    dropped: u64,
}

impl Log<'_> {
    /// A line changed the list from position `at` on.
    fn touched(&mut self, at: usize) {
        while self.marks.last().is_some_and(|m| m.0 >= at) {
            self.marks.pop();
        }
    }

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
                Some(&i) if i < self.msgs.len() => {
                    // Rewriting a message leaves the mark of its own append.
                    self.touched(i + 1);
                    self.msgs[i] = m;
                }
                _ => {
                    if self.before.is_some_and(|k| super::is_known(k, &id)) {
                        self.escaped = true;
                    }
                    self.marks.push((self.msgs.len(), self.offset));
                    self.index.insert(id, self.msgs.len());
                    self.msgs.push(m);
                }
            },
            None => self.msgs.push(m),
        }
    }

    fn rewind(&mut self, id: &str) {
        if self.before.is_some() && !self.index.contains_key(id) {
            self.escaped = true;
        }
        let at = self
            .index
            .get(id)
            .copied()
            .unwrap_or(0)
            .min(self.msgs.len());
        self.touched(at);
        self.dropped += (self.msgs.len() - at) as u64;
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
                self.escaped |= self.before.is_some();
                self.touched(0);
                self.dropped += self.msgs.len() as u64;
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
                self.escaped |= self.before.is_some();
                self.session_id = Some(sid.to_owned());
                self.subagent = s(&o, "kind") == Some("subagent");
            }
            if let Some(t) = s(&o, "summary") {
                self.title = Some(t.to_owned());
            }
        }
    }
}

impl LineSink for Log<'_> {
    fn line(&mut self, line: &[u8]) -> Result<(), serde_json::Error> {
        let v: Value = serde_json::from_slice(line)?;
        self.take(v);
        Ok(())
    }

    fn line_start(&mut self, offset: usize) {
        self.offset = offset;
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

/// Render one message; whether it opened a human turn.
fn render(b: &mut TurnBuilder, m: &Value) -> bool {
    let before = b.len();
    let Some(m) = m.as_object() else {
        return false;
    };
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
            return b.len() > before;
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
    false
}

/// What parsing a JSONL log from an [`Anchor`] needs to know about the lines before it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Continuation {
    session_id: String,
    parent_id: Option<String>,
    /// The metadata line was read (a later one changes nothing).
    has_meta: bool,
    /// Sorted fingerprints of the ids of the messages before the anchor: a later line that
    /// rewrites or rewinds to one changes turns the resume keeps.
    before: Vec<u32>,
}

/// Push the session of `log`'s messages; the anchor at the last human turn a replay from
/// its line rebuilds alone, if any.
fn session(
    log: &Log<'_>,
    id: String,
    parent_id: Option<String>,
    known: Vec<u32>,
    out: &mut ParsedFile,
) -> Option<Anchor> {
    if log.dropped > 0 {
        *out.skipped
            .entry(super::tree::ABANDONED.to_owned())
            .or_insert(0) += log.dropped;
    }
    let mut b = TurnBuilder::default();
    let mut opened = None;
    for (i, m) in log.msgs.iter().enumerate() {
        let before = b.len();
        if render(&mut b, m) {
            if let Ok(k) = log.marks.binary_search_by_key(&i, |m| m.0) {
                opened = Some((i, log.marks[k].1, before));
            }
        }
    }
    let opened = opened.map(|(i, offset, raw)| {
        let ids = log.msgs[..i]
            .iter()
            .filter_map(|m| m.get("id").and_then(Value::as_str));
        let state = Continuation {
            session_id: id.clone(),
            parent_id: parent_id.clone(),
            has_meta: log.session_id.is_some(),
            before: super::fingerprints(ids, known),
        };
        (offset, raw, super::Continuation::Gemini(state))
    });
    super::finish_session(out, b, opened, |turns| Session {
        id,
        parent_id,
        format: Some(Format::Gemini),
        cwd: None,
        branch: None,
        title: log.title.clone(),
        turns,
    })
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

/// Parse a Gemini CLI session (either layout); for the JSONL log, `Some` with where a later
/// append can be parsed from.
pub(crate) fn parse(bytes: &[u8], path: &Path, out: &mut ParsedFile) -> Option<Anchor> {
    if let Some(o) = legacy(bytes) {
        out.complete_bytes = bytes.len() as u64;
        let id = s(&o, "sessionId").map_or_else(|| super::claude::stem(path), str::to_owned);
        let title = s(&o, "summary").map(str::to_owned);
        if let Some(Value::Array(msgs)) = o.get("messages") {
            let mut b = TurnBuilder::default();
            for m in msgs {
                render(&mut b, m);
            }
            let turns = b.finish();
            if !turns.is_empty() {
                out.sessions.push(Session {
                    id,
                    parent_id: None,
                    format: Some(Format::Gemini),
                    cwd: None,
                    branch: None,
                    title,
                    turns,
                });
            }
        }
        return None;
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
    session(&log, id, parent, Vec::new(), out)
}

/// Parse `region`, a JSONL log from an earlier [`Anchor`] on: the session's turns from the
/// anchor's turn on, and the next anchor. `None` when a line reaches before the anchor:
/// rewrites or rewinds to an earlier message, replaces the whole list, or names the session.
pub(crate) fn resume(region: &[u8], state: &Continuation, out: &mut ParsedFile) -> Option<Anchor> {
    let mut log = Log {
        session_id: state.has_meta.then(|| state.session_id.clone()),
        before: Some(&state.before),
        ..Log::default()
    };
    lines::drive(region, out, &mut log);
    if log.escaped {
        return None;
    }
    let known = state.before.clone();
    session(
        &log,
        state.session_id.clone(),
        state.parent_id.clone(),
        known,
        out,
    )
}
