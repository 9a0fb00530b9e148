//! The records of a home: which embedder built its vectors (`memlane.json`), what each source
//! file contributed (`manifest.json`), and where an appendable file's next parse resumes
//! (`resume/`), each read and written as JSON.

use super::{Forgotten, Segment, RESUME_DIR};
use crate::chunk::rechunk_start;
use crate::error::{Error, Result};
use crate::model::{Format, ParsedFile, Turn};
use crate::parse::ResumePoint;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::UNIX_EPOCH;

/// What built the vectors of a home.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HomeMeta {
    /// On-disk layout version.
    pub version: u32,
    /// Embedder id (model, mode, dimension), once vectors exist.
    pub embedder_id: Option<String>,
    /// Vector dimension, once vectors exist.
    pub dim: Option<usize>,
    /// `f16` | `i8` | `f32`.
    pub quantization: String,
    /// Parts of the vector index (`vector::part_path` names their files), when more than one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector_parts: Option<usize>,
}

impl HomeMeta {
    /// How many parts the vector index has (one unless recorded).
    #[must_use]
    pub fn parts(&self) -> usize {
        self.vector_parts.unwrap_or(1)
    }
}

/// Per source file state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FileEntry {
    /// Size in bytes at the last index.
    pub size: u64,
    /// Modification time, ns since the epoch.
    pub mtime_ns: u64,
    /// blake3 of the complete lines (hex).
    pub hash: String,
    /// Offset after the last complete line.
    pub complete_bytes: u64,
    /// Detected format, if any.
    pub format: Option<String>,
    /// Sessions found.
    pub sessions: usize,
    /// Chunk keys this file contributes.
    pub keys: Vec<u64>,
    /// Where the next run can parse only what was appended, when the format allows it.
    /// (Homes written before resume states had their own files kept them inline under
    /// `resume`: that field is ignored, and such a file is parsed whole once more.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_state: Option<ResumeRef>,
    /// The home's own copy of the file (transcripts only; see [`super::Archive`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub archive: Vec<Segment>,
    /// When a scan first found the file gone (ms since the epoch): a transcript's chunks stay
    /// after its file is deleted (agent clients delete old ones); only `forget` removes them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gone_since: Option<i64>,
}

impl FileEntry {
    /// Whether the file is a transcript (not a note): its chunks outlive the file.
    pub(crate) fn is_transcript(&self) -> bool {
        self.format
            .as_deref()
            .and_then(Format::from_name)
            .is_some_and(|f| f != Format::Markdown)
    }
}

/// Where a file's [`ResumeState`] is kept, and the chunks it leaves alone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResumeRef {
    /// Name of the file under `resume/` that holds the state as JSON: a hash of the source
    /// path and that content, so a state is never overwritten and a damaged or missing one
    /// is noticed (the source file is then parsed whole).
    pub file: String,
    /// How many of the entry's first `keys` come from turns before the state's `carry`
    /// (before the point's `turn_base` when it carries nothing): those chunks are final and
    /// kept as they are.
    pub head_keys: usize,
}

/// What a resume of one file needs: where its parser continues, and the turns before that
/// point which a re-chunking must start with. Short turn groups are packed into one chunk
/// (see [`crate::chunk::PACK_TOKENS`]), so the group at `point.turn_base` may belong to a
/// pack that began earlier, and its chunk can still change when the group grows; re-chunking
/// from that pack's start (see [`rechunk_start`]) gives the chunks a full index gives. The
/// carried turns are at most one pack (~200 estimated tokens).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct ResumeState {
    pub(super) point: ResumePoint,
    /// The session's turns from the re-chunking start up to `point.turn_base`, exclusive.
    pub(super) carry: Vec<Turn>,
}

impl ResumeState {
    /// The state a later resume of `parsed` needs, taken from its resume point `point` and its
    /// one session, whose turns begin with turn `first_turn` (0 unless `parsed` was itself
    /// resumed); with the index of the first turn a resume re-chunks. `None` when the
    /// file cannot be resumed.
    pub(super) fn of(
        parsed: &ParsedFile,
        point: Option<ResumePoint>,
        first_turn: u32,
        budget: usize,
    ) -> Option<(ResumeState, u32)> {
        let point = point?;
        let [session] = parsed.sessions.as_slice() else {
            return None;
        };
        let base = usize::try_from(point.turn_base.checked_sub(first_turn)?).ok()?;
        if base > session.turns.len() {
            return None;
        }
        let from = rechunk_start(&session.turns, base, budget);
        let carry = session.turns[from..base].to_vec();
        let start = first_turn + u32::try_from(from).ok()?;
        Some((ResumeState { point, carry }, start))
    }
}

/// Name of the state file of `state` for source `path`, and its content.
pub(super) fn resume_file_of(path: &str, state: &ResumeState) -> Result<(String, Vec<u8>)> {
    let bytes = serde_json::to_vec(state)?;
    let mut h = blake3::Hasher::new();
    h.update(path.as_bytes());
    h.update(&[0]);
    h.update(&bytes);
    Ok((format!("{}.json", &h.finalize().to_hex()[..32]), bytes))
}

/// The resume state `r` names for source `path`, if its file is there and intact. (A state
/// written before turns were packed holds a bare point: it does not load, and the file is
/// parsed whole once, so its chunks are packed too.)
pub(super) fn load_resume(home: &Path, path: &str, r: &ResumeRef) -> Option<ResumeState> {
    let bytes = std::fs::read(home.join(RESUME_DIR).join(&r.file)).ok()?;
    let state: ResumeState = serde_json::from_slice(&bytes).ok()?;
    let (name, _) = resume_file_of(path, &state).ok()?;
    (name == r.file).then_some(state)
}

/// Per source file state of a whole home.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Manifest {
    /// Keyed by absolute path.
    pub files: BTreeMap<String, FileEntry>,
    /// What `forget` removed, so that re-indexing does not bring it back.
    #[serde(default, skip_serializing_if = "Forgotten::is_empty")]
    pub forgotten: Forgotten,
}

pub(super) fn read_json<T: for<'de> Deserialize<'de> + Default>(path: &Path) -> Result<T> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| Error::corrupt(path, e)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(T::default()),
        Err(e) => Err(e.into()),
    }
}

/// Write JSON durably (see [`crate::durable`]).
pub(super) fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    crate::durable::write(path, &serde_json::to_vec(value)?)
}

pub(super) fn mtime_ns(meta: &std::fs::Metadata) -> u64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}
