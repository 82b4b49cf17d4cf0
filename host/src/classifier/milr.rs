//! Multiple-instance logistic regression (Ray & Craven, ICML 2005; Xu & Frank 2004 as
//! Weka 3.6's `weka.classifiers.mi.MILR`).
//!
//! Instance model p_ij = σ(β₀ + βᵀx_ij); the bag probability P_i pools the instances of
//! bag i ([`Pooling`]): Weka's noisy-OR P = 1 − Π(1 − p_ij) (its default, the standard
//! MI assumption), arithmetic mean of p_ij, σ(mean of the logits) ("geometric"), Ray &
//! Craven's softmax Σ p e^{βp} / Σ e^{βp}, or the maximum. Fitting minimises
//!
//!   −Σ_i [y_i log P_i + (1 − y_i) log(1 − P_i)] + λ‖β‖²      (intercept not penalised)
//!
//! on Weka's bag-level standardised features (mean of bag means; Weka's pooled standard
//! deviation of bag second moments) with λ = 10⁻⁶ by default, by L-BFGS on the exact
//! gradient (`crate::optim::lbfgs`), in log space throughout. Coefficients are converted back
//! to raw units afterwards, as Weka does. Attributes with zero spread contribute nothing.
//! Multi-class data: one model per class against the rest.
//!
//! Class weights ([`Milr::class_weight`]) multiply each bag's term of the likelihood by
//! the weight w_b of its class: −Σ_i w_i [y_i log P_i + (1 − y_i) log(1 − P_i)]. The
//! standardisation and the starting intercept count bag i w_i times too, so integer
//! weights fit exactly the unweighted model of the set with each bag repeated w_i times.
//!
//! [`Optimizer::Weka`] instead reproduces Weka 3.6's fit step by step: its objective and
//! gradient formulas in plain (not log-space) arithmetic, overflowing to ∞ where Weka's
//! do, its quasi-Newton method with its stopping rules (`crate::optim::weka_bfgs`), its
//! standardisation (attributes with a computed spread of exactly 0 are left in raw
//! units) and its bag probabilities (so scores round to 0 and 1 where Weka's do, which
//! decides ties in the ROC area). On separable bags the likelihood is flat far out and
//! the optimisers stop at different points, so only this mode gives Weka's numbers.

use serde::{Deserialize, Serialize};

use super::imbalance::ClassWeight;
use super::{check_dim, BagModel, BagScores, Classifier};
use crate::data::Bags;
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::explain::{Explanation, InstanceScore};
use crate::numerics::{dot8 as dot, log_sum_exp, sigmoid, softplus};
use crate::optim::lbfgs::Lbfgs;
use crate::optim::weka_bfgs::WekaBfgs;
pub use mil_core::score::Pooling;

mod weka;
use weka::*;

/// The minimiser that fits the coefficients.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Optimizer {
    /// L-BFGS on the log-space objective (`crate::optim::lbfgs`): reaches a lower objective
    /// than Weka on separable bags.
    #[default]
    Lbfgs,
    /// Weka 3.6's MILR reproduced: its BFGS, stopping rules and arithmetic
    /// (`crate::optim::weka_bfgs`). Noisy-OR, mean and geometric pooling only.
    Weka,
}

/// MILR hyper-parameters.
///
/// ```
/// use mil_toolkit::classifier::milr::{Milr, Pooling};
/// use mil_toolkit::classifier::{BagModel, Classifier};
///
/// let data = mil_toolkit::data::load("musk1")?;
/// let model = Milr::default().pooling(Pooling::Mean).ridge(1.0).fit(&data)?;
/// let scores = model.scores(&data)?;
/// // Probabilities of [negative, positive] per bag.
/// assert!((scores.row(0).iter().sum::<f64>() - 1.0).abs() < 1e-9);
/// # Ok::<(), mil_toolkit::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Milr {
    /// The bag combiner.
    pub pooling: Pooling,
    /// Ridge λ on the standardised coefficients (Weka's `-R`, 10⁻⁶).
    pub ridge: f64,
    /// β of the softmax combiner.
    pub beta: f64,
    /// The minimiser (models saved before this field existed used L-BFGS).
    #[serde(default)]
    pub optimizer: Optimizer,
    /// Weight of each bag's likelihood term by its class (L-BFGS only).
    #[serde(default, skip_serializing_if = "ClassWeight::is_none")]
    pub class_weight: ClassWeight,
}

impl Default for Milr {
    fn default() -> Self {
        Milr {
            pooling: Pooling::NoisyOr,
            ridge: 1e-6,
            beta: 3.0,
            optimizer: Optimizer::Lbfgs,
            class_weight: ClassWeight::None,
        }
    }
}

crate::params::setters!(Milr {
    pooling: Pooling,
    ridge: f64,
    beta: f64,
    optimizer: Optimizer,
    class_weight: ClassWeight,
});

mil_core::keywords!(Optimizer {
    Optimizer::Lbfgs => "lbfgs": "L-BFGS on the log-space likelihood (the lowest objective)",
    Optimizer::Weka => "weka": "Weka 3.6's quasi-Newton method, stopping rules and arithmetic (noisy-or, mean, geometric)",
});

impl Milr {
    /// The settings an inner CV tries when asked to tune MILR (the `auto` classifier,
    /// `mil cv --tune`): the poolings noisy-OR, mean and max, each with the ridge kept
    /// and with ridge 1 — the pooling that wins differs from set to set (the method's
    /// page gives the results behind the choice).
    pub fn default_grid(&self) -> Vec<Milr> {
        let mut grid = Vec::new();
        for pooling in [Pooling::NoisyOr, Pooling::Mean, Pooling::Max] {
            for ridge in [self.ridge, 1.0] {
                let m = self.pooling(pooling).ridge(ridge);
                if !grid.contains(&m) {
                    grid.push(m);
                }
            }
        }
        grid
    }
}

