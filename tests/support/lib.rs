//! Helpers shared by the end-to-end tests in `tests/` and the benchmarks in `benches/`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use mil_toolkit::classifier::{BagModel, Classifier};

/// Path of the `mil` program built by cargo for this test run: this package's
/// `mil-under-test` binary (the same `main`), which cargo builds with the tests, so it is
/// never older than the code under test.
pub fn mil_binary() -> PathBuf {
    let mut path = std::env::current_exe().expect("test executable path");
    path.pop();
    if path.ends_with("deps") {
        path.pop();
    }
    path.join(format!("mil-under-test{}", std::env::consts::EXE_SUFFIX))
}

/// Runs `mil` with the given arguments and returns its output.
pub fn run_mil(args: &[&str]) -> Output {
    Command::new(mil_binary())
        .args(args)
        .output()
        .expect("the mil binary runs")
}

/// Runs `mil` with the given arguments, which must succeed, and parses its stdout as one
/// JSON object.
pub fn mil_json(args: &[&str]) -> serde_json::Value {
    let out = run_mil(args);
    assert!(
        out.status.success(),
        "mil {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON object on stdout")
}

/// Runs `mil` with the given arguments and checks that it refuses them with exit 2 and a
/// message naming `flag`.
pub fn mil_refuses_naming(args: &[&str], flag: &str) {
    let out = run_mil(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "mil {args:?}: {err}");
    assert!(err.contains(flag), "mil {args:?}: {err}");
}

/// Trains `classifier` on musk1 with the `extra` flags into `dir/NAME.json` and returns
/// that path.
pub fn train_musk1(dir: &Path, name: &str, classifier: &str, extra: &[&str]) -> PathBuf {
    let model = dir.join(format!("{name}.json"));
    let mut args = vec![
        "train",
        "musk1",
        "--classifier",
        classifier,
        "-o",
        model.to_str().unwrap(),
        "--json",
    ];
    args.extend_from_slice(extra);
    mil_json(&args);
    model
}

/// Trains `classifier` on musk1 into `dir/NAME.json` with the `extra` flags, checks that
/// `mil export` writes a compact model of `kind` whose labels are the host model's on all
/// 92 bags, and returns the saved model's path.
pub fn train_exportable(
    dir: &Path,
    name: &str,
    classifier: &str,
    extra: &[&str],
    kind: &str,
) -> PathBuf {
    let model = train_musk1(dir, name, classifier, extra);
    let device = dir.join(format!("{name}.milm"));
    let path = model.to_str().unwrap();
    let export = mil_json(&["export", path, "-o", device.to_str().unwrap(), "--json"]);
    assert_eq!(export["kind"], kind, "{name}: {export}");
    assert_eq!(export["labels_agree"], 92, "{name}: {export}");
    assert!(device.exists(), "{name}: no {}", device.display());
    model
}

/// Trains `classifier` on musk1 into `dir` with the `extra` flags, checks that `mil
/// export` refuses the model (exit 2, naming the classifier: the core has no head for
/// it) and writes nothing, and returns the saved model's path.
pub fn train_unexportable(dir: &Path, classifier: &str, extra: &[&str]) -> PathBuf {
    let model = train_musk1(dir, classifier, classifier, extra);
    let path = model.to_str().unwrap();
    let device = dir.join(format!("{classifier}.milm"));
    let out = run_mil(&["export", path, "-o", device.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(classifier) && err.contains("not supported"),
        "{err}"
    );
    assert!(!device.exists());
    model
}

/// Drops the last value of the saved model's first array under `key` and checks that
/// `mil predict` refuses the damaged model (exit 2) naming its file and `name`.
pub fn assert_shortened_model_refused(model: &Path, key: &str, name: &str) {
    let text = std::fs::read_to_string(model).unwrap();
    let mut json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let values = find_key(&mut json, key).unwrap_or_else(|| panic!("no {key} in the model"));
    values.as_array_mut().expect("an array").pop();
    let stem = model.file_stem().unwrap().to_str().unwrap();
    let damaged = model.with_file_name(format!("{stem}-damaged.json"));
    std::fs::write(&damaged, json.to_string()).unwrap();
    let out = run_mil(&["predict", damaged.to_str().unwrap(), "musk1"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("{stem}-damaged.json")) && err.contains(name),
        "{err}"
    );
}

/// The first value under `key` anywhere in `v`.
pub fn find_key<'a>(v: &'a mut serde_json::Value, key: &str) -> Option<&'a mut serde_json::Value> {
    match v {
        serde_json::Value::Object(map) => {
            if map.contains_key(key) {
                return map.get_mut(key);
            }
            map.values_mut().find_map(|x| find_key(x, key))
        }
        serde_json::Value::Array(items) => items.iter_mut().find_map(|x| find_key(x, key)),
        _ => None,
    }
}

/// A fresh temporary directory for one test, removed by the caller when done.
pub fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mil-test-{}-{}", tag, std::process::id()));
    std::fs::create_dir_all(&dir).expect("create temp dir");
    dir
}

