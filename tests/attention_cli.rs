//! `mil train/predict/cv/export` with the attention network: the command line fits the
//! library's model, `mil cv` predicts each bag with the model of its fold, `--explain`
//! gives every instance's attention weight, `mil export` writes it for the device, and
//! what does not apply is refused.

use mil_suite::{
    assert_cv_is_the_librarys, assert_explained_as_the_library, find_key, mil_json,
    mil_refuses_naming, run_mil, temp_dir,
};
use mil_toolkit::classifier::attention::{AttentionMil, Pooling};
use mil_toolkit::classifier::{BagModel, Classifier};

/// A small network that trains in well under a second on musk1.
const FLAGS: [&str; 8] = [
    "--classifier",
    "gated-attention",
    "--hidden",
    "16",
    "--epochs",
    "8",
    "--learning-rate",
    "0.005",
];

fn params(seed: u64) -> AttentionMil {
    AttentionMil::default()
        .pooling(Pooling::Gated)
        .hidden(16)
        .epochs(8)
        .learning_rate(0.005)
        .seed(seed)
}

#[test]
fn train_predict_and_cv_give_the_librarys_model() {
    let dir = temp_dir("attention");
    let musk1 = mil_toolkit::data::load("musk1").unwrap();
    // Every instance's attention weight, as the library computes it; they add up to 1.
    let lib = params(3).fit(&musk1).unwrap();
    let explained = lib.explain(&musk1).unwrap();
    let mut flags = FLAGS.to_vec();
    flags.extend(["--seed", "3"]);
    let bags = assert_explained_as_the_library(
        &dir,
        "attention",
        &flags,
        &lib,
        "attention",
        1e-12,
        |b, _| explained[b].instance_scores.clone(),
    );
    for (b, e) in bags.iter().enumerate() {
        assert!(
            (e.instances.iter().sum::<f64>() - 1.0).abs() < 1e-9,
            "bag {b}"
        );
    }

    // `mil cv`: each bag's label is that of the model fitted on its fold's training
    // bags (the library's folds of the same seed; each fold's network seeded by --seed).
    assert_cv_is_the_librarys("musk1", 3, &FLAGS, &params(1), "musk1");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn flags_of_other_classifiers_integer_input_steps_and_damaged_models_are_refused() {
    for (args, flag) in [
        (
            &["cv", "musk1", "--classifier", "attention", "--cost", "3"][..],
            "--cost",
        ),
        (
            &[
                "cv",
                "musk1",
                "--classifier",
                "attention",
                "--pooling",
                "noisy-or",
            ][..],
            "--pooling",
        ),
        (
            &[
                "cv",
                "musk1",
                "--classifier",
                "gated-attention",
                "--pooling",
                "mean",
            ][..],
            "--pooling",
        ),
        (
            &["cv", "musk1", "--classifier", "milr", "--pooling", "gated"][..],
            "--pooling",
        ),
        (
            &["cv", "musk1", "--classifier", "milr", "--epochs", "5"][..],
            "--epochs",
        ),
        (
            &["cv", "musk1", "--classifier", "attention", "--dropout", "1"][..],
            "--dropout",
        ),
        (
            &["cv", "musk1", "--classifier", "attention", "--hidden", "2"][..],
            "--hidden",
        ),
    ] {
        mil_refuses_naming(args, flag);
    }

    let dir = temp_dir("attention-bad");
    let model = dir.join("attention.json");
    let path = model.to_str().unwrap();
    let mut args = vec!["train", "musk1", "-o", path, "--json"];
    args.extend_from_slice(&FLAGS);
    mil_json(&args);
    // The device takes raw features: exported in Q15, refused with integer input steps.
    let device = dir.join("attention.milm");
    let out = run_mil(&[
        "export",
        path,
        "--format",
        "q15",
        "-o",
        device.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let bytes = std::fs::read(&device).unwrap();
    let parsed = mil_core::Model::parse(&bytes).unwrap();
    assert_eq!(parsed.kind(), mil_core::ModelKind::Attention);
    let integer = dir.join("attention-integer.milm");
    let out = run_mil(&[
        "export",
        path,
        "--format",
        "q15",
        "--input",
        "integer",
        "-o",
        integer.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("input"), "{err}");
    assert!(!integer.exists());

    // One weight of the first layer dropped, or a value that is not a number: refused.
    let text = std::fs::read_to_string(&model).unwrap();
    for damage in ["short", "null"] {
        let mut json: serde_json::Value = serde_json::from_str(&text).unwrap();
        let weights = find_key(&mut json, "weight").expect("the first layer's weights");
        let weights = weights.as_array_mut().unwrap();
        match damage {
            "short" => {
                weights.pop();
            }
            _ => weights[0] = serde_json::Value::Null,
        }
        let damaged = dir.join(format!("attention-{damage}.json"));
        std::fs::write(&damaged, json.to_string()).unwrap();
        let out = run_mil(&["predict", damaged.to_str().unwrap(), "musk1"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{damage}: {err}");
        assert!(err.contains(&format!("attention-{damage}.json")), "{err}");
    }
    std::fs::remove_dir_all(dir).ok();
}
