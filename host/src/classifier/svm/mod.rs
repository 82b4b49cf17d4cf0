//! SVM over bags with a set kernel (GMIL paper §8): the box-counting kernels k∧, k∧/∨,
//! k_min estimated by the core, or the normalised set kernel (NSK) baseline, followed by
//! the subpolynomial and empirical kernel maps and SMO ([`bags`] and [`maps`]).
//!
//! Fitting discretises the training bags onto a grid fitted on them (§2), estimates the
//! training Gram matrix, and trains the SVM. Scoring maps new bags onto the same grid and
//! estimates their kernel values against every training bag. The model keeps its raw
//! training bags: refitting the grid on them reproduces the training grid exactly.
//! Two classes as in the paper; more than two by one-vs-rest: machine c separates class c
//! from all others, all k machines trained on the ONE (mapped) Gram matrix of the training
//! bags, and a bag goes to the class of the largest decision value f_c (ties to the lower
//! class). The transductive map needs the test bags at training time and so is available
//! in cross-validation only.

pub mod bags;
pub use bags::{Rho, PAPER_RHO, SCALED_SIMILARITY};
pub mod maps;

use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::imbalance::ClassWeight;
use super::{check_dim, BagModel, BagScores, Classifier};
use crate::data::standardize::ZScore;
use crate::data::Bags;
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::explain::{Explanation, InstanceScore};
use crate::kernel::boxes::{box_gram, BoxGramSpec, GridData};
use crate::kernel::nsk::{
    check_gamma, log_nsk_cross, log_nsk_gram_and_self, log_self_kernels, log_set_kernels,
    upper_runs, Run,
};
use crate::kernel::{accuracy, SetKernelName};
use crate::progress::{Progress, Silent};
use bags::{svm_kernel, BagSvm, BagSvmSettings, EmpiricalMap};
use mil_core::box_kernel::seeds::{bag_hash, pair_seed};
use mil_core::box_kernel::{estimate_polled, scratch_len, BoxKernel, Method, Scratch};

mod deploy;
pub use deploy::*;

mod preprocessing;
pub use preprocessing::*;

mod kernel;
pub use kernel::*;

mod diagnosis;
pub use diagnosis::*;

mod gamma;
pub use gamma::Gamma;

/// The set kernel of the SVM.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "family", rename_all = "kebab-case")]
pub enum SetKernel {
    /// A box-counting kernel estimated to (ε, δ).
    Box {
        /// k∧, k∧/∨ or k_min (k∨ alone is not a similarity the paper uses).
        kernel: BoxKernel,
        /// The fast estimators or the paper's (Tables 3–5).
        estimator: Method,
        /// Relative error ε.
        epsilon: f64,
        /// Failure probability δ.
        delta: f64,
        /// Power of ten of the discretisation; `None` picks it from the data.
        precision: Option<i32>,
    },
    /// The normalised set kernel on z-scored features with exp(−γ‖x − y‖²).
    Nsk {
        /// γ; `None` is 1 / (number of non-constant features).
        gamma: Option<f64>,
    },
    /// The MI kernel of Gärtner et al. (2002), k(X, Y) = Σ_{x∈X, y∈Y} exp(−γ‖x − y‖²), on
    /// the features as [`Preprocessing`] leaves them; used as is (no φ, no empirical map,
    /// no conditioning), so C means what Weka's MISMO means by it.
    MiRbf {
        /// γ (MISMO's default 0.01, on attributes scaled to [0, 1]), or scaled to the
        /// training instances ([`Gamma::Scaled`]).
        gamma: Gamma,
    },
}

/// MISMO's default γ of the MI kernel.
pub const MI_RBF_GAMMA: f64 = 0.01;
/// MISMO's default C.
pub const MI_RBF_COST: f64 = 1.0;

impl SetKernel {
    /// A box kernel with the fast estimator and the paper's accuracy (ε = 0.1, δ = 0.01),
    /// the discretisation chosen from the data.
    pub fn boxes(kernel: BoxKernel) -> Self {
        SetKernel::Box {
            kernel,
            estimator: Method::Fast,
            epsilon: crate::kernel::DEFAULT_EPSILON,
            delta: crate::kernel::DEFAULT_DELTA,
            precision: None,
        }
    }

    /// The kernel's family and name.
    pub fn name(&self) -> SetKernelName {
        match self {
            SetKernel::Box { kernel, .. } => SetKernelName::Box(*kernel),
            SetKernel::Nsk { .. } => SetKernelName::Nsk,
            SetKernel::MiRbf { .. } => SetKernelName::MiRbf,
        }
    }
}

impl Default for SetKernel {
    /// k∧ (the paper's kernel of §8) with [`SetKernel::boxes`]' settings.
    fn default() -> Self {
        SetKernel::boxes(BoxKernel::And)
    }
}

/// Hyper-parameters of the bag SVM.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SetKernelSvm {
    /// The set kernel.
    pub kernel: SetKernel,
    /// ρ, empirical map, C.
    pub settings: BagSvmSettings,
    /// Seed of the kernel estimates.
    pub seed: u64,
    /// Attribute pre-processing fitted on the training bags.
    pub preprocessing: Preprocessing,
    /// Cost C of each class's bags multiplied by its weight (libsvm's class weights).
    pub class_weight: ClassWeight,
}

impl Default for SetKernelSvm {
    /// k∧ with the fast estimator (ε = 0.1, δ = 0.01) and the paper's SVM settings
    /// ([`BagSvmSettings::default`]), seed 1.
    fn default() -> Self {
        SetKernelSvm {
            kernel: SetKernel::default(),
            settings: BagSvmSettings::default(),
            seed: 1,
            preprocessing: Preprocessing::None,
            class_weight: ClassWeight::None,
        }
    }
}

