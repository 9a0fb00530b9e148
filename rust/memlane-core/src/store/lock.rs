//! The write lock of a home: one writer at a time.

use crate::error::{Error, Result};
use fs4::fs_std::FileExt;
use std::fs::File;
use std::path::{Path, PathBuf};

const LOCK_FILE: &str = "write.lock";

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
