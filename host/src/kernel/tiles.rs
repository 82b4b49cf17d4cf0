//! Gram matrices computed in shares ("tiles") by separate processes and joined into
//! exactly the matrix one process computes. A tile holds a contiguous run of the upper
//! triangle's entries (row-major, i ≤ j), chosen so that every tile has about the same
//! estimated work ([`crate::shard::Shard::range`]; a few large bags dominate the cost),
//! with the fingerprint of the data and settings it was computed from. Every entry draws
//! from its own generator seeded by (seed, i, j), so a tile's values do not depend on
//! which process computed it.

use serde::{Deserialize, Serialize};

use super::boxes::{box_entries, upper_pairs, BoxGramSpec, GridData};
use super::nsk::{log_set_kernels, normalise_upper, runs_of};
use super::LogGram;
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::progress::Progress;
use crate::shard::Shard;

/// The `format` of every tile file.
pub const FORMAT: &str = "mil-gram-tile";
/// The tile format version this build writes and reads.
pub const VERSION: u32 = 2;

/// How the entries of a tile are computed.
#[derive(Debug, Clone, Copy)]
pub enum TileKernel<'a> {
    /// A box kernel on discretised bags: the entries are ln k.
    Box(&'a GridData, BoxGramSpec),
    /// The normalised set kernel with this γ on (z-scored) bags: the entries are the
    /// unnormalised ln k_set, normalised when the tiles are joined (the diagonal lies in
    /// some tile).
    Nsk(&'a Dataset, f64),
}

/// One share of a Gram matrix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GramTile {
    /// Always [`FORMAT`].
    pub format: String,
    /// Always [`VERSION`] when written by this build.
    pub version: u32,
    /// Fingerprint of the data and every setting; tiles join only with equal ones.
    pub fingerprint: String,
    /// Whether the entries are NSK's unnormalised ln k_set.
    pub nsk: bool,
    /// Number of bags n.
    pub n: usize,
    /// This tile's share.
    pub shard: usize,
    /// The number of shares.
    pub shards: usize,
    /// Index of the first entry in the row-major upper triangle.
    pub first: usize,
    /// The entries from `first` on.
    pub values: Vec<f64>,
    /// Samples the estimators drew for these entries.
    pub samples: u64,
    /// Wall seconds the tile took.
    pub seconds: f64,
    /// What the single run reports beside the matrix (settings, bag ids), carried along.
    pub summary: serde_json::Value,
    /// [`crate::shard::content_checksum`] of the tile with this field empty.
    pub checksum: String,
}

/// The estimated work of each entry of the upper triangle: the instance pairs it
/// compares, plus the bags' own sizes for the per-entry set-up.
pub fn entry_costs(bag_sizes: &[usize]) -> Vec<f64> {
    let n = bag_sizes.len();
    upper_pairs(n)
        .into_iter()
        .map(|(i, j)| (bag_sizes[i] * bag_sizes[j] + bag_sizes[i] + bag_sizes[j]) as f64)
        .collect()
}

/// Computes the tile `shard` of the Gram matrix over `n` bags whose sizes are
/// `bag_sizes`. Its memory is its own entries, never the whole matrix.
pub fn compute_tile(
    kernel: TileKernel<'_>,
    bag_sizes: &[usize],
    shard: Shard,
    fingerprint: String,
    summary: serde_json::Value,
    progress: &dyn Progress,
) -> Result<GramTile> {
    let start = std::time::Instant::now();
    let n = bag_sizes.len();
    let range = shard.range(&entry_costs(bag_sizes));
    let pairs: Vec<(usize, usize)> = upper_pairs(n)
        .into_iter()
        .skip(range.start)
        .take(range.len())
        .collect();
    let (values, samples, nsk) = match kernel {
        TileKernel::Box(grid, spec) => {
            let entries = box_entries(grid, spec, &pairs, progress)?;
            let samples = entries.iter().map(|e| e.1).sum();
            (entries.into_iter().map(|e| e.0).collect(), samples, false)
        }
        TileKernel::Nsk(data, gamma) => {
            // The same block computation as the single run: each entry's bits do not
            // depend on the other entries of the tile.
            let values = log_set_kernels(data, data, &runs_of(&pairs), gamma);
            (values, 0, true)
        }
    };
    let tile = GramTile {
        format: FORMAT.into(),
        version: VERSION,
        fingerprint,
        nsk,
        n,
        shard: shard.index,
        shards: shard.count,
        first: range.start,
        values,
        samples,
        seconds: start.elapsed().as_secs_f64(),
        summary,
        checksum: String::new(),
    };
    Ok(GramTile {
        checksum: crate::shard::content_checksum(&tile)?,
        ..tile
    })
}

