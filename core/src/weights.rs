//! Weight matrices in a model's encoding, and their dot products: `f32` values, or
//! Q15/Q7 integers with a per-row scale and, for a projection stage, a per-row
//! accumulator shift ([`crate::fixed`]). Every head that multiplies by stored weights
//! reads them through [`Weights`].
//!
//! Q7 projection weights (format version 2 on) are stored by row pairs ([`Q7Layout`]):
//! rows 2p and 2p + 1 as one `i16` per column, 256·a + b ([`fixed::pack_q7_pair`]), so
//! that a Cortex-M4 multiplies both rows out of one load without unpacking one of them
//! ([`fixed::dot2_q7_paired`]). The values and every sum are the same as row after row.

use crate::container::{le_f32, le_i16, le_u32, Elem, Encoding, F32s, Section, Sections};
use crate::error::Error;
use crate::fixed;

/// A weight matrix in the model's encoding: `rows × cols`, with a per-row scale and
/// accumulator shift when quantised. Row `r` dequantises to `scale[r] · q[r][c]`.
#[derive(Debug, Clone, Copy)]
pub struct Weights<'a> {
    /// The stored values.
    pub values: Section<'a>,
    /// Per-row scale (quantised encodings).
    pub scale: Option<Section<'a>>,
    /// Per-row accumulator shift (quantised projections).
    pub shift: Option<Section<'a>>,
    /// Where a Q7 matrix's values lie (plain rows for every other encoding).
    layout: Q7Layout,
}

/// Where the values of a Q7 matrix's rows lie in its section (`rows × cols` bytes either
/// way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Q7Layout {
    /// Row after row, one `i8` per value.
    Rows,
    /// Rows 2p and 2p + 1 together as one row of little-endian `i16`s, value c being
    /// [`fixed::pack_q7_pair`]`(q[2p][c], q[2p + 1][c])`; an odd last row as in `Rows`.
    /// The projection stage's layout (format version 2 on).
    Pairs,
}

impl<'a> Weights<'a> {
    /// Rows.
    pub fn rows(&self) -> usize {
        self.values.rows
    }

    /// Columns.
    pub fn cols(&self) -> usize {
        self.values.cols
    }

    /// The dequantised value at (`r`, `c`).
    pub fn get(&self, r: usize, c: usize) -> f32 {
        let v = match self.values.elem {
            Elem::I16 | Elem::I8 => self.q_at(r, c) as f32,
            _ => self.values.f32_at(r * self.cols() + c),
        };
        match &self.scale {
            Some(s) => v * s.f32_at(r),
            None => v,
        }
    }

    /// The stored integer at (`r`, `c`) of a quantised matrix, in either [`Q7Layout`] (0
    /// out of range or for f32 values).
    pub fn q_at(&self, r: usize, c: usize) -> i32 {
        let cols = self.cols();
        if r >= self.rows() || c >= cols {
            return 0;
        }
        match self.pair_of(r) {
            Some(p) => {
                let at = 2 * (p * cols + c);
                let h = self.values.bytes.get(at..at + 2).map_or(0, le_i16);
                row_of_pair(fixed::unpack_q7_pair(h), r)
            }
            None => self.values.i32_at(r * cols + c),
        }
    }

    /// `Σ_c |q[r][c]|`: what row `r`'s accumulator shift must cover ([`fixed::safe_shift`]).
    pub fn row_abs_sum(&self, r: usize) -> u64 {
        match self.pair_of(r) {
            Some(p) => self
                .paired_row(p, r)
                .map(|q| u64::from(q.unsigned_abs()))
                .sum(),
            None => self.values.abs_sum(r * self.cols()..(r + 1) * self.cols()),
        }
    }

    /// The pair p holding row `r` when it is stored with its neighbour ([`Q7Layout::Pairs`],
    /// which the parser sets for Q7 only, and not an odd last row).
    fn pair_of(&self, r: usize) -> Option<usize> {
        let p = r / 2;
        (self.layout == Q7Layout::Pairs && 2 * p + 1 < self.rows()).then_some(p)
    }

