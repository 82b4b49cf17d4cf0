//! Projection → classifier pipelines and their evaluation by bag-level cross-validation.
//!
//! A pipeline is an optional projection ([`crate::projection::ProjectionParams::fit`]) fitted on the
//! training bags only, followed by a bag classifier fitted on the projected training
//! bags. Hyper-parameter lists of the projection (`--dim`, `--alpha`) and of the
//! classifier (MILR's `--ridge`) are chosen jointly by an inner stratified
//! cross-validation on the training bags of each outer fold (nested CV), so test bags
//! never influence any choice. Out-of-fold scores are pooled over all folds of a
//! repetition for AUROC, as Weka does.
//!
//! Citation-kNN without a projection and with raw features has fold-independent bag
//! distances: they are computed once per run and shared by all folds and repetitions.
//!
//! A decision threshold ([`Pipeline::threshold`]) `auto` is chosen on the training bags
//! alone: an inner stratified CV over them (the inner folds of [`Pipeline::inner_folds`])
//! gives every training bag an out-of-fold score from a model that did not see it, and
//! the cut that maximises [`Pipeline::threshold_metric`] on those scores
//! ([`crate::classifier::imbalance::best_threshold`]) becomes the model's threshold. The
//! training scores themselves would not do: a bag is its own nearest reference in
//! Citation-kNN, and MILR separates thousands of features' worth of training bags
//! perfectly, so any cut in the wide gap between the classes would look best there.

use std::collections::HashMap;
use std::path::Path;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::classifier::citation_knn::Scaling;
use crate::classifier::imbalance::{best_threshold, Threshold, ThresholdMetric};
use crate::classifier::milr::Milr;
use crate::classifier::svm::Preprocessing;
use crate::classifier::{BagModel, BagScores, ClassifierKind, ClassifierParams};
use crate::data::Bags;
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::eval::folds::complement;
use crate::eval::seeds::Stream;
use crate::eval::{accuracy, auroc, confusion_matrix, inner_folds, stratified_folds, Summary};
use crate::model::HostModel;
use crate::progress::Progress;
use crate::projection::{LinearProjection, ProjectionParams};

/// The projection part of a pipeline with its hyper-parameter candidates.
#[derive(Debug, Clone, PartialEq)]
pub struct ProjectionGrid {
    /// The algorithm and every setting that is not searched.
    pub params: ProjectionParams,
    /// Candidate output dimensions (empty: the parameters' own).
    pub dims: Vec<usize>,
    /// Candidate trade-offs α (empty: the parameters' own).
    pub alphas: Vec<f64>,
}

impl ProjectionGrid {
    /// Every (dim, α) combination, dims outermost; α only for algorithms that have one.
    pub fn candidates(&self) -> Result<Vec<ProjectionParams>> {
        let dims = if self.dims.is_empty() {
            vec![self.params.dim()]
        } else {
            self.dims.clone()
        };
        let mut out = Vec::new();
        for dim in dims {
            let p = self.params.with_dim(dim);
            if self.alphas.is_empty() {
                out.push(p);
            } else {
                for &alpha in &self.alphas {
                    out.push(p.with_alpha(alpha)?);
                }
            }
        }
        Ok(out)
    }
}

impl<P: Into<ProjectionParams>> From<P> for ProjectionGrid {
    fn from(params: P) -> Self {
        ProjectionGrid {
            params: params.into(),
            dims: Vec::new(),
            alphas: Vec::new(),
        }
    }
}

/// The classifier part of a pipeline with its hyper-parameter candidates: one
/// classifier, or MILR with a list of ridges.
#[derive(Debug, Clone, PartialEq)]
pub struct ClassifierGrid {
    /// The candidates in the order given (never empty).
    candidates: Vec<ClassifierParams>,
}

impl ClassifierGrid {
    /// `spec` with MILR's ridge replaced by each of `ridges` in turn (an empty list
    /// keeps the spec's own ridge). A ridge list is for MILR only: with another
    /// classifier a single value is ignored, as before, and a longer list is an error.
    /// Every MILR candidate is validated here, before any projection is fitted.
    pub fn new(spec: ClassifierParams, ridges: &[f64]) -> Result<Self> {
        let candidates = match spec {
            ClassifierParams::Milr(milr) if !ridges.is_empty() => ridges
                .iter()
                .map(|&ridge| {
                    let m = Milr { ridge, ..milr };
                    m.check().map(|()| ClassifierParams::Milr(m))
                })
                .collect::<Result<Vec<_>>>()?,
            ClassifierParams::Milr(milr) => {
                milr.check()?;
                vec![spec]
            }
            _ if ridges.len() > 1 => {
                let list: Vec<String> = ridges.iter().map(f64::to_string).collect();
                return Err(Error::parameter(
                    "ridge",
                    list.join(","),
                    format!(
                        "a list of ridges is chosen by inner CV for {} only",
                        ClassifierKind::Milr
                    ),
                ));
            }
            _ => vec![spec],
        };
        Ok(ClassifierGrid { candidates })
    }

    /// The candidates in the order they are tried (ties go to the first).
    pub fn candidates(&self) -> &[ClassifierParams] {
        &self.candidates
    }

    /// The classifier when there is nothing to choose.
    pub fn single(&self) -> Option<ClassifierParams> {
        match self.candidates.as_slice() {
            [one] => Some(*one),
            _ => None,
        }
    }
}

impl<C: Into<ClassifierParams>> From<C> for ClassifierGrid {
    fn from(spec: C) -> Self {
        ClassifierGrid {
            candidates: vec![spec.into()],
        }
    }
}

/// What the inner CV maximises when it picks among candidates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Selection {
    /// Correct predictions on the inner test folds.
    #[default]
    Accuracy,
    /// AUROC of the inner out-of-fold scores, pooled over the inner folds (binary data;
    /// the MI-ALM paper's criterion).
    Auroc,
}

mil_core::keywords!(Selection {
    Selection::Accuracy => "accuracy": "correct predictions on the inner test folds",
    Selection::Auroc => "auroc": "AUROC of the pooled inner out-of-fold scores (two classes; the MI-ALM paper's criterion)",
});

/// A pipeline: optional projection and a classifier, each with its candidates.
#[derive(Debug, Clone, PartialEq)]
pub struct Pipeline {
    /// The projection, if any.
    pub projection: Option<ProjectionGrid>,
    /// The classifier.
    pub classifier: ClassifierGrid,
    /// Folds of the inner CV that picks among several candidates.
    pub inner_folds: usize,
    /// What that inner CV maximises.
    pub select: Selection,
    /// The binary decision rule: the classifier's own, a given threshold on the positive
    /// score, or one chosen on the training bags (module documentation).
    pub threshold: Threshold,
    /// What a chosen threshold maximises.
    pub threshold_metric: ThresholdMetric,
    /// The seed of the inner CVs' fold assignments ([`crate::eval::seeds`]).
    pub seed: u64,
}

