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
//!
//! # miFV
//!
//! Model kind [`crate::ModelKind::MiFv`] is the same pass over a diagonal Gaussian mixture
//! of K components (the host's EM fit): the stored means μ_k take the centres' place, with
//! `MIXTURE` (`f64`, K × 3: the constant C_k = ln w_k − ½Σ_j ln(2πσ²_kj), a_k = 1/√w_k and
//! the magnitude M_k = |ln w_k| + ½Σ_j|ln(2πσ²_kj)|) and `MIXTURE_SCALE` (`f32`, K × D:
//! ρ̂_kj = fl₃₂(1/σ_kj)). Per instance, in `f64`: u_kj = (x'_j − μ̂_kj)·ρ̂_kj, the
//! log-densities L_k = C_k − ½Σ_j u²_kj, the posteriors γ_k = softmax_k(L) (γ = 1 when
//! K = 1), and the sums A_kj += γ_k u_kj, B_kj += γ_k (u²_kj − 1). After the bag's n
//! instances, the improved Fisher vector is A_kj·a_k/n and B_kj·a_k/(n√2) (2KD values),
//! then the same signed square root, normalisation and score (weights 2KD).
//!
//! Its bound follows each instance's terms (e_x = u(1 + 2⁻²⁰)|x'_j| as above, Δμ the
//! stored mean's error, |Δρ| ≤ u ρ̂):
//!
//! - e_u = ρ̂(1 + u)(e_x + Δμ) + u ρ̂ |x'_j − μ̂| + 4·2⁻⁵²|û| (with the host's division);
//! - |L̂_k − L_k| ≤ E_k = ½Σ_j e_u(2|û| + e_u) + (2D + 8)·2⁻⁵²(M_k + ½Σ_j û² + |L̂_k|);
//! - softmax: with E = max_k E_k, γ̂_k/γ_k lies in [e^(−2E), e^(2E)], so
//!   |Δγ_k| ≤ γ̂_k (e^(2E + (2K + 8)·2⁻⁵²) − 1), at most 1 (the exponentials' and sums'
//!   rounding in the exponent); none when K = 1;
//! - terms: |γ̂û − γu| ≤ |Δγ||û| + (γ̂ + |Δγ|)e_u and |γ̂(û² − 1) − γ(u² − 1)| ≤
//!   |Δγ||û² − 1| + (γ̂ + |Δγ|)e_u(2|û| + e_u), each with 16·2⁻⁵² of the term for the
//!   device's and the host's products;
//! - sums: each addition adds 2⁻⁵²(|partial sum| + its error so far) for both sides'
//!   rounding, and 2⁻³² of the host's operand magnitudes (its cancellation rule);
//! - the scaling by a_k/n adds 4·2⁻⁵² of the value; the rest is miVLAD's.

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

/// 1 + 2⁻²⁰: slack for the rounding of a bound's own terms.
const SLACK: f64 = 1.0 + 1.0 / 1_048_576.0;

/// A miFV model's Gaussian mixture (the means are the model's centres).
#[derive(Debug, Clone, Copy)]
struct Mixture<'a> {
    /// K × 3: C_k, a_k = 1/√w_k, M_k.
    params: Section<'a>,
    /// K × D: ρ̂_kj = fl₃₂(1/σ_kj).
    inv_sd: Section<'a>,
}

impl<'a> Mixture<'a> {
    fn parse(sections: &Sections<'a>, k: usize, dim: usize) -> Result<Self, Error> {
        let params = sections.require(tag::MIXTURE)?;
        params.expect(Elem::F64, k, 3)?;
        let inv_sd = sections.require(tag::MIXTURE_SCALE)?;
        inv_sd.expect(Elem::F32, k, dim)?;
        for c in 0..k {
            let (constant, a, magnitude) = (
                params.f64_at(3 * c),
                params.f64_at(3 * c + 1),
                params.f64_at(3 * c + 2),
            );
            if !(constant.is_finite()
                && a.is_finite()
                && a >= 1.0
                && magnitude.is_finite()
                && magnitude >= libm::fabs(constant))
            {
                return Err(bad(
                    "mixture constants not finite, a weight not in (0, 1], or a magnitude below its constant",
                ));
            }
        }
        if (0..k * dim).any(|i| !(inv_sd.f32_at(i).is_finite() && inv_sd.f32_at(i) > 0.0)) {
            return Err(bad(
                "an inverse deviation of the mixture not finite and positive",
            ));
        }
        Ok(Mixture { params, inv_sd })
    }

