//! Bag data: the data set type, file formats, shipped sets, synthetic generators and
//! standardisation.

pub mod arff;
pub mod builtin;
pub mod csv;
pub mod dataset;
pub mod standardize;
pub mod synth;

use std::path::Path;

pub use dataset::{Bag, Dataset};

use crate::error::{Error, Result};

/// Loads `DATA` as the CLI understands it: a built-in name, a `.csv` file or a Weka
/// multi-instance `.arff` file.
pub fn load(spec: &str) -> Result<Dataset> {
    if let Some(builtin) = builtin::find(spec) {
        return csv::parse_csv(builtin.name, builtin.csv);
    }
    let path = Path::new(spec);
    if !path.exists() {
        let names: Vec<&str> = builtin::BUILTINS.iter().map(|b| b.name).collect();
        return Err(Error::data(
            spec,
            format!(
                "no such file, and not a built-in data set ({})",
                names.join(", ")
            ),
        ));
    }
    match path.extension().and_then(|e| e.to_str()) {
        Some(ext) if ext.eq_ignore_ascii_case("arff") => arff::read_arff_file(path),
        _ => csv::read_csv_file(path),
    }
}

/// Reads a data file as text. Bytes that are not UTF-8 are the user's input problem
/// (exit 2), reported at their line like any other parse error.
pub(crate) fn read_text(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    String::from_utf8(bytes).map_err(|e| {
        let bytes = e.as_bytes();
        let at = e.utf8_error().valid_up_to();
        let line_start = bytes[..at]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |p| p + 1);
        Error::Parse {
            file: path.display().to_string(),
            line: bytes[..at].iter().filter(|&&b| b == b'\n').count() + 1,
            field: format!("byte {}", at - line_start + 1),
            problem: format!("0x{:02x} is not UTF-8 text", bytes[at]),
        }
    })
}
