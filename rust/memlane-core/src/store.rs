//! A memlane home on disk: the manifest of source files, the BM25 index and the vector index,
//! with one writer at a time and readers that never see a torn state.
//!
//! Layout of a home:
//! ```text
//! memlane.json     which embedder built the vectors (id, dimension, quantization)
//! manifest.json    per source file: size, mtime, hash, complete bytes, chunk keys
//! resume/          per appendable source file, where its next parse can start and the turns
//!                  its re-chunking starts with (one file each, named by its content, so a
//!                  commit writes only the ones that changed)
//! lexical/         tantivy index (atomic commits)
//! vectors.usearch  HNSW index (saved to a temp file, then renamed)
//! write.lock       held by the one writer
//! ```
//! Write order on commit is tantivy → vectors → new resume states → manifest, each atomic. A
//! crash between them leaves chunks the manifest does not reference, which the next commit
//! collects, and resume states it does not name, which are never read.

use crate::chunk::{chunk_parsed, rechunk_start, Chunk, DEFAULT_BUDGET_TOKENS};
use crate::error::{Error, Result};
use crate::hybrid::{Fused, Fusion};
use crate::lexical::{Filters, Lexical, StoredChunk};
use crate::model::{Format, ParsedFile, Session, SessionPlan, Turn};
use crate::parse::{self, ResumePoint};
use crate::project::Projects;
use crate::shard::{fuse_parts, Candidates, Summary, TermStats};
use crate::vector::{Quantization, VectorIndex};
use fs4::fs_std::FileExt;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};
use tantivy::IndexWriter;

mod archive;
mod forget;
mod health;
pub use archive::{Archive, Segment};
pub use forget::{Forget, ForgetReport, Forgotten};
pub use health::{
    clear_repair_leftovers, install_rebuilt, Adopted, Finding, Severity, Verification, REPAIR_DIR,
};

const META_FILE: &str = "memlane.json";
const MANIFEST_FILE: &str = "manifest.json";
const RESUME_DIR: &str = "resume";
const LEXICAL_DIR: &str = "lexical";
const VECTORS_FILE: &str = "vectors.usearch";
/// Why a FIFO, socket or device named like a transcript gave nothing: it is never opened.
const NOT_A_REGULAR_FILE: &str = "not_a_regular_file";
/// Free bytes under which a keyword-index write that failed is taken for a full disk.
const DISK_FULL_BYTES: u64 = 1 << 20;
const LOCK_FILE: &str = "write.lock";
const FORMAT_VERSION: u32 = 1;
/// Segments under this many chunks count as small: a sync of a few files makes one.
const SMALL_SEGMENT_DOCS: u32 = 1_000;
/// Small segments tolerated before a commit merges them into one.
const MAX_SMALL_SEGMENTS: usize = 8;
/// The least memory tantivy lets a writer have (see `Writer::discard_uncommitted`).
const PLACEHOLDER_MEMORY: usize = 15 * 1024 * 1024;
/// How many times (20 ms apart) a failed commit collects the segments of merges still running.
const DISCARD_ROUNDS: usize = 100;

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
    /// The home's own copy of the file (transcripts only; see [`archive`]).
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
struct ResumeState {
    point: ResumePoint,
    /// The session's turns from the re-chunking start up to `point.turn_base`, exclusive.
    carry: Vec<Turn>,
}

impl ResumeState {
    /// The state a later resume of `parsed` needs, taken from its resume point and its one
    /// session, whose turns begin with turn `first_turn` (0 unless `parsed` was itself
    /// resumed); with the index of the first turn a resume re-chunks. `None` when the
    /// file cannot be resumed.
    fn of(parsed: &mut ParsedFile, first_turn: u32, budget: usize) -> Option<(ResumeState, u32)> {
        let point = parsed.resume.take()?;
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
fn resume_file_of(path: &str, state: &ResumeState) -> Result<(String, Vec<u8>)> {
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
fn load_resume(home: &Path, path: &str, r: &ResumeRef) -> Option<ResumeState> {
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

/// What an index run did (the CLI's `--json` shape).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IndexReport {
    /// Candidate files seen under the roots.
    pub files_seen: u64,
    /// Files (re)parsed because they were new or changed.
    pub files_indexed: u64,
    /// Files gone since the last run, whose chunks were dropped.
    pub files_removed: u64,
    /// Transcripts found gone in this run, whose chunks stay (see [`FileEntry::gone_since`]).
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
    fn merge(&mut self, other: &IndexReport) {
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

/// A search request.
#[derive(Debug, Clone)]
pub struct SearchRequest {
    /// Query text (for BM25).
    pub query: String,
    /// Normalised query embedding, if the caller has one.
    pub vector: Option<Vec<f32>>,
    /// Embedder that produced `vector`.
    pub embedder_id: Option<String>,
    /// Hits wanted.
    pub k: usize,
    /// Filters.
    pub filters: Filters,
    /// Fusion method.
    pub fusion: Fusion,
    /// Relevance floor: nothing when no candidate reaches it ([`crate::hybrid::fuse`]).
    pub threshold: f32,
    /// Candidates taken from each list before fusion.
    pub candidates: usize,
}

/// A ranked hit with its provenance and score breakdown.
#[derive(Debug, Clone)]
pub struct Hit {
    /// The stored chunk.
    pub chunk: StoredChunk,
    /// Final score.
    pub score: f32,
    /// Normalised BM25, if a keyword match.
    pub bm25: Option<f32>,
    /// Cosine similarity, if the chunk has vectors.
    pub vector: Option<f32>,
    /// BM25 over the query's ceiling, if a keyword match (see [`crate::hybrid::Fused`]).
    pub coverage: Option<f32>,
    /// How relevant on an absolute scale ([`crate::hybrid::relevance`]).
    pub relevance: f32,
}

/// Summary of a home.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Status {
    /// Home directory.
    pub home: String,
    /// Source files tracked.
    pub files: u64,
    /// Chunks in the BM25 index.
    pub chunks: u64,
    /// Chunks that have vectors.
    pub chunks_with_vectors: u64,
    /// Window vectors stored.
    pub vectors: u64,
    /// Embedder id of the vectors.
    pub embedder_id: Option<String>,
    /// Vector dimension.
    pub dim: Option<usize>,
    /// How the vectors are stored (`i8`, `f16`, `f32`): chosen when the home was made.
    pub quantization: String,
    /// Bytes on disk.
    pub disk_bytes: u64,
    /// Sessions tracked.
    pub sessions: u64,
    /// Whether chunks record their project and branch (false for homes built before they
    /// did: `memlane repair --force` rebuilds them).
    pub records_projects: bool,
    /// Transcripts whose file is gone, kept.
    #[serde(default)]
    pub sources_gone: u64,
    /// Bytes of transcripts the archive holds.
    #[serde(default)]
    pub archived_bytes: u64,
    /// What the archive takes on disk.
    #[serde(default)]
    pub archive_disk_bytes: u64,
}

fn read_json<T: for<'de> Deserialize<'de> + Default>(path: &Path) -> Result<T> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| Error::corrupt(path, e)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(T::default()),
        Err(e) => Err(e.into()),
    }
}

/// Write JSON durably (see [`crate::durable`]).
fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    crate::durable::write(path, &serde_json::to_vec(value)?)
}

fn mtime_ns(meta: &std::fs::Metadata) -> u64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

fn dir_size(path: &Path) -> u64 {
    walkdir::WalkDir::new(path)
        .into_iter()
        .filter_map(std::result::Result::ok)
        .filter_map(|e| e.metadata().ok())
        .filter(std::fs::Metadata::is_file)
        .map(|m| m.len())
        .sum()
}

/// The keyword index of `home`: created when the home is new, an error kept as [`Damage`]
/// when it cannot be opened or its `meta.json` is gone while the manifest lists sources.
fn open_lexical(home: &Path) -> std::result::Result<Lexical, Damage> {
    let dir = home.join(LEXICAL_DIR);
    let meta = dir.join("meta.json");
    if !meta.exists() {
        // Only a home that never indexed anything may start an empty index.
        let listed = match read_json::<Manifest>(&home.join(MANIFEST_FILE)) {
            Ok(m) => m.files.len(),
            Err(e) => {
                return Err(Damage {
                    path: meta,
                    reason: format!(
                        "missing, and the manifest is unreadable too ({})",
                        e.cause()
                    ),
                })
            }
        };
        if listed > 0 {
            return Err(Damage {
                path: meta,
                reason: format!("missing while the manifest lists {listed} source files"),
            });
        }
    }
    guarded(&dir, || Lexical::open(&dir)).map_err(|e| Damage {
        path: dir.clone(),
        reason: e.cause(),
    })
}

/// A project key holding notes: a library folder, or the repository its libraries sit in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Library {
    /// The project key the notes are filed under (see [`library_of`]).
    pub key: String,
    /// Live note chunks (every source but transcripts) filed under it.
    pub notes: u64,
    /// Whether they are the user's own, read in every project: a folder in no repository
    /// ([`crate::project::is_user_library`]).
    pub global: bool,
}

