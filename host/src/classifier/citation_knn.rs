//! Citation-kNN (Wang & Zucker, ICML 2000), with the rules of Weka 3.6's
//! `weka.classifiers.mi.CitationKNN` so that its predictions can be reproduced exactly.
//!
//! - Bag distance: the minimal Hausdorff distance, or the H-th ranked one measured from
//!   the query bag (`rank` = H, clamped to the query's size), or the maximal or average
//!   Hausdorff distance (`hausdorff`) — [`crate::distance`].
//! - Citers: each training bag keeps its C nearest *other* training bags plus every tie
//!   at the C-th distance; it cites a query bag whose distance to it is ≤ the largest
//!   distance in that list (its *radius*).
//! - References: the R nearest training bags plus every tie at the R-th distance.
//! - Vote: class c scores (1/N + R_c + C_c) / Σ, N the number of training bags; the
//!   highest score wins, ties going to the first class (the negative one when binary).
//!   With class weights ([`CitationKnn::class_weight`]) each reference and citer of
//!   class c counts w_c instead of 1: (1/N + w_c(R_c + C_c)) / Σ.
//!
//! Attribute scaling ([`Scaling`]): `weka` reproduces Weka — (x − lo)/(hi − lo) with
//! lo = 0.95·min and hi = 1.05·max over the training instances, widened by every bag it
//! predicts, in order (so predictions depend on the order of the test bags, as in Weka);
//! `zscore` (the default) standardises with the training instances' mean and standard
//! deviation; `none` uses raw features. In every mode an attribute that is constant
//! (zero spread) contributes nothing — where Weka divides by zero and every distance
//! becomes NaN (its 50% on elephant).

use serde::{Deserialize, Serialize};

use super::imbalance::ClassWeight;
use super::{check_dim, BagModel, BagScores, Classifier};
use crate::data::standardize::ZScore;
use crate::data::Bags;
use crate::data::{Bag, Dataset};
use crate::distance::{cross, pairwise, ranked_cross, BagSet, Hausdorff, RowMap};
use crate::error::{Error, Result};
use crate::explain::{Explanation, Neighbour};

mod scaler;
pub use scaler::Scaler;

/// Attribute scaling before distances.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scaling {
    /// z-score on raw features, none after a projection (which standardises its input;
    /// rescaling its output dimensions would discard its weighting). The default.
    Auto,
    /// Weka's min–max rule, widened by each predicted bag (exact Weka parity).
    Weka,
    /// z-score fitted on the training instances.
    Zscore,
    /// Raw features.
    None,
}

mil_core::keywords!(Scaling {
    Scaling::Auto => "auto": "z-score on raw features, none after a projection",
    Scaling::Weka => "weka": "Weka's rule (x − 0.95·min)/(1.05·max − 0.95·min), widened by each predicted bag",
    Scaling::Zscore => "zscore": "z-score fitted on the training bags",
    Scaling::None => "none": "raw features",
});

impl Scaling {
    /// The scaling actually applied: [`Scaling::Auto`] is none on projected instances
    /// and the z-score otherwise.
    pub fn resolve(self, projected: bool) -> Scaling {
        match self {
            Scaling::Auto if projected => Scaling::None,
            Scaling::Auto => Scaling::Zscore,
            other => other,
        }
    }
}

/// Citation-kNN hyper-parameters.
///
/// ```
/// use mil_toolkit::classifier::citation_knn::CitationKnn;
/// use mil_toolkit::classifier::{BagModel, Classifier};
///
/// let data = mil_toolkit::data::load("musk1")?;
/// let train: Vec<usize> = (0..data.n_bags()).filter(|b| b % 10 != 0).collect();
/// let test: Vec<usize> = (0..data.n_bags()).filter(|b| b % 10 == 0).collect();
/// let model = CitationKnn::default().references(2).citers(4).fit(data.select(&train))?;
/// let labels = model.scores(data.select(&test))?.labels();
/// assert_eq!(labels.len(), test.len());
/// # Ok::<(), mil_toolkit::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CitationKnn {
    /// R, the number of references.
    pub references: usize,
    /// C, the number of citers (0: no citers).
    pub citers: usize,
    /// H of the H-th ranked Hausdorff distance (1: minimal Hausdorff distance).
    pub rank: usize,
    /// Attribute scaling.
    pub scaling: Scaling,
    /// The bag distance: minimal (with `rank`), maximal or average Hausdorff.
    #[serde(default)]
    pub hausdorff: Hausdorff,
    /// Weight of the votes of each class's references and citers.
    #[serde(default, skip_serializing_if = "ClassWeight::is_none")]
    pub class_weight: ClassWeight,
}

impl Default for CitationKnn {
    fn default() -> Self {
        CitationKnn {
            references: 2,
            citers: 4,
            rank: 1,
            scaling: Scaling::Auto,
            hausdorff: Hausdorff::Min,
            class_weight: ClassWeight::None,
        }
    }
}

crate::params::setters!(CitationKnn {
    references: usize,
    citers: usize,
    rank: usize,
    scaling: Scaling,
    hausdorff: Hausdorff,
    class_weight: ClassWeight,
});

impl CitationKnn {
    /// The settings an inner CV tries when asked to tune Citation-kNN (the `auto`
    /// classifier, `mil cv --tune`): (R, C) ∈ {(2, 4), (1, 2), (3, 5)}, the rest kept.
    /// (2, 4) is Wang & Zucker's best on musk1; fewer and more neighbours cover the
    /// noisier sets (the method's page gives the results behind the choice).
    pub fn default_grid(&self) -> Vec<CitationKnn> {
        [(2, 4), (1, 2), (3, 5)]
            .iter()
            .map(|&(r, c)| self.references(r).citers(c))
            .collect()
    }
}

