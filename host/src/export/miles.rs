//! MILES for the core ([`mil_core::miles`]): its sections, and the core's decision on a
//! bag as the host runs it.

use mil_core::container::{tag, Encoding, ModelKind};
use mil_core::Model;

use crate::classifier::miles::MilesModel;
use crate::data::Bag;
use crate::error::{Error, Result};

use super::Writer;

/// Writes a MILES model: γ and b (less a decision threshold `shift`), the z-score (the
/// means in `f64`, the inverse standard deviations in `f32`, or both in `f64` when one
/// has no normal `f32`), the selected prototypes (z-scored: f32, or in `encoding` with
/// one step per feature) and one weight each (f32, or Q15 with one step in both
/// quantised encodings). Queries stay raw `f64` features in every encoding.
pub(super) fn export_miles(
    miles: &MilesModel,
    shift: f64,
    encoding: Encoding,
    dim_in: usize,
    mut w: Writer,
) -> Result<Vec<u8>> {
    let e = &miles.embedding;
    if e.dim != dim_in {
        return Err(Error::parameter(
            "data",
            format!("{dim_in} features"),
            format!("the MILES model was trained on {} features", e.dim),
        ));
    }
    if !miles.rest.is_empty() {
        return Err(Error::Unsupported(format!(
            "exporting a {}-class one-vs-rest MILES model: the core's MILES head decides two classes only (train on two classes to export)",
            miles.rest.len() + 1
        )));
    }
    if miles.weights.is_empty() {
        return Err(Error::Unsupported(
            "exporting a MILES model that selected no prototype (its score is the bias alone)"
                .into(),
        ));
    }
    w.f64s(tag::KERNEL_PARAMS, &[e.gamma, miles.bias - shift]);
    if e.inv_sd.iter().all(|&s| s == 0.0 || (s as f32).is_normal()) {
        // The means in f64, the inverse deviations in f32: the core's bound carries
        // their rounding (`mil_core::miles`, (Z)), which needs 0 or a normal f32 each.
        w.f64s(tag::GRID_MIN, &e.mean);
        w.f32s(tag::ZSCORE_SCALE, 1, dim_in, e.inv_sd.iter().copied());
    } else {
        let mut zscore = e.mean.clone();
        zscore.extend_from_slice(&e.inv_sd);
        w.f64s(tag::GRID_MIN, &zscore);
        // Two rows: means, then inverse standard deviations.
        w.reshape_last(2, dim_in);
    }
    w.instances(encoding, (e.len(), dim_in), &e.prototypes, false);
    let weight_encoding = match encoding {
        Encoding::F32 => Encoding::F32,
        Encoding::Q15 | Encoding::Q7 => Encoding::Q15,
    };
    let tags = (tag::SCORE_WEIGHTS, tag::SCORE_SCALE, None);
    w.weights(weight_encoding, tags, 1, e.len(), &miles.weights, None);
    let bytes = w.finish(ModelKind::Miles, encoding, (dim_in, 2))?;
    Model::parse(&bytes)?;
    Ok(bytes)
}

/// The decision of a MILES model on one host bag, in buffers sized for it.
pub fn core_miles_decide(model: &Model<'_>, bag: Bag<'_>) -> Result<mil_core::svm::SvmDecision> {
    let miles = model.miles().ok_or(mil_core::Error::WrongModelKind)?;
    let mut scratch = vec![0.0f32; miles.scratch_len()];
    let mut nearest = vec![0u32; miles.n_prototypes()];
    Ok(miles.decide(bag.as_slice(), &mut scratch, &mut nearest)?)
}
