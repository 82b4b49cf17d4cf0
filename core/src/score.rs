//! Bag scoring with linear instance scores on projected instances (MILR, MI-ALM):
//! z_i = W y_i + c per instance, instance probabilities, then pooling over the bag.
//!
//! Each score row is one binary problem: p_i = σ(z_i) and the bag's P(positive) is
//! pooled. A binary model has one row and scores `[1 − P, P]`; a multi-class model has
//! one row per class (one-vs-rest, as the host's MILR fits it) and scores `[P_0, …]`.
//! The label is the first class of largest score (binary: positive when P > ½).
//!
//! Poolings (n instances): `Max` P = maxᵢ pᵢ; `Mean` P = meanᵢ pᵢ; `Geometric`
//! P = σ(meanᵢ zᵢ) (Weka's MILR); `Softmax` (Ray & Craven, β) P = Σᵢ pᵢ e^(βpᵢ) /
//! Σᵢ e^(βpᵢ); `NoisyOr` P = 1 − Πᵢ(1 − pᵢ), in log space.
//!
//! Error bound of the pooled scores: if every instance score is off by at most e,
//! every pooled score is off by at most L·e with L = [`Pooling::lipschitz`]: an instance
//! probability moves by at most e/4 (σ is ¼-Lipschitz); max and mean are 1-Lipschitz in
//! the probabilities, the geometric mean is σ of a mean of logits (¼), Ray & Craven's
//! softmax is (1+β)-Lipschitz in the probabilities, noisy-OR n-Lipschitz.

use crate::bag::{argmax_first, instance_count, Decision, Instances};
use crate::container::{tag, Elem, Encoding, Section, Sections};
use crate::error::Error;
use crate::project::Stage;
use crate::weights::{Q15Row, Q7Layout, Weights};

/// Bags up to this many instances get a witness under max pooling: every index below
/// 2²⁴ is exact in f32, where the pooling state keeps it.
const WITNESS_LIMIT: usize = 1 << 24;

/// How instance probabilities become a bag probability.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "kebab-case")
)]
pub enum Pooling {
    /// Largest instance probability.
    Max = 0,
    /// Ray & Craven's softmax with sharpness β.
    Softmax = 1,
    /// Arithmetic mean of instance probabilities.
    Mean = 2,
    /// Normalised geometric mean (σ of the mean logit when binary).
    Geometric = 3,
    /// 1 − Π(1 − pᵢ).
    NoisyOr = 4,
}

impl Pooling {
    /// The pooling with this code.
    pub fn from_code(code: u32) -> Option<Self> {
        match code {
            0 => Some(Pooling::Max),
            1 => Some(Pooling::Softmax),
            2 => Some(Pooling::Mean),
            3 => Some(Pooling::Geometric),
            4 => Some(Pooling::NoisyOr),
            _ => None,
        }
    }

    /// L such that pooled scores move by at most L·e when every instance score moves by at
    /// most e (module documentation); `n` instances, `beta` of the softmax.
    pub fn lipschitz(self, n: usize, beta: f32) -> f32 {
        match self {
            Pooling::Max | Pooling::Mean | Pooling::Geometric => 0.25,
            Pooling::Softmax => 0.25 * (1.0 + beta.abs()),
            Pooling::NoisyOr => 0.25 * n as f32,
        }
    }
}

/// `v` split after `n` elements (all of it and nothing when shorter): callers size
/// their buffers first, so this never shortens one that matters, and it cannot panic.
pub(crate) fn split<T>(v: &mut [T], n: usize) -> (&mut [T], &mut [T]) {
    let at = n.min(v.len());
    v.split_at_mut(at)
}

/// `log(1 + e^z)` without overflow.
fn softplus(z: f32) -> f32 {
    if z > 0.0 {
        z + libm::log1pf(libm::expf(-z))
    } else {
        libm::log1pf(libm::expf(z))
    }
}

/// The logistic function.
pub fn sigmoid(z: f32) -> f32 {
    if z >= 0.0 {
        1.0 / (1.0 + libm::expf(-z))
    } else {
        let e = libm::expf(z);
        e / (1.0 + e)
    }
}

