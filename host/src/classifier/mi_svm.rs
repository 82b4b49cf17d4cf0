//! mi-SVM and MI-SVM (Andrews, Tsochantaridis & Hofmann, "Support Vector Machines for
//! Multiple-Instance Learning", NIPS 2002): an instance-level SVM f(x) = Σ αᵢyᵢk(xᵢ, x) + b
//! trained by alternating between the SVM and the missing instance labels, under the
//! standard MI assumption (a bag is positive when at least one instance is).
//!
//! - mi-SVM ([`Heuristic::Instance`]): every instance of a negative bag is negative; the
//!   instances of a positive bag start positive. Each round trains the SVM on all
//!   instances with the current labels, then relabels every positive bag's instances by
//!   the sign of f, making the highest-scoring instance positive when a bag would
//!   otherwise have none.
//! - MI-SVM ([`Heuristic::Bag`]): every negative instance is a training point; each
//!   positive bag is one point, its witness — the mean of its instances at first (as the
//!   paper does), then the instance with the largest f.
//!
//! Both stop when no label (witness) changes, or at [`MiSvm::max_iterations`] rounds; the
//! model records which ([`Stop`]). A bag's score is max over its instances of f(x), so the
//! predicted label is its sign. The SVM is the project's SMO (`optim::smo`) on
//! the Gram matrix of the training instances (and, for MI-SVM, the positive bags' means),
//! computed once; features are z-scored on the training instances (or scaled to [0, 1],
//! [`InstanceScaling::MinMax`], as Weka 3.6's `MISVM` does).
//!
//! Binary data only: class 1 is the positive class.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::imbalance::ClassWeight;
use super::{check_dim, BagModel, BagScores, Classifier};
use crate::data::standardize::is_round_off;
use crate::data::Bags;
use crate::error::{Error, Result};
use crate::explain::{Explanation, InstanceScore};
use crate::fast::Dot8Block;
use crate::numerics::{dot8 as dot, first_argmax};
use crate::optim::smo::{self, SmoParams};

/// Which of the paper's two heuristics fills in the missing instance labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Heuristic {
    /// mi-SVM: a label for every instance of a positive bag.
    #[default]
    Instance,
    /// MI-SVM: one witness instance per positive bag.
    Bag,
}

/// The instance kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InstanceKernel {
    /// k(x, y) = x·y.
    #[default]
    Linear,
    /// k(x, y) = exp(−γ‖x − y‖²).
    Rbf,
}

mil_core::keywords!(InstanceKernel {
    InstanceKernel::Linear => "linear": "mi-SVM/MI-SVM: the linear instance kernel x.y",
    InstanceKernel::Rbf => "rbf": "mi-SVM/MI-SVM: the Gaussian instance kernel exp(-gamma |x - y|^2)",
});

/// How the features are scaled on the training instances before the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InstanceScaling {
    /// (x − mean) / standard deviation.
    #[default]
    Zscore,
    /// (x − min) / (max − min), to [0, 1]: Weka's `Normalize` filter, MISVM's default.
    #[serde(rename = "minmax")]
    MinMax,
}

mil_core::keywords!(InstanceScaling {
    InstanceScaling::Zscore => "zscore": "mi-SVM/MI-SVM: each feature z-scored on the training instances",
    InstanceScaling::MinMax => "minmax": "mi-SVM/MI-SVM: each feature scaled to [0, 1] on the training instances (Weka's MISVM)",
});

/// Why the alternation stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stop {
    /// No instance label (mi-SVM) or witness (MI-SVM) changed in the last iteration.
    Converged,
    /// [`MiSvm::max_iterations`] rounds ran with labels still changing.
    IterationCap,
}

/// mi-SVM / MI-SVM hyper-parameters. The defaults are those of the `misvm` package:
/// linear kernel, C = 1, at most 50 rounds; the RBF γ defaults to 1 / (number of
/// features), on z-scored features.
///
/// ```
/// use mil_toolkit::classifier::mi_svm::{Heuristic, MiSvm};
/// use mil_toolkit::classifier::{BagModel, Classifier};
///
/// let data = mil_toolkit::data::load("musk1")?;
/// let model = MiSvm::default().heuristic(Heuristic::Bag).fit(&data)?;
/// let labels = model.scores(&data)?.labels();
/// assert_eq!(labels.len(), data.n_bags());
/// # Ok::<(), mil_toolkit::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MiSvm {
    /// mi-SVM (instance labels) or MI-SVM (witnesses).
    pub heuristic: Heuristic,
    /// The instance kernel.
    pub kernel: InstanceKernel,
    /// γ of the RBF kernel on the scaled features; `None`: 1 / (number of features).
    pub gamma: Option<f64>,
    /// Misclassification cost C of every training point.
    pub cost: f64,
    /// The features' scaling, fitted on the training instances.
    #[serde(default)]
    pub scaling: InstanceScaling,
    /// Most rounds of the alternation.
    pub max_iterations: usize,
    /// Each point's cost C is multiplied by the weight of its bag's class.
    #[serde(default, skip_serializing_if = "ClassWeight::is_none")]
    pub class_weight: ClassWeight,
}

