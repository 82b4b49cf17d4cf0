//! MI-Wrapper (Frank & Xu 2003; Weka 3.6's `weka.classifiers.mi.MIWrapper`): every
//! instance is given its bag's label and a weight, a single-instance learner is trained
//! on all the instances, and a bag's probability combines its instances' probabilities
//! ([`Combine`]).
//!
//! Weights are Weka's default (`-A 3`): an instance of a bag of n_b instances weighs
//! N / (B · n_b) (N instances, B bags in the training set), so every bag weighs the
//! same, N / B, and the weights add up to N. The learner is ridge logistic regression —
//! MILR with one instance per bag and frequency weights
//! ([`crate::classifier::milr`]) — on standardised features with Weka `Logistic`'s
//! ridge λ = 10⁻⁸ by default. Multi-class data: one logistic regression per class
//! against the rest, each class's probabilities combined alone.
//!
//! This is the collective assumption of Xu & Frank: every instance carries the bag's
//! class with equal weight, not the standard MI assumption that one positive instance
//! makes a positive bag (the max combiner comes closest to it).

use serde::{Deserialize, Serialize};

use super::imbalance::ClassWeight;
use super::milr::{Milr, MilrModel, Pooling};
use super::{check_dim, BagModel, BagScores, Classifier};
use crate::data::{Bag, Bags, Dataset};
use crate::error::{Error, Result};
use crate::explain::{Explanation, InstanceScore};
use crate::numerics::sigmoid;

/// How a bag's instance probabilities p_1 … p_n become its probability (Weka's `-P`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Combine {
    /// The arithmetic mean Σ p_i / n (Weka's method 1, its default).
    #[default]
    Arithmetic,
    /// The normalised geometric means: Π p_i^{1/n} / (Π p_i^{1/n} + Π (1 − p_i)^{1/n}),
    /// which is σ(mean of the instance logits) (Weka's method 2).
    Geometric,
    /// The largest instance probability (Weka's method 3).
    Max,
}

mil_core::keywords!(Combine {
    Combine::Arithmetic => "arithmetic": "the mean of the instance probabilities (Weka's default)",
    Combine::Geometric => "geometric": "the normalised geometric mean: sigmoid of the mean instance logit",
    Combine::Max => "max": "the largest instance probability",
});

impl Combine {
    /// The bag probability from its instances' logits `z` (never empty).
    pub fn combine(self, z: &[f64]) -> f64 {
        let n = z.len() as f64;
        match self {
            Combine::Arithmetic => z.iter().map(|&v| sigmoid(v)).sum::<f64>() / n,
            Combine::Geometric => sigmoid(z.iter().sum::<f64>() / n),
            Combine::Max => sigmoid(z.iter().copied().fold(f64::NEG_INFINITY, f64::max)),
        }
    }
}

/// MI-Wrapper hyper-parameters.
///
/// ```
/// use mil_toolkit::classifier::mi_wrapper::{Combine, MiWrapper};
/// use mil_toolkit::classifier::{BagModel, Classifier};
///
/// let data = mil_toolkit::data::load("musk1")?;
/// let model = MiWrapper::default().combine(Combine::Max).ridge(1.0).fit(&data)?;
/// let explained = model.explain(data.select(&[0]))?;
/// // One probability per instance of the bag; the witness is the most probable one.
/// assert_eq!(explained[0].instance_scores.len(), data.bag(0).len());
/// # Ok::<(), mil_toolkit::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MiWrapper {
    /// How instance probabilities become a bag probability.
    pub combine: Combine,
    /// Ridge λ of the logistic regression on standardised instances (Weka's
    /// `Logistic -R`, 10⁻⁸).
    pub ridge: f64,
    /// Weight of each bag's instances by its class, on top of the equal bag weights.
    #[serde(default, skip_serializing_if = "ClassWeight::is_none")]
    pub class_weight: ClassWeight,
}

impl Default for MiWrapper {
    fn default() -> Self {
        MiWrapper {
            combine: Combine::Arithmetic,
            ridge: 1e-8,
            class_weight: ClassWeight::None,
        }
    }
}

crate::params::setters!(MiWrapper {
    combine: Combine,
    ridge: f64,
    class_weight: ClassWeight,
});

