//! End to end through the `mil` binary: `mil info` on the shipped data (by name and by
//! path, CSV and ARFF), malformed inputs (exit 2, one line naming the line), a seeded
//! fuzz of truncated and garbled files (never a panic), and `mil synth`.

use std::path::{Path, PathBuf};
use std::process::Output;

use mil_suite::{mil_json, run_mil, temp_dir};
use rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde_json::{json, Value};

/// A shipped CSV file, located from the repository root (never from `/work/shared`).
fn shipped(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("host")
        .join("data")
        .join(file)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// [`mil_json`] with `--json` appended.
fn json_of(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    mil_json(&all)
}

/// The counts `mil info` reports, without the name (which is the path or built-in name).
fn counts(data: &str) -> Value {
    let mut v = json_of(&["info", data]);
    v.as_object_mut().expect("object").remove("name");
    v
}

fn write(dir: &Path, name: &str, text: impl AsRef<[u8]>) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write test file");
    path.display().to_string()
}

#[test]
fn info_reports_the_published_counts() {
    // Counts from the data sets' documentation (Dietterich et al. 1997; Andrews et al. 2003).
    let cases = [
        (
            "musk1",
            "musk1.csv",
            92,
            476,
            166,
            json!({"0": 45, "1": 47}),
        ),
        (
            "elephant",
            "elephant.csv",
            200,
            1391,
            230,
            json!({"0": 100, "1": 100}),
        ),
        (
            "fox",
            "fox.csv",
            200,
            1320,
            230,
            json!({"0": 100, "1": 100}),
        ),
        (
            "tiger",
            "tiger.csv",
            200,
            1220,
            230,
            json!({"0": 100, "1": 100}),
        ),
    ];
    for (name, file, bags, instances, features, per_class) in cases {
        let by_name = counts(name);
        assert_eq!(by_name["bags"], bags, "{name}");
        assert_eq!(by_name["instances"], instances, "{name}");
        assert_eq!(by_name["features"], features, "{name}");
        assert_eq!(by_name["classes"], 2, "{name}");
        assert_eq!(by_name["bags_per_class"], per_class, "{name}");
        assert_eq!(
            counts(&shipped(file).display().to_string()),
            by_name,
            "{file}"
        );
    }
    // Every other shipped file gives the same report by path as by built-in name.
    for name in ["corel3", "musk2", "sival6"] {
        let path = shipped(&format!("{name}.csv")).display().to_string();
        assert_eq!(counts(&path), counts(name), "{name}");
    }
}