/// A fitted MILR: one (intercept, coefficients) in raw feature units per binary problem
/// — one for two classes (positive = class 1), one per class otherwise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MilrModel {
    /// Hyper-parameters.
    pub params: Milr,
    /// Number of classes.
    pub n_classes: usize,
    /// Feature dimension.
    pub dim: usize,
    /// Per binary problem: [β₀, β₁, …, β_D].
    pub weights: Vec<Vec<f64>>,
}

/// log σ(x).
fn log_sigmoid(x: f64) -> f64 {
    -softplus(-x)
}

/// The likelihood of each pooling (module documentation), in `f64` and log space.
trait PoolingLikelihood {
    /// log P(positive) and log P(negative) of a bag with instance logits `z`.
    fn log_probabilities(self, beta: f64, z: &[f64]) -> (f64, f64);
    /// The bag's negative log-likelihood −log P(y | bag), writing its derivative with
    /// respect to each instance logit into `dz`.
    fn loss(self, beta: f64, z: &[f64], positive: bool, dz: &mut [f64]) -> f64;
}

impl PoolingLikelihood for Pooling {
    fn log_probabilities(self, beta: f64, z: &[f64]) -> (f64, f64) {
        let n = z.len() as f64;
        match self {
            Pooling::NoisyOr => {
                let y: f64 = z.iter().map(|&v| softplus(v)).sum();
                let log_pos = if y > 0.0 {
                    (-(-y).exp_m1()).ln()
                } else {
                    // Every softplus underflowed: P ≈ Σ e^z.
                    log_sum_exp(z.iter().copied())
                };
                (log_pos, -y)
            }
            Pooling::Mean => (
                log_sum_exp(z.iter().map(|&v| log_sigmoid(v))) - n.ln(),
                log_sum_exp(z.iter().map(|&v| log_sigmoid(-v))) - n.ln(),
            ),
            Pooling::Geometric => {
                let m = z.iter().sum::<f64>() / n;
                (log_sigmoid(m), log_sigmoid(-m))
            }
            Pooling::Softmax => {
                let (lw, _) = softmax_weights(beta, z);
                (
                    log_sum_exp(lw.iter().zip(z).map(|(w, &v)| w + log_sigmoid(v))),
                    log_sum_exp(lw.iter().zip(z).map(|(w, &v)| w + log_sigmoid(-v))),
                )
            }
            Pooling::Max => {
                let m = z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                (log_sigmoid(m), log_sigmoid(-m))
            }
        }
    }

    fn loss(self, beta: f64, z: &[f64], positive: bool, dz: &mut [f64]) -> f64 {
        if let (Pooling::Mean, [v], [d]) = (self, z, &mut *dz) {
            return one_instance_mean_loss(*v, positive, d);
        }
        let n = z.len() as f64;
        let (log_pos, log_neg) = self.log_probabilities(beta, z);
        match self {
            Pooling::NoisyOr => {
                if positive {
                    // −log(1 − e^{−y}), y = Σ softplus(z): d/dz_j = −σ(z_j) / (e^y − 1).
                    let y = -log_neg;
                    for (d, &v) in dz.iter_mut().zip(z) {
                        *d = if y > 0.0 {
                            -(log_sigmoid(v) - y.exp_m1().ln()).exp()
                        } else {
                            -(v - log_pos).exp()
                        };
                    }
                    -log_pos
                } else {
                    dz.iter_mut().zip(z).for_each(|(d, &v)| *d = sigmoid(v));
                    -log_neg
                }
            }
            Pooling::Mean => mean_loss(z, positive, (log_pos, log_neg), dz),
            Pooling::Geometric => {
                let m = z.iter().sum::<f64>() / n;
                let g = if positive { -sigmoid(-m) } else { sigmoid(m) } / n;
                dz.iter_mut().for_each(|d| *d = g);
                if positive {
                    -log_pos
                } else {
                    -log_neg
                }
            }
            Pooling::Softmax => {
                // dP/dz_k = w_k p_k (1 − p_k)(1 + β(p_k − P)).
                let (lw, _) = softmax_weights(beta, z);
                let p_bag = log_pos.exp();
                for ((d, &v), &w) in dz.iter_mut().zip(z).zip(&lw) {
                    let p = sigmoid(v);
                    let factor = 1.0 + beta * (p - p_bag);
                    *d = if positive {
                        -(w + log_sigmoid(v) + log_sigmoid(-v) - log_pos).exp() * factor
                    } else {
                        (w + log_sigmoid(v) + log_sigmoid(-v) - log_neg).exp() * factor
                    };
                }
                if positive {
                    -log_pos
                } else {
                    -log_neg
                }
            }
            Pooling::Max => {
                let (k, &m) = z
                    .iter()
                    .enumerate()
                    .fold((0, &f64::NEG_INFINITY), |best, (i, v)| {
                        if *v > *best.1 {
                            (i, v)
                        } else {
                            best
                        }
                    });
                dz.iter_mut().for_each(|d| *d = 0.0);
                dz[k] = if positive { -sigmoid(-m) } else { sigmoid(m) };
                if positive {
                    -log_pos
                } else {
                    -log_neg
                }
            }
        }
    }
}

/// [`PoolingLikelihood::loss`] of mean pooling for any bag, from its log P and log(1 − P).
fn mean_loss(z: &[f64], positive: bool, (log_pos, log_neg): (f64, f64), dz: &mut [f64]) -> f64 {
    // d(−log P)/dz_j = −σ(z_j)σ(−z_j) / (n P), and symmetrically for 1 − P.
    let n = z.len() as f64;
    let (sign, log_p) = if positive {
        (-1.0, log_pos)
    } else {
        (1.0, log_neg)
    };
    for (d, &v) in dz.iter_mut().zip(z) {
        *d = sign * (log_sigmoid(v) + log_sigmoid(-v) - n.ln() - log_p).exp();
    }
    -log_p
}

