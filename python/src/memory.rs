//! The memory limit of native calls (`miltk.set_max_memory_gib`): work whose estimate
//! (the library's `footprint` of each algorithm) exceeds it is refused with `MemoryError`
//! before it starts, as `mil --max-memory-gib` refuses it.

use std::sync::atomic::{AtomicU64, Ordering};

use mil_toolkit::params::{default_memory_limit_gib, Estimate, Shape};
use mil_toolkit::Dataset;
use pyo3::exceptions::{PyMemoryError, PyValueError};
use pyo3::prelude::*;

/// The limit's bits as an `f64`; 0 is the default (half the machine's memory).
static LIMIT_BITS: AtomicU64 = AtomicU64::new(0);

/// The limit in GiB.
fn limit_gib() -> f64 {
    match LIMIT_BITS.load(Ordering::Relaxed) {
        0 => default_memory_limit_gib(),
        bits => f64::from_bits(bits),
    }
}

/// Sets the memory limit of native calls in GiB (`None`: half the machine's memory).
#[pyfunction]
#[pyo3(signature = (gib=None))]
pub(crate) fn set_max_memory_gib(gib: Option<f64>) -> PyResult<()> {
    let bits = match gib {
        None => 0,
        Some(v) if v.is_finite() && v > 0.0 => v.to_bits(),
        Some(v) => {
            return Err(PyValueError::new_err(format!(
                "gib={v}: give a positive, finite number of GiB (or None for the default)"
            )))
        }
    };
    LIMIT_BITS.store(bits, Ordering::Relaxed);
    Ok(())
}

/// The memory limit of native calls in GiB.
#[pyfunction]
pub(crate) fn get_max_memory_gib() -> f64 {
    limit_gib()
}

/// Refuses `estimate` (of `what`) above the limit with `MemoryError`, naming the
/// estimate and what to change (`remedy`, when not empty).
pub(crate) fn check(what: &str, estimate: Estimate, remedy: &str) -> PyResult<()> {
    estimate.check(what, limit_gib(), remedy).map_err(|e| {
        let reason = match e {
            mil_toolkit::Error::Parameter { reason, .. } => reason,
            other => other.to_string(),
        };
        PyMemoryError::new_err(format!(
            "{reason} (miltk.set_max_memory_gib; the limit is {} GiB)",
            limit_gib()
        ))
    })
}

/// [`check`] for a classifier fitted (or cross-validated) on `data`.
pub(crate) fn check_classifier(
    params: &mil_toolkit::classifier::ClassifierParams,
    shape: Shape,
) -> PyResult<()> {
    match params.footprint(shape) {
        Some((what, estimate)) => check(&what, estimate, "use fewer bags"),
        None => Ok(()),
    }
}

/// [`check`] for a projection fitted on `data`.
pub(crate) fn check_projection(data: &Dataset) -> PyResult<()> {
    check(
        "the projection (its scatter matrices)",
        mil_toolkit::projection::footprint(Shape::of(data)),
        "use fewer features",
    )
}
