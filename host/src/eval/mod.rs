//! Evaluation: bag-level fold assignment, metrics of classifiers and clusterings, and
//! summary statistics with confidence intervals.

pub mod folds;
pub mod metrics;
pub mod roc;
pub mod seeds;
pub mod stats;

pub use folds::{inner_folds, stratified_folds};
pub use metrics::{
    accuracy, adjusted_rand_index, auroc, clustering_accuracy, confusion_matrix, nmi,
};
pub use stats::Summary;
