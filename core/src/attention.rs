//! Attention-based deep MIL (Ilse, Tomczak & Welling 2018) on the device: the host's
//! network ([`ModelKind::Attention`](crate::ModelKind::Attention)) run one instance at a
//! time, in scratch of O(D + hidden) values whatever the bag's size.
//!
//! Per instance x (raw features, rounded to `f32`): the z-score x'_j = (x_j − μ̂_j)·ŝ_j
//! in `f32` (μ̂_j, ŝ_j the mean and inverse deviation stored in `f32`), the encoder h = ReLU(W₂ ReLU(W₁x' + b₁) + b₂), then per
//! pooling:
//!
//! - attention (eq. 8): s = wᵀ tanh(V h + c) + d; gated (eq. 9): s = wᵀ(tanh(V h + c) ⊙
//!   sigm(U h + e)) + d. The weights a_k = softmax_k(s_k) and z = Σ_k a_k h_k (eq. 7) are
//!   found in **one pass** with a running maximum (online softmax): m = max score so
//!   far, S = Σ_k exp(s_k − m), Z = Σ_k exp(s_k − m) h_k; a new maximum m' rescales S
//!   and Z by exp(m − m'); z = Z/S at the end. The witness is the first instance of
//!   largest score, its weight 1/S (its own term is exp(0) = 1), and the gap to the
//!   second largest score is reported so that a caller can tell a certain witness.
//! - mean: z = (1/n)Σ_k h_k; the witness is instance 0 with weight 1/n (every weight is
//!   1/n, the host's explanation names the first).
//! - max: z_j = max_k h_kj; the witness is the instance holding the largest coordinate of
//!   z, its weight 1/(hidden/2) (the share of z's coordinates it holds at least).
//!
//! then the head's logits W z + b: one for two classes (label 1 when it is > 0), one per
//! class otherwise (label: the first largest).
//!
//! Sections: `KERNEL_CONFIG` (`u32`, 1 × 1: the pooling, [`Pooling`]), `GRID_MIN` (`f32`,
//! 1 × D: μ̂), `ZSCORE_SCALE` (`f32`, 1 × D: ŝ, 0 for a constant feature), `NET_LAYERS`
//! (`u32`, L × 3: rows, columns and 64 + e of each layer, 2^e its input step in the
//! quantised encodings; in order encoder 1, encoder 2, V, U (gated), w, head),
//! `NET_WEIGHTS` (1 × Σ rows·cols, the layers' matrices one after another, row-major:
//! `f32`, Q15, or Q7 with rows 2p and 2p + 1 stored by pairs as in
//! [`crate::fixed::pack_q7_pair`]), `NET_BIAS` (`f32`, 1 × Σ rows) and, quantised,
//! `NET_SCALE` (`f32`, 1 × Σ rows: each row's step t_r) and `NET_SHIFT` (`u32`: each
//! row's accumulator shift, [`crate::fixed::safe_shift`]).
//!
//! **Fixed point.** A layer's input is an `i16` vector on the step 2^e (the z-scored
//! instance, the hidden units, h, the pooled z: each rounded to nearest, the exporter
//! choosing e from twice the largest value on the training bags; a value beyond the
//! range makes the bag's bound infinite), the tanh output and the gated product are Q15
//! (e = −15). Row r is Σ_j q_rj x_j exact on the DSP dot products
//! ([`crate::fixed::dot2_q15`], [`crate::fixed::dot2_q7_paired`]), shifted once, then
//! y_r = fl(fl(R)·t_r·2^(e+shift)) + b_r in `f32`. tanh, the sigmoid and exp take the
//! `f32` value rounded to Q12, Q11 and Q11 and use small tables with linear
//! interpolation ([`tanh_q15`], [`sigmoid_q15`], [`exp_q11`]); the `f32` path calls
//! libm in `f64` and rounds once.
//!
//! **Error bound** (per bag, in [`AttentionDecision::bound`]; u = 2⁻²⁴, every quantity
//! measured on the device as the pass runs). One scalar error E per vector, the largest
//! over its coordinates, with the host's `f64` network on the same weights:
//!
//! - (I) input: E₀ = 1.01u(M + 3‖x̂'‖_∞), M the largest (|x_j| + |μ̂_j|)·ŝ_j (the
//!   rounding of x and μ to `f32`, of the subtraction, the product and ŝ), and 2^(e₀−1)
//!   more quantised.
//! - (L) an affine layer on a device input x̂ with error E: every stored weight is within
//!   δ = t_r(1/2 + 2⁻³⁰) of the host's (0 in `f32`), so
//!   E' ≤ A·E + δ(‖x̂‖₁ + n·E) + G + ε, A the largest ‖ŵ_r‖₁, n the columns, G the
//!   shift's rounding t_r·2^(e+shift−1), ε the `f32` arithmetic (4u(‖ŷ‖_∞ + ‖b‖_∞)
//!   quantised; γ_{n+1}(A‖x̂‖_∞ + ‖b‖_∞) in `f32`, γ_k = ku/(1 − ku)) and the host's `f64`
//!   sums (2⁻⁴⁰((A + nδ)(‖x̂‖_∞ + E) + ‖b‖_∞), n < 2¹³). ReLU keeps E; rounding to the
//!   next step adds 2^(e−1).
//! - (A) tanh is 1-Lipschitz, the sigmoid ¼-Lipschitz: E_t = E_v + 2⁻¹³ + ε_tanh + 2⁻²¹
//!   (the Q12 rounding, [`TANH_ERROR`], the clamp at ±8), E_g = E_u/4 + 2⁻¹⁴ +
//!   [`SIGMOID_ERROR`] + 2⁻²¹; the gated product E_t + E_g + 2⁻¹⁶ (|tanh|, sigm ≤ 1).
//!   In `f32`: E_v + u + 2⁻⁵⁰, E_u/4 + u + 2⁻⁴⁹, and u more for the product.
//! - (S) softmax: scores within E_s of the host's move every weight by a factor within
//!   e^(±2E_s), so Σ_k |a'_k − a_k| ≤ e^(2E_s) − 1 (a' = softmax of the device's
//!   scores). The device's exp of an argument x ∈ [−16, 0] (rounded to Q11: 2⁻¹² + 16u)
//!   is within a factor (1 ± ρ)e^(±α) of e^x, ρ = [`EXP_ERROR`] + u (`f32`: u + 2⁻⁵⁰),
//!   α = 2⁻¹² + 16u (`f32`: 16u); each instance's weight passes through at most c + 1
//!   such calls (c: the rescales), so it is within β = ((1 + ρ)e^α)^(c+1) − 1 relatively,
//!   except after an argument below −16 (clamped), where it is within e⁻¹⁶(1 + β)
//!   absolutely. For positive p, q: Σ|p/Σp − q/Σq| ≤ 2Σ|p − q|/Σp, so the device's
//!   weights are within T = 2β/(1 − β) + 2n_c e⁻¹⁶(1 + β)/(S(1 − g)) of a' in ℓ₁ (n_c
//!   the clamped instances); the `f32` sums S and Z add g = 1.01(n + 2c + 2)u per term,
//!   3(g + u)H on z (H the largest device h_kj ≥ 0). So
//!   E_z ≤ E_h + (e^(2E_s) − 1)(H + E_h) + T·H + 3(g + u)H.
//!   Mean: E_z ≤ E_h + 1.01(n + 1)u·H; max: E_z = E_h (1-Lipschitz).
//! - (H) the head is (L) on z (after rounding z to its step, quantised): its E bounds
//!   |logit_device − logit_host| for every logit, infinite when a value saturated.
//!
//! The bound is computed as the pass runs, in `f32`, with the constants of (L) rounded
//! up to `f32` when the model is parsed; (S) runs once per bag in `f64`. Every term is
//! non-negative, so a rounding can lower a computed term by a factor (1 − u) at most
//! (and by 2⁻¹⁴⁹ absolutely in the subnormal range), and no term is more than 200
//! roundings deep (at most 10 per layer, six layers, the input's few): the per-instance
//! E_h and E_s are taken ×(1 + 2⁻¹⁶), above (1 − u)⁻²⁰⁰, and the head's E likewise.
//! A rounding into `f32`'s subnormal range loses up to 2⁻¹⁴⁹ absolutely instead, which
//! the relative terms do not cover; (L) multiplies a layer's input error by at most
//! (A + nδ)(1 + 2⁻⁴⁰) (the gated product by the sum over V and U, below the product of
//! the factors plus one). So E_h and E_s gain 2⁻¹⁴¹·Π (1 + A_l + n_l δ_l)(1 + 2⁻⁴⁰) over
//! the layers before the head (fewer than 2⁸ such roundings per instance, each grown by
//! every later layer; computed when the model is parsed), E_z gains 2⁻¹⁴⁹(n + 2c + 2)
//! (the pooling's roundings, which the head's (L) grows), and the head's E 2⁻¹⁴¹.
//!
//! A binary label equals the host's wherever |logit_host| exceeds the bound; the
//! witness equals the host's explanation wherever the gap between the two largest
//! scores exceeds 2E_s ([`AttentionDecision::score_bound`]).

