//! Helpers shared by the end-to-end tests in `tests/` and the benchmarks in `benches/`.

use std::path::PathBuf;
use std::process::{Command, Output};

/// Path of the `mil` program built by cargo for this test run: this package's
/// `mil-under-test` binary (the same `main`), which cargo builds with the tests, so it is
/// never older than the code under test.
pub fn mil_binary() -> PathBuf {
    let mut path = std::env::current_exe().expect("test executable path");
    path.pop();
    if path.ends_with("deps") {
        path.pop();
    }
    path.join(format!("mil-under-test{}", std::env::consts::EXE_SUFFIX))
}

/// Runs `mil` with the given arguments and returns its output.
pub fn run_mil(args: &[&str]) -> Output {
    Command::new(mil_binary())
        .args(args)
        .output()
        .expect("the mil binary runs")
}

/// A fresh temporary directory for one test, removed by the caller when done.
pub fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mil-test-{}-{}", tag, std::process::id()));
    std::fs::create_dir_all(&dir).expect("create temp dir");
    dir
}
