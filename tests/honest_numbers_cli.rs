//! Numbers that mean what they say: results do not depend on the data's units (a set
//! scaled by 10¹⁵⁵ scores as the unscaled one), tolerances and costs beyond their
//! documented bounds are refused, a flag is refused with a classifier it does not apply
//! to, and a label column that is not a class (about one bag per class) is refused.

use std::path::Path;

use mil_suite::{mil_json, run_mil, temp_dir};

/// Writes 40 bags of 3 instances of 3 features, scaled by `scale`: the instances of
/// class 1 lie near (6, 6, 6), those of class 0 near the origin, so the classes are
/// separable.
fn separable(path: &Path, scale: f64) {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut noise = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    };
    let mut text = String::new();
    for b in 0..40 {
        let label = b % 2;
        for _ in 0..3 {
            let centre = 6.0 * label as f64;
            let x: Vec<String> = (0..3)
                .map(|_| format!("{:e}", (centre + noise()) * scale))
                .collect();
            text.push_str(&format!("{label},b{b},{}\n", x.join(",")));
        }
    }
    std::fs::write(path, text).unwrap();
}

fn accuracy(data: &Path, pipeline: &[&str]) -> f64 {
    let mut args = vec!["cv", data.to_str().unwrap(), "--folds", "5", "--json"];
    args.extend(pipeline);
    mil_json(&args)["accuracy"].as_f64().unwrap()
}

#[test]
fn a_set_scaled_by_1e155_scores_as_the_unscaled_set() {
    let dir = temp_dir("scaled");
    let (plain, huge) = (dir.join("plain.csv"), dir.join("huge.csv"));
    separable(&plain, 1.0);
    separable(&huge, 1e155);
    assert!(std::fs::read_to_string(&huge).unwrap().contains("e155"));
    let pipelines: [&[&str]; 3] = [
        &["--classifier", "milr"],
        &["--classifier", "citation-knn"],
        &[
            "--projection",
            "pca",
            "--dim",
            "2",
            "--classifier",
            "citation-knn",
        ],
    ];
    for pipeline in pipelines {
        let expected = accuracy(&plain, pipeline);
        assert!(
            expected >= 0.9,
            "{pipeline:?} on the separable set: {expected}"
        );
        assert_eq!(accuracy(&huge, pipeline), expected, "{pipeline:?}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// Runs `mil args`, expects exit 2 and a message containing every one of `needles`.
fn refused(args: &[&str], needles: &[&str]) {
    let out = run_mil(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "mil {args:?}: {err}");
    for needle in needles {
        assert!(err.contains(needle), "mil {args:?}: {err}");
    }
}

#[test]
fn tolerances_and_costs_beyond_their_bounds_are_refused() {
    let m3ic = ["cluster", "corel3", "--method", "m3ic", "--k", "3"];
    for (flag, value) in [
        ("--epsilon1", "1e30"),
        ("--epsilon2", "1e30"),
        ("--epsilon2", "0.5"),
    ] {
        let args: Vec<&str> = m3ic.iter().copied().chain([flag, value]).collect();
        refused(&args, &[&format!("invalid {flag} = "), "at most 0.1"]);
    }
    for cost in ["1e11", "1e300", "inf"] {
        refused(
            &[
                "cv",
                "musk1",
                "--classifier",
                "svm",
                "--kernel",
                "nsk",
                "--cost",
                cost,
            ],
            &["--cost", "(0, 1e10]"],
        );
    }
}

#[test]
fn a_flag_is_refused_with_a_classifier_it_does_not_apply_to() {
    let cases: [(&str, &[&str], &str); 6] = [
        ("citation-knn", &["--kernel", "kmin"], "--kernel"),
        ("citation-knn", &["--ridge", "2"], "--ridge"),
        ("milr", &["--references", "5"], "--references"),
        ("milr", &["--scaling", "zscore"], "--scaling"),
        ("svm", &["--pooling", "max"], "--pooling"),
        ("svm", &["--hausdorff", "max"], "--hausdorff"),
    ];
    for (classifier, flag, name) in cases {
        let mut args = vec!["cv", "musk1", "--classifier", classifier];
        args.extend(flag);
        refused(
            &args,
            &[
                &format!("invalid {name} = {}", flag[1]),
                "applies to --classifier",
            ],
        );
    }
}

#[test]
fn a_label_column_with_about_one_bag_per_class_is_refused() {
    let dir = temp_dir("classes");
    // The bag id used as the label: 30 classes of one bag each.
    let ids = dir.join("ids.csv");
    let text: String = (0..30)
        .map(|b| format!("{b},b{b},{},{}\n", b % 7, b % 5))
        .collect();
    std::fs::write(&ids, text).unwrap();
    let ids = ids.to_str().unwrap();
    let model = dir.join("m.json");
    for args in [
        vec!["cv", ids, "--classifier", "milr"],
        vec![
            "train",
            ids,
            "--classifier",
            "milr",
            "-o",
            model.to_str().unwrap(),
        ],
    ] {
        refused(&args, &["the label column", "30 classes for 30 bags"]);
    }
    assert!(!model.exists());
    // More than 1000 classes, even with several bags each.
    let many = dir.join("many.csv");
    let text: String = (0..2004)
        .map(|b| format!("{},b{b},{},1\n", b / 2, b % 3))
        .collect();
    std::fs::write(&many, text).unwrap();
    refused(
        &["cv", many.to_str().unwrap(), "--classifier", "citation-knn"],
        &["the label column", "1002 classes", "at most 1000"],
    );
    std::fs::remove_dir_all(&dir).ok();
}
