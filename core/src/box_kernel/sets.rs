//! The union-of-sets view shared by the paper's algorithms and the fast ones (§5.2):
//! k∧ and k_min range over the sets B(p ∧ q), (p, q) ∈ P × Q; k∨ over the sets B(r),
//! r ∈ P ⊎ Q. A set is "all boxes containing the bounding box of two points" (for B(r)
//! both points are r), so |set| = Π(ℓᵢ+1)(sᵢ−uᵢ+1) and a uniform member has independent
//! uniform corners, lower in 0..=ℓᵢ and upper in uᵢ..=sᵢ.

use rand_core::Rng;

use super::grid::Grid;
use super::sampling::{uniform_below, uniform_between, uniform_unit};
use crate::error::Error;

/// The two bags of one kernel evaluation (already checked against the grid), with their
/// point counts worked out once: the estimators ask for them on every sample, and a
/// division costs more than the rest of a small bag's bookkeeping.
#[derive(Clone, Copy)]
pub(crate) struct BagPoints<'a> {
    pub grid: Grid<'a>,
    pub p: &'a [u32],
    pub q: &'a [u32],
    n_p: usize,
    n_q: usize,
}

impl<'a> BagPoints<'a> {
    pub fn new(grid: Grid<'a>, p: &'a [u32], q: &'a [u32]) -> Self {
        let d = grid.dim();
        BagPoints {
            grid,
            p,
            q,
            n_p: p.len().checked_div(d).unwrap_or(0),
            n_q: q.len().checked_div(d).unwrap_or(0),
        }
    }
    pub fn dim(&self) -> usize {
        self.grid.dim()
    }
    // Checked arithmetic and `get` throughout the estimators: the bags are checked
    // against the grid before any estimate, but the device build must link without a
    // panic path (`the_firmware_links_without_a_panic_path` in tests/firmware.rs), so
    // no index here can panic.
    pub fn n_p(&self) -> usize {
        self.n_p
    }
    pub fn n_q(&self) -> usize {
        self.n_q
    }
    pub fn point_p(&self, i: usize) -> &'a [u32] {
        point(self.p, self.dim(), i)
    }
    pub fn point_q(&self, j: usize) -> &'a [u32] {
        point(self.q, self.dim(), j)
    }
}

/// `s` split at `at` (at most its length): no panic path for the device build.
#[inline]
pub(crate) fn split<T>(s: &mut [T], at: usize) -> (&mut [T], &mut [T]) {
    s.split_at_mut(at.min(s.len()))
}

/// Point `i` of the row-major `rows` with `d` columns (empty past the end).
#[inline]
pub(crate) fn point(rows: &[u32], d: usize, i: usize) -> &[u32] {
    rows.get(i * d..(i + 1) * d).unwrap_or(&[])
}

/// The indices in P and in Q of the points generating a set ([`Count::generators`]).
pub(crate) type Generators = (Option<usize>, Option<usize>);

/// The two points whose bounding box generates a set ([`Count::corners`]).
pub(crate) type Corners<'a> = (&'a [u32], &'a [u32]);

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
    pub fn n_sets(self, bags: &BagPoints<'_>) -> usize {
        if self.over_pairs() {
            bags.n_p() * bags.n_q()
        } else {
            bags.n_p() + bags.n_q()
        }
    }

    /// The indices in P and in Q of the points generating set `i`: they lie in every box
    /// of the set, so the estimators count them without a test.
    #[inline]
    pub fn generators(self, bags: &BagPoints<'_>, i: usize) -> (Option<usize>, Option<usize>) {
        if self.over_pairs() {
            let n_q = bags.n_q();
            (i.checked_div(n_q), i.checked_rem(n_q))
        } else if i < bags.n_p() {
            (Some(i), None)
        } else {
            (None, Some(i - bags.n_p()))
        }
    }

    /// [`Count::generators`] and [`Count::corners`] of set `i` together, with one
    /// division.
    #[inline]
    pub fn members<'a>(self, bags: &BagPoints<'a>, i: usize) -> (Generators, Corners<'a>) {
        if self.over_pairs() {
            let (a, b) = match (i.checked_div(bags.n_q), i.checked_rem(bags.n_q)) {
                (Some(a), Some(b)) => (a, b),
                _ => return ((None, None), (&[], &[])),
            };
            ((Some(a), Some(b)), (bags.point_p(a), bags.point_q(b)))
        } else {
            (self.generators(bags, i), self.corners(bags, i))
        }
    }

    /// The two points whose bounding box generates set `i`.
    #[inline]
    pub fn corners<'a>(self, bags: &BagPoints<'a>, i: usize) -> (&'a [u32], &'a [u32]) {
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

    /// The product as e + (m − 1), e its power of two and m ∈ [1, 2) its mantissa: no
    /// logarithm, increasing in the product, and exact to a relative 2⁻⁵²·(e + 1) (the
    /// fraction keeps the bits the integer part leaves). Products here are ≥ 1, so e ≥ 0.
    #[inline]
    fn packed(mut self) -> f64 {
        self.normalise();
        self.exponent as f64 + (self.mantissa - 1.0)
    }
}

