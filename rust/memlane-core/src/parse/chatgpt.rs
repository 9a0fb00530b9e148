//! ChatGPT data export (FORMATS.md §4.1): `conversations.json` (or a shard
//! `conversations-NNN.json`) is an array of conversations, each a `mapping` tree of message
//! nodes; a single conversation object is accepted too. Every conversation is one session.
//!
//! Regenerations and edits leave sibling branches: only the branch the user saw is kept, the
//! path from `current_node` to the root (else from the newest message). System messages,
//! hidden ones (`weight: 0`, `is_visually_hidden_from_conversation`), user-editable context
//! and the model's thoughts / reasoning recaps are not conversation. An assistant message
//! addressed to a tool (`recipient` ≠ `all`) is a tool call named after the recipient; a
//! `tool` message is its result.

use std::path::Path;

use serde_json::{Map, Value};

use crate::model::{Format, ParsedFile, Role, Session, Turn};

use super::clean;
use super::document;
use super::tree::{self, Link};
use super::turns::TurnBuilder;

fn s<'a>(o: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    o.get(key).and_then(Value::as_str).filter(|x| !x.is_empty())
}

/// Content types that are the model's private reasoning or UI context, not conversation.
const SKIPPED_CONTENT: [&str; 4] = [
    "thoughts",
    "reasoning_recap",
    "user_editable_context",
    "model_editable_context",
];

/// Text of a message's `content`: `parts` (strings; image pointers become `[image]`, other
/// objects their `text`), else `text`, else `result` (browsing displays).
fn content_text(content: &Map<String, Value>) -> String {
    if let Some(Value::Array(parts)) = content.get("parts") {
        let mut out: Vec<String> = Vec::new();
        for p in parts {
            let kind = p.get("content_type").and_then(Value::as_str).unwrap_or("");
            if clean::is_image_kind(kind) || p.get("asset_pointer").is_some() {
                out.push(clean::IMAGE.to_owned());
            } else {
                out.push(clean::value_text(p));
            }
        }
        out.retain(|t| !t.trim().is_empty());
        return out.join("\n");
    }
    ["text", "result"]
        .iter()
        .find_map(|k| s(content, k))
        .unwrap_or("")
        .to_owned()
}

/// The messages on the active branch, root first.
fn active_messages<'m>(
    mapping: &'m Map<String, Value>,
    current: Option<&str>,
) -> Vec<&'m Map<String, Value>> {
    let nodes: Vec<(&String, &Value)> = mapping.iter().collect();
    let ids: Vec<Option<&str>> = nodes.iter().map(|(k, _)| Some(k.as_str())).collect();
    let links: Vec<Link> = nodes
        .iter()
        .map(|(_, n)| match n.get("parent").and_then(Value::as_str) {
            Some(p) if !p.is_empty() => Link::To(p.to_owned()),
            _ => Link::Root,
        })
        .collect();
    let message = |i: usize| nodes[i].1.get("message").and_then(Value::as_object);
    let created = |i: usize| {
        message(i)
            .and_then(|m| m.get("create_time"))
            .and_then(Value::as_f64)
            .unwrap_or(f64::MIN)
    };
    let leaf = current
        .and_then(|c| nodes.iter().position(|(k, _)| k.as_str() == c))
        .or_else(|| (0..nodes.len()).max_by(|&a, &b| created(a).total_cmp(&created(b))));
    // A mapping is keyed by id, so there is no file order to fall back on: a parent link
    // that points nowhere ends the walk instead.
    let links: Vec<Link> = links
        .into_iter()
        .map(|l| match l {
            Link::To(p) if !mapping.contains_key(&p) => Link::Root,
            other => other,
        })
        .collect();
    let path = if links.iter().all(|l| *l == Link::Root) {
        leaf.into_iter().collect()
    } else {
        tree::active_path(&ids, &links, leaf)
    };
    path.into_iter().filter_map(message).collect()
}

fn hidden(m: &Map<String, Value>) -> bool {
    let meta = m.get("metadata").and_then(Value::as_object);
    m.get("weight").and_then(Value::as_f64) == Some(0.0)
        || meta
            .and_then(|x| x.get("is_visually_hidden_from_conversation"))
            .and_then(Value::as_bool)
            == Some(true)
}

fn render(b: &mut TurnBuilder, m: &Map<String, Value>, fallback_ts: Option<i64>) {
    if hidden(m) {
        return;
    }
    let empty = Map::new();
    let content = m
        .get("content")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let kind = s(content, "content_type").unwrap_or("text");
    if SKIPPED_CONTENT.contains(&kind) {
        return;
    }
    let ts = m
        .get("create_time")
        .and_then(clean::value_ts)
        .or(fallback_ts);
    let id = s(m, "id").map(str::to_owned);
    let author = m.get("author").and_then(Value::as_object).unwrap_or(&empty);
    let text = content_text(content);
    match s(author, "role").unwrap_or("") {
        "user" => {
            let mut files = Vec::new();
            if let Some(Value::Array(att)) = m.get("metadata").and_then(|x| x.get("attachments")) {
                for a in att {
                    if let Some(name) = a.get("name").and_then(Value::as_str) {
                        clean::push_unique(&mut files, name);
                    }
                }
            }
            b.push_full(Turn {
                role: Role::User,
                text: clean::clean_text(&text),
                timestamp: ts,
                files,
                ids: id.into_iter().collect(),
                ..Turn::default()
            });
        }
        "assistant" => {
            match s(m, "recipient").filter(|r| *r != "all") {
                Some(tool) => {
                    let args = clean::decode_arguments(&Value::String(text));
                    let summary = clean::tool_summary(tool, &args);
                    let mut files = Vec::new();
                    clean::tool_files(tool, &args, &mut files);
                    b.tool_call(tool, &summary, &files, ts, None);
                }
                None => b.text(&text, ts, None),
            }
            b.assistant_id(id, ts);
        }
        "tool" => {
            let is_error = kind == "system_error";
            b.tool_result(&clean::render_result(&text), is_error, ts);
            b.assistant_id(id, ts);
        }
        // system (and unknown) authors: instructions and scaffolding.
        _ => {}
    }
}

fn conversation(v: Value, sessions: &mut Vec<Session>, bad: &mut u64) {
    let Value::Object(c) = v else {
        *bad += 1;
        return;
    };
    let Some(mapping) = c.get("mapping").and_then(Value::as_object) else {
        *bad += 1;
        return;
    };
    let Some(id) = s(&c, "id").or_else(|| s(&c, "conversation_id")) else {
        *bad += 1;
        return;
    };
    let created = c.get("create_time").and_then(clean::value_ts);
    let mut b = TurnBuilder::default();
    for m in active_messages(mapping, s(&c, "current_node")) {
        render(&mut b, m, created);
    }
    let turns = b.finish();
    if !turns.is_empty() {
        sessions.push(Session {
            id: id.to_owned(),
            parent_id: None,
            format: Some(Format::Chatgpt),
            cwd: None,
            branch: None,
            title: s(&c, "title").map(str::to_owned),
            turns,
        });
    }
}

/// Parse a ChatGPT export file (an array of conversations, or one conversation).
pub(crate) fn parse(bytes: &[u8], _path: &Path, out: &mut ParsedFile) {
    document::conversations(bytes, out, conversation);
}
