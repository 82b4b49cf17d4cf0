//! miVLAD (Wei, Wu & Zhou, *Scalable algorithms for multi-instance learning*, IEEE TNNLS
//! 2017) on the device: instances z-scored with the training instances' statistics, each
//! assigned to its nearest codebook centre c (k-means, k centres), the bag's vector
//! V_c = Σ_{x→c} (x − c) (k·D values), the signed square root g_i = sign(V_i)√|V_i| and
//! the ℓ2 normalisation n = g/‖g‖, then the host's logistic regression on the
//! standardised n, folded: f = Σ_i w'_i n_i + b' with w'_i = w_i/s_i and
//! b' = b − Σ_i w_i m_i/s_i (m, s: the standardisation of the training vectors). Binary
//! models only. Model kind [`crate::ModelKind::MiVlad`].
//!
//! Sections: `KERNEL_PARAMS` (`f64`, 1 × 2: b', and M = |b| + Σ_i |w_i m_i / s_i|, the
//! magnitude the fold cancels, for the rounding bound), `GRID_MIN` (`f64`, 1 × D: the
//! means μ_j) and `ZSCORE_SCALE` (`f32`, 1 × D: the inverse deviations ŝ_j = fl₃₂(1/σ_j), 0
//! for a constant feature), `REF_INSTANCES` (the k centres, z-scored: `f32`, or Q15/Q7 with
//! one step per feature in `REF_SCALE`) and `SCORE_WEIGHTS` (w', 1 × kD: `f32`, or Q15
//! with one step in `SCORE_SCALE` in both quantised encodings).
//!
//! One pass over the bag ([`MiVlad::begin`], [`MiVladPass::add`]): the z-scored instance
//! x'_j = (v_j − μ_j)·ŝ_j in `f64`, rounded to `f32` for the k squared distances (the
//! MI-kernel SVM's `f32` loop, [`crate::mi_svm`]); its residual x' − ĉ to the nearest
//! centre is added in `f64` to that centre's block, beside Σ|x'_j| (for the bound).
//!
//! Error bound ([`SvmDecision::bound`]), u = 2⁻²⁴:
//!
//! - Assignment: each device distance d̂_c is within E_c of the host's (the MI-kernel SVM's
//!   per-pair bound with the z-score's (Z) of [`crate::miles`]). The device's centre c* is
//!   the host's when d̂_c* + E_c* < d̂_c − E_c for every other c; otherwise the bag's bound
//!   is infinite (the decision is still computed). With k = 1 (miVLAD's default) there is
//!   nothing to decide.
//! - Residuals: |x'_j − z_j| ≤ u(1 + 2⁻²⁰)|x'_j| ((Z); the host divides by σ_j, the device
//!   multiplies by ŝ_j), and a centre coordinate is off the host's by u|ĉ_j| (`f32`) or
//!   (1/2 + 2⁻⁷)t_j + 6u(|ĉ_j| + t_j) (quantised, t_j its step: the MI-kernel SVM's
//!   per-coordinate bound). Over the n_c instances of centre c, with A_cj = Σ|x'_j|:
//!   e_cj = u(1 + 2⁻²⁰)A_cj + n_c|Δc_j| + (2n + 4)·2⁻⁵²(A_cj + n_c|ĉ_j|) (the `f64`
//!   sums of n subtractions and additions, the device's and the host's).
//! - Cancellation: the host sets V_cj to 0 when |V_cj| ≤ 2⁻³² Σ(|z_j| + |c_j|) (a sum
//!   that cancels to rounding noise); that sum is at most τ = 2⁻³²((1 + u(1 + 2⁻²⁰))A_cj + n_c(|ĉ_j| +
//!   |Δc_j|))(1 + 2⁻²⁰), so e_cj grows by τ whether or not the host zeroed it. The device
//!   does not zero: its own error (the `f32` z-score) is far above 2⁻³².
//! - Signed square root: |g(V̂) − g(V)| ≤ e/(√|V̂| + √(|V̂| − e)) when |V̂| > e (same sign),
//!   else √(2e) (√a + √b ≤ √2·√(a + b) across signs); δ_i adds 2⁻⁵²|ĝ_i| for the `f64`
//!   square root, Δ = ‖δ‖.
//! - Normalisation: ‖a/‖a‖ − b/‖b‖‖ ≤ 2‖a − b‖/‖a‖, so ‖n̂ − n‖ ≤ ν = 2Δ/‖ĝ‖ +
//!   (kD + 4)·2⁻⁵² (the norm's and the quotients' rounding); ‖ĝ‖ = 0 with Δ > 0 makes the
//!   bound infinite.
//! - Score: |f̂ − f| ≤ (‖ŵ'‖ + ‖Δw'‖)·ν + Σ_i |Δw'_i||n̂_i| + (kD + 16)·2⁻⁵²(M + Σ_i |ŵ'_i n̂_i|),
//!   with |Δw'_i| = u|ŵ'_i| (`f32`) or half the weights' step (Q15).

