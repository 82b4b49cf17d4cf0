//! Projections on wide data: PCA, B-MIDA and CLFDA (d = 10) fitted on the `term-counts`
//! synthetic set at its default shape — 80 bags, 2,000 instances, D = 6,000 sparse count
//! features (about 96 MB as f64) — on all bags.
//!
//! `cargo bench --bench high_dim`. Time per fit, and with divan's allocation profiler
//! the peak of live heap bytes during a fit ("max alloc"), which must stay within 4× the
//! data's size (≤ 384 MB). The fits take the sparse Gram matrix and the partial
//! eigensolver (`projection::krylov`) rather than a full eigendecomposition. CLFDA's cut
//! at d = 10 lies inside an eigenvalue cluster: the solver certifies the enlarged
//! subspace past the cluster (`krylov::AtCut::Enlarge`) rather than fall back to the
//! full r × r decomposition.

use divan::{AllocProfiler, Bencher};
use mil_toolkit::data::synth::{term_counts, TermCounts};
use mil_toolkit::data::Dataset;
use mil_toolkit::projection::{ProjectionKind, ProjectionParams};

#[global_allocator]
static ALLOC: AllocProfiler = AllocProfiler::system();

fn main() {
    divan::main();
}

fn data() -> Dataset {
    term_counts(TermCounts::default(), 1)
        .expect("the default shape is valid")
        .data
}

fn fit(bencher: Bencher, kind: ProjectionKind) {
    let data = data();
    let train: Vec<usize> = (0..data.n_bags()).collect();
    let params = ProjectionParams::new(kind).with_dim(10);
    bencher.bench(|| params.fit(data.select(&train)).expect("fit"));
}

#[divan::bench(sample_count = 3, sample_size = 1)]
fn pca_6000(bencher: Bencher) {
    fit(bencher, ProjectionKind::Pca);
}

#[divan::bench(sample_count = 3, sample_size = 1)]
fn bmida_6000(bencher: Bencher) {
    fit(bencher, ProjectionKind::Bmida);
}

#[divan::bench(sample_count = 3, sample_size = 1)]
fn clfda_6000(bencher: Bencher) {
    fit(bencher, ProjectionKind::Clfda);
}
