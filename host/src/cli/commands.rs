//! The arguments of `mil gram`, `mil cluster`, `mil export` and `mil inspect`.

use super::*;

/// `mil gram`.
#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct GramArgs {
    /// `mil gram merge TILES… -o OUT`: join the tiles of a sharded run.
    #[command(subcommand)]
    pub merge: Option<GramMerge>,
    /// A .csv or .arff path, a directory of .npy bags with its labels.csv, or a built-in data
    /// set name (a file of that name wins).
    #[arg(required = true)]
    pub data: Option<String>,
    /// The set kernel.
    #[arg(long, value_parser = keyword::<SetKernelName>(), required = true)]
    pub kernel: Option<SetKernelName>,
    #[command(flatten)]
    pub set_kernel: SetKernelArgs,
    /// NSK: γ of the instance kernel exp(−γ‖x − y‖²) on z-scored features; default
    /// 1 / (number of non-constant features).
    #[arg(long, allow_negative_numbers = true)]
    pub gamma: Option<f64>,
    /// ρ of the subpolynomial map φ(k) = k^ρ, a number in (0, 1] (the paper: 0.02) or
    /// `scaled` (the median similarity of two bags 0.15), as the SVM's `--rho`; the
    /// summary reports the negative eigenvalues of φ(K) too [default: scaled].
    #[arg(long, default_value = "scaled", allow_negative_numbers = true, value_parser = super::classifier_args::parse_rho)]
    pub rho: crate::classifier::svm::Rho,
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
    /// Refuse to start when the matrices are estimated to need more memory than this (GiB;
    /// default: half the machine's memory)
    #[arg(long, value_parser = output::parse_memory_limit)]
    pub max_memory_gib: Option<f64>,
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
    /// A .csv or .arff path, a directory of .npy bags with its labels.csv, or a built-in data
    /// set name (a file of that name wins).
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
    /// Also draw the clustering as SVG: each bag's mean instance on the first two
    /// principal axes of the bag means, coloured by cluster, its marker by class.
    #[arg(long)]
    pub plot: Option<String>,
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
    #[command(flatten)]
    pub memory: MemoryLimit,
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
