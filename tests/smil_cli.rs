//! `mil train/predict/cv/export` with sMIL and sbMIL: the command line fits the library's
//! model, `mil cv` predicts each bag with the model of its fold, `--explain` gives every
//! instance's decision value, and what does not apply is refused.

use mil_suite::{
    assert_instance_decisions_are_the_librarys, assert_shortened_model_refused, mil_refuses_naming,
    temp_dir, train_exportable, train_unexportable,
};
use mil_toolkit::classifier::mi_svm::InstanceKernel;
use mil_toolkit::classifier::smil::{Smil, Variant};

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
            ],
            Smil::default()
                .variant(Variant::Balanced)
                .kernel(InstanceKernel::Rbf)
                .gamma(Some(0.01))
                .cost(100.0)
                .eta(0.3),
        ),
    ]
}

#[test]
fn train_predict_and_cv_give_the_librarys_models() {
    // The bag's score is the largest f(x) (mi-SVM, MI-SVM, sbMIL) or the mean (sMIL).
    let dir = temp_dir("smil");
    for (name, flags, params) in cases() {
        assert_instance_decisions_are_the_librarys(
            &dir,
            name,
            &flags,
            &params,
            5,
            |model, bag| model.instance_decisions(bag),
            |f, w| match params.variant {
                Variant::Sparse => f.iter().sum::<f64>() / f.len() as f64,
                Variant::Balanced => f[w],
            },
        );
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
