//! Bags as a directory of NumPy `.npy` files, the layout feature extractors write: one
//! file `<bag>.npy` per bag (a 2-D array, instances × features, or a 1-D array, one
//! instance) and `labels.csv` (header `bag,label`, one row per bag). Bags come in the
//! order of `labels.csv`.
//!
//! The `.npy` reader is the format's own small grammar (magic, version, header length,
//! the Python dict literal of `descr`, `fortran_order` and `shape`), parsed strictly, and
//! streams each file's values through a small buffer into the data set's storage.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::dataset::Dataset;
use super::{show, show_all, MAX_FILE_BYTES};
use crate::error::{Error, Result};

/// The labels file of a `.npy` directory.
pub const LABELS_FILE: &str = "labels.csv";

/// The longest `.npy` header read (64 KiB). NumPy writes headers of under 200 bytes for
/// any 2-D array; a longer one is not an array of bags.
pub const MAX_HEADER_BYTES: usize = 1 << 16;

/// The magic string every `.npy` file starts with.
const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// The scalar type of a `.npy` array's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// IEEE binary floating point (`f4`, `f8`).
    Float,
    /// Signed integer (`i1` … `i8`).
    Int,
    /// Unsigned integer (`u1` … `u8`).
    Uint,
}

/// What a `.npy` header says about its array.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// The scalar type.
    pub kind: Kind,
    /// Bytes per value (4 or 8 for floats; 1, 2, 4 or 8 for integers).
    pub size: usize,
    /// Values are stored most significant byte first (`>`).
    pub big_endian: bool,
    /// Values are stored column by column (`fortran_order: True`).
    pub fortran_order: bool,
    /// The array's shape: one dimension (one instance) or two (instances × features).
    pub shape: Vec<usize>,
    /// Offset of the first value in the file.
    pub data_offset: u64,
}

impl Header {
    /// Instances (rows) of the bag.
    pub fn rows(&self) -> usize {
        if self.shape.len() == 1 {
            1
        } else {
            self.shape[0]
        }
    }

    /// Features (columns) of each instance.
    pub fn cols(&self) -> usize {
        self.shape[self.shape.len() - 1]
    }

    /// Bytes of the array's values.
    fn data_bytes(&self) -> u64 {
        // `parse_dict` checked that this product fits.
        (self.rows() * self.cols() * self.size) as u64
    }

    fn shape_text(&self) -> String {
        shape_text(&self.shape)
    }

    fn descr_text(&self) -> String {
        let order = if self.size == 1 {
            '|'
        } else if self.big_endian {
            '>'
        } else {
            '<'
        };
        let kind = match self.kind {
            Kind::Float => 'f',
            Kind::Int => 'i',
            Kind::Uint => 'u',
        };
        format!("{order}{kind}{}", self.size)
    }
}

