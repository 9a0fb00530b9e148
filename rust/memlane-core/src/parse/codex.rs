//! Codex rollouts (FORMATS.md §2): the `{timestamp,type,payload}` envelope layout and the
//! older pre-envelope layout (bare header line, bare response items, no per-line time).
//!
//! A rollout holds two logs of the same conversation: `event_msg` (what the TUI showed) and
//! `response_item` (what the model saw). User prompts come from `event_msg/user_message` when
//! the file has any (they are free of injected scaffolding), else from filtered
//! `response_item` user messages; assistant prose from `response_item` messages when the file
//! has any, else from `event_msg/agent_message`. Never both, so no text is indexed twice.
//! Tools come only from `response_item` (the `*_end` events duplicate them).

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::{Format, ParsedFile, PlanItem, Role, Session};

use super::clean;
use super::lenient::{Content, LStr, LTs, Obj};
use super::lines::{self, LineSink};
use super::turns::TurnBuilder;
use super::Anchor;

#[derive(Deserialize, Default)]
#[serde(default)]
struct Item<'a> {
    timestamp: LTs,
    #[serde(rename = "type", borrow)]
    kind: LStr<'a>,
    #[serde(borrow)]
    payload: Obj<Box<Item<'a>>>,
    #[serde(borrow)]
    record_type: LStr<'a>,
    #[serde(borrow)]
    id: LStr<'a>,
    #[serde(borrow)]
    role: LStr<'a>,
    #[serde(borrow)]
    content: Content<'a>,
    #[serde(borrow)]
    name: LStr<'a>,
    arguments: Value,
    input: Value,
    #[serde(borrow)]
    output: Content<'a>,
    action: Value,
    #[serde(borrow)]
    message: LStr<'a>,
    #[serde(borrow)]
    cwd: LStr<'a>,
    #[serde(borrow)]
    parent_thread_id: LStr<'a>,
    source: Value,
    #[serde(borrow)]
    thread_name: LStr<'a>,
    #[serde(borrow)]
    git: Obj<Git<'a>>,
}

/// `session_meta.git` (and the pre-envelope header's): the repository the session ran in.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Git<'a> {
    #[serde(borrow)]
    branch: LStr<'a>,
}

impl Item<'_> {
    fn branch(&self) -> Option<String> {
        self.git.0.as_ref().and_then(|g| g.branch.owned())
    }
}

enum Ev {
    User {
        text: String,
        ts: Option<i64>,
        event: bool,
    },
    Assistant {
        text: String,
        ts: Option<i64>,
        event: bool,
    },
    Call {
        name: String,
        summary: String,
        files: Vec<String>,
        plan: Option<Vec<PlanItem>>,
        ts: Option<i64>,
    },
    Result {
        text: String,
        ts: Option<i64>,
    },
    Summary {
        text: String,
        ts: Option<i64>,
    },
}

struct Meta {
    id: String,
    cwd: Option<String>,
    branch: Option<String>,
    parent: Option<String>,
}

#[derive(Default)]
struct Sink {
    /// Events with the offset of their line.
    events: Vec<(usize, Ev)>,
    metas: Vec<Meta>,
    header_id: Option<String>,
    header_ts: Option<i64>,
    /// Offset of the last line that set the pre-envelope header.
    header_at: Option<usize>,
    context_cwd: Option<String>,
    /// The pre-envelope header's git branch.
    header_branch: Option<String>,
    title: Option<String>,
    /// Offset of the line being parsed.
    offset: usize,
}

/// Injected context Codex writes as "user" messages.
const SCAFFOLDING: [&str; 10] = [
    "# AGENTS.md instructions for",
    "<environment_context>",
    "<user_instructions>",
    "<permissions instructions>",
    "<turn_aborted>",
    "<INSTRUCTIONS>",
    "<skills_instructions>",
    "<user_shell_command>",
    "<collaboration_mode>",
    "<developer_instructions>",
];

fn is_scaffolding(text: &str) -> bool {
    let t = text.trim_start();
    SCAFFOLDING.iter().any(|s| t.starts_with(s))
}

fn content_text(c: &Content<'_>) -> String {
    match c {
        Content::None => String::new(),
        Content::Text(t) => t.to_string(),
        Content::Blocks(blocks) => {
            let mut parts: Vec<String> = Vec::new();
            for b in blocks {
                let kind = b.kind.get().unwrap_or("");
                if clean::is_image_kind(kind) {
                    parts.push(clean::IMAGE.to_owned());
                } else if let Some(t) = b.text.get() {
                    parts.push(t.to_owned());
                } else {
                    let inner = b.content.render();
                    if !inner.is_empty() {
                        parts.push(inner);
                    }
                }
            }
            parts.join("\n")
        }
    }
}

