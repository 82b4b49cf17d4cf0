//! Export of trained host models into the container `mil-core` reads
//! ([`mil_core::container`] documents the layout), in f32, Q15 or Q7, and the check that
//! core inference on the exported bytes matches the host model.
//!
//! Every model is a *projection stage* (standardisation folded in: G'_kj = G_jk/σ_j,
//! b_k = −Σ_j G'_kj μ_j) followed by a *head*: a linear scorer with pooling, Citation-kNN
//! reference bags, or M³IC cluster weights. Quantised models also fold the input
//! quantisation step s_j (a power of two: at least 2·max|x_j|/32767 over the training
//! instances, twice the range as headroom, and coarser for features that contribute
//! little, see `balance_exponents`) into the weights, so the device multiplies integers
//! only in the D × d stage. A stage that scales each feature on its own (Citation-kNN on
//! raw features) is stored as a diagonal ([`mil_core::project`]): 2D `f32` values
//! instead of a D × D matrix. A quantised dense stage rounds its weights with error
//! feedback over the training instances unless asked for nearest rounding ([`rounding`]).

use mil_core::container::{self, tag, Elem, Encoding, ModelKind, Payload};
use mil_core::keyword::Keyword;
use mil_core::score::Pooling;
use mil_core::{fixed, Instances, Model};

use crate::classifier::citation_knn::Scaler;
use crate::classifier::svm::{MiSvmDeployment, SetKernel, SvmDeployment};
use crate::data::{Bag, Dataset};
use crate::error::{Error, Result};
use crate::model::{ClassifierModel, HostModel};
use crate::projection::LinearProjection;

mod measured;
pub mod rounding;

pub use measured::{Export, Exported};

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

/// Section payloads, gathered before the layout is fixed.
#[derive(Clone)]
struct Writer {
    sections: Vec<(u16, Elem, usize, usize, Vec<u8>)>,
}

impl Writer {
    fn f32s(&mut self, t: u16, rows: usize, cols: usize, v: impl IntoIterator<Item = f64>) {
        let bytes = v
            .into_iter()
            .flat_map(|x| (x as f32).to_le_bytes())
            .collect();
        self.sections.push((t, Elem::F32, rows, cols, bytes));
    }

    fn u32s(&mut self, t: u16, v: &[u32]) {
        let bytes = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        self.sections.push((t, Elem::U32, 1, v.len(), bytes));
    }

    fn f64s(&mut self, t: u16, v: &[f64]) {
        let bytes = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        self.sections.push((t, Elem::F64, 1, v.len(), bytes));
    }

    /// Grid points, `rows × cols`: `u16` when every value fits, else `u32`.
    fn points(&mut self, t: u16, rows: usize, cols: usize, v: &[u32]) {
        if v.iter().all(|&p| p <= u32::from(u16::MAX)) {
            let bytes = v.iter().flat_map(|&x| (x as u16).to_le_bytes()).collect();
            self.sections.push((t, Elem::U16, rows, cols, bytes));
        } else {
            let bytes = v.iter().flat_map(|x| x.to_le_bytes()).collect();
            self.sections.push((t, Elem::U32, rows, cols, bytes));
        }
    }

    /// Stored instances (`rows × cols`, row-major) as `REF_INSTANCES`: f32, or quantised
    /// in `encoding` with one step per coordinate (`REF_SCALE`), shared by that coordinate
    /// of every instance. With `one_step` every coordinate gets the same step, mapping the
    /// largest magnitude onto ±[`mil_core::fixed::DIST_MAX`]: the core then computes
    /// Citation-kNN distances in integers (see `mil_core::citation`).
    fn instances(
        &mut self,
        encoding: Encoding,
        (rows, cols): (usize, usize),
        values: &[f64],
        one_step: bool,
    ) {
        if encoding == Encoding::F32 {
            self.f32s(tag::REF_INSTANCES, rows, cols, values.iter().copied());
            return;
        }
        let mut q_max = encoding.q_max();
        let mut max_abs = vec![0.0f64; cols];
        for x in values.chunks_exact(cols) {
            for (m, v) in max_abs.iter_mut().zip(x) {
                *m = m.max(v.abs());
            }
        }
        if one_step {
            let all = max_abs.iter().copied().fold(0.0, f64::max);
            max_abs.iter_mut().for_each(|m| *m = all);
            q_max = fixed::DIST_MAX;
        }
        let steps: Vec<f32> = max_abs
            .iter()
            .map(|&m| fixed::scale_for(m as f32, q_max))
            .collect();
        let q: Vec<i32> = values
            .chunks_exact(cols)
            .flat_map(|x| {
                x.iter()
                    .zip(&steps)
                    .map(|(&v, &s)| fixed::quantize(v as f32, s, q_max))
            })
            .collect();
        self.ints(tag::REF_INSTANCES, encoding, rows, cols, &q);
        self.f32s(tag::REF_SCALE, 1, cols, steps.iter().map(|&s| s as f64));
    }

