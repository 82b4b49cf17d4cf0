//! The fast estimators of k∧, k∨ and k_min: exact coverage counting of each sampled box,
//! and an empirical Bernstein stopping rule.
//!
//! # The estimator
//!
//! Let the sets S₁…S_m be B(p ∧ q) for (p, q) ∈ P × Q (k∧, k_min) or B(r) for r ∈ P ⊎ Q
//! (k∨), W = Σ|Sᵢ|, and draw (i, c) uniformly from U = {(i, c) : c ∈ Sᵢ} — i with
//! probability |Sᵢ|/W, then c uniform in Sᵢ — as the paper's Table 3 line 6 does. Unlike
//! the paper, which estimates the coverage of c by repeated uniform trials (lines 7–14),
//! we count it exactly: with a = |P_c| and b = |Q_c| (a point is in c iff it lies between
//! the corners in every dimension), c lies in exactly ab sets B(p ∧ q) and a + b sets
//! B(r). So, summing over the distinct boxes c of the union,
//!
//! * E[1/(ab)] = (1/W) Σ_c ab · 1/(ab) = k∧/W,
//! * E[1/max(a, b)] = (1/W) Σ_c ab/max(a, b) = (1/W) Σ_c min(a, b) = k_min/W (eq. 4),
//! * E[1/(a + b)] = k∨/W,
//!
//! and the per-sample value X lies in [x_min, 1] with x_min = 1/(|P||Q|),
//! 1/max(|P|, |Q|) and 1/(|P|+|Q|) respectively. The estimate is W·μ̂ for an estimate μ̂
//! of μ = E\[X\]. Drawing the number of failed trials of the paper's Table 3 from its
//! geometric law would reproduce the paper's estimator exactly; knowing the coverage
//! exactly lets us do better and average 1/coverage itself, whose variance on real data
//! is small (most sampled boxes hold only their own pair).
//!
//! # The (ε, δ) guarantee
//!
//! **Theorem.** `estimate` returns ln k̂ with Pr[(1−ε)k ≤ k̂ ≤ (1+ε)k] ≥ 1 − δ.
//!
//! *Proof.* The Xₜ are i.i.d. in [x_min, 1] with mean μ = k/W. The empirical Bernstein
//! bound (Audibert, Munos & Szepesvári, *Theor. Comput. Sci.* 410, 2009, Thm. 1; also
//! Maurer & Pontil, COLT 2009) says that for a fixed t and range R = 1 − x_min, with
//! probability ≥ 1 − δ′, |X̄ₜ − μ| ≤ cₜ = σ̂ₜ √(2 ln(3/δ′)/t) + 3R ln(3/δ′)/t, σ̂ₜ² the
//! empirical variance (1/t normalisation). We test only at the fixed checkpoints
//! t₁ = 32, t_{k+1} = t_k + max(1, ⌊t_k/10⌋), with δ′ = δ_k = δ/(k(k+1)); since
//! Σ_k δ_k = δ, by the union bound with probability ≥ 1 − δ every checkpoint interval
//! contains μ. On that event LB = max(x_min, max_k (X̄_{t_k} − c_{t_k})) ≤ μ ≤
//! UB = min(1, min_k (X̄_{t_k} + c_{t_k})). We stop at the first checkpoint where
//! (1−ε)·UB ≤ X̄ₜ ≤ (1+ε)·LB and return μ̂ = X̄ₜ, so on the event
//! (1−ε)μ ≤ (1−ε)UB ≤ μ̂ ≤ (1+ε)LB ≤ (1+ε)μ. W is exact (up to floating-point
//! rounding, relative ~1e−13). ∎
//!
//! This is the EBGStop rule of Mnih, Szepesvári & Audibert, *Empirical Bernstein
//! Stopping*, ICML 2008, with one change: they stop as soon as (1+ε)LB ≥ (1−ε)UB and
//! return the midpoint ((1+ε)LB + (1−ε)UB)/2. When the values barely vary (as here: most
//! boxes hold only their own pair, X = 1) the deterministic bound UB = 1 makes that rule
//! stop with the midpoint near (1−ε)μ, a bias of the full ε; certifying X̄ itself costs
//! about (1+ε)× their samples in the unclipped case and removes that bias. Their analysis
//! of the expected sample count carries over: O(max(σ²/(ε²μ²), R/(εμ)) · (ln(1/δ) +
//! ln ln(R/(εμ)))). It stops with probability 1 since cₜ → 0 and X̄ₜ → μ.
//!
//! # Cost
//!
//! Setup: the m set sizes, O(m·d) with one `ln` per set. Each sample: one draw and a
//! binary search to choose the set; then each point of P and Q is tested against the box,
//! dimension by dimension, stopping at the first dimension that excludes it; the box's
//! corners are drawn lazily, only in the dimensions some test needs (a point inside the
//! pair's own bounding box in a dimension needs no draw there). Where the paper's Table 3
//! needs 8(1+ε)m ln(2/δ)/ε² trials and Table 5 needs m(n−1)² ln(2m/δ)/(2ε²) boxes of 2d
//! draws each, the number of samples here does not grow with m when coverage is low.

