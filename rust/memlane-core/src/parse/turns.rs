//! Assembles normalised [`Turn`]s: every parser feeds utterances, tool calls and tool results
//! in conversation order; everything between two human turns becomes one assistant turn.

use std::collections::HashSet;
use std::hash::{Hash, Hasher};

use serde_json::Value;

use crate::model::{PlanItem, Role, Turn};

use super::clean;

/// Something a record contributes to the assistant side of the conversation (tree formats
/// collect pieces per node, then replay the active branch through a [`TurnBuilder`]).
pub(crate) enum Piece {
    Text(String),
    Call {
        name: String,
        summary: String,
        files: Vec<String>,
        /// The plan it writes, when it is the agent's own plan tool ([`clean::plan_items`]).
        plan: Option<Vec<PlanItem>>,
    },
    Result {
        text: String,
        is_error: bool,
    },
}

impl Piece {
    /// A tool call rendered from its name and JSON input.
    pub fn call(name: String, input: &Value) -> Piece {
        let summary = clean::tool_summary(&name, input);
        let mut files = Vec::new();
        clean::tool_files(&name, input, &mut files);
        let plan = clean::plan_items(&name, input);
        Piece::Call {
            name,
            summary,
            files,
            plan,
        }
    }
}

/// Turn accumulator for one session.
#[derive(Default)]
pub(crate) struct TurnBuilder {
    turns: Vec<Turn>,
    /// Hashes of (message id, rendered piece) already in the open assistant turn: Claude Code
    /// can write the same content block twice for one API message (streaming snapshots).
    seen: HashSet<u64>,
    /// Working directory and git branch of the record being fed (see [`TurnBuilder::place`]).
    cwd: Option<String>,
    branch: Option<String>,
}

fn piece_hash(msg_id: &str, piece: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    msg_id.hash(&mut h);
    piece.hash(&mut h);
    h.finish()
}

fn append(text: &mut String, piece: &str) {
    if !text.is_empty() {
        text.push('\n');
    }
    text.push_str(piece);
}

impl TurnBuilder {
    /// Where the records fed next were written (working directory, git branch): turns they
    /// open carry it. Only sources that record it per line call this.
    pub fn place(&mut self, cwd: Option<&str>, branch: Option<&str>) {
        if self.cwd.as_deref() != cwd {
            self.cwd = cwd.map(str::to_owned);
        }
        if self.branch.as_deref() != branch {
            self.branch = branch.map(str::to_owned);
        }
    }

    /// A human (or summary) turn; empty text is dropped.
    pub fn push(&mut self, role: Role, text: String, ts: Option<i64>, id: Option<String>) {
        if text.trim().is_empty() {
            return;
        }
        self.seen.clear();
        self.turns.push(Turn {
            role,
            text,
            timestamp: ts,
            ids: id.into_iter().collect(),
            cwd: self.cwd.clone(),
            branch: self.branch.clone(),
            ..Turn::default()
        });
    }

    /// A human turn with a speaker name (benchmarks).
    pub fn push_full(&mut self, turn: Turn) {
        if turn.text.trim().is_empty() {
            return;
        }
        self.seen.clear();
        self.turns.push(turn);
    }

    /// The open assistant turn, opened if the last turn is not one.
    fn assistant(&mut self, ts: Option<i64>) -> &mut Turn {
        let open = matches!(self.turns.last(), Some(t) if t.role == Role::Assistant);
        if !open {
            self.seen.clear();
            self.turns.push(Turn {
                role: Role::Assistant,
                timestamp: ts,
                cwd: self.cwd.clone(),
                branch: self.branch.clone(),
                ..Turn::default()
            });
        }
        let last = self.turns.len() - 1;
        let t = &mut self.turns[last];
        if t.timestamp.is_none() {
            t.timestamp = ts;
        }
        t
    }

    /// Record a source id on the open assistant turn.
    pub fn assistant_id(&mut self, id: Option<String>, ts: Option<i64>) {
        if let Some(id) = id {
            let t = self.assistant(ts);
            // Deduplicated in `finish`: a long agent run can put thousands of records in one turn.
            if t.ids.last() != Some(&id) {
                t.ids.push(id);
            }
        }
    }

    /// Whether `piece` of message `msg_id` was already added to the open assistant turn.
    fn duplicate(&mut self, msg_id: Option<&str>, piece: &str) -> bool {
        match msg_id {
            Some(m) => !self.seen.insert(piece_hash(m, piece)),
            None => false,
        }
    }

