//! [`Compact`] from fitted models: a saved host model or an M³IC clustering, and a
//! projection folded into a linear head.

use mil_core::keyword::Keyword;
use mil_core::score::Pooling;

use crate::classifier::citation_knn::Scaler;
use crate::classifier::dd::{self, DdAlgorithm, DdModel};
use crate::classifier::miles::{Miles, MilesEmbedding, MilesModel};
use crate::classifier::svm::SetKernel;
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::model::{ClassifierModel, HostModel};

use super::*;

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
        // The core scores one classifier per model.
        model.check_single("exporting")?;
        if let Some(milr) = as_milr(model)? {
            return Self::from_host(&milr);
        }
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
            ClassifierModel::Miles(m) => Ok((
                Compact {
                    stage: projection,
                    head: Head::Miles {
                        model: Box::new(m.clone()),
                        // A chosen threshold t moves the decision f > t into the bias.
                        shift: model.threshold.unwrap_or(0.0),
                    },
                },
                None,
            )),
            ClassifierModel::Dd(m) => Ok((
                Compact {
                    stage: projection,
                    head: Head::Miles {
                        model: Box::new(em_dd_as_miles(m, model.threshold)?),
                        shift: 0.0,
                    },
                },
                None,
            )),
            ClassifierModel::MiVlad(m) | ClassifierModel::MiFv(m) => {
                let shift = match model.threshold {
                    Some(t) if t > 0.0 && t < 1.0 => (t / (1.0 - t)).ln(),
                    Some(t) => {
                        return Err(Error::parameter(
                            "threshold",
                            t,
                            "a miVLAD or miFV threshold on its probability must be in (0, 1) to export",
                        ))
                    }
                    None => 0.0,
                };
                Ok((
                    Compact {
                        stage: projection,
                        head: Head::MiVlad {
                            model: Box::new(m.clone()),
                            shift,
                        },
                    },
                    None,
                ))
            }
            ClassifierModel::Attention(m) => {
                if model.threshold.is_some() {
                    return Err(Error::Unsupported(
                        "exporting an attention network with a decision threshold".into(),
                    ));
                }
                Ok((
                    Compact {
                        stage: projection,
                        head: Head::Attention(Box::new(m.clone())),
                    },
                    None,
                ))
            }
            ClassifierModel::MiSvm(m) => {
                let name = m.params.heuristic.kind();
                let head = linear_instance_head(m.expansion.linear(m.params.kernel), Pooling::Max, model.threshold);
                Ok((
                    Compact {
                        stage: projection,
                        head: head.ok_or_else(|| rbf_refused(name))?,
                    },
                    None,
                ))
            }
            ClassifierModel::Smil(m) => {
                use crate::classifier::smil::Variant;
                let pooling = match m.params.variant {
                    Variant::Sparse => Pooling::Geometric,
                    Variant::Balanced => Pooling::Max,
                };
                let head = linear_instance_head(m.expansion.linear(m.params.kernel), pooling, model.threshold);
                Ok((
                    Compact {
                        stage: projection,
                        head: head.ok_or_else(|| rbf_refused(m.params.kind()))?,
                    },
                    None,
                ))
            }
            // Every other classifier: the core has no head for it.
            other => Err(Error::Unsupported(format!(
                "exporting a {} model (the core has no head for it); export milr, mi-wrapper, simple-mi (mean), citation-knn, a set-kernel svm, a linear mi-svm, mi-svm-bag, smil or sbmil, em-dd, miles, mi-vlad, mi-fv or attention",
                other.kind()
            ))),
        }
    }
}

/// MI-Wrapper and SimpleMI with mean summaries as the MILR model that scores every bag
/// as they do, `None` for other models. Both fit one-vs-rest logistic rows w_k on
/// instances: MI-Wrapper combines the instance probabilities σ(z_ik) by their mean, the
/// normalised geometric mean σ(meanᵢ z_ik) or the maximum, MILR's mean, geometric and
/// max pooling; SimpleMI scores σ(w_k·mean(x) + c_k) = σ(meanᵢ z_ik), the geometric
/// pooling, since the logit is linear. SimpleMI's other summaries (the bounding box) are
/// no pooling of instance scores: an error.
fn as_milr(model: &HostModel) -> Result<Option<HostModel>> {
    use crate::classifier::mi_wrapper::Combine;
    use crate::classifier::simple_mi::Summary;
    let (logistic, pooling) = match &model.classifier {
        ClassifierModel::MiWrapper(m) => {
            let pooling = match m.params.combine {
                Combine::Arithmetic => Pooling::Mean,
                Combine::Geometric => Pooling::Geometric,
                Combine::Max => Pooling::Max,
            };
            (&m.logistic, pooling)
        }
        ClassifierModel::SimpleMi(m) if m.params.summary == Summary::Mean => {
            (&m.logistic, Pooling::Geometric)
        }
        ClassifierModel::SimpleMi(m) => {
            return Err(Error::Unsupported(format!(
                "exporting a simple-mi model with {} summaries (the core pools linear instance scores, which the mean summary is); train it with --summary mean",
                m.params.summary
            )))
        }
        _ => return Ok(None),
    };
    let mut milr = logistic.clone();
    milr.params.pooling = pooling;
    Ok(Some(HostModel {
        classifier: ClassifierModel::Milr(milr),
        ..model.clone()
    }))
}

