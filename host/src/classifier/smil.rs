//! sMIL and sbMIL (Bunescu & Mooney, "Multiple instance learning for sparse positive
//! bags", ICML 2007): SVMs for positive bags that hold few positive instances.
//!
//! - sMIL ([`Variant::Sparse`]): an SVM whose training points are every instance of the
//!   negative bags (label −1, margin 1) and every positive bag X as the mean of its
//!   instances in feature space, φ(X) = (1/|X|) Σ_{x∈X} φ(x) (label +1). A positive bag's
//!   margin is relaxed to (2 − |X|)/|X|: what the mean reaches when one instance has
//!   margin 1 and the other |X| − 1 sit at −1. The kernel between two points is the mean of
//!   the instance kernels over their instances, and the dual is the SVM dual with the
//!   linear term p = −margin, solved by the project's SMO (`optim::smo::solve_general`).
//!   Since f is linear in φ, f(X) = (1/|X|) Σ_{x∈X} f(x): a bag's score is the mean of its
//!   instances' decision values.
//! - sbMIL ([`Variant::Balanced`]): sMIL first; then the instances of the positive bags
//!   are labelled by its decision values — the n largest positive, the rest negative, with
//!   n = round(η·L₊) for L₊ positive-bag instances, at least the number of positive bags
//!   (misvm's rule, one cut over all positive bags together) — and an instance SVM is
//!   trained on every instance with those labels. A bag's score is max over its instances.
//!
//! As in the misvm package, C is spread over the points of each kind: C/L₋ for each of
//! the L₋ negative instances and C/B₊ for each of the B₊ positive bags in sMIL, C/L for
//! each of the L instances of sbMIL's instance SVM (times the class weight of the point's
//! bag). Features are z-scored on the training instances, as mi-SVM does; the RBF γ
//! defaults to 1 / (number of features). Binary data only: class 1 is the positive class.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::imbalance::{best_threshold, ClassWeight, ThresholdMetric};
use super::mi_svm::{gram, standardisation, zscore, Expansion, InstanceKernel, Kernel};
use super::{check_dim, BagModel, BagScores, Classifier};
use crate::data::Bags;
use crate::error::{Error, Result};
use crate::explain::{Explanation, InstanceScore};
use crate::numerics::first_argmax;
use crate::optim::smo::{self, SmoParams};

/// sMIL or sbMIL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Variant {
    /// sMIL: one SVM over negative instances and positive bag means; a bag's score is the
    /// mean of its instances' decision values.
    #[default]
    #[serde(rename = "smil")]
    Sparse,
    /// sbMIL: sMIL labels the positive bags' instances, then an instance SVM; a bag's
    /// score is the largest of its instances' decision values.
    #[serde(rename = "sbmil")]
    Balanced,
}

/// Where the bag score's threshold 0 is put: the bias b of f(x) = Σ cₛ k(s, x) + b.
///
/// misvm's bias keeps the training points on ±1 on average, but sMIL's positive bags are
/// fitted to the relaxed margin (2 − |X|)/|X| < 0, so a positive bag's mean score sits
/// below 0 and the sign labels most bags negative (elephant: AUROC 0.91, accuracy 51 %).
/// The training cut moves b so that 0 is the cut of the training bags' own scores that
/// maximises their balanced accuracy; it changes no bag's rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Bias {
    /// b such that 0 is the best cut of the training bags' scores by balanced accuracy
    /// (ties: the lowest such cut).
    #[default]
    TrainingCut,
    /// misvm's: the mean over the support points of yᵢ − Σⱼ αⱼyⱼKᵢⱼ.
    SupportMean,
}

mil_core::keywords!(Bias {
    Bias::TrainingCut => "training-cut": "sMIL/sbMIL: 0 is the cut of the training bags' scores of best balanced accuracy",
    Bias::SupportMean => "support-mean": "sMIL/sbMIL: misvm's bias, the support points on +-1 on average",
});

impl Bias {
    /// What a saved model without the field was fitted with.
    fn before_training_cut() -> Bias {
        Bias::SupportMean
    }
}

/// sMIL / sbMIL hyper-parameters. The defaults are those of the misvm package — linear
/// kernel, C = 1, η = 0 (sbMIL then labels as many instances positive as there are
/// positive bags); the RBF γ defaults to 1 / (number of features), on z-scored features
/// — but for the bias ([`Bias::TrainingCut`]; misvm's is [`Bias::SupportMean`]).
///
/// ```
/// use mil_toolkit::classifier::smil::{Smil, Variant};
/// use mil_toolkit::classifier::{BagModel, Classifier};
///
/// let data = mil_toolkit::data::load("musk1")?;
/// let model = Smil::default().variant(Variant::Balanced).eta(0.1).fit(&data)?;
/// let labels = model.scores(&data)?.labels();
/// assert_eq!(labels.len(), data.n_bags());
/// # Ok::<(), mil_toolkit::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Smil {
    /// sMIL or sbMIL.
    pub variant: Variant,
    /// The instance kernel.
    pub kernel: InstanceKernel,
    /// γ of the RBF kernel on z-scored features; `None`: 1 / (number of features).
    pub gamma: Option<f64>,
    /// Misclassification cost C, shared by the points of each kind (see the module).
    pub cost: f64,
    /// sbMIL: the expected fraction η of positive instances in the positive bags.
    pub eta: f64,
    /// Each point's cost is multiplied by the weight of its bag's class.
    #[serde(default, skip_serializing_if = "ClassWeight::is_none")]
    pub class_weight: ClassWeight,
    /// Where the bag score's threshold 0 is put.
    #[serde(default = "Bias::before_training_cut")]
    pub bias: Bias,
}

