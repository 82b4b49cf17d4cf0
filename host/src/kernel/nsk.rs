//! The normalised set kernel of Gärtner, Flach, Kowalczyk & Smola, *Multi-Instance
//! Kernels* (ICML 2002), the conventional baseline beside the box kernels:
//! k(X, Y) = Σ_{x∈X, y∈Y} exp(−γ‖x − y‖²), normalised in feature space,
//! k(X, Y)/√(k(X, X) k(Y, Y)). Instances are z-scored on the data first, and every sum
//! is a log-sum-exp, so the result is exact ln k even when single terms underflow.

use indicatif::ProgressBar;
use rayon::prelude::*;

use super::LogGram;
use crate::data::standardize::ZScore;
use crate::data::Dataset;
use crate::error::{Error, Result};

/// ln of the normalised set kernel over all bags of `data` (z-scored on `data`), with
/// RBF width `gamma` (default 1/D: unit-variance features give ‖x − y‖² ≈ 2D).
pub fn nsk_gram(data: &Dataset, gamma: Option<f64>, progress: &ProgressBar) -> Result<LogGram> {
    let gamma = gamma.unwrap_or(1.0 / data.dim() as f64);
    if !(gamma.is_finite() && gamma > 0.0) {
        return Err(Error::parameter(
            "--gamma",
            gamma,
            "must be positive and finite",
        ));
    }
    let all: Vec<usize> = (0..data.n_bags()).collect();
    let z = ZScore::fit(data, &all).apply(data)?;
    let n = z.n_bags();
    let pairs: Vec<(usize, usize)> = (0..n).flat_map(|i| (i..n).map(move |j| (i, j))).collect();
    progress.set_length(pairs.len() as u64);
    let raw: Vec<f64> = pairs
        .par_iter()
        .map(|&(i, j)| {
            let v = ln_set_kernel(&z, i, j, gamma);
            progress.inc(1);
            v
        })
        .collect();
    let mut ln = vec![0.0; n * n];
    for (&(i, j), &v) in pairs.iter().zip(&raw) {
        ln[i * n + j] = v;
        ln[j * n + i] = v;
    }
    let diag: Vec<f64> = (0..n).map(|i| ln[i * n + i]).collect();
    for i in 0..n {
        for j in 0..n {
            ln[i * n + j] -= 0.5 * (diag[i] + diag[j]);
        }
    }
    Ok(LogGram { n, ln, samples: 0 })
}

/// ln Σ_{x∈Xᵢ, y∈Xⱼ} exp(−γ‖x − y‖²), by a streaming log-sum-exp.
fn ln_set_kernel(data: &Dataset, i: usize, j: usize, gamma: f64) -> f64 {
    let (mut max, mut acc) = (f64::NEG_INFINITY, 0.0);
    for x in data.bag(i).instances() {
        for y in data.bag(j).instances() {
            let d2: f64 = x.iter().zip(y).map(|(a, b)| (a - b) * (a - b)).sum();
            let t = -gamma * d2;
            if t > max {
                acc = acc * (max - t).exp() + 1.0;
                max = t;
            } else {
                acc += (t - max).exp();
            }
        }
    }
    max + acc.ln()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::csv::parse_csv;
    use crate::kernel::spectrum;

    #[test]
    fn matches_the_direct_sum_and_is_positive_semidefinite() {
        let text = "1,a,0,1\n1,a,2,0\n0,b,1,1\n0,c,-1,3\n0,c,0,0\n0,c,4,2\n";
        let data = parse_csv("t", text).unwrap();
        let gram = nsk_gram(&data, Some(0.3), &ProgressBar::hidden()).unwrap();
        // Direct computation on the z-scored instances.
        let z = ZScore::fit(&data, &[0, 1, 2]).apply(&data).unwrap();
        let k = |i: usize, j: usize| -> f64 {
            let mut s = 0.0;
            for x in z.bag(i).instances() {
                for y in z.bag(j).instances() {
                    let d2: f64 = x.iter().zip(y).map(|(a, b)| (a - b).powi(2)).sum();
                    s += (-0.3 * d2).exp();
                }
            }
            s
        };
        for i in 0..3 {
            for j in 0..3 {
                let expected = (k(i, j) / (k(i, i) * k(j, j)).sqrt()).ln();
                assert!((gram.get(i, j) - expected).abs() < 1e-12, "({i},{j})");
            }
            assert!(gram.get(i, i).abs() < 1e-12);
        }
        assert_eq!(spectrum(gram.normalised()).negative_fraction, 0.0);
        assert!(nsk_gram(&data, Some(-1.0), &ProgressBar::hidden()).is_err());
    }
}
