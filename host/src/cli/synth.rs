//! `mil synth`: writes a synthetic data set from the papers.

use super::{Report, SynthArgs};
use crate::error::{Error, Result};

/// Runs `mil synth`.
pub fn run(_args: &SynthArgs) -> Result<Report> {
    Err(Error::NotAvailable("mil synth".into()))
}
