//! The fast estimators of k∧, k∨ and k_min: exact coverage counting of each sampled box,
//! and a stopping rule on empirical Bernstein and Chernoff–Hoeffding bounds.
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
//! *Proof.* The Xₜ are i.i.d. in [x_min, 1] with mean μ = k/W. We test only at the fixed
//! checkpoints t₁ = 32, t_{k+1} = t_k + max(1, ⌊t_k/3⌋), and give checkpoint k the failure
//! probability δ_k = δ/(k(k+1)) (Σ_k δ_k = δ), split between two intervals for μ:
//!
//! * *Empirical Bernstein* (Audibert, Munos & Szepesvári, *Theor. Comput. Sci.* 410,
//!   2009, Thm. 1), at 0.8·δ_k: with range R = 1 − x_min and σ̂ₜ² the empirical variance
//!   (1/t normalisation), |X̄ₜ − μ| ≤ cₜ = σ̂ₜ √(2L/t) + 3RL/t, L = ln(3/(0.8δ_k)).
//! * *Chernoff–Hoeffding* in its relative-entropy form (Hoeffding, *JASA* 58, 1963,
//!   Thm. 1), at 0.1·δ_k per side: for values rescaled to [0, 1], Y = (X − x_min)/R with
//!   mean ν, Pr[Ȳₜ ≥ ν + u] ≤ exp(−t·kl(ν+u ‖ ν)) and the mirror bound below, kl the
//!   Bernoulli relative entropy; so each side excludes ν with kl(Ȳₜ ‖ ν) > ln(10/δ_k)/t
//!   wrongly with probability ≤ 0.1·δ_k. kl(Ȳ ‖ ·) grows away from Ȳ on both sides, so a
//!   value it excludes below X̄ (above X̄) excludes every smaller (larger) one.
//!
//! By the union bound, with probability ≥ 1 − δ every interval of every checkpoint
//! contains μ; on that event LB = max(x_min, max_k (X̄_{t_k} − c_{t_k})) ≤ μ ≤
//! UB = min(1, min_k (X̄_{t_k} + c_{t_k})). We stop at the first checkpoint where
//! X̄ₜ/(1+ε) is below μ by either interval (X̄ₜ/(1+ε) ≤ LB, or the Chernoff–Hoeffding
//! test excludes it) and X̄ₜ/(1−ε) is above μ by either, and return μ̂ = X̄ₜ: on the
//! event X̄ₜ/(1+ε) ≤ μ ≤ X̄ₜ/(1−ε), i.e. (1−ε)μ ≤ μ̂ ≤ (1+ε)μ. W is exact (up to
//! floating-point rounding, relative ~1e−13). ∎
//!
//! The Bernstein half is the EBGStop rule of Mnih, Szepesvári & Audibert, *Empirical
//! Bernstein Stopping*, ICML 2008, with one change: they stop as soon as
//! (1+ε)LB ≥ (1−ε)UB and return the midpoint ((1+ε)LB + (1−ε)UB)/2. When the values
//! barely vary (as here: most boxes hold only their own pair, X = 1) the deterministic
//! bound UB = 1 makes that rule stop with the midpoint near (1−ε)μ, a bias of the full ε;
//! certifying X̄ itself removes that bias. There, too, the Bernstein range term 3RL/t is
//! what stops the rule late (about 3L(1+ε)/ε samples when every X = 1), while the
//! relative-entropy bound certifies after about ln(10/δ_k)/ln(1+ε): musk1's k∧ Gram takes
//! 3× fewer samples with it. Their analysis of the expected sample count carries over:
//! O(max(σ²/(ε²μ²), R/(εμ)) · (ln(1/δ) + ln ln(R/(εμ)))). It stops with probability 1
//! since cₜ → 0 and X̄ₜ → μ.
//!
//! # Cost
//!
//! Setup: the m set sizes, O(m·d) with one `ln` per set (from floating-point copies of
//! the points when the scratch has room, so that a coordinate is converted once). Each sample: one draw and a
//! binary search to choose the set; then each point of P and Q is tested against the box,
//! dimension by dimension, stopping at the first dimension that excludes it; the box's
//! corners are drawn lazily, only in the dimensions some test needs (a point inside the
//! pair's own bounding box in a dimension needs no draw there). Where the paper's Table 3
//! needs 8(1+ε)m ln(2/δ)/ε² trials and Table 5 needs m(n−1)² ln(2m/δ)/(2ε²) boxes of 2d
//! draws each, the number of samples here does not grow with m when coverage is low.

use rand_core::Rng;

