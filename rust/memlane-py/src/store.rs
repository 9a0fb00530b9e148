//! `Store` (readers) and `Writer` (the one writer) for Python: the read side of a home (search,
//! candidates, chunks, status, verify) and its one writer (scan, index, vectors, forget, commit).

use crate::convert::{
    chunk_dict, detached, filters, hit_list, json_to_py, parse_format, parse_fusion, parse_stats,
    query_vector,
};
use crate::errors::{argument_type, invalid_argument, to_py};
use crate::held::Held;
use crate::lock::PyHomeLock;
use memlane_core::hybrid::{Fusion, DEFAULT_THRESHOLD};
use memlane_core::lexical::Filters;
use memlane_core::store::{Forget, SearchRequest, Store, Writer};
use memlane_core::vector::Quantization;
use memlane_core::Error;
use numpy::{PyArray1, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use std::path::PathBuf;
use std::sync::Arc;

/// A row of `Store.sessions`: session id, chunks, first and last timestamps (ms), project,
/// branch, the key of its earliest chunk.
type SessionRow = (String, u64, Option<i64>, Option<i64>, String, String, u64);

/// Read side of a memlane home.
#[pyclass(name = "Store", module = "memlane._core", frozen)]
pub struct PyStore {
    pub(crate) inner: Arc<Store>,
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

    /// One `(session_id, chunks, first_ts_ms, last_ts_ms, project, branch, key)` per transcript
    /// session, latest first, read without the doc store; tuples convert fast at 10k sessions.
    fn sessions(&self, py: Python<'_>) -> PyResult<Vec<SessionRow>> {
        let inner = &self.inner;
        let sessions = detached(py, || inner.sessions())?;
        Ok(sessions
            .into_iter()
            .map(|s| {
                (
                    s.session_id,
                    s.chunks,
                    s.first_ts,
                    s.last_ts,
                    s.project,
                    s.branch,
                    s.key,
                )
            })
            .collect())
    }

    /// Keys of every live chunk of `session_id` (any source), ascending.
    fn session_keys(&self, py: Python<'_>, session_id: &str) -> PyResult<Vec<u64>> {
        if session_id.is_empty() {
            return Err(invalid_argument("session_id must not be empty"));
        }
        let inner = &self.inner;
        detached(py, || inner.session_keys(session_id))
    }

    /// Files per detected format, from the manifest.
    fn formats(&self, py: Python<'_>) -> PyResult<std::collections::BTreeMap<String, u64>> {
        let inner = &self.inner;
        detached(py, || inner.formats())
    }

    /// Whether each of `keys` has a vector (in the order given).
    fn has_vectors(&self, py: Python<'_>, keys: Vec<u64>) -> PyResult<Vec<bool>> {
        let inner = &self.inner;
        detached(py, || inner.has_vectors(&keys))
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
            inner: Held::new(writer, "writer lock poisoned", "writer is closed"),
        })
    }
}

/// The one writer of a home; holds the write lock until `close()`.
#[pyclass(name = "Writer", module = "memlane._core", frozen)]
pub struct PyWriter {
    pub(crate) inner: Held<Writer>,
}

impl PyWriter {
    pub(crate) fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut Writer) -> memlane_core::Result<T> + Send,
    ) -> PyResult<T> {
        self.inner.with(py, f)
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

    /// Parse, chunk and add `paths`. The writer is let go while the files are read, so that
    /// another thread's calls (a backfill adding vectors) wait only while chunks are added.
    fn index_files(&self, py: Python<'_>, paths: Vec<PathBuf>) -> PyResult<Py<PyAny>> {
        let reads = self.with(py, |w| Ok(w.files_to_read(&paths)))?;
        let read = py.detach(|| reads.read());
        let report = self.with(py, |w| w.add_read(read))?;
        json_to_py(py, &report)
    }

    fn pending_vectors<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<u64>>> {
        let keys = self.with(py, |w| w.pending_vectors())?;
        Ok(PyArray1::from_vec(py, keys))
    }

    fn collect_added_texts(&self, py: Python<'_>, on: bool) -> PyResult<()> {
        self.with(py, |w| {
            w.collect_added_texts(on);
            Ok(())
        })
    }

    fn take_added_texts(&self, py: Python<'_>) -> PyResult<Vec<(u64, String, String)>> {
        self.with(py, |w| Ok(w.take_added_texts()))
    }

    fn chunk_texts(&self, py: Python<'_>, keys: Vec<u64>) -> PyResult<Vec<(u64, String, String)>> {
        self.with(py, |w| w.chunk_texts(&keys))
    }

    #[pyo3(signature = (embedder_id, keys, counts, vectors, parts = 1))]
    fn add_vectors<'py>(
        &self,
        py: Python<'py>,
        embedder_id: String,
        keys: PyReadonlyArray1<'py, u64>,
        counts: PyReadonlyArray1<'py, u64>,
        vectors: PyReadonlyArray2<'py, f32>,
        parts: usize,
    ) -> PyResult<()> {
        let dim = vectors.shape()[1];
        let contiguous = "must be C-contiguous: use np.ascontiguousarray";
        let keys = keys
            .as_slice()
            .map_err(|_| argument_type(format!("keys {contiguous}")))?;
        let counts: Vec<usize> = counts
            .as_slice()
            .map_err(|_| argument_type(format!("counts {contiguous}")))?
            .iter()
            .map(|&c| usize::try_from(c).unwrap_or(usize::MAX))
            .collect();
        let flat = vectors
            .as_slice()
            .map_err(|_| argument_type(format!("vectors {contiguous}")))?;
        self.with(py, |w| {
            w.add_vectors(&embedder_id, dim, keys, &counts, flat, parts)
        })
    }

    fn commit(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let report = self.with(py, Writer::commit)?;
        json_to_py(py, &report)
    }

    /// Save the vectors added so far, and nothing else, once enough are unsaved (see the
    /// core's `Writer::commit_vectors`).
    fn commit_vectors(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, Writer::commit_vectors)
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

    /// Take `old`'s tombstones before a rebuild reads any file; false when neither its
    /// manifest nor their copy (`forgotten.json`) can be read.
    fn adopt_forgotten(&self, py: Python<'_>, old: &PyStore) -> PyResult<bool> {
        let old = old.inner.clone();
        self.with(py, |w| Ok(w.adopt_forgotten(&old)))
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
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        self.inner.release(py)
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(
        &self,
        py: Python<'_>,
        _a: Py<PyAny>,
        _b: Py<PyAny>,
        _c: Py<PyAny>,
    ) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }
}

fn forget_target(kind: &str, value: &str) -> PyResult<Forget> {
    match kind {
        "session" => Ok(Forget::Session(value.to_owned())),
        "path" => Ok(Forget::Path(value.to_owned())),
        "chunk" => u64::from_str_radix(value, 16)
            .map(Forget::Chunk)
            .map_err(|_| {
                invalid_argument(format!(
                    "{value:?} is not a chunk id (hex digits, as search and recall print them)"
                ))
            }),
        other => Err(invalid_argument(format!(
            "cannot forget a {other:?}: use session, path or chunk"
        ))),
    }
}
