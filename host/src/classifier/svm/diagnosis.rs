//! A Gram matrix the SVM cannot learn from, named for what it is.
//!
//! The SVM sees bags only through their kernel values. Normalised, c(X, Y) =
//! k(X, Y) / √(k(X, X) k(Y, Y)) is the similarity of two bags (1 for identical bags).
//! When every pair of distinct training bags has similarity ≈ 0, the kernel is the
//! identity: no bag says anything about another, the decision value of a new bag is
//! about the bias, and every bag gets the majority class. When every pair has similarity
//! ≈ 1 the kernel is a constant, with the same result. Both happen with the box kernels'
//! ρ or the MI kernel's γ far from the data's scale: with many features the box counts of
//! two different bags differ by hundreds of orders of magnitude, and a fixed ρ = 1/50
//! leaves them orders of magnitude apart. The scaled ρ ([`super::Rho::Scaled`], the
//! default) avoids both by construction.

use std::fmt;

use super::bags::{BagSvmSettings, Rho};
use super::SetKernel;

/// Largest off-diagonal similarity of a kernel taken for the identity.
pub const IDENTITY_SIMILARITY: f64 = 0.01;
/// Smallest off-diagonal similarity of a kernel taken for a constant.
pub const CONSTANT_SIMILARITY: f64 = 0.99;

/// Why a Gram matrix gives the SVM nothing to learn from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum GramDiagnosis {
    /// Every pair of distinct training bags has normalised similarity at most
    /// `largest` (below [`IDENTITY_SIMILARITY`]).
    Identity {
        /// The largest similarity of two distinct bags.
        largest: f64,
    },
    /// Every pair has similarity at least `smallest` (above [`CONSTANT_SIMILARITY`]).
    Constant {
        /// The smallest similarity of two distinct bags.
        smallest: f64,
    },
}

impl GramDiagnosis {
    /// The diagnosis of the kernel `kernel` (row-major `n × n`, as the SVM sees it) on
    /// the bags `train`; `None` when the similarities of distinct bags spread beyond
    /// both thresholds or there are fewer than two bags. A bag with a non-positive
    /// self-similarity has no direction, so the matrix is not diagnosed.
    ///
    /// ```
    /// use mil_toolkit::classifier::svm::GramDiagnosis;
    ///
    /// let identity = [1.0, 1e-4, 1e-4, 1.0];
    /// assert!(matches!(
    ///     GramDiagnosis::of(&identity, 2, &[0, 1]),
    ///     Some(GramDiagnosis::Identity { .. })
    /// ));
    /// let useful = [1.0, 0.3, 0.3, 1.0];
    /// assert_eq!(GramDiagnosis::of(&useful, 2, &[0, 1]), None);
    /// ```
    pub fn of(kernel: &[f64], n: usize, train: &[usize]) -> Option<GramDiagnosis> {
        let (smallest, largest) = similarity_range(kernel, n, train)?;
        if largest <= IDENTITY_SIMILARITY {
            Some(GramDiagnosis::Identity { largest })
        } else if smallest >= CONSTANT_SIMILARITY {
            Some(GramDiagnosis::Constant { smallest })
        } else {
            None
        }
    }

    /// The setting that fixes it for `kernel` with SVM settings `settings`. For the box
    /// kernels and the NSK the scaled ρ ([`Rho::scaled`]): it puts the median similarity
    /// of `log_gram`'s training bags at [`super::SCALED_SIMILARITY`] (`log_gram`: ln k
    /// over `n` bags).
    pub fn remedy(
        &self,
        kernel: &SetKernel,
        settings: &BagSvmSettings,
        log_gram: &[f64],
        n: usize,
        train: &[usize],
    ) -> String {
        let lower = matches!(self, GramDiagnosis::Identity { .. });
        match kernel {
            SetKernel::Box { .. } | SetKernel::Nsk { .. } if settings.rho != Rho::scaled() => {
                let rho = settings.rho.resolve(log_gram, n, train);
                let scaled = Rho::scaled().resolve(log_gram, n, train);
                if (lower && scaled < rho) || (!lower && scaled > rho) {
                    format!(
                        "use rho {scaled:.3e} (rho scaled: it puts the median similarity of the training bags at {}; rho is {rho})",
                        super::SCALED_SIMILARITY
                    )
                } else if lower {
                    format!("lower rho below {rho}")
                } else {
                    format!("raise rho above {rho}")
                }
            }
            // Only a ρ clamped at 1 leaves the scaled median similarity above its target.
            SetKernel::Box { .. } if lower => "lower rho".to_string(),
            SetKernel::Box { .. } => {
                "raise the precision (finer boxes tell near bags apart)".to_string()
            }
            SetKernel::MiRbf { gamma } => {
                if lower {
                    format!("lower gamma below {gamma} (e.g. {})", gamma.times(0.1))
                } else {
                    format!("raise gamma above {gamma} (e.g. {})", gamma.times(10.0))
                }
            }
            SetKernel::Nsk { gamma: Some(gamma) } => {
                if lower {
                    format!("lower gamma below {gamma} (e.g. {})", gamma / 10.0)
                } else {
                    format!("raise gamma above {gamma} (e.g. {})", gamma * 10.0)
                }
            }
            SetKernel::Nsk { gamma: None } => {
                format!("{} gamma", if lower { "lower" } else { "raise" })
            }
        }
    }
}

