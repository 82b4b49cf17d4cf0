//! `mil export`: writes a saved model in the container the no_std core reads, and
//! measures how far core inference on those bytes is from the host model on the
//! training data.

use std::path::Path;

use rayon::prelude::*;
use serde_json::json;

use super::{ExportArgs, Report};
use crate::cluster::ClusterModel;
use crate::data::{self, Dataset};
use crate::error::{Error, Result};
use crate::export::{self, Compact, CoreBag, ExportOptions, Head, Rounding};
use crate::model::HostModel;
use crate::progress::Progress;
use mil_core::keyword::Keyword;
use mil_core::Model;

/// Runs `mil export`.
pub fn run(args: &ExportArgs, progress: &dyn Progress) -> Result<Report> {
    let mut inputs = vec![args.model.as_str()];
    inputs.extend(args.data.as_deref());
    super::output::refuse_input_as_output("--output", &args.output, &inputs)?;
    let path = Path::new(&args.model);
    if super::output::is_cluster_model(path) {
        return run_cluster(args, path);
    }
    let model = HostModel::load(path)?;
    let (mut compact, own) = Compact::from_host(&model)?;
    if args.fold_projection {
        compact = compact.fold_projection()?;
    }
    let train: Dataset = match (&args.data, &model.training_data, own) {
        (Some(spec), _, _) => data::load(spec)?,
        (None, Some(spec), _) => {
            let d = data::load(spec)?;
            let found = crate::shard::Fingerprint::default().dataset(&d).hex();
            match &model.training_fingerprint {
                Some(recorded) if *recorded != found => {
                    return Err(Error::data(
                        spec,
                        format!(
                            "its content is not the data {} was trained on (content fingerprint {found}, the model records {recorded}); name the training data with --data",
                            args.model
                        ),
                    ))
                }
                _ => d,
            }
        }
        (None, None, Some(own)) => own,
        (None, None, None) => {
            return Err(Error::parameter(
                "--data",
                "(missing)",
                format!(
                    "{} does not record its training data (it was not saved by `mil train`); name it with --data",
                    args.model
                ),
            ))
        }
    };
    let encoding = args.format;
    let options = ExportOptions {
        rounding: args.rounding,
        input: args.input,
    };
    let bytes = export::export_with(&compact, encoding, &train, options)?;
    let all: Vec<usize> = (0..train.n_bags()).collect();
    let core = Model::parse(&bytes)?;
    if core.svm().is_some() || core.mi_svm().is_some() {
        // Both the host's and the core's SVM scores estimate the kernel against every
        // stored bag: the slow part of the export, shown bag by bag.
        let host = super::predict::scores_with_progress(&model, &train, progress)?;
        return svm_report(args, &bytes, &train, &host, model.threshold, progress);
    }
    let host = model.scores(&train, &all)?;
    let max_abs_error = export::max_abs_error(&bytes, &train, |b| {
        export::host_scores_as_compact(&model, host.row(b))
    })?;
    let mut agree = 0;
    let mut bound: Option<f64> = None;
    for b in 0..train.n_bags() {
        let (decision, _) = export::core_classify(&core, train.bag(b))?;
        agree += usize::from(decision.label == host.label(b));
        if let (Head::Linear { .. }, CoreBag::I16(q)) =
            (&compact.head, CoreBag::new(&core, train.bag(b))?)
        {
            let mut scratch = vec![0.0f32; 2 * core.projected_dim()];
            let e = mil_core::score::bag_score_bound(&core, &q, &mut scratch)? as f64;
            bound = Some(bound.map_or(e, |m: f64| m.max(e)));
        }
    }
    write_bytes(&args.output, &bytes)?;
    let n = train.n_bags();
    let mut human = format!(
        "{} → {} ({}, {}, {} bytes)\nmax |core − host| score on {} training bags of {}: {:.3e}; labels agree on {agree}/{n}",
        args.model,
        args.output,
        core.kind().name(),
        encoding.name(),
        bytes.len(),
        n,
        train.name(),
        max_abs_error
    );
    if let Some(b) = bound {
        human.push_str(&format!(
            "\nstated fixed-point bound on the scores: {b:.3e}"
        ));
    }
    let mut json = export_json(args, &core, max_abs_error, agree, n);
    json["error_bound"] = json!(bound);
    Ok(with_warnings(human, json))
}