/// Find `parent_thread_id` anywhere in the first levels of `session_meta.source`.
fn find_parent(v: &Value, depth: u8) -> Option<String> {
    match v {
        Value::Object(o) if depth < 4 => {
            if let Some(Value::String(s)) = o.get("parent_thread_id") {
                return Some(s.clone());
            }
            o.values().find_map(|x| find_parent(x, depth + 1))
        }
        _ => None,
    }
}

impl Sink {
    fn push(&mut self, ev: Ev) {
        self.events.push((self.offset, ev));
    }

    fn item(&mut self, p: &Item<'_>, ts: Option<i64>) {
        match p.kind.get().unwrap_or("") {
            "message" => {
                let text = content_text(&p.content);
                match p.role.get() {
                    Some("user") => self.push(Ev::User {
                        text,
                        ts,
                        event: false,
                    }),
                    Some("assistant") => self.push(Ev::Assistant {
                        text,
                        ts,
                        event: false,
                    }),
                    _ => {}
                }
            }
            kind @ ("function_call" | "custom_tool_call" | "tool_search_call") => {
                let name = p.name.get().unwrap_or(if kind == "tool_search_call" {
                    "tool_search"
                } else {
                    "unknown"
                });
                let args = if p.arguments.is_null() {
                    clean::decode_arguments(&p.input)
                } else {
                    clean::decode_arguments(&p.arguments)
                };
                self.call(name, &args, ts);
            }
            "local_shell_call" => {
                let cmd = p.action.get("command").cloned().unwrap_or(Value::Null);
                let args = serde_json::json!({ "command": cmd });
                self.call("shell", &args, ts);
            }
            "web_search_call" => {
                let q = p.action.get("query").cloned().unwrap_or(Value::Null);
                self.call("web_search", &serde_json::json!({ "query": q }), ts);
            }
            "function_call_output"
            | "custom_tool_call_output"
            | "local_shell_call_output"
            | "tool_search_output" => {
                let text = content_text(&p.output);
                if !text.trim().is_empty() {
                    self.push(Ev::Result {
                        text: clean::render_result(&text),
                        ts,
                    });
                }
            }
            // reasoning (summaries restate the answer; the rest is encrypted), ghost_snapshot,
            // image_generation_call, compaction, inter-agent messages: not conversation.
            _ => {}
        }
    }

    fn call(&mut self, name: &str, args: &Value, ts: Option<i64>) {
        let summary = clean::tool_summary(name, args);
        let mut files = Vec::new();
        clean::tool_files(name, args, &mut files);
        self.push(Ev::Call {
            name: name.to_owned(),
            summary,
            files,
            plan: clean::plan_items(name, args),
            ts,
        });
    }

    fn take(&mut self, l: &Item<'_>) {
        if let Some(p) = &l.payload.0 {
            let ts = l.timestamp.0;
            match l.kind.get().unwrap_or("") {
                "session_meta" => {
                    if let Some(id) = p.id.owned() {
                        let parent = p
                            .parent_thread_id
                            .owned()
                            .or_else(|| find_parent(&p.source, 0));
                        self.metas.push(Meta {
                            id,
                            cwd: p.cwd.owned(),
                            branch: p.branch(),
                            parent,
                        });
                    }
                }
                "response_item" => self.item(p, ts),
                "event_msg" => match p.kind.get().unwrap_or("") {
                    "user_message" => {
                        let text = p.message.get().unwrap_or("").to_owned();
                        self.push(Ev::User {
                            text,
                            ts,
                            event: true,
                        });
                    }
                    "agent_message" => {
                        let text = p.message.get().unwrap_or("").to_owned();
                        self.push(Ev::Assistant {
                            text,
                            ts,
                            event: true,
                        });
                    }
                    "thread_name_updated" => {
                        if let Some(t) = p.thread_name.owned() {
                            self.title = Some(t);
                        }
                    }
                    _ => {}
                },
                "compacted" => {
                    // replacement_history re-contains old turns: only the summary is new.
                    if let Some(m) = p.message.get() {
                        self.push(Ev::Summary {
                            text: m.to_owned(),
                            ts,
                        });
                    }
                }
                "turn_context" if self.context_cwd.is_none() => self.context_cwd = p.cwd.owned(),
                _ => {}
            }
            return;
        }
        // Pre-envelope layout.
        if l.record_type.get().is_some() {
            return;
        }
        match l.kind.get() {
            None => {
                if self.header_id.is_none() {
                    self.header_id = l.id.owned();
                    self.header_ts = l.timestamp.0;
                    self.header_at = Some(self.offset);
                    self.header_branch = l.branch();
                    if let Some(c) = l.cwd.owned() {
                        self.context_cwd.get_or_insert(c);
                    }
                }
            }
            Some(_) => {
                let ts = l.timestamp.0.or(self.header_ts);
                self.item(l, ts);
            }
        }
    }
}

