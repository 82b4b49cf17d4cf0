//! Refusals, each through the `mil` program: arguments that would run unbounded
//! or overflow are refused before any work with exit 2 and a message naming the flag; an
//! output never replaces an input; directories, compact models and corrupt host models
//! given where they do not belong exit 2 and say what they are.

use mil_suite::{run_mil, temp_dir};

/// Runs `mil args`, expects exit 2 and a one-line message containing `needle`.
fn refused(args: &[&str], needle: &str) {
    let out = run_mil(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "mil {args:?}: {err}");
    assert!(err.contains(needle), "mil {args:?}: {err}");
    assert!(out.stdout.is_empty(), "mil {args:?}");
}

#[test]
fn work_and_overflow_are_bounded_before_any_work() {
    let knn = ["cv", "musk1", "--classifier", "citation-knn"];
    let with = |extra: &[&'static str]| -> Vec<&'static str> {
        knn.iter().copied().chain(extra.iter().copied()).collect()
    };
    refused(&with(&["--repeats", "1000000000000"]), "--repeats");
    refused(&with(&["--references", "1000"]), "--references");
    refused(&with(&["--rank", "1000"]), "--rank");
    refused(
        &[
            "cluster",
            "corel3",
            "--method",
            "m3ic",
            "--k",
            "3",
            "--restarts",
            "4294967296",
        ],
        "--restarts",
    );
    refused(
        &[
            "cluster",
            "corel3",
            "--method",
            "m3ic",
            "--k",
            "3",
            "--balance",
            "1e308",
        ],
        "--balance",
    );
    refused(
        &["gram", "musk1", "--kernel", "kand", "--epsilon", "1e-300"],
        "--epsilon",
    );
    refused(
        &["gram", "musk1", "--kernel", "kand", "--delta", "1"],
        "invalid --delta = 1",
    );
    refused(
        &["cv", "musk1", "--classifier", "svm", "--epsilon", "1e-9"],
        "--epsilon",
    );
    refused(
        &["cv", "musk1", "--classifier", "milr", "--ridge", "1e308"],
        "--ridge",
    );
    refused(
        &[
            "cv",
            "musk1",
            "--classifier",
            "milr",
            "--pooling",
            "softmax",
            "--beta",
            "0",
        ],
        "--beta",
    );
    refused(
        &[
            "cv",
            "musk1",
            "--classifier",
            "milr",
            "--projection",
            "bmida",
            "--dim",
            "5",
            "--alpha",
            "1e308",
        ],
        "--alpha",
    );
    refused(
        &[
            "cv",
            "musk1",
            "--classifier",
            "milr",
            "--ridge",
            "0.1,1",
            "--inner-folds",
            "100",
        ],
        "--inner-folds",
    );
}

#[test]
fn an_output_never_replaces_an_input() {
    let dir = temp_dir("bounds-io");
    let data = dir.join("in.csv");
    let text = "1,a,1.0,2.0\n1,a,2.0,1.0\n0,b,5.0,5.0\n0,b,6.0,5.5\n1,c,1.5,2.5\n0,d,5.5,6.0\n";
    std::fs::write(&data, text).unwrap();
    let link = dir.join("link.csv");
    std::os::unix::fs::symlink(&data, &link).unwrap();
    let d = data.to_str().unwrap();
    for out in [d, link.to_str().unwrap()] {
        refused(
            &["project", d, "--projection", "pca", "--dim", "1", "-o", out],
            "--output",
        );
        refused(&["gram", d, "--kernel", "nsk", "-o", out], "--output");
    }
    assert_eq!(
        std::fs::read_to_string(&data).unwrap(),
        text,
        "the input is untouched"
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn misplaced_files_say_what_they_are() {
    let dir = temp_dir("bounds-files");
    let d = dir.to_str().unwrap();
    refused(&["info", d], "directory");
    refused(&["predict", d, "musk1"], "directory");
    refused(
        &[
            "cv",
            "musk1",
            "--classifier",
            "citation-knn",
            "--folds-file",
            d,
        ],
        "directory",
    );
    refused(
        &[
            "project",
            "musk1",
            "--projection",
            "pca",
            "--dim",
            "2",
            "-o",
            d,
        ],
        "directory",
    );
    let model = dir.join("m.json");
    let milm = dir.join("m.milm");
    let (m, c) = (model.to_str().unwrap(), milm.to_str().unwrap());
    let out = run_mil(&["train", "musk1", "--classifier", "milr", "-o", m]);
    assert_eq!(out.status.code(), Some(0));
    let out = run_mil(&["export", m, "-o", c]);
    assert_eq!(out.status.code(), Some(0));
    refused(&["predict", c, "musk1"], "compact model");
    // A byte after the model's declared end is refused, not ignored.
    let mut bytes = std::fs::read(&milm).unwrap();
    bytes.push(0);
    std::fs::write(&milm, bytes).unwrap();
    refused(&["inspect", c], "declared end");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_saved_svm_with_an_out_of_range_rho_is_refused_on_load() {
    let dir = temp_dir("bounds-svm");
    let model = dir.join("svm.json");
    let m = model.to_str().unwrap();
    let out = run_mil(&[
        "train",
        "musk1",
        "--classifier",
        "svm",
        "--kernel",
        "nsk",
        "-o",
        m,
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&model).unwrap();
    let mut json: serde_json::Value = serde_json::from_str(&text).unwrap();
    json["classifier"]["svm"]["settings"]["rho"] = serde_json::json!(1e308);
    // Without the checksum, as a forger would leave it: the field checks must refuse it.
    json.as_object_mut().unwrap().remove("checksum");
    std::fs::write(&model, json.to_string()).unwrap();
    refused(&["predict", m, "musk1"], "rho");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_saved_milr_whose_numbers_overflow_is_refused() {
    let dir = temp_dir("bounds-milr");
    let model = dir.join("milr.json");
    let m = model.to_str().unwrap();
    let out = run_mil(&["train", "musk1", "--classifier", "milr", "-o", m]);
    assert_eq!(out.status.code(), Some(0));
    let text = std::fs::read_to_string(&model).unwrap();
    let mut json: serde_json::Value = serde_json::from_str(&text).unwrap();
    // Two huge weights of opposite signs: their products overflow to −∞ and +∞, and the
    // instance logit to NaN.
    json["classifier"]["weights"][0][1] = serde_json::json!(-1e308);
    json["classifier"]["weights"][0][2] = serde_json::json!(1e308);
    // Without the checksum, as a forger would leave it: the field checks must refuse it.
    json.as_object_mut().unwrap().remove("checksum");
    std::fs::write(&model, json.to_string()).unwrap();
    refused(&["predict", m, "musk1"], "non-finite score");
    std::fs::remove_dir_all(dir).ok();
}

/// Every projection, clustering and classifier refuses a size the data cannot support —
/// more output dimensions than features, more clusters or references than bags — before
/// any work, with exit 2 naming the flag.
#[test]
fn sizes_the_data_cannot_support_are_refused() {
    for projection in [
        "pca", "lda", "lfda", "clfda", "bmida", "mmida", "mi-alm", "midr",
    ] {
        refused(
            &[
                "project",
                "musk1",
                "--projection",
                projection,
                "--dim",
                "167",
            ],
            "--dim",
        );
    }
    for method in ["m3ic", "bamic-min", "bamic-avg"] {
        refused(
            &["cluster", "musk1", "--method", method, "--k", "93"],
            "--k",
        );
    }
    refused(
        &[
            "cv",
            "musk1",
            "--classifier",
            "citation-knn",
            "--citers",
            "92",
        ],
        "--citers",
    );
}
