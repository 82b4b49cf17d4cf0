//! `mil train/predict/cv/export` with mi-SVM and MI-SVM: the command line fits the
//! library's model, `mil cv` predicts each bag with the model of its fold, `--explain`
//! gives every instance's decision value, and what does not apply is refused.

use mil_suite::{
    assert_instance_decisions_are_the_librarys, assert_shortened_model_refused, mil_refuses_naming,
    temp_dir, train_exportable, train_unexportable,
};
use mil_toolkit::classifier::mi_svm::{Heuristic, InstanceKernel, MiSvm};

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
    // The bag's score is the largest f(x) (mi-SVM, MI-SVM, sbMIL) or the mean (sMIL).
    let dir = temp_dir("mi-svm");
    for (name, flags, params) in cases() {
        assert_instance_decisions_are_the_librarys(
            &dir,
            name,
            &flags,
            &params,
            10,
            |model, bag| model.instance_decisions(bag),
            |f, w| f[w],
        );
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