fn shape_text(shape: &[usize]) -> String {
    match shape {
        [n] => format!("({n},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The error for a field of a `.npy` file (`magic`, `version`, `header`, `descr`,
/// `fortran_order`, `shape`, `data`).
fn bad(file: &str, field: &str, problem: impl std::fmt::Display) -> Error {
    Error::data(file, format!("{field}: {problem}"))
}

/// Reads a `.npy` header from `r` (positioned at the file's start); `file` names the
/// file in errors. Leaves `r` at the first value.
pub fn read_header(r: &mut impl Read, file: &str) -> Result<Header> {
    let mut lead = [0u8; 8];
    read_exact(
        r,
        &mut lead,
        file,
        "magic",
        "the file is shorter than a .npy preamble",
    )?;
    if &lead[..6] != MAGIC {
        return Err(bad(
            file,
            "magic",
            "not a .npy file: it does not start with \\x93NUMPY",
        ));
    }
    let (major, minor) = (lead[6], lead[7]);
    let len_bytes = match (major, minor) {
        (1, 0) => 2,
        (2, 0) | (3, 0) => 4,
        _ => {
            return Err(bad(
                file,
                "version",
                format!("format version {major}.{minor} is not read (1.0, 2.0 and 3.0 are)"),
            ))
        }
    };
    let mut len = [0u8; 4];
    read_exact(
        r,
        &mut len[..len_bytes],
        file,
        "header length",
        "the file ends inside the header length",
    )?;
    let header_len = u32::from_le_bytes(len) as usize;
    if header_len > MAX_HEADER_BYTES {
        return Err(bad(
            file,
            "header length",
            format!(
                "{header_len} bytes; headers are limited to {MAX_HEADER_BYTES} \
                 (mil_toolkit::data::npy::MAX_HEADER_BYTES)"
            ),
        ));
    }
    let mut text = vec![0u8; header_len];
    read_exact(
        r,
        &mut text,
        file,
        "header",
        format!("truncated: the file ends before the header's {header_len} bytes"),
    )?;
    let data_offset = (8 + len_bytes + header_len) as u64;
    parse_dict(&text, file, data_offset)
}

/// `read_exact`, an early end of the file being the user's `problem` in `field`.
fn read_exact(
    r: &mut impl Read,
    buf: &mut [u8],
    file: &str,
    field: &str,
    problem: impl std::fmt::Display,
) -> Result<()> {
    r.read_exact(buf).map_err(|e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            bad(file, field, problem)
        } else {
            Error::Io {
                path: PathBuf::from(file),
                source: e,
            }
        }
    })
}

/// Parses the header's dict literal: `{'descr': '<f8', 'fortran_order': False, 'shape':
/// (3, 4), }`, padded with spaces and ended by a line break. Exactly these three keys,
/// each once, in any order.
fn parse_dict(text: &[u8], file: &str, data_offset: u64) -> Result<Header> {
    if let Some(&b) = text.iter().find(|b| !b.is_ascii()) {
        return Err(bad(
            file,
            "header",
            format!("byte 0x{b:02x} is not ASCII; a .npy header is a Python dict literal"),
        ));
    }
    // ASCII checked above.
    let text = std::str::from_utf8(text).unwrap_or_default();
    let mut p = Cursor { text, at: 0, file };
    p.expect('{', "header")?;
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    loop {
        p.skip_space();
        if p.eat('}') {
            break;
        }
        let key = p.string("header")?;
        p.expect(':', "header")?;
        let seen = match key {
            "descr" => descr.replace(p.descr()?).is_some(),
            "fortran_order" => fortran.replace(p.boolean()?).is_some(),
            "shape" => shape.replace(p.shape()?).is_some(),
            other => {
                return Err(bad(
                    file,
                    "header",
                    format!(
                        "unknown key '{}' (a .npy header has 'descr', 'fortran_order' and \
                         'shape')",
                        show(other)
                    ),
                ))
            }
        };
        if seen {
            return Err(bad(file, "header", format!("key '{key}' appears twice")));
        }
        p.skip_space();
        if !p.eat(',') {
            p.expect('}', "header")?;
            break;
        }
    }
    if !p.rest().trim_matches([' ', '\n']).is_empty() {
        return Err(bad(
            file,
            "header",
            format!("`{}` after the dict", show(p.rest().trim())),
        ));
    }
    let missing = |key| bad(file, "header", format!("no '{key}' key"));
    let (kind, size, big_endian) = descr.ok_or_else(|| missing("descr"))?;
    let fortran_order = fortran.ok_or_else(|| missing("fortran_order"))?;
    let shape: Vec<usize> = shape.ok_or_else(|| missing("shape"))?;
    if shape.is_empty() || shape.len() > 2 {
        return Err(bad(
            file,
            "shape",
            format!(
                "{} has {} dimensions; a bag is a 2-D array (instances × features) or a 1-D \
                 array (one instance)",
                shape_text(&shape),
                shape.len()
            ),
        ));
    }
    let values = shape.iter().try_fold(size, |n, &d| n.checked_mul(d));
    if values.is_none_or(|bytes| bytes as u64 > MAX_FILE_BYTES) {
        return Err(bad(
            file,
            "shape",
            format!(
                "{} values of {size} bytes exceed the file size limit \
                 (mil_toolkit::data::MAX_FILE_BYTES)",
                shape_text(&shape)
            ),
        ));
    }
    Ok(Header {
        kind,
        size,
        big_endian,
        fortran_order,
        shape,
        data_offset,
    })
}

/// A position in a header's text.
struct Cursor<'a> {
    text: &'a str,
    at: usize,
    file: &'a str,
}

