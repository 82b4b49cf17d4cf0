//! SimpleMI (Frank & Xu 2003; Weka 3.6's `weka.classifiers.mi.SimpleMI`): each bag
//! becomes one vector that summarises its instances ([`Summary`]), and a
//! single-instance learner is trained on those vectors, one per bag.
//!
//! The learner is ridge logistic regression: MILR with one instance per bag
//! ([`crate::classifier::milr`]; any pooling of one probability is that probability),
//! on standardised summaries with the ridge λ = 10⁻⁸ of Weka's `Logistic` by default.
//! Multi-class data: one logistic regression per class against the rest.
//!
//! A bag is reduced to one vector before learning, so the model defines no score per
//! instance: [`BagModel::explain`] returns no witnesses.

use serde::{Deserialize, Serialize};

use super::imbalance::ClassWeight;
use super::milr::{Milr, MilrModel, Pooling};
use super::{check_dim, BagModel, BagScores, Classifier};
use crate::data::{Bag, Bags, Dataset};
use crate::error::{Error, Result};
use crate::explain::Explanation;

/// How a bag becomes one vector (Weka's `-M`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Summary {
    /// The arithmetic mean of the instances, feature by feature (Weka's method 1, its
    /// default).
    #[default]
    Mean,
    /// The centre of the bag's bounding box, (min + max) / 2 feature by feature (Weka's
    /// method 2, which it calls the "geometric" centre).
    Geometric,
    /// The feature-wise minima followed by the maxima, 2·D values (Weka's method 3).
    #[serde(rename = "minmax")]
    MinMax,
}

mil_core::keywords!(Summary {
    Summary::Mean => "mean": "the arithmetic mean of the bag's instances (Weka's default)",
    Summary::Geometric => "geometric": "the centre of the bag's bounding box, (min + max) / 2 per feature (Weka's \"geometric\")",
    Summary::MinMax => "minmax": "the minima then the maxima of each feature (2 values per feature)",
});

impl Summary {
    /// The length of the summary of a bag of `dim` features.
    pub fn width(self, dim: usize) -> usize {
        match self {
            Summary::MinMax => 2 * dim,
            Summary::Mean | Summary::Geometric => dim,
        }
    }

    /// The summary vector of one bag.
    pub fn summarize(self, bag: Bag<'_>) -> Vec<f64> {
        // Each summary reads only what it needs: a bag's pass is most of a CV's work.
        match self {
            Summary::Mean => {
                let mut sum = vec![0.0; bag.dim()];
                for x in bag.instances() {
                    for (s, v) in sum.iter_mut().zip(x) {
                        *s += v;
                    }
                }
                let n = bag.len() as f64;
                sum.iter().map(|s| s / n).collect()
            }
            // Half of each, so that two huge values of one sign cannot overflow.
            Summary::Geometric => {
                let (lo, hi) = bounds(bag);
                lo.iter().zip(&hi).map(|(a, b)| a / 2.0 + b / 2.0).collect()
            }
            Summary::MinMax => {
                let (lo, hi) = bounds(bag);
                lo.into_iter().chain(hi).collect()
            }
        }
    }
}

/// Each feature's least and greatest value over the bag's instances.
fn bounds(bag: Bag<'_>) -> (Vec<f64>, Vec<f64>) {
    let mut lo = vec![f64::INFINITY; bag.dim()];
    let mut hi = vec![f64::NEG_INFINITY; bag.dim()];
    for x in bag.instances() {
        for ((l, h), &v) in lo.iter_mut().zip(&mut hi).zip(x) {
            *l = l.min(v);
            *h = h.max(v);
        }
    }
    (lo, hi)
}

/// The bags `bags` of `data` as a data set of one summary vector per bag (labels kept).
pub(crate) fn summaries(data: &Dataset, bags: &[usize], summary: Summary) -> Result<Dataset> {
    let mut features = Vec::with_capacity(bags.len() * summary.width(data.dim()));
    for &b in bags {
        features.extend(summary.summarize(data.bag(b)));
    }
    Dataset::new(
        data.name(),
        summary.width(data.dim()),
        features,
        (0..=bags.len()).collect(),
        bags.iter().map(|&b| data.bag_id(b).to_string()).collect(),
        data.labels().map(|l| bags.iter().map(|&b| l[b]).collect()),
        data.class_names().to_vec(),
    )
}

/// SimpleMI hyper-parameters.
///
/// ```
/// use mil_toolkit::classifier::simple_mi::{SimpleMi, Summary};
/// use mil_toolkit::classifier::{BagModel, Classifier};
///
/// let data = mil_toolkit::data::load("musk1")?;
/// let model = SimpleMi::default().summary(Summary::MinMax).ridge(1.0).fit(&data)?;
/// let scores = model.scores(&data)?;
/// // Probabilities of [negative, positive] per bag.
/// assert!((scores.row(0).iter().sum::<f64>() - 1.0).abs() < 1e-9);
/// # Ok::<(), mil_toolkit::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SimpleMi {
    /// How a bag becomes one vector.
    pub summary: Summary,
    /// Ridge λ of the logistic regression on the standardised summaries (Weka's
    /// `Logistic -R`, 10⁻⁸).
    pub ridge: f64,
    /// Weight of each bag's likelihood term by its class.
    #[serde(default, skip_serializing_if = "ClassWeight::is_none")]
    pub class_weight: ClassWeight,
}

