//! Bag data: the data set type, file formats, shipped sets, synthetic generators and
//! standardisation.

pub mod arff;
mod bag_book;
pub mod bags;
pub mod builtin;
pub mod csv;
pub mod dataset;
pub mod npy;
pub mod standardize;
pub mod synth;

use std::path::Path;

pub use bags::Bags;
pub use dataset::{Bag, Dataset};

use crate::error::{Error, Result};

/// Loads `DATA` as the CLI understands it: a `.csv` file, a Weka multi-instance `.arff`
/// file, a directory of `.npy` bags with its `labels.csv` ([`npy`]), or a built-in name
/// when no file of that name exists.
pub fn load(spec: &str) -> Result<Dataset> {
    let path = Path::new(spec);
    // A file wins over a built-in set of the same name: the user named what is there.
    if !path.exists() {
        if let Some(builtin) = builtin::find(spec) {
            return csv::parse_csv(builtin.name, builtin.csv);
        }
        let names: Vec<&str> = builtin::BUILTINS.iter().map(|b| b.name).collect();
        return Err(Error::data(
            spec,
            format!(
                "no such file, and not a built-in data set ({})",
                names.join(", ")
            ),
        ));
    }
    if path.is_dir() {
        return npy::read_npy_dir(path);
    }
    match path.extension().and_then(|e| e.to_str()) {
        Some(ext) if ext.eq_ignore_ascii_case("arff") => arff::read_arff_file(path),
        _ => csv::read_csv_file(path),
    }
}

/// DATA as a saved model records it: a file by its absolute path, so that reading it
/// again from another working directory finds the same file, and a built-in name as is
/// (as [`load`] does, a file of that name wins).
pub fn recorded_spec(spec: &str) -> String {
    match std::fs::canonicalize(spec) {
        Ok(path) => path.display().to_string(),
        Err(_) => spec.to_string(),
    }
}

/// The largest data file the readers accept (2 GiB), and the most a directory of `.npy`
/// bags holds in its `.npy` files together ([`npy`]). The CSV and ARFF readers hold one
/// line (an ARFF record) at a time besides the data set they build: 8 bytes per value,
/// which is less than twice the file unless values are written in fewer than 4
/// characters each.
pub const MAX_FILE_BYTES: u64 = 2 << 30;

/// The longest line the readers accept (16 MiB). An ARFF row holds a whole bag, so its
/// line can be long, but a line this long is a binary or runaway file, such as
/// `/dev/zero`, and is refused as soon as it is seen rather than read to the end.
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// Reads a data file as UTF-8 text, within [`MAX_FILE_BYTES`] and [`MAX_LINE_BYTES`].
///
/// Everything wrong with the file's content or kind is the user's input problem (exit 2)
/// and names the file: a directory, a file over the size limit (with its size), a line
/// over the length limit (with its number), bytes that are not UTF-8 (with their line,
/// column and offset). The file is read in pieces and checked as it comes, so endless
/// inputs (`/dev/zero`, a pipe) are refused after at most the limit, not read until
/// memory runs out. Only failures of the operating system are [`Error::Io`].
pub fn read_text(path: &Path) -> Result<String> {
    let file_name = show_all(&path.display().to_string());
    let mut scan = TextScan::default();
    let bytes = read_limited(
        path,
        (MAX_FILE_BYTES, "MAX_FILE_BYTES"),
        "a .csv or .arff data file",
        "data",
        |bytes| scan.advance(bytes, &file_name),
    )?;
    scan.finish(&bytes, &file_name)?;
    // `scan` has checked every byte.
    String::from_utf8(bytes)
        .map_err(|e| Error::data(&file_name, format!("not UTF-8 text: {}", e.utf8_error())))
}

/// The largest JSON file the tool reads — a saved model, a cluster model, a `mil cv` or
/// `mil gram` part (1 GiB): a model stores its training bags (and an SVM its Gram
/// matrix), so it may be large, but it is one JSON value on one line, which
/// [`read_text`]'s line limit would refuse.
pub const MAX_JSON_BYTES: u64 = 1 << 30;

