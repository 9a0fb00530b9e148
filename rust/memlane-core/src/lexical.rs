//! The tantivy side: schema, analyzer, writes and BM25 search over chunks.

use crate::chunk::Chunk;
use crate::error::Result;
use crate::tokenize::CodeTokenizer;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeMap, BinaryHeap, HashMap, HashSet};
use std::ops::{Bound, Range};
use std::path::Path;
use std::sync::Mutex;
use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::Column;
use tantivy::fieldnorm::FieldNormReader;
use tantivy::index::SegmentId;
use tantivy::postings::Postings;
use tantivy::query::{
    Bm25StatisticsProvider, Bm25Weight, BooleanQuery, ConstScoreQuery, EmptyQuery, EnableScoring,
    Occur, Query, RangeQuery, TermQuery,
};
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, Value, FAST, INDEXED, STORED,
    STRING,
};
use tantivy::snippet::SnippetGenerator;
use tantivy::tokenizer::{TextAnalyzer, TokenStream};
use tantivy::{
    DocAddress, DocId, DocSet, Index, IndexReader, IndexWriter, ReloadPolicy, Score, Searcher,
    SegmentOrdinal, SegmentReader, TantivyDocument, Term, TERMINATED,
};

/// How far below the cut a score still counts as tied with it (relative): tantivy's scores
/// and the canonical ones differ in the last bits.
const TIE_SLACK: Score = 1e-5;

/// A score ordered totally, for the heap of the best scores.
#[derive(PartialEq)]
struct TotalScore(Score);

impl Eq for TotalScore {}

impl PartialOrd for TotalScore {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for TotalScore {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// Name the analyzer is registered under.
const ANALYZER: &str = "memlane";
/// Writer memory budget: large enough to batch well, small enough for a laptop.
const WRITER_MEMORY: usize = 256 * 1024 * 1024;

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
    key: u64,
    source: &'a str,
    text: &'a str,
    path: &'a str,
    session_id: &'a str,
    turn_start: u64,
    turn_end: u64,
    timestamp: Option<i64>,
    timestamp_end: Option<i64>,
    heading: &'a str,
    role: &'a str,
    format: &'a str,
    content_hash: &'a str,
    meta: &'a str,
    project: &'a str,
    branch: &'a str,
}

/// Filters applied before ranking.
#[derive(Debug, Clone, Default)]
pub struct Filters {
    /// Keep only these sources.
    pub sources: Vec<String>,
    /// Keep only this session.
    pub session_id: Option<String>,
    /// Keep chunks whose first timestamp is ≥ this (ms).
    pub since: Option<i64>,
    /// Keep chunks whose first timestamp is < this (ms).
    pub until: Option<i64>,
    /// Keep only chunks of these projects (any of them; project keys).
    pub projects: Vec<String>,
    /// Project keys whose notes (every chunk but transcripts) a project filter keeps too: the
    /// user's own libraries, read in every project (see [`crate::project::is_user_library`]).
    /// Set alone, it keeps those notes only.
    pub libraries: Vec<String>,
    /// Keep only chunks written on this git branch.
    pub branch: Option<String>,
}

impl Filters {
    /// True when no filter is set.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.sources.is_empty()
            && self.session_id.is_none()
            && self.since.is_none()
            && self.until.is_none()
            && self.projects.is_empty()
            && self.libraries.is_empty()
            && self.branch.is_none()
    }
}

#[derive(Clone, Copy)]
struct Fields {
    key: Field,
    source: Field,
    text: Field,
    path: Field,
    session_id: Field,
    turn_start: Field,
    turn_end: Field,
    ts: Field,
    ts_end: Field,
    heading: Field,
    role: Field,
    format: Field,
    hash: Field,
    meta: Field,
    /// Absent from homes built before projects were recorded: their chunks read as of no
    /// project, and a project or branch filter matches none of them.
    project: Option<Field>,
    branch: Option<Field>,
}

