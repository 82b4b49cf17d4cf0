//! Where every byte of a model lies. All integers are little-endian.
//!
//! | offset | size | header field |
//! |---|---|---|
//! | 0 | 4 | magic `MILM` ([`header::MAGIC`]) |
//! | 4 | 2 | format version ([`header::VERSION`]) |
//! | 6 | 1 | model kind ([`header::KIND`]) |
//! | 7 | 1 | scalar encoding ([`header::ENCODING`]) |
//! | 8 | 4 | input dimension D ([`header::INPUT_DIM`]) |
//! | 12 | 4 | output dimension: classes, clusters, or d for a bare projection ([`header::OUTPUT_DIM`]) |
//! | 16 | 4 | total length in bytes; trailing bytes after it (erased flash) are ignored ([`header::TOTAL_LEN`]) |
//! | 20 | 2 | number of sections ([`header::N_SECTIONS`]) |
//! | 22 | 2 | reserved, 0 ([`header::RESERVED_16`]) |
//! | 24 | 4 | CRC-32 (IEEE) of bytes `0..24` followed by bytes `28..total` ([`header::CHECKSUM`]) |
//! | 28 | 4 | reserved, 0 ([`header::RESERVED_32`]) |
//! | 32 | 16·n | the section table, entry i at [`entry_at`]`(i)` |
//!
//! | offset | size | section-table entry field |
//! |---|---|---|
//! | 0 | 2 | tag ([`entry::TAG`]) |
//! | 2 | 1 | element type ([`entry::ELEM`]) |
//! | 3 | 1 | reserved, 0 ([`entry::RESERVED`]) |
//! | 4 | 4 | payload offset from the start of the model ([`entry::OFFSET`]) |
//! | 8 | 4 | rows ([`entry::ROWS`]) |
//! | 12 | 4 | columns ([`entry::COLS`]) |
//!
//! Payloads follow the table, each at a multiple of [`ALIGN`] bytes, in ascending order
//! without overlap, and the model's length is a multiple of [`ALIGN`] too; the gaps are
//! zero. The reader ([`super::parse`]) and the writer ([`super::write()`]) both locate
//! fields through this module only, so they cannot disagree.

/// Bytes of the fixed header.
pub const HEADER_LEN: usize = 32;
/// Bytes of one section-table entry.
pub const ENTRY_LEN: usize = 16;
/// Alignment of every section payload, in bytes.
pub const ALIGN: usize = 4;

/// Offsets of the header fields.
pub mod header {
    /// The magic, 4 bytes.
    pub const MAGIC: usize = 0;
    /// Format version, `u16`.
    pub const VERSION: usize = 4;
    /// Model kind code, `u8`.
    pub const KIND: usize = 6;
    /// Scalar encoding code, `u8`.
    pub const ENCODING: usize = 7;
    /// Input dimension, `u32`.
    pub const INPUT_DIM: usize = 8;
    /// Output dimension, `u32`.
    pub const OUTPUT_DIM: usize = 12;
    /// Total length, `u32`.
    pub const TOTAL_LEN: usize = 16;
    /// Number of sections, `u16`.
    pub const N_SECTIONS: usize = 20;
    /// Reserved `u16`, 0.
    pub const RESERVED_16: usize = 22;
    /// CRC-32, `u32`: the one field the checksum skips.
    pub const CHECKSUM: usize = 24;
    /// Reserved `u32`, 0.
    pub const RESERVED_32: usize = 28;
}

/// Offsets of the fields of one section-table entry, from the entry's start.
pub mod entry {
    /// Tag, `u16`.
    pub const TAG: usize = 0;
    /// Element type code, `u8`.
    pub const ELEM: usize = 2;
    /// Reserved `u8`, 0.
    pub const RESERVED: usize = 3;
    /// Payload offset, `u32`.
    pub const OFFSET: usize = 4;
    /// Rows, `u32`.
    pub const ROWS: usize = 8;
    /// Columns, `u32`.
    pub const COLS: usize = 12;
}

/// Offset of section-table entry `i`.
pub const fn entry_at(i: usize) -> usize {
    HEADER_LEN + i * ENTRY_LEN
}

/// `n` rounded up to a multiple of [`ALIGN`] (saturating).
pub const fn align_up(n: usize) -> usize {
    n.saturating_add(ALIGN - 1) & !(ALIGN - 1)
}

