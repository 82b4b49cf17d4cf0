//! An SVM over bags with the MI kernel of Gärtner, Flach, Kowalczyk & Smola (*Multi-instance
//! kernels*, ICML 2002): k(X, Y) = Σ_{x∈X, y∈Y} exp(−γ‖x − y‖²), on features min–max
//! scaled with the training bags' range (Weka MISMO's default, the host's
//! `--kernel mi-rbf --scaling minmax`). Model kind [`crate::ModelKind::MiKernelSvm`].
//!
//! The decision on a new bag X is f(X) = Σ_r ω_r k(X, R_r) + b over the stored support
//! bags R_r, ω_r = α_r y_r / s (s the host's kernel conditioning constant). The kernel is a
//! sum over X's instances, so f(X) = Σ_{x∈X} g(x) + b with
//! g(x) = Σ_r ω_r Σ_{y∈R_r} exp(−γ‖x − y‖²): one pass over X's instances, each against
//! every stored instance, gives f and the instance of largest contribution g (the
//! witness, as the host's explanation defines it) with D values of scratch.
//!
//! Sections: `KERNEL_PARAMS` (`f64`, 1 × 2: γ, b), `GRID_MIN` (`f64`, 2 × D: the minimum
//! and the range of each feature; range 0 maps the feature to 0, as on the host),
//! `REF_INSTANCES` (the stored instances, already scaled: `f32`, or in Q15/Q7 `i16`/`i8`
//! with one scale per feature in `REF_SCALE`), `REF_BAGS` (`u32` boundaries) and
//! `SCORE_WEIGHTS` (ω, 1 × bags: `f32`, or Q15 with one scale in `SCORE_SCALE` in both
//! quantised encodings, as the box-kernel SVM stores them). The query stays `f64`.
//!
//! Error bound ([`SvmDecision::bound`]): the scaled query is computed in `f64` exactly as
//! on the host; a stored coordinate y is off the host's by |Δy| ≤ |y|·2⁻²⁴ (f32) or half
//! its feature's step t plus 2⁻²²(|y| + 2¹⁵t) (quantised: the value and its quotient by t
//! were rounded to f32 before the integer), so a squared distance moves by
//! Δ ≤ Σ_j (2|x_j − y_j| + |Δy_j|)|Δy_j| plus the rounding of both sides' f64 sums,
//! 2(D + 2)·2⁻⁵³·(‖x‖² + ‖y‖²) (the host forms ‖x‖² + ‖y‖² − 2x·y). A term ω e^(−γd²)
//! then moves by at most |ω| e^(−γd²) (e^(γΔ) − 1), and ω by |ω|·2⁻²⁴ (f32) or half its
//! step; the sums of R terms (and the host's log-sum-exp and products) add
//! (R + 16)·2⁻⁵² times Σ|terms| + |b|.

use crate::bag::instance_count;
use crate::container::{tag, Elem, Encoding, Section, Sections};
use crate::error::Error;
use crate::svm::SvmDecision;

fn bad(what: &'static str) -> Error {
    Error::BadModel(what)
}

/// 2⁻²⁴: the relative rounding of an f32.
const U24: f64 = 1.0 / 16_777_216.0;

/// Largest γ and |b| a model may state.
const MAX_PARAM: f64 = 1e6;

/// A parsed MI-kernel SVM (model kind [`crate::ModelKind::MiKernelSvm`]).
#[derive(Debug, Clone, Copy)]
pub struct MiKernelSvm<'a> {
    gamma: f64,
    bias: f64,
    minmax: Section<'a>,
    instances: Section<'a>,
    /// Per-feature step of quantised stored instances.
    instance_scale: Option<Section<'a>>,
    bags: Section<'a>,
    weights: Section<'a>,
    /// Step of quantised weights.
    weight_scale: Option<f64>,
}

