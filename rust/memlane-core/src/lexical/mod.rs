//! The tantivy side: schema, analyzer, writes and BM25 search over chunks.
//!
//! [`Lexical`] here opens the index and reads and writes documents by key; a chunk becomes a
//! document and back in `document`, filters and per-project counts are in `filter`, and BM25
//! scoring (ties at the cut, canonical scores, the query's ceiling, passages) in `search`, the
//! session catalog in `sessions`.

use crate::error::Result;
use document::{analyzer, schema, Fields};
use rayon::prelude::*;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Mutex;
use tantivy::index::SegmentId;
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{
    DocAddress, DocSet, Index, IndexReader, IndexWriter, ReloadPolicy, Searcher, TantivyDocument,
    Term, TERMINATED,
};

mod document;
mod filter;
mod search;
mod sessions;
#[cfg(test)]
mod tests;

pub use document::{query_tokens, StoredChunk};
pub use filter::Filters;
pub use sessions::SessionSummary;

/// Name the analyzer is registered under.
const ANALYZER: &str = "memlane";
/// Writer memory budget: large enough to batch well, small enough for a laptop; at least
/// [`THREAD_MEMORY`] for each indexing thread.
const WRITER_MEMORY: usize = 256 * 1024 * 1024;
/// Least memory of one indexing thread: what it had with tantivy's default of 8 threads.
const THREAD_MEMORY: usize = WRITER_MEMORY / 8;
/// Most indexing threads: keyword ingest measured 8 → 16 cores; past 32 the writer's memory
/// (1 GiB) would be more than any gain is worth.
const MAX_WRITER_THREADS: usize = 32;

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

    /// A writer with an indexing thread per core (tantivy's own default stops at 8, where
    /// keyword ingest stopped scaling); tantivy's own lock makes a second writer fail fast.
    ///
    /// tantivy's indexing threads put documents in segments by thread timing; answers do not
    /// depend on it: scores are summed in the query's term order (`canonical_scores`), the
    /// statistics count live chunks (`shard::TermStats`) and ties are cut by chunk key.
    ///
    /// # Errors
    /// `LockBusy` (as a tantivy error) when another writer is open.
    pub fn writer(&self) -> Result<IndexWriter> {
        let threads = std::thread::available_parallelism()
            .map_or(1, std::num::NonZeroUsize::get)
            .min(MAX_WRITER_THREADS);
        let memory = WRITER_MEMORY.max(threads * THREAD_MEMORY);
        Ok(self.index.writer_with_num_threads(threads, memory)?)
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