crate::params::setters!(SetKernelSvm {
    kernel: SetKernel,
    settings: BagSvmSettings,
    seed: u64,
    preprocessing: Preprocessing,
    class_weight: ClassWeight,
});

impl SetKernelSvm {
    /// The settings an inner CV tries when asked to tune the SVM (the `auto`
    /// classifier, `mil cv --tune`), the kernel kept: for the box kernels ρ kept and
    /// ρ = 0.001 (a small ρ keeps the normalised Gram matrix away from the identity on
    /// many features), each with C kept and C = 10; for the MI kernel γ ∈ {γ kept, γ/10,
    /// 10γ}, each with C kept and C = 10; the NSK with C kept and C = 10.
    pub fn default_grid(&self) -> Vec<SetKernelSvm> {
        let costs = [self.settings.cost, 10.0];
        let mut grid = Vec::new();
        let mut push = |s: SetKernelSvm| {
            if !grid.contains(&s) {
                grid.push(s);
            }
        };
        for cost in costs {
            let base = self.settings(self.settings.cost(cost));
            match self.kernel {
                SetKernel::Box { .. } => {
                    for rho in [self.settings.rho, Rho::Fixed(0.001)] {
                        push(base.settings(base.settings.rho(rho)));
                    }
                }
                SetKernel::MiRbf { gamma } => {
                    for g in [gamma, gamma.times(0.1), gamma.times(10.0)] {
                        push(base.kernel(SetKernel::MiRbf { gamma: g }));
                    }
                }
                SetKernel::Nsk { .. } => push(base),
            }
        }
        grid
    }
}

impl SetKernelSvm {
    /// Weka MISMO's setting (`MISMO -K MIRBFKernel`): the MI kernel with γ = 0.01, C = 1
    /// (each bag's bound C times the training bags' mean size, as MISMO weighs bags),
    /// attributes scaled to [0, 1] on the training bags. With
    /// `.preprocessing(Preprocessing::Weka)` it gives MISMO's class on every bag of
    /// musk1, elephant and musk2 on Weka's folds (`tests/mi_kernel_cli.rs`).
    ///
    /// ```
    /// use mil_toolkit::classifier::svm::{Preprocessing, SetKernelSvm};
    /// use mil_toolkit::classifier::{BagModel, Classifier};
    ///
    /// let data = mil_toolkit::data::load("musk1")?;
    /// let mismo = SetKernelSvm::mismo().preprocessing(Preprocessing::Weka);
    /// let model = mismo.fit(&data)?;
    /// let labels = model.scores(&data)?.labels();
    /// assert_eq!(labels.len(), 92);
    /// // Weka's MISMO, trained on all of musk1, keeps 50 support bags; so does this.
    /// assert_eq!(model.svm.coefficients.iter().filter(|&&c| c != 0.0).count(), 50);
    /// # Ok::<(), mil_toolkit::error::Error>(())
    /// ```
    pub fn mismo() -> Self {
        SetKernelSvm {
            kernel: SetKernel::MiRbf {
                gamma: Gamma::Fixed(MI_RBF_GAMMA),
            },
            settings: BagSvmSettings::default()
                .cost(MI_RBF_COST)
                .rho(Rho::Fixed(1.0)),
            seed: 1,
            preprocessing: Preprocessing::MinMax,
            class_weight: ClassWeight::None,
        }
    }

    /// The SVM settings actually used: the MI kernel is used as is (ρ = 1).
    fn effective_settings(&self) -> BagSvmSettings {
        match self.kernel {
            SetKernel::MiRbf { .. } => self.settings.rho(Rho::Fixed(1.0)),
            _ => self.settings,
        }
    }

    /// The kernel matrix for SMO and the settings to train with: [`svm_kernel`]'s
    /// conditioning divides the kernel by a constant s; the dual with kernel K/s and bound
    /// C' is the dual with K and bound C'/s (α = s·β). For the MI kernel C means MISMO's C:
    /// Weka's MISMO turns the bags into instances weighted (N/B)/|X| each (N instances in
    /// B training bags) and back into bags of weight N/B, and its SMO bounds each αᵢ by
    /// C·weightᵢ; so SMO gets C' = C·(N/B)·s. `mean_bag_size` is N/B.
    fn smo_kernel(
        &self,
        log_gram: &[f64],
        n: usize,
        train: &[usize],
        mean_bag_size: f64,
    ) -> Result<(Vec<f64>, f64, BagSvmSettings)> {
        let (k, scale, settings) = svm_kernel(log_gram, n, train, &self.effective_settings())?;
        let smo = match self.kernel {
            SetKernel::MiRbf { .. } => settings.cost(settings.cost * mean_bag_size * scale),
            _ => settings,
        };
        Ok((k, scale, smo))
    }

    /// Whether the kernel the SVM sees on the bags `train` of `log_gram` (ln k over `n`
    /// bags, before any empirical map) is degenerate — numerically the identity or a constant — with the setting
    /// that fixes it; `None` when it is not.
    ///
    /// ```
    /// use mil_toolkit::classifier::svm::bags::BagSvmSettings;
    /// use mil_toolkit::classifier::svm::{GramDiagnosis, SetKernelSvm};
    ///
    /// // Three bags whose box counts differ by 10^300 from pair to pair: at the paper's
    /// // ρ = 1/50 the normalised kernel is the identity; the scaled ρ (the default) fixes it.
    /// let log_gram = [700.0, 10.0, 10.0, 10.0, 700.0, 10.0, 10.0, 10.0, 700.0];
    /// let paper = SetKernelSvm::default().settings(BagSvmSettings::paper());
    /// let (diagnosis, remedy) = paper.diagnose(&log_gram, 3, &[0, 1, 2])?.expect("degenerate");
    /// assert!(matches!(diagnosis, GramDiagnosis::Identity { .. }));
    /// assert!(remedy.starts_with("use rho 2.749e-3"), "{remedy}");
    /// assert!(SetKernelSvm::default().diagnose(&log_gram, 3, &[0, 1, 2])?.is_none());
    /// # Ok::<(), mil_toolkit::error::Error>(())
    /// ```
    pub fn diagnose(
        &self,
        log_gram: &[f64],
        n: usize,
        train: &[usize],
    ) -> Result<Option<(GramDiagnosis, String)>> {
        // The empirical map of an identity (or constant) kernel is one too, so φ(k)
        // alone decides, in O(n²) where the map costs O(n³).
        let settings = self.effective_settings().map(EmpiricalMap::None);
        let (k, _, settings) = svm_kernel(log_gram, n, train, &settings)?;
        Ok(GramDiagnosis::of(&k, n, train).map(|d| {
            let remedy = d.remedy(&self.kernel, &settings, log_gram, n, train);
            (d, remedy)
        }))
    }

