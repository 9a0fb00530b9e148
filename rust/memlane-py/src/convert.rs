//! Conversions between Python values and the core's types: hits and chunks as dicts, JSON as
//! Python objects, query vectors, filters, fusion and statistics arguments; and running a core
//! call with the GIL released.

use crate::errors::{argument_type, invalid_argument, to_py};
use memlane_core::hybrid::Fusion;
use memlane_core::lexical::{Filters, StoredChunk};
use memlane_core::model::Format;
use memlane_core::shard::TermStats;
use memlane_core::store::Hit;
use memlane_core::Error;
use numpy::PyReadonlyArray1;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyList, PyString};

/// Run `f` with the GIL released and map its error.
pub(crate) fn detached<T: Send>(
    py: Python<'_>,
    f: impl FnOnce() -> memlane_core::Result<T> + Send,
) -> PyResult<T> {
    py.detach(f).map_err(to_py)
}

pub(crate) fn json_to_py(py: Python<'_>, value: &impl serde::Serialize) -> PyResult<Py<PyAny>> {
    let text = serde_json::to_string(value).map_err(|e| to_py(Error::Json(e)))?;
    let json = py.import("json")?;
    Ok(json.call_method1("loads", (text,))?.unbind())
}

/// A JSON value as Python objects, built directly (the `json` module round trip cost more
/// than the rest of a hit's conversion).
pub(crate) fn value_to_py<'py>(
    py: Python<'py>,
    value: &serde_json::Value,
) -> PyResult<Bound<'py, PyAny>> {
    use serde_json::Value;
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.into_pyobject(py)?.into_any(),
            (None, Some(u)) => u.into_pyobject(py)?.into_any(),
            _ => n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any(),
        },
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(value_to_py(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (k, v) in map {
                dict.set_item(k, value_to_py(py, v)?)?;
            }
            dict.into_any()
        }
    })
}

pub(crate) fn parse_format(format: Option<&str>) -> PyResult<Option<Format>> {
    format
        .map(|name| {
            Format::from_name(name).ok_or_else(|| {
                let names: Vec<&str> = Format::ALL.iter().map(|f| f.as_str()).collect();
                invalid_argument(format!(
                    "unknown format {name:?}: use one of {}",
                    names.join(", ")
                ))
            })
        })
        .transpose()
}

pub(crate) fn chunk_dict<'py>(py: Python<'py>, c: &StoredChunk) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("id", format!("{:014x}", c.key))?;
    d.set_item("key", c.key)?;
    d.set_item("source", &c.source)?;
    d.set_item("text", &c.text)?;
    d.set_item("path", &c.path)?;
    d.set_item("session_id", &c.session_id)?;
    d.set_item("turn_start", c.turn_start)?;
    d.set_item("turn_end", c.turn_end)?;
    d.set_item("timestamp", c.timestamp)?;
    d.set_item("timestamp_end", c.timestamp_end)?;
    d.set_item("heading", &c.heading)?;
    d.set_item("role", &c.role)?;
    d.set_item("format", &c.format)?;
    d.set_item("content_hash", &c.content_hash)?;
    d.set_item("meta", value_to_py(py, &c.meta)?)?;
    d.set_item("project", &c.project)?;
    d.set_item("branch", &c.branch)?;
    Ok(d)
}

pub(crate) fn hit_dict<'py>(py: Python<'py>, h: &Hit) -> PyResult<Bound<'py, PyDict>> {
    let d = chunk_dict(py, &h.chunk)?;
    d.set_item("score", h.score)?;
    d.set_item("bm25", h.bm25)?;
    d.set_item("vector", h.vector)?;
    d.set_item("coverage", h.coverage)?;
    d.set_item("relevance", h.relevance)?;
    Ok(d)
}

pub(crate) fn hit_list<'py>(py: Python<'py>, hits: &[Hit]) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for h in hits {
        list.append(hit_dict(py, h)?)?;
    }
    Ok(list)
}

pub(crate) fn query_vector(
    vector: Option<PyReadonlyArray1<'_, f32>>,
) -> PyResult<Option<Vec<f32>>> {
    vector
        .map(|v| {
            v.as_slice().map(<[f32]>::to_vec).map_err(|_| {
                argument_type("query vector must be C-contiguous float32: use np.ascontiguousarray")
            })
        })
        .transpose()
}

pub(crate) fn parse_fusion(fusion: &str, vector_weight: f32) -> PyResult<Fusion> {
    match fusion {
        "weighted" => {
            if !(0.0..=1.0).contains(&vector_weight) {
                return Err(invalid_argument("vector_weight must be between 0 and 1"));
            }
            Ok(Fusion::Weighted {
                vector: vector_weight,
                bm25: 1.0 - vector_weight,
            })
        }
        "rrf" => Ok(Fusion::Rrf { k: 60.0 }),
        other => Err(invalid_argument(format!(
            "unknown fusion {other:?}: use weighted or rrf"
        ))),
    }
}

pub(crate) fn filters(
    sources: Option<Vec<String>>,
    session_id: Option<String>,
    since: Option<i64>,
    until: Option<i64>,
    projects: Option<Vec<String>>,
    branch: Option<String>,
) -> Filters {
    Filters {
        sources: sources.unwrap_or_default(),
        session_id,
        since,
        until,
        projects: projects.unwrap_or_default(),
        branch,
        ..Filters::default()
    }
}

/// Corpus statistics passed in from Python (`merge_term_stats` output).
pub(crate) fn parse_stats(stats: Option<&str>) -> PyResult<Option<TermStats>> {
    stats
        .map(serde_json::from_str)
        .transpose()
        .map_err(|e| invalid_argument(format!("stats is not merge_term_stats output: {e}")))
}
