//! The union-of-sets view shared by the paper's algorithms and the fast ones (§5.2):
//! k∧ and k_min range over the sets B(p ∧ q), (p, q) ∈ P × Q; k∨ over the sets B(r),
//! r ∈ P ⊎ Q. A set is "all boxes containing the bounding box of two points" (for B(r)
//! both points are r), so |set| = Π(ℓᵢ+1)(sᵢ−uᵢ+1) and a uniform member has independent
//! uniform corners, lower in 0..=ℓᵢ and upper in uᵢ..=sᵢ.

use rand_core::Rng;

use super::grid::Grid;
use super::sampling::{uniform_below, uniform_between, uniform_unit};

/// The two bags of one kernel evaluation (already checked against the grid).
#[derive(Clone, Copy)]
pub(crate) struct Bags<'a> {
    pub grid: Grid<'a>,
    pub p: &'a [u32],
    pub q: &'a [u32],
}

impl<'a> Bags<'a> {
    pub fn dim(&self) -> usize {
        self.grid.dim()
    }
    // Checked arithmetic and `get` throughout the estimators: the bags are checked
    // against the grid before any estimate, but the device build must link without a
    // panic path (issue #20), so no index here can panic.
    pub fn n_p(&self) -> usize {
        self.p.len().checked_div(self.dim()).unwrap_or(0)
    }
    pub fn n_q(&self) -> usize {
        self.q.len().checked_div(self.dim()).unwrap_or(0)
    }
    pub fn point_p(&self, i: usize) -> &'a [u32] {
        point(self.p, self.dim(), i)
    }
    pub fn point_q(&self, j: usize) -> &'a [u32] {
        point(self.q, self.dim(), j)
    }
}

/// `s` split at `at` (at most its length).
#[inline]
fn split(s: &mut [u32], at: usize) -> (&mut [u32], &mut [u32]) {
    s.split_at_mut(at.min(s.len()))
}

/// Point `i` of the row-major `rows` with `d` columns (empty past the end).
#[inline]
pub(crate) fn point(rows: &[u32], d: usize, i: usize) -> &[u32] {
    rows.get(i * d..(i + 1) * d).unwrap_or(&[])
}

/// What a kernel sums over the boxes b: [|P_b|≥1][|Q_b|≥1] (k∧), [|P_b|+|Q_b|≥1] (k∨)
/// or min(|P_b|, |Q_b|) (k_min).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Count {
    And,
    Or,
    Min,
}

impl Count {
    /// Whether the union ranges over point pairs (k∧, k_min) or single points (k∨).
    pub fn over_pairs(self) -> bool {
        self != Count::Or
    }

    /// Number of sets in the union.
    pub fn n_sets(self, bags: &Bags<'_>) -> usize {
        if self.over_pairs() {
            bags.n_p() * bags.n_q()
        } else {
            bags.n_p() + bags.n_q()
        }
    }

    /// The indices in P and in Q of the points generating set `i`: they lie in every box
    /// of the set, so the estimators count them without a test.
    #[inline]
    pub fn generators(self, bags: &Bags<'_>, i: usize) -> (Option<usize>, Option<usize>) {
        if self.over_pairs() {
            let n_q = bags.n_q();
            (i.checked_div(n_q), i.checked_rem(n_q))
        } else if i < bags.n_p() {
            (Some(i), None)
        } else {
            (None, Some(i - bags.n_p()))
        }
    }

    /// The two points whose bounding box generates set `i`.
    #[inline]
    pub fn corners<'a>(self, bags: &Bags<'a>, i: usize) -> (&'a [u32], &'a [u32]) {
        if self.over_pairs() {
            let n_q = bags.n_q();
            let (a, b) = (
                i.checked_div(n_q).unwrap_or(0),
                i.checked_rem(n_q).unwrap_or(0),
            );
            (bags.point_p(a), bags.point_q(b))
        } else {
            let r = if i < bags.n_p() {
                bags.point_p(i)
            } else {
                bags.point_q(i - bags.n_p())
            };
            (r, r)
        }
    }
}

/// ln of a product of factors ≥ 1, kept as a mantissa and a power of two so that no
/// partial product overflows: the power of two is moved out exactly every 15 factors
/// (each factor ≤ 2⁶⁴, so a partial product stays below 2⁹⁶¹). One `ln` per product;
/// relative rounding error ≤ (number of factors + 1)·2⁻⁵³.
pub(crate) struct LnProduct {
    mantissa: f64,
    exponent: i64,
    pending: u32,
}

