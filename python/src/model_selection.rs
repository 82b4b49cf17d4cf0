//! Model selection (`miltk.model_selection`): the library's folds, cross-validation
//! and clustering accuracy.

use std::sync::Arc;

use mil_toolkit::classifier::ClassifierParams;
use mil_toolkit::data::Dataset;
use mil_toolkit::model::Chosen;
use mil_toolkit::params::Shape;
use mil_toolkit::pipeline::{
    cross_validate as library_cv, ClassifierGrid, Folds, Pipeline, Selection,
};
use mil_toolkit::progress::Silent;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::bags::Bags;
use crate::classifiers::{ClassifierSpec, FittedClassifier};
use crate::errors::{keyword, py_err};
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

/// Candidates of a classifier among which an inner CV on the training bags of every fit
/// chooses (`miltk.AutoMIL`): the `auto` classifier's grid or a given list.
#[pyclass(module = "miltk._native", frozen)]
pub(crate) struct GridSpec {
    grid: ClassifierGrid,
    inner_folds: usize,
    select: Selection,
    seed: u64,
    max_cpu_minutes: Option<f64>,
    vote: usize,
    inner_repeats: usize,
}

#[pymethods]
impl GridSpec {
    /// `candidates` (`None`: the `auto` classifier's grid seeded by `seed`, with the class
    /// weights `class_weight`), chosen by an inner CV of `inner_folds` folds seeded by
    /// `seed` that maximises `select` ("accuracy" or "auroc"), within `max_cpu_minutes`
    /// when given (the dearest candidates left out until the estimate fits); the `vote`
    /// best-ranked candidates vote ([`Pipeline::vote`]); the inner CV runs on
    /// `inner_repeats` fold assignments ([`Pipeline::inner_repeats`]).
    #[new]
    #[pyo3(signature = (candidates, seed, class_weight="none", inner_folds=3, select="auroc", max_cpu_minutes=None, vote=1, inner_repeats=1))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        candidates: Option<Vec<PyRef<'_, ClassifierSpec>>>,
        seed: u64,
        class_weight: &str,
        inner_folds: usize,
        select: &str,
        max_cpu_minutes: Option<f64>,
        vote: usize,
        inner_repeats: usize,
    ) -> PyResult<Self> {
        if let Some(m) = max_cpu_minutes {
            if !(m > 0.0 && m.is_finite()) {
                return Err(PyValueError::new_err(format!(
                    "max_cpu_minutes = {m}: give a positive, finite number of minutes"
                )));
            }
        }
        let grid = match candidates {
            None => {
                ClassifierGrid::auto(seed).with_class_weight(class_weight.parse().map_err(py_err)?)
            }
            Some(c) => ClassifierGrid::of(c.iter().map(|s| s.params).collect()).map_err(py_err)?,
        };
        let spec = GridSpec {
            grid,
            inner_folds,
            select: keyword("select", select)?,
            seed,
            max_cpu_minutes,
            vote,
            inner_repeats,
        };
        spec.pipeline(false).check().map_err(py_err)?;
        Ok(spec)
    }

    /// Number of candidates.
    #[getter]
    fn n_candidates(&self) -> usize {
        self.grid.candidates().len()
    }

    /// Fits the candidate the inner CV chooses (or the vote of the best-ranked) on every
    /// bag of `bags` (`projected`: bags a projection produced) on `n_threads` threads;
    /// returns the fitted classifier, the choice's description, the estimated CPU
    /// seconds of the choice (`None` when not estimated) and the candidates the budget
    /// left out.
    #[pyo3(signature = (bags, projected=false, n_threads=0))]
    #[allow(clippy::type_complexity)]
    fn fit(
        &self,
        py: Python<'_>,
        bags: &Bags,
        projected: bool,
        n_threads: usize,
    ) -> PyResult<(
        FittedClassifier,
        String,
        Option<f64>,
        Vec<String>,
        InnerScores,
    )> {
        let data = Arc::clone(&bags.data);
        self.check_memory(Shape::of(&data))?;
        let all: Vec<usize> = (0..data.n_bags()).collect();
        let (pipeline, seconds, left_out) =
            self.within_budget(self.pipeline(projected), &data, &all, 1)?;
        let train = Arc::clone(&data);
        let (model, voters, chosen, inner) = run(py, n_threads, move || {
            let model = pipeline.fit(train.as_ref())?;
            let first = pipeline.classifier.candidates()[0];
            let inner = model.chosen.as_ref().map_or_else(Vec::new, |c| {
                c.inner
                    .iter()
                    .map(|s| (s.candidate.clone(), s.score))
                    .collect()
            });
            let chosen = model
                .chosen
                .map_or_else(|| first.to_string(), |c| described(c, first));
            Ok::<_, mil_toolkit::Error>((model.classifier, model.voters, chosen, inner))
        })?
        .map_err(py_err)?;
        Ok((
            FittedClassifier {
                model: Arc::new(model),
                voters: Arc::new(voters),
                train: Some(data),
            },
            chosen,
            seconds,
            left_out,
            inner,
        ))
    }
}