    /// (C_k, a_k, M_k).
    fn component(&self, c: usize) -> (f64, f64, f64) {
        (
            self.params.f64_at(3 * c),
            self.params.f64_at(3 * c + 1),
            self.params.f64_at(3 * c + 2),
        )
    }
}

/// A parsed miVLAD or miFV model (model kinds [`crate::ModelKind::MiVlad`] and
/// [`crate::ModelKind::MiFv`]).
#[derive(Debug, Clone, Copy)]
pub struct MiVlad<'a> {
    bias: f64,
    /// M = |b| + Σ|w_i m_i/s_i|.
    magnitude: f64,
    mean: Section<'a>,
    inv_sd: Section<'a>,
    /// The k-means centres, or the mixture's means.
    centres: Section<'a>,
    /// Per-feature step of quantised centres.
    centre_scale: Option<Section<'a>>,
    /// miFV's mixture; `None` for miVLAD.
    mixture: Option<Mixture<'a>>,
    weights: ScoreWeights<'a>,
}

impl<'a> MiVlad<'a> {
    pub(crate) fn from_sections(
        sections: &Sections<'a>,
        encoding: Encoding,
        dim: usize,
        fisher: bool,
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
        let mixture = if fisher {
            Some(Mixture::parse(sections, centres.rows, dim)?)
        } else if sections.get(tag::MIXTURE).is_some() || sections.get(tag::MIXTURE_SCALE).is_some()
        {
            return Err(bad("a mixture in a miVLAD model"));
        } else {
            None
        };
        let width = centres
            .rows
            .checked_mul(dim)
            .and_then(|w| w.checked_mul(if fisher { 2 } else { 1 }))
            .ok_or(bad("codebook too large"))?;
        let weights = ScoreWeights::parse(sections, encoding, width)?;
        Ok(MiVlad {
            bias,
            magnitude,
            mean,
            inv_sd,
            centres,
            centre_scale,
            mixture,
            weights,
        })
    }

    /// Input dimension D.
    pub fn dim(&self) -> usize {
        self.centres.cols
    }

    /// Number of centres k (miVLAD) or mixture components K (miFV).
    pub fn n_centres(&self) -> usize {
        self.centres.rows
    }

    /// Whether the model is miFV (a Fisher vector under a Gaussian mixture).
    pub fn is_fisher(&self) -> bool {
        self.mixture.is_some()
    }

    /// Length of the bag's vector: kD (miVLAD) or 2KD (miFV).
    pub fn width(&self) -> usize {
        self.n_centres() * self.dim() * if self.is_fisher() { 2 } else { 1 }
    }

    /// `f32` scratch [`MiVlad::begin`] needs: D + k (the z-scored instance and the
    /// distances to the centres).
    pub fn scratch_len(&self) -> usize {
        self.dim() + self.n_centres()
    }

    /// `f64` sums [`MiVlad::begin`] needs: for miVLAD 2kD (the residual sums V and
    /// Σ|x'|) and k (instances per centre); for miFV 4KD (the sums A and B and their
    /// error bounds) and K (the posteriors).
    pub fn sums_len(&self) -> usize {
        2 * self.width() + self.n_centres()
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

    /// The device's z-score of feature j: x'_j = (v − μ_j)·ŝ_j.
    fn z(&self, j: usize, v: f64) -> f64 {
        (v - self.mean.f64_at(j)) * f64::from(self.inv_sd.f32_at(j))
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
        let (d, k, width) = (self.dim(), self.n_centres(), self.width());
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
        sums.fill(0.0);
        let (v, rest) = sums.split_at_mut_checked(width).ok_or(small)?;
        let (err, counts) = rest.split_at_mut_checked(width).ok_or(small)?;
        Ok(MiVladPass {
            model: self,
            bound: DistanceBound::new(d, self.centre_scale),
            x,
            dist,
            v,
            err,
            counts,
            n: 0,
            ambiguous: false,
        })
    }
}

/// One bag's pass ([`MiVlad::begin`]): the sums per centre or component and what their
/// bound needs.
#[derive(Debug)]
pub struct MiVladPass<'p, 'a> {
    model: &'p MiVlad<'a>,
    bound: DistanceBound,
    x: &'p mut [f32],
    dist: &'p mut [f32],
    /// miVLAD: V, k × D; miFV: A then B, each K × D.
    v: &'p mut [f64],
    /// miVLAD: Σ|x'_j| per centre and feature; miFV: the bound on each sum's error.
    err: &'p mut [f64],
    /// miVLAD: instances per centre; miFV: the posteriors of the current instance.
    counts: &'p mut [f64],
    n: usize,
    /// Some instance's centre may not be the host's.
    ambiguous: bool,
}

impl MiVladPass<'_, '_> {
    /// Adds the bag's next instance: D raw features, finite.
    pub fn add(&mut self, instance: &[f64]) -> Result<(), Error> {
        let m = self.model;
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
        match m.mixture {
            None => self.add_vlad(instance),
            Some(mixture) => self.add_fisher(&mixture, instance),
        }
        self.n += 1;
        Ok(())
    }

