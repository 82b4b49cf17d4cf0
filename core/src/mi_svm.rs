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
//! Arithmetic: the scaled query is computed in `f64` exactly as on the host and rounded
//! to `f32`; each squared distance ‖x − y‖² is summed in `f32` over typed rows (no
//! per-element decoding; on a Cortex-M4F the FPU's single-precision instructions, where
//! `f64` is soft-float), e^(−γd²) is `libm::expf` of the `f64` product γd² rounded to
//! `f32`, and the sums over stored instances, bags and the bag's instances are `f64`.
//!
//! Error bound ([`SvmDecision::bound`]), with u = 2⁻²⁴: a stored coordinate y is off the
//! host's by |Δy| ≤ |y|·u (f32), or half its feature's step t plus 2⁻²²(|y| + 2¹⁵t)
//! (quantised: the value and its quotient by t were rounded to f32 before the integer)
//! plus u|y| for the device's `f32` product q·t; so ‖Δy‖ ≤ c‖t‖ + 6u‖y‖ with
//! c = 1/2 + 2⁻⁷ (the triangle inequality over features). The query's rounding adds u‖x‖:
//! ε = u‖x‖ + ‖Δy‖. With S = Σ_j (x̂_j − ŷ_j)² over the rounded values and d̂ its `f32`
//! sum over eight running sums (|d̂ − S| ≤ γ_m·S with m = ⌈D/8⌉ + 4, γ_m = mu/(1 − mu):
//! each term's difference and square rounded once, then at most ⌈D/8⌉ + 2 additions of
//! non-negative terms), Cauchy–Schwarz gives
//! |S − d²_host-exact| ≤ ε(2√S + ε), and ‖y‖ ≤ ‖x̂‖ + √S; the host's own `f64` distance
//! (‖x‖² + ‖y‖² − 2x·y) adds 2(D + 2)·2⁻⁵³(‖x‖² + ‖y‖²). γ times the sum of these, plus
//! 2u·γd̂ for rounding γd̂ to `f32`, is the exponent's error A, so a term moves by at
//! most e^(−γd̂)·(e^A − 1), plus two ulps of `expf` (2⁻²² relative, 2⁻¹²⁰ absolute). The
//! few `f32` operations of this per-pair bound round up by a factor (1 + 2⁻¹⁶) (each
//! operation on non-negative values errs by at most u relative; there are fewer than
//! 30). ω moves by |ω|·2⁻²⁴ (f32) or half its step; the sums of R terms (and the host's
//! log-sum-exp and products) add (R + 16)·2⁻⁵² times Σ|terms| + |b|. A query coordinate
//! beyond `f32`'s range makes the bound infinite (the decision is still computed).

use crate::bag::instance_count;
use crate::container::{le_f32, tag, Elem, Encoding, Section, Sections};
use crate::error::Error;
use crate::svm::SvmDecision;

fn bad(what: &'static str) -> Error {
    Error::BadModel(what)
}

/// γ and b of `KERNEL_PARAMS` (`f64`, 1 × 2), as the MI-kernel SVM and MILES store them.
pub(crate) fn kernel_params(sections: &Sections<'_>) -> Result<(f64, f64), Error> {
    let params = sections.require(tag::KERNEL_PARAMS)?;
    params.expect(Elem::F64, 1, 2)?;
    let (gamma, bias) = (params.f64_at(0), params.f64_at(1));
    if !(gamma > 0.0 && gamma <= MAX_PARAM && bias.abs() <= MAX_PARAM) {
        return Err(bad("γ not in (0, 1e6] or bias not finite and moderate"));
    }
    Ok((gamma, bias))
}

/// `GRID_MIN` as a per-feature affine map (`f64`, 2 × D: an offset and a non-negative
/// scale per feature); `what` is the error when a value is not finite or a scale negative.
pub(crate) fn feature_map<'a>(
    sections: &Sections<'a>,
    dim: usize,
    what: &'static str,
) -> Result<Section<'a>, Error> {
    let map = sections.require(tag::GRID_MIN)?;
    map.expect(Elem::F64, 2, dim)?;
    if (0..2 * dim).any(|i| !map.f64_at(i).is_finite())
        || (0..dim).any(|j| map.f64_at(dim + j) < 0.0)
    {
        return Err(bad(what));
    }
    Ok(map)
}

