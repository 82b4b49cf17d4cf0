//! MILES (Chen, Bi & Wang, *MILES: Multiple-Instance Learning via Embedded Instance
//! Selection*, TPAMI 2006) on the device: a bag B is embedded by its similarity to each
//! selected prototype p_k, s_k(B) = max_j exp(−γ‖x_j − p_k‖²) (γ = 1/σ²), and scored
//! f(B) = Σ_k w_k s_k(B) + b, on features z-scored with the training instances' means and
//! standard deviations (the host's `--classifier miles`). Model kind
//! [`crate::ModelKind::Miles`].
//!
//! exp is decreasing, so s_k(B) = exp(−γ m_k) with m_k = min_j ‖x_j − p_k‖²: one pass
//! over the bag's instances keeps K running minima (and where each was reached), and
//! the exponential is taken K times per bag, not n·K ([`Miles::begin`] takes the
//! instances one at a time, for a device that never holds the whole bag). The witness is
//! the host explanation's: each prototype's term w_k s_k(B) belongs to the bag's instance
//! nearest p_k (the first at the least distance), an instance's contribution g(x_j) is
//! the sum of the terms it holds, and the witness is the first instance of largest g (an
//! instance holding no term has g = 0).
//!
//! Sections: `KERNEL_PARAMS` (`f64`, 1 × 2: γ, b), the z-score — `GRID_MIN` (`f64`,
//! 1 × D: each feature's mean μ_j) and `ZSCORE_SCALE` (`f32`, 1 × D: its inverse standard
//! deviation ŝ_j, 0 for a constant feature, as on the host), or `GRID_MIN` alone as
//! `f64` 2 × D (means, then inverse standard deviations), which the exporter writes when
//! an inverse standard deviation has no normal `f32` —, `REF_INSTANCES` (the K
//! prototypes, already z-scored: `f32`, or in Q15/Q7 `i16`/`i8` with one scale per
//! feature in `REF_SCALE`) and `SCORE_WEIGHTS` (w, 1 × K: `f32`, or Q15 with one scale in
//! `SCORE_SCALE` in both quantised encodings, as the MI-kernel SVM stores its weights).
//! The query stays `f64`. The means stay `f64`: a feature's mean can be large against its
//! deviation (elephant has such features), and μ_j rounded to `f32` would move z_j by
//! u|μ_j|s_j, far more than the prototypes' own rounding; an `f32` ŝ_j moves z_j by a
//! relative u only (below), and saves 4D bytes (664 on musk1's 166 features).
//!
//! Arithmetic: the z-scored query x'_j = (v_j − μ_j)·ŝ_j is computed in `f64` and rounded
//! to `f32`; each squared distance is the MI-kernel SVM's ([`crate::mi_svm`]: `f32` over
//! typed rows, eight running sums); e^(−γm̂_k) is `libm::expf` of the `f64` product γm̂_k
//! rounded to `f32`; the weighted sum is `f64`.
//!
//! The z-score's rounding: the host computes x_j = (v_j − μ_j)·s_j in `f64` with its own
//! s_j. The difference a_j = v_j − μ_j is the same `f64` on both; ŝ_j = fl₃₂(s_j) is zero
//! (with s_j = 0) or a normal `f32`, so |ŝ_j − s_j| ≤ u·ŝ_j (u = 2⁻²⁴, round to nearest);
//! the two `f64` products add 2⁻⁵³ each. Hence
//!
//! |x'_j − x_j| ≤ |a_j|·|ŝ_j − s_j| + 2⁻⁵³(|a_j|ŝ_j + |a_j|s_j) ≤ u(1 + 2⁻²⁰)·|x'_j|, (Z)
//!
//! and ‖x' − x‖ ≤ u(1 + 2⁻²⁰)‖x'‖: in the per-pair bound below the query's error u‖x'‖
//! (its rounding to `f32`) grows by this, and the host's ‖x‖ in its own rounding term is
//! taken as (1 + u(1 + 2⁻²⁰))‖x'‖. With the 2 × D `f64` z-score x' = x and (Z) is 0.
//!
//! Error bound ([`SvmDecision::bound`]): each squared distance d̂ the device computes is
//! within E(d̂, ‖x'‖) of the host's `f64` value, the per-pair bound the MI-kernel SVM
//! derives (stored coordinates' rounding or quantisation step, the query's rounding to
//! `f32` and (Z), the `f32` sum, the host's own ‖x‖² + ‖y‖² − 2x·y; rounded up by
//! 1 + 2⁻¹⁶). So the host's minimum m_k lies in [L_k, U_k] with
//! L_k = max(0, min_j(d̂_j − E_j)) and U_k = min_j(d̂_j + E_j), both kept in the pass
//! beside m̂_k = min_j d̂_j (each rounded outwards by a factor 1 ∓ 2⁻²⁰, which covers the
//! `f32` subtraction or addition and the product), and
//! |m̂_k − m_k| ≤ Δ_k = max(m̂_k − L_k, U_k − m̂_k). The exponent's
//! error is A_k = γΔ_k + 2u·γm̂_k (u = 2⁻²⁴, its rounding to `f32`), so the term moves by
//! at most e^(−γm̂_k)(e^(A_k) − 1), plus two ulps of `expf` (2⁻²² relative, 2⁻¹²⁰
//! absolute), and never by more than max(ŝ, e^(−γL_k)), the host's term lying in
//! [0, e^(−γL_k)]. w_k moves by |w_k|·2⁻²⁴ (f32) or half its step (Q15); the K-term sum (and
//! the host's own) adds (K + 16)·2⁻⁵² times |b| + Σ|w_k|s_k. A query coordinate beyond
//! `f32`'s range makes the bound infinite (the decision is still computed).

