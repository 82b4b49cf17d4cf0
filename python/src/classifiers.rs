//! Classifiers (`miltk.classifiers`): hyper-parameters and fitted models.

use std::sync::Arc;

use mil_core::keyword::Keyword;
use mil_toolkit::classifier::attention::{self, AttentionMil};
use mil_toolkit::classifier::citation_knn::{CitationKnn, Scaling};
use mil_toolkit::classifier::dd::{Dd, DdAlgorithm};
use mil_toolkit::classifier::mi_graph::{GraphNorm, MiGraph};
use mil_toolkit::classifier::mi_svm::{Heuristic, InstanceKernel, InstanceScaling, MiSvm};
use mil_toolkit::classifier::mi_vlad::{BagEncoding, MiVlad};
use mil_toolkit::classifier::mi_wrapper::{Combine, MiWrapper};
use mil_toolkit::classifier::miles::{Miles, MilesEmbedding};
use mil_toolkit::classifier::milr::{Milr, Optimizer, Pooling};
use mil_toolkit::classifier::simple_mi::{SimpleMi, Summary};
use mil_toolkit::classifier::smil::{Bias, Smil, Variant};
use mil_toolkit::classifier::svm::bags::{BagSvmSettings, EmpiricalMap};
use mil_toolkit::classifier::svm::{Gamma, Preprocessing, SetKernel, SetKernelSvm};
use mil_toolkit::classifier::{BagModel, ClassifierParams};
use mil_toolkit::data::Dataset;
use mil_toolkit::distance::Hausdorff;
use mil_toolkit::explain::InstanceScore;
use mil_toolkit::kernel::SetKernelName;
use mil_toolkit::model::{ClassifierModel, HostModel};
use mil_toolkit::params::Shape;
use mil_toolkit::projection::LinearProjection;
use numpy::{PyArray1, PyArray2, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::bags::{matrix, Bags};
use crate::errors::{json_err, keyword, py_err};
use crate::parallel::run;

/// A classifier's hyper-parameters (one of the library's [`ClassifierParams`]).
#[pyclass(module = "miltk._native", frozen)]
pub(crate) struct ClassifierSpec {
    pub(crate) params: ClassifierParams,
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

    /// SimpleMI.
    #[staticmethod]
    #[pyo3(signature = (summary, ridge, class_weight="none"))]
    fn simple_mi(summary: &str, ridge: f64, class_weight: &str) -> PyResult<Self> {
        let params = SimpleMi::default()
            .summary(keyword::<Summary>("summary", summary)?)
            .ridge(ridge)
            .class_weight(class_weight.parse().map_err(py_err)?);
        Self::checked(params.into())
    }

    /// MI-Wrapper.
    #[staticmethod]
    #[pyo3(signature = (combine, ridge, class_weight="none"))]
    fn mi_wrapper(combine: &str, ridge: f64, class_weight: &str) -> PyResult<Self> {
        let params = MiWrapper::default()
            .combine(keyword::<Combine>("combine", combine)?)
            .ridge(ridge)
            .class_weight(class_weight.parse().map_err(py_err)?);
        Self::checked(params.into())
    }

    /// miVLAD (`encoding` "vlad") or miFV ("fisher").
    #[staticmethod]
    #[pyo3(signature = (encoding, codebook, ridge, seed, class_weight="none"))]
    fn mi_vlad(
        encoding: &str,
        codebook: usize,
        ridge: f64,
        seed: u64,
        class_weight: &str,
    ) -> PyResult<Self> {
        let params = MiVlad::default()
            .encoding(keyword::<BagEncoding>("encoding", encoding)?)
            .codebook(codebook)
            .ridge(ridge)
            .seed(seed)
            .class_weight(class_weight.parse().map_err(py_err)?);
        Self::checked(params.into())
    }

    /// mi-SVM (`bag_level` false) or MI-SVM (true).
    #[staticmethod]
    #[pyo3(signature = (bag_level, kernel, gamma, cost, max_iterations, scaling="zscore", class_weight="none"))]
    #[allow(clippy::too_many_arguments)]
    fn mi_svm(
        bag_level: bool,
        kernel: &str,
        gamma: Option<f64>,
        cost: f64,
        max_iterations: usize,
        scaling: &str,
        class_weight: &str,
    ) -> PyResult<Self> {
        let params = MiSvm::default()
            .heuristic(if bag_level {
                Heuristic::Bag
            } else {
                Heuristic::Instance
            })
            .kernel(keyword::<InstanceKernel>("kernel", kernel)?)
            .gamma(gamma)
            .cost(cost)
            .max_iterations(max_iterations)
            .scaling(keyword::<InstanceScaling>("scaling", scaling)?)
            .class_weight(class_weight.parse().map_err(py_err)?);
        Self::checked(params.into())
    }

    /// sMIL (`balanced` false) or sbMIL (true, with `eta`).
    #[staticmethod]
    #[pyo3(signature = (balanced, kernel, gamma, cost, eta, class_weight="none", bias="training-cut"))]
    fn smil(
        balanced: bool,
        kernel: &str,
        gamma: Option<f64>,
        cost: f64,
        eta: f64,
        class_weight: &str,
        bias: &str,
    ) -> PyResult<Self> {
        let params = Smil::default()
            .variant(if balanced {
                Variant::Balanced
            } else {
                Variant::Sparse
            })
            .kernel(keyword::<InstanceKernel>("kernel", kernel)?)
            .gamma(gamma)
            .cost(cost)
            .eta(eta)
            .bias(keyword::<Bias>("bias", bias)?)
            .class_weight(class_weight.parse().map_err(py_err)?);
        Self::checked(params.into())
    }

    /// MILES.
    #[staticmethod]
    #[pyo3(signature = (gamma, cost, mu, max_prototypes, seed, class_weight="none"))]
    fn miles(
        gamma: Option<f64>,
        cost: f64,
        mu: f64,
        max_prototypes: usize,
        seed: u64,
        class_weight: &str,
    ) -> PyResult<Self> {
        let params = Miles::default()
            .gamma(gamma)
            .cost(cost)
            .mu(mu)
            .max_prototypes(max_prototypes)
            .seed(seed)
            .class_weight(class_weight.parse().map_err(py_err)?);
        Self::checked(params.into())
    }

    /// mi-Graph: `norm` sum (the paper's) or sqrt.
    #[staticmethod]
    #[pyo3(signature = (gamma, cost, class_weight="none", norm="sum"))]
    fn mi_graph(gamma: Option<f64>, cost: f64, class_weight: &str, norm: &str) -> PyResult<Self> {
        let params = MiGraph::default()
            .gamma(gamma)
            .cost(cost)
            .norm(keyword::<GraphNorm>("norm", norm)?)
            .class_weight(class_weight.parse().map_err(py_err)?);
        Self::checked(params.into())
    }

    /// The attention network (Ilse et al.): `pooling` attention, gated, mean or max.
    #[staticmethod]
    #[pyo3(signature = (pooling, hidden, dropout, learning_rate, weight_decay, epochs, patience, validation_fraction, seed, class_weight="none"))]
    #[allow(clippy::too_many_arguments)]
    fn attention(
        pooling: &str,
        hidden: usize,
        dropout: f64,
        learning_rate: f64,
        weight_decay: f64,
        epochs: usize,
        patience: usize,
        validation_fraction: f64,
        seed: u64,
        class_weight: &str,
    ) -> PyResult<Self> {
        let params = AttentionMil::default()
            .pooling(keyword::<attention::Pooling>("pooling", pooling)?)
            .hidden(hidden)
            .dropout(dropout)
            .learning_rate(learning_rate)
            .weight_decay(weight_decay)
            .epochs(epochs)
            .patience(patience)
            .validation_fraction(validation_fraction)
            .seed(seed)
            .class_weight(class_weight.parse().map_err(py_err)?);
        Self::checked(params.into())
    }

    /// DD (`em` false) or EM-DD (true).
    #[staticmethod]
    #[pyo3(signature = (em, max_restarts, max_iterations, seed, class_weight="none"))]
    fn dd(
        em: bool,
        max_restarts: usize,
        max_iterations: usize,
        seed: u64,
        class_weight: &str,
    ) -> PyResult<Self> {
        let params = Dd::default()
            .algorithm(if em {
                DdAlgorithm::EmDd
            } else {
                DdAlgorithm::Dd
            })
            .max_restarts(max_restarts)
            .max_iterations(max_iterations)
            .seed(seed)
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
        gamma: Option<&str>,
        rho: &str,
        map: &str,
        cost: f64,
        seed: u64,
        class_weight: &str,
        preprocessing: &str,
    ) -> PyResult<Self> {
        let gamma: Option<Gamma> = gamma.map(str::parse).transpose().map_err(py_err)?;
        let kernel = match keyword::<SetKernelName>("kernel", kernel)? {
            SetKernelName::Box(kernel) => SetKernel::Box {
                kernel,
                estimator: keyword("estimator", estimator)?,
                epsilon,
                delta,
                precision,
            },
            SetKernelName::Nsk => SetKernel::Nsk {
                gamma: match gamma {
                    None => None,
                    Some(Gamma::Fixed(g)) => Some(g),
                    Some(g @ Gamma::Scaled { .. }) => {
                        return Err(py_err(mil_toolkit::Error::parameter(
                            "gamma",
                            g,
                            "\"scaled\" applies to the mi-rbf kernel; nsk defaults to 1 / the \
                             number of non-constant z-scored features, which is that already",
                        )))
                    }
                },
            },
            SetKernelName::MiRbf => SetKernel::MiRbf {
                gamma: gamma.unwrap_or(Gamma::Fixed(mil_toolkit::classifier::svm::MI_RBF_GAMMA)),
            },
        };
        let settings = BagSvmSettings::default()
            .rho(rho.parse().map_err(py_err)?)
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
    /// `n_threads`: threads of the fit (0: the default of `set_num_threads`).
    #[pyo3(signature = (bags, projected=false, n_threads=0))]
    fn fit(
        &self,
        py: Python<'_>,
        bags: &Bags,
        projected: bool,
        n_threads: usize,
    ) -> PyResult<FittedClassifier> {
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
        crate::memory::check_classifier(&params, Shape::of(&data))?;
        let train = Arc::clone(&data);
        let model = run(py, n_threads, move || params.fit(train.as_ref()))?.map_err(py_err)?;
        Ok(FittedClassifier::single(model, Some(data)))
    }
}

impl ClassifierSpec {
    fn checked(params: ClassifierParams) -> PyResult<Self> {
        params.check().map_err(py_err)?;
        Ok(ClassifierSpec { params })
    }
}

/// Per-class scores and labels of `bags` under `model` as (scores, labels).
pub(crate) fn score_bags<'py>(
    py: Python<'py>,
    bags: &Bags,
    n_threads: usize,
    score: impl FnOnce(&Dataset) -> mil_toolkit::Result<mil_toolkit::classifier::BagScores>
        + Send
        + 'static,
) -> PyResult<(Bound<'py, PyArray2<f64>>, Vec<usize>)> {
    let data = Arc::clone(&bags.data);
    let scores = run(py, n_threads, move || score(&data))?.map_err(py_err)?;
    let n = scores.len();
    let c = scores.n_classes();
    let values: Vec<f64> = (0..n).flat_map(|i| scores.row(i).to_vec()).collect();
    Ok((matrix(py, n, c, values), scores.labels()))
}

/// A host model with class names 0..n, as the library saves it (validated when read).
pub(crate) fn host_model(
    projection: Option<LinearProjection>,
    classifier: ClassifierModel,
) -> HostModel {
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

/// A fitted classifier (or a vote of several: [`HostModel::voters`]) and the bags it was
/// fitted on (for export).
#[pyclass(module = "miltk._native", frozen)]
pub(crate) struct FittedClassifier {
    /// The classifier; in a vote, its best-ranked member.
    pub(crate) model: Arc<ClassifierModel>,
    /// The other members of a vote, in rank order; empty: `model` alone.
    pub(crate) voters: Arc<Vec<ClassifierModel>>,
    pub(crate) train: Option<Arc<Dataset>>,
}

impl FittedClassifier {
    /// One fitted classifier, fitted on `train` when kept.
    pub(crate) fn single(model: ClassifierModel, train: Option<Arc<Dataset>>) -> Self {
        FittedClassifier {
            model: Arc::new(model),
            voters: Arc::new(Vec::new()),
            train,
        }
    }

    /// The saved form, as the library writes it (class names 0..n), with `projection`.
    pub(crate) fn host_model(&self, projection: Option<LinearProjection>) -> HostModel {
        let mut host = host_model(projection, (*self.model).clone());
        host.voters = (*self.voters).clone();
        host
    }
}

#[pymethods]
impl FittedClassifier {
    /// Per-class scores (bags × classes) and predicted class indices of `bags`, on
    /// `n_threads` threads (0: the default of `set_num_threads`).
    #[pyo3(signature = (bags, n_threads=0))]
    fn scores<'py>(
        &self,
        py: Python<'py>,
        bags: &Bags,
        n_threads: usize,
    ) -> PyResult<(Bound<'py, PyArray2<f64>>, Vec<usize>)> {
        let model = Arc::clone(&self.model);
        let voters = Arc::clone(&self.voters);
        score_bags(py, bags, n_threads, move |d| {
            let members: Vec<&ClassifierModel> = std::iter::once(model.as_ref())
                .chain(voters.iter())
                .collect();
            ClassifierModel::vote_scores(&members, d)
        })
    }

    /// Per bag, its instances' scores as the model defines them
    /// ([`ClassifierModel::predict_instances`]), on `n_threads` threads (0: the default of
    /// `set_num_threads`); a `ValueError` for a model that defines none.
    #[pyo3(signature = (bags, n_threads=0))]
    fn predict_instances<'py>(
        &self,
        py: Python<'py>,
        bags: &Bags,
        n_threads: usize,
    ) -> PyResult<Vec<Bound<'py, PyArray1<f64>>>> {
        mil_toolkit::model::check_single(1 + self.voters.len(), "scoring the instances of")
            .map_err(py_err)?;
        let model = Arc::clone(&self.model);
        let data = Arc::clone(&bags.data);
        let got = run(py, n_threads, move || {
            model.predict_instances(data.as_ref())
        })?
        .map_err(py_err)?;
        Ok(got
            .scores
            .into_iter()
            .map(|s| PyArray1::from_vec(py, s))
            .collect())
    }

    /// What the instance scores measure ("none": the model, or a vote, defines none).
    #[getter]
    fn instance_score_kind(&self) -> &'static str {
        if self.voters.is_empty() {
            self.model.instance_score_kind().name()
        } else {
            InstanceScore::None.name()
        }
    }

    /// The score above which an instance is labelled positive, if the method defines one.
    #[getter]
    fn instance_threshold(&self) -> Option<f64> {
        self.voters
            .is_empty()
            .then(|| self.model.instance_threshold())
            .flatten()
    }

    /// Number of classifiers whose majority the model predicts (1: a single one).
    #[getter]
    fn n_voters(&self) -> usize {
        1 + self.voters.len()
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

    /// A set-kernel SVM's degenerate Gram matrix (numerically the identity or a
    /// constant) with the setting that fixes it, of the first member of a vote that has
    /// one; `None` otherwise.
    fn gram_diagnosis(&self) -> PyResult<Option<String>> {
        for member in std::iter::once(self.model.as_ref()).chain(self.voters.iter()) {
            let ClassifierModel::Svm(svm) = member else {
                continue;
            };
            if let Some((diagnosis, remedy)) = svm.gram_diagnosis().map_err(py_err)? {
                return Ok(Some(format!("{diagnosis}: {remedy}")));
            }
        }
        Ok(None)
    }

    /// The library's saved-model JSON (a `mil-host-model` without projection).
    fn to_json(&self) -> PyResult<String> {
        serde_json::to_string(&self.host_model(None)).map_err(|e| json_err("classifier", e))
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
            model: Arc::new(host.classifier),
            voters: Arc::new(host.voters),
            train: train.map(|b| Arc::clone(&b.data)),
        })
    }
}

