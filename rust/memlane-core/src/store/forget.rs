//! Forgetting for good: a session, a source file or a chunk leaves the keyword and vector
//! indexes, and a tombstone in the manifest keeps re-indexing from bringing it back.
//!
//! The keyword index only marks a deleted document; its text stays in the segment files
//! until they are merged. A forget therefore merges the segments that hold deletions once
//! its commit is done ([`Writer::purge_deleted`]), so the forgotten text is gone from disk.

use super::{read_json, FileEntry, Writer, FORGOTTEN_FILE};
use crate::error::{Error, Result};
use crate::lexical::Filters;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::Path;

/// What to forget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Forget {
    /// Every chunk of a session, in every file.
    Session(String),
    /// Every chunk of a source file (an absolute path, as indexed).
    Path(String),
    /// One chunk, by key.
    Chunk(u64),
}

/// Tombstones, kept in the manifest (and copied beside it, `forgotten.json`, for a repair that
/// cannot read the manifest): what was forgotten, with the files it came from (a lifted
/// tombstone has those files read again).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Forgotten {
    /// Source files never read again.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub paths: BTreeSet<String>,
    /// Sessions whose chunks are left out of every file, with those files.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sessions: BTreeMap<String, BTreeSet<String>>,
    /// Chunks left out wherever their text turns up, with the files they came from.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub chunks: BTreeMap<u64, BTreeSet<String>>,
}

/// What is wrong with the copy of `tombstones` beside the manifest in `home`
/// (`forgotten.json`): missing while there are tombstones, unreadable, or different; `None`
/// when it holds them.
pub(super) fn forgotten_copy_fault(home: &Path, tombstones: &Forgotten) -> Option<String> {
    let path = home.join(FORGOTTEN_FILE);
    if tombstones.is_empty() && !path.exists() {
        return None;
    }
    match read_json::<Forgotten>(&path) {
        Ok(copy) if copy == *tombstones => None,
        Ok(_) => Some("differs from the manifest's".to_owned()),
        Err(_) if !path.exists() => Some("is missing".to_owned()),
        Err(e) => Some(format!("cannot be read ({})", e.cause())),
    }
}

impl Forgotten {
    /// Nothing is forgotten.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.paths.is_empty() && self.sessions.is_empty() && self.chunks.is_empty()
    }

    /// Whether something was forgotten from `path`: its text would still hold it, so the home
    /// keeps no copy of it ([`super::Archive`]).
    pub(super) fn names_file(&self, path: &str) -> bool {
        self.paths.contains(path)
            || self.sessions.values().any(|files| files.contains(path))
            || self.chunks.values().any(|files| files.contains(path))
    }

    /// Whether a chunk with this key and session is forgotten.
    pub(super) fn covers(&self, key: u64, session_id: &str) -> bool {
        self.chunks.contains_key(&key)
            || (!session_id.is_empty() && self.sessions.contains_key(session_id))
    }
}

/// What a forget removed (or, for a dry run, would remove), or what an undo restored.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ForgetReport {
    /// Chunks removed (a dry run: that would be).
    pub chunks: u64,
    /// Their content hashes (embedding-cache keys).
    pub content_hashes: Vec<String>,
    /// Files they came from.
    pub files: Vec<String>,
    /// Sessions they belonged to.
    pub sessions: Vec<String>,
}

