//! The small numerical functions several algorithms share, each written once.

/// Dot product summed in index order (Weka's order; also L-BFGS's and M³IC's).
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut s = 0.0;
    for (x, y) in a.iter().zip(b) {
        s += x * y;
    }
    s
}

/// Dot product with eight independent accumulators (vectorisable; the order of the
/// additions is fixed, so results do not depend on the machine's thread count).
pub fn dot8(a: &[f64], b: &[f64]) -> f64 {
    let mut acc = [0.0; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f64 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for k in 0..8 {
            acc[k] += x[k] * y[k];
        }
    }
    acc.iter().sum::<f64>() + tail
}

/// The 8-value chunks of `a` and what is left after them (`slice::as_chunks`, which is
/// newer than the crate's minimum Rust version).
#[inline(always)]
pub(crate) fn chunks8(a: &[f64]) -> (impl Iterator<Item = &[f64; 8]>, &[f64]) {
    let chunks = a.chunks_exact(8);
    let tail = chunks.remainder();
    let whole = chunks.map(|c| <&[f64; 8]>::try_from(c).expect("chunks of 8"));
    (whole, tail)
}

/// [`dot8`] of two rows `a` against two rows `b` at once: `out[i][j]` is the same
/// sequence of operations as `dot8(a[i], b[j])`, so the same bits, and the four share
/// their loads (the linear instance kernel's Gram rows where the CPU has no AVX;
/// `fast::dot8_2x2_avx` where it has).
#[inline(always)]
pub fn dot8_2x2(a: [&[f64]; 2], b: [&[f64]; 2]) -> [[f64; 2]; 2] {
    #[inline(always)]
    fn add_products(acc: &mut [f64; 8], x: &[f64; 8], y: &[f64; 8]) {
        for k in 0..8 {
            acc[k] += x[k] * y[k];
        }
    }
    let (a0, a0_tail) = chunks8(a[0]);
    let (a1, a1_tail) = chunks8(a[1]);
    let (b0, b0_tail) = chunks8(b[0]);
    let (b1, b1_tail) = chunks8(b[1]);
    let (mut s00, mut s01, mut s10, mut s11) = ([0.0; 8], [0.0; 8], [0.0; 8], [0.0; 8]);
    for (((x0, x1), y0), y1) in a0.zip(a1).zip(b0).zip(b1) {
        add_products(&mut s00, x0, y0);
        add_products(&mut s01, x0, y1);
        add_products(&mut s10, x1, y0);
        add_products(&mut s11, x1, y1);
    }
    let tail = |x: &[f64], y: &[f64]| x.iter().zip(y).map(|(x, y)| x * y).sum::<f64>();
    let total = |acc: [f64; 8], x, y| acc.iter().sum::<f64>() + tail(x, y);
    [
        [total(s00, a0_tail, b0_tail), total(s01, a0_tail, b1_tail)],
        [total(s10, a1_tail, b0_tail), total(s11, a1_tail, b1_tail)],
    ]
}

/// σ(x) = 1/(1 + e^{−x}) without overflow for either sign of x.
pub fn sigmoid(x: f64) -> f64 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}

/// log(1 + eˣ) without overflow.
pub fn softplus(x: f64) -> f64 {
    if x > 0.0 {
        x + (-x).exp().ln_1p()
    } else {
        x.exp().ln_1p()
    }
}

/// log Σ e^{vᵢ}, shifted by the largest term; −∞ for no terms.
pub fn log_sum_exp(v: impl Iterator<Item = f64> + Clone) -> f64 {
    let m = v.clone().fold(f64::NEG_INFINITY, f64::max);
    if m == f64::NEG_INFINITY {
        return m;
    }
    m + v.map(|x| (x - m).exp()).sum::<f64>().ln()
}