use super::estimator::{Accuracy, Estimate, Scratch};
use super::sets::{cumulative_sizes, pick_set, BagPoints, Count, LazyBox};
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
    bags: &BagPoints<'_>,
    accuracy: Accuracy,
    rng: &mut R,
    scratch: &mut Scratch<'_>,
    poll: &mut dyn FnMut() -> bool,
) -> Result<Estimate, Error> {
    let n_sets = count.n_sets(bags).min(scratch.floats.len());
    let (cum, rows) = super::sets::split(scratch.floats, n_sets);
    let ln_w = cumulative_sizes(count, bags, cum, rows, &mut *poll)?;
    let cum = &*cum;
    let (n_p, n_q) = (bags.n_p(), bags.n_q());
    let x_min = match count {
        Count::And => 1.0 / (n_p as f64 * n_q as f64),
        Count::Min => 1.0 / n_p.max(n_q) as f64,
        Count::Or => 1.0 / (n_p + n_q) as f64,
    };
    let mut rule = StoppingRule::new(accuracy, x_min);
    let mut lazy = LazyBox::new(scratch.ints, bags.dim(), bags.p, bags.q);
    let s = bags.grid.upper();
    loop {
        // A sample tests every point of both bags: a poll costs far less.
        if poll() {
            return Err(Error::Stopped);
        }
        let set = pick_set(rng, cum);
        let (own, (x, y)) = count.members(bags, set);
        lazy.next_box(x, y);
        let (a, b) = lazy.count(rng, s, bags.p, bags.q, own);
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

/// The stopping rule with geometric checkpoints: empirical Bernstein and
/// Chernoff–Hoeffding intervals, either of which may certify each side (see the module
/// documentation for its guarantee).
pub(crate) struct StoppingRule {
    epsilon: f64,
    delta: f64,
    x_min: f64,
    lower: f64,
    upper: f64,
    sum: f64,
    sum_sq: f64,
    samples: u64,
    checkpoint: u64,
    k: u64,
}

impl StoppingRule {
    /// A rule for i.i.d. values in [x_min, 1].
    pub fn new(accuracy: Accuracy, x_min: f64) -> Self {
        StoppingRule {
            epsilon: accuracy.epsilon(),
            delta: accuracy.delta(),
            x_min,
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
        self.checkpoint += (self.checkpoint / 3).max(1);
        let t = self.samples as f64;
        let k = self.k as f64;
        // δ_k = δ/(k(k+1)): 0.8·δ_k to the Bernstein interval (ln(3/(0.8δ_k))), 0.1·δ_k
        // to each Chernoff–Hoeffding tail (ln(1/(0.1δ_k))).
        let delta_k = self.delta / (k * (k + 1.0));
        let log_term = ln_ratio(3.75, delta_k);
        let mean = self.sum / t;
        let var = (self.sum_sq / t - mean * mean).max(0.0);
        let c = libm::sqrt(2.0 * var * log_term / t) + 3.0 * self.range() * log_term / t;
        self.lower = self.lower.max(mean - c);
        self.upper = self.upper.min(mean + c);
        // Stop once the mean itself is certified: (1−ε)·UB ≤ X̄ ≤ (1+ε)·LB, where a side
        // holds if either interval certifies it.
        let (low_end, high_end) = (mean / (1.0 + self.epsilon), mean / (1.0 - self.epsilon));
        let kl_bound = ln_ratio(10.0, delta_k) / t;
        let certified = (low_end <= self.lower || self.kl_excludes(mean, low_end, kl_bound))
            && (self.upper <= high_end || self.kl_excludes(mean, high_end, kl_bound));
        certified.then_some(mean)
    }

    /// R = 1 − x_min, the range of the values.
    fn range(&self) -> f64 {
        1.0 - self.x_min
    }

    /// Whether the Chernoff–Hoeffding interval at the current checkpoint excludes the
    /// mean `m` (and with it every value beyond `m`, kl being monotone on each side of
    /// the sample mean): kl(Ȳ ‖ m′) > `bound` for the values rescaled to [0, 1]. A value
    /// outside [x_min, 1] is excluded outright.
    fn kl_excludes(&self, mean: f64, m: f64, bound: f64) -> bool {
        if m < self.x_min || m > 1.0 {
            return true;
        }
        let range = self.range();
        if range <= 0.0 {
            return false;
        }
        let rescale = |v: f64| ((v - self.x_min) / range).clamp(0.0, 1.0);
        bernoulli_kl(rescale(mean), rescale(m)) > bound
    }
}

/// kl(a ‖ b) = a ln(a/b) + (1−a) ln((1−a)/(1−b)), the relative entropy of Bernoulli(a)
/// from Bernoulli(b), for a, b in [0, 1] (0 ln 0 = 0; infinite where b excludes a).
fn bernoulli_kl(a: f64, b: f64) -> f64 {
    let term = |p: f64, q: f64| {
        if p <= 0.0 {
            0.0
        } else if q <= 0.0 {
            f64::INFINITY
        } else {
            p * libm::log(p / q)
        }
    };
    term(a, b) + term(1.0 - a, 1.0 - b)
}
