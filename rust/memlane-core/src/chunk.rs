//! Turn-pair chunking: a human turn with the reply it got, about 500 tokens by a cheap estimate.
//!
//! A pair is never split unless one turn alone exceeds the budget; that turn is then cut at
//! paragraph boundaries (then lines, then words) into consecutive parts.

use crate::model::{ParsedFile, Role, Session, Turn};
use serde::{Deserialize, Serialize};

/// Default chunk budget in estimated tokens.
pub const DEFAULT_BUDGET_TOKENS: usize = 500;

/// Cheap token estimate: about four bytes of English per model token.
#[must_use]
pub fn estimate_tokens(text: &str) -> usize {
    text.len().div_ceil(4)
}

/// One searchable unit with its provenance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Chunk {
    /// Stable id derived from the content hash (56 bits, so window ids fit in a u64).
    pub key: u64,
    /// blake3 of `text`, 32 hex chars: the embedding-cache key.
    pub content_hash: String,
    /// Session the turns belong to.
    pub session_id: String,
    /// Parent session for subagent transcripts.
    pub parent_session_id: Option<String>,
    /// Source file.
    pub path: String,
    /// Source format name.
    pub format: String,
    /// First turn index (0-based, within the session).
    pub turn_start: u32,
    /// Last turn index, inclusive.
    pub turn_end: u32,
    /// Part number when one turn was too long and had to be split, else 0.
    pub part: u32,
    /// Roles present, e.g. `user+assistant`, `assistant`, `summary`.
    pub role: String,
    /// Earliest timestamp of the turns (ms since epoch).
    pub ts_start: Option<i64>,
    /// Latest timestamp of the turns.
    pub ts_end: Option<i64>,
    /// Tool names used.
    pub tools: Vec<String>,
    /// Files mentioned.
    pub files: Vec<String>,
    /// Source record ids of the turns (LoCoMo `dia_id`s, …).
    pub turn_ids: Vec<String>,
    /// The rendered text that is indexed and embedded.
    pub text: String,
    /// `transcript` | `knowledge`.
    #[serde(default)]
    pub source: String,
    /// Heading context of a knowledge chunk (`Title › Section`), else empty.
    #[serde(default)]
    pub heading: String,
    /// Metadata stored instead of the transcript fields (knowledge chunks), else null.
    #[serde(default)]
    pub meta: serde_json::Value,
}

/// Hash `text` into (key, content hash hex).
#[must_use]
pub fn content_key(text: &str) -> (u64, String) {
    let hash = blake3::hash(text.as_bytes());
    let bytes = hash.as_bytes();
    let mut key_bytes = [0u8; 8];
    key_bytes[1..8].copy_from_slice(&bytes[..7]);
    let hex = hash.to_hex();
    (u64::from_be_bytes(key_bytes), hex.as_str()[..32].to_owned())
}

/// Label a turn the way it is rendered in a chunk.
fn speaker_label(turn: &Turn) -> &str {
    if let Some(s) = turn.speaker.as_deref() {
        return s;
    }
    match turn.role {
        Role::User => "User",
        Role::Assistant => "Assistant",
        Role::Summary => "Summary",
    }
}

/// Split `text` into pieces of at most `budget` estimated tokens, preferring paragraph, then
/// line, then word boundaries; a single overlong word is cut at a char boundary.
#[must_use]
pub fn split_text(text: &str, budget: usize) -> Vec<String> {
    let max_bytes = budget.max(1) * 4;
    if text.len() <= max_bytes {
        return vec![text.to_owned()];
    }
    let mut pieces = Vec::new();
    split_rec(text, max_bytes, &["\n\n", "\n", " "], &mut pieces);
    pieces
}

fn split_rec(text: &str, max_bytes: usize, seps: &[&str], out: &mut Vec<String>) {
    if text.len() <= max_bytes {
        if !text.trim().is_empty() {
            out.push(text.to_owned());
        }
        return;
    }
    let Some((sep, rest)) = seps.split_first() else {
        // No separator left: hard cut at char boundaries.
        let mut start = 0;
        while start < text.len() {
            let mut end = (start + max_bytes).min(text.len());
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            if end == start {
                end = start + text[start..].chars().next().map_or(1, char::len_utf8);
            }
            out.push(text[start..end].to_owned());
            start = end;
        }
        return;
    };
    // Greedily pack separator-delimited segments into pieces that fit.
    let mut current = String::new();
    for segment in text.split(sep) {
        let extra = if current.is_empty() { 0 } else { sep.len() };
        if current.len() + extra + segment.len() <= max_bytes {
            if !current.is_empty() {
                current.push_str(sep);
            }
            current.push_str(segment);
            continue;
        }
        if !current.is_empty() {
            out.push(std::mem::take(&mut current));
        }
        if segment.len() > max_bytes {
            split_rec(segment, max_bytes, rest, out);
        } else {
            current.push_str(segment);
        }
    }
    if !current.trim().is_empty() {
        out.push(current);
    }
}

