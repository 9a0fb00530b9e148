//! OpenClaw / pi session JSONL (FORMATS.md §3.4): a `type:"session"` header, then entries
//! forming a tree through `id`/`parentId`; the active path from the newest entry is indexed.

use std::collections::HashSet;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::model::{Format, ParsedFile, Role, Session, Turn};

use super::clean;
use super::lines::{self, RecordSink};
use super::tree::{self, Link};
use super::turns::{Piece, TurnBuilder};
use super::Anchor;

struct Entry {
    /// Byte offset of the entry's line in the parsed input.
    offset: usize,
    id: Option<String>,
    link: Link,
    ts: Option<i64>,
    human: Option<String>,
    summary: Option<(String, Vec<String>)>,
    pieces: Vec<Piece>,
}

impl Entry {
    /// Conversation content (a message or summary that renders to something): only such an
    /// entry may be the leaf of the active path.
    fn carries_content(&self) -> bool {
        self.human.is_some() || self.summary.is_some() || !self.pieces.is_empty()
    }
}

#[derive(Default)]
struct Sink {
    header: Option<(Option<String>, Option<String>)>,
    entries: Vec<Entry>,
    /// Offset of the line being parsed.
    offset: usize,
    ids: HashSet<String>,
    /// Two entries share an id (the first one is the link target).
    repeated: bool,
}

fn s<'a>(o: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    o.get(key).and_then(Value::as_str).filter(|x| !x.is_empty())
}