/// Citation-kNN fitted on bags it borrows: the scaling, the training bags with their
/// labels and citation radii, the votes. [`CitationKnn::fit`] copies the training bags
/// out of it into a [`CitationKnnModel`]; cross-validation scores a fold with it
/// directly ([`CitationKnn::fold_scores`]), so no fold copies the data. A model scores
/// through the same type, borrowing its stored bags: one scoring code for both.
struct Fitted<'a> {
    params: CitationKnn,
    scaler: Scaler,
    training: Vec<Bag<'a>>,
    labels: Vec<usize>,
    radius: Vec<f64>,
    weights: Vec<f64>,
    n_classes: usize,
}

impl<'a> Fitted<'a> {
    /// The bags `queries` of `data` followed by the training bags, every instance scaled
    /// by `scaler` as it is read: the set a query is measured in.
    fn with_queries<'s>(
        &'s self,
        scaler: &'s Scaler,
        data: &'s Dataset,
        queries: &[usize],
    ) -> BagSet<'s> {
        let mut set = BagSet::picked(data, queries);
        set.extend(self.training.iter().copied());
        scaler.read(set)
    }

    /// Distances from the bags `queries` of `data` to the training bags (row-major
    /// |queries| × n_train), in the set of [`Fitted::with_queries`].
    fn distances(&self, scaler: &Scaler, data: &Dataset, queries: &[usize]) -> Vec<f64> {
        let rows: Vec<usize> = (0..queries.len()).collect();
        let cols: Vec<usize> = (queries.len()..queries.len() + self.training.len()).collect();
        let set = self.with_queries(scaler, data, queries);
        self.params.distances(set, &rows, &cols)
    }

    /// Class scores of the bags `bags` of `data`.
    fn scores(&self, data: &Dataset, bags: &[usize]) -> BagScores {
        let n_train = self.labels.len();
        let mut scores = Vec::with_capacity(bags.len() * self.n_classes);
        let mut score_batch = |scaler: &Scaler, batch: &[usize]| {
            for row in self.distances(scaler, data, batch).chunks_exact(n_train) {
                scores.extend(weighted_vote(
                    row,
                    &self.labels,
                    &self.radius,
                    &self.weights,
                    self.params.references,
                ));
            }
        };
        match self.params.scaling {
            Scaling::Weka => {
                // Weka widens the scaling with each bag it classifies, in order; runs of
                // bags that leave the scaling unchanged share one block computation.
                let mut scaler = self.scaler.clone();
                let mut batch: Vec<usize> = Vec::new();
                let mut batch_scaler = scaler.clone();
                for &b in bags {
                    scaler.widen(data, b);
                    if scaler != batch_scaler {
                        if !batch.is_empty() {
                            score_batch(&batch_scaler, &batch);
                            batch.clear();
                        }
                        batch_scaler = scaler.clone();
                    }
                    batch.push(b);
                }
                if !batch.is_empty() {
                    score_batch(&batch_scaler, &batch);
                }
            }
            _ => score_batch(&self.scaler, bags),
        }
        BagScores::new(self.n_classes, scores)
    }
}

/// A fitted Citation-kNN: the training bags, their labels and citation radii.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CitationKnnModel {
    /// Hyper-parameters.
    pub params: CitationKnn,
    /// Number of classes.
    pub n_classes: usize,
    /// The scaling fitted on the training instances.
    pub scaler: Scaler,
    /// Feature dimension.
    pub dim: usize,
    /// Raw training instances, row-major.
    pub features: Vec<f64>,
    /// Bag offsets into `features` (in instances), length bags + 1.
    pub bag_starts: Vec<usize>,
    /// Class index of each training bag.
    pub labels: Vec<usize>,
    /// Largest distance in each training bag's list of C nearest neighbours (with ties).
    pub radius: Vec<f64>,
    /// Identifiers of the training bags (for explanations; empty in older models).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bag_ids: Vec<String>,
    /// The vote of each class ([`CitationKnn::class_weight`] resolved on the training
    /// bags); empty: every vote counts 1.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub class_weights: Vec<f64>,
}

impl CitationKnn {
    /// Checks the hyper-parameters against the number of training bags.
    pub fn check_fit(&self, n_train: usize) -> Result<()> {
        self.check()?;
        if self.references > n_train {
            return Err(Error::parameter(
                "references",
                self.references,
                format!("must be at most the number of training bags ({n_train})"),
            ));
        }
        if self.citers >= n_train {
            return Err(Error::parameter(
                "citers",
                self.citers,
                format!("must be below the number of training bags ({n_train})"),
            ));
        }
        Ok(())
    }

    /// Checks the hyper-parameters that do not depend on the data.
    pub fn check(&self) -> Result<()> {
        if self.references == 0 {
            return Err(Error::parameter("references", 0, "must be at least 1"));
        }
        if self.rank == 0 {
            return Err(Error::parameter("rank", 0, "must be at least 1"));
        }
        if self.rank > 1 && self.hausdorff != Hausdorff::Min {
            return Err(Error::parameter(
                "rank",
                self.rank,
                "a rank applies to the minimal Hausdorff distance only (hausdorff = min)",
            ));
        }
        Ok(())
    }

