//! M³IC cluster assignment (Zhang et al. 2009, Table 1 step 14): with one weight vector
//! w_u (and bias c_u) per cluster, instance j of a bag scores s_ju = w_uᵀ y_j + c_u; the
//! witness is j* = argmax_j (max_u s_ju − mean_v s_jv), and the bag goes to cluster
//! argmax_p s_j*p. One pass over the instances; scratch d + k values.

use crate::error::Error;
use crate::model::{
    argmax_first, tag, Decision, Encoding, Instances, Model, Section, Sections, Weights,
};

/// The per-cluster weights of an M³IC model (`SCORE_WEIGHTS` k × d, `SCORE_BIAS` 1 × k).
#[derive(Debug, Clone, Copy)]
pub struct M3ic<'a> {
    weights: Weights<'a>,
    bias: Section<'a>,
}

impl<'a> M3ic<'a> {
    pub(crate) fn from_sections(
        sections: &Sections<'a>,
        encoding: Encoding,
        d: usize,
    ) -> Result<Self, Error> {
        let k = sections.require(tag::SCORE_WEIGHTS)?.rows;
        if k < 2 {
            return Err(Error::BadModel("fewer than two clusters"));
        }
        let weights =
            sections.weights(encoding, tag::SCORE_WEIGHTS, tag::SCORE_SCALE, None, k, d)?;
        let bias = sections.f32_vec(tag::SCORE_BIAS, k)?;
        Ok(M3ic { weights, bias })
    }

    /// Number of clusters k.
    pub fn n_clusters(&self) -> usize {
        self.weights.rows()
    }

    /// Assigns an `n`-instance bag; `scores` receives the witness instance's cluster scores.
    pub(crate) fn assign(
        &self,
        model: &Model<'_>,
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
        let (y, s) = scratch.split_at_mut(d);
        let s = &mut s[..k];
        let scores = &mut scores[..k];
        let mut best_margin = f32::NEG_INFINITY;
        let mut best = Decision {
            label: 0,
            score: f32::NEG_INFINITY,
        };
        for i in 0..n {
            model.project_instance(bag, i, y)?;
            for (u, su) in s.iter_mut().enumerate() {
                *su = self.weights.dot_f32(u, y) + self.bias.f32_at(u);
            }
            let (arg, top) = argmax_first(s);
            let margin = top - s.iter().sum::<f32>() / k as f32;
            if margin > best_margin {
                best_margin = margin;
                best = Decision {
                    label: arg,
                    score: top,
                };
                scores.copy_from_slice(s);
            }
        }
        Ok(best)
    }
}
