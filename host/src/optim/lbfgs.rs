//! Limited-memory BFGS (Nocedal & Wright, *Numerical Optimization*, 2nd ed., Alg. 7.4
//! and 7.5) with a strong-Wolfe line search (Alg. 3.5 and 3.6), for smooth objectives
//! with an exact gradient (MILR's likelihood, MI-ALM's w-step).

use crate::error::{Error, Result};
use crate::numerics::dot;

/// Settings of the minimiser.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lbfgs {
    /// Number of correction pairs kept (m).
    pub memory: usize,
    /// Iteration limit.
    pub max_iterations: usize,
    /// Stop when ‖∇f‖∞ ≤ this · max(1, |f|).
    pub gradient_tolerance: f64,
    /// Stop when an iteration decreases f by at most this · max(1, |f|).
    pub value_tolerance: f64,
}

impl Default for Lbfgs {
    fn default() -> Self {
        Lbfgs {
            memory: 10,
            max_iterations: 1000,
            gradient_tolerance: 1e-8,
            value_tolerance: 1e-12,
        }
    }
}

/// The result of a minimisation.
#[derive(Debug, Clone, PartialEq)]
pub struct Minimum {
    /// The minimiser found.
    pub x: Vec<f64>,
    /// f at `x`.
    pub value: f64,
    /// Iterations taken.
    pub iterations: usize,
    /// Whether a tolerance (rather than the iteration limit or a failed line search)
    /// ended the run.
    pub converged: bool,
}

impl Lbfgs {
    /// Minimises `f`, which returns f(x) and writes ∇f(x) into its second argument.
    /// Errors when f or its gradient is not finite at the start.
    pub fn minimize<F>(&self, x0: Vec<f64>, mut f: F) -> Result<Minimum>
    where
        F: FnMut(&[f64], &mut [f64]) -> f64,
    {
        let n = x0.len();
        let mut x = x0;
        let mut g = vec![0.0; n];
        let mut fx = f(&x, &mut g);
        if !fx.is_finite() || g.iter().any(|v| !v.is_finite()) {
            return Err(Error::Numerical {
                method: "L-BFGS",
                reason: "objective or gradient not finite at the starting point".into(),
            });
        }
        let mut s_hist: Vec<Vec<f64>> = Vec::new();
        let mut y_hist: Vec<Vec<f64>> = Vec::new();
        let mut rho_hist: Vec<f64> = Vec::new();
        let mut iterations = 0;
        let mut converged = false;
        while iterations < self.max_iterations {
            crate::cancel::checkpoint();
            if g.iter().fold(0.0, |m: f64, v| m.max(v.abs()))
                <= self.gradient_tolerance * fx.abs().max(1.0)
            {
                converged = true;
                break;
            }
            // Two-loop recursion (Alg. 7.4): d = −H∇f.
            let mut q = g.clone();
            let k = s_hist.len();
            let mut alpha = vec![0.0; k];
            for i in (0..k).rev() {
                alpha[i] = rho_hist[i] * dot(&s_hist[i], &q);
                q.iter_mut()
                    .zip(&y_hist[i])
                    .for_each(|(q, y)| *q -= alpha[i] * y);
            }
            // Initial Hessian scaling γ = sᵀy / yᵀy (eq. 7.20).
            let gamma = if k > 0 {
                dot(&s_hist[k - 1], &y_hist[k - 1]) / dot(&y_hist[k - 1], &y_hist[k - 1])
            } else {
                1.0 / g.iter().map(|v| v * v).sum::<f64>().sqrt().max(1.0)
            };
            q.iter_mut().for_each(|v| *v *= gamma);
            for i in 0..k {
                let beta = rho_hist[i] * dot(&y_hist[i], &q);
                q.iter_mut()
                    .zip(&s_hist[i])
                    .for_each(|(q, s)| *q += (alpha[i] - beta) * s);
            }
            let mut d: Vec<f64> = q.iter().map(|v| -v).collect();
            let mut slope = dot(&g, &d);
            if slope >= 0.0 || !slope.is_finite() {
                // Not a descent direction (curvature lost): restart from steepest descent.
                s_hist.clear();
                y_hist.clear();
                rho_hist.clear();
                d = g.iter().map(|v| -v).collect();
                slope = dot(&g, &d);
            }
            let Some((step, fnew, gnew)) = line_search(&mut f, &x, fx, &g, &d, slope) else {
                break;
            };
            let s: Vec<f64> = d.iter().map(|v| v * step).collect();
            let y: Vec<f64> = gnew.iter().zip(&g).map(|(a, b)| a - b).collect();
            x.iter_mut().zip(&s).for_each(|(x, s)| *x += s);
            let decrease = fx - fnew;
            fx = fnew;
            g = gnew;
            iterations += 1;
            let sy = dot(&s, &y);
            if sy > 0.0 {
                if s_hist.len() == self.memory {
                    s_hist.remove(0);
                    y_hist.remove(0);
                    rho_hist.remove(0);
                }
                s_hist.push(s);
                y_hist.push(y);
                rho_hist.push(1.0 / sy);
            }
            if decrease <= self.value_tolerance * fx.abs().max(1.0) {
                converged = true;
                break;
            }
        }
        Ok(Minimum {
            x,
            value: fx,
            iterations,
            converged,
        })
    }
}

