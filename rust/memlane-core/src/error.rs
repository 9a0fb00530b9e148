//! The one error type of the core.

use std::path::PathBuf;

/// Everything that can go wrong in the core, one variant per failure a caller can act on.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A path the caller named does not exist.
    #[error("no such file or directory: {0}")]
    NotFound(PathBuf),
    /// Another process holds the write lock on this home.
    #[error("the index at {0} is locked by another writer; wait for it to finish")]
    Locked(PathBuf),
    /// On-disk state that cannot be read back.
    #[error("corrupt index at {path}: {reason}")]
    Corrupt {
        /// Where.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// Vectors from a different embedder (id or dimension) than the index was built with.
    #[error("embedder mismatch: index holds {expected}, got {got}; re-index with --embed {expected_hint} or use a new home")]
    EmbedderMismatch {
        /// The embedder recorded in the index.
        expected: String,
        /// The embedder offered now.
        got: String,
        /// Short name to suggest.
        expected_hint: String,
    },
    /// The disk holding the home filled up while committing; the previous commit is intact.
    #[error("no space left on the device holding {0} while committing; the last commit is intact: free some space and run it again")]
    DiskFull(PathBuf),
    /// A caller-supplied argument is invalid.
    #[error("{0}")]
    InvalidArgument(String),
    /// A file could not be parsed at all (individual bad lines never raise this).
    #[error("cannot parse {path}: {reason}")]
    Parse {
        /// Where.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// tantivy failed.
    #[error("lexical index: {0}")]
    Tantivy(#[from] tantivy::TantivyError),
    /// usearch failed.
    #[error("vector index: {0}")]
    Vector(String),
    /// Filesystem error.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// (De)serialisation of our own metadata failed.
    #[error("metadata: {0}")]
    Json(#[from] serde_json::Error),
}

/// What to do about a damaged part of a home. Said once, at the end of the error a reader
/// gets ([`Error::corrupt`]); `verify` lists the causes alone ([`Error::cause`]) and its
/// verdict says it.
const REPAIR_HINT: &str = "; `memlane repair` rebuilds it";

impl Error {
    /// `Corrupt` at `path` because of `cause`, saying what mends it.
    pub fn corrupt(path: &std::path::Path, cause: impl std::fmt::Display) -> Error {
        Error::Corrupt {
            path: path.to_owned(),
            reason: format!("{cause}{REPAIR_HINT}"),
        }
    }

    /// Why a part cannot be read, without what mends it: a `Corrupt` error's cause, any
    /// other error as it reads.
    #[must_use]
    pub fn cause(&self) -> String {
        match self {
            Error::Corrupt { reason, .. } => reason
                .strip_suffix(REPAIR_HINT)
                .unwrap_or(reason)
                .to_owned(),
            other => other.to_string(),
        }
    }

    /// This error as [`Error::DiskFull`] at `home` when it comes from a full disk (ENOSPC
    /// anywhere in its chain, or in the message of a C++ library that only gives text).
    #[must_use]
    pub fn disk_full_at(self, home: &std::path::Path) -> Error {
        if self.is_disk_full() {
            Error::DiskFull(home.to_owned())
        } else {
            self
        }
    }

    /// Whether this error is about the file at `path`.
    #[must_use]
    pub fn concerns(&self, path: &std::path::Path) -> bool {
        matches!(self, Error::Corrupt { path: p, .. } | Error::Parse { path: p, .. } if p == path)
    }

    fn is_disk_full(&self) -> bool {
        let full = |io: &std::io::Error| {
            io.kind() == std::io::ErrorKind::StorageFull || io.raw_os_error() == Some(ENOSPC)
        };
        if let Error::Io(io) = self {
            return full(io);
        }
        let mut source: Option<&(dyn std::error::Error + 'static)> = Some(self);
        while let Some(e) = source {
            if e.downcast_ref::<std::io::Error>().is_some_and(full) {
                return true;
            }
            source = e.source();
        }
        self.to_string().contains("No space left on device")
    }
}

/// `ENOSPC` on Linux and macOS.
const ENOSPC: i32 = 28;

/// Result alias for the core.
pub type Result<T, E = Error> = std::result::Result<T, E>;
