//! `mil gram`: the Gram matrix of a set kernel over all bags of DATA, as natural
//! logarithms, written as CSV or float64 `.npy`.

use std::path::Path;
use std::time::Instant;

use serde_json::json;

use super::{GramArgs, GramMerge, GramMergeArgs, Report};
use crate::classifier::svm::Rho;
use crate::data;
use crate::data::standardize::ZScore;
use crate::error::{Error, Result};
use crate::kernel::nsk::log_nsk_gram;
use crate::kernel::tiles::{compute_tile, merge_tiles, read_tile, TileKernel};
use crate::kernel::SetKernelName;
use crate::kernel::{box_gram, npy, spectrum, BoxGramSpec, GridData, LogGram};
use crate::progress::Progress;
use crate::shard::{Fingerprint, Shard};

/// Output formats, by file extension.
enum Format {
    Csv,
    Npy,
}

/// The output format an `-o` path names, if any.
fn output_format(output: Option<&str>) -> Result<Option<(&str, Format)>> {
    let Some(path) = output else {
        return Ok(None);
    };
    match Path::new(path)
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("csv") => Ok(Some((path, Format::Csv))),
        Some("npy") => Ok(Some((path, Format::Npy))),
        _ => Err(Error::parameter(
            "--output",
            path,
            "must end in .csv or .npy",
        )),
    }
}

