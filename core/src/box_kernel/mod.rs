//! Box-counting set kernels of Tao, Scott, Vinodchandran, Osugi and Mueller, *Kernels for
//! Generalized Multiple-Instance Learning* (TPAMI 2008), "the paper" below.
//!
//! BagPoints are multisets of points of the grid 𝒳 = {0..s₁} × … × {0..s_d} (§2; the paper
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
    let floats_min = match (kernel, method) {
        (BoxKernel::Min, Method::Paper) => 0,
        (BoxKernel::And | BoxKernel::Min, _) => pairs,
        (BoxKernel::Or, _) => points,
        (BoxKernel::AndOr, _) => pairs.max(points),
    };
    let float_rows = match (kernel, method) {
        (BoxKernel::And | BoxKernel::Min | BoxKernel::AndOr, Method::Fast) => {
            sets::float_rows_len(n_q, dim)?
        }
        _ => 0,
    };
    let ints_min = dim
        .checked_mul(sets::LAZY_INTS_PER_DIM)?
        .checked_add(points.div_ceil(sets::WORD))?;
    let columns = match method {
        Method::Fast => points.checked_mul(dim)?,
        Method::Paper => 0,
    };
    Some(ScratchLen {
        floats: floats_min.checked_add(float_rows)?,
        floats_min,
        ints: ints_min.checked_add(columns)?,
        ints_min,
    })
}

/// Estimates ln k(P, Q) for bags `p` and `q` (row-major grid points) to the requested
/// accuracy, drawing randomness from `rng`.
///
/// For k∧/∨ the fast method estimates k∧ and k∨ to ε∧ and ε∨ with δ/2 each
/// (`and_or_split`: ε∧ = ε − (1+ε)ε∨, ε∧/ε∨ ≈ 3^⅓), so that the ratio is within
/// [1−ε, 1+ε] of k∧/∨ with probability ≥ 1 − δ (union bound). The paper's method runs both at (ε, δ) as the paper did, which only
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
    estimate_polled(
        kernel,
        method,
        grid,
        p,
        q,
        accuracy,
        rng,
        scratch,
        &mut || false,
    )
}

/// [`estimate`] that calls `poll` between short units of its work — each row of the
/// set-up over P × Q, each sample, every [`POLL_TRIALS`] trials of the paper's Tables
/// 3–4 and every 64 boxes of its Table 5 — and returns [`Error::Stopped`] as soon as it answers `true`. An entry
/// between two large bags at a small ε runs for seconds; this is how a host stops one
/// (Ctrl-C). The numbers drawn, and so the estimate, are those of [`estimate`].
///
/// ```
/// use mil_core::box_kernel::{estimate_polled, scratch_len, Accuracy, BoxKernel, Grid, Method, Scratch};
/// use mil_core::Error;
/// use rand_core::SeedableRng;
///
/// let s = [9u32, 9];
/// let grid = Grid::new(&s).unwrap();
/// let (p, q) = ([1u32, 2, 3, 4], [2u32, 2, 7, 8]);
/// let need = scratch_len(BoxKernel::And, Method::Fast, 2, 2, 2).unwrap();
/// let (mut floats, mut ints) = (vec![0.0; need.floats], vec![0; need.ints]);
/// let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(1);
/// let accuracy = Accuracy::new(0.001, 1e-9).unwrap();
/// let mut polls = 0;
/// let stopped = estimate_polled(
///     BoxKernel::And, Method::Fast, &grid, &p, &q, accuracy, &mut rng,
///     &mut Scratch { floats: &mut floats, ints: &mut ints },
///     &mut || { polls += 1; polls == 100 },
/// );
/// assert_eq!(stopped, Err(Error::Stopped));
/// assert_eq!(polls, 100);
/// ```
#[allow(clippy::too_many_arguments)]
pub fn estimate_polled<R: Rng + ?Sized>(
    kernel: BoxKernel,
    method: Method,
    grid: &Grid<'_>,
    p: &[u32],
    q: &[u32],
    accuracy: Accuracy,
    rng: &mut R,
    scratch: &mut Scratch<'_>,
    poll: &mut dyn FnMut() -> bool,
) -> Result<Estimate, Error> {
    let n_p = grid.check_bag(p)?;
    let n_q = grid.check_bag(q)?;
    let need = scratch_len(kernel, method, n_p, n_q, grid.dim())
        .ok_or(Error::InvalidParameter("bags too large to address"))?;
    if scratch.floats.len() < need.floats_min {
        return Err(Error::BufferTooSmall {
            needed: need.floats_min,
            got: scratch.floats.len(),
        });
    }
    if scratch.ints.len() < need.ints_min {
        return Err(Error::BufferTooSmall {
            needed: need.ints_min,
            got: scratch.ints.len(),
        });
    }
    let bags = sets::BagPoints::new(*grid, p, q);
    let mut run = |count: Count, acc: Accuracy, rng: &mut R, scratch: &mut Scratch<'_>| match method
    {
        Method::Fast => fast::estimate(count, &bags, acc, rng, scratch, &mut *poll),
        Method::Paper => paper::estimate(count, &bags, acc, rng, scratch, &mut *poll),
    };
    match kernel {
        BoxKernel::AndOr => {
            let (acc_and, acc_or) = match method {
                Method::Fast => {
                    let (eps_and, eps_or) = and_or_split(accuracy.epsilon());
                    let delta = accuracy.delta() / 2.0;
                    (
                        Accuracy::new(eps_and, delta)?,
                        Accuracy::new(eps_or, delta)?,
                    )
                }
                Method::Paper => (accuracy, accuracy),
            };
            let and = run(Count::And, acc_and, rng, scratch)?;
            let or = run(Count::Or, acc_or, rng, scratch)?;
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

/// Trials of the paper's estimators between two polls of [`estimate_polled`]: a trial
/// is a few comparisons, so a poll per trial would cost more than the trial.
pub const POLL_TRIALS: u64 = 1 << 12;

/// How k∧ and k∨ share the relative error ε of k∧/∨ = k∧/k∨: ε∧ = ε − (1+ε)ε∨ makes
/// (1+ε∧)/(1−ε∨) = 1+ε exactly and (1−ε∧)/(1+ε∨) ≥ 1−ε, so two (εᵢ, δ/2) estimates give
/// an (ε, δ) quotient. A sample count grows as 1/εᵢ², so the cost C∧/ε∧² + C∨/ε∨² is
/// least near ε∧/ε∨ = (C∧/C∨)^⅓; k∧'s samples cost about three times k∨'s (it tests the
/// same points against boxes of pairs, and sets up |P||Q| sets instead of |P|+|Q|), so
/// [`AND_OR_RATIO`] = 3^⅓.
pub(crate) fn and_or_split(epsilon: f64) -> (f64, f64) {
    let eps_or = epsilon / (AND_OR_RATIO + 1.0 + epsilon);
    (epsilon - (1.0 + epsilon) * eps_or, eps_or)
}

/// ε∧/ε∨ in [`and_or_split`] (to first order in ε).
const AND_OR_RATIO: f64 = 1.44;
