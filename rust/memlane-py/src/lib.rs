//! memlane._core: thin PyO3 bindings over memlane-core. Converts arguments, releases the GIL
//! around every index and disk operation, and maps errors; no logic lives here.

mod convert;
mod errors;
mod features;
mod held;
mod inspect;
mod literals;
mod lock;
mod shard;
mod store;
mod wordpiece;

use pyo3::prelude::*;

// The core's allocations (a parsed file's chunks, each chunk's tantivy document) are made on the
// reading pool and freed on tantivy's threads: glibc's malloc pays for frees across its per-thread
// arenas (keyword ingest +8% on 2 cores: benches/LOG.md, "mimalloc for the core").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // The core turns panics (tantivy's on some damaged files) into errors that name the file;
    // the default hook would still print a backtrace banner on stderr first.
    if std::env::var_os("MEMLANE_DEBUG").is_none() {
        std::panic::set_hook(Box::new(|_| {}));
    }
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("DEFAULT_THRESHOLD", memlane_core::hybrid::DEFAULT_THRESHOLD)?;
    m.add(
        "RELEVANCE_VECTOR_WEIGHT",
        memlane_core::hybrid::RELEVANCE_VECTOR_WEIGHT,
    )?;
    errors::register(m)?;
    m.add_class::<store::PyStore>()?;
    m.add_class::<store::PyWriter>()?;
    m.add_class::<lock::PyHomeLock>()?;
    m.add_class::<literals::PyLiterals>()?;
    m.add_class::<features::PyTextFeatures>()?;
    m.add_class::<wordpiece::PyWordPiece>()?;
    m.add_function(wrap_pyfunction!(lock::install_rebuilt, m)?)?;
    m.add_function(wrap_pyfunction!(lock::clear_repair_leftovers, m)?)?;
    m.add("REPAIR_DIR", memlane_core::store::REPAIR_DIR)?;
    m.add_function(wrap_pyfunction!(inspect::parse_file, m)?)?;
    m.add_function(wrap_pyfunction!(inspect::chunk_file, m)?)?;
    m.add_function(wrap_pyfunction!(shard::merge_term_stats, m)?)?;
    m.add_function(wrap_pyfunction!(shard::query_tokens, m)?)?;
    m.add_function(wrap_pyfunction!(inspect::is_candidate, m)?)?;
    m.add_function(wrap_pyfunction!(shard::fuse_candidates, m)?)?;
    m.add_function(wrap_pyfunction!(shard::search_across, m)?)?;
    m.add_function(wrap_pyfunction!(inspect::project_of, m)?)?;
    m.add_function(wrap_pyfunction!(inspect::repository_root, m)?)?;
    Ok(())
}
