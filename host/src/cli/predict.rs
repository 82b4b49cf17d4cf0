//! `mil predict`: bag labels and scores from a saved model.

use std::path::Path;
use std::time::Instant;

use serde_json::json;

use super::{PredictArgs, Report};
use crate::data;
use crate::error::Result;
use crate::model::HostModel;

/// Runs `mil predict`.
pub fn run(args: &PredictArgs) -> Result<Report> {
    let start = Instant::now();
    let model = HostModel::load(Path::new(&args.model))?;
    let d = data::load(&args.data)?;
    let bags: Vec<usize> = (0..d.n_bags()).collect();
    let scores = model.scores(&d, &bags)?;
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
    let seconds = start.elapsed().as_secs_f64();
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
    let json = json!({
        "predictions": (0..d.n_bags()).map(|b| json!({
            "bag": d.bag_id(b), "label": names[b], "score": scores.positive(b)
        })).collect::<Vec<_>>(),
        "accuracy": accuracy,
        "seconds": seconds,
    });
    Ok(Report { human, json })
}
