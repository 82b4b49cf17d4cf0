//! The few leading eigenpairs of a symmetric n × n operator, by restarted block Lanczos
//! (block Krylov with full reorthogonalisation and Rayleigh–Ritz), with the full
//! decomposition as the fallback.
//!
//! Why not a library routine: `faer` (0.22) has `partial_eigen`, a Krylov–Schur Arnoldi
//! for the eigenvalues of largest *magnitude* of a general operator, returning complex
//! vectors; the callers here want the largest *algebraic* eigenvalues of symmetric
//! operators (B-MIDA's and M-MIDA's are indefinite), and a stated test of the subspace's
//! accuracy. nalgebra has no partial solver.
//!
//! Method. A seeded Gaussian start block V₀ (b = k + [`EXTRA`] columns) is expanded by
//! V_{j+1} = orth(A V_j ⊥ V₀ … V_j) (classical Gram–Schmidt twice, then a thin QR), and
//! after each block the Rayleigh quotient H = VᵀAV is diagonalised: θ₁ ≥ θ₂ ≥ … with
//! Ritz vectors Y = VS. When the basis reaches [`MAX_BASIS`] columns it restarts from
//! the 2b leading Ritz vectors (AY = (AV)S needs no new products) and their residuals.
//!
//! Convergence test (Davis–Kahan sin Θ theorem): the residual R = AY_k − Y_kΘ_k of the k
//! wanted Ritz pairs bounds the principal angles between span(Y_k) and the leading
//! eigenspace by ‖R‖_F / δ, δ the gap from θ_k to the rest of the spectrum, estimated by
//! θ_k − θ_{k+1}. Stop when ‖R‖_F ≤ [`ANGLE_TOLERANCE`] · δ, or when the basis spans the
//! whole space (then the result is exact). Fallback: when the test is not met after
//! [`MAX_RESTARTS`] restarts, or a restart cycle shrinks the residual by less than
//! [`STAGNATION`] (nearly repeated
//! eigenvalues at the cut, whose gap round-off cannot resolve), the caller's dense
//! matrix is decomposed in full instead — slower, never less accurate.

use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, MatRef, Par, Side};
use rand::SeedableRng;
use rand_distr::{Distribution, StandardNormal};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::error::{Error, Result};

/// Bound on the principal angles certified by the convergence test.
pub(crate) const ANGLE_TOLERANCE: f64 = 1e-9;
/// Columns of the block beyond the k wanted: they speed up convergence when eigenvalues
/// cluster near the cut.
pub(crate) const EXTRA: usize = 6;
/// Largest Krylov basis before a restart.
pub(crate) const MAX_BASIS: usize = 192;
/// Restarts before falling back to the full decomposition.
pub(crate) const MAX_RESTARTS: usize = 12;
/// A restart cycle must shrink the residual by this factor, or the solver falls back:
/// slower progress means eigenvalues clustered at the cut, where the fallback is cheaper
/// than the many cycles needed.
pub(crate) const STAGNATION: f64 = 0.1;
/// Below this size the full decomposition is cheaper than any iteration.
pub(crate) const SMALL: usize = 96;

/// How a partial solve ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Solved {
    /// The convergence test held after this many operator products (columns).
    Converged { products: usize },
    /// The full decomposition was used (small n, or the test failed).
    Dense,
}