    fn add_vlad(&mut self, instance: &[f64]) {
        let m = self.model;
        let (d, k) = (m.dim(), m.n_centres());
        let mut x_norm_sq = 0.0;
        for (j, &v) in instance.iter().enumerate() {
            let z = m.z(j, v);
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
            let z = m.z(j, v);
            let i = best * d + j;
            if let (Some(s), Some(a)) = (self.v.get_mut(i), self.err.get_mut(i)) {
                *s += z - m.centre(best, j).0;
                *a += libm::fabs(z);
            }
        }
        if let Some(count) = self.counts.get_mut(best) {
            *count += 1.0;
        }
    }

    /// u_kj = (x'_j − μ̂_kj)·ρ̂_kj with its bound e_u, and the host's operand magnitude
    /// (|x_j| + |μ_kj|)/σ_kj bounded above.
    fn standardised(&self, mixture: &Mixture<'_>, c: usize, j: usize, x: f64) -> (f64, f64, f64) {
        let (mu, d_mu) = self.model.centre(c, j);
        let rho = f64::from(mixture.inv_sd.f32_at(c * self.model.dim() + j));
        let diff = x - mu;
        let u = diff * rho;
        let e_x = ZSCORE_REL * libm::fabs(x);
        let e_u = rho * (1.0 + U24) * (e_x + d_mu + U52 * libm::fabs(diff))
            + U24 * rho * libm::fabs(diff)
            + 4.0 * U52 * libm::fabs(u);
        let operands = (libm::fabs(x) + e_x + libm::fabs(mu) + d_mu) * rho * (1.0 + U24);
        (u, e_u, operands)
    }

    fn add_fisher(&mut self, mixture: &Mixture<'_>, instance: &[f64]) {
        let m = self.model;
        let (d, k) = (m.dim(), m.n_centres());
        // The log-densities L_k into `counts`, and E = max_k E_k (with one component
        // there is nothing to weigh).
        let (mut top, mut error) = (f64::NEG_INFINITY, 0.0f64);
        for c in (0..k).filter(|_| k > 1) {
            let (constant, _, magnitude) = mixture.component(c);
            let (mut q, mut e_q) = (0.0, 0.0);
            for (j, &v) in instance.iter().enumerate() {
                let (u, e_u, _) = self.standardised(mixture, c, j, m.z(j, v));
                q += u * u;
                e_q += e_u * (2.0 * libm::fabs(u) + e_u);
            }
            let log_density = constant - 0.5 * q;
            let e = 0.5 * e_q
                + (2.0 * d as f64 + 8.0) * U52 * (magnitude + 0.5 * q + libm::fabs(log_density));
            error = error.max(e);
            top = top.max(log_density);
            if let Some(slot) = self.counts.get_mut(c) {
                *slot = log_density;
            }
        }
        // The posteriors; one component takes every instance whole, on both sides.
        let spread = if k == 1 {
            self.counts.iter_mut().for_each(|g| *g = 1.0);
            0.0
        } else {
            let mut total = 0.0;
            for g in self.counts.iter_mut() {
                *g = libm::exp(*g - top);
                total += *g;
            }
            self.counts.iter_mut().for_each(|g| *g /= total);
            let rel = libm::expm1(2.0 * error * SLACK + (2.0 * k as f64 + 8.0) * U52);
            if rel.is_nan() {
                f64::INFINITY
            } else {
                rel
            }
        };
        let width = k * d;
        for c in 0..k {
            let gamma = self.counts.get(c).copied().unwrap_or(0.0);
            let d_gamma = (gamma * spread).min(1.0);
            let weight = gamma + d_gamma;
            for (j, &v) in instance.iter().enumerate() {
                let (u, e_u, operands) = self.standardised(mixture, c, j, m.z(j, v));
                let (mean, var) = (gamma * u, gamma * (u * u - 1.0));
                let e_sq = e_u * (2.0 * libm::fabs(u) + e_u);
                let e_mean = d_gamma * libm::fabs(u)
                    + weight * e_u
                    + 16.0 * U52 * libm::fabs(mean)
                    + CANCELLED * SLACK * weight * operands;
                let u_hi = libm::fabs(u) + e_u;
                let e_var = d_gamma * libm::fabs(u * u - 1.0)
                    + weight * e_sq
                    + 16.0 * U52 * gamma * (u * u + 1.0)
                    + CANCELLED * SLACK * weight * (u_hi * u_hi + 1.0);
                for (i, term, e_term) in
                    [(c * d + j, mean, e_mean), (width + c * d + j, var, e_var)]
                {
                    if let (Some(s), Some(e)) = (self.v.get_mut(i), self.err.get_mut(i)) {
                        *s += term;
                        *e += e_term;
                        *e += U52 * SLACK * (libm::fabs(*s) + *e);
                    }
                }
            }
        }
    }

