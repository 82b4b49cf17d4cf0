//! The one export call: [`HostModel::export`] and [`M3icModel::export`] write the compact
//! model and measure it — the largest deviation of the core's scores from the host's on
//! the training bags, the bound the fixed-point path states for it, and how many labels
//! agree — so the CLI and Python only present what it returns.

use mil_core::{Encoding, Model};
use rayon::prelude::*;

use super::{core_classify, export_with, CoreBag, ExportOptions, Head, InputSteps, Rounding};
use crate::cluster::M3icModel;
use crate::data::{Bags, Dataset};
use crate::error::Result;
use crate::model::HostModel;
use crate::progress::{Progress, Silent};

/// How to export: the scalar encoding, whether to fold a projection into a linear head,
/// the weights' rounding and the inputs' steps.
///
/// ```
/// use mil_toolkit::prelude::*;
///
/// let data = mil_toolkit::data::load("musk1")?;
/// let (train, test) = data.stratified_folds(5, 1)?.swap_remove(0);
/// let model = Pipeline::new(Milr::default().pooling(Pooling::Mean).ridge(1.0))
///     .projection(Bmida::default().dim(10))
///     .fit(&train)?;
/// let exported = model.export(&train, Export::q15().fold_projection(true))?;
/// assert_eq!(exported.labels_agree, exported.bags);
/// assert!(exported.max_abs_error <= exported.error_bound.unwrap());
/// let device = mil_core::Model::parse(&exported.bytes)?;
/// assert_eq!(device.input_dim(), 166);
/// # let _ = test;
/// # Ok::<(), mil_toolkit::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Export {
    /// The scalar encoding of the stored numbers.
    pub encoding: Encoding,
    /// Fold a projection and a linear head into one linear head (MILR after a projection).
    pub fold_projection: bool,
    /// How quantised projection weights round.
    pub rounding: Rounding,
    /// The input steps of a quantised model.
    pub input: InputSteps,
}

impl Export {
    /// An export in `encoding` with the default rounding (error feedback) and fitted
    /// input steps, the projection kept as a stage.
    pub fn new(encoding: Encoding) -> Self {
        Export {
            encoding,
            fold_projection: false,
            rounding: Rounding::default(),
            input: InputSteps::default(),
        }
    }

    /// 32-bit floats.
    pub fn f32() -> Self {
        Export::new(Encoding::F32)
    }

    /// 16-bit fixed point.
    pub fn q15() -> Self {
        Export::new(Encoding::Q15)
    }

    /// 8-bit fixed point.
    pub fn q7() -> Self {
        Export::new(Encoding::Q7)
    }

    /// The same export folding a projection into the linear head (or not).
    #[must_use]
    pub fn fold_projection(mut self, fold: bool) -> Self {
        self.fold_projection = fold;
        self
    }

    /// The same export rounding quantised weights by `rounding`.
    #[must_use]
    pub fn rounding(mut self, rounding: Rounding) -> Self {
        self.rounding = rounding;
        self
    }

    /// The same export with input steps `input`.
    #[must_use]
    pub fn input(mut self, input: InputSteps) -> Self {
        self.input = input;
        self
    }

    fn options(&self) -> ExportOptions {
        ExportOptions {
            rounding: self.rounding,
            input: self.input,
        }
    }
}

impl Default for Export {
    fn default() -> Self {
        Export::f32()
    }
}

/// An exported model and how far the core's inference on it is from the host's.
#[derive(Debug, Clone, PartialEq)]
pub struct Exported {
    /// The bytes `mil_core::Model::parse` reads.
    pub bytes: Vec<u8>,
    /// Largest |core − host| score (decision value for an SVM, witness score for M³IC)
    /// over the measured bags.
    pub max_abs_error: f64,
    /// The largest bound the fixed-point path states for that deviation on these bags,
    /// where the model kind states one.
    pub error_bound: Option<f64>,
    /// Bags whose core label (or cluster) equals the host's.
    pub labels_agree: usize,
    /// Bags measured (the training bags).
    pub bags: usize,
    /// Bags stored in the model (set-kernel SVMs).
    pub stored_bags: Option<usize>,
    /// Everything a user should know: weights rounded to nearest though error feedback
    /// was asked for, labels that moved.
    pub warnings: Vec<String>,
}

impl Exported {
    /// The parsed compact model.
    pub fn model(&self) -> Result<Model<'_>> {
        Ok(Model::parse(&self.bytes)?)
    }
}

