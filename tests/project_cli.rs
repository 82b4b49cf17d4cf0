//! End-to-end tests of `mil project`: CSV output layout, JSON keys, the SVG plot, and
//! clear errors for bad arguments.

use mil_suite::{run_mil, temp_dir};

fn json_of(out: &std::process::Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "mil failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON object on stdout")
}

/// A small two-class set with 6 bags of 3 instances in 4 features.
fn small_csv(dir: &std::path::Path) -> String {
    let mut text = String::new();
    for b in 0..6 {
        let label = b % 2;
        for i in 0..3 {
            let v = |j: usize| {
                ((b * 7 + i * 3 + j * 5) % 11) as f64 / 3.0
                    + (label * (i == 0) as usize) as f64 * 4.0
            };
            text.push_str(&format!(
                "{label},bag{b},{},{},{},{}\n",
                v(0),
                v(1),
                v(2),
                v(3)
            ));
        }
    }
    let path = dir.join("small.csv");
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn writes_projected_instances_json_and_a_plot_with_one_point_per_instance() {
    let dir = temp_dir("project-musk1");
    let out_csv = dir.join("p.csv");
    let out_svg = dir.join("p.svg");
    for (projection, dim) in [
        ("pca", "3"),
        ("lda", "1"),
        ("lfda", "2"),
        ("clfda", "2"),
        ("bmida", "2"),
        ("mmida", "2"),
    ] {
        let out = run_mil(&[
            "project",
            "musk1",
            "--projection",
            projection,
            "--dim",
            dim,
            "-o",
            out_csv.to_str().unwrap(),
            "--plot",
            out_svg.to_str().unwrap(),
            "--json",
        ]);
        let json = json_of(&out);
        assert_eq!(json["dim"], dim.parse::<u64>().unwrap(), "{projection}");
        assert!(json["seconds"].as_f64().unwrap() >= 0.0);
        let text = std::fs::read_to_string(&out_csv).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines.len(),
            476,
            "{projection}: one line per musk1 instance"
        );
        let dim: usize = dim.parse().unwrap();
        assert!(lines.iter().all(|l| l.split(',').count() == 2 + dim));
        // musk1's first bag is positive and the label/bag columns are kept.
        assert!(lines[0].starts_with("1,"));
        let svg = std::fs::read_to_string(&out_svg).unwrap();
        assert!(svg.trim_start().starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        // One circle per instance and one per legend entry (the two classes).
        assert_eq!(svg.matches("<circle").count(), 476 + 2, "{projection}");
        assert!(
            svg.contains("class 0") && svg.contains("class 1"),
            "{projection}"
        );
        // Both classes' colours appear.
        assert!(
            svg.contains("#1F77B4") && svg.contains("#D62728"),
            "{projection}"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn mida_reports_its_optimisation_diagnostics() {
    let dir = temp_dir("project-mida");
    let data = small_csv(&dir);
    let out_csv = dir.join("p.csv");
    let out = run_mil(&[
        "project",
        &data,
        "--projection",
        "bmida",
        "--dim",
        "2",
        "--alpha",
        "0.5",
        "-o",
        out_csv.to_str().unwrap(),
        "--json",
    ]);
    let json = json_of(&out);
    for key in ["objective", "objective_initial", "rounds", "sigma"] {
        assert!(json[key].is_number(), "missing {key}: {json}");
    }
    assert!(json["objective"].as_f64() >= json["objective_initial"].as_f64());
    assert_eq!(json["alpha"], 0.5);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn midr_takes_c2_from_the_command_line() {
    // `--midr-c2` reaches MIDR: the JSON echoes it, and a tighter coupling (larger c₂)
    // brings the sparse H closer to the orthogonal A (smaller `error`).
    let dir = temp_dir("project-midr");
    let data = small_csv(&dir);
    let out_csv = dir.join("p.csv");
    let fit = |c2: Option<&str>| {
        let mut args = vec![
            "project",
            data.as_str(),
            "--projection",
            "midr",
            "--dim",
            "2",
            "--alpha",
            "0.5",
            "-o",
            out_csv.to_str().unwrap(),
            "--json",
        ];
        if let Some(c2) = c2 {
            args.extend(["--midr-c2", c2]);
        }
        json_of(&run_mil(&args))
    };
    let default = fit(None);
    assert_eq!(
        default["midr_c2"], 10.0,
        "the paper's benchmark c₂: {default}"
    );
    let tight = fit(Some("80"));
    assert_eq!(tight["midr_c2"], 80.0);
    let error = |j: &serde_json::Value| j["error"].as_f64().expect("MIDR reports error");
    assert!(error(&tight) < error(&default), "{tight} vs {default}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn bad_arguments_exit_2_with_a_message_naming_the_parameter() {
    let dir = temp_dir("project-errors");
    let data = small_csv(&dir);
    let out_csv = dir.join("p.csv");
    let o = out_csv.to_str().unwrap();
    let cases: [(&[&str], &str); 6] = [
        (&["--projection", "pca", "--dim", "9"], "--dim"),
        (&["--projection", "pca", "--dim", "1,2"], "--dim"),
        (&["--projection", "lda", "--dim", "2"], "--dim"),
        (&["--projection", "none", "--dim", "2"], "--projection"),
        (
            &["--projection", "bmida", "--dim", "2", "--alpha=-1"],
            "--alpha",
        ),
        (
            &["--projection", "midr", "--dim", "2", "--midr-c2", "0"],
            "--midr-c2",
        ),
    ];
    for (flags, named) in cases {
        let mut args = vec!["project", data.as_str(), "-o", o];
        args.extend_from_slice(flags);
        let out = run_mil(&args);
        assert_eq!(out.status.code(), Some(2), "{flags:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(named), "{flags:?}: {err}");
    }
    let missing = run_mil(&[
        "project",
        "no-such-file.csv",
        "--projection",
        "pca",
        "--dim",
        "1",
        "-o",
        o,
    ]);
    assert_eq!(missing.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn bmida_reports_prototypes_and_their_identification_rate() {
    // MIDA Table 1 on synthetic set one: the paper's kernel density identifies 65 % of
    // the positive prototypes; the mean over three seeds must reach 60 %.
    let dir = mil_suite::temp_dir("prototypes");
    let data = dir.join("one.csv");
    let truth = dir.join("truth.csv");
    let out = dir.join("projected.csv");
    let (data, truth, out) = (
        data.to_str().unwrap(),
        truth.to_str().unwrap(),
        out.to_str().unwrap(),
    );
    let mut rates = Vec::new();
    for seed in ["1", "2", "3"] {
        let s = mil_suite::run_mil(&[
            "synth", "mida-one", "-o", data, "--truth", truth, "--seed", seed, "--json",
        ]);
        assert!(s.status.success());
        let p = mil_suite::run_mil(&[
            "project",
            data,
            "--projection",
            "bmida",
            "--dim",
            "2",
            "-o",
            out,
            "--truth",
            truth,
            "--json",
        ]);
        assert!(p.status.success(), "{}", String::from_utf8_lossy(&p.stderr));
        let v: serde_json::Value = serde_json::from_slice(&p.stdout).unwrap();
        let protos = v["prototypes"].as_array().unwrap();
        let id = &v["identification"];
        assert_eq!(id["bags"].as_u64().unwrap() as usize, protos.len());
        assert!(protos
            .iter()
            .all(|p| p["bag"].as_str().unwrap().starts_with("pos")));
        assert!(protos.iter().all(|p| p["instance"].as_u64().unwrap() >= 1));
        let rate = id["rate"].as_f64().unwrap();
        let identified = id["identified"].as_u64().unwrap() as f64;
        assert!((identified / protos.len() as f64 - rate).abs() < 1e-12);
        rates.push(rate);
    }
    let mean = rates.iter().sum::<f64>() / rates.len() as f64;
    assert!(mean >= 0.6, "{rates:?}");

    // --truth needs a MIDA projection; a malformed truth file is named.
    let p = mil_suite::run_mil(&[
        "project",
        data,
        "--projection",
        "pca",
        "--dim",
        "2",
        "-o",
        out,
        "--truth",
        truth,
    ]);
    assert_eq!(p.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&p.stderr).contains("--truth"));
    std::fs::write(truth, "pos-1,one,1\n").unwrap();
    let p = mil_suite::run_mil(&[
        "project",
        data,
        "--projection",
        "bmida",
        "--dim",
        "2",
        "-o",
        out,
        "--truth",
        truth,
    ]);
    assert_eq!(p.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&p.stderr).contains("truth.csv"));
    std::fs::remove_dir_all(dir).ok();
}
