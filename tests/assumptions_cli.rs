//! Raff & Holt's algorithmic unit tests through the command line: `mil synth rh-*` writes
//! a training split (with a shortcut that breaks the MIL assumption) and a test split
//! (where the shortcut points the wrong way), `mil train` fits every classifier on the
//! training bags and `mil predict --json` scores the test bags.
//!
//! What is asserted is what the method pages claim (docs/guide/assumptions.md has the
//! table over five seeds and two dimensions, from `benches/assumptions.py`):
//! - the methods whose bag score is a presence (max or noisy-or) of a learned instance
//!   concept reach a mean test AUROC of at least 0.75 on the single-concept test;
//! - those methods and DD/EM-DD, whose one-point concept learns this set's wide concept
//!   poorly, do not use the shortcut: their test AUROC is no lower than their AUROC on
//!   fresh bags drawn like the training bags, within 3 standard errors;
//! - the methods documented to fail a test rank its test bags worse than chance.
//!
//! Every other result is printed, not asserted.

use std::path::Path;

use mil_suite::{mil_json, mil_refuses_naming, run_mil, temp_dir};

/// Features and bags of every set (half of the bags positive). At D = 32 a learned
/// linear concept reaches a test AUROC near 0.9 on the single-concept test; at D = 4
/// the best linear presence score reaches only about 0.79 (the concept N(1·1, I) then
/// lies at distance 2 from the background's mean).
const DIMS: &str = "32";
const BAGS: &str = "80";

const SINGLE: &str = "rh-single";
const MULTI: &str = "rh-multi";
const FALSE_FREQUENCY: &str = "rh-false-frequency";

/// Every classifier setting: (name, `mil train` arguments). The box kernels take a
/// coarser ε and δ than their defaults to keep their Gram matrices quick.
const METHODS: &[(&str, &[&str])] = &[
    (
        "citation-knn",
        &[
            "--classifier",
            "citation-knn",
            "--references",
            "2",
            "--citers",
            "4",
        ],
    ),
    (
        "milr-noisy-or",
        &["--classifier", "milr", "--pooling", "noisy-or"],
    ),
    ("milr-max", &["--classifier", "milr", "--pooling", "max"]),
    (
        "milr-softmax",
        &["--classifier", "milr", "--pooling", "softmax"],
    ),
    ("milr-mean", &["--classifier", "milr", "--pooling", "mean"]),
    (
        "milr-geometric",
        &["--classifier", "milr", "--pooling", "geometric"],
    ),
    (
        "simple-mi-mean",
        &["--classifier", "simple-mi", "--summary", "mean"],
    ),
    (
        "simple-mi-geometric",
        &["--classifier", "simple-mi", "--summary", "geometric"],
    ),
    (
        "simple-mi-minmax",
        &["--classifier", "simple-mi", "--summary", "minmax"],
    ),
    (
        "mi-wrapper-arithmetic",
        &["--classifier", "mi-wrapper", "--combine", "arithmetic"],
    ),
    (
        "mi-wrapper-geometric",
        &["--classifier", "mi-wrapper", "--combine", "geometric"],
    ),
    (
        "mi-wrapper-max",
        &["--classifier", "mi-wrapper", "--combine", "max"],
    ),
    ("mi-vlad", &["--classifier", "mi-vlad"]),
    ("mi-fv", &["--classifier", "mi-fv"]),
    ("mi-svm", &["--classifier", "mi-svm"]),
    ("mi-svm-rbf", &["--classifier", "mi-svm", "--kernel", "rbf"]),
    ("mi-svm-bag", &["--classifier", "mi-svm-bag"]),
    (
        "mi-svm-bag-rbf",
        &["--classifier", "mi-svm-bag", "--kernel", "rbf"],
    ),
    ("smil", &["--classifier", "smil"]),
    ("sbmil", &["--classifier", "sbmil"]),
    ("dd", &["--classifier", "dd"]),
    ("em-dd", &["--classifier", "em-dd"]),
    (
        "svm-kand",
        &[
            "--classifier",
            "svm",
            "--kernel",
            "kand",
            "--epsilon",
            "0.5",
            "--delta",
            "0.1",
        ],
    ),
    (
        "svm-kandor",
        &[
            "--classifier",
            "svm",
            "--kernel",
            "kandor",
            "--epsilon",
            "0.5",
            "--delta",
            "0.1",
        ],
    ),
    (
        "svm-kmin",
        &[
            "--classifier",
            "svm",
            "--kernel",
            "kmin",
            "--epsilon",
            "0.5",
            "--delta",
            "0.1",
        ],
    ),
    ("svm-nsk", &["--classifier", "svm", "--kernel", "nsk"]),
    (
        "svm-mi-rbf",
        &[
            "--classifier",
            "svm",
            "--kernel",
            "mi-rbf",
            "--scaling",
            "minmax",
        ],
    ),
];