/// The library folder of note `path`: its own folder, or the one above a journal folder of
/// the library layout (`DailyActivity/`, `signals/`), so a library's notes are one project.
/// Decided by the path alone, so a note's project never depends on which folder was named
/// to index it (a repair names every file).
fn library_of(path: &Path) -> String {
    let folder = path.parent().unwrap_or(path);
    let journal = folder
        .file_name()
        .is_some_and(|n| n == "DailyActivity" || n == "signals");
    let library = if journal {
        folder.parent().unwrap_or(folder)
    } else {
        folder
    };
    library.to_string_lossy().into_owned()
}

/// Vectors as seen by readers, refreshed when the file on disk changes.
struct VectorView {
    stamp: Option<SystemTime>,
    index: Option<Arc<VectorIndex>>,
}

/// Why the keyword index of a home cannot be opened: kept so that every read says so (an
/// empty index in its place would look healthy and answer nothing).
#[derive(Debug, Clone)]
struct Damage {
    path: PathBuf,
    reason: String,
}

impl Damage {
    fn error(&self) -> Error {
        Error::corrupt(&self.path, &self.reason)
    }
}

/// The message of a caught panic.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// Run `f`, turning a panic (tantivy and usearch panic on some damaged files) into
/// `Corrupt` naming `path`: a damaged index must give an error, never abort the caller.
fn guarded<T>(path: &Path, f: impl FnOnce() -> Result<T>) -> Result<T> {
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    caught
        .map(|r| r.map_err(|e| read_error(path, e)))
        .unwrap_or_else(|payload| {
            Err(Error::corrupt(
                path,
                format_args!(
                    "internal error while reading it ({})",
                    panic_message(&*payload)
                ),
            ))
        })
}

/// A tantivy error while reading is damage to its files: say so, naming the index.
fn read_error(dir: &Path, e: Error) -> Error {
    match e {
        Error::Tantivy(t) => Error::corrupt(dir, t),
        other => other,
    }
}

/// An open memlane home.
pub struct Store {
    home: PathBuf,
    /// The keyword index; an empty one in memory when `damage` is set, never searched then.
    lexical: Lexical,
    /// Why the keyword index on disk cannot be read, if it cannot.
    damage: Option<Damage>,
    quantization: Quantization,
    view: Mutex<VectorView>,
    meta: RwLock<HomeMeta>,
    /// `memlane.json` as [`Store::recorded_meta`] last read it, with the file's stamp.
    recorded: Mutex<Option<(FileStamp, HomeMeta)>>,
}

/// When a file was last modified, and its length: a changed file changes one or the other.
type FileStamp = (Option<SystemTime>, u64);

