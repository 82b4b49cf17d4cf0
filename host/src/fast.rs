//! The crate's only `unsafe` code, each use with why it is sound: loops compiled for
//! AVX2 when the CPU has it (the exponentials of the NSK kernel), the linear instance
//! kernel's Gram rows in AVX registers, and the `matrixmultiply` call behind the
//! instance Gram blocks. Everything else is safe Rust (`#![deny(unsafe_code)]`).

/// Runs the loop `f` over `values` compiled for AVX2 when the CPU has it (`f` inlined
/// into a function with the feature enabled, so LLVM vectorises it four f64 lanes wide),
/// else as it is. Meant for loops whose operations, and so results, do not depend on the
/// vector width.
pub(crate) fn with_avx2<F: Fn(&mut [f64])>(values: &mut [f64], f: F) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above).
        unsafe { avx2(values, f) };
        return;
    }
    f(values);
}

/// `f(values)` with AVX2 enabled.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn avx2<F: Fn(&mut [f64])>(values: &mut [f64], f: F) {
    f(values);
}

/// Two rows against two dot products, the same bits as `numerics::dot8_2x2`.
pub(crate) type Dot8Block = fn([&[f64]; 2], [&[f64]; 2]) -> [[f64; 2]; 2];

/// `numerics::dot8_2x2` in AVX registers, when the CPU has AVX (the linear instance
/// kernel's Gram rows, `classifier::mi_svm`): the same additions and products four lanes
/// wide, in the same order, so the bits do not depend on the CPU.
pub(crate) fn dot8_2x2_avx() -> Option<Dot8Block> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx") {
        // SAFETY: the function is handed out only here, after the check that the CPU has
        // AVX.
        return Some(|a, b| unsafe { dot8_2x2_in_avx(a, b) });
    }
    None
}

/// [`dot8_2x2_avx`]'s block: each accumulator's eight lanes are two vectors of four,
/// updated by the same products and additions in the same order (no fused multiply-add),
/// then summed as `numerics::dot8` sums them.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn dot8_2x2_in_avx(a: [&[f64]; 2], b: [&[f64]; 2]) -> [[f64; 2]; 2] {
    use std::arch::x86_64::{__m256d, _mm256_add_pd, _mm256_loadu_pd, _mm256_mul_pd};
    use std::arch::x86_64::{_mm256_setzero_pd, _mm256_storeu_pd};
    fn split(s: &[f64]) -> (std::slice::ChunksExact<'_, f64>, &[f64]) {
        let chunks = s.chunks_exact(8);
        let tail = chunks.remainder();
        (chunks, tail)
    }
    let ((a0, a0_tail), (a1, a1_tail)) = (split(a[0]), split(a[1]));
    let ((b0, b0_tail), (b1, b1_tail)) = (split(b[0]), split(b[1]));
    // SAFETY: every load below is from the first or the fifth of the eight f64 of a chunk,
    // every store to the first or the fifth of eight, so each four lanes stay inside.
    unsafe {
        let halves = |c: &[f64]| {
            (
                _mm256_loadu_pd(c.as_ptr()),
                _mm256_loadu_pd(c.as_ptr().add(4)),
            )
        };
        let zero = _mm256_setzero_pd();
        let mut acc: [(__m256d, __m256d); 4] = [(zero, zero); 4];
        let add = |acc: &mut (__m256d, __m256d), x: (__m256d, __m256d), y: (__m256d, __m256d)| {
            acc.0 = _mm256_add_pd(acc.0, _mm256_mul_pd(x.0, y.0));
            acc.1 = _mm256_add_pd(acc.1, _mm256_mul_pd(x.1, y.1));
        };
        for (((x0, x1), y0), y1) in a0.zip(a1).zip(b0).zip(b1) {
            let (x0, x1, y0, y1) = (halves(x0), halves(x1), halves(y0), halves(y1));
            add(&mut acc[0], x0, y0);
            add(&mut acc[1], x0, y1);
            add(&mut acc[2], x1, y0);
            add(&mut acc[3], x1, y1);
        }
        let lanes = |(lo, hi): (__m256d, __m256d)| {
            let mut v = [0.0; 8];
            _mm256_storeu_pd(v.as_mut_ptr(), lo);
            _mm256_storeu_pd(v.as_mut_ptr().add(4), hi);
            v
        };
        let tail = |x: &[f64], y: &[f64]| x.iter().zip(y).map(|(x, y)| x * y).sum::<f64>();
        let total = |acc, x, y| lanes(acc).iter().sum::<f64>() + tail(x, y);
        [
            [
                total(acc[0], a0_tail, b0_tail),
                total(acc[1], a0_tail, b1_tail),
            ],
            [
                total(acc[2], a1_tail, b0_tail),
                total(acc[3], a1_tail, b1_tail),
            ],
        ]
    }
}

