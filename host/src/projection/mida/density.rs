//! The kernel-density step of B-MIDA and M-MIDA: each candidate bag's lowest-density
//! instance (eqs. 11 and 18).

use super::*;

/// Lowest-density instance of each candidate bag for every σ of [`SIGMA_GRID`]
/// (eqs. 11 and 18). Bag k's candidates are the rows `bags[k]` of `x`; its density is
/// formed by the rows of `groups[group_of[k]]` (the negative instances).
///
/// The density is compared in log space, log p = −d²_min/σ + log Σ exp(−(d² − d²_min)/σ),
/// so small σ do not underflow to ties; the normaliser V is the same for all candidates
/// and drops out. Ties go to the first instance. Squared distances come from blocks of
/// at most [`KDE_BLOCK`] candidates as ‖x‖² + ‖y‖² − 2xᵀy (a matrix product), clamped
/// at 0; the cancellation error is about 10⁻¹⁵·(‖x‖² + ‖y‖²), far below the gaps the
/// grid resolves. Memory: one block × one group, O(n).
pub(super) fn kde_choices(
    x: &DMatrix<f64>,
    bags: &[std::ops::Range<usize>],
    groups: &[DMatrix<f64>],
    group_of: &[usize],
) -> Vec<[usize; SIGMA_GRID.len()]> {
    let group_norms: Vec<Vec<f64>> = groups
        .iter()
        .map(|g| g.row_iter().map(|r| r.norm_squared()).collect())
        .collect();
    bags.par_iter()
        .enumerate()
        .map(|(k, range)| {
            let neg = &groups[group_of[k]];
            let neg_norms = &group_norms[group_of[k]];
            let mut best = [(f64::INFINITY, range.start); SIGMA_GRID.len()];
            let mut start = range.start;
            while start < range.end {
                let len = KDE_BLOCK.min(range.end - start);
                let block = x.rows(start, len);
                let cross = block * neg.transpose();
                for (b, row) in block.row_iter().enumerate() {
                    let own = row.norm_squared();
                    let d2: Vec<f64> = cross
                        .row(b)
                        .iter()
                        .zip(neg_norms)
                        .map(|(c, n)| (own + n - 2.0 * c).max(0.0))
                        .collect();
                    let min = d2.iter().copied().fold(f64::INFINITY, f64::min);
                    for (s, &sigma) in SIGMA_GRID.iter().enumerate() {
                        let sum: f64 = d2.iter().map(|&v| (-(v - min) / sigma).exp()).sum();
                        let log_p = -min / sigma + sum.ln();
                        if log_p < best[s].0 {
                            best[s] = (log_p, start + b);
                        }
                    }
                }
                start += len;
            }
            best.map(|(_, i)| i)
        })
        .collect()
}

/// [`kde_choices`] from the Gram matrix K of the rows of x (the span path, D > n):
/// d² = K_ii + K_jj − 2K_ij, clamped at 0, the same formula over inner products
/// computed once; `groups` are row indices.
pub(super) fn kde_choices_gram(
    gram: &DMatrix<f64>,
    bags: &[std::ops::Range<usize>],
    groups: &[Vec<usize>],
    group_of: &[usize],
) -> Vec<[usize; SIGMA_GRID.len()]> {
    bags.par_iter()
        .enumerate()
        .map(|(k, range)| {
            let neg = &groups[group_of[k]];
            let mut best = [(f64::INFINITY, range.start); SIGMA_GRID.len()];
            let mut d2 = vec![0.0; neg.len()];
            for i in range.clone() {
                let own = gram[(i, i)];
                let col = gram.column(i);
                for (d, &j) in d2.iter_mut().zip(neg) {
                    *d = (own + gram[(j, j)] - 2.0 * col[j]).max(0.0);
                }
                let min = d2.iter().copied().fold(f64::INFINITY, f64::min);
                for (s, &sigma) in SIGMA_GRID.iter().enumerate() {
                    let sum: f64 = d2.iter().map(|&v| (-(v - min) / sigma).exp()).sum();
                    let log_p = -min / sigma + sum.ln();
                    if log_p < best[s].0 {
                        best[s] = (log_p, i);
                    }
                }
            }
            best.map(|(_, i)| i)
        })
        .collect()
}

/// Candidates per block of the kernel density estimate.
pub(super) const KDE_BLOCK: usize = 64;
