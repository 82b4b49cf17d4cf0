//! The memory and work of a command, estimated from its input's size by the algorithms'
//! own `estimate` functions and checked against `--max-memory-gib` before any work.

use super::ProjectionArgs;
use crate::classifier::ClassifierParams;
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::params::{Estimate, Shape};
use crate::pipeline::ClassifierGrid;
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

/// The CPU time of the box-kernel Gram matrices a run computes, measured before the work
/// on a sample of their entries ([`crate::kernel::boxes::box_gram_cost`]): one matrix
/// over all bags per distinct kernel when cross-validation shares it, else one per fit
/// (`fits`: the run's fits counted in full-data Gram matrices). Printed through
/// `progress` when above [`NOTE_SECONDS`]; refused above `limit_minutes`. Not estimated
/// after a projection (the kernel then sees other features). Returns the estimate.
pub(super) fn check_box_cpu(
    classifier: &ClassifierGrid,
    projected: bool,
    data: &Dataset,
    fits: f64,
    limit_minutes: Option<f64>,
    progress: &dyn Progress,
) -> Result<Option<f64>> {
    if projected {
        return Ok(None);
    }
    let mut seen = Vec::new();
    let (mut seconds, mut measured, mut entries) = (0.0, 0, 0);
    for candidate in classifier.candidates() {
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
        return Ok(None);
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
    if seconds > NOTE_SECONDS {
        progress.note(&format!("mil: {what}"));
    }
    Ok(Some(seconds))
}
