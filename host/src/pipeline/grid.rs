//! A pipeline's candidates — projection settings and classifier settings — and the inner
//! cross-validation that chooses among them on the training bags of a fit.

use crate::classifier::{BagModel, ClassifierKind, ClassifierParams, FoldScorer, GramCache};
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::eval::auroc;
use crate::eval::folds::complement;
use crate::progress::Progress;
use crate::projection::ProjectionParams;
use mil_core::keyword::Keyword;

use super::Pipeline;
pub use crate::model::{Chosen, InnerScore};

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

/// The classifier part of a pipeline with its candidates, among which an inner CV on the
/// training bags of each fit chooses: one classifier, a classifier with a list of
/// ridges, any list of classifiers and settings ([`ClassifierGrid::of`]), a classifier's
/// default grid ([`ClassifierGrid::tuned`]) or the `auto` classifier's
/// ([`ClassifierGrid::auto`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ClassifierGrid {
    /// The candidates in the order given (never empty).
    candidates: Vec<ClassifierParams>,
}

impl ClassifierGrid {
    /// `spec` with its ridge replaced by each of `ridges` in turn (an empty list keeps
    /// the spec's own ridge). A ridge list is for the classifiers with a ridge
    /// ([`ClassifierParams::ridge`]): with another classifier a single value is ignored
    /// and a longer list is an error. Every candidate with a ridge is validated here,
    /// before any projection is fitted.
    pub fn new(spec: ClassifierParams, ridges: &[f64]) -> Result<Self> {
        let has_ridge = spec.ridge().is_some();
        let candidates = match ridges {
            [_, ..] if has_ridge => ridges
                .iter()
                .map(|&ridge| {
                    let c = spec.with_ridge(ridge).expect("a classifier with a ridge");
                    c.check().map(|()| c)
                })
                .collect::<Result<Vec<_>>>()?,
            _ if has_ridge => {
                spec.check()?;
                vec![spec]
            }
            [_, _, ..] => {
                let list: Vec<String> = ridges.iter().map(f64::to_string).collect();
                let with_ridge: Vec<&str> = ClassifierKind::ALL
                    .iter()
                    .filter(|&&k| ClassifierParams::new(k).ridge().is_some())
                    .map(|k| k.name())
                    .collect();
                return Err(Error::parameter(
                    "ridge",
                    list.join(","),
                    format!(
                        "a list of ridges is chosen by inner CV for {} only",
                        with_ridge.join(", ")
                    ),
                ));
            }
            _ => vec![spec],
        };
        Ok(ClassifierGrid { candidates })
    }

    /// Any candidates, tried in the order given (ties go to the first); each is checked
    /// here, before any work.
    ///
    /// ```
    /// use mil_toolkit::classifier::milr::{Milr, Pooling};
    /// use mil_toolkit::pipeline::{ClassifierGrid, Pipeline};
    ///
    /// let data = mil_toolkit::data::load("musk1")?;
    /// let grid = ClassifierGrid::of(vec![
    ///     Milr::default().pooling(Pooling::Mean).into(),
    ///     Milr::default().pooling(Pooling::Max).into(),
    /// ])?;
    /// let model = Pipeline::new(grid).fit(&data)?;
    /// // The inner CV's choice is stored in the model.
    /// assert!(model.chosen.unwrap().classifier.unwrap().contains("pooling"));
    /// # Ok::<(), mil_toolkit::Error>(())
    /// ```
    pub fn of(candidates: Vec<ClassifierParams>) -> Result<Self> {
        if candidates.is_empty() {
            return Err(Error::parameter(
                "classifier",
                "[]",
                "a grid needs at least one candidate",
            ));
        }
        for c in &candidates {
            c.check()?;
        }
        Ok(ClassifierGrid { candidates })
    }

    /// `spec`'s own default grid ([`ClassifierParams::default_grid`]), `spec` first.
    pub fn tuned(spec: impl Into<ClassifierParams>) -> Result<Self> {
        Self::of(spec.into().default_grid())
    }

