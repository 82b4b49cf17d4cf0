//! `mil export`: writes a saved model in the container the no_std core reads, and
//! measures how far core inference on those bytes is from the host model on the
//! training data.

use std::path::Path;

use serde_json::json;

use super::{ExportArgs, ExportFormat, Report};
use crate::data::{self, Dataset};
use crate::error::{Error, Result};
use crate::export::{self, Compact, CoreBag, Head};
use crate::model::HostModel;
use mil_core::{Encoding, Model};

/// Runs `mil export`.
pub fn run(args: &ExportArgs) -> Result<Report> {
    let path = Path::new(&args.model);
    let model = HostModel::load(path)?;
    let (compact, own) = Compact::from_host(&model)?;
    let spec = args.data.clone().or_else(|| model.training_data.clone());
    let train: Dataset = match (spec, own) {
        (Some(spec), _) => data::load(&spec)?,
        (None, Some(own)) => own,
        (None, None) => {
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
    let encoding = match args.format {
        ExportFormat::F32 => Encoding::F32,
        ExportFormat::Q15 => Encoding::Q15,
        ExportFormat::Q7 => Encoding::Q7,
    };
    let bytes = export::export(&compact, encoding, &train)?;
    let all: Vec<usize> = (0..train.n_bags()).collect();
    let host = model.scores(&train, &all)?;
    let max_abs_error = export::max_abs_error(&bytes, &train, |b| host.row(b).to_vec())?;
    let core = Model::parse(&bytes)?;
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
    std::fs::write(&args.output, &bytes).map_err(|source| Error::Io {
        path: args.output.clone().into(),
        source,
    })?;
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
    let json = json!({
        "output": args.output,
        "kind": core.kind().name(),
        "format": encoding.name(),
        "bytes": bytes.len(),
        "max_abs_error": max_abs_error,
        "error_bound": bound,
        "labels_agree": agree,
        "bags": n,
    });
    Ok(Report { human, json })
}