impl Store {
    /// Open (creating if needed) the home at `home`.
    ///
    /// # Errors
    /// I/O errors, or `Corrupt` when the metadata cannot be read.
    pub fn open(home: &Path, quantization: Quantization) -> Result<Arc<Store>> {
        std::fs::create_dir_all(home).map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!("{} cannot be a memlane home: {e}", home.display()),
            )
        })?;
        // An unreadable memlane.json does not stop the home from opening (verify and repair
        // must be able to look at it): vector reads and writers report it instead.
        let mut meta: HomeMeta = read_json(&home.join(META_FILE)).unwrap_or_default();
        if meta.version == 0 {
            meta.version = FORMAT_VERSION;
            meta.quantization = match quantization {
                Quantization::F16 => "f16",
                Quantization::I8 => "i8",
                Quantization::F32 => "f32",
            }
            .into();
        }
        let quantization = Quantization::parse(&meta.quantization)?;
        let (lexical, damage) = match open_lexical(home) {
            Ok(lexical) => (lexical, None),
            Err(damage) => (Lexical::in_memory()?, Some(damage)),
        };
        Ok(Arc::new(Store {
            home: home.to_owned(),
            lexical,
            damage,
            quantization,
            view: Mutex::new(VectorView {
                stamp: None,
                index: None,
            }),
            meta: RwLock::new(meta),
            recorded: Mutex::new(None),
        }))
    }

    /// The home directory.
    #[must_use]
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// The manifest; a missing one is an error when the keyword index holds chunks (they
    /// would all look like leftovers of a crash and be dropped).
    fn read_manifest(&self) -> Result<Manifest> {
        let path = self.home.join(MANIFEST_FILE);
        if !path.exists() && self.damage.is_none() {
            let chunks = guarded(&self.lexical_dir(), || Ok(self.lexical.num_docs()))?;
            if chunks > 0 {
                return Err(Error::corrupt(
                    &path,
                    format_args!("missing while the keyword index holds {chunks} chunks"),
                ));
            }
        }
        read_json(&path)
    }

    /// The keyword index, or why it cannot be read.
    fn lexical(&self) -> Result<&Lexical> {
        match &self.damage {
            Some(damage) => Err(damage.error()),
            None => Ok(&self.lexical),
        }
    }

    /// The keyword index's folder (what a panic while reading it is blamed on).
    fn lexical_dir(&self) -> PathBuf {
        self.home.join(LEXICAL_DIR)
    }

    /// What built the vectors, as of the last commit of any process (a long-lived reader sees
    /// vectors another writer added without reopening the home).
    ///
    /// # Errors
    /// `Corrupt` when `memlane.json` cannot be read: searching on as if the home had no
    /// vectors would quietly drop them.
    pub fn meta(&self) -> Result<HomeMeta> {
        // Refreshes the cached meta when the vector file changed; a failure to load the vector
        // file itself leaves the last known meta, and the next search reports the error.
        match self.vectors() {
            Err(e @ Error::Corrupt { .. }) if e.concerns(&self.home.join(META_FILE)) => Err(e),
            _ => Ok(self.cached_meta()),
        }
    }

    /// `memlane.json` as on disk (the home's meta as opened while there is none), without
    /// loading the vectors: whether the home has vectors, and whose, is known before a search
    /// embeds its query, while [`Store::prefetch_vectors`] loads them. Read again only when the
    /// file changed.
    ///
    /// # Errors
    /// `Corrupt` when `memlane.json` cannot be read.
    pub fn recorded_meta(&self) -> Result<HomeMeta> {
        let path = self.home.join(META_FILE);
        let Ok(file) = std::fs::metadata(&path) else {
            return Ok(self.cached_meta());
        };
        let stamp = (file.modified().ok(), file.len());
        let mut recorded = self
            .recorded
            .lock()
            .map_err(|_| Error::Vector("poisoned lock".into()))?;
        match &*recorded {
            Some((seen, meta)) if *seen == stamp => Ok(meta.clone()),
            _ => {
                let meta: HomeMeta = read_json(&path)?;
                *recorded = Some((stamp, meta.clone()));
                Ok(meta)
            }
        }
    }

    /// Start loading the vector index on a thread of its own unless it is loaded, loading or
    /// absent, so that a first search loads it (~0.1 s at 1M chunks) while its query is
    /// embedded. A failed load is left for the search to report.
    pub fn prefetch_vectors(self: &Arc<Self>) {
        let wanted = match self.view.try_lock() {
            Ok(view) => view.index.is_none() && self.home.join(VECTORS_FILE).exists(),
            Err(_) => false, // another thread holds the view: loading or searching it
        };
        if wanted {
            let store = Arc::clone(self);
            std::thread::spawn(move || store.vectors().ok());
        }
    }

    fn cached_meta(&self) -> HomeMeta {
        self.meta.read().map(|m| m.clone()).unwrap_or_default()
    }

    fn check_embedder(&self, embedder_id: &str, dim: usize) -> Result<()> {
        let meta = self.cached_meta();
        match (&meta.embedder_id, meta.dim) {
            (Some(id), Some(d)) if id != embedder_id || d != dim => Err(Error::EmbedderMismatch {
                expected: format!("{id} ({d} dims)"),
                got: format!("{embedder_id} ({dim} dims)"),
                expected_hint: id.split('/').next().unwrap_or(id).to_owned(),
            }),
            _ => Ok(()),
        }
    }

    /// The current vector index for reading (memory-mapped), reloaded if the file changed.
    fn vectors(&self) -> Result<Option<Arc<VectorIndex>>> {
        let path = self.home.join(VECTORS_FILE);
        let stamp = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
        let mut view = self
            .view
            .lock()
            .map_err(|_| Error::Vector("poisoned lock".into()))?;
        if view.stamp != stamp || (stamp.is_some() && view.index.is_none()) {
            // memlane.json may have been written by another process since we opened.
            let meta: HomeMeta = read_json(&self.home.join(META_FILE))?;
            view.index = match (stamp, meta.dim) {
                (Some(_), Some(dim)) => Some(Arc::new(VectorIndex::load(
                    &path,
                    dim,
                    self.quantization,
                    true,
                )?)),
                _ => None,
            };
            view.stamp = stamp;
            if let Ok(mut m) = self.meta.write() {
                *m = meta;
            }
        }
        Ok(view.index.clone())
    }

    /// Hybrid search.
    ///
    /// # Errors
    /// `EmbedderMismatch` when the query vector comes from another embedder than the
    /// index's vectors; index errors.
    pub fn search(&self, req: &SearchRequest) -> Result<Vec<Hit>> {
        self.lexical()?;
        guarded(&self.lexical_dir(), || self.search_unguarded(req))
    }

    fn search_unguarded(&self, req: &SearchRequest) -> Result<Vec<Hit>> {
        // One searcher for the whole request: keyword hits, filters and stored chunks all come
        // from the same commit.
        let searcher = self.lexical.searcher();
        let (candidates, addresses) = self.gather(&searcher, req, None)?;
        // Stored fields only for the final hits, each a block of the doc store to read and
        // decompress: on every core at once.
        let hits = candidates
            .fuse(req.fusion, req.threshold, req.k)
            .into_par_iter()
            .map(|f| self.hit(&searcher, &addresses, f))
            .collect::<Result<Vec<_>>>()?;
        Ok(hits.into_iter().flatten().collect())
    }

    /// A fused candidate with its stored chunk (None when it is gone); keyword hits already
    /// know their document.
    fn hit(
        &self,
        searcher: &tantivy::Searcher,
        addresses: &HashMap<u64, tantivy::DocAddress>,
        f: Fused,
    ) -> Result<Option<Hit>> {
        let addr = match addresses.get(&f.key) {
            Some(addr) => Some(*addr),
            None => self.lexical.address(searcher, f.key)?,
        };
        addr.map(|addr| {
            Ok(Hit {
                chunk: self.lexical.fetch(searcher, addr)?,
                score: f.score,
                bm25: f.bm25,
                vector: f.vector,
                coverage: f.coverage,
                relevance: f.relevance,
            })
        })
        .transpose()
    }

    /// Hybrid search over several stores (the shards of a sharded index open in one process)
    /// as one home holding all their chunks would answer it: each store's candidates scored
    /// with the whole corpus's BM25 `stats` ([`TermStats::add`]), merged and fused
    /// ([`fuse_parts`]), the hits' chunks read from the store holding each. Every store is
    /// searched side by side and every hit read side by side on the thread pool: one call for
    /// what would otherwise be a round of calls per store and two rounds a query.
    ///
    /// # Errors
    /// The first store's error, as [`Store::search`].
    pub fn search_across(
        stores: &[&Store],
        req: &SearchRequest,
        stats: &TermStats,
    ) -> Result<Vec<Hit>> {
        let gathered = stores
            .par_iter()
            .map(|store| store.gathered(req, Some(stats)))
            .collect::<Result<Vec<_>>>()?;
        let (parts, readers): (Vec<_>, Vec<_>) = gathered
            .into_iter()
            .map(|(searcher, candidates, addresses)| (candidates, (searcher, addresses)))
            .unzip();
        let fused = fuse_parts(
            &parts,
            req.candidates.max(req.k),
            req.fusion,
            req.threshold,
            req.k,
        );
        let hits = fused
            .into_par_iter()
            .map(|(part, f)| {
                let (store, (searcher, addresses)) = (stores[part], &readers[part]);
                guarded(&store.lexical_dir(), || store.hit(searcher, addresses, f))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(hits.into_iter().flatten().collect())
    }

    /// This home's share of the corpus statistics BM25 needs for `query` (one shard's part of
    /// a sharded search, see [`crate::shard`]; filters do not change them: a home's BM25
    /// counts every chunk).
    ///
    /// # Errors
    /// Index errors.
    pub fn term_stats(&self, query: &str) -> Result<TermStats> {
        let lexical = self.lexical()?;
        guarded(&self.lexical_dir(), || {
            TermStats::of(lexical, &lexical.searcher(), query)
        })
    }

    /// The whole corpus's BM25 statistics for `query` over several stores (the shards of one
    /// sharded index open in one process): every store's [`Store::term_stats`], side by side,
    /// summed.
    ///
    /// # Errors
    /// The first store's error.
    pub fn corpus_term_stats(stores: &[&Store], query: &str) -> Result<TermStats> {
        let shares = stores
            .par_iter()
            .map(|store| store.term_stats(query))
            .collect::<Result<Vec<_>>>()?;
        let mut total = TermStats::default();
        for share in &shares {
            total.add(share);
        }
        Ok(total)
    }

    /// What this home holds, for routing scoped queries of a sharded index (see
    /// [`crate::shard::Summary`]).
    ///
    /// # Errors
    /// Index errors.
    pub fn summary(&self) -> Result<Summary> {
        let lexical = self.lexical()?;
        guarded(&self.lexical_dir(), || {
            lexical.reload()?;
            Summary::of(lexical, &lexical.searcher())
        })
    }

    /// The keyword and vector candidates of `req`, unfused: a shard's part of a sharded
    /// search. With `stats` (the whole corpus's, see [`TermStats::add`]) BM25 scores as one
    /// home holding every shard would; without, with this home's own.
    ///
    /// # Errors
    /// As [`Store::search`].
    pub fn candidates(&self, req: &SearchRequest, stats: Option<&TermStats>) -> Result<Candidates> {
        Ok(self.gathered(req, stats)?.1)
    }

    /// [`Store::gather`] on a searcher of its own, returned with the candidates so their
    /// chunks can be read from the same commit.
    fn gathered(
        &self,
        req: &SearchRequest,
        stats: Option<&TermStats>,
    ) -> Result<(
        tantivy::Searcher,
        Candidates,
        HashMap<u64, tantivy::DocAddress>,
    )> {
        self.lexical()?;
        guarded(&self.lexical_dir(), || {
            let searcher = self.lexical.searcher();
            let (candidates, addresses) = self.gather(&searcher, req, stats)?;
            Ok((searcher, candidates, addresses))
        })
    }

    /// The candidates of `req` in `searcher`, with the document address of each keyword hit.
    fn gather(
        &self,
        searcher: &tantivy::Searcher,
        req: &SearchRequest,
        stats: Option<&TermStats>,
    ) -> Result<(Candidates, HashMap<u64, tantivy::DocAddress>)> {
        let candidates = req.candidates.max(req.k);
        // A keyword-only request neither loads the vectors (a fresh process at 1M chunks would
        // spend ~0.1 s on it) nor fails for a damaged vector file.
        let vectors = match req.vector {
            Some(_) => self.vectors()?,
            None => None,
        };
        let index = match (&req.vector, &vectors) {
            (Some(qv), Some(index)) if !index.is_empty() => {
                if let Some(id) = &req.embedder_id {
                    self.check_embedder(id, qv.len())?;
                }
                Some((qv.as_slice(), index))
            }
            _ => None,
        };
        // A home's own statistics unless a sharded search gives the whole corpus's.
        let own;
        let stats = match stats {
            Some(stats) => stats,
            None => {
                own = TermStats::of(&self.lexical, searcher, &req.query)?;
                &own
            }
        };
        // The keyword and vector searches are independent: run them on both cores.
        let (keyword, ann) = rayon::join(
            || {
                self.lexical
                    .search(searcher, &req.query, &req.filters, candidates, stats)
            },
            || -> Result<Vec<(u64, f32)>> {
                let Some((qv, index)) = index else {
                    return Ok(Vec::new());
                };
                let allowed = if req.filters.is_empty() {
                    None
                } else {
                    Some(self.lexical.filtered_keys(searcher, &req.filters)?)
                };
                index.search(qv, candidates, allowed.as_ref())
            },
        );
        let (keyword, ann) = (keyword?, ann?);
        let bm25: Vec<(u64, f32)> = keyword.iter().map(|h| (h.0, h.1)).collect();
        let bm25_ceiling = self.lexical.bm25_ceiling(stats, &req.query)?;
        let mut sims = Vec::new();
        let mut ann = ann;
        if let Some((qv, index)) = index {
            // Every candidate's similarity is computed the same exact way, whether the ANN list
            // or only the keyword list found it (the graph's own distances differ from it in
            // the last digits), so two builds that find a chunk differently score it alike.
            let in_ann: HashSet<u64> = ann.iter().map(|h| h.0).collect();
            let mut keys: Vec<u64> = ann.iter().map(|h| h.0).collect();
            keys.extend(bm25.iter().map(|h| h.0).filter(|k| !in_ann.contains(k)));
            sims = keys
                .iter()
                .zip(index.similarities(&keys, qv))
                .filter_map(|(key, sim)| sim.map(|s| (*key, s)))
                .collect();
            let exact: HashMap<u64, f32> = sims.iter().copied().collect();
            for hit in &mut ann {
                hit.1 = exact.get(&hit.0).copied().unwrap_or(hit.1);
            }
            ann.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        }
        let addresses = keyword.iter().map(|h| (h.0, h.2)).collect();
        let have_vectors = index.is_some();
        Ok((
            Candidates {
                bm25,
                bm25_ceiling,
                ann,
                sims,
                have_vectors,
            },
            addresses,
        ))
    }

    /// The passage of each text that best matches `query` (see [`Lexical::passages`]), terms
    /// weighed by this home's statistics or, in a sharded index, the whole corpus's `stats`.
    ///
    /// # Errors
    /// Index errors.
    pub fn passages(
        &self,
        query: &str,
        texts: &[&str],
        max_chars: usize,
        stats: Option<&TermStats>,
    ) -> Result<Vec<Option<std::ops::Range<usize>>>> {
        let lexical = self.lexical()?;
        guarded(&self.lexical_dir(), || match stats {
            Some(stats) => lexical.passages(stats, query, texts, max_chars),
            None => lexical.passages(&lexical.searcher(), query, texts, max_chars),
        })
    }

    /// Load chunks by key.
    ///
    /// # Errors
    /// Index errors.
    pub fn get(&self, keys: &[u64]) -> Result<Vec<StoredChunk>> {
        self.get_as_of(keys, true)
    }

    /// Load chunks by key; with `reload` false, as of the commit the reader last saw (a home
    /// no one writes, such as a shard version, need not read the index's meta again: ~85 µs
    /// a call).
    ///
    /// # Errors
    /// Index errors.
    pub fn get_as_of(&self, keys: &[u64], reload: bool) -> Result<Vec<StoredChunk>> {
        let lexical = self.lexical()?;
        guarded(&self.lexical_dir(), || {
            if reload {
                lexical.reload()?;
            }
            lexical.get(keys)
        })
    }

    /// Keys of every live chunk, ascending (to walk a whole home, e.g. for secrets).
    ///
    /// # Errors
    /// Index errors.
    pub fn keys(&self) -> Result<Vec<u64>> {
        self.lexical.reload()?;
        let mut keys: Vec<u64> = self.lexical.all_keys()?.into_iter().collect();
        keys.sort_unstable();
        Ok(keys)
    }

    /// Whether chunks record their project and branch (homes built before they did do not).
    #[must_use]
    pub fn records_projects(&self) -> bool {
        self.lexical.records_projects()
    }

    /// Live chunks per project key (none when the home predates projects).
    ///
    /// # Errors
    /// Index errors.
    pub fn projects(&self) -> Result<BTreeMap<String, u64>> {
        let lexical = self.lexical()?;
        guarded(&self.lexical_dir(), || {
            lexical.reload()?;
            lexical.projects()
        })
    }

    /// The project keys holding notes, by key, each marked global when it is the user's own
    /// library (none when the home predates projects).
    ///
    /// # Errors
    /// Index errors.
    pub fn libraries(&self) -> Result<Vec<Library>> {
        let lexical = self.lexical()?;
        let notes = guarded(&self.lexical_dir(), || {
            lexical.reload()?;
            lexical.note_projects()
        })?;
        Ok(notes
            .into_iter()
            .map(|(key, notes)| Library {
                global: crate::project::is_user_library(Path::new(&key)),
                key,
                notes,
            })
            .collect())
    }

    /// Counts and sizes.
    ///
    /// # Errors
    /// Index or I/O errors.
    pub fn status(&self) -> Result<Status> {
        self.lexical()?;
        guarded(&self.lexical_dir(), || self.status_unguarded())
    }

    fn status_unguarded(&self) -> Result<Status> {
        self.lexical.reload()?;
        let manifest = self.read_manifest()?;
        let vectors = self.vectors()?;
        let keys = self.lexical.all_keys()?;
        let with_vectors = vectors
            .as_ref()
            .map_or(0, |v| keys.iter().filter(|k| v.contains(**k)).count());
        let meta = self.cached_meta();
        Ok(Status {
            home: self.home.to_string_lossy().into_owned(),
            files: manifest.files.len() as u64,
            chunks: keys.len() as u64,
            chunks_with_vectors: with_vectors as u64,
            vectors: vectors.as_ref().map_or(0, |v| v.len() as u64),
            embedder_id: meta.embedder_id,
            dim: meta.dim,
            quantization: meta.quantization,
            disk_bytes: dir_size(&self.home),
            sessions: manifest.files.values().map(|f| f.sessions as u64).sum(),
            records_projects: self.lexical.records_projects(),
            sources_gone: manifest
                .files
                .values()
                .filter(|f| f.gone_since.is_some())
                .count() as u64,
            archived_bytes: manifest
                .files
                .values()
                .map(|f| archive::archived_len(&f.archive))
                .sum(),
            archive_disk_bytes: Archive::of(&self.home).disk_bytes(),
        })
    }
}

/// The write lock of a home (`write.lock`), held until dropped: one writer at a time, and no
/// writer while a repair replaces the home's files.
pub struct HomeLock {
    _file: File,
    home: PathBuf,
}

impl HomeLock {
    /// Take the lock of `home` without waiting.
    ///
    /// # Errors
    /// `Locked` when another process (or another lock of this one) holds it.
    pub fn acquire(home: &Path) -> Result<HomeLock> {
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(home.join(LOCK_FILE))?;
        if !file.try_lock_exclusive().unwrap_or(false) {
            return Err(Error::Locked(home.to_owned()));
        }
        Ok(HomeLock {
            _file: file,
            home: home.to_owned(),
        })
    }

    /// The home it locks.
    #[must_use]
    pub fn home(&self) -> &Path {
        &self.home
    }
}

/// The one writer of a home: holds `write.lock` until dropped.
pub struct Writer {
    store: Arc<Store>,
    _lock: HomeLock,
    tantivy: IndexWriter,
    manifest: Manifest,
    /// Keys live in tantivy (committed or added in this run).
    present: HashSet<u64>,
    /// Chunks of transcripts whose files are gone, taken at the start of an index run: one a
    /// live file also holds (a moved or copied transcript) is filed under that file again.
    gone_keys: HashSet<u64>,
    /// Archived copies stopped being named (merged, rewritten, forgotten): the next commit
    /// sweeps the archive (listing it on every commit would cost a turn-by-turn index).
    pub(super) archive_dropped: bool,
    /// How many manifest files reference each key.
    refs: HashMap<u64, u32>,
    /// The writable vector index, loaded only when vectors are added or removed: a no-op
    /// re-index must not pay for reading hundreds of MB of vectors.
    vectors: Option<VectorIndex>,
    removed_keys: Vec<u64>,
    /// Resume state files to write before the manifest, by name.
    new_states: HashMap<String, Vec<u8>>,
    /// Resume state files the manifest stops naming, deleted after it is written.
    old_states: Vec<String>,
    manifest_dirty: bool,
    lexical_dirty: bool,
    vectors_dirty: bool,
    format: Option<Format>,
    budget: usize,
    /// Paths scanned, as named and canonical: a named path that gives nothing is reported.
    roots: Vec<(String, PathBuf)>,
    /// Source files whose chunks this writer removed because they are gone.
    removed_paths: Vec<String>,
    /// A forget deleted chunks whose text must leave the disk (see `purge_deleted`).
    purge: bool,
    /// Project keys of the working directories and library folders met so far.
    projects: Projects,
    /// `settle` could not reopen the tantivy writer: `tantivy` is a stand-in in memory, and
    /// a commit must not write a manifest naming chunks that never reached the disk.
    detached: bool,
    /// What this writer has done so far.
    pub report: IndexReport,
}

impl Writer {
    /// Take the write lock of `store`'s home.
    ///
    /// # Errors
    /// `Locked` when another writer holds it.
    pub fn new(store: Arc<Store>, format: Option<Format>) -> Result<Writer> {
        let lock = HomeLock::acquire(&store.home)?;
        store.lexical()?;
        // What a crashed or failed commit left behind: temp files, and tantivy segments no
        // commit names (collected below, once tantivy's own lock is held).
        crate::durable::remove_stale(&store.home);
        crate::durable::remove_stale(&store.home.join(RESUME_DIR));
        let tantivy = tantivy_writer(&store)?;
        store.lexical.reload()?;
        // A writer needs both records whole: with a default in place of either it would
        // drop every chunk (no manifest) or start a new vector file over the old (no meta).
        read_json::<HomeMeta>(&store.home.join(META_FILE))?;
        let manifest = store.read_manifest()?;
        let mut refs: HashMap<u64, u32> = HashMap::new();
        for entry in manifest.files.values() {
            for key in &entry.keys {
                *refs.entry(*key).or_insert(0) += 1;
            }
        }
        let present = guarded(&store.lexical_dir(), || store.lexical.all_keys())?;
        Ok(Writer {
            store,
            _lock: lock,
            tantivy,
            manifest,
            present,
            refs,
            vectors: None,
            removed_keys: Vec::new(),
            new_states: HashMap::new(),
            old_states: Vec::new(),
            manifest_dirty: false,
            lexical_dirty: false,
            vectors_dirty: false,
            format,
            budget: DEFAULT_BUDGET_TOKENS,
            roots: Vec::new(),
            removed_paths: Vec::new(),
            purge: false,
            projects: Projects::default(),
            detached: false,
            report: IndexReport::default(),
            gone_keys: HashSet::new(),
            archive_dropped: false,
        })
    }

    /// Walk `roots` and compare with the manifest: what is new, changed, unchanged or gone.
    ///
    /// # Errors
    /// `NotFound` for a root that does not exist.
    pub fn scan(&mut self, roots: &[PathBuf]) -> Result<ScanPlan> {
        let mut plan = ScanPlan::default();
        let mut seen: HashSet<String> = HashSet::new();
        let mut root_prefixes = Vec::new();
        let mut unarchived = Vec::new();
        for named in roots {
            let root = std::fs::canonicalize(named).map_err(|_| Error::NotFound(named.clone()))?;
            self.roots
                .push((named.to_string_lossy().into_owned(), root.clone()));
            let files: Vec<PathBuf> = if !root.is_dir() {
                // A named file exists, so nothing under it can be gone; adding it as a
                // prefix would wrongly cover siblings such as `a.jsonl.zst` of `a.jsonl`.
                // A FIFO or a device named here goes on too: reading refuses it, with a reason.
                vec![root.clone()]
            } else {
                let mut prefix = root.to_string_lossy().into_owned();
                if !prefix.ends_with('/') {
                    prefix.push('/');
                }
                root_prefixes.push(prefix);
                walkdir::WalkDir::new(&root)
                    .follow_links(false)
                    .into_iter()
                    .filter_map(std::result::Result::ok)
                    .filter(|e| {
                        // Links are not followed; a FIFO, socket or device named like a
                        // transcript is kept, to be refused (never opened) with a reason.
                        let kind = e.file_type();
                        !kind.is_dir()
                            && !kind.is_symlink()
                            && parse::is_candidate(e.path(), self.format)
                    })
                    .map(walkdir::DirEntry::into_path)
                    .collect()
            };
            for path in files {
                let key = path.to_string_lossy().into_owned();
                if !seen.insert(key.clone()) || self.manifest.forgotten.paths.contains(&key) {
                    continue;
                }
                let Ok(meta) = std::fs::metadata(&path) else {
                    continue;
                };
                let unchanged = self
                    .manifest
                    .files
                    .get(&key)
                    .is_some_and(|e| e.size == meta.len() && e.mtime_ns == mtime_ns(&meta));
                if let Some(entry) = self.manifest.files.get_mut(&key) {
                    if entry.gone_since.take().is_some() {
                        self.manifest_dirty = true; // back where it was
                    }
                    if unchanged
                        && entry.archive.is_empty()
                        && entry.is_transcript()
                        && !self.manifest.forgotten.names_file(&key)
                    {
                        unarchived.push(key.clone()); // indexed before the home kept copies
                    }
                }
                if unchanged {
                    plan.unchanged += 1;
                } else {
                    plan.bytes_to_index += meta.len();
                    plan.to_index.push(path);
                }
            }
        }
        for (path, entry) in &self.manifest.files {
            if seen.contains(path) || !root_prefixes.iter().any(|r| path.starts_with(r.as_str())) {
                continue;
            }
            if !entry.is_transcript() {
                plan.deleted.push(path.clone());
            } else if entry.gone_since.is_none() {
                plan.gone.push(path.clone());
            }
        }
        self.archive_unarchived(&unarchived)?;
        self.report.files_seen += seen.len() as u64;
        Ok(plan)
    }

    fn release(&mut self, key: u64) {
        let gone = match self.refs.get_mut(&key) {
            Some(n) if *n > 1 => {
                *n -= 1;
                false
            }
            _ => true,
        };
        if gone {
            self.refs.remove(&key);
            self.drop_chunk(key);
        }
    }

    /// Delete chunk `key` from the keyword index (and, at commit, its vectors).
    fn drop_chunk(&mut self, key: u64) {
        if self.present.remove(&key) {
            self.tantivy.delete_term(self.store.lexical.key_term(key));
            self.removed_keys.push(key);
            self.report.chunks_removed += 1;
            self.lexical_dirty = true;
        }
    }

    /// The project `chunk` is filed under: the repository of the directory its turns were
    /// written in; for a note, of its library folder (see [`library_of`]).
    fn project_of(&mut self, chunk: &Chunk) -> String {
        let dir = match &chunk.cwd {
            Some(cwd) => cwd.clone(),
            None if chunk.source == "knowledge" => library_of(Path::new(&chunk.path)),
            None => return String::new(),
        };
        self.projects.of(&dir).to_owned()
    }

    /// Forget files that no longer exist.
    pub fn remove_files(&mut self, paths: &[String]) {
        for path in paths {
            if let Some(entry) = self.manifest.files.remove(path) {
                for key in entry.keys {
                    self.release(key);
                }
                self.old_states.extend(entry.resume_state.map(|r| r.file));
                self.archive_dropped |= !entry.archive.is_empty();
                self.removed_paths.push(path.clone());
                self.report.files_removed += 1;
                self.manifest_dirty = true;
            }
        }
    }

    /// Mark these transcripts gone (a scan's `gone`): their chunks stay, and `status` counts
    /// them; `forget --path` (or `--missing`) removes them.
    pub fn mark_gone(&mut self, paths: &[String]) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        for path in paths {
            if let Some(entry) = self.manifest.files.get_mut(path) {
                if entry.gone_since.is_none() {
                    entry.gone_since = Some(now);
                    self.report.files_gone += 1;
                    self.manifest_dirty = true;
                }
            }
        }
    }

    /// Archive transcripts indexed before the home kept copies (once: their next scan finds
    /// them archived), in parallel.
    fn archive_unarchived(&mut self, paths: &[String]) -> Result<()> {
        let archive = self.archive();
        let done: Vec<(String, Result<Vec<Segment>>)> = paths
            .par_iter()
            .map(|path| {
                let complete = self.manifest.files[path].complete_bytes;
                (
                    path.clone(),
                    archive.extend(Path::new(path), &[], false, complete),
                )
            })
            .collect();
        for (path, segments) in done {
            if let Some(entry) = self.manifest.files.get_mut(&path) {
                entry.archive = segments?;
                self.manifest_dirty = true;
            }
        }
        Ok(())
    }

    /// The archive this writer's home keeps its copies in. A repair rebuilds the home in its
    /// `repair.tmp` folder and swaps the index files in, never the archive: the rebuild
    /// writes into the home's own.
    fn archive(&self) -> Archive {
        let home = &self.store.home;
        match home.parent() {
            Some(parent) if self.rebuilds() => Archive::of(parent),
            _ => Archive::of(home),
        }
    }

    /// Whether this writer rebuilds a home in its repair folder (see [`Writer::archive`]).
    fn rebuilds(&self) -> bool {
        self.store.home.file_name() == Some(std::ffi::OsStr::new(REPAIR_DIR))
    }

    /// Parse, chunk and add `paths` (in parallel over files). Nothing is visible to readers
    /// before [`Writer::commit`].
    ///
    /// # Errors
    /// Index errors; unreadable files are counted as skipped, not raised.
    pub fn index_files(&mut self, paths: &[PathBuf]) -> Result<IndexReport> {
        self.index_files_unguarded(paths)
            .map_err(|e| self.failed(e))
    }

    /// After a write that failed: back to the last commit, the copies archived since deleted
    /// (on a full disk a retry must find their space free), and the error said as a full
    /// disk when it is one. tantivy's indexing thread dies without its cause when a segment
    /// cannot be written, so a keyword-index error with the disk (near) full is one too.
    fn failed(&mut self, e: Error) -> Error {
        self.discard_uncommitted();
        if let Ok(committed) = self.store.read_manifest() {
            self.sweep_archive_keeping(&committed);
        }
        let home = &self.store.home;
        let full = matches!(e, Error::Tantivy(_))
            && fs4::available_space(home).is_ok_and(|free| free < DISK_FULL_BYTES);
        if full {
            Error::DiskFull(home.clone())
        } else {
            e.disk_full_at(home)
        }
    }

    fn index_files_unguarded(&mut self, paths: &[PathBuf]) -> Result<IndexReport> {
        let format = self.format;
        let budget = self.budget;
        let home = self.store.home.as_path();
        let archive = self.archive();
        let forgotten = &self.manifest.forgotten;
        let jobs: Vec<(&PathBuf, Option<&FileEntry>)> = paths
            .iter()
            .map(|path| {
                let entry = self.manifest.files.get(path.to_string_lossy().as_ref());
                (path, entry)
            })
            .collect();
        let parsed: Vec<(PathBuf, std::result::Result<ParsedSource, String>)> = jobs
            .into_par_iter()
            .map(|(path, entry)| {
                // A log's format is decided by the index that first gave it chunks: a record
                // appended to a short file must not sway detection and drop its turns.
                let format = format.or_else(|| {
                    entry
                        .filter(|e| !e.keys.is_empty())
                        .and_then(|e| Format::from_name(e.format.as_deref()?))
                        .filter(|f| f.is_line_log())
                });
                let resumed = entry
                    .and_then(|e| Prior::of(home, &path.to_string_lossy(), e))
                    .and_then(|p| ParsedSource::resume(path, format, budget, p));
                let source = match resumed {
                    Some(source) => Ok(source),
                    None => ParsedSource::read(path, format, budget),
                };
                let source = source.map(|mut s| {
                    if !forgotten.names_file(&path.to_string_lossy()) {
                        s.archived = s.archive(&archive, path, entry);
                    }
                    s
                });
                (path.clone(), source)
            })
            .collect();
        self.gone_keys = self
            .manifest
            .files
            .values()
            .filter(|e| e.gone_since.is_some())
            .flat_map(|e| e.keys.iter().copied())
            .collect();
        let mut batch = IndexReport::default();
        for (path, result) in parsed {
            self.add_source(&mut batch, &path, result)?;
        }
        self.report.merge(&IndexReport {
            files_seen: 0,
            ..batch.clone()
        });
        Ok(batch)
    }

    /// Add what reading `path` gave (its chunks and manifest entry) to the index and to `batch`.
    fn add_source(
        &mut self,
        batch: &mut IndexReport,
        path: &Path,
        result: std::result::Result<ParsedSource, String>,
    ) -> Result<()> {
        let key = path.to_string_lossy().into_owned();
        let source = match result {
            Ok(source) => source,
            Err(reason) => {
                let counted = if reason == NOT_A_REGULAR_FILE {
                    NOT_A_REGULAR_FILE
                } else {
                    "unreadable_file"
                };
                *batch.records_skipped.entry(counted.into()).or_insert(0) += 1;
                batch.files.push(FileReport {
                    path: key,
                    empty_reason: Some(reason),
                    ..FileReport::default()
                });
                return Ok(());
            }
        };
        let mut file_report = source.report(&key);
        let ParsedSource {
            size,
            mtime_ns,
            parsed,
            hash,
            chunks,
            retained,
            parsed_bytes,
            resumed,
            next,
            archived,
        } = source;
        let archive = archived.transpose()?.unwrap_or_default();
        batch.files_indexed += 1;
        batch.bytes_parsed += parsed_bytes;
        batch.files_resumed += u64::from(resumed);
        for (reason, n) in &parsed.skipped {
            *batch.records_skipped.entry(reason.clone()).or_insert(0) += n;
        }
        let mut new_keys: Vec<u64> = Vec::with_capacity(retained.len() + chunks.len());
        let mut seen_here = HashSet::with_capacity(retained.len() + chunks.len());
        for &key in &retained {
            // Chunks of the turns before the resume point: already indexed, still ours.
            if seen_here.insert(key) && !self.manifest.forgotten.covers(key, "") {
                new_keys.push(key);
                *self.refs.entry(key).or_insert(0) += 1;
            }
        }
        // A chunk this file had before keeps its key (the key is the text's hash) but a
        // re-parse can renumber its turns or move it to another session: rewrite the
        // document so its metadata is what a fresh index would hold. Vectors stay.
        let previous: HashSet<u64> = self
            .manifest
            .files
            .get(&key)
            .map(|old| old.keys.iter().copied().collect())
            .unwrap_or_default();
        for chunk in &chunks {
            if !seen_here.insert(chunk.key) {
                continue;
            }
            if self.manifest.forgotten.covers(chunk.key, &chunk.session_id) {
                *file_report.skipped.entry("forgotten".into()).or_insert(0) += 1;
                continue;
            }
            new_keys.push(chunk.key);
            *self.refs.entry(chunk.key).or_insert(0) += 1;
            let added = self.present.insert(chunk.key);
            if added || previous.contains(&chunk.key) || self.gone_keys.remove(&chunk.key) {
                if !added {
                    self.tantivy
                        .delete_term(self.store.lexical.key_term(chunk.key));
                }
                let project = self.project_of(chunk);
                let doc =
                    self.store
                        .lexical
                        .document(chunk, &chunk.source, &chunk.heading, &project);
                self.tantivy.add_document(doc)?;
                self.report.chunks_added += u64::from(added);
                self.lexical_dirty = true;
            }
        }
        let old = self.manifest.files.remove(&key);
        if let Some(old) = old {
            // Release the previous version's references after taking the new ones, so
            // chunks that survive the change are never deleted and re-added.
            for k in old.keys {
                self.release(k);
            }
            self.old_states.extend(old.resume_state.map(|r| r.file));
            self.archive_dropped |= old.archive.iter().any(|s| !archive.contains(s));
        }
        let resume_state = match next {
            Some((state, rechunk_from)) => {
                let (file, bytes) = resume_file_of(&key, &state)?;
                self.new_states.insert(file.clone(), bytes);
                Some(ResumeRef {
                    file,
                    head_keys: head_keys(&retained, &chunks, rechunk_from),
                })
            }
            None => None,
        };
        file_report.chunks = new_keys.len() as u64;
        if new_keys.is_empty() && file_report.empty_reason.is_none() {
            file_report.empty_reason = Some(
                if file_report.skipped.contains_key("forgotten") {
                    "forgotten"
                } else if parsed.note.is_some() {
                    "empty_file"
                } else {
                    "no_conversation"
                }
                .into(),
            );
        }
        batch.files.push(file_report);
        self.manifest.files.insert(
            key,
            FileEntry {
                size,
                mtime_ns,
                hash,
                complete_bytes: parsed.complete_bytes,
                format: parsed.format.map(|f| f.as_str().to_owned()),
                sessions: parsed.sessions.len(),
                resume_state,
                keys: new_keys,
                archive,
                gone_since: None,
            },
        );
        self.manifest_dirty = true;
        Ok(())
    }

    /// Keys of chunks that have no vectors yet (all of them before the first embedding).
    ///
    /// # Errors
    /// `Corrupt` when the vector file cannot be read.
    pub fn pending_vectors(&self) -> Result<Vec<u64>> {
        let view;
        let vectors = match &self.vectors {
            Some(v) => Some(v),
            None => {
                view = self.store.vectors()?;
                view.as_deref()
            }
        };
        let mut keys: Vec<u64> = self
            .present
            .iter()
            .filter(|k| vectors.is_none_or(|v| !v.contains(**k)))
            .copied()
            .collect();
        keys.sort_unstable();
        Ok(keys)
    }

    /// The writable vector index, loaded from disk on first use.
    fn writable_vectors(&mut self) -> Result<Option<&VectorIndex>> {
        if self.vectors.is_none() {
            let path = self.store.home.join(VECTORS_FILE);
            if let (Some(dim), true) = (self.store.meta()?.dim, path.exists()) {
                self.vectors = Some(VectorIndex::load(
                    &path,
                    dim,
                    self.store.quantization,
                    false,
                )?);
            }
        }
        Ok(self.vectors.as_ref())
    }

    /// (key, content hash, text) of chunks, for embedding. Reads the committed index.
    ///
    /// # Errors
    /// Index errors.
    pub fn chunk_texts(&self, keys: &[u64]) -> Result<Vec<(u64, String, String)>> {
        self.store.lexical.texts(keys)
    }

    /// Store embeddings: chunk `keys[i]` gets `counts[i]` consecutive windows of `flat`.
    ///
    /// # Errors
    /// `EmbedderMismatch` if the home's vectors come from another embedder; shape errors.
    pub fn add_vectors(
        &mut self,
        embedder_id: &str,
        dim: usize,
        keys: &[u64],
        counts: &[usize],
        flat: &[f32],
    ) -> Result<()> {
        if keys.len() != counts.len() || counts.iter().sum::<usize>() * dim != flat.len() {
            return Err(Error::InvalidArgument(format!(
                "add_vectors: {} keys, {} window counts and {} floats do not match dimension {dim}",
                keys.len(),
                counts.len(),
                flat.len()
            )));
        }
        self.store.check_embedder(embedder_id, dim)?;
        self.writable_vectors()?;
        let vectors = match &mut self.vectors {
            Some(v) => v,
            empty @ None => {
                if let Ok(mut meta) = self.store.meta.write() {
                    meta.embedder_id = Some(embedder_id.to_owned());
                    meta.dim = Some(dim);
                }
                write_json(&self.store.home.join(META_FILE), &self.store.meta()?)?;
                empty.insert(VectorIndex::new(dim, self.store.quantization)?)
            }
        };
        let mut batch = Vec::with_capacity(keys.len());
        let mut offset = 0;
        for (key, count) in keys.iter().zip(counts) {
            let end = offset + count * dim;
            // Chunks deleted since the caller read their texts are dropped silently.
            if self.present.contains(key) {
                batch.push((*key, &flat[offset..end]));
            }
            offset = end;
        }
        vectors.add_batch(&batch)?;
        self.vectors_dirty |= !batch.is_empty();
        Ok(())
    }

    /// Make everything written so far durable and visible: tantivy, then vectors, then the
    /// manifest. Collects chunks that no manifest entry references (left by a crash).
    ///
    /// # Errors
    /// Index or I/O errors; the previous committed state stays readable.
    pub fn commit(&mut self) -> Result<IndexReport> {
        if let Err(e) = self.commit_unguarded() {
            // Drop what the failed commit wrote (its new segments): on a full disk, a retry
            // must find the space they took free again. Best effort: the next writer collects
            // whatever is left.
            return Err(self.failed(e));
        }
        self.report.empty_roots = self.empty_roots();
        Ok(self.report.clone())
    }

    /// The scanned paths from which the manifest holds no chunk (and under which this run
    /// removed nothing: emptying a folder on purpose is not a path that gives nothing).
    fn empty_roots(&self) -> Vec<String> {
        self.roots
            .iter()
            .filter(|(_, root)| {
                let root = root.to_string_lossy();
                let prefix = format!("{}/", root.trim_end_matches('/'));
                let under = |path: &String| *path == root || path.starts_with(&prefix);
                !self.removed_paths.iter().any(under)
                    && !self
                        .manifest
                        .files
                        .iter()
                        .any(|(path, entry)| !entry.keys.is_empty() && under(path))
            })
            .map(|(named, _)| named.clone())
            .collect()
    }

    /// Go back to the last commit, deleting every file written since (see [`Writer::settle`]).
    fn discard_uncommitted(&mut self) {
        if self.settle().is_err() {
            return;
        }
        // A merge still running keeps its segment alive through the collection: collect
        // again once it has ended (a merge of this home's small segments takes milliseconds).
        for _ in 0..DISCARD_ROUNDS {
            match self
                .store
                .lexical
                .has_uncommitted_files(&self.store.lexical_dir())
            {
                Ok(true) => {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    let _ = self.tantivy.garbage_collect_files().wait();
                }
                _ => break,
            }
        }
    }

    /// Wait for every indexing thread and background merge of the tantivy writer, then go on
    /// with a fresh one at the last commit, its garbage collected. tantivy's `rollback` does
    /// not wait for them, and a merge under way holds its segments (a merge asked for them
    /// fails, their files outlive a collection).
    ///
    /// # Errors
    /// tantivy errors opening the fresh writer.
    fn settle(&mut self) -> Result<()> {
        let placeholder = tantivy::Index::create_in_ram(self.tantivy.index().schema())
            .writer_with_num_threads(1, PLACEHOLDER_MEMORY)?;
        let settled = std::mem::replace(&mut self.tantivy, placeholder);
        self.detached = true;
        // It stops waiting at the first indexing thread that failed, before the merges;
        // the loop in `discard_uncommitted` covers that case.
        let _ = settled.wait_merging_threads();
        self.tantivy = tantivy_writer(&self.store)?;
        self.detached = false;
        Ok(())
    }

    fn commit_unguarded(&mut self) -> Result<()> {
        if self.detached {
            return Err(Error::Tantivy(tantivy::TantivyError::SystemError(
                "the keyword index writer could not be reopened after a failed write: run it again"
                    .into(),
            )));
        }
        if self.manifest_dirty {
            let orphans: Vec<u64> = self
                .present
                .iter()
                .filter(|k| !self.refs.contains_key(k))
                .copied()
                .collect();
            for key in orphans {
                self.present.remove(&key);
                self.tantivy.delete_term(self.store.lexical.key_term(key));
                self.removed_keys.push(key);
                self.lexical_dirty = true;
            }
        }
        if self.lexical_dirty {
            self.merge_small_segments()?;
            self.tantivy.commit()?;
            self.store.lexical.reload()?;
            self.lexical_dirty = false;
        }
        if !self.removed_keys.is_empty() {
            self.writable_vectors()?;
        }
        if let Some(vectors) = &self.vectors {
            for key in self.removed_keys.drain(..) {
                if vectors.contains(key) {
                    vectors.remove(key)?;
                    self.vectors_dirty = true;
                }
            }
            if self.vectors_dirty {
                vectors.save(&self.store.home.join(VECTORS_FILE))?;
                self.vectors_dirty = false;
            }
        }
        self.removed_keys.clear();
        if self.manifest_dirty {
            self.write_states()?;
            write_json(&self.store.home.join(MANIFEST_FILE), &self.manifest)?;
            if !self.store.home.join(META_FILE).exists() {
                write_json(&self.store.home.join(META_FILE), &self.store.meta()?)?;
            }
            self.manifest_dirty = false;
            self.drop_old_states();
            if std::mem::take(&mut self.archive_dropped) {
                self.sweep_archive();
            }
        }
        Ok(())
    }

    /// Delete archived copies the committed manifest no longer names (merged, rewritten,
    /// forgotten). Not during a repair: the home's manifest still names its own until the
    /// rebuilt one is swapped in. Best effort: what is left is collected next time.
    fn sweep_archive(&self) {
        self.sweep_archive_keeping(&self.manifest);
    }

    /// Delete archived copies `manifest` does not name (see [`Writer::sweep_archive`]).
    fn sweep_archive_keeping(&self, manifest: &Manifest) {
        if self.rebuilds() {
            return;
        }
        let keep: HashSet<&str> = manifest
            .files
            .values()
            .flat_map(|e| e.archive.iter().map(|s| s.hash.as_str()))
            .collect();
        let _ = self.archive().sweep(&keep);
    }

    /// Write the resume states the manifest is about to name (new names only: the
    /// committed manifest's states stay as they are until it is replaced). Not flushed one
    /// by one: a state lost or torn by a crash fails its name's hash check, and its source is
    /// then parsed whole.
    fn write_states(&mut self) -> Result<()> {
        if self.new_states.is_empty() {
            return Ok(());
        }
        let dir = self.store.home.join(RESUME_DIR);
        std::fs::create_dir_all(&dir)?;
        for (name, bytes) in self.new_states.drain() {
            let path = dir.join(&name);
            if !path.exists() {
                let tmp = dir.join(format!("{name}.tmp"));
                std::fs::write(&tmp, bytes)?;
                std::fs::rename(&tmp, &path)?;
            }
        }
        Ok(())
    }

    /// Delete the resume states the committed manifest no longer names.
    fn drop_old_states(&mut self) {
        if self.old_states.is_empty() {
            return;
        }
        let named: HashSet<&str> = self
            .manifest
            .files
            .values()
            .filter_map(|e| e.resume_state.as_ref().map(|r| r.file.as_str()))
            .collect();
        let dir = self.store.home.join(RESUME_DIR);
        for name in self.old_states.drain(..) {
            if !named.contains(name.as_str()) {
                // A state left behind is never read again: failing to delete it is harmless.
                let _ = std::fs::remove_file(dir.join(name));
            }
        }
    }
}