impl Fields {
    /// The fields of `schema` by name: a home keeps the schema it was built with.
    fn of(schema: &Schema) -> Result<Fields> {
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
const TRANSCRIPT: &str = "transcript";

/// The schema of a new home (an existing one keeps its own: see [`Fields::of`]).
fn schema() -> Schema {
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

fn analyzer() -> TextAnalyzer {
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
fn transcript_meta(chunk: &Chunk) -> String {
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

/// Documents whose `field` holds one of `values` whole; none when the home's schema lacks
/// the field (it predates it: every chunk reads as without a value).
fn any_term(field: Option<Field>, values: &[String]) -> Box<dyn Query> {
    let Some(field) = field else {
        return Box::new(EmptyQuery);
    };
    let any: Vec<(Occur, Box<dyn Query>)> = values
        .iter()
        .map(|v| {
            let q: Box<dyn Query> = Box::new(TermQuery::new(
                Term::from_field_text(field, v),
                IndexRecordOption::Basic,
            ));
            (Occur::Should, q)
        })
        .collect();
    Box::new(BooleanQuery::new(any))
}

/// The `key` fast-field column of each segment, opened on first use.
struct KeyColumns<'a> {
    searcher: &'a Searcher,
    columns: Vec<Option<Column<u64>>>,
}

impl<'a> KeyColumns<'a> {
    fn new(searcher: &'a Searcher) -> Self {
        KeyColumns {
            searcher,
            columns: vec![None; searcher.segment_readers().len()],
        }
    }

    fn key(&mut self, addr: DocAddress) -> Result<u64> {
        let slot = &mut self.columns[addr.segment_ord as usize];
        if slot.is_none() {
            let reader = self.searcher.segment_reader(addr.segment_ord);
            *slot = Some(reader.fast_fields().u64("key")?);
        }
        Ok(slot
            .as_ref()
            .and_then(|c| c.first(addr.doc_id))
            .unwrap_or_default())
    }
}

/// The chunk key (`key` fast field) of every matching live document, unscored: what a
/// filter allows, gathered without a set of document addresses in between.
struct FilteredKeys;

struct SegmentKeys {
    column: Column<u64>,
    keys: Vec<u64>,
}

impl Collector for FilteredKeys {
    type Fruit = Vec<u64>;
    type Child = SegmentKeys;

    fn for_segment(
        &self,
        _: SegmentOrdinal,
        segment: &SegmentReader,
    ) -> tantivy::Result<SegmentKeys> {
        Ok(SegmentKeys {
            column: segment.fast_fields().u64("key")?,
            keys: Vec::new(),
        })
    }

    fn requires_scoring(&self) -> bool {
        false
    }

    fn merge_fruits(&self, fruits: Vec<Vec<u64>>) -> tantivy::Result<Vec<u64>> {
        Ok(fruits.concat())
    }
}

impl SegmentCollector for SegmentKeys {
    type Fruit = Vec<u64>;

    fn collect(&mut self, doc: DocId, _: Score) {
        self.keys.extend(self.column.first(doc));
    }

    fn harvest(self) -> Vec<u64> {
        self.keys
    }
}

/// The BM25 index of one memlane home.
pub struct Lexical {
    index: Index,
    reader: IndexReader,
    fields: Fields,
    /// [`Lexical::norm_tokens`] of each segment seen, by segment and deletions.
    norm_tokens: Mutex<HashMap<(SegmentId, u32), u64>>,
}

impl Lexical {
    /// Open the index in `dir`, creating it when absent.
    ///
    /// # Errors
    /// I/O or tantivy errors; a schema without one of the fields every home has surfaces as
    /// a tantivy error.
    pub fn open(dir: &Path) -> Result<Lexical> {
        std::fs::create_dir_all(dir)?;
        let index = if dir.join("meta.json").exists() {
            Index::open_in_dir(dir)?
        } else {
            Index::create_in_dir(dir, schema())?
        };
        let fields = Fields::of(&index.schema())?;
        index.tokenizers().register(ANALYZER, analyzer());
        let reader = index
            .reader_builder()
            // Readers in other processes pick up commits by themselves; the writer of this
            // process reloads explicitly after each commit, so searches never re-read meta.json.
            .reload_policy(ReloadPolicy::OnCommitWithDelay)
            .try_into()?;
        Ok(Lexical {
            index,
            reader,
            fields,
            norm_tokens: Mutex::default(),
        })
    }

    /// An empty index in memory: what a home whose index on disk cannot be read holds in its
    /// place (it is never searched: the home reports its damage instead).
    ///
    /// # Errors
    /// tantivy errors.
    pub fn in_memory() -> Result<Lexical> {
        let index = Index::create_in_ram(schema());
        let fields = Fields::of(&index.schema())?;
        index.tokenizers().register(ANALYZER, analyzer());
        let reader = index.reader()?;
        Ok(Lexical {
            index,
            reader,
            fields,
            norm_tokens: Mutex::default(),
        })
    }

    /// Files whose checksum does not match their content (reads the whole index).
    ///
    /// # Errors
    /// tantivy errors.
    pub fn damaged_files(&self) -> Result<Vec<std::path::PathBuf>> {
        let mut files: Vec<_> = self.index.validate_checksum()?.into_iter().collect();
        files.sort();
        Ok(files)
    }

    /// A writer; tantivy's own lock makes a second writer fail fast.
    ///
    /// tantivy's indexing threads put documents in segments by thread timing; answers do not
    /// depend on it: scores are summed in the query's term order (`canonical_scores`), the
    /// statistics count live chunks (`shard::TermStats`) and ties are cut by chunk key.
    ///
    /// # Errors
    /// `LockBusy` (as a tantivy error) when another writer is open.
    pub fn writer(&self) -> Result<IndexWriter> {
        Ok(self.index.writer(WRITER_MEMORY)?)
    }

    /// Whether `dir`, this index's folder, holds files of a segment no commit names (what a
    /// failed or interrupted write leaves until the garbage is collected).
    ///
    /// # Errors
    /// tantivy errors reading the commit, I/O errors listing the folder.
    pub fn has_uncommitted_files(&self, dir: &Path) -> Result<bool> {
        let committed: HashSet<String> = self
            .index
            .load_metas()?
            .segments
            .iter()
            .map(|s| s.id().uuid_string())
            .collect();
        for entry in std::fs::read_dir(dir)? {
            let name = entry?.file_name();
            let name = name.to_string_lossy();
            let stem = name.split('.').next().unwrap_or_default();
            if !stem.is_empty() && stem != "meta" && !committed.contains(stem) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Make the latest commit visible to searches.
    ///
    /// # Errors
    /// tantivy errors.
    pub fn reload(&self) -> Result<()> {
        Ok(self.reader.reload()?)
    }

    /// The current searcher.
    #[must_use]
    pub fn searcher(&self) -> Searcher {
        self.reader.searcher()
    }

    /// Whether this home records each chunk's project and branch (homes built before it did
    /// do not: `memlane repair --force` rebuilds them with the new fields).
    #[must_use]
    pub fn records_projects(&self) -> bool {
        self.fields.project.is_some() && self.fields.branch.is_some()
    }

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

    /// Every live chunk, through `f`.
    ///
    /// # Errors
    /// tantivy errors.
    pub fn for_each_chunk(&self, mut f: impl FnMut(StoredChunk)) -> Result<()> {
        let searcher = self.searcher();
        for (ord, segment) in searcher.segment_readers().iter().enumerate() {
            let ord = u32::try_from(ord).unwrap_or(u32::MAX);
            for doc in segment.doc_ids_alive() {
                f(self.fetch(&searcher, DocAddress::new(ord, doc))?);
            }
        }
        Ok(())
    }

    /// The term that identifies a chunk (for deletes).
    #[must_use]
    pub fn key_term(&self, key: u64) -> Term {
        Term::from_field_u64(self.fields.key, key)
    }

    /// Every live chunk key in the committed index.
    ///
    /// # Errors
    /// tantivy errors reading fast fields.
    pub fn all_keys(&self) -> Result<HashSet<u64>> {
        let searcher = self.searcher();
        let mut keys = HashSet::with_capacity(usize::try_from(searcher.num_docs()).unwrap_or(0));
        for segment in searcher.segment_readers() {
            let column = segment.fast_fields().u64("key")?;
            for doc in segment.doc_ids_alive() {
                if let Some(k) = column.first(doc) {
                    keys.insert(k);
                }
            }
        }
        Ok(keys)
    }

    /// Every project key with its number of live chunks, by key (empty when the home
    /// predates projects).
    ///
    /// # Errors
    /// tantivy errors.
    pub fn projects(&self) -> Result<BTreeMap<String, u64>> {
        let mut out = BTreeMap::new();
        let Some(field) = self.fields.project else {
            return Ok(out);
        };
        let searcher = self.searcher();
        for segment in searcher.segment_readers() {
            let inverted = segment.inverted_index(field)?;
            let mut terms = inverted.terms().stream()?;
            while terms.advance() {
                let project = String::from_utf8_lossy(terms.key()).into_owned();
                let mut postings = inverted
                    .read_postings_from_terminfo(terms.value(), IndexRecordOption::Basic)?;
                let mut live = 0u64;
                let mut doc = postings.doc();
                while doc != TERMINATED {
                    live += u64::from(segment.alive_bitset().is_none_or(|a| a.is_alive(doc)));
                    doc = postings.advance();
                }
                if live > 0 {
                    *out.entry(project).or_insert(0) += live;
                }
            }
        }
        Ok(out)
    }

    /// Every project key holding live notes (chunks that are not transcripts), with their
    /// number: the library folders, and the repositories holding notes (empty when the home
    /// predates projects).
    ///
    /// # Errors
    /// tantivy errors.
    pub fn note_projects(&self) -> Result<BTreeMap<String, u64>> {
        let mut out = BTreeMap::new();
        let Some(field) = self.fields.project else {
            return Ok(out);
        };
        let transcript = Term::from_field_text(self.fields.source, TRANSCRIPT);
        let searcher = self.searcher();
        for segment in searcher.segment_readers() {
            // The transcripts' documents, to leave out of each project's count.
            let mut is_transcript = vec![false; segment.max_doc() as usize];
            let sources = segment.inverted_index(self.fields.source)?;
            if let Some(mut postings) =
                sources.read_postings(&transcript, IndexRecordOption::Basic)?
            {
                let mut doc = postings.doc();
                while doc != TERMINATED {
                    is_transcript[doc as usize] = true;
                    doc = postings.advance();
                }
            }
            let inverted = segment.inverted_index(field)?;
            let mut terms = inverted.terms().stream()?;
            while terms.advance() {
                let mut postings = inverted
                    .read_postings_from_terminfo(terms.value(), IndexRecordOption::Basic)?;
                let mut notes = 0u64;
                let mut doc = postings.doc();
                while doc != TERMINATED {
                    let alive = segment.alive_bitset().is_none_or(|a| a.is_alive(doc));
                    notes += u64::from(alive && !is_transcript[doc as usize]);
                    doc = postings.advance();
                }
                if notes > 0 {
                    let project = String::from_utf8_lossy(terms.key()).into_owned();
                    *out.entry(project).or_insert(0) += notes;
                }
            }
        }
        Ok(out)
    }

    /// The project clause of `filters`: a chunk of one of `projects`, or a note of one of
    /// `libraries`.
    fn scope_clause(&self, filters: &Filters) -> Box<dyn Query> {
        let f = self.fields;
        let mut scope: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        if !filters.projects.is_empty() {
            scope.push((Occur::Should, any_term(f.project, &filters.projects)));
        }
        if !filters.libraries.is_empty() {
            let transcript: Box<dyn Query> = Box::new(TermQuery::new(
                Term::from_field_text(f.source, TRANSCRIPT),
                IndexRecordOption::Basic,
            ));
            let notes = BooleanQuery::new(vec![
                (Occur::Must, any_term(f.project, &filters.libraries)),
                (Occur::MustNot, transcript),
            ]);
            scope.push((Occur::Should, Box::new(notes)));
        }
        Box::new(BooleanQuery::new(scope))
    }

    /// Number of live chunks.
    #[must_use]
    pub fn num_docs(&self) -> u64 {
        self.searcher().num_docs()
    }

    /// The field BM25 scores (the chunk text).
    #[must_use]
    pub fn text_field(&self) -> Field {
        self.fields.text
    }

    /// Text tokens of the live chunks in `searcher`, each text counted as long as its field
    /// norm (what BM25 takes its length to be): the same for the same chunks however they lie
    /// in segments (see [`crate::shard::TermStats::of`]). Kept per segment: a segment never changes, only
    /// its deletions.
    ///
    /// # Errors
    /// tantivy errors.
    pub fn norm_tokens(&self, searcher: &Searcher) -> Result<u64> {
        let mut total = 0;
        for segment in searcher.segment_readers() {
            let id = (segment.segment_id(), segment.num_deleted_docs());
            let known = self
                .norm_tokens
                .lock()
                .ok()
                .and_then(|m| m.get(&id).copied());
            let tokens = match known {
                Some(tokens) => tokens,
                None => {
                    let norms = segment.get_fieldnorms_reader(self.fields.text)?;
                    let mut count = [0u64; 256];
                    for doc in segment.doc_ids_alive() {
                        count[usize::from(norms.fieldnorm_id(doc))] += 1;
                    }
                    let tokens = (0..=255u8)
                        .map(|id| {
                            count[usize::from(id)] * u64::from(FieldNormReader::id_to_fieldnorm(id))
                        })
                        .sum();
                    if let Ok(mut m) = self.norm_tokens.lock() {
                        m.insert(id, tokens);
                    }
                    tokens
                }
            };
            total += tokens;
        }
        Ok(total)
    }

    /// Analyze a query into its distinct index terms.
    #[must_use]
    pub fn query_terms(&self, query: &str) -> Vec<Term> {
        query_tokens(query)
            .iter()
            .map(|token| Term::from_field_text(self.fields.text, token))
            .collect()
    }

    fn filter_clauses(&self, filters: &Filters) -> Vec<(Occur, Box<dyn Query>)> {
        let f = self.fields;
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        if !filters.sources.is_empty() {
            clauses.push((Occur::Must, any_term(Some(f.source), &filters.sources)));
        }
        if let Some(session) = &filters.session_id {
            clauses.push((
                Occur::Must,
                Box::new(TermQuery::new(
                    Term::from_field_text(f.session_id, session),
                    IndexRecordOption::Basic,
                )),
            ));
        }
        if !filters.projects.is_empty() || !filters.libraries.is_empty() {
            clauses.push((Occur::Must, self.scope_clause(filters)));
        }
        if let Some(branch) = &filters.branch {
            clauses.push((
                Occur::Must,
                any_term(f.branch, std::slice::from_ref(branch)),
            ));
        }
        if filters.since.is_some() || filters.until.is_some() {
            let lower = filters.since.map_or(Bound::Unbounded, |t| {
                Bound::Included(Term::from_field_i64(f.ts, t))
            });
            let upper = filters.until.map_or(Bound::Unbounded, |t| {
                Bound::Excluded(Term::from_field_i64(f.ts, t))
            });
            clauses.push((Occur::Must, Box::new(RangeQuery::new(lower, upper))));
        }
        clauses
    }

    /// BM25 top `limit` (key, score, document address) for `query` in `searcher`, restricted by
    /// `filters`, with the corpus statistics (documents, text lengths, document frequencies)
    /// taken from `statistics`: the home's own ([`crate::shard::TermStats`], which count live
    /// chunks only), or a sharded index's sum (see [`crate::shard`]). The addresses let the
    /// caller fetch the stored chunks without a key lookup.
    ///
    /// # Errors
    /// tantivy errors.
    pub fn search(
        &self,
        searcher: &Searcher,
        query: &str,
        filters: &Filters,
        limit: usize,
        statistics: &dyn Bm25StatisticsProvider,
    ) -> Result<Vec<(u64, f32, DocAddress)>> {
        let terms = self.query_terms(query);
        if terms.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let query = self.query_of(terms.clone(), filters);
        let top = Self::top_with_ties(searcher, &*query, limit, statistics)?;
        let scores = self.canonical_scores(searcher, &terms, &top, statistics)?;
        let mut keys = KeyColumns::new(searcher);
        let mut hits = top
            .into_iter()
            .zip(scores)
            .map(|(addr, score)| Ok((keys.key(addr)?, score, addr)))
            .collect::<Result<Vec<_>>>()?;
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        hits.truncate(limit);
        Ok(hits)
    }

    /// The documents scoring at least the `limit`-th best score of `query`, in one pass.
    ///
    /// Chunks tied at the cut would be chosen by where their documents sit in segments,
    /// which differs from one build of an archive to the next: the whole tie is taken (the
    /// caller cuts it by chunk key). A tie is judged loosely: tantivy's scores differ from the
    /// canonical ones in the last bits. The pruning threshold trails the `limit`-th score by
    /// that slack, so block-WAND still skips what cannot reach the cut, across all segments.
    fn top_with_ties(
        searcher: &Searcher,
        query: &dyn Query,
        limit: usize,
        statistics: &dyn Bm25StatisticsProvider,
    ) -> Result<Vec<DocAddress>> {
        let weight = query.weight(EnableScoring::enabled_from_statistics_provider(
            statistics, searcher,
        ))?;
        // The `limit` best scores so far (a min-heap), and every document that passed the
        // threshold when it was met; those below the final threshold are dropped at the end.
        let mut best: BinaryHeap<Reverse<TotalScore>> = BinaryHeap::with_capacity(limit + 1);
        let mut kept: Vec<(Score, DocAddress)> = Vec::new();
        let mut threshold = Score::MIN;
        for (ord, segment) in searcher.segment_readers().iter().enumerate() {
            let segment_ord = u32::try_from(ord).unwrap_or(u32::MAX);
            let alive = segment.alive_bitset();
            weight.for_each_pruning(threshold, segment, &mut |doc, score| {
                if alive.is_some_and(|a| a.is_deleted(doc)) {
                    return threshold;
                }
                kept.push((score, DocAddress::new(segment_ord, doc)));
                best.push(Reverse(TotalScore(score)));
                if best.len() > limit {
                    best.pop();
                }
                if best.len() == limit {
                    if let Some(Reverse(TotalScore(cut))) = best.peek() {
                        threshold = cut * (1.0 - TIE_SLACK);
                    }
                    if kept.len() >= 4 * limit {
                        kept.retain(|(s, _)| *s > threshold);
                    }
                }
                threshold
            })?;
        }
        Ok(kept
            .into_iter()
            .filter(|(s, _)| *s > threshold)
            .map(|(_, addr)| addr)
            .collect())
    }

    /// The BM25 score of each document for `terms`, each term's part added in the terms'
    /// order. tantivy adds them in the order its scorers happen to be in, which follows how
    /// documents lie in segments: the same chunk would score a few last bits apart in one
    /// home and in a shard holding it (or after a merge). The parts themselves are tantivy's.
    fn canonical_scores(
        &self,
        searcher: &Searcher,
        terms: &[Term],
        docs: &[DocAddress],
        statistics: &dyn Bm25StatisticsProvider,
    ) -> Result<Vec<f32>> {
        let field = self.fields.text;
        let total_docs = statistics.total_num_docs()?;
        #[allow(clippy::cast_precision_loss)] // tantivy computes the average the same way
        let average = statistics.total_num_tokens(field)? as f32 / total_docs as f32;
        let weights = terms
            .iter()
            .map(|t| {
                Ok(Bm25Weight::for_one_term(
                    statistics.doc_freq(t)?,
                    total_docs,
                    average,
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        let mut scores = vec![0f32; docs.len()];
        // Each segment's documents in ascending order: every term's postings read forward once.
        let mut order: Vec<usize> = (0..docs.len()).collect();
        order.sort_by_key(|&i| (docs[i].segment_ord, docs[i].doc_id));
        for group in order.chunk_by(|a, b| docs[*a].segment_ord == docs[*b].segment_ord) {
            let segment = searcher.segment_reader(docs[group[0]].segment_ord);
            let inverted = segment.inverted_index(field)?;
            let norms = segment.get_fieldnorms_reader(field)?;
            let mut parts = vec![0f32; group.len() * terms.len()];
            for (t, term) in terms.iter().enumerate() {
                let Some(mut postings) =
                    inverted.read_postings(term, IndexRecordOption::WithFreqs)?
                else {
                    continue;
                };
                for (j, &i) in group.iter().enumerate() {
                    let doc = docs[i].doc_id;
                    if postings.doc() <= doc && postings.seek(doc) == doc {
                        parts[j * terms.len() + t] =
                            weights[t].score(norms.fieldnorm_id(doc), postings.term_freq());
                    }
                }
            }
            for (j, &i) in group.iter().enumerate() {
                scores[i] = parts[j * terms.len()..(j + 1) * terms.len()]
                    .iter()
                    .fold(0.0, |sum, part| sum + part);
            }
        }
        Ok(scores)
    }

    /// The BM25 query of `terms` under `filters`.
    fn query_of(&self, terms: Vec<Term>, filters: &Filters) -> Box<dyn Query> {
        let should: Vec<(Occur, Box<dyn Query>)> = terms
            .into_iter()
            .map(|t| {
                let q: Box<dyn Query> = Box::new(TermQuery::new(t, IndexRecordOption::WithFreqs));
                (Occur::Should, q)
            })
            .collect();
        // Filters select without scoring: a hit's score is its text's alone, so it can be read
        // against `bm25_ceiling`.
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = self
            .filter_clauses(filters)
            .into_iter()
            .map(|(occur, q)| -> (Occur, Box<dyn Query>) {
                (occur, Box::new(ConstScoreQuery::new(q, 0.0)))
            })
            .collect();
        if clauses.is_empty() {
            Box::new(BooleanQuery::new(should))
        } else {
            clauses.push((Occur::Must, Box::new(BooleanQuery::new(should))));
            Box::new(BooleanQuery::new(clauses))
        }
    }

    /// The most `query` can score in BM25 under `statistics` (a searcher's, or a sharded
    /// index's [`crate::shard::TermStats`]): the sum over its distinct terms of
    /// idf·(k1 + 1), the score of a chunk made of the term repeated without end. A hit's score
    /// over this is the share of the query's informative (idf-weighted) terms it holds, which,
    /// unlike a score normalised to the query's best hit, means the same from query to query.
    /// A term the index never saw counts with the idf of a term in no chunk: the query asks for
    /// something nothing holds.
    ///
    /// # Errors
    /// tantivy errors reading term statistics.
    pub fn bm25_ceiling(
        &self,
        statistics: &dyn Bm25StatisticsProvider,
        query: &str,
    ) -> Result<f32> {
        if statistics.total_num_docs()? == 0 {
            return Ok(0.0);
        }
        let mut ceiling = 0.0;
        for term in self.query_terms(query) {
            ceiling += Bm25Weight::for_terms(statistics, &[term])?.max_score();
        }
        Ok(ceiling)
    }

    /// For each of `texts`, the byte range of its passage of at most `max_chars` characters that
    /// holds the most of `query`'s terms, rarer terms weighing more; None when no term occurs.
    /// tantivy's snippet generator does the choosing, with the index's own analyzer, so a
    /// passage matches the query the way the search did (stems, parts of identifiers).
    ///
    /// # Errors
    /// tantivy errors reading term statistics.
    pub fn passages(
        &self,
        statistics: &dyn Bm25StatisticsProvider,
        query: &str,
        texts: &[&str],
        max_chars: usize,
    ) -> Result<Vec<Option<Range<usize>>>> {
        // tantivy's own weighting (1 / (1 + document frequency)), but a term no chunk holds
        // still counts: the text may not be indexed (a brain entry, an empty home).
        let mut weights = BTreeMap::new();
        for term in self.query_terms(query) {
            if let Some(text) = term.value().as_str() {
                let weight = 1.0 / (1.0 + statistics.doc_freq(&term)? as f32);
                weights.insert(text.to_owned(), weight);
            }
        }
        let generator = SnippetGenerator::new(weights, analyzer(), self.fields.text, max_chars);
        Ok(texts
            .iter()
            .map(|text| {
                let snippet = generator.snippet(text);
                // The fragment is a copy of a slice of the text: find where.
                (!snippet.is_empty())
                    .then(|| text.find(snippet.fragment()))
                    .flatten()
                    .map(|start| start..start + snippet.fragment().len())
            })
            .collect())
    }

    /// Keys of every chunk that passes `filters` (used to restrict the vector search).
    ///
    /// # Errors
    /// tantivy errors.
    pub fn filtered_keys(&self, searcher: &Searcher, filters: &Filters) -> Result<HashSet<u64>> {
        let query = BooleanQuery::new(self.filter_clauses(filters));
        Ok(searcher
            .search(&query, &FilteredKeys)?
            .into_iter()
            .collect())
    }

    /// Where the live document of chunk `key` is, if any: a postings lookup per segment,
    /// without the query machinery (weights, scorers, collectors) a `TermQuery` brings.
    ///
    /// # Errors
    /// tantivy errors.
    pub fn address(&self, searcher: &Searcher, key: u64) -> Result<Option<DocAddress>> {
        let term = self.key_term(key);
        for (ord, segment) in searcher.segment_readers().iter().enumerate() {
            let postings = segment
                .inverted_index(self.fields.key)?
                .read_postings(&term, IndexRecordOption::Basic)?;
            let Some(mut postings) = postings else {
                continue;
            };
            let mut doc = postings.doc();
            while doc != TERMINATED {
                if segment
                    .alive_bitset()
                    .is_none_or(|alive| alive.is_alive(doc))
                {
                    let ord = u32::try_from(ord).unwrap_or(u32::MAX);
                    return Ok(Some(DocAddress::new(ord, doc)));
                }
                doc = postings.advance();
            }
        }
        Ok(None)
    }

    /// The stored chunk at `addr`.
    ///
    /// # Errors
    /// tantivy errors.
    pub fn fetch(&self, searcher: &Searcher, addr: DocAddress) -> Result<StoredChunk> {
        let doc: TantivyDocument = searcher.doc(addr)?;
        Ok(self.stored(&doc))
    }

    /// Load stored chunks by key (missing keys are skipped).
    ///
    /// # Errors
    /// tantivy errors.
    pub fn get(&self, keys: &[u64]) -> Result<Vec<StoredChunk>> {
        let searcher = self.searcher();
        // Each chunk is a term lookup and a block of the doc store to read and decompress
        // (~70 µs when not in the cache): on every core at once.
        let found = keys
            .par_iter()
            .map(|&key| {
                self.address(&searcher, key)?
                    .map(|addr| self.fetch(&searcher, addr))
                    .transpose()
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(found.into_iter().flatten().collect())
    }

    fn stored(&self, doc: &TantivyDocument) -> StoredChunk {
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

    /// Texts and hashes for the given keys, in order (for embedding backfill).
    ///
    /// # Errors
    /// tantivy errors.
    pub fn texts(&self, keys: &[u64]) -> Result<Vec<(u64, String, String)>> {
        Ok(self
            .get(keys)?
            .into_iter()
            .map(|c| (c.key, c.content_hash, c.text))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The chunk of a one-line generic transcript saying "billing database note `i`".
    fn note_chunk(i: usize) -> Chunk {
        let line = format!("{{\"role\":\"user\",\"content\":\"billing database note {i}\"}}\n");
        let parsed = crate::parse::parse_bytes(
            line.as_bytes(),
            Path::new("/x.jsonl"),
            Some(crate::model::Format::Generic),
        );
        crate::chunk::chunk_parsed(&parsed, "/x.jsonl", 500).remove(0)
    }

    /// A home built before projects were recorded (its schema lacks `project` and `branch`)
    /// opens, takes new chunks and answers; its chunks read as of no project, and a project or
    /// branch filter matches none of them.
    #[test]
    fn a_schema_without_project_fields_still_answers() {
        let dir = tempfile::tempdir().unwrap();
        let mut b = Schema::builder();
        for entry in schema().fields() {
            let (_, e) = entry;
            if !matches!(e.name(), "project" | "branch") {
                b.add_field(e.clone());
            }
        }
        Index::create_in_dir(dir.path(), b.build()).unwrap();
        let lexical = Lexical::open(dir.path()).unwrap();
        assert!(!lexical.records_projects());
        let mut chunk = crate::chunk::chunk_parsed(
            &crate::parse::parse_bytes(
                b"{\"role\":\"user\",\"content\":\"billing uses postgres\"}\n",
                Path::new("/x.jsonl"),
                Some(crate::model::Format::Generic),
            ),
            "/x.jsonl",
            500,
        )
        .remove(0);
        chunk.branch = Some("main".into());
        let mut writer = lexical.writer().unwrap();
        writer
            .add_document(lexical.document(&chunk, &chunk.source, &chunk.heading, "/src/billing"))
            .unwrap();
        writer.commit().unwrap();
        lexical.reload().unwrap();
        let searcher = lexical.searcher();
        let all = lexical
            .search(&searcher, "postgres", &Filters::default(), 10, &searcher)
            .unwrap();
        assert_eq!(all.len(), 1);
        let stored = lexical.fetch(&searcher, all[0].2).unwrap();
        assert_eq!((stored.project.as_str(), stored.branch.as_str()), ("", ""));
        for filters in [
            Filters {
                projects: vec!["/src/billing".into()],
                ..Filters::default()
            },
            Filters {
                branch: Some("main".into()),
                ..Filters::default()
            },
        ] {
            assert!(lexical
                .search(&searcher, "postgres", &filters, 10, &searcher)
                .unwrap()
                .is_empty());
            assert!(lexical
                .filtered_keys(&searcher, &filters)
                .unwrap()
                .is_empty());
        }
        assert!(lexical.projects().unwrap().is_empty());
    }

    #[test]
    fn project_and_branch_filters_and_counts() {
        let dir = tempfile::tempdir().unwrap();
        let lexical = Lexical::open(dir.path()).unwrap();
        assert!(lexical.records_projects());
        let mut writer = lexical.writer().unwrap();
        for (i, (project, branch)) in [
            ("/src/a", "main"),
            ("/src/a", "dev"),
            ("/src/b", "main"),
            ("", ""),
        ]
        .into_iter()
        .enumerate()
        {
            let mut chunk = note_chunk(i);
            chunk.branch = (!branch.is_empty()).then(|| branch.to_owned());
            writer
                .add_document(lexical.document(&chunk, &chunk.source, &chunk.heading, project))
                .unwrap();
        }
        writer.commit().unwrap();
        lexical.reload().unwrap();
        let searcher = lexical.searcher();
        let count = |projects: &[&str], branch: Option<&str>| {
            let filters = Filters {
                projects: projects.iter().map(|p| (*p).to_owned()).collect(),
                branch: branch.map(str::to_owned),
                ..Filters::default()
            };
            let hits = lexical
                .search(&searcher, "billing", &filters, 10, &searcher)
                .unwrap()
                .len();
            // The vector side's allow-list (asked for only when some filter is set) agrees.
            if !filters.is_empty() {
                assert_eq!(
                    hits,
                    lexical.filtered_keys(&searcher, &filters).unwrap().len()
                );
            }
            hits
        };
        assert_eq!(count(&[], None), 4);
        assert_eq!(count(&["/src/a"], None), 2);
        assert_eq!(count(&["/src/a", "/src/b"], None), 3);
        assert_eq!(count(&["/src/a"], Some("main")), 1);
        assert_eq!(count(&[], Some("main")), 2);
        assert_eq!(count(&["/src/c"], None), 0);
        let projects = lexical.projects().unwrap();
        assert_eq!(
            projects.into_iter().collect::<Vec<_>>(),
            vec![("/src/a".to_owned(), 2), ("/src/b".to_owned(), 1)]
        );
    }

    /// The user's libraries join a project filter with their notes only: a transcript filed
    /// under a library's key (a session run in the notes folder) stays out.
    #[test]
    fn library_notes_join_a_project_filter_and_transcripts_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let lexical = Lexical::open(dir.path()).unwrap();
        let mut writer = lexical.writer().unwrap();
        for (i, (project, source)) in [
            ("/src/a", "transcript"),
            ("/src/b", "transcript"),
            ("/src/b", "knowledge"),
            ("/notes", "knowledge"),
            ("/notes", "summary"),
            ("/notes", "transcript"),
        ]
        .into_iter()
        .enumerate()
        {
            let chunk = note_chunk(i);
            writer
                .add_document(lexical.document(&chunk, source, &chunk.heading, project))
                .unwrap();
        }
        writer.commit().unwrap();
        lexical.reload().unwrap();
        let searcher = lexical.searcher();
        let count = |projects: &[&str], libraries: &[&str]| {
            let filters = Filters {
                projects: projects.iter().map(|p| (*p).to_owned()).collect(),
                libraries: libraries.iter().map(|p| (*p).to_owned()).collect(),
                ..Filters::default()
            };
            let hits = lexical
                .search(&searcher, "billing", &filters, 10, &searcher)
                .unwrap()
                .len();
            assert_eq!(
                hits,
                lexical.filtered_keys(&searcher, &filters).unwrap().len()
            );
            hits
        };
        assert_eq!(count(&["/src/a"], &[]), 1);
        assert_eq!(count(&["/src/a"], &["/notes"]), 3);
        assert_eq!(count(&["/src/b"], &["/notes"]), 4);
        assert_eq!(count(&[], &["/notes"]), 2);
        assert_eq!(count(&["/src/a"], &["/src/b"]), 2); // b's notes, not its transcripts
        assert_eq!(
            lexical
                .note_projects()
                .unwrap()
                .into_iter()
                .collect::<Vec<_>>(),
            vec![("/notes".to_owned(), 2), ("/src/b".to_owned(), 1)]
        );
    }

    #[test]
    fn transcript_meta_is_the_json_value_text() {
        let mut chunk = crate::chunk::chunk_parsed(
            &crate::parse::parse_bytes(
                b"{\"role\":\"user\",\"content\":\"hi \\\"there\\\"\"}\n",
                Path::new("/x.jsonl"),
                Some(crate::model::Format::Generic),
            ),
            "/x.jsonl",
            500,
        )
        .remove(0);
        chunk.tools = vec!["Bash".into(), "Re\"ad".into()];
        chunk.files = vec!["src/a.rs".into()];
        chunk.turn_ids = vec!["D1:3".into()];
        chunk.part = 2;
        for parent in [None, Some("p-1".to_owned())] {
            chunk.parent_session_id = parent;
            let value = serde_json::json!({
                "tools": chunk.tools,
                "files": chunk.files,
                "turn_ids": chunk.turn_ids,
                "parent_session_id": chunk.parent_session_id,
                "part": chunk.part,
            });
            assert_eq!(transcript_meta(&chunk), value.to_string());
        }
    }

    /// A keyword index of one generic-JSONL chunk per text (user turn only).
    fn index_of(dir: &Path, texts: &[&str]) -> Lexical {
        let lexical = Lexical::open(dir).unwrap();
        let mut writer = lexical.writer().unwrap();
        for (i, text) in texts.iter().enumerate() {
            let line = serde_json::json!({"role": "user", "content": text}).to_string() + "\n";
            let path = format!("/s{i}.jsonl");
            let parsed = crate::parse::parse_bytes(
                line.as_bytes(),
                Path::new(&path),
                Some(crate::model::Format::Generic),
            );
            for chunk in crate::chunk::chunk_parsed(&parsed, &path, 500) {
                let source = if i % 2 == 0 {
                    "transcript"
                } else {
                    "knowledge"
                };
                writer
                    .add_document(lexical.document(&chunk, source, "", ""))
                    .unwrap();
            }
        }
        writer.commit().unwrap();
        lexical.reload().unwrap();
        lexical
    }

    #[test]
    fn coverage_is_the_share_of_the_query_a_hit_holds_and_filters_score_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let lexical = index_of(
            dir.path(),
            &[
                "the deploy failed with exit code 137 in the billing worker",
                "the deploy went fine",
                "lunch at the ramen place",
                "exit code 137 means the kernel killed the worker for memory",
            ],
        );
        let searcher = lexical.searcher();
        let ceiling = |q: &str| lexical.bm25_ceiling(&searcher, q).unwrap();
        let best = |q: &str, filters: &Filters| {
            lexical
                .search(&searcher, q, filters, 10, &searcher)
                .unwrap()[0]
                .1
        };
        let full = best("deploy exit code 137 billing", &Filters::default())
            / ceiling("deploy exit code 137 billing");
        let part =
            best("deploy faucet plumber", &Filters::default()) / ceiling("deploy faucet plumber");
        assert!(full > 0.0 && full <= 1.0);
        // "faucet" and "plumber" are in no chunk: they weigh the most, and nothing holds them.
        assert!(part < 0.5 * full, "{part} vs {full}");
        assert!((ceiling("deploy faucet") - ceiling("faucet deploy")).abs() < 1e-6);
        // A source filter selects without adding to the score.
        let filtered = Filters {
            sources: vec!["transcript".into()],
            ..Filters::default()
        };
        assert_eq!(
            best("deploy exit code", &filtered),
            best("deploy exit code", &Filters::default())
        );
        let empty = tempfile::tempdir().unwrap();
        let none = Lexical::open(empty.path()).unwrap();
        assert_eq!(
            none.bm25_ceiling(&none.searcher(), "anything").unwrap(),
            0.0
        );
    }

    #[test]
    fn a_passage_holds_the_query_terms_wherever_they_are() {
        let dir = tempfile::tempdir().unwrap();
        let lexical = index_of(dir.path(), &["unrelated words"]);
        let tail = "the build log says: ERR_CONN_RESET while fetching packages";
        let text = format!(
            "{}{tail}",
            "setting up the environment and reading docs. ".repeat(20)
        );
        let found = lexical
            .passages(
                &lexical.searcher(),
                "conn reset fetching",
                &[&text, "nothing here"],
                60,
            )
            .unwrap();
        let range = found[0].clone().expect("a passage");
        assert!(
            text[range.clone()].contains("ERR_CONN_RESET"),
            "{:?}",
            &text[range.clone()]
        );
        assert!(range.start > 0 && text[range].chars().count() <= 60);
        assert_eq!(found[1], None);
    }

    #[test]
    fn a_tie_across_the_cut_is_settled_by_chunk_key_not_by_document_order() {
        let texts: Vec<String> = (0..12)
            .map(|i| format!("release checklist item{i}"))
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let mut answers = Vec::new();
        for order in [refs.clone(), refs.iter().rev().copied().collect()] {
            let dir = tempfile::tempdir().unwrap();
            let lexical = index_of(dir.path(), &order);
            let searcher = lexical.searcher();
            let hits = lexical
                .search(
                    &searcher,
                    "release checklist",
                    &Filters::default(),
                    5,
                    &searcher,
                )
                .unwrap();
            assert!(hits.iter().all(|h| h.1 == hits[0].1), "one tie");
            answers.push(hits.iter().map(|h| h.0).collect::<Vec<u64>>());
        }
        let mut all = answers[0].clone();
        all.sort_unstable();
        assert_eq!(answers[0], answers[1]);
        assert_eq!(answers[0], all);
    }
}
