//! Projection application y = Gᵀ(x − μ)/σ with the standardisation folded into the
//! weights and a bias: y_k = Σ_j G'_kj x_j + b_k, G'_kj = G_jk/σ_j, b_k = −Σ_j G'_kj μ_j
//! (a feature with σ_j = 0 has G'_kj = 0). Writes into caller buffers.
//!
//! **f32 models** store G' and b as floats; the only error is `f32` rounding.
//!
//! **Q15/Q7 models** fold the input quantisation step s_j into the weights as well:
//! W_kj = G'_kj · s_j, stored as q_kj = round(W_kj / t_k) with a per-row scale t_k, and the
//! instance arrives as qx_j = round(x_j / s_j) ([`crate::Model::quantize_instance`]). The
//! device sums the raw products exactly in an `i64` ([`crate::fixed::dot_q15`]: one
//! `SMLALD` per pair of features on a Cortex-M4) and rounds once, by the row's shift h_k:
//!
//! ŷ_k = t_k · 2^h_k · round(Σ_j q_kj · qx_j / 2^h_k) + b_k.
//!
//! Each weight lies within δ_k steps of its grid point, |W_kj − t_k q_kj| ≤ δ_k t_k: δ_k = ½
//! for nearest rounding, or the row's radius stored in `PROJ_ROUNDING` when the host
//! rounded with error feedback (at most 1: each weight goes to one of its two
//! neighbouring grid points, chosen to cancel the output error the earlier weights of
//! the row made on the training instances). Error bound (see [`Projection::error_bound`]),
//! for inputs that did not saturate:
//!
//! |ŷ_k − y_k| ≤ (t_k/2)·(Σ_j |q_kj| + δ_k D)   input rounding, ½·Σ_j |W_kj| with |W_kj| ≤ t_k(|q_kj| + δ_k)
//!             + t_k δ_k·Σ_j |qx_j|            weight rounding
//!             + t_k·2^(h_k−1)    (if h_k > 0)  the one rounding of the shifted sum
//!             + 4ε·(|t_k 2^h_k acc| + |b_k|)   `f32` rounding of the final rescale, ε = 2⁻²³.
//!
//! **Diagonal stages** (`PROJ_DIAGONAL`, d = D) scale and shift each feature on its own,
//! y_j = a_j·v_j + c_j, with v_j the feature as the device receives it (`f32`, or the
//! quantised integer, whose step a_j folds in): Citation-kNN on z-scored (or min–max
//! scaled) raw features. Stored as 2 × D `f32` in every encoding, they cost 2D values and
//! one multiply-add per feature instead of a D × D matrix. Quantised, the only errors are
//! the input rounding (|v_j − x_j/s_j| ≤ ½) and the `f32` multiply-add:
//! |ŷ_j − y_j| ≤ |a_j|/2 + 4ε·(|a_j v_j| + |c_j|).

use crate::bag::Instances;
use crate::container::{tag, Elem, Encoding, Section, Sections};
use crate::error::Error;
use crate::fixed;
use crate::weights::{Q15Row, Q7Layout, Weights};

/// How a projection stage is stored.
#[derive(Debug, Clone, Copy)]
enum Storage<'a> {
    /// d × D weights (row k = output k), d biases, and for quantised weights rounded
    /// with error feedback the d rounding radii δ_k.
    Dense {
        weights: Weights<'a>,
        bias: Section<'a>,
        rounding: Option<Section<'a>>,
    },
    /// 2 × D `f32`: row 0 the scales a_j, row 1 the offsets c_j.
    Diagonal(Section<'a>),
}

/// The projection stage of a model: y = A x + b, dense or diagonal (module docs).
#[derive(Debug, Clone, Copy)]
pub struct Projection<'a> {
    storage: Storage<'a>,
    input_dim: usize,
    quantised: bool,
}

