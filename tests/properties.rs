//! Property tests of everything that reads untrusted bytes: the CSV and ARFF data readers,
//! the `.npy` bag reader, the host model loader and the core's compact model parser.
//! Inputs are arbitrary text or bytes and mutations (edits, special tokens, truncations)
//! of valid files made here. For every input the reader returns a value or an error,
//! never panics, and what it accepts is sound: data sets have consistent shapes and
//! finite features and survive a write/read round trip; `.npy` arrays hold the finite
//! values their shape says; host models hold finite numbers, round-trip and score
//! without panicking; compact models run inference without panicking.
//!
//! Each property runs a fixed number of cases from a fixed seed (set in `config`), so a
//! run is reproducible; `PROPTEST_CASES` does not apply. About 310,000 cases in all.

use mil_core::container::layout::{header::CHECKSUM as CHECKSUM_OFFSET, model_checksum};
use mil_core::score::Pooling;
use mil_core::{Encoding, Instances, Model};
use mil_toolkit::classifier::citation_knn::{CitationKnn, Scaling};
use mil_toolkit::classifier::milr::Milr;
use mil_toolkit::classifier::{BagModel, Classifier};
use mil_toolkit::data::arff::{parse_arff, to_arff};
use mil_toolkit::data::csv::{parse_csv, to_csv};
use mil_toolkit::data::npy::parse_npy;
use mil_toolkit::export::{export, Affine, Compact, Head};
use mil_toolkit::model::{ClassifierModel, HostModel};
use mil_toolkit::projection::{LinearProjection, ProjectionKind};
use mil_toolkit::Dataset;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngSeed, TestRunner};

/// A fixed seed and case count, no regression files, no forking.
fn config(cases: u32) -> Config {
    Config {
        cases,
        rng_seed: RngSeed::Fixed(0x5EED_0021),
        failure_persistence: None,
        max_shrink_iters: 2048,
        ..Config::default()
    }
}

// ---------------------------------------------------------------------------------------
// Text mutations

/// One edit of a text at a position chosen relative to its length.
#[derive(Debug, Clone)]
enum Edit {
    /// Insert a token.
    Insert(Index, String),
    /// Replace up to `n` bytes by a token.
    Replace(Index, usize, String),
    /// Delete up to `n` bytes.
    Delete(Index, usize),
    /// Repeat a stretch of up to `n` bytes.
    Duplicate(Index, usize),
    /// Cut the text short.
    Truncate(Index),
    /// Replace the `i`-th number (JSON) or field (data files) by a token.
    Token(Index, String),
}

