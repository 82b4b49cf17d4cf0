//! The `mil` program built as the test package's own binary (see `Cargo.toml`).

fn main() -> std::process::ExitCode {
    mil_toolkit::cli::main()
}