impl Writer {
    /// Merge the committed small segments that syncs leave behind, and wait for it. tantivy's
    /// own background merges die with the writer, which a sync drops right after committing,
    /// so without this every sync would add a segment that each later commit and search
    /// opens. Done before the commit, whose new segments then stay under the policy's
    /// threshold and start no background merge to be killed half-way.
    fn merge_small_segments(&mut self) -> Result<()> {
        let small: Vec<tantivy::index::SegmentId> = self
            .tantivy
            .index()
            .searchable_segment_metas()?
            .iter()
            .filter(|m| m.num_docs() < SMALL_SEGMENT_DOCS)
            .map(tantivy::index::SegmentMeta::id)
            .collect();
        if small.len() >= MAX_SMALL_SEGMENTS {
            // Refused only when a background merge already holds some of them: harmless.
            let _ = self.tantivy.merge(&small).wait();
        }
        Ok(())
    }
}

/// The tantivy writer of `store`'s home, its uncommitted files collected.
fn tantivy_writer(store: &Store) -> Result<IndexWriter> {
    let tantivy = store.lexical.writer().map_err(|e| match e {
        Error::Tantivy(tantivy::TantivyError::LockFailure(..)) => Error::Locked(store.home.clone()),
        other => other,
    })?;
    // Small segments form their own merge layer: by default every segment under 10k docs
    // is one layer, so a few one-file syncs would re-merge a whole large segment.
    let mut policy = tantivy::indexer::LogMergePolicy::default();
    policy.set_min_layer_size(SMALL_SEGMENT_DOCS);
    tantivy.set_merge_policy(Box::new(policy));
    // Failing to collect garbage only leaves files for the next writer to collect.
    let _ = tantivy.garbage_collect_files().wait();
    Ok(tantivy)
}

