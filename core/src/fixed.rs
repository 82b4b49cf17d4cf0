//! Fixed-point arithmetic for quantised models: Q15 (`i16`) and Q7 (`i8`) weights with a
//! per-row scale, `i16` inputs, exact `i64` accumulation, one rounding shift per output.
//!
//! A real value `v` is stored as the integer `q = round(v / s)` clamped to
//! `[-Q_MAX, Q_MAX]`, where `s` is the column's scale, chosen as `s = max|v| / Q_MAX` so
//! the largest weight of the column uses the full range. Rounding to nearest gives the
//! error bound `|v − s·q| ≤ s/2` for every value with `|v| ≤ Q_MAX·s` (see
//! [`quantize`]); values outside the range saturate.
//!
//! Dot products multiply an `i16` input by a Q15/Q7 weight (exact in `i32`) and add the
//! raw products in an `i64` accumulator (exact: no rounding, no saturation), two at a
//! time so that a Cortex-M4 does both in one `SMLALD` ([`dot_q15`]). The sum is shifted
//! right once per output by the row's `shift`, rounding to nearest (error ≤ 2^(shift−1)
//! product units for the whole sum when `shift > 0`, none when `shift = 0`:
//! [`round_shift_wide`]). The exporter picks the smallest `shift` for which
//! `Σ_j |q_j|·32768 / 2^shift` fits in `i32` ([`safe_shift`]), so the shifted sum is an
//! `i32` for every input and converts to `f32` in one instruction.

/// Largest magnitude of a Q15 value (−32768 is excluded so the range is symmetric).
pub const Q15_MAX: i32 = i16::MAX as i32;
/// Largest magnitude of a Q7 value (−128 is excluded so the range is symmetric).
pub const Q7_MAX: i32 = i8::MAX as i32;

/// `round(v / scale)` clamped to `[-q_max, q_max]`; NaN and a non-positive scale give 0.
///
/// Error bound: `|v − scale·q| ≤ scale/2` whenever `|v| ≤ q_max·scale` (round to nearest).
pub fn quantize(v: f32, scale: f32, q_max: i32) -> i32 {
    if scale.is_nan() || scale <= 0.0 || v.is_nan() {
        return 0;
    }
    round_clamp(v / scale, q_max)
}

/// `t` rounded to the nearest integer (halves away from zero), clamped to
/// `[-q_max, q_max]`; NaN gives 0. Exact: truncation and the fraction `t − trunc(t)` are
/// exact in `f32`, so no `libm` call is needed (a handful of instructions on a Cortex-M4).
pub fn round_clamp(t: f32, q_max: i32) -> i32 {
    let m = q_max as f32;
    if t.is_nan() {
        return 0;
    }
    if t >= m {
        return q_max;
    }
    if t <= -m {
        return -q_max;
    }
    let r = t as i32; // toward zero; |t| < q_max fits
    let frac = t - r as f32;
    if frac >= 0.5 {
        r + 1
    } else if frac <= -0.5 {
        r - 1
    } else {
        r
    }
}

/// `t` rounded to the nearest integer (halves away from zero) and saturated to the whole
/// `i16` range `[−32768, 32767]`; NaN gives 0. The rounding of a quantised input (the
/// dot products are exact for every `i16`: [`safe_shift`] assumes |x| ≤ 32768), so that
/// an input already on its step passes unchanged ([`crate::Model::quantize_fixed`]).
pub fn round_clamp_i16(t: f32) -> i16 {
    if t.is_nan() {
        return 0;
    }
    if t >= 32767.0 {
        return i16::MAX;
    }
    if t <= -32768.0 {
        return i16::MIN;
    }
    // |t| < 32768: truncation and the fraction are exact in f32.
    let r = t as i32;
    let frac = t - r as f32;
    let q = if frac >= 0.5 {
        r + 1
    } else if frac <= -0.5 {
        r - 1
    } else {
        r
    };
    q as i16
}