impl LineSink for Sink {
    fn line(&mut self, line: &[u8]) -> Result<(), serde_json::Error> {
        let l: Item<'_> = serde_json::from_slice(line)?;
        self.take(&l);
        Ok(())
    }

    fn line_start(&mut self, offset: usize) {
        self.offset = offset;
    }
}

/// The uuid at the end of a rollout file stem (`rollout-2025-…-<uuid>`).
fn stem_uuid(stem: &str) -> Option<&str> {
    let start = stem.len().checked_sub(36)?;
    let tail = stem.get(start..)?;
    let ok = tail.char_indices().all(|(i, c)| {
        if matches!(i, 8 | 13 | 18 | 23) {
            c == '-'
        } else {
            c.is_ascii_hexdigit()
        }
    });
    ok.then_some(tail)
}

/// Which of the two logs each side of the conversation is taken from: a property of the
/// whole file, so records appended later can switch it for every turn before them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Sources {
    /// User prompts from `event_msg/user_message` (some record is one), else from
    /// `response_item` user messages.
    event_users: bool,
    /// Assistant prose from `response_item` messages (some record is one), else from
    /// `event_msg/agent_message`.
    item_assistant: bool,
}

impl Sources {
    fn of<'a>(events: impl IntoIterator<Item = &'a (usize, Ev)>) -> Sources {
        let mut s = Sources::default();
        for (_, e) in events {
            match e {
                Ev::User { event: true, .. } => s.event_users = true,
                Ev::Assistant { event: false, .. } => s.item_assistant = true,
                _ => {}
            }
        }
        s
    }

    fn or(self, other: Sources) -> Sources {
        Sources {
            event_users: self.event_users || other.event_users,
            item_assistant: self.item_assistant || other.item_assistant,
        }
    }
}

/// What parsing a rollout from an [`Anchor`] needs to know about the records before it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Continuation {
    session_id: String,
    parent_id: Option<String>,
    /// The session's working directory and git branch (from `session_meta` or the header),
    /// which the records after the anchor do not repeat.
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    branch: Option<String>,
    /// Pre-envelope header: its id, and the time of records that carry none.
    header_id: Option<String>,
    header_ts: Option<i64>,
    /// The sources the file's turns were rendered with.
    sources: Sources,
    /// What the records before the anchor alone decide.
    before: Sources,
}

/// Which prompts and replies `sources` shows: every one of its chosen log, and those of the
/// other log that the chosen log does not repeat next to them. A file whose older turns were
/// written by a Codex that kept only one log keeps them when a newer Codex appends turns in
/// both: the choice of log only ever drops a duplicate.
fn shown(events: &[(usize, Ev)], sources: Sources) -> Vec<bool> {
    // (is a prompt, from the chosen log, text compared for duplicates) of a prompt or reply.
    let said = |e: &Ev| -> Option<(bool, bool, String)> {
        match e {
            Ev::User { text, event, .. } => {
                Some((true, *event == sources.event_users, clean::clean_text(text)))
            }
            Ev::Assistant { text, event, .. } => Some((
                false,
                *event != sources.item_assistant,
                text.trim().to_owned(),
            )),
            _ => None,
        }
    };
    let said: Vec<Option<(bool, bool, String)>> = events.iter().map(|(_, e)| said(e)).collect();
    (0..events.len())
        .map(|i| {
            let Some((prompt, chosen, text)) = &said[i] else {
                return true;
            };
            if *chosen {
                return true;
            }
            // The run of neighbours of the same kind (prompts, or replies) around this one.
            let same_kind = |j: &usize| said[*j].as_ref().is_some_and(|(p, ..)| p == prompt);
            let before = (0..i).rev().take_while(same_kind);
            let after = (i + 1..events.len()).take_while(same_kind);
            // One log may add what the other leaves out (an attached image): a text the
            // other contains is the same message.
            let twin = |t: &String| {
                !t.is_empty() && (t.contains(text.as_str()) || text.contains(t.as_str()))
            };
            !before
                .chain(after)
                .any(|j| said[j].as_ref().is_some_and(|(_, c, t)| *c && twin(t)))
        })
        .collect()
}