impl Default for Smil {
    fn default() -> Self {
        Smil {
            variant: Variant::Sparse,
            kernel: InstanceKernel::Linear,
            gamma: None,
            cost: 1.0,
            eta: 0.0,
            class_weight: ClassWeight::None,
            bias: Bias::TrainingCut,
        }
    }
}

crate::params::setters!(Smil {
    variant: Variant,
    kernel: InstanceKernel,
    gamma: Option<f64>,
    cost: f64,
    eta: f64,
    class_weight: ClassWeight,
    bias: Bias,
});

impl Smil {
    /// The settings an inner CV tries when asked to tune sMIL or sbMIL
    /// (`mil cv --tune`): C ∈ {C kept, 10, 100} — at misvm's C = 1 both rank bags well
    /// but put most of them on the negative side of 0.
    pub fn default_grid(&self) -> Vec<Smil> {
        let mut costs = vec![self.cost];
        costs.extend([10.0, 100.0].into_iter().filter(|&c| c != self.cost));
        costs.into_iter().map(|c| self.cost(c)).collect()
    }
}

impl Smil {
    /// Checks the hyper-parameters alone, before any data is read.
    pub fn check(&self) -> Result<()> {
        crate::params::check_weight("cost", self.cost, true)?;
        if let Some(g) = self.gamma {
            crate::params::check_weight("gamma", g, true)?;
            if self.kernel == InstanceKernel::Linear {
                return Err(Error::parameter(
                    "gamma",
                    g,
                    "applies to the rbf kernel only; the linear kernel has no width",
                ));
            }
        }
        if !(0.0..=1.0).contains(&self.eta) {
            return Err(Error::parameter(
                "eta",
                self.eta,
                "is a fraction of instances: it must be in [0, 1]",
            ));
        }
        if self.eta != 0.0 && self.variant == Variant::Sparse {
            return Err(Error::parameter(
                "eta",
                self.eta,
                "applies to sbMIL only; sMIL labels no instance",
            ));
        }
        self.class_weight.check()
    }

    /// The classifier's name for this variant.
    pub fn kind(&self) -> super::ClassifierKind {
        match self.variant {
            Variant::Sparse => super::ClassifierKind::Smil,
            Variant::Balanced => super::ClassifierKind::Sbmil,
        }
    }
}

/// Memory and work of fitting sMIL or sbMIL on data of this shape: the Gram matrix over
/// all instances, each training point's kernel row over the instances and the Gram matrix
/// of the training points (each at most the instances'), beside the data and its z-scored
/// copy; the work is one kernel term per pair of instances.
pub fn footprint(shape: crate::params::Shape) -> crate::params::Estimate {
    let n = shape.instances as f64;
    crate::params::Estimate::values(3.0 * n * n + 2.0 * shape.values(), n * n * shape.dim as f64)
}

/// How many of the `instances` positive-bag instances sbMIL labels positive: round(η·L₊)
/// (halves to even, as misvm's Python `round`), at least one per positive bag on average
/// (`bags`), at most all.
pub fn positive_count(eta: f64, instances: usize, bags: usize) -> usize {
    let n = (eta * instances as f64).round_ties_even() as usize;
    n.min(instances).max(bags)
}

/// sbMIL's labels of the positive bags' instances from their sMIL decision values `f`:
/// true for every value at least the `count`-th largest (ties at the cut are all positive,
/// as in misvm). `1 ≤ count ≤ f.len()`.
pub fn balanced_labels(f: &[f64], count: usize) -> Vec<bool> {
    let mut sorted = f.to_vec();
    sorted.sort_by(|a, b| b.total_cmp(a));
    let cut = sorted[count - 1];
    f.iter().map(|&v| v >= cut).collect()
}

/// The bias as misvm computes it for both SVMs: the mean over the support points
/// (αᵢ > 0) of yᵢ − Σⱼ αⱼyⱼKᵢⱼ, the b that puts them on ±1 on average. For sMIL the KKT
/// bias of the dual would put a free positive bag on its relaxed margin
/// (2 − |X|)/|X| < 0, so that sign(f(X)) labels it negative; this one keeps 0 as the
/// threshold of the bag score. 0 when no point is a support point.
fn support_mean_bias(q: &[f64], y: &[f64], alpha: &[f64]) -> f64 {
    let m = y.len();
    let support: Vec<usize> = (0..m).filter(|&i| alpha[i] > 0.0).collect();
    if support.is_empty() {
        return 0.0;
    }
    let residual: f64 = support
        .iter()
        .map(|&i| {
            let g: f64 = support
                .iter()
                .map(|&j| alpha[j] * y[j] * q[i * m + j])
                .sum();
            y[i] - g
        })
        .sum();
    residual / support.len() as f64
}

/// f(x) − b = Σₛ cₛ rowₛ[t] of the `n` training instances, from each support term's
/// coefficient cₛ and kernel row over the instances. The rows are walked contiguously
/// (a block of instances at a time, in parallel); every instance's sum adds its terms in
/// the given order starting from −0.0, as `Iterator::sum` does, so the values are those
/// of summing instance by instance.
fn unbiased_decisions(n: usize, terms: &[(f64, &[f64])]) -> Vec<f64> {
    const BLOCK: usize = 512;
    let mut f = vec![-0.0; n];
    f.par_chunks_mut(BLOCK).enumerate().for_each(|(b, block)| {
        let (start, len) = (b * BLOCK, block.len());
        for (c, row) in terms {
            for (ft, r) in block.iter_mut().zip(&row[start..start + len]) {
                *ft += c * r;
            }
        }
    });
    f
}

