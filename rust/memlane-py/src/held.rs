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
    ///
    /// The mutex is taken and let go with the GIL released: a thread waiting for it while
    /// holding the GIL would keep the thread inside `f` from ever getting the GIL back.
    pub(crate) fn with<R: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut T) -> memlane_core::Result<R> + Send,
    ) -> PyResult<R> {
        let outcome = py.detach(|| {
            let Ok(mut guard) = self.inner.lock() else {
                return Outcome::Poisoned;
            };
            match guard.as_mut() {
                Some(value) => Outcome::Done(f(value)),
                None => Outcome::Released,
            }
        });
        match outcome {
            Outcome::Done(result) => result.map_err(to_py),
            Outcome::Poisoned => Err(MemlaneError::new_err(self.poisoned)),
            Outcome::Released => Err(MemlaneError::new_err(self.released)),
        }
    }

    /// Drop the held object (releasing what it holds); later calls say it was released.
    pub(crate) fn release(&self, py: Python<'_>) -> PyResult<()> {
        let taken = py.detach(|| self.inner.lock().map(|mut guard| guard.take()).is_ok());
        if taken {
            Ok(())
        } else {
            Err(MemlaneError::new_err(self.poisoned))
        }
    }
}

/// What [`Held::with`] found behind the mutex.
enum Outcome<R> {
    Done(memlane_core::Result<R>),
    Poisoned,
    Released,
}