impl HostModel {
    /// Exports the model for the core and measures it on the training bags `train`
    /// (which also fit the quantisation of a fixed-point export).
    pub fn export<'a>(&self, train: impl Into<Bags<'a>>, options: Export) -> Result<Exported> {
        self.export_with_progress(train, options, &Silent)
    }

    /// [`HostModel::export`], reporting the progress of the slow part (an SVM's kernel
    /// against every stored bag, once on the host and once in the core, per bag).
    pub fn export_with_progress<'a>(
        &self,
        train: impl Into<Bags<'a>>,
        options: Export,
        progress: &dyn Progress,
    ) -> Result<Exported> {
        let train = train.into();
        let train: std::borrow::Cow<'_, Dataset> = if train.is_all() {
            std::borrow::Cow::Borrowed(train.dataset())
        } else {
            std::borrow::Cow::Owned(train.to_dataset())
        };
        let train: &Dataset = &train;
        let (mut compact, _) = super::Compact::from_host(self)?;
        if options.fold_projection {
            compact = compact.fold_projection()?;
        }
        let bytes = export_with(&compact, options.encoding, train, options.options())?;
        let core = Model::parse(&bytes)?;
        if core.svm().is_some() || core.mi_svm().is_some() || core.miles().is_some() {
            let host = self.scores_with_progress(train, progress)?;
            // The compact model's bias holds b − t (EM-DD's: −θ of its probability).
            let f = |b: usize| super::host_scores_as_compact(self, host.row(b))[1];
            return svm_measure(bytes, options, train, &host, &f, progress);
        }
        if let (
            Some(_),
            crate::classifier::ClassifierModel::MiVlad(m)
            | crate::classifier::ClassifierModel::MiFv(m),
            Head::MiVlad { shift, .. },
        ) = (core.mi_vlad(), &self.classifier, &compact.head)
        {
            let host = self.scores_with_progress(train, progress)?;
            // The host's logit β₀ + β·v of the bag's normalised vector, less logit t.
            let beta = &m.logistic.weights[0];
            let f = |b: usize| {
                let v = m.encoder.vector(train.bag(b));
                beta[0] + beta[1..].iter().zip(&v).map(|(w, x)| w * x).sum::<f64>() - shift
            };
            return svm_measure(bytes, options, train, &host, &f, progress);
        }
        if let (Some(_), crate::classifier::ClassifierModel::Attention(m)) =
            (core.attention(), &self.classifier)
        {
            // The logits against the host's `f64` logits, with the bound the pass states.
            let (mut worst, mut bound, mut agree) = (0.0f64, 0.0f64, 0);
            let host = self.scores(train)?;
            for b in 0..train.n_bags() {
                let (d, logits) = super::core_attention_decide(&core, train.bag(b))?;
                let want = m.logits(train.bag(b));
                for (c, h) in logits.iter().zip(&want) {
                    worst = worst.max((f64::from(*c) - h).abs());
                }
                bound = bound.max(d.bound);
                agree += usize::from(d.label == host.label(b));
            }
            let warnings = warnings(options, &core, agree, train.n_bags());
            return Ok(Exported {
                bytes,
                max_abs_error: worst,
                error_bound: Some(bound),
                labels_agree: agree,
                bags: train.n_bags(),
                stored_bags: None,
                warnings,
            });
        }
        let host = self.scores(train)?;
        let max_abs_error = super::max_abs_error(&bytes, train, |b| {
            super::host_scores_as_compact(self, host.row(b))
        })?;
        let mut agree = 0;
        let mut bound: Option<f64> = None;
        for b in 0..train.n_bags() {
            let (decision, _) = core_classify(&core, train.bag(b))?;
            agree += usize::from(decision.label == host.label(b));
            if let (Head::Linear { .. }, CoreBag::I16(q)) =
                (&compact.head, CoreBag::new(&core, train.bag(b))?)
            {
                let mut scratch = vec![0.0f32; 2 * core.projected_dim()];
                let e = mil_core::score::bag_score_bound(&core, &q, &mut scratch)? as f64;
                bound = Some(bound.map_or(e, |m: f64| m.max(e)));
            }
        }
        let warnings = warnings(options, &core, agree, train.n_bags());
        Ok(Exported {
            bytes,
            max_abs_error,
            error_bound: bound,
            labels_agree: agree,
            bags: train.n_bags(),
            stored_bags: None,
            warnings,
        })
    }
}

impl M3icModel {
    /// Exports the clustering for the core (which runs step 14 of the paper's Table 1)
    /// and measures it on the clustered bags `data`.
    pub fn export<'a>(&self, data: impl Into<Bags<'a>>, options: Export) -> Result<Exported> {
        let data = data.into().to_dataset();
        let zscore = self.mean.as_deref().zip(self.std.as_deref());
        let compact =
            super::Compact::from_m3ic(self.k, self.dim, &self.weights, zscore, self.normalize)?;
        let bytes = export_with(&compact, options.encoding, &data, options.options())?;
        let host: Vec<(usize, Vec<f64>)> = (0..data.n_bags())
            .map(|b| self.witness_scores(data.bag(b).as_slice()))
            .collect();
        let max_abs_error = super::max_abs_error(&bytes, &data, |b| host[b].1.clone())?;
        let core = Model::parse(&bytes)?;
        let mut agree = 0;
        let mut bound: Option<f64> = None;
        for (b, (label, _)) in host.iter().enumerate() {
            agree += usize::from(core_classify(&core, data.bag(b))?.0.label == *label);
            if let CoreBag::I16(q) = CoreBag::new(&core, data.bag(b))? {
                let e = super::m3ic_score_bound(&core, &q)?;
                bound = Some(bound.map_or(e, |m: f64| m.max(e)));
            }
        }
        let warnings = warnings(options, &core, agree, data.n_bags());
        Ok(Exported {
            bytes,
            max_abs_error,
            error_bound: bound,
            labels_agree: agree,
            bags: data.n_bags(),
            stored_bags: None,
            warnings,
        })
    }
}