impl MiWrapper {
    /// The settings an inner CV tries when asked to tune MI-Wrapper (`mil cv --tune`):
    /// the ridge kept and 1.
    pub fn default_grid(&self) -> Vec<MiWrapper> {
        crate::classifier::simple_mi::ridge_grid(self.ridge, &[1.0], |r| self.ridge(r))
    }
}

impl MiWrapper {
    /// Checks the hyper-parameters alone, before any data is read (ridge finite and
    /// ≥ 0, class weights valid).
    pub fn check(&self) -> Result<()> {
        self.logistic().check()
    }

    /// The logistic regression fitted on the instances.
    fn logistic(&self) -> Milr {
        Milr::ridge_logistic(self.ridge, self.class_weight)
    }
}

/// The instances of the bags `bags` as a data set of one-instance bags, each labelled
/// with its bag's label, and each one's weight N / (B · n_b).
fn instances(data: &Dataset, bags: &[usize]) -> Result<(Dataset, Vec<f64>)> {
    let n: usize = bags.iter().map(|&b| data.bag(b).len()).sum();
    let per_bag = n as f64 / bags.len() as f64;
    let (mut features, mut ids, mut labels, mut weights) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let bag_labels = data.require_labels(1)?;
    for &b in bags {
        let bag = data.bag(b);
        features.extend_from_slice(bag.as_slice());
        for i in 0..bag.len() {
            ids.push(format!("{}/{}", data.bag_id(b), i + 1));
            labels.push(bag_labels[b]);
            weights.push(per_bag / bag.len() as f64);
        }
    }
    let set = Dataset::new(
        data.name(),
        data.dim(),
        features,
        (0..=n).collect(),
        ids,
        Some(labels),
        data.class_names().to_vec(),
    )?;
    Ok((set, weights))
}

/// A fitted MI-Wrapper: the logistic regression on instances, in raw feature units.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MiWrapperModel {
    /// Hyper-parameters.
    pub params: MiWrapper,
    /// The instance-level logistic regression.
    pub logistic: MilrModel,
}

impl Classifier for MiWrapper {
    type Model = MiWrapperModel;

    fn fit<'a>(&self, train: impl Into<Bags<'a>>) -> Result<MiWrapperModel> {
        let train = train.into();
        let (data, train) = (train.dataset(), &*train.indices());
        self.check()?;
        data.training_labels(train, 2)?;
        let (set, weights) = instances(data, train)?;
        let logistic = self
            .logistic()
            .fit_weighted(Bags::all(&set), Some(&weights))?;
        Ok(MiWrapperModel {
            params: *self,
            logistic,
        })
    }
}

impl MiWrapperModel {
    /// The logit w₀ + w·x of every instance of `bag` under binary problem `k`.
    fn logits(&self, k: usize, bag: Bag<'_>) -> Vec<f64> {
        let w = &self.logistic.weights[k];
        bag.instances()
            .map(|x| w[0] + x.iter().zip(&w[1..]).map(|(a, b)| a * b).sum::<f64>())
            .collect()
    }

    /// Checks a model read from a file.
    pub fn validate(&self) -> Result<()> {
        self.params
            .check()
            .map_err(|e| Error::Model(format!("mi-wrapper: {e}")))?;
        self.logistic.validate()?;
        if self.logistic.params.pooling != Pooling::Mean {
            return Err(Error::Model(
                "mi-wrapper: the logistic regression must use mean pooling".into(),
            ));
        }
        Ok(())
    }
}

impl BagModel for MiWrapperModel {
    fn n_classes(&self) -> usize {
        self.logistic.n_classes
    }

    fn input_dim(&self) -> usize {
        self.logistic.dim
    }

