//! Work that grows faster than its input is estimated before it starts: a run whose
//! estimated memory exceeds `--max-memory-gib` is refused with exit 2, naming the
//! estimate and what to change, instead of aborting on a failed allocation; and an
//! estimate is within a factor of two of the peak memory the run measurably reaches.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};

use mil_suite::{mil_binary, run_mil, temp_dir};
use mil_toolkit::params::Shape;

/// Writes `bags` bags of `size` instances of two features, labels alternating, and
/// returns the shape written.
fn write_bags(path: &Path, bags: usize, size: usize) -> Shape {
    let mut text = String::with_capacity(bags * size * 24);
    for b in 0..bags {
        for i in 0..size {
            let x = ((b * 7 + i * 3) % 101) as f64 / 10.0;
            let y = ((b * 13 + i) % 97) as f64 / 10.0 + (b % 2) as f64;
            text.push_str(&format!("{},b{b},{x},{y}\n", b % 2));
        }
    }
    std::fs::write(path, text).unwrap();
    Shape {
        bags,
        instances: bags * size,
        dim: 2,
    }
}

fn path_str(p: &Path) -> String {
    p.to_str().unwrap().to_string()
}

#[test]
fn citation_knn_on_100000_bags_is_refused_at_once() {
    let dir = temp_dir("estimate-refused");
    let data = dir.join("big.csv");
    let shape = write_bags(&data, 100_000, 10);
    let data = path_str(&data);
    let expected =
        mil_toolkit::classifier::citation_knn::footprint(shape).bytes / (1u64 << 30) as f64;
    for command in ["cv", "train"] {
        let mut args = vec![command, &data, "--classifier", "citation-knn"];
        let model = path_str(&dir.join("unused.json"));
        if command == "train" {
            args.extend(["-o", &model]);
        }
        let run = measure(&args);
        let err = &run.stderr;
        assert_eq!(run.code, Some(2), "{args:?}: {err}");
        assert!(err.contains("--max-memory-gib"), "{err}");
        assert!(err.contains("100000 bags"), "{err}");
        assert!(err.contains(&format!("about {expected:.1} GiB")), "{err}");
        assert!(err.contains("use fewer bags"), "{err}");
        // Reading the 1,000,000 lines is most of it (CPU time: the wall time depends on
        // the machine's load); an unoptimised build reads slower.
        if !cfg!(debug_assertions) {
            assert!(run.cpu < 1.0, "{args:?} took {:.2} CPU s", run.cpu);
        }
        // Far below the 149 GiB the distances would take.
        assert!(run.peak < 1e9, "{args:?} reached {:.3e} B", run.peak);
    }
    // Raising the limit is what the message offers; a smaller limit refuses smaller runs.
    let small = dir.join("small.csv");
    write_bags(&small, 3000, 2);
    let small = path_str(&small);
    let limited = [
        "cv",
        &small,
        "--classifier",
        "citation-knn",
        "--max-memory-gib",
        "0.01",
    ];
    let out = run_mil(&limited);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--max-memory-gib"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn every_growing_command_checks_its_estimate() {
    let dir = temp_dir("estimate-commands");
    let data = dir.join("d.csv");
    write_bags(&data, 3000, 2);
    let data = path_str(&data);
    let tiny = ["--max-memory-gib", "0.0001"];
    let out = |name: &str| path_str(&dir.join(name));
    let (x, p, s) = (out("x.json"), out("p.csv"), out("s.csv"));
    let cases: Vec<Vec<&str>> = vec![
        vec!["cv", &data, "--classifier", "svm", "--kernel", "nsk"],
        vec![
            "train",
            &data,
            "--classifier",
            "svm",
            "--kernel",
            "mi-rbf",
            "-o",
            &x,
        ],
        vec!["cluster", &data, "--method", "bamic-min", "--k", "2"],
        vec!["cluster", &data, "--method", "m3ic", "--k", "2"],
        vec![
            "project",
            &data,
            "--projection",
            "pca",
            "--dim",
            "1",
            "-o",
            &p,
        ],
        vec!["synth", "term-counts", "--bags", "100000", "-o", &s],
    ];
    for mut args in cases {
        args.extend(tiny);
        let out = run_mil(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("invalid --max-memory-gib = 0.0001"),
            "{args:?}: {err}"
        );
        assert!(
            err.contains("GiB and"),
            "{args:?}: the work is stated: {err}"
        );
    }
    // MILR grows with the data only: nothing to refuse.
    let out = run_mil(&[
        "cv",
        &data,
        "--classifier",
        "milr",
        "--folds",
        "2",
        "--max-memory-gib",
        "0.001",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!dir.join("s.csv").exists(), "a refused run writes nothing");
    std::fs::remove_dir_all(&dir).ok();
}

/// What the kernel accounted for one `mil` child process (`wait4`).
struct Measured {
    code: Option<i32>,
    stderr: String,
    /// Peak resident memory, bytes.
    peak: f64,
    /// User and system CPU time, seconds.
    cpu: f64,
}

/// Runs `mil args` as a child and measures it.
// `wait4` reaps the child, which clippy cannot see.
#[allow(clippy::zombie_processes)]
fn measure(args: &[&str]) -> Measured {
    let mut child = Command::new(mil_binary())
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mil runs");
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: `usage` is a plain C struct the call fills; `pid` is our own child, which
    // `wait4` reaps (the `Child` handle is dropped without waiting again).
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid);
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    Measured {
        code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
        stderr,
        // Linux reports the maximum resident set in KiB.
        peak: usage.ru_maxrss as f64 * 1024.0,
        cpu: seconds(usage.ru_utime) + seconds(usage.ru_stime),
    }
}

