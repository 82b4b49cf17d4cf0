//! `mil train/predict/cv/export` with mi-SVM and MI-SVM: the command line fits the
//! library's model, `mil cv` predicts each bag with the model of its fold, `--explain`
//! gives every instance's decision value, and what does not apply is refused.

use mil_suite::{
    assert_cv_is_the_librarys, assert_explained_as_the_library, assert_shortened_model_refused,
    mil_refuses_naming, temp_dir, train_exportable, train_unexportable,
};
use mil_toolkit::classifier::mi_svm::{Heuristic, InstanceKernel, MiSvm};
use mil_toolkit::classifier::Classifier;

/// The two heuristics as `mil` flags and as the library's parameters.
fn cases() -> [(&'static str, Vec<&'static str>, MiSvm); 2] {
    [
        ("mi-svm", vec!["--classifier", "mi-svm"], MiSvm::default()),
        (
            "mi-svm-bag",
            vec![
                "--classifier",
                "mi-svm-bag",
                "--kernel",
                "rbf",
                "--gamma",
                "0.01",
                "--cost",
                "10",
            ],
            MiSvm::default()
                .heuristic(Heuristic::Bag)
                .kernel(InstanceKernel::Rbf)
                .gamma(Some(0.01))
                .cost(10.0),
        ),
    ]
}

#[test]
fn train_predict_and_cv_give_the_librarys_models() {
    let dir = temp_dir("mi-svm");
    let musk1 = mil_toolkit::data::load("musk1").unwrap();
    for (name, flags, params) in cases() {
        // Every instance's f(x) as the library computes it; the bag's score is their
        // largest.
        let lib = params.fit(&musk1).unwrap();
        let bags = assert_explained_as_the_library(
            &dir,
            name,
            &flags,
            &lib,
            "decision",
            1e-9,
            |_, bag| lib.instance_decisions(bag),
        );
        for e in bags {
            assert!((e.instances[e.witness] - e.score).abs() < 1e-9, "{name}");
        }
        // `mil cv`: each bag's label is that of the model fitted on its fold's training
        // bags (the library's folds of the same seed).
        assert_cv_is_the_librarys("musk1", 10, &flags, &params, name);
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn flags_of_other_classifiers_exports_and_damaged_models_are_refused() {
    for (args, flag) in [
        (
            &["cv", "musk1", "--classifier", "mi-svm", "--kernel", "kand"][..],
            "--kernel",
        ),
        (
            &["cv", "musk1", "--classifier", "svm", "--kernel", "rbf"][..],
            "--kernel",
        ),
        (
            &["cv", "musk1", "--classifier", "mi-svm", "--rank", "2"][..],
            "--rank",
        ),
        (
            &[
                "cv",
                "musk1",
                "--classifier",
                "milr",
                "--max-iterations",
                "3",
            ][..],
            "--max-iterations",
        ),
        (
            &["cv", "musk1", "--classifier", "mi-svm", "--gamma", "0.1"][..],
            "gamma",
        ),
        (
            &["cv", "musk1", "--classifier", "mi-svm-bag", "--cost", "0"][..],
            "cost",
        ),
        (
            &["cv", "musk1", "--classifier", "mi-svm", "--scaling", "weka"][..],
            "--scaling",
        ),
    ] {
        mil_refuses_naming(args, flag);
    }

    let dir = temp_dir("mi-svm-bad");
    for classifier in ["mi-svm", "mi-svm-bag"] {
        // The core scores linear instance functions: a linear model exports with the
        // host's label on every bag, an rbf one is refused.
        let name = format!("{classifier}-linear");
        train_exportable(&dir, &name, classifier, &[], "linear-mil");
        let model = train_unexportable(&dir, classifier, &["--kernel", "rbf"]);
        // One coefficient dropped: the support vectors no longer match their weights.
        assert_shortened_model_refused(&model, "coefficients", classifier);
    }
    std::fs::remove_dir_all(dir).ok();
}
