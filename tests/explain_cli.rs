//! `mil predict --explain`: witnesses and per-instance scores in the JSON and the human
//! summary, for MILR, Citation-kNN and an M³IC clustering model.

use mil_suite::{instance_scores, mil_json, run_mil, temp_dir};

#[test]
fn predict_explain_reports_witnesses_and_instance_scores() {
    let dir = temp_dir("explain");
    // MILR: instance probabilities; the witness is the most probable instance, and under
    // noisy-OR the bag's score is 1 − Π(1 − p).
    let milr = dir.join("milr.json");
    let milr = milr.to_str().unwrap();
    mil_json(&[
        "train",
        "musk1",
        "--classifier",
        "milr",
        "-o",
        milr,
        "--json",
    ]);
    let p = mil_json(&["predict", milr, "musk1", "--explain", "--json"]);
    let preds = p["predictions"].as_array().unwrap();
    assert_eq!(preds.len(), 92);
    for pred in preds {
        let e = &pred["explanation"];
        assert_eq!(e["score_kind"], "probability");
        let scores = instance_scores(e);
        let w = e["witnesses"][0].as_u64().unwrap() as usize;
        assert!(scores.iter().all(|&s| s <= scores[w]));
        let pooled = 1.0 - scores.iter().map(|p| 1.0 - p).product::<f64>();
        let bag = pred["score"].as_f64().unwrap();
        assert!((pooled - bag).abs() < 1e-9, "{pooled} vs {bag}");
    }
    // Without --explain the key is absent (the contract's output unchanged).
    let plain = mil_json(&["predict", milr, "musk1", "--json"]);
    assert!(plain["predictions"][0].get("explanation").is_none());

    // Citation-kNN: references and citers with the instance pair of each distance; on its
    // own training bags each bag's nearest reference is itself at distance 0.
    let knn = dir.join("knn.json");
    let knn = knn.to_str().unwrap();
    mil_json(&[
        "train",
        "musk1",
        "--classifier",
        "citation-knn",
        "-o",
        knn,
        "--json",
    ]);
    let p = mil_json(&["predict", knn, "musk1", "--explain", "--json"]);
    for pred in p["predictions"].as_array().unwrap() {
        let e = &pred["explanation"];
        let refs = e["references"].as_array().unwrap();
        assert!(refs.len() >= 2);
        let own = refs
            .iter()
            .find(|r| r["bag"] == pred["bag"])
            .expect("a training bag references itself");
        assert_eq!(own["distance"].as_f64().unwrap(), 0.0);
        assert_eq!(own["instances"].as_array().unwrap().len(), 2);
        assert!(e["citers"].is_array());
        assert!(!e["witnesses"].as_array().unwrap().is_empty());
    }
    let out = run_mil(&["predict", knn, "musk1", "--explain"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("references") && text.contains("via"),
        "{text}"
    );

    // M³IC: per-instance margins, and the witness's margin is the largest.
    let m3ic = dir.join("m3ic.json");
    let m3ic = m3ic.to_str().unwrap();
    mil_json(&[
        "cluster",
        "corel3",
        "--method",
        "m3ic",
        "--k",
        "3",
        "--restarts",
        "1",
        "-o",
        m3ic,
        "--json",
    ]);
    let p = mil_json(&["predict", m3ic, "corel3", "--explain", "--json"]);
    for a in p["assignments"].as_array().unwrap() {
        let e = &a["explanation"];
        assert_eq!(e["score_kind"], "margin");
        let s = instance_scores(e);
        let w = e["witnesses"][0].as_u64().unwrap() as usize;
        assert!(s.iter().all(|&v| v <= s[w]));
    }
    std::fs::remove_dir_all(dir).ok();
}
