//! Weka's multi-instance ARFF: the relational layout Weka's MI classifiers read.
//!
//! ```text
//! @relation musk1
//! @attribute molecule_name {MUSK-jf78,MUSK-jf67,…}     bag id: nominal (string, numeric)
//! @attribute bag relational                             the instances of one bag
//!   @attribute f1 numeric
//!   …
//! @end bag
//! @attribute class {0,1}                                optional; `?` = unlabelled bag
//! @data
//! MUSK-jf78,"42,-198,…\n42,-191,…",1
//! ```
//!
//! One data row per bag; inside the quoted relational value, instances are separated by
//! `\n` escapes (or real line breaks) and values by commas. Keywords are case-insensitive,
//! `%` starts a comment outside quotes, strings may be quoted with `'` or `"` with Weka's
//! backslash escapes. Instance attributes must be numeric and missing values (`?`) are
//! rejected. Class values must be integers, as in the CSV layout, so both formats carry
//! the same data sets.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::Path;

use super::bag_book::BagBook;
use super::dataset::Dataset;
use super::{normalize_text, show};
use crate::error::{Error, Result};

/// Reads a multi-instance ARFF file; errors name the file, line and field. The file is
/// read line by line: the memory held is the data set being built, the header and one
/// record (one bag's row).
pub fn read_arff_file(path: &Path) -> Result<Dataset> {
    let name = super::show_all(&path.display().to_string());
    let mut reader = Reader::new(&name);
    super::for_each_line(path, |line_no, line| reader.line(line_no, line))?;
    reader.finish()
}

/// Parses multi-instance ARFF text; `name` is used in error messages and as the data
/// set's name. A leading byte-order mark is skipped, and CRLF and CR-only line endings
/// read as LF.
pub fn parse_arff(name: &str, text: &str) -> Result<Dataset> {
    let text = &*normalize_text(text);
    let mut reader = Reader::new(name);
    for (index, line) in text.split('\n').enumerate() {
        reader.line(index + 1, line)?;
    }
    reader.finish()
}

/// A data set built from ARFF lines as they come: lines are joined into records, the
/// header's records are kept until `@data`, and each data record becomes a bag.
struct Reader<'a> {
    name: &'a str,
    records: RecordSplitter,
    /// The header's records (line, text) until `@data` is read.
    header: Vec<(usize, String)>,
    rows: Option<Rows>,
}

impl<'a> Reader<'a> {
    fn new(name: &'a str) -> Self {
        Reader {
            name,
            records: RecordSplitter::default(),
            header: Vec::new(),
            rows: None,
        }
    }

    fn err(&self, line: usize, field: &str, problem: String) -> Error {
        parse_error(self.name, line, field, problem)
    }

    /// Adds line `line_no` (1-based).
    fn line(&mut self, line_no: usize, line: &str) -> Result<()> {
        let Some(record) = self.records.line(line_no, line) else {
            return Ok(());
        };
        let text = record.text.trim();
        if text.is_empty() {
            return Ok(());
        }
        let record = Record {
            line: record.line,
            text,
        };
        if let Some(rows) = &mut self.rows {
            return rows
                .add(&record)
                .map_err(|(l, f, p)| parse_error(self.name, l, &f, p));
        }
        let keyword = text.split(char::is_whitespace).next().unwrap_or("");
        self.header.push((record.line, text.to_string()));
        if keyword.eq_ignore_ascii_case("@data") {
            let layout = self.layout()?.expect("the header ends at @data");
            self.rows = Some(Rows::new(layout));
        }
        Ok(())
    }

    /// The layout the header declares; `None` when the file has no records.
    fn layout(&mut self) -> Result<Option<Layout>> {
        let header = std::mem::take(&mut self.header);
        let mut records = header
            .iter()
            .map(|(line, text)| Record { line: *line, text });
        let parsed = parse_header(&mut records);
        let Some((attributes, data_line)) = parsed.map_err(|(l, f, p)| self.err(l, &f, p))? else {
            return Ok(None);
        };
        Layout::from_header(attributes, data_line)
            .map(Some)
            .map_err(|(l, f, p)| self.err(l, &f, p))
    }

