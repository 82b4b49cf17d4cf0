//! The CSV layout of the public MIL benchmark files: `label,bag_id,f1,…,fD`, no header,
//! one instance per line, the instances of a bag contiguous. A label of `?` marks an
//! unlabelled bag (all bags of a file must then be unlabelled).

use std::fmt::Write as _;
use std::path::Path;

use super::bag_book::BagBook;
use super::dataset::Dataset;
use super::{normalize_text, show};
use crate::error::{Error, Result};

/// Reads a CSV data set from a file; errors name the file, line and field. The file is
/// read line by line: the memory held is the data set being built and one line.
pub fn read_csv_file(path: &Path) -> Result<Dataset> {
    let name = super::show_all(&path.display().to_string());
    let mut rows = Rows::new(&name);
    super::for_each_line(path, |line_no, line| rows.add(line_no, line))?;
    rows.finish()
}

/// Parses CSV text; `name` is used in error messages and as the data set's name. A
/// leading byte-order mark is skipped, and CRLF and CR-only line endings read as LF.
pub fn parse_csv(name: &str, text: &str) -> Result<Dataset> {
    let text = &*normalize_text(text);
    let mut rows = Rows::new(name);
    rows.lines_hint = text.bytes().filter(|&b| b == b'\n').count() + 1;
    for (index, line) in text.lines().enumerate() {
        rows.add(index + 1, line)?;
    }
    rows.finish()
}

/// A data set built from CSV lines as they come: per bag only what the data set keeps.
struct Rows<'a> {
    name: &'a str,
    dim: Option<usize>,
    features: Vec<f64>,
    bag_starts: Vec<usize>,
    bags: BagBook,
    n_instances: usize,
    /// The rows expected (for parsed text, its lines): room for their features is made
    /// once the first row gives the dimension.
    lines_hint: usize,
}

impl<'a> Rows<'a> {
    fn new(name: &'a str) -> Self {
        Rows {
            name,
            dim: None,
            features: Vec::new(),
            bag_starts: vec![0],
            bags: BagBook::default(),
            n_instances: 0,
            lines_hint: 0,
        }
    }

    fn err(&self, line: usize, field: String, problem: String) -> Error {
        Error::Parse {
            file: self.name.to_string(),
            line,
            field,
            problem,
        }
    }

    /// Adds line `line_no` (1-based); blank lines are skipped.
    fn add(&mut self, line_no: usize, raw: &str) -> Result<()> {
        let line = raw.trim();
        if line.is_empty() {
            return Ok(());
        }
        // The fields are counted first (one pass over the bytes) and then read as they
        // are split, so that no list of them is built for every row.
        let n_fields = line.bytes().filter(|&b| b == b',').count() + 1;
        if n_fields < 3 {
            return Err(self.err(
                line_no,
                "row".into(),
                format!("{n_fields} fields; need label, bag_id and at least one feature"),
            ));
        }
        let d = n_fields - 2;
        match self.dim {
            None => {
                self.dim = Some(d);
                self.features.reserve(self.lines_hint.saturating_mul(d));
            }
            Some(expected) if expected != d => {
                return Err(self.err(
                    line_no,
                    "row".into(),
                    format!("{} features where earlier rows have {expected}", d),
                ))
            }
            _ => {}
        }
        let mut fields = split_commas(line).map(trim_field);
        let label = fields.next().unwrap_or_default();
        if label.is_empty() || (label != "?" && label.parse::<i64>().is_err()) {
            return Err(self.err(
                line_no,
                "column 1 (label)".into(),
                format!("`{}` is not an integer class label or `?`", show(label)),
            ));
        }
        let bag_id = fields.next().unwrap_or_default();
        if bag_id.is_empty() {
            return Err(self.err(line_no, "column 2 (bag_id)".into(), "empty bag id".into()));
        }
        match self.bags.last() {
            Some((last, earlier)) if last == bag_id => {
                if earlier != label {
                    return Err(self.err(
                        line_no,
                        "column 1 (label)".into(),
                        format!(
                            "bag `{}` has label `{}` here but `{}` on its earlier instances",
                            show(bag_id),
                            show(label),
                            show(earlier)
                        ),
                    ));
                }
            }
            _ => {
                if self.bags.earlier(bag_id).is_some() {
                    return Err(self.err(
                        line_no,
                        "column 2 (bag_id)".into(),
                        format!(
                            "bag `{}` reappears after other bags; a bag's instances must be contiguous",
                            show(bag_id)
                        ),
                    ));
                }
                if self.bags.len() > 0 {
                    self.bag_starts.push(self.n_instances);
                }
                self.bags.push(bag_id, label);
            }
        }
        for (j, value) in fields.enumerate() {
            let v = super::parse_f64(value).map_err(|_| {
                self.err(
                    line_no,
                    format!("column {} (feature {})", j + 3, j + 1),
                    format!("`{}` is not a number", show(value)),
                )
            })?;
            if !v.is_finite() {
                return Err(self.err(
                    line_no,
                    format!("column {} (feature {})", j + 3, j + 1),
                    format!("`{}` is not finite", show(value)),
                ));
            }
            self.features.push(v);
        }
        self.n_instances += 1;
        Ok(())
    }

