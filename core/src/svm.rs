//! An SVM over bags with a box-counting set kernel (Tao et al., *Kernels for Generalized
//! Multiple-Instance Learning*, TPAMI 2008, §8), run on stored bags with the core's own
//! estimators ([`crate::box_kernel`]).
//!
//! The host trains on the subpolynomial map φ(k) = k^ρ of §5.3, optionally followed by
//! the empirical kernel map. Either way the decision on a new bag x is linear in φ of its
//! kernel values against a set of stored bags r:
//!
//! f(x) = Σ_r ω_r · exp(ρ · ln k(x, r) − T) + b,
//!
//! with the stored bags the support bags and ω_r = α_r y_r e^T / c (plain φ, c the
//! kernel's conditioning constant), or all training bags and ω_r = Σ_t α_t y_t φ(k(t, r))
//! e^T / c (empirical map). The offset T (ρ times the largest training ln k(t, t)) keeps
//! ω and the exponentials near 1 where k itself (up to ~10⁶⁰⁰ on Musk) has no float.
//!
//! The new bag is discretised onto the training grid (§2), and each ln k(x, r) estimated
//! to the model's (ε, δ) with a generator seeded by the pair (hash of x, hash of r)
//! ([`crate::box_kernel::seeds`]): the host's saved model draws the same numbers, so host
//! and device estimates are identical and only ω's storage differs. [`SvmDecision::bound`]
//! states that difference: |f_device − f_host| ≤ Σ_r |Δω_r| · e_r + γ (Σ_r |ω_r| e_r + |b|)
//! with e_r = exp(ρ ln k(x, r) − T), |Δω_r| ≤ |ω_r| 2⁻²⁴ (f32) or half the quantisation
//! step (Q15, Q7), and γ = (R + 8) 2⁻⁵² for the f64 rounding of both sides' sums of R
//! terms (each term within a few ulps: the same ln k, one exp, one or two products).

use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::bag::instance_count;
use crate::box_kernel::discretize::{cell, check_precision};
use crate::box_kernel::seeds::{bag_hash, pair_seed};
use crate::box_kernel::{estimate, scratch_len, Accuracy, BoxKernel, Grid, Method, Scratch};
use crate::container::{tag, Elem, Encoding, Section, Sections};
use crate::error::Error;

/// Largest |T| and |b| a model may state (beyond them exp overflows f64 anyway).
const MAX_OFFSET: f64 = 1e6;

/// Container code of a set kernel (`KERNEL_CONFIG[0]`).
pub fn kernel_code(kernel: BoxKernel) -> u32 {
    match kernel {
        BoxKernel::And => 1,
        BoxKernel::AndOr => 2,
        BoxKernel::Min => 3,
        BoxKernel::Or => 4,
    }
}

/// Container code of an estimator (`KERNEL_CONFIG[1]`).
pub fn method_code(method: Method) -> u32 {
    match method {
        Method::Fast => 0,
        Method::Paper => 1,
    }
}

/// A parsed set-kernel SVM (model kind [`crate::ModelKind::SetKernelSvm`]).
#[derive(Debug, Clone, Copy)]
pub struct SetKernelSvm<'a> {
    kernel: BoxKernel,
    method: Method,
    accuracy: Accuracy,
    precision: i32,
    seed: u64,
    rho: f64,
    log_offset: f64,
    bias: f64,
    grid_min: Section<'a>,
    grid_size: Section<'a>,
    points: Section<'a>,
    bags: Section<'a>,
    weights: Section<'a>,
    weight_scale: Option<f64>,
}

/// The decision on one bag.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SvmDecision {
    /// 1 when f(x) > 0 (ties go to the negative class, as on the host), else 0.
    pub label: usize,
    /// The decision value f(x).
    pub value: f64,
    /// Bound on |f(x) − f_host(x)| from the storage of ω (see the module documentation).
    pub bound: f64,
    /// The witness instance, where the kernel defines one: the MI kernel's instance of
    /// largest contribution ([`crate::mi_svm`]); `None` for box-counting kernels, whose
    /// value is not a sum over instances.
    pub witness: Option<usize>,
}

/// Sizes of the buffers of an [`SvmScratch`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SvmScratchLen {
    /// [`SvmScratch::grid`]: D.
    pub grid: usize,
    /// [`SvmScratch::query`]: instances × D.
    pub query: usize,
    /// [`SvmScratch::reference`]: largest stored bag × D.
    pub reference: usize,
    /// [`SvmScratch::floats`]: the estimator's floats.
    pub floats: usize,
    /// [`SvmScratch::ints`]: the estimator's integers.
    pub ints: usize,
}

/// Caller-provided working memory of [`SetKernelSvm::decide`].
#[derive(Debug)]
pub struct SvmScratch<'s> {
    /// The grid sizes, copied out of the model.
    pub grid: &'s mut [u32],
    /// The new bag on the grid.
    pub query: &'s mut [u32],
    /// One stored bag, widened to `u32`.
    pub reference: &'s mut [u32],
    /// Estimator floats.
    pub floats: &'s mut [f64],
    /// Estimator integers.
    pub ints: &'s mut [u32],
}

