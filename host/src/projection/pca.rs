//! Principal component analysis: the unsupervised baseline of both discriminant papers
//! (MIDA §5, CLFDA §4). Every training instance counts once; labels are ignored.

use super::span::{self, complete_orthonormal};
use super::{
    top_eigenvectors, InputScaling, LinearProjection, ProjectionKind, Projector, TrainingInstances,
};
use crate::data::Bags;

use crate::error::Result;
#[cfg(test)]
use nalgebra::DMatrix;

/// PCA onto the `dim` leading principal axes of the z-scored training instances.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pca {
    /// Output dimension d.
    pub dim: usize,
}

impl Default for Pca {
    fn default() -> Self {
        Pca {
            dim: super::DEFAULT_DIM,
        }
    }
}

crate::params::setters!(Pca { dim: usize });

impl Projector for Pca {
    fn fit<'a>(&self, train: impl Into<Bags<'a>>) -> Result<LinearProjection> {
        let train = train.into();
        super::check_fit(self.dim, &train)?;
        let (data, train) = (train.dataset(), &*train.indices());
        let t = TrainingInstances::new(data, train, InputScaling::ZScore)?;
        if t.is_wide() {
            return self.fit_span(&t);
        }
        // The z-scored instances have zero mean, so XᵀX/n is their covariance
        // (the correlation matrix of the raw features).
        let cov = t.x.transpose() * &t.x / t.len() as f64;
        let total = cov.trace();
        let (g, values) = top_eigenvectors(cov, self.dim);
        let kept: f64 = values.iter().map(|v| v.max(0.0)).sum();
        let explained = if total > 0.0 { kept / total } else { 0.0 };
        Ok(t.projection(
            ProjectionKind::Pca,
            &g,
            vec![("explained_variance".into(), explained)],
        ))
    }
}