use crate::bag::{argmax_first, instance_count};
use crate::container::{layout, tag, Elem, Encoding, F32s, Sections};
use crate::error::Error;
use crate::fixed;

fn bad(what: &'static str) -> Error {
    Error::BadModel(what)
}

/// u = 2⁻²⁴: one `f32` rounding.
const U24: f64 = 1.0 / 16_777_216.0;
/// u as an `f32`, for the per-instance bound.
const U: f32 = 1.0 / 16_777_216.0;
/// 2⁻⁴⁰: the host's `f64` sums of fewer than 2¹³ terms, relative.
const HOST_REL: f32 = 1.0 / 1_099_511_627_776.0;
/// The factor that covers the `f32` roundings of the bound itself: every term is
/// non-negative and at most 200 roundings deep, and (1 − u)⁻²⁰⁰ < 1 + 2⁻¹⁶.
const BOUND_ARITHMETIC: f64 = 1.0 + 1.0 / 65_536.0;
/// 2⁸·2⁻¹⁴⁹: fewer than 2⁸ roundings into `f32`'s subnormal range, each losing up to
/// 2⁻¹⁴⁹ absolutely, not relatively (module documentation).
const SUBNORMAL_LOSS: f64 = 2.0 / 5_575_186_299_632_655_785_383_929_568_162_090_376_495_104.0;
/// 2⁻¹⁴⁹: the most one rounding into `f32`'s subnormal range loses.
const SUBNORMAL_ROUNDING: f64 = SUBNORMAL_LOSS / 256.0;
/// e⁻¹⁶: the smallest exp argument the pass rounds to; below it a weight is clamped.
const EXP_FLOOR: f32 = -16.0;
/// e⁻¹⁶ as a value.
const EXP_FLOOR_VALUE: f64 = 1.125_351_747_192_591_2e-7;

/// Most layers (encoder 1 and 2, V, U, w, head).
pub const MAX_LAYERS: usize = 6;
/// Widest layer (rows or columns): the host's `f64` sums stay within 2⁻⁴⁰ relatively.
pub const MAX_WIDTH: usize = 8190;

/// Worst |[`tanh_q15`]`(q)`/2¹⁵ − tanh(q/2¹²)| over every `i16` q (tested exhaustively
/// against libm): 1.53 units of 2⁻¹⁵ (4.65·10⁻⁵). The table of tanh(i/64), 0 ≤ i ≤ 512, in Q15
/// (rounded: 2⁻¹⁶), linear interpolation (h²/8·max|tanh''| = 2.35·10⁻⁵) rounded to
/// nearest (2⁻¹⁶).
pub const TANH_ERROR: f64 = 4.7e-5;
/// Worst |[`sigmoid_q15`]`(q)`/2¹⁵ − sigm(q/2¹¹)| over every `i16` q (tested
/// exhaustively): sigm(x) = (1 + tanh(x/2))/2, half of [`TANH_ERROR`] and half a unit.
pub const SIGMOID_ERROR: f64 = 3.9e-5;
/// Worst relative error |[`exp_q11`]`(q)`/e^(q/2¹¹) − 1| over every `i16` q ≤ 0 (tested
/// exhaustively): the exponent q·log₂e in Q20 (rounding: ln 2·2⁻²¹), 2^f from a table of
/// 2^(i/256) in Q30 with linear interpolation (≤ 9.2·10⁻⁷ relatively), the `f32`
/// conversion (2⁻²⁴).
pub const EXP_ERROR: f64 = 1.3e-6;

/// The MIL pooling of a [`ModelKind::Attention`](crate::ModelKind::Attention) model, as
/// its `KERNEL_CONFIG` code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooling {
    /// softmax_k(wᵀ tanh(V h_k)) (eq. 8).
    Attention = 0,
    /// softmax_k(wᵀ(tanh(V h_k) ⊙ sigm(U h_k))) (eq. 9).
    Gated = 1,
    /// The mean of the embeddings.
    Mean = 2,
    /// The feature-wise maximum of the embeddings.
    Max = 3,
}

impl Pooling {
    /// The pooling with this code.
    pub fn from_code(code: u32) -> Option<Self> {
        match code {
            0 => Some(Pooling::Attention),
            1 => Some(Pooling::Gated),
            2 => Some(Pooling::Mean),
            3 => Some(Pooling::Max),
            _ => None,
        }
    }

    /// The layers a network with this pooling has: encoder 1 and 2, then V, U, w for the
    /// learnt poolings, then the head.
    pub fn n_layers(self) -> usize {
        match self {
            Pooling::Attention => 5,
            Pooling::Gated => 6,
            Pooling::Mean | Pooling::Max => 3,
        }
    }
}

/// One affine layer as parsed, with the constants of its error bound (L), each rounded up
/// to an `f32`.
#[derive(Debug, Clone, Copy, Default)]
struct Layer<'a> {
    rows: usize,
    cols: usize,
    /// The stored matrix.
    weights: &'a [u8],
    /// Index of its first row in the per-row sections.
    first: usize,
    /// e of its input step 2^e (quantised).
    exp: i32,
    /// A: the largest ‖ŵ_r‖₁.
    l1: f32,
    /// δ: the largest storage error of a weight.
    delta: f32,
    /// G: the largest rounding of the accumulator shift.
    round: f32,
    /// ‖b‖_∞.
    bias: f32,
    /// γ_{n+1} (the `f32` encoding's sums).
    gamma: f32,
}

/// 2^e as an `f32` (|e| ≤ 126).
fn pow2f(e: i32) -> f32 {
    f32::from_bits(((127 + e.clamp(-126, 127)) as u32) << 23)
}

/// `x` rounded up to an `f32` (a bound's constant is never below its `f64` value).
fn up(x: f64) -> f32 {
    let f = x as f32;
    if f64::from(f) < x {
        f.next_up()
    } else {
        f
    }
}

/// The larger of `a` and `b`, `a` when `b` is NaN: one comparison (the Cortex-M4's FPU
/// has no maximum instruction, and `f32::max` is a library call there).
#[inline(always)]
fn larger(a: f32, b: f32) -> f32 {
    if b > a {
        b
    } else {
        a
    }
}

/// γ_k = ku/(1 − ku): the rounding of a sum of k `f32` terms, relative to Σ|terms|.
fn gamma(k: usize) -> f64 {
    let ku = k as f64 * U24;
    ku / (1.0 - ku)
}

/// A parsed attention network (model kind
/// [`ModelKind::Attention`](crate::ModelKind::Attention)).
#[derive(Debug, Clone, Copy)]
pub struct Attention<'a> {
    pooling: Pooling,
    encoding: Encoding,
    mean: F32s<'a>,
    inv_sd: F32s<'a>,
    layers: [Layer<'a>; MAX_LAYERS],
    n_layers: usize,
    bias: F32s<'a>,
    /// Each row's step t_r (quantised; empty in `f32`).
    scale: F32s<'a>,
    /// Each row's accumulator shift, `u32` (quantised; empty in `f32`).
    shift: &'a [u8],
    /// The per-instance bounds' absolute term for roundings into the subnormal range
    /// ([`Attention::subnormal_slack`]).
    slack: f64,
}