impl<'a> Cursor<'a> {
    fn rest(&self) -> &'a str {
        &self.text[self.at..]
    }

    fn skip_space(&mut self) {
        let rest = self.rest();
        self.at += rest.len() - rest.trim_start_matches([' ', '\n']).len();
    }

    fn eat(&mut self, c: char) -> bool {
        self.skip_space();
        if self.rest().starts_with(c) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    /// The error for something other than `wanted` at the cursor, in `field`.
    fn unexpected(&self, field: &str, wanted: &str) -> Error {
        let found: String = self.rest().chars().take(20).collect();
        let found = if found.is_empty() {
            "the end of the header".to_string()
        } else {
            format!("`{}`", show(&found))
        };
        bad(
            self.file,
            field,
            format!(
                "expected {wanted} at byte {} of the header, found {found}",
                self.at
            ),
        )
    }

    fn expect(&mut self, c: char, field: &str) -> Result<()> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(self.unexpected(field, &format!("`{c}`")))
        }
    }

    /// A quoted string without escapes.
    fn string(&mut self, field: &str) -> Result<&'a str> {
        self.skip_space();
        let rest = self.rest();
        let Some(quote) = rest.chars().next().filter(|c| *c == '\'' || *c == '"') else {
            return Err(self.unexpected(field, "a quoted string"));
        };
        let Some(len) = rest[1..].find(quote) else {
            return Err(self.unexpected(field, "a closed string"));
        };
        let s = &rest[1..1 + len];
        if s.contains('\\') {
            return Err(bad(
                self.file,
                field,
                format!("'{}' has an escape; no dtype needs one", show(s)),
            ));
        }
        self.at += len + 2;
        Ok(s)
    }

    /// The `descr` value: a little- or big-endian float (`f4`, `f8`) or integer.
    fn descr(&mut self) -> Result<(Kind, usize, bool)> {
        self.skip_space();
        if self.rest().starts_with('[') {
            return Err(bad(
                self.file,
                "descr",
                "a structured dtype (a list of fields) is not read; save a plain float array",
            ));
        }
        let d = self.string("descr")?;
        let refuse = |why: &str| {
            bad(
                self.file,
                "descr",
                format!(
                    "'{}' {why}; bags are float32 or float64 ('<f4', '<f8', '>f4', '>f8'), or \
                     integers",
                    show(d)
                ),
            )
        };
        let mut chars = d.chars();
        let (Some(order), Some(kind)) = (chars.next(), chars.next()) else {
            return Err(refuse("is not a dtype"));
        };
        let size: usize = chars.as_str().parse().map_err(|_| refuse("is not read"))?;
        let kind = match kind {
            'f' if size == 4 || size == 8 => Kind::Float,
            'i' if matches!(size, 1 | 2 | 4 | 8) => Kind::Int,
            'u' if matches!(size, 1 | 2 | 4 | 8) => Kind::Uint,
            'O' => {
                return Err(refuse(
                    "is an object array (pickled Python objects), which is not read",
                ))
            }
            _ => return Err(refuse("is not read")),
        };
        let big_endian = match order {
            '<' => false,
            '>' => true,
            '|' if size == 1 => false,
            _ => return Err(refuse("has no byte order ('<' or '>')")),
        };
        Ok((kind, size, big_endian))
    }

    fn boolean(&mut self) -> Result<bool> {
        self.skip_space();
        for (word, value) in [("True", true), ("False", false)] {
            if self.rest().starts_with(word) {
                self.at += word.len();
                return Ok(value);
            }
        }
        Err(self.unexpected("fortran_order", "True or False"))
    }

    /// A tuple of sizes: `()`, `(n,)`, `(n, m)`, …
    fn shape(&mut self) -> Result<Vec<usize>> {
        self.expect('(', "shape")?;
        let mut dims = Vec::new();
        loop {
            self.skip_space();
            if self.eat(')') {
                return Ok(dims);
            }
            let rest = self.rest();
            let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            let n: usize = rest[..digits]
                .parse()
                .map_err(|_| self.unexpected("shape", "a size"))?;
            self.at += digits;
            dims.push(n);
            if !self.eat(',') {
                self.expect(')', "shape")?;
                if dims.len() == 1 {
                    // `(n)` is a number, not a tuple; NumPy writes `(n,)`.
                    return Err(bad(self.file, "shape", format!("({n}) is not a tuple")));
                }
                return Ok(dims);
            }
        }
    }
}

