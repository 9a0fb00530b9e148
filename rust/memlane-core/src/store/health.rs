//! Finding and mending damage: [`Store::verify`] checks a home against itself, and the
//! pieces of a repair rebuild it in a sibling folder from the sources, carry over what the
//! sources no longer hold, and swap the rebuilt files in ([`install_rebuilt`]).
//!
//! A repair never writes over the files it replaces before the new ones are complete: the
//! rebuilt home is a normal home in `<home>/repair.tmp`, and only its last step moves the old
//! files aside (`<home>/repair.old`), the new ones in (the manifest last) and deletes the old.
//! An interrupted swap leaves a home that `verify` flags and the next repair mends.

use super::forget::forgotten_copy_fault;
use super::{
    guarded, read_json, FileEntry, Forgotten, HomeLock, HomeMeta, IndexReport, Manifest,
    ParsedSource, Store, Writer, FORGOTTEN_FILE, LEXICAL_DIR, MANIFEST_FILE, META_FILE, RESUME_DIR,
    VECTORS_FILE,
};
use crate::error::{Error, Result};
use crate::lexical::StoredChunk;
use crate::vector::{part_path, VectorIndex, MAX_PARTS};
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// Folder of a home in which a repair builds its replacement.
pub const REPAIR_DIR: &str = "repair.tmp";
/// Folder the replaced files wait in until the new ones are in place.
const REPLACED_DIR: &str = "repair.old";
/// The parts of a home a repair replaces, the manifest last: it is what says which chunks
/// are live, so until it is in place the home reads as the old one or as damaged.
const PARTS: [&str; 6] = [
    LEXICAL_DIR,
    VECTORS_FILE,
    RESUME_DIR,
    META_FILE,
    FORGOTTEN_FILE,
    MANIFEST_FILE,
];

/// How much a finding matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Something is broken: searches may miss or fail; `repair` mends it.
    Problem,
    /// Worth knowing, harmless: the next index run or `memlane embed` takes care of it.
    Note,
}

/// One thing verify found.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// Problem or note.
    pub severity: Severity,
    /// Which part: `meta`, `manifest`, `keyword_index`, `vectors`, `sources`, `resume`.
    pub part: String,
    /// The file or folder concerned.
    pub path: String,
    /// What is wrong, in one line.
    pub message: String,
}

/// What [`Store::verify`] found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Verification {
    /// The home checked.
    pub home: String,
    /// Whether the keyword index was read whole (file checksums, resume states).
    pub thorough: bool,
    /// Everything found, problems first.
    pub findings: Vec<Finding>,
    /// Source files in the manifest.
    pub files: u64,
    /// Chunks in the keyword index.
    pub chunks: u64,
    /// Of those, chunks that have vectors.
    pub chunks_with_vectors: u64,
    /// Chunks still waiting for vectors in a home that records an embedder (an interrupted
    /// or keyword-first index run): not damage, `memlane embed` fills them in.
    pub vectors_pending: u64,
}

impl Verification {
    /// No problem found (notes allowed).
    #[must_use]
    pub fn sound(&self) -> bool {
        self.findings
            .iter()
            .all(|f| f.severity != Severity::Problem)
    }

    fn add(&mut self, severity: Severity, part: &str, path: &Path, message: String) {
        self.findings.push(Finding {
            severity,
            part: part.to_owned(),
            path: path.to_string_lossy().into_owned(),
            message,
        });
    }
}