/// Every candidate the inner CV scored, best first, with its score ([`Chosen::inner`]).
type InnerScores = Vec<(String, Option<f64>)>;

impl GridSpec {
    /// The pipeline that fits the grid (candidates as after a projection when
    /// `projected`).
    fn pipeline(&self, projected: bool) -> Pipeline {
        let grid = if projected {
            let c: Vec<ClassifierParams> = self
                .grid
                .candidates()
                .iter()
                .map(|c| c.after_projection())
                .collect();
            ClassifierGrid::of(c).expect("checked candidates")
        } else {
            self.grid.clone()
        };
        Pipeline::new(grid)
            .inner_folds(self.inner_folds)
            .inner_repeats(self.inner_repeats)
            .select(self.select)
            .seed(self.seed)
            .vote(self.vote)
    }

    /// `pipeline` within the budget `max_cpu_minutes` over `outer_fits` fits on training
    /// sets like `outer_train` ([`Pipeline::cpu_estimate`]): the pipeline to run, its
    /// estimated CPU seconds and the candidates left out (the dearest first until the
    /// rest fit); `ValueError` with the estimate when not even the cheapest fits.
    fn within_budget(
        &self,
        mut pipeline: Pipeline,
        data: &Dataset,
        outer_train: &[usize],
        outer_fits: usize,
    ) -> PyResult<(Pipeline, Option<f64>, Vec<String>)> {
        let Some(limit) = self.max_cpu_minutes else {
            return Ok((pipeline, None, Vec::new()));
        };
        let Some(estimate) = pipeline
            .cpu_estimate(data, outer_train, outer_fits)
            .map_err(py_err)?
        else {
            return Ok((pipeline, None, Vec::new()));
        };
        let seconds = estimate.cpu_seconds();
        let Some((kept, dropped)) = estimate.within(60.0 * limit) else {
            return Err(PyValueError::new_err(format!(
                "max_cpu_minutes = {limit}: choosing among {} candidates on {} bags is estimated at {seconds:.1} CPU s and not even the cheapest fits: raise the limit, use fewer bags, or give fewer candidates",
                estimate.candidates.len(),
                data.n_bags()
            )));
        };
        if kept.len() < self.vote {
            return Err(PyValueError::new_err(format!(
                "max_cpu_minutes = {limit}: choosing among {} candidates on {} bags is estimated at {seconds:.1} CPU s, and within the limit {} candidates are left, fewer than vote = {}: raise the limit or lower vote",
                estimate.candidates.len(),
                data.n_bags(),
                kept.len(),
                self.vote
            )));
        }
        let left: f64 = seconds - dropped.iter().map(|c| c.cpu_seconds).sum::<f64>();
        pipeline.classifier = ClassifierGrid::of(kept).map_err(py_err)?;
        let names = dropped.iter().map(|c| c.classifier.to_string()).collect();
        Ok((pipeline, Some(left), names))
    }

