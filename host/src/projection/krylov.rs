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
//!
//! A cluster at the cut ([`AtCut::Enlarge`], for callers that want the objective
//! Σ_{i≤k} λ_i and not one particular basis of nearly equal eigenvalues). When λ_k sits
//! inside a cluster, λ_k − λ_{k+1} is below what any residual the operator allows can
//! resolve, but the cluster as a whole usually ends at a wide gap. The test is then
//! applied to every cut k' ∈ [k, k + [`ENLARGE`]], column by column: for the Ritz pairs
//! (θ_i, y_i), i ≤ k', with residuals r_i and E⊥ the eigenvectors of λ_{k'+1}, λ_{k'+2}, …,
//! E⊥ᵀr_i = (Λ⊥ − θ_i)E⊥ᵀy_i, so
//!
//! ‖sin Θ(span Y_{k'}, E_{k'})‖_F ≤ (Σ_{i≤k'} ‖r_i‖² / (θ_i − λ_{k'+1})²)^½ =: ε,
//!
//! with λ_{k'+1} estimated by θ_{k'+1} as above. This weighs each residual by its own
//! distance to the rest of the spectrum: the residuals of the largest pairs, which
//! carry the operator's round-off (‖r₁‖ ≈ 10⁻¹³ θ₁ on CLFDA's term-count set) and
//! would otherwise swamp the cluster's, count as little as they affect the subspace.
//! Stop when ε ≤ [`ANGLE_TOLERANCE`] for some k', and return the k leading Ritz pairs of
//! span(Y_{k'}). Their Ritz values satisfy |θ_i − λ_i| ≤ ‖R_{k'}‖² / (θ_{k'} − λ_{k'+1})
//! (the quadratic residual bound for Rayleigh–Ritz, Mathias 1998; Li & Li 2005), so the
//! objective Σ_{i≤k} θ_i is within k times that of the optimum, far below the cluster's
//! width. Which directions of the cluster span(Y_k) holds is as undetermined as the
//! full decomposition's choice: both are fixed only to angles of (round-off of the
//! operator) / (gaps inside the cluster); outside the cluster — when λ_k − λ_{k+1} is a
//! gap the residuals resolve — span(Y_k) is as accurate as under [`AtCut::Resolve`]
//! (tested against the full decomposition). Clusters reaching past k + [`ENLARGE`]
//! still fall back. Caveat of every block Krylov method: it sees at most b copies of a
//! repeated eigenvalue, so a cluster with more members than the block can show a gap
//! inside it; the values returned are then still those of the cluster, within its
//! width of the full decomposition's (tested), and ε bounds the angle to the members
//! seen.

use faer::linalg::matmul::matmul;
use faer::linalg::solvers::SelfAdjointEigen;
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
/// A restart cycle must shrink the residual (the bound ε for [`AtCut::Enlarge`]) by this
/// factor, or the solver falls back:
/// slower progress means eigenvalues clustered at the cut, where the fallback is cheaper
/// than the many cycles needed.
pub(crate) const STAGNATION: f64 = 0.1;
/// Below this size the full decomposition is cheaper than any iteration.
pub(crate) const SMALL: usize = 96;

/// How a partial solve ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Solved {
    /// The convergence test held after this many operator products (columns), for the
    /// leading `subspace` Ritz vectors (k, or more with [`AtCut::Enlarge`]).
    Converged { products: usize, subspace: usize },
    /// The full decomposition was used (small n, or the test failed).
    Dense,
}

/// What the convergence test certifies when the cut after the k-th eigenvalue falls
/// inside a cluster (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AtCut {
    /// The k-dimensional leading subspace itself; the full decomposition otherwise.
    Resolve,
    /// Any leading k'-dimensional subspace, k ≤ k' ≤ k + [`ENLARGE`], whose gap resolves
    /// it; the k leading Ritz pairs inside it are returned. For callers that need the
    /// objective (the sum of the k leading eigenvalues) and not a particular choice
    /// among nearly equal eigenvalues.
    Enlarge,
}

