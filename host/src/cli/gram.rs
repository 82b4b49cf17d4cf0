//! `mil gram`: the Gram matrix of a set kernel over all bags of DATA, as natural
//! logarithms, written as CSV or float64 `.npy`.

use std::path::Path;
use std::time::Instant;

use serde_json::json;

use super::{GramArgs, Report};
use crate::data;
use crate::data::standardize::ZScore;
use crate::error::{Error, Result};
use crate::kernel::nsk::log_nsk_gram;
use crate::kernel::SetKernelName;
use crate::kernel::{box_gram, npy, spectrum, BoxGramSpec, GridData, LogGram};
use crate::progress::Progress;

/// Output formats, by file extension.
enum Format {
    Csv,
    Npy,
}

/// Runs `mil gram`.
pub fn run(args: &GramArgs, progress: &dyn Progress) -> Result<Report> {
    let format = match &args.output {
        None => None,
        Some(path) => match Path::new(path)
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("csv") => Some((path.as_str(), Format::Csv)),
            Some("npy") => Some((path.as_str(), Format::Npy)),
            _ => {
                return Err(Error::parameter(
                    "--output",
                    path,
                    "must end in .csv or .npy",
                ))
            }
        },
    };
    crate::svm::bags::check_settings(
        &crate::svm::bags::BagSvmSettings::default().rho(args.set_kernel.rho),
    )?;
    let accuracy = crate::kernel::accuracy(args.set_kernel.epsilon, args.set_kernel.delta)?;
    let method = args.set_kernel.estimator;
    if let Some(out) = &args.output {
        super::output::refuse_input_as_output("--output", out, &[&args.data])?;
    }
    let data = select_bags(data::load(&args.data)?, args)?;
    let start = Instant::now();
    let mut nsk_gamma = None;
    progress.start("gram entries", 0);
    let (gram, precision) = match args.kernel {
        SetKernelName::Box(kernel) => {
            let grid = GridData::fit(&data, args.set_kernel.precision)?;
            let spec = BoxGramSpec {
                kernel,
                method,
                accuracy,
                seed: args.seed,
            };
            (box_gram(&grid, spec, progress)?, Some(grid.precision()))
        }
        SetKernelName::MiRbf => {
            return Err(Error::parameter(
                "kernel",
                "mi-rbf",
                "mil gram computes box kernels and nsk; the MI kernel is available to the SVM (mil cv/train --classifier svm)",
            ))
        }
        SetKernelName::Nsk => {
            let all: Vec<usize> = (0..data.n_bags()).collect();
            let zscore = ZScore::fit(&data, &all);
            let active = zscore.std.iter().filter(|&&s| s > 0.0).count().max(1);
            let gamma = args.set_kernel.gamma.unwrap_or(1.0 / active as f64);
            if !(gamma.is_finite() && gamma > 0.0) {
                return Err(Error::parameter(
                    "gamma",
                    gamma,
                    "must be positive and finite",
                ));
            }
            nsk_gamma = Some(gamma);
            let ln = log_nsk_gram(&zscore.apply(&data)?, gamma)?;
            let n = data.n_bags();
            (LogGram { n, ln, samples: 0 }, None)
        }
    };
    let seconds = start.elapsed().as_secs_f64();
    progress.finish();
    if let Some((path, format)) = format {
        write(&gram, path, format)?;
    }
    let normalised = spectrum(gram.normalised());
    let mapped = spectrum(gram.powered(args.set_kernel.rho));
    let n = gram.n;
    let (lo, hi) = gram
        .ln
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        });
    let kernel_name = args.kernel.to_string();
    let estimator_name = args.set_kernel.estimator.to_string();
    let ns_per_sample = seconds * 1e9 / gram.samples.max(1) as f64;
    let human = format!(
        "{}: {n}×{n} ln {kernel_name} Gram ({estimator_name}, ε = {}, δ = {}, precision 10^{}) in {seconds:.2} s → {}\n\
         ln k in [{lo:.2}, {hi:.2}]; {:.1}% negative eigenvalues of the normalised matrix (smallest {:.3e}), {:.1}% of k^ρ (ρ = {}); {} samples, {ns_per_sample:.0} ns of wall time each",
        data.name(),
        args.set_kernel.epsilon,
        args.set_kernel.delta,
        precision.map_or("-".to_string(), |p| p.to_string()),
        args.output.as_deref().unwrap_or("(no file)"),
        100.0 * normalised.negative_fraction,
        normalised.smallest,
        100.0 * mapped.negative_fraction,
        args.set_kernel.rho,
        gram.samples,
    );
    let json = json!({
        "bags": n,
        "seconds": seconds,
        "negative_eigenvalues": normalised.negative_fraction,
        "negative_eigenvalues_of": "k(P,Q)/sqrt(k(P,P)k(Q,Q)), formed in log space",
        "smallest_eigenvalue": normalised.smallest,
        "largest_eigenvalue": normalised.largest,
        "rho": args.set_kernel.rho,
        "negative_eigenvalues_svm": mapped.negative_fraction,
        "negative_eigenvalues_svm_of": "phi(k) = k^rho (GMIL §5.3, §8.4), the matrix the SVM sees with --map none",
        "kernel": kernel_name,
        "estimator": estimator_name,
        "epsilon": args.set_kernel.epsilon,
        "delta": args.set_kernel.delta,
        "precision": precision,
        "gamma": nsk_gamma,
        "seed": args.seed,
        "samples": gram.samples,
        "wall_ns_per_sample": ns_per_sample,
        "min_ln": lo,
        "max_ln": hi,
        "output": args.output,
        "bag_ids": data.bag_ids(),
    });
    Ok(Report { human, json })
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
    Ok(data.select(&keep))
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
