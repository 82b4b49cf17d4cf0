//! Export of trained host models into the container `mil-core` reads
//! ([`mil_core::container`] documents the layout), in f32, Q15 or Q7, and the check that
//! core inference on the exported bytes matches the host model.
//!
//! The SVMs over stored bags and MILES have no projection stage: they store what they
//! compare bags with (instances, prototypes) and take raw features.
//!
//! Every other model is a *projection stage* (standardisation folded in: G'_kj = G_jk/σ_j,
//! b_k = −Σ_j G'_kj μ_j) followed by a *head*: a linear scorer with pooling, Citation-kNN
//! reference bags, or M³IC cluster weights. Quantised models also fold the input
//! quantisation step s_j (a power of two: at least 2·max|x_j|/32767 over the training
//! instances, twice the range as headroom, and coarser for features that contribute
//! little, see `balance_exponents`) into the weights, so the device multiplies integers
//! only in the D × d stage. A stage that scales each feature on its own (Citation-kNN on
//! raw features) is stored as a diagonal ([`mil_core::project`]): 2D `f32` values
//! instead of a D × D matrix. A quantised dense stage rounds its weights with error
//! feedback over the training instances unless asked for nearest rounding ([`rounding`]).

use mil_core::container::Encoding;
use mil_core::score::Pooling;
use mil_core::Model;

use crate::classifier::attention::AttentionModel;
use crate::classifier::mi_vlad::MiVladModel;
use crate::classifier::miles::MilesModel;
use crate::classifier::svm::{MiSvmDeployment, SvmDeployment};
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::projection::LinearProjection;

mod attention;
mod compact;
mod device;
mod measured;
mod mi_vlad;
mod miles;
pub mod rounding;
mod staged;
mod steps;
mod svm;
mod writer;

pub use attention::core_attention_decide;
pub use compact::host_scores_as_compact;
pub use device::{core_classify, m3ic_score_bound, max_abs_error, CoreBag};
pub use measured::{Export, Exported};
pub use mi_vlad::core_mi_vlad_decide;
pub use miles::core_miles_decide;
pub use svm::{core_mi_svm_decide, core_svm_decide};
use svm::{export_mi_svm, export_svm};
use writer::Writer;

use rounding::Feedback;
pub use rounding::Rounding;

/// The steps of a quantised model's inputs (`mil export --input`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum InputSteps {
    /// The finest power-of-two step each feature's training range allows, coarsened
    /// where the feature contributes little (`input_exponents`).
    #[default]
    Fitted,
    /// Step 1 for every feature: for integer features (ADC counts, musk's integer
    /// descriptors) that the device feeds as `i16`. Exact (no input rounding) and
    /// quantising is a copy on the device (`mil_core::Model::quantize_fixed` with
    /// `frac_bits = 0`); refused when a training value is not an integer within `i16`.
    Integer,
}

mil_core::keywords!(InputSteps {
    InputSteps::Fitted => "fitted": "the finest power-of-two step each feature's training range allows",
    InputSteps::Integer => "integer": "step 1 for every feature: integer features the device feeds as i16 (exact; quantising is a copy)",
});

/// How [`export_with`] quantises: the weights' rounding and the inputs' steps (a
/// [`Rounding`] alone converts, with the fitted steps).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExportOptions {
    /// How quantised projection weights round.
    pub rounding: Rounding,
    /// The input steps of a quantised model.
    pub input: InputSteps,
}

impl From<Rounding> for ExportOptions {
    fn from(rounding: Rounding) -> Self {
        ExportOptions {
            rounding,
            input: InputSteps::Fitted,
        }
    }
}

