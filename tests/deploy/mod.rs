//! Models shared by the deployment tests (`parity`, `firmware`): a musk1 model to export,
//! with the host's own f64 predictions.

use mil::data::standardize::ZScore;
use mil::export::{Compact, Head};
use mil::projection::{LinearProjection, ProjectionKind};
use mil::Dataset;
use mil_core::score::Pooling;

/// The host model's predictions on every bag of the data it was built on.
pub struct HostPredictions {
    /// Label per bag.
    pub labels: Vec<usize>,
    /// Per-class scores per bag.
    pub scores: Vec<Vec<f64>>,
}

/// A musk1 model: z-score plus a d = 10 projection onto fixed pseudo-random directions,
/// and a max-pooled linear instance score along the difference of the class means of the
/// projected instances (a stand-in until trained B-MIDA + MILR models are exported).
pub fn musk1_model(data: &Dataset) -> (Compact, HostPredictions) {
    let all: Vec<usize> = (0..data.n_bags()).collect();
    let z = ZScore::fit(data, &all);
    let (dim, d) = (data.dim(), 10);
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let matrix = (0..dim * d)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        })
        .collect();
    let projection = LinearProjection {
        kind: ProjectionKind::Pca,
        mean: z.mean.clone(),
        scale: z.std.clone(),
        matrix,
        output_dim: d,
        diagnostics: vec![],
    };
    let projected = projection.transform(data).unwrap();
    let labels = data.labels().unwrap();
    let mut means = [vec![0.0; d], vec![0.0; d]];
    let mut counts = [0.0; 2];
    for b in 0..data.n_bags() {
        for y in projected.bag(b).instances() {
            means[labels[b]]
                .iter_mut()
                .zip(y)
                .for_each(|(m, v)| *m += v);
            counts[labels[b]] += 1.0;
        }
    }
    let w: Vec<f64> = (0..d)
        .map(|k| means[1][k] / counts[1] - means[0][k] / counts[0])
        .collect();
    let mid: f64 = (0..d)
        .map(|k| w[k] * 0.5 * (means[1][k] / counts[1] + means[0][k] / counts[0]))
        .sum();
    let bias = -mid;
    // Host prediction, in f64: P = σ(max_i wᵀy_i + b).
    let mut host = HostPredictions {
        labels: vec![],
        scores: vec![],
    };
    for b in 0..data.n_bags() {
        let top = projected
            .bag(b)
            .instances()
            .map(|y| y.iter().zip(&w).map(|(a, c)| a * c).sum::<f64>() + bias)
            .fold(f64::NEG_INFINITY, f64::max);
        let p = 1.0 / (1.0 + (-top).exp());
        host.labels.push(usize::from(p > 0.5));
        host.scores.push(vec![1.0 - p, p]);
    }
    let compact = Compact {
        projection: Some(projection),
        head: Head::Linear {
            weights: w,
            bias: vec![bias],
            pooling: Pooling::Max,
            beta: 0.0,
        },
    };
    (compact, host)
}

/// Every bag of `data` in the firmware's `bags.bin` layout.
pub fn bags_bin(data: &Dataset) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend((data.n_bags() as u32).to_le_bytes());
    out.extend((data.dim() as u32).to_le_bytes());
    for b in 0..data.n_bags() {
        let bag = data.bag(b);
        out.extend((bag.len() as u32).to_le_bytes());
        for &v in bag.as_slice() {
            out.extend((v as f32).to_le_bytes());
        }
    }
    out
}
