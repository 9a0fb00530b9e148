//! What an index run reports: the files a scan found to read, and what reading them gave.

use crate::model::SessionPlan;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// What an index run did (the CLI's `--json` shape).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IndexReport {
    /// Candidate files seen under the roots.
    pub files_seen: u64,
    /// Files (re)parsed because they were new or changed.
    pub files_indexed: u64,
    /// Files gone since the last run, whose chunks were dropped.
    pub files_removed: u64,
    /// Transcripts found gone in this run, whose chunks stay (see
    /// [`super::FileEntry::gone_since`]).
    #[serde(default)]
    pub files_gone: u64,
    /// Chunks newly added to the index.
    pub chunks_added: u64,
    /// Chunks removed from the index.
    pub chunks_removed: u64,
    /// Skipped records by reason.
    pub records_skipped: BTreeMap<String, u64>,
    /// Bytes parsed.
    pub bytes_parsed: u64,
    /// Files of `files_indexed` that were parsed only from their last turn on, because
    /// they had only grown.
    pub files_resumed: u64,
    /// What each file read in this run gave, in the order read.
    pub files: Vec<FileReport>,
    /// Paths named in the run (files or folders) from which the home holds no chunk at all.
    pub empty_roots: Vec<String>,
}

/// What reading one file gave.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FileReport {
    /// The file.
    pub path: String,
    /// Format it was read as, if any.
    pub format: Option<String>,
    /// Sessions found (transcripts).
    pub sessions: u64,
    /// Turns read (transcripts) or sections (notes); for a resumed file, those appended.
    pub turns: u64,
    /// Chunks the file now contributes.
    pub chunks: u64,
    /// Records skipped, by reason.
    pub skipped: BTreeMap<String, u64>,
    /// Parsed only from its last turn on.
    pub resumed: bool,
    /// Why the file gave no chunk: `binary`, `unknown_format`, `oversize_line`, `empty_file`,
    /// `no_conversation`, `not_a_regular_file` (a FIFO, socket or device: never opened),
    /// `unreadable: …` or `corrupt: …`; `None` when it gave some.
    pub empty_reason: Option<String>,
    /// The plans the agents of its sessions wrote in the turns read (task memory).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plans: Vec<SessionPlan>,
}

impl IndexReport {
    pub(super) fn merge(&mut self, other: &IndexReport) {
        self.files_seen += other.files_seen;
        self.files_indexed += other.files_indexed;
        self.files_removed += other.files_removed;
        self.chunks_added += other.chunks_added;
        self.chunks_removed += other.chunks_removed;
        self.bytes_parsed += other.bytes_parsed;
        self.files_resumed += other.files_resumed;
        for (k, v) in &other.records_skipped {
            *self.records_skipped.entry(k.clone()).or_insert(0) += v;
        }
        self.files.extend(other.files.iter().cloned());
    }
}

/// The files an index run has to look at.
#[derive(Debug, Clone, Default)]
pub struct ScanPlan {
    /// New or changed files.
    pub to_index: Vec<PathBuf>,
    /// Their total size.
    pub bytes_to_index: u64,
    /// Files whose size and mtime are unchanged.
    pub unchanged: u64,
    /// Manifest entries under the roots whose file is gone: notes (their chunks go).
    pub deleted: Vec<String>,
    /// Transcripts under the roots whose file is gone since this scan (their chunks stay).
    pub gone: Vec<String>,
}
