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

//!
//! The module is split by what each part does: `grid` holds the candidates and the
//! inner selection among them, `cv` the outer cross-validation, its shards and report.

mod cost;
mod cv;
mod grid;

use crate::classifier::imbalance::{best_threshold, Threshold, ThresholdMetric};
use crate::classifier::{BagModel, BagScores};
use crate::data::Bags;
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::eval::folds::complement;
use crate::eval::inner_folds;
use crate::eval::seeds::Stream;
use crate::model::HostModel;
use crate::progress::Progress;
use crate::projection::{LinearProjection, ProjectionParams};

pub use cost::{CandidateCost, CpuEstimate};
pub use cv::{
    check_outcomes, cross_validate, read_folds_file, run_folds, summarize, CvReport, FoldOutcome,
    FoldSeeds, Folds,
};
pub use grid::{Candidate, Chosen, ClassifierGrid, InnerScore, ProjectionGrid, Selection};

/// A pipeline: optional projection and a classifier, each with its candidates.
#[derive(Debug, Clone, PartialEq)]
pub struct Pipeline {
    /// The projection, if any.
    pub projection: Option<ProjectionGrid>,
    /// The classifier.
    pub classifier: ClassifierGrid,
    /// Folds of the inner CV that picks among several candidates.
    pub inner_folds: usize,
    /// How many fold assignments that inner CV is run on ([`Pipeline::inner_repeats`]).
    pub inner_repeats: usize,
    /// What that inner CV maximises.
    pub select: Selection,
    /// The binary decision rule: the classifier's own, a given threshold on the positive
    /// score, or one chosen on the training bags (module documentation).
    pub threshold: Threshold,
    /// What a chosen threshold maximises.
    pub threshold_metric: ThresholdMetric,
    /// The seed of the inner CVs' fold assignments ([`crate::eval::seeds`]).
    pub seed: u64,
    /// How many of the classifier candidates ranked best by the inner CV are fitted and
    /// vote on every bag ([`Pipeline::vote`]); 1: the best alone.
    pub vote: usize,
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
            inner_repeats: 1,
            select: Selection::default(),
            threshold: Threshold::None,
            threshold_metric: ThresholdMetric::default(),
            seed: DEFAULT_SEED,
            vote: 1,
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

    /// The same pipeline with `folds` inner folds for choosing among candidates (fewer
    /// where the smallest class of the training bags has fewer bags:
    /// [`Pipeline::inner_cv`]).
    #[must_use]
    pub fn inner_folds(mut self, folds: usize) -> Self {
        self.inner_folds = folds;
        self
    }

    /// The same pipeline running the inner CV that chooses among candidates on `repeats`
    /// fold assignments (the first the one a single inner CV uses, the others seeded by
    /// [`Stream::InnerRepeat`]) and ranking the candidates by the mean of their inner
    /// scores: a ranking less at the mercy of one split of a few dozen inner test bags,
    /// at `repeats` times the inner CV's work. 1, the default: one assignment. The
    /// threshold's inner CV is not repeated.
    ///
    /// ```
    /// use mil_toolkit::classifier::milr::Milr;
    /// use mil_toolkit::pipeline::{ClassifierGrid, Pipeline};
    ///
    /// let data = mil_toolkit::data::load("musk1")?;
    /// let grid = ClassifierGrid::new(Milr::default().into(), &[1e-6, 1.0])?;
    /// let model = Pipeline::new(grid).inner_repeats(3).fit(&data)?;
    /// assert!(model.chosen.unwrap().ridge.is_some());
    /// # Ok::<(), mil_toolkit::Error>(())
    /// ```
    #[must_use]
    pub fn inner_repeats(mut self, repeats: usize) -> Self {
        self.inner_repeats = repeats;
        self
    }

    /// The same pipeline choosing candidates by `select`.
    #[must_use]
    pub fn select(mut self, select: Selection) -> Self {
        self.select = select;
        self
    }