    fn finish(mut self) -> Result<Dataset> {
        if let Some((q, opened)) = self.records.quote {
            return Err(self.err(
                opened,
                "text",
                format!("quote {} opened here is never closed", q as char),
            ));
        }
        let rows = match self.rows.take() {
            Some(rows) => rows,
            None => match self.layout()? {
                Some(_) => unreachable!("a header that parses ends at @data"),
                None => {
                    return Err(Error::data(
                        self.name,
                        "no @relation header (the file is empty)",
                    ))
                }
            },
        };
        if rows.bags.len() == 0 {
            return Err(Error::data(self.name, "no bags after @data"));
        }
        let (ids, labels, class_names) = rows.bags.finish(self.name)?;
        Dataset::new(
            self.name,
            rows.layout.dim,
            rows.features,
            rows.bag_starts,
            ids,
            labels,
            class_names,
        )
    }
}

fn parse_error(file: &str, line: usize, field: &str, problem: String) -> Error {
    Error::Parse {
        file: file.to_string(),
        line,
        field: field.to_string(),
        problem,
    }
}

/// The bags read after `@data`.
struct Rows {
    layout: Layout,
    features: Vec<f64>,
    bag_starts: Vec<usize>,
    bags: BagBook,
    /// The line of each bag's row.
    bag_lines: Vec<usize>,
}

impl Rows {
    fn new(layout: Layout) -> Self {
        Rows {
            layout,
            features: Vec::new(),
            bag_starts: vec![0],
            bags: BagBook::default(),
            bag_lines: Vec::new(),
        }
    }

    /// Reads one data record as a bag.
    fn add(&mut self, record: &Record) -> std::result::Result<(), HeaderError> {
        let line = record.line;
        let err = |field: &str, problem: String| (line, field.to_string(), problem);
        let layout = &self.layout;
        if record.text.starts_with('{') {
            return Err(err(
                "row",
                "sparse rows ({index value, …}) are not supported".into(),
            ));
        }
        let fields = split_fields(record.text).map_err(|p| err("row", p))?;
        if fields.len() != layout.n_fields() {
            return Err(err(
                "row",
                format!(
                    "{} fields; the header declares {} (bag id, bag{})",
                    fields.len(),
                    layout.n_fields(),
                    if layout.class.is_some() {
                        ", class"
                    } else {
                        ""
                    }
                ),
            ));
        }
        // Field names are formatted only for an error.
        let id_field = || format!("field 1 ({})", show(&layout.id_name));
        let id = &fields[0];
        if id.is_missing() {
            return Err(err(&id_field(), "missing bag id `?`".into()));
        }
        if id.text.is_empty() {
            return Err(err(&id_field(), "empty bag id".into()));
        }
        if let Some(values) = &layout.id_values {
            if !values.contains(&id.text) {
                return Err(err(
                    &id_field(),
                    format!(
                        "bag id `{}` is not among the declared values",
                        show(&id.text)
                    ),
                ));
            }
        }
        let first = self.bags.earlier(&id.text);
        if let Some(first) = first {
            return Err(err(
                &id_field(),
                format!(
                    "bag `{}` appears again (first on line {}); one row per bag",
                    show(&id.text),
                    self.bag_lines[first]
                ),
            ));
        }

        let bag_field = || format!("field 2 ({})", show(&layout.bag_name));
        let bag = &fields[1];
        if bag.is_missing() {
            return Err(err(
                &bag_field(),
                "missing bag `?`: missing values are not supported".into(),
            ));
        }
        let before = self.features.len();
        read_bag(&bag.text, layout.dim, &mut self.features)
            .map_err(|(at, problem)| err(&format!("{}{at}", bag_field()), problem))?;
        if self.features.len() == before {
            return Err(err(
                &bag_field(),
                format!("bag `{}` has no instances", show(&id.text)),
            ));
        }

        let label = match &layout.class {
            None => "?",
            Some((class_name, values)) => {
                let class = &fields[2];
                if class.is_missing() {
                    "?"
                } else if values.contains(&class.text) {
                    class.text.as_str()
                } else {
                    return Err(err(
                        &format!("field 3 ({})", show(class_name)),
                        format!(
                            "class `{}` is not among the declared values",
                            show(&class.text)
                        ),
                    ));
                }
            }
        };
        self.bags.push(&id.text, label);
        self.bag_lines.push(line);
        self.bag_starts.push(self.features.len() / layout.dim);
        Ok(())
    }
}

