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
use crate::classifier::mi_svm::{InstanceKernel, MiSvm};
use crate::classifier::milr::{Milr, Optimizer};
use crate::classifier::svm::{Preprocessing, SetKernel, SetKernelSvm, MI_RBF_COST, MI_RBF_GAMMA};
use crate::classifier::{ClassifierKind, ClassifierParams};
use crate::cluster::m3ic::{BalanceMode, M3ic};
use crate::cluster::ClusterMethod;
use crate::data::synth::SyntheticSet;
use crate::distance::Hausdorff;
use crate::error::{Error, Result};
use crate::export::rounding::Rounding;
use crate::export::InputSteps;
use crate::kernel::SetKernelName;
use crate::pipeline::Selection;
use crate::projection::midr::Midr;
use crate::projection::ProjectionKind;
use crate::svm::bags::{BagSvmSettings, EmpiricalMap};
use keyword::{keyword, keyword_or_none, OrNone};

mod cluster;
mod cv;
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
    /// Count and check a data set (a .csv/.arff path or a built-in name).
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
    /// A .csv or .arff path, or a built-in data set name (a file of that name wins).
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
    /// Dimension D (mialm-ii only; default 100 = `synth::DEFAULT_DIMS`).
    #[arg(long)]
    pub dims: Option<usize>,
    /// Relevant dimensions d (mialm-ii, term-counts; default 20).
    #[arg(long)]
    pub relevant: Option<usize>,
    /// Number of bags (term-counts only; default 80).
    #[arg(long)]
    pub bags: Option<usize>,
    /// Negative bags per positive bag, e.g. 20 for 1:20 (term-counts only; default 1).
    #[arg(long)]
    pub imbalance: Option<f64>,
    /// Also write the ground truth, one line per instance: `bag_id,instance,positive`
    /// (instance numbered from 1 within its bag; positive 1 or 0).
    #[arg(long, value_name = "PATH")]
    pub truth: Option<String>,
}