/// A [`LnProduct::packed`] value relative to 2^`top` (`top` an integer ≥ its power of two):
/// m·2^(e − top), and 0 where that is below 2⁻¹⁰²².
#[inline]
fn unpack_relative(packed: f64, top: f64) -> f64 {
    let e = libm::floor(packed);
    let shift = e - top;
    if shift < -1022.0 {
        return 0.0;
    }
    let scale = f64::from_bits(((shift as i64 + 1023) as u64) << 52);
    (1.0 + (packed - e)) * scale
}

/// Independent partial products in [`ln_set_size`]: a multiplication's latency, not its
/// throughput, bounds one running product.
const LANES: usize = 4;

/// Factors each partial product of [`ln_set_size`] takes between two normalisations
/// (each factor ≤ 2⁶⁴, so a partial product stays below 2⁹⁶¹, as in [`LnProduct`]).
const FACTORS_PER_NORMALISATION: usize = 15;

/// Moves the power of two out of each lane's product (exactly) into `exponent`.
#[inline]
fn normalise_lanes(lanes: &mut [f64; LANES], exponent: &mut i64) {
    for lane in lanes.iter_mut() {
        let mut product = LnProduct {
            mantissa: *lane,
            exponent: 0,
            pending: 0,
        };
        product.normalise();
        *exponent += product.exponent;
        *lane = product.mantissa;
    }
}

/// ln |B(x ∧ y)| = Σᵢ ln(ℓᵢ+1) + ln(sᵢ−uᵢ+1) with ℓ = min(x, y), u = max(x, y) (§5.2).
#[inline]
pub(crate) fn ln_set_size(s: &[u32], x: &[u32], y: &[u32]) -> f64 {
    set_size(s, x, y).ln()
}

/// |B(x ∧ y)| as a product kept in a mantissa and a power of two.
#[inline]
fn set_size(s: &[u32], x: &[u32], y: &[u32]) -> LnProduct {
    product(s, x, y, |s, x, y| {
        set_factor(f64::from(s), f64::from(x), f64::from(y))
    })
}

/// (ℓ+1)(s−u+1) for one dimension, from the exact values s, x, y (all < 2³²): exact up
/// to the product's one rounding.
#[inline]
fn set_factor(s: f64, x: f64, y: f64) -> f64 {
    // Plain selects (no NaN here), which map to the vector min and max.
    let (lo, hi) = if x < y { (x, y) } else { (y, x) };
    (lo + 1.0) * (s - hi + 1.0)
}

/// The same factor from x+1, y+1 and s+2 (the floating-point rows of
/// [`cumulative_sizes`]): min(x+1, y+1) = ℓ+1 and (s+2) − (u+1) = s−u+1 exactly, so the
/// product and its rounding are those of [`set_factor`].
#[inline]
fn set_factor_shifted(s2: f64, x1: f64, y1: f64) -> f64 {
    let (lo1, hi1) = if x1 < y1 { (x1, y1) } else { (y1, x1) };
    lo1 * (s2 - hi1)
}

