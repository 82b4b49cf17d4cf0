//! An exact active-set solver for the small dual QP of M³IC's cutting-plane problem (17):
//!
//! ```text
//!   minimise ½ xᵀQx − cᵀx   subject to   x ≥ 0,   Σ_{i < capped} x_i ≤ cap
//! ```
//!
//! with `Q` symmetric positive *semi*-definite (a Gram matrix of cutting planes and balance
//! constraints, often rank-deficient). It is the primal active-set method of Nocedal &
//! Wright (Numerical Optimization, 2nd ed., Algorithm 16.3) for convex QPs: each step
//! solves the equality-constrained subproblem on the free variables in the null space of
//! the active cap constraint, by a symmetric eigendecomposition of the reduced Hessian.
//! Directions of zero curvature are followed to the nearest blocking constraint, which is
//! what lets the method accept a singular `Q`. A drop that does not lower the objective
//! below the best value seen is not repeated until it does (round-off anti-cycling).
//! Error bound: the returned point satisfies the KKT conditions with the reduced gradient
//! and multipliers within 1e-13 of the problem's scale (max |c|, max Q_ii·max x) and a
//! remaining Newton decrease below 1e-15 of it, i.e. it is optimal up to round-off. If the
//! iteration cap is hit, [`DualQp::interior_point`] (Clarabel) is the fallback.

use nalgebra::{DMatrix, DVector, SymmetricEigen};

use crate::error::{Error, Result};

/// The QP data: `q` is `n × n` row-major, `c` has length `n`, the first `capped`
/// variables share the constraint `Σ x_i ≤ cap`.
#[derive(Debug, Clone, Copy)]
pub struct DualQp<'a> {
    /// Row-major symmetric PSD matrix.
    pub q: &'a [f64],
    /// Linear term (maximised).
    pub c: &'a [f64],
    /// How many leading variables are under the cap.
    pub capped: usize,
    /// The cap (C of problem (17)); must be positive.
    pub cap: f64,
}

/// The constraint that stopped a step.
enum Block {
    Bound(usize),
    Cap,
}