/// Turns of `events` rendered from `sources`, and the (line offset, raw turn index) of the
/// last event that opened a human or summary turn.
fn render(events: &[(usize, Ev)], sources: Sources) -> (TurnBuilder, Option<(usize, usize)>) {
    let shown = shown(events, sources);
    let mut b = TurnBuilder::default();
    let mut opened = None;
    for ((offset, e), shown) in events.iter().zip(shown) {
        let before = b.len();
        match e {
            Ev::User { text, ts, .. } => {
                if shown && !is_scaffolding(text) {
                    b.push(Role::User, clean::clean_text(text), *ts, None);
                }
            }
            Ev::Assistant { text, ts, .. } => {
                if shown {
                    b.text(text, *ts, None);
                }
            }
            Ev::Call {
                name,
                summary,
                files,
                plan,
                ts,
            } => {
                b.tool_call(name, summary, files, *ts, None);
                if let Some(plan) = plan {
                    b.plan(plan.clone(), *ts);
                }
            }
            Ev::Result { text, ts } => b.tool_result(text, false, *ts),
            Ev::Summary { text, ts } => b.push(Role::Summary, text.clone(), *ts, None),
        }
        if matches!(e, Ev::User { .. } | Ev::Summary { .. }) && b.len() > before {
            opened = Some((*offset, before));
        }
    }
    (b, opened)
}

/// Parse a Codex rollout; `Some` with where a later append can be parsed from.
pub(crate) fn parse(bytes: &[u8], path: &Path, out: &mut ParsedFile) -> Option<Anchor> {
    let mut sink = Sink::default();
    lines::drive(bytes, out, &mut sink);
    let stem = super::claude::stem(path);

    let meta = stem_uuid(&stem)
        .and_then(|u| sink.metas.iter().find(|m| m.id.eq_ignore_ascii_case(u)))
        .or_else(|| sink.metas.first());
    let id = meta
        .map(|m| m.id.clone())
        .or_else(|| sink.header_id.clone())
        .unwrap_or_else(|| stem.clone());
    let cwd = meta
        .and_then(|m| m.cwd.clone())
        .or_else(|| sink.context_cwd.clone());
    let branch = meta
        .and_then(|m| m.branch.clone())
        .or_else(|| sink.header_branch.clone());
    let parent_id = meta.and_then(|m| m.parent.clone()).filter(|p| *p != id);

    let sources = Sources::of(&sink.events);
    let (b, opened) = render(&sink.events, sources);
    // The header decides the time of later records: only a header set before the anchor
    // is one the resumed parse starts from.
    let opened = opened.filter(|(offset, _)| sink.header_at.is_none_or(|h| h < *offset));
    let opened = opened.map(|(offset, raw)| {
        let before = Sources::of(sink.events.iter().take_while(|(o, _)| *o < offset));
        let state = Continuation {
            session_id: id.clone(),
            parent_id: parent_id.clone(),
            cwd: cwd.clone(),
            branch: branch.clone(),
            header_id: sink.header_id.clone(),
            header_ts: sink.header_ts,
            sources,
            before,
        };
        (offset, raw, super::Continuation::Codex(state))
    });
    super::finish_session(out, b, opened, |turns| Session {
        id,
        parent_id,
        format: Some(Format::Codex),
        cwd,
        branch,
        title: sink.title,
        turns,
    })
}

/// Parse `region`, a rollout from an earlier [`Anchor`] on: the session's turns from the
/// anchor's turn on, and the next anchor. `None` when the records could render differently
/// in the whole file: a `session_meta` or header (the session's identity), or the first
/// record of a log that switches the source of the user or assistant side.
pub(crate) fn resume(region: &[u8], state: &Continuation, out: &mut ParsedFile) -> Option<Anchor> {
    let mut sink = Sink {
        header_id: state.header_id.clone(),
        header_ts: state.header_ts,
        ..Sink::default()
    };
    lines::drive(region, out, &mut sink);
    if !sink.metas.is_empty() || sink.header_at.is_some() {
        return None;
    }
    if state.before.or(Sources::of(&sink.events)) != state.sources {
        return None;
    }
    let (b, opened) = render(&sink.events, state.sources);
    let (offset, raw) = opened?;
    let (turns, turn_base) = b.finish_tracking(raw);
    let before = Sources::of(sink.events.iter().take_while(|(o, _)| *o < offset));
    out.sessions.push(Session {
        id: state.session_id.clone(),
        parent_id: state.parent_id.clone(),
        format: Some(Format::Codex),
        cwd: state.cwd.clone(),
        branch: state.branch.clone(),
        title: None,
        turns,
    });
    Some(Anchor {
        offset,
        turn_base,
        state: super::Continuation::Codex(Continuation {
            before: state.before.or(before),
            ..state.clone()
        }),
    })
}
