//! `mil train/predict/cv/export` with DD and EM-DD: the command line fits the library's
//! model, `mil cv` predicts each bag with the model of its fold, `--explain` gives every
//! instance's probability of belonging to the concept, and what does not apply is
//! refused.

use mil_suite::{
    assert_cv_is_the_librarys, assert_explained_as_the_library, assert_shortened_model_refused,
    mil_refuses_naming, temp_dir, train_exportable, train_unexportable,
};
use mil_toolkit::classifier::dd::Dd;
use mil_toolkit::classifier::Classifier;

/// The two algorithms as `mil` flags and as the library's parameters (few starts, so
/// that ten fold fits stay quick). `mil` seeds the classifier with `--seed`.
fn cases(seed: u64) -> [(&'static str, Vec<&'static str>, Dd); 2] {
    [
        (
            "dd",
            vec!["--classifier", "dd", "--max-restarts", "4"],
            Dd::default().max_restarts(4).seed(seed),
        ),
        (
            "em-dd",
            vec![
                "--classifier",
                "em-dd",
                "--max-restarts",
                "6",
                "--max-iterations",
                "3",
            ],
            Dd::em_dd().max_restarts(6).max_iterations(3).seed(seed),
        ),
    ]
}

#[test]
fn train_predict_and_cv_give_the_librarys_models() {
    let dir = temp_dir("dd");
    let musk1 = mil_toolkit::data::load("musk1").unwrap();
    for (name, flags, params) in cases(5) {
        // Every instance's probability, as the library computes it; the witness is the
        // most probable.
        let lib = params.fit(&musk1).unwrap();
        let mut train_flags = flags.clone();
        train_flags.extend(["--seed", "5"]);
        assert_explained_as_the_library(
            &dir,
            name,
            &train_flags,
            &lib,
            "probability",
            1e-12,
            |_, bag| lib.instance_probabilities(bag),
        );

        // `mil cv`: each bag's label is that of the model fitted on its fold's training
        // bags (the library's folds of the same seed).
        let (_, _, params) = cases(1).into_iter().find(|c| c.0 == name).unwrap();
        assert_cv_is_the_librarys("musk1", 10, &flags, &params, name);
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn flags_of_other_classifiers_exports_and_damaged_models_are_refused() {
    for (args, flag) in [
        (
            &["cv", "musk1", "--classifier", "dd", "--max-iterations", "3"][..],
            "--max-iterations",
        ),
        (
            &["cv", "musk1", "--classifier", "milr", "--max-restarts", "3"][..],
            "--max-restarts",
        ),
        (
            &["cv", "musk1", "--classifier", "em-dd", "--cost", "2"][..],
            "--cost",
        ),
        (
            &["cv", "musk1", "--classifier", "dd", "--max-restarts", "0"][..],
            "--max-restarts",
        ),
        (
            &[
                "cv",
                "musk1",
                "--classifier",
                "em-dd",
                "--max-iterations",
                "0",
            ][..],
            "--max-iterations",
        ),
        (&["cv", "corel3", "--classifier", "dd"][..], "binary"),
    ] {
        mil_refuses_naming(args, flag);
    }

    let dir = temp_dir("dd-bad");
    for classifier in ["dd", "em-dd"] {
        // EM-DD's largest instance probability is one MILES prototype to the core, with
        // the host's label on every bag; DD's noisy-OR is refused.
        let model = if classifier == "em-dd" {
            train_exportable(&dir, classifier, classifier, &[], "miles")
        } else {
            train_unexportable(&dir, classifier, &[])
        };
        // One scale dropped: the concept no longer matches the feature dimension.
        assert_shortened_model_refused(&model, "scale", classifier);
    }
    std::fs::remove_dir_all(dir).ok();
}
