//! Inner-CV selection of classifier settings from the command line: lists on any setting
//! flag, `--tune` (a classifier's default grid) and `--classifier auto` (every family's),
//! each choice reported per outer fold and stored in the trained model.

use mil_suite::{mil_json, mil_refuses_naming, run_mil, temp_dir};
use mil_toolkit::classifier::milr::{Milr, Pooling};
use mil_toolkit::classifier::ClassifierParams;
use mil_toolkit::pipeline::ClassifierGrid;
use rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// The per-fold `chosen` classifiers of a `mil cv --json` report.
fn chosen(report: &serde_json::Value) -> Vec<String> {
    report["chosen"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            c["classifier"]
                .as_str()
                .expect("a chosen classifier")
                .to_owned()
        })
        .collect()
}

#[test]
fn lists_choose_among_every_combination_of_their_values() {
    let report = mil_json(&[
        "cv",
        "musk1",
        "--folds",
        "4",
        "--classifier",
        "milr",
        "--pooling",
        "mean,max",
        "--ridge",
        "1,100",
        "--json",
    ]);
    // The four combinations, described as the library describes them.
    let combos: Vec<String> = [Pooling::Mean, Pooling::Max]
        .iter()
        .flat_map(|&p| {
            [1.0, 100.0]
                .map(|r| ClassifierParams::from(Milr::default().pooling(p).ridge(r)).to_string())
        })
        .collect();
    let picks = chosen(&report);
    assert_eq!(picks.len(), 4);
    for c in &picks {
        assert!(combos.contains(c), "{c} is not one of {combos:?}");
    }
    // --tune tries the classifier's default grid, around the flags given.
    let tuned = mil_json(&[
        "cv",
        "musk1",
        "--folds",
        "3",
        "--classifier",
        "milr",
        "--tune",
        "--json",
    ]);
    let grid: Vec<String> = ClassifierGrid::tuned(Milr::default())
        .unwrap()
        .candidates()
        .iter()
        .map(ToString::to_string)
        .collect();
    for c in chosen(&tuned) {
        assert!(
            grid.contains(&c),
            "{c} is not in MILR's default grid {grid:?}"
        );
    }
}

#[test]
fn auto_reports_its_choices_and_does_not_depend_on_the_thread_count() {
    let args = [
        "cv",
        "musk1",
        "--folds",
        "3",
        "--classifier",
        "auto",
        "--seed",
        "5",
        "--json",
    ];
    let run = |threads: &str| {
        let out = std::process::Command::new(mil_suite::mil_binary())
            .args(args)
            .env("RAYON_NUM_THREADS", threads)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v.as_object_mut().unwrap().remove("seconds");
        v
    };
    let one = run("1");
    let two = run("2");
    assert_eq!(one, two);
    let grid: Vec<String> = ClassifierGrid::auto(5)
        .candidates()
        .iter()
        .map(ToString::to_string)
        .collect();
    let picks = chosen(&one);
    assert_eq!(picks.len(), 3);
    for c in &picks {
        assert!(grid.contains(c), "{c} is not an auto candidate");
    }
    // The outer score is of bags no choice saw: it is a real cross-validation score.
    let accuracy = one["accuracy"].as_f64().unwrap();
    assert!((0.6..=1.0).contains(&accuracy), "accuracy {accuracy}");
}

#[test]
fn a_trained_auto_model_stores_its_choice_and_predicts() {
    let dir = temp_dir("auto-train");
    let model = dir.join("auto.json");
    let model = model.to_str().unwrap();
    let trained = mil_json(&[
        "train",
        "musk1",
        "--classifier",
        "auto",
        "-o",
        model,
        "--json",
    ]);
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(model).unwrap()).unwrap();
    let choice = saved["chosen"]["classifier"]
        .as_str()
        .expect("the choice in the model");
    assert!(
        ClassifierGrid::auto(1)
            .candidates()
            .iter()
            .any(|c| c.to_string() == choice),
        "{choice}"
    );
    // The fitted classifier is the chosen one.
    let kind = trained["classifier"].as_str().unwrap();
    assert!(
        choice.starts_with(&format!("{kind} (")),
        "{kind} vs {choice}"
    );
    let p = mil_json(&["predict", model, "musk1", "--json"]);
    assert_eq!(p["predictions"].as_array().unwrap().len(), 92);
}