/// Appends the instances of one relational value (instances separated by line breaks,
/// values by commas) to `out`. Errors carry the place inside the bag
/// (`, instance k, feature j`) and the problem.
fn read_bag(
    text: &str,
    dim: usize,
    out: &mut Vec<f64>,
) -> std::result::Result<(), (String, String)> {
    let instances = text.split(['\n', '\r']).filter(|l| !l.trim().is_empty());
    for (k, instance) in instances.enumerate() {
        let at = format!(", instance {}", k + 1);
        // Numbers are never quoted in practice: skip the general field splitter then.
        let quoted;
        let values: Vec<(&str, bool)> = if instance.contains(['\'', '"']) {
            quoted = split_fields(instance).map_err(|p| (at.clone(), p))?;
            quoted
                .iter()
                .map(|f| (f.text.as_str(), f.is_missing()))
                .collect()
        } else {
            instance
                .split(',')
                .map(|v| (v.trim(), v.trim() == "?"))
                .collect()
        };
        if values.len() != dim {
            return Err((
                at,
                format!(
                    "{} values where the relational attribute declares {dim}",
                    values.len()
                ),
            ));
        }
        for (j, (value, missing)) in values.into_iter().enumerate() {
            let at = || format!("{at}, feature {}", j + 1);
            if missing {
                return Err((at(), "missing value `?` is not supported".into()));
            }
            let v = super::parse_f64(value.trim())
                .map_err(|_| (at(), format!("`{}` is not a number", show(value))))?;
            if !v.is_finite() {
                return Err((at(), format!("`{}` is not finite", show(value))));
            }
            out.push(v);
        }
    }
    Ok(())
}

/// Writes a data set as multi-instance ARFF. Values use Rust's shortest round-trip
/// formatting, so reading the file back gives the identical data set. An unlabelled set
/// is written without the class attribute. Bag ids are declared as nominal values, so
/// they must be distinct (as in every data set the readers build).
pub fn to_arff(data: &Dataset) -> String {
    let mut out = String::with_capacity(data.features().len() * 8);
    out.push_str(
        "% Multiple-instance data set in Weka's relational ARFF layout, written by mil.\n",
    );
    let _ = writeln!(out, "@relation {}\n", quote(data.name()));
    let ids: Vec<String> = data.bag_ids().iter().map(|id| quote(id)).collect();
    let _ = writeln!(out, "@attribute bag_id {{{}}}", ids.join(","));
    out.push_str("@attribute bag relational\n");
    for j in 1..=data.dim() {
        let _ = writeln!(out, "  @attribute f{j} numeric");
    }
    out.push_str("@end bag\n");
    if data.labels().is_some() {
        let classes: Vec<String> = data.class_names().iter().map(|c| quote(c)).collect();
        let _ = writeln!(out, "@attribute class {{{}}}", classes.join(","));
    }
    out.push_str("\n@data\n");
    for (b, id) in ids.iter().enumerate() {
        out.push_str(id);
        out.push_str(",\"");
        for (i, instance) in data.bag(b).instances().enumerate() {
            if i > 0 {
                out.push_str("\\n");
            }
            for (j, v) in instance.iter().enumerate() {
                if j > 0 {
                    out.push(',');
                }
                let _ = write!(out, "{v}");
            }
        }
        out.push('"');
        if let Some(l) = data.label(b) {
            out.push(',');
            out.push_str(&quote(&data.class_names()[l]));
        }
        out.push('\n');
    }
    out
}

/// A string as an ARFF token: bare when it is safe, else single-quoted with Weka's
/// backslash escapes.
fn quote(s: &str) -> String {
    let special = |c: char| c.is_whitespace() || ",'\"%{}\\".contains(c);
    if !s.is_empty() && s != "?" && !s.contains(special) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// One logical line of the file: comments removed, quoted line breaks kept inside.
struct Record<'a> {
    /// 1-based line where the record starts.
    line: usize,
    /// The record's text.
    text: &'a str,
}

/// Joins lines into records: a record ends at a line break outside quotes, `%` starts a
/// comment outside quotes, and a quoted value may span lines (a line break escaped by a
/// backslash stays in the value as written). Scans bytes: every delimiter is ASCII,
/// which never occurs inside a multi-byte UTF-8 character.
#[derive(Default)]
struct RecordSplitter {
    /// The record read so far, when a quote continues it past a line break.
    text: String,
    /// The line where the record started.
    line: usize,
    /// The open quote character and the line where it opened.
    quote: Option<(u8, usize)>,
}