impl<'a> Attention<'a> {
    pub(crate) fn from_sections(
        sections: &Sections<'a>,
        encoding: Encoding,
        dim: usize,
        n_classes: usize,
    ) -> Result<Self, Error> {
        let config = sections.require(tag::KERNEL_CONFIG)?;
        config.expect(Elem::U32, 1, 1)?;
        let pooling = Pooling::from_code(config.u32_at(0)).ok_or(bad("unknown pooling"))?;
        let mean = sections.f32_vec(tag::GRID_MIN, dim)?;
        let inv_sd = sections.f32_vec(tag::ZSCORE_SCALE, dim)?;
        if (0..dim).any(|j| inv_sd.f32_at(j) < 0.0) {
            return Err(bad("z-score with a negative scale"));
        }
        let n_layers = pooling.n_layers();
        let shapes = sections.require(tag::NET_LAYERS)?;
        shapes.expect(Elem::U32, n_layers, 3)?;
        let mut layers = [Layer::default(); MAX_LAYERS];
        let (mut first, mut values) = (0usize, 0usize);
        for (i, l) in layers.iter_mut().enumerate().take(n_layers) {
            l.rows = shapes.u32_at(3 * i) as usize;
            l.cols = shapes.u32_at(3 * i + 1) as usize;
            l.exp = shapes.u32_at(3 * i + 2) as i32 - 64;
            if !(1..=MAX_WIDTH).contains(&l.rows) || !(1..=MAX_WIDTH).contains(&l.cols) {
                return Err(bad("a layer's width is 0 or too large"));
            }
            if encoding != Encoding::F32 && l.exp.abs() > crate::container::MAX_INPUT_EXP {
                return Err(bad("a layer's input step is out of range"));
            }
            l.first = first;
            first += l.rows;
            values += l.rows * l.cols;
        }
        // The chain of widths: D → hidden → embed → (attend → 1) → outputs.
        let [l0, l1, ..] = layers;
        let embed = l1.rows;
        let head = layers.get(n_layers - 1).copied().unwrap_or_default();
        let outputs = if n_classes == 2 { 1 } else { n_classes };
        let mut ok = l0.cols == dim && l1.cols == l0.rows && head.cols == embed;
        ok &= head.rows == outputs && n_classes >= 2;
        if n_layers > 3 {
            let v = layers[2];
            let w = layers.get(n_layers - 2).copied().unwrap_or_default();
            ok &= v.cols == embed && w.rows == 1 && w.cols == v.rows;
            if pooling == Pooling::Gated {
                ok &= layers[3].rows == v.rows && layers[3].cols == embed;
            }
            if encoding != Encoding::F32 {
                ok &= w.exp == -15;
            }
        }
        if !ok {
            return Err(bad("the layers' shapes do not chain"));
        }
        let weights = sections.require(tag::NET_WEIGHTS)?;
        weights.expect(encoding.elem(), 1, values)?;
        let bias = sections.f32_vec(tag::NET_BIAS, first)?;
        let (scale, shift) = match encoding {
            Encoding::F32 => {
                weights.expect_finite()?;
                (F32s::default(), &[][..])
            }
            _ => {
                let scale = sections.f32_vec(tag::NET_SCALE, first)?;
                let shift = sections.require(tag::NET_SHIFT)?;
                shift.expect(Elem::U32, 1, first)?;
                (scale.f32s(), shift.bytes)
            }
        };
        let size = encoding.elem().size();
        let mut at = 0;
        for l in layers.iter_mut().take(n_layers) {
            let len = l.rows * l.cols * size;
            l.weights = weights
                .bytes
                .get(at..at + len)
                .ok_or(bad("weights truncated"))?;
            at += len;
        }
        let mut net = Attention {
            pooling,
            encoding,
            mean: mean.f32s(),
            inv_sd: inv_sd.f32s(),
            layers,
            n_layers,
            bias: bias.f32s(),
            scale,
            shift,
            slack: 0.0,
        };
        for i in 0..n_layers {
            net.layers[i] = net.bound_constants(net.layers[i])?;
        }
        net.slack = net.subnormal_slack();
        Ok(net)
    }