    /// Distances between all bags of `data` (row-major n × n, the row bag measured
    /// first); symmetric distances are computed once per pair.
    pub fn all_distances<'a>(&self, bags: impl Into<BagSet<'a>>) -> Vec<f64> {
        let set = bags.into();
        if self.rank == 1 {
            pairwise(set, self.hausdorff)
        } else {
            let all = set.positions();
            self.distances(set, &all, &all)
        }
    }

    /// Distances from each of `rows` to each of `cols` (row-major), measured from the
    /// row bag.
    pub fn distances<'a>(
        &self,
        bags: impl Into<BagSet<'a>>,
        rows: &[usize],
        cols: &[usize],
    ) -> Vec<f64> {
        match self.hausdorff {
            Hausdorff::Min => ranked_cross(bags, rows, cols, self.rank),
            kind => cross(bags, rows, cols, kind),
        }
    }

    /// Scores the bags `test` from a precomputed matrix `dist` of distances between all
    /// bags of `data` (row-major n × n, the row bag measured first) — the fast path of
    /// cross-validation when the distances do not depend on the fold.
    pub fn scores_from_distances(
        &self,
        data: &Dataset,
        dist: &[f64],
        train: &[usize],
        test: &[usize],
    ) -> Result<BagScores> {
        let labels = data.training_labels(train, 2)?;
        self.check_fit(train.len())?;
        let n = data.n_bags();
        let tt: Vec<f64> = train
            .iter()
            .flat_map(|&i| train.iter().map(move |&j| dist[i * n + j]))
            .collect();
        let radius = radii(&tt, train.len(), self.citers);
        let n_classes = data.n_classes();
        let weights = self.class_weight.resolve(&labels, n_classes)?;
        let mut scores = Vec::with_capacity(test.len() * n_classes);
        for &t in test {
            let row: Vec<f64> = train.iter().map(|&j| dist[t * n + j]).collect();
            scores.extend(weighted_vote(
                &row,
                &labels,
                &radius,
                &weights,
                self.references,
            ));
        }
        Ok(BagScores::new(n_classes, scores))
    }
}

impl Classifier for CitationKnn {
    type Model = CitationKnnModel;

    fn fit<'a>(&self, train: impl Into<Bags<'a>>) -> Result<CitationKnnModel> {
        let train = train.into();
        let (data, train) = (train.dataset(), &*train.indices());
        let fitted = self.fitted(data, train)?;
        let raw = data.copy_bags(train);
        let class_weights = match self.class_weight {
            ClassWeight::None => Vec::new(),
            _ => fitted.weights,
        };
        Ok(CitationKnnModel {
            params: fitted.params,
            n_classes: fitted.n_classes,
            scaler: fitted.scaler,
            dim: data.dim(),
            features: raw.features().to_vec(),
            bag_starts: raw.bag_starts().to_vec(),
            labels: fitted.labels,
            radius: fitted.radius,
            bag_ids: raw.bag_ids().to_vec(),
            class_weights,
        })
    }
}

impl CitationKnn {
    /// Fits on the bags `train` of `data`, borrowing them.
    fn fitted<'a>(&self, data: &'a Dataset, train: &[usize]) -> Result<Fitted<'a>> {
        let labels = data.training_labels(train, 2)?;
        self.check_fit(train.len())?;
        let smallest = train.iter().map(|&b| data.bag(b).len()).min().unwrap_or(0);
        if self.rank > smallest.max(1) {
            return Err(Error::parameter(
                "rank",
                self.rank,
                format!("must be at most the size of the smallest training bag ({smallest})"),
            ));
        }
        // Fitted on the instances given: `Auto` is the z-score here; a pipeline resolves
        // it to none after a projection (`ClassifierParams::after_projection`).
        let params = self.scaling(self.scaling.resolve(false));
        let scaler = Scaler::fit(params.scaling, data, train);
        let tt = params.all_distances(scaler.read(BagSet::picked(data, train)));
        let weights = match self.class_weight {
            ClassWeight::None => vec![1.0; data.n_classes()],
            w => w.resolve(&labels, data.n_classes())?,
        };
        Ok(Fitted {
            params,
            training: train.iter().map(|&b| data.bag(b)).collect(),
            radius: radii(&tt, train.len(), self.citers),
            scaler,
            labels,
            weights,
            n_classes: data.n_classes(),
        })
    }

    /// Scores the bags `test` of `data` as a model fitted on the bags `train` would,
    /// without copying any bag: what cross-validation runs in each fold (the scores equal
    /// `fit(data, train)?.scores(data.select(test))` bit for bit).
    ///
    /// ```
    /// use mil_toolkit::classifier::citation_knn::CitationKnn;
    /// use mil_toolkit::classifier::{BagModel, Classifier};
    ///
    /// let data = mil_toolkit::data::load("musk1")?;
    /// let train: Vec<usize> = (0..data.n_bags()).filter(|b| b % 10 != 0).collect();
    /// let test: Vec<usize> = (0..data.n_bags()).filter(|b| b % 10 == 0).collect();
    /// let knn = CitationKnn::default();
    /// let direct = knn.fold_scores(&data, &train, &test)?;
    /// assert_eq!(direct, knn.fit(data.select(&train))?.scores(data.select(&test))?);
    /// # Ok::<(), mil_toolkit::Error>(())
    /// ```
    pub fn fold_scores(
        &self,
        data: &Dataset,
        train: &[usize],
        test: &[usize],
    ) -> Result<BagScores> {
        Ok(self.fitted(data, train)?.scores(data, test))
    }
}

impl CitationKnnModel {
    /// The vote of each class (all 1 without class weights).
    pub fn vote_weights(&self) -> Vec<f64> {
        if self.class_weights.is_empty() {
            vec![1.0; self.n_classes]
        } else {
            self.class_weights.clone()
        }
    }