    /// The measured estimate of the CPU time of this kernel's Gram matrix over all bags
    /// of `data` ([`crate::kernel::boxes::box_gram_cost`]), for the box kernels; `None`
    /// for the NSK and the MI kernel, whose cost the memory estimate's operation count
    /// states ([`footprint`]).
    pub fn gram_cost(&self, data: &Dataset) -> Result<Option<crate::kernel::boxes::GramCost>> {
        match FittedKernel::fit(&self.kernel, data, self.seed)? {
            FittedKernel::Box { grid, spec } => {
                Ok(Some(crate::kernel::boxes::box_gram_cost(&grid, spec)?))
            }
            FittedKernel::Nsk { .. } | FittedKernel::MiRbf { .. } => Ok(None),
        }
    }

    /// Whether cross-validation may share one Gram matrix over all bags: not when a
    /// pre-processing or a scaled γ is fitted on the training bags (it would see the
    /// test bags).
    pub fn shares_gram(&self) -> bool {
        self.preprocessing == Preprocessing::None
            && !matches!(
                self.kernel,
                SetKernel::MiRbf {
                    gamma: Gamma::Scaled { .. }
                }
            )
    }
}

impl SetKernelSvm {
    /// Checks the parameters that do not depend on the data: ε and δ in (0, 1), γ
    /// positive, ρ in (0, 1], C positive.
    pub fn check(&self) -> Result<()> {
        match self.kernel {
            SetKernel::Box { epsilon, delta, .. } => {
                accuracy(epsilon, delta)?;
            }
            SetKernel::Nsk { gamma: Some(g) } if !(g > 0.0 && g.is_finite()) => {
                return Err(Error::parameter("gamma", g, "must be positive and finite"));
            }
            SetKernel::MiRbf { gamma } => {
                gamma.check()?;
                if self.settings.map != EmpiricalMap::None {
                    return Err(Error::parameter(
                        "map",
                        self.settings.map,
                        "the MI kernel is used as is: use the map none",
                    ));
                }
            }
            SetKernel::Nsk { .. } => {}
        }
        if self.preprocessing == Preprocessing::Weka
            && !matches!(self.kernel, SetKernel::MiRbf { .. })
        {
            return Err(Error::parameter(
                "scaling",
                "weka",
                "reproduces Weka's MISMO and applies to the MI kernel only: use the kernel mi-rbf, or the scaling minmax",
            ));
        }
        self.class_weight.check()?;
        crate::classifier::svm::bags::check_settings(&self.settings)
    }
}

/// A fitted bag SVM.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SvmModel {
    /// The set kernel.
    pub kernel: SetKernel,
    /// Seed of the kernel estimates.
    pub seed: u64,
    /// The training bags (raw features), from which the grid or z-score is refitted.
    pub train_features: Vec<f64>,
    /// Bag offsets of the training bags.
    pub train_starts: Vec<usize>,
    /// Feature dimension.
    pub dim: usize,
    /// ln k between training bags, row-major m × m (needed by the empirical map).
    pub train_log_gram: Vec<f64>,
    /// NSK: the training bags' unnormalised ln k_set(X, X), which normalise their kernel
    /// values with new bags; empty for box kernels (and in models saved before it was
    /// kept, which recompute it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub train_log_self: Vec<f64>,
    /// The trained SVM over training bags 0..m: class 1 against class 0 when binary;
    /// class 0 against the rest when there are more classes.
    pub svm: BagSvm,
    /// More than two classes: the machines of classes 1..k against the rest (one-vs-rest,
    /// on the same kernel as `svm`); empty when binary.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rest: Vec<BagSvm>,
    /// The min–max map fitted on the training bags ([`Preprocessing::MinMax`]); the stored
    /// training features are already mapped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minmax: Option<MinMax>,
}

/// The machines to train on labels `labels` of `n_classes` classes, as one flag per bag
/// each: class 1 against 0 when binary, else class c against the rest for every c.
pub(super) fn machine_targets(labels: &[usize], n_classes: usize) -> Vec<Vec<bool>> {
    if n_classes == 2 {
        vec![labels.iter().map(|&l| l == 1).collect()]
    } else {
        (0..n_classes)
            .map(|c| labels.iter().map(|&l| l == c).collect())
            .collect()
    }
}

/// Trains one machine per target on the same kernel (one Gram matrix for all).
/// `weights`: each bag's cost factor (indexed like the kernel), `None` for C alike.
pub(super) fn fit_machines(
    kernel: &[f64],
    n: usize,
    train: &[usize],
    targets: &[Vec<bool>],
    weights: Option<&[f64]>,
    settings: BagSvmSettings,
    scale: f64,
) -> Result<Vec<BagSvm>> {
    targets
        .par_iter()
        .map(|positive| BagSvm::fit(kernel, n, train, positive, weights, settings, scale))
        .collect()
}

