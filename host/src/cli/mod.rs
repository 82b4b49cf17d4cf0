//! The `mil` command line: its subcommands, flags, JSON reports and exit codes are a
//! contract with its users (documented by `mil --help` and the user guide). Each
//! subcommand lives in its own module and returns a [`Report`]: a human summary and one
//! JSON object; `main` prints one or the other.

use clap::{Args, Parser, Subcommand};
use mil_core::box_kernel::Method;
use mil_core::score::Pooling;
use mil_core::Encoding;

use crate::classifier::citation_knn::{CitationKnn, Scaling};
use crate::classifier::imbalance::{ClassWeight, Threshold, ThresholdMetric};
use crate::classifier::milr::{Milr, Optimizer};
use crate::classifier::svm::bags::{BagSvmSettings, EmpiricalMap};
use crate::classifier::svm::{Preprocessing, SetKernel, SetKernelSvm, MI_RBF_COST, MI_RBF_GAMMA};
use crate::classifier::{ClassifierKind, ClassifierParams};
use crate::cluster::m3ic::{BalanceMode, M3ic};
use crate::cluster::ClusterMethod;
use crate::data::synth::{Split, SyntheticSet};
use crate::distance::Hausdorff;
use crate::error::{Error, Result};
use crate::export::rounding::Rounding;
use crate::export::InputSteps;
use crate::kernel::SetKernelName;
use crate::pipeline::{ClassifierGrid, Selection};
use crate::projection::midr::Midr;
use crate::projection::ProjectionKind;
use keyword::{keyword, keyword_or_none, OrNone};

mod commands;
pub use commands::*;

mod classifier_args;
pub use classifier_args::*;

mod cluster;
mod cv;
mod estimate;
mod export;
mod generate;
mod gram;
mod info;
mod inspect;
pub mod keyword;
mod output;
mod predict;
pub mod progress;
pub mod project;
mod roc;
mod signals;
mod synth;
mod train;

/// What a subcommand produced.
pub struct Report {
    /// Human-readable summary (default output).
    pub human: String,
    /// The machine-readable object (`--json`).
    pub json: serde_json::Value,
}

/// `mil --version`: the crate version and the commit it was built from (`host/build.rs`).
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("MIL_BUILD_COMMIT"),
    ")"
);

/// Multiple-instance learning: train, evaluate and deploy bag classifiers, projections,
/// set kernels and bag clusterings.
#[derive(Parser, Debug)]
#[command(name = "mil", version = VERSION, about, propagate_version = true)]
pub struct Cli {
    /// Print one JSON object on stdout instead of the human summary.
    #[arg(long, global = true)]
    pub json: bool,
    /// Hide progress bars.
    #[arg(long, global = true)]
    pub quiet: bool,
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Count and check a data set (a .csv/.arff path, a .npy directory or a built-in name).
    Info(InfoArgs),
    /// Write a synthetic data set from the papers.
    Synth(SynthArgs),
    /// Bag-level stratified cross-validation of a classifier (with an optional projection).
    Cv(CvArgs),
    /// Fit a classifier (with an optional projection) on all of DATA and save the model.
    Train(TrainArgs),
    /// Predict bag labels with a saved model.
    Predict(PredictArgs),
    /// Fit a projection and write the projected instances.
    Project(ProjectArgs),
    /// Gram matrix of a set kernel over all bags, as natural logarithms.
    Gram(GramArgs),
    /// Cluster bags; reports clustering accuracy when DATA has labels.
    Cluster(ClusterArgs),
    /// Write a saved model in the compact format the no_std core reads.
    Export(ExportArgs),
    /// Validate and describe a compact model.
    Inspect(InspectArgs),
    /// Print the shell completion script for bash, zsh, fish, elvish or powershell.
    Completions(CompletionsArgs),
    /// Print the man page of mil, or write it and one page per subcommand to a directory.
    Manpage(ManpageArgs),
}