use crate::bag::instance_count;
use crate::container::{tag, Elem, Encoding, Section, Sections};
use crate::error::Error;
use crate::mi_svm::{
    sq_dist, stored_instances, DistanceBound, ScoreWeights, MAX_PARAM, ROUND_UP, TINY, U24,
};
use crate::svm::SvmDecision;

fn bad(what: &'static str) -> Error {
    Error::BadModel(what)
}

/// 2⁻⁵²: one `f64` rounding, doubled.
const U52: f64 = f64::EPSILON;

/// u(1 + 2⁻²⁰): (Z)'s relative error of the device's z-score.
const ZSCORE_REL: f64 = U24 * (1.0 + 1.0 / 1_048_576.0);

/// 2⁻³²: the host zeroes a residual sum within this share of its terms' magnitudes.
const CANCELLED: f64 = 1.0 / 4_294_967_296.0;

/// (1/2 + 2⁻⁷): a quantised coordinate's share of its step.
const STEP_SLACK: f64 = 0.5 + 1.0 / 128.0;

/// A parsed miVLAD model (model kind [`crate::ModelKind::MiVlad`]).
#[derive(Debug, Clone, Copy)]
pub struct MiVlad<'a> {
    bias: f64,
    /// M = |b| + Σ|w_i m_i/s_i|.
    magnitude: f64,
    mean: Section<'a>,
    inv_sd: Section<'a>,
    centres: Section<'a>,
    /// Per-feature step of quantised centres.
    centre_scale: Option<Section<'a>>,
    weights: ScoreWeights<'a>,
}

impl<'a> MiVlad<'a> {
    pub(crate) fn from_sections(
        sections: &Sections<'a>,
        encoding: Encoding,
        dim: usize,
    ) -> Result<Self, Error> {
        let params = sections.require(tag::KERNEL_PARAMS)?;
        params.expect(Elem::F64, 1, 2)?;
        let (bias, magnitude) = (params.f64_at(0), params.f64_at(1));
        if !(bias.abs() <= MAX_PARAM && magnitude.is_finite() && magnitude >= bias.abs()) {
            return Err(bad("bias not finite and moderate, or magnitude below it"));
        }
        let mean = sections.require(tag::GRID_MIN)?;
        mean.expect(Elem::F64, 1, dim)?;
        let inv_sd = sections.f32_vec(tag::ZSCORE_SCALE, dim)?;
        if (0..dim).any(|j| !mean.f64_at(j).is_finite() || inv_sd.f32_at(j) < 0.0) {
            return Err(bad("z-score not finite or with a negative scale"));
        }
        let (centres, centre_scale) = stored_instances(
            sections,
            encoding,
            dim,
            "centres of the wrong type or width",
        )?;
        if centres.rows == 0 {
            return Err(bad("no centres"));
        }
        let width = centres
            .rows
            .checked_mul(dim)
            .ok_or(bad("codebook too large"))?;
        let weights = ScoreWeights::parse(sections, encoding, width)?;
        Ok(MiVlad {
            bias,
            magnitude,
            mean,
            inv_sd,
            centres,
            centre_scale,
            weights,
        })
    }

    /// Input dimension D.
    pub fn dim(&self) -> usize {
        self.centres.cols
    }

    /// Number of centres k.
    pub fn n_centres(&self) -> usize {
        self.centres.rows
    }

    /// `f32` scratch [`MiVlad::begin`] needs: D + k (the z-scored instance and the
    /// distances to the centres).
    pub fn scratch_len(&self) -> usize {
        self.dim() + self.n_centres()
    }

    /// `f64` sums [`MiVlad::begin`] needs: 2kD (the residual sums V and Σ|x'|) and k
    /// (instances per centre).
    pub fn sums_len(&self) -> usize {
        2 * self.n_centres() * self.dim() + self.n_centres()
    }