    /// Row `r`'s stored integers, unpacked from its pair p.
    fn paired_row(&self, p: usize, r: usize) -> impl Iterator<Item = i32> + 'a {
        let pair = self.pair_bytes(p).chunks_exact(2);
        pair.map(move |h| row_of_pair(fixed::unpack_q7_pair(le_i16(h)), r))
    }

    /// The stored bytes of row `r` (empty when out of range or stored in a pair).
    fn row_bytes(&self, r: usize) -> &'a [u8] {
        match self.pair_of(r) {
            Some(_) => &[],
            None => self.values.row_bytes(r),
        }
    }

    /// The stored bytes of the pair p (2·cols bytes; empty when out of range).
    fn pair_bytes(&self, p: usize) -> &'a [u8] {
        let len = 2 * self.cols();
        self.values
            .bytes
            .get(p * len..(p + 1) * len)
            .unwrap_or_default()
    }

    /// `Σ_c w[r][c] · x[c]` in `f32` (weights dequantised by one multiply per row). NaN for
    /// a row stored in a Q7 pair ([`Q7Layout::Pairs`]: a projection's, which takes
    /// quantised inputs, [`Weights::dot_q`]), whose `f32` loop no device path needs and a
    /// small part's flash would carry.
    pub fn dot_f32(&self, r: usize, x: &[f32]) -> f32 {
        let row = self.row_bytes(r);
        let sum: f32 = match self.values.elem {
            Elem::I8 if self.pair_of(r).is_some() => f32::NAN,
            Elem::F32 => row
                .chunks_exact(4)
                .zip(x)
                .map(|(b, &v)| le_f32(b) * v)
                .sum(),
            Elem::I16 => row
                .chunks_exact(2)
                .zip(x)
                .map(|(b, &v)| le_i16(b) as f32 * v)
                .sum(),
            Elem::I8 => row.iter().zip(x).map(|(&b, &v)| b as i8 as f32 * v).sum(),
            Elem::U32 | Elem::U16 | Elem::F64 => 0.0,
        };
        match &self.scale {
            Some(s) => sum * s.f32s().get(r),
            None => sum,
        }
    }

    /// `scale[r] · 2^shift[r] · round(Σ_c q[r][c] · x[c] / 2^shift[r])`: the fixed-point
    /// dot product of a quantised row with quantised inputs, the products summed exactly
    /// ([`fixed::dot_q15`], [`fixed::dot_q7`]) and rounded once ([`fixed::round_shift_fit`]).
    pub fn dot_q(&self, r: usize, x: &[i16]) -> f32 {
        let row = self.row_bytes(r);
        let acc = match (self.values.elem, self.pair_of(r)) {
            // One row of the pair: each stored value unpacked (the device's two-row loop is
            // `dots_q`'s).
            (Elem::I8, Some(p)) => (self.paired_row(p, r).zip(x))
                .map(|(q, &x)| q as i64 * x as i64)
                .sum(),
            (Elem::I16, _) => fixed::dot_q15(row, x),
            (Elem::I8, None) => fixed::dot_q7(row, x),
            (Elem::F32 | Elem::U32 | Elem::U16 | Elem::F64, _) => 0,
        };
        self.rescale(r, acc)
    }

    /// [`Weights::dot_q`] of every row plus its `bias` into `out` (one value per row, over
    /// the shorter of the two; a missing bias adds nothing), equal to `dot_q(k, x) +
    /// bias[k]` row by row. Q15 rows and Q7 row pairs with their shifts go two at a time
    /// ([`fixed::dot2_q15`], [`fixed::dot2_q7_paired`]), sharing each read of the inputs,
    /// straight from the payload with their scales, shifts and biases read in step: the
    /// projection stage's whole per-instance work, kept to the multiply-adds and a few
    /// instructions per row. For a parsed projection's weights (a quantised one has its
    /// scales and shifts, and Q7 rows by pairs); other weights give NaN.
    pub(crate) fn dots_q(&self, x: &[i16], bias: F32s<'_>, out: &mut [f32]) {
        let rows = self.rows().min(out.len());
        let out = out.get_mut(..rows).unwrap_or_default();
        let bias = bias.bytes();
        let b = |k: usize| bias.get(4 * k..4 * k + 4).map_or(0.0, le_f32);
        let (Some(scale), Some(shift)) = (self.scale, self.shift) else {
            out.fill(f32::NAN);
            return;
        };
        let row_len = self.values.elem.size() * self.cols();
        let x = x.get(..self.cols()).unwrap_or(x);
        let (values, scale, shift) = (self.values.bytes, scale.bytes, shift.bytes);
        // One dispatch, then the loop over pairs of rows with the pair's dot product
        // inlined.
        let q7 = match (self.values.elem, self.layout) {
            (Elem::I16, _) => false,
            (Elem::I8, Q7Layout::Pairs) => true,
            _ => {
                out.fill(f32::NAN);
                return;
            }
        };
        let rows_in_step = (values, row_len, scale, shift, bias);
        if q7 {
            pairs_of_rows(rows_in_step, out, |w| fixed::dot2_q7_paired(w, x));
        } else {
            pairs_of_rows(rows_in_step, out, |w| {
                let (w0, w1) = w.split_at_checked(row_len).unwrap_or_default();
                fixed::dot2_q15(w0, w1, x)
            });
        }
        // An odd last row (a folded model's one row) alone, stored as a plain row.
        if rows % 2 == 1 {
            let k = rows - 1;
            let w = values
                .get(k * row_len..(k + 1) * row_len)
                .unwrap_or_default();
            let t = scale.get(4 * k..4 * k + 4).map_or(1.0, le_f32);
            let h = shift.get(4 * k..4 * k + 4).map_or(0, le_u32);
            let acc = if q7 {
                fixed::dot_q7(w, x)
            } else {
                fixed::dot_q15(w, x)
            };
            if let Some(o) = out.get_mut(k) {
                *o = rescale(acc, h, t) + b(k);
            }
        }
    }

    /// Row `r` of Q15 weights with its shift and scale read once, for loops over many
    /// instances ([`Q15Row::dot`] equals [`Weights::dot_q`]`(r, x)`); `None` for other
    /// encodings or a row out of range.
    pub(crate) fn q15_row(&self, r: usize) -> Option<Q15Row<'a>> {
        let scale = self.scale?;
        if r >= self.rows() || self.values.elem != Elem::I16 {
            return None;
        }
        // Straight from the payloads, whose element types the parser checked (a scale is
        // `f32`, a shift `u32`): this runs once per bag.
        let word = |b: &'a [u8]| b.get(4 * r..4 * r + 4).unwrap_or_default();
        Some(Q15Row {
            values: self.row_bytes(r),
            shift: self.shift.map_or(0, |s| le_u32(word(s.bytes))),
            scale: le_f32(word(scale.bytes)),
        })
    }

    /// Row `r`'s exact sum rescaled by its stored shift and scale ([`rescale`]).
    fn rescale(&self, r: usize, acc: i64) -> f32 {
        let shift = self.shift.map_or(0, |s| s.u32_at(r));
        let scale = self.scale.map_or(1.0, |s| s.f32_at(r));
        rescale(acc, shift, scale)
    }

    /// The matrix stored under the tag `values`, with its per-row `scale` and (for
    /// projections) `shift` companions when quantised, checked against `rows × cols` in
    /// `encoding` (Q7 values laid out as `layout` says): f32 weights finite and without
    /// companions; quantised values within the symmetric range, scales positive and
    /// finite, shifts at most 30.
    pub fn from_sections(
        sections: &Sections<'a>,
        encoding: Encoding,
        values: u16,
        scale: u16,
        shift: Option<u16>,
        (rows, cols): (usize, usize),
        layout: Q7Layout,
    ) -> Result<Self, Error> {
        let v = sections.require(values)?;
        v.expect(encoding.elem(), rows, cols)?;
        if encoding == Encoding::F32 {
            v.expect_finite()?;
            if sections.get(scale).is_some() || shift.and_then(|t| sections.get(t)).is_some() {
                return Err(Error::BadModel("f32 weights with a quantisation scale"));
            }
            return Ok(Weights {
                values: v,
                scale: None,
                shift: None,
                layout: Q7Layout::Rows,
            });
        }
        let q_max = encoding.q_max();
        let layout = match encoding {
            Encoding::Q7 => layout,
            Encoding::F32 | Encoding::Q15 => Q7Layout::Rows,
        };
        let q_max = q_max.unsigned_abs();
        let out_of_range = match layout {
            Q7Layout::Rows => v.max_abs(0..v.len()) > q_max,
            // The stored pairs decode to any a in [−128, 127] and b in [−128, 127]; an odd
            // last row is plain.
            Q7Layout::Pairs => pairs_out_of_range(&v, rows, cols, q_max),
        };
        if out_of_range {
            return Err(Error::BadModel(
                "quantised value outside the symmetric range",
            ));
        }
        let s = sections.require(scale)?;
        s.expect(Elem::F32, 1, rows)?;
        if (0..rows).any(|r| !(s.f32_at(r) > 0.0 && s.f32_at(r).is_finite())) {
            return Err(Error::BadModel(
                "quantisation scale not positive and finite",
            ));
        }
        let sh = match shift {
            Some(t) => {
                let sh = sections.require(t)?;
                sh.expect(Elem::U32, 1, rows)?;
                if (0..rows).any(|r| sh.u32_at(r) > 30) {
                    return Err(Error::BadModel("accumulator shift above 30"));
                }
                Some(sh)
            }
            None => None,
        };
        Ok(Weights {
            values: v,
            scale: Some(s),
            shift: sh,
            layout,
        })
    }
}