    fn finish(mut self) -> Result<Dataset> {
        let Some(dim) = self.dim else {
            return Err(Error::data(self.name, "no instances (the file is empty)"));
        };
        self.bag_starts.push(self.n_instances);
        let (ids, labels, class_names) = self.bags.finish(self.name)?;
        Dataset::new(
            self.name,
            dim,
            self.features,
            self.bag_starts,
            ids,
            labels,
            class_names,
        )
    }
}

/// The pieces of `line` between commas, as `line.split(',')` gives them, found by a plain
/// byte scan: the standard splitter searches for each of a row's many short fields with
/// `memchr` and a comparison, which was most of the time of reading a file. A comma is
/// one byte that no other character's UTF-8 contains, so every piece is whole characters.
fn split_commas(line: &str) -> impl Iterator<Item = &str> + '_ {
    let mut rest = Some(line);
    std::iter::from_fn(move || {
        let s = rest?;
        match s.bytes().position(|b| b == b',') {
            Some(i) => {
                rest = Some(&s[i + 1..]);
                Some(&s[..i])
            }
            None => {
                rest = None;
                Some(s)
            }
        }
    })
}

/// `field.trim()`, without decoding characters when both ends are visible ASCII (as
/// nearly every number is): then there is nothing to trim.
fn trim_field(field: &str) -> &str {
    match field.as_bytes() {
        [first, .., last] if first.is_ascii_graphic() && last.is_ascii_graphic() => field,
        [only] if only.is_ascii_graphic() => field,
        _ => field.trim(),
    }
}