/// Each bag's cost factor for labels `labels` (all bags of the kernel) from the class
/// weights resolved on the training bags `train`; `None` without class weights.
fn cost_factors(
    class_weight: ClassWeight,
    labels: &[usize],
    train: &[usize],
    n_classes: usize,
) -> Result<Option<Vec<f64>>> {
    if class_weight.is_none() {
        return Ok(None);
    }
    let train_labels: Vec<usize> = train.iter().map(|&b| labels[b]).collect();
    let w = class_weight.resolve(&train_labels, n_classes)?;
    Ok(Some(labels.iter().map(|&l| w[l]).collect()))
}

impl Classifier for SetKernelSvm {
    type Model = SvmModel;

    fn fit<'a>(&self, train: impl Into<Bags<'a>>) -> Result<SvmModel> {
        let train = train.into();
        let (data, train) = (train.dataset(), &*train.indices());
        data.training_labels(train, 2)?;
        let labels_all = data.require_labels(2)?;
        let n_classes = data.n_classes();
        if self.settings.map == EmpiricalMap::Transductive {
            return Err(Error::parameter(
                "map",
                "emp-trans",
                "the transductive map needs the test bags while training: use it with `mil cv`",
            ));
        }
        let mut train_set = data.copy_bags(train);
        let minmax = self.preprocessing.fit(&train_set);
        if let Some(map) = &minmax {
            train_set = map.apply(&train_set)?;
        }
        let kernel = FittedKernel::fit(&self.kernel, &train_set, self.seed)?;
        let (log_gram, train_log_self) = kernel.train_gram(&train_set)?;
        let m = train.len();
        let local: Vec<usize> = (0..m).collect();
        let labels: Vec<usize> = train.iter().map(|&b| labels_all[b]).collect();
        let mean_bag_size = train_set.n_instances() as f64 / m as f64;
        let (k, scale, settings) = self.smo_kernel(&log_gram, m, &local, mean_bag_size)?;
        let targets = machine_targets(&labels, n_classes);
        let factors = cost_factors(self.class_weight, &labels, &local, n_classes)?;
        let mut machines =
            fit_machines(&k, m, &local, &targets, factors.as_deref(), settings, scale)?.into_iter();
        let svm = machines
            .next()
            .ok_or_else(|| Error::data(data.name(), "no classes"))?;
        Ok(SvmModel {
            kernel: kernel.setting(self.kernel),
            seed: self.seed,
            train_features: train_set.features().to_vec(),
            train_starts: train_set.bag_starts().to_vec(),
            dim: data.dim(),
            train_log_gram: log_gram,
            train_log_self,
            svm,
            rest: machines.collect(),
            minmax,
        })
    }
}

impl SetKernelSvm {
    /// ln k over all bags of `data`, with the discretisation (or z-score) fitted on all
    /// of them: what cross-validation computes once and shares across folds. The kernel
    /// uses no labels, so this leaks no test label into training; it does fit the grid on
    /// every bag, where [`Classifier::fit`] fits it on the training bags only.
    pub fn full_log_gram(&self, data: &Dataset, progress: &dyn Progress) -> Result<Vec<f64>> {
        let mapped;
        let data = match self.preprocessing {
            Preprocessing::None => data,
            p @ (Preprocessing::MinMax | Preprocessing::Weka) => {
                mapped = p.fit(data).expect("a map").apply(data)?;
                &mapped
            }
        };
        let kernel = FittedKernel::fit(&self.kernel, data, self.seed)?;
        match &kernel {
            FittedKernel::Box { grid, spec } => Ok(box_gram(grid, *spec, progress)?.ln),
            FittedKernel::Nsk { .. } | FittedKernel::MiRbf { .. } => Ok(kernel.train_gram(data)?.0),
        }
    }

    /// Decision values of the bags `test` from a Gram matrix over all bags of `data`
    /// computed once (cross-validation shares it across folds): trains on `train`, with
    /// `labels` of `n_classes` classes (one-vs-rest beyond two, every machine on the same
    /// kernel).
    pub fn scores_from_gram(
        &self,
        data: &Dataset,
        log_gram: &[f64],
        labels: &[usize],
        n_classes: usize,
        train: &[usize],
        test: &[usize],
    ) -> Result<BagScores> {
        let n = data.n_bags();
        let instances: usize = train.iter().map(|&b| data.bag(b).len()).sum();
        let mean_bag_size = instances as f64 / train.len().max(1) as f64;
        let (k, scale, settings) = self.smo_kernel(log_gram, n, train, mean_bag_size)?;
        let targets = machine_targets(labels, n_classes);
        let factors = cost_factors(self.class_weight, labels, train, n_classes)?;
        let machines = fit_machines(&k, n, train, &targets, factors.as_deref(), settings, scale)?;
        Ok(decision_scores(
            n_classes,
            test.iter()
                .flat_map(|&b| {
                    machines
                        .iter()
                        .map(|m| m.decision(&k, n, b))
                        .collect::<Vec<_>>()
                })
                .collect(),
        ))
    }
}

/// Class scores from decision values (one per machine per bag, bag-major). Binary: class
/// 1 when f > 0 (ties to the negative class, as every classifier here), the decision value
/// ranking bags for AUROC. One-vs-rest: the k decision values themselves, so the largest
/// f_c wins (ties to the lower class).
pub(super) fn decision_scores(n_classes: usize, values: Vec<f64>) -> BagScores {
    if n_classes == 2 {
        BagScores::new(2, values.into_iter().flat_map(|f| [0.0, f]).collect())
    } else {
        BagScores::new(n_classes, values)
    }
}