    /// The decision on the instances added (at least one).
    pub fn finish(self) -> Result<SvmDecision, Error> {
        if self.n == 0 {
            return Err(Error::Empty);
        }
        let m = self.model;
        let d = m.dim().max(1);
        let n = self.n as f64;
        let MiVladPass {
            v,
            err,
            counts,
            ambiguous,
            ..
        } = self;
        match m.mixture {
            None => {
                let sums = (2.0 * n + 4.0) * U52;
                // e_cj of each residual sum, from Σ|x'_j| (in `err`) and n_c.
                let error = |i: usize, a: f64| {
                    let (c, j) = (i / d, i % d);
                    let n_c = counts.get(c).copied().unwrap_or(0.0);
                    let (centre, dc) = m.centre(c, j);
                    let terms = (1.0 + ZSCORE_REL) * a + n_c * (libm::fabs(centre) + dc);
                    let cancelled = CANCELLED * terms * SLACK;
                    ZSCORE_REL * a + n_c * dc + sums * (a + n_c * libm::fabs(centre)) + cancelled
                };
                Ok(score(m, v, err, error, ambiguous))
            }
            Some(mixture) => {
                // The improved Fisher vector: A·a_k/n and B·a_k/(n√2).
                let half = v.len() / 2;
                for (i, (s, e)) in v.iter_mut().zip(err.iter_mut()).enumerate() {
                    let c = (i % half.max(1)) / d;
                    let mut scale = mixture.component(c).1 / n;
                    if i >= half {
                        scale *= core::f64::consts::FRAC_1_SQRT_2;
                    }
                    *s *= scale;
                    *e = *e * scale * (1.0 + 4.0 * U52) + 4.0 * U52 * libm::fabs(*s);
                }
                Ok(score(m, v, err, |_, e| e, ambiguous))
            }
        }
    }
}

/// The signed square root, the ℓ2 normalisation and the linear score of a bag's vector
/// `v` whose coordinate i is within `error(i, err[i])` of the host's, with the bound on
/// the score.
fn score(
    m: &MiVlad<'_>,
    v: &mut [f64],
    err: &[f64],
    error: impl Fn(usize, f64) -> f64,
    ambiguous: bool,
) -> SvmDecision {
    // δ, Δ² and ‖ĝ‖², with the signed square roots left in `v`.
    let (mut delta_sq, mut g_sq) = (0.0, 0.0);
    for (i, (s, &e)) in v.iter_mut().zip(err).enumerate() {
        let e = error(i, e);
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
    let width = v.len() as f64;
    let nu = if norm > 0.0 {
        2.0 * delta / norm + (width + 4.0) * U52
    } else if delta == 0.0 {
        0.0
    } else {
        f64::INFINITY
    };
    let (mut value, mut w_sq, mut dw_sq, mut stored, mut terms) = (m.bias, 0.0, 0.0, 0.0, 0.0);
    for (i, &g) in v.iter().enumerate() {
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
    let bound = if ambiguous || bound.is_nan() {
        f64::INFINITY
    } else {
        bound * (1.0 + 1.0 / 65_536.0)
    };
    SvmDecision {
        label: usize::from(value > 0.0),
        value,
        bound,
        witness: None,
    }
}