/// Single concept: presence models that must pass.
const SINGLE_PASS: &[&str] = &["milr-noisy-or", "milr-max", "mi-svm", "mi-svm-bag", "sbmil"];
/// Single concept: models that must not use the shortcut (the passing ones and DD/EM-DD).
const SINGLE_NO_SHORTCUT: &[&str] = &[
    "milr-noisy-or",
    "milr-max",
    "mi-svm",
    "mi-svm-bag",
    "sbmil",
    "dd",
    "em-dd",
];

/// The probability that a positive bag outscores a negative one, ties counting half.
fn auroc(scores: &[(f64, bool)]) -> f64 {
    let pos: Vec<f64> = scores.iter().filter(|s| s.1).map(|s| s.0).collect();
    let neg: Vec<f64> = scores.iter().filter(|s| !s.1).map(|s| s.0).collect();
    assert!(!pos.is_empty() && !neg.is_empty());
    let mut wins = 0.0;
    for p in &pos {
        for n in &neg {
            wins += if p > n {
                1.0
            } else if p == n {
                0.5
            } else {
                0.0
            };
        }
    }
    wins / (pos.len() * neg.len()) as f64
}

/// Hanley & McNeil's (1982) standard error of an AUROC `a` from `n_pos` and `n_neg` bags.
fn auroc_se(a: f64, n_pos: f64, n_neg: f64) -> f64 {
    let q1 = a / (2.0 - a);
    let q2 = 2.0 * a * a / (1.0 + a);
    ((a * (1.0 - a) + (n_pos - 1.0) * (q1 - a * a) + (n_neg - 1.0) * (q2 - a * a))
        / (n_pos * n_neg))
        .sqrt()
}

/// Writes one split with `mil synth` and returns its path.
fn synth(dir: &Path, test: &str, split: &str, seed: u64) -> String {
    let path = dir.join(format!("{test}-{split}-{seed}.csv"));
    let path = path.to_str().unwrap().to_string();
    let seed = seed.to_string();
    let report = mil_json(&[
        "synth", test, "-o", &path, "--dims", DIMS, "--bags", BAGS, "--seed", &seed, "--split",
        split, "--json",
    ]);
    assert_eq!(report["split"], split);
    path
}

/// Fits `args` on `train` and returns its AUROC on each of `scored` (a bag is positive
/// when its id starts with `pos-`, as `mil synth` names them).
fn fit_and_score(dir: &Path, name: &str, args: &[&str], train: &str, scored: &[&str]) -> Vec<f64> {
    let model = dir.join(format!("{name}.json"));
    let model = model.to_str().unwrap();
    let mut train_args = vec!["train", train, "-o", model, "--json", "--quiet"];
    train_args.extend_from_slice(args);
    mil_json(&train_args);
    scored
        .iter()
        .map(|data| {
            let p = mil_json(&["predict", model, data, "--json", "--quiet"]);
            let scores: Vec<(f64, bool)> = p["predictions"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| {
                    let id = b["bag"].as_str().unwrap();
                    (b["score"].as_f64().unwrap(), id.starts_with("pos-"))
                })
                .collect();
            auroc(&scores)
        })
        .collect()
}

fn args_of(name: &str) -> &'static [&'static str] {
    METHODS.iter().find(|m| m.0 == name).unwrap().1
}

/// Every method's test AUROC on one test at seed 1, printed; returns them by name.
fn record(dir: &Path, test: &str) -> Vec<(&'static str, f64)> {
    let train = synth(dir, test, "train", 1);
    let scored = synth(dir, test, "test", 1);
    let out: Vec<(&str, f64)> = METHODS
        .iter()
        .map(|(name, args)| (*name, fit_and_score(dir, name, args, &train, &[&scored])[0]))
        .collect();
    for (name, a) in &out {
        eprintln!("{test} D={DIMS} seed 1: {name:24} test AUROC {a:.3}");
    }
    out
}

/// The methods documented to fail `test` rank its test bags worse than chance.
fn documented_failures_fail(results: &[(&str, f64)], test: &str, failing: &[&str]) {
    for name in failing {
        let a = results.iter().find(|r| r.0 == *name).unwrap().1;
        assert!(
            a < 0.5,
            "{test}: {name} is documented to fail but has test AUROC {a}"
        );
    }
}

