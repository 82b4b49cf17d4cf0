//! The normalised set kernel of Gärtner, Flach, Kowalczyk & Smola (ICML 2002), the
//! conventional baseline the GMIL paper's box kernels are compared with:
//! k_set(X, Y) = Σ_{x∈X, y∈Y} exp(−γ‖x − y‖²), normalised to
//! k(X, Y) = k_set(X, Y) / √(k_set(X, X) · k_set(Y, Y)), so k(X, X) = 1.
//! Values are returned as natural logarithms, like every Gram matrix of the project, and
//! summed by log-sum-exp so that far-apart bags do not underflow to ln 0 = −∞.
//!
//! [`log_set_kernel`] is the brute-force definition. Gram matrices use the block
//! computation [`log_set_kernels`]: the squared distances of a block of instance pairs
//! come from one matrix product, ‖x − y‖² = ‖x‖² + ‖y‖² − 2x·y (the x·y part by
//! `matrixmultiply`, as in [`crate::distance`]), and each bag pair is reduced from
//! them in one log-sum-exp: the block's part (largest exponent, then the sum of
//! exp(e − max) while the block is in cache, by `sum_exp_in_place`: a vectorised
//! exp and four partial sums in a fixed order), merged with the parts of other blocks as
//! a running maximum and rescaled sum.
//!
//! # Determinism
//!
//! A bag of at most [`ROW_BLOCK`] (rows) or [`COL_BLOCK`] (columns) instances always lies
//! in one block; a larger bag is cut into pieces of that many instances from its first
//! one. The value of ln k_set(X, Y) is then a function of X, Y and γ alone: each product
//! x·y is one fixed sequence of multiply-adds whatever its place in the block, each
//! piece pair is reduced in instance order, and the pieces are merged in order. So it
//! does not depend on which other pairs are computed with it, on the blocks, or on the
//! number of threads; a shard of the Gram matrix ([`super::tiles`]) holds the very bits
//! of the single run. (X against Y and Y against X may differ in the last bit: the
//! instance order of the reduction differs. Symmetric matrices compute the upper
//! triangle, X the bag of the smaller index.)
//!
//! # Error bound
//!
//! With u = 2⁻⁵³, D features and N = |X|·|Y| instance pairs, the computed ln k_set
//! differs from the exact one by at most
//!
//! γ · 8(D + 2)u · (max_x ‖x‖² + max_y ‖y‖²) + 8(N + 2)u · (1 + |ln k_set(X, Y)|):
//!
//! the first term is the round-off of ‖x‖² + ‖y‖² − 2x·y ([`crate::distance`]'s bound
//! (2D + 4)u(‖x‖² + ‖y‖²) with a fourfold margin), which moves every exponent by at most
//! γ times it, and log-sum-exp is 1-Lipschitz in the largest change of an exponent; the
//! second covers rounding γ‖x − y‖² and e − max (relative u each, weighted by the
//! softmax weights, whose mean |exponent| is at most |ln k_set| + ln N), exp (within 2
//! units in the last place, relative 4u per term: `exp_nonpositive`), the sum of N
//! terms in four partial sums ((N/4 + 2)u relative), the merges of block parts (5u each,
//! fewer than N), ln and the final addition. The normalised ln k adds the
//! two self-kernels' bounds halved. Features should be centred (z-scored, as the SVM and
//! `mil gram` do): the first term grows with the squared norms. The tests check the bound
//! against exact arithmetic on random bags.

use std::ops::Range;

use rayon::prelude::*;

use crate::data::{Bag, Dataset};
use crate::distance::{squared_euclidean, ROUNDOFF};
use crate::error::{Error, Result};
use crate::fast::{gram_block, squared_norms};
use crate::numerics::{exp_nonpositive, sum_exp_in_place};

/// Names the arithmetic of [`log_set_kernels`] (blocks, reduction order) in the
/// fingerprint of Gram tiles, so that tiles computed by builds that round differently
/// are refused instead of joined.
pub const ARITHMETIC: &str =
    "nsk: block products 128x512, log-sum-exp parts by numerics::sum_exp_in_place";

