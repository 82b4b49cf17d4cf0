//! `mil train`: fits a pipeline on all bags of DATA and saves the model.

use std::path::Path;
use std::time::Instant;

use mil_core::keyword::Keyword;
use serde_json::json;

use super::cv::pipeline;
use super::{Report, TrainArgs};
use crate::classifier::ClassifierModel;
use crate::data;
use crate::error::Result;
use crate::progress::Progress;

/// Runs `mil train`.
pub fn run(args: &TrainArgs, progress: &dyn Progress) -> Result<Report> {
    let start = Instant::now();
    super::output::refuse_stdout("--output", &args.output)?;
    super::output::refuse_input_as_output("--output", &args.output, &[&args.data])?;
    let d = data::load(&args.data)?;
    d.require_labels(2)?;
    let pipeline = pipeline(
        &args.classifier,
        &args.projection,
        args.seed,
        &args.inner,
        d.n_classes(),
    )?;
    super::estimate::check_pipeline(
        &pipeline.classifier,
        &args.projection,
        &d,
        args.memory.gib(),
    )?;
    let all: Vec<usize> = (0..d.n_bags()).collect();
    let pipeline = super::estimate::check_cpu(
        pipeline,
        &d,
        &all,
        1,
        args.cpu.max_cpu_minutes,
        true,
        progress,
    )?;
    progress.start("training", 1);
    let mut model = pipeline.fit_reporting(&d, progress)?;
    progress.finish();
    let degenerate = match &model.classifier {
        ClassifierModel::Svm(svm) => svm
            .gram_diagnosis()?
            .map(|(diagnosis, remedy)| format!("warning: {diagnosis}: {remedy}")),
        _ => None,
    };
    if let Some(w) = &degenerate {
        super::output::warn(w);
    }
    let chosen = model.chosen.clone();
    // A path is recorded absolute, so `mil export` run from another directory reads the
    // same file; the fingerprint lets it refuse a file whose content has changed.
    model.training_data = Some(data::recorded_spec(&args.data));
    model.training_fingerprint = Some(crate::shard::Fingerprint::default().dataset(&d).hex());
    model.save(Path::new(&args.output))?;
    let seconds = start.elapsed().as_secs_f64();
    let mut human = format!(
        "{}: trained {} on {} bags → {}",
        d.name(),
        args.classifier
            .describe(&args.projection, pipeline.classifier.candidates().len()),
        d.n_bags(),
        args.output
    );
    if let Some(c) = &chosen {
        if pipeline.n_candidates() > 1 {
            human.push_str(&format!("\nchosen by inner CV: {}", c.with_margin()));
        } else {
            human.push_str(&format!("\nfitted with {c}"));
        }
    }
    if let Some(t) = model.threshold {
        human.push_str(&format!("\ndecision threshold {t}"));
    }
    if let Some(w) = &degenerate {
        human.push_str(&format!("\n{w}"));
    }
    human.push_str(&format!("\n{seconds:.2} s"));
    let json = json!({
        "model": args.output,
        "classifier": model.classifier.kind().name(),
        "bags": d.n_bags(),
        "chosen": chosen,
        "threshold": model.threshold,
        "warning": degenerate,
        "seconds": seconds,
    });
    Ok(Report { human, json })
}
