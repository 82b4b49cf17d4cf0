//! The 1-norm soft-margin SVM as a linear program (MILES's LP), solved by a primal–dual
//! interior point specialised to its shape:
//!
//! ```text
//!   minimise   Σₖ (uₖ + vₖ) + Σᵢ cᵢ ξᵢ
//!   subject to yᵢ (mᵢ·(u − v) + b) + ξᵢ − sᵢ = 1,   u, v, ξ, s ≥ 0,   b free
//! ```
//!
//! for p rows mᵢ (bags) of n features (candidate prototypes), labels yᵢ = ±1 and error
//! costs cᵢ > 0; w = u − v. Its dual is: maximise Σᵢ λᵢ subject to 0 ≤ λᵢ ≤ cᵢ,
//! |Σᵢ λᵢ yᵢ mᵢₖ| ≤ 1 for every k and Σᵢ λᵢ yᵢ = 0.
//!
//! Why a specialised solver: in MILES there are far more features than rows (musk2: 92
//! training bags, 5,900 candidate prototypes), and the constraint matrix is dense. The
//! Newton step of a primal–dual method then reduces to one p × p system, the normal
//! equations (G (D_u + D_v) Gᵀ + D_ξ + D_s) Δλ = h with G = diag(y) M and the D's the
//! diagonal ratios x/z: one dense product of O(p² n) and a p × p Cholesky factorisation
//! per iteration. A general sparse solver (Clarabel's KKT system over all 2n + 2p + 1
//! variables) spends its time factorising that dense block as a sparse one; here the
//! same LP is solved one to two orders of magnitude faster (`benches/miles_peer.py`).
//!
//! The method is Mehrotra's predictor–corrector (Nocedal & Wright, Numerical
//! Optimization, 2nd ed., Algorithm 14.3) with separate primal and dual step lengths,
//! started from Mehrotra's point (§14.2). The free variable b is
//! eliminated by the Schur complement of the normal equations on y. It stops when the
//! primal and dual residuals are below [`TOLERANCE`] (relative to the data's scale) and
//! the duality gap is below [`TOLERANCE`] · (1 + |objective|), or when it stalls within
//! [`REDUCED_TOLERANCE`]; it returns the best point seen, optimal to that accuracy,
//! which the tests check with the dual certificate.

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::factor::{cholesky_in_place, cholesky_in_place_scratch};
use faer::linalg::matmul::matmul;
use faer::linalg::matmul::triangular::{matmul as triangular_matmul, BlockStructure};
use faer::linalg::triangular_solve::{
    solve_lower_triangular_in_place, solve_upper_triangular_in_place,
};
use faer::{Accum, Mat, MatRef, Par};

use crate::error::{Error, Result};

/// Relative accuracy of the residuals and of the duality gap at which the solver stops.
pub const TOLERANCE: f64 = 1e-8;

/// Accuracy accepted when the iteration stalls before [`TOLERANCE`]: near the optimum
/// the normal equations' matrix is as ill-conditioned as the ratios x/z are spread, and
/// round-off in the step can keep the residuals from falling further. Clarabel's
/// reduced gap tolerance (its "almost solved"); worse than this is an error.
pub const REDUCED_TOLERANCE: f64 = 5e-5;

/// Iterations without a better point after which a point within [`REDUCED_TOLERANCE`] is
/// taken as the solution (the iterates only drift once round-off dominates).
const STALL: usize = 5;

/// Most interior-point iterations (it takes 15–40 on the benchmark sets).
pub const MAX_ITERATIONS: usize = 200;

/// The LP's optimum.
#[derive(Debug, Clone, PartialEq)]
pub struct Solution {
    /// The weights w = u − v (length n).
    pub w: Vec<f64>,
    /// The bias b.
    pub bias: f64,
    /// The dual variables λ (length p), 0 ≤ λᵢ ≤ cᵢ.
    pub dual: Vec<f64>,
    /// The interior-point iterations taken.
    pub iterations: usize,
}

/// One primal–dual pair of blocks: values x and their multipliers z.
#[derive(Clone)]
struct Pair {
    x: Vec<f64>,
    z: Vec<f64>,
}

impl Pair {
    fn ones(len: usize) -> Pair {
        Pair {
            x: vec![1.0; len],
            z: vec![1.0; len],
        }
    }
}

/// A Newton direction: the four primal/dual block pairs (u, v, ξ, s), Δb and Δλ.
struct Step {
    dx: [Vec<f64>; 4],
    dz: [Vec<f64>; 4],
    db: f64,
    dl: Vec<f64>,
}