/// The scale that maps `max_abs` onto `q_max` (1 for an all-zero column, so it stays 0).
pub fn scale_for(max_abs: f32, q_max: i32) -> f32 {
    if max_abs > 0.0 && max_abs.is_finite() {
        max_abs / q_max as f32
    } else {
        1.0
    }
}

/// `x / 2^shift` rounded to nearest (halves round up), `x` unchanged for `shift = 0`.
///
/// Error bound: `|x/2^shift − result| ≤ 1/2`, i.e. 2^(shift−1) in units of `x`, for
/// `x ≤ i32::MAX − 2^(shift−1)` (above it the rounding offset saturates and the error is
/// at most 1; products of Q15 values stay below 2^30). Two instructions on a Cortex-M4.
pub fn round_shift(x: i32, shift: u32) -> i32 {
    match shift {
        0 => x,
        1..=30 => x.saturating_add(1 << (shift - 1)) >> shift,
        _ => 0,
    }
}

/// `Σ_j w_j · x_j`, exact, for Q15 weights stored as little-endian `i16` bytes `w` and
/// the quantised inputs `x` (over the shorter of the two).
///
/// Every product is at most 32767 · 32768 < 2³⁰ in magnitude and the sum of fewer than 2³³
/// of them fits `i64`, so nothing rounds or saturates: the one rounding happens once per
/// output, in [`round_shift_wide`] (or [`round_shift_fit`]). On Armv7E-M (module `dsp`)
/// the loop is written out: two `SMLALD`s per doubleword of weights and of inputs when
/// both are word-aligned (18 instructions per 16 inputs), one per word otherwise; on other
/// targets it is plain Rust, equal to it (the firmware checks both loops against plain
/// sums at start, `tests/qemu`).
#[inline(always)]
pub fn dot_q15(w: &[u8], x: &[i16]) -> i64 {
    #[cfg(mil_dsp)]
    {
        let n = (w.len() / 2).min(x.len());
        let mut acc = dsp::dot_q15_pairs(w, x, n / 2);
        if n % 2 == 1 {
            let j = n - 1;
            acc += (q15(w.get(2 * j..2 * j + 2)) * input(x, j)) as i64;
        }
        acc
    }
    #[cfg(not(mil_dsp))]
    dot_q15_portable(w, x)
}

/// [`dot_q15`] in plain Rust.
#[cfg(any(not(mil_dsp), test))]
fn dot_q15_portable(w: &[u8], x: &[i16]) -> i64 {
    let mut acc: i64 = 0;
    for (w, x) in w.chunks_exact(4).zip(x.chunks_exact(2)) {
        acc += (q15(w.get(0..2)) * input(x, 0)) as i64 + (q15(w.get(2..4)) * input(x, 1)) as i64;
    }
    // An odd length leaves one weight and one input.
    let n = (w.len() / 2).min(x.len());
    if n % 2 == 1 {
        let j = n - 1;
        acc += (q15(w.get(2 * j..2 * j + 2)) * input(x, j)) as i64;
    }
    acc
}

/// [`dot_q15`] of two rows `w0`, `w1` against the same inputs, equal to it exactly (the
/// sums are exact integers). Each pass reads one pair of inputs once for both rows and
/// adds two `SMLALD`s, so the loads of `x` and the loop's own instructions are shared:
/// what brings a projection stage near its multiply-add floor. On Armv7E-M
/// the loop is written out (module `dsp`: 7.5 instructions per 4 inputs of both rows when
/// the inputs and rows are word-aligned, 12 otherwise); elsewhere, and for an odd last
/// input, it is plain Rust.
pub fn dot2_q15(w0: &[u8], w1: &[u8], x: &[i16]) -> (i64, i64) {
    #[cfg(mil_dsp)]
    {
        let n = (w0.len() / 2).min(w1.len() / 2).min(x.len());
        let (mut a0, mut a1) = dsp::dot2_q15_pairs(w0, w1, x, n / 2);
        if n % 2 == 1 {
            let j = n - 1;
            let xj = input(x, j);
            a0 += (q15(w0.get(2 * j..2 * j + 2)) * xj) as i64;
            a1 += (q15(w1.get(2 * j..2 * j + 2)) * xj) as i64;
        }
        (a0, a1)
    }
    #[cfg(not(mil_dsp))]
    dot2_q15_portable(w0, w1, x)
}

