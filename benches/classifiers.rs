//! 10-fold cross-validation of the bag classifiers on Weka's own folds
//! (data/weka-folds/), the runs docs/reproduction/weka.md compares with Weka 3.6:
//! `cargo bench --bench classifiers`.

use std::path::Path;

use mil_toolkit::classifier::citation_knn::{CitationKnn, Scaling};
use mil_toolkit::classifier::milr::{Milr, Pooling};
use mil_toolkit::classifier::ClassifierParams;
use mil_toolkit::data;
use mil_toolkit::distance::{pairwise, Hausdorff};
use mil_toolkit::pipeline::{cross_validate, read_folds_file, Folds, Pipeline};

fn main() {
    divan::main();
}

const SETS: [&str; 3] = ["musk1", "elephant", "musk2"];

fn run(name: &str, classifier: ClassifierParams) -> f64 {
    let d = data::load(name).unwrap();
    let folds_path = format!(
        "{}/data/weka-folds/folds_{name}_weka_seed1.csv",
        env!("CARGO_MANIFEST_DIR")
    );
    let folds = Folds::Given(read_folds_file(Path::new(&folds_path), &d).unwrap());
    let pipeline = Pipeline::new(classifier)
        .inner_folds(3)
        .select(mil_toolkit::pipeline::Selection::Accuracy);
    cross_validate(&pipeline, &d, &folds, &mil_toolkit::progress::Silent)
        .unwrap()
        .accuracy
}

/// Citation-kNN R = 2, C = 4 with Weka's scaling (same predictions as Weka).
#[divan::bench(args = SETS, sample_count = 3, sample_size = 1)]
fn citation_knn_weka(name: &str) -> f64 {
    run(
        name,
        ClassifierParams::CitationKnn(CitationKnn {
            scaling: Scaling::Weka,
            ..CitationKnn::default()
        }),
    )
}

/// Citation-kNN R = 2, C = 4 with the default z-score scaling.
#[divan::bench(args = SETS, sample_count = 3, sample_size = 1)]
fn citation_knn_zscore(name: &str) -> f64 {
    run(name, ClassifierParams::CitationKnn(CitationKnn::default()))
}

/// MILR with Weka's default noisy-OR combiner.
#[divan::bench(args = SETS, sample_count = 3, sample_size = 1)]
fn milr_noisy_or(name: &str) -> f64 {
    run(
        name,
        ClassifierParams::Milr(Milr {
            pooling: Pooling::NoisyOr,
            ..Milr::default()
        }),
    )
}

/// All pairwise minimal Hausdorff distances (the blocked kernel alone).
#[divan::bench(args = SETS, sample_count = 3, sample_size = 1)]
fn pairwise_min_hausdorff(bencher: divan::Bencher, name: &str) {
    let d = data::load(name).unwrap();
    bencher.bench(|| pairwise(&d, Hausdorff::Min));
}
