//! Committing a writer's work (tantivy, then vectors, then resume states and the manifest,
//! each atomic), and going back to the last commit when a write fails.

use super::manifest::write_json;
use super::{
    IndexReport, Manifest, Store, Writer, FORGOTTEN_FILE, MANIFEST_FILE, META_FILE, RESUME_DIR,
    VECTORS_FILE,
};
use crate::error::{Error, Result};
use rayon::prelude::*;
use std::collections::HashSet;
use tantivy::IndexWriter;

/// Free bytes under which a keyword-index write that failed is taken for a full disk.
const DISK_FULL_BYTES: u64 = 1 << 20;
/// Segments under this many chunks count as small: a sync of a few files makes one.
const SMALL_SEGMENT_DOCS: u32 = 1_000;
/// Small segments tolerated before a commit merges them into one.
const MAX_SMALL_SEGMENTS: usize = 8;
/// The least memory tantivy lets a writer have (see `Writer::discard_uncommitted`).
const PLACEHOLDER_MEMORY: usize = 15 * 1024 * 1024;
/// How many times (20 ms apart) a failed commit collects the segments of merges still running.
const DISCARD_ROUNDS: usize = 100;
/// The fewest vectors added since the last save for which [`Writer::commit_vectors`] saves.
pub(super) const MIN_VECTORS_PER_SAVE: usize = 8_192;

impl Writer {
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

    /// Make the vectors added so far durable, and nothing else, once there are enough of them:
    /// a backfill calls it as it goes, also while another thread adds chunks and commits them.
    ///
    /// A save writes the whole vector file, so it waits until half again as many vectors as
    /// the last save held were added (at least [`MIN_VECTORS_PER_SAVE`]): every save together
    /// then costs a few times the last one, whatever the home's size (a save every few
    /// thousand chunks rewrote a 1 TB archive's gigabytes of vectors thousands of times). What
    /// a crash loses is in the embedding cache. The backfill also embeds chunks added and not
    /// yet committed ([`Writer::take_added_texts`]); while there are any, the vectors wait for
    /// the commit that saves them with their chunks, so the vector file on disk holds only
    /// vectors of chunks the committed keyword index holds.
    ///
    /// # Errors
    /// I/O errors writing the vector file (the one on disk stays as it was).
    pub fn commit_vectors(&mut self) -> Result<()> {
        let unsaved = self
            .vectors
            .as_ref()
            .map_or(0, |v| v.len().saturating_sub(self.saved_vectors));
        if self.lexical_dirty || unsaved < (self.saved_vectors / 2).max(MIN_VECTORS_PER_SAVE) {
            return Ok(());
        }
        self.save_vectors()
    }

    /// Save the vector index if it changed since it was loaded or last saved.
    fn save_vectors(&mut self) -> Result<()> {
        if let (Some(vectors), true) = (&self.vectors, self.vectors_dirty) {
            vectors
                .save(&self.store.home.join(VECTORS_FILE))
                .map_err(|e| e.disk_full_at(&self.store.home))?;
            self.vectors_dirty = false;
            self.saved_vectors = vectors.len();
        }
        Ok(())
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

    /// After a write that failed: back to the last commit, the copies archived since deleted
    /// (on a full disk a retry must find their space free), and the error said as a full
    /// disk when it is one. tantivy's indexing thread dies without its cause when a segment
    /// cannot be written, so a keyword-index error with the disk (near) full is one too.
    pub(super) fn failed(&mut self, e: Error) -> Error {
        self.discard_uncommitted();
        if let (0, Ok(committed)) = (self.reads_out, self.store.read_manifest()) {
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
    pub(super) fn settle(&mut self) -> Result<()> {
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
        }
        self.save_vectors()?;
        self.removed_keys.clear();
        if self.manifest_dirty {
            self.write_states()?;
            self.write_forgotten_copy()?;
            write_json(&self.store.home.join(MANIFEST_FILE), &self.manifest)?;
            if !self.store.home.join(META_FILE).exists() {
                write_json(&self.store.home.join(META_FILE), &self.store.meta()?)?;
            }
            self.manifest_dirty = false;
            self.drop_old_states();
            // Not while files are being read: their new copies are not in the manifest yet.
            if self.reads_out == 0 && std::mem::take(&mut self.archive_dropped) {
                self.sweep_archive();
            }
        } else if self.forgotten_copy_stale {
            self.write_forgotten_copy()?;
        }
        Ok(())
    }

    /// Copy the tombstones beside the manifest (`forgotten.json`), for a repair that cannot
    /// read the manifest; nothing while there are none and never were.
    fn write_forgotten_copy(&mut self) -> Result<()> {
        let path = self.store.home.join(FORGOTTEN_FILE);
        if !self.manifest.forgotten.is_empty() || path.exists() {
            write_json(&path, &self.manifest.forgotten)?;
        }
        self.forgotten_copy_stale = false;
        Ok(())
    }

    /// Delete archived copies the committed manifest no longer names (merged, rewritten,
    /// forgotten). Not during a repair: the home's manifest still names its own until the
    /// rebuilt one is swapped in. Best effort: what is left is collected next time.
    fn sweep_archive(&self) {
        self.sweep_archive_keeping(&self.manifest);
    }

    /// Delete archived copies `manifest` does not name (see [`Writer::sweep_archive`]).
    pub(super) fn sweep_archive_keeping(&self, manifest: &Manifest) {
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
    /// committed manifest's states stay as they are until it is replaced), side by side: a
    /// first index writes one a transcript. Not flushed one by one: a state lost or torn by a
    /// crash fails its name's hash check, and its source is then parsed whole.
    fn write_states(&mut self) -> Result<()> {
        if self.new_states.is_empty() {
            return Ok(());
        }
        let dir = self.store.home.join(RESUME_DIR);
        std::fs::create_dir_all(&dir)?;
        std::mem::take(&mut self.new_states)
            .into_par_iter()
            .try_for_each(|(name, bytes)| {
                let path = dir.join(&name);
                if !path.exists() {
                    let tmp = dir.join(format!("{name}.tmp"));
                    std::fs::write(&tmp, bytes)?;
                    std::fs::rename(&tmp, &path)?;
                }
                Ok(())
            })
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
pub(super) fn tantivy_writer(store: &Store) -> Result<IndexWriter> {
    // Its threads (indexing, merging, compressing) yield to the rest of the process.
    let tantivy =
        crate::background::at_low_priority(|| store.lexical.writer()).map_err(|e| match e {
            Error::Tantivy(tantivy::TantivyError::LockFailure(..)) => {
                Error::Locked(store.home.clone())
            }
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