impl SvmModel {
    fn train_set(&self) -> Result<Dataset> {
        let m = self.train_starts.len().saturating_sub(1);
        Dataset::new(
            "training bags",
            self.dim,
            self.train_features.clone(),
            self.train_starts.clone(),
            (0..m).map(|b| b.to_string()).collect(),
            None,
            vec![],
        )
    }

    /// Checks the parts agree (used when a saved model is read).
    pub fn validate(&self) -> Result<()> {
        let m = self.train_starts.len().saturating_sub(1);
        if self
            .machines()
            .any(|s| s.train.len() != m || s.coefficients.len() != m)
            || m < 2
        {
            return Err(Error::Model(
                "svm: training bags and coefficients disagree".into(),
            ));
        }
        if self.rest.len() == 1 || self.rest.iter().any(|s| s.settings != self.svm.settings) {
            return Err(Error::Model(
                "svm: one-vs-rest machines need three or more classes and one setting".into(),
            ));
        }
        if self.train_log_gram.len() != m * m {
            return Err(Error::Model(
                "svm: training Gram matrix has the wrong size".into(),
            ));
        }
        if !(self.train_log_self.is_empty() || self.train_log_self.len() == m)
            || self.train_log_self.iter().any(|v| v.is_nan())
        {
            return Err(Error::Model(
                "svm: training self-kernels do not match the training bags".into(),
            ));
        }
        if self.train_starts.last().copied().unwrap_or(0) * self.dim != self.train_features.len() {
            return Err(Error::Model(
                "svm: training features do not match the bag offsets".into(),
            ));
        }
        if let SetKernel::MiRbf { gamma } = self.kernel {
            Self::fitted_gamma(gamma)?;
        }
        // The same checks as at training, then every number the decision reads.
        SetKernelSvm {
            kernel: self.kernel,
            settings: self.svm.settings,
            seed: self.seed,
            preprocessing: Preprocessing::None,
            class_weight: ClassWeight::None,
        }
        .check()
        .map_err(|e| Error::Model(format!("svm: {e}")))?;
        let finite = |v: &[f64]| v.iter().all(|x| x.is_finite());
        if let Some(m) = &self.minmax {
            if m.min.len() != self.dim
                || m.range.len() != self.dim
                || !finite(&m.min)
                || !finite(&m.range)
            {
                return Err(Error::Model(
                    "svm: min-max map of the wrong dimension or not finite".into(),
                ));
            }
        }
        if !finite(&self.train_features)
            || self.machines().any(|s| {
                !finite(&s.coefficients)
                    || !s.bias.is_finite()
                    || !s.kernel_scale.is_finite()
                    || s.kernel_scale <= 0.0
            })
            || self.train_log_gram.iter().any(|v| v.is_nan())
        {
            return Err(Error::Model(
                "svm: a feature, coefficient, bias or kernel scale is not finite".into(),
            ));
        }
        Ok(())
    }
}

impl SvmModel {
    /// [`SetKernelSvm::diagnose`] on the training bags' Gram matrix as the model was
    /// trained on it.
    pub fn gram_diagnosis(&self) -> Result<Option<(GramDiagnosis, String)>> {
        let m = self.train_starts.len().saturating_sub(1);
        let svm = SetKernelSvm {
            kernel: self.kernel,
            settings: self.svm.settings,
            ..SetKernelSvm::default()
        };
        svm.diagnose(&self.train_log_gram, m, &(0..m).collect::<Vec<_>>())
    }

    /// The MI kernel's γ as fitted (a fitted model holds the resolved value).
    fn fitted_gamma(gamma: Gamma) -> Result<f64> {
        gamma
            .fixed()
            .ok_or_else(|| Error::Model("svm: the MI kernel's gamma is not resolved".into()))
    }

    /// The trained machines: `svm`, then the other one-vs-rest machines.
    pub fn machines(&self) -> impl Iterator<Item = &BagSvm> {
        std::iter::once(&self.svm).chain(&self.rest)
    }
}

impl BagModel for SvmModel {
    fn n_classes(&self) -> usize {
        if self.rest.is_empty() {
            2
        } else {
            1 + self.rest.len()
        }
    }

    fn input_dim(&self) -> usize {
        self.dim
    }

