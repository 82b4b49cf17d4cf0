//! SVM over bags with a set kernel (GMIL paper §8): the box-counting kernels k∧, k∧/∨,
//! k_min estimated by the core, or the normalised set kernel (NSK) baseline, followed by
//! the subpolynomial and empirical kernel maps and SMO ([`crate::svm`]).
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

use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::imbalance::ClassWeight;
use super::{check_dim, BagModel, BagScores, Classifier};
use crate::data::standardize::ZScore;
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
use crate::svm::bags::{svm_kernel, BagSvm, BagSvmSettings, EmpiricalMap};
use mil_core::box_kernel::seeds::{bag_hash, pair_seed};
use mil_core::box_kernel::{estimate, scratch_len, BoxKernel, Method, Scratch};

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
        /// γ (MISMO's default 0.01, on attributes scaled to [0, 1]).
        gamma: f64,
    },
}

/// MISMO's default γ of the MI kernel.
pub const MI_RBF_GAMMA: f64 = 0.01;
/// MISMO's default C.
pub const MI_RBF_COST: f64 = 1.0;

/// Attribute pre-processing of the SVM, fitted on the training instances.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Preprocessing {
    /// The features as given (the box kernels discretise them; NSK z-scores them).
    #[default]
    None,
    /// Every attribute scaled to [0, 1] by the minimum and maximum over the training
    /// instances, x' = (x − min)/(max − min) (0 for a constant attribute), new bags by the
    /// same map without clipping: Weka's `Normalize` filter, MISMO's default (-N 0).
    MinMax,
    /// What Weka 3.6's MISMO actually computes: [`Preprocessing::MinMax`], and the third
    /// attribute (index 2) left out of the kernel. MISMO's kernels take dot products of a
    /// bag's instances skipping the attribute at the *outer* data set's class index, which
    /// in Weka's multi-instance layout (bag id, bag, class) is always 2; here that
    /// attribute maps to 0 (range 0), which removes it from every distance. Only for the MI
    /// kernel, to reproduce MISMO's predictions bag for bag.
    Weka,
}

mil_core::keywords!(Preprocessing {
    Preprocessing::None => "none": "the features as given",
    Preprocessing::MinMax => "minmax": "each attribute scaled to [0, 1] over the training instances (Weka MISMO's default)",
    Preprocessing::Weka => "weka": "minmax with the third attribute left out of the kernel, as Weka 3.6's MISMO computes it",
});

impl Preprocessing {
    /// The map fitted on `data` (the training bags), `None` for [`Preprocessing::None`].
    pub fn fit(self, data: &Dataset) -> Option<MinMax> {
        match self {
            Preprocessing::None => None,
            Preprocessing::MinMax => Some(MinMax::fit(data)),
            Preprocessing::Weka => {
                let mut map = MinMax::fit(data);
                if let Some(r) = map.range.get_mut(WEKA_SKIPPED_ATTRIBUTE) {
                    *r = 0.0;
                }
                Some(map)
            }
        }
    }
}

/// The instance attribute Weka's MISMO leaves out of its kernels: the class index (2) of
/// the multi-instance layout (bag id, bag, class), see [`Preprocessing::Weka`].
pub const WEKA_SKIPPED_ATTRIBUTE: usize = 2;

/// A fitted min–max map (Weka's `Normalize`): per attribute the training minimum and
/// range.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MinMax {
    /// Minimum per attribute.
    pub min: Vec<f64>,
    /// max − min per attribute (0: the attribute maps to 0).
    pub range: Vec<f64>,
}

impl MinMax {
    /// Fits on every instance of `data`.
    pub fn fit(data: &Dataset) -> MinMax {
        let d = data.dim();
        let mut min = vec![f64::INFINITY; d];
        let mut max = vec![f64::NEG_INFINITY; d];
        for x in data.features().chunks_exact(d) {
            for j in 0..d {
                min[j] = min[j].min(x[j]);
                max[j] = max[j].max(x[j]);
            }
        }
        let range = min.iter().zip(&max).map(|(a, b)| b - a).collect();
        MinMax { min, range }
    }