/// EM-DD as a MILES model with one prototype: its bag probability is the largest
/// (1 − ε)·exp(−Σₖ sₖ²(xₖ − tₖ)²) over the instances (Zhang & Goldman), which is MILES'
/// exp(−γ‖z − p‖²) with the "z-score" (x − t)·|s|, the prototype p = 0 and γ = 1, weighed
/// by 1 − ε with the bias −θ (θ the decision threshold, ½ by default): f > 0 ⇔ P > θ.
/// DD's noisy-OR over the bag's instances is no pooling the core has: an error.
fn em_dd_as_miles(m: &DdModel, threshold: Option<f64>) -> Result<MilesModel> {
    if m.params.algorithm != DdAlgorithm::EmDd {
        return Err(Error::Unsupported(
            "exporting a dd model (the core has no noisy-OR over prototype similarities); train --classifier em-dd, whose largest instance probability it computes".into(),
        ));
    }
    let threshold = threshold.unwrap_or(0.5);
    if !(threshold > 0.0 && threshold < 1.0) {
        return Err(Error::parameter(
            "threshold",
            threshold,
            "an EM-DD threshold on its probability must be in (0, 1) to export",
        ));
    }
    Ok(MilesModel {
        params: Miles::default(),
        candidates: 1,
        embedding: MilesEmbedding {
            dim: m.dim,
            mean: m.target.clone(),
            inv_sd: m.scale.iter().map(|s| s.abs()).collect(),
            gamma: 1.0,
            prototypes: vec![0.0; m.dim],
        },
        weights: vec![1.0 - dd::EPSILON],
        bias: -threshold,
        rest: Vec::new(),
    })
}

/// The core's linear head for a linear instance function f = w·x + b (mi-SVM, MI-SVM,
/// sMIL, sbMIL; [`crate::classifier::mi_svm::Expansion::linear`]) whose bag decision pools f: the largest f (`Pooling::Max`, Andrews et al.; sbMIL) or
/// the mean f (`Pooling::Geometric`, sMIL). The core pools σ(f) by its max, or takes
/// σ(mean f): σ is increasing and σ(·) > ½ ⇔ its argument > 0. A chosen threshold t moves
/// the bias. `None` for an RBF kernel (no w).
fn linear_instance_head(
    f: Option<(Vec<f64>, f64)>,
    pooling: Pooling,
    threshold: Option<f64>,
) -> Option<Head> {
    let (weights, bias) = f?;
    Some(Head::Linear {
        weights,
        bias: vec![bias - threshold.unwrap_or(0.0)],
        pooling,
        beta: 1.0,
    })
}

/// The refusal of an RBF instance model, naming the fix.
fn rbf_refused(name: impl std::fmt::Display) -> Error {
    Error::Unsupported(format!(
        "exporting an rbf-kernel {name} model (the core scores linear instance functions); train it with --kernel linear"
    ))
}

/// The host model's scores of one bag (`row`, from [`HostModel::scores`]) in the form
/// its compact model computes them ([`Compact::from_host`]): a thresholded binary MILR,
/// MI-Wrapper or SimpleMI scores [t, P], a thresholded SVM or MILES [0, f − t], EM-DD
/// [0, P − θ] (θ its threshold, ½ by default), a linear mi-SVM, MI-SVM, sMIL or sbMIL
/// [1 − σ(f − t), σ(f − t)] of its bag decision f; otherwise the row itself.
pub fn host_scores_as_compact(model: &HostModel, row: &[f64]) -> Vec<f64> {
    if let (ClassifierModel::Dd(_), [_, p]) = (&model.classifier, row) {
        return vec![0.0, p - model.threshold.unwrap_or(0.5)];
    }
    if let (ClassifierModel::MiSvm(_) | ClassifierModel::Smil(_), [_, f]) = (&model.classifier, row)
    {
        let p = 1.0 / (1.0 + (-(f - model.threshold.unwrap_or(0.0))).exp());
        return vec![1.0 - p, p];
    }
    match (model.threshold, &model.classifier, row) {
        (
            Some(t),
            ClassifierModel::Milr(_) | ClassifierModel::MiWrapper(_) | ClassifierModel::SimpleMi(_),
            [_, p],
        ) => vec![t, *p],
        (Some(t), ClassifierModel::Svm(_) | ClassifierModel::Miles(_), [z, f]) => vec![*z, f - t],
        _ => row.to_vec(),
    }
}
