//! The attention network for the core ([`mil_core::attention`]): its sections, and the
//! core's decision on a bag as the host runs it.
//!
//! Quantised, each layer's input step is the power of two 2^e with 2·max ≤ 32767·2^e, the
//! max taken over the training bags ([`AttentionModel::activation_maxima`]: the z-scored
//! features, the hidden units, h, the pooled z), so that twice the training range fits;
//! each row's step is t_r = max_j |w_rj| / Q_MAX (rounded up to an `f32`), its integers
//! round(w_rj/t_r) and its shift the smallest that keeps the shifted sum an `i32`.

use mil_core::attention::{AttentionDecision, Pooling as CorePooling};
use mil_core::container::{tag, Elem, Encoding, ModelKind};
use mil_core::{fixed, Model};

use crate::classifier::attention::{AttentionModel, Pooling};
use crate::data::{Bag, Dataset};
use crate::error::{Error, Result};

use super::Writer;

/// The core's code of a pooling.
fn pooling_code(p: Pooling) -> u32 {
    (match p {
        Pooling::Attention => CorePooling::Attention,
        Pooling::Gated => CorePooling::Gated,
        Pooling::Mean => CorePooling::Mean,
        Pooling::Max => CorePooling::Max,
    }) as u32
}

/// The exponent e of the finest step 2^e on which ±2·`max` fits an `i16`.
fn step_exponent(max: f64) -> i32 {
    if max > 0.0 && max.is_finite() {
        ((2.0 * max / 32767.0).log2().ceil() as i32).clamp(-60, 60)
    } else {
        0
    }
}

/// Writes an attention network fitted on `train` in `encoding`.
pub(super) fn export_attention(
    model: &AttentionModel,
    encoding: Encoding,
    train: &Dataset,
    mut w: Writer,
) -> Result<Vec<u8>> {
    let dim_in = train.dim();
    if model.dim != dim_in {
        return Err(Error::parameter(
            "data",
            format!("{dim_in} features"),
            format!(
                "the attention network was trained on {} features",
                model.dim
            ),
        ));
    }
    let pooling = model.params.pooling;
    let [x_max, a_max, h_max, z_max] = model.activation_maxima(train);
    let n = model.layers.len();
    // The input step of each layer: encoder 1, encoder 2, then h for V and U, Q15 for w,
    // z for the head; mean and max pooling feed h to the head on z's step.
    let (e_h, e_z) = match pooling {
        Pooling::Attention | Pooling::Gated => (step_exponent(h_max), step_exponent(z_max)),
        Pooling::Mean | Pooling::Max => {
            let e = step_exponent(h_max.max(z_max));
            (e, e)
        }
    };
    let exps: Vec<i32> = (0..n)
        .map(|i| match i {
            0 => step_exponent(x_max),
            1 => step_exponent(a_max),
            _ if i == n - 1 => e_z,
            _ if i == n - 2 => -15,
            _ => e_h,
        })
        .collect();
    w.u32s(tag::KERNEL_CONFIG, &[pooling_code(pooling)]);
    w.f32s(tag::GRID_MIN, 1, dim_in, model.mean.iter().copied());
    w.f32s(tag::ZSCORE_SCALE, 1, dim_in, model.inv_sd.iter().copied());
    let shapes: Vec<u32> = model
        .layers
        .iter()
        .zip(&exps)
        .flat_map(|(l, &e)| {
            let e = if encoding == Encoding::F32 { 0 } else { e };
            [l.rows as u32, l.cols as u32, (64 + e) as u32]
        })
        .collect();
    w.u32s(tag::NET_LAYERS, &shapes);
    w.reshape_last(n, 3);
    let bias: Vec<f64> = model
        .layers
        .iter()
        .flat_map(|l| l.bias.iter().map(|&b| f64::from(b)))
        .collect();
    w.f32s(tag::NET_BIAS, 1, bias.len(), bias.iter().copied());
    let values: usize = model.layers.iter().map(|l| l.rows * l.cols).sum();
    match encoding {
        Encoding::F32 => {
            let bytes = model
                .layers
                .iter()
                .flat_map(|l| l.weight.iter().flat_map(|v| v.to_le_bytes()))
                .collect();
            w.raw(tag::NET_WEIGHTS, Elem::F32, 1, values, bytes);
        }
        Encoding::Q15 | Encoding::Q7 => {
            let q_max = encoding.q_max();
            let (mut bytes, mut scales, mut shifts) = (Vec::new(), Vec::new(), Vec::new());
            for l in &model.layers {
                let mut rows: Vec<Vec<i32>> = Vec::with_capacity(l.rows);
                for r in 0..l.rows {
                    let row = &l.weight[r * l.cols..(r + 1) * l.cols];
                    let top = row.iter().fold(0.0f32, |m, v| m.max(v.abs()));
                    // The step rounded up: every |w/t| ≤ Q_MAX.
                    let t = if top > 0.0 {
                        super::f32_at_least(f64::from(top) / f64::from(q_max))
                    } else {
                        1.0
                    };
                    let q: Vec<i32> = row
                        .iter()
                        .map(|&v| {
                            (f64::from(v) / f64::from(t))
                                .round()
                                .clamp(-f64::from(q_max), f64::from(q_max))
                                as i32
                        })
                        .collect();
                    let abs: u64 = q.iter().map(|v| u64::from(v.unsigned_abs())).sum();
                    scales.push(f64::from(t));
                    shifts.push(fixed::safe_shift(abs));
                    rows.push(q);
                }
                match encoding {
                    Encoding::Q7 => {
                        // Rows 2p and 2p + 1 by pairs, an odd last row as it is.
                        for pair in rows.chunks(2) {
                            match pair {
                                [a, b] => {
                                    bytes.extend(a.iter().zip(b).flat_map(|(&a, &b)| {
                                        fixed::pack_q7_pair(a, b).to_le_bytes()
                                    }))
                                }
                                [a] => bytes.extend(a.iter().map(|&v| v as i8 as u8)),
                                _ => {}
                            }
                        }
                    }
                    _ => bytes.extend(
                        rows.iter()
                            .flatten()
                            .flat_map(|&v| (v as i16).to_le_bytes()),
                    ),
                }
            }
            w.raw(tag::NET_WEIGHTS, encoding.elem(), 1, values, bytes);
            w.f32s(tag::NET_SCALE, 1, scales.len(), scales.iter().copied());
            w.u32s(tag::NET_SHIFT, &shifts);
        }
    }
    let bytes = w.finish(ModelKind::Attention, encoding, (dim_in, model.n_classes))?;
    Model::parse(&bytes)?;
    Ok(bytes)
}

/// The core's decision on one host bag and its logits, in buffers sized for it.
pub fn core_attention_decide(
    model: &Model<'_>,
    bag: Bag<'_>,
) -> Result<(AttentionDecision, Vec<f32>)> {
    let net = model.attention().ok_or(mil_core::Error::WrongModelKind)?;
    let mut scratch = vec![0.0f32; net.scratch_len()];
    let mut ints = vec![0i16; net.ints_len()];
    let mut logits = vec![0.0f32; net.n_logits()];
    let d = net.decide(bag.as_slice(), &mut scratch, &mut ints, &mut logits)?;
    Ok((d, logits))
}