impl<'a> Projection<'a> {
    /// Reads the stage of a model in format `version`: `PROJ_DIAGONAL`, or
    /// `PROJ_WEIGHTS` with its companions.
    pub(crate) fn from_sections(
        sections: &Sections<'a>,
        encoding: Encoding,
        version: u16,
        input_dim: usize,
    ) -> Result<Self, Error> {
        let quantised = encoding != Encoding::F32;
        if let Some(diagonal) = sections.get(tag::PROJ_DIAGONAL) {
            if [
                tag::PROJ_WEIGHTS,
                tag::PROJ_SCALE,
                tag::PROJ_SHIFT,
                tag::PROJ_BIAS,
                tag::PROJ_ROUNDING,
            ]
            .iter()
            .any(|&t| sections.get(t).is_some())
            {
                return Err(Error::BadModel("both a diagonal and a dense projection"));
            }
            if input_dim == 0 {
                return Err(Error::BadModel("projection with no outputs"));
            }
            diagonal.expect(Elem::F32, 2, input_dim)?;
            diagonal.expect_finite()?;
            return Ok(Projection {
                storage: Storage::Diagonal(diagonal),
                input_dim,
                quantised,
            });
        }
        let w = sections.require(tag::PROJ_WEIGHTS)?;
        let d = w.rows;
        if d == 0 {
            return Err(Error::BadModel("projection with no outputs"));
        }
        let weights = Weights::from_sections(
            sections,
            encoding,
            tag::PROJ_WEIGHTS,
            tag::PROJ_SCALE,
            Some(tag::PROJ_SHIFT),
            (d, input_dim),
            q7_layout(encoding, version, d)?,
        )?;
        if quantised {
            // The shift must keep the accumulator out of saturation for every input.
            for k in 0..d {
                let sum = weights.row_abs_sum(k);
                let shift = weights.shift.map_or(0, |s| s.u32_at(k));
                if shift < fixed::safe_shift(sum) {
                    return Err(Error::BadModel(
                        "accumulator shift too small for the weights",
                    ));
                }
            }
        }
        let bias = sections.f32_vec(tag::PROJ_BIAS, d)?;
        let rounding = match sections.get(tag::PROJ_ROUNDING) {
            None => None,
            Some(_) if !quantised => {
                return Err(Error::BadModel("rounding radii for f32 weights"));
            }
            Some(_) => {
                let r = sections.f32_vec(tag::PROJ_ROUNDING, d)?;
                // Error feedback picks one of the two neighbouring grid points: δ ≤ 1.
                if (0..d).any(|k| !(0.0..=1.0).contains(&r.f32_at(k))) {
                    return Err(Error::BadModel("rounding radius outside [0, 1]"));
                }
                Some(r)
            }
        };
        Ok(Projection {
            storage: Storage::Dense {
                weights,
                bias,
                rounding,
            },
            input_dim,
            quantised,
        })
    }

    /// Input dimension D.
    pub fn input_dim(&self) -> usize {
        self.input_dim
    }

    /// Output dimension d (D for a diagonal stage).
    pub fn output_dim(&self) -> usize {
        match &self.storage {
            Storage::Dense { weights, .. } => weights.rows(),
            Storage::Diagonal(_) => self.input_dim,
        }
    }