impl Default for MiSvm {
    fn default() -> Self {
        MiSvm {
            heuristic: Heuristic::Instance,
            kernel: InstanceKernel::Linear,
            gamma: None,
            cost: 1.0,
            scaling: InstanceScaling::Zscore,
            max_iterations: 50,
            class_weight: ClassWeight::None,
        }
    }
}

crate::params::setters!(MiSvm {
    heuristic: Heuristic,
    kernel: InstanceKernel,
    gamma: Option<f64>,
    cost: f64,
    scaling: InstanceScaling,
    max_iterations: usize,
    class_weight: ClassWeight,
});

impl MiSvm {
    /// The settings an inner CV tries when asked to tune mi-SVM or MI-SVM
    /// (`mil cv --tune`): C ∈ {C kept, 0.1, 10}.
    pub fn default_grid(&self) -> Vec<MiSvm> {
        let mut costs = vec![self.cost];
        costs.extend([0.1, 10.0].into_iter().filter(|&c| c != self.cost));
        costs.into_iter().map(|c| self.cost(c)).collect()
    }
}

/// Most rounds [`MiSvm::max_iterations`] may ask for.
pub const MAX_ITERATIONS: usize = 10_000;

impl MiSvm {
    /// Checks the hyper-parameters alone, before any data is read.
    pub fn check(&self) -> Result<()> {
        crate::params::check_weight("cost", self.cost, true)?;
        crate::params::check_count("max_iterations", self.max_iterations, MAX_ITERATIONS)?;
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
        self.class_weight.check()
    }
}

/// Memory and work of fitting `params` on data of this shape: the Gram matrix over all
/// instances (and MI-SVM's bag means, at most one per bag; MI-SVM also copies it for its
/// current training points), beside the data and its z-scored copy; the work is one
/// kernel term per pair of points.
pub fn footprint(shape: crate::params::Shape, params: &MiSvm) -> crate::params::Estimate {
    let (n, copies) = match params.heuristic {
        Heuristic::Instance => (shape.instances as f64, 1.0),
        Heuristic::Bag => ((shape.instances + shape.bags) as f64, 2.0),
    };
    crate::params::Estimate::values(
        copies * n * n + 2.0 * shape.values(),
        n * n * shape.dim as f64,
    )
}

/// The kernel on z-scored features (also sMIL's and sbMIL's instance kernel).
#[derive(Debug, Clone, Copy)]
pub(super) struct Kernel {
    pub(super) kind: InstanceKernel,
    pub(super) gamma: f64,
}

impl Kernel {
    pub(super) fn eval(&self, a: &[f64], b: &[f64]) -> f64 {
        match self.kind {
            InstanceKernel::Linear => dot(a, b),
            InstanceKernel::Rbf => (-self.gamma * crate::distance::squared_euclidean(a, b)).exp(),
        }
    }
}

/// The symmetric Gram matrix of the rows of `x` (row-major, `dim` columns); each entry is
/// computed on its own, so the result does not depend on the thread count.
///
/// Only the upper triangle is evaluated: both kernels give `eval(a, b) == eval(b, a)` bit
/// for bit (the products and squared differences commute term by term, summed in the
/// same order), so the mirrored lower triangle is the matrix evaluated in full.
pub(super) fn gram(kernel: Kernel, x: &[f64], dim: usize) -> Vec<f64> {
    let n = x.len() / dim;
    let row = |i: usize| &x[i * dim..(i + 1) * dim];
    let mut k = vec![0.0; n * n];
    match kernel.kind {
        // Two rows against two at a time, each entry still `dot8` to the bit.
        InstanceKernel::Linear => {
            let block = crate::fast::dot8_2x2_avx().unwrap_or(crate::numerics::dot8_2x2);
            k.par_chunks_mut(2 * n)
                .enumerate()
                .for_each(|(p, out)| linear_rows(x, dim, 2 * p, out, block))
        }
        InstanceKernel::Rbf => k.par_chunks_mut(n).enumerate().for_each(|(i, out)| {
            for (j, v) in out.iter_mut().enumerate().skip(i) {
                *v = kernel.eval(row(i), row(j));
            }
        }),
    }
    mirror_upper(&mut k, n);
    k
}

/// The upper-triangle entries of rows i and i + 1 of the linear Gram matrix of the rows
/// of `x` (`out`: those two rows, or row i alone when it is the last), two rows against
/// two at a time by `block`, each entry `dot8` to the bit.
fn linear_rows(x: &[f64], dim: usize, i: usize, out: &mut [f64], block: Dot8Block) {
    let n = x.len() / dim;
    let row = |i: usize| &x[i * dim..(i + 1) * dim];
    let (first, second) = out.split_at_mut(n);
    if second.is_empty() {
        for (j, v) in first.iter_mut().enumerate().skip(i) {
            *v = dot(row(i), row(j));
        }
        return;
    }
    let mut j = i;
    while j + 1 < n {
        let [[a, b], [c, d]] = block([row(i), row(i + 1)], [row(j), row(j + 1)]);
        (first[j], first[j + 1]) = (a, b);
        // Entry (i + 1, i) lies below the diagonal.
        if j > i {
            second[j] = c;
        }
        second[j + 1] = d;
        j += 2;
    }
    if j < n {
        first[j] = dot(row(i), row(j));
        second[j] = dot(row(i + 1), row(j));
    }
}

