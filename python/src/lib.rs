//! `miltk._native`: the thin native layer of the `miltk` Python package over the
//! `mil-toolkit` library. Every function takes bags as one row-major instance matrix plus
//! bag offsets (the Python side validates and concatenates the user's list of arrays),
//! names enum parameters through [`Keyword`], and releases the GIL for the library's work.
//! The scikit-learn face (parameters, `classes_`, pickling) is pure Python in `miltk/`.

use std::sync::Arc;

use mil_core::keyword::Keyword;
use mil_toolkit::classifier::citation_knn::{CitationKnn, Scaling};
use mil_toolkit::classifier::milr::{Milr, Optimizer, Pooling};
use mil_toolkit::classifier::svm::{Preprocessing, SetKernel, SetKernelSvm};
use mil_toolkit::classifier::{BagModel, ClassifierParams};
use mil_toolkit::cluster::m3ic::{BalanceMode, M3icParams};
use mil_toolkit::cluster::{bamic, m3ic, ClusterModel};
use mil_toolkit::data::standardize::ZScore;
use mil_toolkit::data::Dataset;
use mil_toolkit::distance::Hausdorff;
use mil_toolkit::export::{self, Compact};
use mil_toolkit::kernel::nsk::log_nsk_gram;
use mil_toolkit::kernel::SetKernelName;
use mil_toolkit::model::{ClassifierModel, HostModel};
use mil_toolkit::pipeline::{cross_validate as library_cv, Folds, Pipeline};
use mil_toolkit::progress::Silent;
use mil_toolkit::projection::{LinearProjection, ProjectionKind, ProjectionParams};
use mil_toolkit::svm::bags::{BagSvmSettings, EmpiricalMap};
use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray2, PyArrayMethods, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

/// A library error as the Python exception that fits it: the caller's input or
/// parameters (`ValueError`), or a failure of the method (`RuntimeError`).
fn py_err(e: mil_toolkit::Error) -> PyErr {
    use mil_toolkit::Error as E;
    match e {
        E::Parse { .. } | E::Data { .. } | E::Parameter { .. } | E::Core(_) => {
            PyValueError::new_err(e.to_string())
        }
        E::Io { .. } | E::Numerical { .. } | E::NotAvailable(_) => {
            PyRuntimeError::new_err(e.to_string())
        }
    }
}

/// The value of a keyword parameter, or a `ValueError` listing the names it accepts.
fn keyword<T: Keyword>(parameter: &str, name: &str) -> PyResult<T> {
    T::from_name(name).ok_or_else(|| {
        let names: Vec<String> = T::ALL.iter().map(|v| format!("'{}'", v.name())).collect();
        PyValueError::new_err(format!(
            "{parameter}={name:?} is not one of {}",
            names.join(", ")
        ))
    })
}

fn json_err(what: &str, e: serde_json::Error) -> PyErr {
    PyValueError::new_err(format!("malformed {what} state: {e}"))
}

/// Row-major values of a 2-D array (copied; any memory layout: a Fortran-ordered or
/// strided array is read in logical order).
fn rows(x: &PyReadonlyArray2<'_, f64>) -> Vec<f64> {
    match x.as_slice() {
        Ok(s) if x.is_c_contiguous() => s.to_vec(),
        _ => x.as_array().iter().copied().collect(),
    }
}

fn matrix<'py>(py: Python<'py>, n: usize, m: usize, values: Vec<f64>) -> Bound<'py, PyArray2<f64>> {
    Array2::from_shape_vec((n, m), values)
        .expect("n × m values")
        .into_pyarray(py)
}