/// `mil completions`.
#[derive(Args, Debug)]
#[command(
    after_help = "Load it in the current shell, e.g. bash: source <(mil completions bash); \
zsh: mil completions zsh > ~/.zfunc/_mil (a directory on $fpath); \
fish: mil completions fish > ~/.config/fish/completions/mil.fish"
)]
pub struct CompletionsArgs {
    /// The shell.
    pub shell: clap_complete::Shell,
    /// Write the script to this file instead of stdout.
    #[arg(short, long)]
    pub output: Option<String>,
}

/// `mil manpage`.
#[derive(Args, Debug)]
pub struct ManpageArgs {
    /// An existing directory: writes mil.1 and mil-SUBCOMMAND.1 for every subcommand
    /// there (view one with `man -l DIR/mil-cv.1`). Without it, mil.1 goes to stdout.
    #[arg(short, long, value_name = "DIR")]
    pub output: Option<String>,
}

/// `mil info`.
#[derive(Args, Debug)]
pub struct InfoArgs {
    /// A .csv or .arff path, a directory of .npy bags with its labels.csv, or a built-in data
    /// set name (a file of that name wins).
    #[arg(required_unless_present = "list")]
    pub data: Option<String>,
    /// List the built-in data sets.
    #[arg(long)]
    pub list: bool,
}

/// `mil synth`.
#[derive(Args, Debug)]
pub struct SynthArgs {
    /// Which data set.
    #[arg(value_parser = keyword::<SyntheticSet>())]
    pub name: SyntheticSet,
    /// Output CSV (or .arff) path.
    #[arg(short, long)]
    pub output: String,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Dimension D (mialm-ii: default 100; term-counts: 6000; rh-*: 8).
    #[arg(long)]
    pub dims: Option<usize>,
    /// Relevant dimensions d (mialm-ii, term-counts; default 20).
    #[arg(long)]
    pub relevant: Option<usize>,
    /// Number of bags (term-counts: default 80; rh-*: 100, half of them positive).
    #[arg(long)]
    pub bags: Option<usize>,
    /// rh-*: which half of the test to write; the two halves of one seed are independent
    /// draws.
    #[arg(long, value_parser = keyword::<Split>())]
    pub split: Option<Split>,
    /// Negative bags per positive bag, e.g. 20 for 1:20 (term-counts only; default 1).
    #[arg(long)]
    pub imbalance: Option<f64>,
    /// Also write the ground truth, one line per instance: `bag_id,instance,positive`
    /// (instance numbered from 1 within its bag; positive 1 or 0).
    #[arg(long, value_name = "PATH")]
    pub truth: Option<String>,
    #[command(flatten)]
    pub memory: MemoryLimit,
}

/// How a set kernel is computed: shared by `mil gram` and the SVM.
#[derive(Args, Debug, Clone)]
pub struct SetKernelArgs {
    /// Box kernels: relative error ε of each estimate.
    #[arg(long, default_value_t = crate::kernel::DEFAULT_EPSILON, allow_negative_numbers = true)]
    pub epsilon: f64,
    /// Box kernels: failure probability δ of each estimate.
    #[arg(long, default_value_t = crate::kernel::DEFAULT_DELTA, allow_negative_numbers = true)]
    pub delta: f64,
    /// Box kernels: power of ten of the discretisation (0 for integer data); default:
    /// from the data.
    #[arg(long, allow_negative_numbers = true)]
    pub precision: Option<i32>,
    /// Box kernels: which estimator.
    #[arg(long, value_parser = keyword::<Method>(), default_value_t = Method::Fast)]
    pub estimator: Method,
}

