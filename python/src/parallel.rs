//! Threads (`miltk.set_num_threads`, `miltk.num_threads`).

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

/// Builds rayon's global pool with `n` threads; an error once the pool exists.
#[pyfunction]
pub(crate) fn set_num_threads(n: usize) -> PyResult<()> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .build_global()
        .map_err(|e| {
            PyRuntimeError::new_err(format!(
                "rayon's thread pool is already running with {} threads ({e}): call \
                 set_num_threads before any other miltk work, or set RAYON_NUM_THREADS",
                rayon::current_num_threads()
            ))
        })
}

/// Threads of rayon's global pool (building it if needed).
#[pyfunction]
pub(crate) fn num_threads() -> usize {
    rayon::current_num_threads()
}