    /// The same pipeline letting the `k` classifier candidates ranked best by the inner CV
    /// vote ([`BagScores::vote`]: the majority of their labels, ties to the best-ranked):
    /// each is fitted on the training bags and the model keeps them all
    /// ([`HostModel::voters`]). Candidates the inner CV passes over do not vote, so fewer
    /// may. A vote takes classifiers on the raw features and decides by its majority: no
    /// projection, no threshold. The guide's selection page measures votes of `auto`'s
    /// best candidates against the best alone.
    ///
    /// ```
    /// use mil_toolkit::pipeline::{ClassifierGrid, Pipeline};
    ///
    /// let data = mil_toolkit::data::load("musk1")?;
    /// let model = Pipeline::new(ClassifierGrid::auto(1)).vote(3).fit(&data)?;
    /// assert_eq!(model.voters.len(), 2); // beside the best-ranked, `model.classifier`
    /// assert_eq!(model.chosen.unwrap().voters.len(), 2);
    /// # Ok::<(), mil_toolkit::Error>(())
    /// ```
    #[must_use]
    pub fn vote(mut self, k: usize) -> Self {
        self.vote = k;
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
        if self.inner_repeats < 1 {
            return Err(Error::parameter(
                "inner_repeats",
                self.inner_repeats,
                "must be at least 1",
            ));
        }
        self.check_vote()?;
        self.projection_candidates()?;
        for c in self.classifier.candidates() {
            c.check()?;
            if self.projection.is_some() {
                c.check_after_projection()?;
            }
        }
        Ok(())
    }

    /// Checks [`Pipeline::vote`]: at least 1, at most the classifier candidates, and
    /// above 1 only without a projection or a threshold.
    fn check_vote(&self) -> Result<()> {
        let (k, n) = (self.vote, self.classifier.candidates().len());
        let problem = if k == 0 {
            "must be at least 1".to_string()
        } else if k == 1 {
            return Ok(());
        } else if k > n {
            format!("must be at most the number of classifier candidates ({n})")
        } else if self.projection.is_some() {
            "a vote takes classifiers on the raw features: leave out the projection".into()
        } else if self.threshold != Threshold::None {
            "a vote decides by its majority: leave out the threshold".into()
        } else {
            return Ok(());
        };
        Err(Error::parameter("vote", k, problem))
    }

    /// The stratified inner test folds of a fit on the bags `train`, seeded by `seed`:
    /// [`Pipeline::inner_folds`] of them, or one per bag of the smallest class among
    /// `train` when that class has fewer (more folds would leave some inner test folds
    /// without a bag of it). An error when the folds are more than the training bags, or
    /// when a class has fewer than two of them.
    ///
    /// ```
    /// use mil_toolkit::pipeline::{ClassifierGrid, Pipeline};
    ///
    /// let labels = [0, 0, 0, 0, 0, 0, 1, 1, 1];
    /// let all: Vec<usize> = (0..labels.len()).collect();
    /// let pipeline = Pipeline::new(ClassifierGrid::auto(1)).inner_folds(5);
    /// assert_eq!(pipeline.inner_cv(&labels, &all, 1)?.len(), 3);
    /// assert!(pipeline.inner_cv(&labels, &all[..7], 1).is_err());
    /// assert!(pipeline.inner_cv(&labels, &all[4..8], 1).is_err());
    /// # Ok::<(), mil_toolkit::Error>(())
    /// ```
    pub fn inner_cv(
        &self,
        labels: &[usize],
        train: &[usize],
        seed: u64,
    ) -> Result<Vec<Vec<usize>>> {
        if self.inner_folds > train.len() {
            return Err(Error::parameter(
                "inner_folds",
                self.inner_folds,
                format!(
                    "must be at most the number of training bags ({})",
                    train.len()
                ),
            ));
        }
        let n_classes = train.iter().map(|&b| labels[b] + 1).max().unwrap_or(0);
        let smallest = (0..n_classes)
            .map(|c| train.iter().filter(|&&b| labels[b] == c).count())
            .filter(|&n| n > 0)
            .min()
            .unwrap_or(0);
        if smallest < 2 {
            return Err(Error::parameter(
                "inner_folds",
                self.inner_folds,
                format!(
                    "an inner CV needs at least two bags of each class among the training bags; the smallest class has {smallest}"
                ),
            ));
        }
        inner_folds(labels, train, self.inner_folds.min(smallest), seed)
    }

