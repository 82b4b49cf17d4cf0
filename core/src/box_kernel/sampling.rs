//! The random draws every estimator shares: unbiased bounded integers and uniform floats.

use rand_core::Rng;

/// A uniform integer in `0..n` (`n ≥ 1`), unbiased, by Lemire's multiply-and-reject
/// method (D. Lemire, *Fast random integer generation in an interval*, ACM TOMACS 29(1),
/// 2019): one 64-bit draw except with probability < n/2⁶⁴.
#[inline]
pub(crate) fn uniform_below<R: Rng + ?Sized>(rng: &mut R, n: u64) -> u64 {
    let mut m = u128::from(rng.next_u64()) * u128::from(n);
    let mut low = m as u64;
    if low < n {
        let threshold = n.wrapping_neg() % n;
        while low < threshold {
            m = u128::from(rng.next_u64()) * u128::from(n);
            low = m as u64;
        }
    }
    (m >> 64) as u64
}

/// A uniform grid value in `lo..=hi` (`lo ≤ hi`).
#[inline]
pub(crate) fn uniform_between<R: Rng + ?Sized>(rng: &mut R, lo: u32, hi: u32) -> u32 {
    // hi − lo + 1 ≤ 2³², and the draw is < hi − lo + 1, so the sum stays ≤ hi.
    lo + uniform_below(rng, u64::from(hi - lo) + 1) as u32
}

/// A uniform float in [0, 1) with 53 random bits.
#[inline]
pub(crate) fn uniform_unit<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}
