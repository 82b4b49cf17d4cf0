//! The classifier's flags, shared by `mil cv` and `mil train`, and the parameters they describe.

use super::*;
use crate::classifier::attention::{self, AttentionMil};
use crate::classifier::dd::Dd;
use crate::classifier::mi_graph::{GraphNorm, MiGraph};
use crate::classifier::mi_svm::{Heuristic, InstanceKernel, InstanceScaling, MiSvm};
use crate::classifier::mi_vlad::{BagEncoding, MiVlad};
use crate::classifier::mi_wrapper::{Combine, MiWrapper};
use crate::classifier::miles::Miles;
use crate::classifier::simple_mi::{SimpleMi, Summary};
use crate::classifier::smil::{Bias, Smil, Variant};
use crate::classifier::svm::{Gamma, Rho};
use mil_core::keyword::Keyword;

/// Classifier choice and its hyper-parameters. Defaults are the library's
/// (`CitationKnn::default()`, `Milr::default()`, `SetKernelSvm::default()`). A flag of a
/// setting may take a comma-separated list: the inner CV chooses among every
/// combination (jointly with the projection's --dim/--alpha lists).
#[derive(Args, Debug, Clone)]
pub struct ClassifierArgs {
    /// The bag classifier, or `auto`: an inner CV on the training bags of each fit
    /// chooses among SimpleMI, miVLAD, miFV, the SVM with k∧, k∧∨, the NSK and the MI
    /// kernel, Citation-kNN, MILR, mi-Graph, the attention network and MILES at their
    /// defaults (with --tune: each with its default grid), by pooled inner AUROC on two
    /// classes unless --select says otherwise.
    #[arg(long, value_parser = ClassifierChoiceParser, required = true)]
    pub classifier: Option<ClassifierChoice>,
    /// Choose the classifier's settings by inner CV (--inner-folds, --select) among its
    /// default grid, around the flags given (its page in the guide lists the grid).
    #[arg(long)]
    pub tune: bool,
    /// Citation-kNN: number of references R [default: 2].
    #[arg(long, value_delimiter = ',')]
    pub references: Vec<usize>,
    /// Citation-kNN: number of citers C [default: 4].
    #[arg(long, value_delimiter = ',')]
    pub citers: Vec<usize>,
    /// Attribute scaling. Citation-kNN: `weka` reproduces Weka's CitationKNN exactly; `auto`
    /// is the z-score on raw features and none after a projection. SVM: `minmax` scales
    /// every attribute to [0, 1] on the training bags (Weka MISMO's default), `weka` is
    /// what MISMO computes (minmax, the third attribute left out of the MI kernel; its
    /// predictions bag for bag), `none` keeps them, `auto` is minmax for `--kernel mi-rbf`
    /// and none otherwise. mi-SVM/MI-SVM: `auto`/`zscore` z-score the instances, `minmax`
    /// scales them to [0, 1] (Weka's MISVM); sMIL/sbMIL: z-score only.
    #[arg(long, value_parser = keyword::<ScalingFlag>(), default_value_t = ScalingFlag::Knn(CitationKnn::default().scaling))]
    pub scaling: ScalingFlag,
    /// Citation-kNN: rank H of the Hausdorff distance (1 = minimal Hausdorff distance).
    #[arg(long, default_value_t = CitationKnn::default().rank)]
    pub rank: usize,
    /// Citation-kNN: the bag distance (`min`: Wang & Zucker's and Weka's minimal
    /// Hausdorff distance).
    #[arg(long, value_parser = keyword::<Hausdorff>(), default_value_t = CitationKnn::default().hausdorff)]
    pub hausdorff: Hausdorff,
    /// MILR, SimpleMI, MI-Wrapper, miVLAD, miFV: ridge(s) on the standardised coefficients
    /// (Weka's -R; default 1e-6 for MILR as Weka's MILR, 1e-8 for SimpleMI and MI-Wrapper
    /// as Weka's Logistic, 1 for miVLAD and miFV); a list is chosen by inner CV, jointly
    /// with --dim/--alpha lists.
    #[arg(long, value_delimiter = ',', allow_negative_numbers = true)]
    pub ridge: Vec<f64>,
    /// MILR: β of the softmax pooling.
    #[arg(long, default_value_t = Milr::default().beta, allow_negative_numbers = true)]
    pub beta: f64,
    /// MILR: how instance probabilities become a bag probability [default: noisy-or];
    /// attention: how instance embeddings become the bag's (attention, gated, mean or
    /// max) [default: attention].
    #[arg(long, value_parser = keyword::<PoolingFlag>(), value_delimiter = ',')]
    pub pooling: Vec<PoolingFlag>,
    /// attention, gated-attention: width of the encoder's first layer; the second has
    /// half as many units, the attention a quarter [default: 256].
    #[arg(long, value_delimiter = ',')]
    pub hidden: Vec<usize>,
    /// attention, gated-attention: λ of the penalty (λ/2)‖θ‖² on every weight, PyTorch
    /// Adam's weight_decay [default: 0.005].
    #[arg(long, value_delimiter = ',', allow_negative_numbers = true)]
    pub weight_decay: Vec<f64>,
    /// attention, gated-attention: Adam's learning rate [default: 0.0005].
    #[arg(long, allow_negative_numbers = true)]
    pub learning_rate: Option<f64>,
    /// attention, gated-attention: most passes over the training bags [default: 100].
    #[arg(long)]
    pub epochs: Option<usize>,
    /// attention, gated-attention: epochs without a better validation loss before
    /// training stops [default: 10].
    #[arg(long)]
    pub patience: Option<usize>,
    /// attention, gated-attention: share of the training bags held out (stratified, drawn
    /// with --seed) for early stopping; 0 trains every epoch on all bags [default: 0.2].
    #[arg(long, allow_negative_numbers = true)]
    pub validation_fraction: Option<f64>,
    /// attention, gated-attention: dropout probability after each encoder layer while
    /// training [default: 0.5].
    #[arg(long, allow_negative_numbers = true)]
    pub dropout: Option<f64>,
    /// MILR: the minimiser (`weka` reproduces Weka 3.6's MILR fit and scores).
    #[arg(long, value_parser = keyword::<Optimizer>(), default_value_t = Milr::default().optimizer)]
    pub optimizer: Optimizer,
    /// SimpleMI: how a bag becomes one vector [default: mean].
    #[arg(long, value_parser = keyword::<Summary>())]
    pub summary: Option<Summary>,
    /// MI-Wrapper: how instance probabilities become a bag probability [default:
    /// arithmetic].
    #[arg(long, value_parser = keyword::<Combine>())]
    pub combine: Option<Combine>,
    /// miVLAD, miFV: codebook size (k-means centres, or Gaussian mixture components)
    /// [default: 1].
    #[arg(long, value_delimiter = ',')]
    pub codebook: Vec<usize>,
    /// The kernel. SVM: a set kernel (default kand); mi-svm, mi-svm-bag, smil and sbmil:
    /// the instance kernel `linear` (the default) or `rbf` (with --gamma).
    #[arg(long, value_parser = keyword::<KernelFlag>(), value_delimiter = ',')]
    pub kernel: Vec<KernelFlag>,
    /// mi-graph: how the graph kernel divides by the bags' weights: `sum` (the paper's
    /// formula) or `sqrt` (the authors' code) [default: sum]; a list is chosen by inner CV.
    #[arg(long, value_parser = keyword::<GraphNorm>(), value_delimiter = ',')]
    pub graph_norm: Vec<GraphNorm>,
    /// SVM: empirical kernel map [default: none].
    #[arg(long, value_parser = keyword::<EmpiricalMap>(), value_delimiter = ',')]
    pub map: Vec<EmpiricalMap>,
    /// SVM: misclassification cost C; default 10¹⁰ (the GMIL paper's hard margin), or
    /// MISMO's 1 with `--kernel mi-rbf`. mi-svm and mi-svm-bag: C of every instance
    /// (default 1). smil and sbmil: C shared by the points of each kind, as misvm does
    /// (default 1). miles: C = 1/λ, the cost of the bags' errors against the 1-norm of the
    /// weights (default 10). mi-graph: the SVM's C (default 10).
    #[arg(long = "cost", value_delimiter = ',', allow_negative_numbers = true)]
    pub cost: Vec<f64>,
    /// SVM with nsk: γ of the instance kernel exp(−γ‖x − y‖²) on z-scored features
    /// (default 1 / the number of non-constant features); with mi-rbf: the MI kernel's γ
    /// (default 0.01, MISMO's); mi-svm and mi-svm-bag with the rbf kernel: γ (default
    /// 1 / the number of features); miles: γ = 1/σ² of the similarity exp(−γ‖x − y‖²) on
    /// z-scored features (default 1 / the number of non-constant features); mi-graph: γ of
    /// the instance kernel on z-scored features (default 1 / the number of non-constant
    /// features). With mi-rbf also `scaled` (1 / the summed variance of the training
    /// instances after --scaling, fitted fold by fold) or `C*scaled` (C / that sum).
    #[arg(long, value_delimiter = ',', allow_negative_numbers = true)]
    pub gamma: Vec<Gamma>,
    /// miles: the share μ ∈ (0, 1) of --cost on positive bags' errors, 1 − μ on negative
    /// bags' [default: 0.5, the paper's].
    #[arg(long, value_delimiter = ',', allow_negative_numbers = true)]
    pub mu: Vec<f64>,
    /// miles: most candidate prototypes; more training instances are subsampled with
    /// --seed [default: 10000].
    #[arg(long)]
    pub max_prototypes: Option<usize>,
    /// SVM with a box kernel or the NSK: ρ of the subpolynomial map φ(k) = k^ρ before the
    /// SVM, a number in (0, 1] (the paper's: 0.02) or `scaled`, the ρ that puts the median
    /// similarity of two training bags at 0.15 [default: scaled].
    #[arg(long, value_delimiter = ',', allow_negative_numbers = true, value_parser = parse_rho)]
    pub rho: Vec<Rho>,
    #[command(flatten)]
    pub set_kernel: SetKernelArgs,
    /// Weight of each class's bags in the fit: `balanced` (n / (k · n_c) over the
    /// training bags) or `W0,W1,…` in class order. MILR: each bag's likelihood term;
    /// SVM: each bag's cost C (libsvm's class weights); Citation-kNN: each reference's and
    /// citer's vote.
    #[arg(long, value_parser = parse_class_weight, default_value_t = ClassWeight::None)]
    pub class_weight: ClassWeight,
    /// mi-svm and mi-svm-bag: most rounds of relabelling (instances or witnesses)
    /// [default: 50]; em-dd: most E/M rounds from one start [default: 10].
    #[arg(long)]
    pub max_iterations: Option<usize>,
    /// sbmil: the expected fraction η of positive instances in the positive bags, in
    /// [0, 1] (misvm's default 0: as many positive instances as positive bags).
    #[arg(long, default_value_t = Smil::default().eta, allow_negative_numbers = true)]
    pub eta: f64,
    /// smil, sbmil: where the bag score's threshold 0 is put: `training-cut` (the cut of
    /// the training bags' scores of best balanced accuracy) or `support-mean` (misvm's
    /// bias, under which most bags score below 0) [default: training-cut].
    #[arg(long, value_parser = keyword::<Bias>(), default_value_t = Smil::default().bias)]
    pub bias: Bias,
    /// dd, em-dd: most starting points (every instance of a positive bag when there are
    /// at most this many, else a subsample drawn with --seed).
    #[arg(long, default_value_t = Dd::default().max_restarts)]
    pub max_restarts: usize,
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

/// `--classifier`: a classifier by name, or `auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClassifierChoice {
    /// Nested CV over every family's default grid ([`ClassifierGrid::auto`]).
    Auto,
    /// One classifier.
    Kind(ClassifierKind),
}

