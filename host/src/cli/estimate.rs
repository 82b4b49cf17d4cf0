//! The memory and work of a command, estimated from its input's size by the algorithms'
//! own `estimate` functions and checked against `--max-memory-gib` before any work.

use super::ProjectionArgs;
use crate::classifier::ClassifierParams;
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::params::{Estimate, Shape};
use crate::pipeline::{ClassifierGrid, Pipeline};
use crate::progress::Progress;

/// What to change besides the limit when a data set is too large for an algorithm.
const FEWER_BAGS: &str = "use fewer bags";

/// `mil cv` and `mil train`: the projection (if any) on the raw features, then the
/// classifier's grid on the projected ones ([`ClassifierGrid::footprint`]).
pub(super) fn check_pipeline(
    classifier: &ClassifierGrid,
    projection: &ProjectionArgs,
    data: &Dataset,
    limit_gib: f64,
) -> Result<()> {
    let mut shape = Shape::of(data);
    let mut total = Estimate::default();
    if projection.projection.0.is_some() {
        total = crate::projection::footprint(shape);
        check(
            "the projection (its scatter matrices)",
            total,
            limit_gib,
            "project to fewer features first",
        )?;
        shape.dim = projection.dim.iter().copied().max().unwrap_or(shape.dim);
    }
    let Some((what, own)) = classifier.footprint(shape) else {
        return Ok(());
    };
    check(&what, total.and(own), limit_gib, FEWER_BAGS)
}

/// `mil cluster`: BAMIC's bag distances or M³IC's planes.
pub(super) fn check_cluster(what: &str, estimate: Estimate, limit_gib: f64) -> Result<()> {
    check(what, estimate, limit_gib, FEWER_BAGS)
}

/// `mil project`: the projection's matrices.
pub(super) fn check_projection(data: &Dataset, limit_gib: f64) -> Result<()> {
    check(
        "the projection (its scatter matrices)",
        crate::projection::footprint(Shape::of(data)),
        limit_gib,
        "use fewer features",
    )
}

/// `mil synth`: the generated values and their text.
pub(super) fn check_synth(instances: usize, dims: usize, limit_gib: f64) -> Result<()> {
    check(
        &format!("a set of {instances} instances of {dims} features"),
        crate::data::synth::footprint(instances, dims),
        limit_gib,
        "ask for fewer --bags or --dims",
    )
}

fn check(what: &str, estimate: Estimate, limit_gib: f64, remedy: &str) -> Result<()> {
    super::output::check_estimate(what, estimate, limit_gib, remedy)
}

/// Above this many estimated CPU seconds the estimate is printed before the work.
const NOTE_SECONDS: f64 = 10.0;

