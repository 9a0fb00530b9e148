//! `Store` (readers) and `Writer` (the one writer) for Python.

use crate::errors::to_py;
use memlane_core::chunk::{chunk_parsed, DEFAULT_BUDGET_TOKENS};
use memlane_core::hybrid::{Fusion, DEFAULT_THRESHOLD};
use memlane_core::lexical::{Filters, StoredChunk};
use memlane_core::model::Format;
use memlane_core::shard::{fuse_parts, Candidates, TermStats};
use memlane_core::store::{
    self as core_store, Forget, Hit, HomeLock, SearchRequest, Store, Writer,
};
use memlane_core::vector::Quantization;
use memlane_core::{parse, Error};
use numpy::{PyArray1, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::{PyBool, PyBytes, PyDict, PyList, PyString};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// Run `f` with the GIL released and map its error.
fn detached<T: Send>(
    py: Python<'_>,
    f: impl FnOnce() -> memlane_core::Result<T> + Send,
) -> PyResult<T> {
    py.detach(f).map_err(to_py)
}

fn json_to_py(py: Python<'_>, value: &impl serde::Serialize) -> PyResult<Py<PyAny>> {
    let text = serde_json::to_string(value).map_err(|e| to_py(Error::Json(e)))?;
    let json = py.import("json")?;
    Ok(json.call_method1("loads", (text,))?.unbind())
}

/// A JSON value as Python objects, built directly (the `json` module round trip cost more
/// than the rest of a hit's conversion).
fn value_to_py<'py>(py: Python<'py>, value: &serde_json::Value) -> PyResult<Bound<'py, PyAny>> {
    use serde_json::Value;
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.into_pyobject(py)?.into_any(),
            (None, Some(u)) => u.into_pyobject(py)?.into_any(),
            _ => n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any(),
        },
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(value_to_py(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (k, v) in map {
                dict.set_item(k, value_to_py(py, v)?)?;
            }
            dict.into_any()
        }
    })
}

fn parse_format(format: Option<&str>) -> PyResult<Option<Format>> {
    format
        .map(|name| {
            Format::from_name(name).ok_or_else(|| {
                let names: Vec<&str> = Format::ALL.iter().map(|f| f.as_str()).collect();
                PyValueError::new_err(format!(
                    "unknown format {name:?}: use one of {}",
                    names.join(", ")
                ))
            })
        })
        .transpose()
}

fn chunk_dict<'py>(py: Python<'py>, c: &StoredChunk) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("id", format!("{:014x}", c.key))?;
    d.set_item("key", c.key)?;
    d.set_item("source", &c.source)?;
    d.set_item("text", &c.text)?;
    d.set_item("path", &c.path)?;
    d.set_item("session_id", &c.session_id)?;
    d.set_item("turn_start", c.turn_start)?;
    d.set_item("turn_end", c.turn_end)?;
    d.set_item("timestamp", c.timestamp)?;
    d.set_item("timestamp_end", c.timestamp_end)?;
    d.set_item("heading", &c.heading)?;
    d.set_item("role", &c.role)?;
    d.set_item("format", &c.format)?;
    d.set_item("content_hash", &c.content_hash)?;
    d.set_item("meta", value_to_py(py, &c.meta)?)?;
    d.set_item("project", &c.project)?;
    d.set_item("branch", &c.branch)?;
    Ok(d)
}

fn hit_dict<'py>(py: Python<'py>, h: &Hit) -> PyResult<Bound<'py, PyDict>> {
    let d = chunk_dict(py, &h.chunk)?;
    d.set_item("score", h.score)?;
    d.set_item("bm25", h.bm25)?;
    d.set_item("vector", h.vector)?;
    d.set_item("coverage", h.coverage)?;
    d.set_item("relevance", h.relevance)?;
    Ok(d)
}

fn hit_list<'py>(py: Python<'py>, hits: &[Hit]) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for h in hits {
        list.append(hit_dict(py, h)?)?;
    }
    Ok(list)
}

