//! Searching a home: keyword and vector candidates gathered side by side, fused, and read
//! back from the same commit; the pieces a sharded search needs from each home.

use super::{guarded, Store};
use crate::error::Result;
use crate::hybrid::{Fused, Fusion};
use crate::lexical::{Filters, StoredChunk};
use crate::shard::{fuse_parts, Candidates, Summary, TermStats};
use rayon::prelude::*;
use std::collections::{HashMap, HashSet};

/// A search request.
#[derive(Debug, Clone)]
pub struct SearchRequest {
    /// Query text (for BM25).
    pub query: String,
    /// Normalised query embedding, if the caller has one.
    pub vector: Option<Vec<f32>>,
    /// Embedder that produced `vector`.
    pub embedder_id: Option<String>,
    /// Hits wanted.
    pub k: usize,
    /// Filters.
    pub filters: Filters,
    /// Fusion method.
    pub fusion: Fusion,
    /// Relevance floor: nothing when no candidate reaches it ([`crate::hybrid::fuse`]).
    pub threshold: f32,
    /// Candidates taken from each list before fusion.
    pub candidates: usize,
}

/// A ranked hit with its provenance and score breakdown.
#[derive(Debug, Clone)]
pub struct Hit {
    /// The stored chunk.
    pub chunk: StoredChunk,
    /// Final score.
    pub score: f32,
    /// Normalised BM25, if a keyword match.
    pub bm25: Option<f32>,
    /// Cosine similarity, if the chunk has vectors.
    pub vector: Option<f32>,
    /// BM25 over the query's ceiling, if a keyword match (see [`crate::hybrid::Fused`]).
    pub coverage: Option<f32>,
    /// How relevant on an absolute scale ([`crate::hybrid::relevance`]).
    pub relevance: f32,
}

impl Store {
    /// Hybrid search.
    ///
    /// # Errors
    /// `EmbedderMismatch` when the query vector comes from another embedder than the
    /// index's vectors; index errors.
    pub fn search(&self, req: &SearchRequest) -> Result<Vec<Hit>> {
        self.lexical()?;
        guarded(&self.lexical_dir(), || self.search_unguarded(req))
    }

    fn search_unguarded(&self, req: &SearchRequest) -> Result<Vec<Hit>> {
        // One searcher for the whole request: keyword hits, filters and stored chunks all come
        // from the same commit.
        let searcher = self.lexical.searcher();
        let (candidates, addresses) = self.gather(&searcher, req, None)?;
        // Stored fields only for the final hits, each a block of the doc store to read and
        // decompress: on every core at once.
        let hits = candidates
            .fuse(req.fusion, req.threshold, req.k)
            .into_par_iter()
            .map(|f| self.hit(&searcher, &addresses, f))
            .collect::<Result<Vec<_>>>()?;
        Ok(hits.into_iter().flatten().collect())
    }

    /// A fused candidate with its stored chunk (None when it is gone); keyword hits already
    /// know their document.
    fn hit(
        &self,
        searcher: &tantivy::Searcher,
        addresses: &HashMap<u64, tantivy::DocAddress>,
        f: Fused,
    ) -> Result<Option<Hit>> {
        let addr = match addresses.get(&f.key) {
            Some(addr) => Some(*addr),
            None => self.lexical.address(searcher, f.key)?,
        };
        addr.map(|addr| {
            Ok(Hit {
                chunk: self.lexical.fetch(searcher, addr)?,
                score: f.score,
                bm25: f.bm25,
                vector: f.vector,
                coverage: f.coverage,
                relevance: f.relevance,
            })
        })
        .transpose()
    }