/// Copies the upper triangle of the n × n row-major `k` onto its lower triangle, in
/// tiles so that the strided reads stay in cache.
fn mirror_upper(k: &mut [f64], n: usize) {
    const TILE: usize = 64;
    for i0 in (0..n).step_by(TILE) {
        for j0 in (0..=i0).step_by(TILE) {
            for i in i0..(i0 + TILE).min(n) {
                for j in j0..(j0 + TILE).min(i) {
                    k[i * n + j] = k[j * n + i];
                }
            }
        }
    }
}

/// One SVM on the points `points` (indices into the Gram matrix `k` of `n` points) with
/// labels `y` (±1) and per-point bounds `bounds`: returns (αᵢyᵢ per point, b).
/// Every round of the instance heuristic trains on all n points, so `k` itself is the
/// matrix; otherwise the points' submatrix is copied into `sub`, kept from round to round
/// so that its pages are not handed back and faulted in again. Either is symmetric.
fn train_svm(
    k: &[f64],
    n: usize,
    points: &[usize],
    y: &[f64],
    bounds: &[f64],
    sub: &mut Vec<f64>,
) -> (Vec<f64>, f64) {
    let params = SmoParams {
        c: 1.0,
        ..SmoParams::default()
    };
    let every_point = points.len() == n && points.iter().enumerate().all(|(a, &i)| a == i);
    let sol = if every_point {
        smo::solve_bounded_symmetric(k, y, &params, bounds)
    } else {
        let m = points.len();
        sub.clear();
        sub.extend(
            points
                .iter()
                .flat_map(|&i| points.iter().map(move |&j| k[i * n + j])),
        );
        smo::solve_bounded_symmetric(&sub[..m * m], y, &params, bounds)
    };
    let coef = sol.alpha.iter().zip(y).map(|(a, y)| a * y).collect();
    (coef, sol.bias)
}

/// f at Gram point `t` for the SVM (`coef`, `bias`) trained on `points`, read along row
/// `t` of the symmetric `k`.
fn decision_at(k: &[f64], n: usize, points: &[usize], coef: &[f64], bias: f64, t: usize) -> f64 {
    points
        .iter()
        .zip(coef)
        .filter(|(_, c)| **c != 0.0)
        .map(|(&i, c)| c * k[t * n + i])
        .sum::<f64>()
        + bias
}

/// A fitted mi-SVM or MI-SVM: the SVM's support vectors (scaled), their αᵢyᵢ and b.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MiSvmModel {
    /// Hyper-parameters.
    pub params: MiSvm,
    /// The instance function f: the scaling (z-score, or min-max with the minimum as the
    /// offset and 1 / range as the factor), support vectors, αᵢyᵢ and b.
    #[serde(flatten)]
    pub expansion: Expansion,
    /// Rounds of the alternation run.
    pub iterations: usize,
    /// Why the alternation stopped.
    pub stop: Stop,
}

/// Feature means and inverse standard deviations over the rows of `x` (0 for a constant
/// feature, [`is_round_off`]).
pub(super) fn standardisation(x: &[f64], dim: usize) -> (Vec<f64>, Vec<f64>) {
    let n = (x.len() / dim) as f64;
    let mut mean = vec![0.0; dim];
    for row in x.chunks_exact(dim) {
        mean.iter_mut().zip(row).for_each(|(m, v)| *m += v / n);
    }
    let mut var = vec![0.0; dim];
    for row in x.chunks_exact(dim) {
        for j in 0..dim {
            var[j] += (row[j] - mean[j]).powi(2) / n;
        }
    }
    let inv_sd = var
        .iter()
        .zip(&mean)
        .map(|(&v, &m)| {
            if is_round_off(v.sqrt(), m) {
                0.0
            } else {
                1.0 / v.sqrt()
            }
        })
        .collect();
    (mean, inv_sd)
}

/// Feature minima and inverse ranges over the rows of `x` (0 for a constant feature).
fn min_max(x: &[f64], dim: usize) -> (Vec<f64>, Vec<f64>) {
    let mut lo = vec![f64::INFINITY; dim];
    let mut hi = vec![f64::NEG_INFINITY; dim];
    for row in x.chunks_exact(dim) {
        for j in 0..dim {
            lo[j] = lo[j].min(row[j]);
            hi[j] = hi[j].max(row[j]);
        }
    }
    let inv = lo
        .iter()
        .zip(&hi)
        .map(|(l, h)| if h > l { 1.0 / (h - l) } else { 0.0 })
        .collect();
    (lo, inv)
}

pub(super) fn zscore(row: &[f64], mean: &[f64], inv_sd: &[f64]) -> Vec<f64> {
    row.iter()
        .zip(mean)
        .zip(inv_sd)
        .map(|((v, m), s)| (v - m) * s)
        .collect()
}