/// [`dot2_q15`] in plain Rust.
#[cfg(any(not(mil_dsp), test))]
fn dot2_q15_portable(w0: &[u8], w1: &[u8], x: &[i16]) -> (i64, i64) {
    let (mut a0, mut a1): (i64, i64) = (0, 0);
    for ((w0, w1), x) in w0
        .chunks_exact(4)
        .zip(w1.chunks_exact(4))
        .zip(x.chunks_exact(2))
    {
        let (x0, x1) = (input(x, 0), input(x, 1));
        a0 += (q15(w0.get(0..2)) * x0) as i64 + (q15(w0.get(2..4)) * x1) as i64;
        a1 += (q15(w1.get(0..2)) * x0) as i64 + (q15(w1.get(2..4)) * x1) as i64;
    }
    let n = (w0.len() / 2).min(w1.len() / 2).min(x.len());
    if n % 2 == 1 {
        let j = n - 1;
        let xj = input(x, j);
        a0 += (q15(w0.get(2 * j..2 * j + 2)) * xj) as i64;
        a1 += (q15(w1.get(2 * j..2 * j + 2)) * xj) as i64;
    }
    (a0, a1)
}

/// [`dot_q15`] of one row `w` against two inputs `x0` and `x1`, equal to it exactly: each
/// pass reads a word of weights once for both inputs (on Armv7E-M the loop of
/// [`dot2_q15`] with the weights as the shared operand: 7.5 instructions per 4 inputs of
/// both). A folded model's one row scores its bag's instances two at a time this way.
/// Elsewhere two calls of the plain loop.
pub fn dot_q15_twice(w: &[u8], x0: &[i16], x1: &[i16]) -> (i64, i64) {
    #[cfg(mil_dsp)]
    {
        let n = (w.len() / 2).min(x0.len()).min(x1.len());
        let (mut a0, mut a1) = dsp::dot_q15_twice_pairs(w, x0, x1, n / 2);
        if n % 2 == 1 {
            let j = n - 1;
            let wj = q15(w.get(2 * j..2 * j + 2));
            a0 += (wj * input(x0, j)) as i64;
            a1 += (wj * input(x1, j)) as i64;
        }
        (a0, a1)
    }
    #[cfg(not(mil_dsp))]
    (dot_q15_portable(w, x0), dot_q15_portable(w, x1))
}

/// The Armv7E-M loop of [`dot2_q15`].
#[cfg(mil_dsp)]
#[allow(unsafe_code)]
mod dsp;

/// Largest magnitude of a value on the integer distance path ([`sq_dist_q15`]): with both
/// operands within ±16383 every difference fits an `i16`.
pub const DIST_MAX: i32 = 16383;

/// `Σ_k (q_k − r_k)²`, exact, for a quantised query `q` and a stored row `r` (`i16`
/// little-endian bytes), over the shorter of the two; both within ±[`DIST_MAX`], which the
/// caller checks (every difference then fits an `i16`, every square is below 2³⁰, and
/// the sum of fewer than 2³⁴ of them fits `u64`). On Armv7E-M (module `dsp`) the loop is
/// written out: per pair of coordinates one word of each, `SSUB16` for both differences
/// and `SMLALD` for both squares (6 instructions with the loads and the loop); elsewhere
/// plain Rust, equal to it (the firmware checks both at start).
#[inline]
pub fn sq_dist_q15(q: &[i16], r: &[u8]) -> u64 {
    #[cfg(mil_dsp)]
    {
        let n = (r.len() / 2).min(q.len());
        let mut acc = dsp::sq_dist_q15_pairs(q, r, n / 2);
        if n % 2 == 1 {
            let j = n - 1;
            let t = input(q, j) - q15(r.get(2 * j..2 * j + 2));
            acc += (t * t) as u64;
        }
        acc
    }
    #[cfg(not(mil_dsp))]
    sq_dist_q15_portable(q, r)
}