    fn check_memory(&self, shape: Shape) -> PyResult<()> {
        match self.grid.footprint(shape) {
            Some((what, estimate)) => crate::memory::check(&what, estimate, "use fewer bags"),
            None => Ok(()),
        }
    }
}

/// A single classifier, or a grid chosen among by inner CV.
#[derive(FromPyObject)]
pub(crate) enum AnySpec<'py> {
    /// One classifier.
    One(PyRef<'py, ClassifierSpec>),
    /// A grid.
    Grid(PyRef<'py, GridSpec>),
}

/// The library's own cross-validation (what `mil cv` runs) on `n_threads` threads (0:
/// the default of `set_num_threads`): (pooled accuracy, per-bag out-of-fold class index
/// of the first repetition, per-fold accuracies, balanced accuracy, AUROC of two-class
/// data, and per fold the classifier a grid's inner CV chose). `given` test folds replace the stratified ones (`k`, `seed`, `repeats`); their
/// randomised steps then use seed 0, as `mil cv --folds-file` does.
#[pyfunction]
#[pyo3(signature = (bags, classifier, projection=None, k=10, seed=1, repeats=1, n_threads=0, given=None))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub(crate) fn cross_validate(
    py: Python<'_>,
    bags: &Bags,
    classifier: AnySpec<'_>,
    projection: Option<&ProjectionSpec>,
    k: usize,
    seed: u64,
    repeats: usize,
    n_threads: usize,
    given: Option<Vec<Vec<usize>>>,
) -> PyResult<(
    f64,
    Vec<usize>,
    Vec<f64>,
    f64,
    Option<f64>,
    Vec<Option<String>>,
)> {
    let mut pipeline = match &classifier {
        AnySpec::One(c) => Pipeline::new(c.params),
        AnySpec::Grid(g) => g.pipeline(false),
    };
    if let Some(p) = projection {
        pipeline = pipeline.projection(p.params);
    }
    let data = Arc::clone(&bags.data);
    let mut shape = Shape::of(&data);
    if let Some(p) = projection {
        crate::memory::check_projection(&data)?;
        shape.dim = p.params.dim();
    }
    match &classifier {
        AnySpec::One(c) => crate::memory::check_classifier(&c.params, shape)?,
        AnySpec::Grid(g) => g.check_memory(shape)?,
    }
    let folds = match given {
        Some(f) => Folds::Given(f),
        None => Folds::Stratified { k, repeats, seed },
    };
    if let (AnySpec::Grid(g), None) = (&classifier, projection) {
        let assignments = folds.assignments(&data).map_err(py_err)?;
        let jobs = assignments.iter().map(|(_, f)| f.len()).sum();
        let mut test = assignments[0].1[0].clone();
        test.sort_unstable();
        let all: Vec<usize> = (0..data.n_bags()).collect();
        let first_train = mil_toolkit::eval::folds::complement(&all, &test);
        pipeline = g.within_budget(pipeline, &data, &first_train, jobs)?.0;
    }
    let (first, grid) = (
        pipeline.classifier.candidates()[0],
        matches!(classifier, AnySpec::Grid(_)),
    );
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
        report
            .chosen
            .into_iter()
            .map(|c| c.filter(|_| grid).map(|c| described(c, first)))
            .collect(),
    ))
}

/// `chosen` as a sentence that names the classifier: candidates that differ in the ridge
/// alone are reported by the ridge, so the classifier (`first` of the grid) is named with
/// it.
fn described(mut chosen: Chosen, first: ClassifierParams) -> String {
    if chosen.classifier.is_none() {
        let named = chosen.ridge.and_then(|r| first.with_ridge(r));
        chosen.classifier = Some(named.unwrap_or(first).to_string());
    }
    chosen.to_string()
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