/// `REF_INSTANCES` (rows × D in the model's encoding) and, when quantised, `REF_SCALE`'s
/// per-feature steps; `what` is the error when the rows have the wrong type or width.
pub(crate) fn stored_instances<'a>(
    sections: &Sections<'a>,
    encoding: Encoding,
    dim: usize,
    what: &'static str,
) -> Result<(Section<'a>, Option<Section<'a>>), Error> {
    let instances = sections.require(tag::REF_INSTANCES)?;
    if instances.elem != encoding.elem() || instances.cols != dim {
        return Err(bad(what));
    }
    let scale = match encoding {
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
    Ok((instances, scale))
}

/// The stored score weights `SCORE_WEIGHTS`: `f32`, or Q15 with one step in
/// `SCORE_SCALE` in both quantised encodings (16-bit in Q7 too, as in the box-kernel SVM,
/// [`crate::svm`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ScoreWeights<'a> {
    values: Section<'a>,
    /// Step of quantised weights.
    step: Option<f64>,
}

impl<'a> ScoreWeights<'a> {
    /// Reads and checks `n` weights.
    pub(crate) fn parse(
        sections: &Sections<'a>,
        encoding: Encoding,
        n: usize,
    ) -> Result<Self, Error> {
        let values = sections.require(tag::SCORE_WEIGHTS)?;
        let step = match encoding {
            Encoding::F32 => {
                values.expect(Elem::F32, 1, n)?;
                values.expect_finite()?;
                if sections.get(tag::SCORE_SCALE).is_some() {
                    return Err(bad("f32 weights with a quantisation scale"));
                }
                None
            }
            _ => {
                values.expect(Elem::I16, 1, n)?;
                if (0..n).any(|r| values.i32_at(r).abs() > Encoding::Q15.q_max()) {
                    return Err(bad("quantised value outside the symmetric range"));
                }
                let s = sections.f32_vec(tag::SCORE_SCALE, 1)?.f64_at(0);
                if s <= 0.0 {
                    return Err(bad("quantisation scale not positive"));
                }
                Some(s)
            }
        };
        Ok(ScoreWeights { values, step })
    }

    /// Weight i and the bound on its storage error: u|w| in `f32`, half a step in Q15.
    pub(crate) fn get(&self, i: usize) -> (f64, f64) {
        match self.step {
            None => {
                let w = f64::from(self.values.f32_at(i));
                (w, libm::fabs(w) * U24)
            }
            Some(s) => (f64::from(self.values.i32_at(i)) * s, s / 2.0),
        }
    }
}

/// 2⁻²⁴: the relative rounding of an f32.
pub(crate) const U24: f64 = 1.0 / 16_777_216.0;

/// c = 1/2 + 2⁻⁷ of ‖Δy‖ ≤ c‖t‖ + 6u‖y‖ for quantised stored instances (t: the steps).
const STEP_SLACK: f64 = 0.5 + 1.0 / 128.0;

/// Rounds a short chain of `f32` operations on non-negative values up: (1 + 2⁻²⁴)³⁰ <
/// 1 + 2⁻¹⁶.
pub(crate) const ROUND_UP: f32 = 1.0 + 1.0 / 65_536.0;

/// `expf`'s error, two ulps, relative: 2⁻²².
pub(crate) const EXPF_ULPS: f32 = 1.0 / 4_194_304.0;

/// An absolute 2⁻¹²⁰ for what rounds below `f32`'s normal range.
pub(crate) const TINY: f32 = 7.523_164e-37;

/// Running sums of a squared distance: feature j goes to sum j mod 8, and the eight are
/// added pairwise, so each term is rounded at most ⌈D/8⌉ + 4 times (its difference, its
/// square, ⌈D/8⌉ − 1 additions in its lane, three in the pairwise total) instead of D + 1.
const LANES: usize = 8;

