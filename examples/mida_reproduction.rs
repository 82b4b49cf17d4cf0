//! Reproduces the MIDA paper's Tables 1, 2, 3 and Table 10's musk1/elephant/musk2 rows
//! (Chai et al., Pattern Recognition 2014) with this project's projections and its
//! Citation-kNN (and MILR in its place), averaged over seeds; it prints the tables of
//! `docs/reproduction/mida.md`. It runs the nested cross-validation itself, from the
//! library's folds, classifiers and statistics: the synthetic protocol is the paper's fixed
//! 20 + 20 split per class over 20 seeds rather than a k-fold CV, and every table scores
//! the raw data and each projection on the same splits in one run.
//!
//! ```text
//! cargo run --release --example mida_reproduction -- [synthetic|benchmarks|all|DATA] [SEEDS] [REPEATS]
//! ```
//!
//! - synthetic: 20 seeds (default) of MIDA §5.1 sets one and two with the paper's 20+20
//!   split per class; projections of dimension 2 (LDA: C − 1); α of B-MIDA/M-MIDA chosen
//!   by 5-fold inner CV on the training bags over {0.001, …, 100}.
//! - benchmarks: 10-fold CV repeated REPEATS times (default 1) with different fold
//!   assignments; B-MIDA's α ∈ {0.1, 1, 10} and d ∈ {5, 10, 20} chosen jointly by 5-fold
//!   CV inside each training fold (never touching the test fold).
//!
//! Citation-kNN uses R = 2, C = 4 (Wang & Zucker's setting, as the paper): z-scored
//! attributes on raw data; no further scaling on projected data (every projection here
//! already standardises its input).

use std::time::Instant;

use mil_toolkit::classifier::citation_knn::{CitationKnn, Scaling};
use mil_toolkit::classifier::milr::Milr;
use mil_toolkit::classifier::{BagModel, Classifier};
use mil_toolkit::data::synth::{mida_one, mida_two};
use mil_toolkit::data::{self, Dataset};
use mil_toolkit::distance::Hausdorff;
use mil_toolkit::eval::folds::{complement, derive_seed};
use mil_toolkit::eval::{inner_folds, stratified_folds, Summary};
use mil_toolkit::projection::mida::{Bmida, BmidaInit, Mmida};
use mil_toolkit::projection::InputScaling;
use mil_toolkit::projection::{ProjectionKind, ProjectionParams};
use mil_toolkit::Result;

const ALPHAS_SYNTHETIC: [f64; 6] = [0.001, 0.01, 0.1, 1.0, 10.0, 100.0];
const ALPHAS_BENCH: [f64; 3] = [0.1, 1.0, 10.0];
const DIMS_BENCH: [usize; 3] = [5, 10, 20];
const INNER_FOLDS: usize = 5;

fn knn(scaling: Scaling) -> CitationKnn {
    CitationKnn {
        scaling,
        ..CitationKnn::default()
    }
}

/// The bag classifier after the projection.
#[derive(Clone, Copy, PartialEq)]
enum Clf {
    /// Citation-kNN, R = 2, C = 4 (the paper's), minimal Hausdorff distance.
    Cknn,
    /// The same with the maximal (classic) Hausdorff distance.
    CknnMax,
    /// MILR with Weka's defaults (noisy-or), an instance-level learner for contrast.
    Milr,
}

/// Accuracy on `test` of Citation-kNN trained on `train`, after an optional projection
/// fitted on `train` only.
fn accuracy(
    data: &Dataset,
    train: &[usize],
    test: &[usize],
    spec: Option<&ProjectionParams>,
) -> Result<f64> {
    accuracy_with(Clf::Cknn, data, train, test, spec)
}