impl LnProduct {
    #[inline]
    pub fn new() -> Self {
        LnProduct {
            mantissa: 1.0,
            exponent: 0,
            pending: 0,
        }
    }

    #[inline]
    pub fn mul(&mut self, factor: f64) {
        self.mantissa *= factor;
        self.pending += 1;
        if self.pending == 15 {
            self.normalise();
        }
    }

    #[inline]
    fn normalise(&mut self) {
        const EXP_MASK: u64 = 0x7ff << 52;
        let bits = self.mantissa.to_bits();
        self.exponent += ((bits & EXP_MASK) >> 52) as i64 - 1023;
        self.mantissa = f64::from_bits((bits & !EXP_MASK) | (1023 << 52));
        self.pending = 0;
    }

    #[inline]
    pub fn ln(&self) -> f64 {
        self.exponent as f64 * core::f64::consts::LN_2 + libm::log(self.mantissa)
    }
}

/// Independent partial products in [`ln_set_size`]: a multiplication's latency, not its
/// throughput, bounds one running product.
const LANES: usize = 4;

/// ln |B(x ∧ y)| = Σᵢ ln(ℓᵢ+1) + ln(sᵢ−uᵢ+1) with ℓ = min(x, y), u = max(x, y) (§5.2).
/// Dimension i goes to partial product i mod [`LANES`]; the partial products' mantissas
/// (each in [1, 2)) and powers of two are combined exactly at the end, so the relative
/// rounding error stays ≤ (d + LANES + 1)·2⁻⁵³.
#[inline]
pub(crate) fn ln_set_size(s: &[u32], x: &[u32], y: &[u32]) -> f64 {
    let mut lanes = [
        LnProduct::new(),
        LnProduct::new(),
        LnProduct::new(),
        LnProduct::new(),
    ];
    let factor = |s: u32, x: u32, y: u32| {
        let (lo, hi) = if x <= y { (x, y) } else { (y, x) };
        (f64::from(lo) + 1.0) * (f64::from(s - hi) + 1.0)
    };
    let (s4, x4, y4) = (
        s.chunks_exact(LANES),
        x.chunks_exact(LANES),
        y.chunks_exact(LANES),
    );
    let (s_rest, x_rest, y_rest) = (s4.remainder(), x4.remainder(), y4.remainder());
    for ((s, x), y) in s4.zip(x4).zip(y4) {
        for (lane, ((&s, &x), &y)) in lanes.iter_mut().zip(s.iter().zip(x).zip(y)) {
            lane.mul(factor(s, x, y));
        }
    }
    for (lane, ((&s, &x), &y)) in lanes.iter_mut().zip(s_rest.iter().zip(x_rest).zip(y_rest)) {
        lane.mul(factor(s, x, y));
    }
    let mut total = LnProduct::new();
    for lane in &mut lanes {
        lane.normalise();
        total.exponent += lane.exponent;
        total.mul(lane.mantissa);
    }
    total.ln()
}

/// Writes the running sums of the set sizes, relative to the largest, into `cum` (its
/// first `n_sets` entries) and returns ln W = ln Σ |setᵢ|. Sets smaller than the largest
/// by a factor beyond e⁻⁷⁴⁵ get weight 0: a relative error below n_sets·e⁻⁷⁴⁵ in W.
pub(crate) fn cumulative_sizes(count: Count, bags: &Bags<'_>, cum: &mut [f64]) -> f64 {
    let n = count.n_sets(bags).min(cum.len());
    let cum = cum.get_mut(..n).unwrap_or_default();
    let s = bags.grid.upper();
    let mut max = f64::NEG_INFINITY;
    for (i, c) in cum.iter_mut().enumerate() {
        let (x, y) = count.corners(bags, i);
        *c = ln_set_size(s, x, y);
        max = max.max(*c);
    }
    let mut acc = 0.0;
    for c in cum.iter_mut() {
        acc += libm::exp(*c - max);
        *c = acc;
    }
    max + libm::log(acc)
}

/// Draws a set index with probability |setᵢ| / W from the running sums.
#[inline]
pub(crate) fn pick_set<R: Rng + ?Sized>(rng: &mut R, cum: &[f64]) -> usize {
    let total = cum.last().copied().unwrap_or(0.0);
    let u = uniform_unit(rng) * total;
    cum.partition_point(|&c| c <= u)
        .min(cum.len().saturating_sub(1))
}