/// [`sq_dist_q15`] in plain Rust.
#[cfg(any(not(mil_dsp), test))]
fn sq_dist_q15_portable(q: &[i16], r: &[u8]) -> u64 {
    q.iter()
        .zip(r.chunks_exact(2))
        .map(|(&q, r)| {
            let t = i32::from(q) - q15(Some(r));
            (t * t) as u64
        })
        .sum()
}

/// `Σ_j w_j · x_j`, exact, for Q7 weights `w` (one `i8` per byte) and the quantised
/// inputs `x` (over the shorter of the two). As [`dot_q15`]: products below 2²², one
/// 64-bit accumulator (`SMLALBB` on a Cortex-M4), no rounding.
pub fn dot_q7(w: &[u8], x: &[i16]) -> i64 {
    let mut acc: i64 = 0;
    for (w, x) in w.chunks_exact(2).zip(x.chunks_exact(2)) {
        let w0 = w.first().map_or(0, |&b| b as i8 as i32);
        let w1 = w.get(1).map_or(0, |&b| b as i8 as i32);
        acc += (w0 * input(x, 0)) as i64 + (w1 * input(x, 1)) as i64;
    }
    let n = w.len().min(x.len());
    if n % 2 == 1 {
        let j = n - 1;
        acc += (w.get(j).map_or(0, |&b| b as i8 as i32) * input(x, j)) as i64;
    }
    acc
}

/// The `i16` a Q7 projection stores for weight `a` of row 2p and weight `b` of row
/// 2p + 1 at the same column (both within ±[`Q7_MAX`]): `256·a + b`, within ±32639. A
/// pair of Q7 rows is stored as one row of these (two bytes per column, one per weight,
/// as two plain Q7 rows take), so that [`dot2_q7_paired`] gets both rows' products out
/// of one load of each word without unpacking the `a`s.
///
/// ```
/// use mil_core::fixed::{pack_q7_pair, unpack_q7_pair};
///
/// assert_eq!(pack_q7_pair(-3, 5), -763);
/// assert_eq!(unpack_q7_pair(-763), (-3, 5));
/// assert_eq!(unpack_q7_pair(pack_q7_pair(127, -127)), (127, -127));
/// ```
pub const fn pack_q7_pair(a: i32, b: i32) -> i16 {
    (256 * a + b) as i16
}

/// The two weights (a, b) of a stored pair [`pack_q7_pair`]`(a, b)`, exactly: b is the
/// low byte read as an `i8` (h ≡ b mod 256 and b lies in [−128, 127]), a = (h − b)/256.
pub const fn unpack_q7_pair(h: i16) -> (i32, i32) {
    let b = h as i8 as i32;
    ((h as i32 - b) >> 8, b)
}

/// [`dot_q7`] of the two rows (a, b) stored by pairs in `w` ([`pack_q7_pair`], one
/// little-endian `i16` per column) against the same inputs, over the shorter of the two,
/// equal to it exactly. On Armv7E-M (module `dsp`) per 4 inputs: a doubleword of inputs
/// and one of stored values, two `SMLALD`s of the values as they are, whose sum is
/// Σ x·h = 256·Σ x·a + Σ x·b, two `SXTB16`s of the low bytes and two `SMLALD`s of those,
/// Σ x·b; then Σ x·a = (Σ x·h − Σ x·b)/256, exact. 8 instructions where two plain Q7
/// rows take 16 (two loads of weights, four `SXTB16`s, the inputs regrouped) and two Q15
/// rows 7. Elsewhere plain Rust.
///
/// ```
/// use mil_core::fixed::{dot2_q7_paired, pack_q7_pair};
///
/// // Rows a = (1, −2, 3) and b = (−127, 0, 127), stored by pairs.
/// let w: Vec<u8> = [(1, -127), (-2, 0), (3, 127)]
///     .iter()
///     .flat_map(|&(a, b)| pack_q7_pair(a, b).to_le_bytes())
///     .collect();
/// let x = [100, 10, -1];
/// assert_eq!(dot2_q7_paired(&w, &x), (100 - 20 - 3, -12_700 - 127));
/// ```
pub fn dot2_q7_paired(w: &[u8], x: &[i16]) -> (i64, i64) {
    #[cfg(mil_dsp)]
    {
        let n = (w.len() / 2).min(x.len());
        let (h, b) = dsp::paired_q7_sums(w, x, n / 2);
        let (mut a0, mut a1) = ((h - b) >> 8, b);
        if n % 2 == 1 {
            let j = n - 1;
            let (wa, wb) = unpack_q7_pair(q15(w.get(2 * j..2 * j + 2)) as i16);
            let xj = input(x, j);
            a0 += (wa * xj) as i64;
            a1 += (wb * xj) as i64;
        }
        (a0, a1)
    }
    #[cfg(not(mil_dsp))]
    dot2_q7_paired_portable(w, x)
}

