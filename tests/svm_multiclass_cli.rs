//! The set-kernel SVM on more than two classes: one-vs-rest through `mil cv`, `mil train`
//! and `mil predict`; `mil export` refuses (exit 2) since the core's SVM head is binary.

use mil_suite::{mil_json, run_mil, temp_dir};

#[test]
fn corel3_svm_is_three_class_and_export_refuses() {
    let v = mil_json(&["cv", "corel3", "--classifier", "svm", "--json"]);
    let accuracy = v["accuracy"].as_f64().unwrap();
    // Three balanced classes: chance is 1/3; one-vs-rest k∧ reaches about 0.78.
    assert!(accuracy > 0.6, "{accuracy}");
    assert!(v["auroc"].is_null());
    let confusion = v["confusion"].as_array().unwrap();
    assert_eq!(confusion.len(), 3);
    // Every class is predicted: each column of the confusion matrix has a count.
    for c in 0..3 {
        let predicted: u64 = confusion.iter().map(|row| row[c].as_u64().unwrap()).sum();
        assert!(predicted > 0, "class {c} never predicted: {confusion:?}");
    }
    let hits: u64 = (0..3).map(|c| confusion[c][c].as_u64().unwrap()).sum();
    assert!((hits as f64 / 300.0 - accuracy).abs() < 1e-12);

    let dir = temp_dir("svm3");
    let model = dir.join("svm3.json");
    let model = model.to_str().unwrap();
    mil_json(&[
        "train",
        "corel3",
        "--classifier",
        "svm",
        "-o",
        model,
        "--json",
    ]);
    let p = mil_json(&["predict", model, "corel3", "--json"]);
    let labels: std::collections::BTreeSet<String> = p["predictions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["label"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(labels.len(), 3, "{labels:?}");
    assert!(p["accuracy"].as_f64().unwrap() > 0.9);
    let out = run_mil(&["export", model, "-o", dir.join("m.milm").to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("one-vs-rest") && err.contains("two classes"),
        "{err}"
    );
    std::fs::remove_dir_all(dir).ok();
}
