//! Box-kernel benchmarks: this project's fast estimators beside the paper's own
//! algorithms (Tables 3–5 of Tao et al., TPAMI 2008, implemented in
//! `mil_core::box_kernel::paper` and run here as the reference), on Musk1 and Musk2.
//!
//! `cargo bench --bench box_kernels` prints, before divan's timings, a table of samples
//! per entry and random draws per sample; divan's throughput column ("items/s", one item
//! = one sample or trial) gives the cost per sample, to compare with `rng_draw` (one
//! xoshiro256++ draw, the physical floor of any sampling scheme).

use std::convert::Infallible;
use std::sync::OnceLock;

use divan::counter::ItemsCount;
use divan::Bencher;
use mil_core::box_kernel::seeds::pair_seed;
use mil_core::box_kernel::{estimate, scratch_len, Accuracy, BoxKernel, Estimate, Method, Scratch};
use mil_toolkit::data::{self, Dataset};
use mil_toolkit::kernel::{box_gram, BoxGramSpec, GridData};
use rand_core::{Rng, SeedableRng, TryRng};
use rand_xoshiro::Xoshiro256PlusPlus;

fn main() {
    report();
    divan::main();
}

fn musk(name: &str) -> &'static GridData {
    static MUSK1: OnceLock<GridData> = OnceLock::new();
    static MUSK2: OnceLock<GridData> = OnceLock::new();
    let cell = if name == "musk1" { &MUSK1 } else { &MUSK2 };
    cell.get_or_init(|| GridData::fit(&data::load(name).unwrap(), None).unwrap())
}

fn accuracy() -> Accuracy {
    Accuracy::new(0.1, 0.01).unwrap()
}

fn kernel_of(name: &str) -> BoxKernel {
    match name {
        "kand" => BoxKernel::And,
        "kandor" => BoxKernel::AndOr,
        _ => BoxKernel::Min,
    }
}

/// A generator that counts its draws.
struct Counting<R> {
    inner: R,
    draws: u64,
}

impl<R: Rng> TryRng for Counting<R> {
    type Error = Infallible;
    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        self.draws += 1;
        Ok(self.inner.next_u32())
    }
    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        self.draws += 1;
        Ok(self.inner.next_u64())
    }
    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        self.draws += dst.len().div_ceil(8) as u64;
        self.inner.fill_bytes(dst);
        Ok(())
    }
}

/// One entry of a Gram matrix, with its own seeded generator (as `mil gram` does).
fn entry<R: Rng>(
    data: &GridData,
    kernel: BoxKernel,
    method: Method,
    (i, j): (usize, usize),
    rng: &mut R,
) -> Estimate {
    let need = scratch_len(
        kernel,
        method,
        data.bag_len(i),
        data.bag_len(j),
        data.grid().dim(),
    )
    .unwrap();
    let mut floats = vec![0.0; need.floats];
    let mut ints = vec![0u32; need.ints];
    let mut scratch = Scratch {
        floats: &mut floats,
        ints: &mut ints,
    };
    estimate(
        kernel,
        method,
        &data.grid(),
        data.bag(i),
        data.bag(j),
        accuracy(),
        rng,
        &mut scratch,
    )
    .unwrap()
}

fn seeded(i: usize, j: usize) -> Xoshiro256PlusPlus {
    Xoshiro256PlusPlus::seed_from_u64(pair_seed(1, i as u64, j as u64))
}

/// Pairs of Musk1 bags used for per-entry comparisons: every 7th pair i ≤ j.
fn musk1_pairs() -> Vec<(usize, usize)> {
    let n = musk("musk1").n_bags();
    (0..n)
        .flat_map(|i| (i..n).map(move |j| (i, j)))
        .step_by(7)
        .collect()
}

/// Pairs of small Musk1 bags (≤ 6 instances each), where the paper's Table 5 is feasible.
fn musk1_small_pairs() -> Vec<(usize, usize)> {
    let d = musk("musk1");
    let small: Vec<usize> = (0..d.n_bags()).filter(|&b| d.bag_len(b) <= 6).collect();
    small
        .iter()
        .flat_map(|&i| small.iter().map(move |&j| (i, j)))
        .filter(|(i, j)| i <= j)
        .step_by(5)
        .take(20)
        .collect()
}