#[test]
fn auto_and_lists_refuse_what_does_not_apply() {
    // auto chooses every setting: a setting flag is refused, naming it.
    mil_refuses_naming(
        &["cv", "musk1", "--classifier", "auto", "--cost", "1"],
        "--cost",
    );
    mil_refuses_naming(
        &["cv", "musk1", "--classifier", "auto", "--summary", "mean"],
        "--summary",
    );
    // A list flag given for a classifier it does not apply to, even at its default value.
    mil_refuses_naming(
        &[
            "cv",
            "musk1",
            "--classifier",
            "citation-knn",
            "--pooling",
            "noisy-or",
        ],
        "--pooling",
    );
    mil_refuses_naming(
        &["cv", "musk1", "--classifier", "milr", "--gamma", "0.1,1"],
        "--gamma",
    );
    // So is a scalar flag at its default value, read from `mil cv --help`.
    let help = run_mil(&["cv", "--help"]);
    let help = String::from_utf8_lossy(&help.stdout).to_string();
    let default_of = |flag: &str| -> String {
        let lines: Vec<&str> = help.lines().collect();
        let at = lines
            .iter()
            .position(|l| l.trim_start().starts_with(&format!("{flag} ")))
            .unwrap_or_else(|| panic!("{flag} in `mil cv --help`"));
        lines[at + 1..]
            .iter()
            .take_while(|l| !l.trim_start().starts_with("--"))
            .find_map(|l| l.trim().strip_prefix("[default: "))
            .and_then(|d| d.strip_suffix(']'))
            .unwrap_or_else(|| panic!("{flag} has a default"))
            .to_string()
    };
    for (classifier, flag) in [
        ("svm", "--rank"),
        ("milr", "--hausdorff"),
        ("citation-knn", "--beta"),
        ("citation-knn", "--epsilon"),
        ("svm", "--eta"),
        ("milr", "--max-restarts"),
    ] {
        let default = default_of(flag);
        mil_refuses_naming(
            &["cv", "musk1", "--classifier", classifier, flag, &default],
            flag,
        );
    }
    // Where the flag applies, its default value is accepted.
    let out = run_mil(&[
        "cv",
        "musk1",
        "--classifier",
        "citation-knn",
        "--rank",
        "1",
        "--folds",
        "2",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // An empty or malformed list is refused by the parser.
    let out = run_mil(&["cv", "musk1", "--classifier", "svm", "--cost", "1,x"]);
    assert_eq!(out.status.code(), Some(2));
}

/// A small two-class set as CSV (`label,bag,features…`): `positives` positive bags among
/// `bags`, three instances each, four features uniform in [-0.5, 0.5) from a seeded
/// generator; a positive bag's first instance is shifted so that the classes can be
/// told apart.
fn small_set(bags: usize, positives: usize) -> String {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
    let mut next = || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
    let mut csv = String::new();
    for b in 0..bags {
        let label = usize::from(b < positives);
        for i in 0..3 {
            let shift = if label == 1 && i == 0 { 1.5 } else { 0.0 };
            let x: Vec<String> = (0..4).map(|_| format!("{:.4}", next() + shift)).collect();
            csv.push_str(&format!("{label},bag{b},{}\n", x.join(",")));
        }
    }
    csv
}

/// `mil cv` on the set, two outer folds, with `flags`; the timing removed.
fn small_cv(data: &str, flags: &[&str]) -> serde_json::Value {
    let mut args = vec!["cv", data, "--folds", "2", "--json"];
    args.extend(flags);
    let mut v = mil_json(&args);
    v.as_object_mut().unwrap().remove("seconds");
    v
}

#[test]
fn inner_folds_are_at_most_one_per_bag_of_the_smallest_class() {
    let dir = temp_dir("inner-folds");
    // 4 positive bags of 40: each training half has 2, so at most two inner folds,
    // whatever is asked (here among MILR's poolings); one positive bag in training
    // leaves nothing to choose with.
    let lists = ["--classifier", "milr", "--pooling", "noisy-or,mean,max"];
    let rare = dir.join("rare.csv");
    std::fs::write(&rare, small_set(40, 4)).unwrap();
    let rare = rare.to_str().unwrap();
    let two = small_cv(rare, &[&lists[..], &["--inner-folds", "2"]].concat());
    assert_eq!(small_cv(rare, &lists), two);
    assert_eq!(
        small_cv(rare, &[&lists[..], &["--inner-folds", "8"]].concat()),
        two
    );
    let single = dir.join("single.csv");
    std::fs::write(&single, small_set(40, 2)).unwrap();
    let out = run_mil(
        &[
            &["cv", single.to_str().unwrap(), "--folds", "2"],
            &lists[..],
        ]
        .concat(),
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--inner-folds") && err.contains("smallest class has 1"),
        "{err}"
    );
}

#[test]
fn candidates_that_cannot_fit_so_few_bags_are_passed_over() {
    let dir = temp_dir("few-bags");
    // 8 bags, two outer folds of two inner folds: an inner fit sees 2 bags, too few for
    // Citation-kNN's 4 citers (its default), which auto and lists pass over.
    let tiny = dir.join("tiny.csv");
    std::fs::write(&tiny, small_set(8, 4)).unwrap();
    let tiny = tiny.to_str().unwrap();
    let auto = small_cv(tiny, &["--classifier", "auto"]);
    assert_eq!(chosen(&auto).len(), 2);
    assert!(chosen(&auto).iter().all(|c| !c.starts_with("citation-knn")));
    let list = small_cv(tiny, &["--classifier", "citation-knn", "--citers", "4,1"]);
    for c in chosen(&list) {
        assert!(c.contains("C 1,"), "{c}");
    }
    // When no candidate can fit, the first one's reason is the error.
    mil_refuses_naming(
        &[
            "cv",
            tiny,
            "--folds",
            "2",
            "--classifier",
            "citation-knn",
            "--citers",
            "4,5",
        ],
        "--citers",
    );
}

#[test]
fn a_vote_reports_its_members_and_predicts_by_their_majority() {
    let dir = temp_dir("vote");
    let lists = ["--classifier", "milr", "--pooling", "noisy-or,mean,max"];
    let cv = mil_json(
        &[
            &["cv", "musk1", "--folds", "3", "--vote", "3", "--json"],
            &lists[..],
        ]
        .concat(),
    );
    let folds = cv["chosen"].as_array().unwrap();
    assert_eq!(folds.len(), 3);
    for fold in folds {
        let mut members = vec![fold["classifier"].as_str().unwrap().to_owned()];
        for v in fold["voters"].as_array().unwrap() {
            members.push(v.as_str().unwrap().to_owned());
        }
        members.sort();
        members.dedup();
        assert_eq!(members.len(), 3, "{fold}");
    }
    // A saved vote predicts the majority of the three poolings, each trained alone (on
    // musk1; predicting musk2, where they disagree).
    let model = dir.join("vote.json");
    let model = model.to_str().unwrap();
    mil_json(
        &[
            &["train", "musk1", "--vote", "3", "-o", model, "--json"],
            &lists[..],
        ]
        .concat(),
    );
    let vote = mil_json(&["predict", model, "musk2", "--json"]);
    let mut alone = Vec::new();
    for pooling in ["noisy-or", "mean", "max"] {
        let m = dir.join(format!("{pooling}.json"));
        let m = m.to_str().unwrap();
        mil_json(&[
            "train",
            "musk1",
            "--classifier",
            "milr",
            "--pooling",
            pooling,
            "-o",
            m,
            "--json",
        ]);
        alone.push(mil_json(&["predict", m, "musk2", "--json"])["predictions"].clone());
    }
    let predictions = vote["predictions"].as_array().unwrap();
    let mut disagreements = 0;
    for (i, p) in predictions.iter().enumerate() {
        let labels: Vec<&str> = alone
            .iter()
            .map(|a| a[i]["label"].as_str().unwrap())
            .collect();
        let ones = labels.iter().filter(|&&l| l == "1").count();
        assert_eq!(
            p["label"].as_str(),
            Some(if ones >= 2 { "1" } else { "0" }),
            "bag {i}"
        );
        disagreements += usize::from(labels.iter().any(|&l| l != labels[0]));
    }
    assert!(
        disagreements > 0,
        "the poolings never disagree: the test shows nothing"
    );
    // What needs one classifier is refused, naming the vote; so are a threshold and a
    // vote of more members than candidates.
    let out = run_mil(&[
        "export",
        model,
        "-o",
        dir.join("vote.bin").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("vote"));
    let out = run_mil(&["predict", model, "musk1", "--explain"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("vote"));
    mil_refuses_naming(
        &[
            &["cv", "musk1", "--vote", "2", "--threshold", "auto"],
            &lists[..],
        ]
        .concat(),
        "--vote",
    );
    mil_refuses_naming(
        &[&["cv", "musk1", "--vote", "4"], &lists[..]].concat(),
        "--vote",
    );
}

/// `--inner-repeats` reaches the inner CV: the trained model's inner scores are the
/// library's for the same repeated pipeline, and differ from one assignment's.
#[test]
fn inner_repeats_rank_as_the_library_does() {
    let dir = temp_dir("inner-repeats");
    let inner = |repeats: &str| {
        let model = dir.join(format!("r{repeats}.json"));
        let report = mil_json(&[
            "train",
            "musk1",
            "--classifier",
            "milr",
            "--pooling",
            "mean,max,noisy-or",
            "--inner-repeats",
            repeats,
            "-o",
            model.to_str().unwrap(),
            "--json",
        ]);
        report["chosen"]["inner"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                (
                    s["candidate"].as_str().unwrap().to_owned(),
                    s["score"].as_f64().unwrap(),
                )
            })
            .collect::<Vec<_>>()
    };
    let grid = ClassifierGrid::of(
        [Pooling::Mean, Pooling::Max, Pooling::NoisyOr]
            .map(|p| ClassifierParams::from(Milr::default().pooling(p)))
            .to_vec(),
    )
    .unwrap();
    let data = mil_toolkit::data::load("musk1").unwrap();
    let model = mil_toolkit::pipeline::Pipeline::new(grid)
        .inner_repeats(3)
        .fit(&data)
        .unwrap();
    let library: Vec<(String, f64)> = model
        .chosen
        .unwrap()
        .inner
        .into_iter()
        .map(|s| (s.candidate, s.score.unwrap()))
        .collect();
    let repeated = inner("3");
    assert_eq!(repeated, library);
    assert_ne!(repeated, inner("1"));
    mil_refuses_naming(
        &[
            "cv",
            "musk1",
            "--classifier",
            "auto",
            "--inner-repeats",
            "0",
        ],
        "--inner-repeats",
    );
}
