//! `mil train/predict/cv/export` with mi-Graph: the command line fits the library's model,
//! `mil cv` predicts each bag with the model of its fold, `--explain` gives every
//! instance's contribution, and what does not apply is refused.

use mil_suite::{
    assert_cv_is_the_librarys, assert_explained_as_the_library, assert_shortened_model_refused,
    mil_refuses_naming, temp_dir, train_unexportable,
};
use mil_toolkit::classifier::mi_graph::{GraphNorm, MiGraph};
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
    // The instance scores are the library's, they add up to the decision value with the
    // bias, and the witness is the largest.
    let lib = params.fit(&musk1).unwrap();
    let explained = lib.explain(&musk1).unwrap();
    let bags = assert_explained_as_the_library(
        &dir,
        "mi-graph",
        &flags,
        &lib,
        "contribution",
        1e-9,
        |b, _| explained[b].instance_scores.clone(),
    );
    for (b, e) in bags.iter().enumerate() {
        let f = e.instances.iter().sum::<f64>() + lib.svm.bias;
        assert!((f - e.score).abs() < 1e-9, "bag {b}: {f} {}", e.score);
    }

    // `mil cv`: each bag's label is that of the model fitted on its fold's training
    // bags (the library's folds of the same seed).
    assert_cv_is_the_librarys("musk1", 5, &flags, &params, "musk1");
    // The authors' normalisation, likewise.
    let sqrt = [&flags[..], &["--graph-norm", "sqrt"]].concat();
    assert_cv_is_the_librarys("musk1", 5, &sqrt, &params.norm(GraphNorm::Sqrt), "musk1");
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
        (
            &["cv", "musk1", "--classifier", "svm", "--graph-norm", "sqrt"][..],
            "--graph-norm",
        ),
        (
            &[
                "cv",
                "musk1",
                "--classifier",
                "mi-graph",
                "--graph-norm",
                "root",
            ][..],
            "--graph-norm",
        ),
    ] {
        mil_refuses_naming(args, flag);
    }

    let dir = temp_dir("mi-graph-bad");
    let model = train_unexportable(&dir, "mi-graph", &[]);
    // One instance weight dropped: refused.
    assert_shortened_model_refused(&model, "weights", "mi-graph");
    std::fs::remove_dir_all(dir).ok();
}