/// `s` in blocks of `N` as arrays (so loops over a block unroll without bounds checks),
/// and the rest: `slice::as_chunks`, which needs Rust 1.88 (the crate's MSRV is 1.87).
#[inline(always)]
fn blocks<T, const N: usize>(s: &[T]) -> (impl Iterator<Item = &[T; N]>, &[T]) {
    let chunks = s.chunks_exact(N);
    let rest = chunks.remainder();
    (chunks.filter_map(|c| <&[T; N]>::try_from(c).ok()), rest)
}

/// Adds (x_j − q_j·t_j)² to running sum j mod [`LANES`] over a quantised row: integers q
/// of `W` bytes (decoded by `int`; `B` = 8·`W` bytes per block) and the features' `f32`
/// steps t.
#[inline(always)]
fn add_scaled_row<const W: usize, const B: usize>(
    sums: &mut [f32; LANES],
    x: &[f32],
    row: &[u8],
    steps: &[u8],
    int: impl Fn(&[u8; W]) -> f32 + Copy,
) {
    let float = |w: &[u8; 4]| f32::from_le_bytes(*w);
    let (x8, x_rest) = blocks::<_, LANES>(x);
    let (row8, rest) = blocks::<_, B>(row);
    let (steps8, steps_rest) = blocks::<_, { 4 * LANES }>(steps);
    for ((z, r), t) in x8.zip(row8).zip(steps8) {
        let q = blocks::<_, W>(r).0.map(int);
        let t = blocks::<_, 4>(t).0.map(float);
        add_squares(sums, z, q.zip(t).map(|(q, t)| q * t));
    }
    let q = blocks::<_, W>(rest).0.map(int);
    let t = blocks::<_, 4>(steps_rest).0.map(float);
    add_squares(sums, x_rest, q.zip(t).map(|(q, t)| q * t));
}

/// Adds (x_l − y_l)² to running sum l.
#[inline(always)]
fn add_squares(sums: &mut [f32; LANES], x: &[f32], y: impl Iterator<Item = f32>) {
    for ((s, &z), y) in sums.iter_mut().zip(x).zip(y) {
        *s += (z - y) * (z - y);
    }
}

/// ‖x − y_t‖² summed in `f32` against stored instance t of `instances` (its row decoded
/// as it is read: floats, or integers times their feature's step in `scale`), over
/// [`LANES`] running sums that eight features at a time keep in registers.
pub(crate) fn sq_dist(
    instances: &Section<'_>,
    scale: Option<Section<'_>>,
    t: usize,
    x: &[f32],
) -> f32 {
    let row = instances.row_bytes(t);
    let mut sums = [0.0f32; LANES];
    match (scale, instances.elem) {
        (None, _) => {
            let (x8, x_rest) = blocks::<_, LANES>(x);
            let (row8, rest) = blocks::<_, { 4 * LANES }>(row);
            let float = |w: &[u8; 4]| f32::from_le_bytes(*w);
            for (z, r) in x8.zip(row8) {
                add_squares(&mut sums, z, blocks::<_, 4>(r).0.map(float));
            }
            add_squares(&mut sums, x_rest, rest.chunks_exact(4).map(le_f32));
        }
        (Some(steps), Elem::I16) => {
            add_scaled_row::<2, { 2 * LANES }>(&mut sums, x, row, steps.bytes, |q| {
                f32::from(i16::from_le_bytes(*q))
            })
        }
        (Some(steps), _) => {
            add_scaled_row::<1, LANES>(&mut sums, x, row, steps.bytes, |&[q]| f32::from(q as i8))
        }
    }
    let [a, b, c, d, e, f, g, h] = sums;
    ((a + b) + (c + d)) + ((e + f) + (g + h))
}

