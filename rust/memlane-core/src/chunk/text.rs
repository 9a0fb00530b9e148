//! The chunk record and the text measures both chunkers share: a cheap token estimate, the
//! content key, and cutting an overlong text at paragraph, line or word boundaries.

use serde::{Deserialize, Serialize};

/// Default chunk budget in estimated tokens.
pub const DEFAULT_BUDGET_TOKENS: usize = 500;

/// Cheap token estimate: about four bytes of English per model token.
#[must_use]
pub fn estimate_tokens(text: &str) -> usize {
    tokens_of_bytes(text.len())
}

pub(super) fn tokens_of_bytes(bytes: usize) -> usize {
    bytes.div_ceil(4)
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
    /// Working directory the turns were written in, when known: the index files the chunk
    /// under the repository around it (see [`crate::project`]).
    #[serde(default)]
    pub cwd: Option<String>,
    /// Git branch the turns were written on, when known.
    #[serde(default)]
    pub branch: Option<String>,
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
