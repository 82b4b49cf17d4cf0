//! The classifier's flags, shared by `mil cv` and `mil train`, and the parameters they describe.

use super::*;
use crate::classifier::dd::Dd;
use crate::classifier::mi_svm::{Heuristic, InstanceKernel, MiSvm};
use crate::classifier::mi_vlad::{BagEncoding, MiVlad};
use crate::classifier::mi_wrapper::{Combine, MiWrapper};
use crate::classifier::simple_mi::{SimpleMi, Summary};
use mil_core::keyword::Keyword;

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
    /// MILR, SimpleMI, MI-Wrapper, miVLAD, miFV: ridge(s) on the standardised coefficients
    /// (Weka's -R; default 1e-6 for MILR as Weka's MILR, 1e-8 for SimpleMI and MI-Wrapper
    /// as Weka's Logistic, 1 for miVLAD and miFV); a list is chosen by inner CV, jointly
    /// with --dim/--alpha lists.
    #[arg(long, value_delimiter = ',', allow_negative_numbers = true)]
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
    /// SimpleMI: how a bag becomes one vector [default: mean].
    #[arg(long, value_parser = keyword::<Summary>())]
    pub summary: Option<Summary>,
    /// MI-Wrapper: how instance probabilities become a bag probability [default:
    /// arithmetic].
    #[arg(long, value_parser = keyword::<Combine>())]
    pub combine: Option<Combine>,
    /// miVLAD, miFV: codebook size (k-means centres, or Gaussian mixture components).
    #[arg(long, default_value_t = MiVlad::default().codebook)]
    pub codebook: usize,
    /// The kernel. SVM: a set kernel (default kand); mi-svm and mi-svm-bag: the
    /// instance kernel `linear` (the default) or `rbf` (with --gamma).
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
    /// mi-svm and mi-svm-bag: most rounds of relabelling (instances or witnesses)
    /// [default: 50]; em-dd: most E/M rounds from one start [default: 10].
    #[arg(long)]
    pub max_iterations: Option<usize>,
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

