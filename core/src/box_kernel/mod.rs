//! Box-counting set kernels of Tao, Scott, Vinodchandran, Osugi and Mueller, *Kernels for
//! Generalized Multiple-Instance Learning* (TPAMI 2008), "the paper" below.
//!
//! Bags are multisets of points of the grid 𝒳 = {0..s₁} × … × {0..s_d} (§2; the paper
//! uses one s for every dimension and notes that per-dimension sizes change nothing).
//! A box is a pair of corners (b_ℓ, b_u), degenerate boxes included, so 𝒳 has
//! Π C(sᵢ+2, 2) boxes. For bags P and Q:
//!
//! * k∧(P, Q) = |B(P ∧ Q)|, the boxes containing a point of P and a point of Q (§4);
//! * k∨(P, Q) = |B(P ∪ Q)|, the boxes containing a point of either (§6);
//! * k∧/∨ = k∧ / k∨ (§6);
//! * k_min(P, Q) = Σ_b min(|P_b|, |Q_b|) (§7, eq. 3).
//!
//! All are #P-complete, and on real data far beyond any float (Musk: ~10^600), so
//! everything here is a natural logarithm. The modules:
//!
//! * [`discretize`]: real values → grid (§2), with ±∞ cells for values outside the
//!   training range;
//! * [`count`]: exact |B(p ∧ q)| in log space and the exact kernels of small inputs by
//!   Möbius inversion over point subsets (the test oracle);
//! * [`fast`]: this crate's estimators — exact coverage counting plus an empirical
//!   Bernstein stopping rule; their (ε, δ) guarantee is proved there;
//! * [`paper`]: the paper's own algorithms (Tables 3, 4, 5), kept as the reference;
//! * [`seeds`]: the generator seed of each estimate, from the pair of bags it compares.
//!
//! Everything runs without a heap: the estimators work in a caller-provided [`Scratch`]
//! whose required size [`scratch_len`] states, and report a too-small buffer as
//! [`Error::BufferTooSmall`].

pub mod count;
pub mod discretize;
pub mod fast;
pub mod paper;
mod sampling;
pub mod seeds;
mod sets;

#[cfg(test)]
mod tests;

use rand_core::Rng;

use crate::Error;
use sets::Count;

/// The grid 𝒳 = {0..s₁} × … × {0..s_d}: one upper value sᵢ ≥ 1 per dimension.
#[derive(Debug, Clone, Copy)]
pub struct Grid<'a> {
    s: &'a [u32],
}

impl<'a> Grid<'a> {
    /// A grid with upper values `s` (one per dimension; `u32::MAX` is reserved).
    pub fn new(s: &'a [u32]) -> Result<Self, Error> {
        if s.is_empty() {
            return Err(Error::Empty);
        }
        if s.iter().any(|&v| v == 0 || v == u32::MAX) {
            return Err(Error::InvalidParameter(
                "every grid size s_i must be in 1..u32::MAX",
            ));
        }
        Ok(Grid { s })
    }

    /// Dimension d.
    pub fn dim(&self) -> usize {
        self.s.len()
    }

    /// The upper values sᵢ.
    pub fn upper(&self) -> &'a [u32] {
        self.s
    }

    /// Checks that `points` is a non-empty row-major list of grid points; returns how many.
    pub fn check_bag(&self, points: &[u32]) -> Result<usize, Error> {
        let d = self.dim();
        if points.is_empty() {
            return Err(Error::Empty);
        }
        if !points.len().is_multiple_of(d) {
            return Err(Error::DimensionMismatch {
                expected: d,
                got: points.len() % d,
            });
        }
        for row in points.chunks_exact(d) {
            if row.iter().zip(self.s).any(|(&x, &s)| x > s) {
                return Err(Error::InvalidParameter("a point lies outside the grid"));
            }
        }
        Ok(points.len() / d)
    }
}

/// Which set kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "kebab-case")
)]
pub enum BoxKernel {
    /// k∧: boxes containing a point of P and a point of Q.
    And,
    /// k∨: boxes containing a point of P or of Q.
    Or,
    /// k∧/∨ = k∧ / k∨.
    AndOr,
    /// k_min: Σ over boxes of min(|P_b|, |Q_b|).
    Min,
}

/// Which estimator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "kebab-case")
)]
pub enum Method {
    /// Exact coverage counting with an empirical Bernstein stopping rule ([`fast`]).
    Fast,
    /// The paper's Tables 3 (k∧), 4 (k∨) and 5 (k_min) ([`paper`]).
    Paper,
}

/// The requested accuracy: the estimate lies within (1 ± ε) of the true value with
/// probability at least 1 − δ.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Accuracy {
    epsilon: f64,
    delta: f64,
}

