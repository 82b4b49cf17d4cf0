//! Key-instance metrics (`miltk.instance_auroc`, `miltk.witness_precision`): the
//! library's [`mil_toolkit::instances`] functions on per-bag lists.

use pyo3::prelude::*;

use crate::errors::py_err;

/// The instance AUROC of `scores` (one list per bag) against `truth` (shaped alike);
/// `None` when the instances are all of one class.
#[pyfunction]
pub(crate) fn instance_auroc(
    scores: Vec<Vec<f64>>,
    truth: Vec<Vec<bool>>,
) -> PyResult<Option<f64>> {
    mil_toolkit::instances::instance_auroc(&scores, &truth).map_err(py_err)
}

/// Of the bags `predicted_positive`, the fraction whose first highest-scoring instance is
/// truly positive; `None` when no bag is predicted positive.
#[pyfunction]
pub(crate) fn witness_precision(
    scores: Vec<Vec<f64>>,
    truth: Vec<Vec<bool>>,
    predicted_positive: Vec<bool>,
) -> PyResult<Option<f64>> {
    mil_toolkit::instances::witness_precision(&scores, &truth, &predicted_positive).map_err(py_err)
}
