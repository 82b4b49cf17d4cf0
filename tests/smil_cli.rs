//! `mil train/predict/cv/export` with sMIL and sbMIL: the command line fits the library's
//! model, `mil cv` predicts each bag with the model of its fold, `--explain` gives every
//! instance's decision value, and what does not apply is refused.

use mil_suite::{
    assert_cv_is_the_librarys, assert_explained_as_the_library, assert_shortened_model_refused,
    mil_refuses_naming, temp_dir, train_exportable, train_unexportable,
};
use mil_toolkit::classifier::mi_svm::InstanceKernel;
use mil_toolkit::classifier::smil::{Bias, Smil, Variant};
use mil_toolkit::classifier::Classifier;

/// The two variants as `mil` flags and as the library's parameters.
fn cases() -> [(&'static str, Vec<&'static str>, Smil); 2] {
    [
        (
            "smil",
            vec!["--classifier", "smil", "--cost", "10"],
            Smil::default().cost(10.0),
        ),
        (
            "sbmil",
            vec![
                "--classifier",
                "sbmil",
                "--kernel",
                "rbf",
                "--gamma",
                "0.01",
                "--cost",
                "100",
                "--eta",
                "0.3",
                "--bias",
                "support-mean",
            ],
            Smil::default()
                .variant(Variant::Balanced)
                .kernel(InstanceKernel::Rbf)
                .gamma(Some(0.01))
                .cost(100.0)
                .eta(0.3)
                .bias(Bias::SupportMean),
        ),
    ]
}

#[test]
fn train_predict_and_cv_give_the_librarys_models() {
    let dir = temp_dir("smil");
    let musk1 = mil_toolkit::data::load("musk1").unwrap();
    for (name, flags, params) in cases() {
        // Every instance's f(x) as the library computes it; the bag's score is their
        // mean (sMIL) or its largest (sbMIL).
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
            let pooled = match params.variant {
                Variant::Sparse => e.instances.iter().sum::<f64>() / e.instances.len() as f64,
                Variant::Balanced => e.instances[e.witness],
            };
            assert!((pooled - e.score).abs() < 1e-9, "{name}");
        }
        // `mil cv`: each bag's label is that of the model fitted on its fold's training
        // bags (the library's folds of the same seed).
        assert_cv_is_the_librarys("musk1", 5, &flags, &params, name);
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn flags_of_other_classifiers_exports_and_damaged_models_are_refused() {
    for (args, flag) in [
        (
            &["cv", "musk1", "--classifier", "smil", "--eta", "0.2"][..],
            "--eta",
        ),
        (
            &["cv", "musk1", "--classifier", "mi-svm", "--eta", "0.2"][..],
            "--eta",
        ),
        (
            &[
                "cv",
                "musk1",
                "--classifier",
                "mi-svm",
                "--bias",
                "support-mean",
            ][..],
            "--bias",
        ),
        (
            &["cv", "musk1", "--classifier", "smil", "--bias", "zero"][..],
            "--bias",
        ),
        (
            &["cv", "musk1", "--classifier", "sbmil", "--eta", "1.5"][..],
            "eta",
        ),
        (
            &["cv", "musk1", "--classifier", "sbmil", "--eta", "-0.1"][..],
            "eta",
        ),
        (
            &["cv", "musk1", "--classifier", "smil", "--kernel", "kand"][..],
            "--kernel",
        ),
        (
            &["cv", "musk1", "--classifier", "smil", "--gamma", "0.1"][..],
            "gamma",
        ),
        (
            &["cv", "musk1", "--classifier", "sbmil", "--cost", "0"][..],
            "cost",
        ),
        (
            &[
                "cv",
                "musk1",
                "--classifier",
                "sbmil",
                "--max-iterations",
                "3",
            ][..],
            "--max-iterations",
        ),
        (
            &["cv", "musk1", "--classifier", "smil", "--scaling", "minmax"][..],
            "--scaling",
        ),
    ] {
        mil_refuses_naming(args, flag);
    }

    let dir = temp_dir("smil-bad");
    for classifier in ["smil", "sbmil"] {
        // The core scores linear instance functions (sbMIL pooled by the max, sMIL by the
        // mean logit): a linear model exports with the host's label on every bag, an rbf
        // one is refused.
        let name = format!("{classifier}-linear");
        train_exportable(&dir, &name, classifier, &[], "linear-mil");
        let model = train_unexportable(&dir, classifier, &["--kernel", "rbf"]);
        // One coefficient dropped: the support instances no longer match their weights.
        assert_shortened_model_refused(&model, "coefficients", classifier);
    }
    std::fs::remove_dir_all(dir).ok();
}