/// Reads the values of the array `header` describes from `r` (positioned at the first
/// value) into `out`, which holds exactly `rows × cols` values, row-major: a C-order
/// array row by row, a Fortran-order one column by column, through a 64 KiB buffer.
/// Integers become the nearest `f64`. A value that is not finite is refused with its
/// row and column, an array cut short or followed by more bytes with its size.
pub fn read_values(r: &mut impl Read, header: &Header, file: &str, out: &mut [f64]) -> Result<()> {
    let (rows, cols) = (header.rows(), header.cols());
    debug_assert_eq!(out.len(), rows * cols);
    let size = header.size;
    let total = rows * cols;
    let mut buf = vec![0u8; (1 << 16) / 8 * size];
    let mut done = 0;
    while done < total {
        let n = (total - done).min(buf.len() / size);
        read_exact(
            r,
            &mut buf[..n * size],
            file,
            "data",
            format!(
                "truncated: shape {} of '{}' needs {} bytes after the header",
                header.shape_text(),
                header.descr_text(),
                header.data_bytes()
            ),
        )?;
        for (k, bytes) in buf[..n * size].chunks_exact(size).enumerate() {
            let v = decode(header, bytes);
            let index = done + k;
            let (row, col) = if header.fortran_order {
                (index % rows, index / rows)
            } else {
                (index / cols, index % cols)
            };
            if !v.is_finite() {
                let at = if header.shape.len() == 1 {
                    format!("[{col}]")
                } else {
                    format!("[{row}, {col}]")
                };
                return Err(bad(
                    file,
                    "data",
                    format!(
                        "array{at} (instance {}, feature {}) is {v}; values must be finite",
                        row + 1,
                        col + 1
                    ),
                ));
            }
            out[row * cols + col] = v;
        }
        done += n;
    }
    let mut extra = [0u8; 1];
    loop {
        match r.read(&mut extra) {
            Ok(0) => return Ok(()),
            Ok(_) => {
                return Err(bad(
                    file,
                    "data",
                    format!(
                        "bytes after the array: shape {} of '{}' is {} bytes after the header",
                        header.shape_text(),
                        header.descr_text(),
                        header.data_bytes()
                    ),
                ))
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(Error::Io {
                    path: PathBuf::from(file),
                    source: e,
                })
            }
        }
    }
}

/// One value of `header`'s type from its `header.size` bytes.
fn decode(header: &Header, bytes: &[u8]) -> f64 {
    let mut b = [0u8; 8];
    b[..bytes.len()].copy_from_slice(bytes);
    if header.big_endian {
        b[..bytes.len()].reverse();
    }
    // `b` now holds the value little-endian in its first `size` bytes.
    match (header.kind, header.size) {
        (Kind::Float, 4) => f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        (Kind::Float, _) => f64::from_le_bytes(b),
        (Kind::Uint, _) => u64::from_le_bytes(b) as f64,
        (Kind::Int, size) => {
            // Sign-extend from `size` bytes.
            let shift = 64 - 8 * size as u32;
            ((i64::from_le_bytes(b) << shift) >> shift) as f64
        }
    }
}

/// Reads one `.npy` array from `bytes` (a whole file): its header and its values,
/// row-major. What the directory reader does per file, for tests and fuzzing.
pub fn parse_npy(file: &str, bytes: &[u8]) -> Result<(Header, Vec<f64>)> {
    let mut r = bytes;
    let header = read_header(&mut r, file)?;
    if header.data_bytes() > r.len() as u64 {
        return Err(truncated(file, &header, r.len() as u64));
    }
    let mut values = vec![0.0; header.rows() * header.cols()];
    read_values(&mut r, &header, file, &mut values)?;
    Ok((header, values))
}

fn truncated(file: &str, header: &Header, have: u64) -> Error {
    bad(
        file,
        "data",
        format!(
            "truncated: shape {} of '{}' needs {} bytes after the header; the file has {have}",
            header.shape_text(),
            header.descr_text(),
            header.data_bytes()
        ),
    )
}

/// A row of `labels.csv`.
struct LabelRow {
    line: usize,
    bag: String,
    label: String,
}