impl Store {
    /// Check this home: its metadata and manifest read back, its keyword index opens (and,
    /// when `thorough`, every index file matches its checksum), the manifest's chunks and the
    /// index's agree, the vector file matches its header and its embedder record. Never
    /// fails: whatever cannot be read is a finding. The caller holds the home's lock, so no
    /// commit is half-way through while it looks.
    #[must_use]
    pub fn verify(&self, _lock: &HomeLock, thorough: bool) -> Verification {
        let home = &self.home;
        let mut v = Verification {
            home: home.to_string_lossy().into_owned(),
            thorough,
            ..Verification::default()
        };
        let meta_path = home.join(META_FILE);
        let meta: Option<HomeMeta> = match read_json(&meta_path) {
            Ok(meta) => Some(meta),
            Err(e) => {
                v.add(Severity::Problem, "meta", &meta_path, e.cause());
                None
            }
        };
        let manifest_path = home.join(MANIFEST_FILE);
        let manifest: Option<Manifest> = match self.read_manifest() {
            Ok(m) => Some(m),
            Err(e) => {
                v.add(Severity::Problem, "manifest", &manifest_path, e.cause());
                None
            }
        };
        if let Some(m) = &manifest {
            self.verify_forgotten_copy(&mut v, &m.forgotten);
            v.files = m.files.len() as u64;
            let (transcripts, notes): (Vec<&FileEntry>, Vec<&FileEntry>) = m
                .files
                .iter()
                .filter(|(p, _)| !Path::new(p).exists())
                .map(|(_, e)| e)
                .partition(|e| e.is_transcript());
            if !transcripts.is_empty() {
                v.add(
                    Severity::Note,
                    "sources",
                    home,
                    format!(
                        "{} transcripts are gone from their folders; the home keeps their chunks \
                         and a copy of each (`memlane forget --missing` removes them)",
                        transcripts.len()
                    ),
                );
            }
            if !notes.is_empty() {
                v.add(
                    Severity::Note,
                    "sources",
                    home,
                    format!(
                        "{} notes are gone; their chunks go when their folder is indexed again",
                        notes.len()
                    ),
                );
            }
        }
        let keys = self.verify_keyword_index(&mut v, manifest.as_ref(), thorough);
        self.verify_vectors(&mut v, meta.as_ref(), keys.as_ref());
        if thorough {
            if let Some(m) = &manifest {
                verify_resume_states(&mut v, home, m);
            }
        }
        for leftover in [REPAIR_DIR, REPLACED_DIR] {
            if home.join(leftover).exists() {
                v.add(
                    Severity::Note,
                    "repair",
                    &home.join(leftover),
                    "left by an interrupted repair; the next repair removes it".into(),
                );
            }
        }
        v.findings.sort_by_key(|f| f.severity != Severity::Problem);
        v
    }

    /// The copy of the manifest's tombstones (`forgotten.json`), which a repair reads when the
    /// manifest is lost: missing, unreadable or stale, it would let forgotten sessions back (or
    /// keep lifted ones out) then. Harmless until then, and the next commit rewrites it.
    fn verify_forgotten_copy(&self, v: &mut Verification, tombstones: &Forgotten) {
        if let Some(fault) = forgotten_copy_fault(&self.home, tombstones) {
            v.add(
                Severity::Note,
                "manifest",
                &self.home.join(FORGOTTEN_FILE),
                format!(
                    "the copy of the manifest's tombstones {fault}: were the manifest lost, a \
                     repair would not know what was forgotten; the next index run rewrites it"
                ),
            );
        }
    }

    /// The keyword-index checks; the index's live keys when it could be read.
    fn verify_keyword_index(
        &self,
        v: &mut Verification,
        manifest: Option<&Manifest>,
        thorough: bool,
    ) -> Option<HashSet<u64>> {
        if let Some(damage) = &self.damage {
            v.add(
                Severity::Problem,
                "keyword_index",
                &damage.path,
                damage.reason.clone(),
            );
            return None;
        }
        let dir = self.lexical_dir();
        if thorough {
            match guarded(&dir, || self.lexical.damaged_files()) {
                Ok(files) => {
                    for file in files {
                        v.add(
                            Severity::Problem,
                            "keyword_index",
                            &dir.join(file),
                            "checksum mismatch: the file was damaged after it was written".into(),
                        );
                    }
                }
                Err(e) => v.add(Severity::Problem, "keyword_index", &dir, e.cause()),
            }
        }
        let keys = match guarded(&dir, || {
            self.lexical.reload()?;
            self.lexical.all_keys()
        }) {
            Ok(keys) => keys,
            Err(e) => {
                v.add(Severity::Problem, "keyword_index", &dir, e.cause());
                return None;
            }
        };
        v.chunks = keys.len() as u64;
        if let Some(m) = manifest {
            let listed: HashSet<u64> = m
                .files
                .values()
                .flat_map(|e| e.keys.iter().copied())
                .collect();
            let missing = listed.difference(&keys).count();
            if missing > 0 {
                v.add(
                    Severity::Problem,
                    "keyword_index",
                    &dir,
                    format!(
                        "{missing} chunks the manifest lists are missing from the keyword index"
                    ),
                );
            }
            let orphans = keys.difference(&listed).count();
            if orphans > 0 {
                v.add(
                    Severity::Note,
                    "keyword_index",
                    &dir,
                    format!(
                        "{orphans} chunks belong to no source file (left by an interrupted run; \
                         the next index run removes them)"
                    ),
                );
            }
        }
        Some(keys)
    }