impl Writer {
    /// Remove what `what` names from both indexes and tombstone it, or with `dry_run` only
    /// say what that would remove. Nothing is visible before [`Writer::commit`], after which
    /// [`Writer::purge_deleted`] takes the text off the disk.
    ///
    /// # Errors
    /// `InvalidArgument` when nothing indexed matches; index errors.
    pub fn forget(&mut self, what: &Forget, dry_run: bool) -> Result<ForgetReport> {
        let keys: Vec<u64> = match what {
            Forget::Path(path) => self
                .manifest
                .files
                .get(path)
                .map(|e| e.keys.clone())
                .ok_or_else(|| {
                    Error::InvalidArgument(format!("{path} is not indexed in this home"))
                })?,
            Forget::Session(id) => {
                let searcher = self.store.lexical.searcher();
                let filters = Filters {
                    session_id: Some(id.clone()),
                    ..Filters::default()
                };
                let mut keys: Vec<u64> = self
                    .store
                    .lexical
                    .filtered_keys(&searcher, &filters)?
                    .into_iter()
                    .collect();
                keys.sort_unstable();
                keys
            }
            Forget::Chunk(key) => vec![*key],
        };
        let chunks = self.store.lexical.get(&keys)?;
        if chunks.is_empty() && !matches!(what, Forget::Path(_)) {
            return Err(Error::InvalidArgument(match what {
                Forget::Session(id) => format!("no chunk of session {id} is indexed in this home"),
                _ => "no such chunk in this home (ids are what search and recall print)".into(),
            }));
        }
        let wanted: HashSet<u64> = keys.iter().copied().collect();
        let mut files: BTreeSet<String> = self
            .manifest
            .files
            .iter()
            .filter(|(_, e)| e.keys.iter().any(|k| wanted.contains(k)))
            .map(|(p, _)| p.clone())
            .collect();
        if let Forget::Path(path) = what {
            files.insert(path.clone());
        }
        let report = ForgetReport {
            chunks: chunks.len() as u64,
            content_hashes: chunks.iter().map(|c| c.content_hash.clone()).collect(),
            files: files.iter().cloned().collect(),
            sessions: chunks
                .iter()
                .map(|c| c.session_id.clone())
                .filter(|s| !s.is_empty())
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect(),
        };
        if dry_run {
            return Ok(report);
        }
        for path in &files {
            if let Some(entry) = self.manifest.files.get_mut(path) {
                entry.keys.retain(|k| !wanted.contains(k));
                // The home's copy holds the forgotten text: it goes (swept at commit).
                self.archive_dropped |= !entry.archive.is_empty();
                entry.archive.clear();
                // A resume state carries the text of the turns a re-chunking starts with.
                let state = entry.resume_state.take();
                self.old_states.extend(state.map(|r| r.file));
            }
        }
        for &key in &keys {
            self.refs.remove(&key);
            self.drop_chunk(key);
        }
        let tombstones = &mut self.manifest.forgotten;
        match what {
            Forget::Path(path) => {
                tombstones.paths.insert(path.clone());
                self.manifest.files.remove(path);
            }
            Forget::Session(id) => {
                tombstones
                    .sessions
                    .entry(id.clone())
                    .or_default()
                    .extend(files.iter().cloned());
            }
            Forget::Chunk(key) => {
                tombstones
                    .chunks
                    .entry(*key)
                    .or_default()
                    .extend(files.iter().cloned());
            }
        }
        self.manifest_dirty = true;
        self.purge = true;
        Ok(report)
    }

    /// Take `old`'s tombstones (a rebuild's first step, before any file is read): what was
    /// forgotten there stays forgotten here. From its manifest, or when that cannot be read
    /// from the copy beside it (`forgotten.json`); false when neither can be read.
    pub fn adopt_forgotten(&mut self, old: &super::Store) -> bool {
        let tombstones = match old.read_manifest() {
            Ok(manifest) => manifest.forgotten,
            Err(_) => match read_json::<Forgotten>(&old.home.join(FORGOTTEN_FILE)) {
                Ok(copy) => copy,
                Err(_) => return false,
            },
        };
        if !tombstones.is_empty() {
            self.manifest.forgotten = tombstones;
            self.manifest_dirty = true;
        }
        true
    }