/// Runs `mil gram` (or `mil gram merge`).
pub fn run(args: &GramArgs, progress: &dyn Progress) -> Result<Report> {
    if let Some(GramMerge::Merge(m)) = &args.merge {
        return merge(m);
    }
    let (Some(data_spec), Some(kernel)) = (args.data.as_deref(), args.kernel) else {
        return Err(Error::parameter(
            "DATA",
            "(missing)",
            "give DATA and --kernel",
        ));
    };
    let shard = args.shard.as_deref().map(Shard::from_arg).transpose()?;
    let format = match shard {
        Some(_) => None,
        None => output_format(args.output.as_deref())?,
    };
    if shard.is_some() && args.output.is_none() {
        return Err(Error::parameter(
            "--output",
            "(missing)",
            "a shard writes its tile to -o for `mil gram merge`",
        ));
    }
    crate::classifier::svm::bags::check_settings(
        &crate::classifier::svm::bags::BagSvmSettings::default().rho(args.rho),
    )?;
    let accuracy = crate::kernel::accuracy(args.set_kernel.epsilon, args.set_kernel.delta)?;
    let method = args.set_kernel.estimator;
    if let Some(out) = &args.output {
        super::output::refuse_input_as_output("--output", out, &[data_spec])?;
    }
    let data = select_bags(data::load(data_spec)?, args)?;
    // The matrix, its normalised and powered copies and the eigensolver's workspace.
    let n = data.n_bags() as f64;
    super::output::check_memory(
        "the Gram matrix and its spectra",
        4.0 * 8.0 * n * n,
        args.max_memory_gib
            .unwrap_or_else(crate::params::default_memory_limit_gib),
    )?;
    let start = Instant::now();
    let mut nsk_gamma = None;
    let mut precision = None;
    let bag_sizes: Vec<usize> = (0..data.n_bags()).map(|b| data.bag(b).len()).collect();
    // The kernel, on the data as its entries see them.
    let grid;
    let zscored;
    let tile_kernel = match kernel {
        SetKernelName::Box(kernel) => {
            grid = GridData::fit(&data, args.set_kernel.precision)?;
            precision = Some(grid.precision());
            let spec = BoxGramSpec {
                kernel,
                method,
                accuracy,
                seed: args.seed,
            };
            if shard.is_none() {
                let cost = crate::kernel::boxes::box_gram_cost(&grid, spec)?;
                if cost.cpu_seconds > 10.0 {
                    progress.note(&format!(
                        "mil: the Gram matrix is estimated at {:.0} CPU s ({} of {} entries timed)",
                        cost.cpu_seconds, cost.measured, cost.entries
                    ));
                }
            }
            TileKernel::Box(&grid, spec)
        }
        SetKernelName::MiRbf => {
            return Err(Error::parameter(
                "kernel",
                "mi-rbf",
                "mil gram computes box kernels and nsk; the MI kernel is available to the SVM (mil cv/train --classifier svm)",
            ))
        }
        SetKernelName::Nsk => {
            let zscore = ZScore::fit(&data);
            let active = zscore.std.iter().filter(|&&s| s > 0.0).count().max(1);
            let gamma = args.gamma.unwrap_or(1.0 / active as f64);
            if !(gamma.is_finite() && gamma > 0.0) {
                return Err(Error::parameter(
                    "gamma",
                    gamma,
                    "must be positive and finite",
                ));
            }
            nsk_gamma = Some(gamma);
            zscored = zscore.apply_active(&data)?;
            TileKernel::Nsk(&zscored, gamma)
        }
    };
    let summary = json!({
        "data": data.name(),
        "kernel": kernel.to_string(),
        "estimator": args.set_kernel.estimator.to_string(),
        "epsilon": args.set_kernel.epsilon,
        "delta": args.set_kernel.delta,
        "precision": precision,
        "gamma": nsk_gamma,
        "seed": args.seed,
        "rho": args.rho,
        "bag_ids": data.bag_ids(),
    });
    if let Some(shard) = shard {
        let mut fingerprint = Fingerprint::default()
            .dataset(&data)
            .bytes(summary.to_string().as_bytes());
        if kernel == SetKernelName::Nsk {
            // Tiles of another NSK arithmetic would not join into the single run's bits.
            fingerprint = fingerprint.bytes(crate::kernel::nsk::ARITHMETIC.as_bytes());
        }
        let fingerprint = fingerprint.hex();
        progress.start("gram entries", 0);
        let tile = compute_tile(
            tile_kernel,
            &bag_sizes,
            shard,
            fingerprint,
            summary,
            progress,
        )?;
        progress.finish();
        let out = args.output.as_deref().unwrap_or_default();
        let text = serde_json::to_string(&tile).map_err(|e| Error::Numerical {
            method: "tile serialisation",
            reason: e.to_string(),
        })?;
        super::output::write_output(out, text.as_bytes())?;
        let human = format!(
            "{}: shard {shard} of the {n}×{n} Gram matrix: {} entries from entry {} in {:.2} s → {out}",
            data.name(),
            tile.values.len(),
            tile.first,
            tile.seconds,
            n = tile.n,
        );
        let json = json!({
            "bags": tile.n,
            "shard": shard.to_string(),
            "entries": tile.values.len(),
            "first": tile.first,
            "samples": tile.samples,
            "seconds": tile.seconds,
            "output": out,
        });
        return Ok(Report { human, json });
    }
    progress.start("gram entries", 0);
    let gram = match tile_kernel {
        TileKernel::Box(grid, spec) => box_gram(grid, spec, progress)?,
        TileKernel::Nsk(z, gamma) => LogGram {
            n: z.n_bags(),
            ln: log_nsk_gram(z, gamma)?,
            samples: 0,
        },
    };
    progress.finish();
    let seconds = start.elapsed().as_secs_f64();
    if let Some((path, format)) = format {
        write(&gram, path, format)?;
    }
    Ok(report(&gram, &summary, seconds, args.output.as_deref()))
}

/// `mil gram merge`: joins tiles into the matrix and the report of the single run.
fn merge(args: &GramMergeArgs) -> Result<Report> {
    let format = output_format(args.output.as_deref())?;
    if let Some(out) = &args.output {
        let inputs: Vec<&str> = args.tiles.iter().map(String::as_str).collect();
        super::output::refuse_input_as_output("--output", out, &inputs)?;
    }
    let tiles = args
        .tiles
        .iter()
        .map(|t| read_tile(Path::new(t)))
        .collect::<Result<Vec<_>>>()?;
    let gram = merge_tiles(&tiles, &args.tiles)?;
    if let Some((path, format)) = format {
        write(&gram, path, format)?;
    }
    let seconds = tiles.iter().map(|t| t.seconds).sum();
    Ok(report(
        &gram,
        &tiles[0].summary,
        seconds,
        args.output.as_deref(),
    ))
}