    /// The [`Pipeline::inner_repeats`] fold assignments of the inner CV that ranks the
    /// candidates of a fit on `train` under `seed`: first [`Pipeline::inner_cv`]'s, then
    /// one per further repetition r seeded by [`Stream::InnerRepeat`]`.seed(seed, r)`.
    pub(crate) fn inner_assignments(
        &self,
        labels: &[usize],
        train: &[usize],
        seed: u64,
    ) -> Result<Vec<Vec<Vec<usize>>>> {
        (0..self.inner_repeats)
            .map(|r| {
                let seed = match r {
                    0 => seed,
                    r => Stream::InnerRepeat.seed(seed, r as u64),
                };
                self.inner_cv(labels, train, seed)
            })
            .collect()
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
            // The labels only matter to `balanced`; the count is checked here.
            c.class_weight().resolve(&[], k)?;
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
                let folds = self.inner_cv(labels, train, seed)?;
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

    /// What to report about a candidate: the classifier and its settings when the grid
    /// holds several, the projection's (dim, α) when there is a projection and the ridge
    /// when the classifier has one; nothing when there is neither a projection nor a
    /// choice.
    pub fn chosen(&self, c: &Candidate) -> Option<Chosen> {
        if c.projection.is_none() && self.n_candidates() == 1 {
            return None;
        }
        Some(Chosen {
            classifier: self
                .classifier
                .reports_classifier()
                .then(|| c.classifier.to_string()),
            dim: c.projection.map(|p| p.dim()),
            alpha: c.projection.and_then(|p| p.alpha()),
            ridge: c.classifier.ridge(),
            voters: Vec::new(),
            metric: None,
            inner: Vec::new(),
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
        self.fit_candidate_reporting(candidate, data, train, &crate::progress::Silent)
    }

    /// [`Pipeline::fit_candidate`], reporting the classifier's own stages (the attention
    /// network's epochs) to `progress`.
    fn fit_candidate_reporting(
        &self,
        candidate: &Candidate,
        data: &Dataset,
        train: &[usize],
        progress: &dyn Progress,
    ) -> Result<(Fitted, Option<Dataset>)> {
        match Self::fit_projection(candidate.projection.as_ref(), data, train)? {
            None => Ok((
                Fitted {
                    projection: None,
                    classifier: candidate
                        .classifier
                        .fit_reporting(data.select(train), progress)?,
                },
                None,
            )),
            Some((p, projected)) => {
                let classifier = candidate
                    .classifier
                    .after_projection()
                    .fit_reporting(projected.select(train), progress)?;
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
}

impl Pipeline {
    /// Fits the pipeline on the training bags, choosing among a grid's candidates by
    /// inner CV (seeded by [`Pipeline::seed`]); the chosen point is the model's
    /// [`HostModel::chosen`].
    pub fn fit<'a>(&self, train: impl Into<Bags<'a>>) -> Result<HostModel> {
        self.fit_reporting(train, &crate::progress::Silent)
    }

    /// [`Pipeline::fit`], reporting the final fit's own stages (the attention network's
    /// epochs) to `progress`.
    pub fn fit_reporting<'a>(
        &self,
        train: impl Into<Bags<'a>>,
        progress: &dyn Progress,
    ) -> Result<HostModel> {
        let train = train.into();
        Ok(self
            .fit_candidate_model(train.dataset(), &train.indices(), progress)?
            .0)
    }

    /// [`Pipeline::fit`] on the bags `train` of `data`, also returning the candidate.
    pub(crate) fn fit_candidate_model(
        &self,
        data: &Dataset,
        train: &[usize],
        progress: &dyn Progress,
    ) -> Result<(HostModel, Candidate)> {
        let seed = self.seed;
        self.check()?;
        self.check_data(data)?;
        // Work shared across the inner folds, when the fit covers every bag of `data`
        // (on a subset it would cost more than it saves).
        let shared = if self.n_candidates() > 1 && train.len() == data.n_bags() {
            self.shared_scorers(data, &crate::progress::Silent)?
        } else {
            Vec::new()
        };
        let ranked = self.rank(data, train, seed, &shared)?;
        drop(shared);
        let members = &ranked[..self.vote.min(ranked.len())];
        let candidate = members[0].candidate;
        let (fitted, _) = self.fit_candidate_reporting(&candidate, data, train, progress)?;
        let voters = members[1..]
            .iter()
            .map(|r| Ok(self.fit_candidate(&r.candidate, data, train)?.0.classifier))
            .collect::<Result<Vec<_>>>()?;
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
        model.voters = voters;
        model.chosen = self.chosen_among(&ranked);
        Ok((model, candidate))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classifier::citation_knn::{CitationKnn, Scaling};
    use crate::classifier::milr::Milr;
    use crate::classifier::ClassifierParams;
    use crate::data;
    use crate::eval::folds::derive_seed;
    use crate::eval::{auroc, stratified_folds};

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
            inner_repeats: 1,
            select: Selection::Accuracy,
            threshold: Threshold::None,
            threshold_metric: ThresholdMetric::default(),
            seed: DEFAULT_SEED,
            vote: 1,
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
            inner_repeats: 1,
            select,
            threshold: Threshold::None,
            threshold_metric: ThresholdMetric::default(),
            seed: DEFAULT_SEED,
            vote: 1,
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
                            let model = milr(ridge).fit(d.select(complement(&train, v))).unwrap();
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
        let got: Vec<f64> = r
            .chosen
            .iter()
            .map(|c| c.as_ref().unwrap().ridge.unwrap())
            .collect();
        assert_eq!(got, chosen);
        assert!(r.chosen.iter().all(|c| c.as_ref().unwrap().dim.is_none()));
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
            inner_repeats: 1,
            select: Selection::Accuracy,
            threshold: Threshold::None,
            threshold_metric: ThresholdMetric::default(),
            seed: DEFAULT_SEED,
            vote: 1,
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
        assert!(one.chosen.iter().all(|c| c.as_ref().unwrap().dim.is_some()));
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
            inner_repeats: 1,
            select: Selection::Accuracy,
            threshold: Threshold::None,
            threshold_metric: ThresholdMetric::default(),
            seed: DEFAULT_SEED,
            vote: 1,
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

    /// A chosen classifier that names its ridge is reported with it once; a grid of
    /// ridges alone is reported by the ridge.
    #[test]
    fn a_chosen_classifier_states_its_ridge_once() {
        use crate::classifier::simple_mi::SimpleMi;
        let d = data::load("musk1").unwrap();
        let grid = ClassifierGrid::of(vec![milr(1.0), SimpleMi::default().into()]).unwrap();
        let chosen = Pipeline::new(grid).fit(&d).unwrap().chosen.unwrap();
        let shown = chosen.to_string();
        assert_eq!(Some(shown.as_str()), chosen.classifier.as_deref());
        assert_eq!(shown.matches("ridge").count(), 1, "{shown}");
        let ridges = ClassifierGrid::of(vec![milr(1.0), milr(10.0)]).unwrap();
        let chosen = Pipeline::new(ridges).fit(&d).unwrap().chosen.unwrap();
        assert_eq!(chosen.classifier, None);
        assert!(chosen.to_string().starts_with("ridge "), "{chosen}");
    }

    /// A vote of three predicts the majority of its members, each fitted alone on the
    /// training bags, in the inner CV's ranking; it survives a save and load; what needs a
    /// single classifier is refused.
    #[test]
    fn a_vote_predicts_the_majority_of_its_members() {
        use crate::classifier::simple_mi::SimpleMi;
        let d = data::load("musk1").unwrap();
        let train: Vec<usize> = (0..d.n_bags()).step_by(2).collect();
        let test: Vec<usize> = (1..d.n_bags()).step_by(2).collect();
        let grid = ClassifierGrid::of(vec![
            CitationKnn::default().into(),
            Milr::default().into(),
            SimpleMi::default().into(),
        ])
        .unwrap();
        let pipeline = Pipeline::new(grid).vote(3);
        let model = pipeline.fit(d.select(&train)).unwrap();
        assert_eq!(model.voters.len(), 2);
        let ranked = pipeline.rank(&d, &train, pipeline.seed, &[]).unwrap();
        let labels: Vec<Vec<usize>> = ranked
            .iter()
            .map(|r| {
                let alone = r.candidate.classifier.fit(d.select(&train)).unwrap();
                alone.scores(d.select(&test)).unwrap().labels()
            })
            .collect();
        let predicted = model.predict(d.select(&test)).unwrap();
        let mut disagreements = 0;
        for (i, &p) in predicted.iter().enumerate() {
            let positive = labels.iter().filter(|l| l[i] == 1).count();
            assert_eq!(p, usize::from(positive >= 2), "bag {}", test[i]);
            disagreements += usize::from(labels.iter().any(|l| l[i] != labels[0][i]));
        }
        assert!(
            disagreements > 0,
            "the members never disagree: the test shows nothing"
        );
        let chosen = model.chosen.clone().unwrap();
        assert_eq!(chosen.voters.len(), 2);
        assert_eq!(
            chosen.classifier,
            Some(ranked[0].candidate.classifier.to_string())
        );
        // The report's inner scores are the ranking's, best first.
        let named: Vec<String> = ranked
            .iter()
            .map(|r| r.candidate.classifier.to_string())
            .collect();
        let reported: Vec<String> = chosen.inner.iter().map(|s| s.candidate.clone()).collect();
        assert_eq!(reported, named);
        assert!(chosen
            .inner
            .windows(2)
            .all(|w| w[0].score.unwrap() >= w[1].score.unwrap()));
        assert_eq!(chosen.metric.as_deref(), Some("accuracy"));

        let path = std::env::temp_dir().join(format!("mil-vote-{}.json", std::process::id()));
        model.save(&path).unwrap();
        let loaded = HostModel::load(&path).unwrap();
        std::fs::remove_file(&path).ok();
        assert_eq!(loaded, model);
        assert_eq!(loaded.predict(d.select(&test)).unwrap(), predicted);
        assert!(matches!(
            model.explain(d.select(&test)),
            Err(Error::Unsupported(_))
        ));
        assert!(matches!(
            model.predict_instances(d.select(&test)),
            Err(Error::Unsupported(_))
        ));
        assert!(matches!(
            model.export(d.select(&train), crate::export::Export::default()),
            Err(Error::Unsupported(_))
        ));
    }

    #[test]
    fn a_vote_needs_candidates_and_raw_features_and_no_threshold() {
        let grid = || {
            ClassifierGrid::of(vec![Milr::default().into(), CitationKnn::default().into()]).unwrap()
        };
        assert!(Pipeline::new(grid()).vote(2).check().is_ok());
        for (pipeline, why) in [
            (Pipeline::new(grid()).vote(0), "at least 1"),
            (Pipeline::new(grid()).vote(3), "at most the number"),
            (
                Pipeline::new(grid())
                    .vote(2)
                    .projection(crate::projection::mida::Bmida::default().dim(2)),
                "projection",
            ),
            (
                Pipeline::new(grid()).vote(2).threshold(Threshold::Auto),
                "threshold",
            ),
        ] {
            let err = pipeline.check().unwrap_err().to_string();
            assert!(err.contains("vote") && err.contains(why), "{err}");
        }
    }
}
