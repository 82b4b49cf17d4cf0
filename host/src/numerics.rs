//! The small numerical functions several algorithms share, each written once.

/// Dot product summed in index order (Weka's order; also L-BFGS's and M³IC's).
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut s = 0.0;
    for (x, y) in a.iter().zip(b) {
        s += x * y;
    }
    s
}

/// Dot product with eight independent accumulators (vectorisable; the order of the
/// additions is fixed, so results do not depend on the machine's thread count).
pub fn dot8(a: &[f64], b: &[f64]) -> f64 {
    let mut acc = [0.0; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f64 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for k in 0..8 {
            acc[k] += x[k] * y[k];
        }
    }
    acc.iter().sum::<f64>() + tail
}

/// σ(x) = 1/(1 + e^{−x}) without overflow for either sign of x.
pub fn sigmoid(x: f64) -> f64 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}

/// log(1 + eˣ) without overflow.
pub fn softplus(x: f64) -> f64 {
    if x > 0.0 {
        x + (-x).exp().ln_1p()
    } else {
        x.exp().ln_1p()
    }
}

/// log Σ e^{vᵢ}, shifted by the largest term; −∞ for no terms.
pub fn log_sum_exp(v: impl Iterator<Item = f64> + Clone) -> f64 {
    let m = v.clone().fold(f64::NEG_INFINITY, f64::max);
    if m == f64::NEG_INFINITY {
        return m;
    }
    m + v.map(|x| (x - m).exp()).sum::<f64>().ln()
}

/// Index and value of the largest entry (the first on ties; (0, −∞) when empty).
pub fn first_argmax(v: &[f64]) -> (usize, f64) {
    v.iter()
        .copied()
        .enumerate()
        .fold((0, f64::NEG_INFINITY), |best, (i, x)| {
            if x > best.1 {
                (i, x)
            } else {
                best
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closed_forms() {
        let a: Vec<f64> = (1..=19).map(f64::from).collect();
        // Σ k² for k = 1..19.
        assert_eq!(dot(&a, &a), 2470.0);
        assert_eq!(dot8(&a, &a), 2470.0);
        assert_eq!(sigmoid(0.0), 0.5);
        assert!((sigmoid(-800.0)).abs() < 1e-300 && sigmoid(800.0) == 1.0);
        assert_eq!(softplus(0.0), std::f64::consts::LN_2);
        assert_eq!(softplus(1000.0), 1000.0);
        let l = log_sum_exp([1000.0, 1000.0].into_iter());
        assert!((l - (1000.0 + std::f64::consts::LN_2)).abs() < 1e-12);
        assert_eq!(log_sum_exp(std::iter::empty()), f64::NEG_INFINITY);
        assert_eq!(first_argmax(&[1.0, 3.0, 3.0, 2.0]), (1, 3.0));
    }
}