    /// An SVM's stored bags (`REF_BAGS`, from their start offsets) and one weight each:
    /// f32, or Q15 with one step in both quantised encodings (see `mil_core::svm`).
    fn support_bags(&mut self, encoding: Encoding, bag_starts: &[usize], weights: &[f64]) {
        let starts: Vec<u32> = bag_starts.iter().map(|&v| v as u32).collect();
        self.u32s(tag::REF_BAGS, &starts);
        let weight_encoding = match encoding {
            Encoding::F32 => Encoding::F32,
            Encoding::Q15 | Encoding::Q7 => Encoding::Q15,
        };
        let tags = (tag::SCORE_WEIGHTS, tag::SCORE_SCALE, None);
        self.weights(
            weight_encoding,
            tags,
            1,
            bag_starts.len() - 1,
            weights,
            None,
        );
    }

    /// Quantised integers, one element type per encoding.
    fn ints(&mut self, t: u16, encoding: Encoding, rows: usize, cols: usize, q: &[i32]) {
        let bytes = match encoding {
            Encoding::Q7 => q.iter().map(|&v| v as i8 as u8).collect(),
            _ => q.iter().flat_map(|&v| (v as i16).to_le_bytes()).collect(),
        };
        self.sections.push((t, encoding.elem(), rows, cols, bytes));
    }

    /// Weights with a per-row scale (quantised) or as floats; `shift` adds the
    /// accumulator shift that keeps integer dot products out of saturation. Quantised
    /// weights round to nearest, or with `feedback` ([`rounding`]); then the rows' radii
    /// δ_k are returned for `PROJ_ROUNDING`.
    fn weights(
        &mut self,
        encoding: Encoding,
        tags: (u16, u16, Option<u16>),
        rows: usize,
        cols: usize,
        w: &[f64],
        feedback: Option<&Feedback>,
    ) -> Option<Vec<f64>> {
        if encoding == Encoding::F32 {
            self.f32s(tags.0, rows, cols, w.iter().copied());
            return None;
        }
        let q_max = encoding.q_max();
        let mut q = Vec::with_capacity(w.len());
        let mut scales = Vec::with_capacity(rows);
        let mut shifts = Vec::with_capacity(rows);
        let mut radii = Vec::with_capacity(rows);
        for row in w.chunks_exact(cols) {
            let max_abs = row.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            let s = fixed::scale_for(max_abs as f32, q_max);
            let start = q.len();
            match feedback {
                Some(f) => {
                    let (row_q, radius) = f.round_row(row, s, q_max);
                    q.extend(row_q);
                    radii.push(radius);
                }
                None => q.extend(row.iter().map(|&v| fixed::quantize(v as f32, s, q_max))),
            }
            let abs_sum = q[start..].iter().map(|v| v.unsigned_abs() as u64).sum();
            scales.push(s as f64);
            shifts.push(fixed::safe_shift(abs_sum));
        }
        if encoding == Encoding::Q7 && tags.0 == tag::PROJ_WEIGHTS {
            let bytes = q7_row_pairs(&q, cols);
            self.sections.push((tags.0, Elem::I8, rows, cols, bytes));
        } else {
            self.ints(tags.0, encoding, rows, cols, &q);
        }
        self.f32s(tags.1, 1, rows, scales);
        if let Some(t) = tags.2 {
            self.u32s(t, &shifts);
        }
        feedback.map(|_| radii)
    }

