//! Generic flat lines (FORMATS.md §5): `{"id","role","content","timestamp"}` with roles
//! user / assistant / tool_call / tool_result and the close variants seen in the wild
//! (`ts`, `created_at`, `tool`, `tool_use`, `tool_response`, OpenAI `tool_calls`,
//! `session_id` / `conversation_id`). Tool records attach to the assistant turn; `system`
//! and other roles are skipped. The design's own episodic records need no `content`: a tool
//! call is `{"role": "tool_call", "name", "input"}` (or an assistant record with a
//! `tool_call: {name, input}` object), its result `{"role": "tool_result", "output"}`.

use std::collections::HashMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::model::{Format, ParsedFile, Role, Session, Turn};

use super::clean;
use super::lines::{self, RecordSink};
use super::turns::TurnBuilder;
use super::Anchor;

/// Roles the generic importer understands (also used by detection).
pub(crate) const ROLES: [&str; 15] = [
    "user",
    "human",
    "assistant",
    "ai",
    "model",
    "system",
    "developer",
    "tool",
    "tool_call",
    "tool_use",
    "tool_result",
    "tool_response",
    "function",
    "function_call",
    "scratchpad",
];

/// Roles of a tool call record, and of a tool result record.
const CALL_ROLES: [&str; 3] = ["tool_call", "tool_use", "function_call"];
const RESULT_ROLES: [&str; 4] = ["tool_result", "tool", "tool_response", "function"];
/// Where a tool call names its tool, and passes its arguments.
const NAME_KEYS: [&str; 2] = ["tool_name", "name"];
const ARG_KEYS: [&str; 4] = ["parameters", "arguments", "input", "args"];
/// Where a tool result without `content` holds its text.
const OUTPUT_KEYS: [&str; 2] = ["result", "output"];

/// Whether a record with this `role` carries something to index without a `content` field: a
/// tool call naming its tool and arguments at the top level, or a tool result with its output
/// (the episodic format's tool records). Used by detection.
pub(crate) fn is_contentless_tool_record(o: &Map<String, Value>, role: &str) -> bool {
    if CALL_ROLES.contains(&role) {
        first_str(o, &NAME_KEYS).is_some() && ARG_KEYS.iter().any(|k| o.contains_key(*k))
    } else {
        RESULT_ROLES.contains(&role) && OUTPUT_KEYS.iter().any(|k| o.contains_key(*k))
    }
}

fn s<'a>(o: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    o.get(key).and_then(Value::as_str).filter(|x| !x.is_empty())
}

fn first_str<'a>(o: &'a Map<String, Value>, keys: &[&str]) -> Option<&'a str> {
    keys.iter().find_map(|k| s(o, k))
}

#[derive(Default)]
struct Sink {
    order: Vec<String>,
    sessions: HashMap<String, TurnBuilder>,
    default_id: String,
    /// Offset of the line being parsed.
    offset: usize,
    /// Line offset and raw turn index of the last user record that opened a turn (of
    /// whichever session: only used when the file holds one).
    opened: Option<(usize, usize)>,
}

impl Sink {
    fn builder(&mut self, id: Option<&str>) -> &mut TurnBuilder {
        let id = id.unwrap_or(&self.default_id).to_owned();
        if !self.sessions.contains_key(&id) {
            self.order.push(id.clone());
        }
        self.sessions.entry(id).or_default()
    }
}

fn call(b: &mut TurnBuilder, name: &str, args: &Value, ts: Option<i64>) {
    let summary = clean::tool_summary(name, args);
    let mut files = Vec::new();
    clean::tool_files(name, args, &mut files);
    b.tool_call(name, &summary, &files, ts, None);
}

