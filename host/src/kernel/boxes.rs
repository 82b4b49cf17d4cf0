//! Gram matrices of the box-counting kernels, built in parallel from the core's
//! estimators: discretise the bags onto the grid (§2, fitted on the data), then estimate
//! ln k(Pᵢ, Pⱼ) for every i ≤ j with rayon, each entry from its own generator seeded by
//! (seed, i, j) ([`pair_seed`]) so the matrix is the same for any thread count, and mirror.
//!
//! ```
//! use mil_core::box_kernel::{BoxKernel, Method};
//! use mil_toolkit::kernel::{accuracy, box_gram, BoxGramSpec, GridData};
//! use mil_toolkit::progress::Silent;
//!
//! let musk1 = mil_toolkit::data::load("musk1")?;
//! let first: Vec<usize> = (0..8).collect();
//! let bags = musk1.copy_bags(&first);
//! let grid = GridData::fit(&bags, None)?;
//! let spec = BoxGramSpec {
//!     kernel: BoxKernel::And,
//!     method: Method::Fast,
//!     accuracy: accuracy(0.1, 0.01)?, // each entry within 10% with probability 99%
//!     seed: 1,
//! };
//! let gram = box_gram(&grid, spec, &Silent)?;
//! // ln k∧ in log space: symmetric, and a bag shares at least as many boxes with
//! // itself as with any other bag (up to the estimate's error).
//! assert_eq!(gram.get(2, 5), gram.get(5, 2));
//! assert!(gram.get(0, 0) > gram.get(0, 1) - 0.2);
//! # Ok::<(), mil_toolkit::Error>(())
//! ```

use mil_core::box_kernel::seeds::pair_seed;
use mil_core::box_kernel::{
    discretize, estimate_polled, scratch_len, Accuracy, BoxKernel, Grid, Method, Scratch,
    ScratchLen,
};
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use rayon::prelude::*;

use super::LogGram;
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::progress::Progress;

/// Bags discretised onto a grid fitted by §2's rule.
#[derive(Debug, Clone)]
pub struct GridData {
    precision: i32,
    min: Vec<i64>,
    s: Vec<u32>,
    points: Vec<u32>,
    bag_starts: Vec<usize>,
}

impl GridData {
    /// Fits the discretisation on `data` at `precision` (the power of ten; by default
    /// the precision the values carry, see [`discretize::default_precision`]) and maps
    /// `data` onto it.
    pub fn fit(data: &Dataset, precision: Option<i32>) -> Result<Self> {
        let dim = data.dim();
        let precision = match precision {
            Some(p) => p,
            None => discretize::default_precision(data.features(), dim)?,
        };
        let bad_precision =
            |e: mil_core::Error| Error::parameter("precision", precision, e.to_string());
        let mut min = vec![0i64; dim];
        let mut s = vec![0u32; dim];
        discretize::fit(data.features(), dim, precision, &mut min, &mut s)
            .map_err(bad_precision)?;
        let mut fitted = GridData {
            precision,
            min,
            s,
            points: Vec::new(),
            bag_starts: Vec::new(),
        };
        fitted.points = fitted.map(data)?;
        fitted.bag_starts = data.bag_starts().to_vec();
        Ok(fitted)
    }

    /// Maps the instances of `data` (e.g. test bags) onto this grid; values outside the
    /// fitted range land in the ±∞ cells.
    pub fn map(&self, data: &Dataset) -> Result<Vec<u32>> {
        let disc = discretize::Discretizer::new(self.precision, &self.min, &self.s)?;
        let dim = self.s.len();
        if data.dim() != dim {
            return Err(Error::data(
                data.name(),
                format!("{} features, the grid has {dim}", data.dim()),
            ));
        }
        let mut points = vec![0u32; data.features().len()];
        for (x, out) in data
            .features()
            .chunks_exact(dim)
            .zip(points.chunks_exact_mut(dim))
        {
            disc.apply(x, out)
                .map_err(|e| Error::data(data.name(), e.to_string()))?;
        }
        Ok(points)
    }

    /// The power of ten used.
    pub fn precision(&self) -> i32 {
        self.precision
    }

