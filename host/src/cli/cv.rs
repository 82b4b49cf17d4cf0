//! `mil cv`: bag-level stratified cross-validation of a projection → classifier
//! pipeline (nested CV for hyper-parameter lists).

use std::path::Path;
use std::time::Instant;

use serde_json::json;

use super::{
    ClassifierArgs, ClassifierName, CvArgs, Estimator, HausdorffArg, InnerCvArgs, KernelMap,
    KernelName, MilrOptimizer, Pooling, ProjectionArgs, ProjectionName, Report, Scaling,
    SelectName,
};
use crate::classifier::citation_knn::{self, CitationKnn};
use crate::classifier::milr::{self, Milr};
use crate::classifier::svm::{BoxKernelName, SetKernel, SetKernelSvm};
use crate::classifier::ClassifierSpec;
use crate::data;
use crate::distance::Hausdorff;
use crate::error::{Error, Result};
use crate::pipeline::{
    cross_validate, read_folds_file, ClassifierGrid, Folds, Pipeline, ProjectionGrid, Selection,
};
use crate::svm::bags::{BagSvmSettings, EmpiricalMap};

/// Citation-kNN's scaling: as given, else z-score on raw features and none after a
/// projection.
fn effective_scaling(args: &ClassifierArgs, projected: bool) -> Scaling {
    args.scaling.unwrap_or(if projected {
        Scaling::None
    } else {
        Scaling::Zscore
    })
}

/// The classifier the flags describe.
pub(super) fn classifier_spec(
    args: &ClassifierArgs,
    seed: u64,
    projected: bool,
) -> Result<ClassifierSpec> {
    Ok(match args.classifier {
        ClassifierName::CitationKnn => ClassifierSpec::CitationKnn(CitationKnn {
            references: args.references,
            citers: args.citers,
            rank: args.rank,
            hausdorff: match args.hausdorff {
                HausdorffArg::Min => Hausdorff::Min,
                HausdorffArg::Max => Hausdorff::Max,
                HausdorffArg::Avg => Hausdorff::Avg,
            },
            scaling: match effective_scaling(args, projected) {
                Scaling::Weka => citation_knn::Scaling::Weka,
                Scaling::Zscore => citation_knn::Scaling::Zscore,
                Scaling::None => citation_knn::Scaling::None,
            },
        }),
        ClassifierName::Milr => ClassifierSpec::Milr(Milr {
            pooling: match args.pooling {
                Pooling::NoisyOr => milr::Pooling::NoisyOr,
                Pooling::Mean => milr::Pooling::Mean,
                Pooling::Geometric => milr::Pooling::Geometric,
                Pooling::Softmax => milr::Pooling::Softmax,
                Pooling::Max => milr::Pooling::Max,
            },
            // The first of a list; the pipeline's grid tries every one.
            ridge: args.ridge.first().copied().unwrap_or(1e-6),
            beta: args.beta,
            optimizer: match args.optimizer {
                MilrOptimizer::Lbfgs => milr::Optimizer::Lbfgs,
                MilrOptimizer::Weka => milr::Optimizer::Weka,
            },
        }),
        ClassifierName::Svm => ClassifierSpec::Svm(svm_spec(args, seed)?),
    })
}

/// The set-kernel SVM the flags describe.
fn svm_spec(args: &ClassifierArgs, seed: u64) -> Result<SetKernelSvm> {
    let boxed = |kernel| SetKernel::Box {
        kernel,
        paper_estimator: args.set_kernel.estimator == Estimator::Paper,
        epsilon: args.set_kernel.epsilon,
        delta: args.set_kernel.delta,
        precision: args.set_kernel.precision,
    };
    Ok(SetKernelSvm {
        kernel: match args.kernel {
            KernelName::Kand => boxed(BoxKernelName::And),
            KernelName::Kandor => boxed(BoxKernelName::AndOr),
            KernelName::Kmin => boxed(BoxKernelName::Min),
            KernelName::Nsk => SetKernel::Nsk {
                gamma: args.set_kernel.gamma,
            },
        },
        settings: BagSvmSettings {
            rho: args.set_kernel.rho,
            map: match args.map {
                KernelMap::None => EmpiricalMap::None,
                KernelMap::Emp => EmpiricalMap::Training,
                KernelMap::EmpTrans => EmpiricalMap::Transductive,
            },
            cost: args.cost,
        },
        seed,
    })
}

/// The pipeline the flags describe.
pub(super) fn pipeline(
    classifier: &ClassifierArgs,
    projection: &ProjectionArgs,
    seed: u64,
    inner: &InnerCvArgs,
) -> Result<Pipeline> {
    if inner.inner_folds < 2 {
        return Err(Error::parameter(
            "--inner-folds",
            inner.inner_folds,
            "must be at least 2",
        ));
    }
    let kind = super::project::projection_kind(projection.projection);
    let projection = match kind {
        None => {
            if !projection.dim.is_empty() || !projection.alpha.is_empty() {
                return Err(Error::parameter(
                    "--dim/--alpha",
                    "given",
                    "only apply with a --projection",
                ));
            }
            None
        }
        Some(kind) => {
            if projection.dim.is_empty() {
                return Err(Error::parameter(
                    "--dim",
                    "missing",
                    "a projection needs --dim",
                ));
            }
            if let Some(a) = projection.alpha.iter().find(|a| !a.is_finite()) {
                return Err(Error::parameter("--alpha", a, "must be finite"));
            }
            Some(ProjectionGrid {
                kind,
                dims: projection.dim.clone(),
                alphas: if projection.alpha.is_empty() {
                    vec![kind.default_alpha()]
                } else {
                    projection.alpha.clone()
                },
                midr_c2: projection.midr_c2,
                seed,
            })
        }
    };
    Ok(Pipeline {
        classifier: ClassifierGrid::new(
            classifier_spec(classifier, seed, projection.is_some())?,
            &classifier.ridge,
        )?,
        projection,
        inner_folds: inner.inner_folds,
        select: match inner.select {
            SelectName::Accuracy => Selection::Accuracy,
            SelectName::Auroc => Selection::Auroc,
        },
    })
}

/// The command-line spelling of a flag's value.
fn cli_name(value: impl clap::ValueEnum) -> String {
    value
        .to_possible_value()
        .map_or_else(String::new, |v| v.get_name().to_owned())
}

/// A short description of the pipeline for human output.
pub(super) fn describe(args: &ClassifierArgs, projection: &ProjectionArgs) -> String {
    let c = match args.classifier {
        ClassifierName::CitationKnn => format!(
            "citation-knn (R={}, C={}, {:?} Hausdorff, H={}, scaling {:?})",
            args.references,
            args.citers,
            args.hausdorff,
            args.rank,
            effective_scaling(args, projection.projection != ProjectionName::None)
        )
        .to_lowercase(),
        ClassifierName::Milr => format!(
            "milr ({} pooling, {} optimizer, ridge {})",
            cli_name(args.pooling),
            cli_name(args.optimizer),
            args.ridge
                .iter()
                .map(|r| r.to_string())
                .collect::<Vec<_>>()
                .join("/")
        )
        .to_lowercase(),
        ClassifierName::Svm => "svm".into(),
    };
    match projection.projection {
        ProjectionName::None => c,
        p => format!("{:?} (dim {:?}) → {c}", p, projection.dim).to_lowercase(),
    }
}

/// Runs `mil cv`.
pub fn run(args: &CvArgs, quiet: bool) -> Result<Report> {
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
    let r = cross_validate(&pipeline, &d, &folds, !quiet)?;
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
