//! A core object a Python handle holds until `close()`: the writer, the home lock.

use crate::errors::{to_py, MemlaneError};
use pyo3::prelude::*;
use std::sync::Mutex;

/// `T` behind a mutex (Python threads may share the handle) until released; a call after the
/// release, or after a panic poisoned the mutex, is a `MemlaneError` naming which.
pub(crate) struct Held<T> {
    inner: Mutex<Option<T>>,
    poisoned: &'static str,
    released: &'static str,
}

impl<T: Send> Held<T> {
    pub(crate) fn new(value: T, poisoned: &'static str, released: &'static str) -> Self {
        Held {
            inner: Mutex::new(Some(value)),
            poisoned,
            released,
        }
    }

    /// Run `f` on the held object with the GIL released and map its error.
    pub(crate) fn with<R: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut T) -> memlane_core::Result<R> + Send,
    ) -> PyResult<R> {
        let mut guard = self
            .inner
            .lock()
            .map_err(|_| MemlaneError::new_err(self.poisoned))?;
        let value = guard
            .as_mut()
            .ok_or_else(|| MemlaneError::new_err(self.released))?;
        py.detach(|| f(value)).map_err(to_py)
    }

    /// Drop the held object (releasing what it holds); later calls say it was released.
    pub(crate) fn release(&self) -> PyResult<()> {
        self.inner
            .lock()
            .map_err(|_| MemlaneError::new_err(self.poisoned))?
            .take();
        Ok(())
    }
}