/// Draws a set index uniformly (the paper's trial step, Table 3 lines 12–13, Table 4
/// line 12): for pairs, p′ uniform in P and q′ uniform in Q.
#[inline]
pub(crate) fn uniform_set<R: Rng + ?Sized>(rng: &mut R, count: Count, bags: &Bags<'_>) -> usize {
    if count.over_pairs() {
        let a = uniform_below(rng, bags.n_p() as u64) as usize;
        let b = uniform_below(rng, bags.n_q() as u64) as usize;
        a * bags.n_q() + b
    } else {
        uniform_below(rng, (bags.n_p() + bags.n_q()) as u64) as usize
    }
}

/// Integers of caller scratch a [`LazyBox`] needs per dimension (the two bounds a point
/// is compared with, and the box number at which each corner was drawn); a [`LazyBox`]
/// also takes one per [`WORD`] points of the two bags (a bit each: the points still
/// undecided) and, if given, one per coordinate of the two bags to keep them column by
/// column too.
pub(crate) const LAZY_INTS_PER_DIM: usize = 4;

/// Dimensions a [`LazyBox`] scan compares at once (a multiple of the SIMD width).
const CHUNK: usize = 16;

/// A box drawn uniformly from a set, with its corners drawn lazily: a coordinate is
/// drawn the first time a containment test needs it. The corners are independent, so
/// the tests see exactly the distribution of a fully drawn box, at a fraction of the
/// draws in high dimension — and for the same reason the dimensions may be tested in any
/// order, even one chosen from earlier tests of the same box: a point's indicator is a
/// function of the full box, and a corner drawn late is still uniform and independent
/// of everything seen before.
///
/// Per dimension t the box keeps bounds [aₜ, bₜ]: the drawn corners, or while a corner
/// is not drawn the set's bounding box ℓₜ = min(xₜ, yₜ), uₜ = max(xₜ, yₜ), which every box
/// of the set contains. A point within [aₜ, bₜ] in every dimension is in the box; where
/// it is outside, either the corner there is drawn (excluded) or it is drawn now.
///
/// [`LazyBox::count`] decides all points of both bags, and §5.2's point-in-box test
/// dominates every estimator, so it avoids testing most points one by one: a box is
/// tight in a few dimensions, which exclude most points. When a point's test finds the
/// dimension t that excludes it, both corners of t are drawn and every undecided point
/// is filtered on its coordinate t alone, in one branch-free pass; only the survivors
/// (the points near the set's two) are tested in full, [`CHUNK`] dimensions at a time,
/// branch-free, which the compiler vectorises. Given the scratch, the points are copied
/// once per estimate into columns, so that a filter pass reads one small array instead
/// of one cache line per point; without it the pass reads the rows. The two make the
/// same decisions and draws, so a device short of memory reproduces the host's
/// estimates bit for bit.
pub(crate) struct LazyBox<'s> {
    a: &'s mut [u32],
    b: &'s mut [u32],
    lower_stamp: &'s mut [u32],
    upper_stamp: &'s mut [u32],
    undecided: &'s mut [u32],
    columns: Option<&'s mut [u32]>,
    stamp: u32,
}

impl<'s> LazyBox<'s> {
    /// A box over the bags `p` and `q` (row-major, `dim` columns). `cells` must hold
    /// [`LAZY_INTS_PER_DIM`]·`dim` + ⌈(|P| + |Q|)/[`WORD`]⌉ integers; with (|P| + |Q|)·`dim`
    /// more, the points are kept in columns too.
    pub fn new(cells: &'s mut [u32], dim: usize, p: &[u32], q: &[u32]) -> Self {
        let points = (p.len() + q.len()).checked_div(dim).unwrap_or(0);
        let need = LAZY_INTS_PER_DIM * dim + points.div_ceil(WORD);
        let (cells, spare) = cells.split_at_mut(need.min(cells.len()));
        cells.fill(0);
        let (a, rest) = split(cells, dim);
        let (b, rest) = split(rest, dim);
        let (lower_stamp, rest) = split(rest, dim);
        let (upper_stamp, undecided) = split(rest, dim);
        let mut columns = spare.get_mut(..points * dim);
        if let Some(columns) = columns.as_deref_mut() {
            let rows = p.chunks_exact(dim.max(1)).chain(q.chunks_exact(dim.max(1)));
            for (i, row) in rows.enumerate() {
                for (t, &v) in row.iter().enumerate() {
                    if let Some(c) = columns.get_mut(t * points + i) {
                        *c = v;
                    }
                }
            }
        }
        LazyBox {
            a,
            b,
            lower_stamp,
            upper_stamp,
            undecided,
            columns,
            stamp: 0,
        }
    }

