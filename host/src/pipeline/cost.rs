//! The CPU time of choosing among a grid's classifiers, estimated before the work, and
//! the grid trimmed to a budget.
//!
//! Each candidate's cost is measured, not modelled: the box kernels' Gram matrices by
//! timing a random sample of their entries ([`crate::kernel::boxes::box_gram_cost`]),
//! every other classifier by one pilot fit on an inner training split of the first
//! outer fold, scored on its inner test split — the unit of work the inner CV repeats.
//! The pilot's CPU time is then multiplied by the number of such fits the run makes:
//! `outer fits × inner folds × inner repeats`, plus each outer fold's final fit (the chosen candidate's,
//! on `1/(1 − 1/inner folds)` times as many bags, counted as quadratic in the bags and
//! shared evenly among the candidates, since which one wins is not known beforehand).
//! A classifier whose work cross-validation shares over every fold (Citation-kNN's bag
//! distances without scaling, a set kernel's Gram matrix without pre-processing) costs
//! its full matrix once: the pilot's time scaled by the ratio of the entries. The pilot
//! adds about one fit in `outer fits × inner folds × inner repeats` to the run (a fit quicker than
//! 0.05 CPU s is repeated until the clock measures it: at most 50 times).

use super::Pipeline;
use crate::classifier::citation_knn::Scaling;
use crate::classifier::{BagModel, ClassifierParams};
use crate::data::Dataset;
use crate::error::Result;
use crate::eval::folds::complement;
use crate::params::{thread_cpu_seconds, ThreadTimes};

/// A pilot fit quicker than this (CPU seconds) is repeated, up to
/// [`PILOT_MOST_REPEATS`] times, so that the CPU clock's tick does not dominate it.
const PILOT_LEAST_SECONDS: f64 = 0.05;
const PILOT_MOST_REPEATS: u32 = 50;

/// What one candidate of a grid is estimated to cost, in CPU seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CandidateCost {
    /// The candidate.
    pub classifier: ClassifierParams,
    /// Its estimated CPU seconds over the whole run, with its share of work it has in
    /// common with others (a Gram matrix several candidates are scored from).
    pub cpu_seconds: f64,
    /// The group of candidates it shares that work with, numbered in the grid's order
    /// (a group of one when it shares none): a group's work is saved only when all its
    /// members are left out.
    pub group: usize,
}

/// The CPU time of a grid's inner selection over a run, per candidate.
#[derive(Debug, Clone, PartialEq)]
pub struct CpuEstimate {
    /// Every candidate, in the grid's order.
    pub candidates: Vec<CandidateCost>,
    /// CPU seconds spent measuring (pilot fits and sampled Gram entries).
    pub measuring_seconds: f64,
}

impl CpuEstimate {
    /// The estimated CPU seconds of the whole run.
    pub fn cpu_seconds(&self) -> f64 {
        self.candidates.iter().map(|c| c.cpu_seconds).sum()
    }

    /// The candidates whose estimate fits `limit` CPU seconds: the dearest group left
    /// out first until the rest fit (the grid's order kept), and the groups left out;
    /// `None` when not even the cheapest group fits.
    pub fn within(&self, limit: f64) -> Option<(Vec<ClassifierParams>, Vec<CandidateCost>)> {
        let group_cost = |g: usize| -> f64 {
            self.candidates
                .iter()
                .filter(|c| c.group == g)
                .map(|c| c.cpu_seconds)
                .sum()
        };
        let mut groups: Vec<usize> = self.candidates.iter().map(|c| c.group).collect();
        groups.dedup();
        groups.sort_unstable();
        groups.dedup();
        let mut left_out = Vec::new();
        let mut total = self.cpu_seconds();
        while total > limit {
            // The dearest group still in (the later one on ties: cheap families come first).
            let dearest = groups
                .iter()
                .copied()
                .filter(|g| !left_out.contains(g))
                .max_by(|&a, &b| group_cost(a).total_cmp(&group_cost(b)).then(a.cmp(&b)))?;
            left_out.push(dearest);
            total -= group_cost(dearest);
            if left_out.len() == groups.len() {
                return None;
            }
        }
        let (dropped, kept): (Vec<CandidateCost>, Vec<CandidateCost>) = self
            .candidates
            .iter()
            .partition(|c| left_out.contains(&c.group));
        Some((kept.iter().map(|c| c.classifier).collect(), dropped))
    }
}