impl RecordSplitter {
    /// Adds line `line_no`; gives the record it completes, if any (untrimmed, possibly
    /// blank).
    fn line(&mut self, line_no: usize, line: &str) -> Option<Record<'_>> {
        if self.quote.is_some() {
            self.text.push('\n');
        } else {
            self.text.clear();
            self.line = line_no;
        }
        let bytes = line.as_bytes();
        let mut end = bytes.len();
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            match self.quote {
                Some((q, _)) => {
                    if b == b'\\' {
                        // The escaped character; at the line's end it is the line break.
                        i += 1;
                    } else if b == q {
                        self.quote = None;
                    }
                }
                None => match b {
                    b'%' => {
                        end = i;
                        break;
                    }
                    b'\'' | b'"' => self.quote = Some((b, line_no)),
                    _ => {}
                },
            }
            i += 1;
        }
        self.text.push_str(&line[..end]);
        if self.quote.is_some() {
            return None;
        }
        Some(Record {
            line: self.line,
            text: &self.text,
        })
    }
}

/// A field of a comma-separated list.
#[derive(Debug)]
struct Field {
    /// The text, unquoted and unescaped.
    text: String,
    /// Whether it was quoted (a quoted `?` is a value, not a missing one).
    quoted: bool,
}

impl Field {
    fn is_missing(&self) -> bool {
        !self.quoted && self.text == "?"
    }
}

/// Splits on commas outside quotes; quoted fields are unescaped.
fn split_fields(s: &str) -> std::result::Result<Vec<Field>, String> {
    let mut fields = Vec::new();
    let mut chars = s.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let field = match chars.peek() {
            Some(&q) if q == '\'' || q == '"' => {
                chars.next();
                let mut raw = String::new();
                let mut closed = false;
                while let Some(c) = chars.next() {
                    if c == '\\' {
                        raw.push(c);
                        if let Some(n) = chars.next() {
                            raw.push(n);
                        }
                    } else if c == q {
                        closed = true;
                        break;
                    } else {
                        raw.push(c);
                    }
                }
                if !closed {
                    return Err(format!("quote {q} is never closed"));
                }
                while chars.next_if(|c| c.is_whitespace()).is_some() {}
                if let Some(&c) = chars.peek() {
                    if c != ',' {
                        return Err(format!(
                            "`{}` after a closing quote; expected a comma",
                            show(c.encode_utf8(&mut [0; 4]))
                        ));
                    }
                }
                Field {
                    text: unescape(&raw),
                    quoted: true,
                }
            }
            _ => {
                let mut text = String::new();
                while let Some(c) = chars.next_if(|&c| c != ',') {
                    if c == '\'' || c == '"' {
                        return Err(format!("unexpected quote {c} inside an unquoted value"));
                    }
                    text.push(c);
                }
                Field {
                    text: text.trim_end().to_string(),
                    quoted: false,
                }
            }
        };
        fields.push(field);
        if chars.next().is_none() {
            return Ok(fields);
        }
    }
}

