//! A pipeline's candidates — projection settings and classifier settings — and the inner
//! cross-validation that chooses among them on the training bags of a fit.

use crate::classifier::{BagModel, ClassifierKind, ClassifierParams};
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::eval::folds::complement;
use crate::eval::{auroc, inner_folds};
use crate::projection::ProjectionParams;
use mil_core::keyword::Keyword;

use super::Pipeline;
pub use crate::model::Chosen;

/// The projection part of a pipeline with its hyper-parameter candidates.
#[derive(Debug, Clone, PartialEq)]
pub struct ProjectionGrid {
    /// The algorithm and every setting that is not searched.
    pub params: ProjectionParams,
    /// Candidate output dimensions (empty: the parameters' own).
    pub dims: Vec<usize>,
    /// Candidate trade-offs α (empty: the parameters' own).
    pub alphas: Vec<f64>,
}

impl ProjectionGrid {
    /// Every (dim, α) combination, dims outermost; α only for algorithms that have one.
    pub fn candidates(&self) -> Result<Vec<ProjectionParams>> {
        let dims = if self.dims.is_empty() {
            vec![self.params.dim()]
        } else {
            self.dims.clone()
        };
        let mut out = Vec::new();
        for dim in dims {
            let p = self.params.with_dim(dim);
            if self.alphas.is_empty() {
                out.push(p);
            } else {
                for &alpha in &self.alphas {
                    out.push(p.with_alpha(alpha)?);
                }
            }
        }
        Ok(out)
    }
}

impl<P: Into<ProjectionParams>> From<P> for ProjectionGrid {
    fn from(params: P) -> Self {
        ProjectionGrid {
            params: params.into(),
            dims: Vec::new(),
            alphas: Vec::new(),
        }
    }
}

/// The classifier part of a pipeline with its hyper-parameter candidates: one
/// classifier, or MILR with a list of ridges.
#[derive(Debug, Clone, PartialEq)]
pub struct ClassifierGrid {
    /// The candidates in the order given (never empty).
    candidates: Vec<ClassifierParams>,
}

impl ClassifierGrid {
    /// `spec` with its ridge replaced by each of `ridges` in turn (an empty list keeps
    /// the spec's own ridge). A ridge list is for the classifiers with a ridge
    /// ([`ClassifierParams::ridge`]): with another classifier a single value is ignored
    /// and a longer list is an error. Every candidate with a ridge is validated here,
    /// before any projection is fitted.
    pub fn new(spec: ClassifierParams, ridges: &[f64]) -> Result<Self> {
        let has_ridge = spec.ridge().is_some();
        let candidates = match ridges {
            [_, ..] if has_ridge => ridges
                .iter()
                .map(|&ridge| {
                    let c = spec.with_ridge(ridge).expect("a classifier with a ridge");
                    c.check().map(|()| c)
                })
                .collect::<Result<Vec<_>>>()?,
            _ if has_ridge => {
                spec.check()?;
                vec![spec]
            }
            [_, _, ..] => {
                let list: Vec<String> = ridges.iter().map(f64::to_string).collect();
                let with_ridge: Vec<&str> = ClassifierKind::ALL
                    .iter()
                    .filter(|&&k| ClassifierParams::new(k).ridge().is_some())
                    .map(|k| k.name())
                    .collect();
                return Err(Error::parameter(
                    "ridge",
                    list.join(","),
                    format!(
                        "a list of ridges is chosen by inner CV for {} only",
                        with_ridge.join(", ")
                    ),
                ));
            }
            _ => vec![spec],
        };
        Ok(ClassifierGrid { candidates })
    }

    /// The candidates in the order they are tried (ties go to the first).
    pub fn candidates(&self) -> &[ClassifierParams] {
        &self.candidates
    }

    /// The classifier when there is nothing to choose.
    pub fn single(&self) -> Option<ClassifierParams> {
        match self.candidates.as_slice() {
            [one] => Some(*one),
            _ => None,
        }
    }
}

impl<C: Into<ClassifierParams>> From<C> for ClassifierGrid {
    fn from(spec: C) -> Self {
        ClassifierGrid {
            candidates: vec![spec.into()],
        }
    }
}

