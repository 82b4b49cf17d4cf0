//! Bag-to-bag distances over instance Euclidean distances: the minimal, maximal and
//! average Hausdorff distances used by Citation-kNN (Wang & Zucker 2000), CLFDA and
//! BAMIC (Zhang & Zhou 2009), and Wang & Zucker's H-th ranked variant. One
//! implementation, used by all of them.
//!
//! The fast path computes squared instance distances in blocks as ‖a‖² + ‖b‖² − 2a·b,
//! the a·b part as a matrix product (`matrixmultiply`'s SIMD kernels), on features
//! centred by the data set's mean to keep the norms (and with them the round-off)
//! small. No instance-level matrix larger than one `ROW_BLOCK` × `COL_BLOCK` block
//! is materialised, and no copy of the data: rows are centred as they are copied into
//! a block (one row block and one column block of at most 4 MB per task). Minimal and ranked distances are then made *exact*: every instance
//! pair whose block value lies within the round-off bound of the minimum is recomputed
//! as Σ(aₖ − bₖ)² in feature order, so the result equals [`bag_distance`] bit for bit
//! (which the tie rules of Citation-kNN rely on). Maximal and average distances keep the
//! block values, whose error is at most `ROUNDOFF`·(‖a‖² + ‖b‖²) per squared distance.
//!
//! The functions measure a [`BagSet`]: bags borrowed from one or more data sets in a
//! chosen order (a fold's training bags; a query's bags followed by a model's), with an
//! optional attribute scaling applied as each instance is read. A `&Dataset` converts to
//! the set of all its bags. So Citation-kNN measures a fold or a model without a scaled
//! or stacked copy of the data (so its cross-validation peak memory stays below twice
//! the data's size); the values are those of the copy, bit for bit.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::data::{Bag, Bags, Dataset};
use crate::fast::gram_block;

/// Which Hausdorff-type distance between two bags A and B.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Hausdorff {
    /// min over a∈A, b∈B of ‖a − b‖ (Citation-kNN's minimal Hausdorff distance).
    #[default]
    Min,
    /// max( max_a min_b ‖a − b‖, max_b min_a ‖a − b‖ ): the classic Hausdorff distance.
    Max,
    /// ( Σ_a min_b ‖a − b‖ + Σ_b min_a ‖a − b‖ ) / (|A| + |B|) (BAMIC's average).
    Avg,
}

mil_core::keywords!(Hausdorff {
    Hausdorff::Min => "min": "minimal Hausdorff distance: the closest instance pair (Wang & Zucker)",
    Hausdorff::Max => "max": "maximal (classic) Hausdorff distance",
    Hausdorff::Avg => "avg": "average Hausdorff distance: mean of the nearest-instance distances both ways",
});

/// Rows of one block of the Gram product (instances of the row bags).
const ROW_BLOCK: usize = 256;
/// Columns of one block of the Gram product (instances of the column bags).
const COL_BLOCK: usize = 512;
/// Round-off factor per feature: a squared distance computed as ‖a‖² + ‖b‖² − 2a·b over
/// D features differs from the exact one by at most (2D + 4)·u·(‖a‖² + ‖b‖²) (u = 2⁻⁵³,
/// Higham's γ bounds for the two dot products and the final sum), and Σ(aₖ − bₖ)² by at
/// most D·u·2(‖a‖² + ‖b‖²). We use 8(D + 2)·u, a safe margin over both together.
pub(crate) const ROUNDOFF: f64 = 8.0 * f64::EPSILON / 2.0;

/// A map applied to each instance as it is read (an attribute scaling): writes the
/// mapped `x` into `out`, both of the data's dimension. Closures are maps.
pub trait RowMap: Sync {
    /// Writes `x` mapped into `out`.
    fn map_row(&self, x: &[f64], out: &mut [f64]);
}

impl<F: Fn(&[f64], &mut [f64]) + Sync> RowMap for F {
    fn map_row(&self, x: &[f64], out: &mut [f64]) {
        self(x, out)
    }
}