use crate::bag::instance_count;
use crate::container::{tag, Elem, Encoding, Section, Sections};
use crate::error::Error;
use crate::mi_svm::{
    feature_map, kernel_params, sq_dist, stored_instances, DistanceBound, ScoreWeights, EXPF_ULPS,
    ROUND_UP, TINY, U24,
};
use crate::svm::SvmDecision;

fn bad(what: &'static str) -> Error {
    Error::BadModel(what)
}

/// 1 − 2⁻²⁰ and 1 + 2⁻²⁰: round a running bound on a minimum outwards past one `f32`
/// addition and one product, (1 ± 2⁻²⁴)² ≷ 1 ∓ 2⁻²⁰.
const DOWN: f32 = 1.0 - 1.0 / 1_048_576.0;
const UP: f32 = 1.0 + 1.0 / 1_048_576.0;

/// u(1 + 2⁻²⁰): the relative error (Z) of a query z-scored with `f32` inverse standard
/// deviations (module documentation).
const ZSCORE_REL: f32 = (U24 * (1.0 + 1.0 / 1_048_576.0)) as f32;

/// A parsed MILES model (model kind [`crate::ModelKind::Miles`]).
#[derive(Debug, Clone, Copy)]
pub struct Miles<'a> {
    gamma: f64,
    bias: f64,
    /// The means, `f64` (the first D values).
    mean: Section<'a>,
    /// The inverse standard deviations, from value `inv_sd_at` on: `f32` (at 0), or row
    /// 1 of a 2 × D `f64` z-score (at D).
    inv_sd: Section<'a>,
    inv_sd_at: usize,
    /// (Z)'s relative error of the device's query: 0 with `f64` inverse deviations.
    query_rel: f32,
    prototypes: Section<'a>,
    /// Per-feature step of quantised prototypes.
    prototype_scale: Option<Section<'a>>,
    weights: ScoreWeights<'a>,
}

impl<'a> Miles<'a> {
    pub(crate) fn from_sections(
        sections: &Sections<'a>,
        encoding: Encoding,
        dim: usize,
    ) -> Result<Self, Error> {
        let (gamma, bias) = kernel_params(sections)?;
        let (mean, inv_sd, inv_sd_at, query_rel) = match sections.get(tag::ZSCORE_SCALE) {
            Some(_) => {
                let mean = sections.require(tag::GRID_MIN)?;
                mean.expect(Elem::F64, 1, dim)?;
                let inv_sd = sections.f32_vec(tag::ZSCORE_SCALE, dim)?;
                if (0..dim).any(|j| !mean.f64_at(j).is_finite() || inv_sd.f32_at(j) < 0.0) {
                    return Err(bad("z-score not finite or with a negative scale"));
                }
                (mean, inv_sd, 0, ZSCORE_REL)
            }
            None => {
                let z = feature_map(sections, dim, "z-score not finite or with a negative scale")?;
                (z, z, dim, 0.0)
            }
        };
        let (prototypes, prototype_scale) = stored_instances(
            sections,
            encoding,
            dim,
            "prototypes of the wrong type or width",
        )?;
        if prototypes.rows == 0 {
            return Err(bad("no prototypes"));
        }
        let weights = ScoreWeights::parse(sections, encoding, prototypes.rows)?;
        Ok(Miles {
            gamma,
            bias,
            mean,
            inv_sd,
            inv_sd_at,
            query_rel,
            prototypes,
            prototype_scale,
            weights,
        })
    }

    /// Input dimension D.
    pub fn dim(&self) -> usize {
        self.prototypes.cols
    }

