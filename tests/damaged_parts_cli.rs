//! Files the tool reads back — `mil cv` parts, `mil gram` tiles, saved models — damaged,
//! edited or not files of the tool at all: every one is refused with exit 2 and a message
//! naming the file, never a panic, an abort or an allocation sized by a damaged field.
//! The field checks themselves are exercised through the library on parts whose checksum
//! a forger would have recomputed.

use mil_suite::{run_mil, temp_dir};
use mil_toolkit::classifier::BagScores;
use mil_toolkit::kernel::tiles::{merge_tiles, GramTile};
use mil_toolkit::pipeline::{check_outcomes, FoldOutcome};

fn ok(args: &[&str]) {
    let out = run_mil(args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "mil {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `mil`, which must refuse with exit 2 and a message containing every needle.
fn refused(args: &[&str], needles: &[&str]) {
    let out = run_mil(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "mil {args:?}: {err}");
    for needle in needles {
        assert!(err.contains(needle), "mil {args:?}: {err} lacks {needle:?}");
    }
}

/// Writes `file` edited by `edit` to `name` in `dir`, returning its path.
fn damaged(
    dir: &std::path::Path,
    file: &str,
    name: &str,
    edit: impl Fn(&mut serde_json::Value),
) -> String {
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    edit(&mut v);
    let path = dir.join(name).display().to_string();
    std::fs::write(&path, serde_json::to_string(&v).unwrap()).unwrap();
    path
}

#[test]
fn damaged_cv_parts_are_refused_naming_the_part() {
    let dir = temp_dir("damaged-cv");
    let path = |name: &str| dir.join(name).display().to_string();
    let (p0, p1) = (path("p0.json"), path("p1.json"));
    for (i, p) in [&p0, &p1].into_iter().enumerate() {
        let shard = format!("{i}/2");
        ok(&[
            "cv",
            "musk1",
            "--classifier",
            "milr",
            "--quiet",
            "--shard",
            &shard,
            "-o",
            p,
        ]);
    }
    ok(&["cv", "merge", &p0, &p1, "--quiet"]);

    let score = damaged(&dir, &p1, "score.json", |v| {
        v["outcomes"][0]["scores"]["scores"][0] = serde_json::json!(0.123);
    });
    refused(&["cv", "merge", &p0, &score], &["score.json", "checksum"]);
    let classes = damaged(&dir, &p1, "classes.json", |v| {
        v["outcomes"][0]["scores"]["n_classes"] = serde_json::json!(0);
    });
    refused(
        &["cv", "merge", &p0, &classes],
        &["classes.json", "0 classes"],
    );
    let shards = damaged(&dir, &p1, "shards.json", |v| {
        v["shards"] = serde_json::json!(1u64 << 32);
    });
    refused(&["cv", "merge", &p0, &shards], &["shards.json"]);
    let bag = damaged(&dir, &p1, "bag.json", |v| {
        v["assignments"][0][1][0][0] = serde_json::json!(1u64 << 32);
    });
    refused(&["cv", "merge", &p0, &bag], &["bag.json"]);
    let cut = path("cut.json");
    let text = std::fs::read_to_string(&p1).unwrap();
    std::fs::write(&cut, &text[..text.len() / 2]).unwrap();
    refused(&["cv", "merge", &p0, &cut], &["cut.json"]);
    refused(&["cv", "merge", &p0, "/dev/zero"], &["/dev/zero", "JSON"]);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn damaged_gram_tiles_are_refused_naming_the_tile() {
    let dir = temp_dir("damaged-gram");
    let path = |name: &str| dir.join(name).display().to_string();
    let (t0, t1) = (path("t0.json"), path("t1.json"));
    for (i, t) in [&t0, &t1].into_iter().enumerate() {
        let shard = format!("{i}/2");
        ok(&[
            "gram", "musk1", "--kernel", "nsk", "--quiet", "--shard", &shard, "-o", t,
        ]);
    }
    let out = path("gram.csv");
    ok(&["gram", "merge", &t0, &t1, "-o", &out, "--quiet"]);

    let value = damaged(&dir, &t1, "value.json", |v| {
        v["values"][3] = serde_json::json!(-1.5);
    });
    refused(
        &["gram", "merge", &t0, &value, "-o", &out],
        &["value.json", "checksum"],
    );
    let n = damaged(&dir, &t1, "n.json", |v| {
        v["n"] = serde_json::json!(1u64 << 32)
    });
    refused(&["gram", "merge", &t0, &n, "-o", &out], &["n.json"]);
    refused(
        &["gram", "merge", &t0, "/dev/zero", "-o", &out],
        &["/dev/zero"],
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_model_that_is_not_json_is_refused_after_its_first_bytes() {
    refused(
        &["predict", "/dev/zero", "musk1"],
        &["/dev/zero", "not a saved model"],
    );
    let dir = temp_dir("damaged-model");
    let csv = dir.join("data.csv");
    std::fs::write(&csv, "1,a,0.5\n0,b,0.25\n").unwrap();
    let csv = csv.display().to_string();
    refused(
        &["predict", &csv, "musk1"],
        &["data.csv", "not a saved model"],
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// Outcomes as a forger would write them, checksum and all: the field checks catch each.
#[test]
fn outcomes_are_checked_against_the_data_they_claim() {
    let data = mil_toolkit::data::load("musk1").unwrap();
    let n = data.n_bags();
    let folds: Vec<Vec<usize>> = vec![(0..n / 2).collect(), (n / 2..n).collect()];
    let assignments = vec![(1u64, folds.clone())];
    let outcome = |fold: usize, classes: usize, rows: usize| FoldOutcome {
        repeat: 0,
        fold,
        scores: BagScores::new(classes, vec![0.5; classes * rows]),
        chosen: None,
        threshold: None,
    };
    let good = vec![outcome(0, 2, folds[0].len()), outcome(1, 2, folds[1].len())];
    assert_eq!(check_outcomes(&data, &assignments, &good), Ok(()));

    let problem = |assignments: &[(u64, Vec<Vec<usize>>)], outcomes: &[FoldOutcome]| {
        check_outcomes(&data, assignments, outcomes).unwrap_err()
    };
    let mut far = folds.clone();
    far[1][0] = 1 << 32;
    assert!(problem(&[(1, far)], &good).contains("bag index 4294967296"));
    let mut twice = folds.clone();
    twice[1][0] = 0;
    assert!(problem(&[(1, twice)], &good).contains("in two folds"));
    let mut missing = folds.clone();
    missing[1].pop();
    assert!(problem(&[(1, missing)], &good).contains("in no fold"));
    assert!(problem(&assignments, &[good[0].clone(), good[0].clone()]).contains("twice"));
    assert!(problem(&assignments, &[outcome(2, 2, 1)]).contains("fold 2"));
    assert!(problem(&assignments, &[outcome(0, 3, folds[0].len())]).contains("3 classes"));
    assert!(problem(&assignments, &[outcome(0, 2, 1)]).contains("1 bags"));
    let mut nan = outcome(0, 2, folds[0].len());
    nan.scores = BagScores::new(2, vec![f64::NAN; 2 * folds[0].len()]);
    assert!(problem(&assignments, &[nan]).contains("NaN"));
}

#[test]
fn share_counts_and_tile_sizes_never_size_an_allocation() {
    let names = ["a".to_string(), "b".to_string()];
    let tile = |n: usize, first: usize, values: Vec<f64>| GramTile {
        format: "mil-gram-tile".into(),
        version: 2,
        fingerprint: "f".into(),
        nsk: false,
        n,
        shard: 0,
        shards: 1,
        first,
        values,
        samples: 0,
        seconds: 0.0,
        summary: serde_json::Value::Null,
        checksum: String::new(),
    };
    // Three bags: six upper-triangle entries.
    assert!(merge_tiles(&[tile(3, 0, vec![0.0; 6])], &names[..1]).is_ok());
    for (n, first) in [(1 << 40, 0), (usize::MAX, 0), (3, usize::MAX)] {
        let e = merge_tiles(&[tile(n, first, vec![0.0; 6])], &names[..1]).unwrap_err();
        assert!(e.to_string().starts_with("a:"), "{e}");
    }
}

#[test]
fn an_edited_saved_model_is_refused_and_an_old_one_gets_the_training_checks() {
    let dir = temp_dir("damaged-saved");
    let path = |name: &str| dir.join(name).display().to_string();
    let svm = path("svm.json");
    ok(&[
        "train",
        "musk1",
        "--classifier",
        "svm",
        "--kernel",
        "mi-rbf",
        "--scaling",
        "minmax",
        "--quiet",
        "-o",
        &svm,
    ]);
    ok(&["predict", &svm, "musk1", "--quiet"]);
    // Without its min-max map the model would score unscaled bags against scaled ones.
    let no_map = damaged(&dir, &svm, "no-map.json", |v| {
        v["classifier"].as_object_mut().unwrap().remove("minmax");
    });
    refused(&["predict", &no_map, "musk1"], &["no-map.json", "checksum"]);

    let knn = path("knn.json");
    ok(&[
        "train",
        "musk1",
        "--classifier",
        "citation-knn",
        "--quiet",
        "-o",
        &knn,
    ]);
    let rank = damaged(&dir, &knn, "rank.json", |v| {
        v["classifier"]["params"]["rank"] = serde_json::json!(1u64 << 32);
    });
    refused(&["predict", &rank, "musk1"], &["rank.json", "checksum"]);
    // A model without a checksum (as builds before it wrote) still gets training's checks.
    let old = damaged(&dir, &rank, "old.json", |v| {
        v.as_object_mut().unwrap().remove("checksum");
    });
    refused(&["predict", &old, "musk1"], &["old.json", "rank"]);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn export_reads_the_training_file_by_its_absolute_path_and_refuses_other_content() {
    use std::process::Command;
    let dir = temp_dir("export-path");
    let (train_dir, other_dir) = (dir.join("train"), dir.join("other"));
    std::fs::create_dir_all(&train_dir).unwrap();
    std::fs::create_dir_all(&other_dir).unwrap();
    let data = mil_toolkit::data::load("musk1").unwrap();
    let mut csv = String::new();
    for b in 0..data.n_bags() {
        let label = data.class_names()[data.labels().unwrap()[b]].clone();
        for row in data.bag(b).as_slice().chunks_exact(data.dim()) {
            let cells: Vec<String> = row.iter().map(f64::to_string).collect();
            csv.push_str(&format!("{label},{},{}\n", data.bag_id(b), cells.join(",")));
        }
    }
    std::fs::write(train_dir.join("d.csv"), &csv).unwrap();
    let run_in = |cwd: &std::path::Path, args: &[&str]| {
        Command::new(mil_suite::mil_binary())
            .args(args)
            .current_dir(cwd)
            .output()
            .unwrap()
    };
    let out = run_in(
        &train_dir,
        &[
            "train",
            "d.csv",
            "--classifier",
            "milr",
            "--quiet",
            "-o",
            "m.json",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let model = train_dir.join("m.json").display().to_string();
    let export = |cwd: &std::path::Path| {
        run_in(
            cwd,
            &[
                "export", &model, "--format", "q15", "-o", "m.milm", "--json",
            ],
        )
    };
    // From another directory the recorded path still names the training file.
    let out = export(&other_dir);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The same path with other content is refused, naming the file.
    let (first, rest) = csv.split_once('\n').unwrap();
    let mut cells: Vec<&str> = first.split(',').collect();
    cells[2] = "12345";
    std::fs::write(
        train_dir.join("d.csv"),
        format!("{}\n{rest}", cells.join(",")),
    )
    .unwrap();
    let out = export(&other_dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("d.csv") && err.contains("not the data"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).ok();
}