    /// The model as a [`Fitted`] borrowing its stored training bags.
    fn fitted(&self) -> Fitted<'_> {
        let training = self
            .bag_starts
            .windows(2)
            .map(|w| Bag::from_rows(&self.features[w[0] * self.dim..w[1] * self.dim], self.dim))
            .collect();
        Fitted {
            params: self.params,
            scaler: self.scaler.clone(),
            training,
            labels: self.labels.clone(),
            radius: self.radius.clone(),
            weights: self.vote_weights(),
            n_classes: self.n_classes,
        }
    }

    /// The training bags as a data set (raw features).
    fn training_set(&self) -> Result<Dataset> {
        let n = self.labels.len();
        Dataset::new(
            "training bags",
            self.dim,
            self.features.clone(),
            self.bag_starts.clone(),
            (0..n).map(|b| b.to_string()).collect(),
            None,
            vec![],
        )
    }

    /// Checks a model read from a file: consistent sizes, finite values.
    pub fn validate(&self) -> Result<()> {
        let n = self.labels.len();
        if self.dim == 0 || self.bag_starts.len() != n + 1 || self.radius.len() != n {
            return Err(Error::Model("citation-knn: inconsistent bag counts".into()));
        }
        if self.bag_starts.last().copied().unwrap_or(0) * self.dim != self.features.len() {
            return Err(Error::Model(
                "citation-knn: bag offsets do not cover the instances".into(),
            ));
        }
        if self.labels.iter().any(|&l| l >= self.n_classes) {
            return Err(Error::Model("citation-knn: label out of range".into()));
        }
        if !self.bag_ids.is_empty() && self.bag_ids.len() != n {
            return Err(Error::Model(
                "citation-knn: bag identifiers do not match the bags".into(),
            ));
        }
        if !(self.class_weights.is_empty()
            || (self.class_weights.len() == self.n_classes
                && self
                    .class_weights
                    .iter()
                    .all(|&w| w > 0.0 && w <= crate::params::limits::MAX_WEIGHT)))
        {
            return Err(Error::Model(
                "citation-knn: class weights do not match the classes".into(),
            ));
        }
        let scaler_ok = match &self.scaler {
            Scaler::Weka { lo, hi } => lo.len() == self.dim && hi.len() == self.dim,
            Scaler::Zscore(z) => z.mean.len() == self.dim && z.std.len() == self.dim,
            Scaler::None => true,
        };
        if !scaler_ok {
            return Err(Error::Model(
                "citation-knn: scaling of the wrong dimension".into(),
            ));
        }
        self.params
            .check_fit(n)
            .map_err(|e| Error::Model(format!("citation-knn: {e}")))?;
        // Training's data check on the rank, against the stored bags.
        let smallest = self.bag_starts.windows(2).map(|w| w[1] - w[0]).min();
        if self.params.rank > smallest.unwrap_or(0).max(1) {
            return Err(Error::Model(format!(
                "citation-knn: rank {} exceeds the smallest stored bag ({} instances)",
                self.params.rank,
                smallest.unwrap_or(0)
            )));
        }
        self.training_set()
            .map(|_| ())
            .map_err(|e| Error::Model(format!("citation-knn: {e}")))
    }
}

impl CitationKnnModel {
    /// The instance pair (query instance, training instance) realising the bag distance
    /// from bag `q` to bag `t` of `set` (brute force): the closest pair for the minimal
    /// Hausdorff distance, the instance of the H-th ranked nearest distance and its nearest
    /// neighbour for rank H, the farthest nearest neighbour (in either direction) for the
    /// maximal one; `None` for the average, which sums over all instances.
    fn realising_pair(&self, set: &BagSet, q: usize, t: usize) -> Option<(usize, usize)> {
        use crate::distance::squared_euclidean;
        let dim = set.dim();
        let nearest = |from: usize, to: usize| -> Vec<(f64, usize)> {
            let to = set.bag_rows(to);
            set.bag_rows(from)
                .chunks_exact(dim)
                .map(|x| {
                    to.chunks_exact(dim)
                        .enumerate()
                        .fold((f64::INFINITY, 0), |best, (j, y)| {
                            let d = squared_euclidean(x, y);
                            if d < best.0 {
                                (d, j)
                            } else {
                                best
                            }
                        })
                })
                .collect()
        };
        match self.params.hausdorff {
            Hausdorff::Min => {
                let near = nearest(q, t);
                let mut order: Vec<usize> = (0..near.len()).collect();
                order.sort_by(|&a, &b| near[a].0.total_cmp(&near[b].0));
                let i = order[self.params.rank.clamp(1, order.len()) - 1];
                Some((i, near[i].1))
            }
            Hausdorff::Max => {
                let far = |near: &[(f64, usize)]| {
                    near.iter()
                        .enumerate()
                        .fold((f64::NEG_INFINITY, 0, 0), |best, (i, &(d, j))| {
                            if d > best.0 {
                                (d, i, j)
                            } else {
                                best
                            }
                        })
                };
                let (dq, iq, jq) = far(&nearest(q, t));
                let (dt, it, jt) = far(&nearest(t, q));
                Some(if dq >= dt { (iq, jq) } else { (jt, it) })
            }
            Hausdorff::Avg => None,
        }
    }
}

impl BagModel for CitationKnnModel {
    fn n_classes(&self) -> usize {
        self.n_classes
    }

    fn input_dim(&self) -> usize {
        self.dim
    }

    fn scores<'a>(&self, bags: impl Into<Bags<'a>>) -> Result<BagScores> {
        let bags = bags.into();
        let (data, bags) = (bags.dataset(), &*bags.indices());
        check_dim(data, self.dim)?;
        Ok(self.fitted().scores(data, bags))
    }

    /// The references and citers of each bag (the votes of [`vote`]), each with its
    /// distance and the instance pair realising it. Bags are scaled as [`Self::scores`]
    /// scales them (Weka's scaling widened by each bag in turn).
    fn explain<'a>(&self, bags: impl Into<Bags<'a>>) -> Result<Vec<Explanation>> {
        let bags = bags.into();
        let (data, bags) = (bags.dataset(), &*bags.indices());
        check_dim(data, self.dim)?;
        let fitted = self.fitted();
        let mut scaler = self.scaler.clone();
        let mut out = Vec::with_capacity(bags.len());
        for &b in bags {
            if self.params.scaling == Scaling::Weka {
                scaler.widen(data, b);
            }
            let set = fitted.with_queries(&scaler, data, &[b]);
            let cols: Vec<usize> = (1..=fitted.training.len()).collect();
            let row = fitted.params.distances(set.clone(), &[0], &cols);
            let (references, citers) = neighbours(&row, &self.radius, self.params.references);
            let describe = |t: usize| Neighbour {
                bag: t,
                bag_id: self.bag_ids.get(t).cloned(),
                label: self.labels[t],
                distance: row[t],
                pair: self.realising_pair(&set, 0, t + 1),
            };
            let mut e = Explanation::none();
            e.references = references.into_iter().map(describe).collect();
            e.citers = citers.into_iter().map(describe).collect();
            let mut witnesses: Vec<usize> = e
                .references
                .iter()
                .chain(&e.citers)
                .filter_map(|n| n.pair.map(|p| p.0))
                .collect();
            witnesses.sort_unstable();
            witnesses.dedup();
            e.witnesses = witnesses;
            out.push(e);
        }
        Ok(out)
    }
}

