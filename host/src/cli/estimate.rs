//! The memory and work of a command, estimated from its input's size by the algorithms'
//! own `estimate` functions and checked against `--max-memory-gib` before any work.

use super::ProjectionArgs;
use crate::data::Dataset;
use crate::error::Result;
use crate::params::{Estimate, Shape};
use crate::pipeline::ClassifierGrid;

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