fn accuracy_with(
    clf: Clf,
    data: &Dataset,
    train: &[usize],
    test: &[usize],
    spec: Option<&ProjectionParams>,
) -> Result<f64> {
    let (data, scaling) = match spec {
        Some(s) => (s.fit(data.select(train))?.transform(data)?, Scaling::None),
        None => (data.clone(), Scaling::Zscore),
    };
    let predicted = match clf {
        Clf::Cknn => knn(scaling)
            .fit(data.select(train))?
            .scores(data.select(test))?
            .labels(),
        Clf::CknnMax => CitationKnn {
            hausdorff: Hausdorff::Max,
            ..knn(scaling)
        }
        .fit(data.select(train))?
        .scores(data.select(test))?
        .labels(),
        Clf::Milr => Milr::default()
            .fit(data.select(train))?
            .scores(data.select(test))?
            .labels(),
    };
    let labels = data.labels().unwrap_or_default();
    let right = test
        .iter()
        .zip(&predicted)
        .filter(|(&b, &p)| labels[b] == p)
        .count();
    Ok(right as f64 / test.len() as f64)
}

/// The candidate with the best mean inner-CV accuracy on `train` (ties: the first).
fn select(
    data: &Dataset,
    train: &[usize],
    candidates: &[ProjectionParams],
    seed: u64,
) -> Result<ProjectionParams> {
    select_with(Clf::Cknn, data, train, candidates, seed)
}

fn select_with(
    clf: Clf,
    data: &Dataset,
    train: &[usize],
    candidates: &[ProjectionParams],
    seed: u64,
) -> Result<ProjectionParams> {
    if candidates.len() == 1 {
        return Ok(candidates[0]);
    }
    let labels = data.labels().unwrap_or_default();
    let folds = inner_folds(labels, train, INNER_FOLDS, seed)?;
    let mut best = (f64::NEG_INFINITY, candidates[0]);
    for c in candidates {
        let mut total = 0.0;
        for test in &folds {
            let inner_train = complement(train, test);
            total += accuracy_with(clf, data, &inner_train, test, Some(c))?;
        }
        if total > best.0 {
            best = (total, *c);
        }
    }
    Ok(best.1)
}

/// B-MIDA's (d, α) with the best mean inner-CV accuracy; the kernel-density
/// initialisation, which depends on neither, is computed once per inner fold.
fn select_bmida(data: &Dataset, train: &[usize], seed: u64) -> Result<ProjectionParams> {
    let labels = data.labels().unwrap_or_default();
    let folds = inner_folds(labels, train, INNER_FOLDS, seed)?;
    let grid: Vec<(usize, f64)> = DIMS_BENCH
        .iter()
        .flat_map(|&d| ALPHAS_BENCH.iter().map(move |&a| (d, a)))
        .collect();
    let mut totals = vec![0.0; grid.len()];
    for test in &folds {
        let inner_train = complement(train, test);
        let init = BmidaInit::new(data, &inner_train, InputScaling::Centre)?;
        for (k, &(d, a)) in grid.iter().enumerate() {
            let projected = Bmida::new(d, a)
                .fit_from(data, &init)?
                .projection
                .transform(data)?;
            let model = knn(Scaling::None).fit(projected.select(&inner_train))?;
            let predicted = model.scores(projected.select(test))?.labels();
            let right = test
                .iter()
                .zip(&predicted)
                .filter(|(&b, &p)| labels[b] == p)
                .count();
            totals[k] += right as f64 / test.len() as f64;
        }
    }
    let mut best = 0;
    for k in 1..grid.len() {
        if totals[k] > totals[best] {
            best = k;
        }
    }
    Ok(spec(ProjectionKind::Bmida, grid[best].0, grid[best].1))
}

fn spec(kind: ProjectionKind, dim: usize, alpha: f64) -> ProjectionParams {
    let params = ProjectionParams::new(kind).with_dim(dim);
    params.with_alpha(alpha).unwrap_or(params)
}