/// The training bags that vote for a query with distances `row` to them: the references
/// (the R nearest plus ties; R − 1… as [`vote`] clamps it) and the citers (bags whose
/// radius reaches the query), in training order.
pub fn neighbours(row: &[f64], radius: &[f64], references: usize) -> (Vec<usize>, Vec<usize>) {
    let n = row.len();
    let r = if n < references { n - 1 } else { references };
    let refs = if r > 0 {
        let mut sorted = row.to_vec();
        let (_, kth, _) = sorted.select_nth_unstable_by(r - 1, f64::total_cmp);
        let kth = *kth;
        (0..n).filter(|&t| row[t] <= kth).collect()
    } else {
        Vec::new()
    };
    let citers = (0..n).filter(|&t| row[t] <= radius[t]).collect();
    (refs, citers)
}

/// Citation radius of each training bag: its C-th smallest distance to another training
/// bag (the largest distance in its list of C nearest plus ties); −∞ when C = 0.
/// `tt` is the row-major n × n matrix of training distances (row bag first).
pub fn radii(tt: &[f64], n: usize, citers: usize) -> Vec<f64> {
    (0..n)
        .map(|i| {
            if citers == 0 {
                return f64::NEG_INFINITY;
            }
            let mut others: Vec<f64> = (0..n).filter(|&j| j != i).map(|j| tt[i * n + j]).collect();
            let (_, kth, _) = others.select_nth_unstable_by(citers - 1, f64::total_cmp);
            *kth
        })
        .collect()
}

/// Class scores of one query bag from its distances `row` to the training bags.
pub fn vote(
    row: &[f64],
    labels: &[usize],
    radius: &[f64],
    n_classes: usize,
    references: usize,
) -> Vec<f64> {
    weighted_vote(row, labels, radius, &vec![1.0; n_classes], references)
}

/// [`vote`] with each reference and citer of class c counting `weights[c]` (one weight
/// per class); weights of 1 give [`vote`]'s scores bit for bit.
pub fn weighted_vote(
    row: &[f64],
    labels: &[usize],
    radius: &[f64],
    weights: &[f64],
    references: usize,
) -> Vec<f64> {
    let n = row.len();
    let mut counts = vec![1.0 / n.max(1) as f64; weights.len()];
    // References: R nearest plus ties (Weka uses N − 1 when fewer than R bags exist).
    let r = if n < references { n - 1 } else { references };
    if r > 0 {
        let mut sorted = row.to_vec();
        let (_, kth, _) = sorted.select_nth_unstable_by(r - 1, f64::total_cmp);
        let kth = *kth;
        for (&d, &l) in row.iter().zip(labels) {
            if d <= kth {
                counts[l] += weights[l];
            }
        }
    }
    // Citers: training bags for which the query falls within their radius.
    for ((&d, &l), &rad) in row.iter().zip(labels).zip(radius) {
        if d <= rad {
            counts[l] += weights[l];
        }
    }
    let total: f64 = counts.iter().sum();
    counts.iter().map(|c| c / total).collect()
}

