//! What the keyword index holds: its schema and analyzer, and a chunk as a document and back.

use super::{Lexical, ANALYZER};
use crate::chunk::Chunk;
use crate::error::Result;
use crate::tokenize::CodeTokenizer;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, Value, FAST, INDEXED, STORED,
    STRING,
};
use tantivy::tokenizer::{TextAnalyzer, TokenStream};
use tantivy::TantivyDocument;

/// Stored form of a chunk as search results need it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StoredChunk {
    /// Chunk key.
    pub key: u64,
    /// `transcript` | `knowledge` | `brain`.
    pub source: String,
    /// The indexed text.
    pub text: String,
    /// Source file.
    pub path: String,
    /// Session id.
    pub session_id: String,
    /// First turn (inclusive).
    pub turn_start: u64,
    /// Last turn (inclusive).
    pub turn_end: u64,
    /// First timestamp, ms since epoch.
    pub timestamp: Option<i64>,
    /// Last timestamp.
    pub timestamp_end: Option<i64>,
    /// Heading (knowledge chunks) or empty.
    pub heading: String,
    /// Roles present.
    pub role: String,
    /// Source format.
    pub format: String,
    /// Content hash (embedding-cache key).
    pub content_hash: String,
    /// Extra metadata: tools, files, turn ids, parent session, part.
    pub meta: serde_json::Value,
    /// Project key (see [`crate::project`]); empty when unknown or the home predates projects.
    #[serde(default)]
    pub project: String,
    /// Git branch; empty when unknown.
    #[serde(default)]
    pub branch: String,
}

/// A chunk's stored fields, borrowed: what both a fresh chunk and one read back become.
struct StoredRef<'a> {
    pub(super) key: u64,
    source: &'a str,
    text: &'a str,
    path: &'a str,
    session_id: &'a str,
    pub(super) turn_start: u64,
    pub(super) turn_end: u64,
    pub(super) timestamp: Option<i64>,
    pub(super) timestamp_end: Option<i64>,
    heading: &'a str,
    role: &'a str,
    format: &'a str,
    content_hash: &'a str,
    meta: &'a str,
    project: &'a str,
    branch: &'a str,
}

#[derive(Clone, Copy)]
pub(super) struct Fields {
    pub(super) key: Field,
    pub(super) source: Field,
    pub(super) text: Field,
    pub(super) path: Field,
    pub(super) session_id: Field,
    pub(super) turn_start: Field,
    pub(super) turn_end: Field,
    pub(super) ts: Field,
    pub(super) ts_end: Field,
    pub(super) heading: Field,
    pub(super) role: Field,
    pub(super) format: Field,
    pub(super) hash: Field,
    pub(super) meta: Field,
    /// Absent from homes built before projects were recorded: their chunks read as of no
    /// project, and a project or branch filter matches none of them.
    pub(super) project: Option<Field>,
    pub(super) branch: Option<Field>,
}

impl Fields {
    /// The fields of `schema` by name: a home keeps the schema it was built with.
    pub(super) fn of(schema: &Schema) -> Result<Fields> {
        let f = |name: &str| schema.get_field(name);
        Ok(Fields {
            key: f("key")?,
            source: f("source")?,
            text: f("text")?,
            path: f("path")?,
            session_id: f("session_id")?,
            turn_start: f("turn_start")?,
            turn_end: f("turn_end")?,
            ts: f("ts")?,
            ts_end: f("ts_end")?,
            heading: f("heading")?,
            role: f("role")?,
            format: f("format")?,
            hash: f("hash")?,
            meta: f("meta")?,
            project: f("project").ok(),
            branch: f("branch").ok(),
        })
    }
}

/// The source of transcript chunks (every other source is a note of a library).
pub(super) const TRANSCRIPT: &str = "transcript";

/// The schema of a new home (an existing one keeps its own: see [`Fields::of`]).
pub(super) fn schema() -> Schema {
    let mut b = Schema::builder();
    let text_options = TextOptions::default()
        .set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer(ANALYZER)
                .set_index_option(IndexRecordOption::WithFreqs),
        )
        .set_stored();
    b.add_u64_field("key", INDEXED | STORED | FAST);
    b.add_text_field("source", STRING | STORED);
    b.add_text_field("text", text_options);
    // Stored only: nothing searches by path or hash, and their unique terms (a random
    // hash per chunk) made term-dictionary building a visible cost of indexing. Homes
    // built before keep their own schema, in which both are also indexed.
    b.add_text_field("path", STORED);
    b.add_text_field("session_id", STRING | STORED);
    b.add_u64_field("turn_start", STORED);
    b.add_u64_field("turn_end", STORED);
    b.add_i64_field("ts", INDEXED | STORED | FAST);
    b.add_i64_field("ts_end", STORED);
    b.add_text_field("heading", STORED);
    b.add_text_field("role", STORED);
    b.add_text_field("format", STORED);
    b.add_text_field("hash", STORED);
    b.add_text_field("meta", STORED);
    // Indexed whole, for the project and branch filters.
    b.add_text_field("project", STRING | STORED);
    b.add_text_field("branch", STRING | STORED);
    b.build()
}

pub(super) fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(CodeTokenizer::default()).build()
}