/// The bags a distance is measured between, borrowed — see the module documentation.
///
/// ```
/// use mil_toolkit::distance::{cross, BagSet, Hausdorff};
///
/// let data = mil_toolkit::data::load("musk1")?;
/// // Bags 3 and 7, their features halved as they are read: half the distance.
/// let halve = |x: &[f64], out: &mut [f64]| {
///     out.iter_mut().zip(x).for_each(|(o, v)| *o = v / 2.0)
/// };
/// let half = BagSet::picked(&data, &[3, 7]).scaled(&halve);
/// let d = cross(&data, &[3], &[7], Hausdorff::Min)[0];
/// let h = cross(half, &[0], &[1], Hausdorff::Min)[0];
/// assert!((h - d / 2.0).abs() <= 1e-12 * d);
/// # Ok::<(), mil_toolkit::Error>(())
/// ```
#[derive(Clone)]
pub struct BagSet<'a> {
    dim: usize,
    bags: Vec<Bag<'a>>,
    /// Instance offsets: bag `b` holds instances `starts[b]..starts[b + 1]`.
    starts: Vec<usize>,
    /// Each instance's raw row.
    rows: Vec<&'a [f64]>,
    map: Option<&'a dyn RowMap>,
}

impl<'a> BagSet<'a> {
    /// An empty set of bags of dimension `dim`.
    pub fn new(dim: usize) -> Self {
        BagSet {
            dim,
            bags: Vec::new(),
            starts: vec![0],
            rows: Vec::new(),
            map: None,
        }
    }

    /// The bags `bags` of `data`, in that order.
    pub fn picked(data: &'a Dataset, bags: &[usize]) -> Self {
        let mut set = BagSet::new(data.dim());
        set.extend(bags.iter().map(|&b| data.bag(b)));
        set
    }

    /// Appends bags (of the set's dimension).
    pub fn extend(&mut self, bags: impl IntoIterator<Item = Bag<'a>>) {
        for bag in bags {
            assert_eq!(bag.dim(), self.dim, "bags of one dimension");
            self.rows.extend(bag.instances());
            self.starts.push(self.rows.len());
            self.bags.push(bag);
        }
    }

    /// The same bags with `map` applied to every instance as it is read.
    pub fn scaled(mut self, map: &'a dyn RowMap) -> Self {
        self.map = Some(map);
        self
    }

    /// Number of bags.
    pub fn n_bags(&self) -> usize {
        self.bags.len()
    }

    /// The positions of all the set's bags, `0..n_bags`, for the functions that measure
    /// between chosen bags.
    pub fn positions(&self) -> Vec<usize> {
        (0..self.bags.len()).collect()
    }

    /// Feature dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Number of instances in bag `b`.
    pub fn bag_len(&self, b: usize) -> usize {
        self.bags[b].len()
    }

    /// The instances of bag `b` (indices into the set's instances).
    fn bag_range(&self, b: usize) -> std::ops::Range<usize> {
        self.starts[b]..self.starts[b + 1]
    }

    /// Writes instance `i`, mapped, into `out`.
    fn read(&self, i: usize, out: &mut [f64]) {
        match self.map {
            Some(map) => map.map_row(self.rows[i], out),
            None => out.copy_from_slice(self.rows[i]),
        }
    }

    /// The instances of bag `b`, mapped, as one row-major slice (borrowed when unmapped).
    pub fn bag_rows(&self, b: usize) -> std::borrow::Cow<'a, [f64]> {
        let bag = self.bags[b];
        match self.map {
            None => std::borrow::Cow::Borrowed(bag.as_slice()),
            Some(map) => {
                let mut out = vec![0.0; bag.as_slice().len()];
                for (x, o) in bag.instances().zip(out.chunks_exact_mut(self.dim)) {
                    map.map_row(x, o);
                }
                std::borrow::Cow::Owned(out)
            }
        }
    }
}

