//! memlane-core: the engine behind memlane.
//!
//! Parses agent transcripts into [`model::Session`]s, chunks them into turn pairs
//! ([`chunk`]), and keeps a tantivy BM25 index ([`lexical`]) and a usearch HNSW index
//! ([`vector`]) side by side in a home ([`store`]), merged at query time ([`hybrid`]).
//! Markdown notes take the same road as sections ([`parse::markdown`], [`chunk::chunk_note`]).
//! Every chunk is filed under its project: the repository its turns were written in ([`project`]).
#![warn(missing_docs)]

pub mod chunk;
mod durable;
pub mod error;
pub mod features;
pub mod hybrid;
pub mod lexical;
pub mod literals;
pub mod model;
pub mod parse;
pub mod project;
pub mod shard;
pub mod store;
pub mod tokenize;
pub mod vector;

pub use error::{Error, Result};