    /// Centre coordinate i = c·D + j as stored, and the bound on its error |Δc_j|.
    fn centre(&self, c: usize, j: usize) -> (f64, f64) {
        let i = c * self.dim() + j;
        match self.centre_scale {
            None => {
                let v = f64::from(self.centres.f32_at(i));
                (v, U24 * libm::fabs(v))
            }
            Some(steps) => {
                let t = f64::from(steps.f32_at(j));
                let v = f64::from(self.centres.i32_at(i)) * t;
                (v, STEP_SLACK * t + 6.0 * U24 * (libm::fabs(v) + t))
            }
        }
    }

    /// The decision on one bag of raw features (row-major, `n × D`, `n ≥ 1`, finite):
    /// [`MiVlad::begin`], [`MiVladPass::add`] per instance, [`MiVladPass::finish`].
    pub fn decide(
        &self,
        bag: &[f64],
        scratch: &mut [f32],
        sums: &mut [f64],
    ) -> Result<SvmDecision, Error> {
        let d = self.dim();
        let n = instance_count(bag.len(), d)?;
        let mut pass = self.begin(scratch, sums)?;
        for i in 0..n {
            pass.add(bag.get(i * d..(i + 1) * d).ok_or(Error::Empty)?)?;
        }
        pass.finish()
    }

    /// A pass over one bag that takes its instances one at a time; `scratch` holds at
    /// least [`MiVlad::scratch_len`] values, `sums` at least [`MiVlad::sums_len`].
    pub fn begin<'p>(
        &'p self,
        scratch: &'p mut [f32],
        sums: &'p mut [f64],
    ) -> Result<MiVladPass<'p, 'a>, Error> {
        let (d, k) = (self.dim(), self.n_centres());
        let (needed, got) = (self.scratch_len(), scratch.len());
        let (x, rest) = scratch
            .split_at_mut_checked(d)
            .ok_or(Error::BufferTooSmall { needed, got })?;
        let dist = rest
            .get_mut(..k)
            .ok_or(Error::BufferTooSmall { needed, got })?;
        let (needed, got) = (self.sums_len(), sums.len());
        let small = Error::BufferTooSmall { needed, got };
        let sums = sums.get_mut(..needed).ok_or(small)?;
        let (v, rest) = sums.split_at_mut_checked(k * d).ok_or(small)?;
        let (abs, counts) = rest.split_at_mut_checked(k * d).ok_or(small)?;
        v.fill(0.0);
        abs.fill(0.0);
        counts.fill(0.0);
        Ok(MiVladPass {
            model: self,
            bound: DistanceBound::new(d, self.centre_scale),
            x,
            dist,
            v,
            abs,
            counts,
            n: 0,
            ambiguous: false,
        })
    }
}

/// One bag's pass ([`MiVlad::begin`]): the residual sums per centre and what their bound
/// needs.
#[derive(Debug)]
pub struct MiVladPass<'p, 'a> {
    model: &'p MiVlad<'a>,
    bound: DistanceBound,
    x: &'p mut [f32],
    dist: &'p mut [f32],
    /// V, k × D.
    v: &'p mut [f64],
    /// Σ|x'_j| per centre and feature, k × D.
    abs: &'p mut [f64],
    /// Instances per centre.
    counts: &'p mut [f64],
    n: usize,
    /// Some instance's centre may not be the host's.
    ambiguous: bool,
}

impl MiVladPass<'_, '_> {
    /// The device's z-score of feature j: x'_j = (v − μ_j)·ŝ_j.
    fn z(&self, j: usize, v: f64) -> f64 {
        let m = self.model;
        (v - m.mean.f64_at(j)) * f64::from(m.inv_sd.f32_at(j))
    }

