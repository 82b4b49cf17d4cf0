//! The span path: projections on wide data (more features D than training instances n).
//!
//! Every scatter matrix the projections here form is S = XᵀMX for the n × D matrix X of
//! standardised training instances and some n × n matrix M. With the Gram matrix
//! K = XXᵀ = UΛUᵀ (rank r ≤ n), the columns of Q = XᵀUΛ^{-1/2} are an orthonormal basis
//! of the row space of X and X = ZQᵀ with Z = UΛ^{1/2} (n × r). So
//! S = Q (ZᵀMZ) Qᵀ: on the complement of the row space every scatter vanishes, and the
//! (generalised) eigenproblems reduce to r × r ones in the coordinates Z. A solution G̃
//! (r × d) lifts back as G = QG̃ = Xᵀ(UΛ^{-1/2}G̃), a D × n by n × d product.
//!
//! Time O(n²D + n³) and memory O(nD + n²) instead of the dense path's O(D³) and O(D²).
//! The callers use it when D > n ([`super::TrainingInstances::is_wide`]); the dense path
//! is kept for D ≤ n, where it is the cheaper one.
//!
//! The n × n linear algebra (Gram matrix, symmetric eigendecomposition, Cholesky,
//! triangular solves) runs in `faer`, sequentially, so results do not depend on the
//! thread count.

use faer::linalg::matmul::matmul;
use faer::linalg::triangular_solve::{
    solve_lower_triangular_in_place, solve_upper_triangular_in_place,
};
use faer::{Accum, Mat, MatRef, Par, Side};
use nalgebra::DMatrix;

use crate::error::{Error, Result};

/// A column-major nalgebra matrix seen by faer (no copy).
pub(crate) fn view(m: &DMatrix<f64>) -> MatRef<'_, f64> {
    MatRef::from_column_major_slice(m.as_slice(), m.nrows(), m.ncols())
}

/// A faer matrix copied into nalgebra.
pub(crate) fn to_nalgebra(m: MatRef<'_, f64>) -> DMatrix<f64> {
    DMatrix::from_fn(m.nrows(), m.ncols(), |i, j| m[(i, j)])
}

/// AᵀB.
pub(crate) fn at_b(a: &DMatrix<f64>, b: &DMatrix<f64>) -> DMatrix<f64> {
    let mut out = Mat::<f64>::zeros(a.ncols(), b.ncols());
    matmul(
        out.as_mut(),
        Accum::Replace,
        view(a).transpose(),
        view(b),
        1.0,
        Par::Seq,
    );
    to_nalgebra(out.as_ref())
}

/// AB.
pub(crate) fn a_b(a: &DMatrix<f64>, b: &DMatrix<f64>) -> DMatrix<f64> {
    let mut out = Mat::<f64>::zeros(a.nrows(), b.ncols());
    matmul(
        out.as_mut(),
        Accum::Replace,
        view(a),
        view(b),
        1.0,
        Par::Seq,
    );
    to_nalgebra(out.as_ref())
}

/// Symmetric eigendecomposition (of the lower triangle): eigenvalues in descending
/// order and the eigenvectors as columns, each column's sign fixed as in
/// [`super::top_eigenvectors`] (largest-magnitude entry positive).
pub(crate) fn symmetric_eigen(
    m: &DMatrix<f64>,
    method: &'static str,
) -> Result<(Vec<f64>, DMatrix<f64>)> {
    faer::set_global_parallelism(Par::Seq);
    let eig = view(m)
        .self_adjoint_eigen(Side::Lower)
        .map_err(|_| Error::Numerical {
            method,
            reason: "the symmetric eigensolver did not converge".into(),
        })?;
    let n = m.nrows();
    let (s, u) = (eig.S(), eig.U());
    // faer returns ascending eigenvalues: reverse.
    let values: Vec<f64> = (0..n).rev().map(|k| s[k]).collect();
    let mut vectors = DMatrix::zeros(n, n);
    for (c, k) in (0..n).rev().enumerate() {
        let mut col = nalgebra::DVector::from_fn(n, |i, _| u[(i, k)]);
        let pivot = col.iamax();
        if col[pivot] < 0.0 {
            col.neg_mut();
        }
        vectors.set_column(c, &col);
    }
    if values.iter().any(|v| !v.is_finite()) {
        return Err(Error::Numerical {
            method,
            reason: "non-finite eigenvalues".into(),
        });
    }
    Ok((values, vectors))
}