/// The JSON keys every export reports: where the bytes went, what they are, and how far
/// core inference on them is from the host model on `bags` training bags.
fn export_json(
    args: &ExportArgs,
    core: &Model<'_>,
    max_abs_error: f64,
    labels_agree: usize,
    bags: usize,
) -> serde_json::Value {
    json!({
        "output": args.output,
        "kind": core.kind().name(),
        "format": core.encoding().name(),
        "bytes": core.header().total_len,
        "rounding": export::stored_rounding(core).map(|r| r.name()),
        "input_steps": export::stored_input_steps(core).map(|r| r.name()),
        "max_abs_error": max_abs_error,
        "labels_agree": labels_agree,
        "bags": bags,
        "warnings": rounding_warning(args, core)
            .into_iter()
            .chain(disagreement_warning(core, labels_agree, bags))
            .collect::<Vec<_>>(),
    })
}

/// A warning when error-feedback rounding was asked for (the default) but the quantised
/// stage had to be rounded to nearest.
fn rounding_warning(args: &ExportArgs, core: &Model<'_>) -> Option<String> {
    (args.rounding == Rounding::Feedback
        && export::stored_rounding(core) == Some(Rounding::Nearest))
    .then(|| {
        format!(
            "the projection weights were rounded to nearest: error feedback needs at most {} \
             features and some non-zero input",
            export::rounding::MAX_FEEDBACK_DIM
        )
    })
}

/// A warning when the core's label differs from the host's on some training bags (the
/// quantisation error moved those decisions).
fn disagreement_warning(core: &Model<'_>, agree: usize, bags: usize) -> Option<String> {
    (agree < bags).then(|| {
        format!(
            "the {} model gives {} of {bags} training bags a different label (or cluster) from \
             the host model's; a finer --format keeps more",
            core.encoding().name(),
            bags - agree
        )
    })
}

/// The report, its human summary ending with the JSON's warnings.
fn with_warnings(mut human: String, json: serde_json::Value) -> Report {
    for w in json["warnings"].as_array().into_iter().flatten() {
        human.push_str(&format!("\nwarning: {}", w.as_str().unwrap_or_default()));
    }
    Report { human, json }
}

/// The report of an exported set-kernel SVM (box-counting or MI kernel): one core
/// decision per training bag (each evaluates the kernel against every stored bag), its deviation from the host's decision
/// value and the bound the core states for it.
fn svm_report(
    args: &ExportArgs,
    bytes: &[u8],
    train: &Dataset,
    host: &crate::classifier::BagScores,
    threshold: Option<f64>,
    progress: &dyn Progress,
) -> Result<Report> {
    let core = Model::parse(bytes)?;
    progress.start("core decisions", train.n_bags() as u64);
    let decisions: Vec<_> = (0..train.n_bags())
        .into_par_iter()
        .map(|b| {
            let d = export::core_svm_decide(&core, train.bag(b));
            progress.advance(1);
            d
        })
        .collect::<Result<_>>()?;
    progress.finish();
    let (mut agree, mut max_abs_error, mut bound) = (0, 0.0f64, 0.0f64);
    for (b, d) in decisions.iter().enumerate() {
        // The compact model's bias holds b − t.
        let f = host.row(b)[1] - threshold.unwrap_or(0.0);
        agree += usize::from(d.label == host.label(b));
        max_abs_error = max_abs_error.max((d.value - f).abs());
        bound = bound.max(d.bound);
    }
    write_bytes(&args.output, bytes)?;
    let n = train.n_bags();
    let stored = core
        .svm()
        .map(|s| s.n_bags())
        .or(core.mi_svm().map(|s| s.n_bags()))
        .unwrap_or(0);
    let encoding = core.encoding().name();
    let kind = core.kind().name();
    let human = format!(
        "{} → {} ({kind}, {encoding}, {} bytes, {stored} stored bags)\nmax |core − host| decision value on {n} training bags of {}: {max_abs_error:.3e} (stated bound {bound:.3e}); labels agree on {agree}/{n}",
        args.model,
        args.output,
        bytes.len(),
        train.name(),
    );
    let mut json = export_json(args, &core, max_abs_error, agree, n);
    json["stored_bags"] = json!(stored);
    json["error_bound"] = json!(bound);
    Ok(with_warnings(human, json))
}

