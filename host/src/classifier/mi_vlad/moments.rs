//! miVLAD with one centre, in closed form from each bag's moments.
//!
//! With a codebook of one entry every instance is assigned to it, so k-means' centre is
//! the mean of the z-scored training instances — 0, since the z-score's μ is their mean —
//! and a bag's vector before the normalisations is Σ (z − c) = n (x̄ − μ) / σ − n c: it
//! needs the bag's count and mean only. The z-score itself combines from the training
//! bags' counts, means and squared deviations (the pairwise update of Chan, Golub &
//! LeVeque 1983, stable where Σ x² − n x̄² is not). So the fit reads each training bag
//! once instead of z-scoring every instance and running Lloyd iterations over them, and a
//! cross-validation reads each bag once for all its folds ([`BagMoments`] depend on the
//! bag alone).

use super::{is_cancelled, normalise};
use crate::data::standardize::{is_round_off, power_of_two_below};
use crate::data::Bag;

/// One bag's moments per feature, each feature divided by the power of two at or below
/// its largest magnitude in the bag (so squares stay finite for any finite data, and
/// dividing and multiplying back is exact).
#[derive(Debug, Clone, PartialEq)]
pub struct BagMoments {
    /// Instances in the bag.
    pub n: usize,
    /// The power of two each feature is divided by.
    pub scale: Vec<f64>,
    /// The scaled features' mean.
    pub mean: Vec<f64>,
    /// The scaled features' summed squared deviations from `mean`.
    pub m2: Vec<f64>,
    /// The scaled features' summed magnitudes.
    pub abs: Vec<f64>,
}

impl BagMoments {
    /// The moments of `bag` (three passes over its instances, in instance order).
    pub fn of(bag: Bag<'_>) -> BagMoments {
        let dim = bag.dim();
        let mut scale = vec![0.0f64; dim];
        for x in bag.instances() {
            scale
                .iter_mut()
                .zip(x)
                .for_each(|(s, v)| *s = s.max(v.abs()));
        }
        scale.iter_mut().for_each(|s| *s = power_of_two_below(*s));
        // Reciprocals of powers of two are exact, so multiplying rounds as dividing does.
        let inv: Vec<f64> = scale.iter().map(|s| 1.0 / s).collect();
        let (mut mean, mut abs) = (vec![0.0; dim], vec![0.0; dim]);
        for x in bag.instances() {
            for (((m, a), v), i) in mean.iter_mut().zip(&mut abs).zip(x).zip(&inv) {
                let y = v * i;
                *m += y;
                *a += y.abs();
            }
        }
        let n = bag.len();
        mean.iter_mut().for_each(|m| *m /= n.max(1) as f64);
        let mut m2 = vec![0.0; dim];
        for x in bag.instances() {
            for ((q, v), (m, i)) in m2.iter_mut().zip(x).zip(mean.iter().zip(&inv)) {
                let d = v * i - m;
                *q += d * d;
            }
        }
        BagMoments {
            n,
            scale,
            mean,
            m2,
            abs,
        }
    }

    /// The bag's mean of feature `j`, unscaled.
    fn mean_of(&self, j: usize) -> f64 {
        self.mean[j] * self.scale[j]
    }
}

/// The population mean and standard deviation per feature of the instances of `bags`
/// (what [`crate::data::standardize::ZScore::fit`] computes from the instances, up to
/// rounding), a deviation that is round-off of a constant feature set to 0.
pub fn zscore(bags: &[&BagMoments], dim: usize) -> (Vec<f64>, Vec<f64>) {
    let total = bags.iter().map(|b| b.n).sum::<usize>().max(1) as f64;
    // Every bag is brought to the largest scale of each feature: a ratio of powers of
    // two, exact (down to subnormals, where a bag's share is below 2⁻¹⁰²² of the
    // largest). Sums run over the bags in order, a feature per accumulator.
    let mut top = vec![f64::MIN_POSITIVE; dim];
    for b in bags {
        top.iter_mut()
            .zip(&b.scale)
            .for_each(|(t, s)| *t = t.max(*s));
    }
    let mut mu = vec![0.0; dim];
    for b in bags {
        let n = b.n as f64;
        for (((m, mean), s), t) in mu.iter_mut().zip(&b.mean).zip(&b.scale).zip(&top) {
            *m += n * mean * (s / t);
        }
    }
    mu.iter_mut().for_each(|m| *m /= total);
    // Within-bag plus between-bag squared deviations.
    let mut m2 = vec![0.0; dim];
    for b in bags {
        let n = b.n as f64;
        for ((((q, bq), mean), s), (t, m)) in m2
            .iter_mut()
            .zip(&b.m2)
            .zip(&b.mean)
            .zip(&b.scale)
            .zip(top.iter().zip(&mu))
        {
            let r = s / t;
            let d = mean * r - m;
            *q += bq * r * r + n * d * d;
        }
    }
    let mut mean = vec![0.0; dim];
    let mut sd = vec![0.0; dim];
    for j in 0..dim {
        mean[j] = mu[j] * top[j];
        let s = (m2[j] / total).sqrt() * top[j];
        sd[j] = if is_round_off(s, mean[j]) { 0.0 } else { s };
    }
    (mean, sd)
}

/// The bag's vector under the z-score (`mean`, `sd`) and the one centre `centre`, with
/// the coordinates that cancel to rounding noise set to 0 and then normalised (what
/// [`super::Encoder::vector`] gives); the sums before the normalisations when `raw`.
pub fn vector(bag: &BagMoments, mean: &[f64], sd: &[f64], centre: &[f64], raw: bool) -> Vec<f64> {
    let n = bag.n as f64;
    let mut v: Vec<f64> = (0..mean.len())
        .map(|j| {
            let (sum, magnitude) = if sd[j] > 0.0 {
                // The operands' magnitudes: Σ |x| and n |μ| through the z-score, n |c|.
                let operands = (bag.abs[j] * bag.scale[j] + n * mean[j].abs()) / sd[j];
                (
                    n * ((bag.mean_of(j) - mean[j]) / sd[j] - centre[j]),
                    operands + n * centre[j].abs(),
                )
            } else {
                // The feature is 0 after the z-score.
                (-n * centre[j], n * centre[j].abs())
            };
            if !raw && is_cancelled(sum, magnitude) {
                0.0
            } else {
                sum
            }
        })
        .collect();
    if !raw {
        normalise(&mut v);
    }
    v
}