/// What follows the projection stage.
#[derive(Debug, Clone)]
pub enum Head {
    /// Nothing: the model outputs the projected instance.
    None,
    /// Linear instance scores pooled over the bag: `rows × d` weights (one row for a
    /// binary model, one per class otherwise), `rows` biases.
    Linear {
        /// Row-major `rows × d`.
        weights: Vec<f64>,
        /// One bias per row.
        bias: Vec<f64>,
        /// Pooling of instance probabilities.
        pooling: Pooling,
        /// Softmax sharpness β (softmax pooling only).
        beta: f64,
    },
    /// Citation-kNN over reference bags, already in the stage's output coordinates. The
    /// citer radii are computed at export with the core's own distances (see [`export`]).
    CitationKnn {
        /// The reference bags after the stage, with their labels.
        references: Dataset,
        /// Number of citers C (0: none).
        citers: usize,
        /// Number of nearest references R.
        r: usize,
    },
    /// M³IC: one weight row and bias per cluster.
    M3ic {
        /// Row-major `k × d`.
        weights: Vec<f64>,
        /// One bias per cluster.
        bias: Vec<f64>,
        /// For instances scaled to unit length: the z-score as z_j = a_j·x_j + c_j on raw
        /// features, `(a, c)` ([`mil_core::container::tag::INSTANCE_NORM`]).
        instance_norm: Option<(Vec<f64>, Vec<f64>)>,
    },
    /// A box-kernel SVM over stored bags, on raw features (no projection stage).
    SetKernelSvm(Box<SvmDeployment>),
    /// An MI-kernel SVM over stored bags, on raw features with its min–max map (no
    /// projection stage; f32 only).
    MiKernelSvm(Box<MiSvmDeployment>),
    /// MILES over its selected prototypes, on raw features with its z-score (no
    /// projection stage); the bias shifted by a decision threshold (f − t > 0 ⇔ f > t).
    Miles {
        /// The fitted model.
        model: Box<MilesModel>,
        /// The decision threshold t subtracted from the bias (0 without one).
        shift: f64,
    },
    /// miVLAD over its k-means codebook or miFV over its Gaussian mixture, on raw features
    /// with its z-score (no projection stage); the bias shifted by a threshold's logit (σ(f) > t ⇔ f − logit t > 0).
    MiVlad {
        /// The fitted model.
        model: Box<MiVladModel>,
        /// logit t of a decision threshold t on the probability (0 without one).
        shift: f64,
    },
    /// An attention network, on raw features with its z-score (no projection stage).
    Attention(Box<AttentionModel>),
}

/// A host model in the shape the container stores.
#[derive(Debug, Clone)]
pub struct Compact {
    /// The projection stage; `None` leaves instances as they are (f32 Citation-kNN, M³IC)
    /// or, for a linear head, uses the head's rows as the projection stage.
    pub stage: Option<Affine>,
    /// The head.
    pub head: Head,
}

/// An affine map y = A x + b, `rows × cols`, row k = output k: a projection with its
/// standardisation (and any later per-coordinate scaling) folded in.
#[derive(Debug, Clone, PartialEq)]
pub struct Affine {
    /// Outputs.
    pub rows: usize,
    /// Inputs.
    pub cols: usize,
    /// Row-major `rows × cols`.
    pub a: Vec<f64>,
    /// One offset per output.
    pub b: Vec<f64>,
}

impl Affine {
    /// The identity on `dim` coordinates.
    pub fn identity(dim: usize) -> Affine {
        let mut a = vec![0.0; dim * dim];
        (0..dim).for_each(|k| a[k * dim + k] = 1.0);
        Affine {
            rows: dim,
            cols: dim,
            a,
            b: vec![0.0; dim],
        }
    }

    /// This map followed by z_k = (y_k − offset_k)/spread_k per output; a zero or
    /// non-finite spread makes the output 0 (the coordinate contributes nothing).
    pub fn then_scale(mut self, offset: &[f64], spread: &[f64]) -> Affine {
        for k in 0..self.rows {
            let s = spread[k];
            let row = &mut self.a[k * self.cols..(k + 1) * self.cols];
            if s != 0.0 && s.is_finite() {
                row.iter_mut().for_each(|v| *v /= s);
                self.b[k] = (self.b[k] - offset[k]) / s;
            } else {
                row.iter_mut().for_each(|v| *v = 0.0);
                self.b[k] = 0.0;
            }
        }
        self
    }

    /// The composition `self ∘ first`: x ↦ A(A₁x + b₁) + b.
    pub fn after(&self, first: &Affine) -> Affine {
        let mut a = vec![0.0; self.rows * first.cols];
        let mut b = self.b.clone();
        for k in 0..self.rows {
            for m in 0..self.cols {
                let w = self.a[k * self.cols + m];
                b[k] += w * first.b[m];
                let src = &first.a[m * first.cols..(m + 1) * first.cols];
                let dst = &mut a[k * first.cols..(k + 1) * first.cols];
                dst.iter_mut().zip(src).for_each(|(d, s)| *d += w * s);
            }
        }
        Affine {
            rows: self.rows,
            cols: first.cols,
            a,
            b,
        }
    }

    /// The diagonal a_jj of a square map that scales each coordinate on its own (every
    /// off-diagonal entry zero), which the container stores as a diagonal stage.
    pub fn diagonal(&self) -> Option<Vec<f64>> {
        let n = self.cols;
        let off_zero = self
            .a
            .iter()
            .enumerate()
            .all(|(i, &v)| i / n == i % n || v == 0.0);
        (self.rows == n && off_zero).then(|| (0..n).map(|j| self.a[j * n + j]).collect())
    }