/// `--class-weight`'s parser: the library's [`ClassWeight`] syntax.
pub(super) fn parse_class_weight(text: &str) -> std::result::Result<ClassWeight, String> {
    text.parse::<ClassWeight>().map_err(|e| match e {
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
/// `--class-weight`, `--threshold`, `--threshold-metric` — apply to all): a flag set to
/// another value than its default is refused with any other classifier.
pub(super) const APPLIES_TO: &[(&str, &[ClassifierKind])] = {
    use ClassifierKind::{
        CitationKnn as K, Dd as D, EmDd as E, MiFv as F, MiSvm as P, MiSvmBag as B, MiVlad as V,
        MiWrapper as W, Milr as M, SimpleMi as I, Svm as S,
    };
    &[
        ("references", &[K]),
        ("citers", &[K]),
        ("rank", &[K]),
        ("hausdorff", &[K]),
        ("scaling", &[K, S, P, B]),
        ("ridge", &[M, I, W, V, F]),
        ("beta", &[M]),
        ("pooling", &[M]),
        ("optimizer", &[M]),
        ("codebook", &[V, F]),
        ("kernel", &[S, P, B]),
        ("map", &[S]),
        ("cost", &[S, P, B]),
        ("epsilon", &[S]),
        ("delta", &[S]),
        ("precision", &[S]),
        ("estimator", &[S]),
        ("gamma", &[S, P, B]),
        ("rho", &[S]),
        ("max-iterations", &[P, B, E]),
        ("max-restarts", &[D, E]),
    ]
};

impl ClassifierArgs {
    /// Each flag of [`APPLIES_TO`] with its value, to compare with the defaults.
    fn flag_values(&self) -> [(&'static str, String); 21] {
        let k = &self.set_kernel;
        let some = |v: Option<String>| v.unwrap_or_default();
        let ridges: Vec<String> = self.ridge.iter().map(f64::to_string).collect();
        [
            ("references", self.references.to_string()),
            ("citers", self.citers.to_string()),
            ("rank", self.rank.to_string()),
            ("hausdorff", self.hausdorff.to_string()),
            ("scaling", self.scaling.to_string()),
            ("ridge", ridges.join(",")),
            ("beta", self.beta.to_string()),
            ("pooling", self.pooling.to_string()),
            ("optimizer", self.optimizer.to_string()),
            ("codebook", self.codebook.to_string()),
            ("kernel", some(self.kernel.map(|v| v.to_string()))),
            ("map", self.map.to_string()),
            ("cost", some(self.cost.map(|v| v.to_string()))),
            ("epsilon", k.epsilon.to_string()),
            ("delta", k.delta.to_string()),
            ("precision", some(k.precision.map(|v| v.to_string()))),
            ("estimator", k.estimator.to_string()),
            ("gamma", some(k.gamma.map(|v| v.to_string()))),
            ("rho", k.rho.to_string()),
            (
                "max-iterations",
                some(self.max_iterations.map(|v| v.to_string())),
            ),
            ("max-restarts", self.max_restarts.to_string()),
        ]
    }

    /// Refuses a flag of [`APPLIES_TO`] set for a classifier it does not apply to.
    fn check_applicable(&self, kind: ClassifierKind) -> Result<()> {
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
            let applies = APPLIES_TO
                .iter()
                .find(|(f, _)| f == flag)
                .map_or(&[][..], |(_, kinds)| *kinds);
            if value != default && !applies.contains(&kind) {
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

    /// The classifier the flags describe.
    pub fn params(&self, seed: u64) -> Result<ClassifierParams> {
        let args = self;
        self.check_applicable(args.classifier.unwrap_or(ClassifierKind::CitationKnn))?;
        // clap requires --classifier wherever these flags are parsed (not under `merge`).
        let kind = args.classifier.unwrap_or(ClassifierKind::CitationKnn);
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
        // The first of a list; the pipeline's grid tries every one.
        let ridge = args.ridge.first().copied();
        Ok(match kind {
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
                .codebook(args.codebook)
                .ridge(ridge.unwrap_or(MiVlad::default().ridge))
                .seed(seed)
                .into(),
            kind @ (ClassifierKind::MiSvm | ClassifierKind::MiSvmBag) => {
                ClassifierParams::from(self.mi_svm_params(kind)?)
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
            ClassifierKind::MiSvmBag => Heuristic::Bag,
            _ => Heuristic::Instance,
        };
        Ok(MiSvm::default()
            .heuristic(heuristic)
            .kernel(kernel)
            .gamma(self.set_kernel.gamma)
            .cost(self.cost.unwrap_or(MiSvm::default().cost))
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

/// The ridges given (`/`-separated), or the classifier's default.
fn ridges(args: &ClassifierArgs, default: f64) -> String {
    if args.ridge.is_empty() {
        return default.to_string();
    }
    let list: Vec<String> = args.ridge.iter().map(f64::to_string).collect();
    list.join("/")
}

impl ClassifierArgs {
    /// A short description of the pipeline for human output, in the names users type.
    pub(super) fn describe(&self, projection: &ProjectionArgs) -> String {
        let args = self;
        let c = match args.classifier.unwrap_or(ClassifierKind::CitationKnn) {
            ClassifierKind::CitationKnn => format!(
                "citation-knn (R={}, C={}, {} Hausdorff, H={}, scaling {})",
                args.references,
                args.citers,
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
                args.pooling,
                args.optimizer,
                ridges(args, Milr::default().ridge)
            ),
            ClassifierKind::SimpleMi => format!(
                "simple-mi ({} summary, ridge {})",
                args.summary.unwrap_or_default(),
                ridges(args, SimpleMi::default().ridge)
            ),
            ClassifierKind::MiWrapper => format!(
                "mi-wrapper ({} combination, ridge {})",
                args.combine.unwrap_or_default(),
                ridges(args, MiWrapper::default().ridge)
            ),
            kind @ (ClassifierKind::MiVlad | ClassifierKind::MiFv) => format!(
                "{kind} (codebook {}, ridge {})",
                args.codebook,
                ridges(args, MiVlad::default().ridge)
            ),
            kind @ (ClassifierKind::MiSvm | ClassifierKind::MiSvmBag) => match args.kernel {
                Some(super::KernelFlag::Instance(
                    crate::classifier::mi_svm::InstanceKernel::Rbf,
                )) => {
                    format!(
                        "{kind} (rbf kernel, gamma {}, C {})",
                        args.set_kernel
                            .gamma
                            .map_or("1/features".to_string(), |g| g.to_string()),
                        args.cost.unwrap_or(1.0)
                    )
                }
                _ => format!("{kind} (linear kernel, C {})", args.cost.unwrap_or(1.0)),
            },
            ClassifierKind::Dd => format!("dd (at most {} starts)", args.max_restarts),
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
                    args.set_kernel
                        .gamma
                        .unwrap_or(crate::classifier::svm::MI_RBF_GAMMA),
                    args.scaling
                ),
                k => format!("svm ({k} kernel, {} map)", args.map),
            },
        };
        let mut c = c;
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