/// Classifier choice and its hyper-parameters. Defaults are the library's
/// (`CitationKnn::default()`, `Milr::default()`, `SetKernelSvm::default()`).
#[derive(Args, Debug, Clone)]
pub struct ClassifierArgs {
    /// The bag classifier.
    #[arg(long, value_parser = keyword::<ClassifierKind>(), required = true)]
    pub classifier: Option<ClassifierKind>,
    /// Citation-kNN: number of references R.
    #[arg(long, default_value_t = CitationKnn::default().references)]
    pub references: usize,
    /// Citation-kNN: number of citers C.
    #[arg(long, default_value_t = CitationKnn::default().citers)]
    pub citers: usize,
    /// Attribute scaling. Citation-kNN: `weka` reproduces Weka's CitationKNN exactly; `auto`
    /// is the z-score on raw features and none after a projection. SVM: `minmax` scales
    /// every attribute to [0, 1] on the training bags (Weka MISMO's default), `weka` is
    /// what MISMO computes (minmax, the third attribute left out of the MI kernel; its
    /// predictions bag for bag), `none` keeps them, `auto` is minmax for `--kernel mi-rbf`
    /// and none otherwise.
    #[arg(long, value_parser = keyword::<ScalingFlag>(), default_value_t = ScalingFlag::Knn(CitationKnn::default().scaling))]
    pub scaling: ScalingFlag,
    /// Citation-kNN: rank H of the Hausdorff distance (1 = minimal Hausdorff distance).
    #[arg(long, default_value_t = CitationKnn::default().rank)]
    pub rank: usize,
    /// Citation-kNN: the bag distance (`min`: Wang & Zucker's and Weka's minimal
    /// Hausdorff distance).
    #[arg(long, value_parser = keyword::<Hausdorff>(), default_value_t = CitationKnn::default().hausdorff)]
    pub hausdorff: Hausdorff,
    /// MILR: ridge(s) on the standardised coefficients (Weka's -R); a list is chosen by
    /// inner CV, jointly with --dim/--alpha lists.
    #[arg(long, value_delimiter = ',', default_values_t = [Milr::default().ridge], allow_negative_numbers = true)]
    pub ridge: Vec<f64>,
    /// MILR: β of the softmax pooling.
    #[arg(long, default_value_t = Milr::default().beta, allow_negative_numbers = true)]
    pub beta: f64,
    /// MILR: how instance probabilities become a bag probability.
    #[arg(long, value_parser = keyword::<Pooling>(), default_value_t = Milr::default().pooling)]
    pub pooling: Pooling,
    /// MILR: the minimiser (`weka` reproduces Weka 3.6's MILR fit and scores).
    #[arg(long, value_parser = keyword::<Optimizer>(), default_value_t = Milr::default().optimizer)]
    pub optimizer: Optimizer,
    /// The kernel. SVM: a set kernel (default `kand`); mi-svm and mi-svm-bag: the
    /// instance kernel `linear` (default) or `rbf` (with --gamma).
    #[arg(long, value_parser = keyword::<KernelFlag>())]
    pub kernel: Option<KernelFlag>,
    /// SVM: empirical kernel map.
    #[arg(long, value_parser = keyword::<EmpiricalMap>(), default_value_t = BagSvmSettings::default().map)]
    pub map: EmpiricalMap,
    /// SVM: misclassification cost C; default 10¹⁰ (the GMIL paper's hard margin), or
    /// MISMO's 1 with `--kernel mi-rbf`. mi-svm and mi-svm-bag: C of every instance
    /// (default 1).
    #[arg(long = "cost", allow_negative_numbers = true)]
    pub cost: Option<f64>,
    #[command(flatten)]
    pub set_kernel: SetKernelArgs,
    /// Weight of each class's bags in the fit: `balanced` (n / (k · n_c) over the
    /// training bags) or `W0,W1,…` in class order. MILR: each bag's likelihood term;
    /// SVM: each bag's cost C (libsvm's class weights); Citation-kNN: each reference's and
    /// citer's vote.
    #[arg(long, value_parser = parse_class_weight, default_value_t = ClassWeight::None)]
    pub class_weight: ClassWeight,
    /// mi-svm and mi-svm-bag: most rounds of relabelling (instances or witnesses).
    #[arg(long, default_value_t = MiSvm::default().max_iterations)]
    pub max_iterations: usize,
    /// mi-svm and mi-svm-bag: refuse to start when the instance Gram matrix is estimated
    /// to need more memory than this.
    #[arg(long, default_value_t = MiSvm::default().max_memory_gib, value_parser = output::parse_memory_limit)]
    pub max_memory_gib: f64,
    /// Binary decision threshold on the positive score (MILR: the bag probability;
    /// Citation-kNN: the positive share of the votes; SVM: the decision value): `auto`
    /// chooses it on the training bags by an inner CV (--inner-folds) to maximise
    /// --threshold-metric; `none`: the larger class score wins.
    #[arg(long, value_parser = parse_threshold, default_value_t = Threshold::None, allow_negative_numbers = true)]
    pub threshold: Threshold,
    /// What `--threshold auto` maximises on the training bags' out-of-fold scores.
    #[arg(long, value_parser = keyword::<ThresholdMetric>(), default_value_t = ThresholdMetric::default())]
    pub threshold_metric: ThresholdMetric,
}

/// `--class-weight`'s parser: the library's [`ClassWeight`] syntax.
fn parse_class_weight(text: &str) -> std::result::Result<ClassWeight, String> {
    text.parse::<ClassWeight>().map_err(|e| match e {
        Error::Parameter { reason, .. } => reason,
        other => other.to_string(),
    })
}

/// `--threshold`'s parser: the library's [`Threshold`] syntax.
fn parse_threshold(text: &str) -> std::result::Result<Threshold, String> {
    text.parse::<Threshold>().map_err(|e| match e {
        Error::Parameter { reason, .. } => reason,
        other => other.to_string(),
    })
}

impl ClassifierArgs {
    /// The classifier the flags describe.
    pub fn params(&self, seed: u64) -> Result<ClassifierParams> {
        let args = self;
        // clap requires --classifier wherever these flags are parsed (not under `merge`).
        Ok(match args.classifier.unwrap_or(ClassifierKind::CitationKnn) {
            ClassifierKind::CitationKnn => CitationKnn::default()
                .references(args.references)
                .citers(args.citers)
                .rank(args.rank)
                .hausdorff(args.hausdorff)
                .scaling(match args.scaling {
                    ScalingFlag::Knn(s) => s,
                    ScalingFlag::Svm(p) => {
                        return Err(Error::parameter(
                            "--scaling",
                            p,
                            "applies to --classifier svm; Citation-kNN takes auto, weka, zscore or none",
                        ))
                    }
                })
                .into(),
            ClassifierKind::Milr => Milr::default()
                .pooling(args.pooling)
                // The first of a list; the pipeline's grid tries every one.
                .ridge(args.ridge.first().copied().unwrap_or(Milr::default().ridge))
                .beta(args.beta)
                .optimizer(args.optimizer)
                .into(),
            ClassifierKind::Svm => ClassifierParams::from(self.svm_params(seed)?),
            kind @ (ClassifierKind::MiSvm | ClassifierKind::MiSvmBag) => {
                ClassifierParams::from(self.mi_svm_params(kind)?)
            }
        }
        .with_class_weight(args.class_weight))
    }

