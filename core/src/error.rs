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
    /// Model bytes end before a structure they announce: `needed` bytes, `got` available.
    Truncated {
        /// Bytes the structure needs.
        needed: usize,
        /// Bytes present.
        got: usize,
    },
    /// Model bytes are not a valid model container: what is wrong.
    BadModel(&'static str),
    /// The model's format version is not one this core reads.
    UnsupportedVersion(u16),
    /// The stored checksum does not match the bytes (corrupted in transit or in flash).
    ChecksumMismatch {
        /// The checksum written in the header.
        stored: u32,
        /// The checksum of the bytes as they are.
        computed: u32,
    },
    /// The model is valid but of another kind than the operation needs.
    WrongModelKind,
    /// A fixed capacity of the core (for example instances per bag) is exceeded.
    CapacityExceeded {
        /// The capacity.
        capacity: usize,
        /// What was asked for.
        needed: usize,
    },
    /// The caller's poll asked a long computation to stop (a host's Ctrl-C).
    Stopped,
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
            Error::Truncated { needed, got } => {
                write!(f, "model truncated: need {needed} bytes, got {got}")
            }
            Error::BadModel(what) => write!(f, "not a valid model: {what}"),
            Error::UnsupportedVersion(v) => write!(f, "unsupported model format version {v}"),
            Error::ChecksumMismatch { stored, computed } => write!(
                f,
                "model checksum mismatch: stored {stored:#010x}, computed {computed:#010x}"
            ),
            Error::WrongModelKind => write!(f, "model is of another kind"),
            Error::CapacityExceeded { capacity, needed } => {
                write!(f, "capacity exceeded: need {needed}, capacity {capacity}")
            }
            Error::Stopped => write!(f, "stopped by the caller"),
        }
    }
}

impl core::error::Error for Error {}