    /// The `auto` classifier: SimpleMI, miVLAD, miFV, the SVM with the box kernels k∧
    /// and k∧∨, with the NSK and with the MI kernel (MISMO's setting), Citation-kNN, MILR,
    /// mi-Graph, the attention network (where this build trains it:
    /// [`attention::TRAINABLE`]) and MILES, each at its defaults, cheap families first,
    /// every randomised step seeded by `seed` ([`ClassifierGrid::tuned_all`] adds each
    /// family's default grid). Each takes any number of classes (the inner CV passes
    /// over a two-class family, [`ClassifierParams::binary_only`], on more); on a few
    /// bags it passes over those that cannot fit the inner training bags
    /// ([`ClassifierParams::check_fit`]). mi-SVM, MI-SVM,
    /// MI-Wrapper, sMIL, sbMIL, DD and EM-DD are left out: they cost one to two orders of
    /// magnitude more CPU or trail the others on every shipped benchmark (the results
    /// table).
    ///
    /// [`attention::TRAINABLE`]: crate::classifier::attention::TRAINABLE
    ///
    /// ```
    /// use mil_toolkit::pipeline::{ClassifierGrid, Pipeline, Selection};
    ///
    /// let data = mil_toolkit::data::load("musk1")?;
    /// let auto = Pipeline::new(ClassifierGrid::auto(1)).select(Selection::Auroc);
    /// let model = auto.fit(&data)?;
    /// println!("chosen: {}", model.chosen.unwrap());
    /// # Ok::<(), mil_toolkit::Error>(())
    /// ```
    pub fn auto(seed: u64) -> Self {
        use crate::classifier::{attention, citation_knn, mi_graph, mi_vlad, miles, milr};
        use crate::classifier::{simple_mi, svm};
        use mil_core::box_kernel::BoxKernel;
        let boxes = |k| {
            svm::SetKernelSvm::default()
                .kernel(svm::SetKernel::boxes(k))
                .seed(seed)
        };
        let mut candidates: Vec<ClassifierParams> = vec![
            simple_mi::SimpleMi::default().into(),
            mi_vlad::MiVlad::vlad().seed(seed).into(),
            mi_vlad::MiVlad::fisher().seed(seed).into(),
            boxes(BoxKernel::And).into(),
            boxes(BoxKernel::AndOr).into(),
            svm::SetKernelSvm::default()
                .kernel(svm::SetKernel::Nsk { gamma: None })
                .seed(seed)
                .into(),
            svm::SetKernelSvm::mismo().seed(seed).into(),
            citation_knn::CitationKnn::default().into(),
            milr::Milr::default().into(),
            mi_graph::MiGraph::default().into(),
        ];
        if attention::TRAINABLE {
            candidates.push(attention::AttentionMil::default().seed(seed).into());
        }
        candidates.push(miles::Miles::default().seed(seed).into());
        ClassifierGrid { candidates }
    }

    /// Every candidate replaced by its default grid ([`ClassifierParams::default_grid`]),
    /// in order, without repeats.
    #[must_use]
    pub fn tuned_all(self) -> Self {
        let mut candidates: Vec<ClassifierParams> = Vec::new();
        for c in self
            .candidates
            .iter()
            .flat_map(ClassifierParams::default_grid)
        {
            if !candidates.contains(&c) {
                candidates.push(c);
            }
        }
        ClassifierGrid { candidates }
    }

    /// The same candidates with the class weights `w`.
    #[must_use]
    pub fn with_class_weight(mut self, w: crate::classifier::imbalance::ClassWeight) -> Self {
        for c in &mut self.candidates {
            *c = c.with_class_weight(w);
        }
        self
    }