/// Relative size below which an eigenvalue of K is treated as zero: directions with a
/// variance under 10⁻¹² of the largest carry nothing any scatter here can resolve.
const RANK_TOLERANCE: f64 = 1e-12;

/// The row space of the training instances, in the coordinates of an orthonormal basis.
#[derive(Debug, Clone)]
pub(crate) struct Span {
    /// Z = UΛ^{1/2}, n × r: the instances' coordinates (X = ZQᵀ).
    pub z: DMatrix<f64>,
    /// The Gram matrix K = XXᵀ = ZZᵀ (n × n): inner products of instances.
    pub gram: DMatrix<f64>,
    /// Λ, descending, the r kept eigenvalues of K (squared singular values of X).
    pub values: Vec<f64>,
}

impl Span {
    /// The span of the rows of `x` (n × D).
    pub fn new(x: &DMatrix<f64>, method: &'static str) -> Result<Self> {
        let n = x.nrows();
        let mut gram = Mat::<f64>::zeros(n, n);
        matmul(
            gram.as_mut(),
            Accum::Replace,
            view(x),
            view(x).transpose(),
            1.0,
            Par::Seq,
        );
        let gram = to_nalgebra(gram.as_ref());
        let (values, u) = symmetric_eigen(&gram, method)?;
        let top = values.first().copied().unwrap_or(0.0).max(0.0);
        let r = values
            .iter()
            .take_while(|&&v| v > RANK_TOLERANCE * top && v > 0.0)
            .count();
        let values: Vec<f64> = values[..r].to_vec();
        let mut z = u.columns(0, r).into_owned();
        drop(u);
        for (k, &l) in values.iter().enumerate() {
            z.column_mut(k).scale_mut(l.sqrt());
        }
        Ok(Span { z, gram, values })
    }

    /// Rank r of the training instances.
    pub fn rank(&self) -> usize {
        self.values.len()
    }

    /// G = QG̃ = Xᵀ(UΛ^{-1/2}G̃): a solution in span coordinates (r × d) lifted to the
    /// D features.
    pub fn lift(&self, x: &DMatrix<f64>, g: &DMatrix<f64>) -> DMatrix<f64> {
        // UΛ^{-1/2} = ZΛ⁻¹.
        let mut scaled = g.clone();
        for (k, mut row) in scaled.row_iter_mut().enumerate() {
            row /= self.values[k];
        }
        let coefficients = a_b(&self.z, &scaled);
        at_b(x, &coefficients)
    }
}

/// Columns appended to the D × k matrix `g` (orthonormal columns) until it has `d`:
/// unit vectors orthogonal to `g` and to the columns of `span` (also orthonormal), from
/// the standard basis by two rounds of Gram–Schmidt. These are the null directions the
/// dense eigensolver returns for a zero eigenvalue, which are arbitrary there too.
pub(crate) fn complete_orthonormal(
    g: &DMatrix<f64>,
    span: Option<&DMatrix<f64>>,
    d: usize,
) -> DMatrix<f64> {
    let dim = g.nrows();
    let mut cols: Vec<nalgebra::DVector<f64>> = g.column_iter().map(|c| c.into_owned()).collect();
    let fixed: Vec<nalgebra::DVector<f64>> = span
        .map(|s| s.column_iter().map(|c| c.into_owned()).collect())
        .unwrap_or_default();
    let mut j = 0;
    while cols.len() < d && j < dim {
        let mut v = nalgebra::DVector::zeros(dim);
        v[j] = 1.0;
        for _ in 0..2 {
            for c in fixed.iter().chain(cols.iter()) {
                let p = c.dot(&v);
                v.axpy(-p, c, 1.0);
            }
        }
        let norm = v.norm();
        if norm > 0.5 {
            cols.push(v / norm);
        }
        j += 1;
    }
    let mut out = DMatrix::zeros(dim, d);
    for (k, c) in cols.iter().enumerate().take(d) {
        out.set_column(k, c);
    }
    out
}