impl Pipeline {
    /// Estimates the CPU time of the inner selection among the classifier candidates
    /// over a run of `outer_fits` fits on training sets like `outer_train` (the bags of
    /// `data` of the first outer fold; all of them for a single fit), by measuring each
    /// candidate (module documentation). `None` when there is nothing to choose, with a
    /// projection (the classifiers then see other features), or when the training bags
    /// are too few for the inner folds (the run itself says so).
    pub fn cpu_estimate(
        &self,
        data: &Dataset,
        outer_train: &[usize],
        outer_fits: usize,
    ) -> Result<Option<CpuEstimate>> {
        let candidates = self.classifier.candidates();
        if candidates.len() < 2 || self.projection.is_some() {
            return Ok(None);
        }
        let labels = data.require_labels(2)?;
        let Ok(folds) = self.inner_cv(labels, outer_train, self.seed) else {
            return Ok(None);
        };
        let test = &folds[0];
        let smallest_train = folds.iter().map(|t| outer_train.len() - t.len()).min();
        let smallest_train = smallest_train.unwrap_or(0);
        let train = complement(outer_train, test);
        let (n, n_outer) = (data.n_bags() as f64, outer_train.len() as f64);
        let (m_train, m_test) = (train.len() as f64, test.len() as f64);
        // Inner fits per outer fit: every fold of every fold assignment.
        let k_inner = (folds.len() * self.inner_repeats) as f64;
        let fits = outer_fits as f64;
        // A full matrix over every bag against the pilot's (its training bags among
        // themselves and against its test bags).
        let full_over_pilot = n * (n + 1.0) / (m_train * (m_train + 1.0) + 2.0 * m_train * m_test);
        // Box-kernel Gram matrices in full-data matrices per run (fold sizes squared).
        let box_fits = fits * ((n_outer / n).powi(2) + k_inner * (m_train / n).powi(2));
        // Each outer fit's final fits (one, or the vote's members), spread over the candidates.
        let finals = self.vote.min(candidates.len()) as f64;
        let final_share = fits * finals * (n_outer / m_train).powi(2) / candidates.len() as f64;
        let (start, start_of_thread) = (ThreadTimes::now(), thread_cpu_seconds());
        let mut keys: Vec<ClassifierParams> = Vec::new();
        let mut out = Vec::with_capacity(candidates.len());
        for c in candidates {
            let shared = shared_work(c);
            let seen = shared.and_then(|k| keys.iter().position(|&s| s == k));
            if let Some(group) = seen {
                // Its matrix is counted with the first candidate of its group; its own
                // solves are cheap beside it.
                out.push(CandidateCost {
                    classifier: *c,
                    cpu_seconds: 0.0,
                    group,
                });
                continue;
            }
            keys.push(shared.unwrap_or(*c));
            let group = keys.len() - 1;
            let seconds = if c.binary_only() && data.n_classes() != 2
                || c.check_fit(smallest_train).is_err()
            {
                // The inner CV passes over it ([`Pipeline::choose`]).
                0.0
            } else if let Some(cost) = box_cost(c, data)? {
                let times = match c {
                    ClassifierParams::Svm(s) if s.shares_gram() => 1.0,
                    _ => box_fits,
                };
                cost * times
            } else {
                // The clock advances by the scheduler's tick (4 ms here): a fit quicker
                // than a few ticks is repeated until the time is measurable.
                let (t0, t0_of_thread) = (ThreadTimes::now(), thread_cpu_seconds());
                let mut repeats = 0;
                let pilot = loop {
                    c.fit(data.select(&train))?.scores(data.select(test))?;
                    repeats += 1;
                    let spent = t0.since(t0_of_thread);
                    if spent >= PILOT_LEAST_SECONDS || repeats == PILOT_MOST_REPEATS {
                        break spent / f64::from(repeats);
                    }
                };
                match shared {
                    Some(_) => pilot * full_over_pilot,
                    None => pilot * (fits * k_inner + final_share),
                }
            };
            out.push(CandidateCost {
                classifier: *c,
                cpu_seconds: seconds,
                group,
            });
        }
        Ok(Some(CpuEstimate {
            candidates: out,
            measuring_seconds: start.since(start_of_thread),
        }))
    }
}

