//! The `mil` command line (contract: CLI.md in the team's shared notes, mirrored in the
//! README). Each subcommand lives in its own module and returns a [`Report`]: a human
//! summary and one JSON object; `main` prints one or the other.

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::error::Result;

mod cluster;
mod cv;
mod export;
mod gram;
mod info;
mod inspect;
mod predict;
pub mod project;
mod synth;
mod train;

/// What a subcommand produced.
pub struct Report {
    /// Human-readable summary (default output).
    pub human: String,
    /// The machine-readable object (`--json`).
    pub json: serde_json::Value,
}

/// Multiple-instance learning: train, evaluate and deploy bag classifiers, projections,
/// set kernels and bag clusterings.
#[derive(Parser, Debug)]
#[command(name = "mil", version, about, propagate_version = true)]
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
}

/// `mil info`.
#[derive(Args, Debug)]
pub struct InfoArgs {
    /// A .csv or .arff path, or a built-in data set name.
    #[arg(required_unless_present = "list")]
    pub data: Option<String>,
    /// List the built-in data sets.
    #[arg(long)]
    pub list: bool,
}

/// The synthetic sets.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SynthName {
    /// MIDA §5.1 data set one (binary).
    MidaOne,
    /// MIDA §5.1 data set two (three classes).
    MidaTwo,
    /// MI-ALM §3.1 data set II (`--dims D --relevant d`).
    MialmIi,
}

/// `mil synth`.
#[derive(Args, Debug)]
pub struct SynthArgs {
    /// Which data set.
    pub name: SynthName,
    /// Output CSV (or .arff) path.
    #[arg(short, long)]
    pub output: String,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Dimension D (mialm-ii only; default 100).
    #[arg(long)]
    pub dims: Option<usize>,
    /// Relevant dimensions d (mialm-ii only; default 20).
    #[arg(long)]
    pub relevant: Option<usize>,
    /// Also write the ground truth, one line per instance: `bag_id,instance,positive`
    /// (instance numbered from 1 within its bag; positive 1 or 0).
    #[arg(long, value_name = "PATH")]
    pub truth: Option<String>,
}

/// Classifiers.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClassifierName {
    /// Citation-kNN (Wang & Zucker) on minimal Hausdorff distances.
    CitationKnn,
    /// Multiple-instance logistic regression (Ray & Craven; Weka's MILR).
    Milr,
    /// SVM over bags with a precomputed set kernel.
    Svm,
}

/// Projections.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProjectionName {
    /// No projection.
    None,
    /// Principal component analysis.
    Pca,
    /// Fisher linear discriminant analysis (bag labels as instance labels).
    Lda,
    /// Local Fisher discriminant analysis.
    Lfda,
    /// Citation-kNN-based LFDA (Kim & Choi).
    Clfda,
    /// Binary multiple-instance discriminant analysis.
    Bmida,
    /// Multi-class multiple-instance discriminant analysis.
    Mmida,
    /// Sparse, orthogonal projection by approximate augmented Lagrangian (Zhu et al.).
    MiAlm,
    /// Multi-instance dimensionality reduction (Sun et al.), MI-ALM's baseline.
    Midr,
}

/// Set kernels.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelName {
    /// k∧: boxes containing a point of each bag.
    Kand,
    /// k∧/∨: k∧ normalised by the boxes containing a point of either bag.
    Kandor,
    /// k_min: Σ over boxes of the smaller point count.
    Kmin,
    /// Normalised set kernel (Gärtner et al. 2002).
    Nsk,
}

/// Instance-score pooling for MILR.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pooling {
    /// P(neg) = Π(1 − p_ij) (Weka's default).
    NoisyOr,
    /// Arithmetic mean of instance probabilities.
    Mean,
    /// σ of the mean instance logit (Weka's geometric mean).
    Geometric,
    /// Ray & Craven's softmax.
    Softmax,
    /// Maximum instance probability.
    Max,
}

/// MILR's minimiser.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum MilrOptimizer {
    /// L-BFGS on the log-space likelihood (the lowest objective).
    Lbfgs,
    /// Weka 3.6's quasi-Newton method, stopping rules and arithmetic (Weka's results;
    /// noisy-or, mean and geometric pooling only).
    Weka,
}