/// The parser of `auto` and the classifiers' names.
#[derive(Debug, Clone)]
pub struct ClassifierChoiceParser;

impl clap::builder::TypedValueParser for ClassifierChoiceParser {
    type Value = ClassifierChoice;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> std::result::Result<ClassifierChoice, clap::Error> {
        if value == "auto" {
            return Ok(ClassifierChoice::Auto);
        }
        keyword::<ClassifierKind>()
            .parse_ref(cmd, arg, value)
            .map(ClassifierChoice::Kind)
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            std::iter::once(
                clap::builder::PossibleValue::new("auto")
                    .help("choose among every family's default grid by inner CV (nested CV)"),
            )
            .chain(
                ClassifierKind::ALL
                    .iter()
                    .map(|k| clap::builder::PossibleValue::new(k.name()).help(k.help())),
            ),
        ))
    }
}

/// `--class-weight`'s parser: the library's [`ClassWeight`] syntax.
pub(super) fn parse_class_weight(text: &str) -> std::result::Result<ClassWeight, String> {
    text.parse::<ClassWeight>().map_err(|e| match e {
        Error::Parameter { reason, .. } => reason,
        other => other.to_string(),
    })
}

/// `--rho`'s parser: `scaled` or a number.
pub(super) fn parse_rho(text: &str) -> std::result::Result<Rho, String> {
    text.parse::<Rho>().map_err(|e| match e {
        Error::Parameter { reason, .. } => reason,
        other => other.to_string(),
    })
}