/// [`dot2_q7_paired`] in plain Rust: each stored value unpacked.
#[cfg(any(not(mil_dsp), test))]
fn dot2_q7_paired_portable(w: &[u8], x: &[i16]) -> (i64, i64) {
    w.chunks_exact(2).zip(x).fold((0, 0), |(a0, a1), (h, &x)| {
        let (wa, wb) = unpack_q7_pair(q15(Some(h)) as i16);
        (a0 + (wa * x as i32) as i64, a1 + (wb * x as i32) as i64)
    })
}

/// The `i16` in two little-endian bytes (0 for anything else).
#[inline(always)]
fn q15(bytes: Option<&[u8]>) -> i32 {
    bytes
        .and_then(|b| <&[u8; 2]>::try_from(b).ok())
        .map_or(0, |b| i16::from_le_bytes(*b) as i32)
}

/// Input `i` of a pair (0 past its end).
#[inline(always)]
fn input(x: &[i16], i: usize) -> i32 {
    x.get(i).map_or(0, |&v| v as i32)
}

/// `acc / 2^shift` rounded to nearest (halves up) and saturated to `i32`: the one
/// rounding of a fixed-point dot product ([`dot_q15`], [`dot_q7`]).
///
/// Error bound: `|acc/2^shift − result| ≤ 1/2`, i.e. 2^(shift−1) in product units, when
/// the result does not saturate (the exporter's shift, [`safe_shift`], guarantees it for
/// every `i16` input); exact for `shift = 0`.
pub fn round_shift_wide(acc: i64, shift: u32) -> i32 {
    let r = match shift {
        0 => acc,
        1..=62 => acc.saturating_add(1 << (shift - 1)) >> shift,
        _ => 0,
    };
    r.clamp(i32::MIN as i64, i32::MAX as i64) as i32
}

/// [`round_shift_wide`] for a shift of at most 30 and a sum whose rounded value fits
/// `i32`, without the saturation: the parser checks every quantised row's shift against
/// [`safe_shift`] of its weights, which guarantees the fit for every `i16` input, so on
/// the weights of a parsed model the two are equal (a wider value wraps instead of
/// saturating; the shift is capped at 30). Four instructions on a Cortex-M4 besides the
/// 64-bit add, where the general 64-bit shift and clamp of [`round_shift_wide`] take ~40:
/// the low word of `(acc + 2^(shift−1)) >> shift` is `lo >> shift | hi << (32 − shift)`,
/// written as `(hi << 1) << (31 − shift)` so that `shift = 0` needs no branch.
#[inline(always)]
pub fn round_shift_fit(acc: i64, shift: u32) -> i32 {
    let shift = shift.min(30);
    let v = acc.wrapping_add(i64::from((1u32 << shift) >> 1));
    let (lo, hi) = (v as u32, (v >> 32) as u32);
    ((lo >> shift) | ((hi << 1) << (31 - shift))) as i32
}