fn query_vector(vector: Option<PyReadonlyArray1<'_, f32>>) -> PyResult<Option<Vec<f32>>> {
    vector
        .map(|v| {
            v.as_slice().map(<[f32]>::to_vec).map_err(|_| {
                PyTypeError::new_err(
                    "query vector must be C-contiguous float32: use np.ascontiguousarray",
                )
            })
        })
        .transpose()
}

fn parse_fusion(fusion: &str, vector_weight: f32) -> PyResult<Fusion> {
    match fusion {
        "weighted" => {
            if !(0.0..=1.0).contains(&vector_weight) {
                return Err(PyValueError::new_err(
                    "vector_weight must be between 0 and 1",
                ));
            }
            Ok(Fusion::Weighted {
                vector: vector_weight,
                bm25: 1.0 - vector_weight,
            })
        }
        "rrf" => Ok(Fusion::Rrf { k: 60.0 }),
        other => Err(PyValueError::new_err(format!(
            "unknown fusion {other:?}: use weighted or rrf"
        ))),
    }
}

fn filters(
    sources: Option<Vec<String>>,
    session_id: Option<String>,
    since: Option<i64>,
    until: Option<i64>,
    projects: Option<Vec<String>>,
    branch: Option<String>,
) -> Filters {
    Filters {
        sources: sources.unwrap_or_default(),
        session_id,
        since,
        until,
        projects: projects.unwrap_or_default(),
        branch,
        ..Filters::default()
    }
}

/// Corpus statistics passed in from Python (`merge_term_stats` output).
fn parse_stats(stats: Option<&str>) -> PyResult<Option<TermStats>> {
    stats
        .map(serde_json::from_str)
        .transpose()
        .map_err(|e| PyValueError::new_err(format!("stats is not merge_term_stats output: {e}")))
}

/// Whether a folder walk would index this file (by its name; a named file is always read).
#[pyfunction]
#[pyo3(signature = (path, format = None))]
pub fn is_candidate(path: PathBuf, format: Option<&str>) -> PyResult<bool> {
    Ok(parse::is_candidate(&path, parse_format(format)?))
}

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
            .map_err(|e| PyValueError::new_err(format!("not Store.term_stats output: {e}")))?;
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

/// Read side of a memlane home.
#[pyclass(name = "Store", module = "memlane._core", frozen)]
pub struct PyStore {
    inner: Arc<Store>,
}

#[pymethods]
impl PyStore {
    #[new]
    #[pyo3(signature = (home, quantization = "i8"))]
    fn new(py: Python<'_>, home: PathBuf, quantization: &str) -> PyResult<Self> {
        let q = Quantization::parse(quantization).map_err(to_py)?;
        let inner = detached(py, || Store::open(&home, q))?;
        Ok(PyStore { inner })
    }