/// An instance-level kernel expansion f(x) = Σₛ cₛ k(s, z(x)) + b over scaled instances
/// z(x) = (x − mean)·inv_sd: the part of a model that mi-SVM/MI-SVM and sMIL/sbMIL share
/// (their bags pool f differently). Its fields are stored inline in the model's file; the
/// kernel is the model's parameter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Expansion {
    /// Feature dimension.
    pub dim: usize,
    /// Offset of each feature.
    pub mean: Vec<f64>,
    /// Factor of each feature after the offset (0 for a dropped feature).
    pub inv_sd: Vec<f64>,
    /// γ of the RBF kernel as used (0 for the linear kernel).
    pub gamma: f64,
    /// Support points, row-major, scaled.
    pub support: Vec<f64>,
    /// The coefficient cₛ of each support point.
    pub coefficients: Vec<f64>,
    /// Bias b.
    pub bias: f64,
}

impl Expansion {
    /// f(x) of every instance of `bag` under `kernel`.
    pub fn decisions(&self, kernel: InstanceKernel, bag: crate::data::Bag<'_>) -> Vec<f64> {
        let kernel = Kernel {
            kind: kernel,
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

    /// The linear kernel's f as weights on the raw features and a bias, f(x) = w·x + b:
    /// w = Σₛ cₛ s scaled by inv_sd, with the offsets moved into b. `None` for RBF.
    pub fn linear(&self, kernel: InstanceKernel) -> Option<(Vec<f64>, f64)> {
        if kernel != InstanceKernel::Linear {
            return None;
        }
        let mut weights = vec![0.0; self.dim];
        for (s, c) in self.support.chunks_exact(self.dim).zip(&self.coefficients) {
            weights.iter_mut().zip(s).for_each(|(w, v)| *w += c * v);
        }
        let mut bias = self.bias;
        for ((w, mean), inv_sd) in weights.iter_mut().zip(&self.mean).zip(&self.inv_sd) {
            *w *= inv_sd;
            bias -= *w * mean;
        }
        Some((weights, bias))
    }

    /// Checks the expansion of a model read from a file (`name`: the method, for errors).
    pub fn validate(&self, kernel: InstanceKernel, name: impl std::fmt::Display) -> Result<()> {
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
        let gamma_ok = match kernel {
            InstanceKernel::Linear => self.gamma == 0.0,
            InstanceKernel::Rbf => self.gamma > 0.0 && self.gamma.is_finite(),
        };
        if !gamma_ok {
            return Err(Error::Model(format!(
                "{name}: gamma {} does not suit the {} kernel",
                self.gamma,
                mil_core::keyword::Keyword::name(kernel)
            )));
        }
        Ok(())
    }
}

impl Classifier for MiSvm {
    type Model = MiSvmModel;

    fn fit<'a>(&self, train: impl Into<Bags<'a>>) -> Result<MiSvmModel> {
        let train = train.into();
        let (data, train) = (train.dataset(), &*train.indices());
        self.check()?;
        let labels = data.training_labels(train, 2)?;
        if data.n_classes() != 2 {
            return Err(Error::data(
                data.name(),
                format!(
                    "{} classes: mi-SVM and MI-SVM are binary (negative = class 0, positive = class 1)",
                    data.n_classes()
                ),
            ));
        }
        let n_instances: usize = train.iter().map(|&b| data.bag(b).len()).sum();
        let weights = self.class_weight.resolve(&labels, 2)?;

        let dim = data.dim();
        let picked = data.copy_bags(train);
        let (mean, inv_sd) = match self.scaling {
            InstanceScaling::Zscore => standardisation(picked.features(), dim),
            InstanceScaling::MinMax => min_max(picked.features(), dim),
        };
        // Points: the scaled instances, then (MI-SVM) each positive bag's mean.
        let mut x: Vec<f64> = picked
            .features()
            .chunks_exact(dim)
            .flat_map(|r| zscore(r, &mean, &inv_sd))
            .collect();
        let starts = picked.bag_starts();
        let bag_of: Vec<usize> = (0..train.len())
            .flat_map(|b| std::iter::repeat_n(b, starts[b + 1] - starts[b]))
            .collect();
        if self.heuristic == Heuristic::Bag {
            for b in (0..train.len()).filter(|&b| labels[b] == 1) {
                let rows = &x[starts[b] * dim..starts[b + 1] * dim];
                let len = (starts[b + 1] - starts[b]) as f64;
                let mut m = vec![0.0; dim];
                for r in rows.chunks_exact(dim) {
                    m.iter_mut().zip(r).for_each(|(a, v)| *a += v / len);
                }
                x.extend(m);
            }
        }
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
        let bound = |b: usize| self.cost * weights[labels[b]];
        let positive: Vec<usize> = (0..train.len()).filter(|&b| labels[b] == 1).collect();
        let mut sub = Vec::new();

        let (points, coef, bias, iterations, stop) = match self.heuristic {
            Heuristic::Instance => {
                let points: Vec<usize> = (0..n_instances).collect();
                let bounds: Vec<f64> = bag_of.iter().map(|&b| bound(b)).collect();
                let mut y: Vec<f64> = bag_of
                    .iter()
                    .map(|&b| if labels[b] == 1 { 1.0 } else { -1.0 })
                    .collect();
                let mut round = 0;
                loop {
                    round += 1;
                    crate::cancel::checkpoint();
                    let (coef, bias) = train_svm(&k, n, &points, &y, &bounds, &mut sub);
                    let mut changed = false;
                    for &b in &positive {
                        let f: Vec<f64> = (starts[b]..starts[b + 1])
                            .map(|t| decision_at(&k, n, &points, &coef, bias, t))
                            .collect();
                        let mut new: Vec<f64> = f
                            .iter()
                            .map(|&v| if v > 0.0 { 1.0 } else { -1.0 })
                            .collect();
                        if new.iter().all(|&l| l < 0.0) {
                            new[first_argmax(&f).0] = 1.0;
                        }
                        let old = &mut y[starts[b]..starts[b + 1]];
                        if old != new.as_slice() {
                            changed = true;
                            old.copy_from_slice(&new);
                        }
                    }
                    if !changed {
                        break (points, coef, bias, round, Stop::Converged);
                    }
                    if round == self.max_iterations {
                        break (points, coef, bias, round, Stop::IterationCap);
                    }
                }
            }
            Heuristic::Bag => {
                let negatives: Vec<usize> = (0..n_instances)
                    .filter(|&t| labels[bag_of[t]] == 0)
                    .collect();
                // The witnesses start at the means, stored after the instances.
                let mut witness: Vec<usize> = (n_instances..n).collect();
                let mut y = vec![-1.0; negatives.len()];
                y.extend(std::iter::repeat_n(1.0, positive.len()));
                let mut bounds: Vec<f64> = negatives.iter().map(|&t| bound(bag_of[t])).collect();
                bounds.extend(positive.iter().map(|&b| bound(b)));
                let mut round = 0;
                loop {
                    round += 1;
                    crate::cancel::checkpoint();
                    let points: Vec<usize> = negatives.iter().chain(&witness).copied().collect();
                    let (coef, bias) = train_svm(&k, n, &points, &y, &bounds, &mut sub);
                    let new: Vec<usize> = positive
                        .iter()
                        .map(|&b| {
                            let f: Vec<f64> = (starts[b]..starts[b + 1])
                                .map(|t| decision_at(&k, n, &points, &coef, bias, t))
                                .collect();
                            starts[b] + first_argmax(&f).0
                        })
                        .collect();
                    if new == witness {
                        break (points, coef, bias, round, Stop::Converged);
                    }
                    if round == self.max_iterations {
                        break (points, coef, bias, round, Stop::IterationCap);
                    }
                    witness = new;
                }
            }
        };
        let (mut support, mut coefficients) = (Vec::new(), Vec::new());
        for (&i, &c) in points.iter().zip(&coef) {
            if c != 0.0 {
                support.extend_from_slice(&x[i * dim..(i + 1) * dim]);
                coefficients.push(c);
            }
        }
        Ok(MiSvmModel {
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
            iterations,
            stop,
        })
    }
}

impl MiSvmModel {
    /// f(x) of every instance of `bag`.
    pub fn instance_decisions(&self, bag: crate::data::Bag<'_>) -> Vec<f64> {
        self.expansion.decisions(self.params.kernel, bag)
    }

