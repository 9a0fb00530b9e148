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

/// Result alias for the core.
pub type Result<T, E = Error> = std::result::Result<T, E>;