    /// The smallest rounded training value of each dimension.
    pub fn min(&self) -> &[i64] {
        &self.min
    }

    /// The grid size sᵢ of each dimension.
    pub fn sizes(&self) -> &[u32] {
        &self.s
    }

    /// The grid: upper value sᵢ per dimension.
    pub fn grid(&self) -> Grid<'_> {
        // `fit` only builds grids the core accepted.
        Grid::new(&self.s).expect("fitted grid is valid")
    }

    /// Number of bags.
    pub fn n_bags(&self) -> usize {
        self.bag_starts.len() - 1
    }

    /// Bag `b` as row-major grid points.
    pub fn bag(&self, b: usize) -> &[u32] {
        let d = self.s.len();
        &self.points[self.bag_starts[b] * d..self.bag_starts[b + 1] * d]
    }

    /// Number of points in bag `b`.
    pub fn bag_len(&self, b: usize) -> usize {
        self.bag_starts[b + 1] - self.bag_starts[b]
    }
}

/// What to estimate.
#[derive(Debug, Clone, Copy)]
pub struct BoxGramSpec {
    /// The kernel.
    pub kernel: BoxKernel,
    /// The estimator.
    pub method: Method,
    /// ε and δ of every entry.
    pub accuracy: Accuracy,
    /// Seed from which every entry's generator is derived.
    pub seed: u64,
}

/// The entries of the upper triangle, row-major: (i, j) for every i ≤ j.
pub fn upper_pairs(n: usize) -> Vec<(usize, usize)> {
    (0..n).flat_map(|i| (i..n).map(move |j| (i, j))).collect()
}

/// The full Gram matrix of ln k over the bags of `data`, in parallel; `progress` (if
/// any) advances once per estimated entry.
pub fn box_gram(data: &GridData, spec: BoxGramSpec, progress: &dyn Progress) -> Result<LogGram> {
    let n = data.n_bags();
    let pairs = upper_pairs(n);
    let entries = box_entries(data, spec, &pairs, progress)?;
    let mut ln = vec![0.0; n * n];
    let mut samples = 0u64;
    for (&(i, j), &(value, s)) in pairs.iter().zip(&entries) {
        ln[i * n + j] = value;
        ln[j * n + i] = value;
        samples += s;
    }
    Ok(LogGram { n, ln, samples })
}

/// The CPU time a box-kernel Gram matrix will take, measured on a sample of its entries
/// before the work ([`box_gram_cost`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GramCost {
    /// Entries of the whole matrix (its upper triangle with the diagonal).
    pub entries: usize,
    /// Entries computed to measure.
    pub measured: usize,
    /// Estimated CPU seconds of the whole matrix.
    pub cpu_seconds: f64,
}

/// Entries measured at most; the CPU seconds after which measuring stops once
/// [`PILOT_LEAST`] entries are measured, and at the latest.
const PILOT_ENTRIES: usize = 400;
const PILOT_LEAST: usize = 10;
const PILOT_SECONDS: f64 = 0.5;
const PILOT_MOST_SECONDS: f64 = 5.0;

