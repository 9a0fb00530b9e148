//! What a sharded index (`memlane.cluster`) calls across shards: BM25 terms and statistics,
//! fusing shards' candidates, and one search over several stores open in this process.

use crate::convert::{detached, filters, hit_list, parse_fusion, query_vector};
use crate::errors::{invalid_argument, to_py};
use crate::store::PyStore;
use memlane_core::hybrid::DEFAULT_THRESHOLD;
use memlane_core::shard::{fuse_parts, Candidates, TermStats};
use memlane_core::store::{SearchRequest, Store};
use memlane_core::Error;
use numpy::PyReadonlyArray1;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::PyList;
use std::sync::Arc;

/// The distinct tokens BM25 looks up for `query` (the keys of `Store.term_stats`'s
/// `doc_freqs`), in order of appearance.
#[pyfunction]
pub fn query_tokens(query: &str) -> Vec<String> {
    memlane_core::lexical::query_tokens(query)
}

/// The sum of shards' `Store.term_stats` for one query (JSON in, JSON out).
#[pyfunction]
pub fn merge_term_stats(parts: Vec<String>) -> PyResult<String> {
    let mut total = TermStats::default();
    for part in &parts {
        let stats: TermStats = serde_json::from_str(part)
            .map_err(|e| invalid_argument(format!("not Store.term_stats output: {e}")))?;
        total.add(&stats);
    }
    serde_json::to_string(&total).map_err(|e| to_py(Error::Json(e)))
}

/// Merge shards' `Store.candidates` and fuse them as one home's search does: the best `k` as
/// `(part, key, score, bm25, vector, coverage, relevance)`, `part` the index in `parts` of the
/// shard holding it.
#[pyfunction]
#[pyo3(signature = (parts, k = 10, candidates = 50, fusion = "weighted", vector_weight = 0.6, threshold = DEFAULT_THRESHOLD))]
#[allow(clippy::type_complexity)]
pub fn fuse_candidates(
    py: Python<'_>,
    // Borrowed bytes: extracting a `Vec<u8>` walks a bytes object item by item (~0.2 ms for
    // four shards' candidates, a tenth of the sharded search's own work).
    parts: Vec<PyBackedBytes>,
    k: usize,
    candidates: usize,
    fusion: &str,
    vector_weight: f32,
    threshold: f32,
) -> PyResult<Vec<(usize, u64, f32, Option<f32>, Option<f32>, Option<f32>, f32)>> {
    let fusion = parse_fusion(fusion, vector_weight)?;
    let fused = detached(py, || {
        let parts = parts
            .iter()
            .map(|p| Candidates::from_bytes(p))
            .collect::<memlane_core::Result<Vec<_>>>()?;
        Ok(fuse_parts(&parts, candidates.max(k), fusion, threshold, k))
    })?;
    Ok(fused
        .into_iter()
        .map(|(part, f)| {
            (
                part,
                f.key,
                f.score,
                f.bm25,
                f.vector,
                f.coverage,
                f.relevance,
            )
        })
        .collect())
}

/// `Store.search` over several stores (the shards of one sharded index open in this
/// process) as one home holding all their chunks would answer it, BM25 scored with the whole
/// corpus's statistics: those of every store of `corpus` (default: `stores`), summed: hit
/// dicts, best first.
#[pyfunction]
#[pyo3(signature = (stores, query, k = 10, vector = None, embedder_id = None, sources = None, session_id = None,
                    since = None, until = None, fusion = "weighted", vector_weight = 0.6, threshold = DEFAULT_THRESHOLD,
                    candidates = 50, projects = None, branch = None, corpus = None))]
#[allow(clippy::too_many_arguments)]
pub fn search_across<'py>(
    py: Python<'py>,
    stores: Vec<PyRef<'py, PyStore>>,
    query: String,
    k: usize,
    vector: Option<PyReadonlyArray1<'py, f32>>,
    embedder_id: Option<String>,
    sources: Option<Vec<String>>,
    session_id: Option<String>,
    since: Option<i64>,
    until: Option<i64>,
    fusion: &str,
    vector_weight: f32,
    threshold: f32,
    candidates: usize,
    projects: Option<Vec<String>>,
    branch: Option<String>,
    corpus: Option<Vec<PyRef<'py, PyStore>>>,
) -> PyResult<Bound<'py, PyList>> {
    let req = SearchRequest {
        query,
        vector: query_vector(vector)?,
        embedder_id,
        k,
        filters: filters(sources, session_id, since, until, projects, branch),
        fusion: parse_fusion(fusion, vector_weight)?,
        threshold,
        candidates,
    };
    let shared = |list: &[PyRef<'py, PyStore>]| -> Vec<Arc<Store>> {
        list.iter().map(|s| Arc::clone(&s.inner)).collect()
    };
    let corpus = corpus.as_deref().map(shared);
    let stores = shared(&stores);
    let hits = detached(py, || {
        let refs: Vec<&Store> = stores.iter().map(AsRef::as_ref).collect();
        let every: Vec<&Store> = corpus
            .as_ref()
            .map_or_else(|| refs.clone(), |c| c.iter().map(AsRef::as_ref).collect());
        let stats = Store::corpus_term_stats(&every, &req.query)?;
        Store::search_across(&refs, &req, &stats)
    })?;
    hit_list(py, &hits)
}