/// The largest char boundary at or before `i`.
fn floor(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Byte ranges of the tokens `Edit::Token` may replace: maximal runs of
/// `is_token` characters.
fn token_spans(s: &str, is_token: fn(char) -> bool) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = None;
    for (i, c) in s.char_indices() {
        match (is_token(c), start) {
            (true, None) => start = Some(i),
            (false, Some(b)) => {
                spans.push((b, i));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(b) = start {
        spans.push((b, s.len()));
    }
    spans
}

fn apply(text: &str, edits: &[Edit], is_token: fn(char) -> bool) -> String {
    let mut s = text.to_string();
    for e in edits {
        let at = |i: &Index, s: &str| floor(s, i.index(s.len() + 1));
        match e {
            Edit::Insert(i, t) => {
                let p = at(i, &s);
                s.insert_str(p, t);
            }
            Edit::Replace(i, n, t) => {
                let p = at(i, &s);
                let q = floor(&s, p + n);
                s.replace_range(p..q, t);
            }
            Edit::Delete(i, n) => {
                let p = at(i, &s);
                let q = floor(&s, p + n);
                s.replace_range(p..q, "");
            }
            Edit::Duplicate(i, n) => {
                let p = at(i, &s);
                let q = floor(&s, p + n);
                let copy = s[p..q].to_string();
                s.insert_str(q, &copy);
            }
            Edit::Truncate(i) => {
                let p = at(i, &s);
                s.truncate(p);
            }
            Edit::Token(i, t) => {
                let spans = token_spans(&s, is_token);
                if !spans.is_empty() {
                    let (p, q) = spans[i.index(spans.len())];
                    s.replace_range(p..q, t);
                }
            }
        }
    }
    s
}

fn edits(token: BoxedStrategy<String>) -> impl Strategy<Value = Vec<Edit>> {
    let edit = prop_oneof![
        1 => (any::<Index>(), token.clone()).prop_map(|(i, t)| Edit::Insert(i, t)),
        1 => (any::<Index>(), 0..8usize, token.clone()).prop_map(|(i, n, t)| Edit::Replace(i, n, t)),
        1 => (any::<Index>(), 1..16usize).prop_map(|(i, n)| Edit::Delete(i, n)),
        1 => (any::<Index>(), 1..64usize).prop_map(|(i, n)| Edit::Duplicate(i, n)),
        1 => any::<Index>().prop_map(Edit::Truncate),
        4 => (any::<Index>(), token).prop_map(|(i, t)| Edit::Token(i, t)),
    ];
    proptest::collection::vec(edit, 1..4)
}

// ---------------------------------------------------------------------------------------
// Data files

const CSV: &str = "1,a,1.5,-2\n1,a,3,4e-3\n0,b,5,6\n0,c,0,-0\n1,d,1e300,7\n";

const ARFF: &str = "% a comment\n\
    @RELATION 'tiny set'\n\
    @Attribute id {a,'b c',d}\n\
    @attribute bag RELATIONAL\n\
    \t@attribute x1 numeric % trailing comment\n\
    \t@attribute 'x 2' REAL\n\
    @end bag\n\
    @attribute class {0,1}\n\
    \n\
    @DATA\n\
    a,\"1,2\\n3,4\",1\n\
    'b c','5,6',0\n\
    d,\"7,8\n9,10\",1\n";

/// Tokens that stress number parsing, quoting, line structure and header keywords.
fn data_token() -> BoxedStrategy<String> {
    const SPECIAL: &[&str] = &[
        "NaN",
        "nan",
        "inf",
        "-inf",
        "infinity",
        "1e400",
        "-1e400",
        "1e-400",
        "-0",
        "?",
        "",
        ",",
        "\n",
        "\r",
        "\r\n",
        "\u{feff}",
        "'",
        "\"",
        "\\",
        "\\n",
        "%",
        "{",
        "}",
        "0x1p3",
        "1_000",
        "+1",
        "01",
        "9223372036854775808",
        "é",
        "\x07",
        "\0",
        " ",
        "\t",
        "@data",
        "@end bag",
        "@relation r",
        "@attribute f numeric",
        "@attribute c {0,1}",
        "relational",
        "1,2",
        "'1,2'",
        "\"1\\n2\"",
    ];
    prop_oneof![
        3 => proptest::sample::select(SPECIAL).prop_map(str::to_string),
        // Valid numbers, so that many mutated files still parse and reach the checks
        // behind the parser.
        2 => "-?[0-9]{1,3}(\\.[0-9]{1,2})?(e-?[0-9]{1,2})?",
        1 => "[-+0-9.eE,?a-c \n\"'%@{}]{0,6}",
    ]
    .boxed()
}

/// Fields of data files: what lies between separators.
fn is_data_token(c: char) -> bool {
    !matches!(c, ',' | '\n' | '\r' | '"' | '\'' | '{' | '}')
}

/// Everything a data set promises, and that writing and reading it back gives it again.
fn check_dataset(d: &Dataset, from_csv: bool) -> Result<(), TestCaseError> {
    let (n, dim) = (d.n_bags(), d.dim());
    prop_assert!(dim > 0 && n > 0);
    prop_assert_eq!(d.features().len(), d.n_instances() * dim);
    prop_assert!(d.features().iter().all(|v| v.is_finite()));
    let starts = d.bag_starts();
    prop_assert_eq!(starts.len(), n + 1);
    prop_assert_eq!(starts[0], 0);
    prop_assert_eq!(starts[n], d.n_instances());
    prop_assert!(starts.windows(2).all(|w| w[0] < w[1]));
    prop_assert_eq!(d.bag_ids().len(), n);
    if let Some(labels) = d.labels() {
        prop_assert_eq!(labels.len(), n);
        prop_assert!(labels.iter().all(|&l| l < d.class_names().len()));
    }
    // CSV cannot carry every bag id an ARFF file can (commas, line breaks); ARFF can.
    if from_csv {
        prop_assert_eq!(&parse_csv(d.name(), &to_csv(d)).unwrap(), d);
    }
    prop_assert_eq!(&parse_arff(d.name(), &to_arff(d)).unwrap(), d);
    Ok(())
}

proptest! {
    #![proptest_config(config(40_000))]

    #[test]
    fn csv_arbitrary_text(text in "[-+0-9.eE,?a-c \t\r\n\u{feff}é\x07]{0,120}") {
        if let Ok(d) = parse_csv("t", &text) {
            check_dataset(&d, true)?;
        }
    }

    #[test]
    fn csv_mutations(e in edits(data_token())) {
        let text = apply(CSV, &e, is_data_token);
        if let Ok(d) = parse_csv("t", &text) {
            check_dataset(&d, true)?;
        }
    }

    #[test]
    fn arff_arbitrary_text(
        body in "[-+0-9.eE,?a-c \t\r\n'\"%{}\\\\]{0,100}",
        header in any::<bool>(),
    ) {
        // Half the cases behind a valid header, so the data rows are reached.
        let text = if header { format!("{}{body}", &ARFF[..ARFF.find("a,").unwrap()]) } else { body };
        if let Ok(d) = parse_arff("t", &text) {
            check_dataset(&d, false)?;
        }
    }

    #[test]
    fn arff_mutations(e in edits(data_token())) {
        let text = apply(ARFF, &e, is_data_token);
        if let Ok(d) = parse_arff("t", &text) {
            check_dataset(&d, false)?;
        }
    }
}

#[test]
fn the_data_seeds_parse() {
    check_dataset(&parse_csv("t", CSV).unwrap(), true).unwrap();
    check_dataset(&parse_arff("t", ARFF).unwrap(), false).unwrap();
}

// ---------------------------------------------------------------------------------------
// Host models

fn tiny_set() -> Dataset {
    let bags: [&[[f64; 3]]; 6] = [
        &[[0.0, 1.0, 2.0], [0.5, 1.5, 2.5]],
        &[[0.2, 0.9, 2.1]],
        &[[0.1, 1.2, 1.9], [0.3, 1.1, 2.2], [0.0, 0.8, 2.0]],
        &[[3.0, -1.0, 0.5], [2.5, -0.5, 0.0]],
        &[[3.2, -1.1, 0.4]],
        &[[2.9, -0.7, 0.6], [3.1, -0.9, 0.2]],
    ];
    let mut features = Vec::new();
    let mut starts = vec![0];
    for bag in bags {
        for x in bag {
            features.extend_from_slice(x);
        }
        starts.push(features.len() / 3);
    }
    Dataset::new(
        "tiny",
        3,
        features,
        starts,
        (0..6).map(|b| format!("b{b}")).collect(),
        Some(vec![0, 0, 0, 1, 1, 1]),
        vec!["0".into(), "1".into()],
    )
    .unwrap()
}

fn tiny_projection() -> LinearProjection {
    LinearProjection {
        kind: ProjectionKind::Pca,
        mean: vec![1.5, 0.2, 1.3],
        scale: vec![1.4, 1.0, 0.9],
        matrix: vec![0.6, -0.1, -0.5, 0.3, 0.2, 0.7],
        output_dim: 2,
        diagnostics: vec![("explained".into(), 0.93)],
    }
}

/// Saved models trained here through the library: Citation-kNN with z-score scaling, the
/// same on a projection with Weka's scaling, and MILR.
fn host_model_seeds() -> Vec<String> {
    let data = tiny_set();
    let train: Vec<usize> = (0..data.n_bags()).collect();
    let names = data.class_names().to_vec();
    let knn = CitationKnn {
        citers: 2,
        ..CitationKnn::default()
    };
    let projection = tiny_projection();
    let projected = projection.transform(&data).unwrap();
    let weka = CitationKnn {
        scaling: Scaling::Weka,
        ..knn
    };
    let mut with_projection = HostModel::new(
        names.clone(),
        3,
        Some(projection),
        ClassifierModel::CitationKnn(weka.fit(projected.select(&train)).unwrap()),
    );
    with_projection.training_data = Some("tiny.csv".into());
    let models = [
        HostModel::new(
            names.clone(),
            3,
            None,
            ClassifierModel::CitationKnn(knn.fit(data.select(&train)).unwrap()),
        ),
        with_projection,
        HostModel::new(
            names,
            3,
            None,
            ClassifierModel::Milr(Milr::default().fit(data.select(&train)).unwrap()),
        ),
    ];
    models
        .iter()
        .map(|m| serde_json::to_string(m).unwrap())
        .collect()
}

/// JSON values to put in place of a number.
fn json_token() -> BoxedStrategy<String> {
    const SPECIAL: &[&str] = &[
        "1e400",
        "-1e400",
        "1e-400",
        "NaN",
        "Infinity",
        "-0",
        "0",
        "-1",
        "1",
        "2",
        "3",
        "0.5",
        "1e308",
        "-1e308",
        "4294967296",
        "18446744073709551615",
        "18446744073709551616",
        "9007199254740993",
        "null",
        "true",
        "\"\"",
        "\"1\"",
        "[]",
        "{}",
        "[0]",
        "[1,2]",
    ];
    prop_oneof![
        4 => proptest::sample::select(SPECIAL).prop_map(str::to_string),
        1 => "[-0-9.eE\\[\\]{},:\"a-z]{0,6}",
    ]
    .boxed()
}

/// Numbers in JSON text.
fn is_json_number(c: char) -> bool {
    matches!(c, '-' | '+' | '.' | 'e' | 'E' | '0'..='9')
}

/// `true` when the `Debug` form of a value shows a NaN or infinity outside its strings.
fn shows_non_finite(debug: &str) -> bool {
    let mut outside = String::with_capacity(debug.len());
    let mut in_string = false;
    let mut escaped = false;
    for c in debug.chars() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
            outside.push(' ');
        } else {
            outside.push(c);
        }
    }
    outside
        .split(|c: char| !c.is_ascii_alphanumeric())
        .any(|w| w == "NaN" || w == "inf")
}

fn check_host_model(text: &str) -> Result<(), TestCaseError> {
    let Ok(model) = HostModel::parse("m.json", text) else {
        return Ok(());
    };
    prop_assert!(
        !shows_non_finite(&format!("{model:?}")),
        "accepted a model with a non-finite number"
    );
    let again = serde_json::to_string(&model).unwrap();
    prop_assert_eq!(&HostModel::parse("m.json", &again).unwrap(), &model);
    // Scoring bags of the right dimension returns scores or an error, never a panic.
    let dim = model.input_dim;
    if dim <= 64 {
        let data = tiny_set();
        let features = (0..2 * dim).map(|i| (i % 7) as f64 - 3.0).collect();
        let bags = Dataset::new(
            "x",
            dim,
            features,
            vec![0, 1, 2],
            vec!["p".into(), "q".into()],
            None,
            vec![],
        )
        .unwrap();
        let _ = model.scores(bags.select(&[0, 1]));
        if dim == data.dim() {
            let _ = model.scores(data.select(&[0, 3]));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(30_000))]

    #[test]
    fn host_model_mutations(seed in 0..3usize, e in edits(json_token())) {
        let seeds = host_model_seeds_cached();
        check_host_model(&apply(&seeds[seed], &e, is_json_number))?;
    }
}

proptest! {
    #![proptest_config(config(10_000))]

    #[test]
    fn host_model_arbitrary_text(text in "[-0-9.eE\\[\\]{},:\" a-z]{0,80}") {
        check_host_model(&text)?;
        check_host_model(&format!("{{\"format\":\"mil-host-model\",\"version\":1,{text}"))?;
    }
}

fn host_model_seeds_cached() -> &'static [String] {
    static SEEDS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    SEEDS.get_or_init(host_model_seeds)
}