/// Solves the LP for row-major `m` (p × n), labels `y` (±1) and costs `costs` (> 0).
pub fn solve(m: &[f64], n: usize, y: &[f64], costs: &[f64]) -> Result<Solution> {
    let p = y.len();
    let numerical = |reason: String| Error::Numerical {
        method: "MILES 1-norm SVM (LP)",
        reason,
    };
    if m.len() != p * n || costs.len() != p || p == 0 {
        return Err(numerical(format!(
            "{p} rows, {n} features: {} values and {} costs",
            m.len(),
            costs.len()
        )));
    }
    let lp = Problem {
        m: MatRef::from_row_major_slice(m, p, n),
        y,
        costs,
    };
    // Blocks in the order u, v, ξ, s.
    let Some((mut pairs, mut lambda, mut bias)) = lp.start() else {
        return Err(numerical(
            "the starting point's normal equations are singular".into(),
        ));
    };
    let total = (2 * n + 2 * p) as f64;
    let cost_scale = 1.0 + costs.iter().fold(0.0f64, |a, c| a.max(*c));
    let mut best: Option<(f64, Solution)> = None;
    let mut best_at = 0;
    for iteration in 1..=MAX_ITERATIONS {
        crate::cancel::checkpoint();
        let res = lp.residuals(&pairs, &lambda, bias);
        let primal: f64 = pairs[0].x.iter().chain(&pairs[1].x).sum::<f64>()
            + costs
                .iter()
                .zip(&pairs[2].x)
                .map(|(c, x)| c * x)
                .sum::<f64>();
        let dual: f64 = lambda.iter().sum();
        // Relative residuals, as general interior-point solvers measure them (Clarabel:
        // ‖Ax + s − b‖ / (1 + ‖b‖ + ‖x‖)): with near-identical embedded bags (a small γ)
        // the weights grow large, and the primal residual's round-off grows with them.
        let x_scale = pairs
            .iter()
            .flat_map(|pair| &pair.x)
            .fold(bias.abs(), |a, x| a.max(x.abs()));
        let error = (res.primal_norm() / (2.0 + x_scale))
            .max(res.dual_norm() / cost_scale)
            .max((primal - dual).abs() / (1.0 + primal.abs()));
        if best.as_ref().is_none_or(|(e, _)| error < *e) {
            best_at = iteration;
            best = Some((
                error,
                Solution {
                    w: (0..n).map(|k| pairs[0].x[k] - pairs[1].x[k]).collect(),
                    bias,
                    dual: lambda.clone(),
                    iterations: iteration - 1,
                },
            ));
        }
        let best_error = best.as_ref().map_or(f64::INFINITY, |(e, _)| *e);
        if error <= TOLERANCE || (best_error <= REDUCED_TOLERANCE && iteration >= best_at + STALL) {
            break;
        }
        let mu = pairs
            .iter()
            .map(|b| b.x.iter().zip(&b.z).map(|(x, z)| x * z).sum::<f64>())
            .sum::<f64>()
            / total;
        let Some(normal) = lp.normal_equations(&pairs) else {
            break;
        };
        // Predictor: the affine-scaling direction (complementarity target 0).
        let target = |_: usize, _: usize| 0.0;
        let affine = lp.direction(&normal, &pairs, &res, target);
        let (ap, ad) = (
            step_length(&pairs, &affine, |pair| &pair.x, |s| &s.dx),
            step_length(&pairs, &affine, |pair| &pair.z, |s| &s.dz),
        );
        let mu_affine = pairs
            .iter()
            .enumerate()
            .map(|(j, b)| {
                (0..b.x.len())
                    .map(|i| (b.x[i] + ap * affine.dx[j][i]) * (b.z[i] + ad * affine.dz[j][i]))
                    .sum::<f64>()
            })
            .sum::<f64>()
            / total;
        let sigma = (mu_affine / mu).powi(3).min(1.0);
        // Corrector: centring σμ and the second-order term −Δx_aff Δz_aff.
        let target = |j: usize, i: usize| sigma * mu - affine.dx[j][i] * affine.dz[j][i];
        let step = lp.direction(&normal, &pairs, &res, target);
        // Closer to the boundary as the iterates converge (Nocedal & Wright's η_k → 1).
        let eta = (1.0 - mu).clamp(0.9, 0.999_999);
        let ap = (eta * step_length(&pairs, &step, |pair| &pair.x, |s| &s.dx)).min(1.0);
        let ad = (eta * step_length(&pairs, &step, |pair| &pair.z, |s| &s.dz)).min(1.0);
        for (j, pair) in pairs.iter_mut().enumerate() {
            for (x, d) in pair.x.iter_mut().zip(&step.dx[j]) {
                *x += ap * d;
            }
            for (z, d) in pair.z.iter_mut().zip(&step.dz[j]) {
                *z += ad * d;
            }
        }
        bias += ap * step.db;
        for (l, d) in lambda.iter_mut().zip(&step.dl) {
            *l += ad * d;
        }
    }
    match best {
        Some((error, solution)) if error <= REDUCED_TOLERANCE => Ok(solution),
        Some((error, _)) => Err(numerical(format!(
            "the interior point stalled at a relative error of {error:.1e}"
        ))),
        None => Err(numerical("no iteration".into())),
    }
}