    #[pyo3(signature = (query, k = 10, vector = None, embedder_id = None, sources = None, session_id = None,
                        since = None, until = None, fusion = "weighted", vector_weight = 0.6, threshold = DEFAULT_THRESHOLD,
                        candidates = 50, projects = None, branch = None, libraries = None))]
    #[allow(clippy::too_many_arguments)]
    fn search<'py>(
        &self,
        py: Python<'py>,
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
        libraries: Option<Vec<String>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let req = SearchRequest {
            query,
            vector: query_vector(vector)?,
            embedder_id,
            k,
            filters: Filters {
                libraries: libraries.unwrap_or_default(),
                ..filters(sources, session_id, since, until, projects, branch)
            },
            fusion: parse_fusion(fusion, vector_weight)?,
            threshold,
            candidates,
        };
        let inner = &self.inner;
        let hits = detached(py, || inner.search(&req))?;
        hit_list(py, &hits)
    }

    /// What the home holds, for routing scoped queries: docs, tokens, sources, sessions,
    /// timestamp range.
    fn summary(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let inner = &self.inner;
        let summary = detached(py, || inner.summary())?;
        json_to_py(py, &summary)
    }

    /// This home's share of the BM25 statistics of `query` (JSON; a shard's part of a
    /// sharded search, summed with `merge_term_stats`).
    fn term_stats(&self, py: Python<'_>, query: String) -> PyResult<String> {
        let inner = &self.inner;
        let stats = detached(py, || inner.term_stats(&query))?;
        serde_json::to_string(&stats).map_err(|e| to_py(Error::Json(e)))
    }

    /// The unfused keyword and vector candidates of a query (bytes for `fuse_candidates`),
    /// BM25 scored with the corpus statistics `stats` (JSON from `merge_term_stats`) if given.
    #[pyo3(signature = (query, k = 10, vector = None, embedder_id = None, sources = None, session_id = None,
                        since = None, until = None, candidates = 50, stats = None, projects = None, branch = None))]
    #[allow(clippy::too_many_arguments)]
    fn candidates<'py>(
        &self,
        py: Python<'py>,
        query: String,
        k: usize,
        vector: Option<PyReadonlyArray1<'py, f32>>,
        embedder_id: Option<String>,
        sources: Option<Vec<String>>,
        session_id: Option<String>,
        since: Option<i64>,
        until: Option<i64>,
        candidates: usize,
        stats: Option<&str>,
        projects: Option<Vec<String>>,
        branch: Option<String>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let stats = parse_stats(stats)?;
        let req = SearchRequest {
            query,
            vector: query_vector(vector)?,
            embedder_id,
            k,
            filters: filters(sources, session_id, since, until, projects, branch),
            fusion: Fusion::default(),
            threshold: 0.0,
            candidates,
        };
        let inner = &self.inner;
        let found = detached(py, || inner.candidates(&req, stats.as_ref()))?;
        Ok(PyBytes::new(py, &found.to_bytes()))
    }

    /// Stored chunks by key; `reload=False` reads as of the commit last seen (a home no one
    /// writes: a shard version).
    #[pyo3(signature = (keys, reload = true))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        keys: Vec<u64>,
        reload: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        let inner = &self.inner;
        let chunks = detached(py, || inner.get_as_of(&keys, reload))?;
        let list = PyList::empty(py);
        for c in &chunks {
            list.append(chunk_dict(py, c)?)?;
        }
        Ok(list)
    }

    /// Per text, its best passage for `query` as `(cut before, passage, cut after)`, or None;
    /// terms weighed by the corpus statistics `stats` (JSON from `merge_term_stats`) if given.
    #[pyo3(signature = (query, texts, max_chars = 300, stats = None))]
    fn passages(
        &self,
        py: Python<'_>,
        query: &str,
        texts: Vec<String>,
        max_chars: usize,
        stats: Option<&str>,
    ) -> PyResult<Vec<Option<(bool, String, bool)>>> {
        let stats = parse_stats(stats)?;
        let inner = &self.inner;
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let ranges = detached(py, || {
            inner.passages(query, &refs, max_chars, stats.as_ref())
        })?;
        Ok(ranges
            .into_iter()
            .zip(&texts)
            .map(|(range, text)| {
                range.map(|r| (r.start > 0, text[r.clone()].to_owned(), r.end < text.len()))
            })
            .collect())
    }

    fn keys<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<u64>>> {
        let inner = &self.inner;
        let keys = detached(py, || inner.keys())?;
        Ok(PyArray1::from_vec(py, keys))
    }

    fn status(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let inner = &self.inner;
        let status = detached(py, || inner.status())?;
        json_to_py(py, &status)
    }

    /// Whether chunks record their project and branch (homes built before they did do not).
    fn records_projects(&self) -> bool {
        self.inner.records_projects()
    }

    /// Live chunks per project key.
    fn projects(&self, py: Python<'_>) -> PyResult<std::collections::BTreeMap<String, u64>> {
        let inner = &self.inner;
        detached(py, || inner.projects())
    }

    /// The project keys holding notes: `[{"key", "notes", "global"}]`, by key.
    fn libraries(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let inner = &self.inner;
        let libraries = detached(py, || inner.libraries())?;
        json_to_py(py, &libraries)
    }

    /// `memlane.json` as on disk, called before every search: a dict built directly (no JSON
    /// round trip), the stat (and a read when the file changed) without the GIL; the vectors
    /// are not loaded (see `prefetch_vectors`).
    fn meta<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let inner = &self.inner;
        let meta = detached(py, || inner.recorded_meta())?;
        let d = PyDict::new(py);
        d.set_item("version", meta.version)?;
        d.set_item("embedder_id", meta.embedder_id)?;
        d.set_item("dim", meta.dim)?;
        d.set_item("quantization", meta.quantization)?;
        Ok(d)
    }

    /// Start loading the vectors on a thread of their own (returns at once): a search calls it
    /// before embedding its query, so that a first search loads them meanwhile.
    fn prefetch_vectors(&self) {
        self.inner.prefetch_vectors();
    }

    /// Check the home (the caller holds its lock): a dict of findings and counts.
    #[pyo3(signature = (lock, thorough = true))]
    fn verify(&self, py: Python<'_>, lock: &PyHomeLock, thorough: bool) -> PyResult<Py<PyAny>> {
        let inner = &self.inner;
        let report = lock.with(py, |lock| Ok(inner.verify(lock, thorough)))?;
        json_to_py(py, &report)
    }

    /// The source files a rebuild reads.
    fn sources(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        let inner = &self.inner;
        detached(py, || inner.sources())
    }

    #[pyo3(signature = (format = None))]
    fn writer(&self, py: Python<'_>, format: Option<&str>) -> PyResult<PyWriter> {
        let format = parse_format(format)?;
        let store = self.inner.clone();
        let writer = detached(py, || Writer::new(store, format))?;
        Ok(PyWriter {
            inner: Mutex::new(Some(writer)),
        })
    }
}

