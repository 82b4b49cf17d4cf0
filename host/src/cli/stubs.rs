//! Subcommands whose issue has not landed: they exist in `--help` with their flags and
//! answer "not available yet" with exit status 1.

use super::Report;
use crate::error::{Error, Result};

/// The answer of a subcommand that is not built yet.
pub fn not_yet(command: &str) -> Result<Report> {
    Err(Error::NotAvailable(command.to_string()))
}
