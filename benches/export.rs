//! Export cost of error-feedback rounding (`mil export --rounding feedback`, the default):
//! the D × D factor of E(v vᵀ) over the training instances, on musk1 (D = 166, 476
//! instances) and on Gaussian data at the feature cap (D = 1,024, 5,000 instances), and a
//! whole Q7 export of a musk1 B-MIDA (d = 10) stage with each rounding.
//!
//! `cargo bench --bench export`.

use divan::Bencher;
use mil_core::Encoding;
use mil_toolkit::export::rounding::{Feedback, MAX_FEEDBACK_DIM};
use mil_toolkit::export::{export_with, Affine, Compact, Head, Rounding};
use mil_toolkit::projection::mida::Bmida;
use mil_toolkit::projection::Projector;
use mil_toolkit::Dataset;
use rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

fn main() {
    divan::main();
}

/// `n` single-instance bags of `dim` integer features in [−1000, 1000).
fn uniform_data(dim: usize, n: usize) -> Dataset {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
    let features: Vec<f64> = (0..n * dim)
        .map(|_| (rng.next_u32() % 2000) as f64 - 1000.0)
        .collect();
    Dataset::new(
        "uniform",
        dim,
        features,
        (0..=n).collect(),
        (0..n).map(|i| format!("b{i}")).collect(),
        Some((0..n).map(|i| i % 2).collect()),
        vec!["0".into(), "1".into()],
    )
    .unwrap()
}

#[divan::bench(sample_count = 10)]
fn feedback_factor_musk1(bencher: Bencher) {
    let musk1 = mil_toolkit::data::load("musk1").unwrap();
    let steps = vec![1.0; musk1.dim()];
    bencher.bench(|| Feedback::new(&musk1, &steps).unwrap());
}

#[divan::bench(sample_count = 3)]
fn feedback_factor_at_the_cap(bencher: Bencher) {
    let data = uniform_data(MAX_FEEDBACK_DIM, 5_000);
    let steps = vec![1.0; data.dim()];
    bencher.bench(|| Feedback::new(&data, &steps).unwrap());
}

#[divan::bench(args = ["nearest", "feedback"], sample_count = 10)]
fn export_q7_musk1_bmida(bencher: Bencher, rounding: &str) {
    let musk1 = mil_toolkit::data::load("musk1").unwrap();
    let p = Bmida::default().dim(10).alpha(1.0).fit(&musk1).unwrap();
    let compact = Compact {
        stage: Some(Affine::from_projection(&p)),
        head: Head::None,
    };
    let rounding = match rounding {
        "nearest" => Rounding::Nearest,
        _ => Rounding::Feedback,
    };
    bencher.bench(|| export_with(&compact, Encoding::Q7, &musk1, rounding).unwrap());
}
