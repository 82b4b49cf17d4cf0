//! z-score standardisation fitted on training bags only, so no statistic of a test fold
//! leaks into training.

use serde::{Deserialize, Serialize};

use super::bags::Bags;
use super::dataset::Dataset;
use crate::error::Result;

/// Per-feature mean and standard deviation of the training instances. A feature that is
/// constant on the training instances has `std = 0` and contributes nothing (maps to 0)
/// everywhere, including on test bags where it varies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ZScore {
    /// Mean per feature.
    pub mean: Vec<f64>,
    /// Population standard deviation per feature (0 for a constant feature).
    pub std: Vec<f64>,
}

impl ZScore {
    /// Fits on the instances of the given bags (population statistics, two-pass for
    /// accuracy). Each feature is divided by the power of two at or below its largest
    /// magnitude first, so sums and squares stay finite for any finite data (values near
    /// 10¹⁵⁵ and beyond square past `f64`'s range).
    pub fn fit<'a>(bags: impl Into<Bags<'a>>) -> ZScore {
        let view = bags.into();
        let (data, picked) = (view.dataset(), view.indices());
        let bags: &[usize] = &picked;
        let dim = data.dim();
        // Powers of two: dividing and multiplying back is exact, so the statistics are
        // bit for bit those of the unscaled sums wherever these stay finite.
        let (scale, inv) =
            power_of_two_scales(bags.iter().flat_map(|&b| data.bag(b).instances()), dim);
        let mut mean = vec![0.0; dim];
        let mut count = 0usize;
        for &b in bags {
            for x in data.bag(b).instances() {
                for ((m, v), i) in mean.iter_mut().zip(x).zip(&inv) {
                    *m += v * i;
                }
                count += 1;
            }
        }
        let n = count.max(1) as f64;
        mean.iter_mut().for_each(|m| *m /= n);
        let mut var = vec![0.0; dim];
        for &b in bags {
            for x in data.bag(b).instances() {
                for ((acc, v), (m, i)) in var.iter_mut().zip(x).zip(mean.iter().zip(&inv)) {
                    let d = v * i - m;
                    *acc += d * d;
                }
            }
        }
        let mean: Vec<f64> = mean.iter().zip(&scale).map(|(m, s)| m * s).collect();
        let std = var
            .into_iter()
            .zip(mean.iter().zip(&scale))
            .map(|(acc, (m, s))| {
                let sd = (acc / n).sqrt() * s;
                if is_round_off(sd, *m) {
                    0.0
                } else {
                    sd
                }
            })
            .collect();
        ZScore { mean, std }
    }

    /// Standardises one instance into `out`.
    pub fn apply_row(&self, x: &[f64], out: &mut [f64]) {
        for (j, o) in out.iter_mut().enumerate() {
            *o = if self.std[j] > 0.0 {
                (x[j] - self.mean[j]) / self.std[j]
            } else {
                0.0
            };
        }
    }

    /// Standardises every instance of a data set.
    pub fn apply(&self, data: &Dataset) -> Result<Dataset> {
        let dim = data.dim();
        let mut features = vec![0.0; data.features().len()];
        for (x, out) in data
            .features()
            .chunks_exact(dim)
            .zip(features.chunks_exact_mut(dim))
        {
            self.apply_row(x, out);
        }
        data.with_features(dim, features)
    }

    /// [`ZScore::apply`] keeping only the features that vary on the training instances
    /// (at least one, all 0 when none does): the dropped ones are 0 everywhere after
    /// standardisation, so every distance and dot product is the same, and kernels over
    /// instance pairs (NSK) do not multiply zeros — elephant's 120 constant columns of
    /// 230 are half its products.
    pub fn apply_active(&self, data: &Dataset) -> Result<Dataset> {
        let dim = data.dim();
        let active: Vec<usize> = (0..dim).filter(|&j| self.std[j] > 0.0).collect();
        if active.len() == dim {
            return self.apply(data);
        }
        let kept = active.len().max(1);
        let mut features = vec![0.0; data.n_instances() * kept];
        for (x, out) in data
            .features()
            .chunks_exact(dim)
            .zip(features.chunks_exact_mut(kept))
        {
            for (o, &j) in out.iter_mut().zip(&active) {
                *o = (x[j] - self.mean[j]) / self.std[j];
            }
        }
        data.with_features(kept, features)
    }
}

/// Whether a feature's deviation `sd` around its mean `mean` is round-off, the feature
/// constant: the sum of a constant column divided by its count is rarely the value
/// itself, and the spread around that mean is then ~10⁻¹⁶·|mean|, not 0. Dividing by it
/// would send a later value that differs to ~10¹⁶. [`ZScore`] and the instance
/// standardisations of MILES, mi-SVM, sMIL and the attention network treat such a
/// feature as constant (deviation 0).
pub fn is_round_off(sd: f64, mean: f64) -> bool {
    sd <= 1e-12 * mean.abs().max(1.0)
}

/// Per feature, the power of two at or below the largest magnitude among `rows`
/// ([`power_of_two_below`]), and its reciprocal: a power of two as well (2⁻¹⁰²³ at least,
/// subnormal but exact), so multiplying by it rounds as dividing does, at a fraction of
/// the cost.
pub fn power_of_two_scales<'a>(
    rows: impl IntoIterator<Item = &'a [f64]>,
    dim: usize,
) -> (Vec<f64>, Vec<f64>) {
    let mut scale = vec![0.0f64; dim];
    for x in rows {
        scale
            .iter_mut()
            .zip(x)
            .for_each(|(s, v)| *s = s.max(v.abs()));
    }
    scale.iter_mut().for_each(|s| *s = power_of_two_below(*s));
    let inv = scale.iter().map(|s| 1.0 / s).collect();
    (scale, inv)
}