impl<'a> From<&'a Dataset> for BagSet<'a> {
    fn from(data: &'a Dataset) -> Self {
        BagSet::picked(data, &Bags::from(data).indices())
    }
}

/// Squared Euclidean distance of two equal-length vectors.
#[inline]
pub fn squared_euclidean(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

/// The distance of two bags of the same dimension (brute force; the reference the fast
/// kernel is tested against).
pub fn bag_distance(a: Bag<'_>, b: Bag<'_>, kind: Hausdorff) -> f64 {
    match kind {
        Hausdorff::Min => a
            .instances()
            .flat_map(|x| b.instances().map(move |y| squared_euclidean(x, y)))
            .fold(f64::INFINITY, f64::min)
            .sqrt(),
        Hausdorff::Max => {
            let ab = directed(a, b).fold(0.0, f64::max);
            let ba = directed(b, a).fold(0.0, f64::max);
            ab.max(ba)
        }
        Hausdorff::Avg => {
            let total: f64 = directed(a, b).sum::<f64>() + directed(b, a).sum::<f64>();
            total / (a.len() + b.len()) as f64
        }
    }
}

/// Wang & Zucker's H-th ranked Hausdorff distance from `a` to `b` (brute force): the
/// `rank`-th smallest over instances of `a` of the distance to the nearest instance of
/// `b`, with `rank` clamped to 1..=|a| as Weka does. Rank 1 is the minimal distance.
pub fn ranked_distance(a: Bag<'_>, b: Bag<'_>, rank: usize) -> f64 {
    let mut nearest: Vec<f64> = directed(a, b).collect();
    nearest.sort_by(f64::total_cmp);
    nearest[rank.clamp(1, nearest.len()) - 1]
}

/// For each instance of `from`, its distance to the nearest instance of `to`.
fn directed<'a>(from: Bag<'a>, to: Bag<'a>) -> impl Iterator<Item = f64> + 'a {
    from.instances().map(move |x| {
        to.instances()
            .map(|y| squared_euclidean(x, y))
            .fold(f64::INFINITY, f64::min)
            .sqrt()
    })
}

/// All pairwise bag distances of a data set as a row-major `n_bags × n_bags` symmetric
/// matrix with a zero diagonal, computed in parallel. The result does not depend on the
/// number of threads (blocks are fixed by the data, and each entry is reduced in one
/// task in a fixed order).
pub fn pairwise<'a>(bags: impl Into<BagSet<'a>>, kind: Hausdorff) -> Vec<f64> {
    let set = bags.into();
    let n = set.n_bags();
    let all: Vec<usize> = (0..n).collect();
    let table = Table::new(&set);
    let mut out = vec![0.0; n * n];
    match kind {
        Hausdorff::Min => {
            // Symmetric: only column bags at or after the row bag are computed.
            let upper = table.reduce(&all, &all, true, |a, col, approx, tol| {
                table.exact_rank(all[a], col, approx, tol, 1)
            });
            for a in 0..n {
                for b in a + 1..n {
                    let d = upper[a * n + b];
                    out[a * n + b] = d;
                    out[b * n + a] = d;
                }
            }
        }
        Hausdorff::Max | Hausdorff::Avg => {
            // Directed statistics both ways, combined in a fixed orientation.
            let stats = table.reduce(&all, &all, false, |_, _, approx, _| {
                directed_stat(kind, approx)
            });
            for a in 0..n {
                for b in a + 1..n {
                    let d = combine(kind, &set, (a, b), stats[a * n + b], stats[b * n + a]);
                    out[a * n + b] = d;
                    out[b * n + a] = d;
                }
            }
        }
    }
    out
}

/// The directed statistic of the maximal (largest nearest-instance distance) or average
/// (their sum) Hausdorff distance, from block estimates of squared nearest distances.
fn directed_stat(kind: Hausdorff, approx: &[f64]) -> f64 {
    let near = approx.iter().map(|v| v.max(0.0).sqrt());
    match kind {
        Hausdorff::Max => near.fold(0.0, f64::max),
        _ => near.sum::<f64>(),
    }
}

