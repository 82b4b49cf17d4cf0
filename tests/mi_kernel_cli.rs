//! The MI kernel (`--kernel mi-rbf`) with Weka MISMO's pre-processing (`--scaling minmax`):
//! cross-validation on Weka's folds, the shared `--scaling` flag, export to the core in f32.

use mil_suite::{mil_json, mil_refuses_naming, temp_dir};

#[test]
fn mi_kernel_on_wekas_musk1_folds() {
    let folds = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/data/weka-folds/folds_musk1_weka_seed1.csv"
    );
    let v = mil_json(&[
        "cv",
        "musk1",
        "--classifier",
        "svm",
        "--kernel",
        "mi-rbf",
        "--scaling",
        "minmax",
        "--folds-file",
        folds,
        "--json",
    ]);
    // MISMO: 87.0 % (with its logistic calibration, -M); ours 83.7 % on these folds.
    let accuracy = v["accuracy"].as_f64().unwrap();
    assert!(accuracy >= 0.8, "{accuracy}");
    assert!(v["auroc"].as_f64().unwrap() >= 0.85);
    // `auto` is minmax for the MI kernel: the same result.
    let auto = mil_json(&[
        "cv",
        "musk1",
        "--classifier",
        "svm",
        "--kernel",
        "mi-rbf",
        "--folds-file",
        folds,
        "--json",
    ]);
    assert_eq!(auto["accuracy"], v["accuracy"]);
}

#[test]
fn mi_kernel_flags_and_export() {
    mil_refuses_naming(
        &[
            "cv",
            "musk1",
            "--classifier",
            "citation-knn",
            "--scaling",
            "minmax",
        ],
        "--scaling",
    );
    mil_refuses_naming(
        &[
            "cv",
            "musk1",
            "--classifier",
            "svm",
            "--kernel",
            "mi-rbf",
            "--scaling",
            "zscore",
        ],
        "--scaling",
    );
    mil_refuses_naming(
        &[
            "cv",
            "musk1",
            "--classifier",
            "svm",
            "--kernel",
            "mi-rbf",
            "--gamma",
            "-1",
        ],
        "--gamma",
    );
    mil_refuses_naming(
        &[
            "cv",
            "musk1",
            "--classifier",
            "svm",
            "--kernel",
            "mi-rbf",
            "--map",
            "emp",
        ],
        "--map",
    );
    mil_refuses_naming(
        &["cv", "musk1", "--classifier", "svm", "--scaling", "bogus"],
        "--scaling",
    );
    let dir = temp_dir("mi-kernel");
    let model = dir.join("mi.json");
    let model = model.to_str().unwrap();
    mil_json(&[
        "train",
        "musk1",
        "--classifier",
        "svm",
        "--kernel",
        "mi-rbf",
        "-o",
        model,
        "--json",
    ]);
    // Explanations: each instance's additive share of the decision value.
    let p = mil_json(&["predict", model, "musk1", "--explain", "--json"]);
    let e = &p["predictions"][0]["explanation"];
    assert_eq!(e["score_kind"], "contribution");
    assert_eq!(e["witnesses"].as_array().unwrap().len(), 1);
    // Export: f32 runs on the core with the host's labels on every training bag.
    let milm = dir.join("m.milm");
    let milm = milm.to_str().unwrap();
    let e = mil_json(&["export", model, "--format", "f32", "-o", milm, "--json"]);
    assert_eq!(e["labels_agree"], 92, "{e}");
    assert!(e["max_abs_error"].as_f64().unwrap() <= e["error_bound"].as_f64().unwrap());
    let i = mil_json(&["inspect", milm, "--json"]);
    assert_eq!(i["kind"], "mi-kernel-svm", "{i}");
    let q = mil_json(&["export", model, "--format", "q15", "-o", milm, "--json"]);
    assert!(q["max_abs_error"].as_f64().unwrap() <= q["error_bound"].as_f64().unwrap());
    std::fs::remove_dir_all(dir).ok();
}