    /// Adds the bag's next instance: D raw features, finite.
    pub fn add(&mut self, instance: &[f64]) -> Result<(), Error> {
        let m = self.model;
        let (d, k) = (m.dim(), m.n_centres());
        if instance.len() != d {
            return Err(Error::DimensionMismatch {
                expected: d,
                got: instance.len(),
            });
        }
        if !instance.iter().all(|v| v.is_finite()) {
            return Err(Error::InvalidParameter("a feature value is not finite"));
        }
        let mut x_norm_sq = 0.0;
        for (j, &v) in instance.iter().enumerate() {
            let z = self.z(j, v);
            x_norm_sq += z * z;
            if let Some(x) = self.x.get_mut(j) {
                *x = z as f32;
            }
        }
        let x_norm = libm::sqrt(x_norm_sq) as f32;
        let shift = (ZSCORE_REL as f32) * x_norm * ROUND_UP;
        let mut best = 0;
        for c in 0..k {
            let d2 = sq_dist(&m.centres, m.centre_scale, c, self.x);
            if let Some(slot) = self.dist.get_mut(c) {
                *slot = d2;
            }
            if d2 < self.dist.get(best).copied().unwrap_or(f32::INFINITY) {
                best = c;
            }
        }
        // The host's centre is certainly the device's when the intervals are disjoint.
        let e = |d2: f32| self.bound.error_shifted(d2, x_norm, shift) * ROUND_UP + TINY;
        let top = self.dist.get(best).copied().unwrap_or(f32::INFINITY);
        let reach = f64::from(top) + f64::from(e(top));
        for (c, &d2) in self.dist.iter().enumerate() {
            let far = f64::from(d2) - f64::from(e(d2));
            // A NaN is no separation either.
            if c != best && reach.partial_cmp(&far) != Some(core::cmp::Ordering::Less) {
                self.ambiguous = true;
            }
        }
        for (j, &v) in instance.iter().enumerate() {
            let z = self.z(j, v);
            let i = best * d + j;
            if let (Some(s), Some(a)) = (self.v.get_mut(i), self.abs.get_mut(i)) {
                *s += z - m.centre(best, j).0;
                *a += libm::fabs(z);
            }
        }
        if let Some(count) = self.counts.get_mut(best) {
            *count += 1.0;
        }
        self.n += 1;
        Ok(())
    }

    /// The decision on the instances added (at least one).
    pub fn finish(self) -> Result<SvmDecision, Error> {
        if self.n == 0 {
            return Err(Error::Empty);
        }
        let m = self.model;
        let (d, k) = (m.dim(), m.n_centres());
        let sums = (2.0 * self.n as f64 + 4.0) * U52;
        // δ, Δ² and ‖ĝ‖², with the signed square roots left in `v`.
        let (mut delta_sq, mut g_sq) = (0.0, 0.0);
        for (i, (s, &a)) in self.v.iter_mut().zip(self.abs.iter()).enumerate() {
            let (c, j) = (i / d.max(1), i % d.max(1));
            let n_c = self.counts.get(c).copied().unwrap_or(0.0);
            let (centre, dc) = m.centre(c, j);
            let terms = (1.0 + ZSCORE_REL) * a + n_c * (libm::fabs(centre) + dc);
            let cancelled = CANCELLED * terms * (1.0 + 1.0 / 1_048_576.0);
            let e = ZSCORE_REL * a + n_c * dc + sums * (a + n_c * libm::fabs(centre)) + cancelled;
            let mag = libm::fabs(*s);
            let g = libm::sqrt(mag);
            let delta = if mag > e {
                e / (g + libm::sqrt(mag - e))
            } else {
                libm::sqrt(2.0 * e)
            } + U52 * g;
            *s = if *s < 0.0 { -g } else { g };
            delta_sq += delta * delta;
            g_sq += g * g;
        }
        let (delta, norm) = (libm::sqrt(delta_sq), libm::sqrt(g_sq));
        let width = (k * d) as f64;
        let nu = if norm > 0.0 {
            2.0 * delta / norm + (width + 4.0) * U52
        } else if delta == 0.0 {
            0.0
        } else {
            f64::INFINITY
        };
        let (mut value, mut w_sq, mut dw_sq, mut stored, mut terms) = (m.bias, 0.0, 0.0, 0.0, 0.0);
        for (i, &g) in self.v.iter().enumerate() {
            let n_i = if norm > 0.0 { g / norm } else { 0.0 };
            let (w, dw) = m.weights.get(i);
            value += w * n_i;
            w_sq += w * w;
            dw_sq += dw * dw;
            stored += dw * libm::fabs(n_i);
            terms += libm::fabs(w * n_i);
        }
        let bound = (libm::sqrt(w_sq) + libm::sqrt(dw_sq)) * nu
            + stored
            + (width + 16.0) * U52 * (m.magnitude + terms);
        let bound = if self.ambiguous || bound.is_nan() {
            f64::INFINITY
        } else {
            bound * (1.0 + 1.0 / 65_536.0)
        };
        Ok(SvmDecision {
            label: usize::from(value > 0.0),
            value,
            bound,
            witness: None,
        })
    }
}