    /// Hybrid search over several stores (the shards of a sharded index open in one process)
    /// as one home holding all their chunks would answer it: each store's candidates scored
    /// with the whole corpus's BM25 `stats` ([`TermStats::add`]), merged and fused
    /// ([`fuse_parts`]), the hits' chunks read from the store holding each. Every store is
    /// searched side by side and every hit read side by side on the thread pool: one call for
    /// what would otherwise be a round of calls per store and two rounds a query.
    ///
    /// # Errors
    /// The first store's error, as [`Store::search`].
    pub fn search_across(
        stores: &[&Store],
        req: &SearchRequest,
        stats: &TermStats,
    ) -> Result<Vec<Hit>> {
        let gathered = stores
            .par_iter()
            .map(|store| store.gathered(req, Some(stats)))
            .collect::<Result<Vec<_>>>()?;
        let (parts, readers): (Vec<_>, Vec<_>) = gathered
            .into_iter()
            .map(|(searcher, candidates, addresses)| (candidates, (searcher, addresses)))
            .unzip();
        let fused = fuse_parts(
            &parts,
            req.candidates.max(req.k),
            req.fusion,
            req.threshold,
            req.k,
        );
        let hits = fused
            .into_par_iter()
            .map(|(part, f)| {
                let (store, (searcher, addresses)) = (stores[part], &readers[part]);
                guarded(&store.lexical_dir(), || store.hit(searcher, addresses, f))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(hits.into_iter().flatten().collect())
    }

    /// This home's share of the corpus statistics BM25 needs for `query` (one shard's part of
    /// a sharded search, see [`crate::shard`]; filters do not change them: a home's BM25
    /// counts every chunk).
    ///
    /// # Errors
    /// Index errors.
    pub fn term_stats(&self, query: &str) -> Result<TermStats> {
        let lexical = self.lexical()?;
        guarded(&self.lexical_dir(), || {
            TermStats::of(lexical, &lexical.searcher(), query)
        })
    }

    /// The whole corpus's BM25 statistics for `query` over several stores (the shards of one
    /// sharded index open in one process): every store's [`Store::term_stats`], side by side,
    /// summed.
    ///
    /// # Errors
    /// The first store's error.
    pub fn corpus_term_stats(stores: &[&Store], query: &str) -> Result<TermStats> {
        let shares = stores
            .par_iter()
            .map(|store| store.term_stats(query))
            .collect::<Result<Vec<_>>>()?;
        let mut total = TermStats::default();
        for share in &shares {
            total.add(share);
        }
        Ok(total)
    }

    /// What this home holds, for routing scoped queries of a sharded index (see
    /// [`crate::shard::Summary`]).
    ///
    /// # Errors
    /// Index errors.
    pub fn summary(&self) -> Result<Summary> {
        let lexical = self.lexical()?;
        guarded(&self.lexical_dir(), || {
            lexical.reload()?;
            Summary::of(lexical, &lexical.searcher())
        })
    }

    /// The keyword and vector candidates of `req`, unfused: a shard's part of a sharded
    /// search. With `stats` (the whole corpus's, see [`TermStats::add`]) BM25 scores as one
    /// home holding every shard would; without, with this home's own.
    ///
    /// # Errors
    /// As [`Store::search`].
    pub fn candidates(&self, req: &SearchRequest, stats: Option<&TermStats>) -> Result<Candidates> {
        Ok(self.gathered(req, stats)?.1)
    }

    /// [`Store::gather`] on a searcher of its own, returned with the candidates so their
    /// chunks can be read from the same commit.
    fn gathered(
        &self,
        req: &SearchRequest,
        stats: Option<&TermStats>,
    ) -> Result<(
        tantivy::Searcher,
        Candidates,
        HashMap<u64, tantivy::DocAddress>,
    )> {
        self.lexical()?;
        guarded(&self.lexical_dir(), || {
            let searcher = self.lexical.searcher();
            let (candidates, addresses) = self.gather(&searcher, req, stats)?;
            Ok((searcher, candidates, addresses))
        })
    }

    /// The candidates of `req` in `searcher`, with the document address of each keyword hit.
    fn gather(
        &self,
        searcher: &tantivy::Searcher,
        req: &SearchRequest,
        stats: Option<&TermStats>,
    ) -> Result<(Candidates, HashMap<u64, tantivy::DocAddress>)> {
        let candidates = req.candidates.max(req.k);
        // A keyword-only request neither loads the vectors (a fresh process at 1M chunks would
        // spend ~0.1 s on it) nor fails for a damaged vector file.
        let vectors = match req.vector {
            Some(_) => self.vectors()?,
            None => None,
        };
        let index = match (&req.vector, &vectors) {
            (Some(qv), Some(index)) if !index.is_empty() => {
                if let Some(id) = &req.embedder_id {
                    self.check_embedder(id, qv.len())?;
                }
                Some((qv.as_slice(), index))
            }
            _ => None,
        };
        // A home's own statistics unless a sharded search gives the whole corpus's.
        let own;
        let stats = match stats {
            Some(stats) => stats,
            None => {
                own = TermStats::of(&self.lexical, searcher, &req.query)?;
                &own
            }
        };
        // The keyword and vector searches are independent: run them on both cores.
        let (keyword, ann) = rayon::join(
            || {
                self.lexical
                    .search(searcher, &req.query, &req.filters, candidates, stats)
            },
            || -> Result<Vec<(u64, f32)>> {
                let Some((qv, index)) = index else {
                    return Ok(Vec::new());
                };
                let allowed = if req.filters.is_empty() {
                    None
                } else {
                    Some(self.lexical.filtered_keys(searcher, &req.filters)?)
                };
                index.search(qv, candidates, allowed.as_ref())
            },
        );
        let (keyword, ann) = (keyword?, ann?);
        let bm25: Vec<(u64, f32)> = keyword.iter().map(|h| (h.0, h.1)).collect();
        let bm25_ceiling = self.lexical.bm25_ceiling(stats, &req.query)?;
        let mut sims = Vec::new();
        let mut ann = ann;
        if let Some((qv, index)) = index {
            // Every candidate's similarity is computed the same exact way, whether the ANN list
            // or only the keyword list found it (the graph's own distances differ from it in
            // the last digits), so two builds that find a chunk differently score it alike.
            let in_ann: HashSet<u64> = ann.iter().map(|h| h.0).collect();
            let mut keys: Vec<u64> = ann.iter().map(|h| h.0).collect();
            keys.extend(bm25.iter().map(|h| h.0).filter(|k| !in_ann.contains(k)));
            sims = keys
                .iter()
                .zip(index.similarities(&keys, qv))
                .filter_map(|(key, sim)| sim.map(|s| (*key, s)))
                .collect();
            let exact: HashMap<u64, f32> = sims.iter().copied().collect();
            for hit in &mut ann {
                hit.1 = exact.get(&hit.0).copied().unwrap_or(hit.1);
            }
            ann.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        }
        let addresses = keyword.iter().map(|h| (h.0, h.2)).collect();
        let have_vectors = index.is_some();
        Ok((
            Candidates {
                bm25,
                bm25_ceiling,
                ann,
                sims,
                have_vectors,
            },
            addresses,
        ))
    }

    /// The passage of each text that best matches `query` (see
    /// [`crate::lexical::Lexical::passages`]), terms weighed by this home's statistics or, in a
    /// sharded index, the whole corpus's `stats`.
    ///
    /// # Errors
    /// Index errors.
    pub fn passages(
        &self,
        query: &str,
        texts: &[&str],
        max_chars: usize,
        stats: Option<&TermStats>,
    ) -> Result<Vec<Option<std::ops::Range<usize>>>> {
        let lexical = self.lexical()?;
        guarded(&self.lexical_dir(), || match stats {
            Some(stats) => lexical.passages(stats, query, texts, max_chars),
            None => lexical.passages(&lexical.searcher(), query, texts, max_chars),
        })
    }
}