    /// The set kernel `--kernel` names (the SVM's default without it).
    pub fn set_kernel_name(&self) -> Result<SetKernelName> {
        match self.kernel {
            None => Ok(SetKernel::default().name()),
            Some(KernelFlag::Set(k)) => Ok(k),
            Some(KernelFlag::Instance(k)) => Err(Error::parameter(
                "--kernel",
                k,
                "applies to mi-svm and mi-svm-bag; the SVM takes a set kernel: kand, kandor, kmin, nsk or mi-rbf",
            )),
        }
    }

    /// mi-SVM (`kind` mi-svm) or MI-SVM (mi-svm-bag) as the flags describe it.
    fn mi_svm_params(&self, kind: ClassifierKind) -> Result<MiSvm> {
        let kernel =
            match self.kernel {
                None => MiSvm::default().kernel,
                Some(KernelFlag::Instance(k)) => k,
                Some(KernelFlag::Set(k)) => return Err(Error::parameter(
                    "--kernel",
                    k,
                    "is a set kernel; mi-svm and mi-svm-bag take an instance kernel: linear or rbf",
                )),
            };
        if !matches!(
            self.scaling,
            ScalingFlag::Knn(Scaling::Auto | Scaling::Zscore)
        ) {
            return Err(Error::parameter(
                "--scaling",
                self.scaling,
                "mi-svm and mi-svm-bag always z-score the features on the training instances (auto or zscore)",
            ));
        }
        let heuristic = match kind {
            ClassifierKind::MiSvmBag => crate::classifier::mi_svm::Heuristic::Bag,
            _ => crate::classifier::mi_svm::Heuristic::Instance,
        };
        Ok(MiSvm::default()
            .heuristic(heuristic)
            .kernel(kernel)
            .gamma(self.set_kernel.gamma)
            .cost(self.cost.unwrap_or(MiSvm::default().cost))
            .max_iterations(self.max_iterations)
            .max_memory_gib(self.max_memory_gib))
    }

    /// The set-kernel SVM the flags describe.
    fn svm_params(&self, seed: u64) -> Result<SetKernelSvm> {
        let args = self;
        let k = &args.set_kernel;
        let set_kernel = args.set_kernel_name()?;
        let mi = set_kernel == SetKernelName::MiRbf;
        let preprocessing = match args.scaling {
            ScalingFlag::Knn(Scaling::Auto) if mi => Preprocessing::MinMax,
            ScalingFlag::Knn(Scaling::Auto | Scaling::None) => Preprocessing::None,
            // `weka` means Weka's own behaviour for either classifier.
            ScalingFlag::Knn(Scaling::Weka) => Preprocessing::Weka,
            ScalingFlag::Svm(p) => p,
            ScalingFlag::Knn(other) => {
                return Err(Error::parameter(
                    "--scaling",
                    other,
                    "applies to Citation-kNN; the SVM takes auto, none, minmax or weka",
                ))
            }
        };
        let kernel = match set_kernel {
            SetKernelName::Box(kernel) => SetKernel::Box {
                kernel,
                estimator: k.estimator,
                epsilon: k.epsilon,
                delta: k.delta,
                precision: k.precision,
            },
            SetKernelName::Nsk => SetKernel::Nsk { gamma: k.gamma },
            SetKernelName::MiRbf => SetKernel::MiRbf {
                gamma: k.gamma.unwrap_or(MI_RBF_GAMMA),
            },
        };
        let cost = args.cost.unwrap_or(if mi {
            MI_RBF_COST
        } else {
            BagSvmSettings::default().cost
        });
        Ok(SetKernelSvm::default()
            .kernel(kernel)
            .settings(
                BagSvmSettings::default()
                    .rho(k.rho)
                    .map(args.map)
                    .cost(cost),
            )
            .seed(seed)
            .preprocessing(preprocessing))
    }
}

