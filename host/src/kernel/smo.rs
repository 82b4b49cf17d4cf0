//! Sequential minimal optimisation for the SVM dual with a precomputed, possibly
//! indefinite kernel: min ½αᵀQα − eᵀα, 0 ≤ αᵢ ≤ C, yᵀα = 0, Qᵢⱼ = yᵢyⱼKᵢⱼ. Working sets
//! are chosen by LIBSVM's second-order rule (Fan, Chen & Lin, *Working set selection
//! using second order information*, JMLR 6, 2005, WSS 3), and a non-positive curvature
//! aᵢⱼ = Kᵢᵢ + Kⱼⱼ − 2Kᵢⱼ ≤ 0 (an indefinite kernel) is replaced by τ = 10⁻¹², as LIBSVM
//! does (Chen, Fan & Lin, *A study on SMO-type decomposition methods for SVMs*, IEEE TNN
//! 17, 2006), which keeps every step a descent step and guarantees termination.

use crate::error::{Error, Result};

/// LIBSVM's τ for non-positive curvature.
const TAU: f64 = 1e-12;

/// Solver settings.
#[derive(Debug, Clone, Copy)]
pub struct SmoParams {
    /// Box constraint C (up to 10¹⁰: the paper's hard margin).
    pub c: f64,
    /// Stop when the maximal KKT violation m(α) − M(α) is below this (LIBSVM: 10⁻³).
    pub tolerance: f64,
    /// Iteration cap; reaching it is reported in [`SvmDual::converged`].
    pub max_iterations: usize,
}

impl Default for SmoParams {
    fn default() -> Self {
        SmoParams {
            c: 1.0,
            tolerance: 1e-3,
            max_iterations: 10_000_000,
        }
    }
}

/// A solved dual.
#[derive(Debug, Clone)]
pub struct SvmDual {
    /// αᵢ per training bag.
    pub alpha: Vec<f64>,
    /// Offset ρ: the decision value is Σ αᵢyᵢK(xᵢ, x) − ρ.
    pub rho: f64,
    /// Dual objective ½αᵀQα − eᵀα.
    pub objective: f64,
    /// Iterations run.
    pub iterations: usize,
    /// Whether the KKT tolerance was reached before the iteration cap.
    pub converged: bool,
}

impl SvmDual {
    /// Decision value of a bag from its kernel values against the training bags.
    pub fn decision(&self, kernel_row: &[f64], labels: &[f64]) -> f64 {
        kernel_row
            .iter()
            .zip(&self.alpha)
            .zip(labels)
            .map(|((k, a), y)| a * y * k)
            .sum::<f64>()
            - self.rho
    }
}