impl fmt::Display for GramDiagnosis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GramDiagnosis::Identity { largest } => write!(
                f,
                "the normalised Gram matrix is numerically the identity: no two training bags have a similarity above {largest:.2e}, so no bag informs the label of another"
            ),
            GramDiagnosis::Constant { smallest } => write!(
                f,
                "the normalised Gram matrix is numerically a constant: every two training bags have a similarity of at least {smallest:.6}, so the kernel cannot tell bags apart"
            ),
        }
    }
}

/// Smallest and largest c(X, Y) over distinct training bags.
fn similarity_range(kernel: &[f64], n: usize, train: &[usize]) -> Option<(f64, f64)> {
    if train.len() < 2
        || train
            .iter()
            .any(|&i| kernel[i * n + i].is_nan() || kernel[i * n + i] <= 0.0)
    {
        return None;
    }
    let mut range = (f64::INFINITY, f64::NEG_INFINITY);
    for (a, &i) in train.iter().enumerate() {
        for &j in &train[a + 1..] {
            let c = kernel[i * n + j] / (kernel[i * n + i] * kernel[j * n + j]).sqrt();
            range = (range.0.min(c), range.1.max(c));
        }
    }
    Some(range)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classifier::svm::maps::subpolynomial_from_log;

    /// ln k of bags whose pairs sit `gap` below the geometric mean of their self values.
    fn log_gram(n: usize, gap: impl Fn(usize, usize) -> f64) -> Vec<f64> {
        let mut g = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                g[i * n + j] = if i == j { 1000.0 } else { 1000.0 - gap(i, j) };
            }
        }
        g
    }

    fn mapped(log: &[f64], rho: f64) -> Vec<f64> {
        log.iter()
            .map(|&l| subpolynomial_from_log(l, rho))
            .collect()
    }

    #[test]
    fn far_apart_bags_give_the_identity_and_the_suggested_rho_centres_the_median() {
        let n = 7;
        let log = log_gram(n, |i, j| 300.0 + (i + j) as f64);
        let train: Vec<usize> = (0..n).collect();
        let settings = BagSvmSettings::paper();
        let k = mapped(&log, super::super::PAPER_RHO);
        let d = GramDiagnosis::of(&k, n, &train).expect("diagnosed");
        assert!(matches!(d, GramDiagnosis::Identity { .. }), "{d:?}");
        let remedy = d.remedy(&SetKernel::default(), &settings, &log, n, &train);
        // Brute force: the median of the pairs' gaps, and the ρ that maps it to the scaled
        // similarity.
        let mut gaps: Vec<f64> = (0..n)
            .flat_map(|i| (i + 1..n).map(move |j| 300.0 + (i + j) as f64))
            .collect();
        gaps.sort_by(f64::total_cmp);
        let want = -(super::super::SCALED_SIMILARITY.ln()) / gaps[gaps.len() / 2];
        assert!(remedy.contains(&format!("{want:.3e}")), "{remedy} / {want}");
        let k = mapped(&log, want);
        assert_eq!(GramDiagnosis::of(&k, n, &train), None);
        let mid = subpolynomial_from_log(log[1] - 0.5 * (log[0] + log[n + 1]), want);
        assert!(mid > IDENTITY_SIMILARITY && mid < CONSTANT_SIMILARITY);
    }

    #[test]
    fn near_bags_give_a_constant_and_the_remedy_raises_the_setting() {
        let n = 5;
        let log = log_gram(n, |i, j| 0.01 * (1 + i + j) as f64);
        let train: Vec<usize> = (0..n).collect();
        let settings = BagSvmSettings::paper();
        let d = GramDiagnosis::of(&mapped(&log, super::super::PAPER_RHO), n, &train)
            .expect("diagnosed");
        assert!(matches!(d, GramDiagnosis::Constant { .. }), "{d:?}");
        let remedy = d.remedy(&SetKernel::default(), &settings, &log, n, &train);
        assert!(remedy.starts_with("use rho"), "{remedy}");
        let gamma = d.remedy(
            &SetKernel::MiRbf { gamma: 0.5.into() },
            &settings,
            &log,
            n,
            &train,
        );
        assert!(gamma.starts_with("raise gamma above 0.5"), "{gamma}");
    }

    #[test]
    fn a_spread_of_similarities_is_not_diagnosed() {
        // Two clusters: similar within, far between.
        let n = 6;
        let log = log_gram(n, |i, j| if (i < 3) == (j < 3) { 0.1 } else { 400.0 });
        let k = mapped(&log, 0.02);
        let train: Vec<usize> = (0..n).collect();
        assert_eq!(GramDiagnosis::of(&k, n, &train), None);
        // Only the training bags count: one cluster alone is a constant.
        assert!(matches!(
            GramDiagnosis::of(&k, n, &[0, 1, 2]),
            Some(GramDiagnosis::Constant { .. })
        ));
    }
}