    /// Checks a model read from a file.
    pub fn validate(&self) -> Result<()> {
        let name = self.params.heuristic.kind();
        self.params
            .check()
            .map_err(|e| Error::Model(format!("{name}: {e}")))?;
        self.expansion.validate(self.params.kernel, name)
    }
}

impl BagModel for MiSvmModel {
    fn n_classes(&self) -> usize {
        2
    }

    fn input_dim(&self) -> usize {
        self.expansion.dim
    }

    /// Binary scores [0, max f(x)]: class 1 when the largest instance decision is > 0.
    fn scores<'a>(&self, bags: impl Into<Bags<'a>>) -> Result<BagScores> {
        let bags = bags.into();
        let (data, bags) = (bags.dataset(), &*bags.indices());
        check_dim(data, self.expansion.dim)?;
        let values: Vec<f64> = bags
            .par_iter()
            .map(|&b| first_argmax(&self.instance_decisions(data.bag(b))).1)
            .collect();
        Ok(BagScores::new(
            2,
            values.into_iter().flat_map(|f| [0.0, f]).collect(),
        ))
    }

    /// Every instance's decision value f(x); the witness is the largest, the bag's score.
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

impl Heuristic {
    /// The classifier's name for this heuristic.
    pub fn kind(self) -> super::ClassifierKind {
        match self {
            Heuristic::Instance => super::ClassifierKind::MiSvm,
            Heuristic::Bag => super::ClassifierKind::MiSvmBag,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Dataset;
    use rand::{RngExt, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    #[test]
    fn the_linear_gram_is_dot8_of_every_pair_to_the_bit() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
        let linear = Kernel {
            kind: InstanceKernel::Linear,
            gamma: 0.0,
        };
        // Odd and even row counts, dimensions below, on and around the 8-wide chunks.
        for (n, dim) in [(1, 3), (2, 8), (3, 1), (5, 9), (8, 16), (37, 230), (64, 7)] {
            let x: Vec<f64> = (0..n * dim)
                .map(|_| rng.random_range(-10.0..10.0))
                .collect();
            let k = gram(linear, &x, dim);
            for i in 0..n {
                for j in 0..n {
                    let want = dot(&x[i * dim..(i + 1) * dim], &x[j * dim..(j + 1) * dim]);
                    assert_eq!(
                        k[i * n + j].to_bits(),
                        want.to_bits(),
                        "{n} × {dim}: ({i}, {j})"
                    );
                }
            }
        }
    }

    #[test]
    fn a_constant_feature_is_scaled_by_0_not_by_its_round_off() {
        // Ten rows: 0.1 / 10 summed ten times is not 0.1, so the column's computed
        // variance is round-off (> 0), which must not become a scale of ~10¹⁶.
        let x: Vec<f64> = (0..10).flat_map(|i| [f64::from(i), 0.1]).collect();
        let (mean, inv_sd) = standardisation(&x, 2);
        let var: f64 = (0..10).map(|_| (0.1 - mean[1]).powi(2) / 10.0).sum();
        assert!(var > 0.0, "the column's variance is round-off here");
        assert_eq!(inv_sd[1], 0.0);
        assert!((inv_sd[0] - 1.0 / 8.25f64.sqrt()).abs() < 1e-15);
        assert_eq!(zscore(&[3.0, 7.0], &mean, &inv_sd)[1], 0.0);
    }

    fn dataset(
        dim: usize,
        bags: Vec<Vec<Vec<f64>>>,
        labels: Vec<usize>,
        classes: usize,
    ) -> Dataset {
        let mut starts = vec![0];
        let mut features = Vec::new();
        for bag in &bags {
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

    /// Bags of 1–5 instances in 3-D drawn from [−1, 1]³; each positive bag has one or two
    /// instances moved to x₀ ∈ [4, 5], so the bags are separable under the MI assumption
    /// (by x₀ > 2.5) and the unmoved instances of positive bags look like negatives.
    fn separable(seed: u64) -> Dataset {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut bags = Vec::new();
        let mut labels = Vec::new();
        for b in 0..16 {
            let positive = b % 2 == 0;
            let len = rng.random_range(1..6);
            let mut bag: Vec<Vec<f64>> = (0..len)
                .map(|_| (0..3).map(|_| rng.random_range(-1.0..1.0)).collect())
                .collect();
            if positive {
                let moved = rng.random_range(1..3).min(len);
                for x in bag.iter_mut().take(moved) {
                    x[0] = rng.random_range(4.0..5.0);
                }
            }
            bags.push(bag);
            labels.push(usize::from(positive));
        }
        dataset(3, bags, labels, 2)
    }

    fn all_four() -> [MiSvm; 4] {
        let base = MiSvm::default().cost(1e3);
        [
            base,
            base.kernel(InstanceKernel::Rbf),
            base.heuristic(Heuristic::Bag),
            base.heuristic(Heuristic::Bag).kernel(InstanceKernel::Rbf),
        ]
    }

    #[test]
    fn the_mirrored_gram_matrix_is_every_entry_evaluated_on_its_own() {
        // Sizes below, at and across the mirror's 64-row tiles; dimensions with and
        // without a remainder after the 8-wide dot product.
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        for (n, dim) in [(1, 3), (5, 8), (64, 11), (65, 16), (150, 21)] {
            let x: Vec<f64> = (0..n * dim).map(|_| rng.random_range(-3.0..3.0)).collect();
            for kernel in [
                Kernel {
                    kind: InstanceKernel::Linear,
                    gamma: 0.0,
                },
                Kernel {
                    kind: InstanceKernel::Rbf,
                    gamma: 0.3,
                },
            ] {
                let k = gram(kernel, &x, dim);
                for i in 0..n {
                    for j in 0..n {
                        let direct =
                            kernel.eval(&x[i * dim..(i + 1) * dim], &x[j * dim..(j + 1) * dim]);
                        assert_eq!(
                            k[i * n + j].to_bits(),
                            direct.to_bits(),
                            "n {n}, ({i}, {j})"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn min_max_scaling_ignores_each_features_units() {
        // x' = a_k x + b_k (a_k > 0) per feature maps every training instance to the same
        // point of [0, 1]^d (to rounding), so the SVMs see the same points and give the
        // same bag labels; their decision values agree only to the solver's tolerance.
        let (a, b) = ([3.0, 0.01, 250.0], [-7.0, 4.0, 1e3]);
        for seed in 0..8 {
            let data = separable(seed);
            let moved: Vec<f64> = data
                .features()
                .chunks_exact(3)
                .flat_map(|x| (0..3).map(move |k| a[k] * x[k] + b[k]))
                .collect();
            let other = Dataset::new(
                "moved",
                3,
                moved,
                data.bag_starts().to_vec(),
                data.bag_ids().to_vec(),
                Some(data.labels().unwrap().to_vec()),
                vec!["0".into(), "1".into()],
            )
            .unwrap();
            for params in all_four() {
                let params = params.scaling(InstanceScaling::MinMax);
                let (m, n) = (params.fit(&data).unwrap(), params.fit(&other).unwrap());
                for (x, y) in data
                    .features()
                    .chunks_exact(3)
                    .zip(other.features().chunks_exact(3))
                {
                    let (u, v) = (
                        zscore(x, &m.expansion.mean, &m.expansion.inv_sd),
                        zscore(y, &n.expansion.mean, &n.expansion.inv_sd),
                    );
                    assert!(u.iter().all(|u| (0.0..=1.0).contains(u)), "{u:?}");
                    for (u, v) in u.iter().zip(&v) {
                        assert!((u - v).abs() < 1e-12, "seed {seed}: {u} vs {v}");
                    }
                }
                assert_eq!(
                    m.scores(&data).unwrap().labels(),
                    n.scores(&other).unwrap().labels(),
                    "seed {seed}"
                );
            }
        }
    }

    #[test]
    fn two_points_give_the_hard_margin_line() {
        // One negative bag {−1} and one positive bag {3}: z-scored to −1 and 1, the
        // maximal-margin line is f(z) = z, i.e. f(x) = (x − 1)/2 in raw units.
        let data = dataset(1, vec![vec![vec![-1.0]], vec![vec![3.0]]], vec![0, 1], 2);
        for heuristic in [Heuristic::Instance, Heuristic::Bag] {
            let model = MiSvm::default()
                .cost(1e6)
                .heuristic(heuristic)
                .fit(&data)
                .unwrap();
            let probe = dataset(1, vec![vec![vec![0.0], vec![2.0], vec![5.0]]], vec![0], 2);
            let f = model.instance_decisions(probe.bag(0));
            for (x, fx) in [0.0, 2.0, 5.0].iter().zip(&f) {
                assert!(
                    (fx - (x - 1.0) / 2.0).abs() < 1e-3,
                    "{heuristic:?}: f({x}) = {fx}"
                );
            }
            let bag_score = model.scores(&probe).unwrap().row(0)[1];
            assert_eq!(
                bag_score,
                f.iter().copied().fold(f64::NEG_INFINITY, f64::max)
            );
        }
    }

    #[test]
    fn single_instance_bags_make_both_heuristics_one_svm() {
        // With one instance per bag the witness is the instance and no label can change:
        // both heuristics are the plain SVM on the instances.
        for seed in 0..5 {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
            let bags: Vec<Vec<Vec<f64>>> = (0..14)
                .map(|_| vec![(0..2).map(|_| rng.random_range(-2.0..2.0)).collect()])
                .collect();
            let labels = (0..14).map(|b| b % 2).collect();
            let data = dataset(2, bags, labels, 2);
            let mi = MiSvm::default().fit(&data).unwrap();
            let bag = MiSvm::default()
                .heuristic(Heuristic::Bag)
                .fit(&data)
                .unwrap();
            assert_eq!((mi.iterations, mi.stop), (1, Stop::Converged));
            assert_eq!(bag.stop, Stop::Converged);
            let (a, b) = (mi.scores(&data).unwrap(), bag.scores(&data).unwrap());
            for i in 0..data.n_bags() {
                assert!(
                    (a.row(i)[1] - b.row(i)[1]).abs() < 1e-9,
                    "seed {seed} bag {i}"
                );
            }
        }
    }

    #[test]
    fn converged_mi_svm_bag_keeps_positive_support_vectors_at_witnesses() {
        // At convergence every positive point of MI-SVM is its bag's argmax of f.
        for seed in 0..10 {
            let data = separable(100 + seed);
            let model = MiSvm::default()
                .heuristic(Heuristic::Bag)
                .kernel(InstanceKernel::Rbf)
                .fit(&data)
                .unwrap();
            assert_eq!(model.stop, Stop::Converged);
            let witnesses: Vec<Vec<f64>> = (0..data.n_bags())
                .filter(|&b| data.labels().unwrap()[b] == 1)
                .map(|b| {
                    let f = model.instance_decisions(data.bag(b));
                    let x = data.bag(b).instances().nth(first_argmax(&f).0).unwrap();
                    zscore(x, &model.expansion.mean, &model.expansion.inv_sd)
                })
                .collect();
            for (sv, c) in model
                .expansion
                .support
                .chunks_exact(model.expansion.dim)
                .zip(&model.expansion.coefficients)
            {
                if *c > 0.0 {
                    assert!(witnesses.iter().any(|w| w == sv), "seed {seed}");
                }
            }
        }
    }

    #[test]
    fn scores_ignore_instance_order_bag_order_and_duplicates_and_explain_the_maximum() {
        for (seed, params) in (7..10).flat_map(|s| all_four().map(|p| (s, p))) {
            let data = separable(seed);
            let model = params.fit(&data).unwrap();
            let scores = model.scores(&data).unwrap();
            let reversed: Vec<usize> = (0..data.n_bags()).rev().collect();
            let back = model.scores(data.select(&reversed)).unwrap();
            let explained = model.explain(&data).unwrap();
            for (b, e) in explained.iter().enumerate() {
                assert_eq!(back.row(data.n_bags() - 1 - b), scores.row(b));
                let bag: Vec<Vec<f64>> =
                    data.bag(b).instances().rev().map(<[f64]>::to_vec).collect();
                let mut doubled = bag.clone();
                doubled.push(bag[0].clone());
                let flipped = dataset(3, vec![bag, doubled], vec![0, 0], 2);
                let again = model.scores(&flipped).unwrap();
                assert_eq!(again.row(0), scores.row(b), "seed {seed}");
                assert_eq!(again.row(1), scores.row(b), "seed {seed}");
                assert_eq!(e.score_kind, InstanceScore::Decision);
                assert_eq!(e.instance_scores[e.witnesses[0]], scores.row(b)[1]);
            }
        }
    }

    #[test]
    fn fits_do_not_depend_on_the_thread_count() {
        let data = separable(3);
        for params in all_four() {
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

    /// min over (w, b) on a grid of step 0.001 in [−3, 3]² of the linear SVM's primal
    /// ½w² + C·Σ max(0, 1 − yᵢ(w zᵢ + b)) in one dimension, with the minimiser.
    fn primal_by_grid(z: &[f64], y: &[f64], c: f64) -> (f64, f64, f64) {
        let mut best = (f64::INFINITY, 0.0, 0.0);
        for i in -3000..=3000 {
            for j in -3000..=3000 {
                let (w, b) = (i as f64 / 1000.0, j as f64 / 1000.0);
                let slack: f64 = z
                    .iter()
                    .zip(y)
                    .map(|(z, y)| (1.0 - y * (w * z + b)).max(0.0))
                    .sum();
                let value = 0.5 * w * w + c * slack;
                if value < best.0 {
                    best = (value, w, b);
                }
            }
        }
        best
    }

    #[test]
    fn mi_svm_can_stop_at_a_labelling_that_is_not_the_best() {
        // A negative bag {0} and a positive bag {−1, 1} on a line: separable under the MI
        // assumption (by x > ½), yet mi-SVM starts from both positive instances labelled +1.
        // No line puts 0 below −1 and 1 at once, so the SVM of that labelling is the
        // constant f = 1 (w = 0, b = 1, slack 2 on the negative); f > 0 at both positive
        // instances keeps their labels, and the alternation stops at once with the negative
        // bag scored positive. Enumerating the labellings of the positive bag (at least one
        // instance positive) shows a labelling with a lower objective that classifies both
        // bags: the heuristic found a fixed point, not the optimum.
        let data = dataset(
            1,
            vec![vec![vec![0.0]], vec![vec![-1.0], vec![1.0]]],
            vec![0, 1],
            2,
        );
        let model = MiSvm::default().fit(&data).unwrap();
        assert_eq!((model.iterations, model.stop), (1, Stop::Converged));
        // z-scored positions of the negative, then the two positive-bag instances.
        let z: Vec<f64> = data
            .features()
            .iter()
            .map(|&x| (x - model.expansion.mean[0]) * model.expansion.inv_sd[0])
            .collect();
        let c = model.params.cost;
        let mut by_labelling = Vec::new();
        for labels in [[1.0, 1.0], [1.0, -1.0], [-1.0, 1.0]] {
            let y = [-1.0, labels[0], labels[1]];
            let (objective, w, b) = primal_by_grid(&z, &y, c);
            let f = |z: f64| w * z + b;
            let correct = f(z[0]) < 0.0 && f(z[1]).max(f(z[2])) > 0.0;
            by_labelling.push((labels, objective, (w, b), correct));
        }
        // The start labelling's SVM, found by the grid, is the constant 1 and keeps both
        // labels positive: it is the fixed point mi-SVM returns.
        let (_, start_objective, (w, b), start_correct) = by_labelling[0];
        assert!(w.abs() <= 1e-3 && (b - 1.0).abs() <= 1e-3, "w {w}, b {b}");
        assert!(!start_correct);
        let f = model.instance_decisions(data.bag(1));
        for (fx, zx) in f.iter().zip(&z[1..]) {
            assert!((fx - (w * zx + b)).abs() < 1e-2, "f = {fx} at z = {zx}");
        }
        assert_eq!(model.scores(&data).unwrap().labels(), vec![1, 1]);
        // The best labelling is another one, with a strictly lower objective, and its SVM
        // classifies both bags.
        let best = by_labelling
            .iter()
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap();
        assert!(best.1 < start_objective - 0.1, "{by_labelling:?}");
        assert!(best.3, "{by_labelling:?}");
    }

    #[test]
    fn the_iteration_cap_is_reported() {
        // MI-SVM's first iteration trains on the bag means, so the witnesses always change.
        let data = separable(1);
        let model = MiSvm::default()
            .heuristic(Heuristic::Bag)
            .max_iterations(1)
            .fit(&data)
            .unwrap();
        assert_eq!((model.iterations, model.stop), (1, Stop::IterationCap));
    }

    #[test]
    fn bad_parameters_data_and_saved_models_are_refused() {
        let data = separable(2);
        let err = |p: MiSvm| p.fit(&data).unwrap_err().to_string();
        assert!(err(MiSvm::default().cost(0.0)).contains("cost"));
        assert!(err(MiSvm::default().gamma(Some(1.0))).contains("gamma"));
        assert!(err(MiSvm::default().max_iterations(0)).contains("max_iterations"));
        let three = dataset(
            1,
            vec![vec![vec![0.0]], vec![vec![1.0]], vec![vec![2.0]]],
            vec![0, 1, 2],
            3,
        );
        assert!(MiSvm::default()
            .fit(&three)
            .unwrap_err()
            .to_string()
            .contains("binary"));

        let model = MiSvm::default()
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
        let mut wide = model;
        wide.expansion.mean.push(0.0);
        assert!(wide.validate().is_err());
    }
}
