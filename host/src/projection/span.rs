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
//! is kept for D ≤ n, where it is the cheaper one. Two refinements avoid the n³ terms
//! where they can: PCA takes only its d leading eigenpairs of K from the partial solver
//! ([`super::krylov`]), and LFDA/CLFDA take a pivoted-Cholesky basis instead of
//! [`Span`] (`lfda/wide.rs`); K itself costs Σ_j nnz_j² instead of n²D on sparse data
//! ([`gram`]).
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

use super::TrainingInstances;

/// The sparse Gram matrix is used when Σ_j nnz_j², the number of products it costs, is
/// below this share of n²D, the dense product's count (whose SIMD kernel does several
/// per cycle).
const SPARSE_GRAM_SHARE: f64 = 1.0 / 16.0;

/// The Gram matrix K = XXᵀ of the standardised training instances: from the sparse raw
/// values when the data are sparse enough ([`super::SparseRows`]; then
/// K_ij = a_i·a_j − a_i·m − a_j·m + m·m, Σ_j nnz_j² products), otherwise the lower
/// triangle of the dense product (n²D/2 multiply–adds) mirrored.
pub(crate) fn gram(t: &TrainingInstances) -> DMatrix<f64> {
    if let Some(k) = t
        .sparse
        .as_ref()
        .and_then(|sp| sparse_gram(sp, t.len(), t.x.ncols(), false))
    {
        return k;
    }
    dense_gram(&t.x)
}

/// XXᵀ from the dense rows (lower triangle, mirrored).
pub(crate) fn dense_gram(x: &DMatrix<f64>) -> DMatrix<f64> {
    use faer::linalg::matmul::triangular::{matmul as tri_matmul, BlockStructure};
    let n = x.nrows();
    let mut k = DMatrix::<f64>::zeros(n, n);
    tri_matmul(
        faer::MatMut::from_column_major_slice_mut(k.as_mut_slice(), n, n),
        BlockStructure::TriangularLower,
        Accum::Replace,
        view(x),
        BlockStructure::Rectangular,
        view(x).transpose(),
        BlockStructure::Rectangular,
        1.0,
        Par::Seq,
    );
    mirror_lower(&mut k);
    k
}

fn mirror_lower(k: &mut DMatrix<f64>) {
    let n = k.nrows();
    for j in 0..n {
        for i in j + 1..n {
            k[(j, i)] = k[(i, j)];
        }
    }
}

/// The Gram matrix from sparse rows, or None when it would cost more than the dense
/// product (unless `force`).
pub(crate) fn sparse_gram(
    sp: &super::SparseRows,
    n: usize,
    dim: usize,
    force: bool,
) -> Option<DMatrix<f64>> {
    let mut count = vec![0usize; dim + 1];
    sp.cols.iter().for_each(|&c| count[c as usize + 1] += 1);
    let cost: f64 = count.iter().map(|&c| (c * c) as f64).sum();
    if !force && cost > SPARSE_GRAM_SHARE * (n * n) as f64 * dim as f64 {
        return None;
    }
    // Column-compressed copy (rows ascending within a feature).
    for j in 0..dim {
        count[j + 1] += count[j];
    }
    let mut next = count.clone();
    let mut rows = vec![0u32; sp.vals.len()];
    let mut vals = vec![0.0; sp.vals.len()];
    for i in 0..n {
        for p in sp.starts[i]..sp.starts[i + 1] {
            let c = sp.cols[p] as usize;
            rows[next[c]] = i as u32;
            vals[next[c]] = sp.vals[p];
            next[c] += 1;
        }
    }
    let mut k = DMatrix::<f64>::zeros(n, n);
    {
        let data = k.as_mut_slice();
        for j in 0..dim {
            let (r, v) = (&rows[count[j]..count[j + 1]], &vals[count[j]..count[j + 1]]);
            for p in 0..r.len() {
                let (ip, vp) = (r[p] as usize, v[p]);
                // Lower triangle: row ip ≥ column r[q].
                for q in 0..=p {
                    data[r[q] as usize * n + ip] += vp * v[q];
                }
            }
        }
    }
    let s: Vec<f64> = (0..n)
        .map(|i| {
            (sp.starts[i]..sp.starts[i + 1])
                .map(|p| sp.vals[p] * sp.shift[sp.cols[p] as usize])
                .sum()
        })
        .collect();
    let c: f64 = sp.shift.iter().map(|m| m * m).sum();
    for j in 0..n {
        for i in j..n {
            k[(i, j)] += c - s[i] - s[j];
        }
    }
    mirror_lower(&mut k);
    Some(k)
}

