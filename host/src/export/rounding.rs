//! How the exporter rounds the weights of a quantised dense projection stage to their
//! grid t_k·q (row k of the folded weights W, per-row scale t_k; [`mil_core::project`]).
//!
//! - **Nearest**: q_kj = round(W_kj / t_k), so |W_kj − t_k q_kj| ≤ t_k/2.
//! - **Error feedback**, the default: the OBQ/GPTQ update (Frantar et al., "GPTQ:
//!   accurate post-training quantization for generative pre-trained transformers",
//!   ICLR 2023, Algorithm 1, with its act order: features of largest E(v_j²) first). A
//!   row is rounded one weight at a time; after weight i, the row's later weights move to
//!   cancel, in least squares over the training instances v (as the device receives
//!   them), the output error e_i·v_i just made. With H = E(v vᵀ) +
//!   λI and H⁻¹ = UᵀU (U upper triangular), that move is W_j −= (e_i / U_ii)·U_ij for
//!   j > i, e_i = W_i − t q_i. Unlike GPTQ we keep each q_i at one of the two grid points
//!   around the *original* W_i, so every weight stays within one step (δ_k ≤ 1) and the
//!   core's error bound holds with the row's stored radius δ_k = max_j |W_kj − t_k q_kj|/t_k
//!   (`PROJ_ROUNDING`) in place of ½.
//!
//! Worst-case bounds add every weight's error with the same sign, so they grow with δ; on
//! the training instances the errors cancel instead. In Q7, musk1's M³IC (k = 2) scores
//! move at most 4.2e-4 from the host's instead of 1.3e-3, and corel3's default M³IC
//! assigns 299 of 300 bags as the host does instead of 297 (docs/guide/device.md, "Rounding the
//! weights"). Where the 16-bit input rounding dominates (the Q15 B-MIDA stages) it cannot
//! help.

use nalgebra::DMatrix;

use crate::data::Dataset;
use mil_core::fixed;

/// How `mil export` rounds quantised projection weights (module docs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Rounding {
    /// Each weight to its nearest grid point.
    Nearest,
    /// Error feedback over the training instances (GPTQ), each weight to one of its two
    /// neighbouring grid points.
    #[default]
    Feedback,
}

mil_core::keywords!(Rounding {
    Rounding::Nearest => "nearest": "each weight to its nearest grid point (error ≤ half a step)",
    Rounding::Feedback => "feedback": "error feedback over the training instances (GPTQ): each weight to one of its two neighbouring grid points",
});

/// GPTQ's damping: λ = 1% of the mean diagonal of E(v vᵀ), so that H is positive
/// definite even with constant or collinear features.
const DAMPING: f64 = 0.01;

/// The most features error feedback takes on: its D × D factor costs O(D³). At D = 1024
/// (and the instance cap below) it takes about 1 s on a 2-core machine, and
/// 5 s at D = 2048; above the cap the weights round to nearest.
pub const MAX_FEEDBACK_DIM: usize = 1024;

/// E(v vᵀ) is estimated from at most this many instances, evenly spaced through the
/// data (forming it costs O(n D²)).
const MAX_FEEDBACK_INSTANCES: usize = 20_000;

/// The factor U of H⁻¹ = UᵀU for the training instances as the device receives them,
/// with the features in the order they are rounded.
#[derive(Debug, Clone)]
pub struct Feedback {
    u: DMatrix<f64>,
    order: Vec<usize>,
}

