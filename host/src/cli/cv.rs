//! `mil cv`: bag-level stratified cross-validation of a projection → classifier
//! pipeline (nested CV for hyper-parameter lists).

use std::path::Path;
use std::time::Instant;

use serde_json::json;

use mil_core::keyword::Keyword;

use super::{ClassifierArgs, CvArgs, InnerCvArgs, ProjectionArgs, Report};
use crate::classifier::ClassifierKind;
use crate::data;
use crate::error::{Error, Result};
use crate::kernel::SetKernelName;
use crate::pipeline::{cross_validate, read_folds_file, Folds, Pipeline, ProjectionGrid};
use crate::progress::Progress;
use crate::projection::ProjectionParams;

/// The pipeline the flags describe; checked before any work.
pub(super) fn pipeline(
    classifier: &ClassifierArgs,
    projection: &ProjectionArgs,
    seed: u64,
    inner: &InnerCvArgs,
) -> Result<Pipeline> {
    let params = classifier.params(seed)?;
    let grid = crate::pipeline::ClassifierGrid::new(params, &classifier.ridge)?;
    let mut pipeline = Pipeline::new(grid)
        .inner_folds(inner.inner_folds)
        .select(inner.select);
    match projection.projection {
        None => {
            if !projection.dim.is_empty() || !projection.alpha.is_empty() {
                return Err(Error::parameter(
                    "--dim/--alpha",
                    "given",
                    "only apply with a --projection",
                ));
            }
        }
        Some(kind) => {
            if projection.dim.is_empty() {
                return Err(Error::parameter(
                    "--dim",
                    "missing",
                    "a projection needs --dim",
                ));
            }
            let mut params = ProjectionParams::new(kind).with_seed(seed);
            if let ProjectionParams::Midr(m) = &mut params {
                m.c2 = projection.midr_c2;
            }
            pipeline = pipeline.projection(ProjectionGrid {
                params,
                dims: projection.dim.clone(),
                alphas: projection.alpha.clone(),
            });
        }
    }
    pipeline.check()?;
    Ok(pipeline)
}

/// A short description of the pipeline for human output, in the names users type.
pub(super) fn describe(args: &ClassifierArgs, projection: &ProjectionArgs) -> String {
    let c = match args.classifier {
        ClassifierKind::CitationKnn => format!(
            "citation-knn (R={}, C={}, {} Hausdorff, H={}, scaling {})",
            args.references,
            args.citers,
            args.hausdorff,
            args.rank,
            match args.scaling {
                super::ScalingFlag::Knn(s) =>
                    s.resolve(projection.projection.is_some()).to_string(),
                other => other.to_string(),
            }
        ),
        ClassifierKind::Milr => format!(
            "milr ({} pooling, {} optimizer, ridge {})",
            args.pooling,
            args.optimizer,
            args.ridge
                .iter()
                .map(|r| r.to_string())
                .collect::<Vec<_>>()
                .join("/")
        ),
        ClassifierKind::Svm => match args.kernel {
            SetKernelName::MiRbf => format!(
                "svm (mi-rbf kernel, gamma {}, scaling {})",
                args.set_kernel
                    .gamma
                    .unwrap_or(crate::classifier::svm::MI_RBF_GAMMA),
                args.scaling
            ),
            _ => format!("svm ({} kernel, {} map)", args.kernel, args.map),
        },
    };
    match projection.projection {
        None => c,
        Some(p) => format!("{} (dim {:?}) → {c}", p.name(), projection.dim),
    }
}

/// Runs `mil cv`.
pub fn run(args: &CvArgs, progress: &dyn Progress) -> Result<Report> {
    let start = Instant::now();
    let d = data::load(&args.data)?;
    let pipeline = pipeline(&args.classifier, &args.projection, args.seed, &args.inner)?;
    let folds = match &args.folds_file {
        Some(path) => Folds::Given(read_folds_file(Path::new(path), &d)?),
        None => Folds::Stratified {
            k: args.folds,
            repeats: args.repeats,
            seed: args.seed,
        },
    };
    let r = cross_validate(&pipeline, &d, &folds, progress)?;
    let seconds = start.elapsed().as_secs_f64();
    let mut human = format!(
        "{}: {} — {} × {}-fold CV\naccuracy {:.4}",
        d.name(),
        describe(&args.classifier, &args.projection),
        r.repeats,
        r.folds,
        r.accuracy
    );
    if let Some(s) = &r.fold_summary {
        human.push_str(&format!(
            " (fold mean {:.4}, sd {:.4}, 95% CI {:.4}..{:.4})",
            s.mean, s.sd, s.ci_low, s.ci_high
        ));
    }
    match r.auroc {
        Some(a) => human.push_str(&format!("\nAUROC {a:.4} (pooled out-of-fold scores)")),
        None => human.push_str("\nAUROC n/a (multi-class)"),
    }
    human.push_str("\nconfusion (rows: true class, columns: predicted):");
    for (name, row) in d.class_names().iter().zip(&r.confusion) {
        let cells: Vec<String> = row.iter().map(|c| format!("{c:>5}")).collect();
        human.push_str(&format!("\n  {name:>6} {}", cells.join("")));
    }
    if pipeline.n_candidates() > 1 {
        human.push_str("\nchosen by inner CV, per fold:");
        for (f, c) in r.chosen.iter().enumerate() {
            if let Some(c) = c {
                human.push_str(&format!("\n  {:>3}: {c}", f + 1));
            }
        }
    }
    human.push_str(&format!("\n{seconds:.2} s"));
    let json = json!({
        "data": d.name(),
        "accuracy": r.accuracy,
        "auroc": r.auroc,
        "folds": r.folds,
        "repeats": r.repeats,
        "per_fold": r.per_fold,
        "per_repeat": r.per_repeat,
        "fold_summary": r.fold_summary,
        "confusion": r.confusion,
        "chosen": r.chosen,
        "predictions": r.predictions.iter().map(|(b, l, s)| json!({
            "bag": d.bag_id(*b), "label": d.class_names()[*l], "score": s
        })).collect::<Vec<_>>(),
        "seconds": seconds,
    });
    Ok(Report { human, json })
}
