//! Writes float64 matrices in NumPy's `.npy` format, version 1.0 (the format is a magic
//! string, a little-endian u16 header length, a Python dict literal padded to a multiple
//! of 64 bytes, then the raw little-endian data: numpy/lib/format.py). Hand-written: the
//! whole format is these few lines, not worth a dependency.

/// The bytes of a C-order float64 array of shape `rows × cols`.
pub fn to_npy(rows: usize, cols: usize, data: &[f64]) -> Vec<u8> {
    debug_assert_eq!(rows * cols, data.len());
    let dict = format!("{{'descr': '<f8', 'fortran_order': False, 'shape': ({rows}, {cols}), }}");
    // magic (6) + version (2) + length (2) + dict + padding + '\n' ≡ 0 mod 64.
    let unpadded = 10 + dict.len() + 1;
    let padding = (64 - unpadded % 64) % 64;
    let header_len = dict.len() + padding + 1;
    let mut out = Vec::with_capacity(10 + header_len + 8 * data.len());
    out.extend_from_slice(b"\x93NUMPY\x01\x00");
    out.extend_from_slice(&(header_len as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.extend(std::iter::repeat_n(b' ', padding));
    out.push(b'\n');
    for v in data {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_is_aligned_and_data_round_trips() {
        let data = [1.5, -2.0, f64::MAX, 1e-300, 0.0, 7.25];
        let bytes = to_npy(2, 3, &data);
        assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00");
        let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
        assert_eq!((10 + header_len) % 64, 0);
        let header = std::str::from_utf8(&bytes[10..10 + header_len]).unwrap();
        assert!(header.starts_with("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }"));
        assert!(header.ends_with('\n'));
        let body = &bytes[10 + header_len..];
        let back: Vec<f64> = body
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(back, data);
    }
}
