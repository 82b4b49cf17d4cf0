//! The normalised set kernel of Gärtner, Flach, Kowalczyk & Smola (ICML 2002), the
//! conventional baseline the GMIL paper's box kernels are compared with:
//! k_set(X, Y) = Σ_{x∈X, y∈Y} exp(−γ‖x − y‖²), normalised to
//! k(X, Y) = k_set(X, Y) / √(k_set(X, X) · k_set(Y, Y)), so k(X, X) = 1.
//! Values are returned as natural logarithms, like every Gram matrix of the project, and
//! summed by log-sum-exp so that far-apart bags do not underflow to ln 0 = −∞.

use rayon::prelude::*;

use crate::data::{Bag, Dataset};
use crate::distance::squared_euclidean;
use crate::error::{Error, Result};

/// ln k_set(X, Y) by log-sum-exp over instance pairs.
pub fn log_set_kernel(a: Bag<'_>, b: Bag<'_>, gamma: f64) -> f64 {
    let exponents = || {
        a.instances()
            .flat_map(move |x| b.instances().map(move |y| -gamma * squared_euclidean(x, y)))
    };
    let max = exponents().fold(f64::NEG_INFINITY, f64::max);
    max + exponents().map(|e| (e - max).exp()).sum::<f64>().ln()
}

/// The `n_bags × n_bags` row-major matrix of ln k(X, Y) (normalised), in parallel; each
/// entry is computed independently, so the result does not depend on the thread count.
pub fn log_nsk_gram(data: &Dataset, gamma: f64) -> Result<Vec<f64>> {
    if !(gamma > 0.0 && gamma.is_finite()) {
        return Err(Error::parameter(
            "gamma",
            gamma,
            "must be positive and finite",
        ));
    }
    let n = data.n_bags();
    let diagonal: Vec<f64> = (0..n)
        .into_par_iter()
        .map(|i| log_set_kernel(data.bag(i), data.bag(i), gamma))
        .collect();
    let mut out = vec![0.0; n * n];
    out.par_chunks_mut(n).enumerate().for_each(|(i, row)| {
        for (j, cell) in row.iter_mut().enumerate() {
            *cell = if i == j {
                0.0
            } else {
                let (p, q) = if i < j { (i, j) } else { (j, i) };
                log_set_kernel(data.bag(p), data.bag(q), gamma) - 0.5 * (diagonal[p] + diagonal[q])
            };
        }
    });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data() -> Dataset {
        // Bag 0: {0, 1}; bag 1: {3}; one feature.
        Dataset::new(
            "t",
            1,
            vec![0.0, 1.0, 3.0],
            vec![0, 2, 3],
            vec!["a".into(), "b".into()],
            None,
            vec![],
        )
        .unwrap()
    }

    #[test]
    fn matches_the_direct_formula() {
        let d = data();
        let g = 0.5;
        let k = |x: f64, y: f64| (-g * (x - y) * (x - y)).exp();
        let kxx = k(0.0, 0.0) + 2.0 * k(0.0, 1.0) + k(1.0, 1.0);
        let kyy = k(3.0, 3.0);
        let kxy = k(0.0, 3.0) + k(1.0, 3.0);
        let m = log_nsk_gram(&d, g).unwrap();
        assert!((m[1] - (kxy / (kxx * kyy).sqrt()).ln()).abs() < 1e-12);
        assert_eq!(m[1], m[2]);
        assert_eq!(m[0], 0.0);
    }

    #[test]
    fn far_bags_stay_finite_in_log_space() {
        let d = Dataset::new(
            "t",
            1,
            vec![0.0, 1e4],
            vec![0, 1, 2],
            vec!["a".into(), "b".into()],
            None,
            vec![],
        )
        .unwrap();
        let m = log_nsk_gram(&d, 1.0).unwrap();
        assert!((m[1] + 1e8).abs() < 1e-3, "{}", m[1]);
        assert!(log_nsk_gram(&d, 0.0).is_err());
    }
}