/// Bag distances for Citation-kNN.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum HausdorffArg {
    /// min over instance pairs (with `--rank`, the H-th ranked).
    Min,
    /// max of the two directed Hausdorff distances.
    Max,
    /// Mean of the nearest-instance distances both ways.
    Avg,
}

/// Attribute scaling for Citation-kNN.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scaling {
    /// Weka's rule: (x − 0.95·min)/(1.05·max − 0.95·min) over training instances.
    Weka,
    /// z-score fitted on the training bags.
    Zscore,
    /// Raw features.
    None,
}

/// Empirical kernel maps (GMIL §5.3).
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelMap {
    /// The (subpolynomially mapped) Gram matrix itself.
    None,
    /// Empirical kernel map over the training bags.
    Emp,
    /// Empirical kernel map over training and unlabelled test bags (transductive).
    EmpTrans,
}

/// Box-kernel estimators.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Estimator {
    /// The fast estimators of this project.
    Fast,
    /// The paper's own algorithms (Tables 3–5).
    Paper,
}

/// Clustering methods.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClusterMethod {
    /// Maximum margin multiple-instance clustering (Zhang et al. 2009).
    M3ic,
    /// BAMIC k-medoids with the minimal Hausdorff distance.
    BamicMin,
    /// BAMIC k-medoids with the maximal Hausdorff distance.
    BamicMax,
    /// BAMIC k-medoids with the average Hausdorff distance.
    BamicAvg,
}

/// Compact model scalar encodings.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    /// 32-bit floats.
    F32,
    /// 16-bit fixed point with per-column scales.
    Q15,
    /// 8-bit fixed point with per-column scales.
    Q7,
}

/// How quantised projection weights round to their grid.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportRounding {
    /// Each weight to its nearest grid point (error ≤ half a step).
    Nearest,
    /// Error feedback over the training instances (GPTQ): each weight to one of its two
    /// neighbouring grid points, cancelling the output error of the weights before it.
    Feedback,
}

/// Classifier choice and its hyper-parameters.
#[derive(Args, Debug, Clone)]
pub struct ClassifierArgs {
    /// The bag classifier.
    #[arg(long, value_enum)]
    pub classifier: ClassifierName,
    /// Citation-kNN: number of references R.
    #[arg(long, default_value_t = 2)]
    pub references: usize,
    /// Citation-kNN: number of citers C.
    #[arg(long, default_value_t = 4)]
    pub citers: usize,
    /// Citation-kNN: attribute scaling (`weka` reproduces Weka's CitationKNN exactly).
    /// Default: `zscore` on raw features, `none` after a projection (which already
    /// standardises its input; rescaling its output dimensions discards its weighting).
    #[arg(long, value_enum)]
    pub scaling: Option<Scaling>,
    /// Citation-kNN: rank H of the Hausdorff distance (1 = minimal Hausdorff distance).
    #[arg(long, default_value_t = 1)]
    pub rank: usize,
    /// Citation-kNN: the bag distance (`min`: Wang & Zucker's and Weka's minimal
    /// Hausdorff distance; `max`: the classic Hausdorff distance; `avg`: the average
    /// Hausdorff distance).
    #[arg(long, value_enum, default_value = "min")]
    pub hausdorff: HausdorffArg,
    /// MILR: ridge(s) on the standardised coefficients (Weka's -R); a list is chosen by
    /// inner CV, jointly with --dim/--alpha lists.
    #[arg(long, value_delimiter = ',', default_values_t = [1e-6], allow_negative_numbers = true)]
    pub ridge: Vec<f64>,
    /// MILR: β of the softmax pooling.
    #[arg(long, default_value_t = 3.0)]
    pub beta: f64,
    /// MILR: how instance probabilities become a bag probability.
    #[arg(long, value_enum, default_value = "noisy-or")]
    pub pooling: Pooling,
    /// MILR: the minimiser (`weka` reproduces Weka 3.6's MILR fit and scores).
    #[arg(long, value_enum, default_value = "lbfgs")]
    pub optimizer: MilrOptimizer,
    /// SVM: the set kernel.
    #[arg(long, value_enum, default_value = "kand")]
    pub kernel: KernelName,
    /// SVM: empirical kernel map.
    #[arg(long, value_enum, default_value = "none")]
    pub map: KernelMap,
    /// SVM: misclassification cost C.
    #[arg(long = "cost", default_value_t = 1e10)]
    pub cost: f64,
    #[command(flatten)]
    pub set_kernel: SetKernelArgs,
}

