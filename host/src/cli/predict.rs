//! `mil predict`: bag labels and scores from a saved model.

use std::path::Path;
use std::time::Instant;

use serde_json::json;

use super::{PredictArgs, Report};
use crate::classifier::{BagScores, ClassifierModel};
use crate::cluster::ClusterModel;
use crate::data::{self, Dataset};
use crate::error::Result;
use crate::model::HostModel;
use crate::progress::Progress;

/// Bags per progress step when scoring an SVM model.
const SVM_CHUNK: usize = 8;

/// The scores of every bag of `data`. A set-kernel SVM estimates its kernel against
/// every stored bag for each bag, and each bag's estimates depend on that bag alone, so
/// it is scored in chunks with progress; the other models in one call (Citation-kNN with
/// Weka's scaling depends on the order of the bags it predicts).
pub(super) fn scores_with_progress(
    model: &HostModel,
    data: &Dataset,
    progress: &dyn Progress,
) -> Result<BagScores> {
    let bags: Vec<usize> = (0..data.n_bags()).collect();
    if !matches!(model.classifier, ClassifierModel::Svm(_)) {
        return model.scores(data, &bags);
    }
    progress.start("scoring bags", bags.len() as u64);
    let mut scores: Option<BagScores> = None;
    for chunk in bags.chunks(SVM_CHUNK) {
        let part = data.select(chunk);
        let all: Vec<usize> = (0..part.n_bags()).collect();
        let s = model.scores(&part, &all)?;
        match &mut scores {
            Some(acc) => acc.extend(&s),
            None => scores = Some(s),
        }
        progress.advance(chunk.len() as u64);
    }
    progress.finish();
    match scores {
        Some(s) => Ok(s),
        None => model.scores(data, &bags),
    }
}

/// Runs `mil predict`.
pub fn run(args: &PredictArgs, progress: &dyn Progress) -> Result<Report> {
    let start = Instant::now();
    if is_compact_model(&args.model) {
        return Err(crate::error::Error::data(
            &args.model,
            "is a compact model for the device (written by `mil export`); `mil predict` takes a model saved by `mil train` or `mil cluster -o` (`mil inspect` describes compact models)",
        ));
    }
    if super::output::is_cluster_model(Path::new(&args.model)) {
        return assign_clusters(args, start);
    }
    let model = HostModel::load(Path::new(&args.model))?;
    let d = data::load(&args.data)?;
    let scores = scores_with_progress(&model, &d, progress)?;
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

/// `mil predict` with a clustering model (`mil cluster -o`): the cluster of each bag, by
/// the model's own assignment rule (M³IC's step 14, BAMIC's nearest medoid).
fn assign_clusters(args: &PredictArgs, start: Instant) -> Result<Report> {
    let model = ClusterModel::load(Path::new(&args.model))?;
    let d = data::load(&args.data)?;
    let clusters = model.assign(&d)?;
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
    }
    let json = json!({
        "method": model.method().to_string(),
        "assignments": (0..d.n_bags()).map(|b| json!({
            "bag": d.bag_id(b), "cluster": clusters[b]
        })).collect::<Vec<_>>(),
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
