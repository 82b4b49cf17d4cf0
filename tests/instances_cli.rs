//! `mil predict --instances`: the per-instance CSV and JSON equal the library's
//! `HostModel::predict_instances` on the same saved model (with a projection), the
//! key-instance metrics of `--truth` equal the library's, and what cannot work is
//! refused with exit 2.

use std::path::Path;

use mil_suite::{mil_json, mil_refuses_naming, run_mil, temp_dir};
use mil_toolkit::data::synth::read_truth;
use mil_toolkit::instances::{instance_auroc, split_by_bag, witness_precision};
use mil_toolkit::model::HostModel;

/// One CSV row: bag id, instance (1-based), score, label ("" when none), kind.
type Row = (String, usize, f64, String, String);

fn parse_csv(text: &str) -> Vec<Row> {
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("bag_id,instance,score,label,kind"));
    lines
        .map(|line| {
            let f: Vec<&str> = line.split(',').collect();
            assert_eq!(f.len(), 5, "{line}");
            (
                f[0].to_string(),
                f[1].parse().unwrap(),
                f[2].parse().unwrap(),
                f[3].to_string(),
                f[4].to_string(),
            )
        })
        .collect()
}

/// The rows the library gives for `model` on `data`.
fn library_rows(model: &Path, data: &Path) -> Vec<Row> {
    let model = HostModel::load(model).unwrap();
    let data = mil_toolkit::data::load(data.to_str().unwrap()).unwrap();
    let got = model.predict_instances(&data).unwrap();
    let labels = got.labels();
    let mut rows = Vec::new();
    for (b, scores) in got.scores.iter().enumerate() {
        for (k, &s) in scores.iter().enumerate() {
            let label = labels
                .as_ref()
                .map_or(String::new(), |l| u8::from(l[b][k]).to_string());
            rows.push((
                data.bag_id(b).to_string(),
                k + 1,
                s,
                label,
                got.kind.to_string(),
            ));
        }
    }
    rows
}