    /// Applies the map to one instance.
    pub fn apply(&self, x: &[f64], out: &mut [f64]) {
        for (k, o) in out.iter_mut().enumerate().take(self.rows) {
            let row = &self.a[k * self.cols..(k + 1) * self.cols];
            *o = self.b[k] + row.iter().zip(x).map(|(a, v)| a * v).sum::<f64>();
        }
    }

    /// Applies the map to every instance of a data set (same bags, ids, labels).
    pub fn transform(&self, data: &Dataset) -> Result<Dataset> {
        let mut out = vec![0.0; data.n_instances() * self.rows];
        for (x, o) in data
            .features()
            .chunks_exact(data.dim())
            .zip(out.chunks_exact_mut(self.rows))
        {
            self.apply(x, o);
        }
        data.with_features(self.rows, out)
    }

    /// The projection with its standardisation folded in.
    pub fn from_projection(p: &LinearProjection) -> Affine {
        let (dim_in, d) = (p.input_dim(), p.output_dim);
        let mut a = vec![0.0; d * dim_in];
        let mut b = vec![0.0; d];
        for j in 0..dim_in {
            if p.scale[j] == 0.0 {
                continue; // constant feature: contributes nothing
            }
            for k in 0..d {
                let g = p.matrix[j * d + k] / p.scale[j];
                a[k * dim_in + j] = g;
                b[k] -= g * p.mean[j];
            }
        }
        Affine {
            rows: d,
            cols: dim_in,
            a,
            b,
        }
    }
}

/// Writes `model` in `encoding`. `train` is the data the model was fitted on: it sets the
/// input quantisation of Q15/Q7 models and, with the default [`Rounding::Feedback`], how
/// their projection weights round.
pub fn export(model: &Compact, encoding: Encoding, train: &Dataset) -> Result<Vec<u8>> {
    export_with(model, encoding, train, Rounding::default())
}

/// The smallest `f32` not below `v` (v ≥ 0, finite).
fn f32_at_least(v: f64) -> f32 {
    let f = v as f32;
    if f64::from(f) < v {
        f32::from_bits(f.to_bits() + 1)
    } else {
        f
    }
}

/// How the quantised dense projection stage of a parsed model was rounded (`None` for
/// f32 models and models without a dense stage).
pub fn stored_rounding(model: &Model<'_>) -> Option<Rounding> {
    let p = model.projection()?;
    p.rounding_radius(0)?;
    Some(if p.has_rounding_radii() {
        Rounding::Feedback
    } else {
        Rounding::Nearest
    })
}

/// The input steps of a parsed quantised model: [`InputSteps::Integer`] when every
/// feature's step is 1 (`None` for models without quantised inputs).
pub fn stored_input_steps(model: &Model<'_>) -> Option<InputSteps> {
    let steps: Option<Vec<i32>> = (0..model.input_dim())
        .map(|j| model.input_exponent(j))
        .collect();
    let steps = steps.filter(|s| !s.is_empty())?;
    Some(if steps.iter().all(|&e| e == 0) {
        InputSteps::Integer
    } else {
        InputSteps::Fitted
    })
}

