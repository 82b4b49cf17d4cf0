//! Bag data: the data set type, file formats, shipped sets, synthetic generators and
//! standardisation.

pub mod builtin;
pub mod csv;
pub mod dataset;
pub mod standardize;

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
        Some(ext) if ext.eq_ignore_ascii_case("arff") => {
            Err(Error::NotAvailable("reading ARFF".into()))
        }
        _ => csv::read_csv_file(path),
    }
}
