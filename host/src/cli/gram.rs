//! `mil gram`: the Gram matrix of a set kernel over all bags of DATA, as natural
//! logarithms, written as CSV or float64 `.npy`.

use std::path::Path;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};
use mil_core::box_kernel::{Accuracy, BoxKernel, Method};
use serde_json::json;

use super::{Estimator, GramArgs, KernelName, Report};
use crate::data;
use crate::error::{Error, Result};
use crate::kernel::{box_gram, npy, BoxGramSpec, GridData, LogGram};

/// Output formats, by file extension.
enum Format {
    Csv,
    Npy,
}

/// Runs `mil gram`.
pub fn run(args: &GramArgs, quiet: bool) -> Result<Report> {
    let format = match Path::new(&args.output)
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("csv") => Format::Csv,
        Some("npy") => Format::Npy,
        _ => {
            return Err(Error::parameter(
                "--output",
                &args.output,
                "must end in .csv or .npy",
            ))
        }
    };
    let accuracy = Accuracy::new(args.epsilon, args.delta).map_err(|_| {
        let (name, value) = if args.epsilon > 0.0 && args.epsilon < 1.0 {
            ("--delta", args.delta)
        } else {
            ("--epsilon", args.epsilon)
        };
        Error::parameter(name, value, "must be in (0, 1)")
    })?;
    let kernel = match args.kernel {
        KernelName::Kand => BoxKernel::And,
        KernelName::Kandor => BoxKernel::AndOr,
        KernelName::Kmin => BoxKernel::Min,
        KernelName::Nsk => return Err(Error::NotAvailable("mil gram --kernel nsk".into())),
    };
    let method = match args.estimator {
        Estimator::Fast => Method::Fast,
        Estimator::Paper => Method::Paper,
    };
    let data = data::load(&args.data)?;
    let grid = GridData::fit(&data, args.precision)?;
    let progress = if quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(0).with_style(
            ProgressStyle::with_template("gram {bar:40} {pos}/{len} entries, eta {eta}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        )
    };
    let spec = BoxGramSpec {
        kernel,
        method,
        accuracy,
        seed: args.seed,
    };
    let start = Instant::now();
    let gram = box_gram(&grid, spec, &progress)?;
    let seconds = start.elapsed().as_secs_f64();
    progress.finish_and_clear();
    write(&gram, &args.output, format)?;
    let spectrum = gram.spectrum();
    let n = gram.n;
    let (lo, hi) = gram
        .ln
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        });
    let kernel_name = format!("{:?}", args.kernel).to_lowercase();
    let estimator_name = format!("{:?}", args.estimator).to_lowercase();
    let ns_per_sample = seconds * 1e9 / gram.samples.max(1) as f64;
    let human = format!(
        "{}: {n}×{n} ln {kernel_name} Gram ({estimator_name}, ε = {}, δ = {}, precision 10^{}) in {seconds:.2} s → {}\n\
         ln k in [{lo:.2}, {hi:.2}]; {:.1}% negative eigenvalues of the normalised matrix (smallest {:.3e}); {} samples, {ns_per_sample:.0} ns each (wall time)",
        data.name(),
        args.epsilon,
        args.delta,
        grid.precision(),
        args.output,
        100.0 * spectrum.negative_fraction,
        spectrum.smallest,
        gram.samples,
    );
    let json = json!({
        "bags": n,
        "seconds": seconds,
        "negative_eigenvalues": spectrum.negative_fraction,
        "negative_eigenvalues_of": "k(P,Q)/sqrt(k(P,P)k(Q,Q)), formed in log space",
        "smallest_eigenvalue": spectrum.smallest,
        "largest_eigenvalue": spectrum.largest,
        "kernel": kernel_name,
        "estimator": estimator_name,
        "epsilon": args.epsilon,
        "delta": args.delta,
        "precision": grid.precision(),
        "seed": args.seed,
        "samples": gram.samples,
        "ns_per_sample": ns_per_sample,
        "min_ln": lo,
        "max_ln": hi,
        "output": args.output,
        "bag_ids": data.bag_ids(),
    });
    Ok(Report { human, json })
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
    std::fs::write(path, bytes).map_err(|source| Error::Io {
        path: path.into(),
        source,
    })
}