    /// 2⁻¹⁴¹·Π_l (1 + A_l + n_l δ_l)(1 + 2⁻⁴⁰) over the layers before the head, each
    /// factor rounded up: the absolute losses in the subnormal range of one instance's
    /// pass, grown by (L)'s factor on the input error through every later layer (module
    /// documentation). Infinite when it overflows, which makes every bound infinite.
    fn subnormal_slack(&self) -> f64 {
        let grow = |l: &Layer<'_>| {
            let g = 1.0 + f64::from(l.l1) + l.cols as f64 * f64::from(l.delta);
            g * (1.0 + 1.0 / 1_099_511_627_776.0) * (1.0 + f64::EPSILON)
        };
        let before_head = self.layers.iter().take(self.n_layers.saturating_sub(1));
        let product: f64 = before_head.map(grow).product();
        SUBNORMAL_LOSS * product * (1.0 + 8.0 * f64::EPSILON)
    }

    /// The constants of (L) for one layer, checking its per-row numbers.
    fn bound_constants(&self, mut l: Layer<'a>) -> Result<Layer<'a>, Error> {
        let (mut l1, mut delta, mut round, mut bias) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
        for r in 0..l.rows {
            let b = f64::from(self.bias.get(l.first + r));
            bias = bias.max(libm::fabs(b));
            match self.encoding {
                Encoding::Q15 | Encoding::Q7 => {
                    let t = self.scale.get(l.first + r);
                    let s = self.row_shift(&l, r);
                    let abs = self.row_abs_sum(&l, r);
                    if t.partial_cmp(&0.0) != Some(core::cmp::Ordering::Greater)
                        || s > 30
                        || s < fixed::safe_shift(abs)
                    {
                        return Err(bad("a row's step or shift is out of range"));
                    }
                    let k = l.exp + s as i32;
                    if !(-100..=100).contains(&k) || !(t * pow2f(k)).is_normal() {
                        return Err(bad("a row's rescale is not a normal f32"));
                    }
                    let t = f64::from(t);
                    l1 = l1.max(t * abs as f64);
                    delta = delta.max(t * (0.5 + 1.0 / 1_073_741_824.0));
                    if s > 0 {
                        round = round.max(t * f64::from(pow2f(k - 1)));
                    }
                }
                Encoding::F32 => {
                    let row = l.weights.get(4 * r * l.cols..4 * (r + 1) * l.cols);
                    let sum: f64 = row
                        .unwrap_or_default()
                        .chunks_exact(4)
                        .map(|w| libm::fabs(f64::from(crate::container::le_f32(w))))
                        .sum();
                    l1 = l1.max(sum * (1.0 + gamma(l.cols)));
                }
            }
        }
        (l.l1, l.delta, l.round, l.bias) = (up(l1), up(delta), up(round), up(bias));
        l.gamma = up(gamma(l.cols + 1));
        Ok(l)
    }

    /// Row r's accumulator shift (quantised).
    fn row_shift(&self, l: &Layer<'_>, r: usize) -> u32 {
        layout::u32_at(self.shift, 4 * (l.first + r))
    }

    /// Σ_j |q_rj| of a quantised row.
    fn row_abs_sum(&self, l: &Layer<'a>, r: usize) -> u64 {
        let cols = l.cols;
        match self.encoding {
            Encoding::Q7 if r / 2 * 2 + 1 < l.rows => {
                let p = r / 2;
                let pair = l.weights.get(2 * p * cols..2 * (p + 1) * cols);
                pair.unwrap_or_default()
                    .chunks_exact(2)
                    .map(|h| {
                        let (a, b) = fixed::unpack_q7_pair(crate::container::le_i16(h));
                        u64::from(if r.is_multiple_of(2) { a } else { b }.unsigned_abs())
                    })
                    .sum()
            }
            Encoding::Q7 => l
                .weights
                .get(r * cols..(r + 1) * cols)
                .unwrap_or_default()
                .iter()
                .map(|&b| u64::from((b as i8).unsigned_abs()))
                .sum(),
            _ => l
                .weights
                .get(2 * r * cols..2 * (r + 1) * cols)
                .unwrap_or_default()
                .chunks_exact(2)
                .map(|h| u64::from(crate::container::le_i16(h).unsigned_abs()))
                .sum(),
        }
    }

    /// The pooling.
    pub fn pooling(&self) -> Pooling {
        self.pooling
    }

    /// Input dimension D.
    pub fn dim(&self) -> usize {
        self.layers[0].cols
    }

    /// Width of the encoder's first layer.
    pub fn hidden(&self) -> usize {
        self.layers[0].rows
    }

    /// Width of the embedding h (the encoder's second layer).
    pub fn embed(&self) -> usize {
        self.layers[1].rows
    }

    /// Attention units (0 for mean and max pooling).
    pub fn attend(&self) -> usize {
        if self.n_layers > 3 {
            self.layers[2].rows
        } else {
            0
        }
    }

    /// Logits of the head: 1 for two classes, one per class otherwise.
    pub fn n_logits(&self) -> usize {
        self.head().rows
    }

    /// Multiply-accumulates of the affine layers per instance (the head's once per bag
    /// not counted): D·hidden + hidden·embed + (attention) (1 or 2)·attend·embed + attend.
    pub fn macs_per_instance(&self) -> usize {
        self.layers
            .iter()
            .take(self.n_layers - 1)
            .map(|l| l.rows * l.cols)
            .sum()
    }

    /// `f32` scratch a pass needs: D + hidden + 2·embed + 2·attend (the instance, the
    /// hidden units, h, the pooled sums, the attention units and gates), whatever the
    /// bag's size.
    pub fn scratch_len(&self) -> usize {
        self.dim() + self.hidden() + 2 * self.embed() + 2 * self.attend()
    }

    /// `i16` scratch a quantised pass needs: D + hidden + 2·embed + attend (0 in `f32`).
    pub fn ints_len(&self) -> usize {
        match self.encoding {
            Encoding::F32 => 0,
            _ => self.dim() + self.hidden() + 2 * self.embed() + self.attend(),
        }
    }

    /// The decision on one bag of raw features (row-major, `n × D`, `n ≥ 1`, finite):
    /// [`Attention::begin`], [`AttentionPass::add`] per instance,
    /// [`AttentionPass::finish`]. `logits` receives [`Attention::n_logits`] values.
    pub fn decide(
        &self,
        bag: &[f64],
        scratch: &mut [f32],
        ints: &mut [i16],
        logits: &mut [f32],
    ) -> Result<AttentionDecision, Error> {
        self.decide_with(bag, scratch, ints, logits, |p, x| p.add(x))
    }

    /// [`Attention::decide`] on a bag of `f32` features (the pass rounds `f64` features to
    /// `f32` first, so the two agree on the same values).
    pub fn decide_f32(
        &self,
        bag: &[f32],
        scratch: &mut [f32],
        ints: &mut [i16],
        logits: &mut [f32],
    ) -> Result<AttentionDecision, Error> {
        self.decide_with(bag, scratch, ints, logits, |p, x| p.add_f32(x))
    }

    /// One pass over the instances of `bag` (row-major, `n × D`), each given to `add`.
    fn decide_with<T>(
        &self,
        bag: &[T],
        scratch: &mut [f32],
        ints: &mut [i16],
        logits: &mut [f32],
        add: impl Fn(&mut AttentionPass<'_, '_>, &[T]) -> Result<(), Error>,
    ) -> Result<AttentionDecision, Error> {
        let d = self.dim();
        let n = instance_count(bag.len(), d)?;
        let mut pass = self.begin(scratch, ints)?;
        for i in 0..n {
            add(&mut pass, bag.get(i * d..(i + 1) * d).ok_or(Error::Empty)?)?;
        }
        pass.finish(logits)
    }

    /// A pass over one bag that takes its instances one at a time; `scratch` holds at
    /// least [`Attention::scratch_len`] values, `ints` [`Attention::ints_len`].
    pub fn begin<'p>(
        &'p self,
        scratch: &'p mut [f32],
        ints: &'p mut [i16],
    ) -> Result<AttentionPass<'p, 'a>, Error> {
        let (d, h1, h2, att) = (self.dim(), self.hidden(), self.embed(), self.attend());
        let (needed, got) = (self.scratch_len(), scratch.len());
        let small = Error::BufferTooSmall { needed, got };
        let scratch = scratch.get_mut(..needed).ok_or(small)?;
        let (x, rest) = split(scratch, d)?;
        let (a1, rest) = split(rest, h1)?;
        let (h, rest) = split(rest, h2)?;
        let (z, rest) = split(rest, h2)?;
        let (t, g) = split(rest, att)?;
        let (needed, got) = (self.ints_len(), ints.len());
        let ints = ints
            .get_mut(..needed)
            .ok_or(Error::BufferTooSmall { needed, got })?;
        let q = if needed > 0 {
            let (x, rest) = split(ints, d)?;
            let (a1, rest) = split(rest, h1)?;
            let (h, rest) = split(rest, h2)?;
            let (z, t) = split(rest, h2)?;
            Some(QBufs { x, a1, h, z, t })
        } else {
            None
        };
        z.fill(0.0);
        Ok(AttentionPass {
            net: self,
            x,
            a1,
            h,
            z,
            t,
            g,
            q,
            n: 0,
            top: f32::NEG_INFINITY,
            second: f32::NEG_INFINITY,
            sum: 0.0,
            witness: 0,
            rescales: 0,
            clamped: 0,
            h_max: 0.0,
            e_h: 0.0,
            e_s: 0.0,
            saturated: false,
        })
    }

    /// The head (the last layer).
    fn head(&self) -> &Layer<'a> {
        self.layers
            .get(self.n_layers - 1)
            .unwrap_or(&self.layers[0])
    }

    /// w, the layer of the attention scores (attention and gated pooling).
    fn score_layer(&self) -> &Layer<'a> {
        self.layers
            .get(self.n_layers - 2)
            .unwrap_or(&self.layers[0])
    }

    /// y = W x + b of a quantised layer into `out`; returns ‖y‖_∞.
    fn dense_q(&self, l: &Layer<'_>, x: &[i16], out: &mut [f32]) -> f32 {
        let cols = l.cols;
        let mut y_max = 0.0f32;
        let mut put = |r: usize, acc: i64, out: &mut [f32]| {
            // The rescale t_r·2^(e+shift).
            let s = self.row_shift(l, r);
            let c = self.scale.get(l.first + r) * pow2f(l.exp + s as i32);
            let y = fixed::round_shift_fit(acc, s) as f32 * c + self.bias.get(l.first + r);
            y_max = larger(y_max, libm::fabsf(y));
            if let Some(o) = out.get_mut(r) {
                *o = y;
            }
        };
        let pairs = l.rows / 2;
        match self.encoding {
            Encoding::Q7 => {
                for p in 0..pairs {
                    let w = l.weights.get(2 * p * cols..2 * (p + 1) * cols);
                    let (a, b) = fixed::dot2_q7_paired(w.unwrap_or_default(), x);
                    put(2 * p, a, out);
                    put(2 * p + 1, b, out);
                }
                if l.rows % 2 == 1 {
                    let r = l.rows - 1;
                    let w = l.weights.get(r * cols..(r + 1) * cols);
                    put(r, fixed::dot_q7(w.unwrap_or_default(), x), out);
                }
            }
            _ => {
                let row = |r: usize| l.weights.get(2 * r * cols..2 * (r + 1) * cols);
                for p in 0..pairs {
                    let (w0, w1) = (row(2 * p), row(2 * p + 1));
                    let (a, b) = fixed::dot2_q15(w0.unwrap_or_default(), w1.unwrap_or_default(), x);
                    put(2 * p, a, out);
                    put(2 * p + 1, b, out);
                }
                if l.rows % 2 == 1 {
                    let r = l.rows - 1;
                    put(r, fixed::dot_q15(row(r).unwrap_or_default(), x), out);
                }
            }
        }
        y_max
    }

    /// y = W x + b of an `f32` layer into `out` (the bias first, then the products in
    /// order); returns ‖y‖_∞.
    fn dense_f32(&self, l: &Layer<'_>, x: &[f32], out: &mut [f32]) -> f32 {
        let mut y_max = 0.0f32;
        for (r, o) in out.iter_mut().enumerate().take(l.rows) {
            let row = l.weights.get(4 * r * l.cols..4 * (r + 1) * l.cols);
            let mut y = self.bias.get(l.first + r);
            for (w, &v) in row.unwrap_or_default().chunks_exact(4).zip(x) {
                y += crate::container::le_f32(w) * v;
            }
            y_max = larger(y_max, libm::fabsf(y));
            *o = y;
        }
        y_max
    }

    /// (L): the error of a layer's outputs from its input's error `e`, ‖x̂‖₁, ‖x̂‖_∞ and
    /// ‖ŷ‖_∞, in `f32` (at most 10 roundings deep).
    fn layer_error(&self, l: &Layer<'_>, e: f32, x_l1: f32, x_max: f32, y_max: f32) -> f32 {
        let n = l.cols as f32;
        let arith = match self.encoding {
            Encoding::F32 => l.gamma * (l.l1 * x_max + l.bias),
            _ => 4.0 * U * (y_max + l.bias),
        };
        let host = HOST_REL * ((l.l1 + n * l.delta) * (x_max + e) + l.bias);
        l.l1 * e + l.delta * (x_l1 + n * e) + l.round + arith + host
    }
}