/// [`Bias::TrainingCut`]'s bias: minus the cut of the training bags' unbiased scores
/// that maximises their balanced accuracy (class 1 positive), so that a bag is positive
/// when its score exceeds 0. 0 without bags.
fn training_cut_bias(scores: &[f64], labels: &[usize]) -> f64 {
    let positive: Vec<bool> = labels.iter().map(|&l| l == 1).collect();
    best_threshold(scores, &positive, ThresholdMetric::BalancedAccuracy).map_or(0.0, |cut| -cut)
}

/// A fitted sMIL or sbMIL: an instance decision function f(x) = Σ cₛ k(s, x) + b over
/// stored z-scored instances s. For sMIL, each instance of a support bag X carries
/// αy/|X| (its share of the bag mean), so f is the same sum either way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SmilModel {
    /// Hyper-parameters.
    pub params: Smil,
    /// The instance function f: the z-score, support instances, cₛ and b.
    #[serde(flatten)]
    pub expansion: Expansion,
    /// sbMIL: how many positive-bag instances were labelled positive (0 for sMIL).
    pub positives: usize,
}

/// A training point of sMIL: instances (indices into the instance Gram matrix) whose mean
/// in feature space it is.
struct Point {
    instances: std::ops::Range<usize>,
    label: f64,
}

/// sMIL's dual over the instance Gram matrix `k` of the training bags (`starts`: where
/// each bag's instances begin, `labels`: 0 or 1 per bag, `weights`: per class).
struct Dual {
    /// The training points: each negative instance, then each positive bag.
    points: Vec<Point>,
    /// Each point's mean kernel row over the instances.
    rows: Vec<Vec<f64>>,
    /// The points' Gram matrix K (the mean of the instance kernels), row-major.
    q: Vec<f64>,
    /// Labels ±1.
    y: Vec<f64>,
    /// Upper bounds Cᵢ.
    bounds: Vec<f64>,
    /// p = −margin.
    linear: Vec<f64>,
}

impl Dual {
    fn new(cost: f64, k: &[f64], starts: &[usize], labels: &[usize], weights: &[f64]) -> Dual {
        let n = starts[labels.len()];
        // sMIL's points: each negative instance, then each positive bag.
        let bags = 0..labels.len();
        let mut points: Vec<Point> = bags
            .clone()
            .filter(|&b| labels[b] == 0)
            .flat_map(|b| starts[b]..starts[b + 1])
            .map(|t| Point {
                instances: t..t + 1,
                label: -1.0,
            })
            .collect();
        let negatives = points.len();
        points.extend(bags.clone().filter(|&b| labels[b] == 1).map(|b| Point {
            instances: starts[b]..starts[b + 1],
            label: 1.0,
        }));
        let positive_bags = points.len() - negatives;
        let bounds: Vec<f64> = points
            .iter()
            .map(|p| {
                if p.label < 0.0 {
                    cost / negatives as f64 * weights[0]
                } else {
                    cost / positive_bags as f64 * weights[1]
                }
            })
            .collect();
        // p = −margin: 1 for an instance, (2 − |X|)/|X| for a positive bag.
        let linear: Vec<f64> = points
            .iter()
            .map(|p| {
                let size = p.instances.len() as f64;
                if p.label < 0.0 {
                    -1.0
                } else {
                    -(2.0 - size) / size
                }
            })
            .collect();
        let y: Vec<f64> = points.iter().map(|p| p.label).collect();
        // Each point's mean kernel row over the instances, then the points' Gram matrix.
        let rows: Vec<Vec<f64>> = points
            .par_iter()
            .map(|p| {
                let w = 1.0 / p.instances.len() as f64;
                let mut row = vec![0.0; n];
                for s in p.instances.clone() {
                    row.iter_mut()
                        .zip(&k[s * n..(s + 1) * n])
                        .for_each(|(r, v)| *r += v);
                }
                row.iter_mut().for_each(|r| *r *= w);
                row
            })
            .collect();
        let m = points.len();
        let mut q = vec![0.0; m * m];
        q.par_chunks_mut(m).enumerate().for_each(|(a, out)| {
            for (b, v) in out.iter_mut().enumerate() {
                let p = &points[b];
                *v = rows[a][p.instances.clone()].iter().sum::<f64>() / p.instances.len() as f64;
            }
        });
        Dual {
            points,
            rows,
            q,
            y,
            bounds,
            linear,
        }
    }
}

impl Classifier for Smil {
    type Model = SmilModel;

