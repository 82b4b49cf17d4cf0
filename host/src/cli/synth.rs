//! `mil synth`: writes a synthetic data set from the papers.

use std::fmt::Write as _;
use std::path::Path;

use mil_core::keyword::Keyword;
use serde_json::json;

use super::{Report, SynthArgs};
use crate::data::synth::{self, Split, Synthetic, SyntheticSet, DEFAULT_DIMS, DEFAULT_RELEVANT};
use crate::data::{arff, csv};
use crate::error::{Error, Result};

/// Runs `mil synth`.
pub fn run(args: &SynthArgs) -> Result<Report> {
    let mut outputs = vec![("--output", args.output.as_str())];
    outputs.extend(args.truth.as_deref().map(|t| ("--truth", t)));
    super::output::check_outputs(&outputs, &[])?;
    let raff_holt = matches!(
        args.name,
        SyntheticSet::RhSingle | SyntheticSet::RhMulti | SyntheticSet::RhFalseFrequency
    );
    if !raff_holt {
        if let Some(v) = args.split {
            return Err(Error::parameter("--split", v, "applies to rh-* only"));
        }
    }
    if args.name != SyntheticSet::TermCounts && !raff_holt {
        if let Some(v) = args.bags {
            return Err(Error::parameter(
                "--bags",
                v,
                "applies to term-counts and rh-* only",
            ));
        }
    }
    if args.name != SyntheticSet::TermCounts {
        if let Some(v) = args.imbalance {
            return Err(Error::parameter(
                "--imbalance",
                v,
                "applies to term-counts only",
            ));
        }
    }
    let set = match args.name {
        SyntheticSet::TermCounts => {
            let d = synth::TermCounts::default();
            let shape = d
                .dims(args.dims.unwrap_or(d.dims))
                .relevant(args.relevant.unwrap_or(d.relevant))
                .bags(args.bags.unwrap_or(d.bags))
                .imbalance(args.imbalance.unwrap_or(d.imbalance));
            super::estimate::check_synth(
                shape.bags.saturating_mul(shape.bag_size),
                shape.dims,
                args.memory.gib(),
            )?;
            synth::term_counts(shape, args.seed)?
        }
        SyntheticSet::MidaOne | SyntheticSet::MidaTwo => {
            for (flag, given) in [("--dims", args.dims), ("--relevant", args.relevant)] {
                if let Some(v) = given {
                    return Err(Error::parameter(
                        flag,
                        v,
                        "does not apply to the MIDA sets: they have 32 dimensions, 2 relevant",
                    ));
                }
            }
            if args.name == SyntheticSet::MidaOne {
                synth::mida_one(args.seed)
            } else {
                synth::mida_two(args.seed)
            }
        }
        SyntheticSet::RhSingle | SyntheticSet::RhMulti | SyntheticSet::RhFalseFrequency => {
            if let Some(v) = args.relevant {
                return Err(Error::parameter(
                    "--relevant",
                    v,
                    "does not apply to rh-*: every feature is relevant",
                ));
            }
            let dims = args.dims.unwrap_or(synth::raff_holt::RH_DEFAULT_DIMS);
            let bags = args.bags.unwrap_or(synth::raff_holt::RH_DEFAULT_BAGS);
            super::estimate::check_synth(
                bags.saturating_mul(synth::raff_holt::RH_MAX_BAG),
                dims,
                args.memory.gib(),
            )?;
            let split = args.split.unwrap_or(Split::Train);
            let generate = match args.name {
                SyntheticSet::RhSingle => synth::rh_single,
                SyntheticSet::RhMulti => synth::rh_multi,
                _ => synth::rh_false_frequency,
            };
            generate(dims, bags, split, args.seed)?
        }
        SyntheticSet::MialmIi => synth::mialm_ii(
            args.dims.unwrap_or(DEFAULT_DIMS),
            args.relevant.unwrap_or(DEFAULT_RELEVANT),
            args.seed,
        )?,
    };
    let d = &set.data;
    let is_arff = Path::new(&args.output)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("arff"));
    let text = if is_arff {
        arff::to_arff(d)
    } else {
        csv::to_csv(d)
    };
    write(&args.output, &text)?;
    if let Some(path) = &args.truth {
        write(path, &truth_csv(&set))?;
    }

    let positives = set.positive.iter().filter(|&&p| p).count();
    // Feature numbers as the data files count them (1-based).
    let relevant: Vec<usize> = set.relevant.iter().map(|c| c + 1).collect();
    let per_class: serde_json::Map<String, serde_json::Value> = d
        .class_names()
        .iter()
        .zip(d.bags_per_class())
        .map(|(name, count)| (name.clone(), json!(count)))
        .collect();
    let human = format!(
        "wrote {} ({}, seed {}): {} bags, {} instances ({} truly positive), {} features, relevant features {:?}",
        args.output,
        d.name(),
        args.seed,
        d.n_bags(),
        d.n_instances(),
        positives,
        d.dim(),
        relevant
    );
    let json = json!({
        "name": d.name(),
        "output": args.output,
        "format": if is_arff { "arff" } else { "csv" },
        "seed": args.seed,
        "bags": d.n_bags(),
        "instances": d.n_instances(),
        "features": d.dim(),
        "classes": d.n_classes(),
        "bags_per_class": per_class,
        "positive_instances": positives,
        "relevant_features": relevant,
        "truth": args.truth,
        "split": raff_holt.then(|| args.split.unwrap_or(Split::Train).name()),
    });
    Ok(Report { human, json })
}

fn write(path: &str, text: &str) -> Result<()> {
    super::output::write_output(path, text.as_bytes())
}

/// The ground truth as CSV: `bag_id,instance,positive` per instance.
fn truth_csv(set: &Synthetic) -> String {
    let d = &set.data;
    let mut out = String::new();
    for b in 0..d.n_bags() {
        for (k, i) in d.bag_range(b).enumerate() {
            let _ = writeln!(
                out,
                "{},{},{}",
                d.bag_id(b),
                k + 1,
                u8::from(set.positive[i])
            );
        }
    }
    out
}
