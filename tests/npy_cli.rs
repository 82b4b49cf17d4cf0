//! End to end through the `mil` binary: a directory of `.npy` bags as `DATA`. The
//! fixture written by NumPy (`tests/fixtures/npy/`, see `tests/fixtures/PROVENANCE.md`)
//! reads as its CSV twin; musk1 written as a directory cross-validates exactly as its
//! CSV; each malformed input is refused with exit 2 and a message naming file and field.

use std::path::{Path, PathBuf};

use mil_suite::{mil_json, run_mil, temp_dir};
use mil_toolkit::data::Dataset;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// A `.npy` file of `rows × cols` little-endian float64 values in C order, with a
/// version 1.0 header as NumPy writes it (padded with spaces to 64 bytes, ended by a
/// line break).
fn npy_f8(rows: usize, cols: usize, values: &[f64]) -> Vec<u8> {
    npy_raw(
        "<f8",
        &format!("({rows}, {cols})"),
        &values
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect::<Vec<_>>(),
    )
}

fn npy_raw(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
    let mut dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    while (10 + dict.len() + 1) % 64 != 0 {
        dict.push(' ');
    }
    dict.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend((dict.len() as u16).to_le_bytes());
    out.extend(dict.as_bytes());
    out.extend(data);
    out
}

/// Writes `data` as a directory of `.npy` bags: `labels.csv` in bag order and one file
/// per bag.
fn write_dir(data: &Dataset, dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let mut labels = String::from("bag,label\n");
    for b in 0..data.n_bags() {
        let label = data
            .label(b)
            .map_or("?", |l| data.class_names()[l].as_str());
        labels.push_str(&format!("{},{label}\n", data.bag_id(b)));
        let bag = data.bag(b);
        let path = dir.join(format!("{}.npy", data.bag_id(b)));
        std::fs::write(path, npy_f8(bag.len(), bag.dim(), bag.as_slice())).unwrap();
    }
    std::fs::write(dir.join("labels.csv"), labels).unwrap();
}