    /// Applies the map to every instance of `data`.
    pub fn apply(&self, data: &Dataset) -> Result<Dataset> {
        let d = data.dim();
        let mut f = data.features().to_vec();
        for x in f.chunks_exact_mut(d) {
            for ((v, lo), range) in x.iter_mut().zip(&self.min).zip(&self.range) {
                *v = if *range > 0.0 { (*v - lo) / range } else { 0.0 };
            }
        }
        data.with_features(d, f)
    }
}

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
    /// let train: Vec<usize> = (0..data.n_bags()).collect();
    /// let mismo = SetKernelSvm::mismo().preprocessing(Preprocessing::Weka);
    /// let model = mismo.fit(&data, &train)?;
    /// let labels = model.scores(&data, &train)?.labels();
    /// assert_eq!(labels.len(), 92);
    /// // Weka's MISMO, trained on all of musk1, keeps 50 support bags; so does this.
    /// assert_eq!(model.svm.coefficients.iter().filter(|&&c| c != 0.0).count(), 50);
    /// # Ok::<(), mil_toolkit::error::Error>(())
    /// ```
    pub fn mismo() -> Self {
        SetKernelSvm {
            kernel: SetKernel::MiRbf {
                gamma: MI_RBF_GAMMA,
            },
            settings: BagSvmSettings::default().cost(MI_RBF_COST).rho(1.0),
            seed: 1,
            preprocessing: Preprocessing::MinMax,
            class_weight: ClassWeight::None,
        }
    }

    /// The SVM settings actually used: the MI kernel is used as is (ρ = 1).
    fn effective_settings(&self) -> BagSvmSettings {
        match self.kernel {
            SetKernel::MiRbf { .. } => self.settings.rho(1.0),
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
        let settings = self.effective_settings();
        let (k, scale) = svm_kernel(log_gram, n, train, &settings)?;
        let smo = match self.kernel {
            SetKernel::MiRbf { .. } => settings.cost(settings.cost * mean_bag_size * scale),
            _ => settings,
        };
        Ok((k, scale, smo))
    }

    /// Whether cross-validation may share one Gram matrix over all bags: not when a
    /// pre-processing is fitted on the training bags (it would see the test bags).
    pub fn shares_gram(&self) -> bool {
        self.preprocessing == Preprocessing::None
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
            SetKernel::Nsk { gamma: Some(g) } | SetKernel::MiRbf { gamma: g }
                if !(g > 0.0 && g.is_finite()) =>
            {
                return Err(Error::parameter("gamma", g, "must be positive and finite"));
            }
            SetKernel::MiRbf { .. } if self.settings.map != EmpiricalMap::None => {
                return Err(Error::parameter(
                    "map",
                    self.settings.map,
                    "the MI kernel is used as is: use --map none",
                ));
            }
            SetKernel::Nsk { .. } | SetKernel::MiRbf { .. } => {}
        }
        if self.preprocessing == Preprocessing::Weka
            && !matches!(self.kernel, SetKernel::MiRbf { .. })
        {
            return Err(Error::parameter(
                "scaling",
                "weka",
                "reproduces Weka's MISMO and applies to the MI kernel only: use --kernel mi-rbf, or --scaling minmax",
            ));
        }
        self.class_weight.check()?;
        crate::svm::bags::check_settings(&self.settings)
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

/// A set kernel fitted on training bags, able to evaluate ln k between any bags.
enum FittedKernel {
    Box { grid: GridData, spec: BoxGramSpec },
    Nsk { zscore: ZScore, gamma: f64 },
    MiRbf { gamma: f64 },
}

impl FittedKernel {
    fn fit(kernel: &SetKernel, train: &Dataset, seed: u64) -> Result<FittedKernel> {
        Ok(match *kernel {
            SetKernel::Box {
                kernel,
                estimator,
                epsilon,
                delta,
                precision,
            } => FittedKernel::Box {
                grid: GridData::fit(train, precision)?,
                spec: BoxGramSpec {
                    kernel,
                    method: estimator,
                    accuracy: accuracy(epsilon, delta)?,
                    seed,
                },
            },
            SetKernel::Nsk { gamma } => {
                let all: Vec<usize> = (0..train.n_bags()).collect();
                let zscore = ZScore::fit(train, &all);
                let active = zscore.std.iter().filter(|&&s| s > 0.0).count().max(1);
                let gamma = gamma.unwrap_or(1.0 / active as f64);
                check_gamma(gamma)?;
                FittedKernel::Nsk { zscore, gamma }
            }
            SetKernel::MiRbf { gamma } => FittedKernel::MiRbf { gamma },
        })
    }

    /// ln k among the training bags (m × m), and for NSK the training bags'
    /// unnormalised ln k_set(X, X) (empty for box kernels).
    fn train_gram(&self, train: &Dataset) -> Result<(Vec<f64>, Vec<f64>)> {
        match self {
            FittedKernel::Box { grid, spec } => Ok((box_gram(grid, *spec, &Silent)?.ln, vec![])),
            FittedKernel::Nsk { zscore, gamma } => {
                log_nsk_gram_and_self(&zscore.apply_active(train)?, *gamma)
            }
            FittedKernel::MiRbf { gamma } => Ok((mi_gram(train, *gamma), vec![])),
        }
    }

    /// ln k between every bag of `data` (rows) and the training bags `cols` (columns),
    /// `train_self` the training bags' ln k_set(X, X) for NSK if kept (else recomputed).
    /// Each box estimate's generator is seeded by the pair of the two bags' content
    /// hashes ([`bag_hash`]), and each NSK value depends on its two bags only
    /// ([`crate::kernel::nsk`]), so a bag's score does not depend on the bags scored with
    /// it or on the columns asked for, and the core, running the exported model, draws
    /// the same numbers.
    fn cross(
        &self,
        data: &Dataset,
        train: &Dataset,
        cols: &[usize],
        train_self: &[f64],
    ) -> Result<Vec<f64>> {
        match self {
            FittedKernel::Box { grid, spec } => {
                let points = grid.map(data)?;
                let d = data.dim();
                let m = train.n_bags();
                let core_grid = grid.grid();
                let largest_test = (0..data.n_bags())
                    .map(|b| data.bag(b).len())
                    .max()
                    .unwrap_or(0);
                let largest_train = (0..m).map(|b| grid.bag_len(b)).max().unwrap_or(0);
                let train_hashes: Vec<u64> = (0..m).map(|t| bag_hash(grid.bag(t))).collect();
                let need = scratch_len(spec.kernel, spec.method, largest_test, largest_train, d)
                    .ok_or_else(|| Error::data(data.name(), "bags too large to address"))?;
                let rows: Vec<Vec<f64>> = (0..data.n_bags())
                    .into_par_iter()
                    .map_init(
                        || (vec![0.0f64; need.floats], vec![0u32; need.ints]),
                        |(floats, ints), b| {
                            let r = data.bag_range(b);
                            let bag = &points[r.start * d..r.end * d];
                            let hash = bag_hash(bag);
                            cols.iter()
                                .map(|&t| {
                                    let mut rng = Xoshiro256PlusPlus::seed_from_u64(pair_seed(
                                        spec.seed,
                                        hash,
                                        train_hashes[t],
                                    ));
                                    let mut scratch = Scratch { floats, ints };
                                    estimate(
                                        spec.kernel,
                                        spec.method,
                                        &core_grid,
                                        bag,
                                        grid.bag(t),
                                        spec.accuracy,
                                        &mut rng,
                                        &mut scratch,
                                    )
                                    .map(|e| e.ln_value)
                                    .map_err(Error::from)
                                })
                                .collect::<Result<Vec<f64>>>()
                        },
                    )
                    .collect::<Result<_>>()?;
                Ok(rows.concat())
            }
            FittedKernel::Nsk { zscore, gamma } => {
                let rows = zscore.apply_active(data)?;
                let cols_set = zscore.apply_active(&train.select(cols))?;
                let self_cols: Vec<f64> = if train_self.len() == train.n_bags() {
                    cols.iter().map(|&t| train_self[t]).collect()
                } else {
                    log_self_kernels(&cols_set, *gamma)
                };
                let self_rows = log_self_kernels(&rows, *gamma);
                Ok(log_nsk_cross(
                    &rows, &cols_set, &self_rows, &self_cols, *gamma,
                ))
            }
            FittedKernel::MiRbf { gamma } => Ok(cross_mi(data, &train.select(cols), *gamma)),
        }
    }
}

/// ln of the MI kernel Σ_{x∈X, y∈Y} exp(−γ‖x − y‖²) between every bag of `a` (rows) and
/// of `b` (columns): the unnormalised set kernel of [`crate::kernel::nsk`], by its block
/// products and log-sum-exp (its error bound; each value independent of the others and
/// of the thread count).
pub fn cross_mi(a: &Dataset, b: &Dataset, gamma: f64) -> Vec<f64> {
    let runs: Vec<Run> = (0..a.n_bags())
        .map(|row| Run {
            row,
            cols: 0..b.n_bags(),
        })
        .collect();
    log_set_kernels(a, b, &runs, gamma)
}

/// The MI kernel's Gram matrix of `data` (n × n, row-major): its upper triangle by
/// [`log_set_kernels`] (half the work of [`cross_mi`] of `data` with itself), mirrored.
fn mi_gram(data: &Dataset, gamma: f64) -> Vec<f64> {
    let n = data.n_bags();
    let upper = log_set_kernels(data, data, &upper_runs(n), gamma);
    let mut out = vec![0.0; n * n];
    let mut at = 0;
    for i in 0..n {
        for j in i..n {
            out[i * n + j] = upper[at];
            out[j * n + i] = upper[at];
            at += 1;
        }
    }
    out
}

/// The machines to train on labels `labels` of `n_classes` classes, as one flag per bag
/// each: class 1 against 0 when binary, else class c against the rest for every c.
fn machine_targets(labels: &[usize], n_classes: usize) -> Vec<Vec<bool>> {
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
fn fit_machines(
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

    fn fit(&self, data: &Dataset, train: &[usize]) -> Result<SvmModel> {
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
        let mut train_set = data.select(train);
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
            kernel: self.kernel,
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
fn decision_scores(n_classes: usize, values: Vec<f64>) -> BagScores {
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
    pub fn validate(&self) -> std::result::Result<(), String> {
        let m = self.train_starts.len().saturating_sub(1);
        if self
            .machines()
            .any(|s| s.train.len() != m || s.coefficients.len() != m)
            || m < 2
        {
            return Err("svm: training bags and coefficients disagree".into());
        }
        if self.rest.len() == 1 || self.rest.iter().any(|s| s.settings != self.svm.settings) {
            return Err(
                "svm: one-vs-rest machines need three or more classes and one setting".into(),
            );
        }
        if self.train_log_gram.len() != m * m {
            return Err("svm: training Gram matrix has the wrong size".into());
        }
        if !(self.train_log_self.is_empty() || self.train_log_self.len() == m)
            || self.train_log_self.iter().any(|v| v.is_nan())
        {
            return Err("svm: training self-kernels do not match the training bags".into());
        }
        if self.train_starts.last().copied().unwrap_or(0) * self.dim != self.train_features.len() {
            return Err("svm: training features do not match the bag offsets".into());
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
        .map_err(|e| format!("svm: {e}"))?;
        let finite = |v: &[f64]| v.iter().all(|x| x.is_finite());
        if let Some(m) = &self.minmax {
            if m.min.len() != self.dim
                || m.range.len() != self.dim
                || !finite(&m.min)
                || !finite(&m.range)
            {
                return Err("svm: min-max map of the wrong dimension or not finite".into());
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
            return Err("svm: a feature, coefficient, bias or kernel scale is not finite".into());
        }
        Ok(())
    }
}

/// A trained box-kernel SVM in the form `mil-core` runs ([`mil_core::svm`]): the stored
/// bags on the training grid and one weight each, f(x) = Σ_r ω_r exp(ρ ln k(x, r) − T) + b.
#[derive(Debug, Clone, PartialEq)]
pub struct SvmDeployment {
    /// The set kernel.
    pub kernel: BoxKernel,
    /// The estimator.
    pub method: Method,
    /// ε of every estimate.
    pub epsilon: f64,
    /// δ of every estimate.
    pub delta: f64,
    /// The grid's power of ten.
    pub precision: i32,
    /// Seed of the estimates.
    pub seed: u64,
    /// ρ of the subpolynomial map.
    pub rho: f64,
    /// T: ρ times the largest training ln k(t, t).
    pub log_offset: f64,
    /// b.
    pub bias: f64,
    /// The grid's smallest rounded value per dimension.
    pub grid_min: Vec<i64>,
    /// The grid size per dimension.
    pub grid_size: Vec<u32>,
    /// The stored bags' grid points, row-major.
    pub points: Vec<u32>,
    /// Bag offsets into `points` (in instances).
    pub bag_starts: Vec<usize>,
    /// ω_r per stored bag.
    pub weights: Vec<f64>,
}

impl SvmModel {
    /// The model as the core runs it. Plain φ keeps the support bags with
    /// ω_t = α_t y_t e^T / c; the empirical map keeps every training bag r with
    /// ω_r = Σ_t α_t y_t φ(k(t, r)) e^T / c (c: the kernel's conditioning constant), the
    /// same decision regrouped. The NSK baseline has no core implementation.
    pub fn deployment(&self) -> Result<SvmDeployment> {
        if !self.rest.is_empty() {
            return Err(Error::data(
                "model",
                format!(
                    "is a {}-class one-vs-rest SVM; the core's set-kernel SVM head decides two classes only, so it cannot be exported (train on two classes to export)",
                    self.n_classes()
                ),
            ));
        }
        if matches!(self.kernel, SetKernel::MiRbf { .. }) {
            return Err(Error::NotAvailable(
                "a box-kernel deployment of an MI-kernel SVM (see SvmModel::mi_deployment)".into(),
            ));
        }
        if self.minmax.is_some() {
            return Err(Error::data(
                "model",
                "is a min-max scaled box-kernel SVM; the core's box-kernel head discretises raw features, so it cannot be exported",
            ));
        }
        let SetKernel::Box {
            kernel,
            estimator,
            epsilon,
            delta,
            precision,
        } = self.kernel
        else {
            return Err(Error::NotAvailable(
                "exporting NSK SVMs: the core estimates box-counting kernels only".into(),
            ));
        };
        let train = self.train_set()?;
        let grid = GridData::fit(&train, precision)?;
        let m = train.n_bags();
        let rho = self.svm.settings.rho;
        let log_gram = &self.train_log_gram;
        let log_offset = rho
            * (0..m)
                .map(|t| log_gram[t * m + t])
                .fold(f64::NEG_INFINITY, f64::max);
        // e^T / c, formed in log space.
        let factor = |x: f64| (x + log_offset - self.svm.kernel_scale.ln()).exp();
        let c = &self.svm.coefficients;
        let (stored, weights): (Vec<usize>, Vec<f64>) = match self.svm.settings.map {
            EmpiricalMap::None => (0..m)
                .filter(|&t| c[t] != 0.0)
                .map(|t| (t, c[t] * factor(0.0)))
                .unzip(),
            EmpiricalMap::Training => (0..m)
                .map(|r| {
                    let w = (0..m)
                        .map(|t| c[t] * factor(rho * log_gram[t * m + r]))
                        .sum::<f64>();
                    (r, w)
                })
                .unzip(),
            EmpiricalMap::Transductive => {
                return Err(Error::parameter(
                    "map",
                    "emp-trans",
                    "a transductive SVM is not a model of new bags",
                ))
            }
        };
        if stored.is_empty() || !weights.iter().all(|w| w.is_finite()) {
            return Err(Error::Numerical {
                method: "SVM export",
                reason: "no support bags, or weights beyond f64 (lower rho)".into(),
            });
        }
        let mut points = Vec::new();
        let mut bag_starts = vec![0];
        for &t in &stored {
            points.extend_from_slice(grid.bag(t));
            bag_starts.push(bag_starts.last().copied().unwrap_or(0) + grid.bag_len(t));
        }
        Ok(SvmDeployment {
            kernel,
            method: estimator,
            epsilon,
            delta,
            precision: grid.precision(),
            seed: self.seed,
            rho,
            log_offset,
            bias: self.svm.bias,
            grid_min: grid.min().to_vec(),
            grid_size: grid.sizes().to_vec(),
            points,
            bag_starts,
            weights,
        })
    }
}

/// A trained MI-kernel SVM in the form `mil-core` runs ([`mil_core::mi_svm`]): the support
/// bags' (scaled) instances and one weight each,
/// f(X) = Σ_r ω_r Σ_{x∈X, y∈R_r} exp(−γ‖x − y‖²) + b on X scaled by the min–max map.
#[derive(Debug, Clone, PartialEq)]
pub struct MiSvmDeployment {
    /// γ of the kernel.
    pub gamma: f64,
    /// b.
    pub bias: f64,
    /// Minimum per feature (0 without scaling).
    pub min: Vec<f64>,
    /// Range per feature (1 without scaling; 0 maps the feature to 0).
    pub range: Vec<f64>,
    /// The support bags' instances, scaled, row-major.
    pub instances: Vec<f64>,
    /// Bag offsets into `instances` (in instances).
    pub bag_starts: Vec<usize>,
    /// ω_r = α_r y_r / s per support bag (s the kernel's conditioning constant).
    pub weights: Vec<f64>,
}

impl SvmModel {
    /// The MI-kernel model as the core runs it: the support bags with ω_t = α_t y_t / s
    /// (the MI kernel is used as is: ρ = 1, no empirical map). Two classes only.
    pub fn mi_deployment(&self) -> Result<MiSvmDeployment> {
        let SetKernel::MiRbf { gamma } = self.kernel else {
            return Err(Error::NotAvailable(
                "an MI-kernel deployment of a model with another kernel".into(),
            ));
        };
        if !self.rest.is_empty() {
            return Err(Error::data(
                "model",
                format!(
                    "is a {}-class one-vs-rest SVM; the core's MI-kernel SVM head decides two classes only, so it cannot be exported (train on two classes to export)",
                    self.n_classes()
                ),
            ));
        }
        let train = self.train_set()?;
        let c = &self.svm.coefficients;
        let s = self.svm.kernel_scale;
        let mut instances = Vec::new();
        let mut bag_starts = vec![0];
        let mut weights = Vec::new();
        for t in (0..train.n_bags()).filter(|&t| c[t] != 0.0) {
            instances.extend_from_slice(train.bag(t).as_slice());
            bag_starts.push(bag_starts.last().copied().unwrap_or(0) + train.bag(t).len());
            weights.push(c[t] / s);
        }
        if weights.is_empty() || !weights.iter().all(|w| w.is_finite()) {
            return Err(Error::Numerical {
                method: "SVM export",
                reason: "no support bags, or weights that are not finite".into(),
            });
        }
        let (min, range) = match &self.minmax {
            Some(m) => (m.min.clone(), m.range.clone()),
            None => (vec![0.0; self.dim], vec![1.0; self.dim]),
        };
        Ok(MiSvmDeployment {
            gamma,
            bias: self.svm.bias,
            min,
            range,
            instances,
            bag_starts,
            weights,
        })
    }
}

impl SvmModel {
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

    fn scores(&self, data: &Dataset, bags: &[usize]) -> Result<BagScores> {
        check_dim(data, self.dim)?;
        let train = self.train_set()?;
        let kernel = FittedKernel::fit(&self.kernel, &train, self.seed)?;
        let mut wanted = data.select(bags);
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
        let rho = self.svm.settings.rho;
        let phi = |l: f64| crate::svm::maps::subpolynomial_from_log(l, rho);
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
    fn explain(&self, data: &Dataset, bags: &[usize]) -> Result<Vec<Explanation>> {
        check_dim(data, self.dim)?;
        let SetKernel::MiRbf { gamma } = self.kernel else {
            return Ok(bags.iter().map(|_| Explanation::none()).collect());
        };
        let labels = self.scores(data, bags)?.labels();
        let train = self.train_set()?;
        let mut wanted = data.select(bags);
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
                rho: 0.5,
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
            let model = spec.fit(&data, &train).unwrap();
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
            let scores = model.scores(&data, &train).unwrap();
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
        let model = spec.fit(&data, &train).unwrap();
        assert_eq!(model.n_classes(), 3);
        assert_eq!(model.rest.len(), 2);
        let labels = data.labels().unwrap();
        let all: Vec<usize> = (0..18).collect();
        let scores = model.scores(&data, &all).unwrap();
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
            let binary = spec.fit(&relabelled, &train).unwrap();
            let machine = model.machines().nth(c).unwrap();
            assert_eq!(&binary.svm, machine, "class {c}");
            let b = binary.scores(&relabelled, &all).unwrap();
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
        let all: Vec<usize> = (0..12).collect();
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
        let model = SetKernelSvm::mismo().fit(&data, &train).unwrap();
        assert!(model.minmax.is_some());
        let scores = model.scores(&data, &all).unwrap();
        assert_eq!(scores.labels(), data.labels().unwrap());
        for (b, e) in model.explain(&data, &all).unwrap().iter().enumerate() {
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
        let model = spec.fit(&data, &train).unwrap();
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
            .fit(&data, &train)
            .unwrap()
            .scores(&data, &train)
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
                .fit(&data, &train)
                .unwrap();
            assert_eq!(model.train_log_self.len(), 10);
            let scores = model.scores(&data, &all).unwrap();
            // A model saved before the self-kernels were kept recomputes the same bits.
            let mut old = model.clone();
            old.train_log_self.clear();
            assert!(old.validate().is_ok());
            assert_eq!(old.scores(&data, &all).unwrap(), scores);
            let text = serde_json::to_string(&old).unwrap();
            assert!(!text.contains("train_log_self"));
            // The decision over every training bag, from the kernel directly.
            let train_set = data.select(&train);
            let zscore = ZScore::fit(&train_set, &train);
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
            let phi = |l: f64| crate::svm::maps::subpolynomial_from_log(l, 0.5);
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
            .fit(&data, &train)
            .unwrap();
        let s = model.scores(&data, &[10, 11]).unwrap();
        assert_eq!(s.labels(), vec![0, 1]);
        assert!(
            svm(SetKernel::Nsk { gamma: None }, EmpiricalMap::Transductive)
                .fit(&data, &train)
                .is_err()
        );
        assert!(
            svm(SetKernel::Nsk { gamma: Some(-1.0) }, EmpiricalMap::None)
                .fit(&data, &train)
                .is_err()
        );
    }
}
