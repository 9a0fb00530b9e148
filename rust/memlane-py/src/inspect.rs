//! One file at a time, for inspection and tests: whether a walk would index it, what it
//! parses and chunks into; the project key of a directory.

use crate::convert::{detached, json_to_py, parse_format};
use memlane_core::chunk::{chunk_parsed, DEFAULT_BUDGET_TOKENS};
use memlane_core::parse;
use pyo3::prelude::*;
use std::path::PathBuf;

/// Whether a folder walk would index this file (by its name; a named file is always read).
#[pyfunction]
#[pyo3(signature = (path, format = None))]
pub fn is_candidate(path: PathBuf, format: Option<&str>) -> PyResult<bool> {
    Ok(parse::is_candidate(&path, parse_format(format)?))
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
