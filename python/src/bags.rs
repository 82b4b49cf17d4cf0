//! Bags in the library's form, and the array conversions every module shares.

use std::sync::Arc;

use mil_toolkit::data::Dataset;
use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray2, PyArrayMethods, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::errors::py_err;

/// Row-major values of a 2-D array (copied; any memory layout: a Fortran-ordered or
/// strided array is read in logical order).
pub(crate) fn rows(x: &PyReadonlyArray2<'_, f64>) -> Vec<f64> {
    match x.as_slice() {
        Ok(s) if x.is_c_contiguous() => s.to_vec(),
        _ => x.as_array().iter().copied().collect(),
    }
}

pub(crate) fn matrix<'py>(
    py: Python<'py>,
    n: usize,
    m: usize,
    values: Vec<f64>,
) -> Bound<'py, PyArray2<f64>> {
    Array2::from_shape_vec((n, m), values)
        .expect("n × m values")
        .into_pyarray(py)
}

/// Bags in the library's form: validated once, shared by the objects fitted on them.
#[pyclass(module = "miltk._native", frozen)]
pub(crate) struct Bags {
    pub(crate) data: Arc<Dataset>,
}

#[pymethods]
impl Bags {
    /// `x`: instances × features; `starts`: bag offsets (length bags + 1); `labels`:
    /// class index per bag (`0..n_classes`) or `None`; `name` is how errors call them.
    #[new]
    #[pyo3(signature = (x, starts, labels=None, n_classes=0, name="bags"))]
    fn new(
        x: PyReadonlyArray2<'_, f64>,
        starts: Vec<usize>,
        labels: Option<Vec<usize>>,
        n_classes: usize,
        name: &str,
    ) -> PyResult<Self> {
        Self::build(name, x.shape()[1], rows(&x), starts, labels, n_classes)
    }

    /// The fast path for the common case: a list of C- or otherwise-ordered float64 2-D
    /// arrays, none empty, all with `n_features` (or the first bag's) columns, all values
    /// finite. Returns `None` for anything else, and the caller's own validation then
    /// names the bag, instance and feature at fault.
    #[staticmethod]
    #[pyo3(signature = (bags, n_features=None, labels=None, n_classes=0, name="bags"))]
    fn from_arrays(
        bags: &Bound<'_, PyAny>,
        n_features: Option<usize>,
        labels: Option<Vec<usize>>,
        n_classes: usize,
        name: &str,
    ) -> PyResult<Option<Self>> {
        let Ok(list) = bags.cast::<PyList>() else {
            return Ok(None);
        };
        let mut dim = n_features;
        let mut starts = Vec::with_capacity(list.len() + 1);
        starts.push(0);
        let mut features = Vec::new();
        for item in list.iter() {
            let Ok(array) = item.cast::<PyArray2<f64>>() else {
                return Ok(None);
            };
            // Copied and released at once: numpy's borrow tracking compares a new borrow
            // with every live one of the same base array, so holding the borrows of many
            // views of one array (`np.split`) until the end would cost time quadratic in
            // the number of bags (30 s for 100,000 bags).
            let Ok(array) = array.try_readonly() else {
                return Ok(None);
            };
            let (rows, cols) = (array.shape()[0], array.shape()[1]);
            if rows == 0 || cols == 0 || dim.is_some_and(|d| d != cols) {
                return Ok(None);
            }
            dim = Some(cols);
            starts.push(starts.last().copied().unwrap_or(0) + rows);
            match array.as_slice() {
                Ok(s) if array.is_c_contiguous() => features.extend_from_slice(s),
                _ => features.extend(array.as_array().iter().copied()),
            }
        }
        let Some(dim) = dim else {
            return Ok(None);
        };
        if !features.iter().all(|v| v.is_finite()) {
            return Ok(None);
        }
        Self::build(name, dim, features, starts, labels, n_classes).map(Some)
    }

    /// Number of bags.
    #[getter]
    fn n_bags(&self) -> usize {
        self.data.n_bags()
    }

    /// Feature dimension.
    #[getter]
    fn dim(&self) -> usize {
        self.data.dim()
    }

    /// The instances (instances × features), the bag offsets and the labels.
    fn arrays<'py>(
        &self,
        py: Python<'py>,
    ) -> (Bound<'py, PyArray2<f64>>, Vec<usize>, Option<Vec<usize>>) {
        let d = &self.data;
        (
            matrix(py, d.n_instances(), d.dim(), d.features().to_vec()),
            d.bag_starts().to_vec(),
            d.labels().map(<[usize]>::to_vec),
        )
    }
}

impl Bags {
    fn build(
        name: &str,
        dim: usize,
        features: Vec<f64>,
        starts: Vec<usize>,
        labels: Option<Vec<usize>>,
        n_classes: usize,
    ) -> PyResult<Self> {
        let n_bags = starts.len().saturating_sub(1);
        let n_classes = match &labels {
            Some(l) => n_classes.max(l.iter().map(|&c| c + 1).max().unwrap_or(0)),
            None => n_classes,
        };
        let data = Dataset::new(
            name,
            dim,
            features,
            starts,
            (0..n_bags).map(|b| b.to_string()).collect(),
            labels,
            (0..n_classes).map(|c| c.to_string()).collect(),
        )
        .map_err(py_err)?;
        Ok(Bags {
            data: Arc::new(data),
        })
    }
}