/// Fits on the first bags and scores the second: `score(train, test)`.
type FitAndScore<'a> = dyn Fn(&[usize], &[usize]) -> Result<BagScores> + 'a;

/// Folds of the inner CV that chooses among candidates, unless set.
pub const DEFAULT_INNER_FOLDS: usize = 3;

/// The seed of a pipeline's inner CVs, unless set (the `mil` default `--seed`).
pub const DEFAULT_SEED: u64 = 1;

impl Pipeline {
    /// A classifier alone, on the raw features.
    ///
    /// ```
    /// use mil_toolkit::classifier::citation_knn::CitationKnn;
    /// use mil_toolkit::pipeline::Pipeline;
    /// use mil_toolkit::projection::mida::Bmida;
    ///
    /// let data = mil_toolkit::data::load("musk1")?;
    /// let train: Vec<usize> = (0..data.n_bags()).step_by(2).collect();
    /// let test: Vec<usize> = (1..data.n_bags()).step_by(2).collect();
    /// let pipeline = Pipeline::new(CitationKnn::default()).projection(Bmida::default().dim(10));
    /// let model = pipeline.fit(data.select(&train))?;
    /// let labels = model.predict(data.select(&test))?;
    /// assert_eq!(labels.len(), test.len());
    /// # Ok::<(), mil_toolkit::Error>(())
    /// ```
    pub fn new(classifier: impl Into<ClassifierGrid>) -> Self {
        Pipeline {
            projection: None,
            classifier: classifier.into(),
            inner_folds: DEFAULT_INNER_FOLDS,
            select: Selection::default(),
            threshold: Threshold::None,
            threshold_metric: ThresholdMetric::default(),
            seed: DEFAULT_SEED,
        }
    }

    /// The same pipeline seeding its inner CVs from `seed`.
    #[must_use]
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// The same pipeline with the binary decision rule `threshold`.
    ///
    /// ```
    /// use mil_toolkit::classifier::imbalance::Threshold;
    /// use mil_toolkit::classifier::milr::{Milr, Pooling};
    /// use mil_toolkit::pipeline::Pipeline;
    ///
    /// let data = mil_toolkit::data::load("musk1")?;
    /// let pipeline = Pipeline::new(Milr::default().pooling(Pooling::Mean)).threshold(Threshold::Auto);
    /// let model = pipeline.fit(&data)?;
    /// // Chosen on inner out-of-fold probabilities, stored in the model, used by predict.
    /// let t = model.threshold.expect("a chosen threshold");
    /// let scores = model.scores(&data)?;
    /// assert!((0..data.n_bags()).all(|i| scores.label(i) == usize::from(scores.row(i)[1] > t)));
    /// # Ok::<(), mil_toolkit::Error>(())
    /// ```
    #[must_use]
    pub fn threshold(mut self, threshold: Threshold) -> Self {
        self.threshold = threshold;
        self
    }

    /// The same pipeline choosing thresholds by `metric`.
    #[must_use]
    pub fn threshold_metric(mut self, metric: ThresholdMetric) -> Self {
        self.threshold_metric = metric;
        self
    }

    /// The same pipeline with a projection (or a grid of them) fitted first.
    #[must_use]
    pub fn projection(mut self, projection: impl Into<ProjectionGrid>) -> Self {
        self.projection = Some(projection.into());
        self
    }

    /// The same pipeline with `folds` inner folds for choosing among candidates.
    #[must_use]
    pub fn inner_folds(mut self, folds: usize) -> Self {
        self.inner_folds = folds;
        self
    }

    /// The same pipeline choosing candidates by `select`.
    #[must_use]
    pub fn select(mut self, select: Selection) -> Self {
        self.select = select;
        self
    }

    /// Checks every candidate before any work: inner folds ≥ 2, the projection grid
    /// builds, every classifier candidate is valid.
    pub fn check(&self) -> Result<()> {
        if self.inner_folds < 2 {
            return Err(Error::parameter(
                "inner_folds",
                self.inner_folds,
                "must be at least 2",
            ));
        }
        self.projection_candidates()?;
        for c in self.classifier.candidates() {
            c.check()?;
            // MISMO's attribute skip names an input attribute; projected dimensions are not.
            if let ClassifierParams::Svm(svm) = c {
                if self.projection.is_some() && svm.preprocessing == Preprocessing::Weka {
                    return Err(Error::parameter(
                        "scaling",
                        "weka",
                        "reproduces Weka's MISMO on the input attributes, not after a projection: use the scaling minmax",
                    ));
                }
            }
        }
        Ok(())
    }

    /// Checks what depends on the data: a threshold needs two classes, class weights one
    /// per class.
    pub fn check_data(&self, data: &Dataset) -> Result<()> {
        let k = data.n_classes();
        if self.threshold != Threshold::None && k != 2 {
            return Err(Error::parameter(
                "threshold",
                self.threshold,
                format!("a threshold on the positive score needs two classes; the data have {k}"),
            ));
        }
        for c in self.classifier.candidates() {
            let w = match c {
                ClassifierParams::CitationKnn(p) => p.class_weight,
                ClassifierParams::Milr(p) => p.class_weight,
                ClassifierParams::Svm(p) => p.class_weight,
            };
            // The labels only matter to `balanced`; the count is checked here.
            w.resolve(&[], k)?;
        }
        Ok(())
    }

    /// The threshold of a model fitted on `train`: none, the given one, or (auto) the
    /// best cut of the out-of-fold scores of an inner CV on `train` (inner folds seeded
    /// by `seed`), where `score(inner_train, inner_test)` fits on the first and scores
    /// the second.
    pub(crate) fn decide_threshold(
        &self,
        data: &Dataset,
        train: &[usize],
        seed: u64,
        score: &FitAndScore<'_>,
    ) -> Result<Option<f64>> {
        match self.threshold {
            Threshold::None => Ok(None),
            Threshold::Value(t) => Ok(Some(t)),
            Threshold::Auto => {
                let labels = data.require_labels(2)?;
                let smallest = [0, 1]
                    .iter()
                    .map(|&c| train.iter().filter(|&&b| labels[b] == c).count())
                    .min()
                    .unwrap_or(0);
                if self.inner_folds > smallest {
                    return Err(Error::parameter(
                        "inner_folds",
                        self.inner_folds,
                        format!(
                            "the inner CV that chooses the threshold needs at most the smallest class among the training bags ({smallest} bags)"
                        ),
                    ));
                }
                let folds = inner_folds(labels, train, self.inner_folds, seed)?;
                let (mut scores, mut positive) = (Vec::new(), Vec::new());
                for test in &folds {
                    let mut sorted = test.clone();
                    sorted.sort_unstable();
                    let s = score(&complement(train, &sorted), test)?;
                    for (i, &b) in test.iter().enumerate() {
                        scores.push(s.positive(i));
                        positive.push(labels[b] == 1);
                    }
                }
                best_threshold(&scores, &positive, self.threshold_metric)
                    .map(Some)
                    .ok_or_else(|| Error::data(data.name(), "no scores to choose a threshold from"))
            }
        }
    }
}