/// The maximal or average Hausdorff distance of bags `a` and `b` from the directed
/// statistics a → b and b → a.
fn combine(kind: Hausdorff, set: &BagSet, (a, b): (usize, usize), ab: f64, ba: f64) -> f64 {
    match kind {
        Hausdorff::Max => ab.max(ba),
        _ => (ab + ba) / (set.bag_len(a) + set.bag_len(b)) as f64,
    }
}

/// Bag distances of kind `kind` from each bag of `rows` to each bag of `cols`, as a
/// row-major `|rows| × |cols|` matrix: minimal distances exact as in [`ranked_cross`],
/// maximal and average ones within the round-off bound of the module documentation.
/// Parallel and independent of the thread count.
pub fn cross<'a>(
    bags: impl Into<BagSet<'a>>,
    rows: &[usize],
    cols: &[usize],
    kind: Hausdorff,
) -> Vec<f64> {
    let set = bags.into();
    if kind == Hausdorff::Min {
        return ranked_cross(set, rows, cols, 1);
    }
    let table = Table::new(&set);
    let forward = table.reduce(rows, cols, false, |_, _, approx, _| {
        directed_stat(kind, approx)
    });
    let backward = table.reduce(cols, rows, false, |_, _, approx, _| {
        directed_stat(kind, approx)
    });
    let (nr, nc) = (rows.len(), cols.len());
    let mut out = vec![0.0; nr * nc];
    for (i, &a) in rows.iter().enumerate() {
        for (j, &b) in cols.iter().enumerate() {
            out[i * nc + j] = combine(
                kind,
                &set,
                (a, b),
                forward[i * nc + j],
                backward[j * nr + i],
            );
        }
    }
    out
}

/// H-th ranked Hausdorff distances from each bag of `rows` to each bag of `cols`, as a
/// row-major `|rows| × |cols|` matrix, equal bit for bit to [`ranked_distance`] (rank 1
/// is the minimal Hausdorff distance [`Hausdorff::Min`]). Parallel and independent of
/// the thread count.
pub fn ranked_cross<'a>(
    bags: impl Into<BagSet<'a>>,
    rows: &[usize],
    cols: &[usize],
    rank: usize,
) -> Vec<f64> {
    let set = bags.into();
    let table = Table::new(&set);
    table.reduce(rows, cols, false, |a, col, approx, tol| {
        table.exact_rank(rows[a], col, approx, tol, rank)
    })
}

/// The instances of a bag set prepared for block products: their mean (rows are
/// centred as they are copied into a block) and the centred squared norms. No copy of
/// the data is kept: memory beyond the data is one row block and one column block per
/// task ([`COL_BLOCK_BYTES`]), whatever the number of instances.
struct Table<'s, 'a> {
    set: &'s BagSet<'a>,
    mean: Vec<f64>,
    norms: Vec<f64>,
}

/// Bytes of one column block of centred instances (fewer than [`COL_BLOCK`] instances on
/// wide data, so a block's copy stays small).
const COL_BLOCK_BYTES: usize = 4 << 20;

impl<'s, 'a> Table<'s, 'a> {
    fn new(set: &'s BagSet<'a>) -> Self {
        let dim = set.dim();
        let count = set.rows.len();
        let n = count as f64;
        let mut mean = vec![0.0; dim];
        let mut x = vec![0.0; dim];
        for i in 0..count {
            set.read(i, &mut x);
            mean.iter_mut().zip(&x).for_each(|(m, v)| *m += v / n);
        }
        let norms = (0..count)
            .map(|i| {
                set.read(i, &mut x);
                x.iter().zip(&mean).map(|(v, m)| (v - m) * (v - m)).sum()
            })
            .collect();
        Table { set, mean, norms }
    }