/// How far past the cut [`AtCut::Enlarge`] looks for a resolvable gap.
pub(crate) const ENLARGE: usize = 32;

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
    top_eigenpairs_at(n, k, AtCut::Resolve, apply, dense, seed, method)
}

/// [`top_eigenpairs`] with the convergence test chosen by `at_cut`.
pub(crate) fn top_eigenpairs_at(
    n: usize,
    k: usize,
    at_cut: AtCut,
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
    match krylov(n, k, block, at_cut, apply, seed) {
        Some((values, vectors, products, subspace)) => {
            Ok((values, vectors, Solved::Converged { products, subspace }))
        }
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
    let (mut values, eig) = self_adjoint_eigen(m, method)?;
    values.truncate(k);
    let (n, u) = (m.nrows(), eig.U());
    let vectors = Mat::from_fn(n, k, |i, c| u[(i, n - 1 - c)]);
    Ok((values, vectors))
}

/// The symmetric eigendecomposition of `m` (its lower triangle) by `faer`, sequentially
/// (so results do not depend on the thread count): every eigenvalue in descending order,
/// checked finite, and the decomposition, whose eigenvector column n − 1 − c belongs to
/// value c (faer's order is ascending).
pub(crate) fn self_adjoint_eigen(
    m: MatRef<'_, f64>,
    method: &'static str,
) -> Result<(Vec<f64>, SelfAdjointEigen<f64>)> {
    faer::set_global_parallelism(Par::Seq);
    let eig = m
        .self_adjoint_eigen(Side::Lower)
        .map_err(|_| Error::Numerical {
            method,
            reason: "the symmetric eigensolver did not converge".into(),
        })?;
    let s = eig.S();
    let values: Vec<f64> = (0..m.nrows()).rev().map(|k| s[k]).collect();
    if values.iter().any(|v| !v.is_finite()) {
        return Err(Error::Numerical {
            method,
            reason: "non-finite eigenvalues".into(),
        });
    }
    Ok((values, eig))
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
    at_cut: AtCut,
    apply: &mut dyn FnMut(MatRef<'_, f64>) -> Mat<f64>,
    seed: u64,
) -> Option<(Vec<f64>, Mat<f64>, usize, usize)> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let start = Mat::from_fn(n, block, |_, _| StandardNormal.sample(&mut rng));
    let mut v = Mat::<f64>::zeros(n, 0);
    let mut w = Mat::<f64>::zeros(n, 0);
    let mut next = extend(v.as_ref(), start, &mut rng);
    let mut products = 0;
    let mut restarts = 0;
    let mut last_restart_score = f64::INFINITY;
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
        // Candidate cuts k' (k alone for `Resolve`), each needing θ_{k'+1} for its gap.
        let last = match at_cut {
            AtCut::Resolve => k,
            AtCut::Enlarge => (k + ENLARGE).min(m.saturating_sub(1)).max(k),
        };
        let wanted = last.min(m);
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
        // ‖R_{k'}‖_F² for k' = 1 … wanted, cumulatively.
        let mut squares = Vec::with_capacity(wanted);
        for c in 0..wanted {
            squares.push(squares.last().copied().unwrap_or(0.0) + residual_of(c));
        }
        let residual = squares[k - 1].sqrt();
        let exact = m >= n;
        // The bound on ‖sin Θ‖_F at each candidate cut k' (the smallest wins, the first on
        // ties): ‖R_k‖_F / (θ_k − θ_{k+1}) for `Resolve`, column by column
        // (Σ_{i ≤ k'} ‖r_i‖² / (θ_i − θ_{k'+1})²)^½ for `Enlarge`.
        let mut best = (f64::INFINITY, k);
        for cut in k..=last.min(m - 1) {
            let gap = theta[cut - 1] - theta[cut];
            if gap <= 0.0 {
                continue;
            }
            let bound = match at_cut {
                AtCut::Resolve => squares[cut - 1].sqrt() / gap,
                AtCut::Enlarge => (0..cut)
                    .map(|i| {
                        let r = squares[i] - if i > 0 { squares[i - 1] } else { 0.0 };
                        r / (theta[i] - theta[cut]).powi(2)
                    })
                    .sum::<f64>()
                    .sqrt(),
            };
            if bound < best.0 {
                best = (bound, cut);
            }
        }
        if exact || best.0 <= ANGLE_TOLERANCE {
            let values = theta[..k].to_vec();
            let vectors = Mat::from_fn(n, k, |i, c| y[(i, c)]);
            let subspace = if exact { k } else { best.1 };
            return Some((values, vectors, products, subspace));
        }
        if m + block > max_basis {
            // Restart from the leading Ritz vectors; give up when restarts stop helping.
            restarts += 1;
            // Progress is measured on the residual at k, or on the bound for `Enlarge`.
            let score = match at_cut {
                AtCut::Resolve => residual,
                AtCut::Enlarge => best.0,
            };
            if restarts > MAX_RESTARTS || score > STAGNATION * last_restart_score {
                return None;
            }
            last_restart_score = score;
            // Keep the candidate cuts' vectors too (`last` > 2b only for `Enlarge`).
            let keep = (2 * block).max(last + 1).min(m - block);
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

    fn solve_enlarged(a: &Mat<f64>, k: usize, seed: u64) -> (Vec<f64>, Mat<f64>, Solved) {
        let mut apply = |v: MatRef<'_, f64>| a_b(a.as_ref(), v);
        let mut dense = || a.clone();
        let n = a.nrows();
        top_eigenpairs_at(n, k, AtCut::Enlarge, &mut apply, &mut dense, seed, "test").unwrap()
    }

    fn assert_orthonormal(y: MatRef<'_, f64>) {
        let mut yty = at_b(y, y);
        for c in 0..y.ncols() {
            yty[(c, c)] -= 1.0;
        }
        assert!(yty.norm_l2() < 1e-12);
    }

    /// A partial eigensolver under test: (values, vectors, how it ended) of the leading k.
    type Solver = fn(&Mat<f64>, usize, u64) -> (Vec<f64>, Mat<f64>, Solved);

    /// The leading k = 1, 4, 10 eigenpairs of `solver` on an n × n matrix with a decaying
    /// spectrum and a negative tail (indefinite, as B-MIDA's M) equal the full
    /// decomposition's: subspace angle ≤ 10⁻⁸, values within 10⁻¹⁰ of the largest,
    /// orthonormal vectors.
    fn matches_the_full_decomposition(solver: Solver, seed: u64, n: usize) {
        let values: Vec<f64> = (0..n)
            .map(|i| 100.0 * (-(i as f64) / 15.0).exp() - if i % 3 == 0 { 0.5 } else { 0.0 })
            .collect();
        let (a, _) = with_spectrum(seed, &values);
        for k in [1, 4, 10] {
            let (l, y, how) = solver(&a, k, seed + 100);
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
            assert_orthonormal(y.as_ref());
        }
    }

    #[test]
    fn leading_subspace_equals_the_full_decomposition_over_seeds() {
        for seed in 0..6 {
            matches_the_full_decomposition(solve, seed, 300 + 37 * seed as usize);
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
    fn a_tight_cluster_at_the_cut_converges_on_the_enlarged_subspace() {
        // Three separated eigenvalues, then twelve within `width` (relative) of 5, then a
        // gap down to ≤ 3: k = 6 cuts inside the cluster, which `Resolve` cannot
        // separate (it falls back), while the leading 15-dimensional subspace is
        // resolved by its gap of 2.
        for (seed, width) in [(0, 1e-4), (1, 1e-6), (2, 1e-8), (3, 1e-10), (4, 0.0)] {
            let n = 320;
            let values: Vec<f64> = (0..n)
                .map(|i| match i {
                    0 => 10.0,
                    1 => 8.0,
                    2 => 6.5,
                    3..=14 => 5.0 * (1.0 - width * (i - 3) as f64 / 11.0),
                    _ => 3.0 * (-((i - 15) as f64) / 40.0).exp(),
                })
                .collect();
            let (a, q) = with_spectrum(seed, &values);
            let (l, y, how) = solve_enlarged(&a, 6, seed + 7);
            // What `Resolve` cannot separate: it falls back on the same operator.
            assert_eq!(solve(&a, 6, seed + 7).2, Solved::Dense, "seed {seed}");
            assert!(
                matches!(how, Solved::Converged { subspace: 15, .. }),
                "seed {seed}: {how:?}"
            );
            assert_orthonormal(y.as_ref());
            // Resolved directions: the leading three equal the truth; the rest lie in
            // the cluster's invariant subspace.
            let three = largest_angle_sine(y.subcols(0, 3), q.subcols(0, 3));
            assert!(three <= 1e-8, "seed {seed}: {three:e}");
            let inside = largest_angle_sine(q.subcols(0, 15), y.as_ref());
            assert!(inside <= 1e-8, "seed {seed}: {inside:e}");
            // Eigenvalues and the objective agree with the full decomposition within
            // the cluster's width, and in fact to round-off.
            let (l_full, _) = full(a.as_ref(), 6, "test").unwrap();
            let cluster = 5.0 * width;
            for (p, f) in l.iter().zip(&l_full) {
                assert!((p - f).abs() <= cluster.max(1e-12), "seed {seed}: {p} {f}");
                assert!((p - f).abs() <= 1e-12 * 10.0, "seed {seed}: {p} {f}");
            }
            let objective: f64 = l.iter().sum();
            let best: f64 = l_full.iter().sum();
            assert!(
                (objective - best).abs() <= 6.0 * 1e-12 * 10.0,
                "seed {seed}"
            );
            // Rayleigh quotients of the returned vectors are their values.
            let ay = a_b(a.as_ref(), y.as_ref());
            let h = at_b(y.as_ref(), ay.as_ref());
            for c in 0..6 {
                assert!((h[(c, c)] - l[c]).abs() <= 1e-12 * 10.0, "seed {seed}");
            }
        }
    }

    #[test]
    fn an_enlarged_cut_keeps_resolved_subspaces_exact() {
        // Where the cut is resolvable, `Enlarge` returns the same subspace as the full
        // decomposition, to the same 10⁻⁸ as `Resolve`.
        for seed in 0..4 {
            matches_the_full_decomposition(solve_enlarged, seed, 300 + 41 * seed as usize);
        }
    }

    #[test]
    fn a_cluster_larger_than_the_block_still_gives_the_leading_values() {
        // Sixty eigenvalues within `width` of 5 from the fourth on: more than the block
        // (k + EXTRA = 11) holds, so the Krylov space sees only some of them and may
        // show a gap inside the cluster. Whatever the solver decides, the values are the
        // full decomposition's within the cluster's width and the vectors lie in the
        // leading 63-dimensional invariant subspace.
        for (seed, width) in [(11, 0.0), (12, 1e-10), (13, 1e-7)] {
            let n = 300;
            let values: Vec<f64> = (0..n)
                .map(|i| match i {
                    0..=2 => 10.0 - i as f64,
                    3..=62 => 5.0 * (1.0 - width * (i - 3) as f64 / 59.0),
                    _ => 3.0 * (-((i - 63) as f64) / 40.0).exp(),
                })
                .collect();
            let (a, q) = with_spectrum(seed, &values);
            let (l, y, how) = solve_enlarged(&a, 5, 3);
            let (l_full, _) = full(a.as_ref(), 5, "test").unwrap();
            for (p, f) in l.iter().zip(&l_full) {
                assert!(
                    (p - f).abs() <= (5.0 * width).max(1e-12 * 10.0),
                    "seed {seed}: {how:?}"
                );
            }
            let inside = largest_angle_sine(q.subcols(0, 63), y.as_ref());
            assert!(inside <= 1e-8, "seed {seed}: {how:?} {inside:e}");
            assert_orthonormal(y.as_ref());
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