/// Projection choice; lists are tuned by inner cross-validation.
#[derive(Args, Debug, Clone)]
pub struct ProjectionArgs {
    /// The projection fitted on the training bags.
    #[arg(long, value_parser = keyword_or_none::<ProjectionKind>(), default_value_t = OrNone(None))]
    pub projection: OrNone<ProjectionKind>,
    /// Output dimension(s); a list is chosen by inner CV.
    #[arg(long, value_delimiter = ',')]
    pub dim: Vec<usize>,
    /// Trade-off α (B-MIDA / M-MIDA / MI-ALM; MIDR's c₁); a list is chosen by inner CV.
    /// Default: the algorithm's own (MI-ALM 0.3, MIDR 0.1, B-MIDA and M-MIDA 1).
    #[arg(long, value_delimiter = ',', allow_negative_numbers = true)]
    pub alpha: Vec<f64>,
    /// MIDR: weight c₂ of the coupling ‖A − H‖²/2 (the MI-ALM paper: 10 on the
    /// benchmarks, with c₁ = 0.1, the default --alpha; 20 on its synthetic data).
    #[arg(long, default_value_t = Midr::default().c2, allow_negative_numbers = true)]
    pub midr_c2: f64,
}

/// The memory a command may plan to use: its estimate is checked before any work.
#[derive(Args, Debug, Clone)]
pub struct MemoryLimit {
    /// Refuse to start when the run is estimated to need more memory than this (GiB;
    /// default: half the machine's memory)
    #[arg(long, value_parser = output::parse_memory_limit)]
    pub max_memory_gib: Option<f64>,
}

/// The CPU time `mil cv` and `mil train` may plan to spend.
#[derive(Args, Debug, Clone)]
pub struct CpuLimit {
    /// CPU budget (minutes; default: no limit). The run is estimated before the work: a
    /// choice among classifiers (`auto`, lists) by one pilot fit of each candidate, a
    /// box-kernel SVM by timing a sample of its Gram matrix; the estimate is printed with
    /// this flag or when above 10 s. Over the budget, the dearest candidates of a choice are left out until
    /// the rest fit; a run that cannot fit (or a shard) is refused
    #[arg(long, value_parser = output::parse_cpu_limit)]
    pub max_cpu_minutes: Option<f64>,
}

impl MemoryLimit {
    /// The limit in GiB: the flag's, or half the machine's memory.
    pub fn gib(&self) -> f64 {
        self.max_memory_gib
            .unwrap_or_else(crate::params::default_memory_limit_gib)
    }
}

/// `mil cv`.
#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct CvArgs {
    /// `mil cv merge PARTS…`: join the parts of a sharded run.
    #[command(subcommand)]
    pub merge: Option<CvMerge>,
    /// A .csv or .arff path, a directory of .npy bags with its labels.csv, or a built-in data
    /// set name (a file of that name wins).
    #[arg(required = true)]
    pub data: Option<String>,
    #[command(flatten)]
    pub classifier: ClassifierArgs,
    #[command(flatten)]
    pub projection: ProjectionArgs,
    /// Number of folds (the number of bags gives leave-one-out). The report's 95%
    /// interval of the fold mean is Student's t over the fold accuracies (it accounts for
    /// few folds, so it is wide for 2 or 3), clipped to [0, 1].
    #[arg(long, default_value_t = 10)]
    pub folds: usize,
    /// Repetitions with different fold assignments.
    #[arg(long, default_value_t = 1)]
    pub repeats: usize,
    /// Random seed for fold assignment and randomised steps.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[command(flatten)]
    pub inner: InnerCvArgs,
    /// Use these folds instead (CSV `bag_id,label,fold`, e.g. data/weka-folds/); test
    /// bags are predicted in file order. Overrides --folds, --repeats and --seed.
    #[arg(long)]
    pub folds_file: Option<String>,
    /// Write the folds this run draws to FILE (CSV `repetition,bag_id,label,fold`, both
    /// from 0, test bags in prediction order); one repetition's rows without the first
    /// column are a --folds-file.
    #[arg(long, value_name = "FILE")]
    pub save_folds: Option<String>,
    /// Run one share of the (repetition, fold) jobs: `i/n`, `auto` or `auto/N` (as `mil
    /// gram --shard`); the part goes to -o for `mil cv merge`.
    #[arg(long)]
    pub shard: Option<String>,
    /// With --shard: where the part is written.
    #[arg(short, long)]
    pub output: Option<String>,
    /// Draw the ROC curve of the out-of-fold scores of all repetitions, pooled, as SVG
    /// (one-vs-rest per class for more than two classes; AUROC in the legend). With
    /// --shard, give it to `mil cv merge` instead.
    #[arg(long, value_name = "SVG")]
    pub plot: Option<String>,
    #[command(flatten)]
    pub memory: MemoryLimit,
    #[command(flatten)]
    pub cpu: CpuLimit,
}