impl RecordSink for Sink {
    fn record(&mut self, v: &Value) {
        let Some(o) = v.as_object() else { return };
        let Some(role) = s(o, "role") else { return };
        let ts = ["timestamp", "ts", "created_at", "time"]
            .iter()
            .find_map(|k| o.get(*k).and_then(clean::value_ts));
        let rid = o.get("id").and_then(|v| match v {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        });
        let sid = first_str(o, &["session_id", "conversation_id", "sessionId"]).map(str::to_owned);
        let b = self.builder(sid.as_deref());
        let content = o.get("content").unwrap_or(&Value::Null);
        let meta = o.get("metadata").and_then(Value::as_object);
        let mut opened = None;
        match role {
            "user" | "human" => {
                let before = b.len();
                b.push(
                    Role::User,
                    clean::clean_text(&clean::value_text(content)),
                    ts,
                    rid,
                );
                opened = (b.len() > before).then_some(before);
            }
            "assistant" | "ai" | "model" => {
                b.text(&clean::value_text(content), ts, None);
                // OpenAI chat shape: tool_calls[].function.{name, arguments}
                if let Some(Value::Array(calls)) = o.get("tool_calls") {
                    for c in calls {
                        let f = c.get("function").unwrap_or(c);
                        let name = f.get("name").and_then(Value::as_str).unwrap_or("unknown");
                        let args =
                            clean::decode_arguments(f.get("arguments").unwrap_or(&Value::Null));
                        call(b, name, &args, ts);
                    }
                }
                // The episodic format: one call as a `tool_call: {name, input}` object.
                if let Some(tc) = o.get("tool_call").and_then(Value::as_object) {
                    let name = first_str(tc, &NAME_KEYS).unwrap_or("unknown");
                    let args = ARG_KEYS
                        .iter()
                        .find_map(|k| tc.get(*k))
                        .unwrap_or(&Value::Null);
                    call(b, name, &clean::decode_arguments(args), ts);
                }
                b.assistant_id(rid, ts);
            }
            "tool_call" | "tool_use" | "function_call" => {
                let tc = o.get("tool_call").and_then(Value::as_object);
                let name = first_str(o, &NAME_KEYS)
                    .or_else(|| meta.and_then(|m| s(m, "tool_name")))
                    .or_else(|| tc.and_then(|t| first_str(t, &NAME_KEYS)))
                    .unwrap_or("unknown");
                let args = ARG_KEYS
                    .iter()
                    .find_map(|k| o.get(*k).or_else(|| tc.and_then(|t| t.get(*k))))
                    .unwrap_or(content);
                let args = clean::decode_arguments(args);
                call(b, name, &args, ts);
                b.assistant_id(rid, ts);
            }
            "tool_result" | "tool" | "tool_response" | "function" => {
                let tr = o.get("tool_result").and_then(Value::as_object);
                let mut text = clean::value_text(content);
                if text.trim().is_empty() {
                    let alt = OUTPUT_KEYS
                        .iter()
                        .find_map(|k| o.get(*k).or_else(|| tr.and_then(|t| t.get(*k))));
                    text = match alt {
                        Some(Value::String(s)) => s.clone(),
                        Some(v) => {
                            let t = clean::value_text(v);
                            if t.is_empty() && !v.is_null() {
                                v.to_string()
                            } else {
                                t
                            }
                        }
                        None => String::new(),
                    };
                }
                let failed = |m: &Map<String, Value>| {
                    m.get("success").and_then(Value::as_bool) == Some(false)
                };
                let is_error = o.get("is_error").and_then(Value::as_bool).unwrap_or(false)
                    || meta.is_some_and(failed)
                    || tr.is_some_and(failed);
                b.tool_result(&clean::render_result(&text), is_error, ts);
                b.assistant_id(rid, ts);
            }
            // system / developer / scratchpad / unknown roles: not conversation.
            _ => {}
        }
        if let Some(raw) = opened {
            self.opened = Some((self.offset, raw));
        }
    }

    fn line_offset(&mut self) -> &mut usize {
        &mut self.offset
    }
}

/// What parsing a generic file from an [`Anchor`] needs: records of other sessions would
/// make it a file of several.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Continuation {
    session_id: String,
}

/// Turns of OpenAI-style chat messages (`{role, content, tool_calls?}` objects, the shape of
/// a generic line), in order: the message list of a whole-file session (Hermes).
pub(crate) fn message_turns(msgs: &[Value]) -> Vec<Turn> {
    let mut sink = Sink::default();
    for m in msgs {
        sink.record(m);
    }
    let mut turns = Vec::new();
    for id in std::mem::take(&mut sink.order) {
        if let Some(b) = sink.sessions.remove(&id) {
            turns.extend(b.finish());
        }
    }
    turns
}

/// Parse a generic role/content JSONL file; `Some` when it holds one session, from whose last
/// human turn on a later append can be parsed alone.
pub(crate) fn parse(bytes: &[u8], path: &Path, out: &mut ParsedFile) -> Option<Anchor> {
    let mut sink = Sink {
        default_id: super::claude::stem(path),
        ..Sink::default()
    };
    lines::drive(bytes, out, &mut sink);
    finish(sink, out)
}

/// Parse `region`, a generic file from an earlier [`Anchor`] on: its session's turns from
/// the anchor's turn on, and the next anchor; `None` when a record of another session
/// appears (the caller then parses the whole file).
pub(crate) fn resume(
    region: &[u8],
    path: &Path,
    state: &Continuation,
    out: &mut ParsedFile,
) -> Option<Anchor> {
    let mut sink = Sink {
        default_id: super::claude::stem(path),
        ..Sink::default()
    };
    lines::drive(region, out, &mut sink);
    if sink.order != [state.session_id.as_str()] {
        return None;
    }
    finish(sink, out)
}

fn finish(mut sink: Sink, out: &mut ParsedFile) -> Option<Anchor> {
    let opened = sink.opened.filter(|_| sink.order.len() == 1);
    let mut anchor = None;
    for id in std::mem::take(&mut sink.order) {
        let Some(b) = sink.sessions.remove(&id) else {
            continue;
        };
        let turns = match opened {
            Some((offset, raw)) => {
                let (turns, turn_base) = b.finish_tracking(raw);
                anchor = Some(Anchor {
                    offset,
                    turn_base,
                    state: super::Continuation::Generic(Continuation {
                        session_id: id.clone(),
                    }),
                });
                turns
            }
            None => b.finish(),
        };
        if !turns.is_empty() {
            out.sessions.push(Session {
                id,
                parent_id: None,
                format: Some(Format::Generic),
                cwd: None,
                branch: None,
                title: None,
                turns,
            });
        }
    }
    anchor
}