/// A fitted MILES embedding as Python receives it: (prototypes z-scored, prototypes ×
/// features; mean; 1 / standard deviation; γ).
type EmbeddingParts<'py> = (Bound<'py, PyArray2<f64>>, Vec<f64>, Vec<f64>, f64);

/// MILES's embedding fitted on `bags` (the library's [`Miles::embedding`]).
#[pyfunction]
#[pyo3(signature = (bags, gamma, max_prototypes, seed, n_threads=0))]
pub(crate) fn miles_embedding<'py>(
    py: Python<'py>,
    bags: &Bags,
    gamma: Option<f64>,
    max_prototypes: usize,
    seed: u64,
    n_threads: usize,
) -> PyResult<EmbeddingParts<'py>> {
    let params = Miles::default()
        .gamma(gamma)
        .max_prototypes(max_prototypes)
        .seed(seed);
    let data = Arc::clone(&bags.data);
    let e = run(py, n_threads, move || params.embedding(data.as_ref()))?.map_err(py_err)?;
    let n = e.len();
    Ok((
        matrix(py, n, e.dim, e.prototypes),
        e.mean,
        e.inv_sd,
        e.gamma,
    ))
}

/// m(B) of every bag of `bags` (bags × prototypes) under the embedding given by its
/// parts, checked as a saved model is.
#[pyfunction]
#[pyo3(signature = (bags, prototypes, mean, inv_sd, gamma, n_threads=0))]
pub(crate) fn miles_transform<'py>(
    py: Python<'py>,
    bags: &Bags,
    prototypes: PyReadonlyArray2<'_, f64>,
    mean: Vec<f64>,
    inv_sd: Vec<f64>,
    gamma: f64,
    n_threads: usize,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let dim = prototypes.shape()[1];
    let e = MilesEmbedding {
        dim,
        mean,
        inv_sd,
        gamma,
        prototypes: prototypes.as_array().iter().copied().collect(),
    };
    e.validate().map_err(py_err)?;
    let n = e.len();
    let data = Arc::clone(&bags.data);
    let rows = data.n_bags();
    let m = run(py, n_threads, move || e.transform(data.as_ref()))?.map_err(py_err)?;
    Ok(matrix(py, rows, n, m))
}