/// Reads a directory of `.npy` bags and its `labels.csv` (see the module comment).
///
/// Every row of `labels.csv` needs its file and every `.npy` file its row: a file
/// without a label is refused, naming it, rather than left out, since a bag dropped
/// silently (a typo in an id, a file copied in late) changes the data set without a
/// word. Other files (notes, scripts) are ignored. The directory's `.npy` files
/// together are limited to [`MAX_FILE_BYTES`], as one data file is, and checked before
/// any value is read; then each file is read once, through a small buffer, into the
/// data set's storage, reserved exactly from the headers.
pub fn read_npy_dir(dir: &Path) -> Result<Dataset> {
    let name = show_all(&dir.display().to_string());
    let labels_path = dir.join(LABELS_FILE);
    if !labels_path.is_file() {
        return Err(Error::data(
            &name,
            format!(
                "a directory is read as .npy bags and needs {LABELS_FILE} (header `bag,label`, \
                 one row per bag); there is none"
            ),
        ));
    }
    let labels_name = show_all(&labels_path.display().to_string());
    let rows = read_labels(&labels_path, &labels_name)?;
    refuse_unlabelled_files(dir, &rows)?;

    // First pass: the headers, to check shapes and sizes and to reserve the storage.
    let mut headers = Vec::with_capacity(rows.len());
    let mut total_bytes = 0u64;
    let mut first: Option<(String, usize)> = None;
    for row in &rows {
        let path = dir.join(format!("{}.npy", row.bag));
        let file = show_all(&path.display().to_string());
        if !path.exists() {
            return Err(Error::Parse {
                file: labels_name.clone(),
                line: row.line,
                field: "column 1 (bag)".into(),
                problem: format!("bag `{}` has no file {file}", show(&row.bag)),
            });
        }
        let (header, len) = open_npy(&path, &file, read_header)?;
        if header.rows() == 0 {
            return Err(bad(
                &file,
                "shape",
                format!(
                    "{} has no instances; a bag needs at least one",
                    header.shape_text()
                ),
            ));
        }
        if header.cols() == 0 {
            return Err(bad(
                &file,
                "shape",
                format!("{} has no features", header.shape_text()),
            ));
        }
        match &first {
            None => first = Some((file.clone(), header.cols())),
            Some((other, cols)) if *cols != header.cols() => {
                return Err(bad(
                    &file,
                    "shape",
                    format!(
                        "{} has {} features but {other} has {cols}; every bag needs the same",
                        header.shape_text(),
                        header.cols()
                    ),
                ));
            }
            _ => {}
        }
        let have = len.saturating_sub(header.data_offset);
        if have < header.data_bytes() {
            return Err(truncated(&file, &header, have));
        }
        total_bytes += len;
        if total_bytes > MAX_FILE_BYTES {
            return Err(Error::data(
                &name,
                format!(
                    "the .npy files are more than {} together; a data set is limited to \
                     that (mil_toolkit::data::MAX_FILE_BYTES)",
                    super::bytes_text(MAX_FILE_BYTES)
                ),
            ));
        }
        headers.push(header);
    }
    let dim = first.map_or(0, |(_, cols)| cols);
    let n_instances: usize = headers.iter().map(Header::rows).sum();

    // Second pass: the values, straight into place.
    let mut features = Vec::new();
    // Fallible: a directory of float32 values needs twice its size, which the machine may
    // not have; that is an error naming the need, not an abort.
    features.try_reserve_exact(n_instances * dim).map_err(|_| {
        Error::data(
            &name,
            format!(
                "the data set needs {} of memory for its {} values, which could not be allocated",
                super::bytes_text((n_instances * dim * 8) as u64),
                n_instances * dim
            ),
        )
    })?;
    let mut bag_starts = Vec::with_capacity(rows.len() + 1);
    bag_starts.push(0);
    for (row, expected) in rows.iter().zip(&headers) {
        let path = dir.join(format!("{}.npy", row.bag));
        let file = show_all(&path.display().to_string());
        let start = features.len();
        features.resize(start + expected.rows() * dim, 0.0);
        open_npy(&path, &file, |r, file| {
            let header = read_header(r, file)?;
            if header != *expected {
                return Err(Error::data(
                    file,
                    "the file changed while the directory was read",
                ));
            }
            read_values(r, &header, file, &mut features[start..])
        })?;
        bag_starts.push(features.len() / dim);
    }
    let raw: Vec<&str> = rows.iter().map(|r| r.label.as_str()).collect();
    let (labels, class_names) = super::bag_book::index_labels(&labels_name, &raw)?;
    let ids = rows.into_iter().map(|r| r.bag).collect();
    Dataset::new(name, dim, features, bag_starts, ids, labels, class_names)
}

/// Opens the `.npy` file at `path` (`file` in errors), refusing what is not a regular
/// file or is over [`MAX_FILE_BYTES`], and runs `read` on it; returns what `read`
/// returns and the file's length.
fn open_npy<T>(
    path: &Path,
    file: &str,
    read: impl FnOnce(&mut std::io::Take<std::fs::File>, &str) -> Result<T>,
) -> Result<(T, u64)> {
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let f = std::fs::File::open(path).map_err(io)?;
    let meta = f.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(Error::data(
            file,
            "not a regular file; a bag is a .npy file",
        ));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(Error::data(
            file,
            format!(
                "the file is {}; data files are limited to {} (mil_toolkit::data::MAX_FILE_BYTES)",
                super::bytes_text(meta.len()),
                super::bytes_text(MAX_FILE_BYTES)
            ),
        ));
    }
    // Never more than the size seen, should the file grow while read.
    let mut r = f.take(meta.len());
    Ok((read(&mut r, file)?, meta.len()))
}