fn line(name: &str, paper: &str, values: &[f64]) {
    let s = Summary::of(values).expect("finite accuracies");
    println!(
        "| {name} | {paper} | {:.1} ± {:.1} | [{:.1}, {:.1}] |",
        100.0 * s.mean,
        100.0 * s.sd,
        100.0 * s.ci_low,
        100.0 * s.ci_high
    );
}

/// One column of a synthetic table with classifier `clf`: the accuracy of every entry
/// of `specs`, the last (the MIDA projection) re-chosen among `candidates` by inner CV
/// with `clf`; pushed onto `column`, one row per spec. Returns the chosen candidate.
fn column(
    clf: Clf,
    data: &Dataset,
    (train, test): (&[usize], &[usize]),
    specs: &[Option<ProjectionParams>],
    candidates: &[ProjectionParams],
    seed: u64,
    column: &mut [Vec<f64>],
) -> Result<ProjectionParams> {
    let chosen = select_with(clf, data, train, candidates, seed)?;
    for (k, s) in specs.iter().enumerate() {
        let s = if k == specs.len() - 1 {
            Some(chosen)
        } else {
            *s
        };
        column[k].push(accuracy_with(clf, data, train, test, s.as_ref())?);
    }
    Ok(chosen)
}

fn synthetic(seeds: u64) -> Result<()> {
    let start = Instant::now();
    // Table 1: positive prototypes identified by the kernel-density initialisation.
    let mut id_one = Vec::new();
    let mut id_two = Vec::new();
    // Table 2 / Table 3 rows.
    let names_one = [
        "Citation-kNN",
        "PCA + Citation-kNN",
        "LDA + Citation-kNN",
        "LFDA + Citation-kNN",
        "CLFDA + Citation-kNN",
        "B-MIDA + Citation-kNN",
    ];
    let names_two = [
        "Citation-kNN",
        "PCA + Citation-kNN",
        "LDA + Citation-kNN",
        "LFDA + Citation-kNN",
        "CLFDA + Citation-kNN",
        "M-MIDA + Citation-kNN",
    ];
    let mut acc_one = vec![Vec::new(); names_one.len()];
    let mut acc_two = vec![Vec::new(); names_two.len()];
    let mut milr_one = vec![Vec::new(); names_one.len()];
    let mut maxh_one = vec![Vec::new(); names_one.len()];
    let mut alphas_maxh = Vec::new();
    let mut milr_two = vec![Vec::new(); names_two.len()];
    let mut alphas_one = Vec::new();
    let mut alphas_two = Vec::new();
    for seed in 1..=seeds {
        let one = mida_one(seed);
        let (train, test) = one.paper_split();
        let fit = Bmida::new(2, 1.0).fit_traced(one.data.select(&train))?;
        let id = fit.identification(&one.positive);
        id_one.push((id.initial, id.bags));
        let mida: Vec<ProjectionParams> = ALPHAS_SYNTHETIC
            .iter()
            .map(|&a| spec(ProjectionKind::Bmida, 2, a))
            .collect();
        let chosen = select(&one.data, &train, &mida, seed)?;
        alphas_one.push(chosen.alpha().unwrap_or(f64::NAN));
        let specs = [
            None,
            Some(spec(ProjectionKind::Pca, 2, 0.0)),
            Some(spec(ProjectionKind::Lda, 1, 0.0)),
            Some(spec(ProjectionKind::Lfda, 2, 0.0)),
            Some(spec(ProjectionKind::Clfda, 2, 0.0)),
            Some(chosen),
        ];
        for (k, s) in specs.iter().enumerate() {
            acc_one[k].push(accuracy(&one.data, &train, &test, s.as_ref())?);
        }
        column(
            Clf::Milr,
            &one.data,
            (&train, &test),
            &specs,
            &mida,
            seed,
            &mut milr_one,
        )?;
        let chosen = column(
            Clf::CknnMax,
            &one.data,
            (&train, &test),
            &specs,
            &mida,
            seed,
            &mut maxh_one,
        )?;
        alphas_maxh.push(chosen.alpha().unwrap_or(f64::NAN));

        let two = mida_two(seed);
        let (train, test) = two.paper_split();
        let fit = Mmida::new(2, 1.0).fit_traced(two.data.select(&train))?;
        id_two.push((
            fit.identification(&two.positive).initial,
            fit.prototype_bags.len(),
        ));
        let mida: Vec<ProjectionParams> = ALPHAS_SYNTHETIC
            .iter()
            .map(|&a| spec(ProjectionKind::Mmida, 2, a))
            .collect();
        let chosen = select(&two.data, &train, &mida, seed)?;
        alphas_two.push(chosen.alpha().unwrap_or(f64::NAN));
        let specs = [
            None,
            Some(spec(ProjectionKind::Pca, 2, 0.0)),
            Some(spec(ProjectionKind::Lda, 2, 0.0)),
            Some(spec(ProjectionKind::Lfda, 2, 0.0)),
            Some(spec(ProjectionKind::Clfda, 2, 0.0)),
            Some(chosen),
        ];
        for (k, s) in specs.iter().enumerate() {
            acc_two[k].push(accuracy(&two.data, &train, &test, s.as_ref())?);
        }
        column(
            Clf::Milr,
            &two.data,
            (&train, &test),
            &specs,
            &mida,
            seed,
            &mut milr_two,
        )?;
        eprintln!("seed {seed} done ({:.0} s)", start.elapsed().as_secs_f64());
    }
    println!("Table 1 (KDE identification, {seeds} seeds)\n");
    println!(
        "| data set | paper | ours: identified / true (mean ± sd) | ours: accuracy % (mean ± sd) |"
    );
    println!("|---|---|---|---|");
    for (name, paper, ids) in [
        ("one", "13 / 20 = 65.0%", &id_one),
        ("two", "41 / 60 = 68.3%", &id_two),
    ] {
        let found: Vec<f64> = ids.iter().map(|&(h, _)| h as f64).collect();
        let rate: Vec<f64> = ids
            .iter()
            .map(|&(h, n)| 100.0 * h as f64 / n as f64)
            .collect();
        let f = Summary::of(&found).expect("finite");
        let r = Summary::of(&rate).expect("finite");
        println!(
            "| {name} | {paper} | {:.1} ± {:.1} / {} | {:.1} ± {:.1} |",
            f.mean, f.sd, ids[0].1, r.mean, r.sd
        );
    }
    println!("\nTable 2 (set one, test accuracy %, {seeds} seeds)\n");
    println!("| algorithm | paper | ours: mean ± sd | 95% CI |");
    println!("|---|---|---|---|");
    let paper_two = ["52.5", "67.5", "57.5", "—", "67.5", "75.0"];
    for (k, n) in names_one.iter().enumerate() {
        line(n, paper_two[k], &acc_one[k]);
    }
    println!("\nα chosen for B-MIDA: {alphas_one:?}");
    println!("\nTable 2 with MILR (noisy-or) in place of Citation-kNN\n");
    println!("| algorithm | paper (Citation-kNN) | ours: mean ± sd | 95% CI |");
    println!("|---|---|---|---|");
    for (k, n) in names_one.iter().enumerate() {
        line(
            &n.replace("Citation-kNN", "MILR"),
            paper_two[k],
            &milr_one[k],
        );
    }
    println!("\nTable 2 with Citation-kNN on the maximal Hausdorff distance\n");
    println!("| algorithm | paper (Citation-kNN) | ours: mean ± sd | 95% CI |");
    println!("|---|---|---|---|");
    for (k, n) in names_one.iter().enumerate() {
        line(n, paper_two[k], &maxh_one[k]);
    }
    println!("\nα chosen for B-MIDA (maximal Hausdorff): {alphas_maxh:?}");
    println!("\nTable 3 (set two, test accuracy %, {seeds} seeds; the paper's classifier is DD-SVM, ours Citation-kNN)\n");
    println!("| algorithm | paper (DD-SVM) | ours: mean ± sd | 95% CI |");
    println!("|---|---|---|---|");
    let paper_three = ["71.7", "73.3", "66.7", "—", "75.0", "83.3"];
    for (k, n) in names_two.iter().enumerate() {
        line(n, paper_three[k], &acc_two[k]);
    }
    println!("\nα chosen for M-MIDA: {alphas_two:?}");
    println!("\nTable 3 with MILR (noisy-or, one-vs-rest) in place of DD-SVM\n");
    println!("| algorithm | paper (DD-SVM) | ours: mean ± sd | 95% CI |");
    println!("|---|---|---|---|");
    for (k, n) in names_two.iter().enumerate() {
        line(
            &n.replace("Citation-kNN", "MILR"),
            paper_three[k],
            &milr_two[k],
        );
    }
    println!("\nsynthetic: {:.1} s", start.elapsed().as_secs_f64());
    Ok(())
}