/// `--scaling`: one flag for Citation-kNN's [`Scaling`] and the SVM's [`Preprocessing`],
/// whose names it takes from those two library enums (`none` is both).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScalingFlag {
    /// A Citation-kNN scaling (`auto` and `none` also apply to the SVM).
    Knn(Scaling),
    /// An SVM pre-processing other than none.
    Svm(Preprocessing),
}

impl mil_core::keyword::Keyword for ScalingFlag {
    const ALL: &'static [Self] = &[
        ScalingFlag::Knn(Scaling::Auto),
        ScalingFlag::Knn(Scaling::Weka),
        ScalingFlag::Knn(Scaling::Zscore),
        ScalingFlag::Knn(Scaling::None),
        ScalingFlag::Svm(Preprocessing::MinMax),
    ];

    fn name(self) -> &'static str {
        match self {
            ScalingFlag::Knn(s) => s.name(),
            ScalingFlag::Svm(p) => p.name(),
        }
    }

    fn help(self) -> &'static str {
        match self {
            ScalingFlag::Knn(Scaling::Weka) => {
                "Weka's own: Citation-kNN's (x − 0.95·min)/(1.05·max − 0.95·min) widened by each predicted bag; the MI-kernel SVM's minmax with the third attribute left out, as MISMO computes it"
            }
            ScalingFlag::Knn(s) => s.help(),
            ScalingFlag::Svm(p) => p.help(),
        }
    }
}

impl std::fmt::Display for ScalingFlag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(mil_core::keyword::Keyword::name(*self))
    }
}

/// `--kernel`: the SVM's set kernels ([`SetKernelName`]) and mi-SVM's instance kernels
/// ([`InstanceKernel`]), names taken from those two library enums.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelFlag {
    /// A set kernel (`--classifier svm`).
    Set(SetKernelName),
    /// An instance kernel (`--classifier mi-svm`, `mi-svm-bag`).
    Instance(InstanceKernel),
}

impl mil_core::keyword::Keyword for KernelFlag {
    const ALL: &'static [Self] = &[
        KernelFlag::Set(SetKernelName::Box(mil_core::box_kernel::BoxKernel::And)),
        KernelFlag::Set(SetKernelName::Box(mil_core::box_kernel::BoxKernel::AndOr)),
        KernelFlag::Set(SetKernelName::Box(mil_core::box_kernel::BoxKernel::Min)),
        KernelFlag::Set(SetKernelName::Nsk),
        KernelFlag::Set(SetKernelName::MiRbf),
        KernelFlag::Instance(InstanceKernel::Linear),
        KernelFlag::Instance(InstanceKernel::Rbf),
    ];

    fn name(self) -> &'static str {
        match self {
            KernelFlag::Set(k) => k.name(),
            KernelFlag::Instance(k) => k.name(),
        }
    }

    fn help(self) -> &'static str {
        match self {
            KernelFlag::Set(k) => k.help(),
            KernelFlag::Instance(k) => k.help(),
        }
    }
}

impl std::fmt::Display for KernelFlag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(mil_core::keyword::Keyword::name(*self))
    }
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
    /// NSK: γ of the instance kernel exp(−γ‖x − y‖²) on z-scored features; default
    /// 1 / (number of non-constant features).
    #[arg(long, allow_negative_numbers = true)]
    pub gamma: Option<f64>,
    /// ρ of the subpolynomial map φ(k) = k^ρ before the SVM (the paper: 1/50); `mil
    /// gram` reports the negative eigenvalues of φ(K) too.
    #[arg(long, default_value_t = BagSvmSettings::default().rho, allow_negative_numbers = true)]
    pub rho: f64,
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

/// `mil cv`.
#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct CvArgs {
    /// `mil cv merge PARTS…`: join the parts of a sharded run.
    #[command(subcommand)]
    pub merge: Option<CvMerge>,
    /// A .csv or .arff path, or a built-in data set name (a file of that name wins).
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
    /// A .csv or .arff path, or a built-in data set name (a file of that name wins).
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
}

/// The inner CV of `mil cv` and `mil train`.
#[derive(Args, Debug)]
pub struct InnerCvArgs {
    /// Folds of the inner CV that chooses among hyper-parameter lists.
    #[arg(long, default_value_t = crate::pipeline::DEFAULT_INNER_FOLDS)]
    pub inner_folds: usize,
    /// What that inner CV maximises.
    #[arg(long, value_parser = keyword::<Selection>(), default_value_t = Selection::default())]
    pub select: Selection,
}