    /// Number of prototypes K.
    pub fn n_prototypes(&self) -> usize {
        self.prototypes.rows
    }

    /// γ = 1/σ² of the similarity.
    pub fn gamma(&self) -> f64 {
        self.gamma
    }

    /// `f32` scratch [`Miles::decide`] needs: D + 3K (the z-scored instance, and per
    /// prototype the running minimum and its lower and upper bounds).
    pub fn scratch_len(&self) -> usize {
        self.dim() + 3 * self.n_prototypes()
    }

    /// The decision on one bag of raw features (row-major, `n × D`, `n ≥ 1`, finite), with
    /// the witness (module documentation). `scratch` holds at least
    /// [`Miles::scratch_len`] values, `nearest` at least K: the instance nearest each
    /// prototype. Nothing else is needed.
    pub fn decide(
        &self,
        bag: &[f64],
        scratch: &mut [f32],
        nearest: &mut [u32],
    ) -> Result<SvmDecision, Error> {
        let d = self.dim();
        let n = instance_count(bag.len(), d)?;
        if !bag.iter().all(|v| v.is_finite()) {
            return Err(Error::InvalidParameter("a feature value is not finite"));
        }
        let mut pass = self.begin(scratch, nearest)?;
        for i in 0..n {
            pass.add(bag.get(i * d..(i + 1) * d).ok_or(Error::Empty)?)?;
        }
        pass.finish()
    }

    /// A pass over one bag that takes its instances one at a time ([`MilesPass::add`],
    /// then [`MilesPass::finish`]): [`Miles::decide`] for a device that holds one
    /// instance, not the bag (e.g. widened from a sensor's `i16` counts as they come).
    /// The buffers are [`Miles::decide`]'s.
    pub fn begin<'p>(
        &'p self,
        scratch: &'p mut [f32],
        nearest: &'p mut [u32],
    ) -> Result<MilesPass<'p, 'a>, Error> {
        let (d, k) = (self.dim(), self.n_prototypes());
        let (needed, got) = (self.scratch_len(), scratch.len());
        let small = Error::BufferTooSmall { needed, got };
        let scratch = scratch.get_mut(..needed).ok_or(small)?;
        let (x, rest) = scratch.split_at_mut_checked(d).ok_or(small)?;
        let (mins, rest) = rest.split_at_mut_checked(k).ok_or(small)?;
        let (lows, highs) = rest.split_at_mut_checked(k).ok_or(small)?;
        let got = nearest.len();
        let nearest = nearest
            .get_mut(..k)
            .ok_or(Error::BufferTooSmall { needed: k, got })?;
        mins.fill(f32::INFINITY);
        lows.fill(f32::INFINITY);
        highs.fill(f32::INFINITY);
        nearest.fill(0);
        Ok(MilesPass {
            miles: self,
            bound: DistanceBound::new(d, self.prototype_scale),
            x,
            mins,
            lows,
            highs,
            nearest,
            n: 0,
        })
    }
}

/// One bag's pass over its instances ([`Miles::begin`]): per prototype the running
/// minimum of the squared distance, its bounds and the instance reaching it.
#[derive(Debug)]
pub struct MilesPass<'p, 'a> {
    miles: &'p Miles<'a>,
    bound: DistanceBound,
    /// The z-scored instance.
    x: &'p mut [f32],
    mins: &'p mut [f32],
    lows: &'p mut [f32],
    highs: &'p mut [f32],
    nearest: &'p mut [u32],
    /// Instances added.
    n: usize,
}

impl MilesPass<'_, '_> {
    /// Adds the bag's next instance: D raw features, finite.
    pub fn add(&mut self, instance: &[f64]) -> Result<(), Error> {
        let m = self.miles;
        let d = m.dim();
        if instance.len() != d {
            return Err(Error::DimensionMismatch {
                expected: d,
                got: instance.len(),
            });
        }
        if !instance.iter().all(|v| v.is_finite()) {
            return Err(Error::InvalidParameter("a feature value is not finite"));
        }
        let i = u32::try_from(self.n).map_err(|_| Error::InvalidParameter("bag too large"))?;
        let mut x_norm_sq = 0.0;
        for (j, (z, &v)) in self.x.iter_mut().zip(instance).enumerate() {
            let scaled = (v - m.mean.f64_at(j)) * m.inv_sd.f64_at(m.inv_sd_at + j);
            x_norm_sq += scaled * scaled;
            *z = scaled as f32;
        }
        let x_norm = libm::sqrt(x_norm_sq) as f32;
        // (Z): ‖x' − x‖ ≤ u(1 + 2⁻²⁰)‖x'‖ with f32 inverse deviations, rounded up.
        let shift = if m.query_rel > 0.0 {
            m.query_rel * x_norm * ROUND_UP
        } else {
            0.0 // not 0·∞ for a query beyond f32's range
        };
        for (p, (((min, lo), hi), at)) in self
            .mins
            .iter_mut()
            .zip(self.lows.iter_mut())
            .zip(self.highs.iter_mut())
            .zip(self.nearest.iter_mut())
            .enumerate()
        {
            let d2 = sq_dist(&m.prototypes, m.prototype_scale, p, self.x);
            let e = self.bound.error_shifted(d2, x_norm, shift) * ROUND_UP + TINY;
            if d2 < *min {
                (*min, *at) = (d2, i);
            }
            let below = d2 - e;
            *lo = lo.min(if below > 0.0 { below * DOWN } else { 0.0 });
            *hi = hi.min((d2 + e) * UP);
        }
        self.n += 1;
        Ok(())
    }