/// Reads a JSON file written by the tool (`what` names its kind in errors), within
/// [`MAX_JSON_BYTES`]. A file whose first non-blank byte cannot start a JSON object
/// (`/dev/zero`, a data file given as a model) is refused after its first piece, an
/// endless input after the limit, never read until memory runs out.
pub fn read_json_text(path: &Path, what: &str) -> Result<String> {
    let file_name = show_all(&path.display().to_string());
    let mut started = false;
    let bytes = read_limited(
        path,
        (MAX_JSON_BYTES, "MAX_JSON_BYTES"),
        what,
        what,
        |bytes| {
            if started {
                return Ok(());
            }
            match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
                None => Ok(()),
                Some(b'{') => {
                    started = true;
                    Ok(())
                }
                Some(&b) => Err(Error::data(
                    &file_name,
                    format!("not {what}: it starts with byte 0x{b:02x}, not a JSON object"),
                )),
            }
        },
    )?;
    String::from_utf8(bytes).map_err(|e| {
        Error::data(
            &file_name,
            format!("not {what}: not UTF-8 text: {}", e.utf8_error()),
        )
    })
}

/// Reads the file at `path` in pieces, refusing a directory (the file should be
/// `expected`) and a file of more than `limit` bytes (`kind` files are limited to it;
/// the limit is the crate's constant of the given name),
/// also when it is not a regular file and only grows as it is read (`/dev/zero`, a
/// pipe). `check` sees the bytes read so far after every piece, so a wrong input is
/// refused as soon as it shows. Only failures of the operating system are
/// [`Error::Io`].
fn read_limited(
    path: &Path,
    limit: (u64, &str),
    expected: &str,
    kind: &str,
    mut check: impl FnMut(&[u8]) -> Result<()>,
) -> Result<Vec<u8>> {
    let mut bytes: Vec<u8> = Vec::new();
    read_chunks(path, limit, expected, kind, &mut bytes, |bytes, chunk| {
        bytes.extend_from_slice(chunk);
        check(bytes)
    })?;
    Ok(bytes)
}

/// [`read_limited`]'s checks and reading, each piece given to `each` with `state` (into
/// which a regular file's size is reserved when `state` is a `Vec<u8>`, as a hint).
fn read_chunks<S: ReserveHint>(
    path: &Path,
    (limit, limit_name): (u64, &str),
    expected: &str,
    kind: &str,
    state: &mut S,
    mut each: impl FnMut(&mut S, &[u8]) -> Result<()>,
) -> Result<()> {
    let file_name = show_all(&path.display().to_string());
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let directory = || Error::data(&file_name, format!("is a directory; give {expected}"));
    if path.is_dir() {
        return Err(directory());
    }
    let mut file = std::fs::File::open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if meta.is_dir() {
        return Err(directory());
    }
    let too_large = |size: String| {
        Error::data(
            &file_name,
            format!(
                "the file is {size}; {kind} files are limited to {} (mil_toolkit::data::{limit_name})",
                bytes_text(limit)
            ),
        )
    };
    if meta.is_file() && meta.len() > limit {
        return Err(too_large(bytes_text(meta.len())));
    }
    if meta.is_file() {
        state.reserve_hint(meta.len() as usize + 1);
    }
    let mut chunk = vec![0u8; 1 << 16];
    let mut read = 0u64;
    loop {
        let n = match std::io::Read::read(&mut file, &mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io(e)),
        };
        read += n as u64;
        if read > limit {
            // Grew while read, or not a regular file (a pipe, a device).
            return Err(too_large(format!("more than {}", bytes_text(limit))));
        }
        each(state, &chunk[..n])?;
    }
    Ok(())
}

/// Room for a whole file, where the reader keeps one.
trait ReserveHint {
    fn reserve_hint(&mut self, _bytes: usize) {}
}

