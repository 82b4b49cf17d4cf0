//! Model selection (`miltk.model_selection`): the library's folds, cross-validation
//! and clustering accuracy.

use std::sync::Arc;

use mil_toolkit::data::Dataset;
use mil_toolkit::params::Shape;
use mil_toolkit::pipeline::{cross_validate as library_cv, Folds, Pipeline};
use mil_toolkit::progress::Silent;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::bags::Bags;
use crate::classifiers::ClassifierSpec;
use crate::errors::py_err;
use crate::parallel::run;
use crate::projections::ProjectionSpec;

/// One instance per bag carrying `labels`: what the fold assignment needs.
pub(crate) fn label_only(labels: &[usize]) -> PyResult<Dataset> {
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
pub(crate) fn stratified_folds(
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

/// The library's own cross-validation (what `mil cv` runs) on `n_threads` threads (0:
/// the default of `set_num_threads`): (pooled accuracy, per-bag out-of-fold class index
/// of the first repetition, per-fold accuracies, balanced accuracy, AUROC of two-class
/// data). `given` test folds replace the stratified ones (`k`, `seed`, `repeats`); their
/// randomised steps then use seed 0, as `mil cv --folds-file` does.
#[pyfunction]
#[pyo3(signature = (bags, classifier, projection=None, k=10, seed=1, repeats=1, n_threads=0, given=None))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub(crate) fn cross_validate(
    py: Python<'_>,
    bags: &Bags,
    classifier: &ClassifierSpec,
    projection: Option<&ProjectionSpec>,
    k: usize,
    seed: u64,
    repeats: usize,
    n_threads: usize,
    given: Option<Vec<Vec<usize>>>,
) -> PyResult<(f64, Vec<usize>, Vec<f64>, f64, Option<f64>)> {
    let mut pipeline = Pipeline::new(classifier.params);
    if let Some(p) = projection {
        pipeline = pipeline.projection(p.params);
    }
    let data = Arc::clone(&bags.data);
    let mut shape = Shape::of(&data);
    if let Some(p) = projection {
        crate::memory::check_projection(&data)?;
        shape.dim = p.params.dim();
    }
    crate::memory::check_classifier(&classifier.params, shape)?;
    let folds = match given {
        Some(f) => Folds::Given(f),
        None => Folds::Stratified { k, repeats, seed },
    };
    let train = Arc::clone(&data);
    let report = run(py, n_threads, move || {
        library_cv(&pipeline, &train, &folds, &Silent)
    })?
    .map_err(py_err)?;
    let mut labels = vec![0; data.n_bags()];
    for &(b, label, _) in &report.predictions {
        labels[b] = label;
    }
    let balanced = report.balanced_accuracy();
    Ok((
        report.accuracy,
        labels,
        report.per_fold,
        balanced,
        report.auroc,
    ))
}

/// The accuracy of a clustering under the best one-to-one matching of clusters to classes.
#[pyfunction]
pub(crate) fn clustering_accuracy(assignment: Vec<usize>, truth: Vec<usize>) -> PyResult<f64> {
    if assignment.len() != truth.len() {
        return Err(PyValueError::new_err(format!(
            "{} assignments for {} labels",
            assignment.len(),
            truth.len()
        )));
    }
    Ok(mil_toolkit::eval::clustering_accuracy(&assignment, &truth))
}