#[test]
fn instances_equal_the_library_and_metrics_use_the_truth() {
    let dir = temp_dir("instances");
    let data = dir.join("train.csv");
    let test = dir.join("test.csv");
    let truth = dir.join("truth.csv");
    let p = |p: &Path| p.to_str().unwrap().to_string();
    mil_json(&[
        "synth",
        "mida-one",
        "--seed",
        "3",
        "-o",
        &p(&data),
        "--json",
    ]);
    mil_json(&[
        "synth",
        "mida-one",
        "--seed",
        "4",
        "-o",
        &p(&test),
        "--truth",
        &p(&truth),
        "--json",
    ]);
    for (classifier, extra) in [
        ("mi-svm", &["--projection", "pca", "--dim", "4"][..]),
        ("milr", &[][..]),
        ("mi-vlad", &[][..]),
    ] {
        let model = dir.join(format!("{classifier}.json"));
        let mut args = vec![
            "train",
            data.to_str().unwrap(),
            "--classifier",
            classifier,
            "-o",
            model.to_str().unwrap(),
            "--json",
        ];
        args.extend(extra);
        mil_json(&args);
        let want = library_rows(&model, &test);
        assert_eq!(want.len(), 640);

        // CSV to a file, the report on stdout.
        let out = dir.join(format!("{classifier}.csv"));
        let report = mil_json(&[
            "predict",
            &p(&model),
            &p(&test),
            "--instances",
            "-o",
            &p(&out),
            "--json",
        ]);
        let csv = std::fs::read_to_string(&out).unwrap();
        assert_eq!(parse_csv(&csv), want, "{classifier}");

        // The JSON rows are the same rows.
        let rows: Vec<Row> = report["instances"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["bag"].as_str().unwrap().to_string(),
                    r["instance"].as_u64().unwrap() as usize,
                    r["score"].as_f64().unwrap(),
                    r["label"].as_u64().map_or(String::new(), |l| l.to_string()),
                    report["score_kind"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        assert_eq!(rows, want, "{classifier}");

        // Without -o or --json the CSV goes to stdout and the summary to stderr.
        let plain = run_mil(&["predict", &p(&model), &p(&test), "--instances"]);
        assert!(plain.status.success());
        assert_eq!(
            parse_csv(&String::from_utf8(plain.stdout).unwrap()),
            want,
            "{classifier}"
        );
        assert!(String::from_utf8_lossy(&plain.stderr).contains("640 instances of 80 bags"));

        // Key-instance metrics against the library's own computation.
        let metrics = mil_json(&[
            "predict",
            &p(&model),
            &p(&test),
            "--instances",
            "--truth",
            &p(&truth),
            "--json",
        ])["metrics"]
            .clone();
        let host = HostModel::load(&model).unwrap();
        let d = mil_toolkit::data::load(&p(&test)).unwrap();
        let flags = split_by_bag(&d, &read_truth(&truth, &d).unwrap()).unwrap();
        let got = host.predict_instances(&d).unwrap();
        let positive: Vec<bool> = host
            .scores(&d)
            .unwrap()
            .labels()
            .iter()
            .map(|&l| l == 1)
            .collect();
        let auroc = instance_auroc(&got.scores, &flags).unwrap().unwrap();
        assert_eq!(metrics["instance_auroc"].as_f64(), Some(auroc));
        assert_eq!(
            metrics["witness_precision"].as_f64(),
            witness_precision(&got.scores, &flags, &positive).unwrap()
        );
        assert_eq!(
            metrics["bags_predicted_positive"].as_u64(),
            Some(positive.iter().filter(|&&p| p).count() as u64)
        );
    }
}

#[test]
fn what_cannot_work_is_refused() {
    let dir = temp_dir("instances-refused");
    let data = dir.join("d.csv");
    let truth = dir.join("truth.csv");
    let (d, t) = (data.to_str().unwrap(), truth.to_str().unwrap());
    mil_json(&["synth", "mida-one", "-o", d, "--truth", t, "--json"]);
    let knn = dir.join("knn.json");
    let knn = knn.to_str().unwrap();
    mil_json(&[
        "train",
        d,
        "--classifier",
        "citation-knn",
        "-o",
        knn,
        "--json",
    ]);
    mil_refuses_naming(&["predict", knn, d, "--instances"], "citation-knn");
    let milr = dir.join("milr.json");
    let milr = milr.to_str().unwrap();
    mil_json(&["train", d, "--classifier", "milr", "-o", milr, "--json"]);
    mil_refuses_naming(&["predict", milr, d, "-o", "x.csv"], "--output");
    mil_refuses_naming(&["predict", milr, d, "--truth", t], "--truth");
    mil_refuses_naming(
        &["predict", milr, d, "--instances", "--explain"],
        "--explain",
    );
    mil_refuses_naming(&["predict", milr, d, "--instances", "-o", d], "--output");

    // A truth file naming a bag or instance the data does not have: file:line: field.
    let text = std::fs::read_to_string(&truth).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let bad = dir.join("bad.csv");
    let b = bad.to_str().unwrap();
    let first_bag = lines[0].split(',').next().unwrap().to_string();
    for (edit, field) in [
        ("nosuchbag,1,1".to_string(), "bag_id"),
        (format!("{first_bag},9,1"), "instance"),
    ] {
        lines.insert(2, edit);
        std::fs::write(&bad, lines.join("\n")).unwrap();
        lines.remove(2);
        mil_refuses_naming(
            &["predict", milr, d, "--instances", "--truth", b],
            &format!("{b}:3: {field}"),
        );
    }

    // Three classes: no key-instance metrics.
    let three = dir.join("three.csv");
    let three = three.to_str().unwrap();
    mil_json(&["synth", "mida-two", "-o", three, "--json"]);
    let multi = dir.join("multi.json");
    let multi = multi.to_str().unwrap();
    mil_json(&[
        "train",
        three,
        "--classifier",
        "milr",
        "-o",
        multi,
        "--json",
    ]);
    mil_refuses_naming(
        &["predict", multi, three, "--instances", "--truth", t],
        "binary",
    );
    // … but the instance scores, without labels.
    let rows = mil_json(&["predict", multi, three, "--instances", "--json"]);
    assert!(rows["instances"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["label"].is_null()));
}
