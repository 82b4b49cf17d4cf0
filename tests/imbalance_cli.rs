//! End to end through the `mil` binary: class weights and decision thresholds on
//! imbalanced data (`--class-weight`, `--threshold`, `--threshold-metric`), from `mil cv`
//! and `mil train` through `mil predict` to the compact model of `mil export`.

use std::process::Output;

use mil_suite::{mil_json, run_mil, temp_dir};
use serde_json::Value;

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// [`mil_json`] with `--json` appended.
fn json_of(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    mil_json(&all)
}

/// A small sparse set with one positive bag in eleven.
fn imbalanced(dir: &std::path::Path) -> String {
    let out = dir.join("imb.csv").to_str().unwrap().to_string();
    json_of(&[
        "synth",
        "term-counts",
        "--dims",
        "120",
        "--bags",
        "120",
        "--imbalance",
        "10",
        "--seed",
        "3",
        "-o",
        &out,
    ]);
    out
}

#[test]
fn bad_class_weights_name_the_flag_and_the_number_of_classes() {
    let o = run_mil(&[
        "cv",
        "musk1",
        "--classifier",
        "milr",
        "--class-weight",
        "1,x",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--class-weight") && stderr(&o).contains("`x`"),
        "{}",
        stderr(&o)
    );
    for command in ["cv", "train"] {
        let dir = temp_dir("weights");
        let model = dir.join("m.json");
        let mut args = vec![
            command,
            "musk1",
            "--classifier",
            "citation-knn",
            "--class-weight",
            "1,2,3",
        ];
        if command == "train" {
            args.extend(["-o", model.to_str().unwrap()]);
        }
        let o = run_mil(&args);
        assert_eq!(o.status.code(), Some(2), "{command}");
        let err = stderr(&o);
        assert!(
            err.contains("--class-weight")
                && err.contains("3 weights")
                && err.contains("2 classes"),
            "{command}: {err}"
        );
    }
    let o = run_mil(&[
        "cv",
        "corel3",
        "--classifier",
        "milr",
        "--threshold",
        "auto",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--threshold") && stderr(&o).contains("3"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn balanced_weights_on_a_balanced_set_change_no_prediction() {
    // n / (k · n_c) is exactly 1 on a set with equal classes (MIDA's set one): the
    // whole-set fits of `mil train` predict every bag alike, score and label.
    let dir = temp_dir("balanced-noop");
    let data = dir.join("one.csv");
    let data = data.to_str().unwrap();
    let j = json_of(&["synth", "mida-one", "-o", data]);
    let counts = &j["bags_per_class"];
    assert_eq!(counts["0"], counts["1"], "mida-one has equal classes");
    for classifier in ["milr", "citation-knn"] {
        let a = dir.join(format!("{classifier}-a.json"));
        let b = dir.join(format!("{classifier}-b.json"));
        json_of(&[
            "train",
            data,
            "--classifier",
            classifier,
            "-o",
            a.to_str().unwrap(),
        ]);
        json_of(&[
            "train",
            data,
            "--classifier",
            classifier,
            "--class-weight",
            "balanced",
            "-o",
            b.to_str().unwrap(),
        ]);
        let pa = json_of(&["predict", a.to_str().unwrap(), data]);
        let pb = json_of(&["predict", b.to_str().unwrap(), data]);
        assert_eq!(pa["predictions"], pb["predictions"], "{classifier}");
    }
}

#[test]
fn a_chosen_threshold_is_reported_stored_predicted_and_exported() {
    let dir = temp_dir("threshold");
    let data = imbalanced(&dir);
    let cv = json_of(&[
        "cv",
        &data,
        "--classifier",
        "milr",
        "--pooling",
        "mean",
        "--class-weight",
        "balanced",
        "--threshold",
        "auto",
        "--folds",
        "5",
    ]);
    let thresholds = cv["thresholds"].as_array().expect("a threshold per fold");
    assert_eq!(thresholds.len(), 5);
    assert!(thresholds
        .iter()
        .all(|t| t.as_f64().is_some_and(|t| t > 0.0 && t < 1.0)));
    assert!(cv["collapsed"].is_null(), "{cv}");

    let model = dir.join("m.json");
    let model = model.to_str().unwrap();
    let train = json_of(&[
        "train",
        &data,
        "--classifier",
        "milr",
        "--pooling",
        "mean",
        "--class-weight",
        "balanced",
        "--threshold",
        "auto",
        "-o",
        model,
    ]);
    let t = train["threshold"].as_f64().expect("the chosen threshold");
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(model).unwrap()).unwrap();
    assert_eq!(saved["threshold"].as_f64(), Some(t));
    let p = json_of(&["predict", model, &data]);
    let mut positives = 0;
    for bag in p["predictions"].as_array().unwrap() {
        let score = bag["score"].as_f64().expect("positive score");
        let want = if score > t { "1" } else { "0" };
        assert_eq!(bag["label"], want, "{bag}");
        positives += usize::from(score > t);
    }
    assert!(positives > 0);
    // The compact model decides as the host does: the threshold in a constant score row.
    for format in ["f32", "q15"] {
        let out = dir.join(format!("m-{format}.milm"));
        let e = json_of(&[
            "export",
            model,
            "--format",
            format,
            "-o",
            out.to_str().unwrap(),
        ]);
        assert_eq!(e["labels_agree"], e["bags"], "{format}: {e}");
        if format == "f32" {
            assert!(e["max_abs_error"].as_f64().unwrap() < 1e-5, "{e}");
        }
    }
    // Noisy-OR cannot carry a threshold; Citation-kNN cannot carry weights.
    let noisy = dir.join("noisy.json");
    json_of(&[
        "train",
        &data,
        "--classifier",
        "milr",
        "--threshold",
        "0.3",
        "-o",
        noisy.to_str().unwrap(),
    ]);
    let knn = dir.join("knn.json");
    json_of(&[
        "train",
        &data,
        "--classifier",
        "citation-knn",
        "--class-weight",
        "balanced",
        "-o",
        knn.to_str().unwrap(),
    ]);
    for m in [noisy, knn] {
        let out = dir.join("x.milm");
        let o = run_mil(&["export", m.to_str().unwrap(), "-o", out.to_str().unwrap()]);
        assert_ne!(o.status.code(), Some(0));
        assert!(stderr(&o).contains("threshold"), "{}", stderr(&o));
    }
}

/// Balanced accuracy of a `mil cv` run.
fn balanced_accuracy(args: &[&str]) -> f64 {
    let j = json_of(args);
    j["balanced_accuracy"]
        .as_f64()
        .unwrap_or_else(|| panic!("{args:?}: no balanced accuracy in {j}"))
}

#[test]
fn corel_dogs_is_learned_with_class_weights_and_a_chosen_threshold() {
    // corel_dogs, a real imbalanced set: 100 positive bags in 2,000. Unweighted, both
    // classifiers predict "rest" for nearly every bag (balanced accuracy about 0.5);
    // with balanced weights and a threshold chosen by inner CV they must reach 0.70
    // (MILR, mean pooling) and 0.65 (Citation-kNN).
    let cv = |classifier: &str, extra: &[&str]| {
        let mut args = vec!["cv", "corel_dogs", "--classifier", classifier, "--quiet"];
        if classifier == "milr" {
            args.extend(["--pooling", "mean"]);
        }
        args.extend(extra);
        balanced_accuracy(&args)
    };
    let tuned = ["--class-weight", "balanced", "--threshold", "auto"];
    let milr_plain = cv("milr", &[]);
    let milr_tuned = cv("milr", &tuned);
    assert!(milr_plain < 0.55, "unweighted MILR: {milr_plain}");
    assert!(milr_tuned >= 0.70, "weighted MILR: {milr_tuned}");
    let knn_plain = cv("citation-knn", &[]);
    let knn_tuned = cv("citation-knn", &tuned);
    assert!(knn_plain < 0.60, "unweighted Citation-kNN: {knn_plain}");
    assert!(knn_tuned >= 0.65, "weighted Citation-kNN: {knn_tuned}");
}

#[test]
fn leave_one_out_reports_the_seeds_every_fold_drew() {
    // Leave-one-out on an imbalanced set, each fold with an inner CV choosing the ridge
    // and another choosing the threshold: the report lists the seeds every fold drew.
    // They are the library's `FoldSeeds::of` for the fold (whose seeds differ over the
    // 2,000 leave-one-out folds of corel_dogs: its unit test), and no two are equal.
    use mil_toolkit::pipeline::{FoldSeeds, Folds};
    let dir = temp_dir("imb-loo");
    let data = imbalanced(&dir);
    let bags = mil_toolkit::data::load(&data).unwrap();
    let n = bags.n_bags();
    let r = json_of(&[
        "cv",
        &data,
        "--folds",
        &n.to_string(),
        "--seed",
        "7",
        "--classifier",
        "simple-mi",
        "--ridge",
        "1,100",
        "--inner-folds",
        "2",
        "--class-weight",
        "balanced",
        "--threshold",
        "auto",
        "--quiet",
    ]);
    assert_eq!(r["folds"], n);
    let folds = Folds::Stratified {
        k: n,
        repeats: 1,
        seed: 7,
    };
    let (repetition_seed, test_sets) = &folds.assignments(&bags).unwrap()[0];
    assert_eq!(test_sets.len(), n);
    let seeds = r["seeds"].as_array().expect("seeds per fold");
    assert_eq!(seeds.len(), n);
    let mut seen = std::collections::HashSet::new();
    for (f, s) in seeds.iter().enumerate() {
        let drawn = FoldSeeds::of(*repetition_seed, f);
        for (purpose, expected) in [("inner_cv", drawn.inner_cv), ("threshold", drawn.threshold)] {
            let seed = s[purpose].as_u64().expect("a seed");
            assert_eq!(seed, expected, "fold {f}: {purpose}");
            assert!(
                seen.insert(seed),
                "fold {f}: {purpose} seed {seed} drawn before"
            );
        }
    }
    // Both inner CVs ran in every fold: a ridge chosen from the list, a threshold set.
    let chosen = r["chosen"].as_array().unwrap();
    let thresholds = r["thresholds"].as_array().unwrap();
    assert_eq!((chosen.len(), thresholds.len()), (n, n));
    for (c, t) in chosen.iter().zip(thresholds) {
        let ridge = c["ridge"].as_f64().expect("a chosen ridge");
        assert!(ridge == 1.0 || ridge == 100.0, "{c}");
        assert!(t.as_f64().is_some_and(f64::is_finite), "{t}");
    }
    std::fs::remove_dir_all(&dir).ok();
}