/// Strong-Wolfe line search along `d` from `x` (Alg. 3.5 with zoom, Alg. 3.6; c₁ = 10⁻⁴,
/// c₂ = 0.9, cubic interpolation safeguarded by bisection). Returns the step, f and ∇f
/// there, or `None` when no decrease can be found.
fn line_search<F>(
    f: &mut F,
    x: &[f64],
    f0: f64,
    g0: &[f64],
    d: &[f64],
    slope0: f64,
) -> Option<(f64, f64, Vec<f64>)>
where
    F: FnMut(&[f64], &mut [f64]) -> f64,
{
    const C1: f64 = 1e-4;
    const C2: f64 = 0.9;
    let n = x.len();
    let mut point = vec![0.0; n];
    let mut grad = vec![0.0; n];
    let mut eval = |t: f64, point: &mut Vec<f64>, grad: &mut Vec<f64>| -> (f64, f64) {
        point
            .iter_mut()
            .zip(x.iter().zip(d))
            .for_each(|(p, (x, d))| *p = x + t * d);
        let v = f(point, grad);
        (v, dot(grad, d))
    };
    let _ = g0;
    let (mut t_prev, mut f_prev, mut s_prev) = (0.0, f0, slope0);
    let mut t = 1.0;
    for i in 0..40 {
        let (ft, st) = eval(t, &mut point, &mut grad);
        if !ft.is_finite() {
            // Overshot into overflow: shrink.
            t = 0.5 * (t_prev + t);
            continue;
        }
        if ft > f0 + C1 * t * slope0 || (i > 0 && ft >= f_prev) {
            return zoom(
                &mut eval,
                f0,
                slope0,
                (t_prev, f_prev, s_prev),
                (t, ft, st),
                &mut point,
                &mut grad,
            );
        }
        if st.abs() <= -C2 * slope0 {
            return Some((t, ft, grad));
        }
        if st >= 0.0 {
            return zoom(
                &mut eval,
                f0,
                slope0,
                (t, ft, st),
                (t_prev, f_prev, s_prev),
                &mut point,
                &mut grad,
            );
        }
        (t_prev, f_prev, s_prev) = (t, ft, st);
        t *= 2.0;
    }
    None
}

type Probe = (f64, f64, f64);

