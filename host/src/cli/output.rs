//! Where the CLI's outputs go: written atomically (the old file stays whole until the new
//! one is complete), and never over one of the command's own inputs.

use std::io::Write;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::atomic_write::{same_file, write_atomic};
use crate::error::{Error, Result};
use crate::params::Estimate;

/// Whether an output went to standard output (`-o -`): the report then goes to stderr.
static STDOUT_TAKEN: AtomicBool = AtomicBool::new(false);

/// Whether an output of this run went to standard output.
pub fn stdout_taken() -> bool {
    STDOUT_TAKEN.load(Ordering::Relaxed)
}

/// Writes `bytes` to `path` atomically, or to standard output for `-` (or `/dev/stdout`),
/// after which the report goes to stderr; a directory there is the user's mistake
/// (exit 2). Devices and FIFOs are written through (see [`crate::atomic_write`]).
pub fn write_output(path: &str, bytes: &[u8]) -> Result<()> {
    if path == "-" || path == "/dev/stdout" {
        STDOUT_TAKEN.store(true, Ordering::Relaxed);
        return write_stdout(bytes);
    }
    if Path::new(path).is_dir() {
        return Err(Error::data(path, "is a directory; name a file to write"));
    }
    write_atomic(Path::new(path), bytes).map_err(|source| Error::Io {
        path: path.into(),
        source,
    })
}

/// Writes `bytes` to standard output and flushes it; an error names stdout (a closed
/// pipe is told apart by [`is_closed_stdout`]).
pub fn write_stdout(bytes: &[u8]) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)
        .and_then(|()| out.flush())
        .map_err(|source| Error::Io {
            path: "stdout".into(),
            source,
        })
}

/// Whether `error` is a write to standard output whose reader has gone (`| head`): not
/// a failure of the command, which ends quietly.
pub fn is_closed_stdout(error: &Error) -> bool {
    matches!(error, Error::Io { path, source }
        if path.as_os_str() == "stdout" && source.kind() == std::io::ErrorKind::BrokenPipe)
}

/// Refuses (exit 2, before any work) an output of `flag` that is the same file as one of
/// the command's inputs, through symbolic or hard links; built-in data set names are not
/// files and never match. See [`check_outputs`] for the other checks.
pub fn refuse_input_as_output(flag: &str, output: &str, inputs: &[&str]) -> Result<()> {
    check_outputs(&[(flag, output)], inputs)
}

/// Checks the outputs of one command, given as `(flag, path)`, before any work, refusing
/// with exit 2: an empty path or one naming a directory; an existing file without any
/// write permission bit (mode 0444, as `cp` refuses it; decided by the mode, not by
/// `access()`, which lets root write anything); an output that is one of `inputs`; and
/// two outputs on one path (the same spelling once normalised, or the same file),
/// naming both flags. `-` is standard output.
pub fn check_outputs(outputs: &[(&str, &str)], inputs: &[&str]) -> Result<()> {
    for &(flag, path) in outputs {
        if path.is_empty() {
            return Err(Error::parameter(flag, "\"\"", "name a file to write"));
        }
        if path == "-" || path == "/dev/stdout" {
            continue;
        }
        if path.ends_with('/') || Path::new(path).is_dir() {
            return Err(Error::parameter(
                flag,
                path,
                "is a directory; name a file to write",
            ));
        }
        if write_protected(Path::new(path)) {
            return Err(Error::parameter(
                flag,
                path,
                "is write-protected; make it writable (chmod u+w) or choose another path",
            ));
        }
        if let Some(input) = inputs
            .iter()
            .find(|input| same_file(Path::new(path), Path::new(input)))
        {
            return Err(Error::parameter(
                flag,
                path,
                format!("is the input {input}; choose another output path"),
            ));
        }
    }
    for (i, &(flag_a, a)) in outputs.iter().enumerate() {
        for &(flag_b, b) in &outputs[i + 1..] {
            let stdout = |p: &str| p == "-" || p == "/dev/stdout";
            let clash = if stdout(a) || stdout(b) {
                stdout(a) && stdout(b)
            } else {
                normalised(a) == normalised(b) || same_file(Path::new(a), Path::new(b))
            };
            if clash {
                return Err(Error::parameter(
                    flag_b,
                    b,
                    format!("is also the path of {flag_a}; give each output its own path"),
                ));
            }
        }
    }
    Ok(())
}