/// The `i16` buffers of a quantised pass.
#[derive(Debug)]
struct QBufs<'p> {
    x: &'p mut [i16],
    a1: &'p mut [i16],
    h: &'p mut [i16],
    z: &'p mut [i16],
    t: &'p mut [i16],
}

/// What the device decided on one bag ([`Attention::decide`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AttentionDecision {
    /// Binary: 1 when the logit is > 0; otherwise the first largest logit.
    pub label: usize,
    /// The logit (binary) or the label's logit.
    pub value: f32,
    /// Bound on |logit − host logit| for every logit (module documentation, (H));
    /// infinite when a value saturated its step.
    pub bound: f64,
    /// The witness instance (module documentation: per pooling).
    pub witness: usize,
    /// The witness's weight in the pooled vector.
    pub weight: f32,
    /// Attention and gated pooling: the largest score less the second largest (+∞ for
    /// one instance; 0 for mean and max pooling).
    pub gap: f32,
    /// Bound on |score − host score| of every instance's attention score (0 for mean and
    /// max pooling): the witness is the host's when `gap > 2·score_bound`.
    pub score_bound: f64,
}

/// One bag's pass ([`Attention::begin`]).
#[derive(Debug)]
pub struct AttentionPass<'p, 'a> {
    net: &'p Attention<'a>,
    x: &'p mut [f32],
    a1: &'p mut [f32],
    h: &'p mut [f32],
    /// Z (attention), Σh (mean), max h (max).
    z: &'p mut [f32],
    t: &'p mut [f32],
    g: &'p mut [f32],
    q: Option<QBufs<'p>>,
    n: usize,
    /// m: the largest score so far.
    top: f32,
    second: f32,
    /// S.
    sum: f32,
    witness: usize,
    rescales: usize,
    /// Instances whose weight passed through a clamped exp.
    clamped: usize,
    /// H: the largest h_kj (and, max pooling, its instance is the witness).
    h_max: f32,
    e_h: f32,
    e_s: f32,
    saturated: bool,
}

/// Rounds `v`·2^−e to an `i16` (to nearest); `false` when it saturates.
fn quantize(v: f32, e: i32) -> (i16, bool) {
    let t = v * pow2f(-e);
    (fixed::round_clamp_i16(t), t > -32768.5 && t < 32767.5)
}

/// The first `n` values and the rest, or the error of a buffer too small.
fn split<T>(s: &mut [T], n: usize) -> Result<(&mut [T], &mut [T]), Error> {
    let got = s.len();
    s.split_at_mut_checked(n)
        .ok_or(Error::BufferTooSmall { needed: n, got })
}

/// ‖q‖₁ and ‖q‖_∞ of an `i16` vector, scaled by 2^e (the sum of at most
/// [`MAX_WIDTH`] magnitudes of 2¹⁵ fits a `u32`).
fn norms_q(q: &[i16], e: i32) -> (f32, f32) {
    let (mut sum, mut top) = (0u32, 0u32);
    for &v in q {
        let a = u32::from(v.unsigned_abs());
        sum = sum.saturating_add(a);
        top = top.max(a);
    }
    (sum as f32 * pow2f(e), top as f32 * pow2f(e))
}

/// ‖x‖₁ (bounded above: the `f32` sum of n terms is within γ_n of the exact one, so
/// (1 + 2γ_n) covers it) and ‖x‖_∞ of an `f32` vector.
fn norms_f32(x: &[f32]) -> (f32, f32) {
    let (mut sum, mut top) = (0.0f32, 0.0f32);
    for &v in x {
        let a = libm::fabsf(v);
        sum += a;
        top = larger(top, a);
    }
    let g = x.len() as f32 * U;
    (sum * (1.0 + 2.0 * g / (1.0 - g)), top)
}

impl AttentionPass<'_, '_> {
    /// Adds the bag's next instance: D raw features, finite (rounded to `f32`).
    pub fn add(&mut self, instance: &[f64]) -> Result<(), Error> {
        let d = self.net.dim();
        if instance.len() != d {
            return Err(Error::DimensionMismatch {
                expected: d,
                got: instance.len(),
            });
        }
        for (x, &v) in self.x.iter_mut().zip(instance) {
            *x = v as f32;
        }
        self.add_scratch()
    }

    /// [`AttentionPass::add`] for `f32` features.
    pub fn add_f32(&mut self, instance: &[f32]) -> Result<(), Error> {
        let d = self.net.dim();
        if instance.len() != d {
            return Err(Error::DimensionMismatch {
                expected: d,
                got: instance.len(),
            });
        }
        self.x.iter_mut().zip(instance).for_each(|(x, &v)| *x = v);
        self.add_scratch()
    }

    /// (I): the z-score of the instance in `self.x`, in place; returns its error bound
    /// 1.01u(M + 3‖x̂'‖_∞), M the largest (|x_j| + |μ̂_j|)·ŝ_j: the rounding of x and μ to
    /// `f32` and of the subtraction, the product and ŝ.
    fn zscore(&mut self) -> Result<f32, Error> {
        let net = self.net;
        let (mut m, mut top) = (0.0f32, 0.0f32);
        let stats = net
            .mean
            .bytes()
            .chunks_exact(4)
            .zip(net.inv_sd.bytes().chunks_exact(4));
        for (x, (mu, s)) in self.x.iter_mut().zip(stats) {
            let (mu, s) = (crate::container::le_f32(mu), crate::container::le_f32(s));
            if !x.is_finite() {
                return Err(Error::InvalidParameter("a feature value is not finite"));
            }
            m = larger(m, (libm::fabsf(*x) + libm::fabsf(mu)) * s);
            *x = (*x - mu) * s;
            top = larger(top, libm::fabsf(*x));
        }
        Ok(1.01 * U * (m + 3.0 * top))
    }

    /// Adds the instance in `self.x`.
    fn add_scratch(&mut self) -> Result<(), Error> {
        let net = self.net;
        let e0 = self.zscore()?;
        let (e_h, score) = match self.q.take() {
            Some(mut q) => {
                let r = self.encode_q(e0, &mut q);
                self.q = Some(q);
                r
            }
            None => self.encode_f32(e0),
        };
        self.e_h = larger(self.e_h, e_h);
        // The device's h (f32 values; quantised: on their step) is in `self.h`.
        let k = self.n;
        let mut h_top = (0.0f32, 0usize);
        for (j, &v) in self.h.iter().enumerate() {
            if v > h_top.0 {
                h_top = (v, j);
            }
        }
        if h_top.0 > self.h_max || k == 0 {
            if net.pooling == Pooling::Max {
                self.witness = k;
            }
            self.h_max = self.h_max.max(h_top.0);
        }
        match net.pooling {
            Pooling::Mean => self
                .z
                .iter_mut()
                .zip(self.h.iter())
                .for_each(|(z, &h)| *z += h),
            Pooling::Max => {
                for (z, &h) in self.z.iter_mut().zip(self.h.iter()) {
                    *z = if k == 0 { h } else { z.max(h) };
                }
            }
            Pooling::Attention | Pooling::Gated => {
                let (s, e_s) = score;
                self.e_s = larger(self.e_s, e_s);
                self.pool(s);
            }
        }
        self.n += 1;
        Ok(())
    }