/// The one writer of a home; holds the write lock until `close()`.
#[pyclass(name = "Writer", module = "memlane._core", frozen)]
pub struct PyWriter {
    inner: Mutex<Option<Writer>>,
}

impl PyWriter {
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut Writer) -> memlane_core::Result<T> + Send,
    ) -> PyResult<T> {
        let mut guard = self
            .inner
            .lock()
            .map_err(|_| PyRuntimeError::new_err("writer lock poisoned"))?;
        let writer = guard
            .as_mut()
            .ok_or_else(|| PyRuntimeError::new_err("writer is closed"))?;
        py.detach(|| f(writer)).map_err(to_py)
    }
}

#[pymethods]
impl PyWriter {
    fn scan(&self, py: Python<'_>, roots: Vec<PathBuf>) -> PyResult<Py<PyAny>> {
        let plan = self.with(py, |w| w.scan(&roots))?;
        let d = PyDict::new(py);
        let to_index: Vec<String> = plan
            .to_index
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        d.set_item("to_index", to_index)?;
        d.set_item("bytes_to_index", plan.bytes_to_index)?;
        d.set_item("unchanged", plan.unchanged)?;
        d.set_item("deleted", plan.deleted)?;
        d.set_item("gone", plan.gone)?;
        Ok(d.into_any().unbind())
    }

    fn mark_gone(&self, py: Python<'_>, paths: Vec<String>) -> PyResult<()> {
        self.with(py, |w| {
            w.mark_gone(&paths);
            Ok(())
        })
    }

    fn remove_files(&self, py: Python<'_>, paths: Vec<String>) -> PyResult<()> {
        self.with(py, |w| {
            w.remove_files(&paths);
            Ok(())
        })
    }

    fn index_files(&self, py: Python<'_>, paths: Vec<PathBuf>) -> PyResult<Py<PyAny>> {
        let report = self.with(py, |w| w.index_files(&paths))?;
        json_to_py(py, &report)
    }

    fn pending_vectors<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<u64>>> {
        let keys = self.with(py, |w| w.pending_vectors())?;
        Ok(PyArray1::from_vec(py, keys))
    }