/// Whether `offset` is a multiple of [`ALIGN`].
pub const fn is_aligned(offset: usize) -> bool {
    offset & (ALIGN - 1) == 0
}

/// The `u16` at `at`; 0 past the end.
pub fn u16_at(bytes: &[u8], at: usize) -> u16 {
    match bytes.get(at..at + 2) {
        Some(&[a, b]) => u16::from_le_bytes([a, b]),
        _ => 0,
    }
}

/// The `u32` at `at`; 0 past the end.
pub fn u32_at(bytes: &[u8], at: usize) -> u32 {
    match bytes.get(at..at + 4) {
        Some(&[a, b, c, d]) => u32::from_le_bytes([a, b, c, d]),
        _ => 0,
    }
}

/// Writes `v` at `at` (callers size `bytes` first: nothing is written past the end).
pub(crate) fn put_u16(bytes: &mut [u8], at: usize, v: u16) {
    if let Some(b) = bytes.get_mut(at..at + 2) {
        b.copy_from_slice(&v.to_le_bytes());
    }
}

/// Writes `v` at `at` (callers size `bytes` first: nothing is written past the end).
pub(crate) fn put_u32(bytes: &mut [u8], at: usize, v: u32) {
    if let Some(b) = bytes.get_mut(at..at + 4) {
        b.copy_from_slice(&v.to_le_bytes());
    }
}

/// CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320) continued from `crc`; start
/// with `0xFFFF_FFFF` and complement the result. Four bits at a time through a 64-byte
/// table: small in flash, about 8× faster than bit by bit.
pub fn crc32_update(mut crc: u32, bytes: &[u8]) -> u32 {
    const TABLE: [u32; 16] = {
        let mut t = [0u32; 16];
        let mut i = 0;
        while i < 16 {
            let mut c = i as u32;
            let mut k = 0;
            while k < 4 {
                c = if c & 1 != 0 {
                    (c >> 1) ^ 0xEDB8_8320
                } else {
                    c >> 1
                };
                k += 1;
            }
            t[i] = c;
            i += 1;
        }
        t
    };
    for &b in bytes {
        crc ^= b as u32;
        crc = (crc >> 4) ^ TABLE[(crc & 0xF) as usize];
        crc = (crc >> 4) ^ TABLE[(crc & 0xF) as usize];
    }
    crc
}

/// The checksum the header stores for these model bytes (`bytes` = the whole model):
/// every byte but the checksum field's own four.
pub fn model_checksum(bytes: &[u8]) -> u32 {
    let head = bytes.get(..header::CHECKSUM).unwrap_or(bytes);
    let tail = bytes.get(header::CHECKSUM + 4..).unwrap_or(&[]);
    !crc32_update(crc32_update(0xFFFF_FFFF, head), tail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_matches_the_standard_check_value() {
        // The CRC-32/ISO-HDLC check value of "123456789".
        assert_eq!(!crc32_update(0xFFFF_FFFF, b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn fields_tile_the_header_and_the_entry() {
        // Each field ends where the next begins.
        let h = [
            (header::MAGIC, 4),
            (header::VERSION, 2),
            (header::KIND, 1),
            (header::ENCODING, 1),
            (header::INPUT_DIM, 4),
            (header::OUTPUT_DIM, 4),
            (header::TOTAL_LEN, 4),
            (header::N_SECTIONS, 2),
            (header::RESERVED_16, 2),
            (header::CHECKSUM, 4),
            (header::RESERVED_32, 4),
        ];
        let e = [
            (entry::TAG, 2),
            (entry::ELEM, 1),
            (entry::RESERVED, 1),
            (entry::OFFSET, 4),
            (entry::ROWS, 4),
            (entry::COLS, 4),
        ];
        for (fields, len) in [(&h[..], HEADER_LEN), (&e[..], ENTRY_LEN)] {
            let end = fields.iter().fold(0, |at, &(offset, size)| {
                assert_eq!(offset, at);
                at + size
            });
            assert_eq!(end, len);
        }
        assert!(is_aligned(HEADER_LEN) && is_aligned(ENTRY_LEN));
        assert_eq!(
            (align_up(0), align_up(1), align_up(4), align_up(5)),
            (0, 4, 4, 8)
        );
    }
}