#[test]
fn the_host_model_seeds_load_and_score() {
    let data = tiny_set();
    for text in host_model_seeds_cached() {
        let model = HostModel::parse("m.json", text).unwrap();
        assert!(!shows_non_finite(&format!("{model:?}")));
        let scores = model.scores(data.select(&[0, 1, 2, 3, 4, 5])).unwrap();
        assert_eq!(scores.len(), 6);
        assert_eq!(model.classifier.n_classes(), 2);
    }
    assert!(shows_non_finite("X { a: [1.0, NaN], b: \"NaN\" }"));
    assert!(shows_non_finite("X { a: -inf }"));
    assert!(!shows_non_finite("X { info: \"inf \\\" NaN\", a: 1e300 }"));
}

// ---------------------------------------------------------------------------------------
// Compact models

/// Models of each head kind in each encoding, exported through the library.
fn compact_seeds() -> Vec<Vec<u8>> {
    let data = tiny_set();
    let p = tiny_projection();
    let stage = Affine::from_projection(&p);
    let heads = [
        Head::None,
        Head::Linear {
            weights: vec![0.5, -0.25],
            bias: vec![0.1],
            pooling: Pooling::Softmax,
            beta: 3.0,
        },
        Head::CitationKnn {
            references: p.transform(&data).unwrap(),
            citers: 2,
            r: 2,
        },
        Head::M3ic {
            weights: vec![1.0, 0.0, 0.0, 1.0, -1.0, -1.0],
            bias: vec![0.0, 0.1, 0.2],
            instance_norm: None,
        },
    ];
    let mut out = Vec::new();
    for head in heads {
        for encoding in [Encoding::F32, Encoding::Q15, Encoding::Q7] {
            let compact = Compact {
                stage: Some(stage.clone()),
                head: head.clone(),
            };
            out.push(export(&compact, encoding, &data).unwrap());
        }
    }
    out
}