/// Weka's backslash escapes inside quotes; an unknown escape is kept as written.
fn unescape(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('t') => out.push('\t'),
            Some(c @ ('\\' | '\'' | '"' | '%')) => out.push(c),
            Some(c) => {
                out.push('\\');
                out.push(c);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// An error before the data rows: line, field, problem.
type HeaderError = (usize, String, String);

/// The type of a declared attribute.
#[derive(Debug)]
enum AttrType {
    Numeric,
    Nominal(Vec<String>),
    String,
    /// The numeric instance attributes inside `@attribute … relational … @end`.
    Relational(usize),
    Other(String),
}

/// A top-level attribute as declared.
struct Attribute {
    line: usize,
    name: String,
    kind: AttrType,
}

/// Reads the header up to and including `@data`: the top-level attributes and the line of
/// `@data`. `None` when the file has no records.
fn parse_header<'a>(
    records: &mut impl Iterator<Item = Record<'a>>,
) -> std::result::Result<Option<(Vec<Attribute>, usize)>, HeaderError> {
    let mut last_line = 1;
    let mut attributes: Vec<Attribute> = Vec::new();
    let mut seen_relation = false;
    // The open relational attribute: its index in `attributes`, line and instance count.
    let mut open: Option<(usize, usize)> = None;
    for record in records.by_ref() {
        let line = record.line;
        last_line = line;
        let (keyword, rest) = match record.text.split_once(char::is_whitespace) {
            Some((k, r)) => (k, r.trim()),
            None => (record.text, ""),
        };
        let keyword = keyword.to_ascii_lowercase();
        let fail = |field: &str, problem: String| (line, field.to_string(), problem);
        if !seen_relation {
            if keyword != "@relation" {
                return Err(fail(
                    "header",
                    format!("expected @relation, found `{}`", show(record.text)),
                ));
            }
            seen_relation = true;
            continue;
        }
        match keyword.as_str() {
            "@attribute" => {
                let (name, type_text) = attribute_name(rest).map_err(|p| fail("@attribute", p))?;
                let field = format!("@attribute {}", show(&name));
                let kind = attribute_type(type_text).map_err(|p| fail(&field, p))?;
                if let Some((index, _)) = open {
                    match kind {
                        AttrType::Numeric => {
                            if let AttrType::Relational(n) = &mut attributes[index].kind {
                                *n += 1;
                            }
                        }
                        other => {
                            return Err(fail(
                                &field,
                                format!(
                                    "instance attributes must be numeric, not {}",
                                    describe(&other)
                                ),
                            ))
                        }
                    }
                } else {
                    if attributes.iter().any(|a| a.name == name) {
                        return Err(fail(&field, "declared twice".into()));
                    }
                    if matches!(kind, AttrType::Relational(_)) {
                        open = Some((attributes.len(), line));
                    }
                    attributes.push(Attribute { line, name, kind });
                }
            }
            "@end" => {
                let Some((index, _)) = open else {
                    return Err(fail("@end", "no relational attribute is open".into()));
                };
                let (name, _) = attribute_name(rest).map_err(|p| fail("@end", p))?;
                if name != attributes[index].name {
                    return Err(fail(
                        "@end",
                        format!(
                            "`@end {}` closes `{}`, opened on line {}",
                            show(&name),
                            show(&attributes[index].name),
                            attributes[index].line
                        ),
                    ));
                }
                open = None;
            }
            "@data" => {
                if let Some((index, opened)) = open {
                    return Err(fail(
                        "@data",
                        format!(
                            "relational attribute `{}` (line {opened}) has no @end",
                            show(&attributes[index].name)
                        ),
                    ));
                }
                return Ok(Some((attributes, line)));
            }
            "@relation" => return Err(fail("@relation", "a second @relation".into())),
            _ => {
                return Err(fail(
                    "header",
                    format!(
                        "expected @attribute, @end or @data, found `{}`",
                        show(record.text)
                    ),
                ))
            }
        }
    }
    if seen_relation {
        Err((last_line, "header".into(), "no @data section".into()))
    } else {
        Ok(None)
    }
}

/// Splits `name type…` where the name may be quoted.
fn attribute_name(rest: &str) -> std::result::Result<(String, &str), String> {
    let rest = rest.trim();
    match rest.chars().next() {
        None => Err("the attribute has no name".into()),
        Some(q @ ('\'' | '"')) => {
            let mut escaped = false;
            for (i, c) in rest.char_indices().skip(1) {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == q {
                    return Ok((unescape(&rest[1..i]), rest[i + 1..].trim()));
                }
            }
            Err(format!("quote {q} is never closed"))
        }
        Some(_) => Ok(match rest.split_once(char::is_whitespace) {
            Some((n, t)) => (n.to_string(), t.trim()),
            None => (rest.to_string(), ""),
        }),
    }
}

/// Parses an attribute type: numeric/real/integer, `{nominal,…}`, string, relational.
fn attribute_type(text: &str) -> std::result::Result<AttrType, String> {
    if let Some(inner) = text.strip_prefix('{') {
        let inner = inner
            .strip_suffix('}')
            .ok_or_else(|| "nominal values must end with `}`".to_string())?;
        let values = split_fields(inner)?;
        let mut seen = HashSet::new();
        for v in &values {
            if v.text.is_empty() {
                return Err("an empty nominal value".into());
            }
            if !seen.insert(v.text.as_str()) {
                return Err(format!("nominal value `{}` listed twice", show(&v.text)));
            }
        }
        return Ok(AttrType::Nominal(
            values.into_iter().map(|f| f.text).collect(),
        ));
    }
    let word = text.split_whitespace().next().unwrap_or("");
    Ok(match word.to_ascii_lowercase().as_str() {
        "" => return Err("the attribute has no type".into()),
        "numeric" | "real" | "integer" => AttrType::Numeric,
        "string" => AttrType::String,
        "relational" => AttrType::Relational(0),
        other => AttrType::Other(other.to_string()),
    })
}

fn describe(kind: &AttrType) -> String {
    match kind {
        AttrType::Numeric => "numeric".into(),
        AttrType::Nominal(_) => "nominal".into(),
        AttrType::String => "string".into(),
        AttrType::Relational(_) => "relational".into(),
        AttrType::Other(t) => format!("`{}`", show(t)),
    }
}

/// The multi-instance layout the header declares: bag id, bag, optional class.
struct Layout {
    id_name: String,
    /// Declared bag ids when the id attribute is nominal.
    id_values: Option<HashSet<String>>,
    bag_name: String,
    dim: usize,
    /// Class attribute name and its declared values.
    class: Option<(String, HashSet<String>)>,
}

impl Layout {
    /// Checks the declared attributes; `data_line` is where `@data` stands.
    fn from_header(
        attributes: Vec<Attribute>,
        data_line: usize,
    ) -> std::result::Result<Self, HeaderError> {
        let shape = "a multi-instance ARFF has a bag-id attribute, a relational bag \
                     attribute and (optionally) a nominal class attribute";
        let n = attributes.len();
        let line = attributes
            .get(3)
            .or(attributes.last())
            .map_or(data_line, |a| a.line);
        let mut attributes = attributes.into_iter();
        let (id, bag, class) = (attributes.next(), attributes.next(), attributes.next());
        let (Some(id), Some(bag), None) = (id, bag, attributes.next()) else {
            return Err((
                line,
                "@attribute".into(),
                format!("{n} top-level attributes; {shape}"),
            ));
        };
        let at = |a: &Attribute| format!("@attribute {}", show(&a.name));
        let id_values = match &id.kind {
            AttrType::Nominal(values) => Some(values.iter().cloned().collect()),
            // Weka's MI data sets use a nominal id; some exporters write numeric ones.
            AttrType::String | AttrType::Numeric => None,
            other => {
                return Err((
                    id.line,
                    at(&id),
                    format!(
                        "the bag id must be nominal, string or numeric, not {}; {shape}",
                        describe(other)
                    ),
                ))
            }
        };
        let dim = match bag.kind {
            AttrType::Relational(0) => {
                return Err((
                    bag.line,
                    at(&bag),
                    "the relational attribute declares no instance attributes".into(),
                ))
            }
            AttrType::Relational(d) => d,
            ref other => {
                return Err((
                    bag.line,
                    at(&bag),
                    format!(
                        "the second attribute must be relational, not {}; {shape}",
                        describe(other)
                    ),
                ))
            }
        };
        let class = match class {
            None => None,
            Some(class) => match class.kind {
                AttrType::Nominal(ref values) => {
                    if let Some(v) = values.iter().find(|v| v.parse::<i64>().is_err()) {
                        return Err((
                            class.line,
                            at(&class),
                            format!("class value `{}` is not an integer (class labels are integers, as in the CSV layout)", show(v)),
                        ));
                    }
                    Some((class.name, values.iter().cloned().collect()))
                }
                ref other => {
                    return Err((
                        class.line,
                        at(&class),
                        format!("the class must be nominal, not {}", describe(other)),
                    ))
                }
            },
        };
        Ok(Layout {
            id_name: id.name,
            id_values,
            bag_name: bag.name,
            dim,
            class,
        })
    }

    fn n_fields(&self) -> usize {
        2 + usize::from(self.class.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::builtin;
    use crate::data::csv::parse_csv;
    use crate::data::synth;

    const SMALL: &str = "% a comment\n\
        @RELATION 'tiny set'\n\
        @Attribute id {a,'b c'}\n\
        @attribute bag RELATIONAL\n\
        \t@attribute x1 numeric % trailing comment\n\
        \t@attribute 'x 2' REAL\n\
        @end bag\n\
        @attribute class {0,1}\n\
        \n\
        @DATA\n\
        a,\"1,2\\n3,4\",1\n\
        'b c','5,6',0\n";

    fn parse_error(text: &str) -> (usize, String) {
        match parse_arff("t.arff", text) {
            Err(Error::Parse { line, field, .. }) => (line, field),
            other => panic!("expected a parse error, got {other:?}"),
        }
    }

    #[test]
    fn reads_weka_layout() {
        let d = parse_arff("t", SMALL).unwrap();
        assert_eq!((d.n_bags(), d.n_instances(), d.dim()), (2, 3, 2));
        assert_eq!(d.bag_ids(), &["a".to_string(), "b c".to_string()]);
        assert_eq!(d.labels(), Some(&[1, 0][..]));
        assert_eq!(d.bag(0).as_slice(), &[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(d.bag(1).as_slice(), &[5.0, 6.0]);
    }

    #[test]
    fn equals_the_same_data_as_csv() {
        let from_csv = parse_csv("t", "1,a,1,2\n1,a,3,4\n0,b c,5,6\n").unwrap();
        assert_eq!(parse_arff("t", SMALL).unwrap(), from_csv);
    }

    #[test]
    fn numeric_ids_and_trailing_instance_separator() {
        let text = "@relation test\n@attribute id numeric\n@attribute bag relational\n\
                    \x20 @attribute val numeric\n@end bag\n@data\n1,\"0.5\\n\"\n2,\"1\\n2\\n\"\n";
        let d = parse_arff("t", text).unwrap();
        assert_eq!(d.bag_ids(), &["1".to_string(), "2".to_string()]);
        assert_eq!(d.bag_starts(), &[0, 1, 3]);
        assert_eq!(d.labels(), None);
    }

    #[test]
    fn real_line_breaks_and_unlabelled_bags() {
        let text = "@relation r\n@attribute id string\n@attribute bag relational\n\
                    @attribute v numeric\n@end bag\n@attribute class {0,1}\n@data\n\
                    x,\"1\n2\",?\ny,'3',?\n";
        let d = parse_arff("t", text).unwrap();
        assert_eq!(d.labels(), None);
        assert_eq!(d.bag(0).as_slice(), &[1.0, 2.0]);
    }

    #[test]
    fn round_trips_musk1_losslessly() {
        let musk1 = builtin::find("musk1").unwrap();
        let d = parse_csv("musk1", musk1.csv).unwrap();
        let back = parse_arff("musk1", &to_arff(&d)).unwrap();
        assert_eq!(back, d);
    }

    #[test]
    fn round_trips_generated_multi_class_sets() {
        for d in [
            synth::mida_two(11).data,
            synth::mialm_ii(30, 6, 11).unwrap().data,
        ] {
            let back = parse_arff(d.name(), &to_arff(&d)).unwrap();
            assert_eq!(back, d);
            assert_eq!(back.n_classes(), d.n_classes());
        }
    }

    /// The file reader (lines read piece by piece) and the text parser agree on every
    /// prefix of a file: the same data set or the same error.
    #[test]
    fn reading_a_file_equals_parsing_its_text() {
        use rand::{RngExt, SeedableRng};
        let dir = std::env::temp_dir().join(format!("mil-arff-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("t.arff");
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(5);
        let musk1 = to_arff(&parse_csv("musk1", builtin::find("musk1").unwrap().csv).unwrap());
        // Weka's escaped instance breaks as real ones in some bags, CRLF endings and
        // comments, so that records span lines and pieces of 64 KiB.
        let text = musk1
            .replacen("\\n", "\n", 400)
            .replace("\n@data", "\n% the rows\n@data")
            .replace('\n', "\r\n");
        let read = |bytes: &[u8]| {
            std::fs::write(&f, bytes).unwrap();
            let file = read_arff_file(&f).map_err(|e| e.to_string());
            let name = crate::data::show_all(&f.display().to_string());
            let parsed = std::str::from_utf8(bytes)
                .map_err(|e| e.to_string())
                .and_then(|t| parse_arff(&name, t).map_err(|e| e.to_string()));
            (file, parsed)
        };
        let (file, parsed) = read(text.as_bytes());
        assert_eq!(file.as_ref().unwrap().n_bags(), 92);
        assert_eq!(file, parsed);
        for _ in 0..40 {
            let cut = rng.random_range(0..text.len());
            if !text.is_char_boundary(cut) {
                continue;
            }
            let (file, parsed) = read(&text.as_bytes()[..cut]);
            assert_eq!(file, parsed, "the file cut at byte {cut}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn round_trips_awkward_values_ids_and_no_labels() {
        let d = Dataset::new(
            "odd name, with 'quotes'",
            2,
            vec![0.1, -2e-9, 1e300, f64::MIN_POSITIVE, 1.0 / 3.0, -0.0],
            vec![0, 2, 3],
            vec!["a b".into(), "it's, \"odd\" %\\".into()],
            None,
            vec![],
        )
        .unwrap();
        let back = parse_arff("odd name, with 'quotes'", &to_arff(&d)).unwrap();
        assert_eq!(back, d);
        assert!(back
            .features()
            .iter()
            .zip(d.features())
            .all(|(a, b)| a.to_bits() == b.to_bits()));
    }

    #[test]
    fn names_the_line_and_field_of_each_problem() {
        let head = "@relation r\n@attribute id {a,b}\n@attribute bag relational\n\
                    @attribute f1 numeric\n@attribute f2 numeric\n@end bag\n\
                    @attribute class {0,1}\n@data\n";
        // (data rows, line of the problem, field mentioned)
        let cases = [
            ("a,\"1,2\\n3\",1\n", 9, "instance 2"), // ragged instance
            ("a,\"1,2\",1\nb,\"1,x\",0\n", 10, "feature 2"), // non-numeric
            ("a,\"NaN,2\",1\n", 9, "feature 1"),    // NaN
            ("a,\"1,inf\",1\n", 9, "feature 2"),    // infinite
            ("a,\"1,?\",1\n", 9, "feature 2"),      // missing value
            ("a,\"1,2\",1\na,\"3,4\",1\n", 10, "field 1"), // bag id again
            ("a,\"1,2\",1\nc,\"3,4\",1\n", 10, "field 1"), // undeclared id
            ("a,\"1,2\",2\n", 9, "field 3"),        // undeclared class
            ("a,\"1,2\"\n", 9, "row"),              // missing field
            ("a,\"\",1\n", 9, "field 2"),           // empty bag
            ("a,\"1,2\",1\nb,\"1,2,1\n", 10, "text"), // unterminated quote
            ("a,?,1\n", 9, "field 2"),              // missing bag
            ("{0 a, 1 \"1,2\", 2 1}\n", 9, "row"),  // sparse row
        ];
        for (rows, line, field) in cases {
            let (l, f) = parse_error(&format!("{head}{rows}"));
            assert_eq!(l, line, "{rows:?}");
            assert!(f.contains(field), "{rows:?}: field {f:?}");
        }
    }

    #[test]
    fn rejects_malformed_headers() {
        let cases = [
            ("@attribute id {a}\n@data\n", 1),
            ("@relation r\n@attribute id {a}\n@attribute bag relational\n@attribute f date\n@end bag\n@data\n", 4),
            ("@relation r\n@attribute id {a}\n@attribute bag relational\n@attribute f {x,y}\n@end bag\n@data\n", 4),
            ("@relation r\n@attribute id {a}\n@attribute bag relational\n@attribute f numeric\n@data\n", 5),
            ("@relation r\n@attribute id {a}\n@attribute bag relational\n@attribute f numeric\n@end other\n@data\n", 5),
            ("@relation r\n@attribute id {a}\n@attribute bag numeric\n@data\n", 3),
            ("@relation r\n@attribute id {a}\n@attribute bag relational\n@attribute f numeric\n@end bag\n@attribute class {no,yes}\n@data\n", 6),
            ("@relation r\n@attribute id {a}\n@attribute bag relational\n@end bag\n@data\n", 3),
        ];
        for (text, line) in cases {
            assert_eq!(parse_error(text).0, line, "{text:?}");
        }
    }

    #[test]
    fn empty_input_is_an_error() {
        assert!(matches!(parse_arff("t", ""), Err(Error::Data { .. })));
        assert!(matches!(
            parse_arff("t", "% only a comment\n\n"),
            Err(Error::Data { .. })
        ));
        let header_only = "@relation r\n@attribute id string\n@attribute bag relational\n\
                           @attribute f numeric\n@end bag\n@data\n";
        assert!(matches!(
            parse_arff("t", header_only),
            Err(Error::Data { .. })
        ));
    }

    #[test]
    fn bom_and_every_line_ending_read_alike() {
        let lf = parse_arff("t", SMALL).unwrap();
        let crlf = SMALL.replace('\n', "\r\n");
        let cr = SMALL.replace('\n', "\r");
        for text in [
            format!("\u{feff}{SMALL}"),
            crlf,
            cr.clone(),
            format!("\u{feff}{cr}"),
        ] {
            assert_eq!(parse_arff("t", &text).unwrap(), lf, "{text:?}");
        }
        // Line numbers count CR-only breaks too.
        let bad = format!("{SMALL}x,'1,2',1\n").replace('\n', "\r");
        assert_eq!(parse_error(&bad).0, 13);
    }

    #[test]
    fn control_characters_are_escaped_in_messages() {
        let head = "@relation r\n@attribute id {a,b}\n@attribute bag relational\n\
                    @attribute f1 numeric\n@end bag\n@attribute class {0,1}\n@data\n";
        for rows in ["a,\"1\x07\",1\n", "c\x1b,\"1\",1\n", "a,\"1\"\x7f,1\n"] {
            let m = parse_arff("t", &format!("{head}{rows}"))
                .unwrap_err()
                .to_string();
            assert!(!m.chars().any(|c| c.is_control()), "{m:?}");
            assert!(
                m.contains("\\x07") || m.contains("\\x1b") || m.contains("\\x7f"),
                "{m:?}"
            );
        }
        let m = parse_arff("t", "@relation r\n@attribute id {a}\n@attribute bag relational\n@attribute f da\x07te\n@end bag\n@data\n")
            .unwrap_err()
            .to_string();
        assert!(m.contains("da\\x07te"), "{m:?}");
    }
}
