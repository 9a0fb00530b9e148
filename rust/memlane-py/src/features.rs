//! `TextFeatures` for Python: what the time-aware reordering reads from a hit's text.

use crate::errors::to_py;
use memlane_core::ranking::features::FeatureReader;
use pyo3::prelude::*;

/// One text's stems, identifiers, change (1, -1 or 0) and quantities (unit, numbers).
type Features = (Vec<String>, Vec<String>, i8, Vec<(String, Vec<String>)>);

/// The reordering's text reader, its patterns compiled once with the caller's word lists.
#[pyclass(name = "TextFeatures", module = "memlane._core", frozen)]
pub struct PyTextFeatures {
    inner: FeatureReader,
}

#[pymethods]
impl PyTextFeatures {
    #[new]
    fn new(stop_words: Vec<String>, number_words: Vec<(String, String)>) -> PyResult<Self> {
        Ok(PyTextFeatures {
            inner: FeatureReader::new(&stop_words, &number_words).map_err(to_py)?,
        })
    }

    /// The distinct words of `text`, lowercased, stop words aside.
    fn words(&self, py: Python<'_>, text: &str) -> Vec<String> {
        py.detach(|| self.inner.words(text))
    }

    /// The distinct stems of `words(text)`.
    fn stems(&self, py: Python<'_>, text: &str) -> Vec<String> {
        py.detach(|| self.inner.stems(text))
    }

    /// Everything the reordering reads from `text`: (stems, identifiers, change, quantities).
    fn features(&self, py: Python<'_>, text: &str) -> Features {
        let f = py.detach(|| self.inner.features(text));
        (f.stems, f.identifiers, f.change, f.quantities)
    }
}