    fn chunk_texts(&self, py: Python<'_>, keys: Vec<u64>) -> PyResult<Vec<(u64, String, String)>> {
        self.with(py, |w| w.chunk_texts(&keys))
    }

    fn add_vectors<'py>(
        &self,
        py: Python<'py>,
        embedder_id: String,
        keys: PyReadonlyArray1<'py, u64>,
        counts: PyReadonlyArray1<'py, u64>,
        vectors: PyReadonlyArray2<'py, f32>,
    ) -> PyResult<()> {
        let dim = vectors.shape()[1];
        let contiguous = "must be C-contiguous: use np.ascontiguousarray";
        let keys = keys
            .as_slice()
            .map_err(|_| PyTypeError::new_err(format!("keys {contiguous}")))?;
        let counts: Vec<usize> = counts
            .as_slice()
            .map_err(|_| PyTypeError::new_err(format!("counts {contiguous}")))?
            .iter()
            .map(|&c| usize::try_from(c).unwrap_or(usize::MAX))
            .collect();
        let flat = vectors
            .as_slice()
            .map_err(|_| PyTypeError::new_err(format!("vectors {contiguous}")))?;
        self.with(py, |w| {
            w.add_vectors(&embedder_id, dim, keys, &counts, flat)
        })
    }

    fn commit(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let report = self.with(py, Writer::commit)?;
        json_to_py(py, &report)
    }

    /// Forget a `session`, a `path` or a `chunk` (hex id): remove and tombstone it, or with
    /// `dry_run` say what that would remove.
    #[pyo3(signature = (kind, value, dry_run = false))]
    fn forget(
        &self,
        py: Python<'_>,
        kind: &str,
        value: &str,
        dry_run: bool,
    ) -> PyResult<Py<PyAny>> {
        let what = forget_target(kind, value)?;
        let report = self.with(py, |w| w.forget(&what, dry_run))?;
        json_to_py(py, &report)
    }

    /// Lift a tombstone; returns the files the next index run reads again.
    fn unforget(&self, py: Python<'_>, kind: &str, value: &str) -> PyResult<Py<PyAny>> {
        let what = forget_target(kind, value)?;
        let report = self.with(py, |w| w.unforget(&what))?;
        json_to_py(py, &report)
    }

    /// Take deleted chunks' text off the disk (after a commit that forgot some).
    fn purge_deleted(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, Writer::purge_deleted)
    }

    /// Index from the home's kept copies the transcripts a rebuild cannot read; returns
    /// the paths restored.
    fn restore_archived(
        &self,
        py: Python<'_>,
        old: &PyStore,
        paths: Vec<String>,
    ) -> PyResult<Vec<String>> {
        let old = old.inner.clone();
        self.with(py, |w| w.restore_archived(&old, &paths))
    }

    /// Carry over from `old` the chunks of source files a rebuild cannot read.
    fn adopt_files(
        &self,
        py: Python<'_>,
        old: &PyStore,
        paths: Vec<String>,
    ) -> PyResult<Py<PyAny>> {
        let old = old.inner.clone();
        let report = self.with(py, |w| w.adopt_files(&old, &paths))?;
        json_to_py(py, &report)
    }

    /// Copy `old`'s vectors to chunks that have none; returns how many got some.
    fn adopt_vectors(&self, py: Python<'_>, old: &PyStore, embedder_id: String) -> PyResult<u64> {
        let old = old.inner.clone();
        self.with(py, |w| w.adopt_vectors(&old, &embedder_id))
    }

    /// Release the write lock (uncommitted work is discarded).
    fn close(&self) -> PyResult<()> {
        let mut guard = self
            .inner
            .lock()
            .map_err(|_| PyRuntimeError::new_err("writer lock poisoned"))?;
        guard.take();
        Ok(())
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(&self, _a: Py<PyAny>, _b: Py<PyAny>, _c: Py<PyAny>) -> PyResult<bool> {
        self.close()?;
        Ok(false)
    }
}

