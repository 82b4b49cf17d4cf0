//! `mil train/predict/cv/export` with SimpleMI and MI-Wrapper: the command line gives the
//! library's model, explains MI-Wrapper's bags, and refuses what does not apply.

use mil_suite::{
    find_key, instance_scores, mil_json, mil_refuses_naming, run_mil, temp_dir, train_musk1,
    train_unexportable,
};
use mil_toolkit::classifier::mi_wrapper::{Combine, MiWrapper};
use mil_toolkit::classifier::simple_mi::{SimpleMi, Summary};
use mil_toolkit::classifier::{BagModel, BagScores, Classifier};

/// `mil train` then `mil predict` on musk1; returns the predictions' labels and scores.
fn train_and_predict(
    dir: &std::path::Path,
    name: &str,
    flags: &[&str],
) -> (Vec<usize>, Vec<f64>, serde_json::Value) {
    let model = dir.join(format!("{name}.json"));
    let model = model.to_str().unwrap();
    let mut args = vec!["train", "musk1", "-o", model, "--json"];
    args.extend_from_slice(flags);
    mil_json(&args);
    let p = mil_json(&["predict", model, "musk1", "--explain", "--json"]);
    let preds = p["predictions"].as_array().unwrap();
    let labels = preds
        .iter()
        .map(|q| q["label"].as_str().unwrap().parse().unwrap())
        .collect();
    let scores = preds.iter().map(|q| q["score"].as_f64().unwrap()).collect();
    (labels, scores, p)
}

fn assert_same(cli: &(Vec<usize>, Vec<f64>, serde_json::Value), lib: &BagScores, what: &str) {
    assert_eq!(cli.0, lib.labels(), "{what}");
    for (i, s) in cli.1.iter().enumerate() {
        assert!(
            (s - lib.row(i)[1]).abs() < 1e-12,
            "{what} bag {i}: {s} vs {}",
            lib.row(i)[1]
        );
    }
}

#[test]
fn the_command_line_fits_the_librarys_models() {
    let dir = temp_dir("simple-mi");
    let musk1 = mil_toolkit::data::load("musk1").unwrap();
    for summary in [Summary::Mean, Summary::Geometric, Summary::MinMax] {
        let name = summary.to_string();
        let cli = train_and_predict(
            &dir,
            &format!("simple-mi-{name}"),
            &[
                "--classifier",
                "simple-mi",
                "--summary",
                &name,
                "--ridge",
                "1",
            ],
        );
        let lib = SimpleMi::default()
            .summary(summary)
            .ridge(1.0)
            .fit(&musk1)
            .unwrap();
        assert_same(&cli, &lib.scores(&musk1).unwrap(), &name);
        // No instance scores: a bag is one vector to SimpleMI.
        for pred in cli.2["predictions"].as_array().unwrap() {
            assert_eq!(pred["explanation"]["score_kind"], "none");
        }
    }
    for combine in [Combine::Arithmetic, Combine::Geometric, Combine::Max] {
        let name = combine.to_string();
        let cli = train_and_predict(
            &dir,
            &format!("mi-wrapper-{name}"),
            &["--classifier", "mi-wrapper", "--combine", &name],
        );
        let lib = MiWrapper::default().combine(combine).fit(&musk1).unwrap();
        assert_same(&cli, &lib.scores(&musk1).unwrap(), &name);
        // Instance probabilities; the witness is the most probable, and under max the
        // bag's score is the witness's probability.
        for pred in cli.2["predictions"].as_array().unwrap() {
            let e = &pred["explanation"];
            assert_eq!(e["score_kind"], "probability");
            let p = instance_scores(e);
            let w = e["witnesses"][0].as_u64().unwrap() as usize;
            assert!(p.iter().all(|&v| v <= p[w]));
            if combine == Combine::Max {
                assert!((p[w] - pred["score"].as_f64().unwrap()).abs() < 1e-12);
            }
        }
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_ridge_list_is_chosen_by_nested_cv() {
    // Ridge 10⁶ shrinks the logistic regression to its intercept (one class for every
    // bag), so every inner CV prefers ridge 1 and the outer result is that of `--ridge 1`.
    for classifier in ["simple-mi", "mi-wrapper"] {
        let cv = |ridge: &str| {
            mil_json(&[
                "cv",
                "musk1",
                "--classifier",
                classifier,
                "--ridge",
                ridge,
                "--json",
                "--quiet",
            ])
        };
        let (listed, single) = (cv("1e6,1"), cv("1"));
        let chosen = listed["chosen"].as_array().unwrap();
        assert_eq!(chosen.len(), 10);
        for c in chosen {
            assert_eq!(c["ridge"], 1.0, "{classifier}: {c}");
        }
        for key in ["predictions", "per_fold", "accuracy", "auroc", "confusion"] {
            assert_eq!(listed[key], single[key], "{classifier}: {key}");
        }
        // Frank & Xu's and Weka's baselines lie between 0.7 and 0.9 on musk1; chance is 0.51.
        let acc = single["accuracy"].as_f64().unwrap();
        assert!((0.65..=0.97).contains(&acc), "{classifier}: accuracy {acc}");
    }
}

#[test]
fn flags_of_other_classifiers_and_damaged_models_are_refused() {
    mil_refuses_naming(
        &["cv", "musk1", "--classifier", "milr", "--summary", "mean"],
        "--summary",
    );
    mil_refuses_naming(
        &[
            "cv",
            "musk1",
            "--classifier",
            "simple-mi",
            "--combine",
            "max",
        ],
        "--combine",
    );
    mil_refuses_naming(
        &[
            "cv",
            "musk1",
            "--classifier",
            "mi-wrapper",
            "--summary",
            "minmax",
        ],
        "--summary",
    );
    mil_refuses_naming(
        &[
            "cv",
            "musk1",
            "--classifier",
            "mi-wrapper",
            "--combine",
            "median",
        ],
        "--combine",
    );
    mil_refuses_naming(
        &["cv", "musk1", "--classifier", "simple-mi", "--ridge", "-1"],
        "--ridge",
    );

    let dir = temp_dir("simple-mi-bad");
    for classifier in ["simple-mi", "mi-wrapper"] {
        // Mean summaries and every combination are poolings of linear instance logits:
        // exported with the host's label on every bag. SimpleMI's bounding-box summaries
        // are not, and are refused.
        let pooled = train_musk1(&dir, &format!("{classifier}-pooled"), classifier, &[]);
        let device = dir.join(format!("{classifier}-pooled.milm"));
        let pooled = pooled.to_str().unwrap();
        let export = mil_json(&["export", pooled, "-o", device.to_str().unwrap(), "--json"]);
        assert_eq!(export["kind"], "linear-mil");
        assert_eq!(export["labels_agree"], 92);
        let model = if classifier == "simple-mi" {
            train_unexportable(&dir, classifier, &["--summary", "minmax"])
        } else {
            pooled.into()
        };
        // One coefficient dropped: the saved model no longer fits its data.
        let text = std::fs::read_to_string(model).unwrap();
        let mut json: serde_json::Value = serde_json::from_str(&text).unwrap();
        let weights = find_key(&mut json, "weights").expect("the model's weights");
        weights[0].as_array_mut().unwrap().pop();
        let damaged = dir.join(format!("{classifier}-damaged.json"));
        std::fs::write(&damaged, json.to_string()).unwrap();
        let out = run_mil(&["predict", damaged.to_str().unwrap(), "musk1"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("damaged.json"), "{err}");
    }
    std::fs::remove_dir_all(dir).ok();
}

/// Weka 3.6.14's predicted class of every musk1 bag under its own 10 folds, column
/// `column` of `data/weka-folds/simplemi_musk1_weka_seed1.csv` (written by Weka; see that
/// directory's README): bag id → class.
fn weka_predictions(column: &str) -> std::collections::HashMap<String, String> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/data/weka-folds/simplemi_musk1_weka_seed1.csv"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let k = header
        .iter()
        .position(|h| *h == column)
        .expect("a Weka column");
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[0].to_string(), f[k].to_string())
        })
        .collect()
}