    /// Forgets the current box: the next tests see a fresh one, uniform over the boxes
    /// containing the bounding box of `x` and `y`.
    #[inline]
    pub fn next_box(&mut self, x: &[u32], y: &[u32]) {
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.lower_stamp.fill(0);
            self.upper_stamp.fill(0);
            self.stamp = 1;
        }
        for (((a, b), &x), &y) in self.a.iter_mut().zip(self.b.iter_mut()).zip(x).zip(y) {
            *a = x.min(y);
            *b = x.max(y);
        }
    }

    /// The numbers of points of `p` and of `q` (row-major, `s.len()` columns) in the
    /// current box. `own_p` and `own_q` index points known to be in it (the points that
    /// generate the set), which are counted without a test.
    pub fn count<R: Rng + ?Sized>(
        &mut self,
        rng: &mut R,
        s: &[u32],
        p: &[u32],
        q: &[u32],
        own: (Option<usize>, Option<usize>),
    ) -> (u64, u64) {
        let d = s.len();
        let n_p = p.len().checked_div(d).unwrap_or(0);
        let point = |i: usize| {
            if i < n_p {
                point(p, d, i)
            } else {
                point(q, d, i - n_p)
            }
        };
        let n = n_p + q.len().checked_div(d).unwrap_or(0);
        // Bit i of `undecided` (word i / 32): point i (P first, then Q) is not decided.
        let n_words = n.div_ceil(WORD).min(self.undecided.len());
        let undecided = self.undecided.get_mut(..n_words).unwrap_or_default();
        undecided.fill(u32::MAX);
        if let (false, Some(last)) = (n.is_multiple_of(WORD), undecided.get_mut(n / WORD)) {
            *last = (1 << (n % WORD)) - 1;
        }
        let own = [own.0, own.1.map(|j| n_p + j)];
        for i in own.into_iter().flatten() {
            if let Some(w) = undecided.get_mut(i / WORD) {
                *w &= !(1 << (i % WORD));
            }
        }
        let (mut in_p, mut in_q) = (u64::from(own[0].is_some()), u64::from(own[1].is_some()));
        let mut word = 0;
        while let Some(&bits) = self.undecided.get(word).filter(|_| word < n_words) {
            if bits == 0 {
                word += 1;
                continue;
            }
            let i = word * WORD + bits.trailing_zeros() as usize;
            if let Some(w) = self.undecided.get_mut(word) {
                *w = bits & (bits - 1);
            }
            match self.excluding_dimension(rng, s, point(i)) {
                None if i < n_p => in_p += 1,
                None => in_q += 1,
                Some(t) => {
                    let (lo, hi) = self.draw_both(rng, s, t);
                    let undecided = self.undecided.get_mut(word..n_words).unwrap_or_default();
                    match &self.columns {
                        Some(columns) => {
                            let column = columns.get(t * n..(t + 1) * n).unwrap_or_default();
                            keep_inside(undecided, word, n, lo, hi, Some(column), |j| {
                                column.get(j).copied().unwrap_or(0)
                            })
                        }
                        None => keep_inside(undecided, word, n, lo, hi, None, |j| {
                            point(j).get(t).copied().unwrap_or(0)
                        }),
                    }
                }
            }
        }
        (in_p, in_q)
    }

    /// The first dimension in which the current box excludes point `r`, or `None` if it
    /// contains it.
    #[inline]
    fn excluding_dimension<R: Rng + ?Sized>(
        &mut self,
        rng: &mut R,
        s_all: &[u32],
        r_all: &[u32],
    ) -> Option<usize> {
        let d = r_all.len();
        for base in (0..d).step_by(CHUNK) {
            let end = (base + CHUNK).min(d);
            // Bit k: coordinate base + k lies outside [a, b].
            let (r, a, b) = (
                r_all.get(base..end).unwrap_or_default(),
                self.a.get(base..end).unwrap_or_default(),
                self.b.get(base..end).unwrap_or_default(),
            );
            let mut outside = match (r.first_chunk(), a.first_chunk(), b.first_chunk()) {
                // Most chunks of most tests are inside: check that first, cheaply.
                (Some(r), Some(a), Some(b)) if all_inside(r, a, b) => 0,
                (Some(r), Some(a), Some(b)) => outside_mask(r, a, b),
                _ => r
                    .iter()
                    .zip(a)
                    .zip(b)
                    .enumerate()
                    .fold(0, |mask, (k, ((&v, &a), &b))| {
                        mask | u32::from((v < a) | (v > b)) << k
                    }),
            };
            while outside != 0 {
                let k = outside.trailing_zeros() as usize;
                outside &= outside - 1;
                let t = base + k;
                let v = r.get(k).copied().unwrap_or(0);
                if self.excludes(rng, s_all, t, v) {
                    return Some(t);
                }
            }
        }
        None
    }

    /// For `v` outside [aₜ, bₜ]: whether the box excludes it, drawing the corner on that
    /// side if it is not drawn yet (uniform in 0..=ℓₜ below, uₜ..=sₜ above).
    #[inline]
    fn excludes<R: Rng + ?Sized>(&mut self, rng: &mut R, s: &[u32], t: usize, v: u32) -> bool {
        if v < self.lower(t) {
            self.draw_lower(rng, t);
            v < self.lower(t)
        } else {
            self.draw_upper(rng, s, t);
            v > self.upper(t)
        }
    }

    /// aₜ.
    #[inline]
    fn lower(&self, t: usize) -> u32 {
        self.a.get(t).copied().unwrap_or(0)
    }

    /// bₜ.
    #[inline]
    fn upper(&self, t: usize) -> u32 {
        self.b.get(t).copied().unwrap_or(0)
    }

    /// Draws both corners in dimension `t` (those not drawn yet) and returns them.
    #[inline]
    fn draw_both<R: Rng + ?Sized>(&mut self, rng: &mut R, s: &[u32], t: usize) -> (u32, u32) {
        self.draw_lower(rng, t);
        self.draw_upper(rng, s, t);
        (self.lower(t), self.upper(t))
    }

    #[inline]
    fn draw_lower<R: Rng + ?Sized>(&mut self, rng: &mut R, t: usize) {
        let now = self.stamp;
        if let (Some(stamp), Some(a)) = (self.lower_stamp.get_mut(t), self.a.get_mut(t)) {
            if *stamp != now {
                *a = uniform_between(rng, 0, *a);
                *stamp = now;
            }
        }
    }

    #[inline]
    fn draw_upper<R: Rng + ?Sized>(&mut self, rng: &mut R, s: &[u32], t: usize) {
        let now = self.stamp;
        if let (Some(stamp), Some(b)) = (self.upper_stamp.get_mut(t), self.b.get_mut(t)) {
            if *stamp != now {
                *b = uniform_between(rng, *b, s.get(t).copied().unwrap_or(*b));
                *stamp = now;
            }
        }
    }
}

