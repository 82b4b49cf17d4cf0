//! The `mil` command-line program.

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use mil::cli::{self, Cli};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli::run(&cli) {
        Ok(report) => {
            let mut out = std::io::stdout().lock();
            let text = if cli.json {
                report.json.to_string()
            } else {
                report.human
            };
            // A closed pipe (e.g. `| head`) is not an error worth a panic.
            let _ = writeln!(out, "{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("mil: {e}");
            ExitCode::from(e.exit_code() as u8)
        }
    }
}