/// `mil cv merge`.
#[derive(Subcommand, Debug)]
pub enum CvMerge {
    /// Join the parts of a sharded `mil cv` into the report one run prints.
    Merge(CvMergeArgs),
}

/// The parts to join.
#[derive(Args, Debug)]
pub struct CvMergeArgs {
    /// The parts written by `mil cv … --shard i/n -o PART`, all n of them.
    #[arg(required = true, num_args = 1..)]
    pub parts: Vec<String>,
    /// Draw the ROC curve of the pooled out-of-fold scores as SVG (as `mil cv --plot`).
    #[arg(long, value_name = "SVG")]
    pub plot: Option<String>,
}

/// `mil train`.
#[derive(Args, Debug)]
pub struct TrainArgs {
    /// A .csv or .arff path, a directory of .npy bags with its labels.csv, or a built-in data
    /// set name (a file of that name wins).
    pub data: String,
    #[command(flatten)]
    pub classifier: ClassifierArgs,
    #[command(flatten)]
    pub projection: ProjectionArgs,
    /// Where to save the model.
    #[arg(short, long)]
    pub output: String,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[command(flatten)]
    pub inner: InnerCvArgs,
    #[command(flatten)]
    pub memory: MemoryLimit,
    #[command(flatten)]
    pub cpu: CpuLimit,
}

/// The inner CV of `mil cv` and `mil train`.
#[derive(Args, Debug)]
pub struct InnerCvArgs {
    /// Folds of the inner CV that chooses among hyper-parameter lists: at most the
    /// training bags, and one per bag of the smallest class among them where that class
    /// has fewer bags.
    #[arg(long, default_value_t = crate::pipeline::DEFAULT_INNER_FOLDS)]
    pub inner_folds: usize,
    /// Run that inner CV on N fold assignments and rank by the mean of its scores:
    /// a choice less at the mercy of one split, at N times the inner CV's work.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub inner_repeats: usize,
    /// What that inner CV maximises [default: auroc for `--classifier auto` on two
    /// classes, accuracy otherwise].
    #[arg(long, value_parser = keyword::<Selection>())]
    pub select: Option<Selection>,
    /// Let the K classifier settings the inner CV ranks best vote on every bag (the
    /// majority of their labels, ties to the best-ranked); the model keeps all K. 1: the
    /// best alone. Not with a projection or --threshold; a vote is not exported to the
    /// core and gives no --explain or --instances.
    #[arg(long, value_name = "K", default_value_t = 1)]
    pub vote: usize,
}

/// `mil predict`.
#[derive(Args, Debug)]
pub struct PredictArgs {
    /// A model saved by `mil train`.
    pub model: String,
    /// A .csv or .arff path, a directory of .npy bags with its labels.csv, or a built-in data
    /// set name (a file of that name wins).
    pub data: String,
    /// Add per bag the witness instance(s) and the per-instance scores the model defines
    /// (MILR, MI-Wrapper, DD, EM-DD: instance probabilities; mi-SVM, MI-SVM, sMIL, sbMIL:
    /// instance decision values; the MI-kernel SVM, mi-Graph, miVLAD, miFV: instance
    /// contributions; Citation-kNN: references, citers and the instance pair of each
    /// distance; M3IC: per-instance margins).
    #[arg(long)]
    pub explain: bool,
    /// Write every instance's score instead of the bag labels, as CSV
    /// `bag_id,instance,score,label,kind` (instances numbered from 1 within each bag;
    /// label 1/0 where the method defines one, else empty) to stdout or --output; with
    /// --json, the same rows as JSON. For models that score instances (not Citation-kNN,
    /// SimpleMI or a box/NSK set-kernel SVM).
    #[arg(long)]
    pub instances: bool,
    /// With --instances: write the CSV to this file (atomically) instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<String>,
    /// With --instances, binary models: the instance labels `mil synth --truth` wrote
    /// (`bag_id,instance,positive`); reports the instance AUROC and the witness precision
    /// (of the bags predicted positive, the fraction whose highest-scoring instance is
    /// truly positive).
    #[arg(long, value_name = "FILE")]
    pub truth: Option<String>,
}