    /// The weights of a dense stage (d × D, row k = output k); `None` when diagonal.
    pub fn weights(&self) -> Option<&Weights<'a>> {
        match &self.storage {
            Storage::Dense { weights, .. } => Some(weights),
            Storage::Diagonal(_) => None,
        }
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
        // One dispatch per instance; the loops below read typed rows, no per-element match.
        match (&self.storage, x) {
            (Storage::Dense { weights, bias, .. }, Instances::F32(x)) if !self.quantised => {
                for ((k, o), b) in out.iter_mut().enumerate().zip(bias.f32s()) {
                    *o = weights.dot_f32(k, x) + b;
                }
            }
            (Storage::Dense { weights, bias, .. }, Instances::I16(x)) if self.quantised => {
                weights.dots_q(x, bias.f32s(), out);
            }
            (Storage::Diagonal(s), Instances::F32(x)) if !self.quantised => {
                let (a, c) = s.f32s().split_at(d_in);
                for (((o, &v), a), c) in out.iter_mut().zip(x).zip(a).zip(c) {
                    *o = a * v + c;
                }
            }
            (Storage::Diagonal(s), Instances::I16(x)) if self.quantised => {
                let (a, c) = s.f32s().split_at(d_in);
                for (((o, &v), a), c) in out.iter_mut().zip(x).zip(a).zip(c) {
                    *o = a * v as f32 + c;
                }
            }
            _ => {
                return Err(Error::InvalidParameter(
                    "f32 models take f32 instances, quantised models quantised ones",
                ))
            }
        }
        Ok(())
    }

    /// The single row of a dense Q15 stage with one output (a folded model's) and
    /// its bias: `row.dot(x) + bias` is [`Projection::apply`]'s one output, bit for bit,
    /// with the row's storage decoded once instead of once per instance.
    pub(crate) fn single_row(&self) -> Option<(Q15Row<'a>, f32)> {
        match &self.storage {
            Storage::Dense { weights, bias, .. } if self.quantised && weights.rows() == 1 => {
                Some((weights.q15_row(0)?, bias.f32s().get(0)))
            }
            _ => None,
        }
    }

    /// Output `k` of one instance (`k < d`; `x` of length D, as [`Projection::apply`]).
    pub fn output(&self, k: usize, x: Instances<'_>) -> Result<f32, Error> {
        if k >= self.output_dim() || x.len() != self.input_dim() {
            return Err(Error::DimensionMismatch {
                expected: self.input_dim(),
                got: x.len(),
            });
        }
        match (&self.storage, x) {
            (Storage::Dense { weights, bias, .. }, Instances::F32(x)) if !self.quantised => {
                Ok(weights.dot_f32(k, x) + bias.f32_at(k))
            }
            (Storage::Dense { weights, bias, .. }, Instances::I16(x)) if self.quantised => {
                Ok(weights.dot_q(k, x) + bias.f32_at(k))
            }
            (Storage::Diagonal(s), Instances::F32(x)) if !self.quantised => {
                let v = x.get(k).copied().unwrap_or(0.0);
                Ok(s.f32_at(k) * v + s.f32_at(self.input_dim + k))
            }
            (Storage::Diagonal(s), Instances::I16(x)) if self.quantised => {
                let v = x.get(k).map_or(0.0, |&v| v as f32);
                Ok(s.f32_at(k) * v + s.f32_at(self.input_dim + k))
            }
            _ => Err(Error::InvalidParameter(
                "f32 models take f32 instances, quantised models quantised ones",
            )),
        }
    }

    /// The bound on |ŷ_k − y_k| stated in the module documentation, for output `k` of a
    /// quantised model and the quantised instance `qx` (0 for f32 models, whose only
    /// error is `f32` rounding).
    pub fn error_bound(&self, k: usize, qx: &[i16]) -> f32 {
        if !self.quantised || k >= self.output_dim() {
            return 0.0;
        }
        let (weights, bias, rounding) = match &self.storage {
            Storage::Dense {
                weights,
                bias,
                rounding,
            } => (weights, bias, rounding),
            Storage::Diagonal(s) => {
                let (a, c) = (s.f32_at(k), s.f32_at(self.input_dim + k));
                let v = qx.get(k).map_or(0.0, |&v| v as f32);
                return 0.5 * a.abs() + 4.0 * f32::EPSILON * ((a * v).abs() + c.abs());
            }
        };
        let Some(scale) = weights.scale else {
            return 0.0;
        };
        let d_in = self.input_dim();
        let t = scale.f32_at(k);
        let h = weights.shift.map_or(0, |s| s.u32_at(k));
        let q_sum: f32 = (0..d_in).map(|j| weights.q_at(k, j).abs() as f32).sum();
        let x_sum: f32 = qx.iter().map(|&v| (v as i32).abs() as f32).sum();
        let n = d_in as f32;
        let shift_term = if h > 0 {
            t * (1u64 << (h - 1)) as f32
        } else {
            0.0
        };
        let acc = weights.dot_q(k, qx).abs();
        let delta = rounding.map_or(0.5, |r| r.f32_at(k));
        let rescale = 4.0 * f32::EPSILON * (acc + bias.f32_at(k).abs());
        0.5 * t * (q_sum + delta * n) + t * delta * x_sum + shift_term + rescale
    }

    /// Whether the stage stores rounding radii (`PROJ_ROUNDING`: weights rounded with
    /// error feedback) rather than being rounded to nearest.
    pub fn has_rounding_radii(&self) -> bool {
        matches!(
            self.storage,
            Storage::Dense {
                rounding: Some(_),
                ..
            }
        )
    }

    /// The rounding radius δ_k of a quantised dense stage's row `k` (module docs): ½ for
    /// nearest rounding, the stored radius for error feedback; `None` for f32 or
    /// diagonal stages.
    pub fn rounding_radius(&self, k: usize) -> Option<f32> {
        match &self.storage {
            Storage::Dense { rounding, .. } if self.quantised && k < self.output_dim() => {
                Some(rounding.map_or(0.5, |r| r.f32_at(k)))
            }
            _ => None,
        }
    }
}