    /// The online softmax step (S) for score `s` of instance h (in `self.h`).
    fn pool(&mut self, s: f32) {
        let k = self.n;
        let encoding = self.net.encoding;
        let exp = |x: f32| -> (f32, bool) {
            // A NaN is clamped too.
            let clamped =
                x.partial_cmp(&EXP_FLOOR) == Some(core::cmp::Ordering::Less) || x.is_nan();
            let x = if clamped { EXP_FLOOR } else { x };
            let v = match encoding {
                Encoding::F32 => libm::exp(f64::from(x)) as f32,
                _ => exp_q11(fixed::round_clamp_i16(x * 2048.0)),
            };
            (v, clamped)
        };
        if k == 0 || s > self.top {
            let (r, clamped) = if k == 0 {
                (0.0, false)
            } else {
                exp(self.top - s)
            };
            if clamped {
                self.clamped = k;
            }
            self.sum = self.sum * r + 1.0;
            for (z, &h) in self.z.iter_mut().zip(self.h.iter()) {
                *z = *z * r + h;
            }
            if k > 0 {
                self.rescales += 1;
            }
            self.second = self.top;
            self.top = s;
            self.witness = k;
        } else {
            let (e, clamped) = exp(s - self.top);
            self.clamped += usize::from(clamped);
            self.sum += e;
            for (z, &h) in self.z.iter_mut().zip(self.h.iter()) {
                *z += e * h;
            }
            self.second = self.second.max(s);
        }
    }

    /// The encoder and the score in `f32`: h into `self.h`; returns E_h and (s, E_s).
    fn encode_f32(&mut self, e0: f32) -> (f32, (f32, f32)) {
        let net = self.net;
        let (x_l1, x_max) = norms_f32(self.x);
        let l = &net.layers;
        let y = net.dense_f32(&l[0], self.x, self.a1);
        self.a1.iter_mut().for_each(|v| *v = larger(0.0, *v));
        let e1 = net.layer_error(&l[0], e0, x_l1, x_max, y);
        let (a_l1, a_max) = norms_f32(self.a1);
        let y = net.dense_f32(&l[1], self.a1, self.h);
        self.h.iter_mut().for_each(|v| *v = larger(0.0, *v));
        let e_h = net.layer_error(&l[1], e1, a_l1, a_max, y);
        if net.n_layers == 3 {
            return (e_h, (0.0, 0.0));
        }
        let (h_l1, h_max) = norms_f32(self.h);
        let y = net.dense_f32(&l[2], self.h, self.t);
        let e_v = net.layer_error(&l[2], e_h, h_l1, h_max, y);
        self.t
            .iter_mut()
            .for_each(|v| *v = libm::tanh(f64::from(*v)) as f32);
        let mut e_t = e_v + U + 1.0 / 1_125_899_906_842_624.0;
        if net.pooling == Pooling::Gated {
            let y = net.dense_f32(&l[3], self.h, self.g);
            let e_u = net.layer_error(&l[3], e_h, h_l1, h_max, y);
            for (t, &u) in self.t.iter_mut().zip(self.g.iter()) {
                let g = (1.0 / (1.0 + libm::exp(-f64::from(u)))) as f32;
                *t *= g;
            }
            e_t += e_u / 4.0 + 2.0 * U + 1.0 / 562_949_953_421_312.0;
        }
        let (t_l1, t_max) = norms_f32(self.t);
        let w = net.score_layer();
        let mut s = [0.0f32];
        let y = net.dense_f32(w, self.t, &mut s);
        (e_h, (s[0], net.layer_error(w, e_t, t_l1, t_max, y)))
    }

    /// The encoder and the score in fixed point: h (dequantised) into `self.h`; returns
    /// E_h and (s, E_s).
    fn encode_q(&mut self, e_z: f32, q: &mut QBufs<'_>) -> (f32, (f32, f32)) {
        let net = self.net;
        let l = &net.layers;
        let e0 = l[0].exp;
        let mut saturated = false;
        for (o, &z) in q.x.iter_mut().zip(self.x.iter()) {
            let (qv, ok) = quantize(z, e0);
            saturated |= !ok;
            *o = qv;
        }
        self.saturated |= saturated;
        let err0 = pow2f(e0 - 1) + e_z;
        let (x_l1, x_hat) = norms_q(q.x, e0);
        let y = net.dense_q(&l[0], q.x, self.a1);
        let e1 = net.layer_error(&l[0], err0, x_l1, x_hat, y) + pow2f(l[1].exp - 1);
        self.saturated |= relu_quantize(self.a1, q.a1, l[1].exp);
        let (a_l1, a_max) = norms_q(q.a1, l[1].exp);
        let y = net.dense_q(&l[1], q.a1, self.h);
        let e_h = net.layer_error(&l[1], e1, a_l1, a_max, y);
        // h on the step of the layer that reads it (V, or the head: the pooled z's).
        let eh = l[2].exp;
        self.saturated |= relu_quantize(self.h, q.h, eh);
        let step = pow2f(eh);
        for (o, &v) in self.h.iter_mut().zip(q.h.iter()) {
            *o = f32::from(v) * step;
        }
        let e_h = e_h + pow2f(eh - 1);
        if net.n_layers == 3 {
            return (e_h, (0.0, 0.0));
        }
        let (h_l1, h_max) = norms_q(q.h, eh);
        let y = net.dense_q(&l[2], q.h, self.t);
        let e_v = net.layer_error(&l[2], e_h, h_l1, h_max, y);
        for (o, &v) in q.t.iter_mut().zip(self.t.iter()) {
            *o = tanh_q15(fixed::round_clamp_i16(v * 4096.0));
        }
        let mut e_t = e_v + 1.0 / 8192.0 + TANH_ERROR as f32 + 1.0 / 2_097_152.0;
        if net.pooling == Pooling::Gated {
            let y = net.dense_q(&l[3], q.h, self.g);
            let e_u = net.layer_error(&l[3], e_h, h_l1, h_max, y);
            for (t, &u) in q.t.iter_mut().zip(self.g.iter()) {
                let g = sigmoid_q15(fixed::round_clamp_i16(u * 2048.0));
                *t = ((i32::from(*t) * g + (1 << 14)) >> 15) as i16;
            }
            e_t += e_u / 4.0
                + 1.0 / 16384.0
                + SIGMOID_ERROR as f32
                + 1.0 / 2_097_152.0
                + 1.0 / 65536.0;
        }
        let (t_l1, t_max) = norms_q(q.t, -15);
        let w = net.score_layer();
        let mut s = [0.0f32];
        let y = net.dense_q(w, q.t, &mut s);
        (e_h, (s[0], net.layer_error(w, e_t, t_l1, t_max, y)))
    }