/// Memory and work of fitting Citation-kNN (or of a cross-validation of it) on data of
/// this shape: the all-pairs distances are two n_bags × n_bags matrices at their peak
/// (the computed triangle and the symmetric matrix), beside the data and its scaled
/// copy; the work is one distance per pair of instances.
pub fn footprint(shape: crate::params::Shape) -> crate::params::Estimate {
    let n = shape.bags as f64;
    let pairs = shape.instances as f64 * shape.instances as f64;
    crate::params::Estimate::values(2.0 * n * n + 2.0 * shape.values(), pairs * shape.dim as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classifier::BagModel;

    /// Six one-dimensional bags (one or two instances each) whose minimal Hausdorff
    /// distances are easy to read off: positions of instances and labels.
    fn line_bags() -> Dataset {
        // bag: instances            label
        // 0: 0.0                    0
        // 1: 1.0                    0
        // 2: 3.0, 10.0              1
        // 3: 4.0                    1
        // 4: 6.0                    0
        // 5: 9.0                    1
        let feats = vec![0.0, 1.0, 3.0, 10.0, 4.0, 6.0, 9.0];
        Dataset::new(
            "line",
            1,
            feats,
            vec![0, 1, 2, 4, 5, 6, 7],
            (0..6).map(|b| b.to_string()).collect(),
            Some(vec![0, 0, 1, 1, 0, 1]),
            vec!["0".into(), "1".into()],
        )
        .unwrap()
    }

    #[test]
    fn citers_references_and_ties_by_hand() {
        let d = line_bags();
        let c = CitationKnn {
            references: 1,
            citers: 1,
            rank: 1,
            hausdorff: Hausdorff::Min,
            scaling: Scaling::None,
            class_weight: ClassWeight::None,
        };
        // Train on bags 0..=4, predict bag 5 (instance 9).
        let train = [0, 1, 2, 3, 4];
        let model = c.fit(d.select(&train)).unwrap();
        // Nearest other training bag of each (distance): 0→1 (1), 1→0 (1), 2→3 (1),
        // 3→2 (1), 4→3 (2).
        assert_eq!(model.radius, vec![1.0, 1.0, 1.0, 1.0, 2.0]);
        // Bag 5 (9.0) to training bags: 9, 8, 1 (via 10.0), 5, 3. Reference: bag 2
        // (class 1). Citers: bag 2 (1 ≤ 1). Votes: class 0 = 1/5, class 1 = 1/5 + 2.
        let s = model.scores(d.select(&[5])).unwrap();
        let total = 0.2 + 2.2;
        assert!((s.row(0)[0] - 0.2 / total).abs() < 1e-15);
        assert_eq!(s.label(0), 1);

        // Ties: with C = 1 bag 4 (6.0) keeps bag 3 at distance 2. A query at 5.0 is at
        // distance 1 from bag 3 and 4 (tie for the nearest reference: both kept), cites
        // bag 3 (1 ≤ 1) and bag 4 (1 ≤ 2), not bag 2 (2 > 1).
        let q = Dataset::new(
            "q",
            1,
            vec![5.0],
            vec![0, 1],
            vec!["q".into()],
            None,
            vec![],
        )
        .unwrap();
        let s = model.scores(q.select(&[0])).unwrap();
        // class 0: 1/5 + 1 (ref bag 4) + 1 (citer bag 4); class 1: 1/5 + 1 (ref 3) + 1.
        assert_eq!(s.row(0)[0], s.row(0)[1]);
        // Equal votes go to the first class.
        assert_eq!(s.label(0), 0);

        // The explanation names the same votes: references bags 3 and 4 (the tie), citers
        // 3 and 4, each realised by the query's only instance and the bags' only one.
        let e = &model.explain(q.select(&[0])).unwrap()[0];
        type Reference = (usize, f64, Option<(usize, usize)>);
        let refs: Vec<Reference> = e
            .references
            .iter()
            .map(|n| (n.bag, n.distance, n.pair))
            .collect();
        assert_eq!(refs, vec![(3, 1.0, Some((0, 0))), (4, 1.0, Some((0, 0)))]);
        let citers: Vec<usize> = e.citers.iter().map(|n| n.bag).collect();
        assert_eq!(citers, vec![3, 4]);
        assert_eq!(e.references[0].bag_id.as_deref(), Some("3"));
        assert_eq!(e.witnesses, vec![0]);
    }

    #[test]
    fn explanation_pairs_realise_the_distances_and_reproduce_the_votes() {
        // Bag 5 (9.0) against bag 2 (3.0, 10.0): the minimal distance 1 is realised by the
        // query's instance 0 and bag 2's instance 1 (10.0); the maximal Hausdorff distance
        // 6 by bag 2's instance 0 (3.0) and the query's instance 0.
        let d = line_bags();
        let train = [0, 1, 2, 3, 4];
        for hausdorff in [Hausdorff::Min, Hausdorff::Max, Hausdorff::Avg] {
            let c = CitationKnn {
                references: 2,
                citers: 2,
                rank: 1,
                hausdorff,
                scaling: Scaling::None,
                class_weight: ClassWeight::None,
            };
            let model = c.fit(d.select(&train)).unwrap();
            let e = &model.explain(d.select(&[5])).unwrap()[0];
            let to_bag2 = e
                .references
                .iter()
                .chain(&e.citers)
                .find(|n| n.bag == 2)
                .expect("bag 2 votes");
            match hausdorff {
                Hausdorff::Min => {
                    assert_eq!((to_bag2.distance, to_bag2.pair), (1.0, Some((0, 1))))
                }
                Hausdorff::Max => {
                    assert_eq!((to_bag2.distance, to_bag2.pair), (6.0, Some((0, 0))))
                }
                Hausdorff::Avg => assert_eq!(to_bag2.pair, None),
            }
        }
        // Property on musk1 (Weka's scaling, widened bag by bag; rank 2): counting the
        // explanation's references and citers gives the model's class scores, and every
        // pair's instance distance in the scaled space is the reported distance.
        let musk = crate::data::load("musk1").unwrap();
        let train: Vec<usize> = (0..musk.n_bags()).filter(|b| b % 4 != 0).collect();
        let test: Vec<usize> = (0..musk.n_bags()).filter(|b| b % 4 == 0).collect();
        for (scaling, rank) in [(Scaling::Weka, 1), (Scaling::Zscore, 2)] {
            let model = CitationKnn::default()
                .scaling(scaling)
                .rank(rank)
                .fit(musk.select(&train))
                .unwrap();
            let scores = model.scores(musk.select(&test)).unwrap();
            let explained = model.explain(musk.select(&test)).unwrap();
            for (i, e) in explained.iter().enumerate() {
                let mut counts = [1.0 / train.len() as f64; 2];
                for n in e.references.iter().chain(&e.citers) {
                    counts[n.label] += 1.0;
                }
                let total: f64 = counts.iter().sum();
                for (c, count) in counts.iter().enumerate() {
                    assert!((count / total - scores.row(i)[c]).abs() < 1e-12);
                }
                assert!(!e.references.is_empty());
            }
            // Pairs against brute force in the scaled space (no widening for z-score).
            if scaling == Scaling::Zscore {
                let q = model.scaler.apply(&musk, &test).unwrap();
                let all: Vec<usize> = (0..train.len()).collect();
                let t = model
                    .scaler
                    .apply(&model.training_set().unwrap(), &all)
                    .unwrap();
                for (i, e) in explained.iter().enumerate().take(5) {
                    for n in &e.references {
                        let (a, b) = n.pair.unwrap();
                        let x = q.bag(i).instances().nth(a).unwrap();
                        let y = t.bag(n.bag).instances().nth(b).unwrap();
                        let dist = crate::distance::squared_euclidean(x, y).sqrt();
                        assert!((dist - n.distance).abs() <= 1e-9 * (1.0 + dist));
                        assert!(
                            (crate::distance::ranked_distance(q.bag(i), t.bag(n.bag), rank)
                                - n.distance)
                                .abs()
                                <= 1e-12
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn maximal_and_average_hausdorff_match_brute_force_distances() {
        // musk1 bags 0, 3, 6, …: continuous features, so no distance ties.
        let musk1 = crate::data::load("musk1").unwrap();
        let picked: Vec<usize> = (0..musk1.n_bags()).step_by(3).collect();
        let d = musk1.copy_bags(&picked);
        let n = d.n_bags();
        let train: Vec<usize> = (0..n).filter(|b| b % 4 != 0).collect();
        let test: Vec<usize> = (0..n).filter(|b| b % 4 == 0).collect();
        for kind in [Hausdorff::Max, Hausdorff::Avg] {
            let c = CitationKnn {
                hausdorff: kind,
                scaling: Scaling::None,
                ..CitationKnn::default()
            };
            let brute: Vec<f64> = (0..n * n)
                .map(|i| crate::distance::bag_distance(d.bag(i / n), d.bag(i % n), kind))
                .collect();
            let want = c.scores_from_distances(&d, &brute, &train, &test).unwrap();
            let got = c
                .fit(d.select(&train))
                .unwrap()
                .scores(d.select(&test))
                .unwrap();
            assert_eq!(got, want, "{kind:?}");
            // The distance matters: the minimal one votes differently on some bag.
            let min = CitationKnn {
                hausdorff: Hausdorff::Min,
                ..c
            };
            let other = min
                .fit(d.select(&train))
                .unwrap()
                .scores(d.select(&test))
                .unwrap();
            assert_ne!(other, got, "{kind:?}");
        }
        // A rank only goes with the minimal distance.
        let c = CitationKnn {
            hausdorff: Hausdorff::Max,
            rank: 2,
            ..CitationKnn::default()
        };
        assert!(c.fit(d.select(&train)).is_err());
    }

    #[test]
    fn fold_scores_equal_the_fitted_models_for_every_scaling_and_distance() {
        // Cross-validation scores folds from the borrowed bags; a model from its own
        // copy of them. Same numbers, bit for bit, in every mode (Weka's widening too).
        let musk = crate::data::load("musk1").unwrap();
        let train: Vec<usize> = (0..musk.n_bags()).filter(|b| b % 3 != 1).collect();
        let test: Vec<usize> = (0..musk.n_bags()).filter(|b| b % 3 == 1).rev().collect();
        for scaling in [Scaling::Weka, Scaling::Zscore, Scaling::None, Scaling::Auto] {
            for (hausdorff, rank) in [
                (Hausdorff::Min, 1),
                (Hausdorff::Min, 2),
                (Hausdorff::Max, 1),
                (Hausdorff::Avg, 1),
            ] {
                let c = CitationKnn {
                    scaling,
                    hausdorff,
                    rank,
                    class_weight: ClassWeight::Balanced,
                    ..CitationKnn::default()
                };
                let model = c
                    .fit(musk.select(&train))
                    .unwrap()
                    .scores(musk.select(&test))
                    .unwrap();
                let direct = c.fold_scores(&musk, &train, &test).unwrap();
                assert_eq!(direct, model, "{scaling:?} {hausdorff:?} {rank}");
            }
        }
    }

    #[test]
    fn precomputed_distances_give_the_same_scores() {
        let d = line_bags();
        let c = CitationKnn {
            references: 2,
            citers: 2,
            rank: 1,
            hausdorff: Hausdorff::Min,
            scaling: Scaling::None,
            class_weight: ClassWeight::None,
        };
        let dist = pairwise(&d, Hausdorff::Min);
        let (train, test) = ([0, 2, 3, 4, 5], [1]);
        let fast = c.scores_from_distances(&d, &dist, &train, &test).unwrap();
        let slow = c
            .fit(d.select(&train))
            .unwrap()
            .scores(d.select(&test))
            .unwrap();
        assert_eq!(fast, slow);
    }

    #[test]
    fn weka_scaling_rule() {
        // Attribute 0 spans [2, 10] on training bags; attribute 1 is constant 0 (Weka:
        // diff 0, NaN); attribute 2 is constant 5 (Weka: diff 0.5, contributes 0).
        let d = Dataset::new(
            "w",
            3,
            vec![2.0, 0.0, 5.0, 10.0, 0.0, 5.0, 20.0, 0.0, 5.0],
            vec![0, 1, 2, 3],
            vec!["a".into(), "b".into(), "t".into()],
            Some(vec![0, 1, 1]),
            vec!["0".into(), "1".into()],
        )
        .unwrap();
        let mut s = Scaler::fit(Scaling::Weka, &d, &[0, 1]);
        assert_eq!(
            s,
            Scaler::Weka {
                lo: vec![2.0 * 0.95, 0.0, 5.0 * 0.95],
                hi: vec![10.0 * 1.05, 0.0, 5.0 * 1.05]
            }
        );
        let scaled = s.apply(&d, &[0, 1]).unwrap();
        let diff = 10.0 * 1.05 - 2.0 * 0.95;
        assert_eq!(scaled.features()[0], (2.0 - 1.9) / diff);
        assert_eq!(scaled.features()[1], 0.0);
        assert_eq!(scaled.features()[2], (5.0 - 4.75) / (5.25 - 4.75));
        // Widening with the test bag (20): hi becomes 20·1.05, lo recovered as lo/0.95.
        s.widen(&d, 2);
        match &s {
            Scaler::Weka { lo, hi } => {
                assert_eq!(lo[0], (2.0 * 0.95) / 0.95 * 0.95);
                assert_eq!(hi[0], 20.0 * 1.05);
            }
            _ => unreachable!(),
        }
        // The constant attributes contribute nothing to distances in any mode.
        for scaling in [Scaling::Weka, Scaling::Zscore, Scaling::None] {
            let s = Scaler::fit(scaling, &d, &[0, 1])
                .apply(&d, &[0, 1, 2])
                .unwrap();
            for x in s.features().chunks_exact(3) {
                assert!(x[1] == 0.0 && x.iter().all(|v| v.is_finite()));
            }
        }
    }

    #[test]
    fn bad_parameters_are_errors() {
        let d = line_bags();
        let c = CitationKnn {
            citers: 5,
            ..Default::default()
        };
        assert!(c.fit(d.select(&[0, 1, 2, 3, 4])).is_err());
        let c = CitationKnn::default();
        assert!(c.fit(d.select(&[0, 1])).is_err());
        assert!(c
            .fit(d.without_labels().select(&[0, 1, 2, 3, 4, 5][..]))
            .is_err());
    }

    /// Weka's `distributionForInstance` loop, transcribed naively: widen the scaling
    /// with the bag, Weka's per-attribute distance, R references and C citers by
    /// sorting.
    fn weka_reference(
        d: &Dataset,
        train: &[usize],
        tests: &[usize],
        r: usize,
        c: usize,
    ) -> Vec<f64> {
        let dim = d.dim();
        let mut lo = vec![f64::INFINITY; dim];
        let mut hi = vec![f64::NEG_INFINITY; dim];
        for &b in train {
            for x in d.bag(b).instances() {
                for j in 0..dim {
                    lo[j] = lo[j].min(x[j]);
                    hi[j] = hi[j].max(x[j]);
                }
            }
        }
        lo.iter_mut().for_each(|v| *v *= 0.95);
        hi.iter_mut().for_each(|v| *v *= 1.05);
        let dist = |a: usize, b: usize, lo: &[f64], hi: &[f64]| {
            let mut best = f64::INFINITY;
            for x in d.bag(a).instances() {
                for y in d.bag(b).instances() {
                    let mut sum = 0.0;
                    for j in 0..dim {
                        let diff = hi[j] - lo[j];
                        if diff != 0.0 {
                            let t = (x[j] - lo[j]) / diff - (y[j] - lo[j]) / diff;
                            sum += t * t;
                        }
                    }
                    best = best.min(sum.sqrt());
                }
            }
            best
        };
        let labels = d.labels().unwrap();
        let radius: Vec<f64> = train
            .iter()
            .map(|&i| {
                let mut v: Vec<f64> = train
                    .iter()
                    .filter(|&&j| j != i)
                    .map(|&j| dist(i, j, &lo, &hi))
                    .collect();
                v.sort_by(f64::total_cmp);
                v[c - 1]
            })
            .collect();
        let mut out = Vec::new();
        for &t in tests {
            for j in 0..dim {
                let (mut mn, mut mx) = (lo[j] / 0.95, hi[j] / 1.05);
                for x in d.bag(t).instances() {
                    mn = if x[j] < mn { x[j] } else { mn };
                    mx = if x[j] > mx { x[j] } else { mx };
                }
                lo[j] = mn * 0.95;
                hi[j] = mx * 1.05;
            }
            let row: Vec<f64> = train.iter().map(|&j| dist(t, j, &lo, &hi)).collect();
            let mut sorted = row.clone();
            sorted.sort_by(f64::total_cmp);
            let mut votes = [1.0 / train.len() as f64; 2];
            for (k, &j) in train.iter().enumerate() {
                if row[k] <= sorted[r - 1] {
                    votes[labels[j]] += 1.0;
                }
                if row[k] <= radius[k] {
                    votes[labels[j]] += 1.0;
                }
            }
            let total = votes[0] + votes[1];
            out.extend([votes[0] / total, votes[1] / total]);
        }
        out
    }

    #[test]
    fn weka_mode_matches_a_transcription_of_weka() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(11);
        let (n_bags, dim) = (40, 5);
        let mut feats = Vec::new();
        let mut starts = vec![0];
        for b in 0..n_bags {
            let len = rng.random_range(1..5);
            for _ in 0..len {
                // Attribute 4 is constant zero (Weka: NaN); test bags (the last ten)
                // reach outside the training range, so the scaling widens.
                let spread = if b >= 30 { 14.0 } else { 10.0 };
                for j in 0..dim {
                    feats.push(if j == 4 {
                        0.0
                    } else {
                        rng.random_range(-3.0..spread)
                    });
                }
            }
            starts.push(starts.last().unwrap() + len);
        }
        let labels: Vec<usize> = (0..n_bags).map(|b| b % 2).collect();
        let d = Dataset::new(
            "rand",
            dim,
            feats,
            starts,
            (0..n_bags).map(|b| b.to_string()).collect(),
            Some(labels),
            vec!["0".into(), "1".into()],
        )
        .unwrap();
        let train: Vec<usize> = (0..30).collect();
        let model = CitationKnn {
            references: 2,
            citers: 4,
            rank: 1,
            hausdorff: Hausdorff::Min,
            scaling: Scaling::Weka,
            class_weight: ClassWeight::None,
        }
        .fit(d.select(&train))
        .unwrap();
        // Two test orders: the scores follow Weka in each (order-dependent) case.
        for tests in [(30..40).collect::<Vec<_>>(), (30..40).rev().collect()] {
            let ours = model.scores(d.select(&tests)).unwrap();
            let want = weka_reference(&d, &train, &tests, 2, 4);
            for (i, w) in want.chunks_exact(2).enumerate() {
                assert!((ours.row(i)[1] - w[1]).abs() < 1e-12, "bag {}", tests[i]);
            }
        }
    }
}
