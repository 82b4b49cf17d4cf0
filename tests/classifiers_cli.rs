//! End-to-end checks of `mil cv`, `mil train` and `mil predict` with the bag classifiers.

use mil_suite::{mil_json, mil_refuses_naming, run_mil, temp_dir};
use serde_json::Value;

/// Runs `mil args`, which must exit with status 2 and name `flag` on stderr.
#[test]
fn cv_reports_the_contract_keys_for_both_classifiers() {
    for flags in [
        &[
            "--classifier",
            "citation-knn",
            "--references",
            "2",
            "--citers",
            "4",
        ][..],
        &["--classifier", "milr"][..],
    ] {
        let classifier = flags[1];
        let mut args = vec!["cv", "musk1", "--folds", "10", "--json", "--quiet"];
        args.extend_from_slice(flags);
        let v = mil_json(&args);
        let acc = v["accuracy"].as_f64().unwrap();
        let auc = v["auroc"].as_f64().unwrap();
        // Published and Weka 10-fold results on musk1 lie between 0.72 and 0.92.
        assert!((0.65..=0.97).contains(&acc), "{classifier}: accuracy {acc}");
        assert!((0.65..=1.0).contains(&auc), "{classifier}: AUROC {auc}");
        assert_eq!(v["folds"], 10);
        let per_fold = v["per_fold"].as_array().unwrap();
        assert_eq!(per_fold.len(), 10);
        // Pooled accuracy is the size-weighted mean of the fold accuracies.
        assert!(v["seconds"].as_f64().unwrap() >= 0.0);
    }
}

#[test]
fn weka_folds_reproduce_wekas_citation_knn() {
    // Weka 3.6 CitationKNN -R 2 -C 4 -x 10 -s 1 on musk1: 82 of 92 correct, AUROC 0.948
    // (data/weka-folds/README.md).
    let folds = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/data/weka-folds/folds_musk1_weka_seed1.csv"
    );
    let v = mil_json(&[
        "cv",
        "musk1",
        "--classifier",
        "citation-knn",
        "--scaling",
        "weka",
        "--folds-file",
        folds,
        "--json",
        "--quiet",
    ]);
    let correct = (v["accuracy"].as_f64().unwrap() * 92.0).round() as usize;
    assert_eq!(correct, 82);
    assert!((v["auroc"].as_f64().unwrap() - 0.948).abs() < 0.0005);
}