/// The two Musk2 bags closest in size to `target`.
fn musk2_pair(target: usize) -> (usize, usize) {
    let d = musk("musk2");
    let mut bags: Vec<usize> = (0..d.n_bags()).collect();
    bags.sort_by_key(|&b| (d.bag_len(b).abs_diff(target), b));
    (bags[0], bags[1])
}

/// Musk1 restricted to its first `dim` features, discretised afresh.
fn musk1_dims(dim: usize) -> GridData {
    let full: Dataset = data::load("musk1").unwrap();
    let feats: Vec<f64> = full
        .features()
        .chunks_exact(full.dim())
        .flat_map(|row| row[..dim].iter().copied())
        .collect();
    GridData::fit(&full.with_features(dim, feats).unwrap(), None).unwrap()
}

/// Samples per entry and draws per sample, printed once.
fn report() {
    eprintln!("box kernels at ε = 0.1, δ = 0.01 — per entry: mean samples (or trials), mean random draws per sample");
    let survey = |label: &str, data: &GridData, kernel, method, pairs: &[(usize, usize)]| {
        let (mut samples, mut draws) = (0u64, 0u64);
        for &(i, j) in pairs {
            let mut rng = Counting {
                inner: seeded(i, j),
                draws: 0,
            };
            samples += entry(data, kernel, method, (i, j), &mut rng).samples;
            draws += rng.draws;
        }
        eprintln!(
            "  {label:<44} {:>10.0} samples/entry {:>7.2} draws/sample",
            samples as f64 / pairs.len() as f64,
            draws as f64 / samples as f64
        );
    };
    let m1 = musk("musk1");
    let pairs = musk1_pairs();
    survey("musk1 k∧ fast", m1, BoxKernel::And, Method::Fast, &pairs);
    survey(
        "musk1 k∧ paper (Table 3)",
        m1,
        BoxKernel::And,
        Method::Paper,
        &pairs,
    );
    survey("musk1 k∨ fast", m1, BoxKernel::Or, Method::Fast, &pairs);
    survey(
        "musk1 k∨ paper (Table 4)",
        m1,
        BoxKernel::Or,
        Method::Paper,
        &pairs,
    );
    survey("musk1 k_min fast", m1, BoxKernel::Min, Method::Fast, &pairs);
    let small = musk1_small_pairs();
    survey(
        "musk1 small bags k_min fast",
        m1,
        BoxKernel::Min,
        Method::Fast,
        &small,
    );
    survey(
        "musk1 small bags k_min paper (Table 5)",
        m1,
        BoxKernel::Min,
        Method::Paper,
        &small,
    );
    let m2 = musk("musk2");
    for size in [8, 64, 344, 1044] {
        let pair = musk2_pair(size);
        let label = format!(
            "musk2 k∧ fast, bags of {} and {}",
            m2.bag_len(pair.0),
            m2.bag_len(pair.1)
        );
        survey(&label, m2, BoxKernel::And, Method::Fast, &[pair]);
    }
}

/// One xoshiro256++ draw: the floor under every sample.
#[divan::bench]
fn rng_draw(bencher: Bencher) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
    bencher.counter(ItemsCount::new(1000usize)).bench_local(|| {
        let mut acc = 0u64;
        for _ in 0..1000 {
            acc ^= rng.next_u64();
        }
        acc
    });
}

/// The full 92 × 92 Musk1 Gram matrix with the fast estimators, both cores (target for
/// k∧: under 10 s; the paper: ~18 minutes at ε = 0.1).
#[divan::bench(args = ["kand", "kandor", "kmin"], sample_count = 3, sample_size = 1)]
fn musk1_gram_fast(bencher: Bencher, kernel: &str) {
    gram_bench(bencher, "musk1", kernel, Method::Fast);
}

/// The same with the paper's Table 3 (k∧) — the side-by-side reference.
#[divan::bench(args = ["kand"], sample_count = 1, sample_size = 1)]
fn musk1_gram_paper(bencher: Bencher, kernel: &str) {
    gram_bench(bencher, "musk1", kernel, Method::Paper);
}