/// Undecided points in a word below which a filter pass tests them one by one.
const SPARSE: u32 = 6;

/// Bits per word of the undecided set.
pub(crate) const WORD: usize = 32;

/// Clears in `words` (the words of the undecided set of `n` points from word `first`
/// on) the points whose coordinate `coordinate(j)` lies outside [lo, hi]; with `column`
/// (the coordinates of all n points in order) a full word's values are copied from it
/// with one range check instead of one per point.
#[inline]
fn keep_inside(
    words: &mut [u32],
    first: usize,
    n: usize,
    lo: u32,
    hi: u32,
    column: Option<&[u32]>,
    coordinate: impl Fn(usize) -> u32,
) {
    let mut values = [0u32; WORD];
    for (w, bits) in words.iter_mut().enumerate() {
        if *bits == 0 {
            continue;
        }
        let base = (first + w) * WORD;
        if bits.count_ones() <= SPARSE {
            // Few points left: test them one by one.
            let mut rest = *bits;
            while rest != 0 {
                let k = rest.trailing_zeros();
                rest &= rest - 1;
                let v = coordinate(base + k as usize);
                if v < lo || v > hi {
                    *bits &= !(1 << k);
                }
            }
            continue;
        }
        // Bits past the last point are clear already, so the buffer's tail is ignored.
        let len = n.saturating_sub(base).min(WORD);
        match column.and_then(|c| c.get(base..base + len)) {
            Some(run) => {
                for (value, &v) in values.iter_mut().zip(run) {
                    *value = v;
                }
            }
            None => {
                for (k, value) in values.iter_mut().enumerate().take(len) {
                    *value = coordinate(base + k);
                }
            }
        }
        *bits &= inside_mask(&values, lo, hi);
    }
}