fn bad(what: &'static str) -> Error {
    Error::BadModel(what)
}

impl<'a> SetKernelSvm<'a> {
    pub(crate) fn from_sections(
        sections: &Sections<'a>,
        encoding: Encoding,
        dim: usize,
    ) -> Result<Self, Error> {
        let config = sections.require(tag::KERNEL_CONFIG)?;
        config.expect(Elem::U32, 1, 5)?;
        let kernel = match config.u32_at(0) {
            1 => BoxKernel::And,
            2 => BoxKernel::AndOr,
            3 => BoxKernel::Min,
            4 => BoxKernel::Or,
            _ => return Err(bad("unknown set kernel")),
        };
        let method = match config.u32_at(1) {
            0 => Method::Fast,
            1 => Method::Paper,
            _ => return Err(bad("unknown kernel estimator")),
        };
        let precision = config.u32_at(2) as i32;
        check_precision(precision).map_err(|_| bad("grid precision out of range"))?;
        let seed = u64::from(config.u32_at(3)) | u64::from(config.u32_at(4)) << 32;

        let params = sections.require(tag::KERNEL_PARAMS)?;
        params.expect(Elem::F64, 1, 5)?;
        let p = |i| params.f64_at(i);
        let accuracy = Accuracy::new(p(0), p(1)).map_err(|_| bad("kernel ε or δ not in (0, 1)"))?;
        let (rho, log_offset, bias) = (p(2), p(3), p(4));
        if !(rho > 0.0 && rho <= 1.0) {
            return Err(bad("ρ not in (0, 1]"));
        }
        if !(log_offset.abs() <= MAX_OFFSET && bias.abs() <= MAX_OFFSET) {
            return Err(bad("log offset or bias not finite and moderate"));
        }

        let grid_min = sections.require(tag::GRID_MIN)?;
        grid_min.expect(Elem::F64, 1, dim)?;
        let grid_size = sections.require(tag::GRID_SIZE)?;
        grid_size.expect(Elem::U32, 1, dim)?;
        for j in 0..dim {
            let lo = grid_min.f64_at(j);
            if !(lo.abs() < 9_007_199_254_740_992.0 && lo == libm::round(lo)) {
                return Err(bad("grid minimum not an integer below 2^53"));
            }
            let s = grid_size.u32_at(j);
            if !(2..u32::MAX).contains(&s) {
                return Err(bad("grid size not in 2..u32::MAX"));
            }
        }

        let bags = sections.require(tag::REF_BAGS)?;
        let points = sections.require(tag::REF_POINTS)?;
        if !matches!(points.elem, Elem::U16 | Elem::U32) || points.cols != dim {
            return Err(bad("stored grid points have the wrong type or width"));
        }
        let n_bags = bags.len().checked_sub(1).ok_or(bad("no stored bags"))?;
        bags.expect(Elem::U32, 1, n_bags + 1)?;
        if n_bags == 0 || bags.u32_at(0) != 0 || bags.u32_at(n_bags) as usize != points.rows {
            return Err(bad("stored bag boundaries do not cover the points"));
        }
        if (0..n_bags).any(|b| bags.u32_at(b + 1) <= bags.u32_at(b)) {
            return Err(bad("a stored bag is empty"));
        }
        if (0..points.len())
            .any(|i| points.u32_at(i) > grid_size.u32_at(i.checked_rem(dim).unwrap_or(0)))
        {
            return Err(bad("a stored point lies outside the grid"));
        }

        // ω is 16-bit in Q7 too: a hard-margin SVM's decisions cancel weights spanning
        // four orders of magnitude, which an 8-bit step cannot hold (all bags' ω share
        // one scale). The stored points dominate the size, so this costs n bytes.
        let weight_encoding = match encoding {
            Encoding::F32 => Encoding::F32,
            Encoding::Q15 | Encoding::Q7 => Encoding::Q15,
        };
        let weights = sections.require(tag::SCORE_WEIGHTS)?;
        weights.expect(weight_encoding.elem(), 1, n_bags)?;
        let weight_scale = match encoding {
            Encoding::F32 => {
                weights.expect_finite()?;
                if sections.get(tag::SCORE_SCALE).is_some() {
                    return Err(bad("f32 weights with a quantisation scale"));
                }
                None
            }
            _ => {
                if (0..n_bags).any(|r| weights.i32_at(r).abs() > weight_encoding.q_max()) {
                    return Err(bad("quantised value outside the symmetric range"));
                }
                let s = sections.f32_vec(tag::SCORE_SCALE, 1)?.f64_at(0);
                if s <= 0.0 {
                    return Err(bad("quantisation scale not positive"));
                }
                Some(s)
            }
        };
        Ok(SetKernelSvm {
            kernel,
            method,
            accuracy,
            precision,
            seed,
            rho,
            log_offset,
            bias,
            grid_min,
            grid_size,
            points,
            bags,
            weights,
            weight_scale,
        })
    }