/// The work a candidate has in common with the others of its group when
/// cross-validation shares it over every fold ([`ClassifierParams::fold_scorer`]): the
/// candidate with the settings applied after that work reset; `None` when each fit
/// does its own.
fn shared_work(c: &ClassifierParams) -> Option<ClassifierParams> {
    match *c {
        ClassifierParams::Svm(s) if s.shares_gram() => {
            Some(ClassifierParams::Svm(s.settings(Default::default())))
        }
        ClassifierParams::CitationKnn(k) if k.scaling.resolve(false) == Scaling::None => {
            Some(ClassifierParams::CitationKnn(
                k.references(1).citers(0).class_weight(Default::default()),
            ))
        }
        _ => None,
    }
}

/// A box-kernel SVM's Gram matrix over every bag of `data`, in CPU seconds from a
/// sample of its entries; `None` for any other classifier.
fn box_cost(c: &ClassifierParams, data: &Dataset) -> Result<Option<f64>> {
    match c {
        ClassifierParams::Svm(s) => Ok(s.gram_cost(data)?.map(|g| g.cpu_seconds)),
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classifier::milr::{Milr, Pooling};
    use crate::classifier::simple_mi::SimpleMi;
    use crate::pipeline::ClassifierGrid;

    fn cost(seconds: f64, group: usize) -> CandidateCost {
        CandidateCost {
            classifier: SimpleMi::default().into(),
            cpu_seconds: seconds,
            group,
        }
    }

    /// Trimming leaves out the dearest groups first, a shared group as a whole, and
    /// keeps the order of what stays; nothing fits below the cheapest group.
    #[test]
    fn trimming_leaves_out_the_dearest_groups_first() {
        let e = CpuEstimate {
            candidates: vec![cost(1.0, 0), cost(5.0, 1), cost(0.0, 1), cost(3.0, 3)],
            measuring_seconds: 0.0,
        };
        assert_eq!(e.cpu_seconds(), 9.0);
        let (kept, dropped) = e.within(9.0).unwrap();
        assert_eq!((kept.len(), dropped.len()), (4, 0));
        let (kept, dropped) = e.within(4.0).unwrap();
        assert_eq!(kept.len(), 2);
        assert_eq!(dropped.iter().map(|c| c.group).collect::<Vec<_>>(), [1, 1]);
        let (_, dropped) = e.within(1.5).unwrap();
        assert_eq!(dropped.len(), 3);
        assert!(e.within(0.5).is_none());
    }

    /// Every candidate of a grid is measured; a single classifier is not.
    #[test]
    fn every_candidate_of_a_grid_is_measured() {
        let data = crate::data::load("musk1").unwrap();
        let grid = ClassifierGrid::of(vec![
            SimpleMi::default().into(),
            Milr::default().pooling(Pooling::Max).into(),
        ])
        .unwrap();
        let p = Pipeline::new(grid);
        let all: Vec<usize> = (0..data.n_bags()).collect();
        let one = p.cpu_estimate(&data, &all, 1).unwrap().unwrap();
        assert_eq!(one.candidates.len(), 2);
        assert!(
            one.candidates.iter().all(|c| c.cpu_seconds > 0.0),
            "{one:?}"
        );
        assert!(one.measuring_seconds > 0.0);
        // One candidate alone: nothing to choose, nothing estimated.
        let single = Pipeline::new(SimpleMi::default());
        assert!(single.cpu_estimate(&data, &all, 1).unwrap().is_none());
    }
}