impl ReserveHint for Vec<u8> {
    fn reserve_hint(&mut self, bytes: usize) {
        self.reserve_exact(bytes);
    }
}

/// Calls `each` with every line of the data file at `path` (its 1-based number and its
/// text), as the file is read: with [`read_text`]'s limits and checks and
/// [`normalize_text`]'s line endings and byte-order mark, but holding one line at a time
/// rather than the file, so that a reader's memory is the data set it builds.
pub(crate) fn for_each_line(
    path: &Path,
    mut each: impl FnMut(usize, &str) -> Result<()>,
) -> Result<()> {
    let file = show_all(&path.display().to_string());
    let mut lines = LineSplitter::default();
    read_chunks(
        path,
        (MAX_FILE_BYTES, "MAX_FILE_BYTES"),
        "a .csv or .arff data file",
        "data",
        &mut lines,
        |lines, chunk| lines.feed(chunk, &file, &mut each),
    )?;
    lines.finish(&file, &mut each)
}

/// Splits bytes read piece by piece into lines ended by LF, CRLF or CR.
#[derive(Default)]
struct LineSplitter {
    /// The start of a line not yet ended.
    carry: Vec<u8>,
    /// Offset in the file of `carry[0]`.
    offset: usize,
    /// Lines already given.
    lines: usize,
    /// The last line ended with a CR at the end of a piece: a LF starting the next piece
    /// belongs to it.
    after_cr: bool,
}

impl ReserveHint for LineSplitter {}

