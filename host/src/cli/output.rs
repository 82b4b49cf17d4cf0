//! Where the CLI's outputs go: written atomically (the old file stays whole until the new
//! one is complete), and never over one of the command's own inputs.

use std::path::Path;

use crate::atomic_write::{same_file, write_atomic};
use crate::error::{Error, Result};

/// Writes `bytes` to `path` atomically; a directory there is the user's mistake (exit 2).
pub fn write_output(path: &str, bytes: &[u8]) -> Result<()> {
    if Path::new(path).is_dir() {
        return Err(Error::data(path, "is a directory; name a file to write"));
    }
    write_atomic(Path::new(path), bytes).map_err(|source| Error::Io {
        path: path.into(),
        source,
    })
}

/// Refuses (exit 2, before any work) an output of `flag` that is the same file as one of
/// the command's inputs, through symbolic or hard links; built-in data set names are not
/// files and never match.
pub fn refuse_input_as_output(flag: &str, output: &str, inputs: &[&str]) -> Result<()> {
    match inputs
        .iter()
        .find(|input| same_file(Path::new(output), Path::new(input)))
    {
        Some(input) => Err(Error::parameter(
            flag,
            output,
            format!("is the input {input}; choose another output path"),
        )),
        None => Ok(()),
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

/// Memory a command may plan to use unless `--max-memory-gib` raises it.
pub const DEFAULT_MAX_MEMORY_GIB: f64 = 8.0;

/// Refuses work whose estimated memory exceeds `limit_gib`, with the estimate and the
/// flag that raises the limit.
pub fn check_memory(what: &str, bytes: f64, limit_gib: f64) -> Result<()> {
    let gib = bytes / f64::from(1u32 << 30);
    if gib > limit_gib {
        return Err(Error::parameter(
            "max_memory_gib",
            limit_gib,
            format!("{what} needs about {gib:.1} GiB; raise --max-memory-gib to run it"),
        ));
    }
    Ok(())
}

/// Whether the file is a clustering model written by `mil cluster -o` (tagged by its
/// `kind`), rather than a `mil train` model.
pub fn is_cluster_model(path: &Path) -> bool {
    crate::data::read_json_text(path, "a model")
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .is_some_and(|v| v.get("format").is_none() && v.get("kind").is_some())
}
