//! `Writer` for Python: the one writer of a home (scan, index, vectors, forget, commit).

use crate::convert::json_to_py;
use crate::errors::{argument_type, invalid_argument, to_py};
use crate::store::PyStore;
use memlane_core::store::{Forget, Writer};
use numpy::{PyArray1, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;
use std::sync::Mutex;

/// The one writer of a home; holds the write lock until `close()`.
#[pyclass(name = "Writer", module = "memlane._core", frozen)]
pub struct PyWriter {
    pub(crate) inner: Mutex<Option<Writer>>,
}

impl PyWriter {
    pub(crate) fn with<T: Send>(
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