/// The smallest shift for which `Σ_j |q_j| · 32768 / 2^shift` stays within `i32::MAX`:
/// with it, [`round_shift_wide`] of the exact sum cannot saturate for any `i16` input, so
/// the rescale to `f32` converts an `i32`.
pub fn safe_shift(abs_weight_sum: u64) -> u32 {
    let worst = abs_weight_sum.saturating_mul(32768);
    let mut shift = 0;
    while shift < 40 && (worst >> shift) + abs_weight_sum > i32::MAX as u64 {
        shift += 1;
    }
    shift
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantize_exact_values() {
        assert_eq!(quantize(0.5, 1.0 / 32767.0, Q15_MAX), 16384); // 16383.5 rounds away
        assert_eq!(quantize(-1.0, 1.0 / 32767.0, Q15_MAX), -32767);
        assert_eq!(quantize(2.0, 1.0 / 32767.0, Q15_MAX), 32767); // saturates
        assert_eq!(quantize(-3.0, 0.5, Q7_MAX), -6);
        assert_eq!(quantize(1000.0, 0.5, Q7_MAX), 127);
        assert_eq!(quantize(f32::NAN, 0.5, Q7_MAX), 0);
        assert_eq!(quantize(1.0, 0.0, Q7_MAX), 0);
        assert_eq!(round_clamp(2.5, Q15_MAX), 3);
        assert_eq!(round_clamp(-2.5, Q15_MAX), -3);
        assert_eq!(round_clamp(0.499_999_97, Q15_MAX), 0);
        assert_eq!(round_clamp(-0.499_999_97, Q15_MAX), 0);
        assert_eq!(round_clamp(32766.6, Q15_MAX), 32767);
        assert_eq!(round_clamp(f32::INFINITY, Q7_MAX), 127);
    }

    #[test]
    fn inputs_round_into_the_whole_i16_range() {
        assert_eq!(round_clamp_i16(-32768.0), -32768);
        assert_eq!(round_clamp_i16(-32767.6), -32768);
        assert_eq!(round_clamp_i16(-32767.5), -32768); // halves away from zero
        assert_eq!(round_clamp_i16(-32767.4), -32767);
        assert_eq!(round_clamp_i16(-1e9), -32768);
        assert_eq!(round_clamp_i16(32767.4), 32767);
        assert_eq!(round_clamp_i16(32767.5), 32767);
        assert_eq!(round_clamp_i16(f32::INFINITY), 32767);
        assert_eq!(round_clamp_i16(f32::NAN), 0);
        // Inside the symmetric range it is round_clamp.
        for i in -4000..4000 {
            let t = i as f32 * 8.19;
            assert_eq!(round_clamp_i16(t) as i32, round_clamp(t, Q15_MAX), "{t}");
        }
    }

    #[test]
    fn quantize_error_within_half_a_step() {
        let scale = scale_for(3.7, Q15_MAX);
        for i in -1000..=1000 {
            let v = 3.7 * i as f32 / 1000.0;
            let q = quantize(v, scale, Q15_MAX);
            // Half a step plus the f32 rounding of v/scale and scale·q.
            assert!((v - scale * q as f32).abs() <= scale * 0.5 + 4.0 * f32::EPSILON * 3.7);
        }
    }

    #[test]
    fn round_shift_exact_values() {
        assert_eq!(round_shift(5, 1), 3);
        assert_eq!(round_shift(-5, 1), -2); // −2.5 rounds up
        assert_eq!(round_shift(-7, 1), -3); // −3.5 rounds up
        assert_eq!(round_shift(4, 2), 1);
        assert_eq!(round_shift(6, 2), 2);
        assert_eq!(round_shift(-6, 2), -1); // −1.5 rounds up
        assert_eq!(round_shift(-7, 2), -2);
        assert_eq!(round_shift(i32::MIN, 1), -(1 << 30));
        assert_eq!(round_shift(1 << 30, 30), 1);
        assert_eq!(round_shift(i32::MAX, 40), 0);
        assert_eq!(round_shift(7, 0), 7);
    }

    fn q15_bytes(w: &[i32]) -> Vec<u8> {
        w.iter().flat_map(|&v| (v as i16).to_le_bytes()).collect()
    }

    #[test]
    fn squared_distances_are_exact_at_the_range_ends() {
        let vals = [-16383, -16382, -1, 0, 1, 7, 16382, 16383];
        for n in 0..12 {
            let q: Vec<i16> = (0..n).map(|k| vals[k % 8] as i16).collect();
            let r: Vec<i32> = (0..n).map(|k| vals[(3 * k + 5) % 8]).collect();
            let want: u64 = q
                .iter()
                .zip(&r)
                .map(|(&a, &b)| ((a as i64 - b as i64) * (a as i64 - b as i64)) as u64)
                .sum();
            assert_eq!(sq_dist_q15(&q, &q15_bytes(&r)), want, "{n}");
            assert_eq!(sq_dist_q15_portable(&q, &q15_bytes(&r)), want, "{n}");
        }
    }

    #[test]
    fn dots_are_exact_for_every_length() {
        let w: [i32; 7] = [32767, -32767, 1000, -5, 0, 127, -128];
        let x = [32767i16, -32768, 123, 4, 9, -77, 5];
        for n in 0..=w.len() {
            let exact: i64 = w[..n]
                .iter()
                .zip(&x)
                .map(|(&a, &b)| a as i64 * b as i64)
                .sum();
            assert_eq!(dot_q15(&q15_bytes(&w[..n]), &x[..n]), exact, "n {n}");
            let w7: Vec<i32> = w[..n].iter().map(|&v| v.clamp(-127, 127)).collect();
            let b7: Vec<u8> = w7.iter().map(|&v| v as i8 as u8).collect();
            let exact7: i64 = w7.iter().zip(&x).map(|(&a, &b)| a as i64 * b as i64).sum();
            assert_eq!(dot_q7(&b7, &x[..n]), exact7, "q7 n {n}");
            // The shorter operand sets the length.
            assert_eq!(dot_q15(&q15_bytes(&w), &x[..n]), exact, "n {n}");
        }
    }

    #[test]
    fn two_rows_at_once_equal_one_at_a_time() {
        // Every length up to 21 (quads, a last pair, an odd input), extreme values, rows
        // and inputs of unequal lengths (the shortest of the three sets the length).
        let value = |i: usize, salt: usize| -> i32 {
            match (i * 7 + salt) % 5 {
                0 => 32767,
                1 => -32767,
                _ => ((i * 2654435761 + salt * 40503) % 65535) as i32 - 32767,
            }
        };
        for n in 0..=21 {
            for (m0, m1) in [(n, n), (n + 3, n), (n, n + 1)] {
                let w0: Vec<i32> = (0..m0).map(|i| value(i, 1)).collect();
                let w1: Vec<i32> = (0..m1).map(|i| value(i, 2)).collect();
                let x: Vec<i16> = (0..n)
                    .map(|i| value(i, 3).clamp(-32768, 32767) as i16)
                    .collect();
                let (b0, b1) = (q15_bytes(&w0), q15_bytes(&w1));
                let one = (dot_q15(&b0, &x[..n.min(m1)]), dot_q15(&b1, &x[..n.min(m0)]));
                assert_eq!(dot2_q15(&b0, &b1, &x), one, "n {n} rows {m0} {m1}");
            }
        }
    }

    #[test]
    fn q7_pairs_round_trip_over_the_whole_range() {
        for a in -Q7_MAX..=Q7_MAX {
            for b in -Q7_MAX..=Q7_MAX {
                assert_eq!(unpack_q7_pair(pack_q7_pair(a, b)), (a, b), "{a} {b}");
            }
        }
    }

    #[test]
    fn a_q7_row_pair_sums_like_its_two_rows_one_at_a_time() {
        // Every length up to 21 (the device's quads and an odd last input), the extremes
        // of the Q7 range and of i16, a pair longer than the inputs.
        for n in 0..=21 {
            let a: Vec<i32> = (0..n + 2).map(|i| [-127, 127, 3, -3][i % 4]).collect();
            let b: Vec<i32> = (0..n + 2)
                .map(|i| (i as i32 * 37 + 11) % 255 - 127)
                .collect();
            let x: Vec<i16> = (0..n)
                .map(|i| [i16::MIN, i16::MAX, -7, 12345][(i * 3) % 4])
                .collect();
            let plain = |w: &[i32]| -> Vec<u8> { w.iter().map(|&v| v as i8 as u8).collect() };
            let pairs: Vec<u8> = a
                .iter()
                .zip(&b)
                .flat_map(|(&a, &b)| pack_q7_pair(a, b).to_le_bytes())
                .collect();
            let one = (dot_q7(&plain(&a[..n]), &x), dot_q7(&plain(&b[..n]), &x));
            assert_eq!(dot2_q7_paired(&pairs, &x), one, "n {n}");
            assert_eq!(dot2_q7_paired_portable(&pairs, &x), one, "n {n}");
        }
    }

    #[test]
    fn one_rounding_per_output_within_half_a_step() {
        let w: [i32; 6] = [32767, -32767, 1000, -5, 0, 127];
        let x = [32767i16, -32768, 123, 4, 9, -77];
        let exact: i64 = w.iter().zip(&x).map(|(&a, &b)| a as i64 * b as i64).sum();
        let acc = dot_q15(&q15_bytes(&w), &x);
        let first = safe_shift(w.iter().map(|v| v.unsigned_abs() as u64).sum());
        for shift in first..first + 8 {
            let got = round_shift_wide(acc, shift) as f64;
            let want = exact as f64 / (1u64 << shift) as f64;
            let bound = if shift == 0 { 0.0 } else { 0.5 };
            assert!(
                (got - want).abs() <= bound,
                "shift {shift}: {got} vs {want}"
            );
        }
        assert_eq!(round_shift_wide(-5, 1), -2); // −2.5 rounds up
        assert_eq!(round_shift_wide(i64::MAX, 0), i32::MAX); // saturates
        assert_eq!(round_shift_wide(i64::MIN, 1), i32::MIN);
        assert_eq!(round_shift_wide(7, 70), 0);
    }

    #[test]
    fn the_unsaturated_rounding_equals_the_saturating_one_where_it_fits() {
        // Every shift, sums at and around the rounding halves, both signs, up to the
        // largest sums that still fit i32 after the shift.
        for shift in 0..=30u32 {
            let unit = 1i64 << shift;
            let top = (i32::MAX as i64) << shift;
            for base in [0, 1, 7, unit, 3 * unit, 12345 * unit, top - unit, top] {
                for delta in [-unit / 2 - 1, -unit / 2, -1, 0, 1, unit / 2 - 1, unit / 2] {
                    for acc in [base + delta, -(base + delta)] {
                        let want = round_shift_wide(acc, shift);
                        let fits = want != i32::MAX && want != i32::MIN;
                        if fits {
                            assert_eq!(round_shift_fit(acc, shift), want, "{acc} >> {shift}");
                        }
                    }
                }
            }
        }
        // The shift is capped at 30 (the parser's limit).
        assert_eq!(round_shift_fit(3 << 31, 31), round_shift_fit(3 << 31, 30));
    }

    #[test]
    fn safe_shift_keeps_the_shifted_sum_an_i32_in_the_worst_case() {
        for n in [1usize, 2, 3, 10, 166, 230, 1000] {
            let w = vec![32767i32; n];
            let shift = safe_shift(w.iter().map(|v| v.unsigned_abs() as u64).sum());
            for x in [-32768i16, 32767] {
                let xs = vec![x; n];
                let acc = dot_q15(&q15_bytes(&w), &xs);
                let exact: i64 = w.iter().map(|&a| a as i64 * x as i64).sum();
                assert_eq!(acc, exact);
                let got = round_shift_wide(acc, shift) as i64;
                assert!(got != i32::MAX as i64 && got != i32::MIN as i64, "n {n}");
                assert!((got - (exact >> shift)).abs() <= 1, "n {n}");
            }
        }
        assert_eq!(safe_shift(1), 0);
    }
}