/// Bags in the library's form: validated once, shared by the objects fitted on them.
#[pyclass(module = "miltk._native", frozen)]
struct Bags {
    data: Arc<Dataset>,
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
        let mut arrays = Vec::with_capacity(list.len());
        let mut starts = Vec::with_capacity(list.len() + 1);
        starts.push(0);
        for item in list.iter() {
            let Ok(array) = item.cast::<PyArray2<f64>>() else {
                return Ok(None);
            };
            let Ok(array) = array.try_readonly() else {
                return Ok(None);
            };
            let (rows, cols) = (array.shape()[0], array.shape()[1]);
            if rows == 0 || cols == 0 || dim.is_some_and(|d| d != cols) {
                return Ok(None);
            }
            dim = Some(cols);
            starts.push(starts.last().copied().unwrap_or(0) + rows);
            arrays.push(array);
        }
        let Some(dim) = dim else {
            return Ok(None);
        };
        let mut features = Vec::with_capacity(starts.last().copied().unwrap_or(0) * dim);
        for array in &arrays {
            match array.as_slice() {
                Ok(s) if array.is_c_contiguous() => features.extend_from_slice(s),
                _ => features.extend(array.as_array().iter().copied()),
            }
        }
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

fn all(data: &Dataset) -> Vec<usize> {
    (0..data.n_bags()).collect()
}

/// A classifier's hyper-parameters (one of the library's [`ClassifierParams`]).
#[pyclass(module = "miltk._native", frozen)]
struct ClassifierSpec {
    params: ClassifierParams,
}

#[pymethods]
impl ClassifierSpec {
    /// Citation-kNN; `class_weight` as `mil --class-weight` spells it (none, balanced,
    /// W0,W1,… in class order).
    #[staticmethod]
    #[pyo3(signature = (references, citers, rank, scaling, hausdorff, class_weight="none"))]
    fn citation_knn(
        references: usize,
        citers: usize,
        rank: usize,
        scaling: &str,
        hausdorff: &str,
        class_weight: &str,
    ) -> PyResult<Self> {
        let params = CitationKnn::default()
            .references(references)
            .citers(citers)
            .rank(rank)
            .scaling(keyword::<Scaling>("scaling", scaling)?)
            .hausdorff(keyword::<Hausdorff>("hausdorff", hausdorff)?)
            .class_weight(class_weight.parse().map_err(py_err)?);
        Self::checked(params.into())
    }

    /// MILR.
    #[staticmethod]
    #[pyo3(signature = (pooling, ridge, beta, optimizer, class_weight="none"))]
    fn milr(
        pooling: &str,
        ridge: f64,
        beta: f64,
        optimizer: &str,
        class_weight: &str,
    ) -> PyResult<Self> {
        let params = Milr::default()
            .pooling(keyword::<Pooling>("pooling", pooling)?)
            .ridge(ridge)
            .beta(beta)
            .optimizer(keyword::<Optimizer>("optimizer", optimizer)?)
            .class_weight(class_weight.parse().map_err(py_err)?);
        Self::checked(params.into())
    }

    /// The set-kernel SVM.
    #[staticmethod]
    #[pyo3(signature = (kernel, estimator, epsilon, delta, precision, gamma, rho, map, cost, seed, class_weight="none", preprocessing="none"))]
    #[allow(clippy::too_many_arguments)]
    fn svm(
        kernel: &str,
        estimator: &str,
        epsilon: f64,
        delta: f64,
        precision: Option<i32>,
        gamma: Option<f64>,
        rho: f64,
        map: &str,
        cost: f64,
        seed: u64,
        class_weight: &str,
        preprocessing: &str,
    ) -> PyResult<Self> {
        let kernel = match keyword::<SetKernelName>("kernel", kernel)? {
            SetKernelName::Box(kernel) => SetKernel::Box {
                kernel,
                estimator: keyword("estimator", estimator)?,
                epsilon,
                delta,
                precision,
            },
            SetKernelName::Nsk => SetKernel::Nsk { gamma },
            SetKernelName::MiRbf => SetKernel::MiRbf {
                gamma: gamma.unwrap_or(mil_toolkit::classifier::svm::MI_RBF_GAMMA),
            },
        };
        let settings = BagSvmSettings::default()
            .rho(rho)
            .map(keyword::<EmpiricalMap>("map", map)?)
            .cost(cost);
        let params = SetKernelSvm::default()
            .kernel(kernel)
            .settings(settings)
            .seed(seed)
            .preprocessing(keyword::<Preprocessing>("scaling", preprocessing)?)
            .class_weight(class_weight.parse().map_err(py_err)?);
        Self::checked(params.into())
    }

