//! The one writer of a home: scans the roots against the manifest, parses and chunks the
//! files that changed (in parallel), and files their chunks and vectors until a commit.

use super::commit::tantivy_writer;
use super::manifest::{mtime_ns, resume_file_of, write_json};
use super::reader::library_of;
use super::source::{head_keys, Prior, NOT_A_REGULAR_FILE};
use super::{
    guarded, read_json, Archive, FileEntry, FileReport, Forgotten, HomeLock, HomeMeta, IndexReport,
    Manifest, ParsedSource, ResumeRef, ScanPlan, Segment, Store, META_FILE, REPAIR_DIR, RESUME_DIR,
    VECTORS_FILE,
};
use crate::chunk::{Chunk, DEFAULT_BUDGET_TOKENS};
use crate::error::{Error, Result};
use crate::model::{Format, ParsedFile};
use crate::parse;
use crate::project::Projects;
use crate::vector::VectorIndex;
use rayon::prelude::*;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tantivy::{IndexWriter, TantivyDocument};

/// The one writer of a home: holds `write.lock` until dropped.
pub struct Writer {
    pub(super) store: Arc<Store>,
    _lock: HomeLock,
    pub(super) tantivy: IndexWriter,
    pub(super) manifest: Manifest,
    /// Keys live in tantivy (committed or added in this run).
    pub(super) present: HashSet<u64>,
    /// Chunks of transcripts whose files are gone, taken at the start of an index run: one a
    /// live file also holds (a moved or copied transcript) is filed under that file again.
    gone_keys: HashSet<u64>,
    /// Archived copies stopped being named (merged, rewritten, forgotten): the next commit
    /// sweeps the archive (listing it on every commit would cost a turn-by-turn index).
    pub(super) archive_dropped: bool,
    /// Files taken to be read and not yet added ([`Writer::files_to_read`]): their archived
    /// copies are written before the manifest names them, so no commit sweeps the archive then.
    pub(super) reads_out: usize,
    /// How many manifest files reference each key.
    pub(super) refs: HashMap<u64, u32>,
    /// The writable vector index, loaded only when vectors are added or removed: a no-op
    /// re-index must not pay for reading hundreds of MB of vectors.
    pub(super) vectors: Option<VectorIndex>,
    /// Vectors in the vector file when it was loaded or last saved (see `commit_vectors`).
    pub(super) saved_vectors: usize,
    pub(super) removed_keys: Vec<u64>,
    /// Resume state files to write before the manifest, by name.
    pub(super) new_states: HashMap<String, Vec<u8>>,
    /// Resume state files the manifest stops naming, deleted after it is written.
    pub(super) old_states: Vec<String>,
    pub(super) manifest_dirty: bool,
    /// The copy of the tombstones beside the manifest does not hold them: the next commit
    /// rewrites it, whether or not the manifest changed.
    pub(super) forgotten_copy_stale: bool,
    pub(super) lexical_dirty: bool,
    pub(super) vectors_dirty: bool,
    format: Option<Format>,
    pub(super) budget: usize,
    /// Paths scanned, as named and canonical: a named path that gives nothing is reported.
    pub(super) roots: Vec<(String, PathBuf)>,
    /// Source files whose chunks this writer removed because they are gone.
    pub(super) removed_paths: Vec<String>,
    /// A forget deleted chunks whose text must leave the disk (see `purge_deleted`).
    pub(super) purge: bool,
    /// Project keys of the working directories and library folders met so far.
    projects: Arc<Projects>,
    /// `settle` could not reopen the tantivy writer: `tantivy` is a stand-in in memory, and
    /// a commit must not write a manifest naming chunks that never reached the disk.
    pub(super) detached: bool,
    /// (key, content hash, text) of the chunks added since the last
    /// [`Writer::take_added_texts`], while a run that embeds asks for them
    /// ([`Writer::collect_added_texts`]): its model can start on a batch's chunks before the
    /// commit that makes them readable. None while not asked for: no text is copied.
    added_texts: Option<Vec<(u64, String, String)>>,
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
        let forgotten_copy_stale =
            super::forget::forgotten_copy_fault(&store.home, &manifest.forgotten).is_some();
        Ok(Writer {
            store,
            _lock: lock,
            tantivy,
            manifest,
            present,
            refs,
            vectors: None,
            saved_vectors: 0,
            removed_keys: Vec::new(),
            new_states: HashMap::new(),
            old_states: Vec::new(),
            manifest_dirty: false,
            forgotten_copy_stale,
            lexical_dirty: false,
            vectors_dirty: false,
            format,
            budget: DEFAULT_BUDGET_TOKENS,
            roots: Vec::new(),
            removed_paths: Vec::new(),
            purge: false,
            projects: Arc::default(),
            detached: false,
            added_texts: None,
            report: IndexReport::default(),
            gone_keys: HashSet::new(),
            archive_dropped: false,
            reads_out: 0,
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
    pub(super) fn drop_chunk(&mut self, key: u64) {
        if self.present.remove(&key) {
            self.tantivy.delete_term(self.store.lexical.key_term(key));
            self.removed_keys.push(key);
            self.report.chunks_removed += 1;
            self.lexical_dirty = true;
        }
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
    pub(super) fn archive(&self) -> Archive {
        let home = &self.store.home;
        match home.parent() {
            Some(parent) if self.rebuilds() => Archive::of(parent),
            _ => Archive::of(home),
        }
    }

    /// Whether this writer rebuilds a home in its repair folder (see [`Writer::archive`]).
    pub(super) fn rebuilds(&self) -> bool {
        self.store.home.file_name() == Some(std::ffi::OsStr::new(REPAIR_DIR))
    }

    /// Parse, chunk and add `paths` (in parallel over files). Nothing is visible to readers
    /// before [`Writer::commit`].
    ///
    /// # Errors
    /// Index errors; unreadable files are counted as skipped, not raised.
    pub fn index_files(&mut self, paths: &[PathBuf]) -> Result<IndexReport> {
        let read = self.files_to_read(paths).read();
        self.add_read(read)
    }

    /// What reading `paths` needs of this writer, taken so that they can be read without it
    /// ([`FileReads::read`]): while the pool reads, a thread that embeds can add its vectors.
    /// Give what they gave to [`Writer::add_read`]; a commit until then leaves the archive's
    /// sweep to a later one.
    #[must_use]
    pub fn files_to_read(&mut self, paths: &[PathBuf]) -> FileReads {
        self.reads_out += 1;
        let files = paths
            .iter()
            .map(|path| {
                let entry = self.manifest.files.get(path.to_string_lossy().as_ref());
                (path.clone(), entry.cloned())
            })
            .collect();
        FileReads {
            reading: Reading {
                format: self.format,
                budget: self.budget,
                store: Arc::clone(&self.store),
                archive: self.archive(),
                forgotten: self.manifest.forgotten.clone(),
                projects: Arc::clone(&self.projects),
            },
            files,
        }
    }

    /// Add what [`FileReads::read`] gave, file by file in order, while tantivy's indexing
    /// threads take the chunks in.
    ///
    /// # Errors
    /// Index errors (the writer is then back at its last commit).
    pub fn add_read(&mut self, read: FilesRead) -> Result<IndexReport> {
        self.reads_out = self.reads_out.saturating_sub(1);
        self.add_read_unguarded(read).map_err(|e| self.failed(e))
    }

    fn add_read_unguarded(&mut self, read: FilesRead) -> Result<IndexReport> {
        self.gone_keys = self
            .manifest
            .files
            .values()
            .filter(|e| e.gone_since.is_some())
            .flat_map(|e| e.keys.iter().copied())
            .collect();
        let mut batch = IndexReport::default();
        for (path, result) in read.0 {
            self.add_source(&mut batch, &path, result)?;
        }
        self.report.merge(&IndexReport {
            files_seen: 0,
            ..batch.clone()
        });
        Ok(batch)
    }

    /// Add what reading `path` gave (its chunks and manifest entry) to the index and to `batch`.
    pub(super) fn add_source(
        &mut self,
        batch: &mut IndexReport,
        path: &Path,
        result: std::result::Result<ParsedSource, String>,
    ) -> Result<()> {
        let key = path.to_string_lossy().into_owned();
        let source = match result {
            Ok(source) => source,
            Err(reason) => {
                unreadable(batch, key, reason);
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
            documents,
        } = source;
        let archive = archived.transpose()?.unwrap_or_default();
        batch.files_indexed += 1;
        batch.bytes_parsed += parsed_bytes;
        batch.files_resumed += u64::from(resumed);
        for (reason, n) in &parsed.skipped {
            *batch.records_skipped.entry(reason.clone()).or_insert(0) += n;
        }
        // Built where the file was read; a source read some other way gets them here.
        let documents = if documents.len() == chunks.len() {
            documents
        } else {
            documents_of(&self.store, &self.projects, &chunks)
        };
        let new_keys = self.take_chunks(&key, &retained, &chunks, documents, &mut file_report)?;
        if let Some(old) = self.manifest.files.remove(&key) {
            self.release_entry(old, &archive);
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
            file_report.empty_reason = Some(no_chunk_reason(&file_report, &parsed).into());
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

    /// Take a reference to each chunk file `key` now gives, the `retained` ones first, and
    /// add to the keyword index those it lacks or must rewrite: the file's keys, in order,
    /// each once. A chunk that a tombstone covers is left out (counted in `file_report`).
    fn take_chunks(
        &mut self,
        key: &str,
        retained: &[u64],
        chunks: &[Chunk],
        documents: Vec<TantivyDocument>,
        file_report: &mut FileReport,
    ) -> Result<Vec<u64>> {
        let mut new_keys: Vec<u64> = Vec::with_capacity(retained.len() + chunks.len());
        let mut seen_here = HashSet::with_capacity(retained.len() + chunks.len());
        for &key in retained {
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
            .get(key)
            .map(|old| old.keys.iter().copied().collect())
            .unwrap_or_default();
        for (chunk, doc) in chunks.iter().zip(documents) {
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
            if let (true, Some(texts)) = (added, &mut self.added_texts) {
                texts.push((chunk.key, chunk.content_hash.clone(), chunk.text.clone()));
            }
            if added || previous.contains(&chunk.key) || self.gone_keys.remove(&chunk.key) {
                if !added {
                    self.tantivy
                        .delete_term(self.store.lexical.key_term(chunk.key));
                }
                self.tantivy.add_document(doc)?;
                self.report.chunks_added += u64::from(added);
                self.lexical_dirty = true;
            }
        }
        Ok(new_keys)
    }

    /// Let go of what a file's previous manifest entry held, once its new version took its
    /// references (so chunks that survive the change are never deleted and re-added): its
    /// chunks, its resume state, and the archived segments `archive` no longer holds.
    fn release_entry(&mut self, old: FileEntry, archive: &[Segment]) {
        for k in old.keys {
            self.release(k);
        }
        self.old_states.extend(old.resume_state.map(|r| r.file));
        self.archive_dropped |= old.archive.iter().any(|s| !archive.contains(s));
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
    pub(super) fn writable_vectors(&mut self) -> Result<Option<&VectorIndex>> {
        if self.vectors.is_none() {
            let path = self.store.home.join(VECTORS_FILE);
            if let (Some(dim), true) = (self.store.meta()?.dim, path.exists()) {
                let loaded = VectorIndex::load(
                    &path,
                    dim,
                    self.store.quantization,
                    false,
                    self.store.meta()?.parts(),
                )?;
                self.saved_vectors = loaded.len();
                self.vectors = Some(loaded);
            }
        }
        Ok(self.vectors.as_ref())
    }

    /// From now on, keep the text of each chunk added for [`Writer::take_added_texts`], or with
    /// `on` false stop (dropping what was kept): a run asks batch by batch, only while its model
    /// keeps up, so a batch whose texts it would not hand over costs no copy.
    pub fn collect_added_texts(&mut self, on: bool) {
        if on {
            self.added_texts.get_or_insert_with(Vec::new);
        } else {
            self.added_texts = None;
        }
    }

    /// (key, content hash, text) of the chunks added since the last call (none unless
    /// [`Writer::collect_added_texts`] was called): what [`Writer::chunk_texts`] gives for them
    /// once they are committed.
    pub fn take_added_texts(&mut self) -> Vec<(u64, String, String)> {
        self.added_texts
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// (key, content hash, text) of chunks, for embedding. Reads the committed index.
    ///
    /// # Errors
    /// Index errors.
    pub fn chunk_texts(&self, keys: &[u64]) -> Result<Vec<(u64, String, String)>> {
        self.store.lexical.texts(keys)
    }

    /// Store embeddings: chunk `keys[i]` gets `counts[i]` consecutive windows of `flat`.
    /// `parts` is how many graphs the vector index is split into when this call creates it
    /// (see [`crate::vector`]); an existing index keeps its own.
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
        parts: usize,
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
                let index = VectorIndex::new(dim, self.store.quantization, parts)?;
                if let Ok(mut meta) = self.store.meta.write() {
                    meta.embedder_id = Some(embedder_id.to_owned());
                    meta.dim = Some(dim);
                    meta.vector_parts = (parts > 1).then_some(parts);
                }
                write_json(&self.store.home.join(META_FILE), &self.store.meta()?)?;
                empty.insert(index)
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
}

/// Count a file that could not be read at all in `batch`, with `reason` as its empty reason.
fn unreadable(batch: &mut IndexReport, path: String, reason: String) {
    let counted = if reason == NOT_A_REGULAR_FILE {
        NOT_A_REGULAR_FILE
    } else {
        "unreadable_file"
    };
    *batch.records_skipped.entry(counted.into()).or_insert(0) += 1;
    batch.files.push(FileReport {
        path,
        empty_reason: Some(reason),
        ..FileReport::default()
    });
}

/// Why a file that was read gave no chunk: all of them forgotten, an empty note, or a
/// transcript without a conversation.
fn no_chunk_reason(file_report: &FileReport, parsed: &ParsedFile) -> &'static str {
    if file_report.skipped.contains_key("forgotten") {
        "forgotten"
    } else if parsed.note.is_some() {
        "empty_file"
    } else {
        "no_conversation"
    }
}

/// Files to read for a writer, with what reading them needs of it (see [`Writer::files_to_read`]).
pub struct FileReads {
    reading: Reading,
    files: Vec<(PathBuf, Option<FileEntry>)>,
}

/// What reading files gave, for [`Writer::add_read`].
pub struct FilesRead(Vec<(PathBuf, std::result::Result<ParsedSource, String>)>);

impl FileReads {
    /// Read the files side by side on the reading pool (which yields to the rest of the
    /// process, see [`crate::background`]): each parsed (or resumed), chunked, archived, and
    /// its chunks' keyword documents built.
    #[must_use]
    pub fn read(self) -> FilesRead {
        let reading = &self.reading;
        let files = self.files;
        let read = || {
            files
                .into_par_iter()
                .map(|(path, entry)| {
                    let result = reading.read(&path, entry.as_ref());
                    (path, result)
                })
                .collect()
        };
        FilesRead(match crate::background::reading_pool() {
            Some(pool) => pool.install(read),
            None => read(),
        })
    }
}

/// What reading a file for the index needs of its writer, shared by the pool's threads: files
/// are read there, and each chunk's document is built there, off the thread that adds them.
struct Reading {
    format: Option<Format>,
    budget: usize,
    store: Arc<Store>,
    archive: Archive,
    forgotten: Forgotten,
    projects: Arc<Projects>,
}

impl Reading {
    /// Read `path`: resumed from its manifest `entry`'s resume state when it only grew, else
    /// parsed whole; chunked, and its archived copy brought up to date. `Err` holds why it
    /// could not be read at all.
    fn read(
        &self,
        path: &Path,
        entry: Option<&FileEntry>,
    ) -> std::result::Result<ParsedSource, String> {
        // A log's format is decided by the index that first gave it chunks: a record
        // appended to a short file must not sway detection and drop its turns.
        let format = self.format.or_else(|| {
            entry
                .filter(|e| !e.keys.is_empty())
                .and_then(|e| Format::from_name(e.format.as_deref()?))
                .filter(|f| f.is_line_log())
        });
        let resumed = entry
            .and_then(|e| Prior::of(&self.store.home, &path.to_string_lossy(), e))
            .and_then(|p| ParsedSource::resume(path, format, self.budget, p));
        let source = match resumed {
            Some(source) => Ok(source),
            None => ParsedSource::read(path, format, self.budget),
        };
        source.map(|mut s| {
            if !self.forgotten.names_file(&path.to_string_lossy()) {
                s.archived = s.archive(&self.archive, path, entry);
            }
            s.documents = documents_of(&self.store, &self.projects, &s.chunks);
            s
        })
    }
}

/// The keyword index's document of each of `chunks`, filed under its project.
fn documents_of(store: &Store, projects: &Projects, chunks: &[Chunk]) -> Vec<TantivyDocument> {
    chunks
        .iter()
        .map(|c| {
            let project = project_of(projects, c);
            store.lexical.document(c, &c.source, &c.heading, &project)
        })
        .collect()
}

/// The project `chunk` is filed under: the repository of the directory its turns were
/// written in; for a note, of its library folder (see [`library_of`]).
fn project_of(projects: &Projects, chunk: &Chunk) -> String {
    let dir = match &chunk.cwd {
        Some(cwd) => cwd.clone(),
        None if chunk.source == "knowledge" => library_of(Path::new(&chunk.path)),
        None => return String::new(),
    };
    projects.of(&dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::commit::MIN_VECTORS_PER_SAVE;
    use crate::vector::Quantization;

    fn transcript(path: &Path, session: &str) {
        let line = |role: &str, text: &str| {
            serde_json::json!({"session_id": session, "role": role, "content": text}).to_string()
        };
        let lines = [
            line("user", &format!("what does {session} do?")),
            line("assistant", &format!("{session} rotates the keys nightly")),
        ];
        std::fs::write(path, lines.join("\n") + "\n").unwrap();
    }

    #[test]
    fn a_commit_while_files_are_read_keeps_the_copies_they_archive() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.jsonl"), dir.path().join("b.jsonl"));
        transcript(&a, "alpha");
        let home = dir.path().join("home");
        let store = Store::open(&home, Quantization::F16).unwrap();
        let mut w = Writer::new(store.clone(), None).unwrap();
        w.index_files(std::slice::from_ref(&a)).unwrap();
        w.commit().unwrap();
        let copy_of = |path: &Path| {
            let manifest = store.read_manifest().unwrap();
            let entry = &manifest.files[path.to_string_lossy().as_ref()];
            Archive::of(&home).path_of(&entry.archive[0].hash)
        };
        let old_a = copy_of(&a);
        // `a` rewritten: its old copy goes at a commit's sweep. `b` is read meanwhile (as the
        // binding reads, without the writer) and archived before the manifest names it.
        transcript(&a, "gamma");
        transcript(&b, "beta");
        w.index_files(std::slice::from_ref(&a)).unwrap();
        let read = w.files_to_read(std::slice::from_ref(&b)).read();
        w.commit().unwrap(); // another thread's commit, while `b` is read
        w.add_read(read).unwrap();
        w.commit().unwrap();
        assert!(copy_of(&b).exists(), "b's archived copy was swept");
        assert!(copy_of(&a).exists() && !old_a.exists());
    }

    #[test]
    fn added_texts_are_what_the_commit_stores() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.jsonl"), dir.path().join("b.jsonl"));
        transcript(&a, "alpha");
        transcript(&b, "beta");
        let store = Store::open(&dir.path().join("home"), Quantization::F16).unwrap();
        let mut w = Writer::new(store, None).unwrap();
        w.index_files(std::slice::from_ref(&a)).unwrap();
        assert!(w.take_added_texts().is_empty(), "kept only when asked for");
        w.collect_added_texts(true);
        w.index_files(std::slice::from_ref(&b)).unwrap();
        let added = w.take_added_texts();
        assert_eq!(added.len(), 1);
        assert!(added[0].2.contains("beta rotates the keys") && w.take_added_texts().is_empty());
        let c = dir.path().join("c.jsonl");
        transcript(&c, "gamma");
        w.collect_added_texts(false);
        w.index_files(std::slice::from_ref(&c)).unwrap();
        assert!(
            w.take_added_texts().is_empty(),
            "kept after being told to stop"
        );
        w.commit().unwrap();
        let keys: Vec<u64> = added.iter().map(|(k, _, _)| *k).collect();
        assert_eq!(w.chunk_texts(&keys).unwrap(), added);
    }

    /// Adds `n` one-window vectors under fresh keys (taken as present: only the vector index
    /// is under test).
    fn add_windows(w: &mut Writer, from: u64, n: u64) {
        let keys: Vec<u64> = (from..from + n).collect();
        w.present.extend(&keys);
        #[allow(clippy::cast_precision_loss)] // distinct directions, no more
        let flat: Vec<f32> = keys.iter().flat_map(|&k| [1.0, k as f32]).collect();
        w.add_vectors("fake/1", 2, &keys, &vec![1; keys.len()], &flat, 1)
            .unwrap();
    }

    #[test]
    fn vectors_are_saved_when_half_again_as_many_were_added_and_their_chunks_are_committed() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("home"), Quantization::F16).unwrap();
        let mut w = Writer::new(store.clone(), None).unwrap();
        let saved = |store: &Store| store.vectors().unwrap().map_or(0, |v| v.len());
        let min = MIN_VECTORS_PER_SAVE as u64;
        add_windows(&mut w, 0, min - 1);
        w.commit_vectors().unwrap();
        assert_eq!(saved(&store), 0, "fewer than the least worth a save");
        add_windows(&mut w, min - 1, 1);
        w.commit_vectors().unwrap();
        assert_eq!(saved(&store), MIN_VECTORS_PER_SAVE);
        // Then at least the least again, then half again as many as saved: 8,192 -> 16,384 ->
        // 24,576 -> 36,864.
        add_windows(&mut w, min, min);
        w.commit_vectors().unwrap();
        add_windows(&mut w, 2 * min, min);
        w.commit_vectors().unwrap();
        assert_eq!(saved(&store), 3 * MIN_VECTORS_PER_SAVE);
        add_windows(&mut w, 3 * min, min + min / 2 - 1);
        w.commit_vectors().unwrap();
        assert_eq!(saved(&store), 3 * MIN_VECTORS_PER_SAVE);
        add_windows(&mut w, 5 * min, 1);
        // Chunks added and not committed hold the save back until their commit.
        w.lexical_dirty = true;
        w.commit_vectors().unwrap();
        assert_eq!(saved(&store), 3 * MIN_VECTORS_PER_SAVE);
        w.lexical_dirty = false;
        w.commit_vectors().unwrap();
        assert_eq!(saved(&store), 9 * MIN_VECTORS_PER_SAVE / 2);
        // A commit saves whatever there is.
        add_windows(&mut w, 6 * min, 1);
        w.commit().unwrap();
        assert_eq!(saved(&store), 9 * MIN_VECTORS_PER_SAVE / 2 + 1);
    }
}
