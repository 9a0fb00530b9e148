//! Benchmark corpora (FORMATS.md §6): LongMemEval and LoCoMo whole-file JSON.
//!
//! LongMemEval files reach hundreds of MB, so they are read into lenient typed structs that
//! borrow strings from the input instead of a `serde_json::Value` tree. LoCoMo (a few MB,
//! with `session_<n>` keys) is read as a `Value`.

use std::collections::HashSet;

use serde::Deserialize;
use serde_json::Value;

use crate::model::{Format, ParsedFile, Role, Session, Turn};

use super::clean;
use super::lenient::{LStr, LVec, Obj};
use super::lines;

#[derive(Deserialize, Default)]
#[serde(default)]
struct Instance<'a> {
    #[serde(borrow)]
    haystack_session_ids: LVec<LStr<'a>>,
    #[serde(borrow)]
    haystack_dates: LVec<LStr<'a>>,
    #[serde(borrow)]
    haystack_sessions: LVec<LVec<Obj<LmeTurn<'a>>>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct LmeTurn<'a> {
    #[serde(borrow)]
    role: LStr<'a>,
    #[serde(borrow)]
    content: LStr<'a>,
}

/// Counts of malformed entries, merged into `ParsedFile::skipped`.
#[derive(Default)]
struct Counts(Vec<&'static str>);

fn lme_convert(doc: LVec<Obj<Instance<'_>>>) -> (Vec<Session>, Counts) {
    let mut seen: HashSet<String> = HashSet::new();
    let mut sessions = Vec::new();
    let mut bad = Counts::default();
    for inst in doc.0 {
        let Some(inst) = inst.0 else {
            bad.0.push("malformed_instance");
            continue;
        };
        for (k, sess) in inst.haystack_sessions.0.into_iter().enumerate() {
            let Some(sid) = inst.haystack_session_ids.0.get(k).and_then(LStr::owned) else {
                bad.0.push("malformed_session");
                continue;
            };
            if seen.contains(&sid) {
                continue;
            }
            let date = inst
                .haystack_dates
                .0
                .get(k)
                .and_then(|d| d.get())
                .and_then(clean::parse_date_loose);
            let mut turns = Vec::with_capacity(sess.0.len());
            for (idx, t) in sess.0.into_iter().enumerate() {
                let role = t.0.as_ref().and_then(|t| match t.role.get() {
                    Some("user") => Some(Role::User),
                    Some("assistant") => Some(Role::Assistant),
                    _ => None,
                });
                let text = t.0.as_ref().and_then(|t| t.content.get());
                match (role, text) {
                    (Some(role), Some(text)) => turns.push(Turn {
                        role,
                        text: text.to_owned(),
                        timestamp: date,
                        ids: vec![format!("{sid}:{idx}")],
                        ..Turn::default()
                    }),
                    _ => bad.0.push("malformed_turn"),
                }
            }
            seen.insert(sid.clone());
            if !turns.is_empty() {
                sessions.push(Session {
                    id: sid,
                    format: Some(Format::Longmemeval),
                    turns,
                    ..Session::default()
                });
            }
        }
    }
    (sessions, bad)
}

fn finish(
    out: &mut ParsedFile,
    bytes: &[u8],
    result: Result<(Vec<Session>, Counts), lines::Reject>,
) {
    match result {
        Ok((sessions, bad)) => {
            out.sessions = sessions;
            for reason in bad.0 {
                out.skip(reason);
            }
            out.complete_bytes = bytes.len() as u64;
        }
        Err(lines::Reject::Syntax) => {
            // Possibly being rewritten: leave it all for the next run.
            out.skip("invalid_json");
            out.complete_bytes = 0;
        }
        Err(lines::Reject::Shape) => {
            out.skip("invalid_record");
            out.complete_bytes = bytes.len() as u64;
        }
    }
}

/// Parse a LongMemEval instance file (array of instances with `haystack_sessions`).
pub(crate) fn parse_longmemeval(bytes: &[u8], out: &mut ParsedFile) {
    let result = lines::parse_document(bytes, |b| {
        let doc: LVec<Obj<Instance<'_>>> = serde_json::from_slice(b)?;
        Ok(lme_convert(doc))
    });
    finish(out, bytes, result);
}

fn locomo_convert(doc: &Value) -> (Vec<Session>, Counts) {
    let mut sessions = Vec::new();
    let mut bad = Counts::default();
    let Some(samples) = doc.as_array() else {
        bad.0.push("malformed_sample");
        return (sessions, bad);
    };
    for sample in samples {
        let sid = sample
            .get("sample_id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let conv = sample.get("conversation").and_then(Value::as_object);
        let (Some(sid), Some(conv)) = (sid, conv) else {
            bad.0.push("malformed_sample");
            continue;
        };
        let speaker_b = conv.get("speaker_b").and_then(Value::as_str);
        let mut numbered: Vec<(u32, &Vec<Value>)> = conv
            .iter()
            .filter_map(|(k, v)| {
                let n: u32 = k.strip_prefix("session_")?.parse().ok()?;
                Some((n, v.as_array()?))
            })
            .collect();
        numbered.sort_by_key(|(n, _)| *n);
        for (n, items) in numbered {
            let date = conv
                .get(&format!("session_{n}_date_time"))
                .and_then(Value::as_str)
                .and_then(clean::parse_locomo_date);
            let mut turns = Vec::with_capacity(items.len());
            for item in items {
                let Some(o) = item.as_object() else {
                    bad.0.push("malformed_turn");
                    continue;
                };
                let text = o.get("text").and_then(Value::as_str).unwrap_or("").trim();
                let caption = o
                    .get("blip_caption")
                    .and_then(Value::as_str)
                    .map(str::trim)
                    .filter(|c| !c.is_empty());
                let text = match caption {
                    Some(c) if text.is_empty() => format!("[image: {c}]"),
                    Some(c) => format!("{text} [image: {c}]"),
                    None => text.to_owned(),
                };
                if text.is_empty() {
                    bad.0.push("malformed_turn");
                    continue;
                }
                let speaker = o.get("speaker").and_then(Value::as_str).map(str::to_owned);
                let role = if speaker.is_some() && speaker.as_deref() == speaker_b {
                    Role::Assistant
                } else {
                    Role::User
                };
                let ids = o
                    .get("dia_id")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .into_iter()
                    .collect();
                turns.push(Turn {
                    role,
                    text,
                    timestamp: date,
                    speaker,
                    ids,
                    ..Turn::default()
                });
            }
            if !turns.is_empty() {
                sessions.push(Session {
                    id: format!("{sid}:session_{n}"),
                    format: Some(Format::Locomo),
                    turns,
                    ..Session::default()
                });
            }
        }
    }
    (sessions, bad)
}

/// Parse a LoCoMo file (array of samples with `conversation`).
pub(crate) fn parse_locomo(bytes: &[u8], out: &mut ParsedFile) {
    let result = lines::parse_document(bytes, |b| {
        let doc: Value = serde_json::from_slice(b)?;
        Ok(locomo_convert(&doc))
    });
    finish(out, bytes, result);
}
