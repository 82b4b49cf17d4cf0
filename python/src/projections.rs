//! Projections (`miltk.projections`): hyper-parameters and fitted linear projections.

use std::sync::Arc;

use mil_toolkit::data::Dataset;
use mil_toolkit::projection::{LinearProjection, ProjectionKind, ProjectionParams};
use numpy::{PyArray2, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::bags::{matrix, rows, Bags};
use crate::errors::{json_err, keyword, py_err};
use crate::parallel::run;

/// A projection's hyper-parameters (one of the library's [`ProjectionParams`]).
#[pyclass(module = "miltk._native", frozen)]
pub(crate) struct ProjectionSpec {
    pub(crate) params: ProjectionParams,
}

#[pymethods]
impl ProjectionSpec {
    /// `kind` by name (`bmida`, `mi-alm`, …), output dimension, trade-off α (where the
    /// algorithm has one; `None` keeps the paper's) and seed.
    #[new]
    #[pyo3(signature = (kind, dim, alpha=None, seed=1))]
    fn new(kind: &str, dim: usize, alpha: Option<f64>, seed: u64) -> PyResult<Self> {
        let mut params = ProjectionParams::new(keyword::<ProjectionKind>("kind", kind)?)
            .with_dim(dim)
            .with_seed(seed);
        if let Some(a) = alpha {
            params = params.with_alpha(a).map_err(py_err)?;
        }
        Ok(ProjectionSpec { params })
    }

    /// The trade-off α the parameters use (`None` for algorithms without one).
    #[getter]
    fn alpha(&self) -> Option<f64> {
        self.params.alpha()
    }

    /// Fits on every bag of `bags`, on `n_threads` threads (0: the default of
    /// `set_num_threads`).
    #[pyo3(signature = (bags, n_threads=0))]
    fn fit(&self, py: Python<'_>, bags: &Bags, n_threads: usize) -> PyResult<FittedProjection> {
        let data = Arc::clone(&bags.data);
        crate::memory::check_projection(&data)?;
        let params = self.params;
        let train = Arc::clone(&data);
        let projection = run(py, n_threads, move || params.fit(train.as_ref()))?.map_err(py_err)?;
        Ok(FittedProjection {
            projection,
            train: Some(data),
        })
    }
}

/// A fitted linear projection and the bags it was fitted on (for export).
#[pyclass(module = "miltk._native", frozen)]
pub(crate) struct FittedProjection {
    pub(crate) projection: LinearProjection,
    pub(crate) train: Option<Arc<Dataset>>,
}

#[pymethods]
impl FittedProjection {
    /// Projects every instance (rows of `x`): instances × output dimension.
    fn transform<'py>(
        &self,
        py: Python<'py>,
        x: PyReadonlyArray2<'py, f64>,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let p = &self.projection;
        let (n, dim) = (x.shape()[0], x.shape()[1]);
        if dim != p.input_dim() {
            return Err(PyValueError::new_err(format!(
                "{dim} features but the projection was fitted on {}",
                p.input_dim()
            )));
        }
        let values = rows(&x);
        let d = p.output_dim;
        let out = py.detach(|| {
            let mut out = vec![0.0; n * d];
            for (row, o) in values.chunks_exact(dim).zip(out.chunks_exact_mut(d)) {
                p.apply_row(row, o);
            }
            out
        });
        Ok(matrix(py, n, d, out))
    }

    /// Input dimension D.
    #[getter]
    fn input_dim(&self) -> usize {
        self.projection.input_dim()
    }

    /// Output dimension d.
    #[getter]
    fn output_dim(&self) -> usize {
        self.projection.output_dim
    }

    /// G (D × d): y = Gᵀ(x − μ)/σ.
    #[getter]
    fn components<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray2<f64>> {
        let p = &self.projection;
        matrix(py, p.input_dim(), p.output_dim, p.matrix.clone())
    }

    /// μ, the mean subtracted from each feature.
    #[getter]
    fn mean(&self) -> Vec<f64> {
        self.projection.mean.clone()
    }

    /// σ, the scale each feature is divided by (0: the feature is ignored).
    #[getter]
    fn scale(&self) -> Vec<f64> {
        self.projection.scale.clone()
    }

    /// Algorithm-specific measures (MI-ALM's sparsity, …).
    #[getter]
    fn diagnostics(&self) -> Vec<(String, f64)> {
        self.projection.diagnostics.clone()
    }

    /// The library's JSON of the projection.
    fn to_json(&self) -> PyResult<String> {
        serde_json::to_string(&self.projection).map_err(|e| json_err("projection", e))
    }

    /// The training bags kept for export, if any.
    fn training_bags(&self) -> Option<Bags> {
        self.train.as_ref().map(|d| Bags {
            data: Arc::clone(d),
        })
    }

    /// Rebuilds a fitted projection from [`FittedProjection::to_json`]'s text.
    #[staticmethod]
    #[pyo3(signature = (text, train=None))]
    fn from_json(text: &str, train: Option<&Bags>) -> PyResult<Self> {
        let p: LinearProjection =
            serde_json::from_str(text).map_err(|e| json_err("projection", e))?;
        let d = p.input_dim();
        let consistent = d > 0
            && p.output_dim > 0
            && p.scale.len() == d
            && p.matrix.len() == d * p.output_dim
            && p.mean
                .iter()
                .chain(&p.scale)
                .chain(&p.matrix)
                .all(|v| v.is_finite());
        if !consistent {
            return Err(PyValueError::new_err(
                "malformed projection state: inconsistent dimensions or non-finite values",
            ));
        }
        Ok(FittedProjection {
            projection: p,
            train: train.map(|b| Arc::clone(&b.data)),
        })
    }
}
