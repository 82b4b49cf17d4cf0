//! The `mil` command-line program.

use std::process::ExitCode;

fn main() -> ExitCode {
    mil_toolkit::cli::main()
}
