//! `mil-core`: what a deployed device needs to run multiple-instance learning models.
//!
//! `no_std`, no heap, no panics on bad input. Everything writes into caller-provided
//! buffers and reports problems as [`Error`] values. The host crate (`mil`) uses the same
//! functions when it trains, so each numerical idea has exactly one implementation.
//!
//! A trained model is one byte string ([`container`]) that [`Model::parse`] reads in
//! place; [`Model::classify`] then sends a bag through the projection stage
//! ([`project`]) and the model's head: pooled linear scores ([`score`]), Citation-kNN
//! ([`citation`]), M³IC clusters ([`cluster`]), a set-kernel SVM ([`svm`], on the
//! box-counting kernels of [`box_kernel`]), the MI-kernel SVM ([`mi_svm`]) or MILES
//! ([`miles`]); miVLAD ([`mi_vlad`]) and the attention network ([`attention`]) have
//! their own entry points too.
//!
//! ```
//! use mil_core::{Instances, Model};
//!
//! // A binary MILR model on two features with max pooling (`mil_core::sample`); on a
//! // device, typically `include_bytes!` of the file `mil export` wrote.
//! let model = Model::parse(mil_core::sample::LINEAR_MIL)?;
//! let bag = [3.0, 1.0, 0.0, 2.0]; // two instances, row-major
//! let mut scratch = [0.0; 16];
//! let mut scores = [0.0; 2];
//! assert!(model.scratch_len(2) <= scratch.len());
//! let decision = model.classify(Instances::F32(&bag), &mut scratch, &mut scores)?;
//! assert_eq!(decision.label, 1); // positive
//! # Ok::<(), mil_core::Error>(())
//! ```
#![cfg_attr(not(test), no_std)]
// `unsafe` only in `fixed::dsp` (Armv7E-M only): the written-out `SMLALD` loops.
#![deny(unsafe_code)]
#![deny(missing_docs)]

pub mod attention;
pub mod bag;
pub mod box_kernel;
pub mod citation;
pub mod cluster;
pub mod container;
pub mod error;
pub mod fixed;
pub mod keyword;
pub mod mi_svm;
pub mod mi_vlad;
pub mod miles;
pub mod model;
pub mod project;
pub mod sample;
pub mod score;
pub mod svm;
pub mod weights;

pub use bag::{Decision, Instances};
pub use container::{Encoding, ModelKind};
pub use error::Error;
pub use model::Model;