    /// Fits on every bag of `bags`; `projected` marks bags that a projection produced
    /// (Citation-kNN's `auto` scaling is then none).
    #[pyo3(signature = (bags, projected=false))]
    fn fit(&self, py: Python<'_>, bags: &Bags, projected: bool) -> PyResult<FittedClassifier> {
        if let (true, ClassifierParams::Svm(svm)) = (projected, &self.params) {
            if svm.preprocessing == Preprocessing::Weka {
                return Err(PyValueError::new_err(
                    "scaling='weka' reproduces Weka's MISMO on the input attributes, not after a projection: use scaling='minmax'",
                ));
            }
        }
        let params = if projected {
            self.params.after_projection()
        } else {
            self.params
        };
        let data = Arc::clone(&bags.data);
        let model = py
            .detach(|| params.fit(&data, &all(&data)))
            .map_err(py_err)?;
        Ok(FittedClassifier {
            model,
            train: Some(data),
        })
    }
}

impl ClassifierSpec {
    fn checked(params: ClassifierParams) -> PyResult<Self> {
        params.check().map_err(py_err)?;
        Ok(ClassifierSpec { params })
    }
}

/// Per-class scores and labels of `bags` under `model` as (scores, labels).
fn score_bags<'py>(
    py: Python<'py>,
    bags: &Bags,
    score: impl FnOnce(&Dataset, &[usize]) -> mil_toolkit::Result<mil_toolkit::classifier::BagScores>
        + Send,
) -> PyResult<(Bound<'py, PyArray2<f64>>, Vec<usize>)> {
    let data = Arc::clone(&bags.data);
    let scores = py.detach(|| score(&data, &all(&data))).map_err(py_err)?;
    let n = scores.len();
    let c = scores.n_classes();
    let values: Vec<f64> = (0..n).flat_map(|i| scores.row(i).to_vec()).collect();
    Ok((matrix(py, n, c, values), scores.labels()))
}

/// A host model with class names 0..n, as the library saves it (validated when read).
fn host_model(projection: Option<LinearProjection>, classifier: ClassifierModel) -> HostModel {
    let n = classifier.n_classes();
    let input_dim = projection
        .as_ref()
        .map_or(classifier.input_dim(), LinearProjection::input_dim);
    HostModel::new(
        (0..n).map(|c| c.to_string()).collect(),
        input_dim,
        projection,
        classifier,
    )
}

/// A fitted classifier and the bags it was fitted on (for export).
#[pyclass(module = "miltk._native", frozen)]
struct FittedClassifier {
    model: ClassifierModel,
    train: Option<Arc<Dataset>>,
}

#[pymethods]
impl FittedClassifier {
    /// Per-class scores (bags × classes) and predicted class indices of `bags`.
    fn scores<'py>(
        &self,
        py: Python<'py>,
        bags: &Bags,
    ) -> PyResult<(Bound<'py, PyArray2<f64>>, Vec<usize>)> {
        score_bags(py, bags, |d, b| self.model.scores(d, b))
    }

    /// Number of classes.
    #[getter]
    fn n_classes(&self) -> usize {
        self.model.n_classes()
    }

    /// Feature dimension it expects.
    #[getter]
    fn input_dim(&self) -> usize {
        self.model.input_dim()
    }

    /// The algorithm's name.
    #[getter]
    fn kind(&self) -> &'static str {
        self.model.kind().name()
    }

    /// The library's saved-model JSON (a `mil-host-model` without projection).
    fn to_json(&self) -> PyResult<String> {
        serde_json::to_string(&host_model(None, self.model.clone()))
            .map_err(|e| json_err("classifier", e))
    }

    /// The training bags kept for export, if any.
    fn training_bags(&self) -> Option<Bags> {
        self.train.as_ref().map(|d| Bags {
            data: Arc::clone(d),
        })
    }

    /// Rebuilds a fitted classifier from [`FittedClassifier::to_json`]'s text, validated
    /// as `mil predict` validates a model file.
    #[staticmethod]
    #[pyo3(signature = (text, train=None))]
    fn from_json(text: &str, train: Option<&Bags>) -> PyResult<Self> {
        let host = HostModel::parse("pickled classifier", text).map_err(py_err)?;
        if host.projection.is_some() {
            return Err(PyValueError::new_err(
                "pickled classifier: unexpected projection",
            ));
        }
        Ok(FittedClassifier {
            model: host.classifier,
            train: train.map(|b| Arc::clone(&b.data)),
        })
    }
}

