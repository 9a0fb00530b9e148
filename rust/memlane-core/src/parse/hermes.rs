//! Hermes Agent legacy sessions (FORMATS.md §3.5): `~/.hermes/sessions/session_*.json`, one
//! object `{session_id, model, platform, session_start, cwd?, messages: [...]}` whose
//! messages are OpenAI chat messages (`role`, `content`, `tool_calls`, `tool_call_id`). The
//! messages are read like generic lines; they carry no times, so turns without one get the
//! session's `session_start`. (Current Hermes keeps sessions in SQLite, not read here.)

use std::path::Path;

use serde_json::Value;

use crate::model::{Format, ParsedFile, Session};

use super::clean;
use super::document;
use super::generic;

fn session(v: Value, path: &Path) -> Option<Session> {
    let Value::Object(o) = v else { return None };
    let Some(Value::Array(msgs)) = o.get("messages") else {
        return None;
    };
    let text = |k: &str| o.get(k).and_then(Value::as_str).filter(|x| !x.is_empty());
    let start = o.get("session_start").and_then(clean::value_ts);
    let mut turns = generic::message_turns(msgs);
    for t in &mut turns {
        t.timestamp = t.timestamp.or(start);
    }
    Some(Session {
        id: text("session_id").map_or_else(|| super::claude::stem(path), str::to_owned),
        parent_id: None,
        format: Some(Format::Hermes),
        cwd: text("cwd").map(str::to_owned),
        branch: None,
        title: text("title").map(str::to_owned),
        turns,
    })
}

/// Parse a Hermes legacy session file.
pub(crate) fn parse(bytes: &[u8], path: &Path, out: &mut ParsedFile) {
    let found = document::stream(
        bytes,
        out,
        Vec::new,
        |found: &mut Vec<Option<Session>>, v| found.push(session(v, path)),
    );
    for s in found {
        match s {
            Some(s) if !s.turns.is_empty() => out.sessions.push(s),
            Some(_) => {}
            None => out.skip("malformed_session"),
        }
    }
}