fn benchmarks(repeats: u64, names: &[&str]) -> Result<()> {
    let paper = |n: &str| match n {
        "musk1" => ("90.0", "98.8"),
        "musk2" => ("89.1", "96.9"),
        "elephant" => ("87.8", "94.8"),
        _ => ("—", "—"),
    };
    println!("\nTable 10 rows (10-fold CV × {repeats}; accuracy %, mean ± sd over repetitions)\n");
    println!("| data set | Citation-kNN: paper | ours | B-MIDA + Citation-kNN: paper | ours | chosen (d, α) | seconds |");
    println!("|---|---|---|---|---|---|---|");
    for name in names {
        let start = Instant::now();
        let data = data::load(name)?;
        let labels = data.labels().unwrap_or_default().to_vec();
        let mut raw = Vec::new();
        let mut mida = Vec::new();
        let mut chosen = Vec::new();
        for r in 0..repeats {
            let seed = derive_seed(1, r);
            let folds = stratified_folds(&labels, 10, seed)?;
            let all: Vec<usize> = (0..data.n_bags()).collect();
            let (mut right_raw, mut right_mida) = (0.0, 0.0);
            for (f, test) in folds.iter().enumerate() {
                let train = complement(&all, test);
                right_raw += accuracy(&data, &train, test, None)? * test.len() as f64;
                let best = select_bmida(&data, &train, derive_seed(seed, f as u64))?;
                chosen.push((best.dim(), best.alpha().unwrap_or(f64::NAN)));
                right_mida += accuracy(&data, &train, test, Some(&best))? * test.len() as f64;
            }
            raw.push(right_raw / data.n_bags() as f64);
            mida.push(right_mida / data.n_bags() as f64);
            eprintln!(
                "{name} repeat {r}: raw {:.3} bmida {:.3} ({:.0} s)",
                raw[r as usize],
                mida[r as usize],
                start.elapsed().as_secs_f64()
            );
        }
        let s_raw = Summary::of(&raw).expect("finite");
        let s_mida = Summary::of(&mida).expect("finite");
        let (p_raw, p_mida) = paper(name);
        println!(
            "| {name} | {p_raw} | {:.1} ± {:.1} | {p_mida} | {:.1} ± {:.1} | {:?} | {:.0} |",
            100.0 * s_raw.mean,
            100.0 * s_raw.sd,
            100.0 * s_mida.mean,
            100.0 * s_mida.sd,
            chosen,
            start.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let what = args.get(1).map(String::as_str).unwrap_or("all");
    let seeds: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(20);
    let repeats: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(1);
    match what {
        "synthetic" => synthetic(seeds),
        "benchmarks" => benchmarks(repeats, &["musk1", "elephant", "musk2"]),
        "all" => {
            synthetic(seeds)?;
            benchmarks(repeats, &["musk1", "elephant", "musk2"])
        }
        one => benchmarks(repeats, &[one]),
    }
}