    fn scores<'a>(&self, bags: impl Into<Bags<'a>>) -> Result<BagScores> {
        let bags = bags.into();
        let (data, bags) = (bags.dataset(), &*bags.indices());
        check_dim(data, self.dim)?;
        let train = self.train_set()?;
        let kernel = FittedKernel::fit(&self.kernel, &train, self.seed)?;
        let mut wanted = data.copy_bags(bags);
        if let Some(map) = &self.minmax {
            wanted = map.apply(&wanted)?;
        }
        let m = train.n_bags();
        // Plain φ needs the kernel to the support bags (of any machine) only; the
        // empirical map to all.
        let cols: Vec<usize> = match self.svm.settings.map {
            EmpiricalMap::None => (0..m)
                .filter(|&t| self.machines().any(|svm| svm.coefficients[t] != 0.0))
                .collect(),
            _ => (0..m).collect(),
        };
        let cross = kernel.cross(&wanted, &train, &cols, &self.train_log_self)?;
        let w = cols.len();
        let rho = self.svm.rho();
        let phi = |l: f64| crate::classifier::svm::maps::subpolynomial_from_log(l, rho);
        let machines: Vec<&BagSvm> = self.machines().collect();
        let mut values = Vec::with_capacity(wanted.n_bags() * machines.len());
        for x in 0..wanted.n_bags() {
            let row = &cross[x * w..(x + 1) * w];
            // The kernel to every column bag, shared by all machines.
            let to: Vec<f64> = match self.svm.settings.map {
                EmpiricalMap::None => row.iter().map(|&l| phi(l)).collect(),
                // k_emp(x, t) = Σ_r φ(k(x, r)) φ(k(t, r)) over the training bags r.
                _ => (0..m)
                    .map(|t| {
                        (0..m)
                            .map(|r| phi(row[r]) * phi(self.train_log_gram[t * m + r]))
                            .sum()
                    })
                    .collect(),
            };
            values.extend(machines.iter().map(|svm| {
                cols.iter()
                    .zip(&to)
                    .map(|(&t, k)| svm.coefficients[t] * k / svm.kernel_scale)
                    .sum::<f64>()
                    + svm.bias
            }));
        }
        Ok(decision_scores(self.n_classes(), values))
    }

    /// The MI kernel is a sum over instances, so f(X) = Σ_{x∈X} g(x) + b with
    /// g(x) = Σ_t α_t y_t Σ_{y∈Y_t} exp(−γ‖x − y‖²) / s (s the kernel's conditioning
    /// constant): each instance's contribution, for the machine of the predicted class
    /// (the only one when binary); the witness is the largest. The box-counting and
    /// normalised set kernels define no per-instance score ([`Explanation::none`]).
    fn explain<'a>(&self, bags: impl Into<Bags<'a>>) -> Result<Vec<Explanation>> {
        let bags = bags.into();
        let (data, bags) = (bags.dataset(), &*bags.indices());
        check_dim(data, self.dim)?;
        let SetKernel::MiRbf { gamma } = self.kernel else {
            return Ok(bags.iter().map(|_| Explanation::none()).collect());
        };
        let gamma = Self::fitted_gamma(gamma)?;
        let labels = self.scores(data.select(bags))?.labels();
        let train = self.train_set()?;
        let mut wanted = data.copy_bags(bags);
        if let Some(map) = &self.minmax {
            wanted = map.apply(&wanted)?;
        }
        Ok((0..wanted.n_bags())
            .map(|x| {
                let machine = if self.rest.is_empty() {
                    &self.svm
                } else {
                    self.machines().nth(labels[x]).unwrap_or(&self.svm)
                };
                let g = wanted
                    .bag(x)
                    .instances()
                    .map(|xi| {
                        (0..train.n_bags())
                            .filter(|&t| machine.coefficients[t] != 0.0)
                            .map(|t| {
                                let k: f64 = train
                                    .bag(t)
                                    .instances()
                                    .map(|y| {
                                        (-gamma * crate::distance::squared_euclidean(xi, y)).exp()
                                    })
                                    .sum();
                                machine.coefficients[t] * k / machine.kernel_scale
                            })
                            .sum()
                    })
                    .collect();
                Explanation::from_scores(InstanceScore::Contribution, g)
            })
            .collect())
    }
}