/// `--threshold`'s parser: the library's [`Threshold`] syntax.
pub(super) fn parse_threshold(text: &str) -> std::result::Result<Threshold, String> {
    text.parse::<Threshold>().map_err(|e| match e {
        Error::Parameter { reason, .. } => reason,
        other => other.to_string(),
    })
}

/// The classifiers each classifier flag applies to (the flags not listed —
/// `--class-weight`, `--threshold`, `--threshold-metric` — apply to all): a flag given on
/// the command line (even at its default value) is refused with any other classifier.
pub(super) const APPLIES_TO: &[(&str, &[ClassifierKind])] = {
    use ClassifierKind::{
        Attention as A, CitationKnn as K, Dd as D, EmDd as E, GatedAttention as Q, MiFv as F,
        MiGraph as G, MiSvm as P, MiSvmBag as B, MiVlad as V, MiWrapper as W, Miles as X,
        Milr as M, Sbmil as L, SimpleMi as I, Smil as N, Svm as S,
    };
    &[
        ("references", &[K]),
        ("citers", &[K]),
        ("rank", &[K]),
        ("hausdorff", &[K]),
        ("scaling", &[K, S, P, B, N, L]),
        ("ridge", &[M, I, W, V, F]),
        ("beta", &[M]),
        ("pooling", &[M, A, Q]),
        ("optimizer", &[M]),
        ("codebook", &[V, F]),
        ("kernel", &[S, P, B, N, L]),
        ("map", &[S]),
        ("graph-norm", &[G]),
        ("cost", &[S, P, B, N, L, X, G]),
        ("epsilon", &[S]),
        ("delta", &[S]),
        ("precision", &[S]),
        ("estimator", &[S]),
        ("gamma", &[S, P, B, N, L, X, G]),
        ("mu", &[X]),
        ("max-prototypes", &[X]),
        ("rho", &[S]),
        ("max-iterations", &[P, B, E]),
        ("eta", &[L]),
        ("bias", &[N, L]),
        ("max-restarts", &[D, E]),
        ("hidden", &[A, Q]),
        ("weight-decay", &[A, Q]),
        ("learning-rate", &[A, Q]),
        ("epochs", &[A, Q]),
        ("patience", &[A, Q]),
        ("validation-fraction", &[A, Q]),
        ("dropout", &[A, Q]),
    ]
};

