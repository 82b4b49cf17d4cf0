//! Fixed-point arithmetic for quantised models: Q15 (`i16`) and Q7 (`i8`) weights with a
//! per-column scale, `i16` inputs, `i32` accumulation with saturation.
//!
//! A real value `v` is stored as the integer `q = round(v / s)` clamped to
//! `[-Q_MAX, Q_MAX]`, where `s` is the column's scale, chosen as `s = max|v| / Q_MAX` so
//! the largest weight of the column uses the full range. Rounding to nearest gives the
//! error bound `|v − s·q| ≤ s/2` for every value with `|v| ≤ Q_MAX·s` (see
//! [`quantize`]); values outside the range saturate.
//!
//! Dot products multiply an `i16` input by a Q15/Q7 weight (exact in `i32`), shift the
//! product right by a per-column `shift` with rounding (error ≤ 2^(shift−1) per product
//! when `shift > 0`, none when `shift = 0`) and add with saturation. The exporter picks
//! the smallest `shift` for which `Σ_j |q_j|·i16::MAX / 2^shift` fits in `i32`, so the
//! accumulator can never saturate on any input; saturation stays as a second guard.

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

/// `Σ_j round_shift(w_j · x_j, shift)` with saturating `i32` accumulation.
///
/// `w` holds the weights read from the model (Q15, or Q7 widened),
/// `x` the quantised inputs. Error bound against the exact sum `Σ w_j x_j / 2^shift`:
/// `len · 2^(shift−1)` product units when `shift > 0` (0 when `shift = 0`), provided
/// the accumulator does not saturate (the exporter's choice of `shift` guarantees it).
pub fn dot_shifted(w: impl Iterator<Item = i16>, x: &[i16], shift: u32) -> i32 {
    // Two i16 factors: each product is at most 2^30 in magnitude, exact in i32.
    let products = w.zip(x).map(|(w, &x)| w as i32 * x as i32);
    if shift == 0 {
        products.fold(0i32, i32::saturating_add)
    } else {
        products.fold(0i32, |acc, p| acc.saturating_add(round_shift(p, shift)))
    }
}

/// The smallest shift for which `Σ_j |q_j| · 32768 / 2^shift` stays within `i32::MAX`:
/// with it, [`dot_shifted`] cannot saturate for any `i16` input.
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

    #[test]
    fn dot_matches_exact_integer_sum_within_bound() {
        let w: [i32; 6] = [32767, -32767, 1000, -5, 0, 127];
        let x = [32767i16, -32768, 123, 4, 9, -77];
        let exact: i64 = w.iter().zip(&x).map(|(&a, &b)| a as i64 * b as i64).sum();
        for shift in 0..8 {
            let got = dot_shifted(w.iter().map(|&v| v as i16), &x, shift) as f64;
            let want = exact as f64 / (1u64 << shift) as f64;
            let bound = if shift == 0 {
                0.0
            } else {
                w.len() as f64 * 0.5
            };
            if shift >= safe_shift(w.iter().map(|v| v.unsigned_abs() as u64).sum()) {
                assert!(
                    (got - want).abs() <= bound,
                    "shift {shift}: {got} vs {want}"
                );
            }
        }
    }

    #[test]
    fn dot_saturates_instead_of_wrapping() {
        let w = [32767; 8];
        let x = [32767i16; 8];
        assert_eq!(dot_shifted(w.iter().map(|&v| v as i16), &x, 0), i32::MAX);
        let x = [-32768i16; 8];
        assert_eq!(dot_shifted(w.iter().map(|&v| v as i16), &x, 0), i32::MIN);
    }

    #[test]
    fn safe_shift_prevents_saturation_in_the_worst_case() {
        for n in [1usize, 2, 3, 10, 166, 230, 1000] {
            let w = vec![32767i32; n];
            let shift = safe_shift(w.iter().map(|v| v.unsigned_abs() as u64).sum());
            for x in [[-32768i16; 1], [32767; 1]] {
                let xs = vec![x[0]; n];
                let got = dot_shifted(w.iter().map(|&v| v as i16), &xs, shift) as i64;
                let exact: i64 = w.iter().map(|&a| a as i64 * x[0] as i64).sum();
                let want = exact >> shift;
                assert!(got != i32::MAX as i64 && got != i32::MIN as i64, "n {n}");
                assert!((got - want).abs() <= n as i64, "n {n}: {got} vs {want}");
            }
        }
        assert_eq!(safe_shift(1), 0);
    }
}