/// Runs `mil cv DATA --folds FOLDS --seed 1 FLAGS --json` and checks that each bag's
/// label is that of `params` fitted on its fold's training bags (the library's stratified
/// folds of the same seed); `what` names the case in a failure.
pub fn assert_cv_is_the_librarys<C: Classifier>(
    data: &str,
    folds: usize,
    flags: &[&str],
    params: &C,
    what: &str,
) {
    let folds_arg = folds.to_string();
    let mut args = vec!["cv", data, "--folds", &folds_arg, "--seed", "1", "--json"];
    args.extend_from_slice(flags);
    let cv = mil_json(&args);
    let by_id: HashMap<&str, &str> = cv["predictions"]
        .as_array()
        .expect("a predictions array")
        .iter()
        .map(|p| (p["bag"].as_str().unwrap(), p["label"].as_str().unwrap()))
        .collect();
    let dataset = mil_toolkit::data::load(data).expect("a shipped data set");
    assert_eq!(by_id.len(), dataset.n_bags(), "{what}");
    for (train, test) in dataset.stratified_folds(folds, 1).unwrap() {
        let fold = params.fit(train).unwrap();
        let labels = fold.scores(test.clone()).unwrap().labels();
        for (&b, label) in test.indices().iter().zip(labels) {
            let id = dataset.bag_ids()[b].as_str();
            assert_eq!(by_id[id], dataset.class_names()[label], "{what} bag {id}");
        }
    }
}

/// One bag of `mil predict --explain --json`: every instance's score, the witness and the
/// bag's score.
pub struct ExplainedBag {
    /// The instance scores.
    pub instances: Vec<f64>,
    /// The witness (the largest instance score).
    pub witness: usize,
    /// The bag's score.
    pub score: f64,
}

/// `mil train musk1 -o DIR/NAME.json FLAGS` then `mil predict --explain --json` agree with
/// `lib`, the library's model of the same parameters: each bag's label and score (within
/// `tolerance`), the score kind `kind`, every instance's score as `instances(b, bag)`
/// computes it for bag number b, and the largest as the witness. Returns every bag as explained.
pub fn assert_explained_as_the_library<M: BagModel>(
    dir: &Path,
    name: &str,
    flags: &[&str],
    lib: &M,
    kind: &str,
    tolerance: f64,
    instances: impl Fn(usize, mil_toolkit::data::Bag<'_>) -> Vec<f64>,
) -> Vec<ExplainedBag> {
    let musk1 = mil_toolkit::data::load("musk1").unwrap();
    let model = dir.join(format!("{name}.json"));
    let model = model.to_str().unwrap();
    let mut args = vec!["train", "musk1", "-o", model, "--json"];
    args.extend_from_slice(flags);
    mil_json(&args);
    let p = mil_json(&["predict", model, "musk1", "--explain", "--json"]);
    let scores = lib.scores(&musk1).unwrap();
    let labels = scores.labels();
    let predictions = p["predictions"].as_array().unwrap();
    assert_eq!(predictions.len(), musk1.n_bags(), "{name}");
    predictions
        .iter()
        .enumerate()
        .map(|(b, pred)| {
            let label: usize = pred["label"].as_str().unwrap().parse().unwrap();
            assert_eq!(label, labels[b], "{name} bag {b}");
            let score = pred["score"].as_f64().unwrap();
            assert!(
                (score - scores.row(b)[1]).abs() < tolerance,
                "{name} bag {b}"
            );
            let e = &pred["explanation"];
            assert_eq!(e["score_kind"], kind, "{name}");
            let got = instance_scores(e);
            let want = instances(b, musk1.bag(b));
            assert_eq!(got.len(), want.len(), "{name} bag {b}");
            for (a, w) in got.iter().zip(&want) {
                assert!((a - w).abs() < tolerance, "{name} bag {b}: {a} vs {w}");
            }
            let witness = e["witnesses"][0].as_u64().unwrap() as usize;
            assert!(got.iter().all(|&v| v <= got[witness]), "{name} bag {b}");
            ExplainedBag {
                instances: got,
                witness,
                score,
            }
        })
        .collect()
}

/// The `instance_scores` of one bag's `explanation` in `mil predict --explain --json`.
pub fn instance_scores(explanation: &serde_json::Value) -> Vec<f64> {
    explanation["instance_scores"]
        .as_array()
        .expect("an instance_scores array")
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect()
}

/// The Rust examples of the README, compiled and run as doctests (`cargo test --doc`).
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeExamples;

/// The Rust examples of the guide's library page, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../docs/guide/library.md")]
pub struct LibraryGuideExamples;

/// Where [`attention_network`] puts a value: weight `index` of a layer of `rows` rows, or
/// the bias of row `row`.
pub enum Slot {
    /// A weight, row-major.
    Weight {
        /// Rows of the layer.
        rows: usize,
        /// Index into the layer's weights.
        index: usize,
    },
    /// A bias.
    Bias {
        /// The row it belongs to.
        row: usize,
    },
}

/// An untrained attention network of `params`'s shape for the export tests: the z-score
/// `mean`/`inv_sd` on `dim` features, `n_classes` outputs, and every layer's weights, then
/// its biases, taken from `value` in order.
pub fn attention_network(
    params: mil_toolkit::classifier::attention::AttentionMil,
    n_classes: usize,
    mean: Vec<f64>,
    inv_sd: Vec<f64>,
    mut value: impl FnMut(Slot) -> f32,
) -> mil_toolkit::classifier::attention::AttentionModel {
    use mil_toolkit::classifier::attention::{AttentionModel, Layer, Stop};
    let mut model = AttentionModel {
        params,
        dim: mean.len(),
        n_classes,
        mean,
        inv_sd,
        layers: Vec::new(),
        stop: Stop::MaxEpochs,
        best_epoch: params.epochs,
    };
    model.layers = model
        .layer_names()
        .into_iter()
        .map(|(name, rows, cols)| Layer {
            name: name.into(),
            rows,
            cols,
            weight: (0..rows * cols)
                .map(|index| value(Slot::Weight { rows, index }))
                .collect(),
            bias: (0..rows).map(|row| value(Slot::Bias { row })).collect(),
        })
        .collect();
    model.validate().unwrap();
    model
}
