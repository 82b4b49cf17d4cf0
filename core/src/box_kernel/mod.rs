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
mod estimator;
pub mod fast;
mod grid;
pub mod paper;
mod sampling;
pub mod seeds;
mod sets;

#[cfg(test)]
mod tests;

use rand_core::Rng;

use crate::error::Error;
pub use estimator::{Accuracy, BoxKernel, Estimate, Method, Scratch, ScratchLen};
pub use grid::Grid;
use sets::Count;

/// The scratch `estimate` needs for bags of `n_p` and `n_q` points in dimension `dim`:
/// |P|·|Q| floats for k∧, k∧/∨ and k_min (one weight per point pair; the paper's
/// Table 5 needs none), |P| + |Q| for k∨, and 4d + ⌈(|P| + |Q|)/32⌉ integers, plus
/// (|P| + |Q|)·d for the fast estimator's fastest form (see [`ScratchLen::ints_min`]).
/// `None` if the size overflows.
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
    let ints_min = dim
        .checked_mul(sets::LAZY_INTS_PER_DIM)?
        .checked_add(points.div_ceil(sets::WORD))?;
    let columns = match method {
        Method::Fast => points.checked_mul(dim)?,
        Method::Paper => 0,
    };
    Some(ScratchLen {
        floats,
        ints: ints_min.checked_add(columns)?,
        ints_min,
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
    if scratch.ints.len() < need.ints_min {
        return Err(Error::BufferTooSmall {
            needed: need.ints_min,
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
                    accuracy.epsilon() / (2.0 + accuracy.epsilon()),
                    accuracy.delta() / 2.0,
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
