//! The one mapping from core errors to Python exceptions (public path `memlane.errors`).

use memlane_core::Error;
use pyo3::exceptions::{PyException, PyFileNotFoundError, PyOSError, PyValueError};
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

/// `memlane.errors.InvalidArgumentError` (a `MemlaneError` and a `ValueError`) with `msg`. The
/// class is defined in Python, beside the package's other argument errors, so it is imported
/// once, at the first such error; a plain `ValueError` should that import ever fail.
fn invalid_argument(msg: String) -> PyErr {
    static CLASS: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    Python::attach(
        |py| match CLASS.import(py, "memlane.errors", "InvalidArgumentError") {
            Ok(class) => PyErr::from_type(class.clone(), msg),
            Err(_) => PyValueError::new_err(msg),
        },
    )
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