impl ClassifierArgs {
    /// Each flag of [`APPLIES_TO`] with its value, to compare with the defaults.
    fn flag_values(&self) -> [(&'static str, String); 33] {
        let k = &self.set_kernel;
        let some = |v: Option<String>| v.unwrap_or_default();
        [
            ("references", list(&self.references)),
            ("citers", list(&self.citers)),
            ("rank", self.rank.to_string()),
            ("hausdorff", self.hausdorff.to_string()),
            ("scaling", self.scaling.to_string()),
            ("ridge", list(&self.ridge)),
            ("beta", self.beta.to_string()),
            ("pooling", list(&self.pooling)),
            ("optimizer", self.optimizer.to_string()),
            ("codebook", list(&self.codebook)),
            ("kernel", list(&self.kernel)),
            ("map", list(&self.map)),
            ("graph-norm", list(&self.graph_norm)),
            ("cost", list(&self.cost)),
            ("epsilon", k.epsilon.to_string()),
            ("delta", k.delta.to_string()),
            ("precision", some(k.precision.map(|v| v.to_string()))),
            ("estimator", k.estimator.to_string()),
            ("gamma", list(&self.gamma)),
            ("mu", list(&self.mu)),
            (
                "max-prototypes",
                some(self.max_prototypes.map(|v| v.to_string())),
            ),
            ("rho", list(&self.rho)),
            (
                "max-iterations",
                some(self.max_iterations.map(|v| v.to_string())),
            ),
            ("eta", self.eta.to_string()),
            ("bias", self.bias.to_string()),
            ("max-restarts", self.max_restarts.to_string()),
            ("hidden", list(&self.hidden)),
            ("weight-decay", list(&self.weight_decay)),
            (
                "learning-rate",
                some(self.learning_rate.map(|v| v.to_string())),
            ),
            ("epochs", some(self.epochs.map(|v| v.to_string()))),
            ("patience", some(self.patience.map(|v| v.to_string()))),
            (
                "validation-fraction",
                some(self.validation_fraction.map(|v| v.to_string())),
            ),
            ("dropout", some(self.dropout.map(|v| v.to_string()))),
        ]
    }

    /// Refuses a flag of [`APPLIES_TO`] set for a classifier it does not apply to
    /// (`None`: the `auto` classifier, which takes none of them).
    fn check_applicable(&self, kind: Option<ClassifierKind>) -> Result<()> {
        #[derive(clap::Parser)]
        struct Defaults {
            #[command(flatten)]
            args: ClassifierArgs,
        }
        let defaults = <Defaults as clap::Parser>::try_parse_from(["mil", "--classifier", "milr"])
            .expect("the defaults parse")
            .args
            .flag_values();
        for ((flag, value), (_, default)) in self.flag_values().iter().zip(&defaults) {
            // Given on the command line, or (arguments built without it) not the default.
            let set = super::given_on_command_line(flag).unwrap_or(value != default);
            let applies = APPLIES_TO
                .iter()
                .find(|(f, _)| f == flag)
                .map_or(&[][..], |(_, kinds)| *kinds);
            let Some(kind) = kind else {
                if set {
                    return Err(Error::parameter(
                        &format!("--{flag}"),
                        value,
                        "--classifier auto chooses every classifier setting itself: name a classifier (with --tune) to set it",
                    ));
                }
                continue;
            };
            if set && !applies.contains(&kind) {
                let to: Vec<String> = applies
                    .iter()
                    .map(|k| format!("--classifier {}", mil_core::keyword::Keyword::name(*k)))
                    .collect();
                return Err(Error::parameter(
                    &format!("--{flag}"),
                    value,
                    format!("applies to {}, not to {}", to.join(" and "), kind),
                ));
            }
        }
        Ok(())
    }

    /// The classifier's candidates the flags describe: every combination of the lists
    /// given, each classifier's default grid around them with `--tune`, or the `auto`
    /// classifier's grid.
    pub fn grid(&self, seed: u64) -> Result<ClassifierGrid> {
        // clap requires --classifier wherever these flags are parsed (not under `merge`).
        let kind = match self.classifier.unwrap_or(ClassifierChoice::Auto) {
            ClassifierChoice::Auto => {
                self.check_applicable(None)?;
                for (flag, given) in [
                    ("--summary", self.summary.is_some()),
                    ("--combine", self.combine.is_some()),
                ] {
                    if given {
                        return Err(Error::parameter(
                            flag,
                            "given",
                            "--classifier auto chooses every classifier setting itself: name a classifier (with --tune) to set it",
                        ));
                    }
                }
                let auto = ClassifierGrid::auto(seed).with_class_weight(self.class_weight);
                return Ok(if self.tune { auto.tuned_all() } else { auto });
            }
            ClassifierChoice::Kind(kind) => kind,
        };
        self.check_applicable(Some(kind))?;
        let mut candidates: Vec<ClassifierParams> = Vec::new();
        for one in self.combinations() {
            let c = one.single(kind, seed)?;
            if !candidates.contains(&c) {
                candidates.push(c);
            }
        }
        let grid = ClassifierGrid::of(candidates)?;
        Ok(if self.tune { grid.tuned_all() } else { grid })
    }

    /// The flags with every list of one value: one per combination of the lists given.
    fn combinations(&self) -> Vec<ClassifierArgs> {
        fn expand<T: Clone>(
            all: Vec<ClassifierArgs>,
            field: impl Fn(&mut ClassifierArgs) -> &mut Vec<T>,
        ) -> Vec<ClassifierArgs> {
            let mut out = Vec::new();
            for mut args in all {
                let values = field(&mut args).clone();
                if values.len() <= 1 {
                    out.push(args);
                    continue;
                }
                for v in values {
                    let mut one = args.clone();
                    *field(&mut one) = vec![v];
                    out.push(one);
                }
            }
            out
        }
        let mut all = vec![self.clone()];
        all = expand(all, |a| &mut a.references);
        all = expand(all, |a| &mut a.citers);
        all = expand(all, |a| &mut a.pooling);
        all = expand(all, |a| &mut a.ridge);
        all = expand(all, |a| &mut a.codebook);
        all = expand(all, |a| &mut a.kernel);
        all = expand(all, |a| &mut a.map);
        all = expand(all, |a| &mut a.graph_norm);
        all = expand(all, |a| &mut a.gamma);
        all = expand(all, |a| &mut a.rho);
        all = expand(all, |a| &mut a.mu);
        all = expand(all, |a| &mut a.hidden);
        all = expand(all, |a| &mut a.weight_decay);
        expand(all, |a| &mut a.cost)
    }

    /// The one classifier of flags whose lists hold at most one value each.
    fn single(&self, kind: ClassifierKind, seed: u64) -> Result<ClassifierParams> {
        let args = self;
        if let (Some(s), false) = (args.summary, kind == ClassifierKind::SimpleMi) {
            return Err(Error::parameter(
                "--summary",
                s,
                "applies to --classifier simple-mi only",
            ));
        }
        if let (Some(c), false) = (args.combine, kind == ClassifierKind::MiWrapper) {
            return Err(Error::parameter(
                "--combine",
                c,
                "applies to --classifier mi-wrapper only",
            ));
        }
        let ridge = args.ridge.first().copied();
        let knn = CitationKnn::default();
        Ok(match kind {
            ClassifierKind::CitationKnn => knn
                .references(first(&args.references, knn.references))
                .citers(first(&args.citers, knn.citers))
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
                .pooling(match args.pooling.first() {
                    None => Milr::default().pooling,
                    Some(PoolingFlag::Instance(p)) => *p,
                    Some(PoolingFlag::Net(p)) => {
                        return Err(Error::parameter(
                            "--pooling",
                            p,
                            "applies to --classifier attention; MILR pools instance probabilities: max, softmax, mean, geometric or noisy-or",
                        ))
                    }
                })
                .ridge(ridge.unwrap_or(Milr::default().ridge))
                .beta(args.beta)
                .optimizer(args.optimizer)
                .into(),
            ClassifierKind::Svm => ClassifierParams::from(self.svm_params(seed)?),
            ClassifierKind::SimpleMi => SimpleMi::default()
                .summary(args.summary.unwrap_or_default())
                .ridge(ridge.unwrap_or(SimpleMi::default().ridge))
                .into(),
            ClassifierKind::MiWrapper => MiWrapper::default()
                .combine(args.combine.unwrap_or_default())
                .ridge(ridge.unwrap_or(MiWrapper::default().ridge))
                .into(),
            ClassifierKind::MiVlad | ClassifierKind::MiFv => MiVlad::default()
                .encoding(if kind == ClassifierKind::MiFv {
                    BagEncoding::Fisher
                } else {
                    BagEncoding::Vlad
                })
                .codebook(first(&args.codebook, MiVlad::default().codebook))
                .ridge(ridge.unwrap_or(MiVlad::default().ridge))
                .seed(seed)
                .into(),
            kind @ (ClassifierKind::MiSvm | ClassifierKind::MiSvmBag) => {
                ClassifierParams::from(self.mi_svm_params(kind)?)
            }
            kind @ (ClassifierKind::Smil | ClassifierKind::Sbmil) => {
                ClassifierParams::from(self.smil_params(kind)?)
            }
            ClassifierKind::Dd => Dd::default()
                .max_restarts(args.max_restarts)
                .seed(seed)
                .into(),
            ClassifierKind::EmDd => Dd::em_dd()
                .max_restarts(args.max_restarts)
                .max_iterations(args.max_iterations.unwrap_or(Dd::em_dd().max_iterations))
                .seed(seed)
                .into(),
            ClassifierKind::Miles => Miles::default()
                .gamma(args.plain_gamma()?)
                .cost(first(&args.cost, Miles::default().cost))
                .mu(first(&args.mu, Miles::default().mu))
                .max_prototypes(
                    args.max_prototypes
                        .unwrap_or(Miles::default().max_prototypes),
                )
                .seed(seed)
                .into(),
            ClassifierKind::MiGraph => MiGraph::default()
                .gamma(args.plain_gamma()?)
                .cost(first(&args.cost, MiGraph::default().cost))
                .norm(first(&args.graph_norm, MiGraph::default().norm))
                .into(),
            kind @ (ClassifierKind::Attention | ClassifierKind::GatedAttention) => {
                ClassifierParams::from(self.attention_params(kind, seed)?)
            }
        }
        .with_class_weight(args.class_weight))
    }

    /// The set kernel `--kernel` names (the SVM's default without it; the first of a
    /// list).
    pub fn set_kernel_name(&self) -> Result<SetKernelName> {
        match self.kernel.first().copied() {
            None => Ok(SetKernel::default().name()),
            Some(KernelFlag::Set(k)) => Ok(k),
            Some(KernelFlag::Instance(k)) => Err(Error::parameter(
                "--kernel",
                k,
                "applies to mi-svm and mi-svm-bag; the SVM takes a set kernel: kand, kandor, kmin, nsk or mi-rbf",
            )),
        }
    }

    /// The instance kernel `--kernel` names for `kind` (mi-svm, mi-svm-bag, smil, sbmil),
    /// whose features are z-scored (`--scaling` auto or zscore; mi-svm and mi-svm-bag
    /// also take minmax, see [`ClassifierArgs::mi_svm_params`]).
    fn instance_kernel(&self, kind: ClassifierKind) -> Result<InstanceKernel> {
        let kernel = match self.kernel.first().copied() {
            None => InstanceKernel::default(),
            Some(KernelFlag::Instance(k)) => k,
            Some(KernelFlag::Set(k)) => {
                return Err(Error::parameter(
                    "--kernel",
                    k,
                    format!("is a set kernel; {kind} takes an instance kernel: linear or rbf"),
                ))
            }
        };
        let minmax_ok = matches!(kind, ClassifierKind::MiSvm | ClassifierKind::MiSvmBag)
            && self.scaling == ScalingFlag::Svm(Preprocessing::MinMax);
        if !minmax_ok
            && !matches!(
                self.scaling,
                ScalingFlag::Knn(Scaling::Auto | Scaling::Zscore)
            )
        {
            return Err(Error::parameter(
                "--scaling",
                self.scaling,
                format!(
                    "{kind} scales the features on the training instances: auto or zscore{}",
                    if matches!(kind, ClassifierKind::MiSvm | ClassifierKind::MiSvmBag) {
                        ", or minmax (Weka's MISVM)"
                    } else {
                        ""
                    }
                ),
            ));
        }
        Ok(kernel)
    }

    /// The attention network (`kind` attention or gated-attention) as the flags describe
    /// it.
    fn attention_params(&self, kind: ClassifierKind, seed: u64) -> Result<AttentionMil> {
        let net = AttentionMil::default();
        let pooling = match (kind, self.pooling.first()) {
            (ClassifierKind::GatedAttention, None | Some(PoolingFlag::Net(attention::Pooling::Gated))) => {
                attention::Pooling::Gated
            }
            (ClassifierKind::GatedAttention, Some(p)) => {
                return Err(Error::parameter(
                    "--pooling",
                    p,
                    "--classifier gated-attention pools by gated attention: use --classifier attention for another pooling",
                ))
            }
            (_, None) => attention::Pooling::Attention,
            (_, Some(PoolingFlag::Net(p))) => *p,
            (_, Some(PoolingFlag::Instance(Pooling::Mean))) => attention::Pooling::Mean,
            (_, Some(PoolingFlag::Instance(Pooling::Max))) => attention::Pooling::Max,
            (_, Some(p)) => {
                return Err(Error::parameter(
                    "--pooling",
                    p,
                    "the attention network pools by attention, gated, mean or max",
                ))
            }
        };
        Ok(net
            .pooling(pooling)
            .hidden(first(&self.hidden, net.hidden))
            .weight_decay(first(&self.weight_decay, net.weight_decay))
            .learning_rate(self.learning_rate.unwrap_or(net.learning_rate))
            .epochs(self.epochs.unwrap_or(net.epochs))
            .patience(self.patience.unwrap_or(net.patience))
            .validation_fraction(self.validation_fraction.unwrap_or(net.validation_fraction))
            .dropout(self.dropout.unwrap_or(net.dropout))
            .seed(seed))
    }

    /// The one γ given as a number (`None`: not given); `scaled` is the MI kernel's
    /// alone, since every other γ already defaults to 1 / the z-scored features' summed
    /// variance.
    fn plain_gamma(&self) -> Result<Option<f64>> {
        match self.gamma.first() {
            None => Ok(None),
            Some(Gamma::Fixed(g)) => Ok(Some(*g)),
            Some(g @ Gamma::Scaled { .. }) => Err(Error::parameter(
                "--gamma",
                g,
                "`scaled` applies to --classifier svm --kernel mi-rbf; the other kernels \
                 default to 1 / the number of non-constant z-scored features, which is \
                 that already",
            )),
        }
    }

    /// sMIL (`kind` smil) or sbMIL (sbmil) as the flags describe it.
    fn smil_params(&self, kind: ClassifierKind) -> Result<Smil> {
        let variant = match kind {
            ClassifierKind::Sbmil => Variant::Balanced,
            _ => Variant::Sparse,
        };
        Ok(Smil::default()
            .variant(variant)
            .kernel(self.instance_kernel(kind)?)
            .gamma(self.plain_gamma()?)
            .cost(first(&self.cost, Smil::default().cost))
            .eta(self.eta)
            .bias(self.bias))
    }

    /// mi-SVM (`kind` mi-svm) or MI-SVM (mi-svm-bag) as the flags describe it.
    fn mi_svm_params(&self, kind: ClassifierKind) -> Result<MiSvm> {
        let kernel = self.instance_kernel(kind)?;
        let heuristic = match kind {
            ClassifierKind::MiSvmBag => Heuristic::Bag,
            _ => Heuristic::Instance,
        };
        let scaling = match self.scaling {
            ScalingFlag::Svm(Preprocessing::MinMax) => InstanceScaling::MinMax,
            _ => InstanceScaling::Zscore,
        };
        Ok(MiSvm::default()
            .heuristic(heuristic)
            .kernel(kernel)
            .scaling(scaling)
            .gamma(self.plain_gamma()?)
            .cost(first(&self.cost, MiSvm::default().cost))
            .max_iterations(
                self.max_iterations
                    .unwrap_or(MiSvm::default().max_iterations),
            ))
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
            SetKernelName::Nsk => SetKernel::Nsk {
                gamma: args.plain_gamma()?,
            },
            SetKernelName::MiRbf => SetKernel::MiRbf {
                gamma: first(&args.gamma, Gamma::Fixed(MI_RBF_GAMMA)),
            },
        };
        let cost = first(
            &args.cost,
            if mi {
                MI_RBF_COST
            } else {
                BagSvmSettings::default().cost
            },
        );
        Ok(SetKernelSvm::default()
            .kernel(kernel)
            .settings(
                BagSvmSettings::default()
                    .rho(first(&args.rho, BagSvmSettings::default().rho))
                    .map(first(&args.map, BagSvmSettings::default().map))
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

/// `--pooling`: MILR's instance poolings ([`Pooling`]) and the attention network's
/// ([`attention::Pooling`]), names taken from those two library enums (`mean` and `max`
/// read as MILR's, which the network maps to its own).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolingFlag {
    /// A pooling of instance probabilities (`--classifier milr`; mean and max also for
    /// the network).
    Instance(Pooling),
    /// A pooling of instance embeddings by attention (`--classifier attention`).
    Net(attention::Pooling),
}

impl mil_core::keyword::Keyword for PoolingFlag {
    const ALL: &'static [Self] = &[
        PoolingFlag::Instance(Pooling::Max),
        PoolingFlag::Instance(Pooling::Softmax),
        PoolingFlag::Instance(Pooling::Mean),
        PoolingFlag::Instance(Pooling::Geometric),
        PoolingFlag::Instance(Pooling::NoisyOr),
        PoolingFlag::Net(attention::Pooling::Attention),
        PoolingFlag::Net(attention::Pooling::Gated),
    ];

    fn name(self) -> &'static str {
        match self {
            PoolingFlag::Instance(p) => p.name(),
            PoolingFlag::Net(p) => p.name(),
        }
    }

    fn help(self) -> &'static str {
        match self {
            PoolingFlag::Instance(Pooling::Max) => {
                "MILR: the largest instance probability; attention: the feature-wise maximum of the instance embeddings"
            }
            PoolingFlag::Instance(Pooling::Mean) => {
                "MILR: the mean instance probability; attention: the mean of the instance embeddings"
            }
            PoolingFlag::Instance(p) => p.help(),
            PoolingFlag::Net(p) => p.help(),
        }
    }
}

