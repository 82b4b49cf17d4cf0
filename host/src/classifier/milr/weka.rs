//! Weka's MILR objective: the bag likelihood over standardised attributes with Weka's ridge, as its BFGS minimises it.

use super::*;

/// Weka's MILR objective and gradient (`MILR.OptEng` of Weka 3.6), in its plain
/// arithmetic: exp, log(1 + exp) and 1/(1 + exp) as written, so that values overflow to
/// ∞ (and the line search shrinks its step) where Weka's do. The logit of an instance
/// sums its features from the last to the first, then adds the intercept, as Weka does.
pub(super) struct WekaObjective<'a> {
    /// Standardised instances, row-major.
    pub(super) x: &'a [f64],
    pub(super) dim: usize,
    pub(super) starts: &'a [usize],
    pub(super) positive: &'a [bool],
    pub(super) pooling: Pooling,
    pub(super) ridge: f64,
}

impl WekaObjective<'_> {
    pub(super) fn logit(&self, theta: &[f64], row: &[f64]) -> f64 {
        let mut z = 0.0;
        for k in (0..self.dim).rev() {
            z += row[k] * theta[k + 1];
        }
        z + theta[0]
    }

    pub(super) fn bag_rows(&self, b: usize) -> std::slice::ChunksExact<'_, f64> {
        self.x[self.starts[b] * self.dim..self.starts[b + 1] * self.dim].chunks_exact(self.dim)
    }

    pub(super) fn value(&self, theta: &[f64]) -> f64 {
        let mut nll = 0.0;
        for (b, &pos) in self.positive.iter().enumerate() {
            let n = (self.starts[b + 1] - self.starts[b]) as f64;
            nll += match self.pooling {
                Pooling::NoisyOr => {
                    // −log(1 − Π 1/(1 + e^z)) for a positive bag, Σ log(1 + e^z) else.
                    let mut s = 0.0;
                    for row in self.bag_rows(b) {
                        let e = self.logit(theta, row).exp();
                        if pos {
                            s -= (1.0 + e).ln();
                        } else {
                            s += (1.0 + e).ln();
                        }
                    }
                    if pos {
                        -(1.0 - s.exp()).ln()
                    } else {
                        s
                    }
                }
                Pooling::Mean => {
                    let mut p = 0.0;
                    for row in self.bag_rows(b) {
                        let e = self.logit(theta, row).exp();
                        p += if pos {
                            1.0 - 1.0 / (1.0 + e)
                        } else {
                            1.0 / (1.0 + e)
                        };
                    }
                    -(p / n).ln()
                }
                _ => {
                    // Geometric: log(1 + e^{∓mean z}), the mean summed as Σ z/n.
                    let mut m = 0.0;
                    for row in self.bag_rows(b) {
                        let z = self.logit(theta, row);
                        if pos {
                            m -= z / n;
                        } else {
                            m += z / n;
                        }
                    }
                    (1.0 + m.exp()).ln()
                }
            };
        }
        for t in &theta[1..] {
            nll += self.ridge * t * t;
        }
        nll
    }

    pub(super) fn gradient(&self, theta: &[f64], grad: &mut [f64]) {
        grad.iter_mut().for_each(|g| *g = 0.0);
        let mut acc = vec![0.0; theta.len()];
        for (b, &pos) in self.positive.iter().enumerate() {
            let n = (self.starts[b + 1] - self.starts[b]) as f64;
            acc.iter_mut().for_each(|a| *a = 0.0);
            let mut scalar = 0.0;
            for row in self.bag_rows(b) {
                let z = self.logit(theta, row);
                // Each bag's gradient accumulates feature · (instance factor) with the
                // operations in Weka's order (it matters to the last bit only).
                match self.pooling {
                    Pooling::NoisyOr => {
                        let p = z.exp() / (1.0 + z.exp());
                        if pos {
                            scalar -= (1.0 - p).ln();
                        }
                        acc[0] += p;
                        for (a, x) in acc[1..].iter_mut().zip(row) {
                            *a += x * p;
                        }
                    }
                    Pooling::Mean => {
                        let e = z.exp();
                        scalar += if pos { e / (1.0 + e) } else { 1.0 / (1.0 + e) };
                        let d = (1.0 + e) * (1.0 + e);
                        acc[0] += e / d;
                        for (a, x) in acc[1..].iter_mut().zip(row) {
                            *a += x * e / d;
                        }
                    }
                    _ => {
                        let sign = if pos { -1.0 } else { 1.0 };
                        scalar += sign * (z / n);
                        acc[0] += sign * (1.0 / n);
                        for (a, x) in acc[1..].iter_mut().zip(row) {
                            *a += sign * (x / n);
                        }
                    }
                }
            }
            match self.pooling {
                Pooling::NoisyOr => {
                    let denom = scalar.exp();
                    for (g, a) in grad.iter_mut().zip(&acc) {
                        if pos {
                            *g -= a / (denom - 1.0);
                        } else {
                            *g += a;
                        }
                    }
                }
                Pooling::Mean => {
                    for (g, a) in grad.iter_mut().zip(&acc) {
                        if pos {
                            *g -= a / scalar;
                        } else {
                            *g += a / scalar;
                        }
                    }
                }
                _ => {
                    let e = scalar.exp();
                    for (g, a) in grad.iter_mut().zip(&acc) {
                        *g += e * a / (1.0 + e);
                    }
                }
            }
        }
        for (g, t) in grad[1..].iter_mut().zip(&theta[1..]) {
            *g += 2.0 * self.ridge * t;
        }
    }
}
