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
    pub fn n_p(&self) -> usize {
        self.p.len() / self.dim()
    }
    pub fn n_q(&self) -> usize {
        self.q.len() / self.dim()
    }
    pub fn point_p(&self, i: usize) -> &'a [u32] {
        let d = self.dim();
        &self.p[i * d..(i + 1) * d]
    }
    pub fn point_q(&self, j: usize) -> &'a [u32] {
        let d = self.dim();
        &self.q[j * d..(j + 1) * d]
    }
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

    /// The two points whose bounding box generates set `i`.
    pub fn corners<'a>(self, bags: &Bags<'a>, i: usize) -> (&'a [u32], &'a [u32]) {
        if self.over_pairs() {
            let (a, b) = (i / bags.n_q(), i % bags.n_q());
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

/// ln |B(x ∧ y)| = Σᵢ ln(ℓᵢ+1) + ln(sᵢ−uᵢ+1) with ℓ = min(x, y), u = max(x, y) (§5.2).
#[inline]
pub(crate) fn ln_set_size(s: &[u32], x: &[u32], y: &[u32]) -> f64 {
    let mut prod = LnProduct::new();
    for ((&s, &x), &y) in s.iter().zip(x).zip(y) {
        let (lo, hi) = if x <= y { (x, y) } else { (y, x) };
        prod.mul((f64::from(lo) + 1.0) * (f64::from(s - hi) + 1.0));
    }
    prod.ln()
}

/// Writes the running sums of the set sizes, relative to the largest, into `cum` (its
/// first `n_sets` entries) and returns ln W = ln Σ |setᵢ|. Sets smaller than the largest
/// by a factor beyond e⁻⁷⁴⁵ get weight 0: a relative error below n_sets·e⁻⁷⁴⁵ in W.
pub(crate) fn cumulative_sizes(count: Count, bags: &Bags<'_>, cum: &mut [f64]) -> f64 {
    let n = count.n_sets(bags);
    let cum = &mut cum[..n];
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
    let total = cum[cum.len() - 1];
    let u = uniform_unit(rng) * total;
    cum.partition_point(|&c| c <= u).min(cum.len() - 1)
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

/// A box drawn uniformly from a set, with its corners drawn lazily: a coordinate is
/// drawn the first time a containment test needs it. The corners are independent, so
/// the tests see exactly the distribution of a fully drawn box, at a fraction of the
/// draws in high dimension. Works in 4 integers per dimension of caller scratch:
/// lower corner, upper corner, and the box number at which each was drawn.
pub(crate) struct LazyBox<'s> {
    cells: &'s mut [u32],
    stamp: u32,
}

impl<'s> LazyBox<'s> {
    /// `cells` must hold at least 4·d integers.
    pub fn new(cells: &'s mut [u32]) -> Self {
        cells.fill(0);
        LazyBox { cells, stamp: 0 }
    }

    /// Forgets the current box: the next tests draw a fresh one.
    #[inline]
    pub fn next_box(&mut self) {
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.cells.fill(0);
            self.stamp = 1;
        }
    }

    /// Whether point `r` lies in the current box, which is uniform over the boxes
    /// containing the bounding box of `x` and `y`.
    #[inline]
    pub fn contains<R: Rng + ?Sized>(
        &mut self,
        rng: &mut R,
        s: &[u32],
        x: &[u32],
        y: &[u32],
        r: &[u32],
    ) -> bool {
        let stamp = self.stamp;
        for ((((&s, &x), &y), &v), cell) in s
            .iter()
            .zip(x)
            .zip(y)
            .zip(r)
            .zip(self.cells.chunks_exact_mut(4))
        {
            let (lo, hi) = if x <= y { (x, y) } else { (y, x) };
            if v < lo {
                if cell[2] != stamp {
                    cell[0] = uniform_between(rng, 0, lo);
                    cell[2] = stamp;
                }
                if v < cell[0] {
                    return false;
                }
            } else if v > hi {
                if cell[3] != stamp {
                    cell[1] = uniform_between(rng, hi, s);
                    cell[3] = stamp;
                }
                if v > cell[1] {
                    return false;
                }
            }
        }
        true
    }
}
