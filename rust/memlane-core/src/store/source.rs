//! One source file read for indexing: parsed whole or resumed from where its last parse
//! stopped, chunked, and its archived copy brought up to date (built in parallel, applied in
//! order by the writer).

use super::manifest::{load_resume, mtime_ns, ResumeState};
use super::{archive, Archive, FileEntry, FileReport, Segment};
use crate::chunk::{chunk_parsed, Chunk};
use crate::error::{Error, Result};
use crate::model::{Format, ParsedFile, Session};
use crate::parse::{self, ResumePoint};
use std::collections::HashSet;
use std::path::Path;
use tantivy::TantivyDocument;

/// Why a FIFO, socket or device named like a transcript gave nothing: it is never opened.
pub(super) const NOT_A_REGULAR_FILE: &str = "not_a_regular_file";

/// One source file after parsing and chunking (built in parallel, applied in order).
pub(super) struct ParsedSource {
    /// The source's size and modification time as read.
    pub(super) size: u64,
    pub(super) mtime_ns: u64,
    pub(super) parsed: ParsedFile,
    pub(super) hash: String,
    /// Keys of chunks kept from the previous index of the file (a resumed parse).
    pub(super) retained: Vec<u64>,
    /// New chunks, in session and turn order.
    pub(super) chunks: Vec<Chunk>,
    /// Bytes read and parsed to produce them.
    pub(super) parsed_bytes: u64,
    /// Parsed from a resume point rather than from the start.
    pub(super) resumed: bool,
    /// What the next resume needs, and the first turn it re-chunks.
    pub(super) next: Option<(ResumeState, u32)>,
    /// The file's archived copy once this read is archived (transcripts only).
    pub(super) archived: Option<Result<Vec<Segment>>>,
    /// The keyword index's document of each chunk, in order: built where the file was read,
    /// off the thread that adds them (empty when read otherwise: then built as added).
    pub(super) documents: Vec<TantivyDocument>,
}

/// What a resumed parse needs from a file's manifest entry.
pub(super) struct Prior {
    size: u64,
    hash: String,
    state: ResumeState,
    head: Vec<u64>,
}

impl Prior {
    /// `None` when the entry has no resume state, or its file is gone or damaged.
    pub(super) fn of(home: &Path, path: &str, entry: &FileEntry) -> Option<Prior> {
        let r = entry.resume_state.as_ref()?;
        Some(Prior {
            size: entry.size,
            hash: entry.hash.clone(),
            head: entry.keys.get(..r.head_keys)?.to_vec(),
            state: load_resume(home, path, r)?,
        })
    }
}

/// How many distinct keys the chunks before turn `rechunk_from` contribute, `retained` first:
/// the length of the prefix of the entry's keys that a later resume re-chunking from
/// `rechunk_from` keeps.
pub(super) fn head_keys(retained: &[u64], chunks: &[Chunk], rechunk_from: u32) -> usize {
    let head = chunks
        .iter()
        .take_while(|c| c.turn_start < rechunk_from)
        .map(|c| c.key);
    let distinct: HashSet<u64> = retained.iter().copied().chain(head).collect();
    distinct.len()
}

impl ParsedSource {
    /// Archive what this read parsed (a transcript's complete lines): what was appended when
    /// it resumed on the archived copy, else the file anew. `None` for a note or a file that
    /// gave no conversation.
    pub(super) fn archive(
        &self,
        archive: &Archive,
        path: &Path,
        entry: Option<&FileEntry>,
    ) -> Option<Result<Vec<Segment>>> {
        let transcript = self.parsed.note.is_none()
            && self.parsed.format.is_some()
            && !self.parsed.sessions.is_empty();
        if !transcript {
            return None;
        }
        let prior = entry.map_or(&[][..], |e| e.archive.as_slice());
        let appended = self.resumed && archive::archived_len(prior) <= self.parsed.complete_bytes;
        Some(archive.extend(path, prior, appended, self.parsed.complete_bytes))
    }

    /// What the file gave, for the run's report (`chunks` is set once they are counted).
    pub(super) fn report(&self, path: &str) -> FileReport {
        let parsed = &self.parsed;
        let turns = match &parsed.note {
            Some(note) => note.sections.len(),
            None => parsed.sessions.iter().map(|s| s.turns.len()).sum(),
        };
        FileReport {
            path: path.to_owned(),
            format: parsed.format.map(|f| f.as_str().to_owned()),
            sessions: parsed.sessions.len() as u64,
            turns: turns as u64,
            chunks: 0,
            skipped: parsed.skipped.clone(),
            resumed: self.resumed,
            empty_reason: parsed.unrecognised.clone(),
            plans: parsed.sessions.iter().filter_map(Session::plan).collect(),
        }
    }

