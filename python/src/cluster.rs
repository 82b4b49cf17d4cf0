//! Clustering (`miltk.cluster`): M³IC and BAMIC.

use std::sync::Arc;

use mil_toolkit::cluster::m3ic::{BalanceMode, M3ic};
use mil_toolkit::cluster::{bamic, ClusterModel};
use mil_toolkit::data::Dataset;
use mil_toolkit::distance::Hausdorff;
use mil_toolkit::export;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::bags::Bags;
use crate::errors::{json_err, keyword, py_err};
use crate::parallel::run;

/// A fitted clustering (M³IC or BAMIC) and the bags it clustered (for export).
#[pyclass(module = "miltk._native", frozen)]
pub(crate) struct FittedCluster {
    model: ClusterModel,
    train: Option<Arc<Dataset>>,
}

#[pymethods]
impl FittedCluster {
    /// The cluster of every bag, on `n_threads` threads (0: the default of
    /// `set_num_threads`).
    #[pyo3(signature = (bags, n_threads=0))]
    fn assign(&self, py: Python<'_>, bags: &Bags, n_threads: usize) -> PyResult<Vec<usize>> {
        let data = Arc::clone(&bags.data);
        run(py, n_threads, || self.model.assign(&data))?.map_err(py_err)
    }

    /// Feature dimension it expects.
    #[getter]
    fn input_dim(&self) -> usize {
        self.model.dim()
    }

    /// The library's JSON of the clustering (what `mil cluster -o` saves).
    fn to_json(&self) -> PyResult<String> {
        serde_json::to_string(&self.model).map_err(|e| json_err("clustering", e))
    }

    /// The clustered bags kept for export, if any.
    fn training_bags(&self) -> Option<Bags> {
        self.train.as_ref().map(|d| Bags {
            data: Arc::clone(d),
        })
    }

    /// The core's compact model of an M³IC clustering in `format` (`f32`, `q15`, `q7`),
    /// its input quantisation fitted on the clustered bags, as `mil export` writes it.
    fn export<'py>(&self, py: Python<'py>, format: &str) -> PyResult<Bound<'py, PyBytes>> {
        let encoding = keyword::<mil_core::Encoding>("format", format)?;
        let ClusterModel::M3ic(m) = &self.model else {
            return Err(PyValueError::new_err(
                "BAMIC clusterings (medoid bags) cannot be exported; the core runs M³IC assignment",
            ));
        };
        let train = self.train.clone().ok_or_else(|| {
            PyValueError::new_err("the clustering does not keep its bags: refit it to export")
        })?;
        let exported = run(py, 0, || {
            m.export(train.as_ref(), export::Export::new(encoding))
        })?
        .map_err(py_err)?;
        Ok(PyBytes::new(py, &exported.bytes))
    }

    /// Rebuilds a clustering from [`FittedCluster::to_json`]'s text.
    #[staticmethod]
    #[pyo3(signature = (text, train=None))]
    fn from_json(text: &str, train: Option<&Bags>) -> PyResult<Self> {
        let model: ClusterModel =
            serde_json::from_str(text).map_err(|e| json_err("clustering", e))?;
        let ok = match &model {
            ClusterModel::M3ic(m) => m.k >= 2 && m.dim > 0 && m.weights.len() == m.k * m.dim,
            ClusterModel::Bamic(m) => {
                m.dim > 0
                    && !m.medoids.is_empty()
                    && m.medoids
                        .iter()
                        .all(|b| !b.is_empty() && b.len() % m.dim == 0)
            }
        };
        if !ok {
            return Err(PyValueError::new_err(
                "malformed clustering state: inconsistent dimensions",
            ));
        }
        Ok(FittedCluster {
            model,
            train: train.map(|b| Arc::clone(&b.data)),
        })
    }
}

/// M³IC-MBM: (model, assignments, objective), on `n_threads` threads (0: the default of
/// `set_num_threads`).
#[pyfunction]
#[pyo3(signature = (bags, k, c, balance, restarts, seed, standardize=true, normalize=true, balance_mode=None, min_size=None, max_size=None, n_threads=0))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn m3ic_fit(
    py: Python<'_>,
    bags: &Bags,
    k: usize,
    c: Option<f64>,
    balance: Option<f64>,
    restarts: usize,
    seed: u64,
    standardize: bool,
    normalize: bool,
    balance_mode: Option<&str>,
    min_size: Option<f64>,
    max_size: Option<f64>,
    n_threads: usize,
) -> PyResult<(FittedCluster, Vec<usize>, f64)> {
    let data = Arc::clone(&bags.data);
    // None keeps the library's defaults, as `mil cluster` does; the paper's balance
    // mode starts from the paper's defaults (`M3ic::paper`), as `--balance-mode
    // paper` does.
    let defaults = match balance_mode {
        None => M3ic::default(),
        Some(mode) => M3ic::for_mode(keyword::<BalanceMode>("balance_mode", mode)?),
    };
    let params = M3ic {
        c: c.unwrap_or(defaults.c),
        l: balance.unwrap_or(defaults.l),
        min_size: min_size.unwrap_or(defaults.min_size),
        max_size: max_size.unwrap_or(defaults.max_size),
        ..defaults
    }
    .k(k)
    .seed(seed)
    .restarts(restarts)
    .standardize(standardize)
    .normalize(normalize);
    let fit = run(py, n_threads, || params.fit(data.as_ref()))?.map_err(py_err)?;
    Ok((
        FittedCluster {
            model: ClusterModel::M3ic(fit.model),
            train: Some(data),
        },
        fit.assignments,
        fit.objective,
    ))
}

/// BAMIC (k-medoids over a Hausdorff distance): (model, assignments, objective), on
/// `n_threads` threads (0: the default of `set_num_threads`).
#[pyfunction]
#[pyo3(signature = (bags, k, distance, restarts, seed, n_threads=0))]
pub(crate) fn bamic_fit(
    py: Python<'_>,
    bags: &Bags,
    k: usize,
    distance: &str,
    restarts: usize,
    seed: u64,
    n_threads: usize,
) -> PyResult<(FittedCluster, Vec<usize>, f64)> {
    let distance = keyword::<Hausdorff>("distance", distance)?;
    let data = Arc::clone(&bags.data);
    let fit = run(py, n_threads, || {
        bamic::Bamic::default()
            .k(k)
            .seed(seed)
            .distance(distance)
            .restarts(restarts)
            .fit(data.as_ref())
    })?
    .map_err(py_err)?;
    Ok((
        FittedCluster {
            model: ClusterModel::Bamic(fit.model),
            train: Some(data),
        },
        fit.assignments,
        fit.objective,
    ))
}