/// `mil predict`.
#[derive(Args, Debug)]
pub struct PredictArgs {
    /// A model saved by `mil train`.
    pub model: String,
    /// A .csv or .arff path, or a built-in data set name (a file of that name wins).
    pub data: String,
    /// Add per bag the witness instance(s) and the per-instance scores the model defines
    /// (MILR: instance probabilities; Citation-kNN: references, citers and the instance
    /// pair of each distance; M3IC: per-instance margins).
    #[arg(long)]
    pub explain: bool,
}

/// `mil project`.
#[derive(Args, Debug)]
pub struct ProjectArgs {
    /// A .csv or .arff path, or a built-in data set name (a file of that name wins).
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
    /// B-MIDA/M-MIDA: the ground truth `mil synth --truth` wrote (`bag_id,instance,positive`);
    /// reports how many chosen positive prototypes are positive instances (MIDA Table 1).
    #[arg(long, value_name = "FILE")]
    pub truth: Option<String>,
}

/// `mil gram`.
#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct GramArgs {
    /// `mil gram merge TILES… -o OUT`: join the tiles of a sharded run.
    #[command(subcommand)]
    pub merge: Option<GramMerge>,
    /// A .csv or .arff path, or a built-in data set name (a file of that name wins).
    #[arg(required = true)]
    pub data: Option<String>,
    /// The set kernel.
    #[arg(long, value_parser = keyword::<SetKernelName>(), required = true)]
    pub kernel: Option<SetKernelName>,
    #[command(flatten)]
    pub set_kernel: SetKernelArgs,
    /// Output: .csv (bags × bags) or .npy (float64); without it only the summary. With
    /// --shard, the tile (JSON) that `mil gram merge` joins.
    #[arg(short, long)]
    pub output: Option<String>,
    /// Compute one share of the entries: `i/n` (share i of n, from 0), `auto` (Slurm's
    /// array task id and count) or `auto/N` (N shares; the index from Slurm or from
    /// Kubernetes' JOB_COMPLETION_INDEX). Shares have equal estimated work.
    #[arg(long)]
    pub shard: Option<String>,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Keep only bags with at least this many instances.
    #[arg(long)]
    pub min_bag_size: Option<usize>,
    /// Refuse to start when the matrices are estimated to need more memory than this.
    #[arg(long, default_value_t = output::DEFAULT_MAX_MEMORY_GIB, value_parser = output::parse_memory_limit)]
    pub max_memory_gib: f64,
    /// Keep only bags with at most this many instances.
    #[arg(long)]
    pub max_bag_size: Option<usize>,
}

/// `mil gram merge`.
#[derive(Subcommand, Debug)]
pub enum GramMerge {
    /// Join the tiles of a sharded `mil gram` into the matrix one run writes.
    Merge(GramMergeArgs),
}

/// The tiles to join and where the matrix goes.
#[derive(Args, Debug)]
pub struct GramMergeArgs {
    /// The tiles written by `mil gram … --shard i/n -o TILE`, all n of them.
    #[arg(required = true, num_args = 1..)]
    pub tiles: Vec<String>,
    /// Output: .csv or .npy, byte for byte what the single run writes.
    #[arg(short, long)]
    pub output: Option<String>,
}