/// Refuses standard output (`-`, `/dev/stdout`) for `flag`, whose output is a model
/// file that the report would mix with.
pub fn refuse_stdout(flag: &str, path: &str) -> Result<()> {
    if path == "-" || path == "/dev/stdout" {
        return Err(Error::parameter(
            flag,
            path,
            "a model is saved to a file; name one",
        ));
    }
    Ok(())
}

/// An existing regular file with no write permission bit at all.
fn write_protected(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o222 == 0)
    }
    #[cfg(not(unix))]
    {
        std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().readonly())
    }
}

/// `path` made absolute, with its existing directory resolved (symbolic links, `..`)
/// and `.` removed, so that two spellings of one file not yet written compare equal.
fn normalised(path: &str) -> PathBuf {
    let path = Path::new(path);
    let absolute = std::env::current_dir()
        .map(|cwd| cwd.join(path))
        .unwrap_or_else(|_| path.to_path_buf());
    let (Some(dir), Some(name)) = (absolute.parent(), absolute.file_name()) else {
        return absolute;
    };
    match std::fs::canonicalize(dir) {
        Ok(dir) => dir.join(name),
        Err(_) => absolute
            .components()
            .filter(|c| !matches!(c, Component::CurDir))
            .collect(),
    }
}

/// The largest compact model `mil inspect` reads: models are for microcontrollers, and
/// the largest this project writes (SVMs keeping every training bag of musk2) are a few
/// MiB.
pub const MAX_COMPACT_MODEL_BYTES: u64 = 64 << 20;

/// Reads a compact model file, refusing directories and files (or endless streams such
/// as `/dev/zero`) larger than [`MAX_COMPACT_MODEL_BYTES`] with exit 2.
pub fn read_compact_model(path: &str) -> Result<Vec<u8>> {
    use std::io::Read;
    let io = |source| Error::Io {
        path: path.into(),
        source,
    };
    if Path::new(path).is_dir() {
        return Err(Error::data(path, "is a directory, not a compact model"));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .map_err(io)?
        .take(MAX_COMPACT_MODEL_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > MAX_COMPACT_MODEL_BYTES {
        return Err(Error::data(
            path,
            format!(
                "larger than {} MiB: not a compact model",
                MAX_COMPACT_MODEL_BYTES >> 20
            ),
        ));
    }
    Ok(bytes)
}

/// `--max-memory-gib`'s parser: a positive, finite number of GiB (NaN, an infinity or
/// zero would turn the guard off or refuse everything).
pub fn parse_memory_limit(text: &str) -> std::result::Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        Ok(_) => Err("give a positive, finite number of GiB".into()),
        Err(e) => Err(e.to_string()),
    }
}

/// Refuses work whose estimated memory exceeds `limit_gib`, with the estimate and the
/// flag that raises the limit.
pub fn check_memory(what: &str, bytes: f64, limit_gib: f64) -> Result<()> {
    check_estimate(what, Estimate { bytes, ops: 0.0 }, limit_gib, "")
}

/// [`check_memory`] for an algorithm's [`Estimate`]: the message states its work too
/// (when counted) and what else makes the run smaller (`remedy`, when not empty).
pub fn check_estimate(what: &str, estimate: Estimate, limit_gib: f64, remedy: &str) -> Result<()> {
    estimate.check(what, limit_gib, remedy)
}

/// Whether the file is a clustering model written by `mil cluster -o` (tagged by its
/// `kind`), rather than a `mil train` model.
pub fn is_cluster_model(path: &Path) -> bool {
    crate::data::read_json_text(path, "a model")
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .is_some_and(|v| v.get("format").is_none() && v.get("kind").is_some())
}

/// Writes a line to stderr, ignoring errors: a message must never fail the program (or
/// panic, as `eprintln!` does when stderr is closed or full).
pub fn warn(line: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{line}");
}

/// `--max-cpu-minutes`: a positive, finite number.
pub fn parse_cpu_limit(text: &str) -> std::result::Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        Ok(_) => Err("give a positive, finite number of minutes".into()),
        Err(e) => Err(e.to_string()),
    }
}
