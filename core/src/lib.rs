//! `mil-core`: what a deployed device needs to run multiple-instance learning models.
//!
//! `no_std`, no heap, no panics on bad input. Everything writes into caller-provided
//! buffers and reports problems as [`Error`] values. The host crate (`mil`) uses the same
//! functions when it trains, so each numerical idea has exactly one implementation.
//!
//! A trained model is one byte string ([`container`]) that [`Model::parse`] reads in
//! place; [`Model::classify`] then sends a bag through the projection stage
//! ([`project`]) and the model's head: pooled linear scores ([`score`]), Citation-kNN
//! ([`citation`]), M³IC clusters ([`cluster`]), or a set-kernel SVM ([`svm`], on the
//! box-counting kernels of [`box_kernel`]).
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod bag;
pub mod box_kernel;
pub mod citation;
pub mod cluster;
pub mod container;
pub mod error;
pub mod fixed;
pub mod model;
pub mod project;
pub mod score;
pub mod svm;
pub mod weights;

pub use bag::{Decision, Instances};
pub use container::{Encoding, ModelKind};
pub use error::Error;
pub use model::Model;