    /// The memory and work that grow beyond the data when the grid is cross-validated
    /// on data of `shape`: the sum over the candidates whose work is held at once (the
    /// shared Gram matrices and distances of the inner CV), candidates
    /// that share one counted once; `None` when every candidate is linear in the data.
    pub fn footprint(
        &self,
        shape: crate::params::Shape,
    ) -> Option<(String, crate::params::Estimate)> {
        let mut counted: Vec<ClassifierParams> = Vec::new();
        let mut total: Option<(Vec<String>, crate::params::Estimate)> = None;
        for c in &self.candidates {
            // What decides the work: not the ridge, nor what is applied to a Gram matrix.
            let key = match c.with_ridge(0.0).unwrap_or(*c) {
                ClassifierParams::Svm(s) => ClassifierParams::Svm(s.settings(Default::default())),
                other => other,
            };
            if counted.contains(&key) {
                continue;
            }
            counted.push(key);
            if let Some((what, own)) = c.footprint(shape) {
                total = Some(match total {
                    None => (vec![what], own),
                    Some((mut whats, sum)) => {
                        if !whats.contains(&what) {
                            whats.push(what);
                        }
                        (whats, sum.and(own))
                    }
                });
            }
        }
        total.map(|(whats, e)| (whats.join(" and "), e))
    }

    /// Whether the candidates differ in more than the ridge, so that a report names the
    /// chosen classifier and its settings.
    pub fn reports_classifier(&self) -> bool {
        let without_ridge = |c: &ClassifierParams| c.with_ridge(0.0).unwrap_or(*c);
        let first = without_ridge(&self.candidates[0]);
        self.candidates.iter().any(|c| without_ridge(c) != first)
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

/// A candidate as the inner CV ranked it ([`Pipeline::rank`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Ranked {
    /// The candidate.
    pub candidate: Candidate,
    /// Its classifier's index in the classifier grid (for the work shared by folds).
    pub index: usize,
    /// Its inner score: pooled inner out-of-fold AUROC, or the share of inner test bags
    /// predicted right ([`Pipeline::select`]); `None` without an inner CV or where the
    /// score is undefined (NaN scores, one class among the inner test bags).
    pub score: Option<f64>,
}

/// One point of a pipeline's grid: a projection (if any) and a classifier.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Candidate {
    /// The projection, if the pipeline has one.
    pub projection: Option<ProjectionParams>,
    /// The classifier.
    pub classifier: ClassifierParams,
}