fn compact_seeds_cached() -> &'static [Vec<u8>] {
    static SEEDS: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
    SEEDS.get_or_init(compact_seeds)
}

/// Recomputes the checksum so that a mutation reaches the checks behind it.
fn fix_checksum(bytes: &mut [u8]) {
    if bytes.len() >= CHECKSUM_OFFSET + 4 {
        let total = u32::from_le_bytes(bytes[16..20].try_into().unwrap()) as usize;
        let end = total.clamp(CHECKSUM_OFFSET + 4, bytes.len());
        let crc = model_checksum(&bytes[..end]);
        bytes[CHECKSUM_OFFSET..CHECKSUM_OFFSET + 4].copy_from_slice(&crc.to_le_bytes());
    }
}

/// Parses; on success runs every entry point on small inputs. Returns whether it parsed.
fn exercise(bytes: &[u8]) -> bool {
    let Ok(model) = Model::parse(bytes) else {
        return false;
    };
    let dim = model.input_dim().min(64);
    for n in [1usize, 3] {
        let f: Vec<f32> = (0..n * dim).map(|i| (i % 11) as f32 - 5.0).collect();
        let q: Vec<i16> = (0..n * dim)
            .map(|i| (i as i16).wrapping_mul(4099))
            .collect();
        let mut scratch = vec![0.0f32; model.scratch_len(n).min(1 << 16)];
        let mut scores = vec![0.0f32; model.output_dim().min(1 << 10)];
        let _ = model.classify(Instances::F32(&f), &mut scratch, &mut scores);
        let _ = model.classify(Instances::I16(&q), &mut scratch, &mut scores);
        let mut y = vec![0.0f32; model.projected_dim().min(1 << 10)];
        let _ = model.project(Instances::F32(&f[..dim]), &mut y);
        let _ = model.project(Instances::I16(&q[..dim]), &mut y);
        let mut out = vec![0i16; dim];
        let _ = model.quantize_instance(&f[..dim], &mut out);
    }
    true
}