/// Exports an M³IC clustering: the core runs step 14 of the paper's Table 1. BAMIC's
/// medoid bags are not a model the core runs.
fn run_cluster(args: &ExportArgs, path: &Path) -> Result<Report> {
    let model =
        match ClusterModel::load(path)? {
            ClusterModel::M3ic(m) => m,
            ClusterModel::Bamic(_) => return Err(Error::parameter(
                "MODEL",
                &args.model,
                "BAMIC clusterings (medoid bags) cannot be exported; the core runs M³IC assignment",
            )),
        };
    let Some(spec) = &args.data else {
        return Err(Error::parameter(
            "--data",
            "(missing)",
            "a clustering model does not record its data; name the clustered data with --data",
        ));
    };
    if args.fold_projection {
        return Err(Error::parameter(
            "--fold-projection",
            "given",
            "only a linear (MILR) model after a projection can be folded; this is an M³IC clustering",
        ));
    }
    let data = data::load(spec)?;
    let zscore = model.mean.as_deref().zip(model.std.as_deref());
    let compact = Compact::from_m3ic(model.k, model.dim, &model.weights, zscore, model.normalize)?;
    let encoding = args.format;
    let options = ExportOptions {
        rounding: args.rounding,
        input: args.input,
    };
    let bytes = export::export_with(&compact, encoding, &data, options)?;
    let host: Vec<(usize, Vec<f64>)> = (0..data.n_bags())
        .map(|b| model.witness_scores(data.bag(b).as_slice()))
        .collect();
    let max_abs_error = export::max_abs_error(&bytes, &data, |b| host[b].1.clone())?;
    let core = Model::parse(&bytes)?;
    let mut agree = 0;
    let mut bound: Option<f64> = None;
    for (b, (label, _)) in host.iter().enumerate() {
        agree += usize::from(export::core_classify(&core, data.bag(b))?.0.label == *label);
        if let CoreBag::I16(q) = CoreBag::new(&core, data.bag(b))? {
            let e = export::m3ic_score_bound(&core, &q)?;
            bound = Some(bound.map_or(e, |m: f64| m.max(e)));
        }
    }
    write_bytes(&args.output, &bytes)?;
    let n = data.n_bags();
    let mut human = format!(
        "{} → {} (m3ic, {}, {} bytes)\nmax |core − host| witness score on {n} bags of {}: {max_abs_error:.3e}; clusters agree on {agree}/{n}",
        args.model,
        args.output,
        encoding.name(),
        bytes.len(),
        data.name(),
    );
    if let Some(b) = bound {
        human.push_str(&format!(
            "\nstated fixed-point bound on every instance's cluster scores: {b:.3e}"
        ));
    }
    let mut json = export_json(args, &core, max_abs_error, agree, n);
    json["error_bound"] = json!(bound);
    Ok(with_warnings(human, json))
}

fn write_bytes(path: &str, bytes: &[u8]) -> Result<()> {
    super::output::write_output(path, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use crate::export::{export_with, Affine};
    use crate::projection::test_support::single_instance_bags;
    use clap::Parser;

    fn export_args(extra: &[&str]) -> ExportArgs {
        let mut argv = vec!["mil", "export", "m.json", "-o", "m.milm", "--format", "q7"];
        argv.extend_from_slice(extra);
        match Cli::parse_from(argv).command {
            Command::Export(args) => args,
            _ => unreachable!("an export command line"),
        }
    }

    #[test]
    fn warns_when_feedback_rounding_could_not_be_applied() {
        let data = single_instance_bags(2, &[vec![1.0, -2.0], vec![3.0, 0.5]], &[0, 1]);
        let compact = Compact {
            stage: Some(Affine {
                rows: 2,
                cols: 2,
                a: vec![0.3, -0.7, 0.2, 0.9],
                b: vec![0.0, 0.1],
            }),
            head: Head::None,
        };
        for (rounding, cli_rounding, warned) in [
            (Rounding::Feedback, &[][..], false),
            (Rounding::Nearest, &["--rounding", "nearest"][..], false),
            (Rounding::Nearest, &[][..], true),
        ] {
            let bytes = export_with(&compact, mil_core::Encoding::Q7, &data, rounding).unwrap();
            let core = Model::parse(&bytes).unwrap();
            let warning = rounding_warning(&export_args(cli_rounding), &core);
            assert_eq!(warning.is_some(), warned, "{rounding:?} {cli_rounding:?}");
        }
    }
}
