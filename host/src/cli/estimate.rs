//! The memory and work of a command, estimated from its input's size by the algorithms'
//! own `estimate` functions and checked against `--max-memory-gib` before any work.

use super::ProjectionArgs;
use crate::classifier::ClassifierParams;
use crate::data::Dataset;
use crate::error::Result;
use crate::params::{Estimate, Shape};

/// What to change besides the limit when a data set is too large for an algorithm.
const FEWER_BAGS: &str = "use fewer bags";

/// `mil cv` and `mil train`: the projection (if any) on the raw features, then the
/// classifier (the largest of its grid's candidates) on the projected ones.
pub(super) fn check_pipeline(
    classifier: &[ClassifierParams],
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
    let mut largest: Option<(String, Estimate)> = None;
    for candidate in classifier {
        if let Some((what, own)) = candidate.footprint(shape) {
            if largest.as_ref().is_none_or(|(_, e)| own.bytes > e.bytes) {
                largest = Some((what, own));
            }
        }
    }
    let Some((what, own)) = largest else {
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
