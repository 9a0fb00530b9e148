//! `Literals` for Python: where any of a set of literal strings occurs in a text.

use crate::errors::to_py;
use memlane_core::secrets::literals::Literals;
use pyo3::prelude::*;

/// A set of literal strings, compiled once; `find` gives every occurrence in one pass.
#[pyclass(name = "Literals", module = "memlane._core", frozen)]
pub struct PyLiterals {
    inner: Literals,
}

#[pymethods]
impl PyLiterals {
    #[new]
    #[pyo3(signature = (literals, ignore_case = false))]
    fn new(literals: Vec<String>, ignore_case: bool) -> PyResult<Self> {
        Ok(PyLiterals {
            inner: Literals::new(&literals, ignore_case).map_err(to_py)?,
        })
    }

    /// Every occurrence in `text` as (offset, index of the literal), overlapping ones
    /// included, by offset then literal; offsets count characters, as Python's do.
    fn find(&self, text: &str) -> Vec<(usize, usize)> {
        let found = self.inner.find(text);
        if text.is_ascii() {
            return found;
        }
        // Byte offsets to character offsets, in one walk (the offsets come in order).
        let (mut byte, mut chars) = (0, 0);
        found
            .into_iter()
            .map(|(at, literal)| {
                chars += text[byte..at].chars().count();
                byte = at;
                (chars, literal)
            })
            .collect()
    }
}
