//! `mil-core`: what a deployed device needs to run multiple-instance learning models.
//!
//! `no_std`, no heap, no panics on bad input. Everything writes into caller-provided
//! buffers and reports problems as [`Error`] values. The host crate (`mil`) uses the same
//! functions when it trains, so each numerical idea has exactly one implementation.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod box_kernel;
pub mod citation;
pub mod cluster;
pub mod error;
pub mod fixed;
pub mod keyword;
pub mod model;
pub mod project;
pub mod score;
pub mod svm;

pub use error::Error;
pub use model::{Decision, Encoding, Instances, Model, ModelKind};
