//! Multi-instance ARFF reader: any text parses to a data set or an error; an accepted
//! set is sound and survives writing and reading back.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mil_toolkit::data::arff::{parse_arff, to_arff};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(d) = parse_arff("fuzz", text) else {
        return;
    };
    assert!(d.features().iter().all(|v| v.is_finite()));
    assert_eq!(d.features().len(), d.n_instances() * d.dim());
    assert_eq!(parse_arff("fuzz", &to_arff(&d)).unwrap(), d);
});