/// Group a session's turns: each human turn with the replies that follow it; summaries and
/// replies with no human turn before them stand alone. Returns inclusive index ranges.
#[must_use]
pub fn turn_groups(turns: &[Turn]) -> Vec<(usize, usize)> {
    let mut groups = Vec::new();
    let mut start: Option<usize> = None;
    for (i, turn) in turns.iter().enumerate() {
        let opens = match turn.role {
            Role::User | Role::Summary => true,
            Role::Assistant => start.is_none_or(|s| turns[s].role == Role::Summary),
        };
        if opens {
            if let Some(s) = start {
                groups.push((s, i - 1));
            }
            start = Some(i);
        }
    }
    if let Some(s) = start {
        groups.push((s, turns.len() - 1));
    }
    groups
}

/// Chunk one session from `path` into turn-pair chunks.
#[must_use]
pub fn chunk_session(session: &Session, path: &str, budget: usize) -> Vec<Chunk> {
    let format = session.format.map_or("unknown", |f| f.as_str());
    let mut chunks = Vec::new();
    for (start, end) in turn_groups(&session.turns) {
        let group = &session.turns[start..=end];
        let rendered: Vec<String> = group
            .iter()
            .map(|t| format!("{}: {}", speaker_label(t), t.text.trim()))
            .collect();
        let total: usize = rendered.iter().map(|r| estimate_tokens(r)).sum();
        let simple_pair_fits =
            rendered.len() <= 2 && rendered.iter().all(|r| estimate_tokens(r) <= budget);
        let texts: Vec<(String, usize, usize)> = if total <= budget || simple_pair_fits {
            // A prompt and its reply stay together unless one of them alone is too long.
            vec![(rendered.join("\n\n"), start, end)]
        } else {
            // Too long: pack turns greedily, splitting only turns that exceed the budget, so
            // a tool-heavy reply of many turns does not become one giant chunk.
            let mut out: Vec<(String, usize, usize)> = Vec::new();
            for (offset, text) in rendered.iter().enumerate() {
                let idx = start + offset;
                for piece in split_text(text, budget) {
                    match out.last_mut() {
                        Some((prev, _, prev_end))
                            if estimate_tokens(prev) + estimate_tokens(&piece) < budget =>
                        {
                            prev.push_str("\n\n");
                            prev.push_str(&piece);
                            *prev_end = idx;
                        }
                        _ => out.push((piece, idx, idx)),
                    }
                }
            }
            out
        };
        let n_parts = texts.len();
        for (part, (text, first, last)) in texts.into_iter().enumerate() {
            let covered = &session.turns[first..=last];
            chunks.push(build_chunk(
                session,
                path,
                format,
                covered,
                (first, last),
                if n_parts > 1 { part } else { 0 },
                text,
            ));
        }
    }
    chunks
}

fn build_chunk(
    session: &Session,
    path: &str,
    format: &str,
    covered: &[Turn],
    (first, last): (usize, usize),
    part: usize,
    text: String,
) -> Chunk {
    let (key, content_hash) = content_key(&text);
    let mut roles: Vec<&str> = Vec::new();
    let mut tools: Vec<String> = Vec::new();
    let mut files: Vec<String> = Vec::new();
    let mut turn_ids = Vec::new();
    for t in covered {
        if !roles.contains(&t.role.as_str()) {
            roles.push(t.role.as_str());
        }
        for tool in &t.tools {
            if !tools.contains(tool) {
                tools.push(tool.clone());
            }
        }
        for f in &t.files {
            if !files.contains(f) {
                files.push(f.clone());
            }
        }
        turn_ids.extend(t.ids.iter().cloned());
    }
    let stamps = covered.iter().filter_map(|t| t.timestamp);
    Chunk {
        key,
        content_hash,
        session_id: session.id.clone(),
        parent_session_id: session.parent_id.clone(),
        path: path.to_owned(),
        format: format.to_owned(),
        turn_start: u32::try_from(first).unwrap_or(u32::MAX),
        turn_end: u32::try_from(last).unwrap_or(u32::MAX),
        part: u32::try_from(part).unwrap_or(u32::MAX),
        role: roles.join("+"),
        ts_start: stamps.clone().min(),
        ts_end: stamps.max(),
        tools,
        files,
        turn_ids,
        text,
        source: "transcript".to_owned(),
        heading: String::new(),
        meta: serde_json::Value::Null,
    }
}

