//! Exact box counts: |B(p ∧ q)| in log space (§5.2), and the exact kernels of small
//! inputs, used as the test oracle.
//!
//! The oracle counts by Möbius inversion over point subsets. For a set U of points the
//! boxes containing all of U are those containing its bounding box, N(U) = Π(ℓᵢ+1)(sᵢ−uᵢ+1).
//! A kernel is Σ_b f(|P_b|, |Q_b|) with f(0, 0) = 0; writing E(T) for the number of boxes
//! whose points are exactly T, N(U) = Σ_{T⊇U} E(T), so E(T) = Σ_{U⊇T} (−1)^{|U∖T|} N(U) and
//!
//!   Σ_b f(|P_b|, |Q_b|) = Σ_{U≠∅} N(U) · g(|U∩P|, |U∩Q|),
//!   g(A, B) = Σ_{a≤A, b≤B} (−1)^{A−a+B−b} C(A,a) C(B,b) f(a, b).
//!
//! For k∧ this is the inclusion–exclusion |B(P)| + |B(Q)| − |B(P ∪ Q)| of the paper's
//! Theorem 8; the same sum gives k∨ and k_min. It is exact in 128-bit integers.

use super::estimator::BoxKernel;
use super::grid::Grid;
use super::sets::{ln_set_size, BagPoints, Count, LnProduct};
use crate::error::Error;

/// Most points (|P| + |Q|) the exact oracle accepts: it visits 2^(|P|+|Q|) subsets.
pub const MAX_EXACT_POINTS: usize = 16;

/// ln |B(p ∧ q)|: the boxes containing both grid points (§5.2,
/// |B(p ∧ q)| = Π(ℓᵢ+1) Π(s−uᵢ+1)). With p = q this is ln |B(p)|.
pub fn ln_boxes_pair(grid: &Grid<'_>, p: &[u32], q: &[u32]) -> Result<f64, Error> {
    grid.check_bag(p)?;
    grid.check_bag(q)?;
    if p.len() != grid.dim() || q.len() != grid.dim() {
        return Err(Error::DimensionMismatch {
            expected: grid.dim(),
            got: p.len().max(q.len()),
        });
    }
    Ok(ln_set_size(grid.upper(), p, q))
}

/// ln |B_𝒳|, all boxes of the grid: Σᵢ ln C(sᵢ+2, 2) (§2).
pub fn ln_total_boxes(grid: &Grid<'_>) -> f64 {
    let mut prod = LnProduct::new();
    for &s in grid.upper() {
        let s = f64::from(s);
        prod.mul((s + 2.0) * (s + 1.0) / 2.0);
    }
    prod.ln()
}

/// The exact value of k(P, Q) for small bags (|P| + |Q| ≤ [`MAX_EXACT_POINTS`]) as a
/// natural logarithm; for k∧/∨ the log of the exact ratio. Errors if a count overflows
/// 128 bits.
pub fn exact_ln(kernel: BoxKernel, grid: &Grid<'_>, p: &[u32], q: &[u32]) -> Result<f64, Error> {
    let ln = |count| exact_count(count, grid, p, q).map(|v| libm::log(v as f64));
    match kernel {
        BoxKernel::And => ln(ExactCount::And),
        BoxKernel::Or => ln(ExactCount::Or),
        BoxKernel::Min => ln(ExactCount::Min),
        BoxKernel::AndOr => Ok(ln(ExactCount::And)? - ln(ExactCount::Or)?),
    }
}

/// The kernels the oracle counts exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExactCount {
    /// k∧.
    And,
    /// k∨.
    Or,
    /// k_min.
    Min,
}

/// The exact integer value of k∧, k∨ or k_min for small bags (see [`exact_ln`]).
pub fn exact_count(
    count: ExactCount,
    grid: &Grid<'_>,
    p: &[u32],
    q: &[u32],
) -> Result<u128, Error> {
    let n_p = grid.check_bag(p)?;
    let n_q = grid.check_bag(q)?;
    let n = n_p + n_q;
    if n > MAX_EXACT_POINTS {
        return Err(Error::InvalidParameter(
            "exact counting takes at most 16 points in all",
        ));
    }
    let count = match count {
        ExactCount::And => Count::And,
        ExactCount::Or => Count::Or,
        ExactCount::Min => Count::Min,
    };
    let overflow = Error::InvalidParameter("exact box count overflows 128 bits");
    // g(A, B) for all A ≤ |P|, B ≤ |Q|.
    let mut g = [[0i128; MAX_EXACT_POINTS + 1]; MAX_EXACT_POINTS + 1];
    for (big_a, row) in g.iter_mut().enumerate().take(n_p + 1) {
        for (big_b, cell) in row.iter_mut().enumerate().take(n_q + 1) {
            let mut sum = 0i128;
            for a in 0..=big_a {
                for b in 0..=big_b {
                    let sign = if (big_a - a + big_b - b) % 2 == 0 {
                        1
                    } else {
                        -1
                    };
                    sum += sign * binomial(big_a, a) * binomial(big_b, b) * f(count, a, b);
                }
            }
            *cell = sum;
        }
    }
    let bags = BagPoints::new(*grid, p, q);
    let s = grid.upper();
    let mut total: i128 = 0;
    for mask in 1u32..(1u32 << n) {
        let in_p = (mask & ((1 << n_p) - 1)).count_ones() as usize;
        let in_q = (mask >> n_p).count_ones() as usize;
        let weight = g[in_p][in_q];
        if weight == 0 {
            continue;
        }
        // N(U) = Π over dimensions of (min+1)(s−max+1) over the points of U.
        let mut boxes: i128 = 1;
        for (i, &si) in s.iter().enumerate() {
            let (mut lo, mut hi) = (u32::MAX, 0u32);
            for k in (0..n).filter(|k| mask >> k & 1 == 1) {
                let v = if k < n_p {
                    bags.point_p(k)[i]
                } else {
                    bags.point_q(k - n_p)[i]
                };
                lo = lo.min(v);
                hi = hi.max(v);
            }
            let factor = i128::from(lo + 1) * i128::from(si - hi + 1);
            boxes = boxes.checked_mul(factor).ok_or(overflow)?;
        }
        total = boxes
            .checked_mul(weight)
            .and_then(|t| total.checked_add(t))
            .ok_or(overflow)?;
    }
    u128::try_from(total).map_err(|_| overflow)
}

fn f(count: Count, a: usize, b: usize) -> i128 {
    match count {
        Count::And => i128::from(a >= 1 && b >= 1),
        Count::Or => i128::from(a + b >= 1),
        Count::Min => a.min(b) as i128,
    }
}

fn binomial(n: usize, k: usize) -> i128 {
    let mut c: i128 = 1;
    for i in 0..k {
        c = c * (n - i) as i128 / (i + 1) as i128;
    }
    c
}
