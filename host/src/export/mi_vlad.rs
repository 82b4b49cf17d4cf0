//! miVLAD and miFV for the core ([`mil_core::mi_vlad`]): their sections, and the core's
//! decision on a bag as the host runs it.

use mil_core::container::{tag, Encoding, ModelKind};
use mil_core::Model;

use crate::classifier::mi_vlad::{Codebook, MiVladModel};
use crate::data::Bag;
use crate::error::{Error, Result};

use super::Writer;

/// Writes a binary miVLAD or miFV model: b (less a logit threshold `shift`) with its
/// magnitude, the z-score (`f64` means, `f32` inverse deviations), the k centres or the
/// mixture's K means (z-scored: f32, or in `encoding` with one step per feature), for
/// miFV the mixture's constants (`f64`) and inverse deviations (`f32`), and the logistic
/// regression's weights in raw units (f32, or Q15 with one step in both quantised
/// encodings).
pub(super) fn export_mi_vlad(
    model: &MiVladModel,
    shift: f64,
    encoding: Encoding,
    dim_in: usize,
    mut w: Writer,
) -> Result<Vec<u8>> {
    let e = &model.encoder;
    let name = match e.codebook {
        Codebook::Vlad { .. } => "miVLAD",
        Codebook::Fisher(_) => "miFV",
    };
    if e.dim() != dim_in {
        return Err(Error::parameter(
            "data",
            format!("{dim_in} features"),
            format!("the {name} model was trained on {} features", e.dim()),
        ));
    }
    if model.logistic.n_classes != 2 || model.logistic.weights.len() != 1 {
        return Err(Error::Unsupported(format!(
            "exporting a {name} model of more than two classes"
        )));
    }
    let inv_sd: Vec<f64> =
        e.sd.iter()
            .map(|&s| if s > 0.0 { 1.0 / s } else { 0.0 })
            .collect();
    if !inv_sd.iter().all(|&s| s == 0.0 || (s as f32).is_normal()) {
        return Err(Error::Unsupported(format!(
            "exporting a {name} model whose inverse deviations have no normal f32"
        )));
    }
    let beta = &model.logistic.weights[0];
    // The weights are in raw units (w/s of the standardised vector's coordinate): a
    // coordinate that varies only at the scale of the tiniest posteriors (a component
    // that reaches a feature's instances with γ near 10⁻³⁰⁰) gets a weight beyond `f32`.
    if let Some((i, w)) = beta[1..]
        .iter()
        .enumerate()
        .find(|(_, w)| !(**w as f32).is_finite())
    {
        return Err(Error::Unsupported(format!(
            "exporting a {name} model whose weight {w:.3e} on coordinate {i} of the bag vector has no f32 (the coordinate varies only at the scale of 1/|w| over the training bags); a larger --ridge or a smaller --codebook avoids it"
        )));
    }
    let bias = beta[0] - shift;
    w.f64s(tag::KERNEL_PARAMS, &[bias, bias.abs()]);
    w.f64s(tag::GRID_MIN, &e.mean);
    w.f32s(tag::ZSCORE_SCALE, 1, dim_in, inv_sd.iter().copied());
    let (kind, centres) = match &e.codebook {
        Codebook::Vlad { centres } => (ModelKind::MiVlad, centres),
        Codebook::Fisher(gmm) => {
            let k = gmm.len();
            let mut components = Vec::with_capacity(3 * k);
            for (c, &weight) in gmm.weights.iter().enumerate() {
                let logs = gmm.variances[c * dim_in..(c + 1) * dim_in]
                    .iter()
                    .map(|&v| (2.0 * std::f64::consts::PI * v).ln());
                let (sum, magnitude) = logs.fold((0.0, 0.0), |(s, m), l| (s + l, m + l.abs()));
                components.extend([
                    weight.ln() - 0.5 * sum,
                    1.0 / weight.sqrt(),
                    weight.ln().abs() + 0.5 * magnitude,
                ]);
            }
            w.f64s(tag::MIXTURE, &components);
            w.reshape_last(k, 3);
            let inv: Vec<f64> = gmm.variances.iter().map(|v| 1.0 / v.sqrt()).collect();
            w.f32s(tag::MIXTURE_SCALE, k, dim_in, inv);
            (ModelKind::MiFv, &gmm.means)
        }
    };
    let k = centres.len() / dim_in;
    w.instances(encoding, (k, dim_in), centres, false);
    let weight_encoding = match encoding {
        Encoding::F32 => Encoding::F32,
        Encoding::Q15 | Encoding::Q7 => Encoding::Q15,
    };
    let tags = (tag::SCORE_WEIGHTS, tag::SCORE_SCALE, None);
    let width = beta.len() - 1;
    w.weights(weight_encoding, tags, 1, width, &beta[1..], None);
    let bytes = w.finish(kind, encoding, (dim_in, 2))?;
    Model::parse(&bytes)?;
    Ok(bytes)
}

/// The decision of a miVLAD or miFV model on one host bag, in buffers sized for it.
pub fn core_mi_vlad_decide(model: &Model<'_>, bag: Bag<'_>) -> Result<mil_core::svm::SvmDecision> {
    let m = model.mi_vlad().ok_or(mil_core::Error::WrongModelKind)?;
    let mut scratch = vec![0.0f32; m.scratch_len()];
    let mut sums = vec![0.0f64; m.sums_len()];
    Ok(m.decide(bag.as_slice(), &mut scratch, &mut sums)?)
}