/// Estimates the CPU time of [`box_gram`] on `data`: computes entries drawn at random
/// (seeded by `spec.seed`, so the estimate is reproducible up to timing) one after
/// another on this thread until 0.5 s of CPU once ten entries are done (5 s at most) or
/// 400 entries, and scales their CPU time by the number of entries. An entry's cost is
/// its sample count times the bags' sizes, which vary from pair to pair: a random sample
/// of ten or more entries estimates the mean within a small factor.
///
/// ```
/// use mil_core::box_kernel::{BoxKernel, Method};
/// use mil_toolkit::kernel::boxes::box_gram_cost;
/// use mil_toolkit::kernel::{accuracy, BoxGramSpec, GridData};
///
/// let data = mil_toolkit::data::load("musk1")?;
/// let spec = BoxGramSpec {
///     kernel: BoxKernel::And,
///     method: Method::Fast,
///     accuracy: accuracy(0.1, 0.01)?,
///     seed: 1,
/// };
/// let cost = box_gram_cost(&GridData::fit(&data, None)?, spec)?;
/// assert_eq!(cost.entries, 92 * 93 / 2);
/// assert!(cost.measured > 0 && cost.cpu_seconds > 0.0);
/// # Ok::<(), mil_toolkit::error::Error>(())
/// ```
pub fn box_gram_cost(data: &GridData, spec: BoxGramSpec) -> Result<GramCost> {
    use rand::seq::SliceRandom;
    let mut pairs = upper_pairs(data.n_bags());
    let entries = pairs.len();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(spec.seed ^ 0x5EED_C057);
    pairs.shuffle(&mut rng);
    let start = crate::params::thread_cpu_seconds();
    let mut measured = 0;
    for pair in pairs.iter().take(PILOT_ENTRIES) {
        // One entry at a time on this thread, whose CPU time is this work.
        box_entries_serial(data, spec, std::slice::from_ref(pair))?;
        measured += 1;
        let spent = crate::params::thread_cpu_seconds() - start;
        if (spent >= PILOT_SECONDS && measured >= PILOT_LEAST) || spent >= PILOT_MOST_SECONDS {
            break;
        }
    }
    let spent = (crate::params::thread_cpu_seconds() - start).max(0.0);
    Ok(GramCost {
        entries,
        measured,
        cpu_seconds: spent * entries as f64 / measured.max(1) as f64,
    })
}

/// [`box_entries`] on the calling thread.
fn box_entries_serial(
    data: &GridData,
    spec: BoxGramSpec,
    pairs: &[(usize, usize)],
) -> Result<Vec<(f64, u64)>> {
    let need = entry_scratch(data, spec)?;
    let (mut floats, mut ints) = (vec![0.0f64; need.floats], vec![0u32; need.ints]);
    pairs
        .iter()
        .map(|&pair| box_entry(data, spec, pair, &mut floats, &mut ints))
        .collect()
}

/// The scratch space of an entry between the largest bags of `data`.
fn entry_scratch(data: &GridData, spec: BoxGramSpec) -> Result<ScratchLen> {
    let largest = (0..data.n_bags())
        .map(|b| data.bag_len(b))
        .max()
        .unwrap_or(0);
    scratch_len(
        spec.kernel,
        spec.method,
        largest,
        largest,
        data.grid().dim(),
    )
    .ok_or_else(|| Error::data("gram", "bags too large to address"))
}

/// ln k(bag i, bag j) and the samples it drew, from its own generator seeded by
/// (seed, i, j).
fn box_entry(
    data: &GridData,
    spec: BoxGramSpec,
    (i, j): (usize, usize),
    floats: &mut [f64],
    ints: &mut [u32],
) -> Result<(f64, u64)> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(pair_seed(spec.seed, i as u64, j as u64));
    let mut scratch = Scratch { floats, ints };
    let est = estimate_polled(
        spec.kernel,
        spec.method,
        &data.grid(),
        data.bag(i),
        data.bag(j),
        spec.accuracy,
        &mut rng,
        &mut scratch,
        &mut crate::cancel::poll,
    )?;
    Ok((est.ln_value, est.samples))
}

/// ln k and the samples drawn for each of the entries `pairs`, in parallel. Entry (i, j)
/// draws from its own generator seeded by (seed, i, j), so its value does not depend on
/// which other entries are computed with it, nor on the thread count.
pub fn box_entries(
    data: &GridData,
    spec: BoxGramSpec,
    pairs: &[(usize, usize)],
    progress: &dyn Progress,
) -> Result<Vec<(f64, u64)>> {
    let need = entry_scratch(data, spec)?;
    progress.set_total(pairs.len() as u64);
    pairs
        .par_iter()
        .map_init(
            || (Vec::new(), Vec::new()),
            |(floats, ints), &pair| {
                crate::cancel::checkpoint();
                // The scratch (megabytes for large bags) is sized after the checkpoint:
                // rayon runs the init of every job it splits off, and a cancelled run
                // would otherwise go on zeroing one per job.
                floats.resize(need.floats, 0.0);
                ints.resize(need.ints, 0);
                let entry = box_entry(data, spec, pair, floats, ints)?;
                progress.advance(1);
                Ok(entry)
            },
        )
        .collect()
}