    /// The decision on the instances added (at least one); the logits into `logits`
    /// ([`Attention::n_logits`] values).
    pub fn finish(mut self, logits: &mut [f32]) -> Result<AttentionDecision, Error> {
        let net = self.net;
        if self.n == 0 {
            return Err(Error::Empty);
        }
        let outputs = net.n_logits();
        let got = logits.len();
        let logits = logits.get_mut(..outputs).ok_or(Error::BufferTooSmall {
            needed: outputs,
            got,
        })?;
        let n = self.n as f64;
        let h = f64::from(self.h_max);
        // The instances' bounds as upper bounds again ((1 − u)⁻²⁰⁰ < BOUND_ARITHMETIC),
        // before the softmax's terms, which grow faster than linearly in them.
        let e_h = f64::from(self.e_h) * BOUND_ARITHMETIC + net.slack;
        let e_s = f64::from(self.e_s) * BOUND_ARITHMETIC + net.slack;
        let (e_z, weight, gap) = match net.pooling {
            Pooling::Mean => {
                let inv = 1.0 / self.n as f32;
                self.z.iter_mut().for_each(|z| *z *= inv);
                (e_h + 1.01 * (n + 1.0) * U24 * h, inv, 0.0)
            }
            Pooling::Max => (e_h, 1.0 / net.embed() as f32, 0.0),
            Pooling::Attention | Pooling::Gated => {
                let inv = 1.0 / self.sum;
                self.z.iter_mut().for_each(|z| *z *= inv);
                let (rho, alpha) = match net.encoding {
                    Encoding::F32 => (U24 + 1.0 / 1_125_899_906_842_624.0, 16.0 * U24),
                    _ => (EXP_ERROR + U24, 1.0 / 4096.0 + 16.0 * U24),
                };
                let calls = (self.rescales + 1) as f64;
                let beta = libm::exp(calls * (libm::log1p(rho) + alpha)) - 1.0;
                let g = 1.01 * (n + 2.0 * self.rescales as f64 + 2.0) * U24;
                let sum = f64::from(self.sum) * (1.0 - g);
                let t = 2.0 * beta / (1.0 - beta)
                    + 2.0 * self.clamped as f64 * EXP_FLOOR_VALUE * (1.0 + beta) / sum;
                let e = e_h + libm::expm1(2.0 * e_s) * (h + e_h) + t * h + 3.0 * (g + U24) * h;
                let gap = if self.n == 1 {
                    f32::INFINITY
                } else {
                    self.top - self.second
                };
                (e, inv, gap)
            }
        };
        let head = net.head();
        // The pooling's roundings into the subnormal range: n + 2c + 2 per coordinate.
        let pooled = (n + 2.0 * self.rescales as f64 + 2.0) * SUBNORMAL_ROUNDING;
        let e_z = up(e_z + pooled);
        let (y, e) = match self.q.as_mut() {
            Some(q) => {
                let mut saturated = false;
                for (o, &v) in q.z.iter_mut().zip(self.z.iter()) {
                    let (qv, ok) = quantize(v, head.exp);
                    saturated |= !ok;
                    *o = qv;
                }
                self.saturated |= saturated;
                let (l1, top) = norms_q(q.z, head.exp);
                let e = e_z + pow2f(head.exp - 1);
                let y = net.dense_q(head, q.z, logits);
                (y, net.layer_error(head, e, l1, top, y))
            }
            None => {
                let (l1, top) = norms_f32(self.z);
                let y = net.dense_f32(head, self.z, logits);
                (y, net.layer_error(head, e_z, l1, top, y))
            }
        };
        let _ = y;
        let (label, value) = if outputs == 1 {
            let logit = logits.first().copied().unwrap_or(0.0);
            (usize::from(logit > 0.0), logit)
        } else {
            argmax_first(logits)
        };
        let bound = if self.saturated || e.is_nan() {
            f64::INFINITY
        } else {
            f64::from(e) * BOUND_ARITHMETIC + SUBNORMAL_LOSS
        };
        Ok(AttentionDecision {
            label,
            value,
            bound,
            witness: self.witness,
            weight,
            gap,
            score_bound: e_s,
        })
    }
}

/// ReLU, then rounding to the step 2^e into `q` (and `y` keeps the `f32` ReLU); `true`
/// when a value saturated.
fn relu_quantize(y: &mut [f32], q: &mut [i16], e: i32) -> bool {
    let mut saturated = false;
    for (v, o) in y.iter_mut().zip(q.iter_mut()) {
        *v = larger(0.0, *v);
        let (qv, ok) = quantize(*v, e);
        saturated |= !ok;
        *o = qv;
    }
    saturated
}

/// tanh(q/2¹²) in Q15 (|result| ≤ 32767): a table of tanh(i/64) and linear
/// interpolation; within [`TANH_ERROR`] of libm for every q.
pub fn tanh_q15(q: i16) -> i16 {
    let a = u32::from(q.unsigned_abs());
    let (i, f) = ((a >> 6) as usize, a & 63);
    let lo = u32::from(TANH_TABLE.get(i).copied().unwrap_or(32768));
    let hi = u32::from(TANH_TABLE.get(i + 1).copied().unwrap_or(32768));
    let v = (lo * 64 + (hi - lo) * f + 32) >> 6;
    let v = v.min(32767) as i16;
    if q < 0 {
        -v
    } else {
        v
    }
}

/// sigm(q/2¹¹) = (1 + tanh(q/2¹²))/2 in Q15 (0 … 32768), from [`tanh_q15`]; within
/// [`SIGMOID_ERROR`] of libm for every q.
pub fn sigmoid_q15(q: i16) -> i32 {
    (32768 + i32::from(tanh_q15(q)) + 1) >> 1
}

/// round(log₂e·2³²).
const LOG2E_Q32: i64 = 6_196_328_019;

/// e^(q/2¹¹) for q ≤ 0 (q > 0 is read as 0): the exponent y = −q·log₂e/2¹¹ in Q20,
/// split into k = ⌈y⌉ and f = k − y ∈ [0, 1), 2^f from a table of 2^(i/256) in Q30 with
/// linear interpolation, scaled by 2^−k. Within [`EXP_ERROR`] relatively of libm for
/// every q.
pub fn exp_q11(q: i16) -> f32 {
    let y = (i64::from(q.min(0)).unsigned_abs() as i64 * LOG2E_Q32 + (1 << 22)) >> 23;
    let k = (y + (1 << 20) - 1) >> 20;
    let f = ((k << 20) - y) as u32;
    let (i, r) = ((f >> 12) as usize, u64::from(f & 4095));
    let lo = u64::from(EXP2_TABLE.get(i).copied().unwrap_or(0));
    let hi = u64::from(EXP2_TABLE.get(i + 1).copied().unwrap_or(0));
    let m = (lo * 4096 + (hi - lo) * r + 2048) >> 12;
    m as f32 * pow2f(-30 - k as i32)
}