impl<'a> MiKernelSvm<'a> {
    pub(crate) fn from_sections(
        sections: &Sections<'a>,
        encoding: Encoding,
        dim: usize,
    ) -> Result<Self, Error> {
        let params = sections.require(tag::KERNEL_PARAMS)?;
        params.expect(Elem::F64, 1, 2)?;
        let (gamma, bias) = (params.f64_at(0), params.f64_at(1));
        if !(gamma > 0.0 && gamma <= MAX_PARAM && bias.abs() <= MAX_PARAM) {
            return Err(bad("γ not in (0, 1e6] or bias not finite and moderate"));
        }
        let minmax = sections.require(tag::GRID_MIN)?;
        minmax.expect(Elem::F64, 2, dim)?;
        if (0..2 * dim).any(|i| !minmax.f64_at(i).is_finite())
            || (0..dim).any(|j| minmax.f64_at(dim + j) < 0.0)
        {
            return Err(bad("min-max map not finite or with a negative range"));
        }
        let instances = sections.require(tag::REF_INSTANCES)?;
        if instances.elem != encoding.elem() || instances.cols != dim {
            return Err(bad("stored instances have the wrong type or width"));
        }
        let instance_scale = match encoding {
            Encoding::F32 => {
                instances.expect_finite()?;
                None
            }
            _ => {
                if (0..instances.len()).any(|i| instances.i32_at(i).abs() > encoding.q_max()) {
                    return Err(bad("quantised value outside the symmetric range"));
                }
                let s = sections.f32_vec(tag::REF_SCALE, dim)?;
                if (0..dim).any(|j| s.f32_at(j) < 0.0) {
                    return Err(bad("negative quantisation scale"));
                }
                Some(s)
            }
        };
        let bags = sections.require(tag::REF_BAGS)?;
        let n_bags = bags.len().checked_sub(1).ok_or(bad("no stored bags"))?;
        bags.expect(Elem::U32, 1, n_bags + 1)?;
        if n_bags == 0 || bags.u32_at(0) != 0 || bags.u32_at(n_bags) as usize != instances.rows {
            return Err(bad("stored bag boundaries do not cover the instances"));
        }
        if (0..n_bags).any(|b| bags.u32_at(b + 1) <= bags.u32_at(b)) {
            return Err(bad("a stored bag is empty"));
        }
        // ω is 16-bit in Q7 too, as in the box-kernel SVM ([`crate::svm`]).
        let weights = sections.require(tag::SCORE_WEIGHTS)?;
        let weight_scale = match encoding {
            Encoding::F32 => {
                weights.expect(Elem::F32, 1, n_bags)?;
                weights.expect_finite()?;
                if sections.get(tag::SCORE_SCALE).is_some() {
                    return Err(bad("f32 weights with a quantisation scale"));
                }
                None
            }
            _ => {
                weights.expect(Elem::I16, 1, n_bags)?;
                if (0..n_bags).any(|r| weights.i32_at(r).abs() > Encoding::Q15.q_max()) {
                    return Err(bad("quantised value outside the symmetric range"));
                }
                let s = sections.f32_vec(tag::SCORE_SCALE, 1)?.f64_at(0);
                if s <= 0.0 {
                    return Err(bad("quantisation scale not positive"));
                }
                Some(s)
            }
        };
        Ok(MiKernelSvm {
            gamma,
            bias,
            minmax,
            instances,
            instance_scale,
            bags,
            weights,
            weight_scale,
        })
    }

    /// Input dimension D.
    pub fn dim(&self) -> usize {
        self.minmax.cols
    }

    /// Number of stored (support) bags.
    pub fn n_bags(&self) -> usize {
        self.bags.len().saturating_sub(1)
    }

    /// Number of stored instances.
    pub fn n_instances(&self) -> usize {
        self.instances.rows
    }

    /// γ of the kernel.
    pub fn gamma(&self) -> f64 {
        self.gamma
    }