impl LineSplitter {
    fn feed(
        &mut self,
        mut chunk: &[u8],
        file: &str,
        each: &mut impl FnMut(usize, &str) -> Result<()>,
    ) -> Result<()> {
        if std::mem::take(&mut self.after_cr) {
            if let Some((b'\n', rest)) = chunk.split_first() {
                chunk = rest;
                self.offset += 1;
            }
        }
        self.carry.extend_from_slice(chunk);
        let mut start = 0;
        let mut i = 0;
        while let Some(found) = self.carry[i..]
            .iter()
            .position(|&b| b == b'\n' || b == b'\r')
        {
            let end = i + found;
            let mut next = end + 1;
            if self.carry[end] == b'\r' {
                match self.carry.get(next) {
                    Some(b'\n') => next += 1,
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            self.give(start, end, file, each)?;
            start = next;
            i = next;
        }
        self.carry.drain(..start);
        self.offset += start;
        if self.carry.len() > MAX_LINE_BYTES {
            return Err(line_too_long(file, self.lines + 1));
        }
        Ok(())
    }

    fn finish(
        mut self,
        file: &str,
        each: &mut impl FnMut(usize, &str) -> Result<()>,
    ) -> Result<()> {
        if !self.carry.is_empty() {
            self.give(0, self.carry.len(), file, each)?;
        }
        Ok(())
    }

    /// Gives `carry[start..end]` as the next line.
    fn give(
        &mut self,
        start: usize,
        end: usize,
        file: &str,
        each: &mut impl FnMut(usize, &str) -> Result<()>,
    ) -> Result<()> {
        self.lines += 1;
        let bytes = &self.carry[start..end];
        if bytes.len() > MAX_LINE_BYTES {
            return Err(line_too_long(file, self.lines));
        }
        let text = std::str::from_utf8(bytes).map_err(|e| {
            let at = e.valid_up_to();
            not_utf8_at(
                file,
                self.lines,
                at + 1,
                self.offset + start + at,
                bytes[at],
            )
        })?;
        let text = if self.offset + start == 0 {
            text.strip_prefix('\u{feff}').unwrap_or(text)
        } else {
            text
        };
        each(self.lines, text)
    }
}

/// The error for line `line` (1-based) longer than [`MAX_LINE_BYTES`].
fn line_too_long(file: &str, line: usize) -> Error {
    Error::Parse {
        file: file.to_string(),
        line,
        field: "line".into(),
        problem: format!(
            "longer than {} without a line break (mil_toolkit::data::MAX_LINE_BYTES); \
             is this a data file?",
            bytes_text(MAX_LINE_BYTES as u64)
        ),
    }
}

/// The error for a byte `byte` that is not UTF-8, at 1-based `column` of line `line`
/// and at `offset` in the file.
fn not_utf8_at(file: &str, line: usize, column: usize, offset: usize, byte: u8) -> Error {
    Error::Parse {
        file: file.to_string(),
        line,
        field: format!("byte {column}"),
        problem: format!(
            "0x{byte:02x} (at offset {offset} of the file) is not UTF-8 text; \
             save the file as UTF-8"
        ),
    }
}

/// Incremental checks over the bytes read so far: line numbers (LF, CRLF and CR
/// endings), line length and UTF-8 validity.
#[derive(Default)]
struct TextScan {
    /// Bytes already checked.
    done: usize,
    /// Bytes up to here are known to be valid UTF-8 (`done` may run ahead of it by an
    /// incomplete character at the end of what was read).
    valid: usize,
    /// 0-based line of `done` and the offset where that line starts.
    line: usize,
    line_start: usize,
    /// The byte before `done` was a CR (a LF right after it ends no new line).
    after_cr: bool,
}

impl TextScan {
    fn advance(&mut self, bytes: &[u8], file: &str) -> Result<()> {
        let too_long = |line: usize| line_too_long(file, line + 1);
        for (i, &b) in bytes.iter().enumerate().skip(self.done) {
            if b == b'\r' || b == b'\n' {
                if i - self.line_start > MAX_LINE_BYTES {
                    return Err(too_long(self.line));
                }
                if b == b'\r' || !self.after_cr {
                    self.line += 1;
                }
                self.line_start = i + 1;
            }
            self.after_cr = b == b'\r';
        }
        self.done = bytes.len();
        if self.done - self.line_start > MAX_LINE_BYTES {
            return Err(too_long(self.line));
        }
        match std::str::from_utf8(&bytes[self.valid..]) {
            Ok(_) => self.valid = bytes.len(),
            Err(e) => {
                self.valid += e.valid_up_to();
                // An incomplete character at the end may be completed by the next read.
                if e.error_len().is_some() {
                    return Err(self.not_utf8(bytes, file));
                }
            }
        }
        Ok(())
    }

    fn finish(&self, bytes: &[u8], file: &str) -> Result<()> {
        if self.valid < bytes.len() {
            return Err(self.not_utf8(bytes, file));
        }
        Ok(())
    }

    fn not_utf8(&self, bytes: &[u8], file: &str) -> Error {
        let at = self.valid;
        let before = &bytes[..at];
        let mut line = 1;
        let mut line_start = 0;
        for (i, &b) in before.iter().enumerate() {
            if b == b'\r' || (b == b'\n' && (i == 0 || before[i - 1] != b'\r')) {
                line += 1;
            }
            if b == b'\r' || b == b'\n' {
                line_start = i + 1;
            }
        }
        not_utf8_at(file, line, at - line_start + 1, at, bytes[at])
    }
}

/// A byte count for messages: `2 GiB`, `16 MiB`, `1.5 GiB (1610612736 bytes)`,
/// `812 bytes`.
fn bytes_text(n: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (size, unit) in UNITS {
        if n >= size {
            let whole = n / size;
            return if whole * size == n {
                format!("{whole} {unit}")
            } else {
                format!("{:.1} {unit} ({n} bytes)", n as f64 / size as f64)
            };
        }
    }
    format!("{n} bytes")
}

/// Reads a number as `text.parse::<f64>()` does, to the bit. A plain decimal —
/// an optional `-`, digits, an optional `.` and digits, no exponent — whose digits form
/// an integer m ≤ 2^53 with k ≤ 22 digits after the point is m / 10^k computed in one
/// division: m and 10^k are exact doubles and the division is correctly rounded, so the
/// result is the correctly rounded value of the decimal, as the standard parser's. This
/// covers the benchmark files' numbers and skips the standard parser's general path,
/// which was a third of the time of reading one. Anything else goes to that parser.
pub(crate) fn parse_f64(text: &str) -> std::result::Result<f64, std::num::ParseFloatError> {
    const POW10: [f64; 23] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
        1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ];
    let bytes = text.as_bytes();
    let (negative, digits) = match bytes {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, bytes),
    };
    let mut mantissa: u64 = 0;
    let mut n_digits = 0usize;
    let mut point: Option<usize> = None;
    let mut plain = !digits.is_empty() && digits.len() <= 20;
    if plain {
        for (i, &b) in digits.iter().enumerate() {
            match b {
                b'0'..=b'9' => {
                    // At most 19 digits: the mantissa cannot overflow a u64.
                    mantissa = mantissa * 10 + u64::from(b - b'0');
                    n_digits += 1;
                }
                b'.' if point.is_none() => point = Some(i),
                _ => {
                    plain = false;
                    break;
                }
            }
        }
    }
    let fraction_digits = point.map_or(0, |p| digits.len() - p - 1);
    if plain && n_digits > 0 && n_digits <= 19 && mantissa <= 1 << 53 && fraction_digits <= 22 {
        let magnitude = mantissa as f64 / POW10[fraction_digits];
        return Ok(if negative { -magnitude } else { magnitude });
    }
    text.parse()
}