    /// Lift a tombstone: the files it came from are read again by the next index run (their
    /// manifest entries are marked changed). Returns those files.
    ///
    /// # Errors
    /// `InvalidArgument` when nothing of the kind is forgotten.
    pub fn unforget(&mut self, what: &Forget) -> Result<ForgetReport> {
        let files: BTreeSet<String> = match what {
            Forget::Path(path) => self
                .manifest
                .forgotten
                .paths
                .take(path)
                .into_iter()
                .collect(),
            Forget::Session(id) => self
                .manifest
                .forgotten
                .sessions
                .remove(id)
                .unwrap_or_default(),
            Forget::Chunk(key) => self
                .manifest
                .forgotten
                .chunks
                .remove(key)
                .unwrap_or_default(),
        };
        if files.is_empty() {
            return Err(Error::InvalidArgument(
                "nothing of that is forgotten in this home".into(),
            ));
        }
        for path in &files {
            if let Some(entry) = self.manifest.files.get_mut(path) {
                // A stamp no file has: the next scan reads it again.
                *entry = FileEntry {
                    mtime_ns: 0,
                    resume_state: None,
                    ..entry.clone()
                };
            }
        }
        self.manifest_dirty = true;
        Ok(ForgetReport {
            files: files.into_iter().collect(),
            ..ForgetReport::default()
        })
    }

    /// Take the deleted documents' text off the disk: merge every segment that holds one
    /// (call after a commit that deleted what must not stay readable).
    ///
    /// # Errors
    /// tantivy errors.
    pub fn purge_deleted(&mut self) -> Result<()> {
        if !std::mem::take(&mut self.purge) {
            return Ok(());
        }
        // A background merge holding a segment with deletes would refuse the merge below.
        self.settle()?;
        let with_deletes: Vec<tantivy::index::SegmentId> = self
            .tantivy
            .index()
            .searchable_segment_metas()?
            .iter()
            .filter(|m| m.has_deletes())
            .map(tantivy::index::SegmentMeta::id)
            .collect();
        if !with_deletes.is_empty() {
            self.tantivy.merge(&with_deletes).wait()?;
            let _ = self.tantivy.garbage_collect_files().wait();
            self.store.lexical.reload()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;
    use crate::vector::Quantization;

    #[test]
    fn a_forget_merges_the_deleted_text_out_of_the_index_files() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("chat.jsonl");
        let line = |s: &str, role: &str, text: &str| {
            serde_json::json!({"session_id": s, "role": role, "content": text}).to_string()
        };
        let lines: Vec<String> = (1..=20)
            .map(|n| format!("s{n}"))
            .flat_map(|s| {
                [
                    line(&s, "user", &format!("what is the secret of {s}?")),
                    line(
                        &s,
                        "assistant",
                        &format!("the secret of {s} is hunter2-{s}"),
                    ),
                ]
            })
            .collect();
        std::fs::write(&src, lines.join("\n") + "\n").unwrap();
        let store = Store::open(&dir.path().join("home"), Quantization::F16).unwrap();
        let mut w = Writer::new(store.clone(), None).unwrap();
        let plan = w.scan(std::slice::from_ref(&src)).unwrap();
        w.index_files(&plan.to_index).unwrap();
        w.commit().unwrap();
        let report = w.forget(&Forget::Session("s1".into()), false).unwrap();
        assert_eq!(report.chunks, 1);
        w.commit().unwrap();
        let metas = |w: &Writer| w.tantivy.index().searchable_segment_metas().unwrap();
        w.purge_deleted().unwrap();
        assert!(!metas(&w)
            .iter()
            .any(tantivy::index::SegmentMeta::has_deletes));
        assert_eq!(metas(&w).iter().map(|m| m.max_doc()).sum::<u32>(), 19);
        // Indexing the file again leaves the session out.
        std::fs::write(&src, lines.join("\n") + "\n\n").unwrap();
        let plan = w.scan(std::slice::from_ref(&src)).unwrap();
        let again = w.index_files(&plan.to_index).unwrap();
        assert_eq!(again.files[0].skipped.get("forgotten"), Some(&1));
        w.commit().unwrap();
        assert_eq!(store.status().unwrap().chunks, 19);
    }
}