    /// The decision on the instances added (at least one), with the witness.
    pub fn finish(self) -> Result<SvmDecision, Error> {
        if self.n == 0 {
            return Err(Error::Empty);
        }
        let m = self.miles;
        let gamma = m.gamma;
        let (mut value, mut error, mut magnitude) = (m.bias, 0.0, libm::fabs(m.bias));
        for (p, ((min, lo), hi)) in self
            .mins
            .iter()
            .zip(self.lows.iter_mut())
            .zip(self.highs.iter())
            .enumerate()
        {
            let exponent = (gamma * f64::from(*min)) as f32;
            let s = f64::from(libm::expf(-exponent));
            let spread = f64::from((*min - *lo).max(*hi - *min));
            let a = (gamma * spread + 2.0 * U24 * f64::from(exponent)) * f64::from(ROUND_UP);
            let grown = libm::expm1(a) * f64::from(ROUND_UP);
            let tiny = f64::from(TINY);
            let mut s_err = (s + tiny) * (grown + f64::from(EXPF_ULPS)) + tiny;
            // The host's term lies in [0, e^(−γL)] and ŝ ≥ 0, so they are never further
            // apart than the larger of the two: the bound of a far prototype stays small
            // however loose its distance bound is. That cap is at least ŝ, so it only
            // matters when the error above exceeds ŝ. e^(−γL) is taken from above in
            // `f32`: the exponent rounded down (x ≤ γL), then expf's two ulps (within
            // ROUND_UP) and its absolute 2⁻¹²⁰.
            if s_err > s {
                let x = (gamma * f64::from(*lo)) as f32 * DOWN;
                let ceiling = f64::from(libm::expf(-x)) * f64::from(ROUND_UP) + tiny;
                s_err = s_err.min(s.max(ceiling) + tiny);
            }
            let (w, dw) = m.weights.get(p);
            value += w * s;
            error += libm::fabs(w) * s_err + dw * (s + s_err);
            magnitude += libm::fabs(w) * s;
            // The lower bound is spent: the slot keeps the term for the witness.
            *lo = (w * s) as f32;
        }
        let k = m.n_prototypes();
        let bound = error + (k as f64 + 16.0) * f64::EPSILON * magnitude;
        // ∞ · 0 (a zero weight on an unbounded term) is no bound at all.
        let bound = if bound.is_nan() { f64::INFINITY } else { bound };
        Ok(SvmDecision {
            label: usize::from(value > 0.0),
            value,
            bound,
            witness: Some(witness(self.nearest, self.lows, self.n)),
        })
    }
}

/// The first instance of largest contribution g: the sum of the `terms` of the
/// prototypes it is nearest to (`nearest`), 0 for an instance nearest to none.
fn witness(nearest: &[u32], terms: &[f32], n: usize) -> usize {
    let mut best = (usize::MAX, f64::NEG_INFINITY);
    let mut consider = |j: usize, g: f64| {
        if g > best.1 || (g == best.1 && j < best.0) {
            best = (j, g);
        }
    };
    for (p, &j) in nearest.iter().enumerate() {
        if nearest.get(..p).is_some_and(|before| before.contains(&j)) {
            continue; // counted with its first prototype
        }
        let g = nearest
            .iter()
            .zip(terms)
            .skip(p)
            .filter(|(&at, _)| at == j)
            .map(|(_, &t)| f64::from(t))
            .sum();
        consider(j as usize, g);
    }
    // The first instance that holds no term.
    if let Some(j) = (0..n).find(|&j| !nearest.contains(&(j as u32))) {
        consider(j, 0.0);
    }
    best.0.min(n.saturating_sub(1))
}