fn string_list(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

fn message(e: &mut Entry, m: &Map<String, Value>) {
    let content = m.get("content").unwrap_or(&Value::Null);
    match s(m, "role").unwrap_or("") {
        "user" => {
            let text = clean::clean_text(&clean::value_text(content));
            if !text.is_empty() {
                e.human = Some(text);
            }
        }
        "assistant" => {
            match content {
                Value::String(t) => e.pieces.push(Piece::Text(t.clone())),
                Value::Array(blocks) => {
                    for b in blocks.iter().filter_map(Value::as_object) {
                        match s(b, "type").unwrap_or("") {
                            "text" => {
                                if let Some(t) = s(b, "text") {
                                    e.pieces.push(Piece::Text(t.to_owned()));
                                }
                            }
                            "toolCall" | "tool_use" => {
                                let name = s(b, "name").unwrap_or("unknown").to_owned();
                                let args = clean::decode_arguments(
                                    b.get("arguments")
                                        .or_else(|| b.get("input"))
                                        .unwrap_or(&Value::Null),
                                );
                                e.pieces.push(Piece::call(name, &args));
                            }
                            k if clean::is_image_kind(k) => {
                                e.pieces.push(Piece::Text(clean::IMAGE.to_owned()))
                            }
                            // thinking: dropped, as for Claude Code.
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        "toolResult" => {
            let is_error = m.get("isError").and_then(Value::as_bool).unwrap_or(false);
            e.pieces.push(Piece::Result {
                text: clean::render_result(&clean::value_text(content)),
                is_error,
            });
        }
        "bashExecution" => {
            let cmd = s(m, "command").unwrap_or("");
            e.pieces.push(Piece::Call {
                name: "bash".into(),
                summary: clean::one_line(cmd, clean::CALL_CAP),
                files: Vec::new(),
                plan: None,
            });
            if let Some(out) = s(m, "output") {
                e.pieces.push(Piece::Result {
                    text: clean::render_result(out),
                    is_error: false,
                });
            }
        }
        "branchSummary" | "compactionSummary" => {
            let text = s(m, "summary")
                .map(str::to_owned)
                .unwrap_or_else(|| clean::value_text(content));
            if !text.trim().is_empty() {
                e.summary = Some((text, Vec::new()));
            }
        }
        _ => {}
    }
}

impl RecordSink for Sink {
    fn record(&mut self, v: &Value) {
        let Some(o) = v.as_object() else { return };
        let kind = s(o, "type").unwrap_or("");
        if kind == "session" && self.header.is_none() && self.entries.is_empty() {
            self.header = Some((
                s(o, "id").map(str::to_owned),
                s(o, "cwd").map(str::to_owned),
            ));
            return;
        }
        let link = match o.get("parentId") {
            Some(Value::String(p)) => Link::To(p.clone()),
            _ => Link::Root,
        };
        let id = s(o, "id").map(str::to_owned);
        if let Some(id) = &id {
            self.repeated |= !self.ids.insert(id.clone());
        }
        let mut e = Entry {
            offset: self.offset,
            id,
            link,
            ts: o.get("timestamp").and_then(clean::value_ts),
            human: None,
            summary: None,
            pieces: Vec::new(),
        };
        match kind {
            "message" => {
                if let Some(m) = o.get("message").and_then(Value::as_object) {
                    if e.ts.is_none() {
                        e.ts = m.get("timestamp").and_then(clean::value_ts);
                    }
                    message(&mut e, m);
                }
            }
            "compaction" | "branch_summary" => {
                if let Some(text) = s(o, "summary") {
                    let mut files = Vec::new();
                    if let Some(d) = o.get("details").and_then(Value::as_object) {
                        files = string_list(d.get("readFiles"));
                        for f in string_list(d.get("modifiedFiles")) {
                            clean::push_unique(&mut files, &f);
                        }
                    }
                    e.summary = Some((text.to_owned(), files));
                }
            }
            _ => {}
        }
        self.entries.push(e);
    }

    fn line_offset(&mut self) -> &mut usize {
        &mut self.offset
    }
}

/// What parsing a session file from an [`Anchor`] needs to know about the entries before it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Continuation {
    session_id: String,
    /// No entry links to a parent, so every entry is on the path.
    linear: bool,
    /// Sorted fingerprints of every entry id and parent link so far (see
    /// [`fingerprint`](super::fingerprint)): an appended entry with one of these ids would
    /// re-route an older link, and a link to one leaves the re-parsed region.
    known: Vec<u32>,
}

/// `known` plus the fingerprints of the ids and parent links of `entries`.
fn fingerprints(entries: &[Entry], known: Vec<u32>) -> Vec<u32> {
    let ids = entries
        .iter()
        .flat_map(|e| tree::id_and_parent(e.id.as_deref(), &e.link));
    super::fingerprints(ids, known)
}

/// Turns of the entries `path` (root first), and the (entry, raw turn index) of the last
/// entry that opened a human or summary turn and added nothing to the turn before it.
fn replay(entries: &[Entry], path: &[usize]) -> (TurnBuilder, Option<(usize, usize)>) {
    let mut b = TurnBuilder::default();
    let mut opened = None;
    for &i in path {
        let e = &entries[i];
        let before = b.len();
        if let Some((text, files)) = &e.summary {
            // Compaction details name the files the summarised span read or modified.
            b.push_full(Turn {
                role: Role::Summary,
                text: text.clone(),
                timestamp: e.ts,
                files: files.clone(),
                ids: e.id.clone().into_iter().collect(),
                ..Turn::default()
            });
        }
        for p in &e.pieces {
            b.piece(p, e.ts, None);
        }
        if !e.pieces.is_empty() {
            b.assistant_id(e.id.clone(), e.ts);
        }
        if let Some(h) = &e.human {
            b.push(Role::User, h.clone(), e.ts, e.id.clone());
        }
        if e.pieces.is_empty() && b.len() > before {
            opened = Some((i, before));
        }
    }
    (b, opened)
}

/// Whether `path` follows file order: then the entries before any of its entries are all
/// that decide the path up to it, which is what a resume from it relies on.
fn in_file_order(path: &[usize]) -> bool {
    path.windows(2).all(|w| w[0] < w[1])
}

/// Parse an OpenClaw / pi session file; `Some` with where a later append can be parsed from.
pub(crate) fn parse(bytes: &[u8], path: &Path, out: &mut ParsedFile) -> Option<Anchor> {
    let mut sink = Sink::default();
    lines::drive(bytes, out, &mut sink);
    let (hid, cwd) = sink.header.clone().unwrap_or((None, None));
    let id = hid.unwrap_or_else(|| super::claude::stem(path));

    let entries = &sink.entries;
    let ids: Vec<Option<&str>> = entries.iter().map(|e| e.id.as_deref()).collect();
    let links: Vec<Link> = entries.iter().map(|e| e.link.clone()).collect();
    let content: Vec<bool> = entries.iter().map(Entry::carries_content).collect();
    let branch = tree::active_branch(&ids, &links, &content, None)?;
    if branch.abandoned > 0 {
        *out.skipped.entry(tree::ABANDONED.to_owned()).or_insert(0) += branch.abandoned;
    }
    let path_idx = branch.path;
    let (b, opened) = replay(entries, &path_idx);
    let opened = opened.filter(|_| !sink.repeated && in_file_order(&path_idx));
    let opened = opened.map(|(i, raw)| {
        let state = Continuation {
            session_id: id.clone(),
            linear: links.iter().all(|l| *l == Link::Root),
            known: fingerprints(entries, Vec::new()),
        };
        (entries[i].offset, raw, super::Continuation::Openclaw(state))
    });
    super::finish_session(out, b, opened, |turns| Session {
        id,
        parent_id: None,
        format: Some(Format::Openclaw),
        cwd,
        branch: None,
        title: None,
        turns,
    })
}

/// Parse `region`, a session file from an earlier [`Anchor`] on, of which the first
/// `old_len` bytes were parsed before: the session's turns from the anchor's turn on, and
/// the next anchor. `None` when the whole file could give other turns: the active path
/// leaves the region (a branch switch or rewind), an appended entry reuses a known id, or
/// a linear log gains links.
pub(crate) fn resume(
    region: &[u8],
    old_len: usize,
    state: &Continuation,
    out: &mut ParsedFile,
) -> Option<Anchor> {
    // Past the first line, a `session` line is an entry like any other.
    let mut sink = Sink {
        header: Some((None, None)),
        ..Sink::default()
    };
    lines::drive(region, out, &mut sink);
    let entries = &sink.entries;
    if sink.repeated || entries.first()?.offset != 0 {
        return None;
    }
    let known = |id: &str| super::is_known(&state.known, id);
    if entries
        .iter()
        .any(|e| e.offset >= old_len && e.id.as_deref().is_some_and(known))
    {
        return None;
    }
    let leaf = entries.iter().rposition(Entry::carries_content)?;
    let path: Vec<usize> = if state.linear {
        if !entries.iter().all(|e| e.link == Link::Root) {
            return None;
        }
        (0..entries.len()).collect()
    } else {
        let ids: Vec<Option<&str>> = entries.iter().map(|e| e.id.as_deref()).collect();
        let links: Vec<Link> = entries.iter().map(|e| e.link.clone()).collect();
        tree::path_to_first(&ids, &links, leaf, known)?
    };
    if !in_file_order(&path) {
        return None;
    }
    let (b, opened) = replay(entries, &path);
    let (i, raw) = opened?;
    let (turns, turn_base) = b.finish_tracking(raw);
    let new = entries.partition_point(|e| e.offset < old_len);
    // Entries before `old_len` were accounted for by the run that read them.
    let content: Vec<bool> = entries.iter().map(Entry::carries_content).collect();
    let abandoned = tree::off_path(&content, &path, new);
    if abandoned > 0 {
        *out.skipped.entry(tree::ABANDONED.to_owned()).or_insert(0) += abandoned;
    }
    out.sessions.push(Session {
        id: state.session_id.clone(),
        parent_id: None,
        format: Some(Format::Openclaw),
        cwd: None,
        branch: None,
        title: None,
        turns,
    });
    Some(Anchor {
        offset: entries[i].offset,
        turn_base,
        state: super::Continuation::Openclaw(Continuation {
            known: fingerprints(&entries[new..], state.known.clone()),
            ..state.clone()
        }),
    })
}
