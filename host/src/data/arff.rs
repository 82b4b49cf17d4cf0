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

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::Path;

use super::csv::index_labels;
use super::dataset::Dataset;
use super::{normalize_text, show};
use crate::error::{Error, Result};

/// Reads a multi-instance ARFF file; errors name the file, line and field.
pub fn read_arff_file(path: &Path) -> Result<Dataset> {
    let text = super::read_text(path)?;
    parse_arff(&super::show_all(&path.display().to_string()), &text)
}

/// Parses multi-instance ARFF text; `name` is used in error messages and as the data
/// set's name. A leading byte-order mark is skipped, and CRLF and CR-only line endings
/// read as LF.
pub fn parse_arff(name: &str, text: &str) -> Result<Dataset> {
    let text = &*normalize_text(text);
    let err = |line: usize, field: &str, problem: String| Error::Parse {
        file: name.to_string(),
        line,
        field: field.to_string(),
        problem,
    };
    let records = split_records(text).map_err(|(line, problem)| err(line, "text", problem))?;
    let mut records = records.into_iter();
    let header =
        parse_header(&mut records).map_err(|(line, field, problem)| err(line, &field, problem))?;
    let Some((attributes, data_line)) = header else {
        return Err(Error::data(name, "no @relation header (the file is empty)"));
    };
    let layout = Layout::from_header(attributes, data_line).map_err(|(l, f, p)| err(l, &f, p))?;

    let dim = layout.dim;
    let mut features = Vec::new();
    let mut bag_starts = vec![0usize];
    let mut bag_ids: Vec<String> = Vec::new();
    let mut raw_labels: Vec<String> = Vec::new();
    let mut first_line: HashMap<String, usize> = HashMap::new();
    for record in records {
        let line = record.line;
        if record.text.starts_with('{') {
            return Err(err(
                line,
                "row",
                "sparse rows ({index value, …}) are not supported".into(),
            ));
        }
        let fields = split_fields(record.text).map_err(|p| err(line, "row", p))?;
        if fields.len() != layout.n_fields() {
            return Err(err(
                line,
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
        let id_field = format!("field 1 ({})", show(&layout.id_name));
        let id = &fields[0];
        if id.is_missing() {
            return Err(err(line, &id_field, "missing bag id `?`".into()));
        }
        if id.text.is_empty() {
            return Err(err(line, &id_field, "empty bag id".into()));
        }
        if let Some(values) = &layout.id_values {
            if !values.contains(&id.text) {
                return Err(err(
                    line,
                    &id_field,
                    format!(
                        "bag id `{}` is not among the declared values",
                        show(&id.text)
                    ),
                ));
            }
        }
        if let Some(first) = first_line.insert(id.text.clone(), line) {
            return Err(err(
                line,
                &id_field,
                format!(
                    "bag `{}` appears again (first on line {first}); one row per bag",
                    show(&id.text)
                ),
            ));
        }

        let bag_field = format!("field 2 ({})", show(&layout.bag_name));
        let bag = &fields[1];
        if bag.is_missing() {
            return Err(err(
                line,
                &bag_field,
                "missing bag `?`: missing values are not supported".into(),
            ));
        }
        let before = features.len();
        read_bag(&bag.text, dim, &mut features)
            .map_err(|(at, problem)| err(line, &format!("{bag_field}{at}"), problem))?;
        if features.len() == before {
            return Err(err(
                line,
                &bag_field,
                format!("bag `{}` has no instances", show(&id.text)),
            ));
        }

        let label = match &layout.class {
            None => "?".to_string(),
            Some((class_name, values)) => {
                let class = &fields[2];
                let field = format!("field 3 ({})", show(class_name));
                if class.is_missing() {
                    "?".to_string()
                } else if values.contains(&class.text) {
                    class.text.clone()
                } else {
                    return Err(err(
                        line,
                        &field,
                        format!(
                            "class `{}` is not among the declared values",
                            show(&class.text)
                        ),
                    ));
                }
            }
        };
        bag_ids.push(id.text.clone());
        raw_labels.push(label);
        bag_starts.push(features.len() / dim);
    }
    if bag_ids.is_empty() {
        return Err(Error::data(name, "no bags after @data"));
    }
    let (labels, class_names) = index_labels(name, &raw_labels)?;
    Dataset::new(
        name,
        dim,
        features,
        bag_starts,
        bag_ids,
        labels,
        class_names,
    )
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
            let v: f64 = value
                .trim()
                .parse()
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
    /// The record's text, trimmed.
    text: &'a str,
}

/// Splits the text into records at line breaks outside quotes, dropping `%` comments and
/// blank lines. An unterminated quote is an error at the line where it opened. Scans
/// bytes: every delimiter is ASCII, which never occurs inside a multi-byte UTF-8 character.
fn split_records(text: &str) -> std::result::Result<Vec<Record<'_>>, (usize, String)> {
    let bytes = text.as_bytes();
    let mut records = Vec::new();
    let mut push = |from: usize, to: usize, line: usize| {
        let piece = text[from..to].trim();
        if !piece.is_empty() {
            records.push(Record { line, text: piece });
        }
    };
    let (mut line, mut start_line, mut start) = (1, 1, 0);
    // Where a `%` comment cut the current record short.
    let mut cut: Option<usize> = None;
    let mut quote: Option<(u8, usize)> = None;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'\n' {
            line += 1;
        }
        match quote {
            Some((q, _)) => {
                if b == b'\\' {
                    if bytes.get(i + 1) == Some(&b'\n') {
                        line += 1;
                    }
                    i += 1;
                } else if b == q {
                    quote = None;
                }
            }
            None if cut.is_some() && b != b'\n' => {}
            None => match b {
                b'\n' => {
                    push(start, cut.take().unwrap_or(i), start_line);
                    start = i + 1;
                    start_line = line;
                }
                b'%' => cut = Some(i),
                b'\'' | b'"' => quote = Some((b, line)),
                _ => {}
            },
        }
        i += 1;
    }
    if let Some((q, opened)) = quote {
        return Err((
            opened,
            format!("quote {} opened here is never closed", q as char),
        ));
    }
    push(start, cut.unwrap_or(bytes.len()), start_line);
    Ok(records)
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
