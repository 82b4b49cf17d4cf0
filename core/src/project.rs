//! Projection application y = Gᵀ(x − μ)/σ with the standardisation folded into the
//! weights and a bias: y_k = Σ_j G'_kj x_j + b_k, G'_kj = G_jk/σ_j, b_k = −Σ_j G'_kj μ_j
//! (a feature with σ_j = 0 has G'_kj = 0). Writes into caller buffers.
//!
//! **f32 models** store G' and b as floats; the only error is `f32` rounding.
//!
//! **Q15/Q7 models** fold the input quantisation step s_j into the weights as well:
//! W_kj = G'_kj · s_j, stored as q_kj = round(W_kj / t_k) with a per-row scale t_k, and the
//! instance arrives as qx_j = round(x_j / s_j) ([`crate::Model::quantize_instance`]). The
//! device computes, with `i32` accumulation and the row's shift h_k,
//!
//! ŷ_k = t_k · 2^h_k · Σ_j round_shift(q_kj · qx_j, h_k) + b_k.
//!
//! Error bound (see [`Projection::error_bound`]), for inputs that did not saturate:
//!
//! |ŷ_k − y_k| ≤ (t_k/2)·(Σ_j |q_kj| + D/2)     input rounding, |W_kj|·s_j/2/s_j ≤ t_k(|q_kj|+½)/2
//!             + (t_k/2)·Σ_j |qx_j|             weight rounding, |W_kj − t_k q_kj| ≤ t_k/2
//!             + t_k·2^(h_k−1)·D  (if h_k > 0)  product rounding of the shift
//!             + 4ε·(|t_k 2^h_k acc| + |b_k|)   `f32` rounding of the final rescale, ε = 2⁻²³.

use crate::error::Error;
use crate::model::{tag, Encoding, Instances, Section, Sections, Weights};

/// The projection stage of a model: d × D weights (row k = output k) and d biases.
#[derive(Debug, Clone, Copy)]
pub struct Projection<'a> {
    weights: Weights<'a>,
    bias: Section<'a>,
}

impl<'a> Projection<'a> {
    pub(crate) fn from_sections(
        sections: &Sections<'a>,
        encoding: Encoding,
        input_dim: usize,
    ) -> Result<Self, Error> {
        let w = sections.require(tag::PROJ_WEIGHTS)?;
        let d = w.rows;
        if d == 0 {
            return Err(Error::BadModel("projection with no outputs"));
        }
        let weights = sections.weights(
            encoding,
            tag::PROJ_WEIGHTS,
            tag::PROJ_SCALE,
            Some(tag::PROJ_SHIFT),
            d,
            input_dim,
        )?;
        if encoding != Encoding::F32 {
            // The shift must keep the accumulator out of saturation for every input.
            for k in 0..d {
                let sum: u64 = (0..input_dim)
                    .map(|j| weights.values.i32_at(k * input_dim + j).unsigned_abs() as u64)
                    .sum();
                let shift = weights.shift.map_or(0, |s| s.u32_at(k));
                if shift < crate::fixed::safe_shift(sum) {
                    return Err(Error::BadModel(
                        "accumulator shift too small for the weights",
                    ));
                }
            }
        }
        let bias = sections.f32_vec(tag::PROJ_BIAS, d)?;
        Ok(Projection { weights, bias })
    }

    /// Input dimension D.
    pub fn input_dim(&self) -> usize {
        self.weights.cols()
    }

    /// Output dimension d.
    pub fn output_dim(&self) -> usize {
        self.weights.rows()
    }

    /// The weights (d × D, row k = output k).
    pub fn weights(&self) -> &Weights<'a> {
        &self.weights
    }

    /// Projects one instance into `out[..d]`: f32 models take `Instances::F32`, quantised
    /// models `Instances::I16`.
    pub fn apply(&self, x: Instances<'_>, out: &mut [f32]) -> Result<(), Error> {
        let (d_in, d) = (self.input_dim(), self.output_dim());
        if x.len() != d_in {
            return Err(Error::DimensionMismatch {
                expected: d_in,
                got: x.len(),
            });
        }
        let got = out.len();
        let out = out
            .get_mut(..d)
            .ok_or(Error::BufferTooSmall { needed: d, got })?;
        for (k, o) in out.iter_mut().enumerate() {
            *o = self.output(k, x)?;
        }
        Ok(())
    }

    /// Output `k` of one instance (`k < d`; `x` of length D, as [`Projection::apply`]).
    pub fn output(&self, k: usize, x: Instances<'_>) -> Result<f32, Error> {
        if k >= self.output_dim() || x.len() != self.input_dim() {
            return Err(Error::DimensionMismatch {
                expected: self.input_dim(),
                got: x.len(),
            });
        }
        let quantised = self.weights.scale.is_some();
        let dot = match x {
            Instances::F32(x) if !quantised => self.weights.dot_f32(k, x),
            Instances::I16(x) if quantised => self.weights.dot_q(k, x),
            _ => {
                return Err(Error::InvalidParameter(
                    "f32 models take f32 instances, quantised models quantised ones",
                ))
            }
        };
        Ok(dot + self.bias.f32_at(k))
    }

    /// The bound on |ŷ_k − y_k| stated in the module documentation, for output `k` of a
    /// quantised model and the quantised instance `qx` (0 for f32 models, whose only
    /// error is `f32` rounding).
    pub fn error_bound(&self, k: usize, qx: &[i16]) -> f32 {
        let (Some(scale), true) = (self.weights.scale, k < self.output_dim()) else {
            return 0.0;
        };
        let d_in = self.input_dim();
        let t = scale.f32_at(k);
        let h = self.weights.shift.map_or(0, |s| s.u32_at(k));
        let q_sum: f32 = (0..d_in)
            .map(|j| self.weights.values.i32_at(k * d_in + j).abs() as f32)
            .sum();
        let x_sum: f32 = qx.iter().map(|&v| (v as i32).abs() as f32).sum();
        let n = d_in as f32;
        let shift_term = if h > 0 {
            t * (1u64 << (h - 1)) as f32 * n
        } else {
            0.0
        };
        let acc = self.weights.dot_q(k, qx).abs();
        let rounding = 4.0 * f32::EPSILON * (acc + self.bias.f32_at(k).abs());
        0.5 * t * (q_sum + 0.5 * n + x_sum) + shift_term + rounding
    }
}