/// eˣ for x ≤ 709 (the set kernels call it with x ≤ 0), within 2 units of the last place
/// of the exact value (measured against the system's `exp` in the tests), 0 below −708
/// (where eˣ < 2⁻¹⁰²¹: an absolute error under 3.4·10⁻³⁰⁸), NaN for NaN.
///
/// Only additions, multiplications and bit operations, no branch and no table, so the
/// loop of [`sum_exp_in_place`] vectorises and gives the same bits at every SIMD width
/// and on every machine (the system `exp` is a call per value and differs between C
/// libraries). Cody & Waite's reduction x = k·ln 2 + r with k = round(x/ln 2) (by adding
/// 1.5·2⁵²) and ln 2 split in 32 + 53 bits, so x − k·ln2_hi is exact and |r| ≤ 0.35; e^r
/// by its Taylor series to r¹³/13! (truncation < 0.05 u on that range); 2ᵏ written into
/// the exponent bits.
#[inline(always)]
pub fn exp_nonpositive(x: f64) -> f64 {
    const SHIFT: f64 = 6_755_399_441_055_744.0; // 1.5·2⁵²: x/ln 2 + SHIFT rounds to an integer
    const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
    const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);
    const UNDERFLOW: f64 = -708.0;
    // 1/n! for n = 0..=13.
    const C: [f64; 14] = [
        1.0,
        1.0,
        0.5,
        1.0 / 6.0,
        1.0 / 24.0,
        1.0 / 120.0,
        1.0 / 720.0,
        1.0 / 5_040.0,
        1.0 / 40_320.0,
        1.0 / 362_880.0,
        1.0 / 3_628_800.0,
        1.0 / 39_916_800.0,
        1.0 / 479_001_600.0,
        1.0 / 6_227_020_800.0,
    ];
    let t = x * std::f64::consts::LOG2_E + SHIFT;
    let k = t - SHIFT;
    let r = (x - k * LN2_HI) - k * LN2_LO;
    // Terms from r⁴/4! on by Estrin's scheme (short dependency chains, so the lanes of
    // consecutive values overlap); their rounding is damped by r⁴ < 0.015. The first
    // four by Horner's form, whose last steps set the accuracy.
    let r2 = r * r;
    let r4 = r2 * r2;
    let pair = |i: usize| C[i] + C[i + 1] * r;
    let high = (pair(4) + pair(6) * r2) + (pair(8) + pair(10) * r2) * r4 + pair(12) * (r4 * r4);
    let p = ((high * r + C[3]) * r + C[2]) * r * r + r + 1.0;
    // t's low bits hold k (two's complement); k + 1023 is the biased exponent of 2ᵏ.
    let scale = f64::from_bits(t.to_bits().wrapping_sub(SHIFT.to_bits()).wrapping_add(1023) << 52);
    // All ones, or zero below UNDERFLOW: a mask rather than a branch, which would stop
    // the loops from vectorising.
    let keep = u64::from(x < UNDERFLOW).wrapping_sub(1);
    f64::from_bits((p * scale).to_bits() & keep)
}

/// Σ e^{vᵢ} over values vᵢ ≤ 0 by [`exp_nonpositive`], which overwrite the values, summed
/// in a fixed order: value i into partial sum i mod 4, then (s₀ + s₁) + (s₂ + s₃), then
/// the last `len mod 4` values in order. The order does not depend on the machine, so the
/// AVX2 path (taken when the CPU has it) and the portable one give the same bits; with N
/// values of sum S the rounding of the additions is at most (N/4 + 2)·u·S.
pub fn sum_exp_in_place(values: &mut [f64]) -> f64 {
    crate::fast::with_avx2(values, exp_in_place);
    sum_in_lanes(values)
}

/// Every value replaced by its [`exp_nonpositive`]: loops LLVM vectorises, the last
/// `len mod 4` values padded to four lanes (a scalar remainder would cost as much as
/// several vectors, the polynomial being one long dependency chain per value).
#[inline(always)]
fn exp_in_place(values: &mut [f64]) {
    let whole = values.len() - values.len() % 4;
    let (body, tail) = values.split_at_mut(whole);
    for v in body.iter_mut() {
        *v = exp_nonpositive(*v);
    }
    if !tail.is_empty() {
        let mut pad = [0.0; 4];
        pad[..tail.len()].copy_from_slice(tail);
        for v in pad.iter_mut() {
            *v = exp_nonpositive(*v);
        }
        tail.copy_from_slice(&pad[..tail.len()]);
    }
}

/// The summation order of [`sum_exp_in_place`].
fn sum_in_lanes(values: &[f64]) -> f64 {
    let mut acc = [0.0; 4];
    let chunks = values.chunks_exact(4);
    let tail = chunks.remainder();
    for c in chunks {
        for (a, v) in acc.iter_mut().zip(c) {
            *a += v;
        }
    }
    let mut s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    for v in tail {
        s += v;
    }
    s
}