impl Pipeline {
    /// Ranks the candidates by inner-CV accuracy (or pooled AUROC, per
    /// [`Pipeline::select`]) on `train`, best first (equal merits in the grid's order:
    /// projection candidates outermost, then the classifier's in the order given),
    /// without those the inner CV passed over (all but the first, when it passed over
    /// all); with a single candidate, no inner CV is run. Within an inner fold each
    /// projection candidate is fitted once and every classifier candidate is fitted
    /// on its projected bags; without a projection, a classifier candidate with work
    /// shared across folds (`shared`, by candidate: [`Pipeline::shared_scorers`]) is
    /// scored from it. The loop is sequential, so the ranking does not depend on the
    /// number of threads. Each candidate comes with its classifier's index and its
    /// inner score.
    pub(super) fn rank(
        &self,
        data: &Dataset,
        train: &[usize],
        seed: u64,
        shared: &[Option<FoldScorer<'_>>],
    ) -> Result<Vec<Ranked>> {
        let projections = self.projection_candidates()?;
        let classifiers = self.classifier.candidates();
        if projections.len() * classifiers.len() == 1 {
            return Ok(vec![Ranked {
                candidate: Candidate {
                    projection: projections[0],
                    classifier: classifiers[0],
                },
                index: 0,
                score: None,
            }]);
        }
        let labels = data.require_labels(2)?;
        if self.select == Selection::Auroc && data.n_classes() != 2 {
            return Err(Error::parameter(
                "select",
                "auroc",
                "AUROC selection needs two classes; use accuracy",
            ));
        }
        let assignments = self.inner_assignments(labels, train, seed)?;
        // A candidate that cannot fit on the smallest inner training set (Citation-kNN
        // with more citers than bags) is passed over, as are the binary families on more
        // classes; the first such reason is the error when no candidate is left.
        let smallest = assignments
            .iter()
            .flatten()
            .map(|t| train.len() - t.len())
            .min();
        let unfit: Vec<Option<Error>> = classifiers
            .iter()
            .map(|c| c.check_fit(smallest.unwrap_or(0)).err())
            .collect();
        // Inner out-of-fold predictions per fold assignment and candidate, index
        // p · classifiers + c: (predicted label, positive score, true label) of every
        // inner test bag.
        let mut oof =
            vec![vec![Vec::new(); projections.len() * classifiers.len()]; assignments.len()];
        for (folds, oof) in assignments.iter().zip(&mut oof) {
            for (p, spec) in projections.iter().enumerate() {
                for test in folds {
                    let inner_train = complement(train, test);
                    let projected = Self::fit_projection(spec.as_ref(), data, &inner_train)?;
                    let on = projected.as_ref().map_or(data, |(_, d)| d);
                    for (c, classifier) in classifiers.iter().enumerate() {
                        if unfit[c].is_some() || classifier.binary_only() && data.n_classes() != 2 {
                            continue;
                        }
                        let s = match (spec, shared.get(c).and_then(Option::as_ref)) {
                            (None, Some(score)) => score(&inner_train, test)?,
                            (None, None) => classifier
                                .fit(on.select(&inner_train))?
                                .scores(on.select(test))?,
                            (Some(_), _) => classifier
                                .after_projection()
                                .fit(on.select(&inner_train))?
                                .scores(on.select(test))?,
                        };
                        oof[p * classifiers.len() + c].extend(
                            test.iter()
                                .enumerate()
                                .map(|(i, &b)| (s.label(i), s.positive(i), labels[b])),
                        );
                    }
                }
            }
        }
        let merit = |o: &[(usize, f64, usize)]| match self.select {
            Selection::Accuracy => {
                o.iter().filter(|(l, _, t)| l == t).count() as f64 / o.len() as f64
            }
            Selection::Auroc => {
                let scores: Vec<f64> = o.iter().map(|x| x.1).collect();
                let positive: Vec<bool> = o.iter().map(|x| x.2 == 1).collect();
                // NaN scores or a one-class inner sample rank a candidate last.
                auroc(&scores, &positive).unwrap_or(f64::NEG_INFINITY)
            }
        };
        // A candidate passed over has no predictions and is never chosen.
        let passed_over: Vec<bool> = oof[0].iter().map(Vec::is_empty).collect();
        if passed_over.iter().all(|&p| p) {
            if let Some(e) = unfit.into_iter().flatten().next() {
                return Err(e);
            }
        }
        // Each fold assignment's score (pooled over its folds), averaged over the
        // assignments.
        let merits: Vec<f64> = (0..passed_over.len())
            .map(|i| match passed_over[i] {
                true => f64::NEG_INFINITY,
                false => oof.iter().map(|o| merit(&o[i])).sum::<f64>() / oof.len() as f64,
            })
            .collect();
        // Best first; a stable sort keeps equal merits in the grid's order.
        let mut order: Vec<usize> = (0..merits.len()).collect();
        order.sort_by(|&a, &b| merits[b].total_cmp(&merits[a]));
        let scored: Vec<usize> = order.iter().copied().filter(|&i| !passed_over[i]).collect();
        let ranked = if scored.is_empty() {
            vec![order[0]]
        } else {
            scored
        };
        Ok(ranked
            .into_iter()
            .map(|i| Ranked {
                candidate: Candidate {
                    projection: projections[i / classifiers.len()],
                    classifier: classifiers[i % classifiers.len()],
                },
                index: i % classifiers.len(),
                score: merits[i].is_finite().then_some(merits[i]),
            })
            .collect())
    }

    /// Every ranked candidate, named by its classifier and settings (and the
    /// projection's), with its inner score: what a report gives as [`Chosen::inner`];
    /// empty when no inner CV ran.
    pub(super) fn inner_scores(&self, ranked: &[Ranked]) -> Vec<InnerScore> {
        if ranked.iter().all(|r| r.score.is_none()) {
            return Vec::new();
        }
        ranked
            .iter()
            .map(|r| {
                let named = self.chosen(&r.candidate).map(|c| Chosen {
                    classifier: Some(r.candidate.classifier.to_string()),
                    ..c
                });
                InnerScore {
                    candidate: named
                        .map_or_else(|| r.candidate.classifier.to_string(), |c| c.to_string()),
                    score: r.score,
                }
            })
            .collect()
    }

    /// What [`Pipeline::fit`] and a CV fold report of the choice among `ranked`: the best
    /// ranked candidate, the other members of a vote, every candidate's inner score.
    pub(super) fn chosen_among(&self, ranked: &[Ranked]) -> Option<Chosen> {
        let members = &ranked[..self.vote.min(ranked.len())];
        self.chosen(&members[0].candidate).map(|c| Chosen {
            metric: ranked[0].score.map(|_| self.select.name().to_string()),
            inner: self.inner_scores(ranked),
            ..c.with_voters(members[1..].iter().map(|r| r.candidate.classifier))
        })
    }

    /// Per classifier candidate, its work shared by every fold on the raw features
    /// ([`ClassifierParams::fold_scorer`]), computed once — candidates that differ only
    /// in what is applied to a set kernel's Gram matrix (ρ, map, C) share that matrix;
    /// empty when the pipeline has a projection (the features change with every fold).
    pub(crate) fn shared_scorers<'a>(
        &self,
        data: &'a Dataset,
        progress: &dyn Progress,
    ) -> Result<Vec<Option<FoldScorer<'a>>>> {
        if self.projection.is_some() {
            return Ok(Vec::new());
        }
        let mut grams = GramCache::default();
        self.classifier
            .candidates()
            .iter()
            .map(|c| c.fold_scorer(data, progress, &mut grams))
            .collect()
    }
}