/// One point of a pipeline's grid: a projection (if any) and a classifier.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Candidate {
    /// The projection, if the pipeline has one.
    pub projection: Option<ProjectionParams>,
    /// The classifier.
    pub classifier: ClassifierParams,
}

/// What a pipeline chose (or was given) in one fit, as `mil cv`/`mil train` report it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Chosen {
    /// The projection's output dimension.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dim: Option<usize>,
    /// The projection's α.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alpha: Option<f64>,
    /// MILR's ridge.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ridge: Option<f64>,
}

impl std::fmt::Display for Chosen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        if let Some(d) = self.dim {
            parts.push(format!("dim {d}"));
        }
        if let Some(a) = self.alpha {
            parts.push(format!("alpha {a}"));
        }
        if let Some(r) = self.ridge {
            parts.push(format!("ridge {r}"));
        }
        f.write_str(&parts.join(", "))
    }
}

/// One pipeline configuration with a single projection candidate, fitted.
struct Fitted {
    projection: Option<LinearProjection>,
    classifier: crate::model::ClassifierModel,
}

impl Fitted {
    fn scores(
        &self,
        data: &Dataset,
        projected: Option<&Dataset>,
        bags: &[usize],
    ) -> Result<BagScores> {
        match (&self.projection, projected) {
            (Some(_), Some(p)) => self.classifier.scores(p.select(bags)),
            (Some(p), None) => self.classifier.scores(p.transform(data)?.select(bags)),
            (None, _) => self.classifier.scores(data.select(bags)),
        }
    }
}

impl Pipeline {
    fn projection_candidates(&self) -> Result<Vec<Option<ProjectionParams>>> {
        Ok(match &self.projection {
            None => vec![None],
            Some(grid) => grid.candidates()?.into_iter().map(Some).collect(),
        })
    }

    /// Number of candidates of the whole grid; with more than one, each fit runs an
    /// inner CV.
    pub fn n_candidates(&self) -> usize {
        let projections = self
            .projection
            .as_ref()
            .map_or(1, |g| g.dims.len().max(1) * g.alphas.len().max(1));
        projections * self.classifier.candidates().len()
    }

    /// What to report about a candidate: the projection's (dim, α) when there is a
    /// projection and MILR's ridge when MILR is the classifier; nothing when there is
    /// neither a projection nor a choice (the output of such runs is as it always was).
    pub fn chosen(&self, c: &Candidate) -> Option<Chosen> {
        if c.projection.is_none() && self.n_candidates() == 1 {
            return None;
        }
        Some(Chosen {
            dim: c.projection.map(|p| p.dim()),
            alpha: c.projection.and_then(|p| p.alpha()),
            ridge: match c.classifier {
                ClassifierParams::Milr(m) => Some(m.ridge),
                _ => None,
            },
        })
    }

    /// Fits a projection candidate on `train` and projects all bags with it.
    fn fit_projection(
        spec: Option<&ProjectionParams>,
        data: &Dataset,
        train: &[usize],
    ) -> Result<Option<(LinearProjection, Dataset)>> {
        spec.map(|spec| {
            let p = spec.fit(data.select(train))?;
            let projected = p.transform(data)?;
            Ok((p, projected))
        })
        .transpose()
    }

    /// Fits one candidate on `train`; also returns the projected data set (all bags).
    fn fit_candidate(
        &self,
        candidate: &Candidate,
        data: &Dataset,
        train: &[usize],
    ) -> Result<(Fitted, Option<Dataset>)> {
        match Self::fit_projection(candidate.projection.as_ref(), data, train)? {
            None => Ok((
                Fitted {
                    projection: None,
                    classifier: candidate.classifier.fit(data.select(train))?,
                },
                None,
            )),
            Some((p, projected)) => {
                let classifier = candidate
                    .classifier
                    .after_projection()
                    .fit(projected.select(train))?;
                Ok((
                    Fitted {
                        projection: Some(p),
                        classifier,
                    },
                    Some(projected),
                ))
            }
        }
    }

    /// Picks the candidate with the best inner-CV accuracy (or pooled AUROC, per
    /// [`Pipeline::select`]) on `train` (the first on ties, projection candidates
    /// outermost, then the classifier's in the order given); with a single candidate,
    /// no inner CV is run. Within an inner fold each
    /// projection candidate is fitted once and every classifier candidate is fitted
    /// on its projected bags. The loop is sequential, so the choice does not depend
    /// on the number of threads.
    fn choose(&self, data: &Dataset, train: &[usize], seed: u64) -> Result<Candidate> {
        let projections = self.projection_candidates()?;
        let classifiers = self.classifier.candidates();
        if projections.len() * classifiers.len() == 1 {
            return Ok(Candidate {
                projection: projections[0],
                classifier: classifiers[0],
            });
        }
        let labels = data.require_labels(2)?;
        if self.select == Selection::Auroc && data.n_classes() != 2 {
            return Err(Error::parameter(
                "select",
                "auroc",
                "AUROC selection needs two classes; use accuracy",
            ));
        }
        let smallest_class = (0..data.n_classes())
            .map(|c| train.iter().filter(|&&b| labels[b] == c).count())
            .filter(|&n| n > 0)
            .min()
            .unwrap_or(0);
        if self.inner_folds > smallest_class {
            return Err(Error::parameter(
                "inner_folds",
                self.inner_folds,
                format!(
                    "must be at most the smallest class among the training bags ({smallest_class} bags)"
                ),
            ));
        }
        let folds = inner_folds(labels, train, self.inner_folds, seed)?;
        // Inner out-of-fold predictions per candidate, index p · classifiers + c:
        // (predicted label, positive score, true label) of every inner test bag.
        let mut oof = vec![Vec::new(); projections.len() * classifiers.len()];
        for (p, spec) in projections.iter().enumerate() {
            for test in &folds {
                let inner_train = complement(train, test);
                let projected = Self::fit_projection(spec.as_ref(), data, &inner_train)?;
                let on = projected.as_ref().map_or(data, |(_, d)| d);
                for (c, classifier) in classifiers.iter().enumerate() {
                    let classifier = match spec {
                        Some(_) => classifier.after_projection(),
                        None => *classifier,
                    };
                    let s = classifier
                        .fit(on.select(&inner_train))?
                        .scores(on.select(test))?;
                    oof[p * classifiers.len() + c].extend(
                        test.iter()
                            .enumerate()
                            .map(|(i, &b)| (s.label(i), s.positive(i), labels[b])),
                    );
                }
            }
        }
        let merit = |o: &[(usize, f64, usize)]| match self.select {
            Selection::Accuracy => o.iter().filter(|(l, _, t)| l == t).count() as f64,
            Selection::Auroc => {
                let scores: Vec<f64> = o.iter().map(|x| x.1).collect();
                let positive: Vec<bool> = o.iter().map(|x| x.2 == 1).collect();
                // NaN scores or a one-class inner sample rank a candidate last.
                auroc(&scores, &positive).unwrap_or(f64::NEG_INFINITY)
            }
        };
        let merits: Vec<f64> = oof.iter().map(|o| merit(o)).collect();
        // The first maximum.
        let mut best = 0;
        for (i, &m) in merits.iter().enumerate() {
            if m > merits[best] {
                best = i;
            }
        }
        Ok(Candidate {
            projection: projections[best / classifiers.len()],
            classifier: classifiers[best % classifiers.len()],
        })
    }