/// The CPU time of a run, estimated before the work and checked against
/// `limit_minutes`; returns the pipeline to run. A grid of classifiers is estimated
/// candidate by candidate ([`Pipeline::cpu_estimate`]: pilot fits and sampled Gram
/// entries); over the limit, the dearest candidates are left out until the rest fit,
/// and the run is refused when not even the cheapest fits or when `trim` is false (the
/// shards of one run must choose among the same candidates). A single classifier is
/// estimated when it is a box-kernel SVM ([`check_box_cpu`]). The estimate is printed
/// through `progress` when above [`NOTE_SECONDS`] or when a limit is given. `outer_train`: the first outer
/// fold's training bags (all bags for one fit); `outer_fits`: the run's outer fits.
pub(super) fn check_cpu(
    mut pipeline: Pipeline,
    data: &Dataset,
    outer_train: &[usize],
    outer_fits: usize,
    limit_minutes: Option<f64>,
    trim: bool,
    progress: &dyn Progress,
) -> Result<Pipeline> {
    let Some(estimate) = pipeline.cpu_estimate(data, outer_train, outer_fits)? else {
        // The inner folds the run makes: fewer on a small class ([`Pipeline::inner_cv`]).
        let ki = (data.require_labels(2).ok())
            .and_then(|labels| pipeline.inner_cv(labels, outer_train, pipeline.seed).ok())
            .map_or(pipeline.inner_folds, |folds| folds.len());
        let (n, ki) = (data.n_bags() as f64, ki as f64);
        let outer = (outer_train.len() as f64 / n).powi(2);
        let repeats = pipeline.inner_repeats as f64;
        let inner = match pipeline.n_candidates() > 1 {
            true => repeats * ki * outer * ((ki - 1.0) / ki).powi(2),
            false => 0.0,
        };
        let fits = outer_fits as f64 * (outer + inner);
        check_box_cpu(&pipeline, data, fits, limit_minutes, progress)?;
        return Ok(pipeline);
    };
    let seconds = estimate.cpu_seconds();
    let what = format!(
        "choosing among {} classifier settings on {} bags is estimated at {seconds:.0} CPU s ({:.1} min; measured in {:.1} s)",
        estimate.candidates.len(),
        data.n_bags(),
        seconds / 60.0,
        estimate.measuring_seconds
    );
    let Some(limit) = limit_minutes.filter(|&l| seconds > 60.0 * l) else {
        if seconds > NOTE_SECONDS || limit_minutes.is_some() {
            progress.note(&format!("mil: {what}"));
        }
        return Ok(pipeline);
    };
    let trimmed = estimate.within(60.0 * limit).filter(|_| trim);
    let Some((kept, dropped)) = trimmed else {
        let why = if trim {
            "not even the cheapest candidate fits"
        } else {
            "a shard does not trim the candidates (every shard must choose among the same ones)"
        };
        return Err(Error::parameter(
            "--max-cpu-minutes",
            limit,
            format!("{what}; {why}: raise the limit, use fewer bags, or name fewer classifiers"),
        ));
    };
    if kept.len() < pipeline.vote {
        return Err(Error::parameter(
            "--max-cpu-minutes",
            limit,
            format!(
                "{what}; within the limit {} candidates are left, fewer than --vote {}: raise the limit or lower --vote",
                kept.len(),
                pipeline.vote
            ),
        ));
    }
    let left: f64 = estimate.cpu_seconds() - dropped.iter().map(|c| c.cpu_seconds).sum::<f64>();
    let names: Vec<String> = dropped
        .iter()
        .filter(|c| c.cpu_seconds > 0.0)
        .map(|c| format!("{} ({:.1} s)", c.classifier, c.cpu_seconds))
        .collect();
    progress.note(&format!(
        "mil: {what}; over --max-cpu-minutes {limit}, left out: {}; {} {} left, estimated at {left:.1} CPU s",
        names.join(", "),
        kept.len(),
        if kept.len() == 1 { "candidate" } else { "candidates" }
    ));
    pipeline.classifier = crate::pipeline::ClassifierGrid::of(kept)?;
    Ok(pipeline)
}

/// The CPU time of the box-kernel Gram matrices a run computes, measured before the work
/// on a sample of their entries ([`crate::kernel::boxes::box_gram_cost`]): one matrix
/// over all bags per distinct kernel when cross-validation shares it, else one per fit
/// (`fits`: the run's fits counted in full-data Gram matrices). Printed through
/// `progress` when above [`NOTE_SECONDS`] or when a limit is given; refused above `limit_minutes`. Not estimated
/// after a projection (the kernel then sees other features).
fn check_box_cpu(
    pipeline: &Pipeline,
    data: &Dataset,
    fits: f64,
    limit_minutes: Option<f64>,
    progress: &dyn Progress,
) -> Result<()> {
    if pipeline.projection.is_some() {
        return Ok(());
    }
    let mut seen = Vec::new();
    let (mut seconds, mut measured, mut entries) = (0.0, 0, 0);
    for candidate in pipeline.classifier.candidates() {
        let ClassifierParams::Svm(svm) = candidate else {
            continue;
        };
        let key = (svm.kernel, svm.seed, svm.preprocessing);
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        if let Some(cost) = svm.gram_cost(data)? {
            let times = if svm.shares_gram() { 1.0 } else { fits };
            seconds += cost.cpu_seconds * times;
            measured += cost.measured;
            entries += cost.entries;
        }
    }
    if seen.is_empty() || entries == 0 {
        return Ok(());
    }
    let what = format!(
        "the box-kernel Gram matrices of {} bags are estimated at {seconds:.0} CPU s ({:.1} min; {measured} of {entries} entries timed)",
        data.n_bags(),
        seconds / 60.0
    );
    if let Some(limit) = limit_minutes {
        if seconds > 60.0 * limit {
            return Err(Error::parameter(
                "--max-cpu-minutes",
                limit,
                format!(
                    "{what}: raise the limit, use fewer bags, or a larger --epsilon or --delta"
                ),
            ));
        }
    }
    if seconds > NOTE_SECONDS || limit_minutes.is_some() {
        progress.note(&format!("mil: {what}"));
    }
    Ok(())
}