#[cfg(test)]
impl Pipeline {
    /// The first of [`Pipeline::rank`]: the candidate a single fit takes.
    fn choose(
        &self,
        data: &Dataset,
        train: &[usize],
        seed: u64,
        shared: &[Option<FoldScorer<'_>>],
    ) -> Result<(Candidate, usize)> {
        let best = self.rank(data, train, seed, shared)?[0];
        Ok((best.candidate, best.index))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classifier::citation_knn::{CitationKnn, Scaling};
    use crate::classifier::svm::SetKernelSvm;
    use crate::classifier::ClassifierKind;
    use crate::data;
    use crate::eval::inner_folds;

    /// Every classifier's default grid starts with its own parameters, holds no
    /// candidate twice, and every candidate passes the parameter checks.
    #[test]
    fn default_grids_start_with_the_parameters_and_are_valid() {
        for &kind in ClassifierKind::ALL {
            let spec = ClassifierParams::new(kind);
            let grid = spec.default_grid();
            assert_eq!(grid[0], spec, "{kind}");
            for (i, c) in grid.iter().enumerate() {
                c.check().unwrap();
                assert_eq!(c.kind(), kind);
                assert!(!grid[..i].contains(c), "{kind}: {c} twice");
            }
        }
        let auto = ClassifierGrid::auto(7);
        assert!(auto.reports_classifier());
        let tuned = auto.clone().tuned_all();
        assert!(tuned.candidates().len() > 3 * auto.candidates().len());
        for c in tuned.candidates() {
            c.check().unwrap();
            assert!(auto.candidates().iter().any(|a| a.kind() == c.kind()));
        }
        for a in auto.candidates() {
            assert!(tuned.candidates().contains(a), "{a}");
        }
        assert!(ClassifierGrid::of(Vec::new()).is_err());
    }

    /// On three classes the inner CV passes over a two-class family (mi-SVM, put first
    /// among the auto grid's) instead of failing on it, and chooses among the others.
    #[test]
    fn the_inner_cv_passes_over_the_binary_families_on_more_classes() {
        // 3 classes × 12 bags of 3 instances around the class's mean, in 2 features.
        let (mut x, mut starts, mut labels) = (Vec::new(), vec![0], Vec::new());
        for b in 0..36usize {
            let class = b % 3;
            for i in 0..3 {
                let wobble = ((b * 7 + i * 3) % 11) as f64 / 11.0 - 0.5;
                x.extend([3.0 * class as f64 + wobble, wobble * 0.5 - class as f64]);
            }
            starts.push(starts.last().unwrap() + 3);
            labels.push(class);
        }
        let d = crate::data::Dataset::new(
            "three",
            2,
            x,
            starts,
            (0..36).map(|b| b.to_string()).collect(),
            Some(labels),
            vec!["a".into(), "b".into(), "c".into()],
        )
        .unwrap();
        let mut auto = ClassifierGrid::auto(1);
        let mi_svm: ClassifierParams = crate::classifier::mi_svm::MiSvm::default().into();
        assert!(mi_svm.binary_only());
        auto.candidates.insert(0, mi_svm);
        let pipeline = Pipeline::new(auto).select(Selection::Accuracy);
        let all: Vec<usize> = (0..36).collect();
        let (chosen, _) = pipeline.choose(&d, &all, 1, &[]).unwrap();
        assert!(!chosen.classifier.binary_only(), "{}", chosen.classifier);
        let model = pipeline.fit(&d).unwrap();
        assert_eq!(model.scores(&d).unwrap().labels().len(), 36);
    }

    /// The inner CV picks the first candidate of best inner accuracy: recomputed here
    /// candidate by candidate through the public fit/score calls.
    #[test]
    fn choose_picks_the_first_best_inner_accuracy() {
        let d = data::load("musk1").unwrap();
        let svm = SetKernelSvm::default();
        let grid = ClassifierGrid::of(
            [0.02, 0.001]
                .iter()
                .flat_map(|&rho| {
                    [10.0, 1e10].map(|c| svm.settings(svm.settings.rho(rho.into()).cost(c)).into())
                })
                .chain([CitationKnn::default().into()])
                .collect(),
        )
        .unwrap();
        let pipeline = Pipeline::new(grid.clone());
        let labels = d.labels().unwrap();
        let train: Vec<usize> = (0..d.n_bags()).filter(|b| b % 4 != 0).collect();
        let (chosen, index) = pipeline.choose(&d, &train, 5, &[]).unwrap();
        let folds = inner_folds(labels, &train, pipeline.inner_folds, 5).unwrap();
        let correct: Vec<usize> = grid
            .candidates()
            .iter()
            .map(|c| {
                folds
                    .iter()
                    .map(|test| {
                        let inner_train = complement(&train, test);
                        let s = c
                            .fit(d.select(&inner_train))
                            .unwrap()
                            .scores(d.select(test))
                            .unwrap();
                        test.iter()
                            .enumerate()
                            .filter(|&(i, &b)| s.label(i) == labels[b])
                            .count()
                    })
                    .sum()
            })
            .collect();
        let best = correct.iter().max().unwrap();
        assert_eq!(index, correct.iter().position(|c| c == best).unwrap());
        assert_eq!(chosen.classifier, grid.candidates()[index]);
        // Every candidate's reported inner score is its brute-force share of hits.
        for r in pipeline.rank(&d, &train, 5, &[]).unwrap() {
            let share = correct[r.index] as f64 / train.len() as f64;
            assert!(
                (r.score.unwrap() - share).abs() < 1e-12,
                "{}",
                r.candidate.classifier
            );
        }
    }

    /// An inner CV repeated on three fold assignments ranks by the mean of the scores
    /// the three single inner CVs give, each run alone under the seed its assignment
    /// takes; the assignments differ.
    #[test]
    fn a_repeated_inner_cv_ranks_by_the_mean_of_single_inner_cvs() {
        use crate::classifier::milr::{Milr, Pooling};
        use crate::eval::seeds::Stream;
        let d = data::load("musk1").unwrap();
        let grid = ClassifierGrid::of(
            [Pooling::Mean, Pooling::Max, Pooling::NoisyOr]
                .map(|p| ClassifierParams::from(Milr::default().pooling(p)))
                .to_vec(),
        )
        .unwrap();
        let single = Pipeline::new(grid).select(Selection::Auroc);
        let repeated = single.clone().inner_repeats(3);
        let train: Vec<usize> = (0..d.n_bags()).filter(|b| b % 5 != 0).collect();
        let seed = 7;
        let seeds = [
            seed,
            Stream::InnerRepeat.seed(seed, 1),
            Stream::InnerRepeat.seed(seed, 2),
        ];
        let labels = d.labels().unwrap();
        let assignments = repeated.inner_assignments(labels, &train, seed).unwrap();
        assert_eq!(assignments.len(), 3);
        for (a, &s) in assignments.iter().zip(&seeds) {
            assert_eq!(*a, single.inner_cv(labels, &train, s).unwrap());
        }
        assert!(assignments[0] != assignments[1] && assignments[1] != assignments[2]);
        let mut mean = [0.0; 3];
        for &s in &seeds {
            for r in single.rank(&d, &train, s, &[]).unwrap() {
                mean[r.index] += r.score.unwrap() / 3.0;
            }
        }
        let ranked = repeated.rank(&d, &train, seed, &[]).unwrap();
        assert_eq!(ranked.len(), 3);
        for w in ranked.windows(2) {
            assert!(w[0].score >= w[1].score);
        }
        for r in &ranked {
            assert!((r.score.unwrap() - mean[r.index]).abs() < 1e-12);
        }
    }

    /// Work shared across folds gives every candidate the inner score that fitting each
    /// inner fold gives, wherever the shared work is what a fit computes: Citation-kNN's
    /// bag distances without a fitted scaling, and the MI kernel's Gram matrix at a fixed
    /// γ (each entry depends on its two bags only). The box kernels' and the NSK's shared
    /// matrices are not of this kind: they fit their grid and their z-score on every bag
    /// of the data, a fold's fit on its training bags (the SVM page says so).
    #[test]
    fn shared_scorers_score_what_per_fold_fits_score() {
        use crate::classifier::svm::{Gamma, Preprocessing, SetKernel};
        for name in ["musk1", "elephant"] {
            let d = data::load(name).unwrap();
            // γ of the order of 1 / (the instances' summed variance), where the MI
            // kernel's values spread between 0 and 1.
            let gamma = Gamma::Scaled {
                variance_factor: 1.0,
            }
            .resolve(&d)
            .unwrap();
            let mut candidates: Vec<ClassifierParams> = [gamma, gamma / 10.0]
                .iter()
                .map(|&g| {
                    SetKernelSvm::mismo()
                        .preprocessing(Preprocessing::None)
                        .kernel(SetKernel::MiRbf {
                            gamma: Gamma::Fixed(g),
                        })
                        .into()
                })
                .collect();
            let knn = CitationKnn::default().scaling(Scaling::None);
            candidates.extend(knn.default_grid().into_iter().map(ClassifierParams::from));
            let pipeline = Pipeline::new(ClassifierGrid::of(candidates).unwrap());
            let shared = pipeline
                .shared_scorers(&d, &crate::progress::Silent)
                .unwrap();
            assert!(shared.iter().all(Option::is_some));
            for seed in 1..3 {
                let train: Vec<usize> =
                    (0..d.n_bags()).filter(|b| b % 5 != seed as usize).collect();
                let fast = pipeline.rank(&d, &train, seed, &shared).unwrap();
                let slow = pipeline.rank(&d, &train, seed, &[]).unwrap();
                let order = |r: &[Ranked]| r.iter().map(|r| r.index).collect::<Vec<_>>();
                assert_eq!(order(&fast), order(&slow), "{name}, seed {seed}");
                let scores = |r: &[Ranked]| r.iter().map(|r| r.score).collect::<Vec<_>>();
                assert_eq!(scores(&fast), scores(&slow), "{name}, seed {seed}");
                // The candidates score differently, so the order is a real comparison.
                assert!(fast.windows(2).any(|w| w[0].score != w[1].score), "{name}");
            }
        }
    }
}