/// Reads `labels.csv`: the header `bag,label`, then `bag,label` rows; a bag id is a
/// file name without `.npy` and appears once, a label is an integer or `?`.
fn read_labels(path: &Path, file: &str) -> Result<Vec<LabelRow>> {
    let mut rows: Vec<LabelRow> = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut header = false;
    let err = |line: usize, field: &str, problem: String| Error::Parse {
        file: file.to_string(),
        line,
        field: field.to_string(),
        problem,
    };
    super::for_each_line(path, |line, text| {
        let text = text.trim();
        if text.is_empty() {
            return Ok(());
        }
        let fields: Vec<&str> = text.split(',').map(str::trim).collect();
        if !header {
            if fields != ["bag", "label"] {
                return Err(err(
                    line,
                    "header",
                    format!("`{}`; the first line must be `bag,label`", show(text)),
                ));
            }
            header = true;
            return Ok(());
        }
        let [bag, label] = fields[..] else {
            return Err(err(
                line,
                "row",
                format!("{} fields; a row is `bag,label`", fields.len()),
            ));
        };
        if bag.is_empty()
            || bag == "."
            || bag == ".."
            || bag.contains(['/', '\\'])
            || bag.chars().any(char::is_control)
        {
            return Err(err(
                line,
                "column 1 (bag)",
                format!("`{}` is not a file name (without .npy)", show(bag)),
            ));
        }
        if label != "?" && label.parse::<i64>().is_err() {
            return Err(err(
                line,
                "column 2 (label)",
                format!("`{}` is not an integer class label or `?`", show(label)),
            ));
        }
        if let Some(earlier) = seen.insert(bag.to_string(), line) {
            return Err(err(
                line,
                "column 1 (bag)",
                format!("bag `{}` is already on line {earlier}", show(bag)),
            ));
        }
        rows.push(LabelRow {
            line,
            bag: bag.to_string(),
            label: label.to_string(),
        });
        Ok(())
    })?;
    if rows.is_empty() {
        return Err(Error::data(
            file,
            "no bags (the file has no rows after `bag,label`)",
        ));
    }
    Ok(rows)
}

