//! The host's error type. Each variant says whether it is the user's input (exit 2) or
//! something else (exit 1), and carries the file, line and field where there is one.

use std::path::PathBuf;

/// Result alias used throughout the host crate.
pub type Result<T> = std::result::Result<T, Error>;

/// Everything that can go wrong in the host, with enough context to act on it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// A data or model file is malformed at a known place.
    #[error("{file}:{line}: {field}: {problem}")]
    Parse {
        /// The file (or built-in data set name).
        file: String,
        /// 1-based line number.
        line: usize,
        /// The field, e.g. `column 5 (feature 3)` or `label`.
        field: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A data set is well-formed but unusable for the request (one class, no labels, …).
    #[error("{file}: {problem}")]
    Data {
        /// The data set.
        file: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A parameter is out of range or inconsistent with the data.
    #[error("invalid {name} = {value}: {reason}")]
    Parameter {
        /// The parameter, as the user spells it (`--dim`, `epsilon`, …).
        name: String,
        /// The value given.
        value: String,
        /// Why it is not acceptable.
        reason: String,
    },
    /// A bound on the core's side (model bytes, buffer sizes) was violated.
    #[error("core: {0}")]
    Core(#[from] mil_core::Error),
    /// A numerical method failed (no convergence, singular system, …).
    #[error("numerical failure in {method}: {reason}")]
    Numerical {
        /// The algorithm.
        method: &'static str,
        /// What happened.
        reason: String,
    },
    /// A model, read from a file or assembled by hand, is internally inconsistent
    /// (see each model's `validate`).
    #[error("{0}")]
    Model(String),
    /// A combination the toolkit does not support (a permanent limit, such as a model
    /// kind the core cannot run).
    #[error("{0} is not supported")]
    Unsupported(String),
}

impl Error {
    /// The process exit status the CLI contract assigns: 2 for bad arguments or input
    /// (including a request the toolkit does not support), 1 for any other failure.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Parse { .. } | Error::Data { .. } | Error::Parameter { .. } => 2,
            Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => 2,
            Error::Core(_) | Error::Model(_) | Error::Unsupported(_) => 2,
            Error::Io { .. } | Error::Numerical { .. } => 1,
        }
    }

    /// Shorthand for a [`Error::Parameter`].
    pub fn parameter(name: &str, value: impl ToString, reason: impl Into<String>) -> Self {
        Error::Parameter {
            name: name.to_string(),
            value: value.to_string(),
            reason: reason.into(),
        }
    }

    /// Shorthand for a [`Error::Data`].
    pub fn data(file: &str, problem: impl Into<String>) -> Self {
        Error::Data {
            file: file.to_string(),
            problem: problem.into(),
        }
    }
}