    /// Fits the pipeline on the training bags, choosing among a grid's candidates by
    /// inner CV (seeded by [`Pipeline::seed`]); the chosen point is the model's
    /// [`HostModel::chosen`].
    pub fn fit<'a>(&self, train: impl Into<Bags<'a>>) -> Result<HostModel> {
        let train = train.into();
        Ok(self
            .fit_candidate_model(train.dataset(), &train.indices())?
            .0)
    }

    /// [`Pipeline::fit`] on the bags `train` of `data`, also returning the candidate.
    pub(crate) fn fit_candidate_model(
        &self,
        data: &Dataset,
        train: &[usize],
    ) -> Result<(HostModel, Candidate)> {
        let seed = self.seed;
        self.check()?;
        self.check_data(data)?;
        let candidate = self.choose(data, train, seed)?;
        let (fitted, _) = self.fit_candidate(&candidate, data, train)?;
        let threshold =
            self.decide_threshold(data, train, Stream::Threshold.seed(seed, 0), &|tr, te| {
                let (f, projected) = self.fit_candidate(&candidate, data, tr)?;
                f.scores(data, projected.as_ref(), te)
            })?;
        let mut model = HostModel::new(
            data.class_names().to_vec(),
            data.dim(),
            fitted.projection,
            fitted.classifier,
        );
        model.threshold = threshold;
        model.chosen = self.chosen(&candidate);
        Ok((model, candidate))
    }

    /// A Citation-kNN on the raw bags, scaled per fold: each fold is scored from the
    /// data set's bags directly ([`CitationKnn::fold_scores`]), with no model and no
    /// copy of the data (so the CV peak memory stays below twice the data's size).
    fn direct_citation_knn(&self) -> Option<crate::classifier::citation_knn::CitationKnn> {
        match (&self.projection, self.classifier.single()) {
            (None, Some(ClassifierParams::CitationKnn(c))) => Some(c),
            _ => None,
        }
    }

    /// Whether the bag distances of this pipeline are the same in every fold.
    fn shared_distances(&self) -> Option<crate::classifier::citation_knn::CitationKnn> {
        match (&self.projection, self.classifier.single()) {
            (None, Some(ClassifierParams::CitationKnn(c)))
                if c.scaling.resolve(false) == Scaling::None =>
            {
                Some(c)
            }
            _ => None,
        }
    }
}

/// The seeds of outer fold `fold` of a repetition seeded `repetition_seed`: the inner CV
/// that chooses among a grid's candidates, and the one that chooses a threshold.
fn fold_seeds(repetition_seed: u64, fold: usize) -> (u64, u64) {
    (
        Stream::InnerCv.seed(repetition_seed, fold as u64),
        Stream::Threshold.seed(repetition_seed, fold as u64),
    )
}

/// How cross-validation splits the bags.
#[derive(Debug, Clone, PartialEq)]
pub enum Folds {
    /// Stratified k-fold, `repeats` times with seeds derived from `seed`.
    Stratified {
        /// k (the number of bags gives leave-one-out).
        k: usize,
        /// Repetitions.
        repeats: usize,
        /// Seed.
        seed: u64,
    },
    /// Given test bags per fold, in the order they are predicted (e.g. Weka's folds).
    Given(Vec<Vec<usize>>),
}

impl Folds {
    /// The test bags of every fold of every repetition, each repetition with the seed of
    /// its randomised steps (0 for given folds): what [`cross_validate`] runs.
    pub fn assignments(&self, data: &Dataset) -> Result<Vec<(u64, Vec<Vec<usize>>)>> {
        let labels = data.require_labels(2)?;
        match self {
            Folds::Stratified { k, repeats, seed } => {
                crate::params::check_count(
                    "repeats",
                    *repeats,
                    crate::params::limits::MAX_REPEATS,
                )?;
                (0..*repeats as u64)
                    .map(|r| {
                        let s = Stream::Repetition.seed(*seed, r);
                        stratified_folds(labels, *k, s).map(|f| (s, f))
                    })
                    .collect()
            }
            Folds::Given(f) => Ok(vec![(0, f.clone())]),
        }
    }
}

/// Everything a cross-validation run measured.
#[derive(Debug, Clone, Serialize)]
pub struct CvReport {
    /// Pooled accuracy over all out-of-fold predictions of all repetitions.
    pub accuracy: f64,
    /// AUROC of the pooled out-of-fold positive-class scores, averaged over repetitions;
    /// `None` for multi-class data.
    pub auroc: Option<f64>,
    /// Folds per repetition.
    pub folds: usize,
    /// Repetitions.
    pub repeats: usize,
    /// Accuracy of every fold (all repetitions, in order).
    pub per_fold: Vec<f64>,
    /// Mean, sd and 95% CI of the fold accuracies (Student's t, clipped to [0, 1]).
    pub fold_summary: Option<Summary>,
    /// Pooled accuracy of each repetition.
    pub per_repeat: Vec<f64>,
    /// Confusion matrix `[truth][predicted]` pooled over everything.
    pub confusion: Vec<Vec<usize>>,
    /// Per fold (all repetitions, in order), the projection's (dim, α) and MILR's ridge
    /// fitted — chosen by inner CV when lists were given; `None` without a projection
    /// and without a choice ([`Pipeline::chosen`]).
    pub chosen: Vec<Option<Chosen>>,
    /// Per fold (all repetitions, in order), the decision threshold of its model, if any.
    pub thresholds: Vec<Option<f64>>,
    /// Out-of-fold predictions of the first repetition: (bag index, class, score).
    pub predictions: Vec<(usize, usize, f64)>,
}

