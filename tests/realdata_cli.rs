//! End to end through the `mil` binary: the imbalance report of `mil cv`
//! (`balanced_accuracy`, `per_class`, the collapse warning) and `mil synth term-counts`.

use std::process::Output;

use mil_suite::{run_mil, temp_dir};
use serde_json::Value;

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn json_of(args: &[&str]) -> (Value, String) {
    let mut all = args.to_vec();
    all.push("--json");
    let out = run_mil(&all);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
    (
        serde_json::from_slice(&out.stdout).expect("one JSON object on stdout"),
        stderr(&out),
    )
}

#[test]
fn cv_reports_balanced_accuracy_and_per_class_metrics() {
    let (j, _) = json_of(&[
        "cv",
        "musk1",
        "--classifier",
        "citation-knn",
        "--folds",
        "5",
    ]);
    let confusion: Vec<Vec<f64>> = serde_json::from_value(j["confusion"].clone()).unwrap();
    // Mean of the per-class recalls, from the confusion matrix printed beside it.
    let recalls: Vec<f64> = confusion
        .iter()
        .enumerate()
        .map(|(c, row)| row[c] / row.iter().sum::<f64>())
        .collect();
    let expected = recalls.iter().sum::<f64>() / recalls.len() as f64;
    assert!((j["balanced_accuracy"].as_f64().unwrap() - expected).abs() < 1e-12);
    for (c, class) in ["0", "1"].iter().enumerate() {
        let m = &j["per_class"][class];
        assert!((m["recall"].as_f64().unwrap() - recalls[c]).abs() < 1e-12);
        let predicted: f64 = confusion.iter().map(|row| row[c]).sum();
        assert!((m["precision"].as_f64().unwrap() - confusion[c][c] / predicted).abs() < 1e-12);
        assert!(m["f1"].as_f64().is_some());
    }
    assert!(j["collapsed"].is_null());
}

#[test]
fn term_counts_is_sparse_wide_and_imbalanced_on_request() {
    let dir = temp_dir("term-counts");
    let out = dir.join("tc.csv");
    let out = out.to_str().unwrap();
    let (j, _) = json_of(&[
        "synth",
        "term-counts",
        "--dims",
        "300",
        "--bags",
        "42",
        "--imbalance",
        "20",
        "-o",
        out,
    ]);
    assert_eq!(j["features"], 300);
    assert_eq!(j["bags"], 42);
    assert_eq!(j["bags_per_class"]["1"], 2);
    assert_eq!(j["bags_per_class"]["0"], 40);
    let text = std::fs::read_to_string(out).unwrap();
    let values: Vec<f64> = text
        .lines()
        .flat_map(|l| l.split(',').skip(2).map(|v| v.parse::<f64>().unwrap()))
        .collect();
    assert!(values.iter().all(|&v| v >= 0.0 && v.fract() == 0.0));
    let zeros = values.iter().filter(|&&v| v == 0.0).count();
    assert!(zeros as f64 > 0.8 * values.len() as f64, "mostly zeros");
    // Bad values exit 2 naming the flag.
    for (flag, value) in [("--imbalance", "0.5"), ("--dims", "1")] {
        let o = run_mil(&["synth", "term-counts", flag, value, "-o", out]);
        assert_eq!(o.status.code(), Some(2), "{flag}");
        assert!(stderr(&o).contains(flag), "{flag}: {}", stderr(&o));
    }
    let o = run_mil(&["synth", "mida-one", "--imbalance", "3", "-o", out]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--imbalance"));
}

#[test]
fn a_collapsed_classifier_is_warned_about() {
    let dir = temp_dir("collapse");
    let out = dir.join("imb.csv");
    let out = out.to_str().unwrap();
    json_of(&[
        "synth",
        "term-counts",
        "--dims",
        "200",
        "--bags",
        "105",
        "--imbalance",
        "20",
        "-o",
        out,
    ]);
    let (j, err) = json_of(&[
        "cv",
        out,
        "--classifier",
        "milr",
        "--pooling",
        "mean",
        "--folds",
        "5",
    ]);
    if j["collapsed"].is_string() {
        assert!(
            err.contains("warning: every out-of-fold prediction"),
            "{err}"
        );
        assert!((j["balanced_accuracy"].as_f64().unwrap() - 0.5).abs() < 1e-12);
    }
}