/// A projection's hyper-parameters (one of the library's [`ProjectionParams`]).
#[pyclass(module = "miltk._native", frozen)]
struct ProjectionSpec {
    params: ProjectionParams,
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

    /// Fits on every bag of `bags`.
    fn fit(&self, py: Python<'_>, bags: &Bags) -> PyResult<FittedProjection> {
        let data = Arc::clone(&bags.data);
        let params = self.params;
        let projection = py
            .detach(|| params.fit(&data, &all(&data)))
            .map_err(py_err)?;
        Ok(FittedProjection {
            projection,
            train: Some(data),
        })
    }
}

/// A fitted linear projection and the bags it was fitted on (for export).
#[pyclass(module = "miltk._native", frozen)]
struct FittedProjection {
    projection: LinearProjection,
    train: Option<Arc<Dataset>>,
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

/// A fitted clustering (M³IC or BAMIC) and the bags it clustered (for export).
#[pyclass(module = "miltk._native", frozen)]
struct FittedCluster {
    model: ClusterModel,
    train: Option<Arc<Dataset>>,
}

#[pymethods]
impl FittedCluster {
    /// The cluster of every bag.
    fn assign(&self, py: Python<'_>, bags: &Bags) -> PyResult<Vec<usize>> {
        let data = Arc::clone(&bags.data);
        py.detach(|| self.model.assign(&data)).map_err(py_err)
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
        let bytes = py
            .detach(|| {
                let zscore = m.mean.as_deref().zip(m.std.as_deref());
                let compact = Compact::from_m3ic(m.k, m.dim, &m.weights, zscore, m.normalize)?;
                export::export(&compact, encoding, &train)
            })
            .map_err(py_err)?;
        Ok(PyBytes::new(py, &bytes))
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

/// M³IC-MBM: (model, assignments, objective).
#[pyfunction]
#[pyo3(signature = (bags, k, c, balance, restarts, seed, standardize=true, normalize=true, balance_mode=None, min_size=None, max_size=None))]
#[allow(clippy::too_many_arguments)]
fn m3ic_fit(
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
) -> PyResult<(FittedCluster, Vec<usize>, f64)> {
    let data = Arc::clone(&bags.data);
    // None keeps the library's defaults, as `mil cluster` does; the paper's balance
    // mode starts from the paper's defaults (`M3icParams::paper`), as `--balance-mode
    // paper` does.
    let defaults = match balance_mode {
        None => M3icParams::default(),
        Some(mode) => M3icParams::for_mode(keyword::<BalanceMode>("balance_mode", mode)?),
    };
    let params = M3icParams {
        c: c.unwrap_or(defaults.c),
        l: balance.unwrap_or(defaults.l),
        min_size: min_size.unwrap_or(defaults.min_size),
        max_size: max_size.unwrap_or(defaults.max_size),
        ..defaults
    }
    .restarts(restarts)
    .standardize(standardize)
    .normalize(normalize);
    let fit = py
        .detach(|| m3ic::fit(&data, k, &params, seed))
        .map_err(py_err)?;
    Ok((
        FittedCluster {
            model: ClusterModel::M3ic(fit.model),
            train: Some(data),
        },
        fit.assignments,
        fit.objective,
    ))
}

/// BAMIC (k-medoids over a Hausdorff distance): (model, assignments, objective).
#[pyfunction]
fn bamic_fit(
    py: Python<'_>,
    bags: &Bags,
    k: usize,
    distance: &str,
    restarts: usize,
    seed: u64,
) -> PyResult<(FittedCluster, Vec<usize>, f64)> {
    let distance = keyword::<Hausdorff>("distance", distance)?;
    let data = Arc::clone(&bags.data);
    let fit = py
        .detach(|| bamic::fit(&data, k, distance, restarts, seed))
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

/// ln of the Gram matrix of a set kernel over all bags, as `mil gram` computes it: box
/// kernels on the grid fitted on the bags, NSK on z-scored features with γ defaulting to
/// 1 / (number of non-constant features).
#[pyfunction]
#[pyo3(signature = (bags, kernel, estimator, epsilon, delta, precision, gamma, seed))]
#[allow(clippy::too_many_arguments)]
fn log_gram<'py>(
    py: Python<'py>,
    bags: &Bags,
    kernel: &str,
    estimator: &str,
    epsilon: f64,
    delta: f64,
    precision: Option<i32>,
    gamma: Option<f64>,
    seed: u64,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let data = Arc::clone(&bags.data);
    let n = data.n_bags();
    let ln = match keyword::<SetKernelName>("kernel", kernel)? {
        SetKernelName::Box(kernel) => {
            let svm = SetKernelSvm::default()
                .kernel(SetKernel::Box {
                    kernel,
                    estimator: keyword("estimator", estimator)?,
                    epsilon,
                    delta,
                    precision,
                })
                .seed(seed);
            svm.check().map_err(py_err)?;
            py.detach(|| svm.full_log_gram(&data, &Silent))
                .map_err(py_err)?
        }
        SetKernelName::MiRbf => {
            let svm = SetKernelSvm::default()
                .kernel(SetKernel::MiRbf {
                    gamma: gamma.unwrap_or(mil_toolkit::classifier::svm::MI_RBF_GAMMA),
                })
                .seed(seed);
            svm.check().map_err(py_err)?;
            py.detach(|| svm.full_log_gram(&data, &Silent))
                .map_err(py_err)?
        }
        SetKernelName::Nsk => py
            .detach(|| {
                let zscore = ZScore::fit(&data, &all(&data));
                let active = zscore.std.iter().filter(|&&s| s > 0.0).count().max(1);
                let gamma = gamma.unwrap_or(1.0 / active as f64);
                log_nsk_gram(&zscore.apply_active(&data)?, gamma)
            })
            .map_err(py_err)?,
    };
    Ok(matrix(py, n, n, ln))
}

/// A shipped data set: (instances, bag offsets, class index per bag, class names, bag ids).
#[pyfunction]
#[allow(clippy::type_complexity)]
fn load_dataset<'py>(
    py: Python<'py>,
    name: &str,
) -> PyResult<(
    Bound<'py, PyArray2<f64>>,
    Vec<usize>,
    Vec<usize>,
    Vec<String>,
    Vec<String>,
)> {
    if mil_toolkit::data::builtin::find(name).is_none() {
        return Err(PyValueError::new_err(format!(
            "{name:?} is not a shipped data set"
        )));
    }
    let data = py
        .detach(|| mil_toolkit::data::load(name))
        .map_err(py_err)?;
    let labels = data
        .labels()
        .ok_or_else(|| PyValueError::new_err(format!("{name} has no labels")))?
        .to_vec();
    Ok((
        matrix(py, data.n_instances(), data.dim(), data.features().to_vec()),
        data.bag_starts().to_vec(),
        labels,
        data.class_names().to_vec(),
        data.bag_ids().to_vec(),
    ))
}

/// One instance per bag carrying `labels`: what the fold assignment needs.
fn label_only(labels: &[usize]) -> PyResult<Dataset> {
    let n = labels.len();
    let n_classes = labels.iter().map(|&c| c + 1).max().unwrap_or(0);
    Dataset::new(
        "labels",
        1,
        vec![0.0; n],
        (0..=n).collect(),
        (0..n).map(|b| b.to_string()).collect(),
        Some(labels.to_vec()),
        (0..n_classes).map(|c| c.to_string()).collect(),
    )
    .map_err(py_err)
}

/// The test bags of every fold of every repetition, as `mil cv --folds k --repeats r
/// --seed s` assigns them.
#[pyfunction]
#[pyo3(signature = (labels, k, seed, repeats=1))]
fn stratified_folds(
    labels: Vec<usize>,
    k: usize,
    seed: u64,
    repeats: usize,
) -> PyResult<Vec<Vec<Vec<usize>>>> {
    let data = label_only(&labels)?;
    let folds = Folds::Stratified { k, repeats, seed }
        .assignments(&data)
        .map_err(py_err)?;
    Ok(folds.into_iter().map(|(_, f)| f).collect())
}

/// The library's own cross-validation (what `mil cv` runs): (pooled accuracy, per-bag
/// out-of-fold class index of the first repetition, per-fold accuracies).
#[pyfunction]
#[pyo3(signature = (bags, classifier, projection=None, k=10, seed=1, repeats=1))]
fn cross_validate(
    py: Python<'_>,
    bags: &Bags,
    classifier: &ClassifierSpec,
    projection: Option<&ProjectionSpec>,
    k: usize,
    seed: u64,
    repeats: usize,
) -> PyResult<(f64, Vec<usize>, Vec<f64>)> {
    let mut pipeline = Pipeline::new(classifier.params);
    if let Some(p) = projection {
        pipeline = pipeline.projection(p.params);
    }
    let data = Arc::clone(&bags.data);
    let report = py
        .detach(|| {
            library_cv(
                &pipeline,
                &data,
                &Folds::Stratified { k, repeats, seed },
                &Silent,
            )
        })
        .map_err(py_err)?;
    let mut labels = vec![0; data.n_bags()];
    for &(b, label, _) in &report.predictions {
        labels[b] = label;
    }
    Ok((report.accuracy, labels, report.per_fold))
}

/// The accuracy of a clustering under the best one-to-one matching of clusters to classes.
#[pyfunction]
fn clustering_accuracy(assignment: Vec<usize>, truth: Vec<usize>) -> PyResult<f64> {
    if assignment.len() != truth.len() {
        return Err(PyValueError::new_err(format!(
            "{} assignments for {} labels",
            assignment.len(),
            truth.len()
        )));
    }
    Ok(mil_toolkit::eval::clustering_accuracy(&assignment, &truth))
}

/// The core's compact model of a classifier, with an optional projection before it, in
/// `format` (`f32`, `q15`, `q7`); quantisation is fitted on the bags the model (or its
/// projection) was fitted on.
#[pyfunction]
#[pyo3(signature = (classifier, projection=None, format="f32", fold_projection=false, input="fitted"))]
fn export_model<'py>(
    py: Python<'py>,
    classifier: &FittedClassifier,
    projection: Option<&FittedProjection>,
    format: &str,
    fold_projection: bool,
    input: &str,
) -> PyResult<Bound<'py, PyBytes>> {
    let encoding = keyword::<mil_core::Encoding>("format", format)?;
    let input = keyword::<export::InputSteps>("input", input)?;
    let train = match projection {
        Some(p) => p.train.clone(),
        None => classifier.train.clone(),
    }
    .ok_or_else(|| {
        PyValueError::new_err("the model does not keep its training bags: refit it to export")
    })?;
    if let Some(p) = projection {
        if p.projection.output_dim != classifier.model.input_dim() {
            return Err(PyValueError::new_err(format!(
                "the projection outputs {} features but the classifier expects {}",
                p.projection.output_dim,
                classifier.model.input_dim()
            )));
        }
    }
    let host = host_model(
        projection.map(|p| p.projection.clone()),
        classifier.model.clone(),
    );
    let bytes = py
        .detach(|| {
            let (mut compact, _) = Compact::from_host(&host)?;
            if fold_projection {
                compact = compact.fold_projection()?;
            }
            let options = export::ExportOptions {
                input,
                ..Default::default()
            };
            export::export_with(&compact, encoding, &train, options)
        })
        .map_err(py_err)?;
    Ok(PyBytes::new(py, &bytes))
}