    fn verify_vectors(
        &self,
        v: &mut Verification,
        meta: Option<&HomeMeta>,
        keys: Option<&HashSet<u64>>,
    ) {
        let path = self.home.join(VECTORS_FILE);
        let dim = meta.and_then(|m| m.dim);
        match (path.exists(), dim) {
            (false, None) => {}
            // memlane.json names the embedder at the first vectors added, the vector file is
            // saved a few thousand chunks later: an index stopped between the two left chunks
            // waiting for vectors, not a damaged file.
            (false, Some(_)) => {
                if keys.is_some() {
                    v.vectors_pending = v.chunks;
                }
                pending_note(v, &path);
            }
            (true, None) => v.add(
                Severity::Problem,
                "vectors",
                &path,
                "memlane.json records no embedder for these vectors".into(),
            ),
            (true, Some(dim)) => match VectorIndex::check_file(
                &path,
                dim,
                self.quantization,
                meta.map_or(1, HomeMeta::parts),
            ) {
                Err(e) => {
                    // The part's own file, when one part of several is damaged.
                    let file = match &e {
                        Error::Corrupt { path, .. } => path,
                        _ => &path,
                    };
                    v.add(Severity::Problem, "vectors", file, e.cause());
                }
                Ok(index) => {
                    let Some(keys) = keys else { return };
                    let mut windows = 0;
                    for &key in keys {
                        let n = index.window_count(key);
                        windows += n;
                        v.chunks_with_vectors += u64::from(n > 0);
                    }
                    v.vectors_pending = v.chunks - v.chunks_with_vectors;
                    pending_note(v, &path);
                    let stale = index.len().saturating_sub(windows);
                    if stale > 0 {
                        v.add(
                            Severity::Note,
                            "vectors",
                            &path,
                            format!(
                                "{stale} vectors of chunks no longer indexed (left by an interrupted \
                                 run; a repair drops them)"
                            ),
                        );
                    }
                }
            },
        }
    }

    /// The source files a rebuild reads: the manifest's, else (when the manifest cannot be
    /// read) the files the keyword index's chunks come from.
    ///
    /// # Errors
    /// `Corrupt` when neither can be read.
    pub fn sources(&self) -> Result<Vec<String>> {
        if let Ok(m) = self.read_manifest() {
            return Ok(m.files.into_keys().collect());
        }
        let mut paths = HashSet::new();
        guarded(&self.lexical_dir(), || {
            self.lexical()?.for_each_chunk(|c| {
                paths.insert(c.path);
            })
        })?;
        let mut paths: Vec<String> = paths.into_iter().collect();
        paths.sort();
        Ok(paths)
    }

    /// The chunks of each of `paths` this home still holds: by the manifest's keys when it
    /// can be read, else by scanning the keyword index. Unreadable chunks are left out.
    fn chunks_of(
        &self,
        paths: &[String],
    ) -> HashMap<String, (Option<FileEntry>, Vec<StoredChunk>)> {
        let wanted: HashSet<&str> = paths.iter().map(String::as_str).collect();
        let mut out: HashMap<String, (Option<FileEntry>, Vec<StoredChunk>)> = HashMap::new();
        if self.lexical().is_err() {
            return out;
        }
        let dir = self.lexical_dir();
        match self.read_manifest() {
            Ok(m) => {
                for (path, entry) in m.files {
                    if wanted.contains(path.as_str()) {
                        let chunks =
                            guarded(&dir, || self.lexical.get(&entry.keys)).unwrap_or_default();
                        out.insert(path, (Some(entry), chunks));
                    }
                }
            }
            Err(_) => {
                let _ = guarded(&dir, || {
                    self.lexical.for_each_chunk(|c| {
                        if wanted.contains(c.path.as_str()) {
                            out.entry(c.path.clone()).or_default().1.push(c);
                        }
                    })
                });
            }
        }
        out
    }
}

