//! `mil` on awkward inputs: files from other editors read as usual, and what
//! cannot be data (a directory, a device, binary bytes) is refused at once as the user's
//! input problem (exit 2) with a one-line message naming the file.

use mil_suite::{run_mil, temp_dir};

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn bom_crlf_and_cr_files_read_like_lf_files() {
    let dir = temp_dir("limits-endings");
    let lf = "1,a,1,2\n1,a,3,4\n0,b,5,6\n";
    let reference = run_mil(&["info", &write(&dir, "lf.csv", lf.as_bytes()), "--json"]);
    assert_eq!(reference.status.code(), Some(0), "{}", stderr(&reference));
    let info = |out: &std::process::Output| -> serde_json::Value {
        let mut v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v.as_object_mut()
            .unwrap()
            .retain(|k, _| k != "data" && k != "name");
        v
    };
    let variants = [
        ("bom.csv", format!("\u{feff}{lf}")),
        ("crlf.csv", lf.replace('\n', "\r\n")),
        ("cr.csv", lf.replace('\n', "\r")),
    ];
    for (name, text) in variants {
        let out = run_mil(&["info", &write(&dir, name, text.as_bytes()), "--json"]);
        assert_eq!(out.status.code(), Some(0), "{name}: {}", stderr(&out));
        assert_eq!(info(&out), info(&reference), "{name}");
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn what_cannot_be_data_is_refused_with_exit_2() {
    let dir = temp_dir("limits-refused");
    let mut cases = vec![
        (
            "a directory without labels.csv",
            dir.display().to_string(),
            "a directory is read as .npy bags and needs labels.csv",
        ),
        (
            "Latin-1 text",
            write(&dir, "latin1.csv", b"1,a,1\n0,caf\xe9,2\n"),
            "0xe9",
        ),
        (
            "a bell in a label",
            write(&dir, "bell.csv", b"1\x07,a,1\n"),
            "\\x07",
        ),
    ];
    if cfg!(target_os = "linux") {
        cases.push(("/dev/zero", "/dev/zero".into(), "16 MiB"));
    }
    for (what, path, needle) in cases {
        let started = std::time::Instant::now();
        let out = run_mil(&["info", &path]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{what}: {err}");
        assert!(err.contains(needle), "{what}: {err:?}");
        assert!(!err.contains('\x07'), "{what}: a raw control byte: {err:?}");
        assert_eq!(err.trim_end().lines().count(), 1, "{what}: {err:?}");
        assert!(started.elapsed().as_secs() < 20, "{what}: slow");
    }
    std::fs::remove_dir_all(dir).ok();
}

fn write(dir: &std::path::Path, name: &str, bytes: &[u8]) -> String {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path.display().to_string()
}