/// How a set kernel is computed: shared by `mil gram` and the SVM.
#[derive(Args, Debug, Clone)]
pub struct SetKernelArgs {
    /// Box kernels: relative error ε of each estimate.
    #[arg(long, default_value_t = 0.1)]
    pub epsilon: f64,
    /// Box kernels: failure probability δ of each estimate.
    #[arg(long, default_value_t = 0.01)]
    pub delta: f64,
    /// Box kernels: power of ten of the discretisation (0 for integer data); default:
    /// from the data.
    #[arg(long, allow_negative_numbers = true)]
    pub precision: Option<i32>,
    /// Box kernels: which estimator.
    #[arg(long, value_enum, default_value = "fast")]
    pub estimator: Estimator,
    /// NSK: γ of the instance kernel exp(−γ‖x − y‖²) on z-scored features; default
    /// 1 / (number of non-constant features).
    #[arg(long)]
    pub gamma: Option<f64>,
    /// ρ of the subpolynomial map φ(k) = k^ρ before the SVM (the paper: 1/50); `mil
    /// gram` reports the negative eigenvalues of φ(K) too.
    #[arg(long, default_value_t = 0.02)]
    pub rho: f64,
}

/// Projection choice; lists are tuned by inner cross-validation.
#[derive(Args, Debug, Clone)]
pub struct ProjectionArgs {
    /// The projection fitted on the training bags.
    #[arg(long, value_enum, default_value = "none")]
    pub projection: ProjectionName,
    /// Output dimension(s); a list is chosen by inner CV.
    #[arg(long, value_delimiter = ',')]
    pub dim: Vec<usize>,
    /// Trade-off α (B-MIDA / M-MIDA / MI-ALM; MIDR's c₁); a list is chosen by inner CV.
    #[arg(long, value_delimiter = ',')]
    pub alpha: Vec<f64>,
    /// MIDR: weight c₂ of the coupling ‖A − H‖²/2 (the MI-ALM paper: 10 on the
    /// benchmarks, with c₁ = 0.1, the default --alpha; 20 on its synthetic data).
    #[arg(long, default_value_t = crate::projection::midr::BENCHMARK_C2)]
    pub midr_c2: f64,
}

/// `mil cv`.
#[derive(Args, Debug)]
pub struct CvArgs {
    /// A .csv or .arff path, or a built-in data set name.
    pub data: String,
    #[command(flatten)]
    pub classifier: ClassifierArgs,
    #[command(flatten)]
    pub projection: ProjectionArgs,
    /// Number of folds (the number of bags gives leave-one-out).
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
}

/// `mil train`.
#[derive(Args, Debug)]
pub struct TrainArgs {
    /// A .csv or .arff path, or a built-in data set name.
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

/// What the inner CV maximises when it picks among hyper-parameter lists.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SelectName {
    /// Correct predictions on the inner test folds.
    Accuracy,
    /// AUROC of the pooled inner out-of-fold scores (two classes only; the MI-ALM
    /// paper's criterion).
    Auroc,
}

/// The inner CV of `mil cv` and `mil train`.
#[derive(Args, Debug)]
pub struct InnerCvArgs {
    /// Folds of the inner CV that chooses among hyper-parameter lists.
    #[arg(long, default_value_t = 3)]
    pub inner_folds: usize,
    /// What that inner CV maximises.
    #[arg(long, value_enum, default_value_t = SelectName::Accuracy)]
    pub select: SelectName,
}

/// `mil predict`.
#[derive(Args, Debug)]
pub struct PredictArgs {
    /// A model saved by `mil train`.
    pub model: String,
    /// A .csv or .arff path, or a built-in data set name.
    pub data: String,
}

/// `mil project`.
#[derive(Args, Debug)]
pub struct ProjectArgs {
    /// A .csv or .arff path, or a built-in data set name.
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
}