/// Where a dense projection's Q7 rows lie: by pairs from format version 2 on
/// ([`Q7Layout::Pairs`]); a version 1 model stored them row after row, which this build no
/// longer reads for two rows or more (one row is laid out the same either way).
fn q7_layout(encoding: Encoding, version: u16, rows: usize) -> Result<Q7Layout, Error> {
    if encoding == Encoding::Q7 && version < 2 && rows >= 2 {
        return Err(Error::BadModel(
            "Q7 projection rows in the format 1 layout: export the model again",
        ));
    }
    Ok(Q7Layout::Pairs)
}

/// The stage in front of every head: the model's projection, or the identity on its D
/// features when it has none. Heads see instances only through it.
#[derive(Debug, Clone, Copy)]
pub struct Stage<'a> {
    projection: Option<Projection<'a>>,
    input_dim: usize,
}

impl<'a> Stage<'a> {
    /// The stage of a model with `input_dim` features and this projection, if any.
    pub fn new(projection: Option<Projection<'a>>, input_dim: usize) -> Self {
        Stage {
            projection,
            input_dim,
        }
    }

    /// The one row of a dense Q15 projection with one output, and its bias
    /// ([`Projection::single_row`]); `None` otherwise. Decoded when asked (once per bag),
    /// not kept from the parse: a parse that decodes it is too involved for LTO to fold
    /// away the heads a firmware's embedded model does not use (kept, it cost the board
    /// example 9–11 KB of flash and the firmware 0.9 KB more stack in `Model::parse`).
    pub(crate) fn single_row(&self) -> Option<(Q15Row<'a>, f32)> {
        self.projection.and_then(|p| p.single_row())
    }

    /// Input dimension D.
    pub fn input_dim(&self) -> usize {
        self.input_dim
    }

    /// The dimension instances have after the stage: d, or D without a projection.
    pub fn output_dim(&self) -> usize {
        self.projection.map_or(self.input_dim, |p| p.output_dim())
    }

    /// The projection, if the model has one.
    pub fn projection(&self) -> Option<&Projection<'a>> {
        self.projection.as_ref()
    }

    /// Projects instance `i` of a bag into `out[..output_dim]` (or copies it when there
    /// is no projection: f32 instances only).
    pub fn project_instance(
        &self,
        bag: Instances<'_>,
        i: usize,
        out: &mut [f32],
    ) -> Result<(), Error> {
        let d_in = self.input_dim;
        // The projection by reference: copying it would cost a 100-byte memcpy per instance.
        match (&self.projection, bag.instance(i, d_in)?) {
            (Some(p), x) => p.apply(x, out),
            (None, Instances::F32(x)) => {
                let o = out.get_mut(..d_in).ok_or(Error::BufferTooSmall {
                    needed: d_in,
                    got: 0,
                })?;
                o.iter_mut().zip(x).for_each(|(o, &v)| *o = v);
                Ok(())
            }
            (None, Instances::I16(_)) => Err(Error::WrongModelKind),
        }
    }
}