/// An exported set-kernel SVM (box-counting or MI kernel) or MILES model: one core
/// decision per training bag (each evaluates the kernel against every stored bag, or the
/// similarities to every prototype), its deviation from the host's decision value and
/// the bound the core states for it.
fn svm_measure(
    bytes: Vec<u8>,
    options: Export,
    train: &Dataset,
    host: &crate::classifier::BagScores,
    host_value: &(dyn Fn(usize) -> f64 + Sync),
    progress: &dyn Progress,
) -> Result<Exported> {
    let core = Model::parse(&bytes)?;
    progress.start("core decisions", train.n_bags() as u64);
    let decisions: Vec<_> = (0..train.n_bags())
        .into_par_iter()
        .map(|b| {
            let d = super::core_svm_decide(&core, train.bag(b));
            progress.advance(1);
            d
        })
        .collect::<Result<_>>()?;
    progress.finish();
    let (mut agree, mut max_abs_error, mut bound) = (0, 0.0f64, 0.0f64);
    for (b, d) in decisions.iter().enumerate() {
        let f = host_value(b);
        agree += usize::from(d.label == host.label(b));
        max_abs_error = max_abs_error.max((d.value - f).abs());
        bound = bound.max(d.bound);
    }
    let stored = core
        .svm()
        .map(|s| s.n_bags())
        .or(core.mi_svm().map(|s| s.n_bags()));
    let warnings = warnings(options, &core, agree, train.n_bags());
    Ok(Exported {
        max_abs_error,
        error_bound: Some(bound),
        labels_agree: agree,
        bags: train.n_bags(),
        stored_bags: stored,
        warnings,
        bytes,
    })
}

fn warnings(options: Export, core: &Model<'_>, agree: usize, bags: usize) -> Vec<String> {
    rounding_warning(options.rounding, core)
        .into_iter()
        .chain(disagreement_warning(core, agree, bags))
        .collect()
}

/// A warning when error-feedback rounding was asked for (the default) but the quantised
/// stage had to be rounded to nearest.
pub(crate) fn rounding_warning(asked: Rounding, core: &Model<'_>) -> Option<String> {
    (asked == Rounding::Feedback && super::stored_rounding(core) == Some(Rounding::Nearest)).then(
        || {
            format!(
                "the projection weights were rounded to nearest: error feedback needs at most {} \
                 features and some non-zero input",
                super::rounding::MAX_FEEDBACK_DIM
            )
        },
    )
}

/// A warning when the core's label differs from the host's on some training bags (the
/// quantisation error moved those decisions).
fn disagreement_warning(core: &Model<'_>, agree: usize, bags: usize) -> Option<String> {
    use mil_core::keyword::Keyword;
    (agree < bags).then(|| {
        format!(
            "the {} model gives {} of {bags} training bags a different label (or cluster) from \
             the host model's; a finer format keeps more",
            core.encoding().name(),
            bags - agree
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::{Affine, Compact};
    use crate::projection::test_support::single_instance_bags;

    #[test]
    fn warns_when_feedback_rounding_could_not_be_applied() {
        let data = single_instance_bags(2, &[vec![1.0, -2.0], vec![3.0, 0.5]], &[0, 1]);
        let compact = Compact {
            stage: Some(Affine {
                rows: 2,
                cols: 2,
                a: vec![0.3, -0.7, 0.2, 0.9],
                b: vec![0.0, 0.1],
            }),
            head: Head::None,
        };
        // (what the weights were rounded by, what the user asked for, warned)
        for (stored, asked, warned) in [
            (Rounding::Feedback, Rounding::Feedback, false),
            (Rounding::Nearest, Rounding::Nearest, false),
            (Rounding::Nearest, Rounding::Feedback, true),
        ] {
            let bytes = export_with(&compact, Encoding::Q7, &data, stored).unwrap();
            let core = Model::parse(&bytes).unwrap();
            let warning = rounding_warning(asked, &core);
            assert_eq!(warning.is_some(), warned, "{stored:?} {asked:?}");
        }
    }
}
