//! Durable replacement of files: everything memlane renames into place goes through here.
//!
//! A file is written to a sibling temp file, flushed to disk (`fsync`), renamed over its
//! target, and the directory is flushed too, so that after a crash or power loss the target
//! holds either the old or the new content, never a torn or empty one. A failed write (a full
//! disk) removes its temp file, so a retry does not find the space still taken.

use crate::error::{Error, Result};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Suffix of every temp file memlane writes beside its target (cleaned by [`remove_stale`]).
pub(crate) const TMP_SUFFIX: &str = ".tmp";

/// The temp file that [`write`] and [`sync_written`] use for `path`.
pub(crate) fn tmp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_owned();
    name.push(TMP_SUFFIX);
    path.with_file_name(name)
}

/// A temp file for `path` no other call uses: for writers that may race to the same target
/// (the same content stored by two threads); still cleaned by [`remove_stale`].
pub(crate) fn unique_tmp_path(path: &Path) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let mut name = path.file_name().unwrap_or_default().to_owned();
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    name.push(format!(".{}-{n}{TMP_SUFFIX}", std::process::id()));
    path.with_file_name(name)
}

/// Write `bytes` to `path` durably (temp file, fsync, rename, fsync of the directory).
///
/// # Errors
/// I/O errors; the temp file is removed and `path` keeps its old content.
pub(crate) fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = tmp_path(path);
    let written = File::create(&tmp)
        .and_then(|mut f| {
            f.write_all(bytes)?;
            f.sync_all()
        })
        .map_err(Error::from);
    match written {
        Ok(()) => rename_into_place(&tmp, path),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// Flush an already written temp file to disk, after checking it holds `expected_len` bytes
/// (a library that does not report its own write errors leaves a short file on a full disk):
/// the first half of moving it over its target; [`rename_into_place`] is the second.
///
/// # Errors
/// A `StorageFull` I/O error for a short file, other I/O errors; the temp file is removed either way on failure.
pub(crate) fn sync_written(tmp: &Path, expected_len: u64) -> Result<()> {
    let checked = match std::fs::metadata(tmp) {
        Ok(m) if m.len() == expected_len => File::open(tmp)
            .and_then(|f| f.sync_all())
            .map_err(Error::from),
        // Short writes have one common cause: treat it as the full disk it almost always is.
        Ok(m) => Err(Error::Io(std::io::Error::new(
            std::io::ErrorKind::StorageFull,
            format!(
                "{} holds {} of {expected_len} bytes after writing",
                tmp.display(),
                m.len()
            ),
        ))),
        Err(e) => Err(e.into()),
    };
    if checked.is_err() {
        let _ = std::fs::remove_file(tmp);
    }
    checked
}

/// Rename a flushed temp file over `path` and flush the directory.
///
/// # Errors
/// I/O errors; the temp file is removed.
pub(crate) fn rename_into_place(tmp: &Path, path: &Path) -> Result<()> {
    if let Err(e) = std::fs::rename(tmp, path) {
        let _ = std::fs::remove_file(tmp);
        return Err(e.into());
    }
    sync_dir(path.parent().unwrap_or(Path::new(".")))
}

/// Flush a directory's entries (a rename is durable only once its directory is).
///
/// # Errors
/// I/O errors.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)?.sync_all()?;
    Ok(())
}

/// Delete the temp files a crashed or failed write left in `dir` (not recursive).
pub(crate) fn remove_stale(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let stale = entry.file_name().to_string_lossy().ends_with(TMP_SUFFIX)
            && entry.file_type().is_ok_and(|t| t.is_file());
        if stale {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_replaces_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.json");
        write(&path, b"one").unwrap();
        write(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        assert!(!tmp_path(&path).exists());
    }

    #[test]
    fn a_short_file_is_refused_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.usearch");
        std::fs::write(&path, b"good").unwrap();
        let tmp = tmp_path(&path);
        std::fs::write(&tmp, b"sh").unwrap();
        let err = sync_written(&tmp, 10).unwrap_err();
        assert!(err.to_string().contains("2 of 10 bytes"), "{err}");
        assert!(!tmp.exists());
        assert_eq!(std::fs::read(&path).unwrap(), b"good");
        std::fs::write(&tmp, b"0123456789").unwrap();
        sync_written(&tmp, 10).unwrap();
        rename_into_place(&tmp, &path).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"0123456789");
    }

    #[test]
    fn stale_temps_are_removed_and_other_files_kept() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("manifest.json.tmp"), b"x").unwrap();
        std::fs::write(dir.path().join("manifest.json"), b"{}").unwrap();
        remove_stale(dir.path());
        assert!(!dir.path().join("manifest.json.tmp").exists());
        assert!(dir.path().join("manifest.json").exists());
    }
}