impl DualQp<'_> {
    /// The objective ½ xᵀQx − cᵀx (what the tests compare solutions by).
    #[cfg(test)]
    pub fn objective(&self, x: &[f64]) -> f64 {
        let n = self.c.len();
        let mut quad = 0.0;
        for i in 0..n {
            let row = &self.q[i * n..(i + 1) * n];
            quad += x[i] * row.iter().zip(x).map(|(a, b)| a * b).sum::<f64>();
        }
        0.5 * quad - self.c.iter().zip(x).map(|(a, b)| a * b).sum::<f64>()
    }

    /// Solves the QP from the feasible point `start` (warm start; zeros always work).
    pub fn solve(&self, start: &[f64]) -> Result<Vec<f64>> {
        let n = self.c.len();
        if self.q.len() != n * n || start.len() != n || self.capped > n {
            return Err(numerical("QP dimensions disagree"));
        }
        if !(self.cap > 0.0 && self.cap.is_finite()) {
            return Err(numerical("the cap must be positive and finite"));
        }
        if self
            .q
            .iter()
            .chain(self.c)
            .chain(start)
            .any(|v| !v.is_finite())
        {
            return Err(numerical("non-finite QP data"));
        }
        let q = DMatrix::from_row_slice(n, n, self.q);
        let c = DVector::from_column_slice(self.c);
        // Project the start onto the feasible set (it is feasible up to round-off).
        let mut x = DVector::from_iterator(n, start.iter().map(|v| v.max(0.0)));
        let capped_sum = x.rows(0, self.capped).sum();
        if capped_sum > self.cap {
            x.rows_mut(0, self.capped).scale_mut(self.cap / capped_sum);
        }
        let q_scale = q.diagonal().amax().max(f64::MIN_POSITIVE);
        let c_scale = c.amax().max(q_scale * x.amax()).max(f64::MIN_POSITIVE);
        let grad_tol = 1e-13 * c_scale;
        // Working set: variables held at zero, and the cap.
        let mut at_zero: Vec<bool> = x.iter().map(|&v| v == 0.0).collect();
        let mut cap_active = self.capped > 0 && x.rows(0, self.capped).sum() >= self.cap;
        // Objective changes below this are round-off (f64 on values of order c_scale·cap).
        let decrease_tol = 1e-15 * c_scale * self.cap.max(1.0);
        let max_iter = 50 * (n + 2);
        // Anti-cycling on round-off: a constraint whose drop did not lower the objective
        // below the best value seen (beyond round-off) is "tabu" — not dropped again until
        // the objective reaches a new best. Exact arithmetic never needs this.
        let mut dropped: Option<Option<usize>> = None;
        let mut pending: Option<(Option<usize>, f64)> = None;
        let mut tabu = vec![false; n];
        let mut cap_tabu = false;
        let mut best_f = f64::INFINITY;
        for _ in 0..max_iter {
            let g = &q * &x - &c;
            // ½xᵀQx − cᵀx = ½xᵀ(g − c).
            let f = 0.5 * x.dot(&(&g - &c));
            if f < best_f - decrease_tol {
                best_f = f;
                tabu.iter_mut().for_each(|v| *v = false);
                cap_tabu = false;
            }
            let free: Vec<usize> = (0..n).filter(|&i| !at_zero[i]).collect();
            let (p, ray) =
                match self.subproblem(&q, &g, &free, cap_active, (grad_tol, decrease_tol), dropped)
                {
                    Step::Stationary => {
                        match pending.take() {
                            Some((Some(j), at_drop)) if f > at_drop - decrease_tol => {
                                tabu[j] = true
                            }
                            Some((None, at_drop)) if f > at_drop - decrease_tol => cap_tabu = true,
                            _ => {}
                        }
                        // Stationary on the working set: check the multipliers' signs.
                        let free_capped: Vec<usize> =
                            free.iter().copied().filter(|&i| i < self.capped).collect();
                        let nu = if cap_active && !free_capped.is_empty() {
                            -free_capped.iter().map(|&i| g[i]).sum::<f64>()
                                / free_capped.len() as f64
                        } else {
                            0.0
                        };
                        let mut worst: Option<(f64, Option<usize>)> = None;
                        if cap_active && !cap_tabu && nu < -grad_tol {
                            worst = Some((nu, None));
                        }
                        for i in (0..n).filter(|&i| at_zero[i] && !tabu[i]) {
                            let mu = g[i] + if i < self.capped { nu } else { 0.0 };
                            if mu < -grad_tol && worst.is_none_or(|(w, _)| mu < w) {
                                worst = Some((mu, Some(i)));
                            }
                        }
                        match worst {
                            None => return Ok(x.iter().copied().collect()),
                            Some((_, Some(i))) => at_zero[i] = false,
                            Some((_, None)) => cap_active = false,
                        }
                        dropped = worst.map(|w| w.1);
                        pending = dropped.map(|d| (d, f));
                        continue;
                    }
                    Step::Newton(p) => {
                        // After a drop the step must move away from the dropped constraint
                        // (Nocedal & Wright, Thm 16.5); if round-off says otherwise, the
                        // multiplier was noise: restore the constraint.
                        match dropped {
                            Some(Some(j)) if p[j] <= 0.0 => {
                                at_zero[j] = true;
                                tabu[j] = true;
                                dropped = None;
                                continue;
                            }
                            Some(None) if p.rows(0, self.capped).sum() >= 0.0 => {
                                cap_active = true;
                                cap_tabu = true;
                                dropped = None;
                                continue;
                            }
                            _ => (p, false),
                        }
                    }
                    Step::Ray(p) => (p, true),
                };
            let mut moved = false;
            // Ratio test: the longest step along p that stays feasible. A ray of zero
            // curvature goes to its nearest blocking constraint; if it has none, its
            // reverse (the ray is never ascending by more than round-off) has one.
            for direction in [1.0, -1.0] {
                let p = &p * direction;
                let mut t = if ray { f64::INFINITY } else { 1.0 };
                let mut block = None;
                for &i in &free {
                    if p[i] < 0.0 {
                        let ti = -x[i] / p[i];
                        if ti < t {
                            t = ti;
                            block = Some(Block::Bound(i));
                        }
                    }
                }
                if !cap_active && self.capped > 0 {
                    let rate: f64 = p.rows(0, self.capped).sum();
                    if rate > 0.0 {
                        let room = (self.cap - x.rows(0, self.capped).sum()).max(0.0);
                        if room / rate < t {
                            t = room / rate;
                            block = Some(Block::Cap);
                        }
                    }
                }
                if !t.is_finite() {
                    continue;
                }
                x.axpy(t, &p, 1.0);
                match block {
                    Some(Block::Bound(i)) => {
                        x[i] = 0.0;
                        at_zero[i] = true;
                    }
                    Some(Block::Cap) => cap_active = true,
                    None => {}
                }
                x.iter_mut().for_each(|v| *v = v.max(0.0));
                dropped = None;
                moved = true;
                break;
            }
            if !moved {
                return Err(numerical(
                    "the dual is unbounded (the primal problem is infeasible)",
                ));
            }
        }
        Err(numerical("the active-set iteration did not terminate"))
    }

    /// The same QP by Clarabel's interior-point method (tolerances 1e-11): the fallback
    /// when the active-set iteration stalls on round-off, and the tests' reference.
    pub fn interior_point(&self) -> Result<Vec<f64>> {
        use clarabel::algebra::CscMatrix;
        use clarabel::solver::{
            DefaultSettingsBuilder, DefaultSolver, IPSolver, NonnegativeConeT, SolverStatus,
        };
        let qp = self;
        let n = qp.c.len();
        // Upper triangle of Q in CSC form.
        let p_dense: Vec<Vec<f64>> = (0..n)
            .map(|i| {
                (0..n)
                    .map(|j| if j >= i { qp.q[i * n + j] } else { 0.0 })
                    .collect()
            })
            .collect();
        let p = CscMatrix::from(&p_dense);
        let q: Vec<f64> = qp.c.iter().map(|v| -v).collect();
        // Rows: −x ≤ 0 (n rows), Σ_capped x ≤ cap.
        let mut a_dense = vec![vec![0.0; n]; n + 1];
        for (i, row) in a_dense.iter_mut().take(n).enumerate() {
            row[i] = -1.0;
        }
        a_dense[n][..qp.capped].iter_mut().for_each(|v| *v = 1.0);
        let a = CscMatrix::from(&a_dense);
        let mut b = vec![0.0; n];
        b.push(qp.cap);
        let cones = [NonnegativeConeT(n + 1)];
        let settings = DefaultSettingsBuilder::default()
            .verbose(false)
            .tol_gap_abs(1e-11)
            .tol_gap_rel(1e-11)
            .tol_feas(1e-11)
            .tol_ktratio(1e-9)
            .max_iter(500)
            .build()
            .map_err(|e| numerical(&e.to_string()))?;
        let mut solver = DefaultSolver::new(&p, &q, &a, &b, &cones, settings)
            .map_err(|e| numerical(&format!("{e:?}")))?;
        solver.solve();
        match solver.solution.status {
            SolverStatus::Solved | SolverStatus::AlmostSolved => {
                Ok(solver.solution.x.iter().map(|v| v.max(0.0)).collect())
            }
            status => Err(numerical(&format!("interior point: {status:?}"))),
        }
    }

    /// The step of the equality-constrained subproblem on the free variables: minimise
    /// ½ pᵀQp + gᵀp with p = 0 off `free` and, if the cap is active, Σ_{capped} p = 0.
    /// If the reduced Hessian has a direction of zero curvature, that direction is
    /// returned as a ray (oriented downhill, or away from the constraint dropped last when
    /// flat): following it to a blocking constraint keeps the reduced Hessian positive
    /// definite, which the Newton step and the drop rule rely on.
    fn subproblem(
        &self,
        q: &DMatrix<f64>,
        g: &DVector<f64>,
        free: &[usize],
        cap_active: bool,
        (grad_tol, decrease_tol): (f64, f64),
        dropped: Option<Option<usize>>,
    ) -> Step {
        let n = g.len();
        let m = free.len();
        if m == 0 {
            return Step::Stationary;
        }
        // Orthonormal basis Z of the subspace the step may use (columns, m × r).
        let ones: Vec<usize> = (0..m).filter(|&a| free[a] < self.capped).collect();
        let z = if cap_active && !ones.is_empty() {
            null_space_of_ones(m, &ones)
        } else {
            DMatrix::identity(m, m)
        };
        if z.ncols() == 0 {
            return Step::Stationary;
        }
        let q_ff = DMatrix::from_fn(m, m, |a, b| q[(free[a], free[b])]);
        let g_f = DVector::from_fn(m, |a, _| g[free[a]]);
        let h = z.transpose() * &q_ff * &z;
        let r = z.transpose() * &g_f;
        let eig = SymmetricEigen::new(h);
        let lambda_max = eig.eigenvalues.amax();
        let q_scale = q.diagonal().amax().max(f64::MIN_POSITIVE);
        let curvature_tol = 1e-10 * lambda_max.max(q_scale);
        let g_hat = eig.eigenvectors.transpose() * &r;
        let embed = |u: DVector<f64>| {
            let p_f = &z * (&eig.eigenvectors * u);
            let mut p = DVector::zeros(n);
            for (a, &i) in free.iter().enumerate() {
                p[i] = p_f[a];
            }
            p
        };
        let flat = (0..g_hat.len())
            .filter(|&i| eig.eigenvalues[i] <= curvature_tol)
            .max_by(|&a, &b| g_hat[a].abs().total_cmp(&g_hat[b].abs()));
        if let Some(i) = flat {
            let mut u = DVector::zeros(g_hat.len());
            u[i] = 1.0;
            let mut p = embed(u);
            let downhill = if g_hat[i].abs() > grad_tol {
                g_hat[i] < 0.0
            } else {
                match dropped {
                    Some(Some(j)) => p[j] >= 0.0,
                    Some(None) => p.rows(0, self.capped).sum() <= 0.0,
                    None => true,
                }
            };
            if !downhill {
                p.neg_mut();
            }
            return Step::Ray(p);
        }
        // Stationary when the Newton step would lower the objective by no more than
        // round-off: ½ Σ ĝ_i²/λ_i (a gradient test alone misses the large decreases along
        // directions of small curvature that ill-conditioned cutting planes produce).
        let decrease: f64 = (0..g_hat.len())
            .map(|i| 0.5 * g_hat[i] * g_hat[i] / eig.eigenvalues[i])
            .sum();
        if r.amax() <= grad_tol && decrease <= decrease_tol {
            return Step::Stationary;
        }
        let u = DVector::from_fn(g_hat.len(), |i, _| -g_hat[i] / eig.eigenvalues[i]);
        Step::Newton(embed(u))
    }
}