    /// Coordinate j of stored instance t and the bound on its storage error |Δy|.
    fn stored(&self, t: usize, j: usize) -> (f64, f64) {
        let i = t * self.dim() + j;
        match self.instance_scale {
            None => {
                let y = f64::from(self.instances.f32_at(i));
                (y, libm::fabs(y) * U24)
            }
            Some(s) => {
                // Half a step, plus the f32 rounding of the value and of its quotient by
                // the step before the host rounded it to an integer.
                let step = f64::from(s.f32_at(j));
                let y = f64::from(self.instances.i32_at(i)) * step;
                let slack = 4.0 * U24 * (libm::fabs(y) + 32_768.0 * step);
                (y, step / 2.0 + slack)
            }
        }
    }

    /// ω_r and the bound on its storage error |Δω_r|.
    fn weight(&self, r: usize) -> (f64, f64) {
        match self.weight_scale {
            None => {
                let w = f64::from(self.weights.f32_at(r));
                (w, libm::fabs(w) * U24)
            }
            Some(s) => (f64::from(self.weights.i32_at(r)) * s, s / 2.0),
        }
    }

    /// Feature j of a raw instance as the host scales it: (v − min_j)/range_j, or 0.
    fn scaled(&self, j: usize, v: f64) -> f64 {
        let d = self.dim();
        let (lo, range) = (self.minmax.f64_at(j), self.minmax.f64_at(d + j));
        if range > 0.0 {
            (v - lo) / range
        } else {
            0.0
        }
    }

    /// The decision on one bag of raw features (row-major, `n × D`, `n ≥ 1`), with the
    /// witness: the first instance of largest contribution g(x). `scratch` holds the
    /// scaled instance: at least D values.
    pub fn decide(&self, bag: &[f64], scratch: &mut [f64]) -> Result<SvmDecision, Error> {
        let d = self.dim();
        let n = instance_count(bag.len(), d)?;
        let got = scratch.len();
        let x = scratch
            .get_mut(..d)
            .ok_or(Error::BufferTooSmall { needed: d, got })?;
        const U53: f64 = f64::EPSILON / 2.0;
        let (mut value, mut error, mut magnitude) = (self.bias, 0.0, libm::fabs(self.bias));
        let mut witness = (0, f64::NEG_INFINITY);
        for i in 0..n {
            let row = bag.get(i * d..(i + 1) * d).ok_or(Error::Empty)?;
            let mut x_norm = 0.0;
            for (j, (z, &v)) in x.iter_mut().zip(row).enumerate() {
                *z = self.scaled(j, v);
                x_norm += *z * *z;
            }
            let mut g = 0.0;
            for r in 0..self.n_bags() {
                let (a, b) = (
                    self.bags.u32_at(r) as usize,
                    self.bags.u32_at(r + 1) as usize,
                );
                let mut k = 0.0;
                let mut k_err = 0.0;
                for t in a..b {
                    let (mut d2, mut slack, mut y_norm) = (0.0, 0.0, 0.0);
                    for (j, &z) in x.iter().enumerate() {
                        let (y, dy) = self.stored(t, j);
                        let diff = z - y;
                        d2 += diff * diff;
                        slack += (2.0 * libm::fabs(diff) + dy) * dy;
                        y_norm += y * y;
                    }
                    let e = libm::exp(-self.gamma * d2);
                    let delta = slack + 2.0 * (d as f64 + 2.0) * U53 * (x_norm + y_norm);
                    k += e;
                    k_err += e * libm::expm1(self.gamma * delta);
                }
                let (w, dw) = self.weight(r);
                g += w * k;
                error += libm::fabs(w) * k_err + dw * (k + k_err);
                magnitude += libm::fabs(w) * k;
            }
            value += g;
            if g > witness.1 {
                witness = (i, g);
            }
        }
        let terms = n as f64 * self.n_instances() as f64;
        let bound = error + (terms + 16.0) * f64::EPSILON * magnitude;
        Ok(SvmDecision {
            label: usize::from(value > 0.0),
            value,
            bound,
            witness: Some(witness.0),
        })
    }
}