/// One byte-level change of a model.
#[derive(Debug, Clone)]
enum ByteEdit {
    Set(Index, u8),
    Flip(Index, u8),
    /// A little-endian u32 with an extreme value over four bytes.
    Word(Index, u32),
    Truncate(Index),
}

fn byte_edit() -> impl Strategy<Value = ByteEdit> {
    prop_oneof![
        (any::<Index>(), any::<u8>()).prop_map(|(i, b)| ByteEdit::Set(i, b)),
        (any::<Index>(), 0..8u8).prop_map(|(i, b)| ByteEdit::Flip(i, b)),
        (
            any::<Index>(),
            proptest::sample::select(vec![0u32, 1, 2, 0xFFFF, 0x8000_0000, u32::MAX, 0x7F80_0000])
        )
            .prop_map(|(i, w)| ByteEdit::Word(i, w)),
        any::<Index>().prop_map(ByteEdit::Truncate),
    ]
}

fn apply_bytes(seed: &[u8], edits: &[ByteEdit]) -> Vec<u8> {
    let mut b = seed.to_vec();
    for e in edits {
        if b.is_empty() {
            break;
        }
        match e {
            ByteEdit::Set(i, v) => {
                let p = i.index(b.len());
                b[p] = *v;
            }
            ByteEdit::Flip(i, bit) => {
                let p = i.index(b.len());
                b[p] ^= 1 << bit;
            }
            ByteEdit::Word(i, w) => {
                let p = i.index(b.len());
                if p + 4 <= b.len() {
                    b[p..p + 4].copy_from_slice(&w.to_le_bytes());
                }
            }
            ByteEdit::Truncate(i) => {
                let p = i.index(b.len());
                b.truncate(p);
            }
        }
    }
    b
}

proptest! {
    #![proptest_config(config(30_000))]

    #[test]
    fn compact_model_mutations(
        seed in any::<Index>(),
        e in proptest::collection::vec(byte_edit(), 1..3),
        repair in any::<bool>(),
    ) {
        let seeds = compact_seeds_cached();
        let mut b = apply_bytes(&seeds[seed.index(seeds.len())], &e);
        if repair {
            fix_checksum(&mut b);
        }
        exercise(&b);
        // A proper prefix of a valid model is never a model.
        let whole = &seeds[seed.index(seeds.len())];
        if let [ByteEdit::Truncate(_)] = e[..] {
            if !repair && b.len() < whole.len() {
                prop_assert!(Model::parse(&b).is_err(), "a prefix of {} bytes parsed", b.len());
            }
        }
    }

    #[test]
    fn compact_model_arbitrary_bytes(
        mut b in proptest::collection::vec(any::<u8>(), 0..300),
        header in any::<bool>(),
    ) {
        if header && b.len() >= 8 {
            b[..4].copy_from_slice(b"MILM");
            b[4..6].copy_from_slice(&1u16.to_le_bytes());
            fix_checksum(&mut b);
        }
        exercise(&b);
    }
}

// ---------------------------------------------------------------------------------------
// `.npy` bags

/// The fixture bags NumPy wrote (`tests/fixtures/npy/`): every float layout the reader
/// takes.
fn npy_seeds() -> Vec<Vec<u8>> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/npy");
    ["slide-a", "slide-b", "slide-c", "slide-d"]
        .iter()
        .map(|bag| std::fs::read(dir.join(format!("{bag}.npy"))).unwrap())
        .collect()
}

fn npy_seeds_cached() -> &'static [Vec<u8>] {
    static SEEDS: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
    SEEDS.get_or_init(npy_seeds)
}

/// Parses `bytes` as one `.npy` bag: never a panic; an accepted array holds as many
/// finite values as its shape says. Returns whether it was accepted.
fn check_npy(bytes: &[u8]) -> Result<bool, TestCaseError> {
    let Ok((header, values)) = parse_npy("t.npy", bytes) else {
        return Ok(false);
    };
    prop_assert_eq!(values.len(), header.rows() * header.cols());
    prop_assert!(values.iter().all(|v| v.is_finite()));
    Ok(true)
}