/// The summary of a Gram matrix as a single run reports it.
fn report(
    gram: &LogGram,
    summary: &serde_json::Value,
    seconds: f64,
    output: Option<&str>,
) -> Report {
    let normalised = spectrum(gram.normalised());
    let n = gram.n;
    let all: Vec<usize> = (0..n).collect();
    let rho = serde_json::from_value::<Rho>(summary["rho"].clone())
        .unwrap_or_default()
        .resolve(&gram.ln, n, &all);
    let mapped = spectrum(gram.powered(rho));
    let (lo, hi) = gram
        .ln
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        });
    let text = |key: &str| summary[key].as_str().unwrap_or_default().to_string();
    let ns_per_sample = seconds * 1e9 / gram.samples.max(1) as f64;
    let human = format!(
        "{}: {n}×{n} ln {} Gram ({}, ε = {}, δ = {}, precision 10^{}) in {seconds:.2} s → {}\n\
         ln k in [{lo:.2}, {hi:.2}]; {:.1}% negative eigenvalues of the normalised matrix (smallest {:.3e}), {:.1}% of k^ρ (ρ = {:.3e}); {} samples, {ns_per_sample:.0} ns of wall time each",
        text("data"),
        text("kernel"),
        text("estimator"),
        summary["epsilon"],
        summary["delta"],
        summary["precision"].as_i64().map_or("-".to_string(), |p| p.to_string()),
        output.unwrap_or("(no file)"),
        100.0 * normalised.negative_fraction,
        normalised.smallest,
        100.0 * mapped.negative_fraction,
        rho,
        gram.samples,
    );
    let mut json = json!({
        "bags": n,
        "seconds": seconds,
        "negative_eigenvalues": normalised.negative_fraction,
        "negative_eigenvalues_of": "k(P,Q)/sqrt(k(P,P)k(Q,Q)), formed in log space",
        "smallest_eigenvalue": normalised.smallest,
        "largest_eigenvalue": normalised.largest,
        "negative_eigenvalues_svm": mapped.negative_fraction,
        "negative_eigenvalues_svm_of": "phi(k) = k^rho (GMIL §5.3, §8.4), the matrix the SVM sees with --map none",
        "samples": gram.samples,
        "wall_ns_per_sample": ns_per_sample,
        "min_ln": lo,
        "max_ln": hi,
        "output": output,
    });
    for key in [
        "kernel",
        "estimator",
        "epsilon",
        "delta",
        "precision",
        "gamma",
        "seed",
        "rho",
        "bag_ids",
    ] {
        json[key] = summary[key].clone();
    }
    json["rho"] = json!(rho);
    Report { human, json }
}

/// Keeps the bags within `--min-bag-size` and `--max-bag-size`.
fn select_bags(data: data::Dataset, args: &GramArgs) -> Result<data::Dataset> {
    let (lo, hi) = (
        args.min_bag_size.unwrap_or(0),
        args.max_bag_size.unwrap_or(usize::MAX),
    );
    if args.min_bag_size.is_none() && args.max_bag_size.is_none() {
        return Ok(data);
    }
    let keep: Vec<usize> = (0..data.n_bags())
        .filter(|&b| (lo..=hi).contains(&data.bag(b).len()))
        .collect();
    if keep.is_empty() {
        return Err(Error::parameter(
            "--min-bag-size/--max-bag-size",
            format!("{lo}..{hi}"),
            format!("no bag of {} has a size in this range", data.name()),
        ));
    }
    Ok(data.copy_bags(&keep))
}

fn write(gram: &LogGram, path: &str, format: Format) -> Result<()> {
    let bytes = match format {
        Format::Npy => npy::to_npy(gram.n, gram.n, &gram.ln),
        Format::Csv => {
            let mut text = String::with_capacity(gram.n * gram.n * 20);
            for row in gram.ln.chunks_exact(gram.n) {
                let cells: Vec<String> = row.iter().map(f64::to_string).collect();
                text.push_str(&cells.join(","));
                text.push('\n');
            }
            text.into_bytes()
        }
    };
    super::output::write_output(path, &bytes)
}