/// The per-model constants of the bound on one squared distance (module documentation):
/// how far the device's ‖x̂ − ŷ‖² (`f32`, [`sq_dist`]) can be from the host's `f64`
/// ‖x − y‖² of the unrounded values.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DistanceBound {
    /// γ_m of the `f32` sum.
    g_sum: f32,
    /// 1/(1 − γ_m): S ≤ d̂ / (1 − γ_m).
    sum_inflation: f32,
    /// 2(D + 2)·2⁻⁵³: the host's own `f64` distance.
    host_rounding: f32,
    /// c‖t‖ of quantised stored coordinates (0 in `f32`).
    dy_fixed: f32,
    /// The relative error of a stored coordinate.
    dy_rel: f32,
}

impl DistanceBound {
    /// The constants for D features stored as `scale` says (`None`: `f32`).
    pub(crate) fn new(d: usize, scale: Option<Section<'_>>) -> Self {
        const U53: f64 = f64::EPSILON / 2.0;
        let rounds = d.div_ceil(LANES) as f64 + 4.0;
        let g_sum = if rounds * U24 < 0.5 {
            (rounds * U24 / (1.0 - rounds * U24)) as f32
        } else {
            f32::INFINITY
        };
        let (dy_fixed, dy_rel) = match scale {
            None => (0.0, U24 as f32),
            Some(steps) => {
                let norm = libm::sqrt(
                    steps
                        .f32s()
                        .iter()
                        .map(|t| f64::from(t) * f64::from(t))
                        .sum(),
                );
                ((STEP_SLACK * norm) as f32, 6.0 * U24 as f32)
            }
        };
        DistanceBound {
            g_sum,
            sum_inflation: 1.0 / (1.0 - g_sum),
            host_rounding: (2.0 * (d as f64 + 2.0) * U53) as f32,
            dy_fixed,
            dy_rel,
        }
    }

    /// The bound on |d̂ − d²_host| for the device's `d2` = d̂ against a query of norm
    /// `x_norm` (‖x‖ of the scaled query before its rounding to `f32`), before the final
    /// rounding up by [`ROUND_UP`].
    #[inline(always)]
    pub(crate) fn error(&self, d2: f32, x_norm: f32) -> f32 {
        // x + (−0) is x for every x: the shift's terms fold away.
        self.error_shifted(d2, x_norm, -0.0)
    }

    /// [`DistanceBound::error`] for a query whose `f64` value on the device is within
    /// `shift` of the host's (‖x' − x‖ ≤ `shift`, MILES's `f32` inverse standard
    /// deviations, [`crate::miles`]): the query's share of ε grows by `shift`, and the
    /// host's ‖x‖ is taken as `x_norm` + `shift`.
    #[inline(always)]
    pub(crate) fn error_shifted(&self, d2: f32, x_norm: f32, shift: f32) -> f32 {
        let u = U24 as f32;
        // ‖x̂‖ ≤ (1 + u)‖x‖, and the query's share of ε.
        let (x_hat_norm, x_eps) = (x_norm * (1.0 + u), u * x_norm + shift);
        let s = d2 * self.sum_inflation;
        let root = libm::sqrtf(s);
        let y_norm = x_hat_norm + root;
        let eps = x_eps + self.dy_fixed + self.dy_rel * y_norm;
        self.g_sum * s
            + eps * (2.0 * root + eps)
            + self.host_rounding
                * ((x_norm + shift) * (x_norm + shift) + (y_norm + eps) * (y_norm + eps))
    }
}

/// Largest γ and |b| a model may state.
pub(crate) const MAX_PARAM: f64 = 1e6;

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
    weights: ScoreWeights<'a>,
}