/// A compact model as the device parses it, run by the core's own inference.
#[pyclass(module = "miltk._native", frozen)]
struct CoreModel {
    bytes: Vec<u8>,
}

impl CoreModel {
    fn model(&self) -> mil_core::Model<'_> {
        mil_core::Model::parse(&self.bytes).expect("checked when built")
    }
}

#[pymethods]
impl CoreModel {
    /// Parses `bytes` as `mil_core::Model::parse` does on the device.
    #[new]
    fn new(bytes: &[u8]) -> PyResult<Self> {
        mil_core::Model::parse(bytes)
            .map_err(|e| PyValueError::new_err(format!("not a valid compact model: {e}")))?;
        Ok(CoreModel {
            bytes: bytes.to_vec(),
        })
    }

    /// The model bytes.
    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.bytes)
    }

    /// The model kind's name.
    #[getter]
    fn kind(&self) -> &'static str {
        self.model().kind().name()
    }

    /// The scalar encoding's name.
    #[getter]
    fn encoding(&self) -> &'static str {
        self.model().encoding().name()
    }

    /// Raw feature dimension.
    #[getter]
    fn input_dim(&self) -> usize {
        self.model().input_dim()
    }

    /// Size in bytes.
    #[getter]
    fn n_bytes(&self) -> usize {
        self.bytes.len()
    }

    /// The core's label (class index) and per-class scores of every bag.
    fn classify<'py>(
        &self,
        py: Python<'py>,
        bags: &Bags,
    ) -> PyResult<(Vec<usize>, Bound<'py, PyArray2<f64>>)> {
        let data = Arc::clone(&bags.data);
        if data.dim() != self.model().input_dim() {
            return Err(PyValueError::new_err(format!(
                "{} features but the model takes {}",
                data.dim(),
                self.model().input_dim()
            )));
        }
        let (labels, scores, width) = py
            .detach(|| -> mil_toolkit::Result<_> {
                let model = self.model();
                let mut labels = Vec::with_capacity(data.n_bags());
                let mut scores = Vec::new();
                let mut width = 0;
                for b in 0..data.n_bags() {
                    let (decision, s) = export::core_classify(&model, data.bag(b))?;
                    labels.push(decision.label);
                    width = s.len();
                    scores.extend(s.iter().map(|&v| f64::from(v)));
                }
                Ok((labels, scores, width))
            })
            .map_err(py_err)?;
        Ok((labels, matrix(py, data.n_bags(), width, scores)))
    }
}