/// [`mean_loss`] for a bag of one instance (ridge logistic regression: SimpleMI,
/// MI-Wrapper, miVLAD and miFV fit it on thousands of such bags), to the bit what the
/// general branch computes: there log P = log σ(v) + ln 1 − ln 1 and
/// dz = ±exp(log σ(v) + log σ(−v) − ln 1 − log P), where ln 1 = 0 exactly; and
/// log σ(v), log σ(−v) share the one term ln(1 + e^{−|v|}) (`softplus`'s two branches).
/// Three calls of `exp`/`ln_1p` instead of about sixteen.
fn one_instance_mean_loss(v: f64, positive: bool, dz: &mut f64) -> f64 {
    let shared = (-v.abs()).exp().ln_1p();
    let softplus_of = |x: f64| if x > 0.0 { x + shared } else { shared };
    let (log_pos, log_neg) = (-softplus_of(-v), -softplus_of(v));
    // The general branch's log-sum-exp of one term turns −0 into +0.
    let (sign, log_p) = if positive {
        (-1.0, log_pos + 0.0)
    } else {
        (1.0, log_neg + 0.0)
    };
    *dz = sign * (log_pos + log_neg - log_p).exp();
    -log_p
}

/// log of the softmax weights e^{βp_j} / Σ e^{βp}, and the p_j.
fn softmax_weights(beta: f64, z: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let p: Vec<f64> = z.iter().map(|&v| sigmoid(v)).collect();
    let lse = log_sum_exp(p.iter().map(|&v| beta * v));
    (p.iter().map(|&v| beta * v - lse).collect(), p)
}

/// The penalised objective on standardised instances: value and gradient.
struct Objective<'a> {
    /// Standardised instances, row-major.
    x: &'a [f64],
    dim: usize,
    /// Bag offsets into the instances.
    starts: &'a [usize],
    positive: &'a [bool],
    /// Each bag's weight (its class's).
    weights: &'a [f64],
    params: Milr,
}

impl Objective<'_> {
    fn logits(&self, theta: &[f64]) -> Vec<f64> {
        self.x
            .chunks_exact(self.dim)
            .map(|row| theta[0] + dot(row, &theta[1..]))
            .collect()
    }

    fn eval(&self, theta: &[f64], grad: &mut [f64]) -> f64 {
        let z = self.logits(theta);
        let mut dz = vec![0.0; z.len()];
        let mut value = 0.0;
        for (b, (&pos, &w)) in self.positive.iter().zip(self.weights).enumerate() {
            let r = self.starts[b]..self.starts[b + 1];
            let dzb = &mut dz[r.clone()];
            value += w * self.params.pooling.loss(self.params.beta, &z[r], pos, dzb);
            dzb.iter_mut().for_each(|d| *d *= w);
        }
        grad.iter_mut().for_each(|g| *g = 0.0);
        for (row, &d) in self.x.chunks_exact(self.dim).zip(&dz) {
            grad[0] += d;
            grad[1..].iter_mut().zip(row).for_each(|(g, x)| *g += d * x);
        }
        for (g, t) in grad[1..].iter_mut().zip(&theta[1..]) {
            value += self.params.ridge * t * t;
            *g += 2.0 * self.params.ridge * t;
        }
        value
    }
}

/// Weka's bag-level standardisation: the mean of the bag means, and
/// sqrt(|Σ_b E_b[x²] / (B − 1) − mean² B / (B − 1)|). A spread that is zero up to
/// round-off marks a constant attribute (standard deviation 0: it contributes nothing),
/// unless `exact` (Weka's rule: only a computed spread of exactly 0 counts).
/// Bag `train[i]` counts `weights[i]` times (frequency weights; all 1 unweighted).
fn bag_standardisation(
    data: &Dataset,
    train: &[usize],
    weights: &[f64],
    exact: bool,
) -> (Vec<f64>, Vec<f64>) {
    let dim = data.dim();
    let nb: f64 = weights.iter().sum();
    // Each attribute divided by a power of two near its largest magnitude: exact, so the
    // squares stay finite for any finite data and the result is otherwise unchanged.
    let (scale, _) = crate::data::standardize::power_of_two_scales(
        train.iter().flat_map(|&b| data.bag(b).instances()),
        dim,
    );
    let mut mean = vec![0.0; dim];
    let mut second = vec![0.0; dim];
    for (&b, &w) in train.iter().zip(weights) {
        let bag = data.bag(b);
        let n = bag.len() as f64;
        let mut m = vec![0.0; dim];
        let mut s = vec![0.0; dim];
        for x in bag.instances() {
            for j in 0..dim {
                let v = x[j] / scale[j];
                m[j] += v;
                s[j] += v * v;
            }
        }
        for j in 0..dim {
            mean[j] += w * (m[j] / n);
            second[j] += w * (s[j] / n);
        }
    }
    mean.iter_mut().for_each(|m| *m /= nb);
    let sd = (0..dim)
        .map(|j| {
            let var = (second[j] / (nb - 1.0) - mean[j] * mean[j] * nb / (nb - 1.0)).abs();
            // Cancellation leaves ~1e-16 relative noise on constant attributes.
            if !exact && var <= 1e-12 * (second[j] / (nb - 1.0)).abs().max(f64::MIN_POSITIVE) {
                0.0
            } else {
                var.sqrt() * scale[j]
            }
        })
        .collect();
    let mean = mean.iter().zip(&scale).map(|(m, s)| m * s).collect();
    (mean, sd)
}

