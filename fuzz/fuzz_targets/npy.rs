//! `.npy` reader: any bytes parse to an array or an error; an accepted array has the
//! values its shape says, all finite, and the same values written again as
//! little-endian float64 read back identically.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mil_toolkit::data::npy::parse_npy;

fuzz_target!(|data: &[u8]| {
    let Ok((header, values)) = parse_npy("fuzz.npy", data) else {
        return;
    };
    assert_eq!(values.len(), header.rows() * header.cols());
    assert!(values.iter().all(|v| v.is_finite()));
    let shape = header
        .shape
        .iter()
        .map(|n| format!("{n},"))
        .collect::<String>();
    let dict = format!("{{'descr': '<f8', 'fortran_order': False, 'shape': ({shape}), }}\n");
    let mut again = b"\x93NUMPY\x01\x00".to_vec();
    again.extend((dict.len() as u16).to_le_bytes());
    again.extend(dict.as_bytes());
    again.extend(values.iter().flat_map(|v| v.to_le_bytes()));
    let (_, back) = parse_npy("again.npy", &again).unwrap();
    assert_eq!(back, values);
});