/// tanh(i/64) in Q15, rounded (32768 for 1).
const TANH_TABLE: [u16; 513] = [
    0, 512, 1024, 1535, 2045, 2555, 3063, 3570, 4075, 4578, 5079, 5577, 6073, 6566, 7056, 7542,
    8025, 8505, 8980, 9452, 9919, 10382, 10840, 11294, 11743, 12186, 12625, 13058, 13486, 13909,
    14326, 14737, 15143, 15542, 15936, 16324, 16706, 17082, 17452, 17816, 18173, 18525, 18870,
    19209, 19542, 19869, 20189, 20504, 20813, 21115, 21411, 21702, 21986, 22265, 22538, 22804,
    23066, 23321, 23571, 23815, 24054, 24287, 24516, 24738, 24956, 25168, 25376, 25578, 25776,
    25969, 26157, 26340, 26519, 26694, 26864, 27029, 27191, 27348, 27502, 27651, 27797, 27938,
    28076, 28211, 28341, 28469, 28592, 28713, 28830, 28944, 29055, 29163, 29268, 29370, 29470,
    29566, 29660, 29751, 29840, 29926, 30010, 30091, 30170, 30247, 30322, 30394, 30465, 30533,
    30600, 30664, 30727, 30788, 30847, 30904, 30960, 31014, 31067, 31118, 31167, 31215, 31262,
    31307, 31351, 31394, 31435, 31476, 31515, 31553, 31589, 31625, 31659, 31693, 31726, 31757,
    31788, 31817, 31846, 31874, 31901, 31928, 31953, 31978, 32002, 32025, 32048, 32070, 32091,
    32112, 32132, 32151, 32170, 32188, 32206, 32223, 32240, 32256, 32271, 32287, 32301, 32316,
    32329, 32343, 32356, 32368, 32381, 32392, 32404, 32415, 32426, 32436, 32447, 32456, 32466,
    32475, 32484, 32493, 32501, 32509, 32517, 32525, 32532, 32540, 32547, 32553, 32560, 32566,
    32573, 32579, 32584, 32590, 32596, 32601, 32606, 32611, 32616, 32620, 32625, 32629, 32634,
    32638, 32642, 32646, 32649, 32653, 32657, 32660, 32663, 32667, 32670, 32673, 32676, 32678,
    32681, 32684, 32686, 32689, 32691, 32694, 32696, 32698, 32700, 32702, 32704, 32706, 32708,
    32710, 32712, 32714, 32715, 32717, 32718, 32720, 32721, 32723, 32724, 32726, 32727, 32728,
    32729, 32731, 32732, 32733, 32734, 32735, 32736, 32737, 32738, 32739, 32740, 32741, 32741,
    32742, 32743, 32744, 32745, 32745, 32746, 32747, 32747, 32748, 32749, 32749, 32750, 32750,
    32751, 32751, 32752, 32752, 32753, 32753, 32754, 32754, 32755, 32755, 32755, 32756, 32756,
    32757, 32757, 32757, 32758, 32758, 32758, 32759, 32759, 32759, 32759, 32760, 32760, 32760,
    32760, 32761, 32761, 32761, 32761, 32762, 32762, 32762, 32762, 32762, 32762, 32763, 32763,
    32763, 32763, 32763, 32763, 32764, 32764, 32764, 32764, 32764, 32764, 32764, 32764, 32765,
    32765, 32765, 32765, 32765, 32765, 32765, 32765, 32765, 32765, 32765, 32766, 32766, 32766,
    32766, 32766, 32766, 32766, 32766, 32766, 32766, 32766, 32766, 32766, 32766, 32766, 32766,
    32767, 32767, 32767, 32767, 32767, 32767, 32767, 32767, 32767, 32767, 32767, 32767, 32767,
    32767, 32767, 32767, 32767, 32767, 32767, 32767, 32767, 32767, 32767, 32767, 32767, 32767,
    32767, 32767, 32767, 32767, 32767, 32767, 32767, 32767, 32767, 32767, 32768, 32768, 32768,
    32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768,
    32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768,
    32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768,
    32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768,
    32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768,
    32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768,
    32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768,
    32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768,
    32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768,
    32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768,
    32768, 32768,
];
/// 2^(i/256) in Q30, rounded.
const EXP2_TABLE: [u32; 257] = [
    1073741824, 1076653033, 1079572136, 1082499153, 1085434106, 1088377016, 1091327906, 1094286796,
    1097253708, 1100228665, 1103211687, 1106202798, 1109202018, 1112209370, 1115224875, 1118248556,
    1121280436, 1124320536, 1127368878, 1130425485, 1133490379, 1136563583, 1139645120, 1142735011,
    1145833280, 1148939949, 1152055042, 1155178580, 1158310587, 1161451085, 1164600099, 1167757650,
    1170923762, 1174098458, 1177281762, 1180473697, 1183674286, 1186883552, 1190101520, 1193328213,
    1196563654, 1199807867, 1203060876, 1206322705, 1209593378, 1212872918, 1216161350, 1219458698,
    1222764986, 1226080238, 1229404479, 1232737732, 1236080024, 1239431376, 1242791816, 1246161366,
    1249540052, 1252927899, 1256324931, 1259731174, 1263146652, 1266571390, 1270005413, 1273448747,
    1276901417, 1280363448, 1283834865, 1287315695, 1290805962, 1294305692, 1297814910, 1301333643,
    1304861917, 1308399756, 1311947188, 1315504238, 1319070932, 1322647296, 1326233356, 1329829140,
    1333434672, 1337049980, 1340675091, 1344310030, 1347954824, 1351609500, 1355274085, 1358948606,
    1362633090, 1366327563, 1370032052, 1373746586, 1377471191, 1381205894, 1384950723, 1388705706,
    1392470869, 1396246240, 1400031848, 1403827719, 1407633882, 1411450365, 1415277195, 1419114401,
    1422962010, 1426820052, 1430688553, 1434567544, 1438457051, 1442357104, 1446267730, 1450188960,
    1454120821, 1458063343, 1462016553, 1465980482, 1469955159, 1473940611, 1477936870, 1481943963,
    1485961921, 1489990772, 1494030547, 1498081275, 1502142985, 1506215708, 1510299473, 1514394310,
    1518500250, 1522617322, 1526745556, 1530884983, 1535035634, 1539197537, 1543370725, 1547555228,
    1551751076, 1555958300, 1560176931, 1564406999, 1568648537, 1572901575, 1577166143, 1581442275,
    1585730000, 1590029350, 1594340357, 1598663052, 1602997467, 1607343634, 1611701585, 1616071351,
    1620452965, 1624846459, 1629251865, 1633669214, 1638098541, 1642539877, 1646993254, 1651458706,
    1655936265, 1660425963, 1664927835, 1669441912, 1673968228, 1678506817, 1683057710, 1687620943,
    1692196547, 1696784557, 1701385007, 1705997930, 1710623359, 1715261330, 1719911875, 1724575029,
    1729250827, 1733939301, 1738640488, 1743354420, 1748081133, 1752820662, 1757573041, 1762338305,
    1767116489, 1771907628, 1776711757, 1781528911, 1786359126, 1791202437, 1796058879, 1800928489,
    1805811301, 1810707353, 1815616678, 1820539314, 1825475297, 1830424663, 1835387448, 1840363688,
    1845353420, 1850356681, 1855373507, 1860403934, 1865448001, 1870505744, 1875577199, 1880662405,
    1885761398, 1890874216, 1896000896, 1901141476, 1906295993, 1911464486, 1916646992, 1921843549,
    1927054196, 1932278970, 1937517909, 1942771053, 1948038440, 1953320108, 1958616096, 1963926443,
    1969251188, 1974590370, 1979944027, 1985312200, 1990694927, 1996092249, 2001504204, 2006930832,
    2012372174, 2017828268, 2023299156, 2028784876, 2034285470, 2039800978, 2045331439, 2050876895,
    2056437387, 2062012954, 2067603638, 2073209480, 2078830522, 2084466803, 2090118366, 2095785251,
    2101467502, 2107165158, 2112878262, 2118606857, 2124350982, 2130110682, 2135885998, 2141676973,
    2147483648,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tables_are_the_rounded_functions() {
        for (i, &t) in TANH_TABLE.iter().enumerate() {
            let want = (libm::tanh(i as f64 / 64.0) * 32768.0).round().min(32768.0);
            assert_eq!(f64::from(t), want, "tanh {i}");
        }
        for (i, &t) in EXP2_TABLE.iter().enumerate() {
            let want = (libm::exp2(i as f64 / 256.0) * 1_073_741_824.0).round();
            assert_eq!(f64::from(t), want, "exp2 {i}");
        }
        assert_eq!(
            LOG2E_Q32 as f64,
            (core::f64::consts::LOG2_E * 4_294_967_296.0).round()
        );
    }

    #[test]
    fn tanh_is_within_its_stated_error_on_every_q12_input() {
        let mut worst = 0.0f64;
        for q in i16::MIN..=i16::MAX {
            let got = f64::from(tanh_q15(q)) / 32768.0;
            let err = (got - libm::tanh(f64::from(q) / 4096.0)).abs();
            worst = worst.max(err);
            assert_eq!(
                tanh_q15(q),
                -tanh_q15(q.saturating_neg()).max(-32767),
                "odd at {q}"
            );
        }
        eprintln!("tanh worst {worst:e} = {} units of 2^-15", worst * 32768.0);
        assert!(worst <= TANH_ERROR, "{worst:e}");
    }

    #[test]
    fn the_sigmoid_is_within_its_stated_error_on_every_q11_input() {
        let mut worst = 0.0f64;
        for q in i16::MIN..=i16::MAX {
            let got = f64::from(sigmoid_q15(q)) / 32768.0;
            let x = f64::from(q) / 2048.0;
            worst = worst.max((got - 1.0 / (1.0 + libm::exp(-x))).abs());
        }
        eprintln!("sigmoid worst {worst:e}");
        assert!(worst <= SIGMOID_ERROR, "{worst:e}");
    }

    #[test]
    fn exp_is_within_its_stated_relative_error_on_every_q11_input() {
        let mut worst = 0.0f64;
        for q in i16::MIN..=0 {
            let got = f64::from(exp_q11(q));
            let want = libm::exp(f64::from(q) / 2048.0);
            worst = worst.max((got / want - 1.0).abs());
        }
        eprintln!("exp worst {worst:e}");
        assert!(worst <= EXP_ERROR, "{worst:e}");
        assert_eq!(exp_q11(0), 1.0);
        assert_eq!(exp_q11(5), 1.0);
    }
}