impl Default for SimpleMi {
    fn default() -> Self {
        SimpleMi {
            summary: Summary::Mean,
            ridge: 1e-8,
            class_weight: ClassWeight::None,
        }
    }
}

crate::params::setters!(SimpleMi {
    summary: Summary,
    ridge: f64,
    class_weight: ClassWeight,
});

impl SimpleMi {
    /// The settings an inner CV tries when asked to tune SimpleMI (the `auto`
    /// classifier, `mil cv --tune`): the ridge kept, 1 and 100 — Weka's 10⁻⁸ overfits
    /// summaries with more features than bags.
    pub fn default_grid(&self) -> Vec<SimpleMi> {
        ridge_grid(self.ridge, &[1.0, 100.0], |r| self.ridge(r))
    }
}

/// `own` followed by `others` (without repeats) as parameters built by `with`.
pub(crate) fn ridge_grid<T>(own: f64, others: &[f64], with: impl Fn(f64) -> T) -> Vec<T> {
    let mut ridges = vec![own];
    ridges.extend(others.iter().copied().filter(|&r| r != own));
    ridges.into_iter().map(with).collect()
}

impl SimpleMi {
    /// Checks the hyper-parameters alone, before any data is read (ridge finite and
    /// ≥ 0, class weights valid).
    pub fn check(&self) -> Result<()> {
        self.logistic().check()
    }

    /// The logistic regression fitted on the summaries.
    fn logistic(&self) -> Milr {
        Milr::ridge_logistic(self.ridge, self.class_weight)
    }
}

/// A fitted SimpleMI: the logistic regression on the summaries of the training bags.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimpleMiModel {
    /// Hyper-parameters.
    pub params: SimpleMi,
    /// Feature dimension of the bags' instances.
    pub dim: usize,
    /// The logistic regression on summary vectors ([`Summary::width`] features).
    pub logistic: MilrModel,
}

impl Classifier for SimpleMi {
    type Model = SimpleMiModel;

    fn fit<'a>(&self, train: impl Into<Bags<'a>>) -> Result<SimpleMiModel> {
        let train = train.into();
        let (data, train) = (train.dataset(), &*train.indices());
        self.check()?;
        data.training_labels(train, 2)?;
        let summaries = summaries(data, train, self.summary)?;
        let logistic = self.logistic().fit_weighted(Bags::all(&summaries), None)?;
        Ok(SimpleMiModel {
            params: *self,
            dim: data.dim(),
            logistic,
        })
    }
}

impl SimpleMiModel {
    /// Checks a model read from a file.
    pub fn validate(&self) -> Result<()> {
        self.params
            .check()
            .map_err(|e| Error::Model(format!("simple-mi: {e}")))?;
        self.logistic.validate()?;
        if self.dim == 0 || self.logistic.dim != self.params.summary.width(self.dim) {
            return Err(Error::Model(format!(
                "simple-mi: a logistic regression on {} features does not fit {} summaries of {} features",
                self.logistic.dim, self.params.summary, self.dim
            )));
        }
        if self.logistic.params.pooling != Pooling::Mean {
            return Err(Error::Model(
                "simple-mi: the logistic regression must use mean pooling".into(),
            ));
        }
        Ok(())
    }
}

impl BagModel for SimpleMiModel {
    fn n_classes(&self) -> usize {
        self.logistic.n_classes
    }

    fn input_dim(&self) -> usize {
        self.dim
    }