/// The data of the LP.
struct Problem<'a> {
    /// M, p × n.
    m: MatRef<'a, f64>,
    y: &'a [f64],
    costs: &'a [f64],
}

/// The residuals of the optimality conditions: r_p = 1 − (G(u − v) + y b + ξ − s) and
/// r_d = c − Aᵀλ − z for each block (u, v, ξ, s), r_b = −yᵀλ.
struct Residuals {
    primal: Vec<f64>,
    dual: [Vec<f64>; 4],
    bias: f64,
}

impl Residuals {
    fn primal_norm(&self) -> f64 {
        self.primal.iter().fold(0.0, |a, r| a.max(r.abs()))
    }

    fn dual_norm(&self) -> f64 {
        self.dual
            .iter()
            .flatten()
            .fold(self.bias.abs(), |a, r| a.max(r.abs()))
    }
}

/// The Cholesky factor of the normal equations' matrix K and K⁻¹y, yᵀK⁻¹y (the Schur
/// complement that eliminates Δb).
struct NormalEquations {
    /// D_u + D_v, which K applies between G and Gᵀ.
    weights: Vec<f64>,
    /// D_ξ + D_s, K's diagonal term.
    diagonal: Vec<f64>,
    /// The lower-triangular factor L of K (plus any shift) = L Lᵀ (its strict upper
    /// triangle unused).
    factor: Mat<f64>,
    k_inv_y: Vec<f64>,
    y_k_inv_y: f64,
}

/// Refinement steps of each Newton direction against K applied exactly (see
/// [`Problem::reduced_solve`]).
const REFINEMENTS: usize = 2;

