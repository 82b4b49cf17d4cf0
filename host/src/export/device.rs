//! The core's inference run on the host: a bag's decision and scores as the device
//! computes them, the deviation from the host model, and the bounds the core states.

use mil_core::container::{Encoding, ModelKind};
use mil_core::{Instances, Model};

use crate::data::{Bag, Dataset};
use crate::error::{Error, Result};

use super::*;

/// Citer radii of a Citation-kNN model from the core's distances between the training
/// bags `train` (queries, raw) and the stored references (same bags, same order); −1
/// (no bag cites) when C = 0.
pub(super) fn core_radii(bytes: &[u8], train: &Dataset, citers: usize) -> Result<Vec<f64>> {
    let model = Model::parse(bytes)?;
    let knn = model.citation().ok_or(mil_core::Error::WrongModelKind)?;
    let n = knn.n_bags();
    if n != train.n_bags() {
        return Err(Error::data(
            train.name(),
            format!(
                "{} bags but the model stores {n} references",
                train.n_bags()
            ),
        ));
    }
    let d = model.projected_dim();
    let mut tt = vec![0.0f64; n * n];
    for q in 0..n {
        let bag = CoreBag::new(&model, train.bag(q))?;
        let len = train.bag(q).len();
        let mut y = vec![0.0f32; len * d];
        for (i, row) in y.chunks_exact_mut(d).enumerate() {
            model.project_instance(bag.instances(), i, row)?;
        }
        // tt is read row-by-reference: row u holds the distances of the queries to u.
        for u in 0..n {
            tt[u * n + q] = knn.distance(&y, d, u) as f64;
        }
    }
    let radii = crate::classifier::citation_knn::radii(&tt, n, citers);
    Ok(radii
        .into_iter()
        .map(|r| if r.is_finite() { r } else { -1.0 })
        .collect())
}

/// A bag in the representation the model takes: `f32` values, or `i16` quantised with
/// the model's input scales.
pub enum CoreBag {
    /// For f32 models.
    F32(Vec<f32>),
    /// For Q15/Q7 models.
    I16(Vec<i16>),
}

impl CoreBag {
    /// Converts a host bag for `model`.
    pub fn new(model: &Model<'_>, bag: Bag<'_>) -> Result<CoreBag> {
        let x: Vec<f32> = bag.as_slice().iter().map(|&v| v as f32).collect();
        if model.encoding() == Encoding::F32 {
            return Ok(CoreBag::F32(x));
        }
        let dim = model.input_dim();
        let mut q = vec![0i16; x.len()];
        for (row, out) in x.chunks_exact(dim).zip(q.chunks_exact_mut(dim)) {
            model.quantize_instance(row, out)?;
        }
        Ok(CoreBag::I16(q))
    }

    /// The core's view of it.
    pub fn instances(&self) -> Instances<'_> {
        match self {
            CoreBag::F32(x) => Instances::F32(x),
            CoreBag::I16(x) => Instances::I16(x),
        }
    }
}

/// The largest bound [`mil_core::cluster::M3ic::instance_score_bound`] states over the
/// instances and clusters of one quantised bag.
pub fn m3ic_score_bound(model: &Model<'_>, bag: &[i16]) -> Result<f64> {
    let m = model
        .cluster()
        .ok_or_else(|| Error::Unsupported("an M³IC bound for another model kind".into()))?;
    let worst = bag
        .chunks_exact(model.input_dim())
        .flat_map(|x| (0..m.n_clusters()).map(move |u| m.instance_score_bound(model.stage(), x, u)))
        .fold(0.0f32, f32::max);
    Ok(worst as f64)
}

/// Core inference on one host bag: the decision and the per-class (or per-cluster) scores.
pub fn core_classify(model: &Model<'_>, bag: Bag<'_>) -> Result<(mil_core::Decision, Vec<f32>)> {
    if model.kind() == ModelKind::Attention {
        // Class probabilities from the logits, as the host's scores.
        let (d, logits) = super::core_attention_decide(model, bag)?;
        let probs = if logits.len() == 1 {
            let p = 1.0 / (1.0 + (-logits[0]).exp());
            vec![1.0 - p, p]
        } else {
            let top = logits.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
            let e: Vec<f32> = logits.iter().map(|v| (v - top).exp()).collect();
            let sum: f32 = e.iter().sum();
            e.into_iter().map(|v| v / sum).collect()
        };
        let decision = mil_core::Decision {
            label: d.label,
            score: probs[d.label.min(probs.len() - 1)],
            witness: Some(d.witness),
        };
        return Ok((decision, probs));
    }
    if matches!(
        model.kind(),
        ModelKind::SetKernelSvm
            | ModelKind::MiKernelSvm
            | ModelKind::Miles
            | ModelKind::MiVlad
            | ModelKind::MiFv
    ) {
        // Scores as the host's SVM and MILES give them: (0, f) per bag.
        let d = core_svm_decide(model, bag)?;
        let decision = mil_core::Decision {
            label: d.label,
            score: d.value as f32,
            witness: d.witness,
        };
        return Ok((decision, vec![0.0, d.value as f32]));
    }
    let b = CoreBag::new(model, bag)?;
    let mut scratch = vec![0.0f32; model.scratch_len(bag.len())];
    let mut scores = vec![0.0f32; model.output_dim()];
    let decision = model.classify(b.instances(), &mut scratch, &mut scores)?;
    Ok((decision, scores))
}

/// The largest |core score − host score| over the bags of `data`, where `host_scores(b)`
/// gives the host model's per-class scores of bag `b` (for a projection-only model, the
/// projected coordinates of every instance of the bag, concatenated).
pub fn max_abs_error(
    bytes: &[u8],
    data: &Dataset,
    host_scores: impl Fn(usize) -> Vec<f64>,
) -> Result<f64> {
    let model = Model::parse(bytes)?;
    let mut worst = 0.0f64;
    for b in 0..data.n_bags() {
        let core: Vec<f32> = if model.kind() == ModelKind::Projection {
            let bag = CoreBag::new(&model, data.bag(b))?;
            let d_in = model.input_dim();
            let d = model.output_dim();
            let n = data.bag(b).len();
            let mut out = vec![0.0f32; n * d];
            for i in 0..n {
                let x = match &bag {
                    CoreBag::F32(x) => Instances::F32(&x[i * d_in..(i + 1) * d_in]),
                    CoreBag::I16(x) => Instances::I16(&x[i * d_in..(i + 1) * d_in]),
                };
                model.project(x, &mut out[i * d..(i + 1) * d])?;
            }
            out
        } else {
            core_classify(&model, data.bag(b))?.1
        };
        let host = host_scores(b);
        for (c, h) in core.iter().zip(&host) {
            worst = worst.max((*c as f64 - h).abs());
        }
    }
    Ok(worst)
}
