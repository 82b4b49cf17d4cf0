//! `mil completions` and `mil manpage`: shell completion scripts and man pages generated
//! from the program's own clap definitions, so they list exactly the flags it parses.

use std::path::Path;

use serde_json::json;

use super::{CompletionsArgs, ManpageArgs, Report};
use crate::error::{Error, Result};

/// The script of one shell, or where it was written.
pub fn completions(args: &CompletionsArgs) -> Result<Report> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut super::command(), "mil", &mut script);
    let shell = args.shell.to_string();
    match &args.output {
        Some(path) => {
            super::output::write_output(path, &script)?;
            Ok(Report {
                human: format!("{shell} completions written to {path}"),
                json: json!({"shell": shell, "output": path, "bytes": script.len()}),
            })
        }
        None => {
            let script = String::from_utf8_lossy(&script).into_owned();
            Ok(Report {
                json: json!({"shell": shell, "script": script}),
                human: script,
            })
        }
    }
}

/// The man page of `mil` (stdout), or with `-o DIR` that page as `mil.1` and one page
/// per subcommand (`mil-cv.1`, `mil-cv-merge.1`, …) in DIR.
pub fn manpage(args: &ManpageArgs) -> Result<Report> {
    let mut command = super::command().disable_help_subcommand(true);
    command.build();
    let Some(dir) = &args.output else {
        let page = String::from_utf8_lossy(&render(&command, "-")?).into_owned();
        return Ok(Report {
            json: json!({"page": page}),
            human: page,
        });
    };
    if !Path::new(dir).is_dir() {
        return Err(Error::parameter(
            "--output",
            dir,
            "is not a directory; create it first (one page per subcommand goes there)",
        ));
    }
    let mut pages = Vec::new();
    write_pages(&command, Path::new(dir), &mut pages)?;
    Ok(Report {
        human: format!("{} man pages written to {dir}", pages.len()),
        json: json!({"output": dir, "pages": pages}),
    })
}

/// Writes the page of `command` and of each of its subcommands, recursively, naming
/// every file written in `pages`.
fn write_pages(command: &clap::Command, dir: &Path, pages: &mut Vec<String>) -> Result<()> {
    let name = clap_mangen::Man::new(command.clone()).get_filename();
    let path = dir.join(&name);
    let shown = path.display().to_string();
    super::output::write_output(&shown, &render(command, &shown)?)?;
    pages.push(name);
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub, dir, pages)?;
    }
    Ok(())
}

/// The roff source of one page.
fn render(command: &clap::Command, path: &str) -> Result<Vec<u8>> {
    let mut page = Vec::new();
    clap_mangen::Man::new(command.clone())
        .render(&mut page)
        .map_err(|source| Error::Io {
            path: path.into(),
            source,
        })?;
    Ok(page)
}