/// Instances of the row bags in one block product.
pub const ROW_BLOCK: usize = 128;
/// Instances of the column bags in one block product.
pub const COL_BLOCK: usize = 512;

/// ln k_set(X, Y) by log-sum-exp over instance pairs, brute force: the definition the
/// block computation ([`log_set_kernels`]) is tested against.
pub fn log_set_kernel(a: Bag<'_>, b: Bag<'_>, gamma: f64) -> f64 {
    let exponents = || {
        a.instances()
            .flat_map(move |x| b.instances().map(move |y| -gamma * squared_euclidean(x, y)))
    };
    let max = exponents().fold(f64::NEG_INFINITY, f64::max);
    max + exponents().map(|e| (e - max).exp()).sum::<f64>().ln()
}

/// The bound of the module documentation on |computed − exact| ln k_set(X, Y) for bags
/// with `pairs` instance pairs, `dim` features, largest squared norms `norm_x`, `norm_y`
/// and (approximate) value `ln_k`.
pub fn log_set_kernel_error_bound(
    gamma: f64,
    dim: usize,
    norm_x: f64,
    norm_y: f64,
    pairs: usize,
    ln_k: f64,
) -> f64 {
    let u = f64::EPSILON / 2.0;
    gamma * ROUNDOFF * (dim + 2) as f64 * (norm_x + norm_y)
        + 8.0 * (pairs + 2) as f64 * u * (1.0 + ln_k.abs())
}

/// Wanted entries of one row bag: ln k_set(row, c) for the column bags c in `cols`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    /// The row bag.
    pub row: usize,
    /// The column bags, consecutive.
    pub cols: Range<usize>,
}

/// The runs of a list of (row, column) bag pairs: consecutive pairs of one row with
/// consecutive columns form one run, so [`log_set_kernels`] over them returns the pairs'
/// values in order.
pub fn runs_of(pairs: &[(usize, usize)]) -> Vec<Run> {
    let mut runs: Vec<Run> = Vec::new();
    for &(row, col) in pairs {
        match runs.last_mut() {
            Some(run) if run.row == row && run.cols.end == col => run.cols.end += 1,
            _ => runs.push(Run {
                row,
                cols: col..col + 1,
            }),
        }
    }
    runs
}

/// The runs of the upper triangle (with the diagonal) of `n` bags, row-major: the
/// order of [`super::boxes::upper_pairs`].
pub fn upper_runs(n: usize) -> Vec<Run> {
    (0..n).map(|row| Run { row, cols: row..n }).collect()
}

/// ln k_set(rows.bag(run.row), cols.bag(c)) for every run and every c in its columns,
/// concatenated in order: by block products, in parallel over groups of runs, the
/// value of each pair independent of the others and of the thread count (see the
/// module documentation for the determinism and the error bound). `rows` and `cols`
/// have the same dimension.
pub fn log_set_kernels(rows: &Dataset, cols: &Dataset, runs: &[Run], gamma: f64) -> Vec<f64> {
    assert_eq!(rows.dim(), cols.dim(), "bags of different dimensions");
    let col_norms = squared_norms(cols.features(), cols.dim().max(1));
    let row_norms = if std::ptr::eq(rows, cols) {
        None
    } else {
        Some(squared_norms(rows.features(), rows.dim().max(1)))
    };
    let blocks = Blocks {
        rows,
        cols,
        row_norms: row_norms.as_deref().unwrap_or(&col_norms),
        col_norms: &col_norms,
        gamma,
    };
    let groups = run_groups(rows, runs);
    let parts: Vec<Vec<f64>> = groups
        .par_iter()
        .map(|g| {
            crate::cancel::checkpoint();
            blocks.reduce(&runs[g.clone()])
        })
        .collect();
    parts.concat()
}