/// The linear scorer of a [`crate::ModelKind::LinearMil`] model. Its `PARAMS` section
/// holds `[pooling code, β]`.
#[derive(Debug, Clone, Copy)]
pub struct LinearScorer<'a> {
    weights: Weights<'a>,
    bias: Section<'a>,
    pooling: Pooling,
    beta: f32,
    /// A one-row, one-column quantised scorer's weight, scale and bias, decoded at parse.
    one_weight: Option<OneWeight>,
}

/// The single quantised weight of a 1 × 1 scorer (a folded model's), decoded once: its
/// logit is [`Weights::dot_f32`] of the one value plus the bias, bit for bit.
#[derive(Debug, Clone, Copy)]
struct OneWeight {
    value: f32,
    scale: f32,
    bias: f32,
}

impl OneWeight {
    /// The logit of a projected value `y`: the same one-term `sum()` and scale as
    /// [`Weights::dot_f32`], then the bias.
    #[inline(always)]
    fn logit(&self, y: f32) -> f32 {
        let sum: f32 = core::iter::once(self.value * y).sum();
        sum * self.scale + self.bias
    }
}

impl<'a> LinearScorer<'a> {
    pub(crate) fn from_sections(
        sections: &Sections<'a>,
        encoding: Encoding,
        d: usize,
    ) -> Result<Self, Error> {
        let rows = sections.require(tag::SCORE_WEIGHTS)?.rows;
        if rows == 0 {
            return Err(Error::BadModel("scorer with no rows"));
        }
        let weights = Weights::from_sections(
            sections,
            encoding,
            tag::SCORE_WEIGHTS,
            tag::SCORE_SCALE,
            None,
            (rows, d),
            Q7Layout::Rows,
        )?;
        let bias = sections.f32_vec(tag::SCORE_BIAS, rows)?;
        let params = sections.require(tag::PARAMS)?;
        params.expect(Elem::F32, 1, 2)?;
        params.expect_finite()?;
        let code = params.f32_at(0);
        let pooling = if code >= 0.0 && code == libm::floorf(code) {
            Pooling::from_code(code as u32)
        } else {
            None
        }
        .ok_or(Error::BadModel("unknown pooling"))?;
        let one_weight = match (rows, d, weights.scale) {
            (1, 1, Some(scale)) => Some(OneWeight {
                value: weights.values.f32_at(0),
                scale: scale.f32_at(0),
                bias: bias.f32_at(0),
            }),
            _ => None,
        };
        Ok(LinearScorer {
            weights,
            bias,
            pooling,
            beta: params.f32_at(1),
            one_weight,
        })
    }

    /// Number of classes (2 for a one-row binary scorer).
    pub fn n_classes(&self) -> usize {
        match self.weights.rows() {
            1 => 2,
            r => r,
        }
    }

    /// The pooling.
    pub fn pooling(&self) -> Pooling {
        self.pooling
    }

    /// Softmax sharpness β.
    pub fn beta(&self) -> f32 {
        self.beta
    }

    /// Scores an `n`-instance bag; `scratch` holds d + 3C' values, `scores` C values.
    pub(crate) fn score_bag(
        &self,
        stage: &Stage<'_>,
        bag: Instances<'_>,
        n: usize,
        scratch: &mut [f32],
        scores: &mut [f32],
    ) -> Result<Decision, Error> {
        let d = self.weights.cols();
        let r = self.weights.rows();
        let needed = d + 3 * r;
        let classes = self.n_classes();
        if scratch.len() < needed || scores.len() < classes {
            return Err(Error::BufferTooSmall {
                needed,
                got: scratch.len(),
            });
        }
        let (y, rest) = split(scratch, d);
        let (z, rest) = split(rest, r);
        let (a, rest) = split(rest, r);
        let (b, _) = split(rest, r);
        let start = match self.pooling {
            Pooling::Max => f32::NEG_INFINITY,
            _ => 0.0,
        };
        a.iter_mut().for_each(|v| *v = start);
        // Max pooling: −1 (no witness) until a logit beats −∞ (a NaN never does).
        let b_start = match self.pooling {
            Pooling::Max => -1.0,
            _ => 0.0,
        };
        b.iter_mut().for_each(|v| *v = b_start);
        // A folded Q15 model (one projection row, one score row of one weight): each
        // instance is one dot product, the row decoded once per bag and the score weight
        // at parse — the same arithmetic as the general loop, bit for bit (tested).
        if let (Instances::I16(x), Some(row), Some(one), [a0], [b0]) =
            (bag, stage.single_row(), self.one_weight, &mut *a, &mut *b)
        {
            (*a0, *b0) = self.pool_folded(x, n, stage.input_dim(), row, one, (*a0, *b0));
        } else {
            self.accumulate_bag(stage, bag, n, y, z, a, b)?;
        }
        self.finish(n, a, b, scores)
    }