/// Builds rayon's global pool with `n` threads; an error once the pool exists.
#[pyfunction]
fn set_num_threads(n: usize) -> PyResult<()> {
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
fn num_threads() -> usize {
    rayon::current_num_threads()
}

/// The names a keyword parameter accepts, by concept.
#[pyfunction]
fn keywords(concept: &str) -> PyResult<Vec<&'static str>> {
    fn names<T: Keyword>() -> Vec<&'static str> {
        T::ALL.iter().map(|v| v.name()).collect()
    }
    Ok(match concept {
        "scaling" => names::<Scaling>(),
        "hausdorff" => names::<Hausdorff>(),
        "pooling" => names::<Pooling>(),
        "optimizer" => names::<Optimizer>(),
        "kernel" => names::<SetKernelName>(),
        "estimator" => names::<mil_core::box_kernel::Method>(),
        "map" => names::<EmpiricalMap>(),
        "projection" => names::<ProjectionKind>(),
        "format" => names::<mil_core::Encoding>(),
        other => {
            return Err(PyValueError::new_err(format!(
                "no keyword concept {other:?}"
            )))
        }
    })
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Bags>()?;
    m.add_class::<ClassifierSpec>()?;
    m.add_class::<FittedClassifier>()?;
    m.add_class::<ProjectionSpec>()?;
    m.add_class::<FittedProjection>()?;
    m.add_class::<FittedCluster>()?;
    m.add_class::<CoreModel>()?;
    m.add_function(wrap_pyfunction!(m3ic_fit, m)?)?;
    m.add_function(wrap_pyfunction!(bamic_fit, m)?)?;
    m.add_function(wrap_pyfunction!(log_gram, m)?)?;
    m.add_function(wrap_pyfunction!(load_dataset, m)?)?;
    m.add_function(wrap_pyfunction!(stratified_folds, m)?)?;
    m.add_function(wrap_pyfunction!(cross_validate, m)?)?;
    m.add_function(wrap_pyfunction!(clustering_accuracy, m)?)?;
    m.add_function(wrap_pyfunction!(export_model, m)?)?;
    m.add_function(wrap_pyfunction!(set_num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(keywords, m)?)?;
    Ok(())
}
