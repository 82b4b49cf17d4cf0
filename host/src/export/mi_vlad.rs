//! miVLAD for the core ([`mil_core::mi_vlad`]): its sections, and the core's decision on a
//! bag as the host runs it.

use mil_core::container::{tag, Encoding, ModelKind};
use mil_core::Model;

use crate::classifier::mi_vlad::{Codebook, MiVladModel};
use crate::data::Bag;
use crate::error::{Error, Result};

use super::Writer;

/// Writes a binary miVLAD model: b (less a logit threshold `shift`) with its magnitude,
/// the z-score (`f64` means, `f32` inverse deviations), the k centres (z-scored: f32, or
/// in `encoding` with one step per feature) and the logistic regression's kD weights in
/// raw units (f32, or Q15 with one step in both quantised encodings).
pub(super) fn export_mi_vlad(
    model: &MiVladModel,
    shift: f64,
    encoding: Encoding,
    dim_in: usize,
    mut w: Writer,
) -> Result<Vec<u8>> {
    let e = &model.encoder;
    let Codebook::Vlad { centres } = &e.codebook else {
        return Err(Error::Unsupported(
            "exporting miFV (the core runs miVLAD's codebook only)".into(),
        ));
    };
    if e.dim() != dim_in {
        return Err(Error::parameter(
            "data",
            format!("{dim_in} features"),
            format!("the miVLAD model was trained on {} features", e.dim()),
        ));
    }
    if model.logistic.n_classes != 2 || model.logistic.weights.len() != 1 {
        return Err(Error::Unsupported(
            "exporting a miVLAD model of more than two classes".into(),
        ));
    }
    let inv_sd: Vec<f64> =
        e.sd.iter()
            .map(|&s| if s > 0.0 { 1.0 / s } else { 0.0 })
            .collect();
    if !inv_sd.iter().all(|&s| s == 0.0 || (s as f32).is_normal()) {
        return Err(Error::Unsupported(
            "exporting a miVLAD model whose inverse deviations have no normal f32".into(),
        ));
    }
    let beta = &model.logistic.weights[0];
    let bias = beta[0] - shift;
    w.f64s(tag::KERNEL_PARAMS, &[bias, bias.abs()]);
    w.f64s(tag::GRID_MIN, &e.mean);
    w.f32s(tag::ZSCORE_SCALE, 1, dim_in, inv_sd.iter().copied());
    let k = centres.len() / dim_in;
    w.instances(encoding, (k, dim_in), centres, false);
    let weight_encoding = match encoding {
        Encoding::F32 => Encoding::F32,
        Encoding::Q15 | Encoding::Q7 => Encoding::Q15,
    };
    let tags = (tag::SCORE_WEIGHTS, tag::SCORE_SCALE, None);
    w.weights(weight_encoding, tags, 1, k * dim_in, &beta[1..], None);
    let bytes = w.finish(ModelKind::MiVlad, encoding, (dim_in, 2))?;
    Model::parse(&bytes)?;
    Ok(bytes)
}

/// The decision of a miVLAD model on one host bag, in buffers sized for it.
pub fn core_mi_vlad_decide(model: &Model<'_>, bag: Bag<'_>) -> Result<mil_core::svm::SvmDecision> {
    let m = model.mi_vlad().ok_or(mil_core::Error::WrongModelKind)?;
    let mut scratch = vec![0.0f32; m.scratch_len()];
    let mut sums = vec![0.0f64; m.sums_len()];
    Ok(m.decide(bag.as_slice(), &mut scratch, &mut sums)?)
}