/// `mil gram`.
#[derive(Args, Debug)]
pub struct GramArgs {
    /// A .csv or .arff path, or a built-in data set name.
    pub data: String,
    /// The set kernel.
    #[arg(long, value_enum)]
    pub kernel: KernelName,
    #[command(flatten)]
    pub set_kernel: SetKernelArgs,
    /// Output: .csv (bags × bags) or .npy (float64); without it only the summary.
    #[arg(short, long)]
    pub output: Option<String>,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Keep only bags with at least this many instances.
    #[arg(long)]
    pub min_bag_size: Option<usize>,
    /// Keep only bags with at most this many instances.
    #[arg(long)]
    pub max_bag_size: Option<usize>,
}

/// `mil cluster`.
#[derive(Args, Debug)]
pub struct ClusterArgs {
    /// A .csv or .arff path, or a built-in data set name.
    pub data: String,
    /// The clustering method.
    #[arg(long, value_enum)]
    pub method: ClusterMethod,
    /// Number of clusters.
    #[arg(long)]
    pub k: usize,
    /// Random restarts.
    #[arg(long, default_value_t = 5)]
    pub restarts: usize,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Save the clustering model here.
    #[arg(short, long)]
    pub output: Option<String>,
    /// M³IC: regularisation constant C of problem (6) (paper grid 2^[-4:4]).
    #[arg(long = "cost", default_value_t = 4.0, allow_negative_numbers = true)]
    pub cost: f64,
    /// M³IC: cluster balance l of constraint (4) (paper grid 0, 0.001, 0.01, 0.1, 1..5, 10).
    #[arg(long, default_value_t = 0.01, allow_negative_numbers = true)]
    pub balance: f64,
    /// M³IC: CCCP precision ε₁.
    #[arg(long, default_value_t = 0.01)]
    pub epsilon1: f64,
    /// M³IC: cutting-plane precision ε₂.
    #[arg(long, default_value_t = 0.01)]
    pub epsilon2: f64,
    /// M³IC: cluster the raw features instead of z-scored ones.
    #[arg(long)]
    pub raw: bool,
    /// M³IC: keep the instances' lengths. By default every instance is scaled to unit
    /// length after the z-score, which `mil export` cannot carry to the core.
    #[arg(long)]
    pub no_instance_norm: bool,
}

/// `mil export`.
#[derive(Args, Debug)]
pub struct ExportArgs {
    /// A model saved by `mil train`.
    pub model: String,
    /// Scalar encoding.
    #[arg(long, value_enum, default_value = "f32")]
    pub format: ExportFormat,
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
    #[arg(long, value_enum, default_value = "feedback")]
    pub rounding: ExportRounding,
}

/// `mil inspect`.
#[derive(Args, Debug)]
pub struct InspectArgs {
    /// A compact model written by `mil export`.
    pub model: String,
}

/// The `mil` program: parses the command line, runs it, prints the report (JSON with
/// `--json`) or the error, and returns the exit code.
pub fn main() -> std::process::ExitCode {
    use clap::Parser;
    use std::io::Write;
    let cli = Cli::parse();
    match run(&cli) {
        Ok(report) => {
            let mut out = std::io::stdout().lock();
            let text = if cli.json {
                report.json.to_string()
            } else {
                report.human
            };
            // A closed pipe (e.g. `| head`) is not an error worth a panic.
            let _ = writeln!(out, "{text}");
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("mil: {e}");
            std::process::ExitCode::from(e.exit_code() as u8)
        }
    }
}

/// Runs one parsed command line.
pub fn run(cli: &Cli) -> Result<Report> {
    match &cli.command {
        Command::Info(args) => info::run(args),
        Command::Synth(args) => synth::run(args),
        Command::Cv(args) => cv::run(args, cli.quiet),
        Command::Train(args) => train::run(args),
        Command::Predict(args) => predict::run(args),
        Command::Project(args) => project::run(args),
        Command::Gram(args) => gram::run(args, cli.quiet),
        Command::Cluster(args) => cluster::run(args, cli.quiet),
        Command::Export(args) => export::run(args),
        Command::Inspect(args) => inspect::run(args),
    }
}
