//! The one error type of the core: every fallible function returns it, nothing panics.

use core::fmt;

/// Why a core operation could not be carried out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// A caller-provided buffer is too small: `needed` elements were required, `got` given.
    BufferTooSmall {
        /// Elements the operation needs.
        needed: usize,
        /// Elements the caller provided.
        got: usize,
    },
    /// Two inputs that must agree in length or dimension do not.
    DimensionMismatch {
        /// The dimension the operation expected.
        expected: usize,
        /// The dimension it was given.
        got: usize,
    },
    /// An input was empty where at least one element is required.
    Empty,
    /// A parameter is outside its valid range (for example ε ∉ (0, 1)).
    InvalidParameter(&'static str),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::BufferTooSmall { needed, got } => {
                write!(f, "buffer too small: need {needed} elements, got {got}")
            }
            Error::DimensionMismatch { expected, got } => {
                write!(f, "dimension mismatch: expected {expected}, got {got}")
            }
            Error::Empty => write!(f, "empty input"),
            Error::InvalidParameter(what) => write!(f, "invalid parameter: {what}"),
        }
    }
}

impl core::error::Error for Error {}