/// Zoom phase (Alg. 3.6) between `lo` (lower f, satisfies sufficient decrease) and `hi`.
fn zoom<E>(
    eval: &mut E,
    f0: f64,
    slope0: f64,
    mut lo: Probe,
    mut hi: Probe,
    point: &mut Vec<f64>,
    grad: &mut Vec<f64>,
) -> Option<(f64, f64, Vec<f64>)>
where
    E: FnMut(f64, &mut Vec<f64>, &mut Vec<f64>) -> (f64, f64),
{
    const C1: f64 = 1e-4;
    const C2: f64 = 0.9;
    for _ in 0..60 {
        let t = cubic_minimiser(lo, hi);
        let (ft, st) = eval(t, point, grad);
        if !ft.is_finite() || ft > f0 + C1 * t * slope0 || ft >= lo.1 {
            hi = (t, ft, st);
        } else {
            if st.abs() <= -C2 * slope0 {
                return Some((t, ft, grad.clone()));
            }
            if st * (hi.0 - lo.0) >= 0.0 {
                hi = lo;
            }
            lo = (t, ft, st);
        }
        if (hi.0 - lo.0).abs() <= 1e-16 * lo.0.abs().max(1e-300) {
            break;
        }
    }
    // The interval collapsed: accept the best point if it decreased f.
    if lo.0 > 0.0 && lo.1 < f0 {
        let (ft, _) = eval(lo.0, point, grad);
        return Some((lo.0, ft, grad.clone()));
    }
    None
}

/// Minimiser of the cubic interpolating two probes (eq. 3.59), kept inside the middle
/// 80% of the interval; bisection when the cubic is unusable.
fn cubic_minimiser(a: Probe, b: Probe) -> f64 {
    let (ta, fa, sa) = a;
    let (tb, fb, sb) = b;
    let mid = 0.5 * (ta + tb);
    if !fb.is_finite() {
        return mid;
    }
    let d1 = sa + sb - 3.0 * (fa - fb) / (ta - tb);
    let disc = d1 * d1 - sa * sb;
    if disc < 0.0 {
        return mid;
    }
    let d2 = (tb - ta).signum() * disc.sqrt();
    let t = tb - (tb - ta) * (sb + d2 - d1) / (sb - sa + 2.0 * d2);
    let (lo, hi) = (ta.min(tb), ta.max(tb));
    let margin = 0.1 * (hi - lo);
    if t.is_finite() && t > lo + margin && t < hi - margin {
        t
    } else {
        mid
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rosenbrock_minimum() {
        let rosen = |x: &[f64], g: &mut [f64]| {
            let (a, b) = (x[0], x[1]);
            g[0] = -2.0 * (1.0 - a) - 400.0 * a * (b - a * a);
            g[1] = 200.0 * (b - a * a);
            (1.0 - a).powi(2) + 100.0 * (b - a * a).powi(2)
        };
        let m = Lbfgs::default().minimize(vec![-1.2, 1.0], rosen).unwrap();
        assert!(m.converged);
        assert!(
            (m.x[0] - 1.0).abs() < 1e-6 && (m.x[1] - 1.0).abs() < 1e-6,
            "{:?}",
            m.x
        );
    }

    #[test]
    fn ill_conditioned_quadratic() {
        // f = Σ cᵢ (xᵢ − i)², condition number 10⁴: the closed-form minimiser is xᵢ = i.
        let n = 30;
        let c: Vec<f64> = (0..n)
            .map(|i| 10f64.powf(4.0 * i as f64 / (n - 1) as f64))
            .collect();
        let quad = |x: &[f64], g: &mut [f64]| {
            let mut v = 0.0;
            for i in 0..n {
                let r = x[i] - i as f64;
                g[i] = 2.0 * c[i] * r;
                v += c[i] * r * r;
            }
            v
        };
        let m = Lbfgs::default().minimize(vec![0.0; n], quad).unwrap();
        for (i, x) in m.x.iter().enumerate() {
            assert!((x - i as f64).abs() < 1e-5, "x[{i}] = {x}");
        }
    }

    #[test]
    fn non_finite_start_is_an_error() {
        let bad = |_: &[f64], g: &mut [f64]| {
            g[0] = 0.0;
            f64::NAN
        };
        assert!(Lbfgs::default().minimize(vec![0.0], bad).is_err());
    }
}
