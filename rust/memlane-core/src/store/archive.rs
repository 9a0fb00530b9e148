//! The home's own copy of every transcript it indexed, so that memory outlives the client's
//! folder: Claude Code deletes transcripts older than `cleanupPeriodDays` (30 by default), and a
//! repair or a re-chunking must never depend on files that may be gone.
//!
//! A transcript is kept as a list of [`Segment`]s under `<home>/archive/`: zstd frames named by
//! the blake3 hash of the bytes they hold, so identical content is stored once (two copies of a
//! file, a file indexed again unchanged). Transcripts are append-only: an index run that reads
//! only what was appended archives only those bytes, as one more segment. A file's segments
//! are merged into one when they pass [`MAX_SEGMENTS`] (a session indexed turn by turn would
//! otherwise leave hundreds of small frames, each compressed on its own and so worse), and a
//! compressed source (`.zst`, `.gz`, a zip export) is kept whole as it is.
//!
//! Segments no manifest entry names any more (merged, forgotten) are deleted by [`Archive::sweep`]
//! after the manifest that stopped naming them is on disk, so a crash in between leaves an
//! orphan file, never a manifest naming a missing segment. Segments are written before the
//! manifest that names them, renamed into place but not flushed one by one; [`Archive::read`]
//! checks each against its hash.

use std::collections::HashSet;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::durable;
use crate::error::{Error, Result};

/// The archive's folder in a home.
pub const ARCHIVE_DIR: &str = "archive";
/// Segments a file may have before they are merged into one.
pub const MAX_SEGMENTS: usize = 8;
/// zstd level 1: on 149 MB of generated transcripts 0.43 CPU-s against level 3's 0.82 (a
/// twelfth of what indexing them by keywords costs, against a sixth) for an archive 11% larger
/// (0.186 against 0.168 of the JSONL; the shared real samples 0.092 against 0.088).
const LEVEL: i32 = 1;
const MAGICS: [&[u8]; 3] = [b"\x28\xb5\x2f\xfd", b"\x1f\x8b", b"PK\x03\x04"];

/// One stored piece of a source file: bytes `[start, start + len)` of it, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Segment {
    /// blake3 of the raw bytes (hex); the file is `archive/<first two>/<hash>.zst`.
    pub hash: String,
    /// Raw length in bytes.
    pub len: u64,
}

/// The archive of one home.
#[derive(Debug, Clone)]
pub struct Archive {
    dir: PathBuf,
}

/// Whether `head` (a file's first bytes) starts a compressed container, which is kept whole.
fn is_compressed(head: &[u8]) -> bool {
    MAGICS.iter().any(|m| head.starts_with(m))
}

/// Raw bytes the segments hold.
#[must_use]
pub fn archived_len(segments: &[Segment]) -> u64 {
    segments.iter().map(|s| s.len).sum()
}

impl Archive {
    /// The archive of `home` (its folder is made on the first write).
    #[must_use]
    pub fn of(home: &Path) -> Archive {
        Archive {
            dir: home.join(ARCHIVE_DIR),
        }
    }

    pub(super) fn path_of(&self, hash: &str) -> PathBuf {
        self.dir.join(&hash[..2]).join(format!("{hash}.zst"))
    }

    /// Store `bytes` as one segment; a segment with the same content is not written again.
    ///
    /// # Errors
    /// I/O errors (a full disk); nothing half-written is left under the segment's name.
    pub fn put(&self, bytes: &[u8]) -> Result<Segment> {
        let hash = blake3::hash(bytes).to_hex().to_string();
        let path = self.path_of(&hash);
        if !path.exists() {
            // Renamed into place but not flushed one by one (an fsync a file costs ~5 ms here,
            // seconds on a first index): a segment a crash tears fails its hash when read.
            // Parsing threads may store the same content at once (a file and its copy): each
            // writes its own temp file, and the later rename replaces identical bytes.
            std::fs::create_dir_all(path.parent().unwrap_or(&self.dir))?;
            let tmp = durable::unique_tmp_path(&path);
            std::fs::write(&tmp, zstd::bulk::compress(bytes, LEVEL)?)?;
            std::fs::rename(&tmp, &path)?;
        }
        Ok(Segment {
            hash,
            len: bytes.len() as u64,
        })
    }

