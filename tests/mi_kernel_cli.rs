//! The MI kernel (`--kernel mi-rbf`) with Weka MISMO's pre-processing (`--scaling weka`,
//! `--scaling minmax`): cross-validation on Weka's folds against MISMO's own predictions,
//! the shared `--scaling` flag, export to the core.

use mil_suite::{mil_json, mil_refuses_naming, temp_dir};

/// `mil cv D --classifier svm --kernel mi-rbf --scaling S --folds-file …` on Weka's folds.
fn cv_on_wekas_folds(data: &str, scaling: Option<&str>) -> serde_json::Value {
    let folds = format!(
        "{}/data/weka-folds/folds_{data}_weka_seed1.csv",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut args = vec!["cv", data, "--classifier", "svm", "--kernel", "mi-rbf"];
    if let Some(s) = scaling {
        args.extend(["--scaling", s]);
    }
    args.extend(["--folds-file", &folds, "--json"]);
    mil_json(&args)
}

/// Weka 3.6.14's MISMO predictions per bag (`data/weka-folds/mismo_D_weka_seed1.csv`,
/// written by Weka itself; see that directory's README): bag id → predicted class.
fn mismo_predictions(data: &str) -> Vec<(String, String)> {
    let path = format!(
        "{}/data/weka-folds/mismo_{data}_weka_seed1.csv",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[0].to_string(), f[2].to_string())
        })
        .collect()
}

#[test]
fn mismo_predictions_bag_for_bag() {
    // `--scaling weka` is what MISMO computes (min-max, and the third attribute out of the
    // kernel); C is bounded per bag by C·(instances/bags) as MISMO's bag weights do. Every
    // bag of the three data sets gets MISMO's class, so the confusion matrices are
    // MISMO's (musk2: 82.4 %).
    for data in ["musk1", "elephant", "musk2"] {
        let v = cv_on_wekas_folds(data, Some("weka"));
        let ours: std::collections::HashMap<&str, &str> = v["predictions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p["bag"].as_str().unwrap(), p["label"].as_str().unwrap()))
            .collect();
        let weka = mismo_predictions(data);
        assert_eq!(ours.len(), weka.len(), "{data}");
        let differ: Vec<&str> = weka
            .iter()
            .filter(|(bag, class)| ours[bag.as_str()] != class)
            .map(|(bag, _)| bag.as_str())
            .collect();
        assert!(
            differ.is_empty(),
            "{data}: bags {differ:?} differ from MISMO"
        );
    }
    let musk2 = cv_on_wekas_folds("musk2", Some("weka"));
    assert_eq!(musk2["confusion"], serde_json::json!([[53, 10], [8, 31]]));
}

#[test]
fn minmax_is_mismo_without_its_attribute_skip() {
    // Plain min-max keeps the third attribute: musk1 and elephant still get MISMO's class
    // on every bag, musk2 differs on two bags whose decision values lie within 0.2 of 0.
    let v = cv_on_wekas_folds("musk1", Some("minmax"));
    let weka = mismo_predictions("musk1");
    let same = v["predictions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| {
            weka.iter()
                .any(|(b, c)| b == p["bag"].as_str().unwrap() && c == p["label"].as_str().unwrap())
        })
        .count();
    assert_eq!(same, 92);
    // `auto` is minmax for the MI kernel: the same result.
    let auto = cv_on_wekas_folds("musk1", None);
    assert_eq!(auto["predictions"], v["predictions"]);
    let musk2 = cv_on_wekas_folds("musk2", Some("minmax"));
    assert_eq!(musk2["confusion"], serde_json::json!([[54, 9], [7, 32]]));
}

#[test]
fn mi_kernel_flags_and_export() {
    // `mil cv musk1 ARGS` refuses (exit 2) naming FLAG.
    let refused = [
        ("--classifier citation-knn --scaling minmax", "--scaling"),
        (
            "--classifier svm --kernel mi-rbf --scaling zscore",
            "--scaling",
        ),
        ("--classifier svm --kernel mi-rbf --gamma -1", "--gamma"),
        ("--classifier svm --kernel mi-rbf --map emp", "--map"),
        ("--classifier svm --scaling bogus", "--scaling"),
        // MISMO's attribute skip names an input attribute: not after a projection.
        (
            "--classifier svm --kernel mi-rbf --scaling weka --projection bmida --dim 5",
            "--scaling",
        ),
        // MISMO's attribute skip belongs to its MI kernel only.
        ("--classifier svm --kernel kand --scaling weka", "--scaling"),
    ];
    for (args, flag) in refused {
        let mut all = vec!["cv", "musk1"];
        all.extend(args.split_whitespace());
        mil_refuses_naming(&all, flag);
    }
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

#[test]
fn a_scaled_gamma_is_fitted_on_the_training_bags_and_saved_as_its_value() {
    for args in [
        "--classifier svm --kernel nsk --gamma scaled",
        "--classifier miles --gamma scaled",
        "--classifier svm --kernel mi-rbf --gamma 0*scaled",
    ] {
        let mut all = vec!["cv", "musk1"];
        all.extend(args.split_whitespace());
        mil_refuses_naming(&all, "--gamma");
    }
    let dir = temp_dir("mi-kernel-scaled");
    let path = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let train = |gamma: &str, model: &str| {
        mil_json(&[
            "train",
            "musk1",
            "--classifier",
            "svm",
            "--kernel",
            "mi-rbf",
            "--gamma",
            gamma,
            "-o",
            model,
            "--json",
        ])
    };
    let (scaled, fixed) = (path("scaled.json"), path("fixed.json"));
    train("scaled", &scaled);
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&scaled).unwrap()).unwrap();
    let gamma = saved["classifier"]["kernel"]["gamma"]
        .as_f64()
        .unwrap_or_else(|| panic!("no numeric gamma in {}", saved["classifier"]["kernel"]));
    // musk1's 166 features scaled to [0, 1] spread with Σ Var ≈ 8.3 (the SVM page).
    assert!((0.10..0.14).contains(&gamma), "{gamma}");
    train(&format!("{gamma:?}"), &fixed);
    let predict =
        |model: &str| mil_json(&["predict", model, "musk1", "--json"])["predictions"].clone();
    assert_eq!(predict(&scaled), predict(&fixed));
    let e = mil_json(&[
        "export",
        &scaled,
        "--format",
        "f32",
        "-o",
        &path("m.milm"),
        "--json",
    ]);
    assert_eq!(e["labels_agree"], 92, "{e}");
    // In cross-validation each fold fits its own γ; a list puts it beside a fixed one.
    let cv = mil_json(&[
        "cv",
        "musk1",
        "--classifier",
        "svm",
        "--kernel",
        "mi-rbf",
        "--gamma",
        "scaled,0.01",
        "--folds",
        "3",
        "--json",
    ]);
    assert_eq!(cv["predictions"].as_array().unwrap().len(), 92, "{cv}");
    std::fs::remove_dir_all(dir).ok();
}
