//! `mil train/predict/cv/export` with mi-Graph: the command line fits the library's model,
//! `mil cv` predicts each bag with the model of its fold, `--explain` gives every
//! instance's contribution, and what does not apply is refused.

use mil_suite::{
    assert_cv_is_the_librarys, assert_shortened_model_refused, instance_scores, mil_json,
    mil_refuses_naming, temp_dir, train_unexportable,
};
use mil_toolkit::classifier::mi_graph::MiGraph;
use mil_toolkit::classifier::{BagModel, Classifier};

#[test]
fn train_predict_and_cv_give_the_librarys_model() {
    let dir = temp_dir("mi-graph");
    let musk1 = mil_toolkit::data::load("musk1").unwrap();
    let flags = [
        "--classifier",
        "mi-graph",
        "--cost",
        "5",
        "--gamma",
        "0.004",
    ];
    let params = MiGraph::default().cost(5.0).gamma(Some(0.004));
    let model = dir.join("mi-graph.json");
    let model = model.to_str().unwrap();
    let mut args = vec!["train", "musk1", "-o", model, "--json"];
    args.extend_from_slice(&flags);
    mil_json(&args);
    let p = mil_json(&["predict", model, "musk1", "--explain", "--json"]);
    let lib = params.fit(&musk1).unwrap();
    let scores = lib.scores(&musk1).unwrap();
    let labels = scores.labels();
    let explained = lib.explain(&musk1).unwrap();
    for (b, pred) in p["predictions"].as_array().unwrap().iter().enumerate() {
        let label: usize = pred["label"].as_str().unwrap().parse().unwrap();
        assert_eq!(label, labels[b], "bag {b}");
        let score = pred["score"].as_f64().unwrap();
        assert!((score - scores.row(b)[1]).abs() < 1e-9, "bag {b}");
        // The instance scores are the library's, they add up to the decision value with
        // the bias, and the witness is the largest.
        let e = &pred["explanation"];
        assert_eq!(e["score_kind"], "contribution");
        let g = instance_scores(e);
        let want = &explained[b].instance_scores;
        assert_eq!(g.len(), musk1.bag(b).len());
        for (a, w) in g.iter().zip(want) {
            assert!((a - w).abs() < 1e-9, "bag {b}");
        }
        let f = g.iter().sum::<f64>() + lib.svm.bias;
        assert!((f - score).abs() < 1e-9, "bag {b}: {f} {score}");
        let w = e["witnesses"][0].as_u64().unwrap() as usize;
        assert!(g.iter().all(|&v| v <= g[w]));
    }

    // `mil cv`: each bag's label is that of the model fitted on its fold's training
    // bags (the library's folds of the same seed).
    assert_cv_is_the_librarys("musk1", 5, &flags, &params, "musk1");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn flags_of_other_classifiers_exports_and_damaged_models_are_refused() {
    for (args, flag) in [
        (
            &["cv", "musk1", "--classifier", "mi-graph", "--mu", "0.3"][..],
            "--mu",
        ),
        (
            &["cv", "musk1", "--classifier", "mi-graph", "--kernel", "rbf"][..],
            "--kernel",
        ),
        (
            &[
                "cv",
                "musk1",
                "--classifier",
                "mi-graph",
                "--scaling",
                "none",
            ][..],
            "--scaling",
        ),
        (
            &["cv", "musk1", "--classifier", "mi-graph", "--rho", "0.5"][..],
            "--rho",
        ),
        (
            &["cv", "musk1", "--classifier", "mi-graph", "--cost", "0"][..],
            "cost",
        ),
        (
            &["cv", "musk1", "--classifier", "mi-graph", "--gamma", "-1"][..],
            "gamma",
        ),
        (&["cv", "corel3", "--classifier", "mi-graph"][..], "binary"),
    ] {
        mil_refuses_naming(args, flag);
    }

    let dir = temp_dir("mi-graph-bad");
    let model = train_unexportable(&dir, "mi-graph", &[]);
    // One instance weight dropped: refused.
    assert_shortened_model_refused(&model, "weights", "mi-graph");
    std::fs::remove_dir_all(dir).ok();
}