/// Trains (or clusters) on bags of `size` instances at three sizes and checks that the
/// estimate is within a factor of two of the peak resident memory the run reaches.
fn estimate_is_within_twice_the_peak(
    name: &str,
    sizes: [usize; 3],
    size: usize,
    command: &[&str],
    estimate: impl Fn(Shape) -> f64,
) {
    let dir = temp_dir(&format!("estimate-peak-{name}"));
    for bags in sizes {
        let data = dir.join(format!("d{bags}.csv"));
        let shape = write_bags(&data, bags, size);
        let out = path_str(&dir.join("out.json"));
        let mut args = vec![command[0], data.to_str().unwrap()];
        args.extend(&command[1..]);
        args.extend(["-o", &out]);
        let run = measure(&args);
        assert_eq!(run.code, Some(0), "{args:?}: {}", run.stderr);
        let (estimate, peak) = (estimate(shape), run.peak);
        let ratio = estimate / peak;
        assert!(
            (0.5..=2.0).contains(&ratio),
            "{name}, {bags} bags of {size}: estimate {estimate:.3e} B, peak {peak:.3e} B"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn citation_knn_estimate_is_within_twice_the_measured_peak() {
    estimate_is_within_twice_the_peak(
        "citation-knn",
        [2000, 3500, 5000],
        2,
        &["train", "--classifier", "citation-knn"],
        |shape| mil_toolkit::classifier::citation_knn::footprint(shape).bytes,
    );
}

/// A soft margin (C = 10): on these random labels the default hard margin keeps SMO
/// iterating for minutes, and C does not change the memory.
#[test]
fn set_kernel_svm_estimate_is_within_twice_the_measured_peak() {
    estimate_is_within_twice_the_peak(
        "nsk",
        [1200, 1800, 2400],
        2,
        &[
            "train",
            "--classifier",
            "svm",
            "--kernel",
            "nsk",
            "--cost",
            "10",
        ],
        |shape| mil_toolkit::classifier::svm::footprint(shape).bytes,
    );
}

/// MI-SVM copies the Gram matrix for its training points; mi-SVM reads it as it is.
#[test]
fn instance_svm_estimates_are_within_twice_the_measured_peak() {
    use mil_toolkit::classifier::mi_svm::{footprint, Heuristic, MiSvm};
    for (name, heuristic) in [
        ("mi-svm-bag", Heuristic::Bag),
        ("mi-svm", Heuristic::Instance),
    ] {
        let params = MiSvm::default().heuristic(heuristic);
        estimate_is_within_twice_the_peak(
            name,
            [300, 450, 600],
            4,
            &["train", "--classifier", name],
            |shape| footprint(shape, &params).bytes,
        );
    }
}

#[test]
fn bamic_estimate_is_within_twice_the_measured_peak() {
    estimate_is_within_twice_the_peak(
        "bamic",
        [2000, 3500, 5000],
        2,
        &["cluster", "--method", "bamic-min", "--k", "2"],
        |shape| mil_toolkit::cluster::bamic::footprint(shape).bytes,
    );
}

#[test]
fn box_kernel_cpu_time_is_estimated_before_work_and_refused_over_the_limit() {
    // sival6's k∧ Gram matrix takes minutes: timing a sample of its entries says so in
    // about a second, before any fold runs.
    let out = run_mil(&[
        "cv",
        "sival6",
        "--classifier",
        "svm",
        "--max-cpu-minutes",
        "0.5",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--max-cpu-minutes")
            && stderr.contains("box-kernel Gram matrices of 360 bags are estimated at")
            && stderr.contains("entries timed"),
        "{stderr}"
    );
    let seconds: f64 = stderr
        .split("estimated at ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("the estimate in seconds");
    assert!(seconds > 30.0, "{stderr}");
    // Kernels that are not box kernels are not timed; a non-positive limit is refused.
    let out = run_mil(&[
        "cv",
        "musk1",
        "--classifier",
        "milr",
        "--max-cpu-minutes",
        "0.01",
        "--folds",
        "2",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = run_mil(&[
        "cv",
        "musk1",
        "--classifier",
        "svm",
        "--max-cpu-minutes",
        "0",
    ]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_choice_among_classifiers_is_estimated_and_trimmed_to_the_budget() {
    // A pilot fit per candidate estimates the run; over the budget the dearest
    // candidates are left out and the rest run.
    fn args<'a>(limit: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
        let mut args = vec![
            "cv",
            "musk1",
            "--classifier",
            "auto",
            "--folds",
            "3",
            "--max-cpu-minutes",
            limit,
        ];
        args.extend_from_slice(extra);
        args
    }
    let out = run_mil(&args("0.005", &[]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("choosing among") && stderr.contains("left out: "),
        "{stderr}"
    );
    // "…; N candidates left, …", or "1 candidate left".
    let before = stderr.split(" left, estimated at").next().unwrap_or("");
    let mut words = before.rsplit(' ');
    let noun = words.next().unwrap_or("");
    let left: usize = words
        .next()
        .and_then(|n| n.parse().ok())
        .expect("the number of candidates left");
    assert!(left >= 1, "{stderr}");
    let expected = if left == 1 { "candidate" } else { "candidates" };
    assert_eq!(noun, expected, "{stderr}");
    // The report counts the candidates the run compared, not the grid's.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!(
            "auto ({left} of 12 candidates of 12 classifier families"
        )) && stdout.contains(&format!("{} left out by --max-cpu-minutes)", 12 - left)),
        "{stdout}"
    );
    // A budget nothing fits in is refused before any fold, naming the flag.
    let out = run_mil(&args("0.0000001", &[]));
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--max-cpu-minutes") && stderr.contains("not even the cheapest"),
        "{stderr}"
    );
    // A shard never trims: every shard must choose among the same candidates.
    let out_path = std::env::temp_dir().join(format!("mil-trim-{}.json", std::process::id()));
    let out_path = out_path.to_str().unwrap();
    let out = run_mil(&args("0.005", &["--shard", "1/2", "--output", out_path]));
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("a shard does not trim"), "{stderr}");
    assert!(!std::path::Path::new(out_path).exists());
}