#[test]
fn single_concept() {
    let dir = temp_dir("assumptions-single");
    let results = record(&dir, SINGLE);
    documented_failures_fail(
        &results,
        SINGLE,
        &[
            "citation-knn",
            "milr-geometric",
            "simple-mi-mean",
            "simple-mi-geometric",
            "simple-mi-minmax",
            "mi-wrapper-geometric",
            "mi-vlad",
            "mi-fv",
            "smil",
            "svm-nsk",
        ],
    );
    // The MI kernel at its default γ passes (the SVM page: a γ scaled to the data makes
    // it fail), though three seeds show it leaning on the poison a little.
    let mi = results.iter().find(|r| r.0 == "svm-mi-rbf").unwrap().1;
    assert!(mi >= 0.75, "svm-mi-rbf: test AUROC {mi} below 0.75");

    // Three seeds: the mean test AUROC, and the mean AUROC on fresh bags drawn like the
    // training bags (another seed's training split: the poison in its negative bags).
    let seeds = [1u64, 2, 3];
    let splits: Vec<[String; 3]> = seeds
        .iter()
        .map(|&s| {
            [
                synth(&dir, SINGLE, "train", s),
                synth(&dir, SINGLE, "test", s),
                synth(&dir, SINGLE, "train", s + 100),
            ]
        })
        .collect();
    let half: f64 = BAGS.parse::<f64>().unwrap() / 2.0;
    for name in SINGLE_NO_SHORTCUT {
        let (mut test, mut fresh, mut var) = (0.0, 0.0, 0.0);
        for [train, scored, iid] in &splits {
            let a = fit_and_score(&dir, name, args_of(name), train, &[scored, iid]);
            test += a[0] / seeds.len() as f64;
            fresh += a[1] / seeds.len() as f64;
            var += auroc_se(a[0], half, half).powi(2) + auroc_se(a[1], half, half).powi(2);
        }
        // The variance of the difference of two means of independent seeds.
        let se = var.sqrt() / seeds.len() as f64;
        eprintln!(
            "{SINGLE}: {name:16} mean test AUROC {test:.3}, on fresh training-like bags {fresh:.3}"
        );
        assert!(
            test >= fresh - 3.0 * se,
            "{name} uses the shortcut: test AUROC {test} against {fresh} on training-like bags (se {se})"
        );
        if SINGLE_PASS.contains(name) {
            assert!(test >= 0.75, "{name}: mean test AUROC {test} below 0.75");
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn multi_concept() {
    let dir = temp_dir("assumptions-multi");
    let results = record(&dir, MULTI);
    documented_failures_fail(
        &results,
        MULTI,
        &[
            "milr-geometric",
            "simple-mi-mean",
            "simple-mi-geometric",
            "simple-mi-minmax",
            "mi-fv",
            "smil",
        ],
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn false_frequency() {
    let dir = temp_dir("assumptions-false-frequency");
    let results = record(&dir, FALSE_FREQUENCY);
    documented_failures_fail(
        &results,
        FALSE_FREQUENCY,
        &[
            "milr-mean",
            "milr-geometric",
            "simple-mi-mean",
            "mi-wrapper-arithmetic",
            "mi-wrapper-geometric",
            "smil",
            "svm-mi-rbf",
        ],
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn synth_writes_both_splits_and_refuses_what_does_not_apply() {
    let dir = temp_dir("assumptions-synth");
    let out = dir.join("s.csv");
    let out = out.to_str().unwrap();
    let truth = dir.join("t.csv");
    let truth = truth.to_str().unwrap();
    for test in [SINGLE, MULTI, FALSE_FREQUENCY] {
        // The training split is the default; the two splits of one seed differ.
        let a = mil_json(&[
            "synth", test, "-o", out, "--dims", "3", "--bags", "10", "--json",
        ]);
        assert_eq!(a["split"], "train");
        let train = std::fs::read_to_string(out).unwrap();
        let b = mil_json(&[
            "synth", test, "-o", out, "--dims", "3", "--bags", "10", "--split", "test", "--truth",
            truth, "--json",
        ]);
        assert_eq!(
            (b["bags"].as_u64(), b["features"].as_u64()),
            (Some(10), Some(3))
        );
        assert_ne!(train, std::fs::read_to_string(out).unwrap());
        // One truth line per instance, as `mil synth --truth` writes for every set.
        let lines = std::fs::read_to_string(truth).unwrap().lines().count();
        assert_eq!(Some(lines as u64), b["instances"].as_u64());
        mil_refuses_naming(&["synth", test, "-o", out, "--relevant", "2"], "--relevant");
        mil_refuses_naming(&["synth", test, "-o", out, "--bags", "1"], "--bags");
        mil_refuses_naming(&["synth", test, "-o", out, "--dims", "0"], "--dims");
        mil_refuses_naming(
            &["synth", test, "-o", out, "--imbalance", "2"],
            "--imbalance",
        );
    }
    mil_refuses_naming(
        &["synth", "mida-one", "-o", out, "--split", "test"],
        "--split",
    );
    let bad = run_mil(&["synth", SINGLE, "-o", out, "--split", "validation"]);
    assert_eq!(bad.status.code(), Some(2));
    std::fs::remove_dir_all(&dir).ok();
}
