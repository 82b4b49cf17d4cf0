//! `mil export`: writes a saved model in the container the no_std core reads, and
//! measures how far core inference on those bytes is from the host model on the
//! training data.

use std::path::Path;

use serde_json::json;

use super::{ExportArgs, Report};
use crate::cluster::ClusterModel;
use crate::data::{self, Dataset};
use crate::error::{Error, Result};
use crate::export::{self, Compact, Export, Exported};
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
    // A Citation-kNN model stores its training bags: they are its data when none is named.
    let (_, own) = Compact::from_host(&model)?;
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
    let options = Export::new(args.format)
        .fold_projection(args.fold_projection)
        .rounding(args.rounding)
        .input(args.input);
    let exported = model.export_with_progress(&train, options, progress)?;
    write_bytes(&args.output, &exported.bytes)?;
    let n = exported.bags;
    let core = exported.model()?;
    let mut human = match exported.stored_bags {
        Some(stored) => format!(
            "{} → {} ({}, {}, {} bytes, {stored} stored bags)\nmax |core − host| decision value on {n} training bags of {}: {:.3e} (stated bound {:.3e}); labels agree on {}/{n}",
            args.model,
            args.output,
            core.kind().name(),
            core.encoding().name(),
            exported.bytes.len(),
            train.name(),
            exported.max_abs_error,
            exported.error_bound.unwrap_or(0.0),
            exported.labels_agree,
        ),
        None => format!(
            "{} → {} ({}, {}, {} bytes)\nmax |core − host| score on {n} training bags of {}: {:.3e}; labels agree on {}/{n}",
            args.model,
            args.output,
            core.kind().name(),
            core.encoding().name(),
            exported.bytes.len(),
            train.name(),
            exported.max_abs_error,
            exported.labels_agree,
        ),
    };
    if let (None, Some(b)) = (exported.stored_bags, exported.error_bound) {
        human.push_str(&format!(
            "\nstated fixed-point bound on the scores: {b:.3e}"
        ));
    }
    Ok(report(args, &core, &exported, human))
}

/// The report: the human summary ending with the warnings, and the JSON keys every
/// export reports (where the bytes went, what they are, and how far core inference on
/// them is from the host model on the training bags).
fn report(args: &ExportArgs, core: &Model<'_>, exported: &Exported, mut human: String) -> Report {
    for w in &exported.warnings {
        human.push_str(&format!("\nwarning: {w}"));
    }
    let mut json = json!({
        "output": args.output,
        "kind": core.kind().name(),
        "format": core.encoding().name(),
        "bytes": core.header().total_len,
        "rounding": export::stored_rounding(core).map(|r| r.name()),
        "input_steps": export::stored_input_steps(core).map(|r| r.name()),
        "max_abs_error": exported.max_abs_error,
        "labels_agree": exported.labels_agree,
        "bags": exported.bags,
        "warnings": exported.warnings,
        "error_bound": exported.error_bound,
    });
    if let Some(stored) = exported.stored_bags {
        json["stored_bags"] = json!(stored);
    }
    Report { human, json }
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
    let options = Export::new(args.format)
        .rounding(args.rounding)
        .input(args.input);
    let exported = model.export(&data, options)?;
    write_bytes(&args.output, &exported.bytes)?;
    let core = exported.model()?;
    let n = exported.bags;
    let mut human = format!(
        "{} → {} (m3ic, {}, {} bytes)\nmax |core − host| witness score on {n} bags of {}: {:.3e}; clusters agree on {}/{n}",
        args.model,
        args.output,
        args.format.name(),
        exported.bytes.len(),
        data.name(),
        exported.max_abs_error,
        exported.labels_agree,
    );
    if let Some(b) = exported.error_bound {
        human.push_str(&format!(
            "\nstated fixed-point bound on every instance's cluster scores: {b:.3e}"
        ));
    }
    Ok(report(args, &core, &exported, human))
}

fn write_bytes(path: &str, bytes: &[u8]) -> Result<()> {
    super::output::write_output(path, bytes)
}
