//! `mil` at the edges of its outputs and messages: devices and FIFOs written through,
//! outputs that would be lost or clash refused before any work, temporary files removed on
//! SIGINT/SIGTERM, standard output checked, numbers refused by their flag, confidence
//! intervals within [0, 1], and messages that say what differs and cannot drive the
//! terminal.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use mil_suite::{mil_binary, mil_json, mil_refuses_naming, run_mil, temp_dir};

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn path_str(p: &Path) -> String {
    p.display().to_string()
}

/// The bytes `mil synth mida-one` writes to a regular file: the reference for the
/// written-through outputs.
fn mida_one_bytes(dir: &Path) -> Vec<u8> {
    let reference = dir.join("reference.csv");
    let out = run_mil(&["synth", "mida-one", "-o", &path_str(&reference)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    std::fs::read(&reference).unwrap()
}

/// Temporary files (`.NAME.PID.N.tmp`) left in `dir`.
fn temporaries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.') && n.ends_with(".tmp"))
        .collect()
}

#[cfg(unix)]
fn is_char_device(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_char_device())
}

#[cfg(unix)]
#[test]
fn devices_and_fifos_are_written_through_not_replaced() {
    use std::os::unix::fs::FileTypeExt;
    let dir = temp_dir("edges-devices");
    let expected = mida_one_bytes(&dir);

    // A FIFO: a reader thread gets the whole output and the FIFO stays a FIFO.
    let fifo = dir.join("pipe");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success(), "mkfifo");
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(fifo).unwrap())
    };
    let out = run_mil(&["synth", "mida-one", "-o", &path_str(&fifo)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(reader.join().unwrap(), expected);
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());

    // /dev/null stays the character device it is.
    let out = run_mil(&["synth", "mida-one", "-o", "/dev/null"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(is_char_device(Path::new("/dev/null")));

    // A character device made here (the null device's numbers, 1:3).
    let device = dir.join("null-device");
    match Command::new("mknod")
        .arg(&device)
        .args(["c", "1", "3"])
        .output()
    {
        Ok(made) if made.status.success() => {
            let out = run_mil(&["synth", "mida-one", "-o", &path_str(&device)]);
            assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
            assert!(is_char_device(&device), "the device was replaced");
        }
        other => println!("skipped the mknod case: mknod failed ({other:?}); it needs root"),
    }

    // `-o -` and `-o /dev/stdout`: the output on stdout, the summary on stderr.
    for name in ["-", "/dev/stdout"] {
        let out = run_mil(&["synth", "mida-one", "-o", name]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert_eq!(out.stdout, expected, "-o {name}");
        assert!(stderr(&out).contains("80 bags"), "{}", stderr(&out));
    }
    assert!(temporaries(&dir).is_empty());
    std::fs::remove_dir_all(dir).ok();
}

#[cfg(unix)]
#[test]
fn a_write_protected_output_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = temp_dir("edges-protected");
    let target = dir.join("kept.csv");
    std::fs::write(&target, "old").unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o444)).unwrap();
    let target = path_str(&target);
    mil_refuses_naming(&["synth", "mida-one", "-o", &target], &target);
    let out = run_mil(&["synth", "mida-one", "-o", &target]);
    assert!(stderr(&out).contains("write-protected"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "old");
    // Through `mil train`'s model output as well.
    mil_refuses_naming(
        &["train", "musk1", "--classifier", "milr", "-o", &target],
        &target,
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "old");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn two_outputs_on_one_path_are_refused_naming_both_flags() {
    let dir = temp_dir("edges-clash");
    let s = path_str(&dir.join("s.csv"));
    let s_dotted = path_str(&dir.join(".").join("s.csv"));
    let p = path_str(&dir.join("p.csv"));
    let cases: Vec<(Vec<&str>, [&str; 2])> = vec![
        (
            vec!["synth", "mida-one", "-o", &s, "--truth", &s],
            ["--output", "--truth"],
        ),
        (
            vec!["synth", "mida-one", "-o", &s, "--truth", &s_dotted],
            ["--output", "--truth"],
        ),
        (
            vec!["synth", "mida-one", "-o", "-", "--truth", "/dev/stdout"],
            ["--output", "--truth"],
        ),
        (
            vec![
                "project",
                "musk1",
                "--projection",
                "pca",
                "--dim",
                "2",
                "-o",
                &p,
                "--plot",
                &p,
            ],
            ["--output", "--plot"],
        ),
    ];
    for (args, flags) in &cases {
        for exists in [false, true] {
            if exists {
                std::fs::write(&s, "old").unwrap();
                std::fs::write(&p, "old").unwrap();
            }
            let out = run_mil(args);
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
            for flag in flags {
                assert!(err.contains(flag), "{args:?} must name {flag}: {err}");
            }
            assert!(!err.contains("is the input"), "{args:?}: {err}");
        }
        // Refused before any work: the old files are untouched.
        assert_eq!(std::fs::read_to_string(&s).unwrap(), "old");
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "old");
        std::fs::remove_file(&s).unwrap();
        std::fs::remove_file(&p).unwrap();
    }
    // Two names of one file (a hard link).
    let a = dir.join("a.csv");
    let b = dir.join("b.csv");
    std::fs::write(&a, "old").unwrap();
    std::fs::hard_link(&a, &b).unwrap();
    let out = run_mil(&[
        "synth",
        "mida-one",
        "-o",
        &path_str(&a),
        "--truth",
        &path_str(&b),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--output"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "old");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn any_valid_file_name_can_be_written_and_empty_or_directory_paths_are_refused() {
    let dir = temp_dir("edges-names");
    let expected = mida_one_bytes(&dir);
    // 254 bytes: one below the usual limit of 255, so only the temporary name could fail.
    let long = dir.join(format!("{}.csv", "n".repeat(250)));
    let out = run_mil(&["synth", "mida-one", "-o", &path_str(&long)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(std::fs::read(&long).unwrap(), expected);
    // Multi-byte characters: the temporary name is shortened between characters.
    let accented = dir.join(format!("{}.csv", "é".repeat(125)));
    let out = run_mil(&["synth", "mida-one", "-o", &path_str(&accented)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(std::fs::read(&accented).unwrap(), expected);
    assert!(temporaries(&dir).is_empty());

    let existing_dir = format!("{}/", path_str(&dir));
    let new_dir = path_str(&dir.join("new/"));
    for path in ["", existing_dir.as_str(), new_dir.as_str(), &path_str(&dir)] {
        let out = run_mil(&["synth", "mida-one", "-o", path]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "-o {path:?}: {err}");
        assert!(err.contains("--output"), "-o {path:?}: {err}");
    }
    assert!(!dir.join("new").exists());
    std::fs::remove_dir_all(dir).ok();
}

#[cfg(unix)]
#[test]
fn sigint_and_sigterm_remove_the_temporary_files() {
    let dir = temp_dir("edges-signals");
    let target = dir.join("big.csv");
    let signal = |child: &std::process::Child, number: i32| {
        // SAFETY: kill(2) on the pid of a child this test has not yet reaped.
        assert_eq!(unsafe { libc::kill(child.id() as i32, number) }, 0);
    };
    for (name, number, status) in [("TERM", libc::SIGTERM, 143), ("INT", libc::SIGINT, 130)] {
        // The child is stopped (SIGSTOP) as soon as its temporary file appears, and the
        // signal sent while it is stopped mid-write: the signal then always lands before
        // the rename. A child that finished (or renamed) before it could be stopped is
        // run again.
        let mut caught = false;
        for _ in 0..5 {
            // About 30 MB of term counts: written and synced for long enough to be caught.
            let mut child = Command::new(mil_binary())
                .args(["synth", "term-counts", "--bags", "100", "-o"])
                .arg(&target)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let started = std::time::Instant::now();
            let mut exited = false;
            while temporaries(&dir).is_empty()
                && started.elapsed() < std::time::Duration::from_secs(120)
            {
                if child.try_wait().unwrap().is_some() {
                    exited = true;
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            if exited {
                std::fs::remove_file(&target).ok();
                continue;
            }
            signal(&child, libc::SIGSTOP);
            let mut wait_status = 0;
            // SAFETY: waits for the child to stop (WUNTRACED) or end, without reaping a
            // stopped child; `child.wait()` reaps it below.
            let stopped =
                unsafe { libc::waitpid(child.id() as i32, &mut wait_status, libc::WUNTRACED) }
                    == child.id() as i32
                    && libc::WIFSTOPPED(wait_status);
            if !stopped || temporaries(&dir).is_empty() {
                if stopped {
                    signal(&child, libc::SIGCONT);
                    child.wait().unwrap();
                }
                std::fs::remove_file(&target).ok();
                continue;
            }
            signal(&child, number);
            signal(&child, libc::SIGCONT);
            let code = child.wait().unwrap().code();
            assert_eq!(code, Some(status), "SIG{name}");
            assert!(temporaries(&dir).is_empty(), "SIG{name}");
            assert!(!target.exists(), "SIG{name}: an unfinished output appeared");
            caught = true;
            break;
        }
        assert!(
            caught,
            "SIG{name}: the child was never stopped mid-write in 5 runs"
        );
    }
    std::fs::remove_dir_all(dir).ok();
}

#[cfg(target_os = "linux")]
#[test]
fn stdout_errors_exit_1_a_closed_pipe_exits_0_and_stderr_never_panics() {
    let full = || Stdio::from(std::fs::File::create("/dev/full").unwrap());
    // A full stdout: exit 1 naming stdout.
    for args in [&["info", "musk1"][..], &["synth", "mida-one", "-o", "-"]] {
        let out = Command::new(mil_binary())
            .args(args)
            .stdout(full())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("stdout"), "{}", stderr(&out));
    }
    // A closed pipe: quiet, status 0. 400 kB of CSV cannot fit in the pipe's buffer.
    let mut child = Command::new(mil_binary())
        .args(["synth", "mida-one", "-o", "-"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stderr(&out), "");
    // A full stderr: the error's status, not a panic's 101.
    let out = Command::new(mil_binary())
        .args(["info", "nosuchfile"])
        .stderr(full())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// Every long flag that takes a value, with the path of its subcommand (nested ones
/// too) and whether its values are unsigned integers.
fn flags() -> Vec<(Vec<String>, String, bool)> {
    use std::any::TypeId;
    fn walk(
        command: &clap::Command,
        path: Vec<String>,
        found: &mut Vec<(Vec<String>, String, bool)>,
    ) {
        for arg in command.get_arguments() {
            let (Some(long), true) = (arg.get_long(), arg.get_action().takes_values()) else {
                continue;
            };
            let id = arg.get_value_parser().type_id();
            let unsigned = [
                TypeId::of::<usize>(),
                TypeId::of::<u64>(),
                TypeId::of::<u32>(),
                TypeId::of::<u16>(),
                TypeId::of::<u8>(),
            ]
            .iter()
            .any(|t| id == *t);
            found.push((path.clone(), long.to_string(), unsigned));
        }
        for sub in command.get_subcommands() {
            let mut path = path.clone();
            path.push(sub.get_name().to_string());
            walk(sub, path, found);
        }
    }
    let mut found = Vec::new();
    walk(&mil_toolkit::cli::command(), Vec::new(), &mut found);
    found
}

#[test]
fn negative_numbers_are_values_of_their_flag() {
    let flags = flags();
    let integers: Vec<_> = flags.iter().filter(|f| f.2).collect();
    assert!(
        integers
            .iter()
            .any(|(p, f, _)| p == &["cv"] && f == "folds"),
        "the walk finds cv --folds"
    );
    for (path, flag, unsigned) in &flags {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        let long = format!("--{flag}");
        args.extend([long.as_str(), "-1"]);
        let out = run_mil(&args);
        let err = stderr(&out);
        assert!(!err.contains("unexpected argument"), "{args:?}: {err}");
        if *unsigned {
            assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
            assert!(
                err.contains(&format!("invalid value '-1' for '--{flag}")),
                "{args:?}: {err}"
            );
        }
    }
}

#[test]
fn memory_limits_must_be_positive_and_finite() {
    for value in ["NaN", "nan", "inf", "-inf", "0", "-1", "-0.5"] {
        mil_refuses_naming(
            &[
                "gram",
                "musk1",
                "--kernel",
                "nsk",
                "--max-memory-gib",
                value,
            ],
            "--max-memory-gib",
        );
    }
}

/// Student's t quantile t₀.₉₇₅ with `df` degrees of freedom, from standard tables.
fn t_975(df: usize) -> f64 {
    match df {
        1 => 12.706,
        9 => 2.262,
        _ => panic!("no tabulated value for {df} degrees of freedom"),
    }
}

#[test]
fn fold_confidence_intervals_stay_in_the_unit_interval() {
    for folds in [2usize, 10] {
        let v = mil_json(&[
            "cv",
            "musk1",
            "--classifier",
            "milr",
            "--folds",
            &folds.to_string(),
            "--json",
        ]);
        let per_fold: Vec<f64> = v["per_fold"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_f64().unwrap())
            .collect();
        assert_eq!(per_fold.len(), folds);
        let s = &v["fold_summary"];
        let (low, high, mean) = (
            s["ci_low"].as_f64().unwrap(),
            s["ci_high"].as_f64().unwrap(),
            s["mean"].as_f64().unwrap(),
        );
        assert!(0.0 <= low && low <= mean && mean <= high && high <= 1.0);
        // Recomputed from the fold accuracies with the tabulated quantile.
        let n = folds as f64;
        let m = per_fold.iter().sum::<f64>() / n;
        let sd = (per_fold.iter().map(|a| (a - m).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
        let half = t_975(folds - 1) * sd / n.sqrt();
        let tolerance = 1e-3 * sd / n.sqrt() + 1e-12;
        assert!((mean - m).abs() < 1e-12);
        assert!(
            (low - (m - half).clamp(0.0, 1.0)).abs() <= tolerance,
            "{folds} folds"
        );
        assert!(
            (high - (m + half).clamp(0.0, 1.0)).abs() <= tolerance,
            "{folds} folds"
        );
    }
}

#[test]
fn a_mismatched_tile_says_what_differs() {
    let dir = temp_dir("edges-tiles");
    let tile = |i: usize| -> PathBuf {
        let path = dir.join(format!("tile{i}.json"));
        let out = run_mil(&[
            "gram",
            "musk1",
            "--kernel",
            "nsk",
            "--shard",
            &format!("{i}/2"),
            "-o",
            &path_str(&path),
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        path
    };
    let (a, b) = (tile(0), tile(1));
    // Same fingerprint, another bag count: a tile edited with its checksum recomputed (the
    // command line refuses an edit without it before looking further).
    use mil_toolkit::kernel::tiles::{merge_tiles, read_tile};
    let first = read_tile(&a).unwrap();
    let mut second = read_tile(&b).unwrap();
    let n = second.n;
    second.n = n + 1;
    let names = [path_str(&a), path_str(&b)];
    let err = merge_tiles(&[first, second], &names)
        .unwrap_err()
        .to_string();
    assert!(err.contains(&format!("{} bags vs {n}", n + 1)), "{err}");
    assert!(!err.contains("fingerprint"), "equal fingerprints: {err}");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn control_characters_in_bag_ids_are_escaped_in_human_output() {
    let dir = temp_dir("edges-escape");
    let data = dir.join("esc.csv");
    std::fs::write(
        &data,
        "1,a\x1b[31mred,1,2\n1,a\x1b[31mred,3,4\n0,b\u{9b}2J,5,6\n0,b\u{9b}2J,1,1\n\
         1,c,2,2\n0,d,7,7\n1,e,2,3\n0,f,8,8\n",
    )
    .unwrap();
    let model = dir.join("esc.model");
    let (data, model) = (path_str(&data), path_str(&model));
    let out = run_mil(&["train", &data, "--classifier", "milr", "-o", &model]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = run_mil(&["predict", &model, &data]);
    let human = String::from_utf8(out.stdout).unwrap();
    assert!(
        !human.contains('\x1b') && !human.contains('\u{9b}'),
        "{human:?}"
    );
    assert!(human.contains("a\\u{1b}[31mred"), "{human}");
    assert!(human.contains("b\\u{9b}2J"), "{human}");
    // JSON keeps JSON's escaping: the id reads back as it is in the file.
    let v = mil_json(&["predict", &model, &data, "--json"]);
    let ids: Vec<&str> = v["predictions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["bag"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&"a\x1b[31mred") && ids.contains(&"b\u{9b}2J"));
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_file_named_like_a_built_in_set_wins() {
    let dir = temp_dir("edges-shadow");
    std::fs::write(dir.join("musk1"), "1,a,1,2\n1,a,3,4\n0,b,5,6\n").unwrap();
    let out = Command::new(mil_binary())
        .args(["info", "musk1", "--json"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["bags"], 2, "the file, not the built-in set of 92 bags");
    // Elsewhere the name is the built-in set.
    let v = mil_json(&["info", "musk1", "--json"]);
    assert_eq!(v["bags"], 92);
    std::fs::remove_dir_all(dir).ok();
}