/// `mil project`.
#[derive(Args, Debug)]
pub struct ProjectArgs {
    /// A .csv or .arff path, a directory of .npy bags with its labels.csv, or a built-in data
    /// set name (a file of that name wins).
    pub data: String,
    #[command(flatten)]
    pub projection: ProjectionArgs,
    /// Output CSV of projected instances.
    #[arg(short, long)]
    pub output: String,
    /// Also draw the first two projected dimensions as SVG.
    #[arg(long)]
    pub plot: Option<String>,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[command(flatten)]
    pub memory: MemoryLimit,
    /// B-MIDA/M-MIDA: the ground truth `mil synth --truth` wrote (`bag_id,instance,positive`);
    /// reports how many chosen positive prototypes are positive instances (MIDA Table 1).
    #[arg(long, value_name = "FILE")]
    pub truth: Option<String>,
}

/// The command line as clap parses it: [`Cli`] with every option that takes a value
/// accepting a value that starts with `-` and reads as a number (`--folds -1`), and a
/// numeric option any value starting with `-` (`--max-memory-gib -inf`), so that such a
/// value is refused as an invalid value of its flag rather than taken for an unknown
/// flag.
pub fn command() -> clap::Command {
    use clap::CommandFactory;
    use std::any::TypeId;
    fn negative_values(command: clap::Command) -> clap::Command {
        command
            .mut_args(|arg| {
                let id = arg.get_value_parser().type_id();
                let numeric = [
                    TypeId::of::<f64>(),
                    TypeId::of::<usize>(),
                    TypeId::of::<u64>(),
                    TypeId::of::<i32>(),
                ]
                .iter()
                .any(|t| id == *t);
                if !arg.get_action().takes_values() {
                    arg
                } else if numeric {
                    arg.allow_hyphen_values(true)
                } else {
                    arg.allow_negative_numbers(true)
                }
            })
            .mut_subcommands(negative_values)
    }
    negative_values(Cli::command())
}

/// The options of the command (the innermost subcommand) given on the command line, by
/// clap id (`max_iterations` for `--max-iterations`), as opposed to left at their
/// defaults; set once by [`main`].
static GIVEN: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();

fn record_given(matches: &clap::ArgMatches) {
    let mut m = matches;
    while let Some((_, sub)) = m.subcommand() {
        m = sub;
    }
    let given = m
        .ids()
        .filter(|id| m.value_source(id.as_str()) == Some(clap::parser::ValueSource::CommandLine))
        .map(|id| id.as_str().to_string())
        .collect();
    let _ = GIVEN.set(given);
}

/// Whether the option `--flag` was given on the command line; `None` when the command
/// line was not parsed by [`main`] (a library caller of the argument types).
pub(super) fn given_on_command_line(flag: &str) -> Option<bool> {
    let id = flag.trim_start_matches('-').replace('-', "_");
    GIVEN.get().map(|given| given.contains(&id))
}