proptest! {
    #![proptest_config(config(20_000))]

    #[test]
    fn npy_mutations(
        seed in any::<Index>(),
        e in proptest::collection::vec(byte_edit(), 1..3),
    ) {
        let seeds = npy_seeds_cached();
        check_npy(&apply_bytes(&seeds[seed.index(seeds.len())], &e))?;
    }

    #[test]
    fn npy_arbitrary_bytes(mut b in proptest::collection::vec(any::<u8>(), 0..300), magic in any::<bool>()) {
        if magic && b.len() >= 10 {
            b[..8].copy_from_slice(b"\x93NUMPY\x01\x00");
        }
        check_npy(&b)?;
    }
}

#[test]
fn the_npy_seeds_parse_and_mutations_reach_the_values() {
    let seeds = npy_seeds_cached();
    let mut accepted = 0;
    for s in seeds {
        assert!(check_npy(s).unwrap());
        // A changed byte of the values still parses (unless it makes a NaN or infinity).
        for p in (s.len() - 16..s.len()).step_by(3) {
            let mut b = s.clone();
            b[p] ^= 0x01;
            accepted += usize::from(check_npy(&b).unwrap());
        }
    }
    assert!(accepted > 0);
}

#[test]
fn the_compact_seeds_parse_and_mutations_reach_deep() {
    let seeds = compact_seeds_cached();
    assert!(seeds.iter().all(|s| exercise(s)));
    // Single-byte changes with the checksum repaired: some models still parse, so the
    // mutations above exercise inference and not only the header checks.
    let mut parsed = 0;
    for s in seeds {
        for p in (0..s.len()).step_by(7) {
            let mut b = s.clone();
            b[p] ^= 0x01;
            fix_checksum(&mut b);
            parsed += usize::from(exercise(&b));
        }
    }
    assert!(parsed > 20, "{parsed}");
}

/// How many of `cases` inputs drawn from `strategy` `accepted` takes: the mutations must
/// keep enough inputs valid to test what lies behind the first checks.
fn accepted<S: Strategy>(strategy: S, cases: u32, accepted: impl Fn(&S::Value) -> bool) -> u32 {
    let mut runner = TestRunner::new(config(cases));
    (0..cases)
        .filter(|_| accepted(&strategy.new_tree(&mut runner).unwrap().current()))
        .count() as u32
}

#[test]
fn mutations_keep_enough_inputs_valid() {
    let csv = accepted(edits(data_token()), 2000, |e| {
        parse_csv("t", &apply(CSV, e, is_data_token)).is_ok()
    });
    let arff = accepted(edits(data_token()), 2000, |e| {
        parse_arff("t", &apply(ARFF, e, is_data_token)).is_ok()
    });
    let seeds = host_model_seeds_cached();
    let host = accepted((0..3usize, edits(json_token())), 2000, |(s, e)| {
        HostModel::parse("m", &apply(&seeds[*s], e, is_json_number)).is_ok()
    });
    let compact = compact_seeds_cached();
    let core = accepted(
        (any::<Index>(), proptest::collection::vec(byte_edit(), 1..3)),
        2000,
        |(s, e)| {
            let mut b = apply_bytes(&compact[s.index(compact.len())], e);
            fix_checksum(&mut b);
            Model::parse(&b).is_ok()
        },
    );
    for (what, n) in [
        ("csv", csv),
        ("arff", arff),
        ("host model", host),
        ("compact model", core),
    ] {
        assert!(
            (50..1900).contains(&n),
            "{what}: {n} of 2000 mutations accepted"
        );
    }
}

// ---------------------------------------------------------------------------------------
// Merge parts: Gram tiles and cross-validation outcomes

use mil_toolkit::cluster::{bamic, m3ic, ClusterModel};
use mil_toolkit::kernel::tiles::{compute_tile, merge_tiles, parse_tile, GramTile, TileKernel};
use mil_toolkit::pipeline::{check_outcomes, summarize, FoldOutcome};

/// The two tiles of a sharded NSK Gram matrix of [`tiny_set`], as `mil gram --shard`
/// writes them.
fn tile_seeds() -> Vec<String> {
    let data = tiny_set();
    let sizes: Vec<usize> = (0..data.n_bags()).map(|b| data.bag(b).len()).collect();
    (0..2)
        .map(|i| {
            let shard = mil_toolkit::shard::Shard::new(i, 2).unwrap();
            let tile = compute_tile(
                TileKernel::Nsk(&data, 0.5),
                &sizes,
                shard,
                "f00d".into(),
                serde_json::json!({"kernel": "nsk"}),
                &mil_toolkit::progress::Silent,
            )
            .unwrap();
            serde_json::to_string(&tile).unwrap()
        })
        .collect()
}

fn tile_seeds_cached() -> &'static [String] {
    static SEEDS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    SEEDS.get_or_init(tile_seeds)
}