/// ‖r‖² of each row `r` of the row-major `rows` (`dim` values each), summed in feature
/// order: with [`gram_block`], the squared distances ‖a‖² + ‖b‖² − 2 a·b.
pub(crate) fn squared_norms(rows: &[f64], dim: usize) -> Vec<f64> {
    rows.chunks_exact(dim)
        .map(|r| r.iter().map(|a| a * a).sum())
        .collect()
}

/// `out[c][r] = cols[c] · rows[r]` for row-major `cols` (nc × dim) and `rows` (nr × dim),
/// `out` row-major nc × nr. Each entry is one fixed sequence of multiply-adds over
/// the features in order (`matrixmultiply`'s micro-kernels), so its value depends on the
/// two vectors only, not on where they sit in the block ([`crate::kernel::nsk`] relies on
/// this, and tests it), nor on which of the two is the row: the products commute and the
/// sum runs over the features in order (`classifier::miles` relies on this).
pub(crate) fn gram_block(cols: &[f64], rows: &[f64], dim: usize, out: &mut [f64]) {
    let nc = cols.len() / dim;
    let nr = rows.len() / dim;
    assert!(cols.len() == nc * dim && rows.len() == nr * dim && out.len() == nc * nr);
    // SAFETY: the slices hold exactly nc×dim, nr×dim and nc×nr elements (checked above);
    // the strides address A = cols (nc × dim, row-major), B = rowsᵀ (dim × nr) and
    // C = out (nc × nr, row-major) inside them, and C does not alias A or B.
    unsafe {
        matrixmultiply::dgemm(
            nc,
            dim,
            nr,
            1.0,
            cols.as_ptr(),
            dim as isize,
            1,
            rows.as_ptr(),
            1,
            dim as isize,
            0.0,
            out.as_mut_ptr(),
            nr as isize,
            1,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::gram_block;
    use rand::{RngExt, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    #[test]
    fn swapping_rows_and_columns_transposes_the_block_bit_for_bit() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        // Shapes on and off the micro-kernels' tiles, dimensions below and above a
        // packing block.
        let shapes = [
            (1, 1, 1),
            (7, 13, 5),
            (33, 200, 166),
            (129, 255, 257),
            (300, 17, 600),
        ];
        for (na, nb, dim) in shapes {
            let mut draw = |n: usize, scale: f64| -> Vec<f64> {
                (0..n * dim)
                    .map(|_| scale * rng.random_range(-1.0..1.0))
                    .collect()
            };
            let (a, b) = (draw(na, 10.0), draw(nb, 1.0));
            let (mut ab, mut ba) = (vec![0.0; na * nb], vec![0.0; na * nb]);
            gram_block(&a, &b, dim, &mut ab);
            gram_block(&b, &a, dim, &mut ba);
            for i in 0..na {
                for j in 0..nb {
                    assert_eq!(
                        ab[i * nb + j].to_bits(),
                        ba[j * na + i].to_bits(),
                        "{na} × {nb} × {dim}: entry ({i}, {j})"
                    );
                }
            }
        }
    }
}
