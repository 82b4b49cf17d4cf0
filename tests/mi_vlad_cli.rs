//! `mil train/predict/cv/export` with miVLAD and miFV: the command line gives the
//! library's model, explains each instance's contribution, and refuses what does not
//! apply, a codebook too large for the data, and damaged saved models.

use mil_suite::{mil_json, mil_refuses_naming, run_mil, temp_dir};
use mil_toolkit::classifier::mi_vlad::MiVlad;
use mil_toolkit::classifier::{BagModel, Classifier};

/// An edit of a saved classifier's JSON.
type Edit<'a> = &'a dyn Fn(&mut serde_json::Value);

#[test]
fn the_command_line_fits_the_librarys_models() {
    let dir = temp_dir("mi-vlad");
    let musk1 = mil_toolkit::data::load("musk1").unwrap();
    for (classifier, params) in [("mi-vlad", MiVlad::vlad()), ("mi-fv", MiVlad::fisher())] {
        let model = dir.join(format!("{classifier}.json"));
        let model = model.to_str().unwrap();
        mil_json(&[
            "train",
            "musk1",
            "--classifier",
            classifier,
            "--codebook",
            "2",
            "--ridge",
            "0.5",
            "--seed",
            "5",
            "-o",
            model,
            "--json",
        ]);
        let p = mil_json(&["predict", model, "musk1", "--explain", "--json"]);
        let lib = params
            .codebook(2)
            .ridge(0.5)
            .seed(5)
            .fit(&musk1)
            .unwrap()
            .scores(&musk1)
            .unwrap();
        let preds = p["predictions"].as_array().unwrap();
        assert_eq!(preds.len(), musk1.n_bags());
        for (b, pred) in preds.iter().enumerate() {
            let label: usize = pred["label"].as_str().unwrap().parse().unwrap();
            assert_eq!(label, lib.label(b), "{classifier} bag {b}");
            let score = pred["score"].as_f64().unwrap();
            assert!(
                (score - lib.row(b)[1]).abs() < 1e-12,
                "{classifier} bag {b}"
            );
            let e = &pred["explanation"];
            assert_eq!(e["score_kind"], "contribution");
            let scores = e["instance_scores"].as_array().unwrap();
            assert_eq!(scores.len(), musk1.bag(b).len());
            let w = e["witnesses"][0].as_u64().unwrap() as usize;
            let top = scores[w].as_f64().unwrap();
            assert!(scores.iter().all(|s| s.as_f64().unwrap() <= top));
        }
        // A cross-validation through the same flags runs and beats chance (0.51) clearly.
        let cv = mil_json(&[
            "cv",
            "musk1",
            "--classifier",
            classifier,
            "--json",
            "--quiet",
        ]);
        let acc = cv["accuracy"].as_f64().unwrap();
        assert!((0.7..=1.0).contains(&acc), "{classifier}: accuracy {acc}");
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn flags_codebooks_and_damaged_models_are_refused() {
    mil_refuses_naming(
        &["cv", "musk1", "--classifier", "milr", "--codebook", "3"],
        "--codebook",
    );
    mil_refuses_naming(
        &[
            "cv",
            "musk1",
            "--classifier",
            "mi-vlad",
            "--summary",
            "mean",
        ],
        "--summary",
    );
    mil_refuses_naming(
        &["cv", "musk1", "--classifier", "mi-fv", "--codebook", "0"],
        "--codebook",
    );
    // musk1 has 476 instances: a fold's training bags hold fewer.
    mil_refuses_naming(
        &[
            "cv",
            "musk1",
            "--classifier",
            "mi-vlad",
            "--codebook",
            "476",
        ],
        "--codebook",
    );
    // 92 bags × 2·400·166 values of 8 bytes are about 98 MB.
    mil_refuses_naming(
        &[
            "cv",
            "musk1",
            "--classifier",
            "mi-fv",
            "--codebook",
            "400",
            "--max-memory-gib",
            "0.01",
        ],
        "--max-memory-gib",
    );

    let dir = temp_dir("mi-vlad-bad");
    for classifier in ["mi-vlad", "mi-fv"] {
        // Each exports as its own model kind, with the host's label on every bag.
        let model = dir.join(format!("{classifier}.json"));
        let path = model.to_str().unwrap();
        mil_json(&[
            "train",
            "musk1",
            "--classifier",
            classifier,
            "-o",
            path,
            "--json",
        ]);
        let device = dir.join(format!("{classifier}.milm"));
        let export = mil_json(&["export", path, "-o", device.to_str().unwrap(), "--json"]);
        assert_eq!(export["kind"], classifier);
        assert_eq!(export["labels_agree"], 92);
        // Without its checksum a saved model gets the training checks: the undamaged
        // one passes them, each damaged one is refused.
        let text = std::fs::read_to_string(model).unwrap();
        let mut json: serde_json::Value = serde_json::from_str(&text).unwrap();
        json.as_object_mut().unwrap().remove("checksum");
        let other = if classifier == "mi-vlad" {
            "mi-fv"
        } else {
            "mi-vlad"
        };
        let damages: [(&str, Edit); 4] = [
            ("intact", &|_| {}),
            // One coefficient dropped.
            ("short", &|m| {
                m["logistic"]["weights"][0].as_array_mut().unwrap().pop();
            }),
            // The other method's name on this model.
            ("kind", &|m| m["kind"] = serde_json::json!(other)),
            // A codebook size that is not the codebook's.
            ("size", &|m| m["params"]["codebook"] = serde_json::json!(2)),
        ];
        for (what, damage) in damages {
            let mut edited = json.clone();
            damage(&mut edited["classifier"]);
            let damaged = dir.join(format!("{classifier}-{what}-damaged.json"));
            std::fs::write(&damaged, edited.to_string()).unwrap();
            let out = run_mil(&["predict", damaged.to_str().unwrap(), "musk1"]);
            let err = String::from_utf8_lossy(&out.stderr);
            if what == "intact" {
                assert!(out.status.success(), "{classifier}: {err}");
                continue;
            }
            assert_eq!(out.status.code(), Some(2), "{classifier} {what}: {err}");
            assert!(err.contains("damaged.json"), "{err}");
        }
    }
    std::fs::remove_dir_all(dir).ok();
}