/// A tile's text with its checksum recomputed, as an edit that keeps the checksum
/// consistent makes it: what only the merge's own checks can refuse.
fn with_fixed_checksum(text: &str) -> Option<String> {
    let mut tile: GramTile = serde_json::from_str(text).ok()?;
    tile.checksum.clear();
    tile.checksum = mil_toolkit::shard::content_checksum(&tile).ok()?;
    serde_json::to_string(&tile).ok()
}

/// A mutated tile (`which` of the two) is refused or merged with the other into a
/// symmetric matrix over every bag; never a panic.
fn check_tile(which: usize, text: &str) -> Result<(), TestCaseError> {
    let seeds = tile_seeds_cached();
    let other = parse_tile("other.json", &seeds[1 - which]).unwrap();
    for text in std::iter::once(text.to_string()).chain(with_fixed_checksum(text)) {
        let Ok(tile) = parse_tile("t.json", &text) else {
            continue;
        };
        let again = serde_json::to_string(&tile).unwrap();
        prop_assert_eq!(&parse_tile("t.json", &again).unwrap(), &tile);
        let names = vec!["t.json".to_string(), "other.json".to_string()];
        if let Ok(gram) = merge_tiles(&[tile, other.clone()], &names) {
            prop_assert_eq!(gram.ln.len(), gram.n * gram.n);
            for i in 0..gram.n {
                for j in 0..gram.n {
                    let (a, b) = (gram.ln[i * gram.n + j], gram.ln[j * gram.n + i]);
                    prop_assert!(a.to_bits() == b.to_bits(), "not symmetric at ({i}, {j})");
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(4_000))]

    #[test]
    fn gram_tile_mutations(which in 0..2usize, e in edits(json_token())) {
        check_tile(which, &apply(&tile_seeds_cached()[which], &e, is_json_number))?;
    }
}

#[test]
fn the_tile_seeds_round_trip_and_merge_to_the_whole_matrix() {
    let seeds = tile_seeds_cached();
    let tiles: Vec<GramTile> = seeds.iter().map(|t| parse_tile("t", t).unwrap()).collect();
    for (text, tile) in seeds.iter().zip(&tiles) {
        assert_eq!(&serde_json::to_string(tile).unwrap(), text);
    }
    let names = vec!["a".to_string(), "b".to_string()];
    let merged = merge_tiles(&tiles, &names).unwrap();
    let whole = mil_toolkit::kernel::nsk::log_nsk_gram(&tiny_set(), 0.5).unwrap();
    assert_eq!(merged.ln, whole);
    // A mutation with its checksum recomputed is what the merge itself must refuse.
    let edited = seeds[0].replacen("\"n\":6", "\"n\":7", 1);
    assert!(
        parse_tile("t", &edited).is_err(),
        "the checksum catches an edit"
    );
    let fixed = parse_tile("t", &with_fixed_checksum(&edited).unwrap()).unwrap();
    assert!(merge_tiles(&[fixed, tiles[1].clone()], &names).is_err());
}

/// What a `mil cv --shard` part carries into `mil cv merge`: the fold assignments and
/// the jobs' outcomes.
type Outcomes = (Vec<(u64, Vec<Vec<usize>>)>, Vec<FoldOutcome>);

/// Reads the `assignments` and `outcomes` of a part's JSON text.
fn parse_outcomes(text: &str) -> Option<Outcomes> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    Some((
        serde_json::from_value(v.get("assignments")?.clone()).ok()?,
        serde_json::from_value(v.get("outcomes")?.clone()).ok()?,
    ))
}

fn outcomes_text((assignments, outcomes): &Outcomes) -> String {
    serde_json::json!({"assignments": assignments, "outcomes": outcomes}).to_string()
}

/// Two folds of [`tiny_set`] with the scores of each test bag.
const OUTCOMES: &str = r#"{"assignments":[[7,[[0,4,2],[3,1,5]]]],"outcomes":[{"repeat":0,"fold":0,"scores":{"n_classes":2,"scores":[0.9,0.1,0.2,0.8,0.4,0.6]},"chosen":null},{"repeat":0,"fold":1,"scores":{"n_classes":2,"scores":[0.3,0.7,0.75,0.25,0.1,0.9]},"chosen":null,"threshold":0.5}]}"#;

fn check_outcomes_text(text: &str) -> Result<(), TestCaseError> {
    let Some(part) = parse_outcomes(text) else {
        return Ok(());
    };
    prop_assert_eq!(&parse_outcomes(&outcomes_text(&part)).unwrap(), &part);
    let (assignments, outcomes) = &part;
    let data = tiny_set();
    if check_outcomes(&data, assignments, outcomes).is_ok() {
        if let Ok(report) = summarize(&data, assignments, outcomes) {
            prop_assert!(!(report.accuracy < 0.0 || report.accuracy > 1.0));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(4_000))]

    #[test]
    fn cv_outcome_mutations(e in edits(json_token())) {
        check_outcomes_text(&apply(OUTCOMES, &e, is_json_number))?;
    }
}

#[test]
fn the_outcome_seed_merges_into_its_report() {
    let (assignments, outcomes) = parse_outcomes(OUTCOMES).unwrap();
    let data = tiny_set();
    check_outcomes(&data, &assignments, &outcomes).unwrap();
    let report = summarize(&data, &assignments, &outcomes).unwrap();
    // Fold 0 (bags 0, 4, 2 of classes 0, 1, 0) predicts 0, 1, 1; fold 1 (bags 3, 1, 5
    // of classes 1, 0, 1) predicts 1, 0, 1: one bag of six wrong.
    assert_eq!(report.accuracy, 5.0 / 6.0);
}

// ---------------------------------------------------------------------------------------
// Cluster models

/// Cluster models of [`tiny_set`] as `mil cluster -o` saves them (M³IC and BAMIC),
/// without their checksum so that mutations reach the shape checks.
fn cluster_seeds() -> Vec<String> {
    let data = tiny_set();
    let m3 = m3ic::M3ic::default()
        .k(2)
        .seed(1)
        .restarts(2)
        .fit(&data)
        .unwrap();
    let ba = bamic::Bamic::default()
        .k(2)
        .seed(1)
        .distance(mil_toolkit::distance::Hausdorff::Min)
        .restarts(2)
        .fit(&data)
        .unwrap();
    [ClusterModel::M3ic(m3.model), ClusterModel::Bamic(ba.model)]
        .iter()
        .map(|m| {
            let mut v: serde_json::Value = serde_json::from_str(&m.to_text().unwrap()).unwrap();
            v.as_object_mut().unwrap().remove("checksum");
            v.to_string()
        })
        .collect()
}

fn cluster_seeds_cached() -> &'static [String] {
    static SEEDS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    SEEDS.get_or_init(cluster_seeds)
}

