//! `mil-toolkit`: multiple-instance learning on the workstation.
//!
//! Trains and evaluates what the five papers of the project describe — discriminant
//! projections (B-MIDA, M-MIDA, CLFDA), sparse-orthogonal projections (MI-ALM), box-counting
//! set kernels and bag clustering (M³IC) — with the baselines they compare against, and
//! exports compact models for the `no_std` core [`mil_core`].
//!
//! Every algorithm has a parameters type whose `Default` is the paper's setting, with
//! chainable setters; `fit` returns an immutable model. Load a shipped data set, fit
//! B-MIDA (d = 10) followed by MILR on the training bags, predict the rest, and export
//! the model in 16-bit fixed point for a microcontroller:
//!
//! ```
//! use mil_toolkit::prelude::*;
//!
//! let data = mil_toolkit::data::load("musk1")?;
//! let (train, test) = data.stratified_folds(5, 1)?.swap_remove(0);
//! let model = Pipeline::new(Milr::default().pooling(Pooling::Mean).ridge(1.0))
//!     .projection(Bmida::default().dim(10))
//!     .fit(&train)?;
//! let labels = model.predict(&test)?;
//!
//! // The compact model the device parses from flash, measured on the training bags.
//! let exported = model.export(&train, Export::q15().fold_projection(true))?;
//! assert_eq!(exported.labels_agree, exported.bags);
//! let device = mil_core::Model::parse(&exported.bytes)?;
//! let (decision, _) = mil_toolkit::export::core_classify(&device, test.bag(0))?;
//! assert_eq!(decision.label, labels[0]);
//! # Ok::<(), mil_toolkit::Error>(())
//! ```
//!
//! Modules, one per paper's algorithm: [`projection`] (PCA, LDA, LFDA/CLFDA, B-MIDA/M-MIDA,
//! MI-ALM, MIDR), [`classifier`] (Citation-kNN, MILR, set-kernel SVM, SimpleMI,
//! MI-Wrapper, miVLAD/miFV), [`kernel`] (the
//! box-counting Gram matrices, NSK), [`cluster`] (M³IC, BAMIC); [`pipeline`] for
//! projection → classifier pipelines and nested cross-validation; [`export`] for the
//! core's compact models; [`explain`] and [`instances`] for the instances behind a bag's
//! label; [`progress`] for reports of long work. The `cli` feature
//! (default) adds the `mil` program, `datasets` (default) the shipped data sets.

#![deny(unsafe_code)]

pub mod atomic_write;
pub mod cancel;
pub mod classifier;
#[cfg(feature = "cli")]
pub mod cli;
pub mod cluster;
pub mod data;
pub mod distance;
pub mod error;
pub mod eval;
pub mod explain;
pub mod export;
#[allow(unsafe_code)]
mod fast;
pub mod instances;
pub mod kernel;
pub mod model;
pub(crate) mod numerics;
pub(crate) mod optim;
pub mod params;
pub mod pipeline;
pub mod progress;
pub mod projection;
pub mod shard;

pub use data::{Bags, Dataset};
pub use error::{Error, Result};

/// The types a program that fits, evaluates and exports models names most:
/// `use mil_toolkit::prelude::*;`.
pub mod prelude {
    pub use crate::classifier::citation_knn::CitationKnn;
    pub use crate::classifier::milr::{Milr, Pooling};
    pub use crate::classifier::svm::SetKernelSvm;
    pub use crate::classifier::{BagModel, BagScores, Classifier, ClassifierParams};
    pub use crate::cluster::bamic::Bamic;
    pub use crate::cluster::m3ic::M3ic;
    pub use crate::cluster::ClusterModel;
    pub use crate::data::{Bags, Dataset};
    pub use crate::error::Error;
    pub use crate::export::{Export, Exported};
    pub use crate::model::HostModel;
    pub use crate::pipeline::{cross_validate, Folds, Pipeline};
    pub use crate::projection::lda::Lda;
    pub use crate::projection::lfda::{Clfda, Lfda};
    pub use crate::projection::mi_alm::MiAlm;
    pub use crate::projection::mida::{Bmida, Mmida};
    pub use crate::projection::midr::Midr;
    pub use crate::projection::pca::Pca;
    pub use crate::projection::{ProjectionParams, Projector};
}
