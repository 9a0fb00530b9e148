//! `HomeLock` for Python, and the repair steps that need it held.

use crate::convert::detached;
use crate::errors::{to_py, MemlaneError};
use memlane_core::store::{self as core_store, HomeLock};
use pyo3::prelude::*;
use std::path::PathBuf;
use std::sync::Mutex;

/// The write lock of a home, held until `close()` (or the end of a `with` block).
#[pyclass(name = "HomeLock", module = "memlane._core", frozen)]
pub struct PyHomeLock {
    inner: Mutex<Option<HomeLock>>,
}

impl PyHomeLock {
    pub(crate) fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&HomeLock) -> memlane_core::Result<T> + Send,
    ) -> PyResult<T> {
        let guard = self
            .inner
            .lock()
            .map_err(|_| MemlaneError::new_err("home lock poisoned"))?;
        let lock = guard
            .as_ref()
            .ok_or_else(|| MemlaneError::new_err("home lock is released"))?;
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
            .map_err(|_| MemlaneError::new_err("home lock poisoned"))?
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