    fn fit<'a>(&self, train: impl Into<Bags<'a>>) -> Result<SmilModel> {
        let train = train.into();
        let (data, train) = (train.dataset(), &*train.indices());
        self.check()?;
        let labels = data.training_labels(train, 2)?;
        if data.n_classes() != 2 {
            return Err(Error::data(
                data.name(),
                format!(
                    "{} classes: sMIL and sbMIL are binary (negative = class 0, positive = class 1)",
                    data.n_classes()
                ),
            ));
        }
        let weights = self.class_weight.resolve(&labels, 2)?;
        let dim = data.dim();
        let picked = data.copy_bags(train);
        let (mean, inv_sd) = standardisation(picked.features(), dim);
        let x: Vec<f64> = picked
            .features()
            .chunks_exact(dim)
            .flat_map(|r| zscore(r, &mean, &inv_sd))
            .collect();
        let starts = picked.bag_starts();
        let active = inv_sd.iter().filter(|&&s| s > 0.0).count().max(1);
        let gamma = match self.kernel {
            InstanceKernel::Linear => 0.0,
            InstanceKernel::Rbf => self.gamma.unwrap_or(1.0 / active as f64),
        };
        let kernel = Kernel {
            kind: self.kernel,
            gamma,
        };
        let n = x.len() / dim;
        let k = gram(kernel, &x, dim);

        let bags = 0..train.len();
        let Dual {
            points,
            rows,
            q,
            y,
            bounds,
            linear,
        } = Dual::new(self.cost, &k, starts, &labels, &weights);
        let positive_bags = points.iter().filter(|p| p.label > 0.0).count();
        let params = SmoParams::default();
        let sol = smo::solve_general(&q, &y, &params, &bounds, &linear);
        let bias = support_mean_bias(&q, &y, &sol.alpha);

        // The fitted model, from the support points the variant chooses.
        let model = |support, coefficients, bias, positives| SmilModel {
            params: *self,
            expansion: Expansion {
                dim,
                mean,
                inv_sd,
                gamma,
                support,
                coefficients,
                bias,
            },
            positives,
        };
        let (mut support, mut coefficients) = (Vec::new(), Vec::new());
        if self.variant == Variant::Sparse {
            for (p, a) in points.iter().zip(&sol.alpha) {
                if *a != 0.0 {
                    let share = a * p.label / p.instances.len() as f64;
                    for s in p.instances.clone() {
                        support.extend_from_slice(&x[s * dim..(s + 1) * dim]);
                        coefficients.push(share);
                    }
                }
            }
            let bias = match self.bias {
                Bias::SupportMean => bias,
                Bias::TrainingCut => {
                    // f(x) − b of every training instance, from the points' kernel rows.
                    let terms: Vec<(f64, &[f64])> = rows
                        .iter()
                        .zip(&sol.alpha)
                        .zip(&y)
                        .filter(|((_, a), _)| **a != 0.0)
                        .map(|((row, a), y)| (a * y, row.as_slice()))
                        .collect();
                    let f = unbiased_decisions(n, &terms);
                    let means = bags
                        .clone()
                        .map(|b| {
                            f[starts[b]..starts[b + 1]].iter().sum::<f64>()
                                / (starts[b + 1] - starts[b]) as f64
                        })
                        .collect::<Vec<_>>();
                    training_cut_bias(&means, &labels)
                }
            };
            return Ok(model(support, coefficients, bias, 0));
        }

        // sbMIL: sMIL's decision values on the positive bags' instances label them.
        let positive_instances: Vec<usize> = bags
            .clone()
            .filter(|&b| labels[b] == 1)
            .flat_map(|b| starts[b]..starts[b + 1])
            .collect();
        let f: Vec<f64> = positive_instances
            .iter()
            .map(|&t| {
                rows.iter()
                    .zip(&sol.alpha)
                    .zip(&y)
                    .filter(|((_, a), _)| **a != 0.0)
                    .map(|((row, a), y)| a * y * row[t])
                    .sum::<f64>()
                    + bias
            })
            .collect();
        let count = positive_count(self.eta, positive_instances.len(), positive_bags);
        let positive_labels = balanced_labels(&f, count);
        let mut instance_y = vec![-1.0; n];
        for (&t, &l) in positive_instances.iter().zip(&positive_labels) {
            if l {
                instance_y[t] = 1.0;
            }
        }
        let instance_bounds: Vec<f64> = bags
            .flat_map(|b| {
                let c = self.cost / n as f64 * weights[labels[b]];
                std::iter::repeat_n(c, starts[b + 1] - starts[b])
            })
            .collect();
        let sil = smo::solve_bounded_symmetric(&k, &instance_y, &params, &instance_bounds);
        for (t, (a, y)) in sil.alpha.iter().zip(&instance_y).enumerate() {
            if *a != 0.0 {
                support.extend_from_slice(&x[t * dim..(t + 1) * dim]);
                coefficients.push(a * y);
            }
        }
        let bias = match self.bias {
            Bias::SupportMean => support_mean_bias(&k, &instance_y, &sil.alpha),
            Bias::TrainingCut => {
                // f(x) − b of every training instance, from the instances' Gram rows.
                let terms: Vec<(f64, &[f64])> = (0..n)
                    .filter(|&s| sil.alpha[s] != 0.0)
                    .map(|s| (sil.alpha[s] * instance_y[s], &k[s * n..(s + 1) * n]))
                    .collect();
                let f = unbiased_decisions(n, &terms);
                let maxima = (0..train.len())
                    .map(|b| first_argmax(&f[starts[b]..starts[b + 1]]).1)
                    .collect::<Vec<_>>();
                training_cut_bias(&maxima, &labels)
            }
        };
        Ok(model(
            support,
            coefficients,
            bias,
            positive_labels.iter().filter(|&&l| l).count(),
        ))
    }
}

impl SmilModel {
    /// f(x) of every instance of `bag`.
    pub fn instance_decisions(&self, bag: crate::data::Bag<'_>) -> Vec<f64> {
        self.expansion.decisions(self.params.kernel, bag)
    }

    /// A bag's score from its instances' decision values: the mean (sMIL), the largest
    /// (sbMIL).
    fn pool(&self, f: &[f64]) -> f64 {
        match self.params.variant {
            Variant::Sparse => f.iter().sum::<f64>() / f.len() as f64,
            Variant::Balanced => first_argmax(f).1,
        }
    }

    /// Checks a model read from a file.
    pub fn validate(&self) -> Result<()> {
        let name = self.params.kind();
        self.params
            .check()
            .map_err(|e| Error::Model(format!("{name}: {e}")))?;
        self.expansion.validate(self.params.kernel, name)
    }
}

impl BagModel for SmilModel {
    fn n_classes(&self) -> usize {
        2
    }

    fn input_dim(&self) -> usize {
        self.expansion.dim
    }