    /// `Err` with the reason when the file vanished or cannot be read at all.
    pub(super) fn read(
        path: &Path,
        format: Option<Format>,
        budget: usize,
    ) -> std::result::Result<ParsedSource, String> {
        let unreadable = |e: &dyn std::fmt::Display| format!("unreadable: {e}");
        let meta = std::fs::metadata(path).map_err(|e| unreadable(&e))?;
        if !meta.is_file() {
            // Opening a FIFO waits for a writer (forever), a device may never end.
            return Err(NOT_A_REGULAR_FILE.into());
        }
        let (parsed, point) = parse::parse_file_resumable(path, format).map_err(|e| match e {
            Error::Parse { reason, .. } => format!("corrupt: {reason}"),
            Error::Io(io) => unreadable(&io),
            other => unreadable(&other),
        })?;
        Ok(Self::whole(
            parsed,
            point,
            path,
            budget,
            meta.len(),
            mtime_ns(&meta),
        ))
    }

    /// The home's archived copy of transcript `path` (gone, or to be re-read without it),
    /// read as [`ParsedSource::read`] reads the file; `None` when it cannot be read back.
    pub(super) fn from_archive(
        archive: &Archive,
        path: &Path,
        budget: usize,
        entry: &FileEntry,
    ) -> Option<ParsedSource> {
        let bytes = archive.read(&entry.archive).ok()?;
        let format = entry.format.as_deref().and_then(Format::from_name);
        let (parsed, point) = parse::parse_read(&bytes, path, format).ok()?;
        let mut source = Self::whole(parsed, point, path, budget, entry.size, entry.mtime_ns);
        source.archived = Some(Ok(entry.archive.clone()));
        Some(source)
    }

    /// A file parsed whole, chunked, with its resume point `point`.
    fn whole(
        parsed: ParsedFile,
        point: Option<ResumePoint>,
        path: &Path,
        budget: usize,
        size: u64,
        mtime_ns: u64,
    ) -> ParsedSource {
        let hash = parsed.content_hash.clone().unwrap_or_default();
        let chunks = chunk_parsed(&parsed, &path.to_string_lossy(), budget);
        let next = ResumeState::of(&parsed, point, 0, budget);
        ParsedSource {
            size,
            mtime_ns,
            parsed_bytes: parsed.complete_bytes,
            parsed,
            hash,
            retained: Vec::new(),
            chunks,
            resumed: false,
            next,
            archived: None,
            documents: Vec::new(),
        }
    }

    /// Parse only what was appended since `prior`; `None` when that cannot be done (the
    /// file shrank, changed before its end, or its new records do not extend the session
    /// alone): the caller then parses the whole file.
    pub(super) fn resume(
        path: &Path,
        format: Option<Format>,
        budget: usize,
        prior: Prior,
    ) -> Option<ParsedSource> {
        let meta = std::fs::metadata(path)
            .ok()
            .filter(std::fs::Metadata::is_file)?;
        if meta.len() < prior.size {
            return None;
        }
        let ResumeState { point, carry } = prior.state;
        let (mut parsed, next_point) =
            parse::resume_file(path, &point, format, &prior.hash).ok()??;
        // Re-chunk from where the carried turns start, so the last pack comes out whole.
        let first_turn = point
            .turn_base
            .checked_sub(u32::try_from(carry.len()).ok()?)?;
        let [session] = parsed.sessions.as_mut_slice() else {
            return None;
        };
        session.turns.splice(0..0, carry);
        let path_str = path.to_string_lossy();
        let mut chunks = chunk_parsed(&parsed, &path_str, budget);
        for c in &mut chunks {
            c.turn_start = c.turn_start.saturating_add(first_turn);
            c.turn_end = c.turn_end.saturating_add(first_turn);
        }
        let next = ResumeState::of(&parsed, next_point, first_turn, budget);
        Some(ParsedSource {
            size: meta.len(),
            mtime_ns: mtime_ns(&meta),
            hash: parsed.content_hash.clone().unwrap_or_default(),
            parsed_bytes: parsed.complete_bytes - point.offset,
            parsed,
            retained: prior.head,
            chunks,
            resumed: true,
            next,
            archived: None,
            documents: Vec::new(),
        })
    }
}
