//! `mil cv`: bag-level stratified cross-validation of a projection → classifier
//! pipeline (nested CV for hyper-parameter lists).

use std::path::Path;
use std::time::Instant;

use serde_json::json;

use super::{ClassifierArgs, CvArgs, InnerCvArgs, ProjectionArgs, Report};
use super::{CvMerge, CvMergeArgs};
use crate::classifier::ClassifierParams;
use crate::data;
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::pipeline::{
    check_outcomes, read_folds_file, run_folds, summarize, CvReport, FoldOutcome, Folds, Pipeline,
    ProjectionGrid, Selection,
};
use crate::progress::{Progress, Silent};
use crate::projection::ProjectionParams;
use crate::shard::{Fingerprint, Shard};
use serde::{Deserialize, Serialize};

/// The pipeline the flags describe for data of `n_classes` classes; checked before any
/// work.
pub(super) fn pipeline(
    classifier: &ClassifierArgs,
    projection: &ProjectionArgs,
    seed: u64,
    inner: &InnerCvArgs,
    n_classes: usize,
) -> Result<Pipeline> {
    let grid = classifier.grid(seed)?;
    // The automatic choice ranks by AUROC where it exists: it ties less often than
    // accuracy on a few dozen inner test bags, and picked better on the benchmarks.
    let auto = classifier.classifier == Some(super::ClassifierChoice::Auto);
    let select = inner.select.unwrap_or(if auto && n_classes == 2 {
        Selection::Auroc
    } else {
        Selection::Accuracy
    });
    let mut pipeline = Pipeline::new(grid)
        .seed(seed)
        .inner_folds(inner.inner_folds)
        .inner_repeats(inner.inner_repeats)
        .select(select)
        .vote(inner.vote)
        .threshold(classifier.threshold)
        .threshold_metric(classifier.threshold_metric);
    match projection.projection.0 {
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

/// The `format` of a `mil cv --shard` part.
const PART_FORMAT: &str = "mil-cv-part";
/// The part format version this build writes and reads.
const PART_VERSION: u32 = 2;

/// One share of a sharded `mil cv`: the outcomes of its jobs and what the merge needs to
/// print the single run's report.
#[derive(Debug, Serialize, Deserialize)]
struct CvPart {
    format: String,
    version: u32,
    /// Fingerprint of the data, the folds and every setting.
    fingerprint: String,
    /// DATA as given, reloaded (and fingerprinted again) by the merge.
    data: String,
    /// The pipeline as the report describes it.
    description: String,
    /// Whether the pipeline chooses among candidates (the report lists the choices).
    chooses: bool,
    /// Test bags of every fold of every repetition.
    assignments: Vec<(u64, Vec<Vec<usize>>)>,
    shard: usize,
    shards: usize,
    outcomes: Vec<FoldOutcome>,
    seconds: f64,
    /// [`crate::shard::content_checksum`] of the part with this field empty.
    checksum: String,
}

/// Runs `mil cv` (or `mil cv merge`).
pub fn run(args: &CvArgs, progress: &dyn Progress) -> Result<Report> {
    if let Some(CvMerge::Merge(m)) = &args.merge {
        return merge(m);
    }
    let start = Instant::now();
    let data_spec = args.data.as_deref().unwrap_or_default();
    let shard = args.shard.as_deref().map(Shard::from_arg).transpose()?;
    match (&shard, &args.output) {
        (Some(_), None) => {
            return Err(Error::parameter(
                "--output",
                "(missing)",
                "a shard writes its part to -o for `mil cv merge`",
            ))
        }
        (None, Some(out)) => {
            return Err(Error::parameter(
                "--output",
                out,
                "only a shard (--shard) writes a file; `mil cv` prints its report",
            ))
        }
        (Some(_), Some(out)) => {
            let mut inputs = vec![data_spec];
            inputs.extend(args.folds_file.as_deref());
            super::output::refuse_input_as_output("--output", out, &inputs)?;
        }
        (None, None) => {}
    }
    if let Some(plot) = &args.plot {
        if shard.is_some() {
            return Err(Error::parameter(
                "--plot",
                plot,
                "a shard holds some folds only; give --plot to `mil cv merge`",
            ));
        }
    }
    if let Some(path) = &args.save_folds {
        if args.folds_file.is_some() || shard.is_some() {
            return Err(Error::parameter(
                "--save-folds",
                path,
                "writes the folds `mil cv` draws: not with --folds-file or --shard",
            ));
        }
    }
    {
        let mut inputs = vec![data_spec];
        inputs.extend(args.folds_file.as_deref());
        let outputs: Vec<(&str, &str)> =
            [("--plot", &args.plot), ("--save-folds", &args.save_folds)]
                .into_iter()
                .filter_map(|(flag, path)| path.as_deref().map(|p| (flag, p)))
                .collect();
        super::output::check_outputs(&outputs, &inputs)?;
    }
    let d = data::load(data_spec)?;
    d.require_labels(2)?;
    let pipeline = pipeline(
        &args.classifier,
        &args.projection,
        args.seed,
        &args.inner,
        d.n_classes(),
    )?;
    super::estimate::check_pipeline(
        &pipeline.classifier,
        &args.projection,
        &d,
        args.memory.gib(),
    )?;
    let folds = match &args.folds_file {
        Some(path) => Folds::Given(read_folds_file(Path::new(path), &d)?),
        None => Folds::Stratified {
            k: args.folds,
            repeats: args.repeats,
            seed: args.seed,
        },
    };
    let assignments = folds.assignments(&d)?;
    let jobs: usize = assignments.iter().map(|(_, f)| f.len()).sum();
    // Folds cost about the same: equal shares of jobs.
    let range = match shard {
        Some(shard) => shard.range(&vec![1.0; jobs]),
        None => 0..jobs,
    };
    let first_train = {
        let mut test = assignments[0].1[0].clone();
        test.sort_unstable();
        crate::eval::folds::complement(&(0..d.n_bags()).collect::<Vec<_>>(), &test)
    };
    let pipeline = super::estimate::check_cpu(
        pipeline,
        &d,
        &first_train,
        range.len(),
        args.cpu.max_cpu_minutes,
        shard.is_none(),
        progress,
    )?;
    let description = args
        .classifier
        .describe(&args.projection, pipeline.classifier.candidates().len());
    let chooses = pipeline.n_candidates() > 1;
    let Some(shard) = shard else {
        let outcomes = run_folds(&pipeline, &d, &folds, 0..jobs, progress)?;
        let r = summarize(&d, &assignments, &outcomes)?;
        let seconds = start.elapsed().as_secs_f64();
        let cause = match r.collapsed_class() {
            Some(_) => degenerate_gram(&pipeline, &d)?,
            None => None,
        };
        let mut report = report(&d, &description, chooses, &r, seconds, cause);
        if let Some(plot) = &args.plot {
            super::roc::add_plot(&mut report, &d, &assignments, &outcomes, plot)?;
        }
        if let Some(path) = &args.save_folds {
            super::output::write_output(path, folds_csv(&d, &assignments).as_bytes())?;
        }
        return Ok(report);
    };
    let outcomes = run_folds(&pipeline, &d, &folds, range.clone(), progress)?;
    let fingerprint = Fingerprint::default()
        .dataset(&d)
        .bytes(format!("{:?}{:?}{:?}", args.classifier, args.projection, args.inner).as_bytes())
        .bytes(format!("{assignments:?}{}", args.seed).as_bytes())
        .hex();
    let part = CvPart {
        format: PART_FORMAT.into(),
        version: PART_VERSION,
        fingerprint,
        data: data_spec.to_string(),
        description,
        chooses,
        assignments,
        shard: shard.index,
        shards: shard.count,
        outcomes,
        seconds: start.elapsed().as_secs_f64(),
        checksum: String::new(),
    };
    let part = CvPart {
        checksum: crate::shard::content_checksum(&part)?,
        ..part
    };
    let out = args.output.as_deref().unwrap_or_default();
    let text = serde_json::to_string(&part).map_err(|e| Error::Numerical {
        method: "part serialisation",
        reason: e.to_string(),
    })?;
    super::output::write_output(out, text.as_bytes())?;
    let human = format!(
        "{}: shard {shard} of {jobs} cross-validation jobs: jobs {}..{} in {:.2} s → {out}",
        d.name(),
        range.start,
        range.end,
        part.seconds
    );
    let json = json!({
        "shard": shard.to_string(),
        "jobs": jobs,
        "first": range.start,
        "end": range.end,
        "seconds": part.seconds,
        "output": out,
    });
    Ok(Report { human, json })
}

/// `--save-folds`: every repetition's folds as CSV `repetition,bag_id,label,fold`, test
/// bags in the order they are predicted, so one repetition's rows without the first
/// column, given to `--folds-file`, run that repetition again.
fn folds_csv(d: &Dataset, assignments: &[(u64, Vec<Vec<usize>>)]) -> String {
    let mut text = String::from("repetition,bag_id,label,fold\n");
    for (r, (_, folds)) in assignments.iter().enumerate() {
        for (f, bags) in folds.iter().enumerate() {
            for &b in bags {
                let label = d.label(b).map_or("?", |l| d.class_names()[l].as_str());
                text.push_str(&format!("{r},{},{label},{f}\n", d.bag_id(b)));
            }
        }
    }
    text
}

/// `mil cv merge`: the report of the single run from the parts of a sharded one. A
/// missing, duplicated or mismatched part is an error naming it.
fn merge(args: &CvMergeArgs) -> Result<Report> {
    if let Some(plot) = &args.plot {
        let parts: Vec<&str> = args.parts.iter().map(String::as_str).collect();
        super::output::refuse_input_as_output("--plot", plot, &parts)?;
    }
    let mut parts = Vec::new();
    for name in &args.parts {
        let text = data::read_json_text(Path::new(name), "a `mil cv` part")?;
        let mut part: CvPart = serde_json::from_str(&text).map_err(|e| Error::Parse {
            file: name.clone(),
            line: e.line(),
            field: "part".into(),
            problem: format!("not a `mil cv --shard` part: {e}"),
        })?;
        if part.format != PART_FORMAT || part.version != PART_VERSION {
            return Err(Error::data(
                name,
                "not a `mil cv --shard` part of this version",
            ));
        }
        let written = std::mem::take(&mut part.checksum);
        if crate::shard::content_checksum(&part)? != written {
            return Err(Error::data(
                name,
                "damaged or edited: its content does not match its checksum",
            ));
        }
        parts.push(part);
    }
    let first = &parts[0];
    for (p, part) in parts.iter().enumerate() {
        if part.fingerprint != first.fingerprint {
            return Err(Error::data(
                &args.parts[p],
                format!(
                    "from another run than {} (other data, folds, seed or settings)",
                    args.parts[0]
                ),
            ));
        }
    }
    let shares: Vec<(usize, usize)> = parts.iter().map(|p| (p.shard, p.shards)).collect();
    crate::shard::check_complete(&shares, &args.parts)?;
    let d = data::load(&first.data)?;
    for (p, part) in parts.iter().enumerate() {
        if part.assignments != first.assignments {
            return Err(Error::data(
                &args.parts[p],
                format!("other folds than {}", args.parts[0]),
            ));
        }
        check_outcomes(&d, &part.assignments, &part.outcomes)
            .map_err(|problem| Error::data(&args.parts[p], problem))?;
    }
    let outcomes: Vec<FoldOutcome> = parts.iter().flat_map(|p| p.outcomes.clone()).collect();
    check_outcomes(&d, &first.assignments, &outcomes)
        .map_err(|problem| Error::data(&args.parts[0], problem))?;
    let r = summarize(&d, &first.assignments, &outcomes)?;
    let seconds = parts.iter().map(|p| p.seconds).sum();
    let mut report = report(&d, &first.description, first.chooses, &r, seconds, None);
    if let Some(plot) = &args.plot {
        super::output::refuse_input_as_output("--plot", plot, &[&first.data])?;
        super::roc::add_plot(&mut report, &d, &first.assignments, &outcomes, plot)?;
    }
    Ok(report)
}

/// Why a single set-kernel SVM without projection predicted one class for every bag,
/// when its Gram matrix over all bags is degenerate: the diagnosis and its remedy.
fn degenerate_gram(pipeline: &Pipeline, d: &Dataset) -> Result<Option<String>> {
    let (None, Some(ClassifierParams::Svm(svm))) =
        (&pipeline.projection, pipeline.classifier.single())
    else {
        return Ok(None);
    };
    let log_gram = svm.full_log_gram(d, &Silent)?;
    let all: Vec<usize> = (0..d.n_bags()).collect();
    Ok(svm
        .diagnose(&log_gram, d.n_bags(), &all)?
        .map(|(diagnosis, remedy)| format!("{diagnosis}: {remedy}")))
}

/// The warning for a run whose every out-of-fold prediction is class `class`: the
/// degenerate kernel when `cause` names one, class imbalance only when the classes are
/// imbalanced.
fn collapse_warning(d: &Dataset, class: usize, cause: Option<&str>) -> String {
    let name = &d.class_names()[class];
    let head = format!("warning: every out-of-fold prediction is class {name}");
    if let Some(cause) = cause {
        return format!("{head}: {cause}");
    }
    let counts = d.bags_per_class();
    let largest = counts.iter().copied().max().unwrap_or(0) as f64;
    let total = counts.iter().sum::<usize>().max(1) as f64;
    if largest / total > IMBALANCED_SHARE {
        format!("{head}: the classifier ignores the other class(es) (imbalanced classes: weight them or move the decision threshold)")
    } else {
        format!("{head}, although the classes are about balanced: the classifier's scores do not separate them at these settings (try other settings, or --classifier auto)")
    }
}

/// The share of the largest class above which a one-class prediction is blamed on the
/// imbalance.
const IMBALANCED_SHARE: f64 = 0.6;

/// The report of a cross-validation run; `cause` explains a one-class prediction.
fn report(
    d: &Dataset,
    description: &str,
    chooses: bool,
    r: &CvReport,
    seconds: f64,
    cause: Option<String>,
) -> Report {
    let mut human = format!(
        "{}: {} — {} × {}-fold CV\naccuracy {:.4}",
        d.name(),
        description,
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
    let per_class = r.per_class();
    let balanced = r.balanced_accuracy();
    human.push_str(&format!("\nbalanced accuracy {balanced:.4}"));
    let show = |v: Option<f64>| v.map_or("n/a".to_string(), |v| format!("{v:.4}"));
    for (name, m) in d.class_names().iter().zip(&per_class) {
        human.push_str(&format!(
            "\n  class {name}: recall {}, precision {}, F1 {} ({} bags, {} predicted)",
            show(m.recall),
            show(m.precision),
            show(m.f1),
            m.support,
            m.predicted
        ));
    }
    if let Some(c) = r.collapsed_class() {
        let warning = collapse_warning(d, c, cause.as_deref());
        super::output::warn(&warning);
        human.push_str(&format!("\n{warning}"));
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
    if chooses {
        human.push_str("\nchosen by inner CV, per fold:");
        for (f, c) in r.chosen.iter().enumerate() {
            if let Some(c) = c {
                human.push_str(&format!("\n  {:>3}: {}", f + 1, c.with_margin()));
            }
        }
    }
    if r.thresholds.iter().any(Option::is_some) {
        let list: Vec<String> = r
            .thresholds
            .iter()
            .map(|t| t.map_or("none".into(), |t| format!("{t:.4}")))
            .collect();
        human.push_str(&format!("\nthreshold per fold: {}", list.join(" ")));
    }
    human.push_str(&format!("\n{seconds:.2} s"));
    let mut json = json!({
        "data": d.name(),
        "accuracy": r.accuracy,
        "balanced_accuracy": balanced,
        "per_class": d.class_names().iter().zip(&per_class).map(|(name, m)| {
            (name.clone(), json!(m))
        }).collect::<serde_json::Map<String, serde_json::Value>>(),
        "collapsed": r.collapsed_class().map(|c| d.class_names()[c].clone()),
        "auroc": r.auroc,
        "folds": r.folds,
        "repeats": r.repeats,
        "per_fold": r.per_fold,
        "per_repeat": r.per_repeat,
        "fold_summary": r.fold_summary,
        "confusion": r.confusion,
        "chosen": r.chosen,
        "seeds": r.seeds,
        "predictions": r.predictions.iter().map(|(b, l, s)| json!({
            "bag": d.bag_id(*b), "label": d.class_names()[*l], "score": s
        })).collect::<Vec<_>>(),
        "seconds": seconds,
    });
    if r.thresholds.iter().any(Option::is_some) {
        json["thresholds"] = json!(r.thresholds);
    }
    Report { human, json }
}