    fn scores<'a>(&self, bags: impl Into<Bags<'a>>) -> Result<BagScores> {
        let bags = bags.into();
        let (data, bags) = (bags.dataset(), &*bags.indices());
        check_dim(data, self.dim)?;
        if bags.is_empty() {
            return Ok(BagScores::new(self.n_classes(), Vec::new()));
        }
        let summaries = summaries(data, bags, self.params.summary)?;
        self.logistic.scores(&summaries)
    }

    /// No instance scores: a bag is one summary vector to the model.
    fn explain<'a>(&self, bags: impl Into<Bags<'a>>) -> Result<Vec<Explanation>> {
        let bags = bags.into();
        check_dim(bags.dataset(), self.dim)?;
        Ok(bags.iter().map(|_| Explanation::none()).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classifier::milr::Milr;
    use rand::{RngExt, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    /// Random bags of 1–5 instances in `dim` features; label 1 when the bag's first
    /// feature's mean is above `shift` (so the summaries carry the label).
    fn random_set(seed: u64, n_bags: usize, dim: usize) -> Dataset {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let (mut x, mut starts, mut labels) = (Vec::new(), vec![0], Vec::new());
        for b in 0..n_bags {
            let len = rng.random_range(1..6);
            let centre = if b % 2 == 0 { 1.5 } else { -1.5 };
            for _ in 0..len {
                x.push(centre + rng.random_range(-1.0..1.0));
                for _ in 1..dim {
                    x.push(rng.random_range(-2.0..2.0));
                }
            }
            starts.push(starts.last().unwrap() + len);
            labels.push(usize::from(b % 2 == 0));
        }
        Dataset::new(
            "r",
            dim,
            x,
            starts,
            (0..n_bags).map(|b| b.to_string()).collect(),
            Some(labels),
            vec!["0".into(), "1".into()],
        )
        .unwrap()
    }

    #[test]
    fn summaries_match_their_definitions() {
        let rows = [1.0, -4.0, 3.0, 2.0, -2.0, 8.0];
        let bag = Bag::from_rows(&rows, 2);
        assert_eq!(Summary::Mean.summarize(bag), vec![2.0 / 3.0, 2.0]);
        assert_eq!(Summary::Geometric.summarize(bag), vec![0.5, 2.0]);
        assert_eq!(Summary::MinMax.summarize(bag), vec![-2.0, -4.0, 3.0, 8.0]);
        for s in [Summary::Mean, Summary::Geometric, Summary::MinMax] {
            assert_eq!(s.summarize(bag).len(), s.width(2));
        }
    }

    #[test]
    fn one_instance_bags_fit_milr_with_any_pooling() {
        // A bag of one instance summarises to that instance under every summary but
        // minmax, and MILR pools one probability to itself: the same logistic model.
        for seed in 0..4 {
            let data = random_set(seed, 30, 3);
            let singles = summaries(&data, &(0..30).collect::<Vec<_>>(), Summary::Mean).unwrap();
            let milr = Milr::default().ridge(0.5).fit(&singles).unwrap();
            for summary in [Summary::Mean, Summary::Geometric] {
                let simple = SimpleMi::default()
                    .summary(summary)
                    .ridge(0.5)
                    .fit(&singles)
                    .unwrap();
                let (a, b) = (
                    simple.scores(&singles).unwrap(),
                    milr.scores(&singles).unwrap(),
                );
                for i in 0..30 {
                    // Two L-BFGS runs that stop at a gradient norm of 1e-6 on a strongly
                    // convex objective (ridge 0.5): probabilities agree to ~1e-6.
                    assert!(
                        (a.row(i)[1] - b.row(i)[1]).abs() < 1e-5,
                        "seed {seed} {summary:?} bag {i}: {} vs {}",
                        a.row(i)[1],
                        b.row(i)[1]
                    );
                }
            }
        }
    }

    #[test]
    fn separable_summaries_are_learned_and_order_does_not_matter() {
        for seed in 0..5 {
            let data = random_set(seed, 40, 2);
            let labels = data.labels().unwrap().to_vec();
            for summary in [Summary::Mean, Summary::Geometric, Summary::MinMax] {
                let model = SimpleMi::default().summary(summary).fit(&data).unwrap();
                let scores = model.scores(&data).unwrap();
                assert_eq!(scores.labels(), labels, "seed {seed} {summary:?}");
                // Reversing the instances of every bag changes no summary (the mean up to
                // the order of its sum), so no score.
                let mut x = Vec::new();
                for b in 0..data.n_bags() {
                    let bag = data.bag(b);
                    for i in (0..bag.len()).rev() {
                        x.extend_from_slice(bag.instance(i));
                    }
                }
                let reversed = data.with_features(2, x).unwrap();
                let again = model.scores(&reversed).unwrap();
                for b in 0..data.n_bags() {
                    let (p, q) = (again.row(b)[1], scores.row(b)[1]);
                    assert!((p - q).abs() < 1e-12, "{summary:?} bag {b}: {p} vs {q}");
                }
            }
        }
    }

    #[test]
    fn bags_are_explained_without_instance_scores() {
        let data = random_set(1, 12, 2);
        let model = SimpleMi::default().fit(&data).unwrap();
        for e in model.explain(&data).unwrap() {
            assert!(e.witnesses.is_empty() && e.instance_scores.is_empty());
        }
    }

    #[test]
    fn damaged_models_are_refused() {
        let data = random_set(2, 12, 2);
        let model = SimpleMi::default()
            .summary(Summary::MinMax)
            .fit(&data)
            .unwrap();
        assert!(model.validate().is_ok());
        let mut wrong_width = model.clone();
        wrong_width.params.summary = Summary::Mean;
        assert!(wrong_width.validate().is_err());
        let mut bad_ridge = model.clone();
        bad_ridge.params.ridge = -1.0;
        assert!(bad_ridge.validate().is_err());
        let mut short = model;
        short.logistic.weights[0].pop();
        assert!(short.validate().is_err());
    }

    #[test]
    fn bad_parameters_are_refused_before_the_data() {
        let data = random_set(3, 12, 2);
        for ridge in [-1.0, f64::NAN, f64::INFINITY] {
            let err = SimpleMi::default().ridge(ridge).fit(&data).unwrap_err();
            assert!(err.to_string().contains("ridge"), "{err}");
        }
    }
}