    /// Lays the sections out in tag order with the core's own writer
    /// ([`container::write`]: header, table, aligned payloads, checksum).
    fn finish(
        mut self,
        kind: ModelKind,
        encoding: Encoding,
        dims: (usize, usize),
    ) -> Result<Vec<u8>> {
        self.sections.sort_by_key(|s| s.0);
        let payloads: Vec<Payload<'_>> = self
            .sections
            .iter()
            .map(|(tag, elem, rows, cols, bytes)| Payload {
                tag: *tag,
                elem: *elem,
                rows: *rows,
                cols: *cols,
                bytes,
            })
            .collect();
        let mut out = vec![0u8; container::written_len(&payloads)];
        container::write(&mut out, kind, encoding, dims.0, dims.1, &payloads)
            .map_err(|e| Error::parameter("model", e, "does not fit the container"))?;
        Ok(out)
    }
}

/// Q7 projection rows laid out by pairs (`mil_core::weights::Q7Layout::Pairs`): rows 2p
/// and 2p + 1 as one row of `fixed::pack_q7_pair`s (little-endian), an odd last row as
/// plain bytes.
fn q7_row_pairs(q: &[i32], cols: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(q.len());
    let mut pairs = q.chunks_exact(2 * cols.max(1));
    for pair in &mut pairs {
        let (a, b) = pair.split_at(cols);
        out.extend(
            a.iter()
                .zip(b)
                .flat_map(|(&a, &b)| fixed::pack_q7_pair(a, b).to_le_bytes()),
        );
    }
    out.extend(pairs.remainder().iter().map(|&v| v as i8 as u8));
    out
}

