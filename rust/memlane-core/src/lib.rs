//! memlane-core: the engine behind memlane.
//!
//! Parses agent transcripts into [`model::Session`]s, chunks them into turn pairs
//! ([`chunk`]), and keeps a tantivy BM25 index ([`lexical`]) and a usearch HNSW index
//! ([`vector`]) side by side in a home ([`store`]), merged at query time ([`hybrid`]).
//! Markdown notes take the same road as sections ([`parse::markdown`], [`chunk::chunk_note`]).
//! Every chunk is filed under its project: the repository its turns were written in ([`project`]).
//! Three helpers serve steps of the Python side rather than the index: [`ranking`] (text
//! features for the time-aware reordering), [`secrets`] (the masker's literal prefilter) and
//! [`embed`] (the local embedder's word-piece ids).
#![warn(missing_docs)]

mod background;
pub mod chunk;
mod durable;
pub mod embed;
pub mod error;
pub mod hybrid;
pub mod lexical;
pub mod model;
pub mod parse;
pub mod project;
pub mod ranking;
pub mod secrets;
pub mod shard;
pub mod store;
pub mod tokenize;
pub mod vector;

pub use error::{Error, Result};