/// Πᵢ factor(sᵢ, xᵢ, yᵢ) for factors in [1, 2⁶⁴]. Dimension i goes to partial product
/// i mod [`LANES`]; the partial products' mantissas (each in [1, 2)) and powers of two are
/// combined exactly at the end, so the relative rounding error stays ≤ (d + LANES)·2⁻⁵³
/// (one more rounding for its logarithm).
/// The lanes are one array multiplied four factors at a time, which the compiler
/// vectorises; moving a power of two out is exact, so when it happens does not change a
/// bit of the result.
#[inline]
fn product<T: Copy>(s: &[T], x: &[T], y: &[T], factor: impl Fn(T, T, T) -> f64) -> LnProduct {
    let mut lanes = [1.0f64; LANES];
    let mut exponent = 0i64;
    let (s4, x4, y4) = (
        s.chunks_exact(LANES),
        x.chunks_exact(LANES),
        y.chunks_exact(LANES),
    );
    let (s_rest, x_rest, y_rest) = (s4.remainder(), x4.remainder(), y4.remainder());
    let mut since_normalised = 0;
    for ((s, x), y) in s4.zip(x4).zip(y4) {
        if let (Some(s), Some(x), Some(y)) = (s.first_chunk(), x.first_chunk(), y.first_chunk()) {
            let (s, x, y): (&[T; LANES], &[T; LANES], &[T; LANES]) = (s, x, y);
            for k in 0..LANES {
                lanes[k] *= factor(s[k], x[k], y[k]);
            }
        }
        since_normalised += 1;
        if since_normalised == FACTORS_PER_NORMALISATION {
            normalise_lanes(&mut lanes, &mut exponent);
            since_normalised = 0;
        }
    }
    for (lane, ((&s, &x), &y)) in lanes.iter_mut().zip(s_rest.iter().zip(x_rest).zip(y_rest)) {
        *lane *= factor(s, x, y);
    }
    normalise_lanes(&mut lanes, &mut exponent);
    let mut total = LnProduct::new();
    total.exponent = exponent;
    for lane in lanes {
        total.mul(lane);
    }
    total
}

/// Floats [`cumulative_sizes`] uses, beyond the running sums, to keep the sets' corners
/// in floating point (s+2, one point of P and all of Q, each plus one): converting each
/// coordinate once per estimate instead of once per pair.
pub(crate) fn float_rows_len(n_q: usize, dim: usize) -> Option<usize> {
    n_q.checked_add(2)?.checked_mul(dim)
}