impl Problem<'_> {
    /// G w = y ∘ (M w).
    fn g(&self, w: &[f64]) -> Vec<f64> {
        let mut out = Mat::<f64>::zeros(self.y.len(), 1);
        let w = MatRef::from_column_major_slice(w, w.len(), 1);
        matmul(out.as_mut(), Accum::Replace, self.m, w, 1.0, Par::Seq);
        self.y
            .iter()
            .enumerate()
            .map(|(i, y)| y * out[(i, 0)])
            .collect()
    }

    /// Gᵀλ = Mᵀ (y ∘ λ).
    fn gt(&self, lambda: &[f64]) -> Vec<f64> {
        let n = self.m.ncols();
        let yl = Mat::<f64>::from_fn(self.y.len(), 1, |i, _| self.y[i] * lambda[i]);
        let mut out = Mat::<f64>::zeros(n, 1);
        let mt = self.m.transpose();
        matmul(out.as_mut(), Accum::Replace, mt, yl.as_ref(), 1.0, Par::Seq);
        (0..n).map(|k| out[(k, 0)]).collect()
    }

    /// Mehrotra's starting point (Nocedal & Wright, §14.2): the least-norm x with
    /// A x + y b = 1 and the least-norm z with Aᵀλ + z = c, yᵀλ = 0 (both through the
    /// normal equations at D = I), shifted to be positive and then shifted again so that
    /// no product xᵢzᵢ is far below the average. Its scale follows the costs', which
    /// x = z = 1 does not: with large C that start leaves only tiny steps.
    fn start(&self) -> Option<([Pair; 4], Vec<f64>, f64)> {
        let (p, n) = (self.y.len(), self.m.ncols());
        let ones = [Pair::ones(n), Pair::ones(n), Pair::ones(p), Pair::ones(p)];
        let normal = self.normal_equations(&ones)?;
        // x = Aᵀw (blocks Gᵀw, −Gᵀw, w, −w) and b from (AAᵀ)w + y b = 1, yᵀw = 0.
        let (w, bias) = self.reduced_solve(&normal, &vec![1.0; p], 0.0);
        let gw = self.gt(&w);
        let neg = |v: &[f64]| -> Vec<f64> { v.iter().map(|a| -a).collect() };
        let mut x = [gw.clone(), neg(&gw), w.clone(), neg(&w)];
        // λ from (AAᵀ)λ + y ν = A c = costs, yᵀλ = 0; z = c − Aᵀλ.
        let (lambda, _) = self.reduced_solve(&normal, self.costs, 0.0);
        let gl = self.gt(&lambda);
        let mut z = [
            gl.iter().map(|g| 1.0 - g).collect::<Vec<_>>(),
            gl.iter().map(|g| 1.0 + g).collect(),
            self.costs.iter().zip(&lambda).map(|(c, l)| c - l).collect(),
            lambda.clone(),
        ];
        let shift = |v: &mut [Vec<f64>; 4]| {
            let least = v.iter().flatten().fold(f64::INFINITY, |a, b| a.min(*b));
            let by = (-1.5 * least).max(0.0);
            v.iter_mut().flatten().for_each(|a| *a += by);
        };
        shift(&mut x);
        shift(&mut z);
        let dot: f64 = x
            .iter()
            .flatten()
            .zip(z.iter().flatten())
            .map(|(a, b)| a * b)
            .sum();
        let (sx, sz): (f64, f64) = (x.iter().flatten().sum(), z.iter().flatten().sum());
        let (dx, dz) = (0.5 * dot / sz, 0.5 * dot / sx);
        // All-zero x or z (a problem with nothing to fit) keeps the plain start.
        if !(dx.is_finite() && dz.is_finite() && dx + dz > 0.0) {
            return Some((ones, vec![0.0; p], 0.0));
        }
        let pairs = std::array::from_fn(|j| Pair {
            x: x[j].iter().map(|a| a + dx).collect(),
            z: z[j].iter().map(|a| a + dz).collect(),
        });
        Some((pairs, lambda, bias))
    }

    fn residuals(&self, pairs: &[Pair; 4], lambda: &[f64], bias: f64) -> Residuals {
        let w: Vec<f64> = pairs[0]
            .x
            .iter()
            .zip(&pairs[1].x)
            .map(|(u, v)| u - v)
            .collect();
        let gw = self.g(&w);
        let primal = (0..self.y.len())
            .map(|i| 1.0 - (gw[i] + self.y[i] * bias + pairs[2].x[i] - pairs[3].x[i]))
            .collect();
        let gl = self.gt(lambda);
        let dual = [
            gl.iter()
                .zip(&pairs[0].z)
                .map(|(g, z)| 1.0 - g - z)
                .collect(),
            gl.iter()
                .zip(&pairs[1].z)
                .map(|(g, z)| 1.0 + g - z)
                .collect(),
            (0..self.y.len())
                .map(|i| self.costs[i] - lambda[i] - pairs[2].z[i])
                .collect(),
            (0..self.y.len())
                .map(|i| lambda[i] - pairs[3].z[i])
                .collect(),
        ];
        let bias = -self.y.iter().zip(lambda).map(|(y, l)| y * l).sum::<f64>();
        Residuals { primal, dual, bias }
    }

    /// K = G (D_u + D_v) Gᵀ + D_ξ + D_s with D = x/z, factorised. K is positive definite
    /// in exact arithmetic; near the optimum round-off can break that, and a diagonal
    /// shift of 10⁻¹⁴ · max Kᵢᵢ (raised tenfold until the factorisation succeeds) is
    /// added. `None` when no shift up to 10⁻⁶ · max Kᵢᵢ works.
    fn normal_equations(&self, pairs: &[Pair; 4]) -> Option<NormalEquations> {
        let (p, n) = (self.y.len(), self.m.ncols());
        let weights: Vec<f64> = (0..n)
            .map(|k| pairs[0].x[k] / pairs[0].z[k] + pairs[1].x[k] / pairs[1].z[k])
            .collect();
        let root: Vec<f64> = weights.iter().map(|w| w.sqrt()).collect();
        // Row by row, as M is stored.
        let mut scaled = vec![0.0; p * n];
        for (i, row) in scaled.chunks_exact_mut(n).enumerate() {
            for ((s, a), r) in row.iter_mut().zip(self.m.row(i).iter()).zip(&root) {
                *s = a * r;
            }
        }
        let scaled = MatRef::from_row_major_slice(&scaled, p, n);
        // The lower triangle of (M D^½)(M D^½)ᵀ, all that the factorisation reads.
        let mut gram = Mat::<f64>::zeros(p, p);
        triangular_matmul(
            gram.as_mut(),
            BlockStructure::TriangularLower,
            Accum::Replace,
            scaled,
            BlockStructure::Rectangular,
            scaled.transpose(),
            BlockStructure::Rectangular,
            1.0,
            Par::Seq,
        );
        let diagonal: Vec<f64> = (0..p)
            .map(|i| pairs[2].x[i] / pairs[2].z[i] + pairs[3].x[i] / pairs[3].z[i])
            .collect();
        let k = |i: usize, j: usize| {
            let v = self.y[i] * self.y[j] * gram[(i, j)];
            if i == j {
                v + diagonal[i]
            } else {
                v
            }
        };
        let largest = (0..p).fold(0.0f64, |a, i| a.max(k(i, i)));
        let mut shift = 0.0;
        let mut scratch = MemBuffer::new(cholesky_in_place_scratch::<f64>(
            p,
            Par::Seq,
            Default::default(),
        ));
        let factor = loop {
            let mat_of = |i: usize, j: usize| match i.cmp(&j) {
                std::cmp::Ordering::Less => 0.0,
                std::cmp::Ordering::Equal => k(i, j) + shift,
                std::cmp::Ordering::Greater => k(i, j),
            };
            let mut mat = Mat::<f64>::from_fn(p, p, mat_of);
            // Sequential, so that the fit does not depend on the thread count.
            let done = cholesky_in_place(
                mat.as_mut(),
                Default::default(),
                Par::Seq,
                MemStack::new(&mut scratch),
                Default::default(),
            );
            if done.is_ok() {
                break mat;
            }
            shift = if shift == 0.0 {
                1e-14 * largest
            } else {
                10.0 * shift
            };
            if shift > 1e-6 * largest || !largest.is_finite() {
                return None;
            }
        };
        let k_inv_y = solve_with(&factor, self.y);
        let y_k_inv_y = self.y.iter().zip(&k_inv_y).map(|(a, b)| a * b).sum();
        Some(NormalEquations {
            weights,
            diagonal,
            factor,
            k_inv_y,
            y_k_inv_y,
        })
    }

    /// K v = G ((D_u + D_v) ∘ Gᵀ v) + (D_ξ + D_s) ∘ v, without forming K.
    fn apply_k(&self, normal: &NormalEquations, v: &[f64]) -> Vec<f64> {
        let gv: Vec<f64> = self
            .gt(v)
            .iter()
            .zip(&normal.weights)
            .map(|(g, w)| g * w)
            .collect();
        self.g(&gv)
            .iter()
            .zip(&normal.diagonal)
            .zip(v)
            .map(|((a, d), v)| a + d * v)
            .collect()
    }

    /// Solves K Δλ + y Δb = h, yᵀ Δλ = r_b through the factor: Δλ = K⁻¹h − Δb K⁻¹y with
    /// Δb = (yᵀK⁻¹h − r_b) / yᵀK⁻¹y, then refines the solution against K applied
    /// exactly. Near the optimum K is as ill-conditioned as D is spread, and the primal
    /// residual after a full step is exactly this system's residual, so the refinement
    /// is what lets the primal residual keep falling.
    fn reduced_solve(&self, normal: &NormalEquations, h: &[f64], r_b: f64) -> (Vec<f64>, f64) {
        let once = |h: &[f64], r_b: f64| -> (Vec<f64>, f64) {
            let k_inv_h = solve_with(&normal.factor, h);
            let y_k_inv_h: f64 = self.y.iter().zip(&k_inv_h).map(|(a, b)| a * b).sum();
            let db = (y_k_inv_h - r_b) / normal.y_k_inv_y;
            let dl = k_inv_h
                .iter()
                .zip(&normal.k_inv_y)
                .map(|(a, b)| a - db * b)
                .collect();
            (dl, db)
        };
        let (mut dl, mut db) = once(h, r_b);
        for _ in 0..REFINEMENTS {
            let kdl = self.apply_k(normal, &dl);
            let r1: Vec<f64> = (0..h.len())
                .map(|i| h[i] - kdl[i] - self.y[i] * db)
                .collect();
            let r2 = r_b - self.y.iter().zip(&dl).map(|(y, d)| y * d).sum::<f64>();
            let (cl, cb) = once(&r1, r2);
            for (d, c) in dl.iter_mut().zip(&cl) {
                *d += c;
            }
            db += cb;
        }
        (dl, db)
    }

    /// The Newton direction for the complementarity targets `target(block, i)`: with
    /// r_c = target − x z, Z Δx + X Δz = r_c, Aᵀ Δλ + Δz = r_d, A Δx + y Δb = r_p and
    /// yᵀ Δλ = r_b. Eliminating Δz and Δx gives Δx = e + D Aᵀ Δλ with e = (r_c − x r_d)/z
    /// and D = x/z, Δz = r_d − Aᵀ Δλ, and K Δλ + y Δb = r_p − A e.
    fn direction(
        &self,
        normal: &NormalEquations,
        pairs: &[Pair; 4],
        res: &Residuals,
        target: impl Fn(usize, usize) -> f64,
    ) -> Step {
        let e: [Vec<f64>; 4] = std::array::from_fn(|j| {
            let pair = &pairs[j];
            (0..pair.x.len())
                .map(|i| {
                    let rc = target(j, i) - pair.x[i] * pair.z[i];
                    (rc - pair.x[i] * res.dual[j][i]) / pair.z[i]
                })
                .collect()
        });
        // A e = G(e_u − e_v) + e_ξ − e_s.
        let diff: Vec<f64> = e[0].iter().zip(&e[1]).map(|(a, b)| a - b).collect();
        let ge = self.g(&diff);
        let h: Vec<f64> = (0..self.y.len())
            .map(|i| res.primal[i] - ge[i] - e[2][i] + e[3][i])
            .collect();
        let (dl, db) = self.reduced_solve(normal, &h, res.bias);
        // Aᵀ Δλ per block: Gᵀ Δλ, −Gᵀ Δλ, Δλ, −Δλ.
        let gl = self.gt(&dl);
        let at = |j: usize, i: usize| match j {
            0 => gl[i],
            1 => -gl[i],
            2 => dl[i],
            _ => -dl[i],
        };
        let dx = std::array::from_fn(|j| {
            let pair = &pairs[j];
            (0..pair.x.len())
                .map(|i| e[j][i] + pair.x[i] / pair.z[i] * at(j, i))
                .collect()
        });
        let dz = std::array::from_fn(|j| {
            (0..pairs[j].x.len())
                .map(|i| res.dual[j][i] - at(j, i))
                .collect()
        });
        Step { dx, dz, db, dl }
    }
}