/// Writes a data set in the CSV layout. Values are printed with Rust's shortest
/// round-trip formatting, so reading the file back gives the identical data set.
pub fn to_csv(data: &Dataset) -> String {
    let mut out = String::with_capacity(data.features().len() * 8);
    for b in 0..data.n_bags() {
        let label = match data.label(b) {
            Some(l) => data.class_names()[l].as_str(),
            None => "?",
        };
        for instance in data.bag(b).instances() {
            out.push_str(label);
            out.push(',');
            out.push_str(data.bag_id(b));
            for v in instance {
                let _ = write!(out, ",{v}");
            }
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line_of(e: Error) -> usize {
        match e {
            Error::Parse { line, .. } => line,
            other => panic!("expected a parse error, got {other}"),
        }
    }

    #[test]
    fn commas_split_as_the_standard_splitter_does() {
        for line in [
            "",
            ",",
            "a",
            "a,",
            ",a",
            "1,b,,3.5",
            "é,ü,,",
            " x , y ",
            "1,2,3,4,5",
        ] {
            let ours: Vec<&str> = split_commas(line).collect();
            let standard: Vec<&str> = line.split(',').collect();
            assert_eq!(ours, standard, "{line:?}");
        }
        for field in [
            "",
            " ",
            "1",
            " 1",
            "1 ",
            "\t-2.5e3\u{a0}",
            "\u{2003}x",
            "ab",
            "é",
        ] {
            assert_eq!(trim_field(field), field.trim(), "{field:?}");
        }
    }

    #[test]
    fn parses_bags_and_labels() {
        let d = parse_csv("t", "1,a,1,2\n1,a,3,4\n0,b,5,6\n").unwrap();
        assert_eq!((d.n_bags(), d.n_instances(), d.dim()), (2, 3, 2));
        assert_eq!(d.labels(), Some(&[1, 0][..]));
        assert_eq!(d.bag(0).as_slice(), &[1.0, 2.0, 3.0, 4.0]);
    }

    #[test]
    fn round_trips() {
        let d = parse_csv("t", "2,a,0.1,-2e-9\n0,b,5,1e300\n").unwrap();
        let back = parse_csv("t", &to_csv(&d)).unwrap();
        assert_eq!(d, back);
    }

    #[test]
    fn names_the_line_of_each_problem() {
        let cases = [
            ("1,a,1,2\n1,a,3\n", 2),            // ragged
            ("1,a,1,2\n1,a,x,4\n", 2),          // non-numeric
            ("1,a,1,2\n1,a,NaN,4\n", 2),        // NaN
            ("1,a,1,2\n1,a,inf,4\n", 2),        // infinite
            ("1,a,1,2\n0,a,3,4\n", 2),          // label changes within a bag
            ("1,a,1,2\n0,b,1,2\n1,a,3,4\n", 3), // bag id reappears
            ("1,a\n", 1),                       // too few fields
            ("one,a,1\n", 1),                   // non-integer label
        ];
        for (text, line) in cases {
            assert_eq!(line_of(parse_csv("t", text).unwrap_err()), line, "{text:?}");
        }
    }

    #[test]
    fn equal_integer_labels_are_one_class() {
        let d = parse_csv("t", "1,a,1\n+1,b,2\n01,c,3\n0,d,4\n").unwrap();
        assert_eq!(d.labels(), Some(&[1, 1, 1, 0][..]));
        assert_eq!(d.class_names(), &["0".to_string(), "1".to_string()]);
    }

    #[test]
    fn empty_and_mixed_unlabelled_are_errors() {
        assert!(matches!(parse_csv("t", "\n\n"), Err(Error::Data { .. })));
        assert!(matches!(
            parse_csv("t", "?,a,1\n1,b,2\n"),
            Err(Error::Data { .. })
        ));
        let d = parse_csv("t", "?,a,1\n?,b,2\n").unwrap();
        assert_eq!(d.labels(), None);
    }

    #[test]
    fn bom_and_every_line_ending_read_alike() {
        let lf = parse_csv("t", "1,a,1,2\n1,a,3,4\n0,b,5,6\n").unwrap();
        for text in [
            "\u{feff}1,a,1,2\n1,a,3,4\n0,b,5,6\n",
            "1,a,1,2\r\n1,a,3,4\r\n0,b,5,6\r\n",
            "1,a,1,2\r1,a,3,4\r0,b,5,6\r",
            "\u{feff}1,a,1,2\r1,a,3,4\r\n0,b,5,6",
        ] {
            assert_eq!(parse_csv("t", text).unwrap(), lf, "{text:?}");
        }
        // Line numbers count CR-only breaks too.
        assert_eq!(
            line_of(parse_csv("t", "1,a,1\r1,a,2\r1,a,x\r").unwrap_err()),
            3
        );
    }

    #[test]
    fn control_characters_are_escaped_in_messages() {
        for text in [
            "1\x07,a,1\n",
            "1,a,1\n1,a,\x1b[2J\n",
            "1,a,1\n0,a\u{7f},2\n1,a\u{7f},3\n",
        ] {
            let m = parse_csv("t", text).unwrap_err().to_string();
            assert!(!m.chars().any(|c| c.is_control()), "{m:?}");
            assert!(
                m.contains("\\x07") || m.contains("\\x1b") || m.contains("\\x7f"),
                "{m:?}"
            );
        }
    }
}