/// ln k_set(X, X) of every bag of `data`.
pub fn log_self_kernels(data: &Dataset, gamma: f64) -> Vec<f64> {
    let runs: Vec<Run> = (0..data.n_bags())
        .map(|row| Run {
            row,
            cols: row..row + 1,
        })
        .collect();
    log_set_kernels(data, data, &runs, gamma)
}

/// The normalised Gram matrix (`n × n`, row-major) from the upper triangle's
/// unnormalised ln k_set in the order of [`upper_runs`]: ln k(X, Y) = ln k_set(X, Y) −
/// (ln k_set(X, X) + ln k_set(Y, Y))/2, exactly 0 on the diagonal. The single run and
/// the join of sharded tiles both normalise here, so they agree bit for bit.
pub fn normalise_upper(n: usize, upper: &[f64]) -> Vec<f64> {
    assert_eq!(upper.len(), n * (n + 1) / 2, "not an upper triangle");
    // Row i of the upper triangle starts at Σ_{r<i} (n − r); entry (i, j) is j − i on.
    let start: Vec<usize> = (0..n)
        .scan(0, |at, i| {
            let s = *at;
            *at += n - i;
            Some(s)
        })
        .collect();
    let diagonal: Vec<f64> = (0..n).map(|i| upper[start[i]]).collect();
    let mut out = vec![0.0; n * n];
    for i in 0..n {
        for j in i + 1..n {
            let value = upper[start[i] + j - i] - 0.5 * (diagonal[i] + diagonal[j]);
            out[i * n + j] = value;
            out[j * n + i] = value;
        }
    }
    out
}

/// The `n_bags × n_bags` row-major matrix of ln k(X, Y) (normalised), in parallel and
/// independent of the thread count: the upper triangle by [`log_set_kernels`], mirrored.
pub fn log_nsk_gram(data: &Dataset, gamma: f64) -> Result<Vec<f64>> {
    Ok(log_nsk_gram_and_self(data, gamma)?.0)
}

/// [`log_nsk_gram`] and the unnormalised ln k_set(X, X) of every bag (its diagonal
/// before normalisation), which scoring new bags against these reuses.
pub fn log_nsk_gram_and_self(data: &Dataset, gamma: f64) -> Result<(Vec<f64>, Vec<f64>)> {
    check_gamma(gamma)?;
    let n = data.n_bags();
    let upper = log_set_kernels(data, data, &upper_runs(n), gamma);
    let mut self_kernels = Vec::with_capacity(n);
    let mut at = 0;
    for i in 0..n {
        self_kernels.push(upper[at]);
        at += n - i;
    }
    Ok((normalise_upper(n, &upper), self_kernels))
}

/// Normalised ln k(X, Y) between every bag X of `rows` and every bag Y of `cols`
/// (row-major), given their unnormalised self-kernels ln k_set(X, X) and ln k_set(Y, Y)
/// ([`log_self_kernels`], or kept from training by [`log_nsk_gram_and_self`]).
pub fn log_nsk_cross(
    rows: &Dataset,
    cols: &Dataset,
    self_rows: &[f64],
    self_cols: &[f64],
    gamma: f64,
) -> Vec<f64> {
    let m = cols.n_bags();
    assert!(self_rows.len() == rows.n_bags() && self_cols.len() == m);
    let runs: Vec<Run> = (0..rows.n_bags())
        .map(|row| Run { row, cols: 0..m })
        .collect();
    let mut out = log_set_kernels(rows, cols, &runs, gamma);
    for (i, row) in out.chunks_mut(m.max(1)).enumerate() {
        for (v, s) in row.iter_mut().zip(self_cols) {
            *v -= 0.5 * (self_rows[i] + s);
        }
    }
    out
}

/// γ must be positive and finite.
pub fn check_gamma(gamma: f64) -> Result<()> {
    if gamma > 0.0 && gamma.is_finite() {
        Ok(())
    } else {
        Err(Error::parameter(
            "gamma",
            gamma,
            "must be positive and finite",
        ))
    }
}

