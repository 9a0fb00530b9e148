//! Slack export channel-day files (FORMATS.md §4.3): `<channel>/<YYYY-MM-DD>.json`, an array
//! of `{type: "message", user, text (mrkdwn), ts, subtype?, files?, user_profile?}`. One file
//! is one session, `<channel>/<date>`.
//!
//! Slack has no assistant, only people. Every message is one turn named after its author
//! (`speaker`: profile display name, else real name, else the user id). Roles only decide
//! how turns are grouped into chunks: a message that opens an exchange — the day's first, or
//! one written more than [`EXCHANGE_GAP_MS`] after the previous message — is a `user` turn,
//! and the messages that answer it within the exchange are `assistant` turns. A burst of
//! conversation thus stays together (long bursts are packed into budget-sized chunks) and
//! unrelated talk hours apart does not (the LoCoMo parser maps its two human speakers the
//! same way). Join/leave notices are dropped; mrkdwn links and mentions are decoded.

use std::path::Path;

use serde_json::{Map, Value};

use crate::model::{Format, ParsedFile, Role, Session, Turn};

use super::clean;
use super::document;

/// A pause longer than this starts a new exchange (30 minutes).
const EXCHANGE_GAP_MS: i64 = 30 * 60 * 1000;

/// Subtypes that are membership notices, not conversation.
const NOTICES: [&str; 4] = ["channel_join", "channel_leave", "group_join", "group_leave"];

fn s<'a>(o: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    o.get(key).and_then(Value::as_str).filter(|x| !x.is_empty())
}

/// Plain text of Slack mrkdwn: `<@U1|ann>` → `@ann`, `<#C1|general>` → `#general`,
/// `<!here>` → `@here`, `<url|label>` → `label (url)`, `<url>` → `url`, then the three HTML
/// entities Slack escapes.
fn mrkdwn(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('<') {
        let Some(close) = rest[open..].find('>').map(|c| open + c) else {
            break;
        };
        out.push_str(&rest[..open]);
        let inner = &rest[open + 1..close];
        let (target, label) = match inner.split_once('|') {
            Some((t, l)) => (t, Some(l)),
            None => (inner, None),
        };
        if let Some(id) = target.strip_prefix('@') {
            out.push('@');
            out.push_str(label.unwrap_or(id));
        } else if let Some(id) = target.strip_prefix('#') {
            out.push('#');
            out.push_str(label.unwrap_or(id));
        } else if let Some(special) = target.strip_prefix('!') {
            match label {
                Some(l) => out.push_str(l),
                None => {
                    out.push('@');
                    out.push_str(special);
                }
            }
        } else {
            match label {
                Some(l) if l != target => {
                    out.push_str(l);
                    out.push_str(" (");
                    out.push_str(target);
                    out.push(')');
                }
                _ => out.push_str(target),
            }
        }
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

fn speaker(m: &Map<String, Value>) -> Option<String> {
    let profile = m.get("user_profile").and_then(Value::as_object);
    profile
        .and_then(|p| s(p, "display_name").or_else(|| s(p, "real_name")))
        .or_else(|| s(m, "user_name"))
        .or_else(|| s(m, "username"))
        .or_else(|| s(m, "user"))
        .or_else(|| s(m, "bot_id"))
        .map(str::to_owned)
}

/// The message text; for integrations that post only attachments, their text.
fn message_text(m: &Map<String, Value>) -> String {
    let mut text = mrkdwn(s(m, "text").unwrap_or(""));
    if text.trim().is_empty() {
        if let Some(Value::Array(att)) = m.get("attachments") {
            let parts: Vec<String> = att
                .iter()
                .filter_map(|a| {
                    a.get("text")
                        .or_else(|| a.get("fallback"))
                        .and_then(Value::as_str)
                })
                .map(mrkdwn)
                .collect();
            text = parts.join("\n");
        }
    }
    text.trim().to_owned()
}

#[derive(Default)]
struct Day {
    turns: Vec<Turn>,
    last_ts: Option<i64>,
    bad: u64,
}

impl Day {
    fn take(&mut self, v: Value) {
        let Value::Object(m) = v else {
            self.bad += 1;
            return;
        };
        if s(&m, "type").is_some_and(|t| t != "message")
            || s(&m, "subtype").is_some_and(|t| NOTICES.contains(&t))
        {
            return;
        }
        let ts = m.get("ts").and_then(clean::value_ts);
        let mut files = Vec::new();
        if let Some(Value::Array(fs)) = m.get("files") {
            for f in fs {
                if let Some(n) = f.get("name").and_then(Value::as_str) {
                    clean::push_unique(&mut files, n);
                }
            }
        }
        let mut text = message_text(&m);
        if text.is_empty() && !files.is_empty() {
            text = format!("[shared {}]", files.join(", "));
        }
        if text.is_empty() {
            return;
        }
        let opens = match (self.last_ts, ts) {
            (Some(prev), Some(now)) => now - prev > EXCHANGE_GAP_MS,
            (None, _) => self.turns.is_empty(),
            (Some(_), None) => false,
        };
        if ts.is_some() {
            self.last_ts = ts;
        }
        self.turns.push(Turn {
            role: if opens { Role::User } else { Role::Assistant },
            text,
            timestamp: ts,
            files,
            speaker: speaker(&m),
            ids: s(&m, "ts").map(str::to_owned).into_iter().collect(),
            ..Turn::default()
        });
    }
}

/// Parse one Slack channel-day file.
pub(crate) fn parse(bytes: &[u8], path: &Path, out: &mut ParsedFile) {
    let day = document::stream(bytes, out, Day::default, Day::take);
    if day.bad > 0 {
        *out.skipped.entry("malformed_message".into()).or_insert(0) += day.bad;
    }
    if day.turns.is_empty() {
        return;
    }
    let date = super::claude::stem(path);
    let id = match path.parent().and_then(Path::file_name) {
        Some(channel) => format!("{}/{date}", channel.to_string_lossy()),
        None => date,
    };
    out.sessions.push(Session {
        id,
        parent_id: None,
        format: Some(Format::Slack),
        cwd: None,
        branch: None,
        title: None,
        turns: day.turns,
    });
}