    /// Appends instance `i` centred to `out`.
    fn push_centred(&self, i: usize, out: &mut Vec<f64>) {
        let start = out.len();
        out.resize(start + self.set.dim(), 0.0);
        let x = &mut out[start..];
        self.set.read(i, x);
        x.iter_mut().zip(&self.mean).for_each(|(v, m)| *v -= m);
    }

    /// Largest centred squared norm in bag `b`.
    fn max_norm(&self, b: usize) -> f64 {
        self.norms[self.set.bag_range(b)]
            .iter()
            .fold(0.0, |m, &v| f64::max(m, v))
    }

    /// For every pair (row bag `rows[a]`, column bag `cols[b]`), calls `f(a, col, approx,
    /// tol)` where `approx[i]` is the block estimate of the squared distance from
    /// instance i of the row bag to the nearest instance of the column bag, `tol` bounds
    /// its error and `col` reads the column bag's rows (mapped once per column bag and
    /// row group, when first asked). With `upper`, only pairs with `cols[b] > rows[a]`
    /// are visited (for symmetric distances with `rows == cols` sorted); others are 0.
    fn reduce<F>(&self, rows: &[usize], cols: &[usize], upper: bool, f: F) -> Vec<f64>
    where
        F: Fn(usize, &ColumnBag<'_, 'a>, &[f64], f64) -> f64 + Sync,
    {
        let dim = self.set.dim();
        // Column instances in column-bag order (their indices in the set), with each
        // column bag's offset.
        let mut col_index = Vec::new();
        let mut col_starts = vec![0];
        for &b in cols {
            col_index.extend(self.set.bag_range(b));
            col_starts.push(col_index.len());
        }
        let col_max: Vec<f64> = cols.iter().map(|&b| self.max_norm(b)).collect();
        let groups = row_groups(self.set, rows);
        let tol = ROUNDOFF * (dim + 2) as f64;
        let per_group: Vec<Vec<f64>> = groups
            .par_iter()
            .map(|g| {
                crate::cancel::checkpoint();
                let first = if upper {
                    cols.partition_point(|&c| c <= rows[g.start])
                } else {
                    0
                };
                let mins = self.block_minima(g, rows, &col_index, &col_starts, first);
                let n_rows = mins.len() / cols.len().max(1);
                // Each row bag's first instance among the group's rows.
                let mut offsets = Vec::with_capacity(g.len());
                let mut offset = 0;
                for a in g.clone() {
                    offsets.push(offset);
                    offset += self.set.bag_len(rows[a]);
                }
                let mut out = vec![0.0; g.len() * cols.len()];
                for (b, &c) in cols.iter().enumerate().skip(first) {
                    let col = ColumnBag::new(self.set, c);
                    for (k, a) in g.clone().enumerate() {
                        if upper && c <= rows[a] {
                            continue;
                        }
                        let len = self.set.bag_len(rows[a]);
                        let start = b * n_rows + offsets[k];
                        let bound = tol * (self.max_norm(rows[a]) + col_max[b]);
                        out[k * cols.len() + b] = f(a, &col, &mins[start..start + len], bound);
                    }
                }
                out
            })
            .collect();
        per_group.concat()
    }

