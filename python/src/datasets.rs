//! Shipped data sets and data files (`miltk.datasets`).

use numpy::PyArray2;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::bags::matrix;
use crate::errors::py_err;

/// A shipped data set by name, or a data file or `.npy` directory by path, as `mil`
/// reads `DATA`: (instances, bag offsets, class index per bag, class names, bag ids).
#[pyfunction]
#[allow(clippy::type_complexity)]
pub(crate) fn load_dataset<'py>(
    py: Python<'py>,
    name: &str,
) -> PyResult<(
    Bound<'py, PyArray2<f64>>,
    Vec<usize>,
    Vec<usize>,
    Vec<String>,
    Vec<String>,
)> {
    let data = py
        .detach(|| mil_toolkit::data::load(name))
        .map_err(py_err)?;
    let labels = data
        .labels()
        .ok_or_else(|| PyValueError::new_err(format!("{name} has no labels")))?
        .to_vec();
    let (n, dim) = (data.n_instances(), data.dim());
    let (starts, class_names, ids) = (
        data.bag_starts().to_vec(),
        data.class_names().to_vec(),
        data.bag_ids().to_vec(),
    );
    // The values move into the NumPy array: the data set is in memory once.
    let x = matrix(py, n, dim, data.into_features());
    Ok((x, starts, labels, class_names, ids))
}
