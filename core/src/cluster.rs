//! M³IC cluster assignment (Zhang et al. 2009, Table 1 step 14): with one weight vector
//! w_u (and bias c_u) per cluster, instance j of a bag scores s_ju = w_uᵀ y_j + c_u; the
//! witness is j* = argmax_j (max_u s_ju − mean_v s_jv), and the bag goes to cluster
//! argmax_p s_j*p. One pass over the instances; scratch d + k values.
//!
//! **Unit-length instances.** A model fitted on instances scaled to unit length after the
//! z-score (the host's default, `mil cluster` without `--no-instance-norm`) carries an
//! [`tag::INSTANCE_NORM`] section: the z-scored instance is z_j = a_j·v_j + c_j, where v_j
//! is feature j as the device receives it (for quantised models a_j includes the input
//! step), and every score of the instance is divided by ‖z‖ (an all-zero z is left alone,
//! as on the host). The stage still folds the z-score into the k score rows, so dividing
//! the k scores costs one pass of D multiply-adds per instance instead of a D × D stage.
//!
//! Error bound ([`M3ic::instance_score_bound`]): with ŝ_u the device's unscaled score
//! (|ŝ_u − s_u| ≤ e_u, from the stage's bound) and n̂ its norm, the input rounding moves each
//! z_j by at most a_j/2 for quantised models, so |n̂ − n| ≤ e_n = ½‖a‖ + 4(D+2)ε·n̂
//! (f32 rounding of the sum and the square root, ε = 2⁻²³), and for n̂ > e_n
//!
//! |ŝ_u/n̂ − s_u/n| ≤ (e_u + e_n·(|ŝ_u| + e_u)/(n̂ − e_n)) / n̂ + 2ε·|ŝ_u/n̂|.

use crate::bag::{argmax_first, Decision, Instances};
use crate::container::{tag, Elem, Encoding, Section, Sections};
use crate::error::Error;
use crate::project::Stage;
use crate::weights::{Q7Layout, Weights};

/// The per-cluster weights of an M³IC model (`SCORE_WEIGHTS` k × d, `SCORE_BIAS` 1 × k)
/// and, for unit-length instances, the z-score map (`INSTANCE_NORM` 2 × D).
#[derive(Debug, Clone, Copy)]
pub struct M3ic<'a> {
    weights: Weights<'a>,
    bias: Section<'a>,
    instance_norm: Option<Section<'a>>,
}

impl<'a> M3ic<'a> {
    pub(crate) fn from_sections(
        sections: &Sections<'a>,
        encoding: Encoding,
        d: usize,
        input_dim: usize,
    ) -> Result<Self, Error> {
        let k = sections.require(tag::SCORE_WEIGHTS)?.rows;
        if k < 2 {
            return Err(Error::BadModel("fewer than two clusters"));
        }
        let weights = Weights::from_sections(
            sections,
            encoding,
            tag::SCORE_WEIGHTS,
            tag::SCORE_SCALE,
            None,
            (k, d),
            Q7Layout::Rows,
        )?;
        let bias = sections.f32_vec(tag::SCORE_BIAS, k)?;
        let instance_norm = match sections.get(tag::INSTANCE_NORM) {
            None => None,
            Some(s) => {
                s.expect(Elem::F32, 2, input_dim)?;
                s.expect_finite()?;
                Some(s)
            }
        };
        Ok(M3ic {
            weights,
            bias,
            instance_norm,
        })
    }

    /// Number of clusters k.
    pub fn n_clusters(&self) -> usize {
        self.weights.rows()
    }

    /// Whether instances are scaled to unit length before scoring.
    pub fn scales_instances(&self) -> bool {
        self.instance_norm.is_some()
    }

    /// ‖z‖ of one instance as received (1 when the model does not scale instances).
    fn instance_norm(&self, x: Instances<'_>) -> f32 {
        let Some(s) = self.instance_norm else {
            return 1.0;
        };
        let (a, c) = s.f32s().split_at(s.cols);
        let ac = a.into_iter().zip(c);
        let sum: f32 = match x {
            Instances::F32(x) => x
                .iter()
                .zip(ac)
                .map(|(&v, (a, c))| a * v + c)
                .map(|v| v * v)
                .sum(),
            Instances::I16(x) => x
                .iter()
                .zip(ac)
                .map(|(&v, (a, c))| a * v as f32 + c)
                .map(|v| v * v)
                .sum(),
        };
        libm::sqrtf(sum)
    }