#[test]
fn arff_written_and_read_back_is_the_same_data_set() {
    let dir = temp_dir("arff-round-trip");
    for name in ["musk1", "elephant"] {
        let original = mil_toolkit::data::load(name).unwrap();
        let path = write(
            &dir,
            &format!("{name}.arff"),
            mil_toolkit::data::arff::to_arff(&original),
        );
        assert_eq!(counts(&path), counts(name), "{name}");
        let back = mil_toolkit::data::load(&path).unwrap();
        assert_eq!(back.features(), original.features(), "{name}");
        assert_eq!(back.bag_starts(), original.bag_starts(), "{name}");
        assert_eq!(back.bag_ids(), original.bag_ids(), "{name}");
        assert_eq!(back.labels(), original.labels(), "{name}");
        assert_eq!(back.class_names(), original.class_names(), "{name}");
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn reads_the_arff_weka_writes() {
    // Weka's own output (single-quoted bags, its header layout), not our writer's.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/weka_musk1_5bags.arff");
    let from_weka = mil_toolkit::data::load(&path.display().to_string()).unwrap();
    let musk1 = mil_toolkit::data::load("musk1")
        .unwrap()
        .copy_bags(&[0, 1, 2, 90, 91]);
    assert_eq!(from_weka.features(), musk1.features());
    assert_eq!(from_weka.bag_starts(), musk1.bag_starts());
    assert_eq!(from_weka.bag_ids(), musk1.bag_ids());
    assert_eq!(from_weka.labels(), musk1.labels());
}

/// Expects exit status 2 and one line on stderr that names `path:line:`.
fn assert_rejected_at(path: &str, line: usize, what: &str) {
    let out = run_mil(&["info", path]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{what}: {err}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "{what}: one line, got {err:?}"
    );
    assert!(
        err.contains(&format!("{path}:{line}:")),
        "{what}: {err:?} should name line {line}"
    );
}

#[test]
fn malformed_csv_is_rejected_naming_the_line() {
    let dir = temp_dir("bad-csv");
    let cases: [(&str, &[u8], usize); 9] = [
        ("ragged row", b"1,a,1,2\n1,a,3\n", 2),
        ("non-numeric field", b"1,a,1,2\n1,a,x,4\n", 2),
        ("NaN", b"1,a,1,2\n1,a,NaN,4\n", 2),
        ("infinity", b"1,a,1,2\n1,a,1,inf\n", 2),
        ("overflow to infinity", b"1,a,1,2\n1,a,1,1e999\n", 2),
        ("labels differ in a bag", b"1,a,1,2\n0,a,3,4\n", 2),
        ("bag id reappears", b"1,a,1,2\n0,b,1,2\n1,a,3,4\n", 3),
        ("non-integer label", b"1,a,1,2\nyes,b,1,2\n", 2),
        ("not UTF-8", b"1,a,1,2\n1,\xffa,3,4\n", 2),
    ];
    for (i, (what, text, line)) in cases.into_iter().enumerate() {
        let path = write(&dir, &format!("{i}.csv"), text);
        assert_rejected_at(&path, line, what);
    }
    for (what, text) in [("empty file", ""), ("blank lines only", "\n \n")] {
        let path = write(&dir, "empty.csv", text);
        let out = run_mil(&["info", &path]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{what}: {err}");
        assert!(
            err.contains("empty") && err.trim_end().lines().count() == 1,
            "{what}: {err:?}"
        );
    }
    let out = run_mil(&["info", &dir.join("missing.csv").display().to_string()]);
    assert_eq!(out.status.code(), Some(2), "missing file: {}", stderr(&out));
    std::fs::remove_dir_all(dir).ok();
}

const ARFF_HEAD: &str = "@relation r\n@attribute id {a,b,c}\n@attribute bag relational\n\
                         @attribute f1 numeric\n@attribute f2 numeric\n@end bag\n\
                         @attribute class {0,1}\n@data\n";

#[test]
fn malformed_arff_is_rejected_naming_the_line() {
    let dir = temp_dir("bad-arff");
    // The header takes lines 1–8; data rows start on line 9.
    let cases = [
        ("ragged instance", "a,\"1,2\\n3\",1\n", 9),
        ("non-numeric value", "a,\"1,2\",1\nb,\"1,x\",0\n", 10),
        ("NaN", "a,\"NaN,2\",1\n", 9),
        ("infinity", "a,\"1,-inf\",1\n", 9),
        ("missing value", "a,\"1,?\",1\n", 9),
        (
            "bag id appears again",
            "a,\"1,2\",1\nb,\"1,2\",0\na,\"3,4\",1\n",
            11,
        ),
        ("undeclared class", "a,\"1,2\",2\n", 9),
        ("too few fields", "a,\"1,2\"\n", 9),
        ("unterminated quote", "a,\"1,2\",1\nb,\"1,2,0\n", 10),
        (
            "quoted id with a line break, undeclared",
            "'x\\ny',\"1,2\",1\n",
            9,
        ),
    ];
    for (i, (what, rows, line)) in cases.iter().enumerate() {
        let path = write(&dir, &format!("{i}.arff"), format!("{ARFF_HEAD}{rows}"));
        assert_rejected_at(&path, *line, what);
    }
    let headers = [
        ("no @relation", "@attribute id {a}\n@data\n", 1),
        ("nominal instance attribute", "@relation r\n@attribute id {a}\n@attribute bag relational\n@attribute f {x,y}\n@end bag\n@data\n", 4),
        ("relational not closed", "@relation r\n@attribute id {a}\n@attribute bag relational\n@attribute f numeric\n@data\n", 5),
        ("no relational attribute", "@relation r\n@attribute id {a}\n@attribute f numeric\n@data\n", 3),
        ("non-integer classes", "@relation r\n@attribute id {a}\n@attribute bag relational\n@attribute f numeric\n@end bag\n@attribute class {no,yes}\n@data\n", 6),
    ];
    for (i, (what, text, line)) in headers.iter().enumerate() {
        let path = write(&dir, &format!("h{i}.arff"), text);
        assert_rejected_at(&path, *line, what);
    }
    for (what, text) in [("empty file", ""), ("no rows", ARFF_HEAD)] {
        let path = write(&dir, "empty.arff", text);
        let out = run_mil(&["info", &path]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{what}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{what}: {err:?}");
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn one_class_where_two_are_needed_is_a_clear_error() {
    let dir = temp_dir("one-class");
    let path = write(&dir, "one.csv", "1,a,1,2\n1,b,3,4\n");
    let data = mil_toolkit::data::load(&path).unwrap();
    let err = data.require_labels(2).unwrap_err();
    assert_eq!(err.exit_code(), 2);
    let msg = err.to_string();
    assert!(
        msg.contains(&path) && msg.contains("1 class(es) present, at least 2 needed"),
        "{msg}"
    );
    // Commands that need two classes refuse such a file, CSV or ARFF, with exit 2.
    let arff = write(
        &dir,
        "one.arff",
        format!("{ARFF_HEAD}a,\"1,2\",1\nb,\"3,4\",1\n"),
    );
    for file in [&path, &arff] {
        for classifier in ["citation-knn", "milr"] {
            let out = run_mil(&["cv", file, "--classifier", classifier]);
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(2), "{file} {classifier}: {err}");
            assert!(
                err.contains("at least 2 needed"),
                "{file} {classifier}: {err}"
            );
        }
    }
    let unlabelled = write(&dir, "none.csv", "?,a,1,2\n?,b,3,4\n");
    let msg = mil_toolkit::data::load(&unlabelled)
        .unwrap()
        .require_labels(1)
        .unwrap_err()
        .to_string();
    assert!(msg.contains("no labels"), "{msg}");
    std::fs::remove_dir_all(dir).ok();
}

/// One seeded corruption of `text`: truncation, garbled bytes, insertions, deletions,
/// duplicated or swapped lines, or non-UTF-8 bytes.
fn corrupt(text: &[u8], rng: &mut Xoshiro256PlusPlus) -> Vec<u8> {
    const PALETTE: &[&[u8]] = &[
        b",", b"\"", b"'", b"\\", b"\n", b"\r", b"%", b"?", b"{", b"}", b"@", b" ", b"-", b".",
        b"e", b"0", b"9", b"x", b"NaN", b"inf", b"1e999", b"\\n", b"@data", b"@end", b"\xff",
        b"\xc3", b"+1", b"01",
    ];
    let mut below = |n: usize| (rng.next_u64() % n.max(1) as u64) as usize;
    let mut out = text.to_vec();
    let edits = 1 + below(4);
    for _ in 0..edits {
        let at = below(out.len() + 1);
        match below(7) {
            0 => out.truncate(at),
            1 | 2 => {
                let piece = PALETTE[below(PALETTE.len())];
                let end = (at + below(3)).min(out.len());
                out.splice(at..end, piece.iter().copied());
            }
            3 => {
                let end = (at + below(200)).min(out.len());
                out.drain(at..end);
            }
            4 | 5 => {
                // Duplicate or move a whole line elsewhere.
                let lines: Vec<&[u8]> = out.split_inclusive(|&b| b == b'\n').collect();
                let line = lines[below(lines.len())].to_vec();
                let to = below(out.len() + 1);
                if below(2) == 0 {
                    let from = out.windows(line.len()).position(|w| w == line.as_slice());
                    if let Some(from) = from {
                        out.drain(from..from + line.len());
                    }
                }
                let to = to.min(out.len());
                out.splice(to..to, line);
            }
            _ => {
                let b = below(256) as u8;
                if let Some(x) = out.get_mut(at) {
                    *x = b;
                }
            }
        }
    }
    out
}

#[test]
fn truncated_and_garbled_files_never_panic() {
    let dir = temp_dir("fuzz");
    let musk1 = mil_toolkit::data::load("musk1").unwrap();
    let csv = mil_toolkit::data::csv::to_csv(&musk1).into_bytes();
    let arff = mil_toolkit::data::arff::to_arff(&musk1).into_bytes();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(2026);
    let mut rejected = 0;
    for round in 0..250 {
        for (ext, text) in [("csv", &csv), ("arff", &arff)] {
            let path = write(&dir, &format!("f.{ext}"), corrupt(text, &mut rng));
            let out = run_mil(&["info", &path, "--json"]);
            let err = stderr(&out);
            let code = out.status.code();
            assert!(
                code == Some(0) || code == Some(2),
                "round {round} {ext}: exit {code:?}, {err}"
            );
            assert!(!err.contains("panicked"), "round {round} {ext}: {err}");
            if code == Some(2) {
                rejected += 1;
                assert_eq!(
                    err.trim_end().lines().count(),
                    1,
                    "round {round} {ext}: {err:?}"
                );
            }
        }
    }
    eprintln!("{rejected} of 500 corrupt files rejected");
    // Most corruptions must be caught; a few are still valid data sets (a lost digit).
    assert!(
        rejected > 250,
        "only {rejected} of 500 corrupt files rejected"
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn synth_is_reproducible_by_seed() {
    let dir = temp_dir("synth-seed");
    let out = |name: &str| dir.join(name).display().to_string();
    for (set, extra) in [
        ("mida-one", &[][..]),
        ("mida-two", &[][..]),
        ("mialm-ii", &["--dims", "40", "--relevant", "8"][..]),
    ] {
        let (a, b, c) = (out("a.csv"), out("b.csv"), out("c.csv"));
        for (path, seed) in [(&a, "7"), (&b, "7"), (&c, "8")] {
            let mut args = vec!["synth", set, "-o", path, "--seed", seed];
            args.extend_from_slice(extra);
            json_of(&args);
        }
        let read = |p: &str| std::fs::read(p).unwrap();
        assert_eq!(read(&a), read(&b), "{set}: same seed, same bytes");
        assert_ne!(read(&a), read(&c), "{set}: another seed, another file");
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn synth_reports_and_writes_the_papers_sizes() {
    let dir = temp_dir("synth-sizes");
    let csv = dir.join("one.csv").display().to_string();
    let arff = dir.join("one.arff").display().to_string();
    let truth = dir.join("truth.csv").display().to_string();
    // (set, extra args, bags, instances, features, bags per class, truly positive)
    let cases = [
        (
            "mida-one",
            vec![],
            80,
            640,
            32,
            json!({"0": 40, "1": 40}),
            40,
        ),
        (
            "mida-two",
            vec![],
            120,
            960,
            32,
            json!({"0": 40, "1": 40, "2": 40}),
            120,
        ),
        (
            "mialm-ii",
            vec!["--dims", "60", "--relevant", "12"],
            80,
            1400,
            60,
            json!({"0": 20, "1": 60}),
            300,
        ),
    ];
    for (set, extra, bags, instances, features, per_class, positives) in cases {
        let mut args = vec!["synth", set, "-o", &csv, "--seed", "3", "--truth", &truth];
        args.extend_from_slice(&extra);
        let report = json_of(&args);
        assert_eq!(report["bags"], bags, "{set}");
        assert_eq!(report["instances"], instances, "{set}");
        assert_eq!(report["features"], features, "{set}");
        assert_eq!(report["positive_instances"], positives, "{set}");
        let info = counts(&csv);
        assert_eq!(
            (
                info["bags"].clone(),
                info["instances"].clone(),
                info["features"].clone()
            ),
            (json!(bags), json!(instances), json!(features)),
            "{set}"
        );
        assert_eq!(info["bags_per_class"], per_class, "{set}");
        let truth_text = std::fs::read_to_string(&truth).unwrap();
        assert_eq!(truth_text.lines().count(), instances, "{set}");
        assert_eq!(
            truth_text.lines().filter(|l| l.ends_with(",1")).count(),
            positives,
            "{set}"
        );

        // The same set written as ARFF reads back with the same counts.
        let mut args = vec!["synth", set, "-o", &arff, "--seed", "3"];
        args.extend_from_slice(&extra);
        assert_eq!(json_of(&args)["format"], "arff");
        assert_eq!(counts(&arff), info, "{set}");
        let (from_csv, from_arff) = (
            mil_toolkit::data::load(&csv).unwrap(),
            mil_toolkit::data::load(&arff).unwrap(),
        );
        assert_eq!(
            from_arff.features(),
            from_csv.features(),
            "{set}: ARFF and CSV carry the same values"
        );
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn synth_rejects_bad_parameters_with_exit_2() {
    let dir = temp_dir("synth-bad");
    let o = dir.join("x.csv").display().to_string();
    let cases: [&[&str]; 7] = [
        &[
            "synth",
            "mialm-ii",
            "-o",
            &o,
            "--dims",
            "10",
            "--relevant",
            "11",
        ],
        &["synth", "mialm-ii", "-o", &o, "--relevant", "0"],
        &[
            "synth",
            "mialm-ii",
            "-o",
            &o,
            "--dims",
            "0",
            "--relevant",
            "1",
        ],
        &["synth", "mialm-ii", "-o", &o, "--dims", "1000000"],
        &["synth", "mida-one", "-o", &o, "--dims", "40"],
        &["synth", "mida-two", "-o", &o, "--relevant", "3"],
        &["synth", "no-such-set", "-o", &o],
    ];
    for args in cases {
        let out = run_mil(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(!Path::new(&o).exists(), "{args:?} wrote a file");
    }
    std::fs::remove_dir_all(dir).ok();
}
