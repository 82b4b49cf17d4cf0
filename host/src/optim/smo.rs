//! Sequential minimal optimisation for the SVM dual over a precomputed, possibly
//! indefinite kernel matrix.
//!
//! Solves  min_α ½ αᵀQα + pᵀα  subject to 0 ≤ αᵢ ≤ Cᵢ and yᵀα = 0, with Qᵢⱼ = yᵢyⱼKᵢⱼ —
//! LIBSVM's form; the usual SVM dual has p = −e ([`solve`], [`solve_bounded`]), sMIL's
//! relaxed margins another p ([`solve_general`]) — by the working-set selection that uses second-order information of Fan, Chen & Lin
//! (JMLR 2005, "WSS 2"), as in LIBSVM. For a pair whose curvature aᵢⱼ = Kᵢᵢ + Kⱼⱼ − 2Kᵢⱼ
//! is not positive (an indefinite kernel), aᵢⱼ is replaced by τ = 10⁻¹² as in Chen, Fan &
//! Lin (2006), which keeps every step a strict decrease and the method convergent.

/// Solver settings.
#[derive(Debug, Clone, Copy)]
pub struct SmoParams {
    /// Upper bound C on every αᵢ (10¹⁰ is a hard margin, as the GMIL paper uses).
    pub c: f64,
    /// Stopping tolerance on the maximal KKT violation m(α) − M(α).
    pub tolerance: f64,
    /// Iteration cap; reaching it is reported, not hidden.
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

/// The solution of the dual.
#[derive(Debug, Clone, PartialEq)]
pub struct SmoSolution {
    /// Dual variables αᵢ.
    pub alpha: Vec<f64>,
    /// Bias b of the decision function f(x) = Σ αᵢyᵢK(xᵢ, x) + b.
    pub bias: f64,
    /// Iterations used.
    pub iterations: usize,
    /// Whether the KKT tolerance was reached (false: the iteration cap stopped it).
    pub converged: bool,
    /// Dual objective ½αᵀQα + pᵀα at the solution (p = −e: ½αᵀQα − eᵀα).
    pub objective: f64,
}

const TAU: f64 = 1e-12;

/// Solves the dual for the `n × n` row-major kernel matrix `kernel` and labels `y` (±1).
/// The caller validates shapes; `n ≥ 2` with both labels present.
pub fn solve(kernel: &[f64], y: &[f64], params: &SmoParams) -> SmoSolution {
    solve_bounded(kernel, y, params, &vec![params.c; y.len()])
}

/// [`solve`] with its own upper bound Cᵢ on each αᵢ (`bounds`, one per point; `params.c`
/// unused): libsvm's class weights, Cᵢ = C·w_{class of i} — the dual of the primal whose
/// slack of point i costs Cᵢ.
pub fn solve_bounded(kernel: &[f64], y: &[f64], params: &SmoParams, bounds: &[f64]) -> SmoSolution {
    solve_general(kernel, y, params, bounds, &vec![-1.0; y.len()])
}

/// [`solve_bounded`] on a kernel matrix the caller knows to be symmetric (a Gram matrix,
/// or a principal submatrix of one). [`solve_general`] first checks symmetry, reading the
/// matrix in column order — one cache line per entry, about as long as thousands of
/// iterations on a matrix of several thousand points; this skips the check (debug builds
/// still make it). The result is [`solve_bounded`]'s, bit for bit.
pub fn solve_bounded_symmetric(
    kernel: &[f64],
    y: &[f64],
    params: &SmoParams,
    bounds: &[f64],
) -> SmoSolution {
    debug_assert!(
        is_symmetric(kernel, y.len()),
        "the kernel matrix is not symmetric"
    );
    solve_reading(kernel, y, params, bounds, &vec![-1.0; y.len()], true)
}

/// Whether the n × n row-major `kernel` equals its transpose.
fn is_symmetric(kernel: &[f64], n: usize) -> bool {
    (0..n).all(|a| (0..a).all(|b| kernel[a * n + b] == kernel[b * n + a]))
}

/// [`solve_bounded`] with the linear term `linear` (p, one per point) in place of −e: the
/// dual of the primal whose point i must reach the margin −pᵢ, i.e. yᵢf(xᵢ) ≥ −pᵢ − ξᵢ.
pub fn solve_general(
    kernel: &[f64],
    y: &[f64],
    params: &SmoParams,
    bounds: &[f64],
    linear: &[f64],
) -> SmoSolution {
    let symmetric = is_symmetric(kernel, y.len());
    solve_reading(kernel, y, params, bounds, linear, symmetric)
}

/// [`solve_general`], reading the kernel's columns as its rows when `rows` (the matrix
/// is symmetric). Every iteration reads the diagonal and the columns of the pair it
/// updates: a row is read in order, a column one cache line per entry. The values, and
/// so every result, are the same either way. The diagonal is gathered once.
fn solve_reading(
    kernel: &[f64],
    y: &[f64],
    params: &SmoParams,
    bounds: &[f64],
    linear: &[f64],
    rows: bool,
) -> SmoSolution {
    let n = y.len();
    let k = |i: usize, j: usize| kernel[i * n + j];
    let c = |t: usize| bounds[t];
    let diagonal: Vec<f64> = (0..n).map(|t| k(t, t)).collect();
    let mut alpha = vec![0.0; n];
    // Gradient of the dual objective: G = Qα + p; α = 0 gives p.
    let mut grad = linear.to_vec();
    let in_up = |t: usize, a: f64, yt: f64| (yt > 0.0 && a < c(t)) || (yt < 0.0 && a > 0.0);
    let in_low = |t: usize, a: f64, yt: f64| (yt > 0.0 && a > 0.0) || (yt < 0.0 && a < c(t));

    // i: the maximal violating index in I_up, the last of equals. Each gradient update
    // below offers its new entries in index order, so the next i costs no pass of its own.
    let offer = |(i, g_max): &mut (usize, f64), t: usize, a: f64, yt: f64, g: f64| {
        if in_up(t, a, yt) && -yt * g >= *g_max {
            *g_max = -yt * g;
            *i = t;
        }
    };
    let mut up = (usize::MAX, f64::NEG_INFINITY);
    for t in 0..n {
        offer(&mut up, t, alpha[t], y[t], grad[t]);
    }

    let mut iterations = 0;
    let mut converged = false;
    while iterations < params.max_iterations {
        crate::cancel::checkpoint();
        let (i, g_max) = up;
        // j: in I_low, maximal second-order decrease among violating pairs with i.
        let mut j = usize::MAX;
        let mut g_min = f64::INFINITY;
        let mut best = f64::INFINITY;
        for t in 0..n {
            if !in_low(t, alpha[t], y[t]) {
                continue;
            }
            let v = -y[t] * grad[t];
            g_min = g_min.min(v);
            if i != usize::MAX && v < g_max {
                let b = g_max - v;
                let a = diagonal[i] + diagonal[t] - 2.0 * k(i, t);
                let a = if a > 0.0 { a } else { TAU };
                let decrease = -b * b / a;
                if decrease <= best {
                    best = decrease;
                    j = t;
                }
            }
        }
        if i == usize::MAX || j == usize::MAX || g_max - g_min < params.tolerance {
            converged = true;
            break;
        }
        iterations += 1;

        // Two-variable subproblem along the feasible direction, clipped to the box.
        let (ai_old, aj_old) = (alpha[i], alpha[j]);
        let a = diagonal[i] + diagonal[j] - 2.0 * k(i, j);
        let a = if a > 0.0 { a } else { TAU };
        let b = -y[i] * grad[i] + y[j] * grad[j];
        // Moving αᵢ by yᵢ·s and αⱼ by −yⱼ·s keeps yᵀα fixed; the unclipped optimum is s = b/a.
        let mut s = b / a;
        // Largest s that keeps both in [0, C].
        let limit_i = if y[i] > 0.0 { c(i) - ai_old } else { ai_old };
        let limit_j = if y[j] > 0.0 { aj_old } else { c(j) - aj_old };
        s = s.min(limit_i).min(limit_j).max(0.0);
        alpha[i] = (ai_old + y[i] * s).clamp(0.0, c(i));
        alpha[j] = (aj_old - y[j] * s).clamp(0.0, c(j));
        let (di, dj) = (alpha[i] - ai_old, alpha[j] - aj_old);
        let (yi, yj) = (y[i], y[j]);
        up = (usize::MAX, f64::NEG_INFINITY);
        if rows {
            let (row_i, row_j) = (&kernel[i * n..(i + 1) * n], &kernel[j * n..(j + 1) * n]);
            let entries = grad.iter_mut().zip(y).zip(row_i).zip(row_j).zip(&alpha);
            for (t, ((((g, &yt), ki), kj), &a)) in entries.enumerate() {
                *g += yt * (yi * ki * di + yj * kj * dj);
                offer(&mut up, t, a, yt, *g);
            }
        } else {
            for t in 0..n {
                grad[t] += y[t] * (yi * k(t, i) * di + yj * k(t, j) * dj);
                offer(&mut up, t, alpha[t], y[t], grad[t]);
            }
        }
    }

    let bias = bias_from_kkt(&alpha, &grad, y, bounds);
    // ½αᵀQα + pᵀα = Σ ½αᵢ(Gᵢ + pᵢ).
    let objective = alpha
        .iter()
        .zip(&grad)
        .zip(linear)
        .map(|((a, g), p)| 0.5 * a * (g + p))
        .sum();
    SmoSolution {
        alpha,
        bias,
        iterations,
        converged,
        objective,
    }
}

/// b = −ρ, where ρ averages yᵢGᵢ over free support vectors, or takes the midpoint of the
/// feasible interval when none is free (LIBSVM's rule).
fn bias_from_kkt(alpha: &[f64], grad: &[f64], y: &[f64], c: &[f64]) -> f64 {
    let (mut sum, mut free) = (0.0, 0usize);
    let (mut upper, mut lower) = (f64::INFINITY, f64::NEG_INFINITY);
    for t in 0..alpha.len() {
        let yg = y[t] * grad[t];
        let at_upper = alpha[t] >= c[t];
        let at_lower = alpha[t] <= 0.0;
        if !at_upper && !at_lower {
            sum += yg;
            free += 1;
        } else if (at_upper && y[t] < 0.0) || (at_lower && y[t] > 0.0) {
            upper = upper.min(yg);
        } else {
            lower = lower.max(yg);
        }
    }
    let rho = if free > 0 {
        sum / free as f64
    } else if upper.is_finite() && lower.is_finite() {
        (upper + lower) / 2.0
    } else if upper.is_finite() {
        upper
    } else {
        lower.max(0.0)
    };
    -rho
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    fn linear_kernel(points: &[[f64; 2]]) -> Vec<f64> {
        let n = points.len();
        let mut k = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                k[i * n + j] = points[i][0] * points[j][0] + points[i][1] * points[j][1];
            }
        }
        k
    }

    fn dual_objective(k: &[f64], y: &[f64], alpha: &[f64]) -> f64 {
        general_objective(k, y, alpha, &vec![-1.0; y.len()])
    }

    /// ½αᵀQα + pᵀα, computed term by term.
    fn general_objective(k: &[f64], y: &[f64], alpha: &[f64], p: &[f64]) -> f64 {
        let n = y.len();
        let mut quad = 0.0;
        for i in 0..n {
            for j in 0..n {
                quad += alpha[i] * alpha[j] * y[i] * y[j] * k[i * n + j];
            }
        }
        0.5 * quad + alpha.iter().zip(p).map(|(a, p)| a * p).sum::<f64>()
    }

    /// Exact minimum of the dual by enumerating which αᵢ sit at 0, at C, or are free, and
    /// solving the equality-constrained system for the free ones (a convex QP's optimum is
    /// one of these). Only for tiny n.
    fn brute_force(k: &[f64], y: &[f64], c: &[f64]) -> f64 {
        brute_force_general(k, y, c, &vec![-1.0; y.len()])
    }

    /// [`brute_force`] for the linear term `p`.
    fn brute_force_general(k: &[f64], y: &[f64], c: &[f64], p: &[f64]) -> f64 {
        let n = y.len();
        let mut best = f64::INFINITY;
        for code in 0..3usize.pow(n as u32) {
            let mut state = vec![0u8; n];
            let mut x = code;
            for s in state.iter_mut() {
                *s = (x % 3) as u8;
                x /= 3;
            }
            let free: Vec<usize> = (0..n).filter(|&i| state[i] == 2).collect();
            let mut alpha: Vec<f64> = state
                .iter()
                .zip(c)
                .map(|(&s, &c)| if s == 1 { c } else { 0.0 })
                .collect();
            // KKT system for free variables: Q_FF α_F + y_F ν = −p_F − Q_FB α_B, y_Fᵀα_F = −y_Bᵀα_B.
            let m = free.len();
            let mut a = nalgebra::DMatrix::<f64>::zeros(m + 1, m + 1);
            let mut rhs = nalgebra::DVector::<f64>::zeros(m + 1);
            for (r, &i) in free.iter().enumerate() {
                for (s, &j) in free.iter().enumerate() {
                    a[(r, s)] = y[i] * y[j] * k[i * n + j];
                }
                a[(r, m)] = y[i];
                a[(m, r)] = y[i];
                rhs[r] = -p[i]
                    - (0..n)
                        .filter(|t| state[*t] != 2)
                        .map(|t| y[i] * y[t] * k[i * n + t] * alpha[t])
                        .sum::<f64>();
            }
            rhs[m] = -(0..n)
                .filter(|t| state[*t] != 2)
                .map(|t| y[t] * alpha[t])
                .sum::<f64>();
            let Some(sol) = a.clone().lu().solve(&rhs) else {
                continue;
            };
            let mut feasible = true;
            for (r, &i) in free.iter().enumerate() {
                if !(sol[r] >= -1e-9 && sol[r] <= c[i] + 1e-9) {
                    feasible = false;
                }
                alpha[i] = sol[r].clamp(0.0, c[i]);
            }
            let balance: f64 = (0..n).map(|t| y[t] * alpha[t]).sum();
            if feasible && balance.abs() < 1e-7 {
                best = best.min(general_objective(k, y, &alpha, p));
            }
        }
        best
    }

    /// Reading a symmetric kernel's columns as rows changes no bit of the solution, over
    /// random problems with every kind of bound, linear term and many iterations; and a
    /// matrix that is not symmetric (by one entry) is read by columns.
    #[test]
    fn rows_and_columns_of_a_symmetric_kernel_give_the_same_solution() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
        for case in 0..24 {
            let n = 20 + case * 2;
            let points: Vec<[f64; 2]> = (0..n)
                .map(|_| [rng.random_range(-2.0..2.0), rng.random_range(-2.0..2.0)])
                .collect();
            let y: Vec<f64> = (0..n)
                .map(|t| {
                    if t % 2 == 0 || rng.random_bool(0.3) {
                        1.0
                    } else {
                        -1.0
                    }
                })
                .collect();
            let k = gaussian(&points);
            let bounds: Vec<f64> = (0..n)
                .map(|_| [0.5, 10.0, 1e10][case % 3] * rng.random_range(0.5..1.5))
                .collect();
            let linear: Vec<f64> = (0..n).map(|_| -rng.random_range(0.5..1.5)).collect();
            let params = SmoParams {
                tolerance: 1e-9,
                ..Default::default()
            };
            let by_rows = solve_reading(&k, &y, &params, &bounds, &linear, true);
            let by_columns = solve_reading(&k, &y, &params, &bounds, &linear, false);
            assert!(
                by_rows.iterations > n,
                "case {case}: {} iterations",
                by_rows.iterations
            );
            assert_eq!(by_rows, by_columns, "case {case}");
            assert_eq!(solve_general(&k, &y, &params, &bounds, &linear), by_rows);
            assert_eq!(
                solve_bounded_symmetric(&k, &y, &params, &bounds),
                solve_bounded(&k, &y, &params, &bounds),
                "case {case}"
            );
        }
        // One entry off symmetry: the public solver takes the column reading.
        let points: Vec<[f64; 2]> = (0..12)
            .map(|t| [t as f64 * 0.3, (t % 5) as f64 * 0.2])
            .collect();
        let mut k = gaussian(&points);
        k[1] += 1e-9;
        let y: Vec<f64> = (0..12)
            .map(|t| if t % 2 == 0 { 1.0 } else { -1.0 })
            .collect();
        let (bounds, linear) = (vec![1.0; 12], vec![-1.0; 12]);
        let params = SmoParams::default();
        let by_columns = solve_reading(&k, &y, &params, &bounds, &linear, false);
        assert_ne!(
            solve_reading(&k, &y, &params, &bounds, &linear, true),
            by_columns
        );
        assert_eq!(solve_general(&k, &y, &params, &bounds, &linear), by_columns);
    }

    #[test]
    fn two_points_hard_margin_closed_form() {
        // x₊ = (1, 1), x₋ = (−1, 0): α = 2/‖x₊ − x₋‖² = 2/5, w = α(x₊ − x₋), margin 1 each.
        let k = linear_kernel(&[[1.0, 1.0], [-1.0, 0.0]]);
        let y = [1.0, -1.0];
        let sol = solve(
            &k,
            &y,
            &SmoParams {
                c: 1e10,
                tolerance: 1e-10,
                ..Default::default()
            },
        );
        assert!(sol.converged);
        assert!((sol.alpha[0] - 0.4).abs() < 1e-9 && (sol.alpha[1] - 0.4).abs() < 1e-9);
        // f(x₊) = +1 and f(x₋) = −1 on the margin.
        let f = |t: usize| {
            (0..2)
                .map(|i| sol.alpha[i] * y[i] * k[i * 2 + t])
                .sum::<f64>()
                + sol.bias
        };
        assert!((f(0) - 1.0).abs() < 1e-8 && (f(1) + 1.0).abs() < 1e-8);
    }

    #[test]
    fn matches_brute_force_on_random_small_problems() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
        for case in 0..60 {
            let n = 3 + case % 4;
            let points: Vec<[f64; 2]> = (0..n)
                .map(|_| [rng.random_range(-2.0..2.0), rng.random_range(-2.0..2.0)])
                .collect();
            let mut y: Vec<f64> = (0..n)
                .map(|_| if rng.random_bool(0.5) { 1.0 } else { -1.0 })
                .collect();
            y[0] = 1.0;
            y[1] = -1.0;
            // Gaussian kernel: positive definite, so the optimum is unique in value.
            let mut k = vec![0.0; n * n];
            for i in 0..n {
                for j in 0..n {
                    let d = (points[i][0] - points[j][0]).powi(2)
                        + (points[i][1] - points[j][1]).powi(2);
                    k[i * n + j] = (-d).exp();
                }
            }
            let c = [0.1, 1.0, 10.0][case % 3];
            let sol = solve(
                &k,
                &y,
                &SmoParams {
                    c,
                    tolerance: 1e-9,
                    ..Default::default()
                },
            );
            assert!(sol.converged);
            let exact = brute_force(&k, &y, &vec![c; n]);
            assert!(
                (sol.objective - exact).abs() <= 1e-6 * exact.abs().max(1.0),
                "case {case}: {} vs {exact}",
                sol.objective
            );
            assert!((dual_objective(&k, &y, &sol.alpha) - sol.objective).abs() < 1e-9);
        }
    }

    /// A Gaussian kernel on random points of the plane.
    fn gaussian(points: &[[f64; 2]]) -> Vec<f64> {
        let n = points.len();
        let mut k = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                let d =
                    (points[i][0] - points[j][0]).powi(2) + (points[i][1] - points[j][1]).powi(2);
                k[i * n + j] = (-d).exp();
            }
        }
        k
    }

    #[test]
    fn per_point_bounds_match_brute_force_and_repeated_points() {
        // Class weights (libsvm's -wi): bound C·w_y on each αᵢ. The optimum equals (i) the
        // brute-force optimum of that dual, (ii) the plain dual with bound C on the set
        // where each point of class y appears w_y times (the copies' α sum to the single
        // point's, so both duals have one optimal value).
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(23);
        let params = SmoParams {
            tolerance: 1e-10,
            ..Default::default()
        };
        for case in 0..40 {
            let n = 3 + case % 3;
            let points: Vec<[f64; 2]> = (0..n)
                .map(|_| [rng.random_range(-2.0..2.0), rng.random_range(-2.0..2.0)])
                .collect();
            let mut y: Vec<f64> = (0..n)
                .map(|_| if rng.random_bool(0.5) { 1.0 } else { -1.0 })
                .collect();
            y[0] = 1.0;
            y[1] = -1.0;
            let c = [0.1, 1.0, 10.0][case % 3];
            let w = [(1usize, 3usize), (2, 1), (3, 2)][case % 3]; // (negative, positive)
            let copies = |yi: f64| if yi > 0.0 { w.1 } else { w.0 };
            let bounds: Vec<f64> = y.iter().map(|&yi| c * copies(yi) as f64).collect();
            let k = gaussian(&points);
            let sol = solve_bounded(&k, &y, &params, &bounds);
            assert!(sol.converged);
            let exact = brute_force(&k, &y, &bounds);
            assert!(
                (sol.objective - exact).abs() <= 1e-6 * exact.abs().max(1.0),
                "case {case}: {} vs brute force {exact}",
                sol.objective
            );
            let (mut rep_points, mut rep_y) = (Vec::new(), Vec::new());
            for (p, &yi) in points.iter().zip(&y) {
                for _ in 0..copies(yi) {
                    rep_points.push(*p);
                    rep_y.push(yi);
                }
            }
            let repeated = solve(&gaussian(&rep_points), &rep_y, &SmoParams { c, ..params });
            assert!(repeated.converged);
            assert!(
                (repeated.objective - exact).abs() <= 1e-6 * exact.abs().max(1.0),
                "case {case}: repeated {} vs {exact}",
                repeated.objective
            );
        }
    }

    #[test]
    fn a_general_linear_term_matches_brute_force() {
        // Margins other than 1 (sMIL's (2 − |X|)/|X| for a positive bag, negative for bags
        // of three or more instances): p = −margin, with per-point bounds.
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(31);
        let params = SmoParams {
            tolerance: 1e-10,
            ..Default::default()
        };
        for case in 0..60 {
            let n = 3 + case % 4;
            let points: Vec<[f64; 2]> = (0..n)
                .map(|_| [rng.random_range(-2.0..2.0), rng.random_range(-2.0..2.0)])
                .collect();
            let mut y: Vec<f64> = (0..n)
                .map(|_| if rng.random_bool(0.5) { 1.0 } else { -1.0 })
                .collect();
            y[0] = 1.0;
            y[1] = -1.0;
            let p: Vec<f64> = (0..n).map(|_| rng.random_range(-1.0..0.8)).collect();
            let bounds: Vec<f64> = (0..n)
                .map(|_| [0.1, 1.0, 10.0][rng.random_range(0..3)])
                .collect();
            let k = gaussian(&points);
            let sol = solve_general(&k, &y, &params, &bounds, &p);
            assert!(sol.converged);
            let exact = brute_force_general(&k, &y, &bounds, &p);
            assert!(
                (sol.objective - exact).abs() <= 1e-6 * exact.abs().max(1.0),
                "case {case}: {} vs brute force {exact}",
                sol.objective
            );
            assert!((general_objective(&k, &y, &sol.alpha, &p) - sol.objective).abs() < 1e-9);
            // The bias puts every free point on its own margin: yᵢf(xᵢ) = −pᵢ.
            for i in 0..n {
                if sol.alpha[i] > 1e-6 && sol.alpha[i] < bounds[i] - 1e-6 {
                    let f: f64 = (0..n)
                        .map(|j| sol.alpha[j] * y[j] * k[i * n + j])
                        .sum::<f64>()
                        + sol.bias;
                    assert!((y[i] * f + p[i]).abs() < 1e-6, "case {case} point {i}");
                }
            }
        }
    }

    #[test]
    fn terminates_feasibly_on_indefinite_kernels() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
        for _ in 0..30 {
            let n = 12;
            let mut k = vec![0.0; n * n];
            for i in 0..n {
                for j in 0..=i {
                    let v: f64 = rng.random_range(-1.0..1.0);
                    k[i * n + j] = v;
                    k[j * n + i] = v;
                }
            }
            let y: Vec<f64> = (0..n)
                .map(|i| if i % 2 == 0 { 1.0 } else { -1.0 })
                .collect();
            let sol = solve(
                &k,
                &y,
                &SmoParams {
                    c: 10.0,
                    tolerance: 1e-6,
                    max_iterations: 100_000,
                },
            );
            assert!(
                sol.converged,
                "did not converge in {} iterations",
                sol.iterations
            );
            assert!(sol.alpha.iter().all(|&a| (0.0..=10.0).contains(&a)));
            let balance: f64 = sol.alpha.iter().zip(&y).map(|(a, y)| a * y).sum();
            assert!(balance.abs() < 1e-9);
        }
    }
}