/// Chunk everything one parsed file holds: its sessions' turn pairs, or its note's sections.
#[must_use]
pub fn chunk_parsed(parsed: &ParsedFile, path: &str, budget: usize) -> Vec<Chunk> {
    if let Some(note) = &parsed.note {
        return crate::knowledge::chunk_note(note, path, budget);
    }
    parsed
        .sessions
        .iter()
        .flat_map(|s| chunk_session(s, path, budget))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(role: Role, text: &str) -> Turn {
        Turn {
            role,
            text: text.to_owned(),
            ..Turn::default()
        }
    }

    fn session(turns: Vec<Turn>) -> Session {
        Session {
            id: "s".into(),
            turns,
            ..Session::default()
        }
    }

    #[test]
    fn pairs_user_with_following_replies() {
        let s = session(vec![
            turn(Role::Assistant, "greeting"),
            turn(Role::User, "q1"),
            turn(Role::Assistant, "a1"),
            turn(Role::Assistant, "a1 more"),
            turn(Role::Summary, "summary"),
            turn(Role::Assistant, "after summary"),
            turn(Role::User, "q2"),
        ]);
        let groups = turn_groups(&s.turns);
        assert_eq!(groups, vec![(0, 0), (1, 3), (4, 4), (5, 5), (6, 6)]);
        let chunks = chunk_session(&s, "p", DEFAULT_BUDGET_TOKENS);
        assert_eq!(chunks.len(), 5);
        assert_eq!(
            chunks[1].text,
            "User: q1\n\nAssistant: a1\n\nAssistant: a1 more"
        );
        assert_eq!(chunks[1].role, "user+assistant");
    }

    #[test]
    fn long_pair_of_short_turns_is_not_split() {
        let a = "word ".repeat(300);
        let s = session(vec![turn(Role::User, &a), turn(Role::Assistant, &a)]);
        let chunks = chunk_session(&s, "p", 500);
        assert_eq!(chunks.len(), 1);
        assert_eq!((chunks[0].turn_start, chunks[0].turn_end), (0, 1));
    }

    #[test]
    fn overlong_turn_splits_at_paragraphs() {
        let para = "sentence ".repeat(100); // ~900 bytes, ~225 tokens
        let long = [para.trim(); 6].join("\n\n");
        let s = session(vec![
            turn(Role::User, "short question"),
            turn(Role::Assistant, &long),
        ]);
        let chunks = chunk_session(&s, "p", 500);
        assert!(chunks.len() >= 3, "{}", chunks.len());
        for c in &chunks {
            assert!(
                estimate_tokens(&c.text) <= 500,
                "{}",
                estimate_tokens(&c.text)
            );
        }
        assert!(chunks[0].text.starts_with("User: short question"));
        assert_eq!(
            chunks.iter().map(|c| c.part).collect::<Vec<_>>(),
            (0..chunks.len() as u32).collect::<Vec<_>>()
        );
        let rejoined: String = chunks
            .iter()
            .map(|c| c.text.replace(char::is_whitespace, ""))
            .collect();
        let original =
            format!("User: short question\n\nAssistant: {long}").replace(char::is_whitespace, "");
        assert_eq!(rejoined, original);
    }

    #[test]
    fn split_text_handles_unbroken_multibyte_text() {
        let text = "é".repeat(3000);
        let pieces = split_text(&text, 100);
        assert!(pieces.iter().all(|p| p.len() <= 400));
        assert_eq!(pieces.concat(), text);
    }

    #[test]
    fn key_is_stable_and_fits_56_bits() {
        let (k1, h1) = content_key("hello");
        let (k2, h2) = content_key("hello");
        assert_eq!((k1, &h1), (k2, &h2));
        assert!(k1 < (1 << 56));
        assert_eq!(h1.len(), 32);
        assert_ne!(content_key("hello!").0, k1);
    }
}