impl CvReport {
    /// Balanced accuracy (mean per-class recall) of the pooled confusion matrix.
    pub fn balanced_accuracy(&self) -> f64 {
        crate::eval::metrics::balanced_accuracy(&self.confusion)
    }

    /// Recall, precision and F1 per class of the pooled confusion matrix.
    pub fn per_class(&self) -> Vec<crate::eval::metrics::ClassMetrics> {
        crate::eval::metrics::per_class(&self.confusion)
    }

    /// The class all out-of-fold predictions went to, if they collapsed to one.
    pub fn collapsed_class(&self) -> Option<usize> {
        crate::eval::metrics::collapsed_class(&self.confusion)
    }
}

/// The outcome of one cross-validation job: the scores of one fold's test bags (in the
/// fold's order) and what the pipeline chose on its training bags.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FoldOutcome {
    /// The repetition.
    pub repeat: usize,
    /// The fold within it.
    pub fold: usize,
    /// Per-class scores of the fold's test bags.
    pub scores: BagScores,
    /// The projection's (dim, α) and MILR's ridge, when reported ([`Pipeline::chosen`]).
    pub chosen: Option<Chosen>,
    /// The decision threshold of the fold's model, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<f64>,
}

/// Cross-validates a pipeline on a labelled data set, reporting one step per fold (and
/// the shared Gram matrix's entries first, when there is one) to `progress`.
pub fn cross_validate(
    pipeline: &Pipeline,
    data: &Dataset,
    folds: &Folds,
    progress: &dyn Progress,
) -> Result<CvReport> {
    let assignments = folds.assignments(data)?;
    let jobs = assignments.iter().map(|(_, f)| f.len()).sum();
    let outcomes = run_folds(pipeline, data, folds, 0..jobs, progress)?;
    summarize(data, &assignments, &outcomes)
}

/// Runs the cross-validation jobs `jobs` — (repetition, fold) pairs numbered
/// repetition-major — and returns their outcomes. Each job's result depends on its own
/// fold and seed only, so any split of the jobs over processes ([`crate::shard`]) gives,
/// once merged, exactly what one process computes.
pub fn run_folds(
    pipeline: &Pipeline,
    data: &Dataset,
    folds: &Folds,
    jobs: std::ops::Range<usize>,
    progress: &dyn Progress,
) -> Result<Vec<FoldOutcome>> {
    pipeline.check()?;
    pipeline.check_data(data)?;
    let labels = data.require_labels(2)?;
    let all = Bags::from(data).indices().into_owned();
    let assignments = folds.assignments(data)?;
    let job_list: Vec<(usize, usize)> = assignments
        .iter()
        .enumerate()
        .flat_map(|(r, (_, f))| (0..f.len()).map(move |k| (r, k)))
        .collect();
    let Some(mine) = job_list.get(jobs.clone()) else {
        return Err(Error::parameter(
            "jobs",
            format!("{}..{}", jobs.start, jobs.end),
            format!("there are {} cross-validation jobs", job_list.len()),
        ));
    };
    // Fold-independent distances, computed once for the whole run.
    let shared = pipeline
        .shared_distances()
        .map(|c| (c, c.all_distances(data)));

    // A set-kernel SVM without a projection: one Gram matrix over all bags, shared by
    // every fold and repetition (the kernel uses no labels).
    let shared_gram = match (&pipeline.projection, pipeline.classifier.single()) {
        (None, Some(ClassifierParams::Svm(svm))) if svm.shares_gram() => {
            progress.start("Gram matrix", 0);
            let gram = svm.full_log_gram(data, progress)?;
            progress.finish();
            Some((svm, gram))
        }
        _ => None,
    };
    let direct = pipeline.direct_citation_knn();
    let n_classes = data.n_classes();
    progress.start("cross-validation", mine.len() as u64);
    let outcomes = mine
        .par_iter()
        .map(|&(repeat, f)| {
            let (seed, test_sets) = &assignments[repeat];
            let test = &test_sets[f];
            let mut sorted = test.clone();
            sorted.sort_unstable();
            let train = complement(&all, &sorted);
            let (inner_seed, threshold_seed) = fold_seeds(*seed, f);
            let out = match (&shared, &shared_gram) {
                (Some((c, dist)), _) => {
                    let score =
                        |tr: &[usize], te: &[usize]| c.scores_from_distances(data, dist, tr, te);
                    pipeline
                        .decide_threshold(data, &train, threshold_seed, &score)
                        .and_then(|t| Ok((score(&train, test)?, None, t)))
                }
                (None, Some((svm, gram))) => {
                    let score = |tr: &[usize], te: &[usize]| {
                        svm.scores_from_gram(data, gram, labels, n_classes, tr, te)
                    };
                    pipeline
                        .decide_threshold(data, &train, threshold_seed, &score)
                        .and_then(|t| Ok((score(&train, test)?, None, t)))
                }
                (None, None) if direct.is_some() => {
                    let c = direct.as_ref().expect("checked");
                    let score = |tr: &[usize], te: &[usize]| c.fold_scores(data, tr, te);
                    pipeline
                        .decide_threshold(data, &train, threshold_seed, &score)
                        .and_then(|t| Ok((score(&train, test)?, None, t)))
                }
                (None, None) => pipeline.choose(data, &train, inner_seed).and_then(|c| {
                    let (fitted, projected) = pipeline.fit_candidate(&c, data, &train)?;
                    let scores = fitted.scores(data, projected.as_ref(), test)?;
                    let t =
                        pipeline.decide_threshold(data, &train, threshold_seed, &|tr, te| {
                            let (f, projected) = pipeline.fit_candidate(&c, data, tr)?;
                            f.scores(data, projected.as_ref(), te)
                        })?;
                    Ok((scores, pipeline.chosen(&c), t))
                }),
            };
            progress.advance(1);
            out.map(|(scores, chosen, threshold)| FoldOutcome {
                repeat,
                fold: f,
                scores: scores.with_threshold(threshold),
                chosen,
                threshold,
            })
        })
        .collect::<Result<Vec<_>>>();
    progress.finish();
    outcomes
}