/// Runs `mil` and returns its stdout, which must come with success.
fn stdout_of(args: &[&str]) -> String {
    let out = run_mil(args);
    assert!(
        out.status.success(),
        "mil {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_numpy_fixture_reads_as_its_csv() {
    let dir = fixtures().join("npy");
    let csv = fixtures().join("npy.csv");
    let mut from_npy = mil_json(&["info", dir.to_str().unwrap(), "--json"]);
    let mut from_csv = mil_json(&["info", csv.to_str().unwrap(), "--json"]);
    for v in [&mut from_npy, &mut from_csv] {
        v.as_object_mut().unwrap().remove("name");
    }
    assert_eq!(from_npy, from_csv);
    assert_eq!(from_npy["bags"], 4, "{from_npy}");
    // The values themselves, through the library.
    let a = mil_toolkit::data::load(dir.to_str().unwrap()).unwrap();
    let b = mil_toolkit::data::load(csv.to_str().unwrap()).unwrap();
    assert_eq!(
        (a.bag_ids(), a.bag_starts(), a.labels(), a.features()),
        (b.bag_ids(), b.bag_starts(), b.labels(), b.features())
    );
}

#[test]
fn cv_on_musk1_as_a_directory_prints_what_its_csv_prints() {
    let tmp = temp_dir("npy-musk1");
    let musk1 = mil_toolkit::data::load("musk1").unwrap();
    let csv = tmp.join("musk1.csv");
    std::fs::write(&csv, mil_toolkit::data::csv::to_csv(&musk1)).unwrap();
    let dir = tmp.join("musk1");
    write_dir(&musk1, &dir);
    let (csv, dir) = (csv.to_str().unwrap(), dir.to_str().unwrap());
    // The report names its data and ends with the run's wall time; everything else must
    // be the same.
    let text = |data: &str| {
        let out = stdout_of(&["cv", data, "--classifier", "citation-knn", "--quiet"]);
        let out = out.replace(data, "DATA");
        let (report, time) = out.trim_end().rsplit_once('\n').unwrap();
        assert!(time.ends_with(" s"), "{out}");
        report.to_string()
    };
    let (from_csv, from_dir) = (text(csv), text(dir));
    assert!(from_csv.contains("AUROC"), "{from_csv}");
    assert_eq!(from_dir, from_csv);
    let json = |data: &str| {
        let mut v = mil_json(&["cv", data, "--classifier", "citation-knn", "--json"]);
        let report = v.as_object_mut().unwrap();
        assert!(report.remove("seconds").is_some(), "{v}");
        v.to_string().replace(data, "DATA")
    };
    assert_eq!(json(dir), json(csv));
    std::fs::remove_dir_all(tmp).unwrap();
}

/// A directory of two good bags `a` and `b` (2 features), labels `a,1` and `b,0`.
fn good_dir(tag: &str) -> PathBuf {
    let dir = temp_dir(&format!("npy-{tag}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a.npy"), npy_f8(2, 2, &[1.0, 2.0, 3.0, 4.0])).unwrap();
    std::fs::write(dir.join("b.npy"), npy_f8(1, 2, &[5.0, 6.0])).unwrap();
    std::fs::write(dir.join("labels.csv"), "bag,label\na,1\nb,0\n").unwrap();
    dir
}

/// `mil info DIR` after `spoil` must exit 2 with one message holding each of `expected`.
fn refused(tag: &str, spoil: impl FnOnce(&Path), expected: &[&str]) {
    let dir = good_dir(tag);
    assert!(run_mil(&["info", dir.to_str().unwrap()]).status.success());
    spoil(&dir);
    let out = run_mil(&["info", dir.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{tag}: {err}");
    for e in expected {
        assert!(err.contains(e), "{tag}: `{e}` not in {err}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

fn edit(path: PathBuf, f: impl FnOnce(&mut Vec<u8>)) {
    let mut bytes = std::fs::read(&path).unwrap();
    f(&mut bytes);
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn a_bad_magic_string_is_refused() {
    refused(
        "magic",
        |d| edit(d.join("b.npy"), |b| b[1] = b'n'),
        &["b.npy: magic: not a .npy file"],
    );
}

#[test]
fn a_truncated_header_is_refused() {
    refused(
        "header",
        |d| edit(d.join("b.npy"), |b| b.truncate(30)),
        &["b.npy: header: truncated"],
    );
}

#[test]
fn truncated_data_is_refused() {
    refused(
        "data",
        |d| edit(d.join("a.npy"), |b| b.truncate(b.len() - 3)),
        &[
            "a.npy: data: truncated",
            "needs 32 bytes",
            "the file has 29",
        ],
    );
}

#[test]
fn a_complex_dtype_is_refused() {
    refused(
        "dtype",
        |d| std::fs::write(d.join("b.npy"), npy_raw("<c16", "(1, 2)", &[0; 32])).unwrap(),
        &["b.npy: descr: '<c16'"],
    );
}

#[test]
fn a_three_dimensional_array_is_refused() {
    refused(
        "3d",
        |d| std::fs::write(d.join("b.npy"), npy_raw("<f8", "(1, 1, 2)", &[0; 16])).unwrap(),
        &["b.npy: shape: (1, 1, 2) has 3 dimensions"],
    );
}

#[test]
fn bags_with_different_feature_counts_are_refused() {
    refused(
        "features",
        |d| std::fs::write(d.join("b.npy"), npy_f8(1, 3, &[5.0, 6.0, 7.0])).unwrap(),
        &["b.npy: shape: (1, 3) has 3 features but ", "a.npy has 2"],
    );
}

#[test]
fn a_label_row_without_its_file_is_refused() {
    refused(
        "missing",
        |d| std::fs::remove_file(d.join("b.npy")).unwrap(),
        &[
            "labels.csv:3: column 1 (bag): bag `b` has no file ",
            "b.npy",
        ],
    );
}

#[test]
fn a_file_without_a_label_row_is_refused() {
    refused(
        "unlabelled",
        |d| std::fs::write(d.join("c.npy"), npy_f8(1, 2, &[5.0, 6.0])).unwrap(),
        &["c.npy: no row of labels.csv names this bag"],
    );
}

#[test]
fn a_duplicate_bag_id_is_refused() {
    refused(
        "duplicate",
        |d| std::fs::write(d.join("labels.csv"), "bag,label\na,1\nb,0\na,0\n").unwrap(),
        &["labels.csv:4: column 1 (bag): bag `a` is already on line 2"],
    );
}

#[test]
fn a_nan_is_refused_with_its_instance_and_feature() {
    refused(
        "nan",
        |d| std::fs::write(d.join("a.npy"), npy_f8(2, 2, &[1.0, 2.0, f64::NAN, 4.0])).unwrap(),
        &["a.npy: data: array[1, 0] (instance 2, feature 1) is NaN"],
    );
}

#[test]
fn a_directory_without_labels_is_refused() {
    refused(
        "nolabels",
        |d| std::fs::remove_file(d.join("labels.csv")).unwrap(),
        &["needs labels.csv"],
    );
}