/// Bit k: `lo ≤ v[k] ≤ hi`. Fixed length and branch-free, so that it compiles to vector
/// compares.
#[inline]
fn inside_mask(v: &[u32; WORD], lo: u32, hi: u32) -> u32 {
    let mut mask = 0;
    for (k, &v) in v.iter().enumerate() {
        mask |= u32::from(lo <= v && v <= hi) << k;
    }
    mask
}

/// Bit k: `r[k]` lies outside [`a[k]`, `b[k]`]. As [`inside_mask`].
#[inline]
fn outside_mask(r: &[u32; CHUNK], a: &[u32; CHUNK], b: &[u32; CHUNK]) -> u32 {
    let mut mask = 0;
    for k in 0..CHUNK {
        mask |= u32::from((r[k] < a[k]) | (r[k] > b[k])) << k;
    }
    mask
}

/// Whether `a[k] ≤ r[k] ≤ b[k]` for every k: an or-reduction, which vectorises.
#[inline]
fn all_inside(r: &[u32; CHUNK], a: &[u32; CHUNK], b: &[u32; CHUNK]) -> bool {
    let mut outside = false;
    for k in 0..CHUNK {
        outside |= (r[k] < a[k]) | (r[k] > b[k]);
    }
    !outside
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    /// Whether `r` lies within the box's final bounds in every dimension: the drawn
    /// corners, or the set's bounding box where a corner was never drawn.
    fn within_bounds(lazy: &LazyBox<'_>, r: &[u32]) -> bool {
        r.iter()
            .enumerate()
            .all(|(t, &v)| lazy.a[t] <= v && v <= lazy.b[t])
    }

    /// Over random bags that span several scan chunks and point words, `count` agrees
    /// with a plain test of every point against the box it drew (a point outside the
    /// set's bounding box in a dimension whose corner was never drawn must have been
    /// excluded elsewhere, so the final bounds decide it), and the column copy changes
    /// neither the counts nor the draws.
    #[test]
    fn count_agrees_with_the_drawn_box_with_and_without_columns() {
        let mut gen = Xoshiro256PlusPlus::seed_from_u64(11);
        let mut below = |n: u64| (gen.next_u64() % n) as usize;
        for case in 0..300 {
            let d = [1, 3, 15, 16, 17, 33, 40][case % 7];
            let s: Vec<u32> = (0..d).map(|_| 1 + below(12) as u32).collect();
            let n_p = 1 + below(80);
            let n_q = 1 + below(80);
            let bag = |n: usize, below: &mut dyn FnMut(u64) -> usize| -> Vec<u32> {
                (0..n * d)
                    .map(|k| below(u64::from(s[k % d]) + 1) as u32)
                    .collect()
            };
            let p = bag(n_p, &mut below);
            let q = bag(n_q, &mut below);
            let points = n_p + n_q;
            let short = LAZY_INTS_PER_DIM * d + points.div_ceil(WORD);
            let mut rows_cells = vec![0u32; short];
            let mut cols_cells = vec![0u32; short + points * d];
            let mut rows = LazyBox::new(&mut rows_cells, d, &p, &q);
            let mut cols = LazyBox::new(&mut cols_cells, d, &p, &q);
            assert!(rows.columns.is_none() && cols.columns.is_some());
            let mut rng_rows = Xoshiro256PlusPlus::seed_from_u64(case as u64);
            let mut rng_cols = Xoshiro256PlusPlus::seed_from_u64(case as u64);
            for _ in 0..20 {
                let (i, j) = (below(n_p as u64), below(n_q as u64));
                let (x, y) = (&p[i * d..(i + 1) * d], &q[j * d..(j + 1) * d]);
                rows.next_box(x, y);
                cols.next_box(x, y);
                let own = (Some(i), Some(j));
                let counted = rows.count(&mut rng_rows, &s, &p, &q, own);
                assert_eq!(cols.count(&mut rng_cols, &s, &p, &q, own), counted);
                assert_eq!(rng_rows.next_u64(), rng_cols.next_u64());
                let plain = |bag: &[u32]| {
                    bag.chunks_exact(d)
                        .filter(|r| within_bounds(&rows, r))
                        .count() as u64
                };
                assert_eq!(counted, (plain(&p), plain(&q)), "case {case}");
                assert!(counted.0 >= 1 && counted.1 >= 1);
            }
        }
    }
}