impl std::fmt::Display for PoolingFlag {
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

/// The values of a list flag as given (`a/b` for several), or `default`.
fn values<T: std::fmt::Display>(given: &[T], default: impl std::fmt::Display) -> String {
    if given.is_empty() {
        return default.to_string();
    }
    let list: Vec<String> = given.iter().map(T::to_string).collect();
    list.join("/")
}

/// A list flag's values comma-separated, as typed (empty when not given).
fn list<T: std::fmt::Display>(given: &[T]) -> String {
    let list: Vec<String> = given.iter().map(T::to_string).collect();
    list.join(",")
}

/// The first value of a list flag, or `default`.
fn first<T: Copy>(given: &[T], default: T) -> T {
    given.first().copied().unwrap_or(default)
}

impl ClassifierArgs {
    /// A short description of the pipeline for human output, in the names users type;
    /// `kept` is the number of classifier candidates the run compares (fewer than the
    /// grid's when a CPU budget left some out).
    pub(super) fn describe(&self, projection: &ProjectionArgs, kept: usize) -> String {
        let args = self;
        let kind = match args.classifier.unwrap_or(ClassifierChoice::Auto) {
            ClassifierChoice::Auto => {
                let families = ClassifierGrid::auto(1).candidates().len();
                let mut grid = ClassifierGrid::auto(1);
                if self.tune {
                    grid = grid.tuned_all();
                }
                let all = grid.candidates().len();
                return if kept < all {
                    let chosen = if kept > 1 { ", chosen by inner CV" } else { "" };
                    format!(
                        "auto ({kept} of {all} candidates of {families} classifier families{chosen}; {} left out by --max-cpu-minutes)",
                        all - kept
                    )
                } else {
                    format!(
                        "auto ({all} candidates of {families} classifier families, chosen by inner CV)"
                    )
                };
            }
            ClassifierChoice::Kind(kind) => kind,
        };
        let c = match kind {
            ClassifierKind::CitationKnn => format!(
                "citation-knn (R={}, C={}, {} Hausdorff, H={}, scaling {})",
                values(&args.references, CitationKnn::default().references),
                values(&args.citers, CitationKnn::default().citers),
                args.hausdorff,
                args.rank,
                match args.scaling {
                    super::ScalingFlag::Knn(s) =>
                        s.resolve(projection.projection.0.is_some()).to_string(),
                    other => other.to_string(),
                }
            ),
            ClassifierKind::Milr => format!(
                "milr ({} pooling, {} optimizer, ridge {})",
                values(&args.pooling, Milr::default().pooling),
                args.optimizer,
                values(&args.ridge, Milr::default().ridge)
            ),
            ClassifierKind::SimpleMi => format!(
                "simple-mi ({} summary, ridge {})",
                args.summary.unwrap_or_default(),
                values(&args.ridge, SimpleMi::default().ridge)
            ),
            ClassifierKind::MiWrapper => format!(
                "mi-wrapper ({} combination, ridge {})",
                args.combine.unwrap_or_default(),
                values(&args.ridge, MiWrapper::default().ridge)
            ),
            kind @ (ClassifierKind::MiVlad | ClassifierKind::MiFv) => format!(
                "{kind} (codebook {}, ridge {})",
                values(&args.codebook, MiVlad::default().codebook),
                values(&args.ridge, MiVlad::default().ridge)
            ),
            kind @ (ClassifierKind::MiSvm | ClassifierKind::MiSvmBag) => {
                match args.kernel.first() {
                    Some(super::KernelFlag::Instance(
                        crate::classifier::mi_svm::InstanceKernel::Rbf,
                    )) => {
                        format!(
                            "{kind} (rbf kernel, gamma {}, C {})",
                            values(&args.gamma, "1/features"),
                            values(&args.cost, 1.0)
                        )
                    }
                    _ => format!("{kind} (linear kernel, C {})", values(&args.cost, 1.0)),
                }
            }
            kind @ (ClassifierKind::Smil | ClassifierKind::Sbmil) => {
                let kernel = match args.kernel.first() {
                    Some(super::KernelFlag::Instance(InstanceKernel::Rbf)) => {
                        format!("rbf kernel, gamma {}", values(&args.gamma, "1/features"))
                    }
                    _ => "linear kernel".to_string(),
                };
                let eta = if kind == ClassifierKind::Sbmil {
                    format!(", eta {}", args.eta)
                } else {
                    String::new()
                };
                let bias = match args.bias {
                    Bias::TrainingCut => String::new(),
                    other => format!(", {other} bias"),
                };
                format!(
                    "{kind} ({kernel}, C {}{eta}{bias})",
                    values(&args.cost, Smil::default().cost)
                )
            }
            ClassifierKind::Dd => format!("dd (at most {} starts)", args.max_restarts),
            ClassifierKind::Miles => format!(
                "miles (gamma {}, C {}, mu {})",
                values(&args.gamma, "1/features"),
                values(&args.cost, Miles::default().cost),
                values(&args.mu, Miles::default().mu)
            ),
            ClassifierKind::MiGraph => {
                let norm = if args.graph_norm.is_empty() {
                    String::new()
                } else {
                    format!(", {} normalisation", values(&args.graph_norm, ""))
                };
                format!(
                    "mi-graph (gamma {}, C {}{norm})",
                    values(&args.gamma, "1/features"),
                    values(&args.cost, MiGraph::default().cost)
                )
            }
            kind @ (ClassifierKind::Attention | ClassifierKind::GatedAttention) => {
                let net = AttentionMil::default();
                format!(
                    "{kind} ({} pooling, hidden {}, weight decay {}, at most {} epochs)",
                    values(
                        &args.pooling,
                        if kind == ClassifierKind::GatedAttention {
                            "gated"
                        } else {
                            "attention"
                        }
                    ),
                    values(&args.hidden, net.hidden),
                    values(&args.weight_decay, net.weight_decay),
                    args.epochs.unwrap_or(net.epochs)
                )
            }
            ClassifierKind::EmDd => format!(
                "em-dd (at most {} starts, {} E/M rounds)",
                args.max_restarts,
                args.max_iterations.unwrap_or(Dd::em_dd().max_iterations)
            ),
            ClassifierKind::Svm => match args
                .set_kernel_name()
                .unwrap_or(crate::classifier::svm::SetKernel::default().name())
            {
                SetKernelName::MiRbf => format!(
                    "svm (mi-rbf kernel, gamma {}, scaling {})",
                    values(&args.gamma, crate::classifier::svm::MI_RBF_GAMMA),
                    args.scaling
                ),
                k => format!(
                    "svm ({} kernel, {} map)",
                    values(&args.kernel, k),
                    values(&args.map, BagSvmSettings::default().map)
                ),
            },
        };
        let mut c = c;
        if args.tune {
            c.push_str(", settings tuned by inner CV over its default grid");
        }
        if !args.class_weight.is_none() {
            c.push_str(&format!(", class weights {}", args.class_weight));
        }
        match args.threshold {
            Threshold::None => {}
            Threshold::Auto => c.push_str(&format!(
                ", threshold chosen for {} by inner CV",
                args.threshold_metric
            )),
            t => c.push_str(&format!(", threshold {t}")),
        }
        match projection.projection.0 {
            None => c,
            Some(p) => format!("{} (dim {:?}) → {c}", p.name(), projection.dim),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::APPLIES_TO;

    /// The guide's table of which classifier each flag applies to
    /// (`docs/guide/limits.md`) is the one [`APPLIES_TO`] enforces: flags with the same
    /// classifiers share a row, rows in the order of their first flag.
    #[test]
    fn the_guide_lists_the_classifiers_of_every_flag() {
        let mut rows: Vec<(Vec<String>, String)> = Vec::new();
        for (flag, kinds) in APPLIES_TO {
            let to = kinds
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ");
            match rows.iter_mut().find(|(_, t)| *t == to) {
                Some((flags, _)) => flags.push(format!("`--{flag}`")),
                None => rows.push((vec![format!("`--{flag}`")], to)),
            }
        }
        let mut table = String::from("| flags | classifiers |\n|---|---|\n");
        for (flags, to) in &rows {
            table.push_str(&format!("| {} | {to} |\n", flags.join(", ")));
        }
        table.push_str("| `--class-weight`, `--threshold`, `--threshold-metric` | all |\n");
        let guide = include_str!("../../../docs/guide/limits.md");
        assert!(
            guide.contains(&table),
            "docs/guide/limits.md should hold this table:\n{table}"
        );
    }
}
