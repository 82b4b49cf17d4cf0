//! The library as a new user meets it: the README's Rust library example (also in
//! docs/guide/library.md) fits B-MIDA (d = 10) + Citation-kNN on musk1 fold by fold, and
//! its predictions must be those `mil cv` prints for the same folds.

use mil_suite::run_mil;
use mil_toolkit::classifier::citation_knn::CitationKnn;
use mil_toolkit::pipeline::{cross_validate, Folds, Pipeline};
use mil_toolkit::progress::Silent;
use mil_toolkit::projection::mida::Bmida;
use serde_json::Value;

/// `mil cv`'s out-of-fold label of every bag, by bag id.
fn cli_predictions() -> Vec<(String, String)> {
    let out = run_mil(&[
        "cv",
        "musk1",
        "--classifier",
        "citation-knn",
        "--projection",
        "bmida",
        "--dim",
        "10",
        "--folds",
        "10",
        "--seed",
        "1",
        "--json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    json["predictions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["bag"].as_str().unwrap().to_string(),
                p["label"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn ten_lines_reproduce_mil_cv_fold_predictions() {
    // The README's library example, collecting the labels it prints.
    let data = mil_toolkit::data::load("musk1").unwrap();
    let pipeline = Pipeline::new(CitationKnn::default()).projection(Bmida::default().dim(10));
    let mut predicted = vec![None; data.n_bags()];
    for (train, test) in data.stratified_folds(10, 1).unwrap() {
        let labels = pipeline.fit(&train).unwrap().predict(&test).unwrap();
        for (bag, label) in test.iter().zip(labels) {
            predicted[bag] = Some(label);
        }
    }
    let folds = Folds::Stratified {
        k: 10,
        repeats: 1,
        seed: 1,
    };

    let cli = cli_predictions();
    assert_eq!(cli.len(), data.n_bags());
    for (bag_id, label) in &cli {
        let b = data.bag_ids().iter().position(|id| id == bag_id).unwrap();
        let ours = predicted[b].expect("every bag is in one test fold");
        assert_eq!(&data.class_names()[ours], label, "bag {bag_id}");
    }
    // And the library's own cross-validation agrees with both.
    let report = cross_validate(&pipeline, &data, &folds, &Silent).unwrap();
    for &(b, label, _) in &report.predictions {
        assert_eq!(Some(label), predicted[b]);
    }
}

#[test]
fn defaults_are_the_papers_and_errors_name_parameters() {
    let knn = CitationKnn::default();
    assert_eq!((knn.references, knn.citers, knn.rank), (2, 4, 1));
    let bmida = Bmida::default();
    assert_eq!((bmida.dim, bmida.alpha, bmida.tolerance), (10, 1.0, 1e-6));
    let data = mil_toolkit::data::load("musk1").unwrap();
    // Too many dimensions: the error names the library's parameter, not a CLI flag.
    let err = Pipeline::new(CitationKnn::default())
        .projection(Bmida::default().dim(500))
        .fit(&data)
        .unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with("invalid dim = 500"), "{text}");
    assert!(!text.contains("--"), "{text}");
    let err = Pipeline::new(CitationKnn::default().references(0))
        .fit(&data)
        .unwrap_err();
    assert!(
        err.to_string().starts_with("invalid references = 0"),
        "{err}"
    );
}