    /// The bytes `segments` hold, in order.
    ///
    /// # Errors
    /// `Corrupt` when a segment is missing, unreadable or does not hold what its name says.
    pub fn read(&self, segments: &[Segment]) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(usize::try_from(archived_len(segments)).unwrap_or(0));
        for s in segments {
            let path = self.path_of(&s.hash);
            let corrupt = |reason: String| Error::Corrupt {
                path: path.clone(),
                reason,
            };
            let packed = std::fs::read(&path).map_err(|e| corrupt(e.to_string()))?;
            let len = usize::try_from(s.len).map_err(|e| corrupt(e.to_string()))?;
            let bytes = zstd::bulk::decompress(&packed, len).map_err(|e| corrupt(e.to_string()))?;
            if bytes.len() != len || blake3::hash(&bytes).to_hex().as_str() != s.hash {
                return Err(corrupt(
                    "the archived copy does not hold what it was".into(),
                ));
            }
            out.extend_from_slice(&bytes);
        }
        Ok(out)
    }

    /// The segments of source `path` once its bytes up to `complete` are archived: `prior` (what
    /// was archived before) plus what was appended since, when `appended` says the file only
    /// grew; else the file anew. Merged into one segment past [`MAX_SEGMENTS`].
    ///
    /// # Errors
    /// I/O errors reading the source or writing the archive.
    pub fn extend(
        &self,
        path: &Path,
        prior: &[Segment],
        appended: bool,
        complete: u64,
    ) -> Result<Vec<Segment>> {
        let mut file = File::open(path)?;
        let mut head = [0u8; 4];
        let n = file.read(&mut head)?;
        if is_compressed(&head[..n]) {
            // A compressed export is rewritten, not appended to: kept whole as it is.
            file.seek(SeekFrom::Start(0))?;
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes)?;
            return Ok(vec![self.put(&bytes)?]);
        }
        let from = if appended { archived_len(prior) } else { 0 };
        let mut segments = if appended { prior.to_vec() } else { Vec::new() };
        if complete > from {
            file.seek(SeekFrom::Start(from))?;
            let mut bytes = Vec::with_capacity(usize::try_from(complete - from).unwrap_or(0));
            file.take(complete - from).read_to_end(&mut bytes)?;
            segments.push(self.put(&bytes)?);
        }
        if segments.len() > MAX_SEGMENTS {
            let whole = self.read(&segments)?;
            segments = vec![self.put(&whole)?];
        }
        Ok(segments)
    }

    /// Delete segment files that no entry of `keep` names; returns how many went.
    ///
    /// # Errors
    /// I/O errors listing the archive.
    pub fn sweep(&self, keep: &HashSet<&str>) -> Result<usize> {
        let mut removed = 0;
        for shard in read_dir(&self.dir)? {
            for file in read_dir(&shard)? {
                let name = file
                    .file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned();
                let hash = name.strip_suffix(".zst").unwrap_or(&name);
                if !keep.contains(hash) && std::fs::remove_file(&file).is_ok() {
                    removed += 1;
                }
            }
        }
        Ok(removed)
    }

    /// Bytes the archive takes on disk.
    #[must_use]
    pub fn disk_bytes(&self) -> u64 {
        let files = read_dir(&self.dir)
            .unwrap_or_default()
            .into_iter()
            .flat_map(|d| read_dir(&d).unwrap_or_default());
        files
            .filter_map(|f| f.metadata().ok())
            .map(|m| m.len())
            .sum()
    }
}

/// The entries of `dir` (none when it does not exist).
fn read_dir(dir: &Path) -> Result<Vec<PathBuf>> {
    match std::fs::read_dir(dir) {
        Ok(entries) => Ok(entries.filter_map(|e| e.ok().map(|e| e.path())).collect()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn appends_are_archived_once_and_merge_past_the_cap() {
        let home = tempfile::tempdir().unwrap();
        let archive = Archive::of(home.path());
        let src = home.path().join("s.jsonl");
        let mut all = Vec::new();
        let mut segments = Vec::new();
        for i in 0..=MAX_SEGMENTS {
            let line = format!("{{\"turn\": {i}, \"text\": \"hello\"}}\n");
            all.extend_from_slice(line.as_bytes());
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&src)
                .unwrap()
                .write_all(line.as_bytes())
                .unwrap();
            segments = archive
                .extend(&src, &segments, true, all.len() as u64)
                .unwrap();
            assert_eq!(archive.read(&segments).unwrap(), all);
        }
        // The ninth append merged the file into one segment; the sweep takes the nine small ones.
        assert_eq!(segments.len(), 1);
        let keep: HashSet<&str> = segments.iter().map(|s| s.hash.as_str()).collect();
        assert_eq!(archive.sweep(&keep).unwrap(), MAX_SEGMENTS + 1);
        assert_eq!(archive.read(&segments).unwrap(), all);
        // Bytes after the last complete line are not archived; a rewrite starts anew.
        std::fs::write(&src, b"{\"a\":1}\n{\"partial\"").unwrap();
        let rewritten = archive.extend(&src, &segments, false, 8).unwrap();
        assert_eq!(archive.read(&rewritten).unwrap(), b"{\"a\":1}\n");
    }

    #[test]
    fn the_same_bytes_stored_by_many_threads_at_once_make_one_segment() {
        let home = tempfile::tempdir().unwrap();
        let archive = Archive::of(home.path());
        // Many rounds: a race shows in some of them, not every time.
        for round in 0..50 {
            let bytes = format!("a transcript exported twice, round {round}\n").repeat(1000);
            let segments: Vec<Segment> = std::thread::scope(|scope| {
                let workers: Vec<_> = (0..8)
                    .map(|_| scope.spawn(|| archive.put(bytes.as_bytes()).unwrap()))
                    .collect();
                workers.into_iter().map(|w| w.join().unwrap()).collect()
            });
            assert!(segments.iter().all(|s| s.hash == segments[0].hash));
            assert_eq!(archive.read(&segments[..1]).unwrap(), bytes.as_bytes());
            let segment = archive.path_of(&segments[0].hash);
            let temps = read_dir(segment.parent().unwrap())
                .unwrap()
                .into_iter()
                .filter(|p| p.to_string_lossy().ends_with(durable::TMP_SUFFIX))
                .count();
            assert_eq!(temps, 0, "no temp file left");
        }
    }

    #[test]
    fn a_damaged_segment_is_reported_not_returned() {
        let home = tempfile::tempdir().unwrap();
        let archive = Archive::of(home.path());
        let seg = archive.put(b"some transcript bytes\n").unwrap();
        std::fs::write(
            archive.path_of(&seg.hash),
            zstd::bulk::compress(b"other bytes here!!!!!\n", 3).unwrap(),
        )
        .unwrap();
        assert!(matches!(archive.read(&[seg]), Err(Error::Corrupt { .. })));
    }
}
