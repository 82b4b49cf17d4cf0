//! `mil predict`: bag labels and scores from a saved model.

use std::path::Path;
use std::time::Instant;

use serde_json::json;

use super::{PredictArgs, Report};
use crate::cluster::ClusterModel;
use crate::data;
use crate::error::{Error, Result};
use crate::explain::{Explanation, Neighbour};
use crate::instances::{instance_auroc, split_by_bag, witness_precision};
use crate::model::HostModel;
use crate::progress::Progress;

/// Runs `mil predict`; `json`: the report is printed as JSON (`--json`).
pub fn run(args: &PredictArgs, json: bool, progress: &dyn Progress) -> Result<Report> {
    let start = Instant::now();
    if is_compact_model(&args.model) {
        return Err(crate::error::Error::data(
            &args.model,
            "is a compact model for the device (written by `mil export`); `mil predict` takes a model saved by `mil train` or `mil cluster -o` (`mil inspect` describes compact models)",
        ));
    }
    check_instance_flags(args)?;
    if super::output::is_cluster_model(Path::new(&args.model)) {
        if args.instances {
            return Err(Error::parameter(
                "--instances",
                &args.model,
                "takes a classifier saved by `mil train`; a clustering model's per-instance margins are in --explain",
            ));
        }
        return assign_clusters(args, start);
    }
    let model = HostModel::load(Path::new(&args.model))?;
    if args.instances {
        return predict_instances(args, &model, json, start);
    }
    let d = data::load(&args.data)?;
    let scores = model.scores_with_progress(&d, progress)?;
    let labels = scores.labels();
    let names: Vec<&str> = labels
        .iter()
        .map(|&l| model.class_names[l].as_str())
        .collect();
    // Compare by the labels as written, so class indices of the two files need not agree.
    let accuracy = d.labels().map(|truth| {
        let hits = truth
            .iter()
            .zip(&names)
            .filter(|(&t, &p)| d.class_names()[t] == p)
            .count();
        hits as f64 / truth.len() as f64
    });
    let mut human = format!(
        "{} bags of {} with {}\nbag\tlabel\tscore",
        d.n_bags(),
        d.name(),
        args.model
    );
    for (b, name) in names.iter().enumerate() {
        human.push_str(&format!(
            "\n{}\t{}\t{:.6}",
            d.bag_id(b),
            name,
            scores.positive(b)
        ));
    }
    if let Some(a) = accuracy {
        human.push_str(&format!("\naccuracy {a:.4}"));
    }
    let mut predictions: Vec<serde_json::Value> = (0..d.n_bags())
        .map(|b| json!({"bag": d.bag_id(b), "label": names[b], "score": scores.positive(b)}))
        .collect();
    if args.explain {
        let explanations = model.explain(&d)?;
        human.push_str("\nexplanations (instances numbered from 0 within each bag)");
        for (b, e) in explanations.iter().enumerate() {
            human.push_str(&format!(
                "\n{}",
                describe(d.bag_id(b), e, &model.class_names)
            ));
            predictions[b]["explanation"] = explanation_json(e, &model.class_names);
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    let json = json!({
        "predictions": predictions,
        "accuracy": accuracy,
        "seconds": seconds,
    });
    Ok(Report { human, json })
}

/// Refuses, before any work, flags that need --instances or clash with it, and an
/// --output that is one of the inputs.
fn check_instance_flags(args: &PredictArgs) -> Result<()> {
    if !args.instances {
        if let Some(path) = &args.output {
            return Err(Error::parameter("--output", path, "applies to --instances"));
        }
        if let Some(path) = &args.truth {
            return Err(Error::parameter("--truth", path, "applies to --instances"));
        }
        return Ok(());
    }
    if args.explain {
        return Err(Error::parameter(
            "--explain",
            "true",
            "give --explain or --instances, not both",
        ));
    }
    let mut inputs = vec![args.model.as_str(), args.data.as_str()];
    inputs.extend(args.truth.as_deref());
    if let Some(out) = &args.output {
        super::output::check_outputs(&[("--output", out)], &inputs)?;
    }
    Ok(())
}

/// `mil predict --instances`: every instance's score, label and the bag's witness as CSV
/// (stdout or --output) and JSON, with the key-instance metrics when --truth is given.
fn predict_instances(
    args: &PredictArgs,
    model: &HostModel,
    json_report: bool,
    start: Instant,
) -> Result<Report> {
    // Refuse what cannot work before reading the data.
    model.classifier.check_instance_scores()?;
    if args.truth.is_some() && model.class_names.len() != 2 {
        return Err(Error::parameter(
            "--truth",
            args.truth.as_deref().unwrap_or_default(),
            format!(
                "key-instance metrics need a binary model; this one has {} classes",
                model.class_names.len()
            ),
        ));
    }
    let d = data::load(&args.data)?;
    let truth = match &args.truth {
        Some(path) => Some(split_by_bag(
            &d,
            &data::synth::read_truth(Path::new(path), &d)?,
        )?),
        None => None,
    };
    let predictions = model.predict_instances(&d)?;
    let labels = predictions.labels();
    let label = |b: usize, k: usize| labels.as_ref().map(|l| u8::from(l[b][k]));
    let kind = predictions.kind.to_string();
    let mut csv = String::from("bag_id,instance,score,label,kind\n");
    let mut rows = Vec::new();
    for (b, scores) in predictions.scores.iter().enumerate() {
        for (k, &score) in scores.iter().enumerate() {
            let l = label(b, k);
            csv.push_str(&format!(
                "{},{},{score},{},{kind}\n",
                csv_field(d.bag_id(b)),
                k + 1,
                l.map_or(String::new(), |l| l.to_string())
            ));
            rows.push(json!({"bag": d.bag_id(b), "instance": k + 1, "score": score, "label": l}));
        }
    }
    let witnesses: Vec<serde_json::Value> = predictions
        .witnesses
        .iter()
        .enumerate()
        .map(|(b, &w)| json!({"bag": d.bag_id(b), "instance": w + 1}))
        .collect();
    let rule = predictions
        .threshold
        .map_or("no instance label".to_string(), |t| {
            format!("label 1 when the score is above {t}")
        });
    let mut human = format!(
        "{} instances of {} bags of {} with {}: {kind} scores ({})",
        d.n_instances(),
        d.n_bags(),
        d.name(),
        args.model,
        model.classifier.kind()
    );
    human.push_str(&format!("; {rule}"));
    let mut json = json!({
        "score_kind": kind,
        "label_threshold": predictions.threshold,
        "instances": rows,
        "witnesses": witnesses,
        "output": args.output,
    });
    if let Some(truth) = &truth {
        let bag_labels = model.scores(&d)?.labels();
        let positive: Vec<bool> = bag_labels.iter().map(|&l| l == 1).collect();
        let auroc = instance_auroc(&predictions.scores, truth)?;
        let precision = witness_precision(&predictions.scores, truth, &positive)?;
        let n_positive = positive.iter().filter(|&&p| p).count();
        let show = |v: Option<f64>| v.map_or("undefined".to_string(), |v| format!("{v:.4}"));
        human.push_str(&format!(
            "\ninstance AUROC {} (against {}), witness precision {} ({n_positive} bags labelled {})",
            show(auroc),
            args.truth.as_deref().unwrap_or_default(),
            show(precision),
            model.class_names[1],
        ));
        json["metrics"] = json!({
            "instance_auroc": auroc,
            "witness_precision": precision,
            "bags_predicted_positive": n_positive,
        });
    }
    // Without --output the CSV goes to stdout, unless --json prints the rows there.
    let target = args.output.as_deref().or((!json_report).then_some("-"));
    if let Some(path) = target {
        super::output::write_output(path, csv.as_bytes())?;
        if path != "-" {
            human.push_str(&format!("\nwrote {path}"));
        }
    }
    json["seconds"] = json!(start.elapsed().as_secs_f64());
    Ok(Report { human, json })
}

/// A CSV field, quoted (RFC 4180) when it holds a comma, a quote or a line break.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// One explanation as JSON: `witnesses`, `score_kind`, `instance_scores`, and for
/// Citation-kNN `references` and `citers` (each `{bag, label, distance, instances}`,
/// `instances` the [query, training] pair realising the distance or null).
pub(super) fn explanation_json(e: &Explanation, class_names: &[String]) -> serde_json::Value {
    let neighbours = |list: &[Neighbour]| -> Vec<serde_json::Value> {
        list.iter()
            .map(|n| {
                json!({
                    "bag": n.bag_id.clone().unwrap_or_else(|| n.bag.to_string()),
                    "label": class_names.get(n.label).cloned().unwrap_or_else(|| n.label.to_string()),
                    "distance": n.distance,
                    "instances": n.pair.map(|(q, t)| [q, t]),
                })
            })
            .collect()
    };
    let mut v = json!({
        "witnesses": e.witnesses,
        "score_kind": e.score_name(),
        "instance_scores": e.instance_scores,
    });
    if !e.references.is_empty() || !e.citers.is_empty() {
        v["references"] = neighbours(&e.references).into();
        v["citers"] = neighbours(&e.citers).into();
    }
    v
}

/// One explanation as a line of text.
fn describe(bag: &str, e: &Explanation, class_names: &[String]) -> String {
    let mut line = format!("{bag}\twitness {:?}", e.witnesses);
    if !e.instance_scores.is_empty() {
        let scores: Vec<String> = e
            .instance_scores
            .iter()
            .map(|s| format!("{s:.4}"))
            .collect();
        line.push_str(&format!("\t{} [{}]", e.score_name(), scores.join(", ")));
    }
    for (role, list) in [("references", &e.references), ("citers", &e.citers)] {
        if list.is_empty() {
            continue;
        }
        let items: Vec<String> = list
            .iter()
            .map(|n| {
                let pair = n
                    .pair
                    .map_or(String::new(), |(q, t)| format!(" via {q}~{t}"));
                format!(
                    "{} ({}, {:.4}{pair})",
                    n.bag_id.clone().unwrap_or_else(|| n.bag.to_string()),
                    class_names.get(n.label).map_or("?", |s| s.as_str()),
                    n.distance
                )
            })
            .collect();
        line.push_str(&format!("\t{role} {}", items.join("; ")));
    }
    line
}

/// `mil predict` with a clustering model (`mil cluster -o`): the cluster of each bag, by
/// the model's own assignment rule (M³IC's step 14, BAMIC's nearest medoid).
fn assign_clusters(args: &PredictArgs, start: Instant) -> Result<Report> {
    let model = ClusterModel::load(Path::new(&args.model))?;
    let d = data::load(&args.data)?;
    let clusters = model.assign(&d)?;
    let explanations = if args.explain {
        Some(model.explain(&d)?)
    } else {
        None
    };
    let seconds = start.elapsed().as_secs_f64();
    let mut human = format!(
        "{} bags of {} assigned by the {} clustering {}\nbag\tcluster",
        d.n_bags(),
        d.name(),
        model.method(),
        args.model
    );
    for (b, c) in clusters.iter().enumerate() {
        human.push_str(&format!("\n{}\t{c}", d.bag_id(b)));
        if let Some(e) = explanations.as_ref().map(|all| &all[b]) {
            human.push_str(&format!("\t{}", describe("", e, &[]).trim_start()));
        }
    }
    let json = json!({
        "method": model.method().to_string(),
        "assignments": (0..d.n_bags()).map(|b| {
            let mut v = json!({"bag": d.bag_id(b), "cluster": clusters[b]});
            if let Some(all) = &explanations {
                v["explanation"] = explanation_json(&all[b], &[]);
            }
            v
        }).collect::<Vec<_>>(),
        "seconds": seconds,
    });
    Ok(Report { human, json })
}

/// Whether the file starts with the compact container's magic.
fn is_compact_model(path: &str) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && magic == *b"MILM"
}