/// What the inner CV maximises when it picks among candidates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Selection {
    /// Correct predictions on the inner test folds.
    #[default]
    Accuracy,
    /// AUROC of the inner out-of-fold scores, pooled over the inner folds (binary data;
    /// the MI-ALM paper's criterion).
    Auroc,
}

mil_core::keywords!(Selection {
    Selection::Accuracy => "accuracy": "correct predictions on the inner test folds",
    Selection::Auroc => "auroc": "AUROC of the pooled inner out-of-fold scores (two classes; the MI-ALM paper's criterion)",
});

/// One point of a pipeline's grid: a projection (if any) and a classifier.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Candidate {
    /// The projection, if the pipeline has one.
    pub projection: Option<ProjectionParams>,
    /// The classifier.
    pub classifier: ClassifierParams,
}

impl Pipeline {
    /// Picks the candidate with the best inner-CV accuracy (or pooled AUROC, per
    /// [`Pipeline::select`]) on `train` (the first on ties, projection candidates
    /// outermost, then the classifier's in the order given); with a single candidate,
    /// no inner CV is run. Within an inner fold each
    /// projection candidate is fitted once and every classifier candidate is fitted
    /// on its projected bags. The loop is sequential, so the choice does not depend
    /// on the number of threads.
    pub(super) fn choose(&self, data: &Dataset, train: &[usize], seed: u64) -> Result<Candidate> {
        let projections = self.projection_candidates()?;
        let classifiers = self.classifier.candidates();
        if projections.len() * classifiers.len() == 1 {
            return Ok(Candidate {
                projection: projections[0],
                classifier: classifiers[0],
            });
        }
        let labels = data.require_labels(2)?;
        if self.select == Selection::Auroc && data.n_classes() != 2 {
            return Err(Error::parameter(
                "select",
                "auroc",
                "AUROC selection needs two classes; use accuracy",
            ));
        }
        let smallest_class = (0..data.n_classes())
            .map(|c| train.iter().filter(|&&b| labels[b] == c).count())
            .filter(|&n| n > 0)
            .min()
            .unwrap_or(0);
        if self.inner_folds > smallest_class {
            return Err(Error::parameter(
                "inner_folds",
                self.inner_folds,
                format!(
                    "must be at most the smallest class among the training bags ({smallest_class} bags)"
                ),
            ));
        }
        let folds = inner_folds(labels, train, self.inner_folds, seed)?;
        // Inner out-of-fold predictions per candidate, index p · classifiers + c:
        // (predicted label, positive score, true label) of every inner test bag.
        let mut oof = vec![Vec::new(); projections.len() * classifiers.len()];
        for (p, spec) in projections.iter().enumerate() {
            for test in &folds {
                let inner_train = complement(train, test);
                let projected = Self::fit_projection(spec.as_ref(), data, &inner_train)?;
                let on = projected.as_ref().map_or(data, |(_, d)| d);
                for (c, classifier) in classifiers.iter().enumerate() {
                    let classifier = match spec {
                        Some(_) => classifier.after_projection(),
                        None => *classifier,
                    };
                    let s = classifier
                        .fit(on.select(&inner_train))?
                        .scores(on.select(test))?;
                    oof[p * classifiers.len() + c].extend(
                        test.iter()
                            .enumerate()
                            .map(|(i, &b)| (s.label(i), s.positive(i), labels[b])),
                    );
                }
            }
        }
        let merit = |o: &[(usize, f64, usize)]| match self.select {
            Selection::Accuracy => o.iter().filter(|(l, _, t)| l == t).count() as f64,
            Selection::Auroc => {
                let scores: Vec<f64> = o.iter().map(|x| x.1).collect();
                let positive: Vec<bool> = o.iter().map(|x| x.2 == 1).collect();
                // NaN scores or a one-class inner sample rank a candidate last.
                auroc(&scores, &positive).unwrap_or(f64::NEG_INFINITY)
            }
        };
        let merits: Vec<f64> = oof.iter().map(|o| merit(o)).collect();
        // The first maximum.
        let mut best = 0;
        for (i, &m) in merits.iter().enumerate() {
            if m > merits[best] {
                best = i;
            }
        }
        Ok(Candidate {
            projection: projections[best / classifiers.len()],
            classifier: classifiers[best % classifiers.len()],
        })
    }
}
