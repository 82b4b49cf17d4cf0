//! miVLAD with one centre and miFV with one component, in closed form from each bag's
//! moments.
//!
//! With a codebook of one entry every instance is assigned to it, so k-means' centre is
//! the mean of the z-scored training instances — 0, since the z-score's μ is their mean —
//! and a bag's vector before the normalisations is Σ (z − c) = n (x̄ − μ) / σ − n c: it
//! needs the bag's count and mean only. miFV's one Gaussian is the z-scored instances'
//! mean and variance (0 and 1; the floor for a constant feature), and a bag's Fisher
//! vector needs its squared deviations as well. The z-score itself combines from the
//! training bags' counts, means and squared deviations (the pairwise update of Chan,
//! Golub & LeVeque 1983, stable where Σ x² − n x̄² is not). So the fit reads each
//! training bag once instead of z-scoring every instance and running k-means (and EM)
//! over them, and a cross-validation reads each bag once for all its folds
//! ([`BagMoments`] depend on the bag alone).

use super::{is_cancelled, normalise, Codebook, Encoder, Gmm};
use crate::data::standardize::{is_round_off, power_of_two_scales};
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
        let (scale, inv) = power_of_two_scales(bag.instances(), dim);
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

/// The bag's vector under `encoder` (whose codebook has one entry), with the
/// coordinates that cancel to rounding noise set to 0 and then normalised (what
/// [`super::Encoder::vector`] gives); the sums before the normalisations when `raw`.
pub fn vector(bag: &BagMoments, encoder: &Encoder, raw: bool) -> Vec<f64> {
    let (mut v, magnitude) = match &encoder.codebook {
        Codebook::Vlad { centres } => vlad(bag, encoder, centres),
        Codebook::Fisher(gmm) => fisher(bag, encoder, gmm),
    };
    if !raw {
        for (x, m) in v.iter_mut().zip(magnitude) {
            if is_cancelled(*x, m) {
                *x = 0.0;
            }
        }
        normalise(&mut v);
    }
    v
}

/// For feature `j`: the bag's z-scored mean z̄, its squared deviations about z̄ summed,
/// and Σ |x| + n |μ| through the z-score (the magnitudes of the operands of Σ z); all 0
/// for a feature of deviation 0, which the z-score maps to 0.
fn zscored(bag: &BagMoments, encoder: &Encoder, j: usize) -> (f64, f64, f64) {
    let sd = encoder.sd[j];
    if sd > 0.0 {
        let mean = encoder.mean[j];
        let ratio = bag.scale[j] / sd;
        (
            (bag.mean_of(j) - mean) / sd,
            bag.m2[j] * ratio * ratio,
            (bag.abs[j] * bag.scale[j] + bag.n as f64 * mean.abs()) / sd,
        )
    } else {
        (0.0, 0.0, 0.0)
    }
}

/// miVLAD with the one centre c: Σ (z − c) = n (z̄ − c), and its operands' magnitudes.
fn vlad(bag: &BagMoments, encoder: &Encoder, centre: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let n = bag.n as f64;
    (0..encoder.dim())
        .map(|j| {
            let (zbar, _, operands) = zscored(bag, encoder, j);
            (n * (zbar - centre[j]), operands + n * centre[j].abs())
        })
        .unzip()
}

/// miFV with one component (weight w, mean μ, variances σ²): per feature,
/// (1 / (n √w)) Σ (z − μ) / σ = (z̄ − μ) / (σ √w) and
/// (1 / (n √(2w))) Σ ((z − μ)² / σ² − 1) = ((q / n + (z̄ − μ)²) / σ² − 1) / √(2w),
/// q the squared deviations about z̄; and their operands' magnitudes.
fn fisher(bag: &BagMoments, encoder: &Encoder, gmm: &Gmm) -> (Vec<f64>, Vec<f64>) {
    let dim = encoder.dim();
    let n = bag.n.max(1) as f64;
    let w = gmm.weights[0];
    let (mut v, mut magnitude) = (vec![0.0; 2 * dim], vec![0.0; 2 * dim]);
    for j in 0..dim {
        let (mu, var) = (gmm.means[j], gmm.variances[j]);
        let (zbar, q, operands) = zscored(bag, encoder, j);
        let d = zbar - mu;
        let square = (q / n + d * d) / var;
        v[j] = d / (var.sqrt() * w.sqrt());
        v[dim + j] = (square - 1.0) / (2.0 * w).sqrt();
        magnitude[j] = (operands / n + mu.abs()) / (var.sqrt() * w.sqrt());
        magnitude[dim + j] = (square + 1.0) / (2.0 * w).sqrt();
    }
    (v, magnitude)
}