/// Checks fold assignments and job outcomes read from a file against the data they
/// claim: every repetition splits every bag of `data` into the same number of test
/// folds, each bag exactly once; every outcome names an existing (repetition, fold) at
/// most once and holds one row of `data`'s classes per test bag, with no NaN. Returns
/// what is wrong, for an error that names the file.
pub fn check_outcomes(
    data: &Dataset,
    assignments: &[(u64, Vec<Vec<usize>>)],
    outcomes: &[FoldOutcome],
) -> std::result::Result<(), String> {
    let n = data.n_bags();
    let k = assignments.first().map_or(0, |a| a.1.len());
    if k == 0 {
        return Err("assignments: no folds".into());
    }
    for (r, (_, folds)) in assignments.iter().enumerate() {
        if folds.len() != k {
            return Err(format!(
                "assignments: repetition {r} has {} folds, repetition 0 has {k}",
                folds.len()
            ));
        }
        let mut seen = vec![false; n];
        for (f, test) in folds.iter().enumerate() {
            for &b in test {
                match seen.get_mut(b) {
                    None => {
                        return Err(format!(
                        "assignments: repetition {r}, fold {f}: bag index {b}, but {} has {n} bags",
                        data.name()
                    ))
                    }
                    Some(true) => {
                        return Err(format!(
                            "assignments: repetition {r}: bag index {b} in two folds"
                        ))
                    }
                    Some(s) => *s = true,
                }
            }
        }
        if let Some(b) = seen.iter().position(|&s| !s) {
            return Err(format!(
                "assignments: repetition {r}: bag index {b} is in no fold"
            ));
        }
    }
    let mut done = std::collections::HashSet::new();
    for o in outcomes {
        let test = assignments
            .get(o.repeat)
            .and_then(|a| a.1.get(o.fold))
            .ok_or_else(|| {
                format!(
                    "outcomes: repetition {}, fold {} is not one of {} × {k}",
                    o.repeat,
                    o.fold,
                    assignments.len()
                )
            })?;
        if !done.insert((o.repeat, o.fold)) {
            return Err(format!(
                "outcomes: repetition {}, fold {} twice",
                o.repeat, o.fold
            ));
        }
        if o.scores.n_classes() != data.n_classes() || o.scores.len() != test.len() {
            return Err(format!(
                "outcomes: repetition {}, fold {}: {} bags × {} classes of scores for {} test bags × {} classes",
                o.repeat,
                o.fold,
                o.scores.len(),
                o.scores.n_classes(),
                test.len(),
                data.n_classes()
            ));
        }
        if (0..o.scores.len()).any(|i| o.scores.row(i).iter().any(|v| v.is_nan())) {
            return Err(format!(
                "outcomes: repetition {}, fold {}: a score is NaN",
                o.repeat, o.fold
            ));
        }
    }
    Ok(())
}

/// The report of a cross-validation from the outcomes of all its jobs (in any order).
pub fn summarize(
    data: &Dataset,
    assignments: &[(u64, Vec<Vec<usize>>)],
    outcomes: &[FoldOutcome],
) -> Result<CvReport> {
    let labels = data.require_labels(2)?;
    let n_classes = data.n_classes();
    let k = assignments.first().map_or(0, |a| a.1.len());
    let mut report = CvReport {
        accuracy: 0.0,
        auroc: None,
        folds: k,
        repeats: assignments.len(),
        per_fold: Vec::new(),
        fold_summary: None,
        per_repeat: Vec::new(),
        confusion: vec![vec![0; n_classes]; n_classes],
        chosen: Vec::new(),
        thresholds: Vec::new(),
        predictions: Vec::new(),
    };
    let mut aurocs = Vec::new();
    let (mut hits, mut total) = (0usize, 0usize);
    for (repeat, (_, test_sets)) in assignments.iter().enumerate() {
        let mut oof_scores = Vec::new();
        let mut oof_positive = Vec::new();
        let mut rep_hits = 0usize;
        let mut rep_total = 0usize;
        for (f, test) in test_sets.iter().enumerate() {
            let outcome = outcomes
                .iter()
                .find(|o| o.repeat == repeat && o.fold == f)
                .ok_or_else(|| {
                    Error::data(
                        data.name(),
                        format!("no outcome for repetition {repeat}, fold {f}"),
                    )
                })?;
            let (scores, chosen) = (&outcome.scores, &outcome.chosen);
            if scores.len() != test.len() {
                return Err(Error::data(
                    data.name(),
                    format!("repetition {repeat}, fold {f}: scores of another fold"),
                ));
            }
            let predicted = scores.labels();
            let truth: Vec<usize> = test.iter().map(|&b| labels[b]).collect();
            report.per_fold.push(accuracy(&predicted, &truth));
            let cm = confusion_matrix(&predicted, &truth, n_classes);
            for (row, add) in report.confusion.iter_mut().zip(cm) {
                row.iter_mut().zip(add).for_each(|(a, b)| *a += b);
            }
            rep_hits += predicted.iter().zip(&truth).filter(|(p, t)| p == t).count();
            rep_total += truth.len();
            for (i, &b) in test.iter().enumerate() {
                oof_scores.push(scores.positive(i));
                oof_positive.push(labels[b] == 1);
                if repeat == 0 {
                    report
                        .predictions
                        .push((b, predicted[i], scores.positive(i)));
                }
            }
            report.chosen.push(*chosen);
            report.thresholds.push(outcome.threshold);
        }
        report.per_repeat.push(rep_hits as f64 / rep_total as f64);
        hits += rep_hits;
        total += rep_total;
        if n_classes == 2 {
            aurocs.push(auroc(&oof_scores, &oof_positive));
        }
    }
    report.accuracy = hits as f64 / total as f64;
    if n_classes == 2 && aurocs.iter().all(|a| a.is_some()) {
        report.auroc = Some(aurocs.iter().flatten().sum::<f64>() / aurocs.len() as f64);
    }
    report.fold_summary = Summary::of_proportions(&report.per_fold);
    report.predictions.sort_by_key(|p| p.0);
    Ok(report)
}