/// The `d` leading solutions of S_B w = λ (S_W + ρI) w in span coordinates (r × r
/// matrices), with the ridge ρ = ε·tr(S_W)/D of [`super::generalized_top_eigenvectors`]
/// computed over the `ambient` D features (the complement of the span adds nothing to
/// tr S_W). Same method (Cholesky, then the symmetric problem L⁻¹S_B L⁻ᵀ v = λv,
/// w = L⁻ᵀv) in faer. Returns W̃ (r × min(d, r)) and λ (descending).
pub(crate) fn generalized_top_eigenvectors(
    sb: &DMatrix<f64>,
    sw: &DMatrix<f64>,
    d: usize,
    ambient: usize,
    method: &'static str,
) -> Result<(DMatrix<f64>, Vec<f64>)> {
    let r = sw.nrows();
    let mean_var = sw.trace() / ambient as f64;
    let ridge = super::SCATTER_RIDGE * if mean_var > 0.0 { mean_var } else { 1.0 };
    let mut reg = (sw + sw.transpose()) * 0.5;
    for i in 0..r {
        reg[(i, i)] += ridge;
    }
    faer::set_global_parallelism(Par::Seq);
    let llt = view(&reg).llt(Side::Lower).map_err(|_| Error::Numerical {
        method,
        reason: "the regularised within-class scatter is not positive definite".into(),
    })?;
    let l = llt.L();
    // C = L⁻¹ S_B L⁻ᵀ: Y = L⁻¹ S_B, then C = L⁻¹ Yᵀ.
    let mut y = Mat::<f64>::from_fn(r, r, |i, j| sb[(i, j)]);
    solve_lower_triangular_in_place(l, y.as_mut(), Par::Seq);
    let mut c = y.transpose().to_owned();
    solve_lower_triangular_in_place(l, c.as_mut(), Par::Seq);
    let c = to_nalgebra(c.as_ref());
    let c = (&c + c.transpose()) * 0.5;
    let (values, vectors) = symmetric_eigen(&c, method)?;
    let k = d.min(r);
    let mut w = Mat::<f64>::from_fn(r, k, |i, j| vectors[(i, j)]);
    solve_upper_triangular_in_place(l.transpose(), w.as_mut(), Par::Seq);
    let w = to_nalgebra(w.as_ref());
    let values = values[..k].to_vec();
    if w.iter().any(|x| !x.is_finite()) {
        return Err(Error::Numerical {
            method,
            reason: "singular triangular factor".into(),
        });
    }
    Ok((w, values))
}