/// Consecutive runs whose row bags hold at most [`ROW_BLOCK`] instances together; a run
/// of a larger row bag is a group of its own (reduced in row pieces).
fn run_groups(rows: &Dataset, runs: &[Run]) -> Vec<Range<usize>> {
    let mut groups = Vec::new();
    let (mut start, mut count) = (0, 0);
    for (k, run) in runs.iter().enumerate() {
        let len = rows.bag_range(run.row).len();
        if k > start && count + len > ROW_BLOCK {
            groups.push(start..k);
            (start, count) = (k, 0);
        }
        count += len;
    }
    if start < runs.len() {
        groups.push(start..runs.len());
    }
    groups
}

/// Column pieces of one block product: (bag, global instance range), consecutive.
type ColumnBlock = Vec<(usize, Range<usize>)>;

/// The column bags `bags` in blocks of at most [`COL_BLOCK`] instances: whole bags, or
/// pieces of [`COL_BLOCK`] instances of a larger bag from its first instance on.
fn column_blocks(cols: &Dataset, bags: Range<usize>) -> Vec<ColumnBlock> {
    let mut blocks = Vec::new();
    let mut current: ColumnBlock = Vec::new();
    let mut count = 0;
    for b in bags {
        let r = cols.bag_range(b);
        if r.len() > COL_BLOCK {
            if !current.is_empty() {
                blocks.push(std::mem::take(&mut current));
                count = 0;
            }
            for s in r.clone().step_by(COL_BLOCK) {
                blocks.push(vec![(b, s..(s + COL_BLOCK).min(r.end))]);
            }
            continue;
        }
        if count + r.len() > COL_BLOCK && !current.is_empty() {
            blocks.push(std::mem::take(&mut current));
            count = 0;
        }
        count += r.len();
        current.push((b, r));
    }
    if !current.is_empty() {
        blocks.push(current);
    }
    blocks
}

/// Log-sum-exp in parts: the largest exponent seen and Σ exp(e − max).
#[derive(Clone, Copy)]
struct LogSum {
    max: f64,
    sum: f64,
}

impl LogSum {
    const EMPTY: LogSum = LogSum {
        max: f64::NEG_INFINITY,
        sum: 0.0,
    };

    /// Adds a part, rescaling the smaller side: the running maximum and rescaled sum.
    fn merge(&mut self, part: LogSum) {
        if self.max == f64::NEG_INFINITY {
            *self = part;
        } else if part.max <= self.max {
            self.sum += part.sum * exp_nonpositive(part.max - self.max);
        } else {
            self.sum = self.sum * exp_nonpositive(self.max - part.max) + part.sum;
            self.max = part.max;
        }
    }

    fn ln(self) -> f64 {
        self.max + self.sum.ln()
    }
}

/// A group's buffers: the block product (`g[c * nr + r]` = col c · row r) and one bag
/// pair's squared distances, then shifted exponents, then exponentials.
struct Work {
    gram: Vec<f64>,
    shifted: Vec<f64>,
}

/// The two data sets of a block computation with their instances' squared norms.
struct Blocks<'a> {
    rows: &'a Dataset,
    cols: &'a Dataset,
    row_norms: &'a [f64],
    col_norms: &'a [f64],
    gamma: f64,
}