/// Writes the running sums of the set sizes, relative to the largest power of two among
/// them, into `cum` (its first `n_sets` entries) and returns ln W = ln Σ |setᵢ|, with one
/// logarithm in all: the sizes are kept as [`LnProduct::packed`] values until the largest
/// is known. A size is exact to a relative (d + 4)·2⁻⁵³ + 2⁻⁵²·(e + 1) for
/// |set| < 2^(e+1) (below 10⁻¹² for d = 166 and e < 2,000); sets smaller than the largest
/// by a factor beyond 2⁻¹⁰²² get weight 0, a relative error below n_sets·2⁻¹⁰²² in W.
/// With [`float_rows_len`] floats in `rows`, pair sets are sized from floating-point
/// copies of the points; the sums are the same, bit for bit.
pub(crate) fn cumulative_sizes(
    count: Count,
    bags: &BagPoints<'_>,
    cum: &mut [f64],
    rows: &mut [f64],
    poll: &mut dyn FnMut() -> bool,
) -> Result<f64, Error> {
    let n = count.n_sets(bags).min(cum.len());
    let cum = cum.get_mut(..n).unwrap_or_default();
    let s = bags.grid.upper();
    let mut max = f64::NEG_INFINITY;
    let d = bags.dim().max(1);
    let (p, q) = (bags.p.chunks_exact(d), bags.q.chunks_exact(d));
    let mut fill = |c: &mut f64, size: f64| {
        *c = size;
        max = max.max(size);
    };
    // Set i in `Count::corners`' order: pairs row by row, or P's points then Q's.
    let float_rows = float_rows_len(bags.n_q(), d).and_then(|len| rows.get_mut(..len));
    match float_rows {
        Some(rows) if count.over_pairs() => {
            let (s2, rest) = split(rows, d);
            let (x1, q1) = split(rest, d);
            for (v, &s) in s2.iter_mut().zip(s) {
                *v = f64::from(s) + 2.0;
            }
            for (v, &c) in q1.iter_mut().zip(bags.q) {
                *v = f64::from(c) + 1.0;
            }
            let mut cum = cum.iter_mut();
            for x in p {
                // A row of P × Q is |Q| products over d dimensions; at |P| = |Q| = 1,000
                // the whole set-up takes a few hundred milliseconds.
                if poll() {
                    return Err(Error::Stopped);
                }
                for (v, &c) in x1.iter_mut().zip(x) {
                    *v = f64::from(c) + 1.0;
                }
                // Q's rows first: `zip` then stops without taking a slot of `cum`.
                for (y1, c) in q1.chunks_exact(d).zip(cum.by_ref()) {
                    fill(c, product(s2, x1, y1, set_factor_shifted).packed());
                }
            }
        }
        _ if count.over_pairs() => {
            let n_q = bags.n_q().max(1);
            let pairs = p.flat_map(|x| q.clone().map(move |y| (x, y)));
            for (k, (c, (x, y))) in cum.iter_mut().zip(pairs).enumerate() {
                if k.is_multiple_of(n_q) && poll() {
                    return Err(Error::Stopped);
                }
                fill(c, set_size(s, x, y).packed());
            }
        }
        _ => {
            for (c, r) in cum.iter_mut().zip(p.chain(q)) {
                fill(c, set_size(s, r, r).packed());
            }
        }
    }
    let top = libm::floor(max);
    let mut acc = 0.0;
    for c in cum.iter_mut() {
        acc += unpack_relative(*c, top);
        *c = acc;
    }
    Ok(top * core::f64::consts::LN_2 + libm::log(acc))
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
pub(crate) fn uniform_set<R: Rng + ?Sized>(
    rng: &mut R,
    count: Count,
    bags: &BagPoints<'_>,
) -> usize {
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
const CHUNK: usize = 32;

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
    /// Points of P, and of P and Q together: counted once here, not on every sample.
    n_p: usize,
    n: usize,
}

impl<'s> LazyBox<'s> {
    /// A box over the bags `p` and `q` (row-major, `dim` columns). `cells` must hold
    /// [`LAZY_INTS_PER_DIM`]·`dim` + ⌈(|P| + |Q|)/[`WORD`]⌉ integers; with (|P| + |Q|)·`dim`
    /// more, the points are kept in columns too.
    pub fn new(cells: &'s mut [u32], dim: usize, p: &[u32], q: &[u32]) -> Self {
        let n_p = p.len().checked_div(dim).unwrap_or(0);
        let points = n_p + q.len().checked_div(dim).unwrap_or(0);
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
            n_p,
            n: points,
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

    /// The numbers of points of `p` and of `q` (row-major, `s.len()` columns: the bags
    /// given to [`LazyBox::new`]) in the current box. `own_p` and `own_q` index points known to be in it (the points that
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
        let (n_p, n) = (self.n_p, self.n);
        let point = |i: usize| {
            if i < n_p {
                point(p, d, i)
            } else {
                point(q, d, i - n_p)
            }
        };
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

/// Undecided points in a word up to which a filter pass tests them one by one, when the
/// word is not a full word of the column copy (which is compared in one vector pass).
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
    let width = hi.wrapping_sub(lo);
    for (w, bits) in words.iter_mut().enumerate() {
        if *bits == 0 {
            continue;
        }
        let base = (first + w) * WORD;
        // Bits past the last point are clear already, so the buffer's tail is ignored.
        let len = n.saturating_sub(base).min(WORD);
        let run = column.and_then(|c| c.get(base..base + len));
        if let Some(full) = run.and_then(|run| run.first_chunk()) {
            // A full word of the column: compared where it lies, in one vector pass.
            *bits &= inside_mask(full, lo, hi);
            continue;
        }
        if bits.count_ones() <= SPARSE {
            // Few points left: test them one by one (branch-free but for the loop).
            let (mut rest, mut outside) = (*bits, 0);
            while rest != 0 {
                let k = rest.trailing_zeros();
                rest &= rest - 1;
                let v = coordinate(base + k as usize);
                outside |= u32::from(v.wrapping_sub(lo) > width) << k;
            }
            *bits &= !outside;
            continue;
        }
        match run {
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
    // lo ≤ v ≤ hi ⇔ v − lo ≤ hi − lo in wrapping arithmetic (lo ≤ hi): one compare.
    let width = hi.wrapping_sub(lo);
    let mut mask = 0;
    for (k, &v) in v.iter().enumerate() {
        mask |= u32::from(v.wrapping_sub(lo) <= width) << k;
    }
    mask
}

/// Bit k: `r[k]` lies outside [`a[k]`, `b[k]`] (`a[k] ≤ b[k]`: one wrapping compare, as
/// in [`inside_mask`]). One branch-free pass: testing "all inside" first would read the
/// chunk twice whenever it is not, which in the scans of the points near the set's two is
/// often.
#[inline]
fn outside_mask(r: &[u32; CHUNK], a: &[u32; CHUNK], b: &[u32; CHUNK]) -> u32 {
    let mut mask = 0;
    for k in 0..CHUNK {
        mask |= u32::from(r[k].wrapping_sub(a[k]) > b[k].wrapping_sub(a[k])) << k;
    }
    mask
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    /// The floating-point rows give the same running sums and ln W, bit for bit, as the
    /// integer path, for every count and on grids near 2³² too; and each set's size agrees
    /// with a plain sum of logarithms.
    #[test]
    fn float_rows_size_the_sets_bit_for_bit() {
        let mut gen = Xoshiro256PlusPlus::seed_from_u64(5);
        let mut below = |n: u64| gen.next_u64() % n;
        for case in 0..300 {
            let d = [1, 3, 4, 5, 17, 60, 61][case % 7];
            let huge = case % 3 == 0;
            let s: Vec<u32> = (0..d)
                .map(|_| {
                    if huge {
                        u32::MAX - 1 - below(1000) as u32
                    } else {
                        1 + below(50) as u32
                    }
                })
                .collect();
            let (n_p, n_q) = (1 + below(7) as usize, 1 + below(7) as usize);
            let mut bag = |n: usize| -> Vec<u32> {
                (0..n * d)
                    .map(|k| below(u64::from(s[k % d]) + 1) as u32)
                    .collect()
            };
            let (p, q) = (bag(n_p), bag(n_q));
            let grid = Grid::new(&s).unwrap();
            let bags = BagPoints::new(grid, &p, &q);
            for count in [Count::And, Count::Min, Count::Or] {
                let n = count.n_sets(&bags);
                let (mut plain, mut fast) = (vec![0.0; n], vec![0.0; n]);
                let mut rows = vec![0.0; float_rows_len(n_q, d).unwrap()];
                let ln_w =
                    cumulative_sizes(count, &bags, &mut plain, &mut [], &mut || false).unwrap();
                let ln_w_rows =
                    cumulative_sizes(count, &bags, &mut fast, &mut rows, &mut || false).unwrap();
                assert_eq!(ln_w.to_bits(), ln_w_rows.to_bits(), "case {case}");
                assert!(plain
                    .iter()
                    .zip(&fast)
                    .all(|(a, b)| a.to_bits() == b.to_bits()));
                let sizes: Vec<f64> = (0..n)
                    .map(|i| {
                        let (x, y) = count.corners(&bags, i);
                        (0..d)
                            .map(|t| {
                                let (lo, hi) = (x[t].min(y[t]), x[t].max(y[t]));
                                (f64::from(lo) + 1.0).ln() + (f64::from(s[t] - hi) + 1.0).ln()
                            })
                            .sum()
                    })
                    .collect();
                for (i, (x, y)) in (0..n).map(|i| (i, count.corners(&bags, i))) {
                    let lanes = ln_set_size(&s, x, y);
                    assert!((lanes - sizes[i]).abs() <= 1e-12 * sizes[i].abs().max(1.0));
                }
                let max = sizes.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let w = max + sizes.iter().map(|v| (v - max).exp()).sum::<f64>().ln();
                assert!(
                    (ln_w - w).abs() <= 1e-12 * w.abs().max(1.0),
                    "{ln_w} vs {w}"
                );
            }
        }
    }

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
