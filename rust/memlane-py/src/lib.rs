//! memlane._core: thin PyO3 bindings over memlane-core. Converts arguments, releases the GIL
//! around every index and disk operation, and maps errors; no logic lives here.

mod errors;
mod store;

use pyo3::prelude::*;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("DEFAULT_THRESHOLD", memlane_core::hybrid::DEFAULT_THRESHOLD)?;
    m.add(
        "RELEVANCE_VECTOR_WEIGHT",
        memlane_core::hybrid::RELEVANCE_VECTOR_WEIGHT,
    )?;
    errors::register(m)?;
    m.add_class::<store::PyStore>()?;
    m.add_class::<store::PyWriter>()?;
    m.add_function(wrap_pyfunction!(store::parse_file, m)?)?;
    m.add_function(wrap_pyfunction!(store::chunk_file, m)?)?;
    Ok(())
}
