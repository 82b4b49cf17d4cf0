//! `mil`: multiple-instance learning on the workstation.
//!
//! Trains and evaluates what the five papers of the project describe — discriminant
//! projections (B-MIDA, M-MIDA, CLFDA), sparse-orthogonal projections (MI-ALM), box-counting
//! set kernels and bag clustering (M³IC) — with the baselines they compare against, and
//! exports compact models for the `no_std` core [`mil_core`].

pub mod atomic_write;
pub mod classifier;
pub mod cli;
pub mod cluster;
pub mod data;
pub mod distance;
pub mod error;
pub mod eval;
pub mod export;
pub mod kernel;
pub mod lbfgs;
pub mod model;
pub mod pipeline;
pub mod projection;
pub mod svm;
pub mod weka_bfgs;

pub use data::Dataset;
pub use error::{Error, Result};