/// The `k` leading eigenpairs of a symmetric n × n matrix held in nalgebra, by the
/// partial solver ([`super::krylov`]); eigenvectors as columns (n × k), signs as the
/// solver returns them.
pub(crate) fn top_eigenpairs(
    m: &DMatrix<f64>,
    k: usize,
    method: &'static str,
) -> Result<(Vec<f64>, DMatrix<f64>)> {
    let mv = view(m);
    let mut apply = |v: MatRef<'_, f64>| {
        let mut out = Mat::zeros(mv.nrows(), v.ncols());
        matmul(out.as_mut(), Accum::Replace, mv, v, 1.0, Par::Seq);
        out
    };
    let mut dense = || mv.to_owned();
    let (values, vectors, _) =
        super::krylov::top_eigenpairs(m.nrows(), k, &mut apply, &mut dense, KRYLOV_SEED, method)?;
    Ok((values, to_nalgebra(vectors.as_ref())))
}

/// Seed of the partial eigensolver's start block.
pub(crate) const KRYLOV_SEED: u64 = 0x5eed_1a2c;

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
    let (values, eig) = super::krylov::self_adjoint_eigen(view(m), method)?;
    let (n, u) = (m.nrows(), eig.U());
    let mut vectors = DMatrix::zeros(n, n);
    for (c, k) in (0..n).rev().enumerate() {
        let mut col = nalgebra::DVector::from_fn(n, |i, _| u[(i, k)]);
        let pivot = col.iamax();
        if col[pivot] < 0.0 {
            col.neg_mut();
        }
        vectors.set_column(c, &col);
    }
    Ok((values, vectors))
}

/// Relative size below which an eigenvalue of K is treated as zero: directions with a
/// variance under 10⁻¹² of the largest carry nothing any scatter here can resolve.
pub(crate) const RANK_TOLERANCE: f64 = 1e-12;

/// The row space of the training instances, in the coordinates of an orthonormal basis.
#[derive(Debug, Clone)]
pub(crate) struct Span {
    /// Z = UΛ^{1/2}, n × r: the instances' coordinates (X = ZQᵀ).
    pub z: DMatrix<f64>,
    /// Λ, descending, the r kept eigenvalues of K (squared singular values of X).
    pub values: Vec<f64>,
}

impl Span {
    /// The span of the rows of `x` (n × D).
    #[cfg(test)]
    pub fn new(x: &DMatrix<f64>, method: &'static str) -> Result<Self> {
        Self::from_gram(dense_gram(x), method)
    }

    /// The span of rows whose Gram matrix is `gram`.
    pub fn from_gram(gram: DMatrix<f64>, method: &'static str) -> Result<Self> {
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
        Ok(Span { z, values })
    }

    /// Rank r of the training instances.
    #[cfg(test)]
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
            let gram = dense_gram(&x);
            assert!((&s.z * s.z.transpose() - &gram).norm() < 1e-10 * gram.norm());
            let q = s.lift(&x, &DMatrix::identity(s.rank(), s.rank()));
            let eye = DMatrix::<f64>::identity(s.rank(), s.rank());
            assert!((q.transpose() * &q - eye).norm() < 1e-9);
            assert!((&s.z * q.transpose() - &x).norm() < 1e-9 * x.norm());
        }
    }

    #[test]
    fn sparse_gram_equals_the_dense_product() {
        use crate::projection::{InputScaling, TrainingInstances};
        // Term-count-like rows: mostly zeros, a few small counts, one constant feature.
        for (seed, scaling) in [(1, InputScaling::ZScore), (2, InputScaling::Centre)] {
            let (n, dim) = (30, 200);
            let u = normals(seed, n * dim);
            let rows: Vec<Vec<f64>> = (0..n)
                .map(|i| {
                    (0..dim)
                        .map(|j| match j {
                            0 => 3.0,
                            _ if u[i * dim + j] > 1.6 => (u[i * dim + j] * 2.0).floor(),
                            _ => 0.0,
                        })
                        .collect()
                })
                .collect();
            let data =
                crate::projection::test_support::single_instance_bags(dim, &rows, &vec![0; n]);
            let all: Vec<usize> = (0..n).collect();
            let t = TrainingInstances::new(&data, &all, scaling).unwrap();
            let sp = t.sparse.as_ref().expect("sparse rows kept");
            let sparse = sparse_gram(sp, n, dim, true).unwrap();
            let dense = &t.x * t.x.transpose();
            assert!(
                (&sparse - &dense).norm() <= 1e-12 * dense.norm(),
                "seed {seed}"
            );
            assert!((gram(&t) - &dense).norm() <= 1e-12 * dense.norm());
            assert!((dense_gram(&t.x) - &dense).norm() <= 1e-12 * dense.norm());
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