/// Reads fold assignments from a CSV with header `bag_id,label,fold` (the layout of
/// `data/weka-folds/`): every bag of `data` exactly once, folds numbered 0..k−1; within
/// a fold the rows' order is the order of prediction.
pub fn read_folds_file(path: &Path, data: &Dataset) -> Result<Vec<Vec<usize>>> {
    let file = path.display().to_string();
    let text = crate::data::read_text(path)?;
    let bad = |line: usize, field: &str, problem: String| Error::Parse {
        file: file.clone(),
        line,
        field: field.into(),
        problem,
    };
    let index: HashMap<&str, usize> = data
        .bag_ids()
        .iter()
        .enumerate()
        .map(|(i, id)| (id.as_str(), i))
        .collect();
    let mut folds: Vec<Vec<usize>> = Vec::new();
    let mut seen = vec![false; data.n_bags()];
    for (n, line) in text.lines().enumerate().skip(1) {
        let line_no = n + 1;
        if line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        if fields.len() != 3 {
            return Err(bad(line_no, "row", "expected bag_id,label,fold".into()));
        }
        let bag = *index.get(fields[0]).ok_or_else(|| {
            bad(
                line_no,
                "bag_id",
                format!("no bag `{}` in {}", fields[0], data.name()),
            )
        })?;
        let fold: usize = fields[2].parse().map_err(|_| {
            bad(
                line_no,
                "fold",
                format!("`{}` is not a fold number", fields[2]),
            )
        })?;
        if fold > data.n_bags() {
            return Err(bad(
                line_no,
                "fold",
                format!("fold {fold} exceeds the number of bags"),
            ));
        }
        if std::mem::replace(&mut seen[bag], true) {
            return Err(bad(
                line_no,
                "bag_id",
                format!("bag `{}` listed twice", fields[0]),
            ));
        }
        if folds.len() <= fold {
            folds.resize(fold + 1, Vec::new());
        }
        folds[fold].push(bag);
    }
    if let Some(b) = seen.iter().position(|s| !s) {
        return Err(Error::data(
            &file,
            format!("bag `{}` is in no fold", data.bag_id(b)),
        ));
    }
    if folds.len() < 2 || folds.iter().any(|f| f.is_empty()) {
        return Err(Error::data(
            &file,
            "need at least two non-empty folds numbered from 0",
        ));
    }
    Ok(folds)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classifier::citation_knn::CitationKnn;
    use crate::data;
    use crate::eval::folds::derive_seed;

    #[test]
    fn shared_and_per_fold_distances_agree() {
        // Raw features: the shared-distance fast path and the per-fold fit/predict path
        // must give identical predictions.
        let d = data::load("musk1").unwrap();
        let c = CitationKnn {
            scaling: Scaling::None,
            ..CitationKnn::default()
        };
        let fast = Pipeline {
            projection: None,
            classifier: ClassifierParams::CitationKnn(c).into(),
            inner_folds: 3,
            select: Selection::Accuracy,
            threshold: Threshold::None,
            threshold_metric: ThresholdMetric::default(),
            seed: DEFAULT_SEED,
        };
        let folds = Folds::Stratified {
            k: 5,
            repeats: 1,
            seed: 3,
        };
        let a = cross_validate(&fast, &d, &folds, &crate::progress::Silent).unwrap();
        // Same classifier, but through the generic path: a grid forces fit/predict.
        let all: Vec<usize> = (0..d.n_bags()).collect();
        let f = stratified_folds(d.labels().unwrap(), 5, derive_seed(3, 0)).unwrap();
        let mut preds = Vec::new();
        for test in &f {
            let train = complement(&all, test);
            let model = fast
                .classifier
                .single()
                .unwrap()
                .fit(d.select(&train))
                .unwrap();
            let s = model.scores(d.select(test)).unwrap();
            preds.extend(test.iter().zip(s.labels()).map(|(&b, l)| (b, l)));
        }
        preds.sort();
        let got: Vec<(usize, usize)> = a.predictions.iter().map(|p| (p.0, p.1)).collect();
        assert_eq!(got, preds);
    }

    /// MILR with noisy-OR pooling and the given ridge.
    fn milr(ridge: f64) -> ClassifierParams {
        ClassifierParams::Milr(Milr {
            ridge,
            ..Milr::default()
        })
    }

    /// Correct predictions of `classifier` fitted on `train` over `test`.
    fn hits(classifier: &ClassifierParams, d: &Dataset, train: &[usize], test: &[usize]) -> usize {
        let labels = d.labels().unwrap();
        let s = classifier
            .fit(d.select(train))
            .unwrap()
            .scores(d.select(test))
            .unwrap();
        s.labels()
            .iter()
            .zip(test)
            .filter(|(l, &b)| **l == labels[b])
            .count()
    }

    /// Runs a 5-fold CV of MILR over four ridges on musk1, choosing by `select`, and
    /// checks that each fold's ridge is the one an independent inner 3-fold CV picks
    /// (best accuracy or pooled AUROC, first on ties), and the fold's predictions those
    /// of MILR refitted with it on the fold's training bags.
    fn check_ridge_choice(select: Selection) -> Vec<f64> {
        let d = data::load("musk1").unwrap();
        let ridges = [1e-6, 0.1, 1.0, 100.0];
        let p = Pipeline {
            projection: None,
            classifier: ClassifierGrid::new(milr(1e-6), &ridges).unwrap(),
            inner_folds: 3,
            select,
            threshold: Threshold::None,
            threshold_metric: ThresholdMetric::default(),
            seed: DEFAULT_SEED,
        };
        let seed = 5;
        let r = cross_validate(
            &p,
            &d,
            &Folds::Stratified {
                k: 5,
                repeats: 1,
                seed,
            },
            &crate::progress::Silent,
        )
        .unwrap();
        let labels = d.labels().unwrap();
        let all: Vec<usize> = (0..d.n_bags()).collect();
        let outer_seed = derive_seed(seed, 0);
        let outer = stratified_folds(labels, 5, outer_seed).unwrap();
        let mut expected_predictions = Vec::new();
        let mut chosen = Vec::new();
        for (f, test) in outer.iter().enumerate() {
            let mut test = test.clone();
            test.sort_unstable();
            let train = complement(&all, &test);
            let inner =
                inner_folds(labels, &train, 3, derive_seed(outer_seed, 1000 + f as u64)).unwrap();
            let mut best = (f64::NEG_INFINITY, ridges[0]);
            for &ridge in &ridges {
                let merit = match select {
                    Selection::Accuracy => inner
                        .iter()
                        .map(|v| hits(&milr(ridge), &d, &complement(&train, v), v))
                        .sum::<usize>() as f64,
                    Selection::Auroc => {
                        let (mut scores, mut positive) = (Vec::new(), Vec::new());
                        for v in &inner {
                            let model = milr(ridge).fit(d.select(&complement(&train, v))).unwrap();
                            let s = model.scores(d.select(v)).unwrap();
                            scores.extend((0..v.len()).map(|i| s.row(i)[1]));
                            positive.extend(v.iter().map(|&b| labels[b] == 1));
                        }
                        auroc(&scores, &positive).unwrap()
                    }
                };
                if merit > best.0 {
                    best = (merit, ridge);
                }
            }
            chosen.push(best.1);
            let model = milr(best.1).fit(d.select(&train)).unwrap();
            let s = model.scores(d.select(&test)).unwrap();
            expected_predictions
                .extend((0..test.len()).map(|i| (test[i], s.label(i), s.positive(i))));
        }
        let got: Vec<f64> = r.chosen.iter().map(|c| c.unwrap().ridge.unwrap()).collect();
        assert_eq!(got, chosen);
        assert!(r.chosen.iter().all(|c| c.unwrap().dim.is_none()));
        expected_predictions.sort_by_key(|p| p.0);
        assert_eq!(r.predictions, expected_predictions);
        chosen
    }

    #[test]
    fn ridge_list_choice_matches_a_brute_force_inner_cv() {
        let by_accuracy = check_ridge_choice(Selection::Accuracy);
        let by_auroc = check_ridge_choice(Selection::Auroc);
        println!("ridges chosen by accuracy {by_accuracy:?}, by AUROC {by_auroc:?}");
    }

    /// PCA with dims {2, 4} × MILR with ridges {10⁻⁶, 1, 100}.
    fn pca_ridge_pipeline() -> Pipeline {
        Pipeline {
            projection: Some(ProjectionGrid {
                params: crate::projection::pca::Pca::default().into(),
                dims: vec![2, 4],
                alphas: vec![],
            }),
            classifier: ClassifierGrid::new(milr(1e-6), &[1e-6, 1.0, 100.0]).unwrap(),
            inner_folds: 3,
            select: Selection::Accuracy,
            threshold: Threshold::None,
            threshold_metric: ThresholdMetric::default(),
            seed: DEFAULT_SEED,
        }
    }

    #[test]
    fn joint_projection_and_ridge_choice_matches_the_candidate_by_candidate_loop() {
        // The inner CV fits each projection once per inner fold and scores every ridge
        // on it; the choice must be that of refitting projection and MILR for every
        // (dim, ridge) pair, dims outermost.
        let d = data::load("musk1").unwrap();
        let p = pca_ridge_pipeline();
        let labels = d.labels().unwrap();
        let train: Vec<usize> = (0..d.n_bags()).filter(|b| b % 4 != 0).collect();
        let seed = 11;
        let model = p.clone().seed(seed).fit(d.select(&train)).unwrap();
        let inner = inner_folds(labels, &train, 3, seed).unwrap();
        let mut best: Option<(usize, usize, f64)> = None;
        for spec in p.projection.as_ref().unwrap().candidates().unwrap() {
            for &ridge in &[1e-6, 1.0, 100.0] {
                let mut h = 0;
                for v in &inner {
                    let inner_train = complement(&train, v);
                    let proj = spec.fit(d.select(&inner_train)).unwrap();
                    let projected = proj.transform(&d).unwrap();
                    h += hits(&milr(ridge), &projected, &inner_train, v);
                }
                if best.is_none_or(|b| h > b.0) {
                    best = Some((h, spec.dim(), ridge));
                }
            }
        }
        let (_, dim, ridge) = best.unwrap();
        let chosen = model.chosen.unwrap();
        assert_eq!((chosen.dim, chosen.ridge), (Some(dim), Some(ridge)));
        // The saved model records the chosen ridge.
        match &model.classifier {
            crate::model::ClassifierModel::Milr(m) => assert_eq!(m.params.ridge, ridge),
            other => panic!("{other:?}"),
        }
    }

    /// Leave-one-out on the 2,000 bags of corel_dogs: every fold's inner-CV and threshold
    /// seeds differ from each other and from every other fold's.
    #[test]
    fn leave_one_out_folds_never_share_a_seed() {
        let d = data::load("corel_dogs").unwrap();
        let folds = Folds::Stratified {
            k: d.n_bags(),
            repeats: 1,
            seed: 1,
        };
        let assignments = folds.assignments(&d).unwrap();
        let (rep_seed, test_sets) = &assignments[0];
        assert_eq!(test_sets.len(), 2000);
        let mut seen = std::collections::HashSet::new();
        for f in 0..test_sets.len() {
            let (inner, threshold) = fold_seeds(*rep_seed, f);
            assert!(seen.insert(inner), "fold {f}: inner seed seen before");
            assert!(
                seen.insert(threshold),
                "fold {f}: threshold seed seen before"
            );
        }
    }

    #[test]
    fn joint_choice_does_not_depend_on_the_thread_count() {
        let d = data::load("musk1").unwrap();
        let p = pca_ridge_pipeline();
        let folds = Folds::Stratified {
            k: 4,
            repeats: 1,
            seed: 2,
        };
        let run = |threads: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| cross_validate(&p, &d, &folds, &crate::progress::Silent).unwrap())
        };
        let (one, three) = (run(1), run(3));
        assert_eq!(one.chosen, three.chosen);
        assert_eq!(one.predictions, three.predictions);
        assert_eq!(one.per_fold, three.per_fold);
        assert!(one.chosen.iter().all(|c| c.unwrap().dim.is_some()));
    }

    #[test]
    fn ridge_lists_are_for_valid_milr_ridges_only() {
        let knn = ClassifierParams::CitationKnn(CitationKnn::default());
        let err = ClassifierGrid::new(knn, &[1.0, 2.0]).unwrap_err();
        assert!(err.to_string().contains("ridge"), "{err}");
        assert!(err.to_string().contains("milr"), "{err}");
        assert_eq!(err.exit_code(), 2);
        // A single value is ignored by the other classifiers, as it always was.
        assert_eq!(
            ClassifierGrid::new(knn, &[-1.0]).unwrap().single(),
            Some(knn)
        );
        for bad in [-1.0, f64::NAN, f64::INFINITY] {
            let err = ClassifierGrid::new(milr(1e-6), &[1.0, bad]).unwrap_err();
            assert!(err.to_string().contains("ridge"), "{bad}: {err}");
            assert_eq!(err.exit_code(), 2);
        }
        let grid = ClassifierGrid::new(milr(1e-6), &[0.5, 2.0]).unwrap();
        assert_eq!(grid.candidates(), &[milr(0.5), milr(2.0)]);
        assert_eq!(grid.single(), None);
        assert_eq!(
            ClassifierGrid::new(milr(1e-6), &[3.0]).unwrap().single(),
            Some(milr(3.0))
        );
    }

    #[test]
    fn milr_cross_validation_runs_and_pools() {
        let d = data::load("musk1").unwrap();
        let p = Pipeline {
            projection: None,
            classifier: ClassifierParams::Milr(Milr::default()).into(),
            inner_folds: 3,
            select: Selection::Accuracy,
            threshold: Threshold::None,
            threshold_metric: ThresholdMetric::default(),
            seed: DEFAULT_SEED,
        };
        let r = cross_validate(
            &p,
            &d,
            &Folds::Stratified {
                k: 4,
                repeats: 2,
                seed: 1,
            },
            &crate::progress::Silent,
        )
        .unwrap();
        assert_eq!(r.per_fold.len(), 8);
        assert_eq!(r.confusion.iter().flatten().sum::<usize>(), 2 * d.n_bags());
        let auc = r.auroc.unwrap();
        assert!(auc > 0.6 && auc <= 1.0, "{auc}");
    }
}
