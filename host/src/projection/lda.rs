//! Fisher linear discriminant analysis with bag labels as instance labels: the
//! supervised baseline of both discriminant papers (MIDA §5.1: "for LDA, we simply
//! utilize bag labels as instance labels"). At most C − 1 directions exist.

use nalgebra::DMatrix;

use super::lfda::pad_columns;
use super::span::{self, Span};
use super::{
    generalized_top_eigenvectors, weight_by_eigenvalues, InputScaling, LinearProjection,
    ProjectionKind, Projector, TrainingInstances,
};
use crate::data::Bags;

use crate::error::{Error, Result};

/// Fisher LDA onto `dim ≤ C − 1` directions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lda {
    /// Output dimension d.
    pub dim: usize,
}

/// Classic within-class and between-class scatter of labelled rows:
/// S_W = Σ_c Σ_{i∈c} (x_i − μ_c)(x_i − μ_c)ᵀ, S_B = Σ_c n_c (μ_c − μ)(μ_c − μ)ᵀ.
pub(crate) fn fisher_scatters(
    x: &DMatrix<f64>,
    labels: &[usize],
    classes: usize,
) -> (DMatrix<f64>, DMatrix<f64>) {
    let dim = x.ncols();
    let mut means = DMatrix::zeros(classes, dim);
    let mut counts = vec![0usize; classes];
    for (r, &c) in labels.iter().enumerate() {
        let mut row = means.row_mut(c);
        row += x.row(r);
        counts[c] += 1;
    }
    let mut centred = x.clone();
    for (r, &c) in labels.iter().enumerate() {
        let mean = means.row(c) / counts[c] as f64;
        let mut row = centred.row_mut(r);
        row -= mean;
    }
    let sw = centred.transpose() * &centred;
    let total_mean = x.row_sum() / x.nrows() as f64;
    let mut sb = DMatrix::zeros(dim, dim);
    for c in (0..classes).filter(|&c| counts[c] > 0) {
        let diff = (means.row(c) / counts[c] as f64 - &total_mean).transpose();
        sb += &diff * diff.transpose() * counts[c] as f64;
    }
    (sw, sb)
}

impl Default for Lda {
    /// d = 1: LDA has at most C − 1 directions, one for binary data.
    fn default() -> Self {
        Lda { dim: 1 }
    }
}

crate::params::setters!(Lda { dim: usize });

impl Projector for Lda {
    fn fit<'a>(&self, train: impl Into<Bags<'a>>) -> Result<LinearProjection> {
        let train = train.into();
        super::check_fit(self.dim, &train)?;
        let (data, train) = (train.dataset(), &*train.indices());
        let bag_labels = data.training_labels(train, 2)?;
        let classes = data.n_classes();
        if self.dim + 1 > classes {
            return Err(Error::parameter(
                "dim",
                self.dim,
                format!("LDA has at most C − 1 = {} direction(s)", classes - 1),
            ));
        }
        let t = TrainingInstances::new(data, train, InputScaling::ZScore)?;
        let labels: Vec<usize> = t.bag_of.iter().map(|&k| bag_labels[k]).collect();
        let (w, values) = if t.is_wide() {
            // Span path (D > n): the same problem in span coordinates, lifted back.
            let s = Span::from_gram(span::gram(&t), "LDA")?;
            let (sw, sb) = fisher_scatters(&s.z, &labels, classes);
            let (mut w, mut values) =
                span::generalized_top_eigenvectors(&sb, &sw, self.dim, t.x.ncols(), "LDA")?;
            weight_by_eigenvalues(&mut w, &values);
            values.resize(self.dim, 0.0);
            (pad_columns(s.lift(&t.x, &w), self.dim), values)
        } else {
            let (sw, sb) = fisher_scatters(&t.x, &labels, classes);
            let (mut w, values) = generalized_top_eigenvectors(&sb, &sw, self.dim, "LDA")?;
            weight_by_eigenvalues(&mut w, &values);
            (w, values)
        };
        Ok(t.projection(
            ProjectionKind::Lda,
            &w,
            vec![("fisher_ratio".into(), values[0])],
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::projection::test_support::*;

    #[test]
    fn recovers_the_bayes_direction_of_two_gaussians() {
        // Shared covariance Σ = [[4, 1.5], [1.5, 1]], means 0 and (1, 1): Fisher's
        // direction is Σ⁻¹Δμ ∝ (−0.5, 2.5) — not the mean difference (1, 1).
        for seed in 0..5 {
            let z = normals(seed, 24000);
            let mut rows = Vec::new();
            let mut labels = Vec::new();
            for (i, p) in z.chunks(3).enumerate() {
                // L = chol(Σ) = [[2, 0], [0.75, √(1 − 0.5625)]].
                let (a, b) = (2.0 * p[0], 0.75 * p[0] + 0.4375f64.sqrt() * p[1]);
                let c = i % 2;
                rows.push(vec![a + c as f64, b + c as f64, 3.0 * p[2]]);
                labels.push(c);
            }
            // The third feature is pure noise: its LDA weight must vanish.
            let data = single_instance_bags(3, &rows, &labels);
            let p = Lda { dim: 1 }.fit(&data).unwrap();
            let dir = raw_direction(&p, 0);
            // Σ⁻¹(1, 1) with det Σ = 1.75: (1 − 1.5, −1.5 + 4)/1.75 = (−0.5, 2.5)/1.75.
            let truth = [-0.5, 2.5, 0.0];
            assert!(abs_cosine(&dir, &truth) > 0.995, "seed {seed}: {dir:?}");
        }
    }

    #[test]
    fn refuses_more_than_c_minus_one_directions() {
        let rows = vec![
            vec![0.0, 1.0],
            vec![1.0, 0.0],
            vec![2.0, 1.0],
            vec![1.0, 3.0],
        ];
        let data = single_instance_bags(2, &rows, &[0, 1, 0, 1]);
        assert!(Lda { dim: 2 }.fit(data.select(&[0, 1, 2, 3])).is_err());
        assert!(Lda { dim: 1 }.fit(data.select(&[0, 2])).is_err());
        assert!(Lda { dim: 1 }.fit(data.select(&[0, 1, 2, 3])).is_ok());
    }
}