    /// Block estimates of the squared distance from each instance of the row bags in
    /// `group` to the nearest instance of each column bag from `first` on, stored
    /// column-bag-major: `[b * n_rows + r]`. Column instances are centred into a block
    /// buffer as the blocks are visited.
    fn block_minima(
        &self,
        group: &std::ops::Range<usize>,
        rows: &[usize],
        col_index: &[usize],
        col_starts: &[usize],
        first: usize,
    ) -> Vec<f64> {
        let dim = self.set.dim();
        let n_cols = col_starts.len() - 1;
        let mut row_feats = Vec::new();
        let mut row_norms = Vec::new();
        for &a in &rows[group.clone()] {
            let r = self.set.bag_range(a);
            r.clone().for_each(|i| self.push_centred(i, &mut row_feats));
            row_norms.extend_from_slice(&self.norms[r]);
        }
        let n_rows = row_norms.len();
        let mut mins = vec![f64::INFINITY; n_cols * n_rows];
        let col_block = (COL_BLOCK_BYTES / (8 * dim.max(1))).clamp(16, COL_BLOCK);
        let mut gram = vec![0.0; ROW_BLOCK * col_block];
        let mut packed = Vec::with_capacity(col_block * dim);
        let col_begin = col_starts[first];
        let col_end = col_starts[n_cols];
        for r0 in (0..n_rows).step_by(ROW_BLOCK) {
            let r1 = (r0 + ROW_BLOCK).min(n_rows);
            let nr = r1 - r0;
            let mut bag = first;
            for c0 in (col_begin..col_end).step_by(col_block) {
                let c1 = (c0 + col_block).min(col_end);
                let nc = c1 - c0;
                packed.clear();
                col_index[c0..c1]
                    .iter()
                    .for_each(|&i| self.push_centred(i, &mut packed));
                gram_block(
                    &packed,
                    &row_feats[r0 * dim..r1 * dim],
                    dim,
                    &mut gram[..nc * nr],
                );
                for c in c0..c1 {
                    while col_starts[bag + 1] <= c {
                        bag += 1;
                    }
                    let g = &gram[(c - c0) * nr..(c - c0 + 1) * nr];
                    let cn = self.norms[col_index[c]];
                    let m = &mut mins[bag * n_rows + r0..bag * n_rows + r1];
                    for ((m, &rn), &g) in m.iter_mut().zip(&row_norms[r0..r1]).zip(g) {
                        *m = m.min(rn + cn - 2.0 * g);
                    }
                }
            }
        }
        mins
    }

    /// The exact `rank`-th ranked distance from bag `a` to the column bag `col`, given
    /// block estimates `approx` (per instance of `a`) with error at most `tol`.
    fn exact_rank(&self, a: usize, col: &ColumnBag, approx: &[f64], tol: f64, rank: usize) -> f64 {
        let rank = rank.clamp(1, approx.len());
        let mut sorted = approx.to_vec();
        sorted.sort_by(f64::total_cmp);
        // At least `rank` instances have an exact value ≤ h + tol, and any instance with
        // an estimate above h + 2·tol has an exact value above that: only the others can
        // hold the rank-th exact value.
        let cutoff = sorted[rank - 1] + 2.0 * tol;
        let dim = self.set.dim();
        let first = self.set.bag_range(a).start;
        let rb = col.rows();
        let mut x = vec![0.0; dim];
        let mut exact: Vec<f64> = approx
            .iter()
            .enumerate()
            .filter(|(_, &v)| v <= cutoff)
            .map(|(i, _)| {
                self.set.read(first + i, &mut x);
                rb.chunks_exact(dim)
                    .map(|y| squared_euclidean(&x, y))
                    .fold(f64::INFINITY, f64::min)
            })
            .collect();
        exact.sort_by(f64::total_cmp);
        exact[rank - 1].sqrt()
    }
}

/// One column bag's rows for the exact pass, mapped when first read: once per row group
/// rather than once per bag pair (the map costs a division per value).
struct ColumnBag<'s, 'a> {
    set: &'s BagSet<'a>,
    bag: usize,
    rows: std::cell::OnceCell<std::borrow::Cow<'a, [f64]>>,
}

impl<'s, 'a> ColumnBag<'s, 'a> {
    fn new(set: &'s BagSet<'a>, bag: usize) -> Self {
        ColumnBag {
            set,
            bag,
            rows: std::cell::OnceCell::new(),
        }
    }

    /// The bag's mapped rows, row-major.
    fn rows(&self) -> &[f64] {
        self.rows.get_or_init(|| self.set.bag_rows(self.bag))
    }
}

