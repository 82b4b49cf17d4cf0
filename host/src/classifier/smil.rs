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

use super::imbalance::ClassWeight;
use super::mi_svm::{gram, standardisation, zscore, InstanceKernel, Kernel};
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

/// sMIL / sbMIL hyper-parameters. The defaults are those of the misvm package: linear
/// kernel, C = 1, η = 0 (sbMIL then labels as many instances positive as there are
/// positive bags); the RBF γ defaults to 1 / (number of features), on z-scored features.
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
});

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

/// A fitted sMIL or sbMIL: an instance decision function f(x) = Σ cₛ k(s, x) + b over
/// stored z-scored instances s. For sMIL, each instance of a support bag X carries
/// αy/|X| (its share of the bag mean), so f is the same sum either way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SmilModel {
    /// Hyper-parameters.
    pub params: Smil,
    /// Feature dimension.
    pub dim: usize,
    /// Mean of each feature over the training instances.
    pub mean: Vec<f64>,
    /// 1 / standard deviation of each feature (0 for a constant feature, which is dropped).
    pub inv_sd: Vec<f64>,
    /// γ of the RBF kernel as used (0 for the linear kernel).
    pub gamma: f64,
    /// Support instances, row-major, z-scored.
    pub support: Vec<f64>,
    /// The coefficient cₛ of each support instance.
    pub coefficients: Vec<f64>,
    /// Bias b.
    pub bias: f64,
    /// sbMIL: how many positive-bag instances were labelled positive (0 for sMIL).
    pub positives: usize,
}

/// A training point of sMIL: instances (indices into the instance Gram matrix) whose mean
/// in feature space it is.
struct Point {
    instances: std::ops::Range<usize>,
    label: f64,
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

        // sMIL's points: each negative instance, then each positive bag.
        let bags = 0..train.len();
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
                    self.cost / negatives as f64 * weights[0]
                } else {
                    self.cost / positive_bags as f64 * weights[1]
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
        let params = SmoParams::default();
        let sol = smo::solve_general(&q, &y, &params, &bounds, &linear);
        let bias = support_mean_bias(&q, &y, &sol.alpha);

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
            return Ok(SmilModel {
                params: *self,
                dim,
                mean,
                inv_sd,
                gamma,
                support,
                coefficients,
                bias,
                positives: 0,
            });
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
        let sil = smo::solve_bounded(&k, &instance_y, &params, &instance_bounds);
        for (t, (a, y)) in sil.alpha.iter().zip(&instance_y).enumerate() {
            if *a != 0.0 {
                support.extend_from_slice(&x[t * dim..(t + 1) * dim]);
                coefficients.push(a * y);
            }
        }
        Ok(SmilModel {
            params: *self,
            dim,
            mean,
            inv_sd,
            gamma,
            support,
            coefficients,
            bias: support_mean_bias(&k, &instance_y, &sil.alpha),
            positives: positive_labels.iter().filter(|&&l| l).count(),
        })
    }
}

impl SmilModel {
    /// f(x) of every instance of bag `bag`.
    pub fn instance_decisions(&self, bag: crate::data::Bag<'_>) -> Vec<f64> {
        let kernel = Kernel {
            kind: self.params.kernel,
            gamma: self.gamma,
        };
        bag.instances()
            .map(|row| {
                let z = zscore(row, &self.mean, &self.inv_sd);
                self.support
                    .chunks_exact(self.dim)
                    .zip(&self.coefficients)
                    .map(|(s, c)| c * kernel.eval(s, &z))
                    .sum::<f64>()
                    + self.bias
            })
            .collect()
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
        let finite = |v: &[f64]| v.iter().all(|x| x.is_finite());
        if self.dim == 0
            || self.mean.len() != self.dim
            || self.inv_sd.len() != self.dim
            || self.support.len() != self.coefficients.len() * self.dim
        {
            return Err(Error::Model(format!("{name}: vectors of the wrong length")));
        }
        if !(finite(&self.mean)
            && finite(&self.inv_sd)
            && finite(&self.support)
            && finite(&self.coefficients)
            && self.bias.is_finite())
            || self.inv_sd.iter().any(|&s| s < 0.0)
        {
            return Err(Error::Model(format!(
                "{name}: a value is not finite (or a scale is negative)"
            )));
        }
        let gamma_ok = match self.params.kernel {
            InstanceKernel::Linear => self.gamma == 0.0,
            InstanceKernel::Rbf => self.gamma > 0.0 && self.gamma.is_finite(),
        };
        if !gamma_ok {
            return Err(Error::Model(format!(
                "{name}: gamma {} does not suit the {} kernel",
                self.gamma,
                mil_core::keyword::Keyword::name(self.params.kernel)
            )));
        }
        Ok(())
    }
}

impl BagModel for SmilModel {
    fn n_classes(&self) -> usize {
        2
    }

    fn input_dim(&self) -> usize {
        self.dim
    }

    /// Binary scores [0, f(X)]: class 1 when the bag's decision value is > 0.
    fn scores<'a>(&self, bags: impl Into<Bags<'a>>) -> Result<BagScores> {
        let bags = bags.into();
        let (data, bags) = (bags.dataset(), &*bags.indices());
        check_dim(data, self.dim)?;
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
        check_dim(data, self.dim)?;
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