/// Input quantisation exponents for `stage` in `encoding`: the finest steps the training
/// range allows ([`range_exponents`]), coarsened by [`balance_exponents`] unless the head
/// also measures each instance's length (M³IC on unit-length instances), which weighs
/// every feature alike whatever the stage's weights, or the stage is diagonal (stored in
/// `f32`: no weight rounding to balance against). A power-of-two step makes quantisation
/// a shift on devices without an FPU.
fn input_exponents(train: &Dataset, stage: &Affine, head: &Head, encoding: Encoding) -> Vec<i32> {
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
fn integer_exponents(train: &Dataset) -> Result<Vec<i32>> {
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
fn range_exponents(train: &Dataset) -> Vec<i32> {
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
    let ExportOptions { rounding, input } = options.into();
    if input == InputSteps::Integer && encoding == Encoding::F32 {
        return Err(Error::parameter(
            "input",
            "integer",
            "input steps apply to quantised models; export in q15 or q7",
        ));
    }
    let dim_in = train.dim();
    let mut w = Writer {
        sections: Vec::new(),
    };
    if let Head::SetKernelSvm(svm) = &model.head {
        if model.stage.is_some() {
            return Err(Error::Unsupported(
                "exporting a set-kernel SVM after a projection (the core discretises raw features)"
                    .into(),
            ));
        }
        return export_svm(svm, encoding, dim_in, w);
    }
    if let Head::MiKernelSvm(svm) = &model.head {
        if model.stage.is_some() {
            return Err(Error::Unsupported(
                "exporting an MI-kernel SVM after a projection".into(),
            ));
        }
        return export_mi_svm(svm, encoding, dim_in, w);
    }
    // The projection stage: the fitted projection, or the linear head's own rows.
    let mut head = model.head.clone();
    let stage = match (&model.stage, &mut head) {
        (Some(p), _) => Some(p.clone()),
        (None, Head::Linear { weights, bias, .. }) => {
            let rows = bias.len();
            let stage = Affine {
                rows,
                cols: dim_in,
                a: std::mem::take(weights),
                b: std::mem::take(bias),
            };
            // The head becomes the identity on the scores.
            *weights = (0..rows * rows)
                .map(|i| f64::from(u8::from(i % (rows + 1) == 0)))
                .collect();
            *bias = vec![0.0; rows];
            Some(stage)
        }
        (None, _) => None,
    };
    if let Some(stage) = &stage {
        if stage.cols != dim_in {
            return Err(Error::data(
                train.name(),
                format!("{dim_in} features but the model takes {}", stage.cols),
            ));
        }
    }
    // The step s_j of each quantised input feature (1: f32 inputs arrive as they are).
    let mut input_steps = vec![1.0; dim_in];
    if encoding != Encoding::F32 {
        let stage = stage.as_ref().ok_or_else(|| {
            Error::parameter(
                "format",
                encoding.name(),
                "a quantised model needs a projection stage; export this model as f32",
            )
        })?;
        let exps = match input {
            InputSteps::Fitted => input_exponents(train, stage, &head, encoding),
            InputSteps::Integer => integer_exponents(train)?,
        };
        input_steps = exps.iter().map(|&e| 2f64.powi(e)).collect();
        w.ints(tag::INPUT_EXP, Encoding::Q7, 1, dim_in, &exps);
    }
    if let Some(stage) = &stage {
        // The stage acts on the values the device receives: fold each input step in.
        if let Some(diagonal) = stage.diagonal() {
            let scales = diagonal.iter().zip(&input_steps).map(|(g, s)| g * s);
            let offsets = stage.b.iter().copied();
            w.f32s(tag::PROJ_DIAGONAL, 2, dim_in, scales.chain(offsets));
        } else {
            let a: Vec<f64> = stage
                .a
                .chunks_exact(dim_in)
                .flat_map(|row| row.iter().zip(&input_steps).map(|(g, s)| g * s))
                .collect();
            let tags = (tag::PROJ_WEIGHTS, tag::PROJ_SCALE, Some(tag::PROJ_SHIFT));
            let feedback = match rounding {
                Rounding::Feedback if encoding != Encoding::F32 => {
                    Feedback::new(train, &input_steps)
                }
                _ => None,
            };
            if let Some(radii) =
                w.weights(encoding, tags, stage.rows, dim_in, &a, feedback.as_ref())
            {
                // Rounded up to f32 so that the core's bound still covers every weight.
                let radii = radii.iter().map(|&r| f64::from(f32_at_least(r).min(1.0)));
                w.f32s(tag::PROJ_ROUNDING, 1, stage.rows, radii);
            }
            w.f32s(tag::PROJ_BIAS, 1, stage.rows, stage.b.iter().copied());
        }
    }
    let d = stage.as_ref().map_or(dim_in, |s| s.rows);
    let (kind, out_dim) = match &head {
        Head::None => (ModelKind::Projection, d),
        Head::Linear {
            weights,
            bias,
            pooling,
            beta,
        } => {
            let rows = bias.len();
            let tags = (tag::SCORE_WEIGHTS, tag::SCORE_SCALE, None);
            w.weights(encoding, tags, rows, d, weights, None);
            w.f32s(tag::SCORE_BIAS, 1, rows, bias.iter().copied());
            w.f32s(tag::PARAMS, 1, 2, [*pooling as u8 as f64, *beta]);
            (ModelKind::LinearMil, rows.max(2))
        }
        Head::CitationKnn {
            references,
            citers: _,
            r,
        } => {
            if references.dim() != d {
                return Err(Error::data(
                    train.name(),
                    format!(
                        "reference bags of dimension {} after a stage of {d}",
                        references.dim()
                    ),
                ));
            }
            let refs = references.features();
            let n = references.n_instances();
            // 16 bits in Q7 too: see `mil_core::citation` for why.
            let stored = match encoding {
                Encoding::F32 => Encoding::F32,
                Encoding::Q15 | Encoding::Q7 => Encoding::Q15,
            };
            w.instances(stored, (n, d), refs, true);
            let starts: Vec<u32> = references.bag_starts().iter().map(|&v| v as u32).collect();
            w.u32s(tag::REF_BAGS, &starts);
            let labels = references.require_labels(2)?;
            let labels: Vec<u32> = labels.iter().map(|&l| l as u32).collect();
            w.u32s(tag::REF_LABELS, &labels);
            // Provisional radii; replaced below by radii in the core's own arithmetic.
            w.f32s(tag::CITER_RADII, 1, labels.len(), vec![0.0; labels.len()]);
            let classes = references.n_classes();
            w.f32s(tag::PARAMS, 1, 2, [*r as f64, classes as f64]);
            (ModelKind::CitationKnn, classes)
        }
        Head::M3ic {
            weights,
            bias,
            instance_norm,
        } => {
            let k = bias.len();
            let tags = (tag::SCORE_WEIGHTS, tag::SCORE_SCALE, None);
            w.weights(encoding, tags, k, d, weights, None);
            w.f32s(tag::SCORE_BIAS, 1, k, bias.iter().copied());
            if let Some((a, c)) = instance_norm {
                if a.len() != dim_in || c.len() != dim_in {
                    return Err(Error::data(
                        train.name(),
                        format!("{dim_in} features but an instance norm of {}", a.len()),
                    ));
                }
                // Quantised inputs arrive as x_j / s_j: fold the step into a_j.
                let a = a.iter().zip(&input_steps).map(|(a, s)| a * s);
                w.f32s(tag::INSTANCE_NORM, 2, dim_in, a.chain(c.iter().copied()));
            }
            (ModelKind::M3ic, k)
        }
        Head::SetKernelSvm(svm) => return export_svm(svm, encoding, dim_in, w),
        Head::MiKernelSvm(svm) => return export_mi_svm(svm, encoding, dim_in, w),
    };
    if let Head::CitationKnn { citers, .. } = &head {
        // The citer radius of reference bag u is its C-th smallest distance to another
        // reference bag, measured as the core will measure a query: so a training bag
        // queried on the device is within u's radius exactly when it is on the host.
        let provisional = w.clone().finish(kind, encoding, (dim_in, out_dim))?;
        let radii = core_radii(&provisional, train, *citers)?;
        if let Some(sec) = w.sections.iter_mut().find(|s| s.0 == tag::CITER_RADII) {
            sec.4 = radii
                .iter()
                .flat_map(|&r| (r as f32).to_le_bytes())
                .collect();
        }
    }
    let bytes = w.finish(kind, encoding, (dim_in, out_dim))?;
    // Never hand out bytes the core would reject.
    Model::parse(&bytes)?;
    Ok(bytes)
}

/// Writes a set-kernel SVM ([`mil_core::svm`]): the grid, the stored bags' points, one
/// weight per stored bag in `encoding` (one scale for all when quantised), the kernel's
/// settings. Inputs stay raw f32 features in every encoding.
fn export_svm(
    svm: &SvmDeployment,
    encoding: Encoding,
    dim_in: usize,
    mut w: Writer,
) -> Result<Vec<u8>> {
    if svm.grid_size.len() != dim_in {
        return Err(Error::parameter(
            "data",
            format!("{dim_in} features"),
            format!("the SVM was trained on {} features", svm.grid_size.len()),
        ));
    }
    let rows = svm.points.len() / dim_in;
    let seed = [svm.seed as u32, (svm.seed >> 32) as u32];
    w.u32s(
        tag::KERNEL_CONFIG,
        &[
            mil_core::svm::kernel_code(svm.kernel),
            mil_core::svm::method_code(svm.method),
            svm.precision as u32,
            seed[0],
            seed[1],
        ],
    );
    w.f64s(
        tag::KERNEL_PARAMS,
        &[svm.epsilon, svm.delta, svm.rho, svm.log_offset, svm.bias],
    );
    let grid_min: Vec<f64> = svm.grid_min.iter().map(|&v| v as f64).collect();
    w.f64s(tag::GRID_MIN, &grid_min);
    w.u32s(tag::GRID_SIZE, &svm.grid_size);
    w.points(tag::REF_POINTS, rows, dim_in, &svm.points);
    w.support_bags(encoding, &svm.bag_starts, &svm.weights);
    let bytes = w.finish(ModelKind::SetKernelSvm, encoding, (dim_in, 2))?;
    Model::parse(&bytes)?;
    Ok(bytes)
}

/// Writes an MI-kernel SVM ([`mil_core::mi_svm`]): γ and b, the min–max map in `f64`,
/// the support bags' scaled instances (f32, or in `encoding` with one step per feature)
/// and one weight each (f32, or Q15 with one step in both quantised encodings, as the
/// box-kernel SVM stores them). Queries stay raw `f64` features in every encoding.
fn export_mi_svm(
    svm: &MiSvmDeployment,
    encoding: Encoding,
    dim_in: usize,
    mut w: Writer,
) -> Result<Vec<u8>> {
    if svm.min.len() != dim_in {
        return Err(Error::parameter(
            "data",
            format!("{dim_in} features"),
            format!("the SVM was trained on {} features", svm.min.len()),
        ));
    }
    let rows = svm.instances.len() / dim_in;
    w.f64s(tag::KERNEL_PARAMS, &[svm.gamma, svm.bias]);
    let mut minmax = svm.min.clone();
    minmax.extend_from_slice(&svm.range);
    w.f64s(tag::GRID_MIN, &minmax);
    // Two rows: minima, then ranges.
    if let Some(sec) = w.sections.last_mut() {
        (sec.2, sec.3) = (2, dim_in);
    }
    w.instances(encoding, (rows, dim_in), &svm.instances, false);
    w.support_bags(encoding, &svm.bag_starts, &svm.weights);
    let bytes = w.finish(ModelKind::MiKernelSvm, encoding, (dim_in, 2))?;
    Model::parse(&bytes)?;
    Ok(bytes)
}

/// The decision of an MI-kernel SVM model on one host bag.
pub fn core_mi_svm_decide(model: &Model<'_>, bag: Bag<'_>) -> Result<mil_core::svm::SvmDecision> {
    let svm = model.mi_svm().ok_or(mil_core::Error::WrongModelKind)?;
    let mut scratch = vec![0.0f32; svm.dim()];
    Ok(svm.decide(bag.as_slice(), &mut scratch)?)
}

/// The decision of a set-kernel SVM model (box-counting or MI kernel) on one host bag, in
/// buffers sized for it.
pub fn core_svm_decide(model: &Model<'_>, bag: Bag<'_>) -> Result<mil_core::svm::SvmDecision> {
    if model.mi_svm().is_some() {
        return core_mi_svm_decide(model, bag);
    }
    let svm = model.svm().ok_or(mil_core::Error::WrongModelKind)?;
    let len = svm
        .scratch_len(bag.len())
        .ok_or_else(|| Error::data("bag", "too large to address"))?;
    let (mut grid, mut query, mut reference) = (
        vec![0u32; len.grid],
        vec![0u32; len.query],
        vec![0u32; len.reference],
    );
    let (mut floats, mut ints) = (vec![0.0f64; len.floats], vec![0u32; len.ints]);
    let mut scratch = mil_core::svm::SvmScratch {
        grid: &mut grid,
        query: &mut query,
        reference: &mut reference,
        floats: &mut floats,
        ints: &mut ints,
    };
    Ok(svm.decide(bag.as_slice(), &mut scratch)?)
}

/// Citer radii of a Citation-kNN model from the core's distances between the training
/// bags `train` (queries, raw) and the stored references (same bags, same order); −1
/// (no bag cites) when C = 0.
fn core_radii(bytes: &[u8], train: &Dataset, citers: usize) -> Result<Vec<f64>> {
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
    if matches!(
        model.kind(),
        ModelKind::SetKernelSvm | ModelKind::MiKernelSvm
    ) {
        // Scores as the host's SVM gives them: (0, f) per bag.
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

impl Compact {
    /// A linear model with its projection stage folded into the score rows: instance
    /// scores w_c·(A x + b) + c_c = (w_c A)·x + (w_c·b + c_c) are linear in x, so the rows
    /// w_c A become the stage and the projection disappears from the device (C × D
    /// weights instead of d × D + C × d). Errors for any other model.
    pub fn fold_projection(self) -> Result<Compact> {
        let (
            Some(stage),
            Head::Linear {
                weights,
                bias,
                pooling,
                beta,
            },
        ) = (self.stage, self.head)
        else {
            return Err(Error::parameter(
                "fold_projection",
                "given",
                "only a linear (MILR) model after a projection can be folded",
            ));
        };
        let scores = Affine {
            rows: bias.len(),
            cols: stage.rows,
            a: weights,
            b: bias,
        };
        let folded = scores.after(&stage);
        Ok(Compact {
            stage: None,
            head: Head::Linear {
                weights: folded.a,
                bias: folded.b,
                pooling,
                beta,
            },
        })
    }

    /// The container shape of an M³IC clustering: `k × dim` cluster weights (row-major)
    /// applied to instances z-scored with `mean`/`std` when given and, when `unit_length`,
    /// then scaled to unit length. The z-score and the weights fold into the stage (k
    /// outputs: the cluster scores w_p·z); the head is the identity, and divides the
    /// scores by ‖z‖ when `unit_length` ([`mil_core::cluster`]).
    pub fn from_m3ic(
        k: usize,
        dim: usize,
        weights: &[f64],
        zscore: Option<(&[f64], &[f64])>,
        unit_length: bool,
    ) -> Result<Compact> {
        if k < 2 || dim == 0 || weights.len() != k * dim {
            return Err(Error::parameter(
                "model",
                format!("{k} clusters × {dim} features"),
                "M³IC weights of inconsistent size",
            ));
        }
        let scores = Affine {
            rows: k,
            cols: dim,
            a: weights.to_vec(),
            b: vec![0.0; k],
        };
        let standardise = match zscore {
            Some((mean, std)) => Affine::identity(dim).then_scale(mean, std),
            None => Affine::identity(dim),
        };
        // The z-score is diagonal: z_j = a_j·x_j + c_j.
        let instance_norm = unit_length.then(|| {
            let a: Vec<f64> = (0..dim).map(|j| standardise.a[j * dim + j]).collect();
            (a, standardise.b.clone())
        });
        let identity = Affine::identity(k);
        Ok(Compact {
            stage: Some(scores.after(&standardise)),
            head: Head::M3ic {
                weights: identity.a,
                bias: identity.b,
                instance_norm,
            },
        })
    }

    /// The container shape of a saved host model. Returns it with the model's own
    /// training bags when the model stores them (Citation-kNN), `None` otherwise.
    ///
    /// A decision threshold t goes into existing fields, with no format change: an
    /// SVM's bias becomes b − t (f − t > 0 ⇔ f > t); a binary MILR gets a second score
    /// row with zero weights and bias logit(t), whose pooled probability is t for every
    /// bag (max, mean, geometric and softmax pooling of equal instance probabilities),
    /// so the core's "larger score wins" labels the bag positive exactly when P > t
    /// (scores [t, P] instead of [1 − P, P]: [`host_scores_as_compact`]). Noisy-OR pools
    /// n equal probabilities to 1 − (1 − t)ⁿ, which depends on the bag, and Citation-kNN's
    /// votes have no field for weights or a threshold: those are errors.
    pub fn from_host(model: &HostModel) -> Result<(Compact, Option<Dataset>)> {
        let projection = model.projection.as_ref().map(Affine::from_projection);
        match &model.classifier {
            ClassifierModel::Milr(m) => {
                let mut weights: Vec<f64> =
                    m.weights.iter().flat_map(|w| w[1..].to_vec()).collect();
                let mut bias: Vec<f64> = m.weights.iter().map(|w| w[0]).collect();
                let pooling = m.params.pooling;
                if let Some(t) = model.threshold {
                    if pooling == Pooling::NoisyOr {
                        return Err(Error::Unsupported(
                            "exporting a noisy-or MILR with a decision threshold (its pooled probability of a constant row depends on the bag size); use mean, geometric, softmax or max pooling".into(),
                        ));
                    }
                    if !(t > 0.0 && t < 1.0) || bias.len() != 1 {
                        return Err(Error::parameter(
                            "threshold",
                            t,
                            "a binary MILR's threshold on its probability must be in (0, 1) to export",
                        ));
                    }
                    let d = weights.len();
                    weights.splice(0..0, std::iter::repeat_n(0.0, d));
                    bias.insert(0, (t / (1.0 - t)).ln());
                }
                let head = Head::Linear {
                    weights,
                    bias,
                    pooling,
                    beta: m.params.beta,
                };
                Ok((
                    Compact {
                        stage: projection,
                        head,
                    },
                    None,
                ))
            }
            ClassifierModel::CitationKnn(m) => {
                if model.threshold.is_some() || !m.class_weights.is_empty() {
                    return Err(Error::Unsupported(
                        "exporting Citation-kNN with class weights or a decision threshold (the core's votes count 1 each and the larger share wins)".into(),
                    ));
                }
                if m.params.hausdorff != crate::distance::Hausdorff::Min {
                    return Err(Error::parameter(
                        "hausdorff",
                        m.params.hausdorff.name(),
                        "the core runs Citation-kNN with the minimal Hausdorff distance only",
                    ));
                }
                if m.params.rank != 1 {
                    return Err(Error::parameter(
                        "rank",
                        m.params.rank,
                        "the core runs Citation-kNN with the minimal Hausdorff distance (rank 1) only",
                    ));
                }
                // The classifier stores the bags it was fitted on (projected, if the model
                // projects) and scales them; the references are those bags scaled.
                let n = m.labels.len();
                let fitted = Dataset::new(
                    "the model's training bags",
                    m.dim,
                    m.features.clone(),
                    m.bag_starts.clone(),
                    (0..n).map(|b| b.to_string()).collect(),
                    Some(m.labels.clone()),
                    model.class_names.clone(),
                )?;
                let scaling = match &m.scaler {
                    Scaler::Zscore(z) => Some(Affine::identity(m.dim).then_scale(&z.mean, &z.std)),
                    Scaler::Weka { lo, hi } => {
                        let spread: Vec<f64> = lo.iter().zip(hi).map(|(l, h)| h - l).collect();
                        Some(Affine::identity(m.dim).then_scale(lo, &spread))
                    }
                    Scaler::None => None,
                };
                let references = match &scaling {
                    Some(s) => s.transform(&fitted)?,
                    None => fitted.clone(),
                };
                let stage = match (projection, scaling) {
                    (Some(p), Some(s)) => Some(s.after(&p)),
                    (p, s) => p.or(s),
                };
                let head = Head::CitationKnn {
                    references,
                    citers: m.params.citers,
                    r: m.params.references,
                };
                // Without a projection the stored bags are the raw training bags.
                let raw = model.projection.is_none().then_some(fitted);
                Ok((Compact { stage, head }, raw))
            }
            ClassifierModel::Svm(svm) => {
                // A chosen threshold t moves the decision f > t into the bias: f − t > 0.
                let shift = model.threshold.unwrap_or(0.0);
                let head = if matches!(svm.kernel, SetKernel::MiRbf { .. }) {
                    let mut deployment = svm.mi_deployment()?;
                    deployment.bias -= shift;
                    Head::MiKernelSvm(Box::new(deployment))
                } else {
                    let mut deployment = svm.deployment()?;
                    deployment.bias -= shift;
                    Head::SetKernelSvm(Box::new(deployment))
                };
                Ok((
                    Compact {
                        stage: projection,
                        head,
                    },
                    None,
                ))
            }
            ClassifierModel::MiSvm(m) => Err(Error::Unsupported(format!(
                "exporting {} (the core has no instance-level SVM head); score it on the host with `mil predict`",
                m.params.heuristic.kind().name()
            ))),
        }
    }
}

/// The host model's scores of one bag (`row`, from [`HostModel::scores`]) in the form
/// its compact model computes them ([`Compact::from_host`]): a thresholded binary MILR
/// scores [t, P], a thresholded SVM [0, f − t]; otherwise the row itself.
pub fn host_scores_as_compact(model: &HostModel, row: &[f64]) -> Vec<f64> {
    match (model.threshold, &model.classifier, row) {
        (Some(t), ClassifierModel::Milr(_), [_, p]) => vec![t, *p],
        (Some(t), ClassifierModel::Svm(_), [z, f]) => vec![*z, f - t],
        _ => row.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
