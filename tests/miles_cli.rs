//! `mil train/predict/cv/export` with MILES: the command line fits the library's model,
//! `mil cv` predicts each bag with the model of its fold, `--explain` gives every
//! instance's contribution, `mil export` writes the compact model the core runs with the
//! host's labels, and what does not apply is refused.

use mil_suite::{
    assert_cv_is_the_librarys, assert_explained_as_the_library, find_key, mil_json,
    mil_refuses_naming, run_mil, temp_dir,
};
use mil_toolkit::classifier::miles::Miles;
use mil_toolkit::classifier::{BagModel, Classifier};

#[test]
fn train_predict_and_cv_give_the_librarys_model() {
    let dir = temp_dir("miles");
    let musk1 = mil_toolkit::data::load("musk1").unwrap();
    let flags = ["--classifier", "miles", "--cost", "5", "--gamma", "0.004"];
    let params = Miles::default().cost(5.0).gamma(Some(0.004));
    // The instance scores are the library's, and the witness is the largest.
    let lib = params.fit(&musk1).unwrap();
    assert_explained_as_the_library(
        &dir,
        "miles",
        &flags,
        &lib,
        "contribution",
        1e-9,
        |_, bag| lib.decision(bag).1,
    );

    // `mil cv`: each bag's label is that of the model fitted on its fold's training
    // bags (the library's folds of the same seed).
    assert_cv_is_the_librarys("musk1", 5, &flags, &params, "musk1");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn flags_of_other_classifiers_exports_and_damaged_models_are_refused() {
    for (args, flag) in [
        (
            &["cv", "musk1", "--classifier", "miles", "--eta", "0.2"][..],
            "--eta",
        ),
        (
            &["cv", "musk1", "--classifier", "smil", "--mu", "0.3"][..],
            "--mu",
        ),
        (
            &["cv", "musk1", "--classifier", "miles", "--mu", "1"][..],
            "mu",
        ),
        (
            &["cv", "musk1", "--classifier", "miles", "--cost", "0"][..],
            "cost",
        ),
        (
            &["cv", "musk1", "--classifier", "miles", "--gamma", "-1"][..],
            "gamma",
        ),
        (
            &[
                "cv",
                "musk1",
                "--classifier",
                "miles",
                "--max-prototypes",
                "0",
            ][..],
            "max-prototypes",
        ),
        (
            &["cv", "musk1", "--classifier", "miles", "--kernel", "rbf"][..],
            "--kernel",
        ),
        (
            &["cv", "musk1", "--classifier", "miles", "--scaling", "none"][..],
            "--scaling",
        ),
    ] {
        mil_refuses_naming(args, flag);
    }

    let dir = temp_dir("miles-bad");
    let model = dir.join("miles.json");
    mil_json(&[
        "train",
        "musk1",
        "--classifier",
        "miles",
        "-o",
        model.to_str().unwrap(),
        "--json",
    ]);
    // One weight dropped: refused (its checksum no longer matches).
    let text = std::fs::read_to_string(model).unwrap();
    let mut json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let weights = find_key(&mut json, "weights").expect("the weights");
    weights.as_array_mut().unwrap().pop();
    let damaged = dir.join("miles-damaged.json");
    std::fs::write(&damaged, json.to_string()).unwrap();
    let out = run_mil(&["predict", damaged.to_str().unwrap(), "musk1"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("miles-damaged.json"), "{err}");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn export_runs_on_the_core_with_the_hosts_labels() {
    // `mil export` in every encoding: the core's labels equal the host model's on every
    // training bag, the largest deviation lies within the bound the core states, and the
    // core, run here on the written bytes, gives the host library's labels.
    let dir = temp_dir("miles-export");
    let model = dir.join("miles.json");
    let model = model.to_str().unwrap();
    mil_json(&[
        "train",
        "musk1",
        "--classifier",
        "miles",
        "-o",
        model,
        "--json",
    ]);
    let musk1 = mil_toolkit::data::load("musk1").unwrap();
    let host = Miles::default().fit(&musk1).unwrap();
    let labels = host.scores(&musk1).unwrap().labels();
    for format in ["f32", "q15", "q7"] {
        let milm = dir.join(format!("m-{format}.milm"));
        let milm = milm.to_str().unwrap();
        let e = mil_json(&["export", model, "--format", format, "-o", milm, "--json"]);
        assert_eq!(e["kind"], "miles", "{e}");
        assert_eq!(e["labels_agree"], 92, "{format}: {e}");
        assert!(
            e["max_abs_error"].as_f64().unwrap() <= e["error_bound"].as_f64().unwrap(),
            "{format}: {e}"
        );
        let i = mil_json(&["inspect", milm, "--json"]);
        assert_eq!(i["kind"], "miles", "{i}");
        assert_eq!(i["prototypes"], host.weights.len(), "{i}");
        let bytes = std::fs::read(milm).unwrap();
        let core = mil_core::Model::parse(&bytes).unwrap();
        for (b, &label) in labels.iter().enumerate() {
            let d = mil_toolkit::export::core_miles_decide(&core, musk1.bag(b)).unwrap();
            assert_eq!(d.label, label, "{format} bag {b}");
        }
    }
    // A projection in front of MILES has no place in the compact model.
    let projected = dir.join("projected.json");
    let projected = projected.to_str().unwrap();
    mil_json(&[
        "train",
        "musk1",
        "--classifier",
        "miles",
        "--projection",
        "pca",
        "--dim",
        "5",
        "-o",
        projected,
        "--json",
    ]);
    let out = run_mil(&[
        "export",
        projected,
        "-o",
        dir.join("p.milm").to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("MILES") && err.contains("projection"), "{err}");
    std::fs::remove_dir_all(dir).ok();
}