    /// Assistant prose.
    pub fn text(&mut self, text: &str, ts: Option<i64>, msg_id: Option<&str>) {
        let text = text.trim();
        if text.is_empty() {
            return;
        }
        let open = matches!(self.turns.last(), Some(t) if t.role == Role::Assistant);
        if open && self.duplicate(msg_id, text) {
            return;
        }
        let t = self.assistant(ts);
        append(&mut t.text, text);
        if !open {
            if let Some(m) = msg_id {
                self.seen.insert(piece_hash(m, text));
            }
        }
    }

    /// A tool call, rendered as `[tool Name] summary`.
    pub fn tool_call(
        &mut self,
        name: &str,
        summary: &str,
        files: &[String],
        ts: Option<i64>,
        msg_id: Option<&str>,
    ) {
        let name = if name.trim().is_empty() {
            "unknown"
        } else {
            name.trim()
        };
        let line = clean::tool_line(name, summary);
        let open = matches!(self.turns.last(), Some(t) if t.role == Role::Assistant);
        if open && self.duplicate(msg_id, &line) {
            return;
        }
        let t = self.assistant(ts);
        append(&mut t.text, &line);
        clean::push_unique(&mut t.tools, name);
        for f in files {
            t.files.push(f.clone());
        }
        if !open {
            if let Some(m) = msg_id {
                self.seen.insert(piece_hash(m, &line));
            }
        }
    }

    /// The agent's plan as a call of its plan tool rewrote it, on the open assistant turn
    /// (a later call in the same turn replaces it, as the tool does).
    pub fn plan(&mut self, items: Vec<PlanItem>, ts: Option<i64>) {
        self.assistant(ts).plan = Some(items);
    }

    /// Feed one [`Piece`].
    pub fn piece(&mut self, piece: &Piece, ts: Option<i64>, msg_id: Option<&str>) {
        match piece {
            Piece::Text(t) => self.text(t, ts, msg_id),
            Piece::Call {
                name,
                summary,
                files,
                plan,
            } => {
                self.tool_call(name, summary, files, ts, msg_id);
                if let Some(plan) = plan {
                    self.plan(plan.clone(), ts);
                }
            }
            Piece::Result { text, is_error } => self.tool_result(text, *is_error, ts),
        }
    }

    pub fn tool_result(&mut self, text: &str, is_error: bool, ts: Option<i64>) {
        let text = text.trim();
        if text.is_empty() {
            return;
        }
        let t = self.assistant(ts);
        let tag = if is_error { "[error] " } else { "[result] " };
        if !t.text.is_empty() {
            t.text.push('\n');
        }
        t.text.push_str(tag);
        t.text.push_str(text);
    }

    /// File paths mentioned by a tool result, attached to the open assistant turn.
    pub fn files(&mut self, files: &[String], ts: Option<i64>) {
        if files.is_empty() {
            return;
        }
        let t = self.assistant(ts);
        for f in files {
            t.files.push(f.clone());
        }
    }

    /// Tool names seen in tool output rather than as calls (Aider's `Applied edit`),
    /// attached to the open assistant turn.
    pub fn tool_names(&mut self, names: &[&str], ts: Option<i64>) {
        if names.is_empty() {
            return;
        }
        let t = self.assistant(ts);
        for n in names {
            clean::push_unique(&mut t.tools, n);
        }
    }

    /// Turns opened so far (before [`TurnBuilder::finish`] drops empty ones).
    pub fn len(&self) -> usize {
        self.turns.len()
    }

    /// [`TurnBuilder::finish`], and where the turn opened as number `raw` (a
    /// [`TurnBuilder::len`] taken earlier) ends up once empty turns are gone.
    pub fn finish_tracking(self, raw: usize) -> (Vec<Turn>, usize) {
        let dropped = self.turns[..raw.min(self.turns.len())]
            .iter()
            .filter(|t| t.text.trim().is_empty())
            .count();
        (self.finish(), raw - dropped)
    }

    /// The turns, minus assistant turns that ended up with no text at all.
    pub fn finish(mut self) -> Vec<Turn> {
        self.turns.retain(|t| !t.text.trim().is_empty());
        for t in &mut self.turns {
            dedupe(&mut t.files);
            dedupe(&mut t.ids);
        }
        self.turns
    }
}

/// Drop repeated entries, keeping first occurrences in order.
fn dedupe(v: &mut Vec<String>) {
    if v.len() < 2 {
        return;
    }
    let mut seen = HashSet::with_capacity(v.len());
    v.retain(|x| seen.insert(x.clone()));
}