impl Feedback {
    /// From the training instances quantised with the input steps `steps`
    /// (v_j = round(x_j / s_j)); `None` when every such value is zero or the data has
    /// more than [`MAX_FEEDBACK_DIM`] features.
    pub fn new(train: &Dataset, steps: &[f64]) -> Option<Feedback> {
        let d = train.dim();
        let total = train.n_instances();
        if total == 0 || d == 0 || d > MAX_FEEDBACK_DIM || steps.len() != d {
            return None;
        }
        let n = total.min(MAX_FEEDBACK_INSTANCES);
        let features = train.features();
        let v = DMatrix::from_row_iterator(
            n,
            d,
            (0..n).flat_map(|i| {
                let x = &features[i * total / n * d..][..d];
                x.iter().zip(steps).map(|(x, s)| (x / s).round())
            }),
        );
        // (`transpose() *` runs nalgebra's blocked gemm; with `tr_mul`'s D² dot products
        // the whole factor took 6.7 s instead of 1.0 s at D = 1024, n = 5000.)
        let mut h = (v.transpose() * &v) / n as f64;
        let lambda = DAMPING * h.diagonal().mean();
        if !(lambda > 0.0 && lambda.is_finite()) {
            return None;
        }
        for i in 0..d {
            h[(i, i)] += lambda;
        }
        // GPTQ's "act order": the features with the largest E(v_j²) first, while the
        // most later weights are left to absorb their error (ties keep feature order).
        let mut order: Vec<usize> = (0..d).collect();
        order.sort_by(|&a, &b| h[(b, b)].total_cmp(&h[(a, a)]));
        let h = DMatrix::from_fn(d, d, |i, j| h[(order[i], order[j])]);
        // H = R Rᵀ with R upper triangular: the Cholesky factor of H with rows and columns
        // reversed, reversed back. Then U = R⁻¹ (H⁻¹ = R⁻ᵀR⁻¹ = UᵀU) by back substitution,
        // without forming H⁻¹.
        let reversed = DMatrix::from_fn(d, d, |i, j| h[(d - 1 - i, d - 1 - j)]);
        let l = reversed.cholesky()?.l();
        let r = DMatrix::from_fn(d, d, |i, j| l[(d - 1 - i, d - 1 - j)]);
        let u = r.solve_upper_triangular(&DMatrix::identity(d, d))?;
        Some(Feedback { u, order })
    }

