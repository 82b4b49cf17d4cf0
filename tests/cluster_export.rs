//! A clustering trained by `mil cluster` runs on the core: `mil export` writes the M³IC
//! model — the default one, whose instances are scaled to unit length after the z-score,
//! and one trained with `--no-instance-norm` — and the core's step-14 assignment agrees
//! with the host's on every bag.

use mil_suite::{run_mil, temp_dir};
use serde_json::Value;

fn json_of(out: &std::process::Output) -> Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn m3ic_exports_and_the_core_assigns_like_the_host() {
    let dir = temp_dir("cluster-export");
    let model = dir.join("m3ic.json");
    let milm = dir.join("m3ic.milm");
    let (model, milm) = (model.to_str().unwrap(), milm.to_str().unwrap());
    for norm in [&[][..], &["--no-instance-norm"][..]] {
        let mut args = vec![
            "cluster", "corel3", "--method", "m3ic", "--k", "3", "--seed", "1", "-o", model,
            "--quiet", "--json",
        ];
        args.extend_from_slice(norm);
        json_of(&run_mil(&args));
        for format in ["f32", "q15"] {
            let json = json_of(&run_mil(&[
                "export", model, "--data", "corel3", "--format", format, "-o", milm, "--json",
            ]));
            assert_eq!(json["labels_agree"], 300, "{format} {norm:?}");
            let err = json["max_abs_error"].as_f64().unwrap();
            if format == "f32" {
                assert!(err < 1e-4, "{format} {norm:?}: {err}");
            } else {
                // The bound is per instance; here every witness score is within it.
                let bound = json["error_bound"].as_f64().unwrap();
                assert!(err <= bound && bound < 0.1, "{norm:?}: {err} vs {bound}");
            }
            let info = json_of(&run_mil(&["inspect", milm, "--json"]));
            assert_eq!(info["kind"], "m3ic");
            assert_eq!(info["input_dim"], 230);
            assert_eq!(info["output_dim"], 3);
            assert_eq!(info["unit_length_instances"], norm.is_empty());
            assert_eq!(json["warnings"], serde_json::json!([]), "{format} {norm:?}");
        }
        // Q7 may move bags near a tie to another cluster; the export then warns, naming
        // how many.
        let json = json_of(&run_mil(&[
            "export", model, "--data", "corel3", "--format", "q7", "-o", milm, "--json",
        ]));
        let moved = 300 - json["labels_agree"].as_u64().unwrap();
        let warnings = json["warnings"].as_array().unwrap();
        assert_eq!(warnings.len(), usize::from(moved > 0), "{json}");
        if let Some(w) = warnings.first() {
            assert!(w
                .as_str()
                .unwrap()
                .contains(&format!("q7 model gives {moved} of 300")));
        }
    }
    // Folding is for linear models.
    let out = run_mil(&[
        "export",
        model,
        "--data",
        "corel3",
        "--fold-projection",
        "-o",
        milm,
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--fold-projection"));
    // Without the data the export cannot measure itself: a clear error, exit 2.
    let out = run_mil(&["export", model, "--format", "f32", "-o", milm]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--data"));
    // BAMIC medoids are not a core model.
    json_of(&run_mil(&[
        "cluster",
        "corel3",
        "--method",
        "bamic-min",
        "--k",
        "3",
        "-o",
        model,
        "--quiet",
        "--json",
    ]));
    let out = run_mil(&["export", model, "--data", "corel3", "-o", milm]);
    assert_eq!(out.status.code(), Some(2));
    std::fs::remove_dir_all(dir).ok();
}
