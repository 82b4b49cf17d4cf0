//! MI-ALM paper, Tables 5 and 6 on one benchmark: 10-fold stratified CV (the folds of
//! `mil cv --folds 10 --seed 1`), the projection fitted once per fold on the training
//! bags, then MILR scored on the test bags with several poolings and ridges, and with
//! the ridge chosen by an inner 3-fold CV on the training bags.
//!
//! `cargo run --release --example mi_alm_benchmarks -- DATA DIM ALPHA [mi-alm|midr] [C2]`,
//! e.g. `-- elephant 46 0.3 mi-alm` or `-- elephant 46 0.1 midr 10`. Prints the mean (sd)
//! over folds of the projection's sparsity, orthogonality (and MIDR's ‖A − H‖/d), then
//! the pooled out-of-fold AUROC (and the mean of the per-fold AUROCs) of each MILR.
//! With `MI_ALM_CACHE=DIR` the fitted projections are kept in DIR as JSON and reused.

use std::path::PathBuf;

use mil_toolkit::classifier::milr::{Milr, Pooling};
use mil_toolkit::classifier::{BagModel, Classifier};
use mil_toolkit::data::Dataset;
use mil_toolkit::eval::folds::{complement, derive_seed};
use mil_toolkit::eval::metrics::auroc;
use mil_toolkit::eval::{inner_folds, stratified_folds};
use mil_toolkit::projection::mi_alm::MiAlm;
use mil_toolkit::projection::midr::Midr;
use mil_toolkit::projection::{LinearProjection, Projector};

const FOLDS: usize = 10;
const SEED: u64 = 1;
const RIDGES: [f64; 6] = [1e-6, 1e-2, 0.1, 1.0, 10.0, 100.0];

struct Setup {
    data: Dataset,
    labels: Vec<usize>,
    folds: Vec<Vec<usize>>,
    all: Vec<usize>,
}

impl Setup {
    /// (training bags, sorted test bags) of outer fold `f`.
    fn split(&self, f: usize) -> (Vec<usize>, Vec<usize>) {
        let mut test = self.folds[f].clone();
        test.sort_unstable();
        (complement(&self.all, &test), test)
    }

    fn positive(&self, bags: &[usize]) -> Vec<bool> {
        bags.iter().map(|&b| self.labels[b] == 1).collect()
    }
}

fn mean_sd(v: &[f64]) -> String {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    format!("{mean:.3e} ({:.1e})", var.sqrt())
}

/// MILR's positive-class scores of `test` after fitting on `train` (projected data).
fn scores(milr: &Milr, data: &Dataset, train: &[usize], test: &[usize]) -> Vec<f64> {
    let model = milr.fit(data.select(train)).expect("MILR fit");
    let s = model.scores(data.select(test)).expect("MILR scores");
    (0..test.len()).map(|i| s.positive(i)).collect()
}