/// What the equality-constrained subproblem asks for.
enum Step {
    /// The point is stationary on the working set.
    Stationary,
    /// Its minimiser is this step (positive definite reduced Hessian).
    Newton(DVector<f64>),
    /// A direction of zero curvature that does not increase the objective.
    Ray(DVector<f64>),
}

/// An orthonormal basis (m × (m−1)) of the vectors on m coordinates whose entries at
/// `ones` sum to zero, from the Householder reflection mapping 1_ones/‖1_ones‖ to a unit
/// vector (its other columns span the orthogonal complement).
fn null_space_of_ones(m: usize, ones: &[usize]) -> DMatrix<f64> {
    let first = ones[0];
    let mut v = DVector::zeros(m);
    let norm = (ones.len() as f64).sqrt();
    for &a in ones {
        v[a] = 1.0 / norm;
    }
    v[first] -= 1.0;
    let vn = v.norm_squared();
    let mut house = DMatrix::identity(m, m);
    if vn > 0.0 {
        house -= (2.0 / vn) * &v * v.transpose();
    }
    // Column `first` of the reflection is 1_ones/‖1_ones‖; drop it.
    house.remove_column(first)
}

fn numerical(reason: &str) -> Error {
    Error::Numerical {
        method: "M³IC dual QP (17)",
        reason: reason.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    /// A random dual of the M³IC shape: Q = AᵀA with columns that may repeat with opposite
    /// signs (like the balance pairs e_pq = −e_qp), so Q is often singular.
    fn random_problem(rng: &mut Xoshiro256PlusPlus) -> (Vec<f64>, Vec<f64>, Vec<f64>, usize, f64) {
        let dim = rng.random_range(2..8usize);
        let capped = rng.random_range(1..7usize);
        let pairs = rng.random_range(0..3usize);
        let mut cols: Vec<Vec<f64>> = (0..capped)
            .map(|_| (0..dim).map(|_| rng.random_range(-1.0..1.0)).collect())
            .collect();
        if capped > 1 && rng.random_bool(0.3) {
            // A repeated cutting plane: rank deficiency inside the capped block.
            let copy = cols[0].clone();
            cols[1] = copy;
        }
        for _ in 0..pairs {
            let e: Vec<f64> = (0..dim).map(|_| rng.random_range(-1.0..1.0)).collect();
            cols.push(e.iter().map(|v| -v).collect());
            cols.push(e);
        }
        let n = cols.len();
        let mut q = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                q[i * n + j] = cols[i].iter().zip(&cols[j]).map(|(a, b)| a * b).sum();
            }
        }
        let mut c: Vec<f64> = (0..capped).map(|_| rng.random_range(0.0..1.0)).collect();
        c.extend((capped..n).map(|_| -rng.random_range(0.0..0.5)));
        let cap = 2f64.powi(rng.random_range(-4..5));
        // w = Σ x_i col_i is unique even when x is not: compare it too.
        let flat: Vec<f64> = cols.concat();
        (q, c, flat, capped, cap)
    }

    fn combine(flat: &[f64], n: usize, x: &[f64]) -> Vec<f64> {
        let dim = flat.len() / n;
        (0..dim)
            .map(|d| (0..n).map(|i| x[i] * flat[i * dim + d]).sum())
            .collect()
    }

    #[test]
    fn matches_clarabel_on_random_problems() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        for case in 0..300 {
            let (q, c, flat, capped, cap) = random_problem(&mut rng);
            let qp = DualQp {
                q: &q,
                c: &c,
                capped,
                cap,
            };
            let n = c.len();
            let ours = qp.solve(&vec![0.0; n]).unwrap();
            let theirs = qp.interior_point().unwrap();
            let (fo, ft) = (qp.objective(&ours), qp.objective(&theirs));
            assert!(
                (fo - ft).abs() <= 1e-6 * (1.0 + ft.abs()),
                "case {case}: objective {fo} vs clarabel {ft}"
            );
            // Feasible exactly.
            assert!(ours.iter().all(|&v| v >= 0.0), "case {case}");
            assert!(ours[..capped].iter().sum::<f64>() <= cap * (1.0 + 1e-12));
            // The primal point w = Σ x_i col_i is unique: compare it entrywise.
            let (wo, wt) = (combine(&flat, n, &ours), combine(&flat, n, &theirs));
            for (a, b) in wo.iter().zip(&wt) {
                assert!((a - b).abs() <= 1e-6, "case {case}: w {wo:?} vs {wt:?}");
            }
        }
    }

    #[test]
    fn warm_start_reaches_the_same_optimum() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
        for _ in 0..100 {
            let (q, c, _, capped, cap) = random_problem(&mut rng);
            let qp = DualQp {
                q: &q,
                c: &c,
                capped,
                cap,
            };
            let n = c.len();
            let cold = qp.solve(&vec![0.0; n]).unwrap();
            // A feasible but arbitrary start.
            let mut start: Vec<f64> = (0..n).map(|_| rng.random_range(0.0..1.0)).collect();
            let s: f64 = start[..capped].iter().sum();
            start[..capped].iter_mut().for_each(|v| *v *= 0.5 * cap / s);
            let warm = qp.solve(&start).unwrap();
            let (a, b) = (qp.objective(&cold), qp.objective(&warm));
            assert!((a - b).abs() <= 1e-9 * (1.0 + a.abs()), "{a} vs {b}");
        }
    }

    #[test]
    fn one_variable_closed_form() {
        // min ½ q x² − c x, 0 ≤ x ≤ cap: x = clamp(c/q, 0, cap).
        for (qv, cv, cap, want) in [
            (2.0, 1.0, 10.0, 0.5),
            (2.0, 1.0, 0.25, 0.25),
            (2.0, -1.0, 1.0, 0.0),
        ] {
            let qp = DualQp {
                q: &[qv],
                c: &[cv],
                capped: 1,
                cap,
            };
            let x = qp.solve(&[0.0]).unwrap();
            assert!((x[0] - want).abs() < 1e-15, "{x:?} vs {want}");
        }
    }

    #[test]
    fn bad_data_is_an_error() {
        let qp = DualQp {
            q: &[f64::NAN],
            c: &[1.0],
            capped: 1,
            cap: 1.0,
        };
        assert!(qp.solve(&[0.0]).is_err());
        let qp = DualQp {
            q: &[1.0],
            c: &[1.0],
            capped: 1,
            cap: 0.0,
        };
        assert!(qp.solve(&[0.0]).is_err());
    }
}