/// The note on chunks still waiting for vectors, when there are any.
fn pending_note(v: &mut Verification, path: &Path) {
    if v.vectors_pending > 0 {
        let pending = v.vectors_pending;
        v.add(
            Severity::Note,
            "vectors",
            path,
            format!("vectors pending: {pending} chunks have none yet; `memlane embed` adds them"),
        );
    }
}

/// Resume states the manifest names that are missing or damaged.
fn verify_resume_states(v: &mut Verification, home: &Path, manifest: &Manifest) {
    let unreadable = manifest
        .files
        .iter()
        .filter(|(path, e)| {
            e.resume_state
                .as_ref()
                .is_some_and(|r| super::load_resume(home, path, r).is_none())
        })
        .count();
    if unreadable > 0 {
        v.add(
            Severity::Note,
            "resume",
            &home.join(RESUME_DIR),
            format!(
                "{unreadable} resume states are unreadable: those files are parsed whole next time"
            ),
        );
    }
}

/// What [`Writer::adopt_files`] carried over.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Adopted {
    /// Files whose chunks were carried over.
    pub files: u64,
    /// Chunks carried over.
    pub chunks: u64,
    /// Files of which nothing could be read: their chunks are lost.
    pub lost: Vec<String>,
}

impl Writer {
    /// Index `paths` (transcripts a rebuild cannot read: gone or unreadable) from the copies
    /// the home kept of them ([`super::Archive`]), as `old`'s manifest names them, keeping
    /// when each was found gone; returns the paths restored (the others have no readable copy).
    ///
    /// # Errors
    /// `old`'s manifest cannot be read; index errors of this writer.
    pub fn restore_archived(&mut self, old: &Store, paths: &[String]) -> Result<Vec<String>> {
        let manifest = old.read_manifest()?;
        let archive = self.archive();
        let mut batch = IndexReport::default();
        let mut restored = Vec::new();
        for path in paths {
            let Some(entry) = manifest.files.get(path).filter(|e| !e.archive.is_empty()) else {
                continue;
            };
            let Some(source) =
                ParsedSource::from_archive(&archive, Path::new(path), self.budget, entry)
            else {
                continue;
            };
            self.add_source(&mut batch, Path::new(path), Ok(source))?;
            if let Some(new) = self.manifest.files.get_mut(path) {
                new.gone_since = entry.gone_since;
            }
            restored.push(path.clone());
        }
        self.mark_gone(
            &restored
                .iter()
                .filter(|p| !Path::new(p).exists())
                .cloned()
                .collect::<Vec<_>>(),
        );
        self.report.merge(&batch);
        Ok(restored)
    }

    /// Carry over from `old` the chunks of `paths`, source files a rebuild cannot read any
    /// more (gone or unreadable): their documents, as `old` holds them, and their manifest
    /// entries, so they stay searchable until their folder is indexed again.
    ///
    /// # Errors
    /// Index errors of this writer.
    pub fn adopt_files(&mut self, old: &Store, paths: &[String]) -> Result<Adopted> {
        let mut found = old.chunks_of(paths);
        let mut report = Adopted::default();
        for path in paths {
            let (entry, chunks) = found.remove(path).unwrap_or_default();
            if chunks.is_empty() {
                report.lost.push(path.clone());
                continue;
            }
            let mut keys = Vec::with_capacity(chunks.len());
            for chunk in &chunks {
                keys.push(chunk.key);
                *self.refs.entry(chunk.key).or_insert(0) += 1;
                if self.present.insert(chunk.key) {
                    self.tantivy
                        .add_document(self.store.lexical.document_of(chunk))?;
                    report.chunks += 1;
                    self.lexical_dirty = true;
                }
            }
            let entry = entry.unwrap_or_default();
            self.manifest.files.insert(
                path.clone(),
                FileEntry {
                    keys,
                    resume_state: None,
                    sessions: entry.sessions.max(
                        chunks
                            .iter()
                            .map(|c| c.session_id.as_str())
                            .collect::<HashSet<_>>()
                            .len(),
                    ),
                    ..entry
                },
            );
            self.manifest_dirty = true;
            report.files += 1;
        }
        Ok(report)
    }