/// The `k` leading (algebraically largest) eigenpairs of the symmetric n × n operator
/// `apply` (which maps an n × b block V to AV): eigenvalues descending and orthonormal
/// eigenvectors (n × k). `dense` builds the matrix for the fallback. Deterministic
/// given `seed`.
pub(crate) fn top_eigenpairs(
    n: usize,
    k: usize,
    apply: &mut dyn FnMut(MatRef<'_, f64>) -> Mat<f64>,
    dense: &mut dyn FnMut() -> Mat<f64>,
    seed: u64,
    method: &'static str,
) -> Result<(Vec<f64>, Mat<f64>, Solved)> {
    let k = k.min(n);
    let block = (k + EXTRA).min(n);
    if n <= SMALL.max(3 * block) {
        let (values, vectors) = full(dense().as_ref(), k, method)?;
        return Ok((values, vectors, Solved::Dense));
    }
    match krylov(n, k, block, apply, seed) {
        Some((values, vectors, products)) => Ok((values, vectors, Solved::Converged { products })),
        None => {
            let (values, vectors) = full(dense().as_ref(), k, method)?;
            Ok((values, vectors, Solved::Dense))
        }
    }
}

/// The full symmetric decomposition's `k` leading pairs (descending).
pub(crate) fn full(
    m: MatRef<'_, f64>,
    k: usize,
    method: &'static str,
) -> Result<(Vec<f64>, Mat<f64>)> {
    faer::set_global_parallelism(Par::Seq);
    let eig = m
        .self_adjoint_eigen(Side::Lower)
        .map_err(|_| Error::Numerical {
            method,
            reason: "the symmetric eigensolver did not converge".into(),
        })?;
    let n = m.nrows();
    let (s, u) = (eig.S(), eig.U());
    let values: Vec<f64> = (0..k).map(|c| s[n - 1 - c]).collect();
    let vectors = Mat::from_fn(n, k, |i, c| u[(i, n - 1 - c)]);
    if values.iter().any(|v| !v.is_finite()) {
        return Err(Error::Numerical {
            method,
            reason: "non-finite eigenvalues".into(),
        });
    }
    Ok((values, vectors))
}

/// AᵀB.
fn at_b(a: MatRef<'_, f64>, b: MatRef<'_, f64>) -> Mat<f64> {
    let mut out = Mat::zeros(a.ncols(), b.ncols());
    matmul(
        out.as_mut(),
        Accum::Replace,
        a.transpose(),
        b,
        1.0,
        Par::Seq,
    );
    out
}

/// AB.
fn a_b(a: MatRef<'_, f64>, b: MatRef<'_, f64>) -> Mat<f64> {
    let mut out = Mat::zeros(a.nrows(), b.ncols());
    matmul(out.as_mut(), Accum::Replace, a, b, 1.0, Par::Seq);
    out
}

/// `p` orthogonalised against the orthonormal columns of `v` (twice: classical
/// Gram–Schmidt loses orthogonality once, not twice) and orthonormalised by a thin QR.
/// Columns that vanish (p nearly in span(v)) are replaced by fresh random directions,
/// so the block keeps its width.
fn extend(v: MatRef<'_, f64>, mut p: Mat<f64>, rng: &mut Xoshiro256PlusPlus) -> Mat<f64> {
    let n = p.nrows();
    for attempt in 0..4 {
        let before: Vec<f64> = (0..p.ncols()).map(|c| p.col(c).norm_l2()).collect();
        for _ in 0..2 {
            if v.ncols() > 0 {
                let c = at_b(v, p.as_ref());
                matmul(p.as_mut(), Accum::Add, v, c.as_ref(), -1.0, Par::Seq);
            }
        }
        let q = p.qr();
        let r = q.R();
        // A diagonal entry of R far below the column's norm: the column was (nearly)
        // dependent on the basis or the block.
        let bad: Vec<usize> = (0..p.ncols())
            .filter(|&c| {
                let kept = r[(c, c)].abs() > 1e-10 * before[c].max(f64::MIN_POSITIVE);
                !kept
            })
            .collect();
        if bad.is_empty() || attempt == 3 {
            return q.compute_thin_Q();
        }
        for &c in &bad {
            for i in 0..n {
                p[(i, c)] = StandardNormal.sample(rng);
            }
        }
    }
    unreachable!()
}

/// Columns `cols` of `m` side by side with `extra` (n × (a + b)).
fn hcat(m: MatRef<'_, f64>, extra: MatRef<'_, f64>) -> Mat<f64> {
    let (a, b) = (m.ncols(), extra.ncols());
    Mat::from_fn(m.nrows(), a + b, |i, j| {
        if j < a {
            m[(i, j)]
        } else {
            extra[(i, j - a)]
        }
    })
}

/// The restarted block Lanczos iteration; `None` when the convergence test fails.
fn krylov(
    n: usize,
    k: usize,
    block: usize,
    apply: &mut dyn FnMut(MatRef<'_, f64>) -> Mat<f64>,
    seed: u64,
) -> Option<(Vec<f64>, Mat<f64>, usize)> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let start = Mat::from_fn(n, block, |_, _| StandardNormal.sample(&mut rng));
    let mut v = Mat::<f64>::zeros(n, 0);
    let mut w = Mat::<f64>::zeros(n, 0);
    let mut next = extend(v.as_ref(), start, &mut rng);
    let mut products = 0;
    let mut restarts = 0;
    let mut last_restart_residual = f64::INFINITY;
    let max_basis = MAX_BASIS.max(4 * block).min(n);
    loop {
        let an = apply(next.as_ref());
        products += next.ncols();
        v = hcat(v.as_ref(), next.as_ref());
        w = hcat(w.as_ref(), an.as_ref());
        let m = v.ncols();
        // Rayleigh–Ritz on span(V).
        let h = at_b(v.as_ref(), w.as_ref());
        let h = Mat::from_fn(m, m, |i, j| 0.5 * (h[(i, j)] + h[(j, i)]));
        let eig = h.as_ref().self_adjoint_eigen(Side::Lower).ok()?;
        let (s, u) = (eig.S(), eig.U());
        let theta: Vec<f64> = (0..m).map(|c| s[m - 1 - c]).collect();
        let wanted = (k + 1).min(m);
        let top = Mat::from_fn(m, wanted, |i, c| u[(i, m - 1 - c)]);
        let y = a_b(v.as_ref(), top.as_ref());
        let ay = a_b(w.as_ref(), top.as_ref());
        let residual_of = |c: usize| -> f64 {
            (0..n)
                .map(|i| {
                    let r = ay[(i, c)] - theta[c] * y[(i, c)];
                    r * r
                })
                .sum::<f64>()
        };
        let residual = (0..k).map(residual_of).sum::<f64>().sqrt();
        let exact = m >= n;
        let gap = if m > k { theta[k - 1] - theta[k] } else { 0.0 };
        if exact || (gap > 0.0 && residual <= ANGLE_TOLERANCE * gap) {
            let values = theta[..k].to_vec();
            let vectors = Mat::from_fn(n, k, |i, c| y[(i, c)]);
            return Some((values, vectors, products));
        }
        if m + block > max_basis {
            // Restart from the leading Ritz vectors; give up when restarts stop helping.
            restarts += 1;
            if restarts > MAX_RESTARTS || residual > STAGNATION * last_restart_residual {
                return None;
            }
            last_restart_residual = residual;
            let keep = (2 * block).min(m - block);
            let sk = Mat::from_fn(m, keep, |i, c| u[(i, m - 1 - c)]);
            let yk = a_b(v.as_ref(), sk.as_ref());
            let wk = a_b(w.as_ref(), sk.as_ref());
            // Residuals of the leading `block` Ritz pairs extend the kept space.
            let r = Mat::from_fn(n, block, |i, c| wk[(i, c)] - theta[c] * yk[(i, c)]);
            v = yk;
            w = wk;
            next = extend(v.as_ref(), r, &mut rng);
        } else {
            next = extend(v.as_ref(), an, &mut rng);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::projection::test_support::normals;

    /// An n × n symmetric matrix with the given eigenvalues and a seeded random
    /// orthogonal eigenbasis (the Q of a Gaussian matrix).
    fn with_spectrum(seed: u64, values: &[f64]) -> (Mat<f64>, Mat<f64>) {
        let n = values.len();
        let g = normals(seed, n * n);
        let q = Mat::from_fn(n, n, |i, j| g[i * n + j])
            .qr()
            .compute_thin_Q();
        let mut qd = q.clone();
        for j in 0..n {
            for i in 0..n {
                qd[(i, j)] *= values[j];
            }
        }
        let mut a = Mat::zeros(n, n);
        matmul(
            a.as_mut(),
            Accum::Replace,
            qd.as_ref(),
            q.transpose(),
            1.0,
            Par::Seq,
        );
        let a = Mat::from_fn(n, n, |i, j| 0.5 * (a[(i, j)] + a[(j, i)]));
        (a, q)
    }

    /// Sines of the principal angles between the column spaces of two n × k matrices
    /// with orthonormal columns: the singular values of (I − AAᵀ)B, largest first.
    fn largest_angle_sine(a: MatRef<'_, f64>, b: MatRef<'_, f64>) -> f64 {
        let mut p = b.to_owned();
        let c = at_b(a, b);
        matmul(p.as_mut(), Accum::Add, a, c.as_ref(), -1.0, Par::Seq);
        p.singular_values().unwrap().into_iter().fold(0.0, f64::max)
    }

    fn solve(a: &Mat<f64>, k: usize, seed: u64) -> (Vec<f64>, Mat<f64>, Solved) {
        let mut apply = |v: MatRef<'_, f64>| a_b(a.as_ref(), v);
        let mut dense = || a.clone();
        top_eigenpairs(a.nrows(), k, &mut apply, &mut dense, seed, "test").unwrap()
    }

    #[test]
    fn leading_subspace_equals_the_full_decomposition_over_seeds() {
        for seed in 0..6 {
            let n = 300 + 37 * seed as usize;
            // A decaying spectrum with a negative tail (indefinite, as B-MIDA's M).
            let values: Vec<f64> = (0..n)
                .map(|i| 100.0 * (-(i as f64) / 15.0).exp() - if i % 3 == 0 { 0.5 } else { 0.0 })
                .collect();
            let (a, _) = with_spectrum(seed, &values);
            for k in [1, 4, 10] {
                let (l, y, how) = solve(&a, k, seed + 100);
                assert!(
                    matches!(how, Solved::Converged { .. }),
                    "seed {seed} k {k}: {how:?}"
                );
                let (l_full, y_full) = full(a.as_ref(), k, "test").unwrap();
                let sine = largest_angle_sine(y_full.as_ref(), y.as_ref());
                assert!(sine <= 1e-8, "seed {seed} k {k}: sin {sine:e}");
                for (p, q) in l.iter().zip(&l_full) {
                    assert!((p - q).abs() <= 1e-10 * l_full[0].abs(), "seed {seed}");
                }
                let mut yty = at_b(y.as_ref(), y.as_ref());
                for c in 0..k {
                    yty[(c, c)] -= 1.0;
                }
                assert!(yty.norm_l2() < 1e-12);
            }
        }
    }

    #[test]
    fn a_flat_spectrum_with_a_small_gap_still_converges() {
        for seed in 0..4 {
            let n = 400;
            // Many nearly equal eigenvalues around the cut, relative gap 10⁻³ there.
            let values: Vec<f64> = (0..n)
                .map(|i| {
                    if i < 5 {
                        2.0 - 0.01 * i as f64
                    } else {
                        1.0 - 0.001 * i as f64 / n as f64
                    }
                })
                .collect();
            let (a, q) = with_spectrum(seed, &values);
            let (_, y, how) = solve(&a, 5, seed);
            assert!(matches!(how, Solved::Converged { .. }), "seed {seed}");
            let sine = largest_angle_sine(q.subcols(0, 5), y.as_ref());
            assert!(sine <= 1e-8, "seed {seed}: sin {sine:e}");
        }
    }

    #[test]
    fn nearly_repeated_eigenvalues_at_the_cut_fall_back_or_converge_accurately() {
        for (seed, split) in [(1, 1e-4), (2, 1e-7), (3, 1e-9), (4, 1e-11), (5, 0.0)] {
            let n = 250;
            // λ₃ and λ₄ differ by `split` (relative); k = 3 cuts between them.
            let values: Vec<f64> = (0..n)
                .map(|i| match i {
                    0 => 10.0,
                    1 => 8.0,
                    2 => 5.0,
                    3 => 5.0 * (1.0 - split),
                    _ => 3.0 * (-(i as f64) / 40.0).exp(),
                })
                .collect();
            let (a, q) = with_spectrum(seed, &values);
            let (l, y, how) = solve(&a, 3, seed);
            // The leading two directions are well separated: always within 10⁻⁸.
            let two = largest_angle_sine(y.as_ref(), q.subcols(0, 2));
            assert!(two <= 1e-8, "seed {seed}: {two:e}");
            if split >= 1e-4 {
                // Resolvable: converged, and the whole subspace equals the truth.
                assert!(
                    matches!(how, Solved::Converged { .. }),
                    "seed {seed}: {how:?}"
                );
                let sine = largest_angle_sine(q.subcols(0, 3), y.as_ref());
                assert!(sine <= 1e-8, "seed {seed}: {sine:e}");
            } else {
                // Unresolvable by the residual test: the full decomposition decides,
                // exactly as the dense path does.
                assert_eq!(how, Solved::Dense, "seed {seed}");
                let (_, y_full) = full(a.as_ref(), 3, "test").unwrap();
                assert!(largest_angle_sine(y_full.as_ref(), y.as_ref()) <= 1e-12);
            }
            assert!((l[2] - 5.0).abs() < 1e-9 * 10.0);
        }
    }

    #[test]
    fn small_operators_use_the_full_decomposition() {
        let values: Vec<f64> = (0..40).map(|i| 40.0 - i as f64).collect();
        let (a, q) = with_spectrum(9, &values);
        let (l, y, how) = solve(&a, 4, 1);
        assert_eq!(how, Solved::Dense);
        assert_eq!(l.len(), 4);
        assert!(largest_angle_sine(q.subcols(0, 4), y.as_ref()) < 1e-12);
    }
}