impl<'a> MiKernelSvm<'a> {
    pub(crate) fn from_sections(
        sections: &Sections<'a>,
        encoding: Encoding,
        dim: usize,
    ) -> Result<Self, Error> {
        let (gamma, bias) = kernel_params(sections)?;
        let minmax = feature_map(
            sections,
            dim,
            "min-max map not finite or with a negative range",
        )?;
        let (instances, instance_scale) = stored_instances(
            sections,
            encoding,
            dim,
            "stored instances have the wrong type or width",
        )?;
        let bags = sections.require(tag::REF_BAGS)?;
        let n_bags = bags.len().checked_sub(1).ok_or(bad("no stored bags"))?;
        bags.expect(Elem::U32, 1, n_bags + 1)?;
        if n_bags == 0 || bags.u32_at(0) != 0 || bags.u32_at(n_bags) as usize != instances.rows {
            return Err(bad("stored bag boundaries do not cover the instances"));
        }
        if (0..n_bags).any(|b| bags.u32_at(b + 1) <= bags.u32_at(b)) {
            return Err(bad("a stored bag is empty"));
        }
        let weights = ScoreWeights::parse(sections, encoding, n_bags)?;
        Ok(MiKernelSvm {
            gamma,
            bias,
            minmax,
            instances,
            instance_scale,
            bags,
            weights,
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

    /// ‖x − y_t‖² against stored instance t ([`sq_dist`]).
    fn sq_dist(&self, t: usize, x: &[f32]) -> f32 {
        sq_dist(&self.instances, self.instance_scale, t, x)
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

    /// The decision on one bag of raw features (row-major, `n × D`, `n ≥ 1`, finite), with
    /// the witness: the first instance of largest contribution g(x). `scratch` holds the
    /// scaled instance: at least D values.
    pub fn decide(&self, bag: &[f64], scratch: &mut [f32]) -> Result<SvmDecision, Error> {
        let d = self.dim();
        let n = instance_count(bag.len(), d)?;
        if !bag.iter().all(|v| v.is_finite()) {
            return Err(Error::InvalidParameter("a feature value is not finite"));
        }
        let got = scratch.len();
        let x = scratch
            .get_mut(..d)
            .ok_or(Error::BufferTooSmall { needed: d, got })?;
        let bound = DistanceBound::new(d, self.instance_scale);
        let (gamma, u) = (self.gamma, U24 as f32);
        let (mut value, mut error, mut magnitude) = (self.bias, 0.0, libm::fabs(self.bias));
        let mut witness = (0, f64::NEG_INFINITY);
        for i in 0..n {
            let row = bag.get(i * d..(i + 1) * d).ok_or(Error::Empty)?;
            let mut x_norm_sq = 0.0;
            for (j, (z, &v)) in x.iter_mut().zip(row).enumerate() {
                let scaled = self.scaled(j, v);
                x_norm_sq += scaled * scaled;
                *z = scaled as f32;
            }
            let x_norm = libm::sqrt(x_norm_sq) as f32;
            let mut g = 0.0;
            for r in 0..self.n_bags() {
                let (a, b) = (
                    self.bags.u32_at(r) as usize,
                    self.bags.u32_at(r + 1) as usize,
                );
                let (mut k, mut k_err) = (0.0, 0.0);
                for t in a..b {
                    let d2 = self.sq_dist(t, x);
                    let exponent = (gamma * f64::from(d2)) as f32;
                    let e = libm::expf(-exponent);
                    // The exponent's error A (module documentation), in f32 rounded up.
                    let distance = bound.error(d2, x_norm);
                    let a = ((gamma * f64::from(distance)) as f32 + 2.0 * u * exponent) * ROUND_UP
                        + TINY;
                    // e^A − 1 ≤ A(1 + A) for A ≤ 1.
                    let grown = if a <= 1.0 {
                        a * (1.0 + a)
                    } else {
                        libm::expm1f(a) * ROUND_UP
                    };
                    k += f64::from(e);
                    k_err += f64::from((e + TINY) * (grown + EXPF_ULPS) * ROUND_UP + TINY);
                }
                let (w, dw) = self.weights.get(r);
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
        // ∞ · 0 (a zero weight on an unbounded term) is no bound at all.
        let bound = if bound.is_nan() { f64::INFINITY } else { bound };
        Ok(SvmDecision {
            label: usize::from(value > 0.0),
            value,
            bound,
            witness: Some(witness.0),
        })
    }
}
