//! The `mil` executable as built for this package: its help lists the CLI contract's
//! subcommands. (The end-to-end tests in `tests/` run the same `main` as the root
//! package's `mil-under-test` binary, which cargo rebuilds with them.)

use std::process::Command;

#[test]
fn help_lists_every_subcommand_of_the_contract() {
    let out = Command::new(env!("CARGO_BIN_EXE_mil"))
        .arg("--help")
        .output()
        .expect("the mil binary runs");
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for command in [
        "info", "synth", "cv", "train", "predict", "project", "gram", "cluster", "export",
        "inspect",
    ] {
        assert!(
            help.lines().any(|l| l.trim_start().starts_with(command)),
            "`{command}` missing from:\n{help}"
        );
    }
}
