//! Chunking: what a parsed file becomes in the index. A transcript's sessions are cut into
//! turn pairs ([`chunk_session`]), a markdown note into its sections ([`chunk_note`]); both
//! make [`Chunk`]s keyed by their content ([`content_key`]), within a budget of estimated
//! tokens.

mod note;
mod session;
mod text;

pub use note::chunk_note;
pub use session::{chunk_session, rechunk_start, turn_groups, PACK_TOKENS};
pub use text::{content_key, estimate_tokens, split_text, Chunk, DEFAULT_BUDGET_TOKENS};

use crate::model::ParsedFile;

/// Chunk everything one parsed file holds: its sessions' turn pairs, or its note's sections.
#[must_use]
pub fn chunk_parsed(parsed: &ParsedFile, path: &str, budget: usize) -> Vec<Chunk> {
    if let Some(note) = &parsed.note {
        return chunk_note(note, path, budget);
    }
    parsed
        .sessions
        .iter()
        .flat_map(|s| chunk_session(s, path, budget))
        .collect()
}