impl Pca {
    /// The span path (D > n): the eigenvectors of XᵀX/n with nonzero eigenvalues are the
    /// columns of Q = XᵀUΛ^{-1/2} for K = XXᵀ = UΛUᵀ, with the same eigenvalues Λ/n; the
    /// leading `dim` of them are Xᵀ(U_dΛ_d^{-1/2}), and only those d pairs of K are
    /// computed (the partial solver of [`super::krylov`]). If `dim` exceeds the rank,
    /// the rest are null directions (eigenvalue 0), as the dense solver's.
    fn fit_span(&self, t: &TrainingInstances) -> Result<LinearProjection> {
        let gram = span::gram(t);
        let n = t.len();
        let total = gram.trace() / n as f64;
        let (values, u) = span::top_eigenpairs(&gram, self.dim.min(n), "PCA")?;
        drop(gram);
        let top = values.first().copied().unwrap_or(0.0).max(0.0);
        let k = values
            .iter()
            .take_while(|&&v| v > span::RANK_TOLERANCE * top && v > 0.0)
            .count();
        let mut coefficients = u.columns(0, k).into_owned();
        for (c, &l) in values.iter().take(k).enumerate() {
            coefficients.column_mut(c).scale_mut(1.0 / l.sqrt());
        }
        let g = span::at_b(&t.x, &coefficients);
        let mut g = complete_orthonormal(&g, None, self.dim);
        for mut col in g.column_iter_mut() {
            let pivot = col.iamax();
            if col[pivot] < 0.0 {
                col.neg_mut();
            }
        }
        let kept: f64 = values.iter().take(k).sum::<f64>() / n as f64;
        let explained = if total > 0.0 { kept / total } else { 0.0 };
        Ok(t.projection(
            ProjectionKind::Pca,
            &g,
            vec![("explained_variance".into(), explained)],
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::projection::test_support::*;

    #[test]
    fn the_span_path_equals_the_dense_path() {
        for (seed, bags, size, dim, d) in [(1, 6, 3, 40, 3), (2, 10, 2, 25, 5), (3, 4, 4, 90, 2)] {
            let data = wide_set(seed, bags, size, dim, 2);
            let all: Vec<usize> = (0..bags).collect();
            let p = Pca { dim: d }.fit(&data).unwrap();
            let t = TrainingInstances::new(&data, &all, InputScaling::ZScore).unwrap();
            assert!(t.is_wide());
            let cov = t.x.transpose() * &t.x / t.len() as f64;
            let (g_dense, _) = crate::projection::top_eigenvectors(cov, d);
            let g = DMatrix::from_row_slice(dim, d, &p.matrix);
            let gap = (&g * g.transpose() - &g_dense * g_dense.transpose()).norm();
            assert!(gap < 1e-8, "seed {seed}: {gap}");
            // Column by column, up to sign.
            for c in 0..d {
                let a: Vec<f64> = g.column(c).iter().copied().collect();
                let b: Vec<f64> = g_dense.column(c).iter().copied().collect();
                assert!(
                    (abs_cosine(&a, &b) - 1.0).abs() < 1e-8,
                    "seed {seed} axis {c}"
                );
            }
            assert!(orthonormality_error(&p) < 1e-9);
        }
    }

    #[test]
    fn more_directions_than_the_rank_are_completed_orthonormally() {
        let data = wide_set(4, 3, 2, 30, 2);
        let p = Pca { dim: 8 }.fit(data.select(&[0, 1, 2])).unwrap();
        assert!(orthonormality_error(&p) < 1e-9);
        assert!((p.diagnostic("explained_variance").unwrap() - 1.0).abs() < 1e-9);
    }

    #[test]
    fn two_correlated_features_give_the_closed_form_axes() {
        // After z-scoring, the covariance of two features is [[1, ρ], [ρ, 1]]: its
        // principal axes are (1, 1)/√2 (variance 1 + ρ) and (1, −1)/√2 (1 − ρ).
        for seed in 0..10 {
            let z = normals(seed, 400);
            let rows: Vec<Vec<f64>> = z
                .chunks(2)
                .map(|p| vec![3.0 * p[0] + 10.0, 0.5 * (p[0] + 0.3 * p[1])])
                .collect();
            let data = single_instance_bags(2, &rows, &vec![0; rows.len()]);
            let all: Vec<usize> = (0..rows.len()).collect();
            let p = Pca { dim: 2 }.fit(&data).unwrap();
            let h = std::f64::consts::FRAC_1_SQRT_2;
            assert!((p.matrix[0] - h).abs() < 1e-12 && (p.matrix[2] - h).abs() < 1e-12);
            assert!((p.matrix[1].abs() - h).abs() < 1e-12);
            assert!((p.matrix[1] + p.matrix[3]).abs() < 1e-12);
            assert!(orthonormality_error(&p) < 1e-12);
            // The sample correlation gives the explained share (1 + ρ)/2.
            let t = TrainingInstances::new(&data, &all, InputScaling::ZScore).unwrap();
            let rho = t.x.column(0).dot(&t.x.column(1)) / rows.len() as f64;
            let share = p.diagnostic("explained_variance").unwrap();
            let q = Pca { dim: 1 }.fit(&data).unwrap();
            assert!((share - 1.0).abs() < 1e-12);
            assert!(
                (q.diagnostic("explained_variance").unwrap() - (1.0 + rho) / 2.0).abs() < 1e-12
            );
        }
    }

    #[test]
    fn agrees_with_the_svd_of_the_standardised_data() {
        let z = normals(7, 600);
        let rows: Vec<Vec<f64>> = z
            .chunks(6)
            .map(|r| {
                vec![
                    r[0] + r[1],
                    2.0 * r[1],
                    r[2] - r[0],
                    r[3],
                    r[4] * 0.1 + r[0],
                    r[5],
                ]
            })
            .collect();
        let data = single_instance_bags(6, &rows, &vec![0; rows.len()]);
        let all: Vec<usize> = (0..rows.len()).collect();
        let p = Pca { dim: 3 }.fit(&data).unwrap();
        let t = TrainingInstances::new(&data, &all, InputScaling::ZScore).unwrap();
        let svd = t.x.clone().svd(false, true);
        let vt = svd.v_t.unwrap();
        let mut order: Vec<usize> = (0..6).collect();
        order.sort_by(|&a, &b| svd.singular_values[b].total_cmp(&svd.singular_values[a]));
        let g = DMatrix::from_row_slice(6, 3, &p.matrix);
        for (c, &k) in order.iter().take(3).enumerate() {
            let v: Vec<f64> = vt.row(k).iter().copied().collect();
            let col: Vec<f64> = g.column(c).iter().copied().collect();
            assert!((abs_cosine(&v, &col) - 1.0).abs() < 1e-9, "axis {c}");
        }
        assert!(orthonormality_error(&p) < 1e-12);
    }

    #[test]
    fn a_constant_feature_gets_no_weight() {
        let z = normals(3, 200);
        let rows: Vec<Vec<f64>> = z.chunks(2).map(|p| vec![p[0], 5.0, p[1]]).collect();
        let data = single_instance_bags(3, &rows, &vec![0; rows.len()]);
        let p = Pca { dim: 2 }.fit(&data).unwrap();
        assert_eq!(p.scale[1], 0.0);
        assert!(p.matrix[2].abs() < 1e-12 && p.matrix[3].abs() < 1e-12);
    }
}