    /// Binary scores [0, f(X)]: class 1 when the bag's decision value is > 0.
    fn scores<'a>(&self, bags: impl Into<Bags<'a>>) -> Result<BagScores> {
        let bags = bags.into();
        let (data, bags) = (bags.dataset(), &*bags.indices());
        check_dim(data, self.expansion.dim)?;
        let values: Vec<f64> = bags
            .par_iter()
            .map(|&b| self.pool(&self.instance_decisions(data.bag(b))))
            .collect();
        Ok(BagScores::new(
            2,
            values.into_iter().flat_map(|f| [0.0, f]).collect(),
        ))
    }

    /// Every instance's decision value f(x); the witness is the largest.
    fn explain<'a>(&self, bags: impl Into<Bags<'a>>) -> Result<Vec<Explanation>> {
        let bags = bags.into();
        let (data, bags) = (bags.dataset(), &*bags.indices());
        check_dim(data, self.expansion.dim)?;
        Ok(bags
            .iter()
            .map(|&b| {
                Explanation::from_scores(
                    InstanceScore::Decision,
                    self.instance_decisions(data.bag(b)),
                )
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Dataset;
    use crate::eval::metrics::auroc;
    use rand::{RngExt, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    fn dataset(dim: usize, bags: &[Vec<Vec<f64>>], labels: Vec<usize>, classes: usize) -> Dataset {
        let mut starts = vec![0];
        let mut features = Vec::new();
        for bag in bags {
            for x in bag {
                features.extend_from_slice(x);
            }
            starts.push(starts.last().unwrap() + bag.len());
        }
        Dataset::new(
            "toy",
            dim,
            features,
            starts,
            (0..bags.len()).map(|b| b.to_string()).collect(),
            Some(labels),
            (0..classes).map(|c| c.to_string()).collect(),
        )
        .unwrap()
    }

    /// Bags of 1–6 instances in 2-D from [−1, 1]²; a positive bag has one instance moved
    /// to x₀ ∈ [3, 4], so its other instances look like negatives (sparse positive bags).
    fn sparse(seed: u64, n_bags: usize) -> (Vec<Vec<Vec<f64>>>, Vec<usize>) {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut bags = Vec::new();
        let mut labels = Vec::new();
        for b in 0..n_bags {
            let positive = b % 2 == 0;
            let len = rng.random_range(1..7);
            let mut bag: Vec<Vec<f64>> = (0..len)
                .map(|_| (0..2).map(|_| rng.random_range(-1.0..1.0)).collect())
                .collect();
            if positive {
                bag[0][0] = rng.random_range(3.0..4.0);
            }
            bags.push(bag);
            labels.push(usize::from(positive));
        }
        (bags, labels)
    }

    fn both(cost: f64) -> [Smil; 4] {
        let s = Smil::default().cost(cost);
        let b = s.variant(Variant::Balanced).eta(0.3);
        [
            s,
            s.kernel(InstanceKernel::Rbf),
            b,
            b.kernel(InstanceKernel::Rbf).gamma(Some(0.5)),
        ]
    }

    /// min ½αᵀQα + pᵀα with Qᵢⱼ = yᵢyⱼKᵢⱼ (`q` holds K), subject to yᵀα = 0 and
    /// 0 ≤ α ≤ c, by Clarabel's interior point.
    fn interior_point(q: &[f64], p: &[f64], y: &[f64], c: &[f64]) -> Vec<f64> {
        use clarabel::algebra::CscMatrix;
        use clarabel::solver::{
            DefaultSettingsBuilder, DefaultSolver, IPSolver, NonnegativeConeT, SolverStatus,
            ZeroConeT,
        };
        let m = p.len();
        let upper: Vec<Vec<f64>> = (0..m)
            .map(|i| {
                (0..m)
                    .map(|j| {
                        if j >= i {
                            y[i] * y[j] * q[i * m + j]
                        } else {
                            0.0
                        }
                    })
                    .collect()
            })
            .collect();
        // Rows: yᵀα = 0, then −α ≤ 0, then α ≤ c.
        let mut a = vec![y.to_vec()];
        let mut b = vec![0.0];
        for (sign, bound) in [(-1.0, 0.0), (1.0, 1.0)] {
            for i in 0..m {
                let mut row = vec![0.0; m];
                row[i] = sign;
                a.push(row);
                b.push(bound * c[i]);
            }
        }
        let settings = DefaultSettingsBuilder::default()
            .verbose(false)
            .tol_gap_abs(1e-12)
            .tol_gap_rel(1e-12)
            .tol_feas(1e-12)
            .max_iter(500)
            .build()
            .unwrap();
        let mut solver = DefaultSolver::new(
            &CscMatrix::from(&upper),
            p,
            &CscMatrix::from(&a),
            &b,
            &[ZeroConeT(1), NonnegativeConeT(2 * m)],
            settings,
        )
        .unwrap();
        solver.solve();
        assert!(matches!(
            solver.solution.status,
            SolverStatus::Solved | SolverStatus::AlmostSolved
        ));
        solver.solution.x.clone()
    }

    fn objective(q: &[f64], p: &[f64], y: &[f64], alpha: &[f64]) -> f64 {
        let m = p.len();
        let mut value = 0.0;
        for i in 0..m {
            for j in 0..m {
                value += 0.5 * alpha[i] * alpha[j] * y[i] * y[j] * q[i * m + j];
            }
            value += p[i] * alpha[i];
        }
        value
    }

    #[test]
    fn smil_solves_its_dual_as_an_interior_point_solver_does() {
        // The dual written out from the paper on z-scored instances — the mean kernel of
        // every pair of points summed instance by instance, margins 1 and (2 − |X|)/|X|,
        // misvm's costs C/L₋ and C/B₊ — solved by Clarabel. A feasible α whose KKT violation
        // is below ε is within ε·Σcᵢ of the optimum, which bounds sMIL's dual objective.
        for (seed, kernel) in (0..8).map(|s| {
            (
                s,
                [InstanceKernel::Linear, InstanceKernel::Rbf][s as usize % 2],
            )
        }) {
            let (bags, labels) = sparse(seed, 6 + seed as usize % 3);
            let data = dataset(2, &bags, labels.clone(), 2);
            let params = Smil::default().kernel(kernel).cost(3.0);
            let model = params.fit(&data).unwrap();
            let k = Kernel {
                kind: kernel,
                gamma: model.expansion.gamma,
            };
            let z = |x: &[f64]| zscore(x, &model.expansion.mean, &model.expansion.inv_sd);
            let mut points: Vec<(Vec<Vec<f64>>, f64)> = Vec::new();
            for (bag, &l) in bags.iter().zip(&labels) {
                if l == 0 {
                    points.extend(bag.iter().map(|x| (vec![z(x)], -1.0)));
                }
            }
            let negatives = points.len();
            for (bag, &l) in bags.iter().zip(&labels) {
                if l == 1 {
                    points.push((bag.iter().map(|x| z(x)).collect(), 1.0));
                }
            }
            let m = points.len();
            let mut q = vec![0.0; m * m];
            for a in 0..m {
                for b in 0..m {
                    let (xa, xb) = (&points[a].0, &points[b].0);
                    let mut sum = 0.0;
                    for u in xa {
                        for v in xb {
                            sum += k.eval(u, v);
                        }
                    }
                    q[a * m + b] = sum / (xa.len() * xb.len()) as f64;
                }
            }
            let y: Vec<f64> = points.iter().map(|p| p.1).collect();
            let p: Vec<f64> = points
                .iter()
                .map(|(x, l)| {
                    if *l < 0.0 {
                        -1.0
                    } else {
                        -(2.0 - x.len() as f64) / x.len() as f64
                    }
                })
                .collect();
            let c: Vec<f64> = (0..m)
                .map(|i| {
                    if i < negatives {
                        3.0 / negatives as f64
                    } else {
                        3.0 / (m - negatives) as f64
                    }
                })
                .collect();
            // The fit's dual is this one.
            let x: Vec<f64> = data.features().chunks_exact(2).flat_map(z).collect();
            let dual = Dual::new(
                3.0,
                &gram(k, &x, 2),
                data.bag_starts(),
                &labels,
                &[1.0, 1.0],
            );
            assert_eq!((&dual.y, &dual.linear), (&y, &p));
            for (a, b) in dual.q.iter().zip(&q) {
                assert!((a - b).abs() <= 1e-12, "seed {seed}: {a} vs {b}");
            }
            for (a, b) in dual.bounds.iter().zip(&c) {
                assert!((a - b).abs() <= 1e-15 * b, "seed {seed}: {a} vs {b}");
            }
            let best = objective(&q, &p, &y, &interior_point(&q, &p, &y, &c));
            let smo = smo::solve_general(&dual.q, &y, &SmoParams::default(), &dual.bounds, &p);
            let bound = SmoParams::default().tolerance * c.iter().sum::<f64>();
            assert!(smo.converged);
            assert!(
                smo.objective >= best - 1e-9 && smo.objective - best <= bound,
                "seed {seed}: SMO {} vs interior point {best}",
                smo.objective
            );
            // The model is that SMO solution: f(x) − b = Σ αᵢyᵢ K(point i, x).
            for bag in &bags {
                let probe = dataset(2, std::slice::from_ref(bag), vec![0], 2);
                let f = model.instance_decisions(probe.bag(0));
                for (x, fx) in bag.iter().zip(&f) {
                    let g: f64 = points
                        .iter()
                        .zip(&smo.alpha)
                        .map(|((xs, l), a)| {
                            a * l * xs.iter().map(|s| k.eval(s, &z(x))).sum::<f64>()
                                / xs.len() as f64
                        })
                        .sum();
                    assert!((fx - model.expansion.bias - g).abs() < 1e-9, "seed {seed}");
                }
            }
        }
    }

    #[test]
    fn bag_scores_are_the_mean_or_the_largest_instance_decision() {
        // sMIL's f is linear in the bag's feature-space mean, so f(X) is the mean of f(x)
        // over X; sbMIL's bag score is the largest. Both ignore bag and instance order;
        // sbMIL also ignores a duplicated instance.
        for seed in 0..4 {
            let (bags, labels) = sparse(10 + seed, 14);
            let data = dataset(2, &bags, labels, 2);
            for params in both(10.0) {
                let model = params.fit(&data).unwrap();
                let scores = model.scores(&data).unwrap();
                let explained = model.explain(&data).unwrap();
                let reversed: Vec<usize> = (0..data.n_bags()).rev().collect();
                let back = model.scores(data.select(&reversed)).unwrap();
                for (b, e) in explained.iter().enumerate() {
                    let f = &e.instance_scores;
                    let want = match params.variant {
                        Variant::Sparse => f.iter().sum::<f64>() / f.len() as f64,
                        Variant::Balanced => f.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                    };
                    assert_eq!(scores.row(b)[1], want, "seed {seed} bag {b}");
                    assert_eq!(back.row(data.n_bags() - 1 - b), scores.row(b));
                    assert_eq!(e.score_kind, InstanceScore::Decision);
                    assert!(f.iter().all(|&v| v <= f[e.witnesses[0]]));
                    let flipped: Vec<Vec<f64>> = bags[b].iter().rev().cloned().collect();
                    let mut doubled = flipped.clone();
                    doubled.push(flipped[0].clone());
                    let again = model
                        .scores(&dataset(2, &[flipped, doubled], vec![0, 0], 2))
                        .unwrap();
                    let tol = 1e-12 * want.abs().max(1.0);
                    assert!((again.row(0)[1] - want).abs() <= tol, "seed {seed} bag {b}");
                    if params.variant == Variant::Balanced {
                        assert_eq!(again.row(1)[1], want);
                    }
                }
            }
        }
    }

    #[test]
    fn sparse_positive_bags_are_ranked_on_held_out_bags() {
        // MIDA's data set one (`mil synth mida-one`): each positive bag holds one positive
        // instance among eight, the two kinds of instances apart along a line, so sbMIL
        // (η = 1/8, the linear kernel) separates the held-out bags by their witnesses.
        let balanced = Smil::default().variant(Variant::Balanced).eta(0.125);
        for seed in 0..4 {
            let synth = crate::data::synth::mida_one(seed);
            let (train, test) = synth.paper_split();
            let truth: Vec<bool> = test
                .iter()
                .map(|&b| synth.data.labels().unwrap()[b] == 1)
                .collect();
            let model = balanced.fit(synth.data.select(&train)).unwrap();
            let scores = model.scores(synth.data.select(&test)).unwrap();
            let s: Vec<f64> = (0..test.len()).map(|i| scores.row(i)[1]).collect();
            let a = auroc(&s, &truth).unwrap();
            assert!(a >= 0.9, "seed {seed}: sbMIL AUROC {a}");
        }
        // sMIL scores a bag by its mean, which eight-instance bags in 32 dimensions dilute;
        // on bags of one to six instances in the plane whose one positive instance lies
        // apart, it ranks held-out bags too, with either kernel.
        for seed in 0..4 {
            let (bags, labels) = sparse(40 + seed, 40);
            let (test_bags, test_labels) = sparse(140 + seed, 40);
            let test = dataset(2, &test_bags, test_labels.clone(), 2);
            let truth: Vec<bool> = test_labels.iter().map(|&l| l == 1).collect();
            for params in [Smil::default(), Smil::default().kernel(InstanceKernel::Rbf)] {
                let model = params.fit(&dataset(2, &bags, labels.clone(), 2)).unwrap();
                let scores = model.scores(&test).unwrap();
                let s: Vec<f64> = (0..test.n_bags()).map(|i| scores.row(i)[1]).collect();
                let a = auroc(&s, &truth).unwrap();
                assert!(a >= 0.9, "seed {seed} {:?}: sMIL AUROC {a}", params.kernel);
            }
        }
    }

    #[test]
    fn sbmil_labels_the_top_of_the_positive_bags() {
        // positive_count: round half to even, at least one per positive bag, at most all.
        assert_eq!(positive_count(0.5, 5, 1), 2);
        assert_eq!(positive_count(0.5, 7, 1), 4);
        assert_eq!(positive_count(0.0, 30, 6), 6);
        assert_eq!(positive_count(1.0, 30, 6), 30);
        // balanced_labels against sorting by hand, with ties at the cut.
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(4);
        for _ in 0..200 {
            let n = rng.random_range(1..12);
            let f: Vec<f64> = (0..n).map(|_| rng.random_range(0..5) as f64).collect();
            let count = rng.random_range(1..=n);
            let labels = balanced_labels(&f, count);
            let chosen = labels.iter().filter(|&&l| l).count();
            let above = |v: f64| f.iter().filter(|&&w| w > v).count();
            assert!(chosen >= count);
            for (v, l) in f.iter().zip(&labels) {
                // Positive exactly when fewer than `count` values lie strictly above it.
                assert_eq!(*l, above(*v) < count, "{f:?} {count}");
            }
        }
    }

    #[test]
    fn sbmil_with_every_instance_positive_is_the_single_instance_svm() {
        // η = 1 labels every instance of a positive bag positive: the instance SVM is then
        // the one mi-SVM trains before relabelling anything, with the cost C/L on each instance, so
        // the decision values agree up to the bias each computes its own way.
        for seed in 0..4 {
            let (bags, labels) = sparse(30 + seed, 12);
            let data = dataset(2, &bags, labels, 2);
            let n = data.n_instances() as f64;
            for kernel in [InstanceKernel::Linear, InstanceKernel::Rbf] {
                let sb = Smil::default()
                    .variant(Variant::Balanced)
                    .eta(1.0)
                    .kernel(kernel)
                    .cost(5.0)
                    .fit(&data)
                    .unwrap();
                assert_eq!(
                    sb.positives,
                    (0..data.n_bags())
                        .filter(|&b| data.labels().unwrap()[b] == 1)
                        .map(|b| data.bag(b).len())
                        .sum::<usize>()
                );
                let mi = crate::classifier::mi_svm::MiSvm::default()
                    .kernel(kernel)
                    .cost(5.0 / n)
                    .max_iterations(1)
                    .fit(&data)
                    .unwrap();
                for b in 0..data.n_bags() {
                    let (f, g) = (
                        sb.instance_decisions(data.bag(b)),
                        mi.instance_decisions(data.bag(b)),
                    );
                    for (a, c) in f.iter().zip(&g) {
                        assert!(
                            ((a - sb.expansion.bias) - (c - mi.expansion.bias)).abs() < 1e-9,
                            "seed {seed}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn fits_do_not_depend_on_the_thread_count() {
        let (bags, labels) = sparse(5, 16);
        let data = dataset(2, &bags, labels, 2);
        for params in both(10.0) {
            let fit = |threads| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap()
                    .install(|| params.fit(&data).unwrap())
            };
            assert_eq!(fit(1), fit(2));
        }
    }

    #[test]
    fn bad_parameters_data_and_saved_models_are_refused() {
        let (bags, labels) = sparse(2, 10);
        let data = dataset(2, &bags, labels, 2);
        let err = |p: Smil| p.fit(&data).unwrap_err().to_string();
        assert!(err(Smil::default().cost(0.0)).contains("cost"));
        assert!(err(Smil::default().gamma(Some(1.0))).contains("gamma"));
        assert!(err(Smil::default().eta(0.2)).contains("eta"));
        assert!(err(Smil::default().variant(Variant::Balanced).eta(1.5)).contains("eta"));
        assert!(err(Smil::default().variant(Variant::Balanced).eta(f64::NAN)).contains("eta"));
        let three = dataset(
            1,
            &[vec![vec![0.0]], vec![vec![1.0]], vec![vec![2.0]]],
            vec![0, 1, 2],
            3,
        );
        assert!(err_three(&three).contains("binary"));

        let model = Smil::default()
            .variant(Variant::Balanced)
            .kernel(InstanceKernel::Rbf)
            .fit(&data)
            .unwrap();
        assert!(model.validate().is_ok());
        let mut short = model.clone();
        short.expansion.coefficients.pop();
        assert!(short.validate().is_err());
        let mut nan = model.clone();
        nan.expansion.bias = f64::NAN;
        assert!(nan.validate().is_err());
        let mut linear = model.clone();
        linear.params.kernel = InstanceKernel::Linear;
        assert!(linear.validate().is_err());
        let mut sparse_eta = model.clone();
        sparse_eta.params.variant = Variant::Sparse;
        sparse_eta.params.eta = 0.5;
        assert!(sparse_eta.validate().is_err());
        let mut wide = model;
        wide.expansion.mean.push(0.0);
        assert!(wide.validate().is_err());
    }

    #[test]
    fn the_training_cut_puts_zero_at_the_best_cut_of_the_training_bags() {
        // Both biases come with the same support instances and coefficients, so every
        // bag's score moves by the biases' difference and no rank changes. With the
        // training cut, the training bags' labels at 0 reach the best balanced accuracy
        // of any cut of their scores: below all of them or at any one (brute force).
        let merit = |scores: &[f64], labels: &[usize], cut: f64| {
            let recall = |class: usize| {
                let of: Vec<usize> = (0..labels.len()).filter(|&b| labels[b] == class).collect();
                let right = of
                    .iter()
                    .filter(|&&b| (scores[b] > cut) == (class == 1))
                    .count();
                right as f64 / of.len() as f64
            };
            (recall(0) + recall(1)) / 2.0
        };
        for seed in 0..6 {
            let (bags, labels) = sparse(60 + seed, 30);
            let data = dataset(2, &bags, labels.clone(), 2);
            for params in both(3.0).into_iter().chain(both(300.0)) {
                assert_eq!(params.bias, Bias::TrainingCut);
                let cut = params.fit(&data).unwrap();
                let misvm = params.bias(Bias::SupportMean).fit(&data).unwrap();
                assert_eq!(cut.expansion.support, misvm.expansion.support);
                assert_eq!(cut.expansion.coefficients, misvm.expansion.coefficients);
                let (s, t) = (cut.scores(&data).unwrap(), misvm.scores(&data).unwrap());
                let scores: Vec<f64> = (0..data.n_bags()).map(|b| s.row(b)[1]).collect();
                let shift = cut.expansion.bias - misvm.expansion.bias;
                for (b, v) in scores.iter().enumerate() {
                    let moved = t.row(b)[1] + shift;
                    assert!((v - moved).abs() <= 1e-12 * (1.0 + v.abs()), "seed {seed}");
                }
                let best = scores
                    .iter()
                    .map(|&c| merit(&scores, &labels, c))
                    .fold(merit(&scores, &labels, f64::NEG_INFINITY), f64::max);
                let at_zero = merit(&scores, &labels, 0.0);
                assert_eq!(at_zero, best, "seed {seed} {:?}", params.variant);
                assert_eq!(
                    s.labels(),
                    scores
                        .iter()
                        .map(|&v| usize::from(v > 0.0))
                        .collect::<Vec<_>>()
                );
            }
        }
        // On elephant misvm's bias labels all but a few bags negative; the cut does not.
        let elephant = crate::data::load("elephant").unwrap();
        for params in both(1.0)
            .into_iter()
            .filter(|p| p.bias == Bias::TrainingCut)
        {
            let labels = params
                .fit(&elephant)
                .unwrap()
                .scores(&elephant)
                .unwrap()
                .labels();
            let positive = labels.iter().filter(|&&l| l == 1).count();
            assert!(
                (60..=140).contains(&positive),
                "{:?}: {positive} of 200 positive",
                params.variant
            );
        }
    }

    fn err_three(data: &Dataset) -> String {
        Smil::default().fit(data).unwrap_err().to_string()
    }

    #[test]
    fn the_blocked_decisions_are_the_instance_by_instance_sums_to_the_bit() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
        for n in [1, 7, 511, 512, 513, 1500] {
            let coefficients: Vec<f64> = (0..9).map(|_| rng.random_range(-2.0..2.0)).collect();
            let rows: Vec<Vec<f64>> = (0..9)
                .map(|_| (0..n).map(|_| rng.random_range(-1.0..1.0)).collect())
                .collect();
            let terms: Vec<(f64, &[f64])> = coefficients
                .iter()
                .zip(&rows)
                .map(|(c, r)| (*c, r.as_slice()))
                .collect();
            let blocked = unbiased_decisions(n, &terms);
            for (t, f) in blocked.iter().enumerate() {
                let sum: f64 = terms.iter().map(|(c, row)| c * row[t]).sum();
                assert_eq!(f.to_bits(), sum.to_bits(), "n = {n}, instance {t}");
            }
        }
        // No terms: −0.0, as an empty sum.
        assert!(unbiased_decisions(3, &[])
            .iter()
            .all(|f| f.to_bits() == (-0.0f64).to_bits()));
    }
}
