//! Bag classifiers behind one interface: a parameter type ([`Classifier`]) fits on the
//! training bags of a data set and returns an immutable fitted model ([`BagModel`]) that
//! scores any bags of the same dimension, one score per class.
//!
//! - [`citation_knn`]: Citation-kNN (Wang & Zucker 2000), Weka-compatible.
//! - [`milr`]: multiple-instance logistic regression (Ray & Craven 2005; Weka's MILR).
//! - [`svm`]: SVM over bags with a box-counting or normalised set kernel (Tao et al. 2008).
//!
//! Multi-class data: Citation-kNN votes per class; MILR fits one model per class
//! (one-vs-rest). The fitted models are gathered in [`crate::model::ClassifierModel`].

pub mod citation_knn;
pub mod milr;
pub mod svm;

use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::model::ClassifierModel;

/// Per-class scores of a list of bags (higher = more likely), row-major bags × classes.
#[derive(Debug, Clone, PartialEq)]
pub struct BagScores {
    n_classes: usize,
    scores: Vec<f64>,
}

impl BagScores {
    /// Wraps row-major scores (`scores.len()` must be a multiple of `n_classes`).
    pub fn new(n_classes: usize, scores: Vec<f64>) -> Self {
        debug_assert!(n_classes > 0 && scores.len().is_multiple_of(n_classes));
        BagScores { n_classes, scores }
    }

    /// Number of classes.
    pub fn n_classes(&self) -> usize {
        self.n_classes
    }

    /// Number of bags scored.
    pub fn len(&self) -> usize {
        self.scores.len() / self.n_classes
    }

    /// True when no bag was scored.
    pub fn is_empty(&self) -> bool {
        self.scores.is_empty()
    }

    /// The scores of bag `i` (one per class).
    pub fn row(&self, i: usize) -> &[f64] {
        &self.scores[i * self.n_classes..(i + 1) * self.n_classes]
    }

    /// The predicted class of bag `i`: the highest score, ties to the lower class index
    /// (Weka's rule: ties go to the first class, the negative one when binary).
    pub fn label(&self, i: usize) -> usize {
        let row = self.row(i);
        let mut best = 0;
        for (c, &s) in row.iter().enumerate() {
            if s > row[best] {
                best = c;
            }
        }
        best
    }

    /// Predicted classes of all bags.
    pub fn labels(&self) -> Vec<usize> {
        (0..self.len()).map(|i| self.label(i)).collect()
    }

    /// The score of the positive class (class 1) of bag `i` for binary problems — what
    /// AUROC ranks; for multi-class, the score of the predicted class.
    pub fn positive(&self, i: usize) -> f64 {
        if self.n_classes == 2 {
            self.row(i)[1]
        } else {
            self.row(i)[self.label(i)]
        }
    }

    /// Appends the rows of another score table with the same classes.
    pub fn extend(&mut self, other: &BagScores) {
        self.scores.extend_from_slice(&other.scores);
    }
}

/// Hyper-parameters of a bag classifier; fitting yields an immutable model.
pub trait Classifier {
    /// The fitted model.
    type Model: BagModel;
    /// Fits on the bags `train` of `data` (labels of other bags are never read).
    fn fit(&self, data: &Dataset, train: &[usize]) -> Result<Self::Model>;
}

/// A fitted bag classifier.
pub trait BagModel {
    /// Number of classes it scores.
    fn n_classes(&self) -> usize;
    /// Feature dimension it expects.
    fn input_dim(&self) -> usize;
    /// Scores the bags `bags` of `data`, in that order.
    fn scores(&self, data: &Dataset, bags: &[usize]) -> Result<BagScores>;
}

/// Any of the classifiers, as the CLI and the pipeline choose them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ClassifierSpec {
    /// Citation-kNN.
    CitationKnn(citation_knn::CitationKnn),
    /// MILR.
    Milr(milr::Milr),
    /// SVM over bags with a set kernel.
    Svm(svm::SetKernelSvm),
}

impl ClassifierSpec {
    /// Fits the chosen classifier.
    pub fn fit(&self, data: &Dataset, train: &[usize]) -> Result<ClassifierModel> {
        Ok(match self {
            ClassifierSpec::CitationKnn(c) => ClassifierModel::CitationKnn(c.fit(data, train)?),
            ClassifierSpec::Milr(m) => ClassifierModel::Milr(m.fit(data, train)?),
            ClassifierSpec::Svm(s) => ClassifierModel::Svm(s.fit(data, train)?),
        })
    }
}

/// The error for bags of the wrong dimension.
pub(crate) fn check_dim(data: &Dataset, expected: usize) -> Result<()> {
    if data.dim() != expected {
        return Err(Error::data(
            data.name(),
            format!(
                "{} features but the model was fitted on {expected}",
                data.dim()
            ),
        ));
    }
    Ok(())
}