/// `mil cluster`.
#[derive(Args, Debug)]
pub struct ClusterArgs {
    /// A .csv or .arff path, or a built-in data set name (a file of that name wins).
    pub data: String,
    /// The clustering method.
    #[arg(long, value_parser = keyword::<ClusterMethod>())]
    pub method: ClusterMethod,
    /// Number of clusters.
    #[arg(long)]
    pub k: usize,
    /// Random restarts.
    #[arg(long, default_value_t = M3ic::default().restarts)]
    pub restarts: usize,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Save the clustering model here.
    #[arg(short, long)]
    pub output: Option<String>,
    /// M³IC: regularisation constant C of problem (6) (paper grid 2^[-4:4]); default 2,
    /// or 4 with `--balance-mode paper`.
    #[arg(long = "cost", allow_negative_numbers = true)]
    pub cost: Option<f64>,
    /// M³IC: cluster balance l of constraint (4) (paper grid 0, 0.001, 0.01, 0.1, 1..5, 10).
    #[arg(long, default_value_t = M3ic::default().l, allow_negative_numbers = true)]
    pub balance: f64,
    /// M³IC: CCCP precision ε₁; default 0.001, or the paper's 0.01 with
    /// `--balance-mode paper`.
    #[arg(long, allow_negative_numbers = true)]
    pub epsilon1: Option<f64>,
    /// M³IC: cutting-plane precision ε₂.
    #[arg(long, default_value_t = M3ic::default().eps2, allow_negative_numbers = true)]
    pub epsilon2: f64,
    /// M³IC: cluster the raw features instead of z-scored ones.
    #[arg(long)]
    pub raw: bool,
    /// M³IC: keep the instances' lengths. By default every instance is scaled to unit
    /// length after the z-score; `mil export` carries that scaling to the core.
    #[arg(long)]
    pub no_instance_norm: bool,
    /// M³IC: balance constraints. `sizes` (default) adds to (4) a minimum number of bags
    /// labelled with every cluster (Xu et al. 2005's class balance); `paper` is the
    /// paper's relaxed constraint (4) alone (use it with the paper's --cost/--balance grid).
    #[arg(long, value_parser = keyword::<BalanceMode>(), default_value_t = M3ic::default().balance_mode)]
    pub balance_mode: BalanceMode,
    /// M³IC with `--balance-mode sizes`: every cluster labels at least this fraction of
    /// the mean cluster size n/k, in [0, 1].
    #[arg(long, default_value_t = M3ic::default().min_size, allow_negative_numbers = true)]
    pub min_size: f64,
    /// M³IC with `--balance-mode sizes`: every cluster labels at most this multiple of
    /// the mean cluster size n/k, at least 1 (`inf`: no upper bound).
    #[arg(long, default_value_t = M3ic::default().max_size)]
    pub max_size: f64,
}

/// `mil export`.
#[derive(Args, Debug)]
pub struct ExportArgs {
    /// A model saved by `mil train`.
    pub model: String,
    /// Scalar encoding.
    #[arg(long, value_parser = keyword::<Encoding>(), default_value_t = Encoding::F32)]
    pub format: Encoding,
    /// Output .milm path.
    #[arg(short, long)]
    pub output: String,
    /// The data the model was trained on (sets the input quantisation and is where
    /// `max_abs_error` is measured); default: the model's own record of it.
    #[arg(long)]
    pub data: Option<String>,
    /// Linear models after a projection: fold the projection into the instance scorer
    /// (one D-vector per score row instead of d × D + d weights; same scores up to
    /// rounding, fewer bytes and multiply-adds; the device no longer sees the projected
    /// coordinates).
    #[arg(long)]
    pub fold_projection: bool,
    /// Q15/Q7: how the projection weights round to their 16- or 8-bit grid. `feedback`
    /// lowers the error on the training data; the stated worst-case bound uses each row's
    /// largest rounding (at most one step, against half a step for `nearest`).
    #[arg(long, value_parser = keyword::<Rounding>(), default_value_t = Rounding::default())]
    pub rounding: Rounding,
    /// Q15/Q7: the input steps. `integer` gives every feature step 1, for integer
    /// features the device feeds as `i16` (ADC counts): exact, and quantising on the
    /// device is a copy (`quantize_fixed(x, 0, ..)`); refused when a training value is
    /// not an integer within `i16`.
    #[arg(long, value_parser = keyword::<InputSteps>(), default_value_t = InputSteps::default())]
    pub input: InputSteps,
}

/// `mil inspect`.
#[derive(Args, Debug)]
pub struct InspectArgs {
    /// A compact model written by `mil export`.
    pub model: String,
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

/// The `mil` program: parses the command line, runs it, prints the report (JSON with
/// `--json`) or the error, and returns the exit code. Standard output is checked: a
/// failed write exits 1 naming stdout, while a closed pipe (`| head`) ends quietly with
/// 0. Messages to stderr never fail the program.
pub fn main() -> std::process::ExitCode {
    use clap::FromArgMatches;
    use std::process::ExitCode;
    signals::install();
    let parsed = command()
        .try_get_matches()
        .and_then(|matches| Cli::from_arg_matches(&matches));
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
        Command::Predict(args) => predict::run(args, &progress),
        Command::Project(args) => project::run(args),
        Command::Gram(args) => gram::run(args, &progress),
        Command::Cluster(args) => cluster::run(args),
        Command::Export(args) => export::run(args, &progress),
        Command::Inspect(args) => inspect::run(args),
        Command::Completions(args) => generate::completions(args),
        Command::Manpage(args) => generate::manpage(args),
    }
}
