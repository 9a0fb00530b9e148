//! `HomeLock` for Python, and the repair steps that need it held.

use crate::convert::detached;
use crate::held::Held;
use memlane_core::store::{self as core_store, HomeLock};
use pyo3::prelude::*;
use std::path::PathBuf;

/// The write lock of a home, held until `close()` (or the end of a `with` block).
#[pyclass(name = "HomeLock", module = "memlane._core", frozen)]
pub struct PyHomeLock {
    inner: Held<HomeLock>,
}

impl PyHomeLock {
    pub(crate) fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&HomeLock) -> memlane_core::Result<T> + Send,
    ) -> PyResult<T> {
        self.inner.with(py, |lock| f(lock))
    }
}

#[pymethods]
impl PyHomeLock {
    #[new]
    fn new(py: Python<'_>, home: PathBuf) -> PyResult<Self> {
        let lock = detached(py, || HomeLock::acquire(&home))?;
        Ok(PyHomeLock {
            inner: Held::new(lock, "home lock poisoned", "home lock is released"),
        })
    }

    /// Release the lock.
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