/// Solves the dual for the n × n row-major kernel matrix `k` and labels ±1.
pub fn solve(k: &[f64], labels: &[f64], params: SmoParams) -> Result<SvmDual> {
    let n = labels.len();
    if k.len() != n * n {
        return Err(Error::parameter(
            "kernel",
            k.len(),
            format!("needs {n}×{n} values"),
        ));
    }
    if labels.iter().any(|&y| y != 1.0 && y != -1.0) {
        return Err(Error::parameter("labels", "?", "must be +1 or −1"));
    }
    if !labels.contains(&1.0) || !labels.contains(&-1.0) {
        return Err(Error::parameter(
            "labels",
            "one class",
            "the SVM needs both classes",
        ));
    }
    if !(params.c.is_finite() && params.c > 0.0) {
        return Err(Error::parameter(
            "--cost",
            params.c,
            "must be positive and finite",
        ));
    }
    if k.iter().any(|v| !v.is_finite()) {
        return Err(Error::Numerical {
            method: "SMO",
            reason: "the kernel matrix has a non-finite entry".into(),
        });
    }
    let c = params.c;
    let q = |i: usize, j: usize| labels[i] * labels[j] * k[i * n + j];
    let mut alpha = vec![0.0; n];
    let mut grad = vec![-1.0; n]; // ∇f = Qα − e at α = 0
    let up = |a: f64, y: f64| (y > 0.0 && a < c) || (y < 0.0 && a > 0.0);
    let low = |a: f64, y: f64| (y > 0.0 && a > 0.0) || (y < 0.0 && a < c);
    let mut iterations = 0;
    let mut converged = false;
    while iterations < params.max_iterations {
        // i: the maximal violator in I_up.
        let (mut i, mut g_max) = (usize::MAX, f64::NEG_INFINITY);
        for t in 0..n {
            if up(alpha[t], labels[t]) && -labels[t] * grad[t] >= g_max {
                g_max = -labels[t] * grad[t];
                i = t;
            }
        }
        // j: the largest second-order decrease among violating partners in I_low.
        let (mut j, mut g_min, mut best) = (usize::MAX, f64::INFINITY, f64::INFINITY);
        for t in 0..n {
            if !low(alpha[t], labels[t]) {
                continue;
            }
            let v = -labels[t] * grad[t];
            g_min = g_min.min(v);
            let b = g_max - v;
            if i != usize::MAX && b > 0.0 {
                let a = k[i * n + i] + k[t * n + t] - 2.0 * k[i * n + t];
                let gain = -(b * b) / if a > 0.0 { a } else { TAU };
                if gain <= best {
                    best = gain;
                    j = t;
                }
            }
        }
        if i == usize::MAX || j == usize::MAX || g_max - g_min < params.tolerance {
            converged = true;
            break;
        }
        iterations += 1;
        let (old_i, old_j) = (alpha[i], alpha[j]);
        // Two-variable subproblem along yᵢΔαᵢ = −yⱼΔαⱼ (LIBSVM's update and clipping).
        if labels[i] != labels[j] {
            let quad = (q(i, i) + q(j, j) + 2.0 * q(i, j)).max(TAU);
            let delta = (-grad[i] - grad[j]) / quad;
            let diff = alpha[i] - alpha[j];
            alpha[i] += delta;
            alpha[j] += delta;
            if diff > 0.0 && alpha[j] < 0.0 {
                alpha[j] = 0.0;
                alpha[i] = diff;
            } else if diff <= 0.0 && alpha[i] < 0.0 {
                alpha[i] = 0.0;
                alpha[j] = -diff;
            }
            if diff > 0.0 && alpha[i] > c {
                alpha[i] = c;
                alpha[j] = c - diff;
            } else if diff <= 0.0 && alpha[j] > c {
                alpha[j] = c;
                alpha[i] = c + diff;
            }
        } else {
            let quad = (q(i, i) + q(j, j) - 2.0 * q(i, j)).max(TAU);
            let delta = (grad[i] - grad[j]) / quad;
            let sum = alpha[i] + alpha[j];
            alpha[i] -= delta;
            alpha[j] += delta;
            if sum > c && alpha[i] > c {
                alpha[i] = c;
                alpha[j] = sum - c;
            } else if sum <= c && alpha[j] < 0.0 {
                alpha[j] = 0.0;
                alpha[i] = sum;
            }
            if sum > c && alpha[j] > c {
                alpha[j] = c;
                alpha[i] = sum - c;
            } else if sum <= c && alpha[i] < 0.0 {
                alpha[i] = 0.0;
                alpha[j] = sum;
            }
        }
        let (di, dj) = (alpha[i] - old_i, alpha[j] - old_j);
        for (t, g) in grad.iter_mut().enumerate() {
            *g += q(t, i) * di + q(t, j) * dj;
        }
    }
    // ρ: the mean of yᵢ∇ᵢ over free αᵢ, else the middle of the feasible interval.
    let (mut sum, mut free, mut ub, mut lb) = (0.0, 0usize, f64::INFINITY, f64::NEG_INFINITY);
    for t in 0..n {
        let yg = labels[t] * grad[t];
        if alpha[t] > 0.0 && alpha[t] < c {
            sum += yg;
            free += 1;
        } else if (alpha[t] >= c && labels[t] < 0.0) || (alpha[t] <= 0.0 && labels[t] > 0.0) {
            ub = ub.min(yg);
        } else {
            lb = lb.max(yg);
        }
    }
    let rho = if free > 0 {
        sum / free as f64
    } else {
        (ub + lb) / 2.0
    };
    let objective = 0.5
        * alpha
            .iter()
            .zip(&grad)
            .map(|(a, g)| a * (g - 1.0))
            .sum::<f64>();
    Ok(SvmDual {
        alpha,
        rho,
        objective,
        iterations,
        converged,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::{DMatrix, DVector};
    use rand::{RngExt, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    /// The dual optimum by brute force: on every face of the box (each αᵢ at 0, at C, or
    /// free), solve the equality-constrained KKT system for the free variables by LU,
    /// keep feasible points, return the smallest objective. Exact for PSD Q.
    fn brute_force(k: &[f64], y: &[f64], c: f64) -> f64 {
        let n = y.len();
        let q = DMatrix::from_fn(n, n, |i, j| y[i] * y[j] * k[i * n + j]);
        let mut best = f64::INFINITY;
        for code in 0..3usize.pow(n as u32) {
            let state: Vec<usize> = (0..n).map(|t| code / 3usize.pow(t as u32) % 3).collect();
            let free: Vec<usize> = (0..n).filter(|&t| state[t] == 2).collect();
            let mut alpha = DVector::from_fn(n, |t, _| if state[t] == 1 { c } else { 0.0 });
            let m = free.len();
            if m > 0 {
                let mut a = DMatrix::zeros(m + 1, m + 1);
                let mut rhs = DVector::zeros(m + 1);
                for (r, &i) in free.iter().enumerate() {
                    for (s, &j) in free.iter().enumerate() {
                        a[(r, s)] = q[(i, j)];
                    }
                    a[(r, m)] = y[i];
                    a[(m, r)] = y[i];
                    rhs[r] = 1.0
                        - (0..n)
                            .filter(|t| state[*t] != 2)
                            .map(|t| q[(i, t)] * alpha[t])
                            .sum::<f64>();
                }
                rhs[m] = -(0..n)
                    .filter(|t| state[*t] != 2)
                    .map(|t| y[t] * alpha[t])
                    .sum::<f64>();
                let Some(sol) = a.lu().solve(&rhs) else {
                    continue;
                };
                for (r, &i) in free.iter().enumerate() {
                    alpha[i] = sol[r];
                }
            }
            let feasible = alpha.iter().all(|&a| (-1e-9..=c + 1e-9).contains(&a))
                && alpha.iter().zip(y).map(|(a, y)| a * y).sum::<f64>().abs() < 1e-9;
            if feasible {
                let obj = 0.5 * (alpha.transpose() * &q * &alpha)[(0, 0)] - alpha.sum();
                best = best.min(obj);
            }
        }
        best
    }

    fn rbf(points: &[[f64; 2]], gamma: f64) -> Vec<f64> {
        let n = points.len();
        let mut k = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                let d2 =
                    (points[i][0] - points[j][0]).powi(2) + (points[i][1] - points[j][1]).powi(2);
                k[i * n + j] = (-gamma * d2).exp();
            }
        }
        k
    }

    #[test]
    fn two_points_hard_margin_closed_form() {
        // Linear kernel on x = +1 (y = +1) and x = −1 (y = −1): w = 1, b = 0, α = (½, ½).
        let k = [1.0, -1.0, -1.0, 1.0];
        let y = [1.0, -1.0];
        let params = SmoParams {
            c: 1e10,
            tolerance: 1e-9,
            ..Default::default()
        };
        let dual = solve(&k, &y, params).unwrap();
        assert!((dual.alpha[0] - 0.5).abs() < 1e-9 && (dual.alpha[1] - 0.5).abs() < 1e-9);
        assert!(dual.rho.abs() < 1e-9);
        assert!((dual.decision(&[1.0, -1.0], &y) - 1.0).abs() < 1e-9);
    }

    #[test]
    fn matches_brute_force_on_small_problems() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(4);
        for case in 0..60 {
            let n = 3 + case % 4;
            let points: Vec<[f64; 2]> = (0..n)
                .map(|_| [rng.random::<f64>() * 2.0, rng.random::<f64>() * 2.0])
                .collect();
            let mut y: Vec<f64> = (0..n)
                .map(|_| if rng.random::<bool>() { 1.0 } else { -1.0 })
                .collect();
            y[0] = 1.0;
            y[1] = -1.0;
            let c = [0.3, 1.0, 1e3][case % 3];
            let k = rbf(&points, 1.5);
            let params = SmoParams {
                c,
                tolerance: 1e-8,
                ..Default::default()
            };
            let dual = solve(&k, &y, params).unwrap();
            assert!(dual.converged);
            let exact = brute_force(&k, &y, c);
            assert!(
                (dual.objective - exact).abs() <= 1e-6 * exact.abs().max(1.0),
                "case {case}: {} vs {exact}",
                dual.objective
            );
        }
    }

    #[test]
    fn terminates_feasibly_on_indefinite_kernels() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(9);
        for _ in 0..20 {
            let n = 12;
            let mut k = vec![0.0; n * n];
            for i in 0..n {
                for j in 0..=i {
                    let v = rng.random::<f64>() * 2.0 - 1.0;
                    k[i * n + j] = v;
                    k[j * n + i] = v;
                }
            }
            let y: Vec<f64> = (0..n)
                .map(|t| if t % 2 == 0 { 1.0 } else { -1.0 })
                .collect();
            let c = 10.0;
            let dual = solve(
                &k,
                &y,
                SmoParams {
                    c,
                    ..Default::default()
                },
            )
            .unwrap();
            assert!(dual.converged, "{} iterations", dual.iterations);
            assert!(dual.alpha.iter().all(|&a| (0.0..=c).contains(&a)));
            assert!(
                dual.alpha
                    .iter()
                    .zip(&y)
                    .map(|(a, y)| a * y)
                    .sum::<f64>()
                    .abs()
                    < 1e-9
            );
        }
    }

    #[test]
    fn rejects_bad_input() {
        let k = [1.0, 0.0, 0.0, 1.0];
        assert!(solve(&k, &[1.0, 1.0], SmoParams::default()).is_err());
        assert!(solve(&k, &[1.0, 0.5], SmoParams::default()).is_err());
        assert!(solve(&k[..3], &[1.0, -1.0], SmoParams::default()).is_err());
        assert!(solve(
            &k,
            &[1.0, -1.0],
            SmoParams {
                c: -1.0,
                ..Default::default()
            }
        )
        .is_err());
    }
}