/// The ridge with the best pooled AUROC of an inner 3-fold CV on `train`.
fn inner_ridge(setup: &Setup, data: &Dataset, train: &[usize], pooling: Pooling, f: usize) -> f64 {
    let inner = inner_folds(&setup.labels, train, 3, derive_seed(SEED, 1000 + f as u64))
        .expect("inner folds");
    let mut best = (f64::NEG_INFINITY, RIDGES[0]);
    for ridge in RIDGES {
        let milr = Milr {
            pooling,
            ridge,
            beta: 3.0,
            ..Milr::default()
        };
        let (mut s, mut p) = (Vec::new(), Vec::new());
        for fold in &inner {
            let mut val = fold.clone();
            val.sort_unstable();
            s.extend(scores(&milr, data, &complement(train, &val), &val));
            p.extend(setup.positive(&val));
        }
        let a = auroc(&s, &p).unwrap_or(f64::NAN);
        if a > best.0 {
            best = (a, ridge);
        }
    }
    best.1
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let name = args.first().map_or("elephant", String::as_str);
    let dim: usize = args.get(1).map_or(46, |s| s.parse().expect("DIM"));
    let alpha: f64 = args.get(2).map_or(0.3, |s| s.parse().expect("ALPHA"));
    let method = args.get(3).map_or("mi-alm", String::as_str);
    let c2: f64 = args.get(4).map_or(10.0, |s| s.parse().expect("C2"));
    let data = mil_toolkit::data::load(name).expect("data set");
    let labels = data.labels().expect("labelled").to_vec();
    let folds = stratified_folds(&labels, FOLDS, derive_seed(SEED, 0)).expect("folds");
    let setup = Setup {
        all: (0..data.n_bags()).collect(),
        data,
        labels,
        folds,
    };
    let cache = std::env::var("MI_ALM_CACHE").ok().map(|dir| {
        move |f: usize| {
            PathBuf::from(&dir).join(format!("{name}_{method}_{dim}_{alpha}_{c2}_{f}.json"))
        }
    });

    let fit = |f: usize| -> LinearProjection {
        if let Some(path) = cache.as_ref().map(|c| c(f)) {
            if let Ok(text) = std::fs::read_to_string(&path) {
                return serde_json::from_str(&text).expect("cached projection");
            }
        }
        let (train, _) = setup.split(f);
        let start = std::time::Instant::now();
        let p = match method {
            "midr" => Midr {
                c2,
                ..Midr::new(dim, alpha, SEED)
            }
            .fit(setup.data.select(&train)),
            _ => MiAlm::new(dim, alpha, SEED).fit(setup.data.select(&train)),
        }
        .expect("projection");
        eprintln!(
            "fold {f}: {:.1} s, {:?}",
            start.elapsed().as_secs_f64(),
            p.diagnostics
        );
        if let Some(path) = cache.as_ref().map(|c| c(f)) {
            std::fs::write(path, serde_json::to_string(&p).expect("json")).expect("cache");
        }
        p
    };
    // Two worker threads over the folds (the machine has two cores).
    let mut projections: Vec<(usize, LinearProjection)> = std::thread::scope(|s| {
        let workers: Vec<_> = [0, 1]
            .map(|w| {
                let fit = &fit;
                s.spawn(move || {
                    (w..FOLDS)
                        .step_by(2)
                        .map(|f| (f, fit(f)))
                        .collect::<Vec<_>>()
                })
            })
            .into_iter()
            .collect();
        workers
            .into_iter()
            .flat_map(|h| h.join().expect("worker"))
            .collect()
    });
    projections.sort_by_key(|(f, _)| *f);
    let projected: Vec<Dataset> = projections
        .iter()
        .map(|(_, p)| p.transform(&setup.data).expect("transform"))
        .collect();

    let diag = |key: &str| -> Vec<f64> {
        projections
            .iter()
            .filter_map(|(_, p)| p.diagnostic(key))
            .collect()
    };
    println!(
        "{name}, {method}, d = {dim}, alpha/c1 = {alpha}, c2 = {c2}: mean (sd) over {FOLDS} folds"
    );
    for key in ["sparsity", "orthogonality", "error"] {
        let v = diag(key);
        if !v.is_empty() {
            println!("  {key}: {}", mean_sd(&v));
        }
    }
    for pooling in [Pooling::NoisyOr, Pooling::Softmax] {
        let (mut s, mut p, mut chosen) = (Vec::new(), Vec::new(), Vec::new());
        for (f, data) in projected.iter().enumerate() {
            let (train, test) = setup.split(f);
            let ridge = inner_ridge(&setup, data, &train, pooling, f);
            chosen.push(ridge);
            let milr = Milr {
                pooling,
                ridge,
                beta: 3.0,
                ..Milr::default()
            };
            s.extend(scores(&milr, data, &train, &test));
            p.extend(setup.positive(&test));
        }
        println!(
            "  MILR {pooling:?}, ridge by inner 3-fold CV over {RIDGES:?}: AUROC {:.4} (chosen {chosen:?})",
            auroc(&s, &p).unwrap_or(f64::NAN)
        );
    }
    for pooling in [
        Pooling::NoisyOr,
        Pooling::Mean,
        Pooling::Geometric,
        Pooling::Softmax,
    ] {
        for ridge in [1e-6, 0.1, 1.0, 10.0] {
            let milr = Milr {
                pooling,
                ridge,
                beta: 3.0,
                ..Milr::default()
            };
            let (mut s, mut p, mut per_fold) = (Vec::new(), Vec::new(), Vec::new());
            for (f, data) in projected.iter().enumerate() {
                let (train, test) = setup.split(f);
                let fs = scores(&milr, data, &train, &test);
                let fp = setup.positive(&test);
                per_fold.extend(auroc(&fs, &fp));
                s.extend(fs);
                p.extend(fp);
            }
            println!(
                "  MILR {pooling:?}, ridge {ridge}: AUROC {:.4} (mean per fold {:.4})",
                auroc(&s, &p).unwrap_or(f64::NAN),
                per_fold.iter().sum::<f64>() / per_fold.len() as f64
            );
        }
    }
}