/// Index and value of the largest entry (the first on ties; (0, −∞) when empty).
pub fn first_argmax(v: &[f64]) -> (usize, f64) {
    v.iter()
        .copied()
        .enumerate()
        .fold((0, f64::NEG_INFINITY), |best, (i, x)| {
            if x > best.1 {
                (i, x)
            } else {
                best
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_by_two_dot_products_are_dot8_to_the_bit() {
        // Lengths below, on and around the 8-wide chunks; values over many magnitudes.
        let value = |i: usize| ((i * 7919 % 1009) as f64 - 504.0) * 10f64.powi((i % 9) as i32 - 4);
        for len in [0, 1, 7, 8, 9, 16, 23, 166, 230] {
            let rows: Vec<Vec<f64>> = (0..4)
                .map(|r| (0..len).map(|i| value(i * 4 + r)).collect())
                .collect();
            let got = dot8_2x2([&rows[0], &rows[1]], [&rows[2], &rows[3]]);
            for i in 0..2 {
                for j in 0..2 {
                    let want = dot8(&rows[i], &rows[2 + j]);
                    assert_eq!(
                        got[i][j].to_bits(),
                        want.to_bits(),
                        "length {len}: ({i}, {j})"
                    );
                }
            }
        }
    }

    #[test]
    fn exp_of_a_few_values() {
        assert_eq!(exp_nonpositive(0.0), 1.0);
        assert!((exp_nonpositive(-1.0) - (-1.0f64).exp()).abs() <= 2.0 * f64::EPSILON * 0.37);
        assert_eq!(exp_nonpositive(f64::NEG_INFINITY), 0.0);
    }

    #[test]
    fn sum_exp_of_a_few_values() {
        let mut v = [0.0, -1.0, -2.0, -3.0, -4.0];
        let exact: f64 = v.iter().map(|x: &f64| x.exp()).sum();
        assert!((sum_exp_in_place(&mut v) - exact).abs() < 1e-15);
        assert_eq!(v[0], 1.0);
        assert_eq!(sum_exp_in_place(&mut []), 0.0);
    }

    #[test]
    fn closed_forms() {
        let a: Vec<f64> = (1..=19).map(f64::from).collect();
        // Σ k² for k = 1..19.
        assert_eq!(dot(&a, &a), 2470.0);
        assert_eq!(dot8(&a, &a), 2470.0);
        assert_eq!(sigmoid(0.0), 0.5);
        assert!((sigmoid(-800.0)).abs() < 1e-300 && sigmoid(800.0) == 1.0);
        assert_eq!(softplus(0.0), std::f64::consts::LN_2);
        assert_eq!(softplus(1000.0), 1000.0);
        let l = log_sum_exp([1000.0, 1000.0].into_iter());
        assert!((l - (1000.0 + std::f64::consts::LN_2)).abs() < 1e-12);
        assert_eq!(log_sum_exp(std::iter::empty()), f64::NEG_INFINITY);
        assert_eq!(first_argmax(&[1.0, 3.0, 3.0, 2.0]), (1, 3.0));
    }

    /// Units in the last place between two positive finite values.
    fn ulps(a: f64, b: f64) -> u64 {
        a.to_bits().abs_diff(b.to_bits())
    }

    #[test]
    fn exp_is_within_one_unit_of_the_system_exp() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
        let mut worst = (0, 0.0);
        let mut check = |x: f64| {
            let (ours, system) = (exp_nonpositive(x), x.exp());
            let d = ulps(ours, system);
            if d > worst.0 {
                worst = (d, x);
            }
        };
        // Uniform over the whole range, over the reduction's boundaries (x near
        // (k + ½)·ln 2, where |r| is largest) and near 0.
        for _ in 0..2_000_000 {
            check(-708.0 * rng.random::<f64>());
            let k = rng.random_range(0..1021) as f64;
            check(-(k + 0.5) * std::f64::consts::LN_2 + 1e-9 * (rng.random::<f64>() - 0.5));
            check(-1e-3 * rng.random::<f64>());
        }
        for x in [
            0.0,
            -0.0,
            -1e-300,
            -f64::MIN_POSITIVE,
            -708.0,
            -707.9,
            -1.0,
            -0.5,
        ] {
            check(x);
        }
        // The system exp is within one unit of the exact value (glibc's manual lists at
        // most 1 ulp): one unit from it is within 2 of the exact value, as documented.
        assert!(worst.0 <= 1, "{} units at x = {:e}", worst.0, worst.1);
        assert_eq!(exp_nonpositive(-708.1), 0.0);
        assert_eq!(exp_nonpositive(f64::NEG_INFINITY), 0.0);
        assert!(exp_nonpositive(f64::NAN).is_nan());
        assert_eq!(exp_nonpositive(0.0), 1.0);
        // Positive arguments up to 709 are computed too.
        assert!(ulps(exp_nonpositive(709.0), 709f64.exp()) <= 1);
        assert!(ulps(exp_nonpositive(1.0), std::f64::consts::E) <= 1);
    }

    #[test]
    fn sum_exp_has_its_stated_order_on_every_path() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(8);
        for len in 0..40 {
            let v: Vec<f64> = (0..len).map(|_| -30.0 * rng.random::<f64>()).collect();
            // The order written out: value i into sum i mod 4, then the tail.
            let mut acc = [0.0; 4];
            let whole = len - len % 4;
            for (i, &x) in v[..whole].iter().enumerate() {
                acc[i % 4] += exp_nonpositive(x);
            }
            let mut expected = (acc[0] + acc[1]) + (acc[2] + acc[3]);
            for &x in &v[whole..] {
                expected += exp_nonpositive(x);
            }
            let (mut fast, mut portable) = (v.clone(), v.clone());
            let got = sum_exp_in_place(&mut fast);
            exp_in_place(&mut portable);
            assert_eq!(got.to_bits(), expected.to_bits(), "len {len}");
            assert_eq!(
                sum_in_lanes(&portable).to_bits(),
                expected.to_bits(),
                "len {len}"
            );
            assert!(fast
                .iter()
                .zip(&portable)
                .all(|(a, b)| a.to_bits() == b.to_bits()));
            let exact: f64 = v.iter().map(|x| x.exp()).sum();
            assert!((got - exact).abs() <= 1e-14 * exact.max(f64::MIN_POSITIVE));
        }
    }
}
