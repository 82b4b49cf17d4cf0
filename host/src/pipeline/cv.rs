//! The outer cross-validation of a pipeline: fold assignments, the (repetition, fold)
//! jobs a shard runs, the checks of outcomes read back from parts, and the report.

use std::collections::HashMap;
use std::path::Path;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::classifier::{BagScores, ClassifierParams};
use crate::data::Bags;
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::eval::folds::complement;
use crate::eval::seeds::Stream;
use crate::eval::{accuracy, auroc, confusion_matrix, stratified_folds, Summary};
use crate::progress::{Budget, Progress};

use super::{Chosen, Pipeline};

/// The seeds of one outer fold's randomised steps, each drawn from its own stream keyed
/// by (repetition seed, fold), so no two purposes or folds share one at any fold count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FoldSeeds {
    /// The inner CV that chooses among a grid's candidates.
    pub inner_cv: u64,
    /// The inner CV that chooses a decision threshold.
    pub threshold: u64,
}

impl FoldSeeds {
    /// The seeds of fold `fold` of a repetition seeded `repetition_seed`.
    pub fn of(repetition_seed: u64, fold: usize) -> FoldSeeds {
        FoldSeeds {
            inner_cv: Stream::InnerCv.seed(repetition_seed, fold as u64),
            threshold: Stream::Threshold.seed(repetition_seed, fold as u64),
        }
    }
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
    /// Per fold (all repetitions, in order), the seeds its job drew from.
    pub seeds: Vec<FoldSeeds>,
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
    /// The seeds the job drew from (checked against its fold when parts are merged;
    /// absent from parts written before they were recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seeds: Option<FoldSeeds>,
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
    data.require_labels(2)?;
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
    // The classifiers' fast paths on raw features: work shared by every fold and
    // repetition (bag distances, Gram matrices) computed once per candidate.
    let shared = pipeline.shared_scorers(data, progress)?;
    // A fold is one step, or its final fit's epochs where the classifier reports them
    // (the attention network), so that the bar moves within a fold.
    let steps = pipeline
        .classifier
        .candidates()
        .iter()
        .map(ClassifierParams::fit_steps)
        .max()
        .unwrap_or(0)
        .max(1);
    progress.start("cross-validation", mine.len() as u64 * steps);
    let outcomes = mine
        .par_iter()
        .map(|&(repeat, f)| {
            crate::cancel::checkpoint();
            let (seed, test_sets) = &assignments[repeat];
            let test = &test_sets[f];
            let mut sorted = test.clone();
            sorted.sort_unstable();
            let train = complement(&all, &sorted);
            let seeds = FoldSeeds::of(*seed, f);
            let share = Budget::new(progress, steps);
            let out = pipeline
                .rank(data, &train, seeds.inner_cv, &shared)
                .and_then(|ranked| {
                    let (c, index) = (ranked[0].candidate, ranked[0].index);
                    let chosen = pipeline.chosen_among(&ranked);
                    // A vote: every member scored as a lone choice would be (no threshold).
                    let members = &ranked[..pipeline.vote.min(ranked.len())];
                    if members.len() > 1 {
                        let scores = members
                            .iter()
                            .map(|m| match shared.get(m.index).and_then(Option::as_ref) {
                                Some(score) => score(&train, test),
                                None => {
                                    let (fitted, projected) =
                                        pipeline.fit_candidate(&m.candidate, data, &train)?;
                                    fitted.scores(data, projected.as_ref(), test)
                                }
                            })
                            .collect::<Result<Vec<_>>>()?;
                        return Ok((BagScores::vote(&scores), chosen, None));
                    }
                    if let Some(score) = shared.get(index).and_then(Option::as_ref) {
                        let t = pipeline.decide_threshold(
                            data,
                            &train,
                            seeds.threshold,
                            score.as_ref(),
                        )?;
                        return Ok((score(&train, test)?, chosen, t));
                    }
                    let (fitted, projected) =
                        pipeline.fit_candidate_reporting(&c, data, &train, &share)?;
                    let scores = fitted.scores(data, projected.as_ref(), test)?;
                    let t =
                        pipeline.decide_threshold(data, &train, seeds.threshold, &|tr, te| {
                            let (f, projected) = pipeline.fit_candidate(&c, data, tr)?;
                            f.scores(data, projected.as_ref(), te)
                        })?;
                    Ok((scores, chosen, t))
                });
            share.close();
            out.map(|(scores, chosen, threshold)| FoldOutcome {
                repeat,
                fold: f,
                scores: scores.with_threshold(threshold),
                chosen,
                threshold,
                seeds: Some(seeds),
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
        let seed = assignments[o.repeat].0;
        if o.seeds.is_some_and(|s| s != FoldSeeds::of(seed, o.fold)) {
            return Err(format!(
                "outcomes: repetition {}, fold {}: computed with other seeds than its fold's",
                o.repeat, o.fold
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
        seeds: Vec::new(),
        predictions: Vec::new(),
    };
    let mut aurocs = Vec::new();
    let (mut hits, mut total) = (0usize, 0usize);
    for (repeat, (seed, test_sets)) in assignments.iter().enumerate() {
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
            report.chosen.push(chosen.clone());
            report.thresholds.push(outcome.threshold);
            let drawn = outcome.seeds.unwrap_or_else(|| FoldSeeds::of(*seed, f));
            report.seeds.push(drawn);
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
    use crate::data;

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
            let FoldSeeds {
                inner_cv,
                threshold,
            } = FoldSeeds::of(*rep_seed, f);
            assert!(seen.insert(inner_cv), "fold {f}: inner seed seen before");
            assert!(
                seen.insert(threshold),
                "fold {f}: threshold seed seen before"
            );
        }
    }
}