#[test]
fn train_then_predict_round_trip() {
    let dir = temp_dir("classifiers");
    for classifier in ["citation-knn", "milr"] {
        let model = dir.join(format!("{classifier}.json"));
        let model = model.to_str().unwrap();
        let t = mil_json(&[
            "train",
            "musk1",
            "--classifier",
            classifier,
            "-o",
            model,
            "--json",
        ]);
        assert_eq!(t["model"], model);
        let p = mil_json(&["predict", model, "musk1", "--json"]);
        let preds = p["predictions"].as_array().unwrap();
        assert_eq!(preds.len(), 92);
        for pred in preds {
            let s = pred["score"].as_f64().unwrap();
            assert!((0.0..=1.0).contains(&s));
            assert!(pred["label"] == "0" || pred["label"] == "1");
            assert!(pred["bag"].is_string());
        }
        // Resubstitution: both classifiers fit musk1's training bags well (Citation-kNN's
        // references include the bag itself at distance 0).
        let acc = p["accuracy"].as_f64().unwrap();
        assert!(acc > 0.9, "{classifier}: training accuracy {acc}");
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn bad_arguments_and_inputs_exit_with_2() {
    let dir = temp_dir("classifiers-bad");
    let bad_model = dir.join("bad.json");
    std::fs::write(
        &bad_model,
        "{\"format\": \"something-else\", \"version\": 1}",
    )
    .unwrap();
    let bad = bad_model.to_str().unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec![
            "cv",
            "musk1",
            "--classifier",
            "citation-knn",
            "--citers",
            "500",
        ],
        vec![
            "cv",
            "musk1",
            "--classifier",
            "citation-knn",
            "--folds",
            "1",
        ],
        vec![
            "cv",
            "musk1",
            "--classifier",
            "citation-knn",
            "--folds",
            "93",
        ],
        vec!["cv", "musk1", "--classifier", "milr", "--ridge", "-1"],
        vec!["cv", "musk1", "--classifier", "nonsense"],
        vec!["cv", "no-such-data", "--classifier", "milr"],
        vec!["cv", "musk1", "--classifier", "milr", "--projection", "pca"],
        vec!["predict", bad, "musk1"],
        vec!["predict", "/no/such/model.json", "musk1"],
    ];
    for args in cases {
        let out = run_mil(&args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "mil {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{err}");
    }
    // The model error names the file.
    let out = run_mil(&["predict", bad, "musk1"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad.json"));
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn predict_rejects_data_of_another_dimension() {
    let dir = temp_dir("classifiers-dim");
    let model = dir.join("m.json");
    let model = model.to_str().unwrap();
    mil_json(&[
        "train",
        "musk1",
        "--classifier",
        "milr",
        "-o",
        model,
        "--json",
    ]);
    let out = run_mil(&["predict", model, "elephant"]);
    assert_eq!(out.status.code(), Some(2));
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn citation_knn_on_the_maximal_hausdorff_distance() {
    let dir = temp_dir("classifiers-hausdorff");
    let model = dir.join("max.json");
    let m = model.to_str().unwrap();
    let min = mil_json(&[
        "cv",
        "musk1",
        "--classifier",
        "citation-knn",
        "--folds",
        "5",
        "--json",
        "--quiet",
    ]);
    let max = mil_json(&[
        "cv",
        "musk1",
        "--classifier",
        "citation-knn",
        "--hausdorff",
        "max",
        "--folds",
        "5",
        "--json",
        "--quiet",
    ]);
    assert_ne!(min["predictions"], max["predictions"]);
    assert!(
        max["accuracy"].as_f64().unwrap() > 0.6,
        "{}",
        max["accuracy"]
    );
    // A rank goes with the minimal distance only; the core runs the minimal distance only.
    mil_refuses_naming(
        &[
            "cv",
            "musk1",
            "--classifier",
            "citation-knn",
            "--hausdorff",
            "max",
            "--rank",
            "2",
        ],
        "--rank",
    );
    mil_json(&[
        "train",
        "musk1",
        "--classifier",
        "citation-knn",
        "--hausdorff",
        "avg",
        "-o",
        m,
        "--json",
    ]);
    let out = run_mil(&["export", m, "-o", dir.join("m.milm").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("hausdorff = avg"));
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_ridge_list_is_chosen_by_nested_cv_and_reported() {
    // Ridge 10⁶ shrinks MILR to its intercept (one class for every bag), so every inner
    // CV prefers ridge 1; the outer result is then that of `--ridge 1` exactly.
    let listed = mil_json(&[
        "cv",
        "musk1",
        "--classifier",
        "milr",
        "--ridge",
        "1e6,1",
        "--json",
        "--quiet",
    ]);
    let single = mil_json(&[
        "cv",
        "musk1",
        "--classifier",
        "milr",
        "--ridge",
        "1",
        "--json",
        "--quiet",
    ]);
    let chosen = listed["chosen"].as_array().unwrap();
    assert_eq!(chosen.len(), 10);
    for c in chosen {
        assert_eq!(c["ridge"], 1.0, "{c}");
        assert!(c.get("dim").is_none(), "no projection: {c}");
    }
    // Without a list nothing is chosen and `chosen` stays null per fold.
    assert!(single["chosen"]
        .as_array()
        .unwrap()
        .iter()
        .all(Value::is_null));
    for key in ["predictions", "per_fold", "accuracy", "auroc", "confusion"] {
        assert_eq!(listed[key], single[key], "{key}");
    }
    // Ridge 10⁶ shrinks every bag's score towards the intercept's: choosing by AUROC picks
    // ridge 1 too.
    let by_auroc = mil_json(&[
        "cv",
        "musk1",
        "--classifier",
        "milr",
        "--ridge",
        "1e6,1",
        "--select",
        "auroc",
        "--json",
        "--quiet",
    ]);
    for (a, l) in by_auroc["chosen"]
        .as_array()
        .unwrap()
        .iter()
        .zip(listed["chosen"].as_array().unwrap())
    {
        assert_eq!(a["ridge"], l["ridge"]);
        assert_eq!(
            (a["metric"].as_str(), l["metric"].as_str()),
            (Some("auroc"), Some("accuracy"))
        );
        // Every fold reports both candidates' inner scores, ridge 10⁶ last.
        let inner = a["inner"].as_array().unwrap();
        assert_eq!(inner.len(), 2, "{a}");
        assert!(
            inner[1]["candidate"]
                .as_str()
                .unwrap()
                .contains("ridge 1000000"),
            "{a}"
        );
        assert!(
            inner[1]["score"].as_f64() < inner[0]["score"].as_f64(),
            "{a}"
        );
    }
    assert_eq!(by_auroc["predictions"], single["predictions"]);
    // AUROC needs two classes.
    mil_refuses_naming(
        &[
            "cv",
            "corel3",
            "--classifier",
            "milr",
            "--ridge",
            "0.1,1",
            "--select",
            "auroc",
            "--quiet",
        ],
        "--select",
    );

    // `mil train` chooses the same way, reports it and saves the chosen ridge.
    let dir = temp_dir("ridge-list");
    let model = dir.join("m.json");
    let model = model.to_str().unwrap();
    let t = mil_json(&[
        "train",
        "musk1",
        "--classifier",
        "milr",
        "--ridge",
        "1e6,1",
        "-o",
        model,
        "--json",
    ]);
    assert_eq!(t["chosen"]["ridge"], 1.0, "{t}");
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(model).unwrap()).unwrap();
    assert_eq!(saved["classifier"]["params"]["ridge"], 1.0);
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn bad_ridge_lists_exit_2_naming_ridge() {
    let cases: [&[&str]; 6] = [
        &[
            "cv",
            "musk1",
            "--classifier",
            "citation-knn",
            "--ridge",
            "1,10",
        ],
        &[
            "train",
            "musk1",
            "--classifier",
            "svm",
            "--ridge",
            "1,10",
            "-o",
            "x.json",
        ],
        &["cv", "musk1", "--classifier", "milr", "--ridge", "-1"],
        &["cv", "musk1", "--classifier", "milr", "--ridge", "1,-1"],
        &["cv", "musk1", "--classifier", "milr", "--ridge", "0.1,NaN"],
        &["cv", "musk1", "--classifier", "milr", "--ridge", "inf,1"],
    ];
    for args in cases {
        let out = run_mil(args);
        assert_eq!(out.status.code(), Some(2), "mil {args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("invalid --ridge"), "mil {args:?}: {err}");
        assert!(out.stdout.is_empty(), "mil {args:?}");
    }
    let out = run_mil(cases[0]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("milr"));
}