/// Refuses a `.npy` file of `dir` that no row of `labels.csv` names.
fn refuse_unlabelled_files(dir: &Path, rows: &[LabelRow]) -> Result<()> {
    let io = |source| Error::Io {
        path: dir.to_path_buf(),
        source,
    };
    let listed: std::collections::HashSet<&str> = rows.iter().map(|r| r.bag.as_str()).collect();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        if path.extension().and_then(|e| e.to_str()) != Some("npy") {
            continue;
        }
        let stem = path.file_stem().map(|s| s.to_string_lossy());
        if !stem.is_some_and(|s| listed.contains(&*s)) {
            return Err(Error::data(
                &show_all(&path.display().to_string()),
                format!(
                    "no row of {LABELS_FILE} names this bag; add it, or move the file out of \
                     the directory"
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `.npy` file as NumPy writes it: `descr`, `fortran_order`, `shape` and the data
    /// bytes, version `version` (1, 2 or 3), header padded to a multiple of 64.
    fn npy(version: u8, descr: &str, fortran: bool, shape: &str, data: &[u8]) -> Vec<u8> {
        let fortran = if fortran { "True" } else { "False" };
        let mut dict =
            format!("{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {shape}, }}");
        let lead = if version == 1 { 10 } else { 12 };
        while (lead + dict.len() + 1) % 64 != 0 {
            dict.push(' ');
        }
        dict.push('\n');
        let mut out = MAGIC.to_vec();
        out.extend([version, 0]);
        if version == 1 {
            out.extend((dict.len() as u16).to_le_bytes());
        } else {
            out.extend((dict.len() as u32).to_le_bytes());
        }
        out.extend(dict.as_bytes());
        out.extend(data);
        out
    }

    fn f8(values: &[f64]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    fn message(r: Result<(Header, Vec<f64>)>) -> String {
        r.unwrap_err().to_string()
    }

    #[test]
    fn reads_every_float_layout_to_the_same_values() {
        // [[1, 2, 3], [4, 5, 6]] in each layout.
        let c: Vec<f64> = vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let fortran: [f64; 6] = [1.0, 4.0, 2.0, 5.0, 3.0, 6.0];
        let f4le: Vec<u8> = c.iter().flat_map(|&v| (v as f32).to_le_bytes()).collect();
        let f4be: Vec<u8> = c.iter().flat_map(|&v| (v as f32).to_be_bytes()).collect();
        let f8be: Vec<u8> = fortran.iter().flat_map(|v| v.to_be_bytes()).collect();
        let i2: Vec<u8> = c.iter().flat_map(|&v| (v as i16).to_le_bytes()).collect();
        for bytes in [
            npy(1, "<f8", false, "(2, 3)", &f8(&c)),
            npy(3, "<f8", true, "(2, 3)", &f8(&fortran)),
            npy(2, "<f4", false, "(2, 3)", &f4le),
            npy(1, ">f4", false, "(2, 3)", &f4be),
            npy(1, ">f8", true, "(2, 3)", &f8be),
            npy(1, "<i2", false, "(2, 3)", &i2),
        ] {
            let (header, values) = parse_npy("t.npy", &bytes).unwrap();
            assert_eq!((header.rows(), header.cols()), (2, 3));
            assert_eq!(values, c);
        }
    }

    #[test]
    fn integers_and_one_dimension() {
        let (h, v) =
            parse_npy("t.npy", &npy(1, "<i1", false, "(3,)", &[0xff, 0x7f, 0x80])).unwrap();
        assert_eq!((h.rows(), h.cols()), (1, 3));
        assert_eq!(v, [-1.0, 127.0, -128.0]);
        let (_, v) = parse_npy("t.npy", &npy(1, "|u1", false, "(1, 2)", &[0xff, 7])).unwrap();
        assert_eq!(v, [255.0, 7.0]);
        let big: Vec<u8> = (-3i64).to_be_bytes().to_vec();
        let (_, v) = parse_npy("t.npy", &npy(1, ">i8", false, "(1, 1)", &big)).unwrap();
        assert_eq!(v, [-3.0]);
    }

    #[test]
    fn malformed_files_name_the_field() {
        let good = npy(1, "<f8", false, "(1, 2)", &f8(&[1.0, 2.0]));
        let mut bad_magic = good.clone();
        bad_magic[1] = b'M';
        let mut version = good.clone();
        version[6] = 4;
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (bad_magic, "magic"),
            (good[..5].to_vec(), "magic"),
            (version, "version"),
            (good[..9].to_vec(), "header length"),
            (good[..40].to_vec(), "header"),
            (good[..good.len() - 1].to_vec(), "data"),
            ([good.clone(), vec![0]].concat(), "data"),
            (npy(1, "<c16", false, "(1, 2)", &[0; 32]), "descr"),
            (npy(1, "|O", false, "(1, 2)", &[]), "descr"),
            (npy(1, "f8", false, "(1, 2)", &[]), "descr"),
            (npy(1, "<f2", false, "(1, 2)", &[0; 4]), "descr"),
            (npy(1, "<f8", false, "(1, 2, 1)", &[0; 16]), "shape"),
            (npy(1, "<f8", false, "()", &[0; 8]), "shape"),
            (npy(1, "<f8", false, "(2)", &[0; 16]), "shape"),
            (
                npy(1, "<f8", false, "(99999999999, 99999999999)", &[]),
                "shape",
            ),
            (
                npy(1, "<f8", false, "(1, 2)", &f8(&[1.0, f64::NAN])),
                "data",
            ),
        ];
        for (bytes, field) in cases {
            let m = message(parse_npy("t.npy", &bytes));
            assert!(m.starts_with(&format!("t.npy: {field}: ")), "{field}: {m}");
        }
        let m = message(parse_npy(
            "t.npy",
            &npy(
                1,
                "<f8",
                true,
                "(2, 2)",
                &f8(&[1.0, 2.0, f64::INFINITY, 4.0]),
            ),
        ));
        assert!(
            m.contains("array[0, 1] (instance 1, feature 2) is inf"),
            "{m}"
        );
    }

    #[test]
    fn header_dicts_are_read_strictly() {
        let with = |dict: &str| {
            let mut out = MAGIC.to_vec();
            out.extend([1, 0]);
            out.extend((dict.len() as u16).to_le_bytes());
            out.extend(dict.as_bytes());
            out.extend(f8(&[1.0]));
            out
        };
        // Keys in any order, double quotes, no trailing comma.
        let ok = with("{\"shape\": (1,), 'fortran_order': False, 'descr': '<f8'}\n");
        assert_eq!(parse_npy("t.npy", &ok).unwrap().1, [1.0]);
        for dict in [
            "{'descr': '<f8', 'fortran_order': False}\n",
            "{'descr': '<f8', 'descr': '<f8', 'fortran_order': False, 'shape': (1,)}\n",
            "{'descr': '<f8', 'fortran_order': 0, 'shape': (1,)}\n",
            "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), 'x': 1}\n",
            "{'descr': [('a', '<f8')], 'fortran_order': False, 'shape': (1,)}\n",
            "{'descr': '<f8', 'fortran_order': False, 'shape': (1,)} x\n",
            "{'descr': '<f8', 'fortran_order': False, 'shape': (-1,)}\n",
            "{'descr': '<f8\\n', 'fortran_order': False, 'shape': (1,)}\n",
            "{'descr': '<f8', 'fortran_order': False, 'shape': (1,)\n",
        ] {
            let m = message(parse_npy("t.npy", &with(dict)));
            assert!(m.starts_with("t.npy: "), "{dict}: {m}");
        }
    }

    fn scratch(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("mil-npy-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn the_fixture_directory_equals_its_csv() {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures");
        let from_npy = read_npy_dir(&fixtures.join("npy")).unwrap();
        let from_csv = super::super::csv::read_csv_file(&fixtures.join("npy.csv")).unwrap();
        assert_eq!(from_npy.bag_ids(), from_csv.bag_ids());
        assert_eq!(from_npy.bag_starts(), from_csv.bag_starts());
        assert_eq!(from_npy.labels(), from_csv.labels());
        assert_eq!(from_npy.class_names(), from_csv.class_names());
        assert_eq!(from_npy.features(), from_csv.features());
    }

    #[test]
    fn a_directory_reads_in_label_order() {
        let dir = scratch("order");
        std::fs::write(
            dir.join("b.npy"),
            npy(1, "<f8", false, "(2, 2)", &f8(&[1.0, 2.0, 3.0, 4.0])),
        )
        .unwrap();
        std::fs::write(
            dir.join("a.npy"),
            npy(3, "<f8", false, "(2,)", &f8(&[5.0, 6.0])),
        )
        .unwrap();
        std::fs::write(dir.join("notes.txt"), "not a bag").unwrap();
        std::fs::write(dir.join(LABELS_FILE), "bag,label\nb,1\n\na,0\n").unwrap();
        let d = read_npy_dir(&dir).unwrap();
        let csv =
            super::super::csv::parse_csv(&dir.display().to_string(), "1,b,1,2\n1,b,3,4\n0,a,5,6\n")
                .unwrap();
        assert_eq!(d, csv);

        // A file with no label row, a label row with no file, a duplicate id.
        std::fs::write(
            dir.join("c.npy"),
            npy(1, "<f8", false, "(2,)", &f8(&[5.0, 6.0])),
        )
        .unwrap();
        let m = read_npy_dir(&dir).unwrap_err().to_string();
        assert!(
            m.contains("c.npy") && m.contains("no row of labels.csv"),
            "{m}"
        );
        std::fs::write(dir.join(LABELS_FILE), "bag,label\nb,1\na,0\nc,0\nd,1\n").unwrap();
        let m = read_npy_dir(&dir).unwrap_err().to_string();
        assert!(
            m.contains("labels.csv:5: column 1 (bag)") && m.contains("d.npy"),
            "{m}"
        );
        std::fs::write(dir.join(LABELS_FILE), "bag,label\nb,1\na,0\nc,0\nb,1\n").unwrap();
        let m = read_npy_dir(&dir).unwrap_err().to_string();
        assert!(
            m.contains("labels.csv:5: column 1 (bag)") && m.contains("line 2"),
            "{m}"
        );
        // Features that disagree name both files.
        std::fs::write(
            dir.join("c.npy"),
            npy(1, "<f8", false, "(3,)", &f8(&[5.0, 6.0, 7.0])),
        )
        .unwrap();
        std::fs::write(dir.join(LABELS_FILE), "bag,label\nb,1\na,0\nc,0\n").unwrap();
        let m = read_npy_dir(&dir).unwrap_err().to_string();
        assert!(
            m.contains("c.npy: shape") && m.contains("b.npy has 2"),
            "{m}"
        );
        // No instances.
        std::fs::write(dir.join("c.npy"), npy(1, "<f8", false, "(0, 2)", &[])).unwrap();
        let m = read_npy_dir(&dir).unwrap_err().to_string();
        assert!(m.contains("c.npy: shape: (0, 2) has no instances"), "{m}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn labels_csv_is_checked() {
        let dir = scratch("labels");
        std::fs::write(dir.join("a.npy"), npy(1, "<f8", false, "(1,)", &f8(&[1.0]))).unwrap();
        for (text, at) in [
            ("a,1\n", "labels.csv:1: header"),
            ("bag,label\na,1,2\n", "labels.csv:2: row"),
            ("bag,label\na,x\n", "labels.csv:2: column 2 (label)"),
            ("bag,label\n../a,1\n", "labels.csv:2: column 1 (bag)"),
            ("bag,label\n", "no bags"),
        ] {
            std::fs::write(dir.join(LABELS_FILE), text).unwrap();
            let m = read_npy_dir(&dir).unwrap_err().to_string();
            assert!(m.contains(at), "{text:?}: {m}");
        }
        std::fs::remove_file(dir.join(LABELS_FILE)).unwrap();
        let e = read_npy_dir(&dir).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("needs labels.csv"), "{e}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
