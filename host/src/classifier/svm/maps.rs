//! The fix for diagonal dominance of box-counting Gram matrices (GMIL paper §5.3, after
//! Schölkopf et al.): a subpolynomial map of each entry, then the empirical kernel map.

/// φ(k) = sign(k)|k|^ρ applied to a kernel value given by its natural logarithm (box
/// counts are positive and far beyond f64's range): φ = exp(ρ · ln k).
pub fn subpolynomial_from_log(log_k: f64, rho: f64) -> f64 {
    (rho * log_k).exp()
}

/// The empirical kernel map: with the (mapped) kernel values `k[a][r]` between every bag
/// `a` and the reference bags `r ∈ references`, k_emp(a, b) = Σ_r k(a, r)·k(b, r), i.e.
/// φ_n(a)·φ_n(b). `kernel` is row-major `n × n` over all bags. The references are the
/// training bags (non-transductive) or all bags (transductive, §5.3). The result is
/// positive semidefinite by construction.
pub fn empirical_kernel(kernel: &[f64], n: usize, references: &[usize]) -> Vec<f64> {
    let mut out = vec![0.0; n * n];
    for a in 0..n {
        for b in a..n {
            let v: f64 = references
                .iter()
                .map(|&r| kernel[a * n + r] * kernel[b * n + r])
                .sum();
            out[a * n + b] = v;
            out[b * n + a] = v;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subpolynomial_in_log_space() {
        // (10^600)^(1/50) = 10^12, computed without ever forming 10^600.
        let v = subpolynomial_from_log(600.0 * 10f64.ln(), 0.02);
        assert!((v / 1e12 - 1.0).abs() < 1e-12);
    }

    #[test]
    fn empirical_map_is_a_gram_of_feature_vectors() {
        let k = [2.0, 1.0, 0.5, 1.0, 3.0, 0.0, 0.5, 0.0, 1.0];
        let e = empirical_kernel(&k, 3, &[0, 2]);
        // φ(0) = (2, 0.5), φ(1) = (1, 0), φ(2) = (0.5, 1).
        assert_eq!(e[1], 2.0);
        assert_eq!(e[2], 1.0 + 0.5);
        assert_eq!(e[4], 1.0);
        assert_eq!(e[8], 0.25 + 1.0);
        assert_eq!(e[3], e[1]);
        // PSD: every 2×2 principal minor is non-negative.
        for a in 0..3 {
            for b in 0..3 {
                assert!(e[a * 3 + a] * e[b * 3 + b] >= e[a * 3 + b].powi(2) - 1e-12);
            }
        }
    }
}