/// Prepares text for the parsers: drops a UTF-8 byte-order mark and turns CRLF and
/// CR-only line endings into LF, so files saved by any editor read alike. Borrows when
/// there is nothing to change.
pub(crate) fn normalize_text(text: &str) -> std::borrow::Cow<'_, str> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if !text.contains('\r') {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('\r') {
        out.push_str(&rest[..i]);
        out.push('\n');
        rest = &rest[i + 1..];
        if let Some(r) = rest.strip_prefix('\n') {
            rest = r;
        }
    }
    out.push_str(rest);
    std::borrow::Cow::Owned(out)
}

/// User text for a one-line message: control characters escaped (`\x07`, `\r`, `\t`, …),
/// at most 40 characters.
pub(crate) fn show(s: &str) -> String {
    let mut chars = s.chars();
    let short: String = chars.by_ref().take(40).collect();
    let tail = if chars.next().is_some() { "…" } else { "" };
    format!("{}{tail}", show_all(&short))
}

/// `s` with its control characters escaped, in full.
pub(crate) fn show_all(s: &str) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x80 && c.is_control() => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            // C1 controls, and marks that reorder or hide the text around them.
            c if c.is_control()
                || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}') =>
            {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(tag: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("mil-data-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn message(e: Error) -> String {
        e.to_string()
    }

    /// The fast path of [`parse_f64`] against the standard parser, bit for bit: random
    /// plain decimals on both sides of each limit (19 digits, 2^53, 22 digits after the
    /// point), signs and zeros, and texts the fast path must hand on.
    #[test]
    fn parse_f64_is_the_standard_parser_to_the_bit() {
        use rand::{RngExt, SeedableRng};
        let same = |text: &str| match (parse_f64(text), text.parse::<f64>()) {
            (Ok(a), Ok(b)) => assert_eq!(a.to_bits(), b.to_bits(), "`{text}`"),
            (Err(_), Err(_)) => {}
            (a, b) => panic!("`{text}`: {a:?} against {b:?}"),
        };
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(3);
        for _ in 0..200_000 {
            let n_digits = rng.random_range(1..=24);
            let mut text = String::new();
            if rng.random_bool(0.5) {
                text.push('-');
            }
            let point = rng.random_range(0..=n_digits + 1);
            for i in 0..n_digits {
                if i == point {
                    text.push('.');
                }
                let digit = if rng.random_bool(0.2) {
                    9
                } else {
                    rng.random_range(0..10)
                };
                text.push(char::from(b'0' + digit));
            }
            if point == n_digits && rng.random_bool(0.5) {
                text.push('.');
            }
            same(&text);
        }
        let limit = 1u64 << 53;
        for m in [
            limit - 1,
            limit,
            limit + 1,
            u64::MAX / 10,
            9_999_999_999_999_999_999,
        ] {
            for k in [0, 1, 15, 16, 19] {
                let digits = m.to_string();
                if k < digits.len() {
                    let (a, b) = digits.split_at(digits.len() - k);
                    same(&format!("{a}.{b}"));
                    same(&format!("-{a}.{b}"));
                }
            }
        }
        for k in 20..=24 {
            same(&format!("0.{}", "1".repeat(k)));
            same(&format!("0.{}7", "0".repeat(k - 1)));
        }
        for text in [
            "0", "-0", "0.", "-0.0", ".5", "-.5", "5.", "00012.50", "", "-", ".", "-.", "1.2.3",
            "+1", "1e5", "1E-3", "inf", "-inf", "NaN", " 1", "1 ", "1,2", "--1", "0x10", "١",
        ] {
            same(text);
        }
    }

    #[test]
    fn normalizes_bom_and_line_endings() {
        assert_eq!(normalize_text("\u{feff}a\r\nb\rc\n\rd\r"), "a\nb\nc\n\nd\n");
        assert!(matches!(
            normalize_text("a\nb"),
            std::borrow::Cow::Borrowed(_)
        ));
        // Only a leading mark is dropped.
        assert_eq!(normalize_text("a\u{feff}"), "a\u{feff}");
    }

    /// Lines as [`for_each_line`] gives them, or its error's message.
    fn streamed(path: &Path) -> std::result::Result<Vec<(usize, String)>, String> {
        let mut lines = Vec::new();
        for_each_line(path, |n, l| {
            lines.push((n, l.to_string()));
            Ok(())
        })
        .map_err(message)?;
        Ok(lines)
    }

    /// Lines of the whole text as [`read_text`] and [`normalize_text`] give them.
    fn whole(path: &Path) -> std::result::Result<Vec<(usize, String)>, String> {
        let text = read_text(path).map_err(message)?;
        Ok(normalize_text(&text)
            .lines()
            .enumerate()
            .map(|(i, l)| (i + 1, l.to_string()))
            .collect())
    }

    #[test]
    fn lines_read_piece_by_piece_equal_the_whole_texts_lines() {
        use rand::{RngExt, SeedableRng};
        let dir = scratch("lines");
        let f = dir.join("t.csv");
        // Pieces are 64 KiB: lines of every ending, multi-byte characters and bad bytes
        // fall on piece boundaries in some of these texts.
        let atoms: [&[u8]; 9] = [
            b"1,a,2.5",
            b"\n",
            b"\r",
            b"\r\n",
            "\u{e4}".as_bytes(),
            "\u{feff}".as_bytes(),
            b",",
            b"x",
            b"\xe9",
        ];
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
        for case in 0..60 {
            let mut bytes = Vec::new();
            if case % 3 == 0 {
                bytes.extend_from_slice("\u{feff}".as_bytes());
            }
            let target = rng.random_range(0..200_000);
            while bytes.len() < target {
                let atom = atoms[rng.random_range(0..atoms.len())];
                // Bad bytes rarely, so that most texts are valid.
                if atom == b"\xe9" && rng.random_range(0..2000) != 0 {
                    continue;
                }
                bytes.extend_from_slice(atom);
            }
            std::fs::write(&f, &bytes).unwrap();
            assert_eq!(streamed(&f), whole(&f), "case {case}");
        }
        // A CR at the very end of a piece, its LF at the start of the next.
        let mut bytes = vec![b'7'; (1 << 16) - 1];
        bytes.extend_from_slice(b"\r\n8\r\n");
        std::fs::write(&f, &bytes).unwrap();
        assert_eq!(streamed(&f), whole(&f));
        assert_eq!(streamed(&f).unwrap().len(), 2);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn escapes_control_characters() {
        assert_eq!(show("a\x07b\rc\u{1b}[31m"), "a\\x07b\\rc\\x1b[31m");
        assert_eq!(show("\u{202e}evil"), "\\u{202e}evil");
        assert_eq!(show(&"é".repeat(41)), format!("{}…", "é".repeat(40)));
        assert_eq!(show(&"é".repeat(40)), "é".repeat(40));
    }

    #[test]
    fn byte_counts_read_well() {
        assert_eq!(bytes_text(MAX_FILE_BYTES), "2 GiB");
        assert_eq!(bytes_text(MAX_LINE_BYTES as u64), "16 MiB");
        assert_eq!(bytes_text(812), "812 bytes");
        assert_eq!(bytes_text(3 << 29), "1.5 GiB (1610612736 bytes)");
    }

    #[test]
    fn a_directory_is_a_data_error() {
        let dir = scratch("dir");
        let e = read_text(&dir).unwrap_err();
        assert!(matches!(e, Error::Data { .. }), "{e:?}");
        assert_eq!(e.exit_code(), 2);
        assert!(message(e).contains("is a directory"));
        let e = load(dir.to_str().unwrap()).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{e}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn non_utf8_names_line_column_and_offset() {
        let dir = scratch("utf8");
        let f = dir.join("latin1.csv");
        std::fs::write(&f, b"1,a,1\r\n1,a,2\r0,caf\xe9,3\n").unwrap();
        match read_text(&f).unwrap_err() {
            Error::Parse {
                line,
                field,
                problem,
                ..
            } => {
                assert_eq!((line, field.as_str()), (3, "byte 6"));
                assert!(problem.contains("0xe9 (at offset 18 "), "{problem}");
            }
            e => panic!("{e:?}"),
        }
        // A character cut off by the end of the file.
        std::fs::write(&f, "1,a,1\n1,é".as_bytes().split_last().unwrap().1).unwrap();
        assert!(matches!(
            read_text(&f).unwrap_err(),
            Error::Parse { line: 2, .. }
        ));
        // Multi-byte characters split across reads are fine.
        let text = "1,ä,1\n".repeat(30_000);
        std::fs::write(&f, &text).unwrap();
        assert_eq!(read_text(&f).unwrap(), text);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn an_overlong_line_names_its_line() {
        let dir = scratch("long");
        let f = dir.join("long.csv");
        let mut text = b"1,a,1\r\n1,a,2\r".to_vec();
        text.resize(text.len() + MAX_LINE_BYTES + 10, b'7');
        std::fs::write(&f, &text).unwrap();
        match read_text(&f).unwrap_err() {
            Error::Parse { line, field, .. } => assert_eq!((line, field.as_str()), (3, "line")),
            e => panic!("{e:?}"),
        }
        assert_eq!(streamed(&f), whole(&f));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn dev_zero_is_refused_quickly() {
        let started = std::time::Instant::now();
        let e = read_text(Path::new("/dev/zero")).unwrap_err();
        assert!(matches!(e, Error::Parse { line: 1, .. }), "{e:?}");
        assert_eq!(e.exit_code(), 2);
        assert!(message(e).contains("16 MiB"));
        assert!(started.elapsed().as_secs() < 10);
    }

    #[test]
    fn the_size_limit_is_checked_before_reading() {
        let dir = scratch("size");
        let f = dir.join("huge.csv");
        // A sparse file: nothing is written, nothing is read.
        let file = std::fs::File::create(&f).unwrap();
        file.set_len(MAX_FILE_BYTES + 1).unwrap();
        let e = read_text(&f).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let m = message(e);
        assert!(
            m.contains("huge.csv") && m.contains("2 GiB") && m.contains("2147483649 bytes"),
            "{m}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
