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
//! use mil_toolkit::classifier::milr::{Milr, Pooling};
//! use mil_toolkit::pipeline::Pipeline;
//! use mil_toolkit::projection::mida::Bmida;
//! use mil_toolkit::export::{self, Compact};
//! use mil_core::Encoding;
//!
//! let data = mil_toolkit::data::load("musk1")?;
//! let (train, test): (Vec<usize>, Vec<usize>) = (0..data.n_bags()).partition(|b| b % 5 != 0);
//! let pipeline = Pipeline::new(Milr::default().pooling(Pooling::Mean).ridge(1.0))
//!     .projection(Bmida::default().dim(10));
//! let model = pipeline.fit_model(&data, &train)?;
//! let labels = model.predict(&data, &test)?;
//! assert_eq!(labels.len(), test.len());
//!
//! // The compact model the device parses from flash, and the core's label of a bag.
//! let (compact, _) = Compact::from_host(&model)?;
//! let bytes = export::export(&compact, Encoding::Q15, &data)?;
//! let device = mil_core::Model::parse(&bytes)?;
//! let (decision, _) = export::core_classify(&device, data.bag(test[0]))?;
//! assert_eq!(decision.label, labels[0]);
//! # Ok::<(), mil_toolkit::Error>(())
//! ```
//!
//! Modules, one per paper's algorithm: [`projection`] (PCA, LDA, LFDA/CLFDA, B-MIDA/M-MIDA,
//! MI-ALM, MIDR), [`classifier`] (Citation-kNN, MILR, set-kernel SVM), [`kernel`] (the
//! box-counting Gram matrices, NSK), [`cluster`] (M³IC, BAMIC); [`pipeline`] for
//! projection → classifier pipelines and nested cross-validation; [`export`] for the
//! core's compact models; [`progress`] for reports of long work. The `cli` feature
//! (default) adds the `mil` program, `datasets` (default) the shipped data sets.

pub mod atomic_write;
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
pub mod kernel;
pub mod model;
pub mod numerics;
pub mod optim;
pub mod params;
pub mod pipeline;
pub mod progress;
pub mod projection;
pub mod shard;
pub mod svm;

pub use data::Dataset;
pub use error::{Error, Result};