impl Accuracy {
    /// Checks 0 < ε < 1 and 0 < δ < 1.
    pub fn new(epsilon: f64, delta: f64) -> Result<Self, Error> {
        if !(epsilon > 0.0 && epsilon < 1.0) {
            return Err(Error::InvalidParameter("epsilon must be in (0, 1)"));
        }
        if !(delta > 0.0 && delta < 1.0) {
            return Err(Error::InvalidParameter("delta must be in (0, 1)"));
        }
        Ok(Accuracy { epsilon, delta })
    }

    /// Relative error ε.
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// Failure probability δ.
    pub fn delta(&self) -> f64 {
        self.delta
    }
}

/// One estimate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// Natural logarithm of the estimated kernel value.
    pub ln_value: f64,
    /// Boxes drawn (fast; paper Table 5) or trials run (paper Tables 3, 4): the unit of
    /// work whose cost the benchmarks report.
    pub samples: u64,
}

/// Caller-provided working memory of an estimator.
#[derive(Debug)]
pub struct Scratch<'a> {
    /// Floats: one per set of the union (point pairs or points).
    pub floats: &'a mut [f64],
    /// Integers: a few per dimension, for the sampled box.
    pub ints: &'a mut [u32],
}

/// Sizes a [`Scratch`] must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScratchLen {
    /// Length of [`Scratch::floats`].
    pub floats: usize,
    /// Length of [`Scratch::ints`].
    pub ints: usize,
}

/// The scratch `estimate` needs for bags of `n_p` and `n_q` points in dimension `dim`:
/// |P|·|Q| floats for k∧, k∧/∨ and k_min (one weight per point pair; the paper's
/// Table 5 needs none), |P| + |Q| for k∨, and 4d integers. `None` if the size overflows.
pub fn scratch_len(
    kernel: BoxKernel,
    method: Method,
    n_p: usize,
    n_q: usize,
    dim: usize,
) -> Option<ScratchLen> {
    let pairs = n_p.checked_mul(n_q)?;
    let points = n_p.checked_add(n_q)?;
    let floats = match (kernel, method) {
        (BoxKernel::Min, Method::Paper) => 0,
        (BoxKernel::And | BoxKernel::Min, _) => pairs,
        (BoxKernel::Or, _) => points,
        (BoxKernel::AndOr, _) => pairs.max(points),
    };
    Some(ScratchLen {
        floats,
        ints: dim.checked_mul(4)?,
    })
}

/// Estimates ln k(P, Q) for bags `p` and `q` (row-major grid points) to the requested
/// accuracy, drawing randomness from `rng`.
///
/// For k∧/∨ the fast method estimates k∧ and k∨ each to ε' = ε/(2+ε) with δ/2, so that
/// the ratio is within [1/(1+ε), 1+ε] ⊂ [1−ε, 1+ε] of k∧/∨ with probability ≥ 1 − δ
/// (union bound). The paper's method runs both at (ε, δ) as the paper did, which only
/// guarantees the ratio within [(1−ε)/(1+ε), (1+ε)/(1−ε)] with probability ≥ 1 − 2δ
/// (eq. 2).
#[allow(clippy::too_many_arguments)]
pub fn estimate<R: Rng + ?Sized>(
    kernel: BoxKernel,
    method: Method,
    grid: &Grid<'_>,
    p: &[u32],
    q: &[u32],
    accuracy: Accuracy,
    rng: &mut R,
    scratch: &mut Scratch<'_>,
) -> Result<Estimate, Error> {
    let n_p = grid.check_bag(p)?;
    let n_q = grid.check_bag(q)?;
    let need = scratch_len(kernel, method, n_p, n_q, grid.dim())
        .ok_or(Error::InvalidParameter("bags too large to address"))?;
    if scratch.floats.len() < need.floats {
        return Err(Error::BufferTooSmall {
            needed: need.floats,
            got: scratch.floats.len(),
        });
    }
    if scratch.ints.len() < need.ints {
        return Err(Error::BufferTooSmall {
            needed: need.ints,
            got: scratch.ints.len(),
        });
    }
    let bags = sets::Bags { grid: *grid, p, q };
    let run = |count: Count, acc: Accuracy, rng: &mut R, scratch: &mut Scratch<'_>| match method {
        Method::Fast => fast::estimate(count, &bags, acc, rng, scratch),
        Method::Paper => paper::estimate(count, &bags, acc, rng, scratch),
    };
    match kernel {
        BoxKernel::AndOr => {
            let acc = match method {
                Method::Fast => Accuracy::new(
                    accuracy.epsilon / (2.0 + accuracy.epsilon),
                    accuracy.delta / 2.0,
                )?,
                Method::Paper => accuracy,
            };
            let and = run(Count::And, acc, rng, scratch)?;
            let or = run(Count::Or, acc, rng, scratch)?;
            Ok(Estimate {
                ln_value: and.ln_value - or.ln_value,
                samples: and.samples + or.samples,
            })
        }
        BoxKernel::And => run(Count::And, accuracy, rng, scratch),
        BoxKernel::Or => run(Count::Or, accuracy, rng, scratch),
        BoxKernel::Min => run(Count::Min, accuracy, rng, scratch),
    }
}