/// The `mil` program: parses the command line, runs it, prints the report (JSON with
/// `--json`) or the error, and returns the exit code. Standard output is checked: a
/// failed write exits 1 naming stdout, while a closed pipe (`| head`) ends quietly with
/// 0. Messages to stderr never fail the program.
pub fn main() -> std::process::ExitCode {
    use clap::FromArgMatches;
    use std::process::ExitCode;
    signals::install();
    let parsed = command().try_get_matches().and_then(|matches| {
        record_given(&matches);
        Cli::from_arg_matches(&matches)
    });
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) => {
            // Help and version go to stdout, usage errors to stderr.
            let printed = e
                .print()
                .and_then(|()| std::io::Write::flush(&mut std::io::stdout()));
            if let Err(err) = printed {
                if !e.use_stderr() && err.kind() != std::io::ErrorKind::BrokenPipe {
                    output::warn(&format!("mil: stdout: {err}"));
                    return ExitCode::FAILURE;
                }
            }
            return ExitCode::from(e.exit_code() as u8);
        }
    };
    let failed = |e: &Error| {
        if output::is_closed_stdout(e) {
            return ExitCode::SUCCESS;
        }
        output::warn(&format!(
            "mil: {}",
            escape_controls(&message(e, cli.command.name()))
        ));
        ExitCode::from(e.exit_code() as u8)
    };
    match run(&cli) {
        Ok(report) => {
            let text = if cli.json {
                report.json.to_string()
            } else {
                escape_controls(&report.human)
            };
            if output::stdout_taken() {
                // An output went to stdout (`-o -`); the report must not mix with it.
                output::warn(&text);
                return ExitCode::SUCCESS;
            }
            // A generated script or page ends its own last line.
            let line = if text.ends_with('\n') {
                text
            } else {
                format!("{text}\n")
            };
            match output::write_stdout(line.as_bytes()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => failed(&e),
            }
        }
        Err(e) => failed(&e),
    }
}

/// `text` with its control characters other than newline and tab escaped (`\u{1b}`), so
/// that bag ids, class names or file content cannot drive the terminal.
pub fn escape_controls(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() && c != '\n' && c != '\t' {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// The error as the command line states it: a library parameter (`ridge`, `inner_folds`)
/// becomes the subcommand's flag (`--ridge`, `--inner-folds`) when it has one.
fn message(error: &Error, subcommand: &str) -> String {
    match error {
        Error::Parameter {
            name,
            value,
            reason,
        } => format!("invalid {} = {value}: {reason}", flag(subcommand, name)),
        other => other.to_string(),
    }
}

/// `--name` when the subcommand has that flag (underscores as dashes), else the name.
fn flag(subcommand: &str, name: &str) -> String {
    use clap::CommandFactory;
    let long = name.replace('_', "-");
    let command = Cli::command();
    let has = command.find_subcommand(subcommand).is_some_and(|c| {
        c.get_arguments()
            .any(|a| a.get_long() == Some(long.as_str()))
    });
    if has {
        format!("--{long}")
    } else {
        name.to_string()
    }
}

impl Command {
    /// The subcommand's name as users type it.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Info(_) => "info",
            Command::Synth(_) => "synth",
            Command::Cv(_) => "cv",
            Command::Train(_) => "train",
            Command::Predict(_) => "predict",
            Command::Project(_) => "project",
            Command::Gram(_) => "gram",
            Command::Cluster(_) => "cluster",
            Command::Export(_) => "export",
            Command::Inspect(_) => "inspect",
            Command::Completions(_) => "completions",
            Command::Manpage(_) => "manpage",
        }
    }
}

/// Runs one parsed command line.
pub fn run(cli: &Cli) -> Result<Report> {
    let progress = progress::Bars::new(cli.quiet);
    match &cli.command {
        Command::Info(args) => info::run(args),
        Command::Synth(args) => synth::run(args),
        Command::Cv(args) => cv::run(args, &progress),
        Command::Train(args) => train::run(args, &progress),
        Command::Predict(args) => predict::run(args, cli.json, &progress),
        Command::Project(args) => project::run(args),
        Command::Gram(args) => gram::run(args, &progress),
        Command::Cluster(args) => cluster::run(args),
        Command::Export(args) => export::run(args, &progress),
        Command::Inspect(args) => inspect::run(args),
        Command::Completions(args) => generate::completions(args),
        Command::Manpage(args) => generate::manpage(args),
    }
}
