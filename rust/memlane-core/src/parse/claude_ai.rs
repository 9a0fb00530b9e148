//! Claude.ai data export (FORMATS.md §4.2): `conversations.json` is an array of
//! conversations `{uuid, name, created_at, chat_messages: [...]}` (one object is accepted
//! too); every conversation is one session.
//!
//! A message's `content[]` blocks are preferred over its flattened `text`: `text` blocks are
//! the prose, `tool_use` / `tool_result` blocks render as tool lines, `thinking` is dropped.
//! When the blocks yield nothing (older exports, unknown block types) the message `text` is
//! used. Uploaded files are named in `files` / `attachments`; an attachment's
//! `extracted_content` (the pasted file text) is kept, capped, with the user's turn. When the
//! messages carry `parent_message_uuid` links, only the branch ending at the newest message
//! (or `current_leaf_message_uuid`) is kept.

use std::path::Path;

use serde_json::{Map, Value};

use crate::model::{Format, ParsedFile, Role, Session, Turn};

use super::clean;
use super::document;
use super::tree::{self, Link};
use super::turns::{Piece, TurnBuilder};

fn s<'a>(o: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    o.get(key).and_then(Value::as_str).filter(|x| !x.is_empty())
}

/// `created_at` as written (`…+00:00`, no zone, or — in the corpus sample — a dangling `+`).
fn ts(m: &Map<String, Value>) -> Option<i64> {
    let raw = s(m, "created_at")?;
    clean::parse_ts_str(raw).or_else(|| clean::parse_ts_str(raw.trim_end_matches(['+', '-'])))
}

/// Pieces of a message's `content[]` blocks, in order.
fn pieces(m: &Map<String, Value>) -> Vec<Piece> {
    let mut out = Vec::new();
    let Some(Value::Array(blocks)) = m.get("content") else {
        return out;
    };
    for b in blocks.iter().filter_map(Value::as_object) {
        match s(b, "type") {
            Some("text") => {
                if let Some(t) = s(b, "text") {
                    out.push(Piece::Text(t.to_owned()));
                }
            }
            Some("tool_use") => {
                let name = s(b, "name").unwrap_or("unknown").to_owned();
                out.push(Piece::call(name, b.get("input").unwrap_or(&Value::Null)));
            }
            Some("tool_result") => {
                let text = clean::value_text(b.get("content").unwrap_or(&Value::Null));
                let is_error = b.get("is_error").and_then(Value::as_bool) == Some(true);
                out.push(Piece::Result {
                    text: clean::render_result(&text),
                    is_error,
                });
            }
            // thinking, token budgets, unknown block types: not what was said.
            _ => {}
        }
    }
    out
}

/// File names of a message's uploads, and the capped text of those that carry it.
fn uploads(m: &Map<String, Value>) -> (Vec<String>, Vec<String>) {
    let (mut names, mut texts) = (Vec::new(), Vec::new());
    for key in ["files", "attachments"] {
        let Some(Value::Array(items)) = m.get(key) else {
            continue;
        };
        for f in items.iter().filter_map(Value::as_object) {
            let name = s(f, "file_name");
            if let Some(n) = name {
                clean::push_unique(&mut names, n);
            }
            if let Some(body) = s(f, "extracted_content") {
                let label = name.unwrap_or("attachment");
                texts.push(format!(
                    "[attachment {label}] {}",
                    clean::render_result(body)
                ));
            }
        }
    }
    (names, texts)
}

fn render(b: &mut TurnBuilder, m: &Map<String, Value>) {
    let at = ts(m);
    let id = s(m, "uuid").map(str::to_owned);
    let pieces = pieces(m);
    let flat = s(m, "text").unwrap_or("");
    match s(m, "sender") {
        Some("human" | "user") => {
            let said: Vec<&str> = pieces
                .iter()
                .filter_map(|p| match p {
                    Piece::Text(t) => Some(t.as_str()),
                    _ => None,
                })
                .collect();
            let said = if said.is_empty() {
                flat.to_owned()
            } else {
                said.join("\n")
            };
            let (files, attached) = uploads(m);
            let mut text = clean::clean_text(&said);
            for a in attached {
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(&a);
            }
            b.push_full(Turn {
                role: Role::User,
                text,
                timestamp: at,
                files,
                ids: id.into_iter().collect(),
                ..Turn::default()
            });
        }
        Some("assistant") => {
            let has_text = pieces.iter().any(|p| matches!(p, Piece::Text(_)));
            if !has_text {
                b.text(flat, at, None);
            }
            for p in &pieces {
                b.piece(p, at, None);
            }
            b.assistant_id(id, at);
            let (files, _) = uploads(m);
            b.files(&files, at);
        }
        _ => {}
    }
}

fn conversation(v: Value, sessions: &mut Vec<Session>, bad: &mut u64) {
    let Value::Object(c) = v else {
        *bad += 1;
        return;
    };
    let (Some(id), Some(Value::Array(msgs))) = (s(&c, "uuid"), c.get("chat_messages")) else {
        *bad += 1;
        return;
    };
    let msgs: Vec<&Map<String, Value>> = msgs.iter().filter_map(Value::as_object).collect();
    let ids: Vec<Option<&str>> = msgs.iter().map(|m| s(m, "uuid")).collect();
    let links: Vec<Link> = msgs
        .iter()
        // The first message's parent is a root sentinel id: a link to an unknown id falls
        // back to the previous message, and there is none before the first.
        .map(|m| match s(m, "parent_message_uuid") {
            Some(p) => Link::To(p.to_owned()),
            None => Link::Root,
        })
        .collect();
    let leaf = s(&c, "current_leaf_message_uuid")
        .and_then(|l| ids.iter().position(|i| *i == Some(l)))
        .or_else(|| msgs.len().checked_sub(1));
    let mut b = TurnBuilder::default();
    for i in tree::active_path(&ids, &links, leaf) {
        render(&mut b, msgs[i]);
    }
    let turns = b.finish();
    if !turns.is_empty() {
        sessions.push(Session {
            id: id.to_owned(),
            parent_id: None,
            format: Some(Format::ClaudeAi),
            cwd: None,
            branch: None,
            title: s(&c, "name").map(str::to_owned),
            turns,
        });
    }
}

/// Parse a Claude.ai export file (an array of conversations, or one conversation).
pub(crate) fn parse(bytes: &[u8], _path: &Path, out: &mut ParsedFile) {
    document::conversations(bytes, out, conversation);
}