/// The distinct tokens the text field's analyzer makes of a query, in order of appearance
/// (the words BM25 looks up).
#[must_use]
pub fn query_tokens(query: &str) -> Vec<String> {
    let mut analyzer = analyzer();
    let mut stream = analyzer.token_stream(query);
    let mut seen = HashSet::new();
    let mut tokens = Vec::new();
    while stream.advance() {
        let text = &stream.token().text;
        if seen.insert(text.clone()) {
            tokens.push(text.clone());
        }
    }
    tokens
}

/// The stored `meta` of a transcript chunk. Serialised from borrowed fields rather than
/// through a `serde_json::Value` (a tree of copies per chunk), in the sorted key order such
/// a value has, so the stored text is the same.
pub(super) fn transcript_meta(chunk: &Chunk) -> String {
    #[derive(Serialize)]
    struct Meta<'a> {
        files: &'a [String],
        parent_session_id: Option<&'a str>,
        part: u32,
        tools: &'a [String],
        turn_ids: &'a [String],
    }
    let meta = Meta {
        files: &chunk.files,
        parent_session_id: chunk.parent_session_id.as_deref(),
        part: chunk.part,
        tools: &chunk.tools,
        turn_ids: &chunk.turn_ids,
    };
    // Strings, numbers and lists of strings always serialise.
    serde_json::to_string(&meta).unwrap_or_default()
}

impl Lexical {
    /// Build the document for a chunk filed under `project`.
    #[must_use]
    pub fn document(
        &self,
        chunk: &Chunk,
        source: &str,
        heading: &str,
        project: &str,
    ) -> TantivyDocument {
        let meta = if chunk.meta.is_object() {
            chunk.meta.to_string()
        } else {
            transcript_meta(chunk)
        };
        self.build(&StoredRef {
            key: chunk.key,
            source,
            text: &chunk.text,
            path: &chunk.path,
            session_id: &chunk.session_id,
            turn_start: u64::from(chunk.turn_start),
            turn_end: u64::from(chunk.turn_end),
            timestamp: chunk.ts_start,
            timestamp_end: chunk.ts_end,
            heading,
            role: &chunk.role,
            format: &chunk.format,
            content_hash: &chunk.content_hash,
            meta: &meta,
            project,
            branch: chunk.branch.as_deref().unwrap_or_default(),
        })
    }

    /// The document of a chunk read back from another index (a repair carrying over what
    /// it can no longer parse from its source).
    #[must_use]
    pub fn document_of(&self, c: &StoredChunk) -> TantivyDocument {
        self.build(&StoredRef {
            key: c.key,
            source: &c.source,
            text: &c.text,
            path: &c.path,
            session_id: &c.session_id,
            turn_start: c.turn_start,
            turn_end: c.turn_end,
            timestamp: c.timestamp,
            timestamp_end: c.timestamp_end,
            heading: &c.heading,
            role: &c.role,
            format: &c.format,
            content_hash: &c.content_hash,
            meta: &c.meta.to_string(),
            project: &c.project,
            branch: &c.branch,
        })
    }

    fn build(&self, c: &StoredRef<'_>) -> TantivyDocument {
        let f = self.fields;
        let mut doc = TantivyDocument::default();
        doc.add_u64(f.key, c.key);
        doc.add_text(f.source, c.source);
        doc.add_text(f.text, c.text);
        doc.add_text(f.path, c.path);
        doc.add_text(f.session_id, c.session_id);
        doc.add_u64(f.turn_start, c.turn_start);
        doc.add_u64(f.turn_end, c.turn_end);
        if let Some(ts) = c.timestamp {
            doc.add_i64(f.ts, ts);
        }
        if let Some(ts) = c.timestamp_end {
            doc.add_i64(f.ts_end, ts);
        }
        doc.add_text(f.heading, c.heading);
        doc.add_text(f.role, c.role);
        doc.add_text(f.format, c.format);
        doc.add_text(f.hash, c.content_hash);
        doc.add_text(f.meta, c.meta);
        // Unknown stays absent: an empty term would make "no project" look like a project.
        for (field, value) in [(f.project, c.project), (f.branch, c.branch)] {
            if let (Some(field), false) = (field, value.is_empty()) {
                doc.add_text(field, value);
            }
        }
        doc
    }

    pub(super) fn stored(&self, doc: &TantivyDocument) -> StoredChunk {
        let f = self.fields;
        let text = |field: Field| -> String {
            doc.get_first(field)
                .and_then(|v| v.as_str())
                .unwrap_or_default()
                .to_owned()
        };
        let u = |field: Field| doc.get_first(field).and_then(|v| v.as_u64());
        let i = |field: Field| doc.get_first(field).and_then(|v| v.as_i64());
        StoredChunk {
            key: u(f.key).unwrap_or_default(),
            source: text(f.source),
            text: text(f.text),
            path: text(f.path),
            session_id: text(f.session_id),
            turn_start: u(f.turn_start).unwrap_or_default(),
            turn_end: u(f.turn_end).unwrap_or_default(),
            timestamp: i(f.ts),
            timestamp_end: i(f.ts_end),
            heading: text(f.heading),
            role: text(f.role),
            format: text(f.format),
            content_hash: text(f.hash),
            meta: serde_json::from_str(&text(f.meta)).unwrap_or(serde_json::Value::Null),
            project: f.project.map(text).unwrap_or_default(),
            branch: f.branch.map(text).unwrap_or_default(),
        }
    }
}