    /// The k cluster scores of one instance (`x`: D values as received; `scratch`: d
    /// values; `scores`: k values), divided by ‖z‖ when the model scales instances.
    /// `stage` is the model's ([`crate::Model::stage`]).
    pub fn instance_scores(
        &self,
        stage: &Stage<'_>,
        x: Instances<'_>,
        scratch: &mut [f32],
        scores: &mut [f32],
    ) -> Result<(), Error> {
        let k = self.n_clusters();
        let d = self.weights.cols();
        if x.len() != stage.input_dim() {
            return Err(Error::DimensionMismatch {
                expected: stage.input_dim(),
                got: x.len(),
            });
        }
        if scratch.len() < d || scores.len() < k {
            return Err(Error::BufferTooSmall {
                needed: d.max(k),
                got: scratch.len().min(scores.len()),
            });
        }
        stage.project_instance(x, 0, scratch)?;
        let norm = self.instance_norm(x);
        let (y, _) = crate::score::split(scratch, d);
        let (scores, _) = crate::score::split(scores, k);
        for ((u, su), bias) in scores.iter_mut().enumerate().zip(self.bias.f32s()) {
            let s = self.weights.dot_f32(u, y) + bias;
            *su = if norm > 0.0 { s / norm } else { s };
        }
        Ok(())
    }

    /// The bound stated in the module documentation on |score − host score| of cluster
    /// `u` for one quantised instance `qx` (`f32::INFINITY` when n̂ ≤ e_n or the model
    /// has no projection stage). The unscaled score's bound e_u carries the stage's bound
    /// e_v through the cluster weights H: e_u = Σ_v |H_uv|·e_v + (d+2)ε·(Σ_v |H_uv ŷ_v| + |c_u|).
    pub fn instance_score_bound(&self, stage: &Stage<'_>, qx: &[i16], u: usize) -> f32 {
        let Some(p) = stage.projection() else {
            return f32::INFINITY;
        };
        let d = self.weights.cols();
        let eps = f32::EPSILON;
        let (mut s_hat, mut e_u, mut magnitude) = (self.bias.f32_at(u), 0.0f32, 0.0f32);
        for v in 0..d {
            let Ok(y) = p.output(v, Instances::I16(qx)) else {
                return f32::INFINITY;
            };
            let h = self.weights.get(u, v);
            s_hat += h * y;
            e_u += h.abs() * p.error_bound(v, qx);
            magnitude += (h * y).abs();
        }
        e_u += (d as f32 + 2.0) * eps * (magnitude + self.bias.f32_at(u).abs());
        let Some(norm) = self.instance_norm else {
            return e_u;
        };
        let d_in = norm.cols;
        let n_hat = self.instance_norm(Instances::I16(qx));
        let a_norm = libm::sqrtf((0..d_in).map(|j| norm.f32_at(j) * norm.f32_at(j)).sum());
        let e_n = 0.5 * a_norm + 4.0 * (d_in as f32 + 2.0) * eps * n_hat;
        if n_hat <= e_n {
            return f32::INFINITY;
        }
        let relative = e_n * (s_hat.abs() + e_u) / (n_hat - e_n);
        (e_u + relative) / n_hat + 2.0 * eps * (s_hat / n_hat).abs()
    }

    /// Assigns an `n`-instance bag; `scores` receives the witness instance's cluster scores
    /// and the decision names the witness j*.
    pub(crate) fn assign(
        &self,
        stage: &Stage<'_>,
        bag: Instances<'_>,
        n: usize,
        scratch: &mut [f32],
        scores: &mut [f32],
    ) -> Result<Decision, Error> {
        let d = self.weights.cols();
        let k = self.n_clusters();
        if scratch.len() < d + k || scores.len() < k {
            return Err(Error::BufferTooSmall {
                needed: d + k,
                got: scratch.len(),
            });
        }
        let (y, s) = crate::score::split(scratch, d);
        let (s, _) = crate::score::split(s, k);
        let (scores, _) = crate::score::split(scores, k);
        let mut best_margin = f32::NEG_INFINITY;
        let mut best = Decision {
            label: 0,
            score: f32::NEG_INFINITY,
            witness: None,
        };
        let d_in = stage.input_dim();
        for i in 0..n {
            self.instance_scores(stage, bag.instance(i, d_in)?, y, s)?;
            let (arg, top) = argmax_first(s);
            let margin = top - s.iter().sum::<f32>() / k as f32;
            if margin > best_margin {
                best_margin = margin;
                best = Decision {
                    label: arg,
                    score: top,
                    witness: Some(i),
                };
                scores.iter_mut().zip(s.iter()).for_each(|(o, &v)| *o = v);
            }
        }
        Ok(best)
    }
}