/// Parse one file into sessions (dicts), for inspection and tests.
#[pyfunction]
#[pyo3(signature = (path, format = None))]
pub fn parse_file(py: Python<'_>, path: PathBuf, format: Option<&str>) -> PyResult<Py<PyAny>> {
    let format = parse_format(format)?;
    let parsed = detached(py, || parse::parse_file(&path, format))?;
    json_to_py(py, &parsed)
}

/// The project key of a working directory: the repository root around it, else itself.
#[pyfunction]
pub fn project_of(py: Python<'_>, cwd: &str) -> String {
    py.detach(|| memlane_core::project::project_of(cwd))
}

/// The repository root holding `path`, if it is inside a git checkout.
#[pyfunction]
pub fn repository_root(py: Python<'_>, path: PathBuf) -> Option<String> {
    py.detach(|| memlane_core::project::repository_root(&path))
        .map(|p| p.to_string_lossy().into_owned())
}

/// Parse and chunk one file, for inspection and tests.
#[pyfunction]
#[pyo3(signature = (path, format = None, budget = DEFAULT_BUDGET_TOKENS))]
pub fn chunk_file(
    py: Python<'_>,
    path: PathBuf,
    format: Option<&str>,
    budget: usize,
) -> PyResult<Py<PyAny>> {
    let format = parse_format(format)?;
    let chunks = detached(py, || {
        let parsed = parse::parse_file(&path, format)?;
        Ok(chunk_parsed(&parsed, &path.to_string_lossy(), budget))
    })?;
    json_to_py(py, &chunks)
}

fn forget_target(kind: &str, value: &str) -> PyResult<Forget> {
    match kind {
        "session" => Ok(Forget::Session(value.to_owned())),
        "path" => Ok(Forget::Path(value.to_owned())),
        "chunk" => u64::from_str_radix(value, 16)
            .map(Forget::Chunk)
            .map_err(|_| {
                PyValueError::new_err(format!(
                    "{value:?} is not a chunk id (hex digits, as search and recall print them)"
                ))
            }),
        other => Err(PyValueError::new_err(format!(
            "cannot forget a {other:?}: use session, path or chunk"
        ))),
    }
}

/// The write lock of a home, held until `close()` (or the end of a `with` block).
#[pyclass(name = "HomeLock", module = "memlane._core", frozen)]
pub struct PyHomeLock {
    inner: Mutex<Option<HomeLock>>,
}

impl PyHomeLock {
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&HomeLock) -> memlane_core::Result<T> + Send,
    ) -> PyResult<T> {
        let guard = self
            .inner
            .lock()
            .map_err(|_| PyRuntimeError::new_err("home lock poisoned"))?;
        let lock = guard
            .as_ref()
            .ok_or_else(|| PyRuntimeError::new_err("home lock is released"))?;
        py.detach(|| f(lock)).map_err(to_py)
    }
}

#[pymethods]
impl PyHomeLock {
    #[new]
    fn new(py: Python<'_>, home: PathBuf) -> PyResult<Self> {
        let lock = detached(py, || HomeLock::acquire(&home))?;
        Ok(PyHomeLock {
            inner: Mutex::new(Some(lock)),
        })
    }

    /// Release the lock.
    fn close(&self) -> PyResult<()> {
        self.inner
            .lock()
            .map_err(|_| PyRuntimeError::new_err("home lock poisoned"))?
            .take();
        Ok(())
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(&self, _a: Py<PyAny>, _b: Py<PyAny>, _c: Py<PyAny>) -> PyResult<bool> {
        self.close()?;
        Ok(false)
    }
}

/// Swap the home rebuilt in the locked home's repair folder in place of its files.
#[pyfunction]
pub fn install_rebuilt(py: Python<'_>, lock: &PyHomeLock) -> PyResult<()> {
    lock.with(py, core_store::install_rebuilt)
}

/// Remove what an interrupted repair of the locked home left.
#[pyfunction]
pub fn clear_repair_leftovers(py: Python<'_>, lock: &PyHomeLock) -> PyResult<()> {
    lock.with(py, core_store::clear_repair_leftovers)
}