    fn scores<'a>(&self, bags: impl Into<Bags<'a>>) -> Result<BagScores> {
        let bags = bags.into();
        let data = bags.dataset();
        check_dim(data, self.input_dim())?;
        let n_classes = self.n_classes();
        let mut scores = Vec::with_capacity(bags.len() * n_classes);
        for b in bags.iter() {
            let bag = data.bag(b);
            if n_classes == 2 {
                let p = self.params.combine.combine(&self.logits(0, bag));
                scores.extend([1.0 - p, p]);
            } else {
                scores.extend(
                    (0..n_classes).map(|k| self.params.combine.combine(&self.logits(k, bag))),
                );
            }
        }
        Ok(BagScores::new(n_classes, scores))
    }

    /// Each instance's probability under the predicted class's logistic regression
    /// (the only one when binary); the witness is the most probable instance.
    fn explain<'a>(&self, bags: impl Into<Bags<'a>>) -> Result<Vec<Explanation>> {
        let bags = bags.into();
        let labels = self.scores(bags.clone())?.labels();
        let data = bags.dataset();
        Ok(bags
            .iter()
            .zip(labels)
            .map(|(b, label)| {
                let k = if self.n_classes() == 2 { 0 } else { label };
                Explanation::from_scores(
                    InstanceScore::Probability,
                    self.logistic.instance_probabilities(k, data.bag(b)),
                )
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    /// Random bags of 1–6 instances in one feature, labels drawn at random (so the
    /// instance likelihood has a finite unpenalised optimum).
    fn random_set(seed: u64, n_bags: usize) -> Dataset {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let (mut x, mut starts, mut labels) = (Vec::new(), vec![0], Vec::new());
        for _ in 0..n_bags {
            let len = rng.random_range(1..7);
            let positive = rng.random_range(0.0..1.0) < 0.5;
            for _ in 0..len {
                x.push(rng.random_range(-2.0..2.0) + if positive { 0.7 } else { 0.0 });
            }
            starts.push(starts.last().unwrap() + len);
            labels.push(usize::from(positive));
        }
        Dataset::new(
            "r",
            1,
            x,
            starts,
            (0..n_bags).map(|b| b.to_string()).collect(),
            Some(labels),
            vec!["0".into(), "1".into()],
        )
        .unwrap()
    }

    /// The unpenalised weighted logistic regression in one feature, by Newton's method:
    /// maximises Σ_b Σ_i (1 / n_b) [y_b log σ(a + c x_bi) + (1 − y_b) log σ(−a − c x_bi)]
    /// (each bag's instances weighing 1 in total; a common factor leaves the optimum).
    fn newton(data: &Dataset) -> (f64, f64) {
        let (mut a, mut c) = (0.0, 0.0);
        for _ in 0..100 {
            let (mut g, mut h) = ([0.0; 2], [[0.0; 2]; 2]);
            for b in 0..data.n_bags() {
                let bag = data.bag(b);
                let w = 1.0 / bag.len() as f64;
                let y = data.label(b).unwrap() as f64;
                for x in bag.instances() {
                    let p = sigmoid(a + c * x[0]);
                    let f = [1.0, x[0]];
                    for j in 0..2 {
                        g[j] += w * (y - p) * f[j];
                        for k in 0..2 {
                            h[j][k] += w * p * (1.0 - p) * f[j] * f[k];
                        }
                    }
                }
            }
            let det = h[0][0] * h[1][1] - h[0][1] * h[1][0];
            a += (h[1][1] * g[0] - h[0][1] * g[1]) / det;
            c += (h[0][0] * g[1] - h[1][0] * g[0]) / det;
        }
        (a, c)
    }

    #[test]
    fn the_fit_is_the_bag_weighted_logistic_regression() {
        for seed in 0..6 {
            let data = random_set(seed, 40);
            let (a, c) = newton(&data);
            let model = MiWrapper::default().ridge(0.0).fit(&data).unwrap();
            for b in 0..data.n_bags() {
                let got = model.logistic.instance_probabilities(0, data.bag(b));
                for (p, x) in got.iter().zip(data.bag(b).instances()) {
                    let want = sigmoid(a + c * x[0]);
                    // L-BFGS stops at a gradient norm of 1e-6 on an objective of ~N
                    // terms; the probabilities agree to well within 1e-4.
                    assert!(
                        (p - want).abs() < 1e-4,
                        "seed {seed} bag {b}: {p} vs {want}"
                    );
                }
            }
        }
    }

    #[test]
    fn combiners_match_their_definitions() {
        let z = [-1.0f64, 0.5, 2.0];
        let p: Vec<f64> = z.iter().map(|&v| 1.0 / (1.0 + (-v).exp())).collect();
        let arithmetic = p.iter().sum::<f64>() / 3.0;
        let gp = p.iter().product::<f64>().powf(1.0 / 3.0);
        let gq = p.iter().map(|v| 1.0 - v).product::<f64>().powf(1.0 / 3.0);
        let max = p[2];
        for (combine, want) in [
            (Combine::Arithmetic, arithmetic),
            (Combine::Geometric, gp / (gp + gq)),
            (Combine::Max, max),
        ] {
            assert!((combine.combine(&z) - want).abs() < 1e-14, "{combine:?}");
        }
    }

    #[test]
    fn explanations_combine_to_the_bag_score_whatever_the_instance_order() {
        for seed in 0..4 {
            let data = random_set(seed, 20);
            for combine in [Combine::Arithmetic, Combine::Geometric, Combine::Max] {
                let model = MiWrapper::default().combine(combine).fit(&data).unwrap();
                let scores = model.scores(&data).unwrap();
                for (b, e) in model.explain(&data).unwrap().iter().enumerate() {
                    let p = &e.instance_scores;
                    assert_eq!(p.len(), data.bag(b).len());
                    let n = p.len() as f64;
                    let pooled = match combine {
                        Combine::Arithmetic => p.iter().sum::<f64>() / n,
                        Combine::Geometric => {
                            let gp = p.iter().map(|v| v.ln()).sum::<f64>() / n;
                            let gq = p.iter().map(|v| (1.0 - v).ln()).sum::<f64>() / n;
                            1.0 / (1.0 + (gq - gp).exp())
                        }
                        Combine::Max => p[e.witnesses[0]],
                    };
                    assert!(
                        (pooled - scores.row(b)[1]).abs() < 1e-12,
                        "seed {seed} {combine:?} bag {b}"
                    );
                    let max = p.iter().copied().fold(0.0, f64::max);
                    assert_eq!(p[e.witnesses[0]], max);
                }
                // Reversing every bag's instances changes no bag score.
                let mut x = Vec::new();
                for b in 0..data.n_bags() {
                    let bag = data.bag(b);
                    for i in (0..bag.len()).rev() {
                        x.extend_from_slice(bag.instance(i));
                    }
                }
                let reversed = data.with_features(1, x).unwrap();
                let again = model.scores(&reversed).unwrap();
                for b in 0..data.n_bags() {
                    assert!((again.row(b)[1] - scores.row(b)[1]).abs() < 1e-12);
                }
            }
        }
    }

    #[test]
    fn separable_bags_are_learned() {
        let mut data = random_set(9, 30);
        // Relabel: positive exactly when every instance is above 0 (and so is the mean).
        let mut x = Vec::new();
        let mut labels = Vec::new();
        for b in 0..data.n_bags() {
            let positive = b % 2 == 0;
            for v in data.bag(b).as_slice() {
                x.push(if positive {
                    v.abs() + 0.1
                } else {
                    -v.abs() - 0.1
                });
            }
            labels.push(usize::from(positive));
        }
        data = Dataset::new(
            "sep",
            1,
            x,
            data.bag_starts().to_vec(),
            data.bag_ids().to_vec(),
            Some(labels.clone()),
            vec!["0".into(), "1".into()],
        )
        .unwrap();
        for combine in [Combine::Arithmetic, Combine::Geometric, Combine::Max] {
            let model = MiWrapper::default().combine(combine).fit(&data).unwrap();
            assert_eq!(model.scores(&data).unwrap().labels(), labels, "{combine:?}");
        }
    }

    #[test]
    fn damaged_models_are_refused() {
        let data = random_set(2, 12);
        let model = MiWrapper::default().fit(&data).unwrap();
        assert!(model.validate().is_ok());
        let mut short = model.clone();
        short.logistic.weights[0].pop();
        assert!(short.validate().is_err());
        let mut infinite = model.clone();
        infinite.logistic.weights[0][1] = f64::INFINITY;
        assert!(infinite.validate().is_err());
        let mut bad_ridge = model;
        bad_ridge.params.ridge = f64::NAN;
        assert!(bad_ridge.validate().is_err());
    }
}