    /// Rounds one row of weights (one per feature of the data the factor was built
    /// from) to the grid `scale`·q, |q| ≤ `q_max`. Returns q and the row's radius
    /// δ = max_j |W_j − scale·q_j| / scale (below 1).
    pub fn round_row(&self, row: &[f64], scale: f32, q_max: i32) -> (Vec<i32>, f64) {
        assert_eq!(row.len(), self.order.len(), "one weight per feature");
        let t = f64::from(scale);
        let ordered: Vec<f64> = self.order.iter().map(|&j| row[j]).collect();
        let row = &ordered[..];
        let mut moved = row.to_vec();
        let mut q = Vec::with_capacity(row.len());
        let mut radius = 0.0f64;
        for i in 0..row.len() {
            let ratio = row[i] / t;
            let (lo, hi) = (ratio.floor() as i32, ratio.ceil() as i32);
            let qi = fixed::quantize(moved[i] as f32, scale, q_max)
                .clamp(lo, hi)
                .clamp(-q_max, q_max);
            let error = (moved[i] - t * f64::from(qi)) / self.u[(i, i)];
            for (j, m) in moved.iter_mut().enumerate().skip(i + 1) {
                *m -= error * self.u[(i, j)];
            }
            radius = radius.max((row[i] - t * f64::from(qi)).abs() / t);
            q.push(qi);
        }
        let mut in_feature_order = vec![0; q.len()];
        for (&j, &qi) in self.order.iter().zip(&q) {
            in_feature_order[j] = qi;
        }
        (in_feature_order, radius)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::projection::test_support::{normals, single_instance_bags};

    fn data(dim: usize, rows: &[Vec<f64>]) -> Dataset {
        single_instance_bags(dim, rows, &vec![0; rows.len()])
    }

    /// Σ over instances of (Σ_j (W_j − t q_j) v_j)²: the output error on the data.
    fn data_error(rows: &[Vec<f64>], w: &[f64], t: f32, q: &[i32]) -> f64 {
        rows.iter()
            .map(|v| {
                let e: f64 = (0..w.len())
                    .map(|j| (w[j] - f64::from(t) * f64::from(q[j])) * v[j])
                    .sum();
                e * e
            })
            .sum()
    }

    /// With two features the update has a closed form: after rounding the first weight
    /// with error e, the second weight w' minimising E((e·v_first + (w − w')·v_second)²) +
    /// λ(w − w')² is w + e·H₁₂/(H_second + λ). Feature 1 has the larger E(v²), so it is
    /// rounded first (act order).
    #[test]
    fn second_weight_moves_by_the_least_squares_correction() {
        let rows = vec![
            vec![3.0, 2.0],
            vec![1.0, 2.0],
            vec![-2.0, -1.0],
            vec![4.0, 5.0],
        ];
        let fb = Feedback::new(&data(2, &rows), &[1.0, 1.0]).unwrap();
        let h = |a: usize, b: usize| rows.iter().map(|v| v[a] * v[b]).sum::<f64>() / 4.0;
        assert!(h(1, 1) > h(0, 0));
        let lambda = DAMPING * (h(0, 0) + h(1, 1)) / 2.0;
        let (w, t) = ([0.349, 0.23], 0.1f32);
        let e = w[1] - f64::from(t) * 2.0;
        let target = w[0] + e * h(0, 1) / (h(0, 0) + lambda);
        let (q, radius) = fb.round_row(&w, t, 127);
        // Nearest rounding gives [3, 2]; the correction moves w₀ from 3.49 to 3.79 steps.
        assert_eq!(q, vec![(target / f64::from(t)).round() as i32, 2]);
        assert_eq!(q[0], 4);
        assert!((radius - 0.51).abs() < 1e-6, "{radius}");
        let nearest = [3, 2];
        assert!(data_error(&rows, &w, t, &q) < data_error(&rows, &w, t, &nearest));
    }

    /// On correlated data (features sharing two latent factors) error feedback lowers the
    /// output error against nearest rounding, summed over seeds, and keeps every weight
    /// within one step of its grid point.
    #[test]
    fn feedback_beats_nearest_on_correlated_data() {
        let (dim, n) = (12, 60);
        let (mut ours, mut nearest) = (0.0, 0.0);
        for seed in 0..40u64 {
            let z = normals(seed, n * 2 + dim * 2 + dim);
            let (latent, rest) = z.split_at(n * 2);
            let (loadings, w) = rest.split_at(dim * 2);
            let noise = normals(seed + 1000, n * dim);
            let rows: Vec<Vec<f64>> = (0..n)
                .map(|i| {
                    (0..dim)
                        .map(|j| {
                            10.0 * (latent[2 * i] * loadings[2 * j]
                                + latent[2 * i + 1] * loadings[2 * j + 1])
                                + noise[i * dim + j]
                        })
                        .map(f64::round)
                        .collect()
                })
                .collect();
            let fb = Feedback::new(&data(dim, &rows), &vec![1.0; dim]).unwrap();
            let max_abs = w.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            let t = fixed::scale_for(max_abs as f32, 7);
            let (q, radius) = fb.round_row(w, t, 7);
            assert!(radius < 1.0, "seed {seed}: {radius}");
            let q_near: Vec<i32> = w.iter().map(|&v| fixed::quantize(v as f32, t, 7)).collect();
            ours += data_error(&rows, w, t, &q);
            nearest += data_error(&rows, w, t, &q_near);
        }
        println!("data error: feedback {ours:.4e}, nearest {nearest:.4e}");
        assert!(ours < nearest, "{ours} vs {nearest}");
    }

    #[test]
    fn all_zero_inputs_have_no_factor() {
        assert!(Feedback::new(&data(2, &[vec![0.0, 0.0]]), &[1.0, 1.0]).is_none());
    }
}