impl Blocks<'_> {
    /// ln k_set of the runs of one group, concatenated.
    fn reduce(&self, runs: &[Run]) -> Vec<f64> {
        let dim = self.rows.dim();
        // The group's row instances, packed; `pieces[k]` is run k's range in them.
        let mut feats = Vec::new();
        let mut norms = Vec::new();
        let mut pieces = Vec::with_capacity(runs.len());
        for run in runs {
            let r = self.rows.bag_range(run.row);
            let at = norms.len();
            feats.extend_from_slice(&self.rows.features()[r.start * dim..r.end * dim]);
            norms.extend_from_slice(&self.row_norms[r]);
            pieces.push(at..norms.len());
        }
        let mut sums: Vec<Vec<LogSum>> = runs
            .iter()
            .map(|run| vec![LogSum::EMPTY; run.cols.len()])
            .collect();
        let lo = runs.iter().map(|r| r.cols.start).min().unwrap_or(0);
        let hi = runs.iter().map(|r| r.cols.end).max().unwrap_or(0);
        let blocks = column_blocks(self.cols, lo..hi.max(lo));
        // The largest block product of the group, not ROW_BLOCK × COL_BLOCK: a group of
        // a few small bags (self-kernels) would spend more on clearing than computing.
        let widest = blocks
            .iter()
            .map(|b| b[b.len() - 1].1.end - b[0].1.start)
            .max()
            .unwrap_or(0);
        let mut work = Work {
            gram: vec![0.0; norms.len().min(ROW_BLOCK) * widest],
            shifted: Vec::new(),
        };
        // Row pieces: the whole group (at most ROW_BLOCK instances), or a large bag's
        // pieces of ROW_BLOCK instances from its first on.
        for r0 in (0..norms.len()).step_by(ROW_BLOCK) {
            let r1 = (r0 + ROW_BLOCK).min(norms.len());
            let nr = r1 - r0;
            for block in &blocks {
                let (first_bag, last_bag) = (block[0].0, block[block.len() - 1].0);
                let wanted = |k: usize| {
                    let p = &pieces[k];
                    p.start < r1
                        && r0 < p.end
                        && runs[k].cols.start <= last_bag
                        && first_bag < runs[k].cols.end
                };
                if !(0..runs.len()).any(wanted) {
                    continue;
                }
                let c0 = block[0].1.start;
                let c1 = block[block.len() - 1].1.end;
                let nc = c1 - c0;
                if nc == 0 || nr == 0 {
                    continue;
                }
                let g = &mut work.gram[..nc * nr];
                gram_block(
                    &self.cols.features()[c0 * dim..c1 * dim],
                    &feats[r0 * dim..r1 * dim],
                    dim,
                    g,
                );
                for k in (0..runs.len()).filter(|&k| wanted(k)) {
                    let rows = pieces[k].start.max(r0) - r0..pieces[k].end.min(r1) - r0;
                    for (b, cr) in block {
                        if runs[k].cols.contains(b) && !cr.is_empty() && !rows.is_empty() {
                            let part = self.part(
                                &mut work,
                                nr,
                                rows.clone(),
                                cr.start - c0..cr.end - c0,
                                &norms[r0..r1],
                                &self.col_norms[c0..c1],
                            );
                            sums[k][b - runs[k].cols.start].merge(part);
                        }
                    }
                }
            }
        }
        sums.into_iter().flatten().map(LogSum::ln).collect()
    }

    /// The log-sum-exp part of the instance pairs `rows` × `cols` of the block product
    /// `work.gram` (column-major over rows: `g[c * nr + r]` = col c · row r): the squared
    /// distances ‖x‖² + ‖y‖² − 2x·y (clamped at 0, which only moves them closer to the
    /// exact value), columns outer, in `work.shifted`, give the largest exponent
    /// −γ min ‖x − y‖²; then Σ exp(−γ‖x − y‖² − max) by [`sum_exp_in_place`].
    fn part(
        &self,
        work: &mut Work,
        nr: usize,
        rows: Range<usize>,
        cols: Range<usize>,
        row_norms: &[f64],
        col_norms: &[f64],
    ) -> LogSum {
        let Work { gram: g, shifted } = work;
        shifted.resize(rows.len() * cols.len(), 0.0);
        let mut min = f64::INFINITY;
        for (c, out) in cols.zip(shifted.chunks_exact_mut(rows.len())) {
            let cn = col_norms[c];
            let line = &g[c * nr + rows.start..c * nr + rows.end];
            for ((d, &v), &rn) in out.iter_mut().zip(line).zip(&row_norms[rows.clone()]) {
                *d = (rn + cn - 2.0 * v).max(0.0);
                min = min.min(*d);
            }
        }
        // fl(−γ·d) does not increase with d, so this is the largest exponent and every
        // e − max is ≤ 0.
        let max = -self.gamma * min;
        for e in shifted.iter_mut() {
            *e = -self.gamma * *e - max;
        }
        LogSum {
            max,
            sum: sum_exp_in_place(shifted),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::boxes::upper_pairs;
    use rand::{RngExt, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    fn data() -> Dataset {
        // Bag 0: {0, 1}; bag 1: {3}; one feature.
        Dataset::new(
            "t",
            1,
            vec![0.0, 1.0, 3.0],
            vec![0, 2, 3],
            vec!["a".into(), "b".into()],
            None,
            vec![],
        )
        .unwrap()
    }

    #[test]
    fn matches_the_direct_formula() {
        let d = data();
        let g = 0.5;
        let k = |x: f64, y: f64| (-g * (x - y) * (x - y)).exp();
        let kxx = k(0.0, 0.0) + 2.0 * k(0.0, 1.0) + k(1.0, 1.0);
        let kyy = k(3.0, 3.0);
        let kxy = k(0.0, 3.0) + k(1.0, 3.0);
        let m = log_nsk_gram(&d, g).unwrap();
        assert!((m[1] - (kxy / (kxx * kyy).sqrt()).ln()).abs() < 1e-12);
        assert_eq!(m[1], m[2]);
        assert_eq!(m[0], 0.0);
    }

    #[test]
    fn far_bags_stay_finite_in_log_space() {
        let d = Dataset::new(
            "t",
            1,
            vec![0.0, 1e4],
            vec![0, 1, 2],
            vec!["a".into(), "b".into()],
            None,
            vec![],
        )
        .unwrap();
        let m = log_nsk_gram(&d, 1.0).unwrap();
        assert!((m[1] + 1e8).abs() < 1e-3, "{}", m[1]);
        assert!(log_nsk_gram(&d, 0.0).is_err());
    }

    /// Random bags of sizes 1..=max_len whose features are `offset + k·2⁻²⁰` with
    /// |k| ≤ 2²⁰: differences, their squares and sums of up to 32 of them are exact in
    /// f64, so Σ(x − y)² is the exact squared distance, while with a large offset ‖x‖²
    /// and x·y are rounded (the cancellation the bound covers).
    fn dyadic_bags(seed: u64, n_bags: usize, max_len: usize, dim: usize, offset: f64) -> Dataset {
        assert!(dim <= 32);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut feats = Vec::new();
        let mut starts = vec![0];
        for _ in 0..n_bags {
            let len = rng.random_range(1..=max_len);
            // Some bags near each other, some apart: a spread of exponents.
            let shift = rng.random_range(-(1i64 << 19)..=(1 << 19));
            for _ in 0..len * dim {
                let k = (rng.random_range(-(1i64 << 19)..=(1 << 19)) + shift) as f64;
                feats.push(offset + k * (-20f64).exp2());
            }
            starts.push(starts.last().unwrap() + len);
        }
        let ids = (0..n_bags).map(|b| b.to_string()).collect();
        Dataset::new("r", dim, feats, starts, ids, None, vec![]).unwrap()
    }

    /// ln k_set with exact exponents (γ a power of two and exact squared distances) and
    /// a compensated sum: within 4u(1 + |value|) of the exact value (exp, the sum and ln
    /// round relatively by about u each).
    fn reference(a: Bag<'_>, b: Bag<'_>, gamma: f64) -> f64 {
        let e: Vec<f64> = a
            .instances()
            .flat_map(|x| b.instances().map(move |y| -gamma * squared_euclidean(x, y)))
            .collect();
        let max = e.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        // Neumaier's compensated summation; e − max is exact here.
        let (mut sum, mut carry) = (0.0f64, 0.0f64);
        for t in e.iter().map(|v| (v - max).exp()) {
            let s = sum + t;
            carry += if sum.abs() >= t.abs() {
                (sum - s) + t
            } else {
                (t - s) + sum
            };
            sum = s;
        }
        max + (sum.ln() + carry / sum)
    }

    fn max_norm(bag: Bag<'_>) -> f64 {
        bag.instances()
            .map(|x| x.iter().map(|v| v * v).sum::<f64>())
            .fold(0.0, f64::max)
    }

    #[test]
    fn block_values_are_within_the_stated_bound_of_exact_arithmetic() {
        let u = f64::EPSILON / 2.0;
        let mut worst: f64 = 0.0;
        // (seed, bags, largest bag, features, offset, γ): bags beyond ROW_BLOCK and
        // COL_BLOCK instances are cut into pieces whose parts are merged.
        for (seed, n_bags, max_len, dim, offset, gamma) in [
            (1, 30, 6, 3, 0.0, 0.5),
            (2, 25, 40, 17, 1000.0, 0.125),
            (3, 5, 700, 5, 1000.0, 0.5),
            (4, 12, 150, 8, 0.0, 2.0),
        ] {
            let d = dyadic_bags(seed, n_bags, max_len, dim, offset);
            let n = d.n_bags();
            let fast = log_set_kernels(&d, &d, &upper_runs(n), gamma);
            let mut exact = vec![0.0; n * n];
            let mut bound = vec![0.0; n * n];
            for (&(i, j), &value) in upper_pairs(n).iter().zip(&fast) {
                let (x, y) = (d.bag(i), d.bag(j));
                let want = reference(x, y, gamma);
                let pairs = x.len() * y.len();
                let b =
                    log_set_kernel_error_bound(gamma, dim, max_norm(x), max_norm(y), pairs, want);
                let err = (value - want).abs();
                assert!(
                    err <= b + 4.0 * u * (1.0 + want.abs()),
                    "seed {seed} ({i}, {j}): {value} vs exact {want}, bound {b}"
                );
                worst = worst.max(err / b);
                exact[i * n + j] = want;
                bound[i * n + j] = b;
            }
            // The normalised matrix: the pair's bound plus half of each self-kernel's.
            let gram = log_nsk_gram(&d, gamma).unwrap();
            for i in 0..n {
                assert_eq!(gram[i * n + i], 0.0);
                for j in i + 1..n {
                    let want = exact[i * n + j] - 0.5 * (exact[i * n + i] + exact[j * n + j]);
                    let b = bound[i * n + j] + 0.5 * (bound[i * n + i] + bound[j * n + j]);
                    let slack = 16.0 * u * (1.0 + exact[i * n + j].abs() + want.abs());
                    assert_eq!(gram[i * n + j], gram[j * n + i]);
                    assert!(
                        (gram[i * n + j] - want).abs() <= b + slack,
                        "seed {seed} ({i}, {j}): {} vs {want}",
                        gram[i * n + j]
                    );
                }
            }
        }
        // The inputs do round: the largest error is a visible fraction of the bound (2.5%
        // when written), which is rigorous rather than tight.
        assert!(worst > 1e-3 && worst < 1.0, "{worst}");
    }

    #[test]
    fn brute_force_agrees_on_ordinary_data() {
        // Non-dyadic, centred features: the brute-force definition and the blocks agree
        // to the bound (the definition's own round-off is smaller than it).
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(9);
        let dim = 20;
        let mut feats = Vec::new();
        let mut starts = vec![0];
        for _ in 0..15 {
            let len = rng.random_range(1..=30);
            for _ in 0..len * dim {
                feats.push(rng.random_range(-2.0..2.0));
            }
            starts.push(starts.last().unwrap() + len);
        }
        let ids = (0..15).map(|b| b.to_string()).collect();
        let d = Dataset::new("r", dim, feats, starts, ids, None, vec![]).unwrap();
        let gamma = 1.0 / dim as f64;
        let fast = log_set_kernels(&d, &d, &upper_runs(15), gamma);
        for (&(i, j), &value) in upper_pairs(15).iter().zip(&fast) {
            let (x, y) = (d.bag(i), d.bag(j));
            let want = log_set_kernel(x, y, gamma);
            let b = log_set_kernel_error_bound(
                gamma,
                dim,
                max_norm(x),
                max_norm(y),
                x.len() * y.len(),
                want,
            );
            assert!((value - want).abs() <= 2.0 * b, "({i}, {j})");
        }
    }

    #[test]
    fn values_do_not_depend_on_blocks_runs_or_threads() {
        // A large bag (cut into row and column pieces) among small ones.
        let d = dyadic_bags(5, 14, 90, 6, 3.0);
        let mut features = d.features().to_vec();
        let mut starts = d.bag_starts().to_vec();
        features.extend((0..600 * 6).map(|k| (k % 17) as f64 * 0.1));
        starts.push(starts.last().unwrap() + 600);
        let ids = (0..starts.len() - 1).map(|b| b.to_string()).collect();
        let d = Dataset::new("r", 6, features, starts, ids, None, vec![]).unwrap();
        let n = d.n_bags();
        let gamma = 0.3;
        let pairs = upper_pairs(n);
        let full = log_set_kernels(&d, &d, &upper_runs(n), gamma);
        // Shards: contiguous ranges of the upper triangle, as `mil gram --shard` cuts it.
        for (start, end) in [(0, 1), (3, 40), (17, pairs.len()), (50, 51), (90, 105)] {
            let part = log_set_kernels(&d, &d, &runs_of(&pairs[start..end]), gamma);
            assert_eq!(part, full[start..end], "{start}..{end}");
        }
        // Pairs one at a time, and the self-kernels alone.
        for (k, &(i, j)) in pairs.iter().enumerate().step_by(7) {
            let one = log_set_kernels(
                &d,
                &d,
                &[Run {
                    row: i,
                    cols: j..j + 1,
                }],
                gamma,
            );
            assert_eq!(one[0], full[k], "({i}, {j})");
        }
        let (_, self_kernels) = log_nsk_gram_and_self(&d, gamma).unwrap();
        assert_eq!(log_self_kernels(&d, gamma), self_kernels);
        // Rows from another data set holding the same bags (scoring new bags).
        let rows = d.copy_bags(&[n - 1, 2, 0]);
        let cross = log_set_kernels(&rows, &d, &[Run { row: 1, cols: 2..n }], gamma);
        let row2 = &full[n + (n - 1)..n + (n - 1) + (n - 2)];
        assert_eq!(cross, row2);
        // Thread counts.
        let pool = |t| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(t)
                .build()
                .unwrap()
        };
        let one = pool(1).install(|| log_nsk_gram(&d, gamma).unwrap());
        let three = pool(3).install(|| log_nsk_gram(&d, gamma).unwrap());
        assert_eq!(one, three);
    }

    #[test]
    fn cross_matches_the_gram_matrix() {
        let d = dyadic_bags(6, 20, 12, 4, 0.0);
        let gamma = 0.7;
        let (gram, self_kernels) = log_nsk_gram_and_self(&d, gamma).unwrap();
        let n = d.n_bags();
        let rows = d.copy_bags(&[3, 11]);
        let self_rows = log_self_kernels(&rows, gamma);
        assert_eq!(self_rows, [self_kernels[3], self_kernels[11]]);
        let cross = log_nsk_cross(&rows, &d, &self_rows, &self_kernels, gamma);
        for (r, &b) in [3, 11].iter().enumerate() {
            for c in 0..n {
                // Same orientation (b ≤ c): the same bits; else within the bound.
                let (x, y) = (cross[r * n + c], gram[b * n + c]);
                if b <= c {
                    assert_eq!(x, y, "({b}, {c})");
                } else {
                    assert!((x - y).abs() < 1e-12, "({b}, {c})");
                }
            }
        }
    }
}