/// One Q15 row with its shift and scale decoded ([`Weights::q15_row`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Q15Row<'a> {
    values: &'a [u8],
    shift: u32,
    scale: f32,
}

impl Q15Row<'_> {
    /// [`Weights::dot_q`] of this row: the exact sum rounded once and rescaled.
    #[inline(always)]
    pub(crate) fn dot(&self, x: &[i16]) -> f32 {
        rescale(fixed::dot_q15(self.values, x), self.shift, self.scale)
    }

    /// [`Q15Row::dot`] of two inputs, the row read once for both
    /// ([`fixed::dot_q15_twice`]).
    #[inline(always)]
    pub(crate) fn dot_twice(&self, x0: &[i16], x1: &[i16]) -> (f32, f32) {
        let (a0, a1) = fixed::dot_q15_twice(self.values, x0, x1);
        (
            rescale(a0, self.shift, self.scale),
            rescale(a1, self.shift, self.scale),
        )
    }
}

/// Rows two at a time, in step with their outputs, scales, shifts and biases (`bias`
/// may be short: missing biases add nothing): `out[2p]`, `out[2p + 1]` get the rescaled
/// sums `pair_dot` gives for the 2·`row_len` bytes of pair p, plus their biases.
#[inline(always)]
fn pairs_of_rows(
    (values, row_len, scale, shift, bias): (&[u8], usize, &[u8], &[u8], &[u8]),
    out: &mut [f32],
    pair_dot: impl Fn(&[u8]) -> (i64, i64),
) {
    for ((((w, o), t), h), c) in values
        .chunks_exact((2 * row_len).max(2))
        .zip(out.chunks_exact_mut(2))
        .zip(scale.chunks_exact(8))
        .zip(shift.chunks_exact(8))
        .zip(
            bias.chunks_exact(8)
                .chain(core::iter::repeat(&[0u8; 8][..])),
        )
    {
        let (a0, a1) = pair_dot(w);
        let ([t0, t1], [h0, h1], [c0, c1]) = (pair(t, le_f32), pair(h, le_u32), pair(c, le_f32));
        if let [o0, o1] = o {
            *o0 = rescale(a0, h0, t0) + c0;
            *o1 = rescale(a1, h1, t1) + c1;
        }
    }
}