/// Reads a tile file, naming it in every error.
pub fn read_tile(path: &std::path::Path) -> Result<GramTile> {
    let text = crate::data::read_json_text(path, "a Gram tile")?;
    parse_tile(&path.display().to_string(), &text)
}

/// Reads a tile's text (from the file `file`, named in every error): its format,
/// version and checksum are checked; [`merge_tiles`] checks the rest.
pub fn parse_tile(file: &str, text: &str) -> Result<GramTile> {
    let file = file.to_string();
    let mut tile: GramTile = serde_json::from_str(text).map_err(|e| Error::Parse {
        file: file.clone(),
        line: e.line(),
        field: "tile".into(),
        problem: format!("not a Gram tile: {e}"),
    })?;
    if tile.format != FORMAT || tile.version != VERSION {
        return Err(Error::data(
            &file,
            format!(
                "format {:?} version {}; this build reads {FORMAT:?} version {VERSION}",
                tile.format, tile.version
            ),
        ));
    }
    let written = std::mem::take(&mut tile.checksum);
    if crate::shard::content_checksum(&tile)? != written {
        return Err(Error::data(
            &file,
            "damaged or edited: its content does not match its checksum",
        ));
    }
    tile.checksum = written;
    Ok(tile)
}

/// Joins tiles (named by `names` in errors) into the Gram matrix one process computes.
/// A missing, duplicated or mismatched tile (other data, seed or settings) is an error
/// naming it.
pub fn merge_tiles(tiles: &[GramTile], names: &[String]) -> Result<LogGram> {
    let first = tiles
        .first()
        .ok_or_else(|| Error::parameter("tiles", 0, "give at least one tile"))?;
    let n = first.n;
    for (t, tile) in tiles.iter().enumerate() {
        // Name what differs: equal fingerprints with other sizes or kinds are possible
        // for edited tiles, and two equal fingerprints would explain nothing.
        let mut differs = Vec::new();
        if tile.fingerprint != first.fingerprint {
            differs.push(format!(
                "fingerprint {} vs {}",
                tile.fingerprint, first.fingerprint
            ));
        }
        if tile.n != n {
            differs.push(format!("{} bags vs {n}", tile.n));
        }
        if tile.nsk != first.nsk {
            let kind = |nsk: bool| if nsk { "NSK" } else { "box kernel" };
            differs.push(format!("{} vs {}", kind(tile.nsk), kind(first.nsk)));
        }
        if !differs.is_empty() {
            return Err(Error::data(
                &names[t],
                format!(
                    "computed from other data or settings than {} ({})",
                    names[0],
                    differs.join(", ")
                ),
            ));
        }
    }
    let shares: Vec<(usize, usize)> = tiles.iter().map(|t| (t.shard, t.shards)).collect();
    crate::shard::check_complete(&shares, names)?;
    // The entries the tiles hold bound n before the matrix is allocated.
    let held: usize = tiles.iter().map(|t| t.values.len()).sum();
    if n.checked_add(1)
        .and_then(|m| m.checked_mul(n))
        .map(|m| m / 2)
        != Some(held)
    {
        return Err(Error::data(
            &names[0],
            format!("{held} entries in all, not the upper triangle of {n} bags"),
        ));
    }
    let pairs = upper_pairs(n);
    let mut entries = vec![f64::NAN; pairs.len()];
    let mut filled = 0;
    for (t, tile) in tiles.iter().enumerate() {
        let slot = tile
            .first
            .checked_add(tile.values.len())
            .and_then(|end| entries.get_mut(tile.first..end))
            .ok_or_else(|| Error::data(&names[t], "entries beyond the matrix"))?;
        slot.copy_from_slice(&tile.values);
        filled += tile.values.len();
    }
    if filled != pairs.len() || entries.iter().any(|v| v.is_nan()) {
        return Err(Error::data(
            &names[0],
            "the tiles do not cover the matrix exactly once",
        ));
    }
    let ln = if first.nsk {
        // Normalised exactly as `nsk::log_nsk_gram` does, by the same function.
        normalise_upper(n, &entries)
    } else {
        let mut ln = vec![0.0; n * n];
        for (&(i, j), &v) in pairs.iter().zip(&entries) {
            ln[i * n + j] = v;
            ln[j * n + i] = v;
        }
        ln
    };
    Ok(LogGram {
        n,
        ln,
        samples: tiles.iter().map(|t| t.samples).sum(),
    })
}
