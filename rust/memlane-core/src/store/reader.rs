//! An open home for reading: its keyword index (or why it cannot be read), its vectors
//! reloaded when another process changed them, its records, and what it holds.

use super::{
    archive, read_json, Archive, HomeMeta, Manifest, LEXICAL_DIR, MANIFEST_FILE, META_FILE,
    VECTORS_FILE,
};
use crate::error::{Error, Result};
use crate::lexical::{Lexical, SessionSummary, StoredChunk};
use crate::vector::{Quantization, VectorIndex};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::SystemTime;

const FORMAT_VERSION: u32 = 1;

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
    /// Graphs the vector index is split into (see [`crate::vector`]): chosen at its first
    /// vectors.
    #[serde(default = "one")]
    pub vector_parts: usize,
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

fn one() -> usize {
    1
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
pub(super) fn library_of(path: &Path) -> String {
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
pub(super) struct Damage {
    pub(super) path: PathBuf,
    pub(super) reason: String,
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
pub(super) fn guarded<T>(path: &Path, f: impl FnOnce() -> Result<T>) -> Result<T> {
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
    pub(super) home: PathBuf,
    /// The keyword index; an empty one in memory when `damage` is set, never searched then.
    pub(super) lexical: Lexical,
    /// Why the keyword index on disk cannot be read, if it cannot.
    pub(super) damage: Option<Damage>,
    pub(super) quantization: Quantization,
    view: Mutex<VectorView>,
    pub(super) meta: RwLock<HomeMeta>,
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
    pub(super) fn read_manifest(&self) -> Result<Manifest> {
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
    pub(super) fn lexical(&self) -> Result<&Lexical> {
        match &self.damage {
            Some(damage) => Err(damage.error()),
            None => Ok(&self.lexical),
        }
    }

    /// The keyword index's folder (what a panic while reading it is blamed on).
    pub(super) fn lexical_dir(&self) -> PathBuf {
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

    pub(super) fn check_embedder(&self, embedder_id: &str, dim: usize) -> Result<()> {
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
    pub(super) fn vectors(&self) -> Result<Option<Arc<VectorIndex>>> {
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
                    meta.parts(),
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

    /// One row per transcript session, latest first, from the index's terms and fast fields
    /// alone (no stored chunk is read): see [`Lexical::sessions`].
    ///
    /// # Errors
    /// Index errors.
    pub fn sessions(&self) -> Result<Vec<SessionSummary>> {
        let lexical = self.lexical()?;
        guarded(&self.lexical_dir(), || {
            lexical.reload()?;
            lexical.sessions()
        })
    }

    /// Keys of every live chunk of `session_id` (any source), ascending.
    ///
    /// # Errors
    /// Index errors.
    pub fn session_keys(&self, session_id: &str) -> Result<Vec<u64>> {
        let lexical = self.lexical()?;
        guarded(&self.lexical_dir(), || {
            lexical.reload()?;
            lexical.session_keys(session_id)
        })
    }

    /// Files per detected format (`unknown` for a file none was detected in), from the manifest.
    ///
    /// # Errors
    /// I/O or manifest errors.
    pub fn formats(&self) -> Result<BTreeMap<String, u64>> {
        let mut out = BTreeMap::new();
        for f in self.read_manifest()?.files.values() {
            let format = f.format.as_deref().unwrap_or("unknown");
            *out.entry(format.to_owned()).or_insert(0) += 1;
        }
        Ok(out)
    }

    /// Whether each of `keys` has a vector in the current vector index.
    ///
    /// # Errors
    /// Vector index errors.
    pub fn has_vectors(&self, keys: &[u64]) -> Result<Vec<bool>> {
        let vectors = self.vectors()?;
        Ok(keys
            .iter()
            .map(|k| vectors.as_ref().is_some_and(|v| v.contains(*k)))
            .collect())
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
            vector_parts: meta.parts(),
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