/// The `d` leading eigenvectors (orthonormal, D × d) and eigenvalues of M = FᵀCF for
/// F (m × D, m < D) and symmetric C (m × m), without forming the D × D matrix M.
///
/// With the thin QR Fᵀ = QR, M = Q(RCRᵀ)Qᵀ: the eigenpairs of the m × m matrix RCRᵀ
/// lifted by Q, and the eigenvalue 0 on the complement of Q's columns. The leading `d`
/// are taken in the order the dense solver would: positive eigenvalues of RCRᵀ, then
/// null directions (eigenvalue 0, as arbitrary as the dense solver's), then the rest.
pub(crate) fn top_eigenvectors_factored(
    f: &DMatrix<f64>,
    c: &DMatrix<f64>,
    d: usize,
) -> (DMatrix<f64>, Vec<f64>) {
    let dim = f.ncols();
    let m = f.nrows();
    let qr = f.transpose().qr();
    let q = qr.q(); // D × m
    let r = qr.r(); // m × m
    let small = &r * c * r.transpose();
    let (v, values) = super::top_eigenvectors(small, m);
    let positive = values.iter().take_while(|&&l| l > 0.0).count();
    let null = dim - m;
    let mut picks: Vec<(f64, Option<usize>)> = Vec::with_capacity(d);
    let mut k = 0;
    let mut nulls = 0;
    while picks.len() < d {
        if k < positive || (nulls == null && k < m) {
            picks.push((values[k], Some(k)));
            k += 1;
        } else if nulls < null {
            picks.push((0.0, None));
            nulls += 1;
        } else {
            break;
        }
    }
    let chosen: Vec<usize> = picks.iter().filter_map(|p| p.1).collect();
    let lifted = &q * v.select_columns(&chosen);
    let mut g = DMatrix::zeros(dim, d);
    let filled = if nulls > 0 {
        complete_orthonormal(&lifted, Some(&q), chosen.len() + nulls)
    } else {
        lifted
    };
    // Positions: the chosen reduced eigenvectors in order, null directions where picked.
    let mut from_reduced = 0;
    let mut from_null = chosen.len();
    for (c_out, p) in picks.iter().enumerate() {
        let src = if p.1.is_some() {
            from_reduced += 1;
            from_reduced - 1
        } else {
            from_null += 1;
            from_null - 1
        };
        let mut col = filled.column(src).into_owned();
        let pivot = col.iamax();
        if col[pivot] < 0.0 {
            col.neg_mut();
        }
        g.set_column(c_out, &col);
    }
    (g, picks.iter().map(|p| p.0).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::projection::test_support::normals;

    /// ‖P_A − P_B‖_F for the projectors onto the column spaces of A and B (orthonormal
    /// columns): 0 when the subspaces are equal, √2·sin of the largest principal angle
    /// for one differing direction.
    pub(crate) fn projector_distance(a: &DMatrix<f64>, b: &DMatrix<f64>) -> f64 {
        (a * a.transpose() - b * b.transpose()).norm()
    }

    #[test]
    fn span_coordinates_reproduce_the_data_and_lift_orthonormally() {
        for (seed, n, dim) in [(1, 12, 30), (2, 20, 21), (3, 5, 60)] {
            let mut x = DMatrix::from_vec(n, dim, normals(seed, n * dim));
            let mean = x.row_mean();
            for mut row in x.row_iter_mut() {
                row -= &mean;
            }
            let s = Span::new(&x, "test").unwrap();
            // Centred rows: rank n − 1.
            assert_eq!(s.rank(), n - 1);
            assert!((&s.z * s.z.transpose() - &s.gram).norm() < 1e-10 * s.gram.norm());
            let q = s.lift(&x, &DMatrix::identity(s.rank(), s.rank()));
            let eye = DMatrix::<f64>::identity(s.rank(), s.rank());
            assert!((q.transpose() * &q - eye).norm() < 1e-9);
            assert!((&s.z * q.transpose() - &x).norm() < 1e-9 * x.norm());
        }
    }

    #[test]
    fn factored_eigenvectors_equal_the_dense_ones() {
        for (seed, m, dim, d) in [(1, 6, 20, 3), (2, 8, 9, 4), (3, 4, 30, 6), (4, 10, 40, 9)] {
            let f = DMatrix::from_vec(m, dim, normals(seed, m * dim));
            let a = DMatrix::from_vec(m, m, normals(seed + 50, m * m));
            // Indefinite C: some eigenvalues of M negative, so with d large the dense
            // solver reaches the null space before them.
            let c = (&a + a.transpose()) * 0.5;
            let (g, values) = top_eigenvectors_factored(&f, &c, d);
            let dense = f.transpose() * &c * &f;
            let (g_dense, values_dense) = crate::projection::top_eigenvectors(dense, d);
            for (a, b) in values.iter().zip(&values_dense) {
                assert!((a - b).abs() < 1e-9 * values_dense[0].abs(), "seed {seed}");
            }
            // Compare the subspaces of the eigenvectors with nonzero eigenvalues (the
            // null directions are arbitrary in both).
            let keep: Vec<usize> = (0..d).filter(|&k| values[k].abs() > 1e-9).collect();
            let a = g.select_columns(&keep);
            let b = g_dense.select_columns(&keep);
            assert!(projector_distance(&a, &b) < 1e-8, "seed {seed}");
            let eye = DMatrix::<f64>::identity(d, d);
            assert!((g.transpose() * &g - eye).norm() < 1e-10);
        }
    }

    #[test]
    fn generalized_span_solver_equals_the_dense_one() {
        for (seed, n, dim) in [(5, 8, 20), (6, 10, 25)] {
            let x = DMatrix::from_vec(n, dim, normals(seed, n * dim));
            let a = DMatrix::from_vec(n, n, normals(seed + 9, n * n));
            let mw = &a * a.transpose();
            let b = DMatrix::from_vec(n, 2, normals(seed + 19, n * 2));
            let mb = &b * b.transpose();
            let sw = x.transpose() * &mw * &x;
            let sb = x.transpose() * &mb * &x;
            let (w_dense, l_dense) =
                crate::projection::generalized_top_eigenvectors(&sb, &sw, 2, "test").unwrap();
            let s = Span::new(&x, "test").unwrap();
            let swr = s.z.transpose() * &mw * &s.z;
            let sbr = s.z.transpose() * &mb * &s.z;
            let (w, l) = generalized_top_eigenvectors(&sbr, &swr, 2, dim, "test").unwrap();
            let w = s.lift(&x, &w);
            for (a, b) in l.iter().zip(&l_dense) {
                assert!(
                    (a - b).abs() < 1e-8 * l_dense[0],
                    "seed {seed}: {l:?} {l_dense:?}"
                );
            }
            // W Wᵀ is invariant to the columns' signs.
            let diff = (&w * w.transpose() - &w_dense * w_dense.transpose()).norm();
            assert!(
                diff < 1e-7 * (&w_dense * w_dense.transpose()).norm(),
                "seed {seed}"
            );
        }
    }
}