impl Milr {
    /// Checks the hyper-parameters alone, before any data is read (ridge finite and
    /// ≥ 0, β finite, the Weka optimiser only with its own poolings).
    pub fn check(&self) -> Result<()> {
        crate::params::check_weight("ridge", self.ridge, false)?;
        crate::params::check_weight("beta", self.beta, true)?;
        self.class_weight.check()?;
        if self.optimizer == Optimizer::Weka && !self.class_weight.is_none() {
            return Err(Error::parameter(
                "class_weight",
                self.class_weight,
                "reproduces nothing of Weka's MILR, which has no class weights: use the lbfgs optimizer",
            ));
        }
        if self.optimizer == Optimizer::Weka
            && matches!(self.pooling, Pooling::Softmax | Pooling::Max)
        {
            return Err(Error::parameter(
                "optimizer",
                "weka",
                "reproduces Weka's MILR, whose poolings are noisy-or, mean and geometric",
            ));
        }
        Ok(())
    }

    /// Fits one binary problem; returns [β₀, β…] in raw units.
    fn fit_binary(
        &self,
        x: &[f64],
        dim: usize,
        starts: &[usize],
        positive: &[bool],
        weights: &[f64],
        (mean, sd): (&[f64], &[f64]),
    ) -> Result<Vec<f64>> {
        // Weighted counts (exactly the counts when every weight is 1).
        let n_pos: f64 = positive
            .iter()
            .zip(weights)
            .filter(|(&p, _)| p)
            .map(|(_, w)| w)
            .sum();
        let n_neg: f64 = positive
            .iter()
            .zip(weights)
            .filter(|(&p, _)| !p)
            .map(|(_, w)| w)
            .sum();
        let mut theta = vec![0.0; dim + 1];
        // Weka's start: the log odds of the (smoothed) class counts.
        theta[0] = ((n_pos + 1.0) / (n_neg + 1.0)).ln();
        if self.optimizer == Optimizer::Weka {
            let objective = WekaObjective {
                x,
                dim,
                starts,
                positive,
                pooling: self.pooling,
                ridge: self.ridge,
            };
            let min = WekaBfgs::default().minimize(
                theta,
                |t| objective.value(t),
                |t, g| objective.gradient(t, g),
            )?;
            if !min.converged {
                return Err(Error::Numerical {
                    method: "MILR (Weka's optimiser)",
                    reason: format!("no convergence after {} iterations", min.iterations),
                });
            }
            // Back to raw units; attributes Weka did not standardise keep theirs.
            let mut w = min.x;
            for j in 0..dim {
                if sd[j] != 0.0 {
                    w[j + 1] /= sd[j];
                    w[0] -= w[j + 1] * mean[j];
                }
            }
            return Ok(w);
        }
        let objective = Objective {
            x,
            dim,
            starts,
            positive,
            weights,
            params: *self,
        };
        // Tolerances of the order of scipy's L-BFGS-B defaults (factr 10⁷): on separable
        // bags the likelihood keeps improving by ever smaller amounts while the ridge
        // slowly bounds the coefficients, and stopping there changes no prediction of
        // practical weight.
        let solver = Lbfgs {
            max_iterations: 2000,
            gradient_tolerance: 1e-6,
            value_tolerance: 1e-9,
            ..Lbfgs::default()
        };
        let min = solver.minimize(theta, |t, g| objective.eval(t, g))?;
        let mut w = min.x;
        for j in 0..dim {
            if sd[j] > 0.0 {
                w[j + 1] /= sd[j];
                w[0] -= w[j + 1] * mean[j];
            } else {
                w[j + 1] = 0.0;
            }
        }
        Ok(w)
    }
}

impl Classifier for Milr {
    type Model = MilrModel;

    fn fit<'a>(&self, train: impl Into<Bags<'a>>) -> Result<MilrModel> {
        self.fit_weighted(train.into(), None)
    }
}

impl Milr {
    /// Ridge logistic regression: MILR with mean pooling, which on bags of one instance
    /// (SimpleMI's summaries, MI-Wrapper's instances, miVLAD's bag vectors) is the
    /// ordinary model, as Weka's `Logistic`.
    pub(crate) fn ridge_logistic(ridge: f64, class_weight: ClassWeight) -> Milr {
        Milr::default()
            .pooling(Pooling::Mean)
            .ridge(ridge)
            .class_weight(class_weight)
    }

