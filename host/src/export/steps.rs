//! The input steps of a quantised model: a power-of-two step per feature from its
//! training range, balanced against the stage's weights.

use mil_core::container::{self, Encoding};
use mil_core::fixed;

use crate::data::Dataset;
use crate::error::{Error, Result};

use super::*;

/// Input quantisation exponents for `stage` in `encoding`: the finest steps the training
/// range allows ([`range_exponents`]), coarsened by [`balance_exponents`] unless the head
/// also measures each instance's length (M³IC on unit-length instances), which weighs
/// every feature alike whatever the stage's weights, or the stage is diagonal (stored in
/// `f32`: no weight rounding to balance against). A power-of-two step makes quantisation
/// a shift on devices without an FPU.
pub(super) fn input_exponents(
    train: &Dataset,
    stage: &Affine,
    head: &Head,
    encoding: Encoding,
) -> Vec<i32> {
    let mut exps = range_exponents(train);
    let measures_length = matches!(
        head,
        Head::M3ic {
            instance_norm: Some(_),
            ..
        }
    );
    if !measures_length && stage.diagonal().is_none() {
        balance_exponents(&mut exps, train, stage, encoding);
    }
    exps
}

/// Step 1 (exponent 0) for every feature, after checking that every training value is
/// an integer within `i16` (the error names the first that is not).
pub(super) fn integer_exponents(train: &Dataset) -> Result<Vec<i32>> {
    let dim = train.dim();
    for b in 0..train.n_bags() {
        let bag = train.bag(b);
        for (k, &v) in bag.as_slice().iter().enumerate() {
            if v.fract() != 0.0 || !(-32768.0..=32767.0).contains(&v) {
                return Err(Error::parameter(
                    "input",
                    "integer",
                    format!(
                        "{}: bag {} (\"{}\"), instance {}, feature {} is {v}, not an integer within i16; export with the input steps fitted",
                        train.name(),
                        b,
                        train.bag_id(b),
                        k / dim,
                        k % dim
                    ),
                ));
            }
        }
    }
    Ok(vec![0; dim])
}

/// Coarsens the input step of features that contribute little to the stage. With the
/// finest step s_j, feature j's largest contribution to an output is c_j = max_k |A_kj|·
/// max|x_j|, and a row's weight scale t_k is set by its largest folded weight |A_kj|·s_j
/// (the feature of largest c_j, c_max). Coarsening s_j by m_j costs input rounding
/// ≈ c_j·m_j/32766 and saves weight rounding ≈ c_max/(2·q_max·m_j) (the module's bound,
/// per feature); the sum is least at m_j = √(16383·c_max/(q_max·c_j)), capped at
/// c_max/c_j so that no folded weight outgrows the row's scale. m_j is rounded down to a
/// power of two (Q15: features below c_max/8; Q7: nearly every feature).
fn balance_exponents(exps: &mut [i32], train: &Dataset, stage: &Affine, encoding: Encoding) {
    let dim = train.dim();
    let max_abs = feature_max_abs(train);
    let contribution: Vec<f64> = (0..dim)
        .map(|j| {
            let g = (0..stage.rows)
                .map(|k| stage.a[k * dim + j].abs())
                .fold(0.0, f64::max);
            g * max_abs[j]
        })
        .collect();
    let c_max = contribution.iter().copied().fold(0.0, f64::max);
    let q_max = encoding.q_max() as f64;
    for (e, &c) in exps.iter_mut().zip(&contribution) {
        if c <= 0.0 || c_max <= 0.0 {
            continue;
        }
        let m = (16383.0 * c_max / (q_max * c)).sqrt().min(c_max / c);
        let extra = m.log2().floor().max(0.0) as i32;
        *e = (*e + extra).min(container::MAX_INPUT_EXP);
    }
}

/// max|x_j| of each feature over the training instances.
fn feature_max_abs(train: &Dataset) -> Vec<f64> {
    let dim = train.dim();
    let mut max_abs = vec![0.0f64; dim];
    for x in train.features().chunks_exact(dim) {
        max_abs
            .iter_mut()
            .zip(x)
            .for_each(|(m, v)| *m = m.max(v.abs()));
    }
    max_abs
}

/// The smallest e_j with 32767·2^e_j ≥ 2·max|x_j| over the training instances (twice the
/// range as headroom; e = 0 for an all-zero feature).
pub(super) fn range_exponents(train: &Dataset) -> Vec<i32> {
    let max_abs = feature_max_abs(train);
    let limit = container::MAX_INPUT_EXP;
    max_abs
        .iter()
        .map(|&m| {
            if m == 0.0 {
                0
            } else {
                ((2.0 * m / fixed::Q15_MAX as f64).log2().ceil() as i32).clamp(-limit, limit)
            }
        })
        .collect()
}
