//! The codebooks of miVLAD and miFV, learnt on the training instances after the
//! z-score: k-means (k-means++ seeding, Lloyd iterations) and a diagonal-covariance
//! Gaussian mixture fitted by EM from the k-means solution.
//!
//! Instances are assigned (k-means) or given their responsibilities (EM) in parallel,
//! one result per instance in instance order, and every sum is then taken in that order:
//! the codebook does not depend on the thread count.

use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::numerics::log_sum_exp;

/// The smallest variance of a mixture component along a feature, in units of the
/// feature's training variance (1 after the z-score): keeps the likelihood bounded when
/// a component sits on a few identical instances.
pub const VARIANCE_FLOOR: f64 = 1e-3;

/// EM stops when the log-likelihood gains less than this fraction of its magnitude.
pub const EM_TOLERANCE: f64 = 1e-6;

/// Why an iterative fit stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stop {
    /// k-means: no assignment changed; EM: the log-likelihood stopped improving.
    Converged,
    /// The iteration bound was reached first.
    MaxIterations,
}

/// How an iterative fit ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Convergence {
    /// Iterations run.
    pub iterations: usize,
    /// Why it stopped.
    pub stop: Stop,
}

/// Squared Euclidean distance.
fn dist2(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

/// The nearest of the `k` centres (row-major, `dim` wide) to `x`; ties go to the lowest
/// index.
pub fn nearest(centres: &[f64], dim: usize, x: &[f64]) -> usize {
    if centres.len() <= dim {
        return 0;
    }
    let mut best = (0, f64::INFINITY);
    for (c, centre) in centres.chunks_exact(dim).enumerate() {
        let d = dist2(x, centre);
        if d < best.1 {
            best = (c, d);
        }
    }
    best.0
}

/// k-means on the rows of `x` (`dim` wide; at least `k` rows): k-means++ seeding from
/// `seed`, then Lloyd iterations until no assignment changes or `max_iter` iterations.
/// An emptied cluster keeps its centre. Returns the centres (k × dim) and how it ended.
pub fn kmeans(
    x: &[f64],
    dim: usize,
    k: usize,
    max_iter: usize,
    seed: u64,
) -> (Vec<f64>, Convergence) {
    let n = x.len() / dim;
    let row = |i: usize| &x[i * dim..(i + 1) * dim];
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    // k-means++: each new centre drawn with probability ∝ its squared distance to the
    // nearest centre so far (uniformly when every instance sits on a centre).
    let mut centres = row(rng.random_range(0..n)).to_vec();
    // The distances only serve to draw the next centre.
    let mut d2: Vec<f64> = if k > 1 {
        (0..n).map(|i| dist2(row(i), &centres)).collect()
    } else {
        Vec::new()
    };
    while centres.len() < k * dim {
        let total: f64 = d2.iter().sum();
        let pick = if total > 0.0 {
            let mut target = rng.random_range(0.0..total);
            let mut pick = n - 1;
            for (i, &d) in d2.iter().enumerate() {
                if target < d {
                    pick = i;
                    break;
                }
                target -= d;
            }
            pick
        } else {
            rng.random_range(0..n)
        };
        let start = centres.len();
        centres.extend_from_slice(row(pick));
        for (i, d) in d2.iter_mut().enumerate() {
            *d = d.min(dist2(row(i), &centres[start..]));
        }
    }
    let mut assigned = vec![usize::MAX; n];
    for iteration in 1..=max_iter {
        crate::cancel::checkpoint();
        let next: Vec<usize> = x
            .par_chunks_exact(dim)
            .map(|xi| nearest(&centres, dim, xi))
            .collect();
        if next == assigned {
            return (
                centres,
                Convergence {
                    iterations: iteration,
                    stop: Stop::Converged,
                },
            );
        }
        assigned = next;
        let mut sums = vec![0.0; k * dim];
        let mut counts = vec![0usize; k];
        for (i, &c) in assigned.iter().enumerate() {
            counts[c] += 1;
            for (s, v) in sums[c * dim..(c + 1) * dim].iter_mut().zip(row(i)) {
                *s += v;
            }
        }
        for c in (0..k).filter(|&c| counts[c] > 0) {
            for j in 0..dim {
                centres[c * dim + j] = sums[c * dim + j] / counts[c] as f64;
            }
        }
    }
    (
        centres,
        Convergence {
            iterations: max_iter,
            stop: Stop::MaxIterations,
        },
    )
}

/// A Gaussian mixture with diagonal covariances.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Gmm {
    /// Mixing weights w_k (positive, summing to 1).
    pub weights: Vec<f64>,
    /// Means μ_k, row-major K × dim.
    pub means: Vec<f64>,
    /// Variances σ²_k per feature, row-major K × dim (each ≥ [`VARIANCE_FLOOR`]).
    pub variances: Vec<f64>,
}

impl Gmm {
    /// Number of components.
    pub fn len(&self) -> usize {
        self.weights.len()
    }