    /// [`Classifier::fit`] with each training bag `train[i]` also counted `extra[i]`
    /// times (frequency weights multiplying its class weight, in the likelihood, the
    /// standardisation and the starting intercept alike). With one instance per bag this
    /// is weighted ridge logistic regression, what MI-Wrapper and SimpleMI fit.
    pub(crate) fn fit_weighted(&self, train: Bags<'_>, extra: Option<&[f64]>) -> Result<MilrModel> {
        let (data, train) = (train.dataset(), &*train.indices());
        self.check()?;
        let labels = data.training_labels(train, 2)?;
        let dim = data.dim();
        let weka = self.optimizer == Optimizer::Weka;
        let mut weights = self.class_weight.bag_weights(&labels, data.n_classes())?;
        if let Some(extra) = extra {
            debug_assert_eq!(extra.len(), weights.len());
            weights.iter_mut().zip(extra).for_each(|(w, e)| *w *= e);
        }
        let (mean, sd) = bag_standardisation(data, train, &weights, weka);
        let picked = data.copy_bags(train);
        let mut x = picked.features().to_vec();
        for row in x.chunks_exact_mut(dim) {
            for j in 0..dim {
                row[j] = if sd[j] > 0.0 {
                    (row[j] - mean[j]) / sd[j]
                } else if weka {
                    row[j]
                } else {
                    0.0
                };
            }
        }
        let n_classes = data.n_classes();
        let problems: Vec<usize> = if n_classes == 2 {
            vec![1]
        } else {
            (0..n_classes).collect()
        };
        let weights = problems
            .iter()
            .map(|&c| {
                let positive: Vec<bool> = labels.iter().map(|&l| l == c).collect();
                self.fit_binary(
                    &x,
                    dim,
                    picked.bag_starts(),
                    &positive,
                    &weights,
                    (&mean, &sd),
                )
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(MilrModel {
            params: *self,
            n_classes,
            dim,
            weights,
        })
    }
}

/// A bag's (P(negative), P(positive)) as Weka's `MILR.distributionForInstance` computes
/// them from raw-unit coefficients `w`: noisy-OR P(neg) = exp(−Σ log(1 + e^z)), mean
/// P(neg) = mean 1/(1 + e^z), each with P(pos) = 1 − P(neg); geometric P(pos) =
/// 1/(1 + e^{−Σ z/n}) and P(neg) = 1 − P(pos). The rounding of these forms (P(pos) is
/// exactly 0 or 1 for many bags) decides Weka's ties.
fn weka_bag_probabilities(pooling: Pooling, w: &[f64], bag: crate::data::Bag<'_>) -> (f64, f64) {
    let n = bag.len() as f64;
    let mut acc = 0.0;
    for x in bag.instances() {
        let mut z = w[0];
        for (a, b) in w[1..].iter().zip(x) {
            z += a * b;
        }
        match pooling {
            Pooling::NoisyOr => acc -= (1.0 + z.exp()).ln(),
            Pooling::Mean => acc += 1.0 / (1.0 + z.exp()),
            _ => acc += z / n,
        }
    }
    match pooling {
        Pooling::NoisyOr => {
            let q = acc.exp();
            (q, 1.0 - q)
        }
        Pooling::Mean => {
            let q = acc / n;
            (q, 1.0 - q)
        }
        _ => {
            let p = 1.0 / (1.0 + (-acc).exp());
            (1.0 - p, p)
        }
    }
}

impl MilrModel {
    /// (P(negative), P(positive)) of one bag under binary problem `k`.
    fn probabilities(&self, k: usize, bag: crate::data::Bag<'_>) -> (f64, f64) {
        let w = &self.weights[k];
        if self.params.optimizer == Optimizer::Weka {
            return weka_bag_probabilities(self.params.pooling, w, bag);
        }
        let z: Vec<f64> = bag
            .instances()
            .map(|x| w[0] + x.iter().zip(&w[1..]).map(|(a, b)| a * b).sum::<f64>())
            .collect();
        let (log_pos, _) = self.params.pooling.log_probabilities(self.params.beta, &z);
        let p = log_pos.exp();
        (1.0 - p, p)
    }

    /// p_ij = σ(w₀ + w·x_ij) of every instance of `bag` under binary problem `k` (the
    /// instance-level model of Ray & Craven that every pooling combines).
    pub fn instance_probabilities(&self, k: usize, bag: crate::data::Bag<'_>) -> Vec<f64> {
        let w = &self.weights[k];
        bag.instances()
            .map(|x| sigmoid(w[0] + x.iter().zip(&w[1..]).map(|(a, b)| a * b).sum::<f64>()))
            .collect()
    }

    /// Checks a model read from a file.
    pub fn validate(&self) -> Result<()> {
        let problems = if self.n_classes == 2 {
            1
        } else {
            self.n_classes
        };
        if self.n_classes < 2 || self.weights.len() != problems {
            return Err(Error::Model("milr: wrong number of weight vectors".into()));
        }
        if self
            .weights
            .iter()
            .any(|w| w.len() != self.dim + 1 || w.iter().any(|v| !v.is_finite()))
        {
            return Err(Error::Model(
                "milr: weights of the wrong length or not finite".into(),
            ));
        }
        self.params
            .check()
            .map_err(|e| Error::Model(format!("milr: {e}")))
    }
}

impl BagModel for MilrModel {
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
        let mut scores = Vec::with_capacity(bags.len() * self.n_classes);
        for &b in bags {
            let bag = data.bag(b);
            if self.n_classes == 2 {
                let (q, p) = self.probabilities(0, bag);
                scores.extend([q, p]);
            } else {
                scores.extend((0..self.n_classes).map(|k| self.probabilities(k, bag).1));
            }
        }
        Ok(BagScores::new(self.n_classes, scores))
    }

    /// Instance probabilities σ(w₀ + w·x) under the sub-problem of the predicted class
    /// (the only one when binary); the witness is the most probable instance.
    fn explain<'a>(&self, bags: impl Into<Bags<'a>>) -> Result<Vec<Explanation>> {
        let bags = bags.into();
        let (data, bags) = (bags.dataset(), &*bags.indices());
        let labels = self.scores(data.select(bags))?.labels();
        Ok(bags
            .iter()
            .zip(labels)
            .map(|(&b, label)| {
                let k = if self.n_classes == 2 { 0 } else { label };
                Explanation::from_scores(
                    InstanceScore::Probability,
                    self.instance_probabilities(k, data.bag(b)),
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

    const ALL: [Pooling; 5] = [
        Pooling::NoisyOr,
        Pooling::Mean,
        Pooling::Geometric,
        Pooling::Softmax,
        Pooling::Max,
    ];

    fn random_problem(seed: u64) -> (Vec<f64>, Vec<usize>, Vec<bool>, usize) {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let dim = 4;
        let mut x = Vec::new();
        let mut starts = vec![0];
        let mut positive = Vec::new();
        for b in 0..12 {
            let len = rng.random_range(1..6);
            for _ in 0..len * dim {
                x.push(rng.random_range(-2.0..2.0));
            }
            starts.push(starts.last().unwrap() + len);
            positive.push(b % 3 == 0);
        }
        (x, starts, positive, dim)
    }

    #[test]
    fn one_instance_mean_loss_is_the_general_branch_to_the_bit() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
        let mut logits = vec![0.0, -0.0, 1e-300, -1e-300, 36.7, -36.7, 745.0, -745.0];
        logits.extend((0..2000).map(|i| {
            let scale = [1e-8, 1.0, 20.0, 800.0][i % 4];
            rng.random_range(-1.0..1.0) * scale
        }));
        for v in logits {
            for positive in [false, true] {
                // The general branch, as `loss` computes it for a bag of any size.
                let mut d = [0.0];
                let log_p = -mean_loss(
                    &[v],
                    positive,
                    Pooling::Mean.log_probabilities(3.0, &[v]),
                    &mut d,
                );
                let d = d[0];
                let mut fast = 0.0;
                let value = one_instance_mean_loss(v, positive, &mut fast);
                assert_eq!(
                    value.to_bits(),
                    (-log_p).to_bits(),
                    "loss at {v}, {positive}"
                );
                assert_eq!(fast.to_bits(), d.to_bits(), "derivative at {v}, {positive}");
                let mut through = [0.0];
                let loss = Pooling::Mean.loss(3.0, &[v], positive, &mut through);
                assert_eq!(
                    (loss.to_bits(), through[0].to_bits()),
                    (value.to_bits(), fast.to_bits())
                );
            }
        }
    }

    #[test]
    fn explanation_instance_probabilities_pool_to_the_bag_score() {
        // Noisy-OR: P(bag) = 1 − Π(1 − p_ij) with p_ij the explanation's instance
        // probabilities; max pooling: P(bag) = max p_ij = the witness's probability.
        let (x, starts, positive, dim) = random_problem(3);
        let n = positive.len();
        let data = Dataset::new(
            "r",
            dim,
            x,
            starts,
            (0..n).map(|b| b.to_string()).collect(),
            Some(positive.iter().map(|&p| usize::from(p)).collect()),
            vec!["0".into(), "1".into()],
        )
        .unwrap();
        for pooling in [Pooling::NoisyOr, Pooling::Max] {
            let model = Milr::default().pooling(pooling).fit(&data).unwrap();
            let scores = model.scores(&data).unwrap();
            for (b, e) in model.explain(&data).unwrap().iter().enumerate() {
                assert_eq!(e.score_kind, InstanceScore::Probability);
                assert_eq!(e.instance_scores.len(), data.bag(b).len());
                let pooled = match pooling {
                    Pooling::NoisyOr => {
                        1.0 - e.instance_scores.iter().map(|p| 1.0 - p).product::<f64>()
                    }
                    _ => e.instance_scores[e.witnesses[0]],
                };
                assert!(
                    (pooled - scores.row(b)[1]).abs() < 1e-9,
                    "{pooling:?} bag {b}"
                );
                let max = e.instance_scores.iter().copied().fold(0.0, f64::max);
                assert_eq!(e.instance_scores[e.witnesses[0]], max);
            }
        }
    }

    #[test]
    fn gradient_matches_finite_differences() {
        for pooling in ALL {
            for seed in 0..5 {
                let (x, starts, positive, dim) = random_problem(seed);
                let params = Milr {
                    pooling,
                    ridge: 0.1,
                    beta: 3.0,
                    optimizer: Optimizer::Lbfgs,
                    class_weight: ClassWeight::None,
                };
                let obj = Objective {
                    x: &x,
                    dim,
                    starts: &starts,
                    positive: &positive,
                    weights: &vec![1.0; positive.len()],
                    params,
                };
                let mut rng = Xoshiro256PlusPlus::seed_from_u64(100 + seed);
                let theta: Vec<f64> = (0..=dim).map(|_| rng.random_range(-1.5..1.5)).collect();
                let mut g = vec![0.0; dim + 1];
                obj.eval(&theta, &mut g);
                let mut scratch = vec![0.0; dim + 1];
                for k in 0..=dim {
                    // Central differences: error O(h²) ≈ 1e-10 on these O(1) functions.
                    let h = 1e-5;
                    let mut tp = theta.clone();
                    tp[k] += h;
                    let mut tm = theta.clone();
                    tm[k] -= h;
                    let fd =
                        (obj.eval(&tp, &mut scratch) - obj.eval(&tm, &mut scratch)) / (2.0 * h);
                    assert!(
                        (fd - g[k]).abs() < 1e-6 * g[k].abs().max(1.0),
                        "{pooling:?} seed {seed} coordinate {k}: {fd} vs {}",
                        g[k]
                    );
                }
            }
        }
    }

    #[test]
    fn probabilities_match_the_definitions() {
        let z = [-1.0f64, 0.5, 2.0];
        let p: Vec<f64> = z.iter().map(|&v| 1.0 / (1.0 + (-v).exp())).collect();
        let noisy_or = 1.0 - p.iter().map(|v| 1.0 - v).product::<f64>();
        let mean = p.iter().sum::<f64>() / 3.0;
        let geometric = 1.0 / (1.0 + (-(z.iter().sum::<f64>() / 3.0)).exp());
        let w: Vec<f64> = p.iter().map(|v| (3.0 * v).exp()).collect();
        let softmax = p.iter().zip(&w).map(|(a, b)| a * b).sum::<f64>() / w.iter().sum::<f64>();
        let max = p[2];
        for (pooling, want) in [
            (Pooling::NoisyOr, noisy_or),
            (Pooling::Mean, mean),
            (Pooling::Geometric, geometric),
            (Pooling::Softmax, softmax),
            (Pooling::Max, max),
        ] {
            let (lp, ln) = pooling.log_probabilities(3.0, &z);
            assert!((lp.exp() - want).abs() < 1e-14, "{pooling:?}");
            assert!((ln.exp() - (1.0 - want)).abs() < 1e-14, "{pooling:?}");
        }
        // Far in the tails the log-space forms stay finite.
        let (lp, ln) = Pooling::NoisyOr.log_probabilities(3.0, &[-800.0, -900.0]);
        assert!((lp + 800.0).abs() < 1e-9 && ln == 0.0);
    }

    #[test]
    fn separable_bags_are_learned() {
        // Positive bags hold one instance with x > 3; negatives have all x < 0.
        let mut feats = Vec::new();
        let mut starts = vec![0];
        let mut labels = Vec::new();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
        for b in 0..40 {
            let pos = b % 2 == 0;
            for i in 0..4 {
                let v = if pos && i == 0 {
                    rng.random_range(3.0..5.0)
                } else {
                    rng.random_range(-3.0..0.0)
                };
                feats.extend([v, rng.random_range(-1.0..1.0)]);
            }
            starts.push(starts.last().unwrap() + 4);
            labels.push(pos as usize);
        }
        let d = Dataset::new(
            "sep",
            2,
            feats,
            starts,
            (0..40).map(|b| b.to_string()).collect(),
            Some(labels.clone()),
            vec!["0".into(), "1".into()],
        )
        .unwrap();
        for pooling in [Pooling::NoisyOr, Pooling::Softmax, Pooling::Max] {
            let m = Milr {
                pooling,
                ..Milr::default()
            }
            .fit(&d)
            .unwrap();
            let s = m.scores(&d).unwrap();
            assert_eq!(s.labels(), labels, "{pooling:?}");
        }
    }

    #[test]
    fn weka_objective_matches_the_log_space_one_and_its_gradient() {
        for pooling in [Pooling::NoisyOr, Pooling::Mean, Pooling::Geometric] {
            for seed in 0..5 {
                let (x, starts, positive, dim) = random_problem(seed);
                let params = Milr {
                    pooling,
                    ridge: 0.1,
                    optimizer: Optimizer::Weka,
                    ..Milr::default()
                };
                let ours = Objective {
                    x: &x,
                    dim,
                    starts: &starts,
                    positive: &positive,
                    weights: &vec![1.0; positive.len()],
                    params,
                };
                let weka = WekaObjective {
                    x: &x,
                    dim,
                    starts: &starts,
                    positive: &positive,
                    pooling,
                    ridge: 0.1,
                };
                let mut rng = Xoshiro256PlusPlus::seed_from_u64(200 + seed);
                let theta: Vec<f64> = (0..=dim).map(|_| rng.random_range(-1.5..1.5)).collect();
                let (mut g, mut gw) = (vec![0.0; dim + 1], vec![0.0; dim + 1]);
                let v = ours.eval(&theta, &mut g);
                weka.gradient(&theta, &mut gw);
                let vw = weka.value(&theta);
                assert!(
                    (v - vw).abs() < 1e-12 * v.abs().max(1.0),
                    "{pooling:?}: {v} vs {vw}"
                );
                for k in 0..=dim {
                    assert!(
                        (g[k] - gw[k]).abs() < 1e-10 * g[k].abs().max(1.0),
                        "{pooling:?} seed {seed} coordinate {k}: {} vs {}",
                        g[k],
                        gw[k]
                    );
                }
            }
        }
    }

    #[test]
    fn weka_objective_overflows_where_wekas_does() {
        // One negative bag whose logit exceeds ln(f64::MAX): Weka's log(1 + e^z) is ∞
        // (its line search then halves the step); the log-space form stays finite.
        let x = [800.0];
        let (starts, positive) = ([0, 1], [false]);
        let weka = WekaObjective {
            x: &x,
            dim: 1,
            starts: &starts,
            positive: &positive,
            pooling: Pooling::NoisyOr,
            ridge: 0.0,
        };
        assert_eq!(weka.value(&[0.0, 1.0]), f64::INFINITY);
    }

    #[test]
    fn weka_probabilities_round_as_wekas_do() {
        // Noisy-OR: P(pos) = 1 − exp(−Σ log(1 + e^z)) is exactly 0 once e^z < ε/2, where
        // the log-space form still ranks bags; Weka's ROC area sees ties there.
        let d = Dataset::new(
            "t",
            1,
            vec![-40.0, -41.0],
            vec![0, 1, 2],
            vec!["a".into(), "b".into()],
            Some(vec![0, 1]),
            vec!["0".into(), "1".into()],
        )
        .unwrap();
        let model = |optimizer| MilrModel {
            params: Milr {
                optimizer,
                ..Milr::default()
            },
            n_classes: 2,
            dim: 1,
            weights: vec![vec![0.0, 1.0]],
        };
        let s = model(Optimizer::Weka).scores(d.select(&[0, 1])).unwrap();
        assert_eq!((s.row(0)[1], s.row(1)[1]), (0.0, 0.0));
        let s = model(Optimizer::Lbfgs).scores(d.select(&[0, 1])).unwrap();
        assert!(s.row(0)[1] > s.row(1)[1] && s.row(1)[1] > 0.0);
    }

    #[test]
    fn weka_optimizer_needs_a_weka_pooling() {
        let d = crate::data::load("musk1").unwrap();
        for pooling in [Pooling::Softmax, Pooling::Max] {
            let m = Milr {
                pooling,
                optimizer: Optimizer::Weka,
                ..Milr::default()
            };
            assert!(m.fit(&d).is_err(), "{pooling:?}");
        }
    }

    #[test]
    fn models_saved_without_an_optimizer_use_lbfgs() {
        let p: Milr =
            serde_json::from_str(r#"{"pooling":"mean","ridge":1e-6,"beta":3.0}"#).unwrap();
        assert_eq!(p.optimizer, Optimizer::Lbfgs);
    }

    /// Weka 3.6.14's MILR trained on all of a shipped data set (`data/D.csv` written as
    /// ARFF in the same bag order), coefficients in raw units as Weka prints them (4
    /// decimals): `java -cp /usr/share/java/weka.jar weka.classifiers.mi.MILR -A a -t
    /// D.arff` (the first model in the output): the intercept, f1–f5 and the largest
    /// coefficient. musk1 with a = 0 (noisy-OR) and 2 (geometric); elephant with a = 1
    /// (mean), whose fit ends where the gradient overflows to NaN and Weka's comparisons
    /// then accept the step and declare convergence. Not every fit is reproduced to 4
    /// decimals: Java's `Math.exp` and the C library's `exp` differ in the last bit for
    /// about 1 argument in 400, and over the ~1000 iterations of musk1's mean-pooling fit
    /// and elephant's noisy-OR fit the difference grows (their cross-validated AUROC still
    /// agrees with Weka's, see docs/methods/milr.md).
    #[test]
    fn weka_optimizer_reproduces_wekas_models() {
        let cases = [
            (
                "musk1",
                Pooling::NoisyOr,
                -175.4069,
                [0.1823, -0.067, 0.0061, 0.0368, 0.0285],
                (76, -0.8068),
            ),
            (
                "musk1",
                Pooling::Geometric,
                -126.7186,
                [0.1528, -0.1027, -0.0622, 0.0964, -0.1082],
                (147, -0.5388),
            ),
            (
                "elephant",
                Pooling::Mean,
                122.3084,
                [-3.0459, 13.5564, -10.4252, 9.9077, 0.2232],
                (135, 6493.4164),
            ),
        ];
        for (data, pooling, intercept, first, (k, largest)) in cases {
            let d = crate::data::load(data).unwrap();
            let m = Milr {
                pooling,
                optimizer: Optimizer::Weka,
                ..Milr::default()
            }
            .fit(&d)
            .unwrap();
            let w = &m.weights[0];
            let round = |v: f64| (v * 1e4).round() / 1e4;
            assert_eq!(round(w[0]), intercept, "{pooling:?} intercept {}", w[0]);
            for (j, want) in first.iter().enumerate() {
                assert_eq!(
                    round(w[j + 1]),
                    *want,
                    "{pooling:?} f{}: {}",
                    j + 1,
                    w[j + 1]
                );
            }
            assert_eq!(round(w[k]), largest, "{pooling:?} f{k}: {}", w[k]);
        }
    }

    /// `positive` bags of `random_problem(seed)` as a data set, and the same set with
    /// every bag of class c repeated `copies[c]` times (copies kept together).
    fn with_copies(seed: u64, copies: [usize; 2]) -> (Dataset, Dataset) {
        let (x, starts, positive, dim) = random_problem(seed);
        let make = |reps: &dyn Fn(bool) -> usize| {
            let (mut f, mut s, mut labels) = (Vec::new(), vec![0], Vec::new());
            for (b, &p) in positive.iter().enumerate() {
                for _ in 0..reps(p) {
                    f.extend_from_slice(&x[starts[b] * dim..starts[b + 1] * dim]);
                    s.push(s.last().unwrap() + starts[b + 1] - starts[b]);
                    labels.push(usize::from(p));
                }
            }
            let n = labels.len();
            Dataset::new(
                "r",
                dim,
                f,
                s,
                (0..n).map(|b| b.to_string()).collect(),
                Some(labels),
                vec!["0".into(), "1".into()],
            )
            .unwrap()
        };
        (make(&|_| 1), make(&|p| copies[usize::from(p)]))
    }

    #[test]
    fn integer_class_weights_fit_the_set_with_repeated_bags() {
        // Closed form: weights (w0, w1) = the unweighted fit on the set where each bag of
        // class c appears w_c times (likelihood, standardisation and start alike).
        for pooling in ALL {
            for (seed, copies) in [(1u64, [1usize, 3usize]), (2, [2, 1]), (4, [3, 2])] {
                let (data, repeated) = with_copies(seed, copies);
                let w = ClassWeight::given(&copies.map(|c| c as f64)).unwrap();
                let base = Milr::default().pooling(pooling).ridge(0.1);
                let all: Vec<usize> = (0..data.n_bags()).collect();
                let weighted = base.class_weight(w).fit(&data).unwrap();
                let copied = base.fit(&repeated).unwrap();
                let (a, b) = (
                    weighted.scores(&data).unwrap(),
                    copied.scores(&data).unwrap(),
                );
                for i in 0..all.len() {
                    // Only the summation order differs: the two L-BFGS runs take the same
                    // steps up to round-off.
                    assert!(
                        (a.row(i)[1] - b.row(i)[1]).abs() < 1e-9,
                        "{pooling:?} seed {seed}: bag {i} {} vs {}",
                        a.row(i)[1],
                        b.row(i)[1]
                    );
                }
                assert_ne!(
                    weighted.weights,
                    base.fit(&data).unwrap().weights,
                    "the weights change the fit"
                );
            }
        }
    }

    #[test]
    fn balanced_weights_on_a_balanced_set_change_nothing() {
        // n / (k · n_c) = 1 exactly when the classes are equal: bit-identical fits.
        let (x, starts, _, dim) = random_problem(7);
        let n = starts.len() - 1;
        let labels: Vec<usize> = (0..n).map(|b| b % 2).collect();
        let data = Dataset::new(
            "r",
            dim,
            x,
            starts,
            (0..n).map(|b| b.to_string()).collect(),
            Some(labels),
            vec!["0".into(), "1".into()],
        )
        .unwrap();
        for pooling in ALL {
            let plain = Milr::default().pooling(pooling).fit(&data).unwrap();
            let balanced = Milr::default()
                .pooling(pooling)
                .class_weight(ClassWeight::Balanced)
                .fit(&data)
                .unwrap();
            assert_eq!(plain.weights, balanced.weights, "{pooling:?}");
            assert_eq!(
                plain.scores(&data).unwrap(),
                balanced.scores(&data).unwrap()
            );
        }
    }
}