/// [`export`] with the rounding of quantised projection weights and the input steps
/// chosen ([`ExportOptions`]; a [`Rounding`] alone keeps the fitted steps).
pub fn export_with(
    model: &Compact,
    encoding: Encoding,
    train: &Dataset,
    options: impl Into<ExportOptions>,
) -> Result<Vec<u8>> {
    let options = options.into();
    if options.input == InputSteps::Integer && encoding == Encoding::F32 {
        return Err(Error::parameter(
            "input",
            "integer",
            "input steps apply to quantised models; export in q15 or q7",
        ));
    }
    let dim_in = train.dim();
    // The SVMs store their training bags on raw features: no projection stage.
    let unstaged = |what: &str| match model.stage {
        Some(_) => Err(Error::Unsupported(format!(
            "exporting {what} after a projection"
        ))),
        None => Ok(()),
    };
    match &model.head {
        Head::SetKernelSvm(svm) => {
            unstaged("a set-kernel SVM (the core discretises raw features)")?;
            export_svm(svm, encoding, dim_in, Writer::new())
        }
        Head::MiKernelSvm(svm) => {
            unstaged("an MI-kernel SVM")?;
            export_mi_svm(svm, encoding, dim_in, Writer::new())
        }
        Head::Miles { model, shift } => {
            unstaged("a MILES model")?;
            miles::export_miles(model, *shift, encoding, dim_in, Writer::new())
        }
        Head::MiVlad { model, shift } => {
            unstaged("a miVLAD or miFV model")?;
            mi_vlad::export_mi_vlad(model, *shift, encoding, dim_in, Writer::new())
        }
        Head::Attention(model) => {
            unstaged("an attention network")?;
            if options.input == InputSteps::Integer {
                return Err(Error::parameter(
                    "input",
                    "integer",
                    "an attention network takes raw features and rounds its z-score",
                ));
            }
            attention::export_attention(model, encoding, train, Writer::new())
        }
        _ => staged::export_staged(model, encoding, train, options),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use steps::{input_exponents, range_exponents};

    /// Two features with equal ranges; feature 0's weight is 2¹⁰ times feature 1's.
    fn skewed() -> (Dataset, Affine) {
        let x = vec![1.0, -1.0, -0.5, 0.5, 0.25, 1.0];
        let data = Dataset::new(
            "t",
            2,
            x,
            vec![0, 1, 3],
            vec!["a".into(), "b".into()],
            None,
            vec![],
        )
        .unwrap();
        let stage = Affine {
            rows: 1,
            cols: 2,
            a: vec![1.0, 1.0 / 1024.0],
            b: vec![0.0],
        };
        (data, stage)
    }

    #[test]
    fn small_contributions_get_coarser_input_steps() {
        let (data, stage) = skewed();
        let range = range_exponents(&data);
        assert_eq!(range[0], range[1]);
        // Q15: m₁ = min(√(16383·1024/32767), 1024) = 22.6 → 2⁴ coarser; feature 0 stays.
        let q15 = input_exponents(&data, &stage, &Head::None, Encoding::Q15);
        assert_eq!(q15, vec![range[0], range[1] + 4]);
        // Q7: m₀ is capped at c_max/c₀ = 1; m₁ = min(√(16383·1024/127), 1024) = 363 → 2⁸.
        let q7 = input_exponents(&data, &stage, &Head::None, Encoding::Q7);
        assert_eq!(q7, vec![range[0], range[1] + 8]);
        // A head that measures instance lengths keeps the finest steps.
        let m3ic = Head::M3ic {
            weights: vec![1.0],
            bias: vec![0.0],
            instance_norm: Some((vec![1.0, 1.0], vec![0.0, 0.0])),
        };
        assert_eq!(input_exponents(&data, &stage, &m3ic, Encoding::Q7), range);
    }

    #[test]
    fn coarser_steps_lower_the_stated_bound() {
        // The device's bound on the stage output, with and without the balancing, for
        // every training instance: never larger, and smaller somewhere.
        let (data, stage) = skewed();
        let compact = Compact {
            stage: Some(stage),
            head: Head::None,
        };
        for encoding in [Encoding::Q15, Encoding::Q7] {
            let bytes = export(&compact, encoding, &data).unwrap();
            let balanced = Model::parse(&bytes).unwrap();
            let p = balanced.projection().unwrap();
            let mut q = vec![0i16; 2];
            let mut plain = 0.0f32;
            let mut ours = 0.0f32;
            for x in data.features().chunks_exact(2) {
                let x: Vec<f32> = x.iter().map(|&v| v as f32).collect();
                assert_eq!(balanced.quantize_instance(&x, &mut q).unwrap(), 0);
                ours = ours.max(p.error_bound(0, &q));
                // The same weights at the finest steps: the bound the module states.
                let range = range_exponents(&data);
                let steps: Vec<f64> = range.iter().map(|&e| 2f64.powi(e)).collect();
                let w: Vec<f64> = compact
                    .stage
                    .as_ref()
                    .unwrap()
                    .a
                    .iter()
                    .zip(&steps)
                    .map(|(a, s)| a * s)
                    .collect();
                let t = w.iter().fold(0.0f64, |m, v| m.max(v.abs())) / encoding.q_max() as f64;
                let qx: Vec<f64> = x
                    .iter()
                    .zip(&steps)
                    .map(|(&v, s)| (v as f64 / s).round().abs())
                    .collect();
                let qw: f64 = w.iter().map(|v| (v / t).round().abs()).sum();
                plain = plain.max((0.5 * t * (qw + 1.0 + qx.iter().sum::<f64>())) as f32);
            }
            assert!(ours < plain, "{encoding:?}: {ours} vs {plain}");
        }
    }
}