use rand_core::Rng;

use super::estimator::{Accuracy, Estimate, Scratch};
use super::sets::{cumulative_sizes, pick_set, Bags, Count, LazyBox};
use crate::error::Error;

/// ln(a/δ) without overflow: a tiny δ (a hostile model's) makes a/δ infinite, and then
/// the bound never shrinks and the loop never stops. The quotient is kept where finite,
/// so ordinary estimates do not move by a rounding.
pub(crate) fn ln_ratio(a: f64, delta: f64) -> f64 {
    let q = a / delta;
    if q.is_finite() {
        libm::log(q)
    } else {
        libm::log(a) - libm::log(delta)
    }
}

/// First checkpoint of the stopping rule.
const FIRST_CHECKPOINT: u64 = 32;

/// Runs the fast estimator of k∧, k∨ or k_min; scratch sizes are checked by the caller.
pub(crate) fn estimate<R: Rng + ?Sized>(
    count: Count,
    bags: &Bags<'_>,
    accuracy: Accuracy,
    rng: &mut R,
    scratch: &mut Scratch<'_>,
) -> Result<Estimate, Error> {
    let n_sets = count.n_sets(bags).min(scratch.floats.len());
    let cum = scratch.floats.get_mut(..n_sets).unwrap_or_default();
    let ln_w = cumulative_sizes(count, bags, cum);
    let cum = &*cum;
    let (n_p, n_q) = (bags.n_p(), bags.n_q());
    let x_min = match count {
        Count::And => 1.0 / (n_p as f64 * n_q as f64),
        Count::Min => 1.0 / n_p.max(n_q) as f64,
        Count::Or => 1.0 / (n_p + n_q) as f64,
    };
    let mut rule = EmpiricalBernstein::new(accuracy, x_min);
    let mut lazy = LazyBox::new(scratch.ints, bags.dim(), bags.p, bags.q);
    let s = bags.grid.upper();
    loop {
        let set = pick_set(rng, cum);
        let (x, y) = count.corners(bags, set);
        lazy.next_box(x, y);
        let (a, b) = lazy.count(rng, s, bags.p, bags.q, count.generators(bags, set));
        let value = match count {
            Count::And => 1.0 / (a * b) as f64,
            Count::Min => 1.0 / a.max(b) as f64,
            Count::Or => 1.0 / (a + b) as f64,
        };
        if let Some(mu) = rule.push(value) {
            return Ok(Estimate {
                ln_value: ln_w + libm::log(mu),
                samples: rule.samples,
            });
        }
    }
}

/// The empirical Bernstein stopping rule with geometric checkpoints (see the module
/// documentation for its guarantee).
pub(crate) struct EmpiricalBernstein {
    epsilon: f64,
    delta: f64,
    range: f64,
    lower: f64,
    upper: f64,
    sum: f64,
    sum_sq: f64,
    samples: u64,
    checkpoint: u64,
    k: u64,
}

impl EmpiricalBernstein {
    /// A rule for i.i.d. values in [x_min, 1].
    pub fn new(accuracy: Accuracy, x_min: f64) -> Self {
        EmpiricalBernstein {
            epsilon: accuracy.epsilon(),
            delta: accuracy.delta(),
            range: 1.0 - x_min,
            lower: x_min,
            upper: 1.0,
            sum: 0.0,
            sum_sq: 0.0,
            samples: 0,
            checkpoint: FIRST_CHECKPOINT,
            k: 0,
        }
    }

    /// Adds one value; returns the estimate of the mean once the rule stops.
    #[inline]
    pub fn push(&mut self, x: f64) -> Option<f64> {
        self.sum += x;
        self.sum_sq += x * x;
        self.samples += 1;
        if self.samples < self.checkpoint {
            return None;
        }
        self.k += 1;
        self.checkpoint += (self.checkpoint / 10).max(1);
        let t = self.samples as f64;
        let k = self.k as f64;
        let log_term = ln_ratio(3.0 * k * (k + 1.0), self.delta);
        let mean = self.sum / t;
        let var = (self.sum_sq / t - mean * mean).max(0.0);
        let c = libm::sqrt(2.0 * var * log_term / t) + 3.0 * self.range * log_term / t;
        self.lower = self.lower.max(mean - c);
        self.upper = self.upper.min(mean + c);
        // Stop once the mean itself is certified: (1−ε)·UB ≤ X̄ ≤ (1+ε)·LB.
        let certified =
            (1.0 - self.epsilon) * self.upper <= mean && mean <= (1.0 + self.epsilon) * self.lower;
        certified.then_some(mean)
    }
}
