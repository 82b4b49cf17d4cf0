//! Linear projections fitted on training bags: y = Gᵀ(x − μ)/σ.
//!
//! Every algorithm (one module per paper) implements [`Projector`] and returns the same
//! [`LinearProjection`], which the classifiers, `mil project`, and the exporter to the
//! core consume. Hyper-parameter lists are tuned by the caller (inner CV), not here.

use serde::{Deserialize, Serialize};

use crate::data::Dataset;
use crate::error::{Error, Result};

pub mod mi_alm;
pub mod midr;

/// The projection algorithms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProjectionKind {
    /// Principal component analysis.
    Pca,
    /// Fisher LDA with bag labels as instance labels.
    Lda,
    /// Local Fisher discriminant analysis (Sugiyama 2007).
    Lfda,
    /// Citation-kNN-relabelled LFDA (Kim & Choi 2010).
    Clfda,
    /// Binary multiple-instance discriminant analysis (Chai et al. 2014).
    Bmida,
    /// Multi-class multiple-instance discriminant analysis (Chai et al. 2014).
    Mmida,
    /// Sparse + orthogonal projection by approximate augmented Lagrangian (Zhu et al. 2018).
    MiAlm,
    /// Multi-instance dimensionality reduction (Sun et al. 2010).
    Midr,
}

/// What to fit: the algorithm and its hyper-parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProjectionSpec {
    /// The algorithm.
    pub kind: ProjectionKind,
    /// Output dimension d.
    pub dim: usize,
    /// Trade-off α where the algorithm has one (B-MIDA, M-MIDA, MI-ALM); ignored otherwise.
    pub alpha: f64,
    /// Seed of any randomised step.
    pub seed: u64,
}

/// Anything that fits a linear projection on the training bags of a data set.
pub trait Projector {
    /// Fits on the bags `train` of `data` (never looking at other bags' labels).
    fn fit(&self, data: &Dataset, train: &[usize]) -> Result<LinearProjection>;
}

/// A fitted projection y = Gᵀ(x − μ)/σ, immutable after fitting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinearProjection {
    /// Which algorithm produced it.
    pub kind: ProjectionKind,
    /// μ, length D.
    pub mean: Vec<f64>,
    /// σ, length D; a feature with σ = 0 contributes nothing.
    pub scale: Vec<f64>,
    /// G, row-major D × d.
    pub matrix: Vec<f64>,
    /// Output dimension d.
    pub output_dim: usize,
    /// Algorithm-specific measures (e.g. MI-ALM's `sparsity`, `orthogonality`), reported
    /// by `mil project --json`.
    pub diagnostics: Vec<(String, f64)>,
}

impl LinearProjection {
    /// Input dimension D.
    pub fn input_dim(&self) -> usize {
        self.mean.len()
    }

    /// Projects one instance into `out` (length d).
    pub fn apply_row(&self, x: &[f64], out: &mut [f64]) {
        out.iter_mut().for_each(|o| *o = 0.0);
        let d = self.output_dim;
        for (j, &v) in x.iter().enumerate() {
            if self.scale[j] == 0.0 {
                continue;
            }
            let z = (v - self.mean[j]) / self.scale[j];
            let row = &self.matrix[j * d..(j + 1) * d];
            out.iter_mut().zip(row).for_each(|(o, g)| *o += g * z);
        }
    }

    /// Projects every instance of a data set (same bags, ids and labels).
    pub fn transform(&self, data: &Dataset) -> Result<Dataset> {
        if data.dim() != self.input_dim() {
            return Err(Error::data(
                data.name(),
                format!(
                    "{} features but the projection was fitted on {}",
                    data.dim(),
                    self.input_dim()
                ),
            ));
        }
        let d = self.output_dim;
        let mut features = vec![0.0; data.n_instances() * d];
        for (x, out) in data
            .features()
            .chunks_exact(data.dim())
            .zip(features.chunks_exact_mut(d))
        {
            self.apply_row(x, out);
        }
        data.with_features(d, features)
    }

    /// A diagnostic by name.
    pub fn diagnostic(&self, name: &str) -> Option<f64> {
        self.diagnostics
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| *v)
    }
}

/// Fits the projection a spec names, on the bags `train` of `data`.
pub fn fit(spec: &ProjectionSpec, data: &Dataset, train: &[usize]) -> Result<LinearProjection> {
    if spec.dim == 0 || spec.dim > data.dim() {
        return Err(Error::parameter(
            "--dim",
            spec.dim,
            format!(
                "must be between 1 and the {} features of {}",
                data.dim(),
                data.name()
            ),
        ));
    }
    match spec.kind {
        ProjectionKind::MiAlm => mi_alm::MiAlm::new(spec.dim, spec.alpha, spec.seed).fit(data, train),
        ProjectionKind::Midr => midr::Midr::new(spec.dim, spec.alpha, spec.seed).fit(data, train),
        _ => Err(Error::NotAvailable(format!("projection {:?}", spec.kind))),
    }
}