/// One source file after parsing and chunking (built in parallel, applied in order).
struct ParsedSource {
    /// The source's size and modification time as read.
    size: u64,
    mtime_ns: u64,
    parsed: ParsedFile,
    hash: String,
    /// Keys of chunks kept from the previous index of the file (a resumed parse).
    retained: Vec<u64>,
    /// New chunks, in session and turn order.
    chunks: Vec<Chunk>,
    /// Bytes read and parsed to produce them.
    parsed_bytes: u64,
    /// Parsed from a resume point rather than from the start.
    resumed: bool,
    /// What the next resume needs, and the first turn it re-chunks.
    next: Option<(ResumeState, u32)>,
    /// The file's archived copy once this read is archived (transcripts only).
    archived: Option<Result<Vec<Segment>>>,
}

/// What a resumed parse needs from a file's manifest entry.
struct Prior {
    size: u64,
    hash: String,
    state: ResumeState,
    head: Vec<u64>,
}

impl Prior {
    /// `None` when the entry has no resume state, or its file is gone or damaged.
    fn of(home: &Path, path: &str, entry: &FileEntry) -> Option<Prior> {
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
fn head_keys(retained: &[u64], chunks: &[Chunk], rechunk_from: u32) -> usize {
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
    fn archive(
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
    fn report(&self, path: &str) -> FileReport {
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
    fn read(
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
        let parsed = parse::parse_file(path, format).map_err(|e| match e {
            Error::Parse { reason, .. } => format!("corrupt: {reason}"),
            Error::Io(io) => unreadable(&io),
            other => unreadable(&other),
        })?;
        Ok(Self::whole(
            parsed,
            path,
            budget,
            meta.len(),
            mtime_ns(&meta),
        ))
    }

    /// The home's archived copy of transcript `path` (gone, or to be re-read without it),
    /// read as [`ParsedSource::read`] reads the file; `None` when it cannot be read back.
    fn from_archive(
        archive: &Archive,
        path: &Path,
        budget: usize,
        entry: &FileEntry,
    ) -> Option<ParsedSource> {
        let bytes = archive.read(&entry.archive).ok()?;
        let format = entry.format.as_deref().and_then(Format::from_name);
        let parsed = parse::parse_read(&bytes, path, format).ok()?;
        let mut source = Self::whole(parsed, path, budget, entry.size, entry.mtime_ns);
        source.archived = Some(Ok(entry.archive.clone()));
        Some(source)
    }

    /// A file parsed whole, chunked.
    fn whole(
        mut parsed: ParsedFile,
        path: &Path,
        budget: usize,
        size: u64,
        mtime_ns: u64,
    ) -> ParsedSource {
        let hash = parsed.content_hash.clone().unwrap_or_default();
        let chunks = chunk_parsed(&parsed, &path.to_string_lossy(), budget);
        let next = ResumeState::of(&mut parsed, 0, budget);
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
        }
    }

    /// Parse only what was appended since `prior`; `None` when that cannot be done (the
    /// file shrank, changed before its end, or its new records do not extend the session
    /// alone): the caller then parses the whole file.
    fn resume(
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
        let mut parsed = parse::resume_file(path, &point, format, &prior.hash).ok()??;
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
        let next = ResumeState::of(&mut parsed, first_turn, budget);
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
        })
    }
}