/// x = K⁻¹ b = L⁻ᵀ L⁻¹ b by the Cholesky factor L (its lower triangle).
fn solve_with(factor: &Mat<f64>, b: &[f64]) -> Vec<f64> {
    let mut rhs = Mat::<f64>::from_fn(b.len(), 1, |i, _| b[i]);
    solve_lower_triangular_in_place(factor.as_ref(), rhs.as_mut(), Par::Seq);
    solve_upper_triangular_in_place(factor.as_ref().transpose(), rhs.as_mut(), Par::Seq);
    (0..b.len()).map(|i| rhs[(i, 0)]).collect()
}

/// The largest step in (0, 1] along `step` that keeps the chosen side of every pair
/// non-negative.
fn step_length(
    pairs: &[Pair; 4],
    step: &Step,
    values: impl Fn(&Pair) -> &Vec<f64>,
    deltas: impl Fn(&Step) -> &[Vec<f64>; 4],
) -> f64 {
    let mut alpha = 1.0f64;
    for (pair, d) in pairs.iter().zip(deltas(step)) {
        for (v, dv) in values(pair).iter().zip(d) {
            if *dv < 0.0 {
                alpha = alpha.min(-v / dv);
            }
        }
    }
    alpha
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    /// Σ|wₖ| + Σ cᵢ max(0, 1 − yᵢ(mᵢ·w + b)): the primal objective of (w, b) with the
    /// best slacks.
    fn objective(m: &[f64], n: usize, y: &[f64], costs: &[f64], w: &[f64], b: f64) -> f64 {
        let hinge: f64 = m
            .chunks_exact(n)
            .zip(y)
            .zip(costs)
            .map(|((row, y), c)| {
                let f: f64 = row.iter().zip(w).map(|(a, w)| a * w).sum::<f64>() + b;
                c * (1.0 - y * f).max(0.0)
            })
            .sum();
        w.iter().map(|v| v.abs()).sum::<f64>() + hinge
    }

    /// The same LP in Clarabel's general form (variables [u, v, b, ξ], A x + s = rhs,
    /// s ≥ 0): an independent solver's optimal objective.
    fn clarabel_optimum(m: &[f64], n: usize, y: &[f64], costs: &[f64]) -> f64 {
        use clarabel::algebra::CscMatrix;
        use clarabel::solver::{
            DefaultSettingsBuilder, DefaultSolver, IPSolver, NonnegativeConeT, SolverStatus,
        };
        let p = y.len();
        let vars = 2 * n + 1 + p;
        let mut c = vec![1.0; 2 * n];
        c.push(0.0);
        c.extend_from_slice(costs);
        // Rows 0..p: −yᵢ mᵢ·u + yᵢ mᵢ·v − yᵢ b − ξᵢ ≤ −1; then −x ≤ 0 for u, v, ξ.
        let (mut colptr, mut rowval, mut nzval) = (vec![0], Vec::new(), Vec::new());
        for var in 0..vars {
            if var < 2 * n {
                let (k, sign) = if var < n { (var, -1.0) } else { (var - n, 1.0) };
                for (i, yi) in y.iter().enumerate() {
                    rowval.push(i);
                    nzval.push(sign * yi * m[i * n + k]);
                }
                rowval.push(p + var);
                nzval.push(-1.0);
            } else if var == 2 * n {
                for (i, yi) in y.iter().enumerate() {
                    rowval.push(i);
                    nzval.push(-yi);
                }
            } else {
                rowval.push(var - 2 * n - 1);
                nzval.push(-1.0);
                rowval.push(p + var - 1);
                nzval.push(-1.0);
            }
            colptr.push(rowval.len());
        }
        let rows = p + vars - 1;
        let a = CscMatrix::new(rows, vars, colptr, rowval, nzval);
        let mut rhs = vec![-1.0; p];
        rhs.resize(rows, 0.0);
        let settings = DefaultSettingsBuilder::default()
            .verbose(false)
            .build()
            .unwrap();
        let q = CscMatrix::zeros((vars, vars));
        let cones = [NonnegativeConeT(rows)];
        let mut solver = DefaultSolver::new(&q, &c, &a, &rhs, &cones, settings).unwrap();
        solver.solve();
        assert_eq!(solver.solution.status, SolverStatus::Solved);
        solver.solution.obj_val
    }

    /// A random problem: p rows of n features in [0, 1) (like MILES's similarities), with
    /// some repeated rows and features so that the optimum is not unique; labels ±1
    /// (all one class when `one_class`).
    fn problem(
        rng: &mut Xoshiro256PlusPlus,
        p: usize,
        n: usize,
        one_class: bool,
    ) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let mut m: Vec<f64> = (0..p * n).map(|_| rng.random_range(0.0..1.0)).collect();
        if p > 2 {
            let (from, to) = (0, p - 1);
            for k in 0..n {
                m[to * n + k] = m[from * n + k];
            }
        }
        if n > 2 {
            for i in 0..p {
                m[i * n + n - 1] = m[i * n];
            }
        }
        let y = (0..p)
            .map(|i| if one_class || i % 3 != 0 { 1.0 } else { -1.0 })
            .collect();
        let costs = (0..p).map(|_| rng.random_range(0.05..50.0)).collect();
        (m, y, costs)
    }

    #[test]
    fn each_solution_is_certified_optimal_by_its_dual() {
        // Weak duality: any λ with 0 ≤ λ ≤ c, |Gᵀλ| ≤ 1 and yᵀλ = 0 bounds the optimum
        // from below by Σλ, so a primal objective within the tolerance of Σλ is optimal
        // to that tolerance, whatever solver produced it.
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
        for case in 0..60 {
            let (p, n) = match case % 4 {
                0 => (rng.random_range(2..10), rng.random_range(20..200)),
                1 => (rng.random_range(20..60), rng.random_range(2..10)),
                2 => (rng.random_range(2..30), rng.random_range(2..30)),
                _ => (1, rng.random_range(1..5)),
            };
            let (m, y, costs) = problem(&mut rng, p, n, case % 7 == 6);
            let s = solve(&m, n, &y, &costs).unwrap();
            let lambda = &s.dual;
            let tol = 1e-7;
            for (l, c) in lambda.iter().zip(&costs) {
                assert!(
                    *l >= -tol && *l <= c + tol * c,
                    "case {case}: λ {l} of cost {c}"
                );
            }
            for k in 0..n {
                let g: f64 = (0..p).map(|i| lambda[i] * y[i] * m[i * n + k]).sum();
                assert!(g.abs() <= 1.0 + tol, "case {case}: |Gᵀλ|_{k} = {g}");
            }
            let balance: f64 = lambda.iter().zip(&y).map(|(l, y)| l * y).sum();
            assert!(balance.abs() <= tol, "case {case}: yᵀλ = {balance}");
            let primal = objective(&m, n, &y, &costs, &s.w, s.bias);
            let dual: f64 = lambda.iter().sum();
            assert!(
                primal - dual <= 1e-7 * (1.0 + primal) && dual <= primal + 1e-7 * (1.0 + primal),
                "case {case} ({p} × {n}): primal {primal}, dual {dual}"
            );
        }
    }

    #[test]
    fn badly_scaled_problems_are_solved_within_the_stated_accuracy() {
        // Large costs and near-identical rows (MILES with a small γ: every similarity near
        // 1) make the optimal weights large and the normal equations ill-conditioned.
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(17);
        for case in 0..12 {
            let (p, n) = (rng.random_range(10..60), rng.random_range(20..300));
            let (mut m, y, mut costs) = problem(&mut rng, p, n, false);
            let spread = [1e-1, 1e-2, 1e-3][case % 3];
            m.iter_mut().for_each(|v| *v = 1.0 - spread * *v);
            costs.iter_mut().for_each(|c| *c *= 100.0);
            let s = solve(&m, n, &y, &costs).unwrap();
            let tol = 1e-7;
            for (l, c) in s.dual.iter().zip(&costs) {
                assert!(
                    *l >= -tol * c && *l <= c + tol * c,
                    "case {case}: λ {l} of cost {c}"
                );
            }
            for k in 0..n {
                let g: f64 = (0..p).map(|i| s.dual[i] * y[i] * m[i * n + k]).sum();
                assert!(g.abs() <= 1.0 + 1e-6, "case {case}: |Gᵀλ|_{k} = {g}");
            }
            let primal = objective(&m, n, &y, &costs, &s.w, s.bias);
            let dual: f64 = s.dual.iter().sum();
            assert!(
                (primal - dual).abs() <= REDUCED_TOLERANCE * (1.0 + primal),
                "case {case} ({p} × {n}, spread {spread}): primal {primal}, dual {dual}"
            );
            let reference = clarabel_optimum(&m, n, &y, &costs);
            assert!(
                (primal - reference).abs() <= REDUCED_TOLERANCE * (1.0 + reference),
                "case {case}: {primal} vs Clarabel's {reference}"
            );
        }
    }

    #[test]
    fn the_optimum_is_clarabels() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
        for case in 0..20 {
            let (p, n) = (rng.random_range(2..25), rng.random_range(2..80));
            let (m, y, costs) = problem(&mut rng, p, n, false);
            let s = solve(&m, n, &y, &costs).unwrap();
            let ours = objective(&m, n, &y, &costs, &s.w, s.bias);
            let reference = clarabel_optimum(&m, n, &y, &costs);
            assert!(
                (ours - reference).abs() <= 1e-6 * (1.0 + reference),
                "case {case}: {ours} vs Clarabel's {reference}"
            );
        }
    }

    #[test]
    fn a_separable_pair_has_the_closed_form_solution() {
        // Two rows, one feature: m₊ = 1, m₋ = 0. Margins of 1 need w + b ≥ 1 and b ≤ −1,
        // so w ≥ 2, reached only at w = 2, b = −1 (cost 2). Without margins the errors
        // cost at least 2 min(c₊, c₋) = 10, so (2, −1) is the unique optimum.
        let s = solve(&[1.0, 0.0], 1, &[1.0, -1.0], &[5.0, 5.0]).unwrap();
        assert!(
            (s.w[0] - 2.0).abs() < 1e-7 && (s.bias + 1.0).abs() < 1e-7,
            "{s:?}"
        );
    }

    #[test]
    fn mismatched_inputs_are_refused() {
        assert!(solve(&[1.0, 2.0, 3.0], 2, &[1.0, -1.0], &[1.0, 1.0]).is_err());
        assert!(solve(&[1.0, 2.0], 1, &[1.0, -1.0], &[1.0]).is_err());
        assert!(solve(&[], 1, &[], &[]).is_err());
    }
}