/// Whether a Q7 matrix stored by pairs ([`Q7Layout::Pairs`]) holds a value beyond
/// ±`q_max`: a stored pair decodes to any a and b in [−128, 127]; an odd last row is
/// plain.
fn pairs_out_of_range(v: &Section<'_>, rows: usize, cols: usize, q_max: u32) -> bool {
    let paired = 2 * (rows / 2) * cols;
    let pair_out = |h: &[u8]| {
        let (a, b) = fixed::unpack_q7_pair(le_i16(h));
        a.unsigned_abs().max(b.unsigned_abs()) > q_max
    };
    let (pairs, last) = v.bytes.split_at_checked(paired).unwrap_or_default();
    pairs.chunks_exact(2).any(pair_out)
        || last
            .iter()
            .any(|&b| (b as i8).unsigned_abs() as u32 > q_max)
}

/// Of a pair's two values (rows 2p and 2p + 1), row `r`'s.
fn row_of_pair<T>((a, b): (T, T), r: usize) -> T {
    if r.is_multiple_of(2) {
        a
    } else {
        b
    }
}

/// The two values of an 8-byte chunk, each decoded from its 4 bytes by `f`.
#[inline(always)]
fn pair<T>(bytes: &[u8], f: fn(&[u8]) -> T) -> [T; 2] {
    let (a, b) = bytes.split_at(4.min(bytes.len()));
    [f(a), f(b)]
}

/// `scale · 2^shift · round(acc / 2^shift)`: an exact sum rescaled (shift capped at 30, as
/// the parser checks; [`fixed::round_shift_fit`], whose rounded sum the parser's shift
/// check keeps within `i32`).
#[inline(always)]
fn rescale(acc: i64, shift: u32, scale: f32) -> f32 {
    let shift = shift.min(30);
    // 2^shift as an f32 from its exponent bits.
    let step = f32::from_bits((127 + shift) << 23);
    fixed::round_shift_fit(acc, shift) as f32 * scale * step
}
