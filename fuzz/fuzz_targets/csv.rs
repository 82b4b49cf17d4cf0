//! CSV reader: any text parses to a data set or an error; an accepted set is sound and
//! survives writing and reading back.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mil_toolkit::data::arff::{parse_arff, to_arff};
use mil_toolkit::data::csv::{parse_csv, to_csv};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(d) = parse_csv("fuzz", text) else {
        return;
    };
    assert!(d.features().iter().all(|v| v.is_finite()));
    assert_eq!(d.features().len(), d.n_instances() * d.dim());
    assert_eq!(parse_csv("fuzz", &to_csv(&d)).unwrap(), d);
    assert_eq!(parse_arff("fuzz", &to_arff(&d)).unwrap(), d);
});