    /// The pooling state `(a, b)` after the `n` instances of `x` (`d_in` values each) of
    /// a folded Q15 model: its one projection row and bias, then its one score weight,
    /// two instances at a time sharing the reads of the row.
    fn pool_folded(
        &self,
        x: &[i16],
        n: usize,
        d_in: usize,
        (row, row_bias): (Q15Row<'_>, f32),
        one: OneWeight,
        (mut a, mut b): (f32, f32),
    ) -> (f32, f32) {
        let d_in = d_in.max(1);
        let x = x.get(..n * d_in).unwrap_or(x);
        let pairs = x.chunks_exact((2 * d_in).max(2));
        let last = pairs.remainder();
        for (p, two) in pairs.enumerate() {
            let (x0, x1) = two.split_at_checked(d_in).unwrap_or_default();
            let (y0, y1) = row.dot_twice(x0, x1);
            self.accumulate(one.logit(y0 + row_bias), 2 * p, &mut a, &mut b);
            self.accumulate(one.logit(y1 + row_bias), 2 * p + 1, &mut a, &mut b);
        }
        if !last.is_empty() {
            self.accumulate(one.logit(row.dot(last) + row_bias), n - 1, &mut a, &mut b);
        }
        (a, b)
    }

    /// The pooling state (`a`, `b`) of an `n`-instance bag, one instance at a time through
    /// the stage into `y`, its logits into `z`.
    #[allow(clippy::too_many_arguments)]
    fn accumulate_bag(
        &self,
        stage: &Stage<'_>,
        bag: Instances<'_>,
        n: usize,
        y: &mut [f32],
        z: &mut [f32],
        a: &mut [f32],
        b: &mut [f32],
    ) -> Result<(), Error> {
        for i in 0..n {
            stage.project_instance(bag, i, y)?;
            for ((c, zc), bias) in z.iter_mut().enumerate().zip(self.bias.f32s()) {
                *zc = self.weights.dot_f32(c, y) + bias;
            }
            for ((&zc, ac), bc) in z.iter().zip(a.iter_mut()).zip(b.iter_mut()) {
                self.accumulate(zc, i, ac, bc);
            }
        }
        Ok(())
    }

    /// The scores and decision from the pooling state of an `n`-instance bag.
    fn finish(
        &self,
        n: usize,
        a: &[f32],
        b: &[f32],
        scores: &mut [f32],
    ) -> Result<Decision, Error> {
        let (r, classes) = (self.weights.rows(), self.n_classes());
        let (scores, _) = split(scores, classes);
        // Max pooling leaves `b` free: it holds each row's witness index, exact in f32
        // below 2²⁴ instances (no bag comes near; beyond, no witness is named).
        let witness = |row: usize| match self.pooling {
            Pooling::Max if n <= WITNESS_LIMIT => b
                .get(row)
                .filter(|w| w.is_finite() && **w >= 0.0)
                .map(|&w| w as usize),
            _ => None,
        };
        let nf = n as f32;
        let pooled = |a: f32, b: f32| match self.pooling {
            // σ is monotone: the largest probability is σ of the largest logit.
            Pooling::Max => sigmoid(a),
            Pooling::Mean => a / nf,
            Pooling::Geometric => sigmoid(a / nf),
            Pooling::Softmax => a / b,
            Pooling::NoisyOr => -libm::expm1f(a),
        };
        if let (1, [s0, s1]) = (r, &mut *scores) {
            let p = pooled(
                a.first().copied().unwrap_or(0.0),
                b.first().copied().unwrap_or(0.0),
            );
            (*s0, *s1) = (1.0 - p, p);
            // Ties go to the first class, as the host's argmax does.
            let (label, _) = argmax_first(scores);
            return Ok(Decision {
                label,
                score: p,
                witness: witness(0),
            });
        }
        for ((s, &ac), &bc) in scores.iter_mut().zip(a.iter()).zip(b.iter()) {
            *s = pooled(ac, bc);
        }
        let (label, score) = argmax_first(scores);
        Ok(Decision {
            label,
            score,
            witness: witness(label),
        })
    }

    /// Adds the logit `z` of instance `i` to the pooling state (`a`, `b`) of its row; for
    /// max pooling `b` keeps the first instance of largest logit.
    #[inline(always)]
    fn accumulate(&self, z: f32, i: usize, a: &mut f32, b: &mut f32) {
        match self.pooling {
            Pooling::Max => {
                if z > *a {
                    *a = z;
                    *b = i as f32;
                }
            }
            Pooling::Mean => *a += sigmoid(z),
            Pooling::Geometric => *a += z,
            Pooling::Softmax => {
                let p = sigmoid(z);
                let e = libm::expf(self.beta * p);
                *a += p * e;
                *b += e;
            }
            Pooling::NoisyOr => *a -= softplus(z), // log(1 − p) = −softplus(z)
        }
    }

    /// Bound on the error of instance score `c` computed from the projected instance `y`
    /// whose coordinates are each off by at most `e_y[k]`:
    /// Σ_k t_c(|q_ck| + ½)·e_k (true weights, |w| ≤ t(|q| + ½)) + (t_c/2)·Σ_k |y_k| (weight
    /// rounding) + 4ε·(Σ_k |w_ck y_k| + |b_c|) (`f32` rounding). For f32 models t_c = 0
    /// and the weights are exact, leaving Σ_k |w_ck|·e_k plus the rounding term.
    pub fn logit_error_bound(&self, c: usize, y: &[f32], e_y: &[f32]) -> f32 {
        let d = self.weights.cols();
        let t = self.weights.scale.map_or(0.0, |s| s.f32_at(c));
        let mut prop = 0.0;
        let mut mag = 0.0;
        let mut y_sum = 0.0;
        for (k, (&yk, &ek)) in y.iter().zip(e_y).take(d).enumerate() {
            let w = self.weights.get(c, k).abs();
            prop += (w + 0.5 * t) * ek;
            mag += w * yk.abs();
            y_sum += yk.abs();
        }
        prop + 0.5 * t * y_sum + 4.0 * f32::EPSILON * (mag + self.bias.f32_at(c).abs())
    }
}

/// The parts of a [`crate::ModelKind::LinearMil`] model that [`bag_score_bound`] reads;
/// a `&`[`crate::Model`] converts into it (or fails with [`Error::WrongModelKind`]).
#[derive(Debug, Clone, Copy)]
pub struct LinearMil<'m, 'a> {
    /// The projection stage in front of the scorer.
    pub stage: &'m Stage<'a>,
    /// The scorer.
    pub scorer: &'m LinearScorer<'a>,
}

/// The stated bound on the pooled scores of a quantised [`crate::ModelKind::LinearMil`]
/// model for a quantised bag (projection bound, then [`LinearScorer::logit_error_bound`],
/// then [`Pooling::lipschitz`]). `scratch` needs 2·d values. `model` is a
/// `&`[`crate::Model`] (through [`LinearMil`], so that this module need not know the
/// model).
pub fn bag_score_bound<'m, 'a: 'm>(
    model: impl TryInto<LinearMil<'m, 'a>, Error = Error>,
    bag: &[i16],
    scratch: &mut [f32],
) -> Result<f32, Error> {
    let LinearMil { stage, scorer: s } = model.try_into()?;
    let p = stage.projection().ok_or(Error::WrongModelKind)?;
    let n = instance_count(bag.len(), stage.input_dim())?;
    let (d_in, d) = (p.input_dim(), p.output_dim());
    if scratch.len() < 2 * d {
        return Err(Error::BufferTooSmall {
            needed: 2 * d,
            got: scratch.len(),
        });
    }
    let (y, e) = scratch.split_at_mut(d);
    let mut worst: f32 = 0.0;
    for i in 0..n {
        let x = bag.get(i * d_in..(i + 1) * d_in).ok_or(Error::Empty)?;
        p.apply(Instances::I16(x), y)?;
        for (k, ek) in e.iter_mut().take(d).enumerate() {
            *ek = p.error_bound(k, x);
        }
        for c in 0..s.weights.rows() {
            worst = worst.max(s.logit_error_bound(c, y, &e[..d]));
        }
    }
    Ok(s.pooling.lipschitz(n, s.beta) * worst)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sigmoid_and_softplus_exact_values() {
        assert_eq!(sigmoid(0.0), 0.5);
        assert!((sigmoid(2.0) - 0.880_797_1).abs() < 1e-6);
        assert!((sigmoid(-2.0) - 0.119_202_92).abs() < 1e-6);
        assert_eq!(sigmoid(-200.0), 0.0);
        assert_eq!(sigmoid(200.0), 1.0);
        assert!((softplus(0.0) - core::f32::consts::LN_2).abs() < 1e-7);
        assert_eq!(softplus(200.0), 200.0);
        assert!(softplus(-200.0) >= 0.0);
    }

    /// A one-row quantised stage (`dim` weights in `encoding`) and a 1 × 1 scorer, as a
    /// folded model exports them, with random weights from `seed`.
    fn folded_parts(
        encoding: Encoding,
        dim: usize,
        pooling: Pooling,
        seed: u64,
        out: &mut [u8],
    ) -> usize {
        use crate::container::{write, Payload};
        let mut state = seed;
        let mut next = move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) as i32
        };
        let q_max = encoding.q_max();
        let w: [i32; 64] = core::array::from_fn(|_| next() % (q_max + 1));
        let w = &w[..dim];
        let mut bytes = [0u8; 128];
        for (j, &v) in w.iter().enumerate() {
            match encoding {
                Encoding::Q7 => bytes[j] = v as i8 as u8,
                _ => bytes[2 * j..2 * j + 2].copy_from_slice(&(v as i16).to_le_bytes()),
            }
        }
        let abs_sum = w.iter().map(|v| u64::from(v.unsigned_abs())).sum();
        let shift = crate::fixed::safe_shift(abs_sum) + (next() % 3) as u32;
        let f = |v: f32| v.to_le_bytes();
        let (scale, bias) = (f(1.3e-6), f(-0.37));
        let shift = shift.to_le_bytes();
        let score_w = ((next() % (q_max + 1)) as i16).to_le_bytes();
        let score_w = match encoding {
            Encoding::Q7 => &score_w[..1],
            _ => &score_w[..],
        };
        let (score_scale, score_bias) = (f(0.021), f(0.4));
        let params: [u8; 8] =
            core::array::from_fn(|b| [f(pooling as u32 as f32), f(2.5)][b / 4][b % 4]);
        let elem = encoding.elem();
        let one = |tag, elem, bytes| Payload {
            tag,
            elem,
            rows: 1,
            cols: 1,
            bytes,
        };
        let sections = [
            Payload {
                tag: tag::PROJ_WEIGHTS,
                elem,
                rows: 1,
                cols: dim,
                bytes: &bytes[..dim * elem.size()],
            },
            one(tag::PROJ_SCALE, Elem::F32, &scale),
            one(tag::PROJ_SHIFT, Elem::U32, &shift),
            one(tag::PROJ_BIAS, Elem::F32, &bias),
            one(tag::SCORE_WEIGHTS, elem, score_w),
            one(tag::SCORE_SCALE, Elem::F32, &score_scale),
            one(tag::SCORE_BIAS, Elem::F32, &score_bias),
            Payload {
                tag: tag::PARAMS,
                elem: Elem::F32,
                rows: 1,
                cols: 2,
                bytes: &params,
            },
        ];
        write(
            out,
            crate::ModelKind::LinearMil,
            encoding,
            dim,
            2,
            &sections,
        )
        .unwrap()
    }

    #[test]
    fn the_folded_path_scores_like_the_instance_loop() {
        // The per-bag path of a one-row stage and a 1 × 1 scorer against the general
        // instance loop, bit for bit: every pooling, both encodings, lengths around the
        // DSP loops' multiples of 2 and 4, random bags with the extremes of i16.
        use crate::container::{parse, VERSION};
        use crate::project::Projection;
        let poolings = [
            Pooling::Max,
            Pooling::Softmax,
            Pooling::Mean,
            Pooling::Geometric,
            Pooling::NoisyOr,
        ];
        let mut state = 7u64;
        let mut next = move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 48) as u16 as i16
        };
        let mut checked = 0;
        for encoding in [Encoding::Q15, Encoding::Q7] {
            for dim in [1, 2, 3, 4, 5, 7, 8, 9, 17, 64] {
                for (p, &pooling) in poolings.iter().enumerate() {
                    let mut model = [0u8; 512];
                    let len =
                        folded_parts(encoding, dim, pooling, (dim * 5 + p) as u64, &mut model);
                    let (_, sections) = parse(&model[..len]).unwrap();
                    let projection =
                        Projection::from_sections(&sections, encoding, VERSION, dim).unwrap();
                    let stage = Stage::new(Some(projection), dim);
                    // The per-bag path is the Q15 one; Q7 takes the general loop.
                    assert_eq!(projection.single_row().is_some(), encoding == Encoding::Q15);
                    let scorer = LinearScorer::from_sections(&sections, encoding, 1).unwrap();
                    for n in 1..6 {
                        let mut bag = [0i16; 6 * 64];
                        for (k, v) in bag.iter_mut().enumerate().take(n * dim) {
                            *v = match k % 11 {
                                0 => i16::MIN,
                                1 => i16::MAX,
                                _ => next(),
                            };
                        }
                        let bag = Instances::I16(&bag[..n * dim]);
                        let (mut scratch, mut fused) = ([0f32; 4], [0f32; 2]);
                        let got = scorer
                            .score_bag(&stage, bag, n, &mut scratch, &mut fused)
                            .unwrap();
                        // The general loop over the same scratch layout: y, z, a, b.
                        let mut scratch = [0f32; 4];
                        let (y, rest) = scratch.split_at_mut(1);
                        let (z, rest) = rest.split_at_mut(1);
                        let (a, b) = rest.split_at_mut(1);
                        let start = if pooling == Pooling::Max {
                            f32::NEG_INFINITY
                        } else {
                            0.0
                        };
                        a[0] = start;
                        b[0] = if pooling == Pooling::Max { -1.0 } else { 0.0 };
                        scorer.accumulate_bag(&stage, bag, n, y, z, a, b).unwrap();
                        let mut general = [0f32; 2];
                        let want = scorer.finish(n, a, b, &mut general).unwrap();
                        assert_eq!(got, want, "{encoding:?} dim {dim} {pooling:?} n {n}");
                        assert_eq!(
                            fused.map(f32::to_bits),
                            general.map(f32::to_bits),
                            "{encoding:?} dim {dim} {pooling:?} n {n}"
                        );
                        checked += 1;
                    }
                }
            }
        }
        assert_eq!(checked, 2 * 10 * 5 * 5);
    }

    #[test]
    fn lipschitz_constants() {
        assert_eq!(Pooling::Max.lipschitz(5, 3.0), 0.25);
        assert_eq!(Pooling::Softmax.lipschitz(5, 3.0), 1.0);
        assert_eq!(Pooling::NoisyOr.lipschitz(5, 3.0), 1.25);
    }
}