    /// Give chunks that have no vectors the vectors `old` holds for them (when its vector
    /// file reads back and was built by `embedder_id`). Returns how many chunks got some.
    ///
    /// # Errors
    /// Vector index errors of this writer.
    pub fn adopt_vectors(&mut self, old: &Store, embedder_id: &str) -> Result<u64> {
        let meta: HomeMeta = read_json(&old.home.join(META_FILE)).unwrap_or_default();
        let (Some(dim), Some(id)) = (meta.dim, meta.embedder_id.as_deref()) else {
            return Ok(0);
        };
        if id != embedder_id {
            return Ok(0);
        }
        let parts = meta.parts();
        let Ok(source) =
            VectorIndex::check_file(&old.home.join(VECTORS_FILE), dim, old.quantization, parts)
        else {
            return Ok(0);
        };
        let pending = self.pending_vectors()?;
        let found: Vec<(u64, Vec<f32>)> = pending
            .into_iter()
            .map(|key| (key, source.windows(key)))
            .filter(|(_, w)| !w.is_empty())
            .collect();
        if found.is_empty() {
            return Ok(0);
        }
        let keys: Vec<u64> = found.iter().map(|(k, _)| *k).collect();
        let counts: Vec<usize> = found.iter().map(|(_, w)| w.len() / dim).collect();
        let flat: Vec<f32> = found.into_iter().flat_map(|(_, w)| w).collect();
        self.add_vectors(embedder_id, dim, &keys, &counts, &flat, parts)?;
        Ok(keys.len() as u64)
    }
}

/// Replace the files of the locked home with those of the home rebuilt in its
/// [`REPAIR_DIR`]: the old ones are moved aside, the new ones in (the manifest last), then
/// the old ones are deleted and the rebuilt folder removed.
///
/// # Errors
/// I/O errors; the old files are then still in `repair.old` (see the module docs).
pub fn install_rebuilt(lock: &HomeLock) -> Result<()> {
    let home = lock.home();
    let rebuilt = home.join(REPAIR_DIR);
    if !rebuilt.join(MANIFEST_FILE).exists() {
        return Err(Error::InvalidArgument(format!(
            "no rebuilt home at {}: nothing to install",
            rebuilt.display()
        )));
    }
    let replaced = home.join(REPLACED_DIR);
    remove_any(&replaced)?;
    std::fs::create_dir_all(&replaced)?;
    // A vector index in parts is several files, each moved where the first is, the first last.
    let mut names: Vec<PathBuf> = Vec::new();
    for part in PARTS {
        if part == VECTORS_FILE {
            names.extend((0..MAX_PARTS).rev().map(|n| part_path(Path::new(part), n)));
        } else {
            names.push(PathBuf::from(part));
        }
    }
    for part in names {
        let (old, new) = (home.join(&part), rebuilt.join(&part));
        let (was, comes) = (old.exists(), new.exists());
        if was {
            std::fs::rename(&old, replaced.join(part))?;
        }
        if comes {
            std::fs::rename(&new, &old)?;
        }
        if was || comes {
            crate::durable::sync_dir(home)?;
        }
    }
    remove_any(&replaced)?;
    remove_any(&rebuilt)?;
    Ok(())
}

/// Remove what a previous, interrupted repair left (before starting a new one).
///
/// # Errors
/// I/O errors.
pub fn clear_repair_leftovers(lock: &HomeLock) -> Result<()> {
    remove_any(&lock.home().join(REPAIR_DIR))?;
    remove_any(&lock.home().join(REPLACED_DIR))
}

fn remove_any(path: &PathBuf) -> Result<()> {
    let removed = if path.is_dir() {
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    };
    match removed {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
        _ => Ok(()),
    }
}