/// Consecutive runs of row bags with at most [`ROW_BLOCK`] instances in total (a larger
/// bag forms a run of its own and is processed in row blocks).
fn row_groups(set: &BagSet, rows: &[usize]) -> Vec<std::ops::Range<usize>> {
    let mut groups = Vec::new();
    let mut start = 0;
    let mut count = 0;
    for (k, &a) in rows.iter().enumerate() {
        let len = set.bag_len(a);
        if k > start && count + len > ROW_BLOCK {
            groups.push(start..k);
            start = k;
            count = 0;
        }
        count += len;
    }
    if start < rows.len() {
        groups.push(start..rows.len());
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    fn two_bags() -> Dataset {
        // Bag a: (0,0), (3,0); bag b: (0,1), (10,0).
        Dataset::new(
            "t",
            2,
            vec![0.0, 0.0, 3.0, 0.0, 0.0, 1.0, 10.0, 0.0],
            vec![0, 2, 4],
            vec!["a".into(), "b".into()],
            None,
            vec![],
        )
        .unwrap()
    }

    /// Random bags of sizes 1..=max_len, with integer-valued features (many exact ties)
    /// offset far from the origin (large norms, the hard case for round-off).
    fn random_bags(seed: u64, n_bags: usize, max_len: usize, dim: usize) -> Dataset {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut feats = Vec::new();
        let mut starts = vec![0];
        for _ in 0..n_bags {
            let len = rng.random_range(1..=max_len);
            for _ in 0..len * dim {
                feats.push(1000.0 + rng.random_range(-3i32..=3) as f64);
            }
            starts.push(starts.last().unwrap() + len);
        }
        let ids = (0..n_bags).map(|b| b.to_string()).collect();
        Dataset::new("r", dim, feats, starts, ids, None, vec![]).unwrap()
    }

    #[test]
    fn hand_computed_distances() {
        let d = two_bags();
        let (a, b) = (d.bag(0), d.bag(1));
        assert_eq!(bag_distance(a, b, Hausdorff::Min), 1.0);
        // a→b: (0,0)→1, (3,0)→√10; b→a: (0,1)→1, (10,0)→7.
        assert_eq!(bag_distance(a, b, Hausdorff::Max), 7.0);
        let avg = (1.0 + 10f64.sqrt() + 1.0 + 7.0) / 4.0;
        assert!((bag_distance(a, b, Hausdorff::Avg) - avg).abs() < 1e-12);
        assert_eq!(ranked_distance(a, b, 2), 10f64.sqrt());
        assert_eq!(ranked_distance(b, a, 2), 7.0);
        assert_eq!(ranked_distance(b, a, 9), 7.0);
    }

    #[test]
    fn pairwise_is_symmetric_with_zero_diagonal() {
        let d = two_bags();
        for kind in [Hausdorff::Min, Hausdorff::Max, Hausdorff::Avg] {
            let m = pairwise(&d, kind);
            assert_eq!(m[0], 0.0);
            assert_eq!(m[3], 0.0);
            assert_eq!(m[1], m[2]);
            assert!((m[1] - bag_distance(d.bag(0), d.bag(1), kind)).abs() < 1e-12);
        }
    }

    #[test]
    fn block_kernel_equals_brute_force() {
        // Bags up to 600 instances cross several row and column blocks.
        for (seed, n_bags, max_len, dim) in [(1, 30, 6, 3), (2, 9, 600, 5), (3, 40, 40, 17)] {
            let d = random_bags(seed, n_bags, max_len, dim);
            let n = d.n_bags();
            let min = pairwise(&d, Hausdorff::Min);
            let max = pairwise(&d, Hausdorff::Max);
            let avg = pairwise(&d, Hausdorff::Avg);
            let all: Vec<usize> = (0..n).collect();
            let ranked = ranked_cross(&d, &all, &all, 3);
            for a in 0..n {
                for b in 0..n {
                    let (x, y) = (d.bag(a), d.bag(b));
                    if a != b {
                        // Exact: bit for bit.
                        assert_eq!(min[a * n + b], bag_distance(x, y, Hausdorff::Min));
                        let bound = 1e-9 * 1000.0;
                        assert!(
                            (max[a * n + b] - bag_distance(x, y, Hausdorff::Max)).abs() < bound
                        );
                        assert!(
                            (avg[a * n + b] - bag_distance(x, y, Hausdorff::Avg)).abs() < bound
                        );
                    }
                    assert_eq!(ranked[a * n + b], ranked_distance(x, y, 3));
                }
            }
            // A subset of rows against a subset of columns, in arbitrary order.
            let rows = [n - 1, 0, 2];
            let cols = [3, 1, n - 2];
            let ranked = ranked_cross(&d, &rows, &cols, 1);
            for kind in [Hausdorff::Min, Hausdorff::Max, Hausdorff::Avg] {
                let c = cross(&d, &rows, &cols, kind);
                for (i, &a) in rows.iter().enumerate() {
                    for (j, &b) in cols.iter().enumerate() {
                        let want = bag_distance(d.bag(a), d.bag(b), kind);
                        if kind == Hausdorff::Min {
                            assert_eq!(ranked[i * 3 + j], want);
                            assert_eq!(c[i * 3 + j], want);
                        } else {
                            assert!((c[i * 3 + j] - want).abs() < 1e-9 * 1000.0, "{kind:?}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_bag_set_measures_what_its_copy_measures() {
        // Bags picked in another order from two data sets and mapped as they are read
        // give the distances of the materialised copy, bit for bit, for every kind.
        let d = random_bags(11, 20, 30, 7);
        let e = random_bags(12, 6, 300, 7);
        let map = |x: &[f64], out: &mut [f64]| {
            for (j, (o, v)) in out.iter_mut().zip(x).enumerate() {
                *o = (v - 999.0) / (0.5 + j as f64);
            }
        };
        let (from_d, from_e) = ([7, 0, 19, 3, 12], [5, 1, 2]);
        let mut set = BagSet::picked(&d, &from_d);
        set.extend(from_e.iter().map(|&b| e.bag(b)));
        let set = set.scaled(&map);
        let mut feats = Vec::new();
        let mut starts = vec![0];
        for bag in from_d
            .iter()
            .map(|&b| d.bag(b))
            .chain(from_e.iter().map(|&b| e.bag(b)))
        {
            for x in bag.instances() {
                let mut y = vec![0.0; 7];
                map(x, &mut y);
                feats.extend(y);
            }
            starts.push(feats.len() / 7);
        }
        let ids = (0..8).map(|b| b.to_string()).collect();
        let copy = Dataset::new("copy", 7, feats, starts, ids, None, vec![]).unwrap();
        let all: Vec<usize> = (0..8).collect();
        let (rows, cols) = ([6, 0, 2], [1, 7, 5, 3]);
        for kind in [Hausdorff::Min, Hausdorff::Max, Hausdorff::Avg] {
            assert_eq!(
                pairwise(set.clone(), kind),
                pairwise(&copy, kind),
                "{kind:?}"
            );
            assert_eq!(
                cross(set.clone(), &rows, &cols, kind),
                cross(&copy, &rows, &cols, kind),
                "{kind:?}"
            );
        }
        assert_eq!(
            ranked_cross(set.clone(), &all, &all, 4),
            ranked_cross(&copy, &all, &all, 4)
        );
        // And the exact values are those of the brute force on the copy.
        let min = pairwise(set, Hausdorff::Min);
        assert_eq!(
            min[6 * 8 + 1],
            bag_distance(copy.bag(6), copy.bag(1), Hausdorff::Min)
        );
    }

    #[test]
    fn independent_of_thread_count() {
        let d = random_bags(7, 25, 50, 8);
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let three = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        for kind in [Hausdorff::Min, Hausdorff::Avg] {
            let a = one.install(|| pairwise(&d, kind));
            let b = three.install(|| pairwise(&d, kind));
            assert_eq!(a, b);
        }
    }
}