fn check_cluster_model(text: &str) -> Result<(), TestCaseError> {
    let Ok(model) = ClusterModel::parse("c.json", text) else {
        return Ok(());
    };
    prop_assert!(
        !shows_non_finite(&format!("{model:?}")),
        "accepted a model with a non-finite number"
    );
    prop_assert_eq!(
        &ClusterModel::parse("c.json", &model.to_text().unwrap()).unwrap(),
        &model
    );
    let data = tiny_set();
    if model.dim() == data.dim() {
        if let Ok(assigned) = model.assign(&data) {
            prop_assert_eq!(assigned.len(), data.n_bags());
        }
        let _ = model.explain(&data);
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(4_000))]

    #[test]
    fn cluster_model_mutations(seed in 0..2usize, e in edits(json_token())) {
        check_cluster_model(&apply(&cluster_seeds_cached()[seed], &e, is_json_number))?;
    }
}

#[test]
fn the_cluster_seeds_load_and_round_trip() {
    let data = tiny_set();
    for text in cluster_seeds_cached() {
        let model = ClusterModel::parse("c.json", text).unwrap();
        let saved = model.to_text().unwrap();
        assert_eq!(ClusterModel::parse("c.json", &saved).unwrap(), model);
        // The two groups of tiny_set are far apart: every clustering separates them.
        let a = model.assign(&data).unwrap();
        assert!(a[0] == a[1] && a[1] == a[2] && a[3] == a[4] && a[4] == a[5] && a[0] != a[3]);
    }
}

#[test]
fn merge_and_cluster_mutations_reach_the_deep_checks() {
    let tiles = tile_seeds_cached();
    let other = parse_tile("o", &tiles[1]).unwrap();
    let names = vec!["t".to_string(), "o".to_string()];
    let tile = accepted(edits(json_token()), 2000, |e| {
        with_fixed_checksum(&apply(&tiles[0], e, is_json_number))
            .and_then(|t| parse_tile("t", &t).ok())
            .is_some_and(|t| merge_tiles(&[t, other.clone()], &names).is_ok())
    });
    let data = tiny_set();
    let outcomes = accepted(edits(json_token()), 2000, |e| {
        parse_outcomes(&apply(OUTCOMES, e, is_json_number))
            .is_some_and(|(a, o)| check_outcomes(&data, &a, &o).is_ok())
    });
    let clusters = cluster_seeds_cached();
    let cluster = accepted((0..2usize, edits(json_token())), 2000, |(s, e)| {
        ClusterModel::parse("c", &apply(&clusters[*s], e, is_json_number)).is_ok()
    });
    for (what, n) in [
        ("gram tile", tile),
        ("cv outcomes", outcomes),
        ("cluster model", cluster),
    ] {
        assert!(
            (50..1900).contains(&n),
            "{what}: {n} of 2000 mutations accepted"
        );
    }
}
