//! `WordPiece` for Python: BERT's word-piece ids of many texts' plain ASCII parts at once.

use crate::errors::to_py;
use memlane_core::embed::wordpiece::WordPiece;
use numpy::{IntoPyArray, PyArray1};
use pyo3::prelude::*;
use pyo3::types::PyString;
use std::collections::HashMap;

/// One text's ids (int64), and the spans left to the tokenizers library as
/// (position in those ids, the span's text, as read).
type Encoding<'py> = (
    Bound<'py, PyArray1<i64>>,
    Vec<(usize, Bound<'py, PyString>)>,
);

/// A WordPiece vocabulary, read once; `encode` tokenises a list of texts on every core.
#[pyclass(name = "WordPiece", module = "memlane._core", frozen)]
pub struct PyWordPiece {
    inner: WordPiece,
}

#[pymethods]
impl PyWordPiece {
    #[new]
    #[pyo3(signature = (vocab, unk_token, continuing_prefix, max_chars, lowercase, added_tokens, *, runs_as_first_mark = false))]
    fn new(
        vocab: HashMap<String, u32>,
        unk_token: &str,
        continuing_prefix: &str,
        max_chars: usize,
        lowercase: bool,
        added_tokens: Vec<String>,
        runs_as_first_mark: bool,
    ) -> PyResult<Self> {
        Ok(PyWordPiece {
            inner: WordPiece::new(
                vocab,
                unk_token,
                continuing_prefix,
                max_chars,
                lowercase,
                &added_tokens,
            )
            .map_err(to_py)?
            .runs_as_first_mark(runs_as_first_mark),
        })
    }

    /// Each text's ids and the spans left to the library, in the order of `texts`.
    fn encode<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<Bound<'py, PyString>>,
    ) -> PyResult<Vec<Encoding<'py>>> {
        let texts = texts
            .iter()
            .map(|text| text.to_str())
            .collect::<PyResult<Vec<&str>>>()?;
        let encoded = py.detach(|| self.inner.encode_all(&texts));
        Ok(encoded
            .into_iter()
            .zip(&texts)
            .map(|(encoded, text)| {
                let ids: Vec<i64> = encoded.ids.into_iter().map(i64::from).collect();
                let read = encoded.read.as_deref().unwrap_or(text);
                let rest = encoded
                    .rest
                    .into_iter()
                    .map(|(at, span)| (at, PyString::new(py, &read[span])))
                    .collect();
                (ids.into_pyarray(py), rest)
            })
            .collect())
    }
}