/// `mil cv musk1 --folds-file <Weka's folds> flags…`: bag id → predicted class.
fn ours_on_wekas_folds(flags: &[&str]) -> std::collections::HashMap<String, String> {
    let folds = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/data/weka-folds/folds_musk1_weka_seed1.csv"
    );
    let mut args = vec!["cv", "musk1", "--folds-file", folds, "--json", "--quiet"];
    args.extend_from_slice(flags);
    let v = mil_json(&args);
    v["predictions"]
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
fn wekas_predictions_bag_for_bag_where_the_fit_is_well_posed() {
    // With ridge 1 the penalised likelihood has a well-separated optimum that Weka's
    // Logistic and our L-BFGS both reach: every bag gets Weka's class, for every summary
    // and combination Weka 3.6.14 runs (its minimax SimpleMI stops with an error).
    let cases = [
        (
            "simple_mi_mean_r1",
            ["--classifier", "simple-mi", "--summary", "mean"],
        ),
        (
            "simple_mi_geometric_r1",
            ["--classifier", "simple-mi", "--summary", "geometric"],
        ),
        (
            "mi_wrapper_arithmetic_r1",
            ["--classifier", "mi-wrapper", "--combine", "arithmetic"],
        ),
        (
            "mi_wrapper_geometric_r1",
            ["--classifier", "mi-wrapper", "--combine", "geometric"],
        ),
        (
            "mi_wrapper_max_r1",
            ["--classifier", "mi-wrapper", "--combine", "max"],
        ),
    ];
    for (column, flags) in cases {
        let mut flags = flags.to_vec();
        flags.extend(["--ridge", "1"]);
        let ours = ours_on_wekas_folds(&flags);
        let weka = weka_predictions(column);
        assert_eq!(ours.len(), weka.len(), "{column}");
        let differ: Vec<&String> = weka
            .iter()
            .filter(|(bag, class)| &ours[bag.as_str()] != *class)
            .map(|(bag, _)| bag)
            .collect();
        assert!(
            differ.is_empty(),
            "{column}: bags {differ:?} differ from Weka"
        );
    }
}