    /// Whether it has no component.
    pub fn is_empty(&self) -> bool {
        self.weights.is_empty()
    }

    /// Feature dimension.
    pub fn dim(&self) -> usize {
        self.means.len() / self.len().max(1)
    }

    /// log w_k + log N(x | μ_k, diag σ²_k) for every component k, into `out`.
    fn joint_log(&self, x: &[f64], out: &mut [f64]) {
        let dim = self.dim();
        for (k, o) in out.iter_mut().enumerate() {
            let (mu, var) = (
                &self.means[k * dim..(k + 1) * dim],
                &self.variances[k * dim..(k + 1) * dim],
            );
            let mut s = 0.0;
            for j in 0..dim {
                let d = x[j] - mu[j];
                s += (2.0 * std::f64::consts::PI * var[j]).ln() + d * d / var[j];
            }
            *o = self.weights[k].ln() - 0.5 * s;
        }
    }

    /// The posteriors γ_k(x) (into `out`) and log p(x), by log-sum-exp.
    pub fn posteriors(&self, x: &[f64], out: &mut [f64]) -> f64 {
        self.joint_log(x, out);
        let lse = log_sum_exp(out.iter().copied());
        for o in out.iter_mut() {
            *o = (*o - lse).exp();
        }
        lse
    }

    /// The mixture started from a k-means solution: each cluster's share of the
    /// instances, its centre, its members' variances (floored; 1, the feature's training
    /// variance, for a cluster of fewer than two members).
    pub fn from_kmeans(x: &[f64], dim: usize, centres: &[f64]) -> Gmm {
        let k = centres.len() / dim;
        let mut counts = vec![0usize; k];
        let mut sq = vec![0.0; k * dim];
        for xi in x.chunks_exact(dim) {
            let c = nearest(centres, dim, xi);
            counts[c] += 1;
            for j in 0..dim {
                let d = xi[j] - centres[c * dim + j];
                sq[c * dim + j] += d * d;
            }
        }
        let mut variances = vec![1.0; k * dim];
        for c in (0..k).filter(|&c| counts[c] > 1) {
            for j in 0..dim {
                variances[c * dim + j] = (sq[c * dim + j] / counts[c] as f64).max(VARIANCE_FLOOR);
            }
        }
        // An empty cluster counts as one instance, so that every weight is positive.
        let total: usize = counts.iter().map(|&c| c.max(1)).sum();
        Gmm {
            weights: counts
                .iter()
                .map(|&c| c.max(1) as f64 / total as f64)
                .collect(),
            means: centres.to_vec(),
            variances,
        }
    }

    /// EM on the rows of `x` until the log-likelihood gains less than [`EM_TOLERANCE`]
    /// of its magnitude or `max_iter` iterations. A component left with no
    /// responsibility keeps its mean and variances.
    pub fn em(mut self, x: &[f64], max_iter: usize) -> (Gmm, Convergence) {
        let (dim, k) = (self.dim(), self.len());
        let n = x.len() / dim;
        let mut previous = f64::NEG_INFINITY;
        for iteration in 1..=max_iter {
            crate::cancel::checkpoint();
            let gmm = &self;
            let posteriors: Vec<(Vec<f64>, f64)> = x
                .par_chunks_exact(dim)
                .map(|xi| {
                    let mut g = vec![0.0; k];
                    let l = gmm.posteriors(xi, &mut g);
                    (g, l)
                })
                .collect();
            let loglik: f64 = posteriors.iter().map(|(_, l)| l).sum();
            let mut mass = vec![0.0; k];
            let mut first = vec![0.0; k * dim];
            let mut second = vec![0.0; k * dim];
            for (xi, (g, _)) in x.chunks_exact(dim).zip(&posteriors) {
                for c in 0..k {
                    mass[c] += g[c];
                    for j in 0..dim {
                        first[c * dim + j] += g[c] * xi[j];
                        second[c * dim + j] += g[c] * xi[j] * xi[j];
                    }
                }
            }
            for c in 0..k {
                // The smallest positive weight keeps log w finite.
                self.weights[c] = (mass[c] / n as f64).max(f64::MIN_POSITIVE);
                if mass[c] <= 0.0 {
                    continue;
                }
                for j in 0..dim {
                    let m = first[c * dim + j] / mass[c];
                    let v = second[c * dim + j] / mass[c] - m * m;
                    self.means[c * dim + j] = m;
                    self.variances[c * dim + j] = v.max(VARIANCE_FLOOR);
                }
            }
            if loglik - previous <= EM_TOLERANCE * loglik.abs() {
                return (
                    self,
                    Convergence {
                        iterations: iteration,
                        stop: Stop::Converged,
                    },
                );
            }
            previous = loglik;
        }
        (
            self,
            Convergence {
                iterations: max_iter,
                stop: Stop::MaxIterations,
            },
        )
    }
}
