//! The one mapping from core errors to Python exceptions (public path `memlane.errors`).

use memlane_core::Error;
use pyo3::exceptions::{PyException, PyFileNotFoundError, PyOSError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

pyo3::create_exception!(
    memlane.errors,
    MemlaneError,
    PyException,
    "Base class of memlane's errors."
);
pyo3::create_exception!(
    memlane.errors,
    IndexLockedError,
    MemlaneError,
    "Another process is writing to this home."
);
pyo3::create_exception!(
    memlane.errors,
    CorruptIndexError,
    MemlaneError,
    "On-disk index state cannot be read back."
);
pyo3::create_exception!(
    memlane.errors,
    EmbedderMismatchError,
    MemlaneError,
    "Vectors from a different embedder than the index holds."
);
pyo3::create_exception!(
    memlane.errors,
    DiskFullError,
    MemlaneError,
    "The disk filled up while committing; the last commit is intact."
);
pyo3::create_exception!(
    memlane.errors,
    ParseError,
    MemlaneError,
    "A source file cannot be parsed at all."
);

/// Convert a core error into the matching Python exception.
pub fn to_py(err: Error) -> PyErr {
    let msg = err.to_string();
    match err {
        Error::NotFound(_) => PyFileNotFoundError::new_err(msg),
        Error::Locked(_) => IndexLockedError::new_err(msg),
        Error::Corrupt { .. } => CorruptIndexError::new_err(msg),
        Error::EmbedderMismatch { .. } => EmbedderMismatchError::new_err(msg),
        Error::Parse { .. } => ParseError::new_err(msg),
        Error::DiskFull(_) => DiskFullError::new_err(msg),
        Error::InvalidArgument(_) => invalid_argument(msg),
        Error::Io(e) if e.kind() == std::io::ErrorKind::NotFound => {
            PyFileNotFoundError::new_err(msg)
        }
        Error::Io(_) => PyOSError::new_err(msg),
        Error::Tantivy(_) | Error::Vector(_) | Error::Json(_) => MemlaneError::new_err(msg),
    }
}

/// `memlane.errors.InvalidArgumentError` (a `MemlaneError` and a `ValueError`) with `msg`:
/// an argument of the right type with a value that cannot be used.
pub(crate) fn invalid_argument(msg: impl Into<String>) -> PyErr {
    static CLASS: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    python_error(
        &CLASS,
        "InvalidArgumentError",
        msg.into(),
        PyValueError::new_err,
    )
}

/// `memlane.errors.ArgumentTypeError` (a `MemlaneError` and a `TypeError`) with `msg`: an
/// argument of the wrong type or layout.
pub(crate) fn argument_type(msg: impl Into<String>) -> PyErr {
    static CLASS: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    python_error(
        &CLASS,
        "ArgumentTypeError",
        msg.into(),
        PyTypeError::new_err,
    )
}

/// An instance of `memlane.errors.<name>` with `msg`. Those classes are defined in Python,
/// beside the package's other errors, so each is imported once (into `class`), at its first
/// use; should that import ever fail, the builtin base `fallback` makes the error instead.
fn python_error(
    class: &PyOnceLock<Py<PyType>>,
    name: &str,
    msg: String,
    fallback: fn(String) -> PyErr,
) -> PyErr {
    Python::attach(|py| match class.import(py, "memlane.errors", name) {
        Ok(class) => PyErr::from_type(class.clone(), msg),
        Err(_) => fallback(msg),
    })
}

/// Register the exception classes on the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("MemlaneError", py.get_type::<MemlaneError>())?;
    m.add("IndexLockedError", py.get_type::<IndexLockedError>())?;
    m.add("CorruptIndexError", py.get_type::<CorruptIndexError>())?;
    m.add(
        "EmbedderMismatchError",
        py.get_type::<EmbedderMismatchError>(),
    )?;
    m.add("ParseError", py.get_type::<ParseError>())?;
    m.add("DiskFullError", py.get_type::<DiskFullError>())?;
    Ok(())
}