/// The largest power of two at most `x` — `x` with its mantissa cleared — or 1 for a
/// subnormal, zero or non-finite `x`: a scale that divides and multiplies back exactly.
pub fn power_of_two_below(x: f64) -> f64 {
    if x.is_finite() && x >= f64::MIN_POSITIVE {
        f64::from_bits(x.to_bits() & 0x7ff0_0000_0000_0000)
    } else {
        1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics_scale_with_the_data_without_overflow() {
        let feats = [1.0, -3.0, 2.5, 0.0, 4.0, 7.0, -0.5, 2.0];
        let d = |scale: f64| {
            Dataset::new(
                "t",
                2,
                feats.iter().map(|v| v * scale).collect(),
                vec![0, 2, 4],
                vec!["a".into(), "b".into()],
                None,
                vec![],
            )
            .unwrap()
        };
        let plain = ZScore::fit(&d(1.0));
        // A power of two scales every sum exactly.
        let p500 = 2f64.powi(500);
        let big = ZScore::fit(&d(p500));
        for j in 0..2 {
            assert_eq!(big.mean[j], plain.mean[j] * p500);
            assert_eq!(big.std[j], plain.std[j] * p500);
        }
        // 10¹⁵⁵: the squares overflow f64, the statistics do not.
        let huge = ZScore::fit(&d(1e155));
        for j in 0..2 {
            assert!((huge.std[j] / 1e155 - plain.std[j]).abs() <= 1e-12 * plain.std[j]);
            assert!((huge.mean[j] / 1e155 - plain.mean[j]).abs() <= 1e-12 * plain.mean[j].abs());
        }
        assert_eq!(power_of_two_below(3.0), 2.0);
        assert_eq!(power_of_two_below(0.0), 1.0);
        assert_eq!(power_of_two_below(f64::MAX), 2f64.powi(1023));
        assert_eq!(power_of_two_below(0.75), 0.5);
        assert_eq!(power_of_two_below(-1.0), 1.0);
    }

    #[test]
    fn statistics_are_those_of_the_plain_two_pass_sums() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(3);
        let mut checked = 0;
        for _ in 0..200 {
            let (dim, n) = (rng.random_range(1..6), rng.random_range(1..40));
            // Each feature at its own magnitude, its values spread over six decades.
            let exponent: Vec<i32> = (0..dim).map(|_| rng.random_range(-140..140)).collect();
            let x: Vec<f64> = (0..dim * n)
                .map(|i| {
                    let e = exponent[i % dim] + rng.random_range(-3..3);
                    rng.random_range(-1.0..1.0) * 10f64.powi(e)
                })
                .collect();
            let data = Dataset::new(
                "t",
                dim,
                x.clone(),
                vec![0, n],
                vec!["a".into()],
                None,
                vec![],
            )
            .unwrap();
            let z = ZScore::fit(&data);
            for j in 0..dim {
                // The plain sums, wherever their squares stay finite and normal.
                let col: Vec<f64> = x.iter().skip(j).step_by(dim).copied().collect();
                let mean = col.iter().sum::<f64>() / n as f64;
                let var = col.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>();
                if !(var.is_finite() && (var == 0.0 || var > 1e-290)) {
                    continue;
                }
                assert_eq!(z.mean[j], mean);
                let sd = (var / n as f64).sqrt();
                assert_eq!(z.std[j], if is_round_off(sd, mean) { 0.0 } else { sd });
                checked += 1;
            }
        }
        assert!(checked > 300, "{checked} features compared");
    }

    #[test]
    fn active_columns_keep_every_distance() {
        // Features 0 and 2 constant on the training bag, 1 and 3 varying: the kept
        // columns are the standardised 1 and 3, so squared distances are the same.
        let d = Dataset::new(
            "t",
            4,
            vec![
                2.0, 1.0, 9.0, -1.0, //
                2.0, 4.0, 9.0, 0.5, //
                2.0, -3.0, 9.0, 7.0, //
                5.0, 0.0, 1.0, 2.0,
            ],
            vec![0, 3, 4],
            vec!["a".into(), "b".into()],
            None,
            vec![],
        )
        .unwrap();
        let z = ZScore::fit(d.select(&[0][..]));
        let (full, kept) = (z.apply(&d).unwrap(), z.apply_active(&d).unwrap());
        assert_eq!(kept.dim(), 2);
        for (f, k) in full
            .features()
            .chunks_exact(4)
            .zip(kept.features().chunks_exact(2))
        {
            assert_eq!([f[1], f[3]], [k[0], k[1]]);
            assert_eq!([f[0], f[2]], [0.0, 0.0]);
        }
        // Nothing varies: one column of zeros.
        let none = ZScore::fit(d.select(&[1][..])).apply_active(&d).unwrap();
        assert_eq!(none.dim(), 1);
        assert!(none.features().iter().all(|&v| v == 0.0));
    }

    #[test]
    fn fits_on_training_bags_only() {
        // Bag 0: x = 1, 3 (feature 2 constant 5); bag 1: x = 100 (held out).
        let d = Dataset::new(
            "t",
            2,
            vec![1.0, 5.0, 3.0, 5.0, 100.0, 7.0],
            vec![0, 2, 3],
            vec!["a".into(), "b".into()],
            None,
            vec![],
        )
        .unwrap();
        let z = ZScore::fit(d.select(&[0][..]));
        assert_eq!(z.mean, vec![2.0, 5.0]);
        assert_eq!(z.std, vec![1.0, 0.0]);
        let s = z.apply(&d).unwrap();
        assert_eq!(s.features(), &[-1.0, 0.0, 1.0, 0.0, 98.0, 0.0]);
    }
}