/// The full 102 × 102 Musk2 k∧ Gram matrix (bags up to 1,044 instances; target: under
/// 15 minutes; the paper did not attempt it).
#[divan::bench(args = ["kand"], sample_count = 1, sample_size = 1)]
fn musk2_gram_fast(bencher: Bencher, kernel: &str) {
    gram_bench(bencher, "musk2", kernel, Method::Fast);
}

fn gram_bench(bencher: Bencher, name: &str, kernel: &str, method: Method) {
    let data = musk(name);
    let spec = BoxGramSpec {
        kernel: kernel_of(kernel),
        method,
        accuracy: accuracy(),
        seed: 1,
    };
    let samples = box_gram(data, spec, &mil_toolkit::progress::Silent)
        .unwrap()
        .samples;
    bencher
        .counter(ItemsCount::new(samples))
        .bench(|| box_gram(data, spec, &mil_toolkit::progress::Silent).unwrap());
}

/// Musk1 entries one at a time (every 7th pair), fast against the paper's Tables 3 and 4.
#[divan::bench(args = ["kand-fast", "kand-paper", "kor-fast", "kor-paper", "kmin-fast"], sample_count = 3, sample_size = 1)]
fn musk1_entries(bencher: Bencher, which: &str) {
    let (kernel, method) = match which {
        "kand-fast" => (BoxKernel::And, Method::Fast),
        "kand-paper" => (BoxKernel::And, Method::Paper),
        "kor-fast" => (BoxKernel::Or, Method::Fast),
        "kor-paper" => (BoxKernel::Or, Method::Paper),
        _ => (BoxKernel::Min, Method::Fast),
    };
    entries_bench(bencher, musk("musk1"), kernel, method, &musk1_pairs());
}

/// Small Musk1 bags (≤ 6 instances): k_min fast against the paper's Table 5, whose
/// n²(n−1)² sample count rules it out on larger bags.
#[divan::bench(args = ["fast", "paper"], sample_count = 3, sample_size = 1)]
fn musk1_small_kmin(bencher: Bencher, which: &str) {
    let method = if which == "fast" {
        Method::Fast
    } else {
        Method::Paper
    };
    entries_bench(
        bencher,
        musk("musk1"),
        BoxKernel::Min,
        method,
        &musk1_small_pairs(),
    );
}

/// Growth with bag size: one Musk2 k∧ entry between two bags of about n instances.
#[divan::bench(args = [8, 32, 64, 128, 344, 1044], sample_count = 3, sample_size = 1)]
fn musk2_kand_by_bag_size(bencher: Bencher, n: usize) {
    entries_bench(
        bencher,
        musk("musk2"),
        BoxKernel::And,
        Method::Fast,
        &[musk2_pair(n)],
    );
}

/// The paper's Table 3 on the same entries (its trial count grows as |P||Q|).
#[divan::bench(args = [8, 32, 64, 128], sample_count = 1, sample_size = 1)]
fn musk2_kand_by_bag_size_paper(bencher: Bencher, n: usize) {
    entries_bench(
        bencher,
        musk("musk2"),
        BoxKernel::And,
        Method::Paper,
        &[musk2_pair(n)],
    );
}

/// Growth with dimension: Musk1 k∧ entries (every 7th pair) on the first d features.
#[divan::bench(args = [10, 40, 166], sample_count = 3, sample_size = 1)]
fn musk1_kand_by_dimension(bencher: Bencher, dim: usize) {
    let data = musk1_dims(dim);
    entries_bench(bencher, &data, BoxKernel::And, Method::Fast, &musk1_pairs());
}

fn entries_bench(
    bencher: Bencher,
    data: &GridData,
    kernel: BoxKernel,
    method: Method,
    pairs: &[(usize, usize)],
) {
    let run = || {
        pairs
            .iter()
            .map(|&(i, j)| entry(data, kernel, method, (i, j), &mut seeded(i, j)).samples)
            .sum::<u64>()
    };
    let samples = run();
    bencher.counter(ItemsCount::new(samples)).bench_local(run);
}