/// Memory and work of a set-kernel SVM (box kernels, NSK, the MI kernel) on data of this
/// shape: the Gram matrix over all bags, its mapped copy, a fold's training block and
/// the solver's kernel rows (four n_bags × n_bags matrices, as `mil gram` counts them);
/// the work is one kernel term per pair of instances and the solver's n³.
pub fn footprint(shape: crate::params::Shape) -> crate::params::Estimate {
    let n = shape.bags as f64;
    let pairs = shape.instances as f64 * shape.instances as f64;
    crate::params::Estimate::values(
        4.0 * n * n + 2.0 * shape.values(),
        pairs * shape.dim as f64 + n * n * n,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two separable groups of integer bags in 2-D.
    fn toy() -> Dataset {
        let mut features = Vec::new();
        let mut starts = vec![0];
        let mut labels = Vec::new();
        for b in 0..12 {
            let positive = b % 2 == 1;
            let base = if positive { 8.0 } else { 1.0 };
            for i in 0..3 {
                features.extend([base + ((b + i) % 3) as f64, base + (i % 2) as f64]);
            }
            starts.push(features.len() / 2);
            labels.push(usize::from(positive));
        }
        Dataset::new(
            "toy",
            2,
            features,
            starts,
            (0..12).map(|b| b.to_string()).collect(),
            Some(labels),
            vec!["0".into(), "1".into()],
        )
        .unwrap()
    }

    fn svm(kernel: SetKernel, map: EmpiricalMap) -> SetKernelSvm {
        SetKernelSvm {
            kernel,
            settings: BagSvmSettings {
                rho: Rho::Fixed(0.5),
                map,
                cost: 1e10,
            },
            seed: 3,
            class_weight: ClassWeight::None,
            preprocessing: Preprocessing::None,
        }
    }

    #[test]
    fn model_and_shared_gram_paths_both_separate_the_toy_set() {
        // Cross-validation scores from a shared Gram matrix; a saved model re-estimates
        // the kernel to its training bags. Both must classify the separable toy set.
        let data = toy();
        let train: Vec<usize> = (0..12).collect();
        let kernel = SetKernel::Box {
            kernel: BoxKernel::And,
            estimator: Method::Fast,
            epsilon: 0.1,
            delta: 0.05,
            precision: Some(0),
        };
        for map in [EmpiricalMap::None, EmpiricalMap::Training] {
            let spec = svm(kernel, map);
            let model = spec.fit(data.select(&train)).unwrap();
            let shared = spec
                .scores_from_gram(
                    &data,
                    &model.train_log_gram,
                    data.labels().unwrap(),
                    2,
                    &train,
                    &train,
                )
                .unwrap();
            assert_eq!(shared.labels(), data.labels().unwrap(), "{map:?}");
            let scores = model.scores(data.select(&train)).unwrap();
            assert_eq!(scores.labels(), data.labels().unwrap(), "{map:?}");
        }
    }

    /// Three separable groups of 2-D bags (class c near (6c + 1, 6c + 1)).
    fn three_class_toy() -> Dataset {
        let mut features = Vec::new();
        let mut starts = vec![0];
        let mut labels = Vec::new();
        for b in 0..18 {
            let class = b % 3;
            let base = 1.0 + 6.0 * class as f64;
            for i in 0..3 {
                features.extend([base + ((b + i) % 3) as f64, base + (i % 2) as f64]);
            }
            starts.push(features.len() / 2);
            labels.push(class);
        }
        Dataset::new(
            "toy3",
            2,
            features,
            starts,
            (0..18).map(|b| b.to_string()).collect(),
            Some(labels),
            vec!["a".into(), "b".into(), "c".into()],
        )
        .unwrap()
    }

    #[test]
    fn one_vs_rest_shares_one_gram_and_equals_separate_binary_machines() {
        // Each one-vs-rest machine must be exactly the binary SVM trained on "class c
        // against the rest" with the same kernel; the model and the shared-Gram paths agree,
        // and every class is predicted on the separable set.
        let data = three_class_toy();
        let train: Vec<usize> = (0..18).filter(|b| b % 6 != 5).collect();
        let spec = svm(SetKernel::Nsk { gamma: Some(0.5) }, EmpiricalMap::None);
        let model = spec.fit(data.select(&train)).unwrap();
        assert_eq!(model.n_classes(), 3);
        assert_eq!(model.rest.len(), 2);
        let labels = data.labels().unwrap();
        let all: Vec<usize> = (0..18).collect();
        let scores = model.scores(&data).unwrap();
        assert_eq!(scores.labels(), labels);
        // Machine c against a binary SVM fitted on relabelled data.
        for c in 0..3 {
            let relabelled = Dataset::new(
                "toy3",
                2,
                data.features().to_vec(),
                data.bag_starts().to_vec(),
                data.bag_ids().to_vec(),
                Some(labels.iter().map(|&l| usize::from(l == c)).collect()),
                vec!["rest".into(), "c".into()],
            )
            .unwrap();
            let binary = spec.fit(relabelled.select(&train)).unwrap();
            let machine = model.machines().nth(c).unwrap();
            assert_eq!(&binary.svm, machine, "class {c}");
            let b = binary.scores(&relabelled).unwrap();
            for x in 0..18 {
                assert!((b.row(x)[1] - scores.row(x)[c]).abs() < 1e-12);
            }
        }
        let gram = spec.full_log_gram(&data, &Silent).unwrap();
        let shared = spec
            .scores_from_gram(&data, &gram, labels, 3, &train, &all)
            .unwrap();
        assert_eq!(shared.labels(), labels);
        // The core's SVM head is binary: export refuses (a data error, exit status 2).
        assert!(matches!(model.deployment(), Err(Error::Data { .. })));
    }

    #[test]
    fn mi_kernel_matches_its_definition_and_explains_additively() {
        // ln k(X, Y) against the double sum by brute force; the MISMO setting separates the
        // toy set; the instance contributions plus b give the decision value.
        let data = toy();
        let gram = cross_mi(&data, &data, 0.3);
        for (i, j) in [(0, 0), (0, 5), (7, 3)] {
            let brute: f64 = data
                .bag(i)
                .instances()
                .flat_map(|x| {
                    data.bag(j)
                        .instances()
                        .map(move |y| (-0.3 * crate::distance::squared_euclidean(x, y)).exp())
                })
                .sum();
            assert!((gram[i * 12 + j] - brute.ln()).abs() < 1e-12);
        }
        // The training Gram computes the upper triangle only: the same values, mirrored
        // (row i against column j ≥ i is computed as cross_mi computes it).
        let sym = mi_gram(&data, 0.3);
        for i in 0..12 {
            for j in 0..12 {
                let (a, b) = (i.min(j), i.max(j));
                assert_eq!(sym[i * 12 + j], gram[a * 12 + b], "({i}, {j})");
            }
        }
        let train: Vec<usize> = (0..10).collect();
        let model = SetKernelSvm::mismo().fit(data.select(&train)).unwrap();
        assert!(model.minmax.is_some());
        let scores = model.scores(&data).unwrap();
        assert_eq!(scores.labels(), data.labels().unwrap());
        for (b, e) in model.explain(&data).unwrap().iter().enumerate() {
            let total: f64 = e.instance_scores.iter().sum::<f64>() + model.svm.bias;
            assert!((total - scores.row(b)[1]).abs() < 1e-9, "bag {b}");
        }
        // C means MISMO's C on the unscaled kernel with bags weighted N/B = 3 instances
        // per bag: β = α/s never exceeds 3C.
        let s = model.svm.kernel_scale;
        assert!(model
            .svm
            .coefficients
            .iter()
            .all(|c| c.abs() / s <= 3.0 + 1e-9));
        assert!(model.deployment().is_err());
    }

    #[test]
    fn mi_kernel_bounds_each_bag_by_c_times_the_mean_bag_size() {
        // Bags of 1, 2, 3, 4 instances (N/B = 2.5 over the eight training bags): with a
        // tiny C every bag is a support bag at its bound, which is C·N/B for each (Weka's
        // MISMO weights every bag N/B), not C and not C times the bag's own size.
        let mut features = Vec::new();
        let mut starts = vec![0];
        for b in 0..8 {
            for i in 0..(b % 4 + 1) {
                features.extend([(b * 7 + i) as f64 % 5.0, (b % 2) as f64 + 0.1 * i as f64]);
            }
            starts.push(features.len() / 2);
        }
        let data = Dataset::new(
            "ragged",
            2,
            features,
            starts,
            (0..8).map(|b| b.to_string()).collect(),
            Some((0..8).map(|b| b % 2).collect()),
            vec!["0".into(), "1".into()],
        )
        .unwrap();
        let train: Vec<usize> = (0..8).collect();
        let c = 1e-6;
        let spec = SetKernelSvm::mismo().settings(SetKernelSvm::mismo().settings.cost(c));
        let model = spec.fit(data.select(&train)).unwrap();
        let s = model.svm.kernel_scale;
        for (b, coef) in model.svm.coefficients.iter().enumerate() {
            let beta = coef.abs() / s;
            assert!((beta - 2.5 * c).abs() <= 1e-9 * c, "bag {b}: {beta}");
        }
        // The CV path (Gram shared over all bags, `--scaling none`) bounds them alike.
        let shared = spec.preprocessing(Preprocessing::None);
        let gram = shared.full_log_gram(&data, &Silent).unwrap();
        let scores = shared
            .scores_from_gram(&data, &gram, data.labels().unwrap(), 2, &train, &train)
            .unwrap();
        let direct = shared
            .fit(data.select(&train))
            .unwrap()
            .scores(data.select(&train))
            .unwrap();
        for b in 0..8 {
            assert!((scores.positive(b) - direct.positive(b)).abs() < 1e-9);
        }
    }

    #[test]
    fn weka_preprocessing_is_minmax_without_the_third_attribute() {
        // The MI Gram under `Weka` equals the min-max MI Gram of the data with attribute 2
        // deleted: MISMO's kernels skip it (the outer data set's class index).
        let mut features = Vec::new();
        let mut starts = vec![0];
        for b in 0..6 {
            for i in 0..3 {
                let v = (b * 3 + i) as f64;
                features.extend([v.sin(), v * 0.5, 100.0 * v.cos(), (v * 0.3).exp()]);
            }
            starts.push(features.len() / 4);
        }
        let ids: Vec<String> = (0..6).map(|b| b.to_string()).collect();
        let labels = Some((0..6).map(|b| b % 2).collect());
        let classes = vec!["0".to_string(), "1".to_string()];
        let data = Dataset::new(
            "four",
            4,
            features.clone(),
            starts.clone(),
            ids.clone(),
            labels.clone(),
            classes.clone(),
        )
        .unwrap();
        let without: Vec<f64> = features
            .chunks_exact(4)
            .flat_map(|x| [x[0], x[1], x[3]])
            .collect();
        let three = Dataset::new("three", 3, without, starts, ids, labels, classes).unwrap();
        let weka = SetKernelSvm::mismo().preprocessing(Preprocessing::Weka);
        let map = Preprocessing::Weka.fit(&data).unwrap();
        assert_eq!(map.range[WEKA_SKIPPED_ATTRIBUTE], 0.0);
        let g4 = weka.full_log_gram(&data, &Silent).unwrap();
        let g3 = SetKernelSvm::mismo()
            .full_log_gram(&three, &Silent)
            .unwrap();
        for (a, b) in g4.iter().zip(&g3) {
            assert!((a - b).abs() < 1e-12, "{a} {b}");
        }
        // Only for the MI kernel.
        assert!(weka.kernel(SetKernel::default()).check().is_err());
    }

    #[test]
    fn nsk_scores_use_the_kept_self_kernels_and_the_support_bags() {
        let data = toy();
        let train: Vec<usize> = (0..10).collect();
        let all: Vec<usize> = (0..12).collect();
        for map in [EmpiricalMap::None, EmpiricalMap::Training] {
            let model = svm(SetKernel::Nsk { gamma: None }, map)
                .fit(data.select(&train))
                .unwrap();
            assert_eq!(model.train_log_self.len(), 10);
            let scores = model.scores(&data).unwrap();
            // A model saved before the self-kernels were kept recomputes the same bits.
            let mut old = model.clone();
            old.train_log_self.clear();
            assert!(old.validate().is_ok());
            assert_eq!(old.scores(&data).unwrap(), scores);
            let text = serde_json::to_string(&old).unwrap();
            assert!(!text.contains("train_log_self"));
            // The decision over every training bag, from the kernel directly.
            let train_set = data.copy_bags(&train);
            let zscore = ZScore::fit(train_set.select(&train));
            let gamma = 0.5; // 1 / two non-constant features
            let (rows, cols) = (
                zscore.apply(&data).unwrap(),
                zscore.apply(&train_set).unwrap(),
            );
            let cross = log_nsk_cross(
                &rows,
                &cols,
                &log_self_kernels(&rows, gamma),
                &model.train_log_self,
                gamma,
            );
            let phi = |l: f64| crate::classifier::svm::maps::subpolynomial_from_log(l, 0.5);
            let s = &model.svm;
            for x in all.iter().copied() {
                let kernel_to = |t: usize| match map {
                    EmpiricalMap::None => phi(cross[x * 10 + t]),
                    _ => (0..10)
                        .map(|r| phi(cross[x * 10 + r]) * phi(model.train_log_gram[t * 10 + r]))
                        .sum(),
                };
                let f = (0..10)
                    .map(|t| s.coefficients[t] * kernel_to(t) / s.kernel_scale)
                    .sum::<f64>()
                    + s.bias;
                assert!(
                    (scores.positive(x) - f).abs() <= 1e-12 * (1.0 + f.abs()),
                    "{map:?}"
                );
            }
        }
    }

    #[test]
    fn nsk_separates_the_toy_set_and_rejects_bad_use() {
        let data = toy();
        let train: Vec<usize> = (0..10).collect();
        let model = svm(SetKernel::Nsk { gamma: None }, EmpiricalMap::None)
            .fit(data.select(&train))
            .unwrap();
        let s = model.scores(data.select(&[10, 11])).unwrap();
        assert_eq!(s.labels(), vec![0, 1]);
        assert!(
            svm(SetKernel::Nsk { gamma: None }, EmpiricalMap::Transductive)
                .fit(data.select(&train))
                .is_err()
        );
        assert!(
            svm(SetKernel::Nsk { gamma: Some(-1.0) }, EmpiricalMap::None)
                .fit(data.select(&train))
                .is_err()
        );
    }
}
