//! A memlane home on disk: the manifest of source files, the BM25 index and the vector index,
//! with one writer at a time and readers that never see a torn state.
//!
//! Layout of a home:
//! ```text
//! memlane.json     which embedder built the vectors (id, dimension, quantization, parts)
//! manifest.json    per source file: size, mtime, hash, complete bytes, chunk keys; what was
//!                  forgotten (tombstones)
//! forgotten.json   the tombstones again, for a repair of a home whose manifest is lost
//! resume/          per appendable source file, where its next parse can start and the turns
//!                  its re-chunking starts with (one file each, named by its content, so a
//!                  commit writes only the ones that changed)
//! lexical/         tantivy index (atomic commits)
//! vectors.usearch  HNSW index (saved to a temp file, then renamed); an index in parts has
//!                  one graph each, `vectors.1.usearch` … beside it, saved before it
//! write.lock       held by the one writer
//! ```
//! Write order on commit is tantivy → vectors → new resume states → manifest, each atomic. A
//! crash between them leaves chunks the manifest does not reference, which the next commit
//! collects, and resume states it does not name, which are never read.
//!
//! By file: `manifest` (the records: `memlane.json`, `manifest.json`, resume states), `reader`
//! ([`Store`]: opening a home, its vectors, status) and `search` (its searches), `lock`
//! ([`HomeLock`]), `writer` ([`Writer`]: scan and index) with `source` (one file read for it) and
//! `commit` (commit and recovery), `report` (what a run reports); `archive` (the home's copies
//! of transcripts), `forget` and `health` (verify and repair).

mod archive;
mod commit;
mod forget;
mod health;
mod lock;
mod manifest;
mod reader;
mod report;
mod search;
mod source;
mod writer;

pub use archive::{Archive, Segment};
pub use forget::{Forget, ForgetReport, Forgotten};
pub use health::{
    clear_repair_leftovers, install_rebuilt, Adopted, Finding, Severity, Verification, REPAIR_DIR,
};
pub use lock::HomeLock;
pub use manifest::{FileEntry, HomeMeta, Manifest, ResumeRef};
pub use reader::{Library, Status, Store};
pub use report::{FileReport, IndexReport, ScanPlan};
pub use search::{Hit, SearchRequest};
pub use writer::{FileReads, FilesRead, Writer};

use manifest::{load_resume, read_json};
use reader::guarded;
use source::ParsedSource;

const META_FILE: &str = "memlane.json";
const MANIFEST_FILE: &str = "manifest.json";
const FORGOTTEN_FILE: &str = "forgotten.json";
const RESUME_DIR: &str = "resume";
const LEXICAL_DIR: &str = "lexical";
const VECTORS_FILE: &str = "vectors.usearch";