    /// Input dimension D.
    pub fn dim(&self) -> usize {
        self.grid_size.len()
    }

    /// Number of stored bags.
    pub fn n_bags(&self) -> usize {
        self.bags.len() - 1
    }

    /// The set kernel.
    pub fn kernel(&self) -> BoxKernel {
        self.kernel
    }

    /// The estimator and its accuracy.
    pub fn estimator(&self) -> (Method, Accuracy) {
        (self.method, self.accuracy)
    }

    fn bag_range(&self, r: usize) -> (usize, usize) {
        (
            self.bags.u32_at(r) as usize,
            self.bags.u32_at(r + 1) as usize,
        )
    }

    /// ω_r and the bound on its storage error |Δω_r|, in f64 (exact dequantisation).
    fn weight(&self, r: usize) -> (f64, f64) {
        match self.weight_scale {
            None => {
                let w = self.weights.f64_at(r);
                (w, w.abs() * f64::from(f32::EPSILON) / 2.0)
            }
            Some(s) => (f64::from(self.weights.i32_at(r)) * s, s / 2.0),
        }
    }

    /// The buffers [`SetKernelSvm::decide`] needs for bags of at most `max_instances`
    /// instances; `None` if a size overflows.
    pub fn scratch_len(&self, max_instances: usize) -> Option<SvmScratchLen> {
        let d = self.dim();
        let largest = (0..self.n_bags())
            .map(|r| {
                let (a, b) = self.bag_range(r);
                b - a
            })
            .max()
            .unwrap_or(0);
        let est = scratch_len(self.kernel, self.method, max_instances, largest, d)?;
        Some(SvmScratchLen {
            grid: d,
            query: max_instances.checked_mul(d)?,
            reference: largest.checked_mul(d)?,
            // The device takes the shortest float scratch (same estimates, bit for bit).
            floats: est.floats_min,
            ints: est.ints,
        })
    }

    /// The decision on one bag of raw features (row-major, `n × D`, `n ≥ 1`). The features
    /// are `f64` because the grid can be finer than `f32` resolves (elephant's six
    /// decimals on values in the thousands): a feature rounded to `f32` may land in
    /// another cell than the host put it in.
    pub fn decide(&self, bag: &[f64], scratch: &mut SvmScratch<'_>) -> Result<SvmDecision, Error> {
        let d = self.dim();
        let n = instance_count(bag.len(), d)?;
        let need = self
            .scratch_len(n)
            .ok_or(Error::InvalidParameter("bag too large to address"))?;
        for (needed, got) in [
            (need.grid, scratch.grid.len()),
            (need.query, scratch.query.len()),
            (need.reference, scratch.reference.len()),
        ] {
            if got < needed {
                return Err(Error::BufferTooSmall { needed, got });
            }
        }
        // Checked above; `get_mut` keeps the device build free of panic paths.
        let sizes = prefix(scratch.grid, d)?;
        for (j, s) in sizes.iter_mut().enumerate() {
            *s = self.grid_size.u32_at(j);
        }
        let grid = Grid::new(sizes)?;
        let query = prefix(scratch.query, n * d)?;
        for (i, (q, &x)) in query.iter_mut().zip(bag).enumerate() {
            let j = i.checked_rem(d).unwrap_or(0);
            *q = cell(
                x,
                self.precision,
                self.grid_min.f64_at(j) as i64,
                self.grid_size.u32_at(j),
            )?;
        }
        let query_hash = bag_hash(query);
        let (mut value, mut bound, mut magnitude) = (self.bias, 0.0, libm::fabs(self.bias));
        for r in 0..self.n_bags() {
            let (a, b) = self.bag_range(r);
            let reference = prefix(scratch.reference, b.saturating_sub(a) * d)?;
            for (k, p) in reference.iter_mut().enumerate() {
                *p = self.points.u32_at(a * d + k);
            }
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(pair_seed(
                self.seed,
                query_hash,
                bag_hash(reference),
            ));
            let mut est_scratch = Scratch {
                floats: scratch.floats,
                ints: scratch.ints,
            };
            let ln_k = estimate(
                self.kernel,
                self.method,
                &grid,
                query,
                reference,
                self.accuracy,
                &mut rng,
                &mut est_scratch,
            )?
            .ln_value;
            let e = libm::exp(self.rho * ln_k - self.log_offset);
            let (w, dw) = self.weight(r);
            value += w * e;
            bound += dw * e;
            magnitude += libm::fabs(w) * e;
        }
        let gamma = (self.n_bags() + 8) as f64 * f64::EPSILON;
        bound += gamma * magnitude;
        Ok(SvmDecision {
            label: usize::from(value > 0.0),
            value,
            bound,
            witness: None,
        })
    }
}

/// The first `len` elements of `buffer`, or the error naming both lengths.
fn prefix(buffer: &mut [u32], len: usize) -> Result<&mut [u32], Error> {
    let got = buffer.len();
    buffer
        .get_mut(..len)
        .ok_or(Error::BufferTooSmall { needed: len, got })
}
