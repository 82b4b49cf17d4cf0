//! M³IC-MBM (Zhang, Wang, Si & Li, IJCAI 2009, Table 1): maximum margin multiple-instance
//! clustering with the modified bag margin.
//!
//! The relaxed problem (6) over the concatenated weights w̃ = [w₁; …; w_k]:
//!
//! ```text
//!   min ½‖w̃‖² + (C/n) Σ_i ξ_i   s.t.  f(w̃, i) ≥ 1 − ξ_i,  ξ_i ≥ 0,
//!                                     |(w_p − w_q)·m̄| ≤ l  for all p, q,
//!   f(w̃, i) = k/(k−1) max_{j∈B_i} ( max_u w_u·B_ij − mean_v w_v·B_ij ),
//!   m̄ = Σ_i (1/n_i) Σ_j B_ij            (the relaxed balance constraint (4))
//! ```
//!
//! is solved by CCCP (outer loop): f is convex and positively homogeneous, so its
//! linearisation at w̃⁽ᵗ⁾ is w̃·∂f (eq. 10) with the subgradient (7)–(9). Each convex
//! subproblem (11) is solved in its 1-slack form (12) by cutting planes (inner loop): the
//! most violated constraint is rule (16), the stop test is (14), and each restricted
//! problem (17) is solved exactly in its dual by `crate::optim::qp`. Random restarts keep the
//! solution with the lowest objective; bags are assigned by step 14 of Table 1.
//!
//! ```
//! use mil_toolkit::cluster::m3ic::M3ic;
//!
//! let corel3 = mil_toolkit::data::load("corel3")?;
//! let result = M3ic::default().k(3).seed(1).restarts(2).fit(&corel3)?;
//! assert_eq!(result.assignments.len(), corel3.n_bags());
//! assert!(result.assignments.iter().all(|&c| c < 3));
//! // The saved model assigns bags as the fit did.
//! assert_eq!(result.model.assign(&corel3)?, result.assignments);
//! # Ok::<(), mil_toolkit::Error>(())
//! ```

use rand::SeedableRng;
use rand_distr::{Distribution, StandardNormal};
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;

use super::M3icModel;
use crate::data::standardize::ZScore;
use crate::data::{Bags, Dataset};
use crate::error::{Error, Result};
use crate::eval::folds::derive_seed;
use crate::numerics::{dot, first_argmax as argmax};
use crate::optim::qp::DualQp;
use crate::params::{check_count, check_weight, limits};

mod balance;
use balance::*;

/// Hyper-parameters of M³IC-MBM. Defaults ([`BalanceMode::Sizes`]): C = 2, l = 0.01,
/// ε₁ = 0.001, ε₂ = 0.01, 5 restarts, every cluster labelling at least half the mean
/// cluster size; C and ε₁ chosen on corel3's tuning seeds 101–110 (docs/methods/m3ic.md). ε₁ is tighter
/// than the paper's 0.01 because with labels the CCCP steps also move bags between
/// clusters, which a 1 % stop cuts short. [`M3ic::paper`] is the paper's form: (4)
/// alone, ε₁ = ε₂ = 0.01, and C = 4, l = 0.01 from its grids C ∈ 2^[−4:4],
/// l ∈ [0, 0.001, 0.01, 0.1, 1:5, 10]. Features z-scored, then every instance scaled to
/// unit length, in both.
#[derive(Debug, Clone, PartialEq)]
pub struct M3ic {
    /// Number of clusters k (at least 2, at most the number of bags).
    pub k: usize,
    /// Seed of the random starts ([`crate::eval::folds::derive_seed`]`(seed, r)` for start r).
    pub seed: u64,
    /// Regularisation constant C of (6).
    pub c: f64,
    /// Cluster balance l of (4).
    pub l: f64,
    /// CCCP precision ε₁: stop when ΔJ/J < ε₁.
    pub eps1: f64,
    /// Cutting-plane precision ε₂ of (14).
    pub eps2: f64,
    /// Independent random starts; the lowest J wins.
    pub restarts: usize,
    /// Cap on CCCP iterations per start.
    pub max_cccp: usize,
    /// Cap on cutting planes per CCCP iteration (Theorem 2 bounds the need).
    pub max_planes: usize,
    /// z-score the features (fitted on all bags) before clustering.
    pub standardize: bool,
    /// Then scale every instance to unit Euclidean length (see [`normalize_instances`]).
    pub normalize: bool,
    /// Which balance constraints hold: the paper's (4) alone, or (4) and a minimum
    /// cluster size on the bags' labels (the default, [`BalanceMode::Sizes`]).
    pub balance_mode: BalanceMode,
    /// [`BalanceMode::Sizes`]: every cluster labels at least ⌊min_size · n/k⌋ bags.
    pub min_size: f64,
    /// [`BalanceMode::Sizes`]: every cluster labels at most ⌈max_size · n/k⌉ bags
    /// (infinite: no upper bound).
    pub max_size: f64,
}

/// The balance constraints of M³IC.
///
/// - `Paper`: the relaxed constraint (4) alone, −l ≤ (w_p − w_q)·m̄ ≤ l, as Zhang et al.
///   state it, with their grids for l and C. On corel3 and sival6 it does not keep the
///   clusters apart: (4) bounds the weights along the single direction m̄ (the sum of bag
///   means), which says nothing about where the bags' *witnesses* go, and most runs leave
///   clusters empty (docs/methods/m3ic.md).
/// - `Sizes` (default): (4) and, in addition, the discrete class-balance constraint of
///   Xu et al. (2005) on the bags' cluster labels, as a lower bound on every cluster's
///   size: |{i : u_i = p}| ≥ L = ⌊min_size · n/k⌋ for every p. With labels u fixed, the
///   bag margin h_i(w̃, u) = k/(k−1) max_j (w_u·B_ij − mean_v w_v·B_ij) is convex (a max of
///   linear functions) and max_u h_i = f(w̃, i) of (6); problem (2) with this constraint
///   is min over w̃ and balanced u of J(w̃, u) = ½‖w̃‖² + (C/n) Σ max(0, 1 − h_i(w̃, u_i)).
///   Each CCCP iteration first minimises J over balanced labels at w̃⁽ᵗ⁾ (a transportation
///   problem, solved exactly by `balanced_labels`), then linearises h_i at w̃⁽ᵗ⁾ for
///   those labels — the subgradient (7) with γ of (9) fixed at u_i, the witness (8) the
///   best instance for u_i — and solves (11) by the same cutting planes. Both steps lower
///   J_bal(w̃) = min_u J(w̃, u) (up to C·ε₂), so CCCP's monotone descent is kept. Bags
///   are still assigned by step 14 of Table 1 (what the saved model and the core do).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BalanceMode {
    /// The paper's relaxed balance constraint (4) alone.
    Paper,
    /// (4) and a minimum number of bags per cluster label (Xu et al. 2005's constraint).
    Sizes,
}

mil_core::keywords!(BalanceMode {
    BalanceMode::Paper => "paper": "the paper's relaxed balance constraint (4) alone (Zhang et al. 2009)",
    BalanceMode::Sizes => "sizes": "(4) and at least min-size * n/k bags labelled with every cluster (Xu et al. 2005's class balance)",
});

impl M3ic {
    /// The paper's form: the relaxed balance constraint (4) alone with ε₁ = ε₂ = 0.01 and
    /// C = 4, l = 0.01 (the best cell of the paper's grids on corel3's tuning seeds).
    pub fn paper() -> Self {
        M3ic {
            c: 4.0,
            eps1: 0.01,
            balance_mode: BalanceMode::Paper,
            ..M3ic::default()
        }
    }

    /// The defaults of a balance mode: [`M3ic::paper`] or [`Default::default`].
    pub fn for_mode(mode: BalanceMode) -> Self {
        match mode {
            BalanceMode::Paper => M3ic::paper(),
            BalanceMode::Sizes => M3ic::default(),
        }
    }
}

impl Default for M3ic {
    fn default() -> Self {
        M3ic {
            k: 2,
            seed: 1,
            c: 2.0,
            l: 0.01,
            eps1: 0.001,
            eps2: 0.01,
            restarts: 5,
            max_cccp: 100,
            max_planes: 2000,
            standardize: true,
            normalize: true,
            balance_mode: BalanceMode::Sizes,
            min_size: 0.5,
            max_size: 1.25,
        }
    }
}

crate::params::setters!(M3ic {
    k: usize,
    seed: u64,
    c: f64,
    l: f64,
    eps1: f64,
    eps2: f64,
    restarts: usize,
    max_cccp: usize,
    max_planes: usize,
    standardize: bool,
    normalize: bool,
    balance_mode: BalanceMode,
    min_size: f64,
    max_size: f64,
});

impl M3ic {
    /// Checks the parameters alone, before any data is read.
    pub fn check(&self) -> Result<()> {
        let positive = |name: &str, v: f64| {
            if v > 0.0 && v.is_finite() {
                Ok(())
            } else {
                Err(Error::parameter(name, v, "must be positive and finite"))
            }
        };
        check_weight("cost", self.c, true)?;
        positive("epsilon1", self.eps1)?;
        positive("epsilon2", self.eps2)?;
        for (name, v) in [("epsilon1", self.eps1), ("epsilon2", self.eps2)] {
            // Beyond it the CCCP stops after its first step and the cutting planes before
            // their first plane: the clustering is the starting point, silently.
            if v > limits::MAX_TOLERANCE {
                return Err(Error::parameter(
                    name,
                    v,
                    format!(
                        "must be at most {} (the paper: 0.01)",
                        limits::MAX_TOLERANCE
                    ),
                ));
            }
        }
        check_weight("balance", self.l, false)?;
        check_count("restarts", self.restarts, limits::MAX_RESTARTS)?;
        if !(0.0..=1.0).contains(&self.min_size) {
            return Err(Error::parameter(
                "min_size",
                self.min_size,
                "must be in [0, 1] (a fraction of the mean cluster size n/k)",
            ));
        }
        if self.max_size.is_nan() || self.max_size < 1.0 {
            return Err(Error::parameter(
                "max_size",
                self.max_size,
                "must be at least 1 (a multiple of the mean cluster size n/k; inf: no bound)",
            ));
        }
        if self.max_cccp == 0 || self.max_planes == 0 {
            return Err(Error::parameter("iteration caps", 0, "must be at least 1"));
        }
        super::check_k(self.k, None)
    }

    /// Clusters the bags into `M3ic::k` clusters: `fit` with these parameters.
    ///
    /// ```
    /// use mil_toolkit::prelude::*;
    ///
    /// let musk1 = mil_toolkit::data::load("musk1")?;
    /// let fit = M3ic::default().k(2).seed(1).restarts(1).fit(&musk1)?;
    /// assert_eq!(fit.assignments.len(), musk1.n_bags());
    /// # Ok::<(), mil_toolkit::Error>(())
    /// ```
    pub fn fit<'a>(&self, bags: impl Into<Bags<'a>>) -> Result<M3icFit> {
        let bags = bags.into();
        if bags.is_all() {
            fit(bags.dataset(), self.k, self, self.seed)
        } else {
            fit(&bags.to_dataset(), self.k, self, self.seed)
        }
    }
}

/// One start of M³IC-MBM: the weights it reached and how it got there.
#[derive(Debug, Clone)]
pub struct M3icRun {
    /// The final w̃ (k × dim row-major).
    pub weights: Vec<f64>,
    /// Objective J of (6) after each CCCP iteration; the last is the run's objective.
    pub history: Vec<f64>,
    /// Cutting planes used in each CCCP iteration.
    pub planes: Vec<usize>,
}

impl M3icRun {
    /// The run's final objective J.
    pub fn objective(&self) -> f64 {
        *self.history.last().unwrap_or(&f64::INFINITY)
    }
}

/// The result of [`M3ic::fit`].
#[derive(Debug, Clone)]
pub struct M3icFit {
    /// The model of the best start.
    pub model: M3icModel,
    /// Cluster of each bag (step 14 of Table 1).
    pub assignments: Vec<usize>,
    /// Objective J of (6) of the best start.
    pub objective: f64,
    /// Every start, in order.
    pub runs: Vec<M3icRun>,
    /// Index of the best start.
    pub best: usize,
}

/// Clusters the bags of `data` into `k` clusters. Start r draws w̃⁰ from a generator
/// seeded by `derive_seed(seed, r)`; starts run in parallel and the lowest J (first on
/// ties) wins, so the result does not depend on the number of threads.
pub(crate) fn fit(data: &Dataset, k: usize, params: &M3ic, seed: u64) -> Result<M3icFit> {
    params.check()?;
    super::check_k(k, Some(data.n_bags()))?;
    let zscore = params.standardize.then(|| ZScore::fit(data));
    let mut prepared = match &zscore {
        Some(z) => z.apply(data)?,
        None => data.clone(),
    };
    if params.normalize {
        prepared = normalize_instances(&prepared)?;
    }
    let problem = Problem::new(&prepared, k);
    let runs: Vec<M3icRun> = (0..params.restarts)
        .into_par_iter()
        .map(|r| {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(derive_seed(seed, r as u64));
            problem.run(params, &mut rng)
        })
        .collect::<Result<_>>()?;
    let best = (0..runs.len())
        .min_by(|&a, &b| runs[a].objective().total_cmp(&runs[b].objective()))
        .unwrap_or(0);
    let model = M3icModel {
        k,
        dim: data.dim(),
        weights: runs[best].weights.clone(),
        mean: zscore.as_ref().map(|z| z.mean.clone()),
        std: zscore.map(|z| z.std),
        normalize: params.normalize,
    };
    let assignments = model.assign(data)?;
    Ok(M3icFit {
        model,
        assignments,
        objective: runs[best].objective(),
        runs,
        best,
    })
}

/// Every instance scaled to unit Euclidean length (an all-zero instance stays zero).
///
/// The paper does not say how it prepares features. Without this, the witness of (8) —
/// the instance with the largest modified margin — is mostly the instance of largest
/// norm, whatever its direction, and the clustering follows outliers; on unit-length
/// instances the witness is chosen by direction alone (docs/methods/m3ic.md).
pub fn normalize_instances(data: &Dataset) -> Result<Dataset> {
    let dim = data.dim();
    let mut features = data.features().to_vec();
    for x in features.chunks_exact_mut(dim) {
        unit_length(x);
    }
    data.with_features(dim, features)
}

/// Scales `x` to unit length in place (leaves an all-zero `x` alone).
pub(crate) fn unit_length(x: &mut [f64]) {
    let norm = dot(x, x).sqrt();
    if norm > 0.0 {
        x.iter_mut().for_each(|v| *v /= norm);
    }
}

/// The data of problem (6), prepared once and shared by all starts.
pub struct Problem<'a> {
    data: &'a Dataset,
    k: usize,
    dim: usize,
    /// m̄ of the relaxed balance constraint (4).
    bag_mean_sum: Vec<f64>,
    /// ‖m̄‖².
    bag_mean_norm2: f64,
}

/// The subgradient (7) of f(·, i) at w̃⁽ᵗ⁾: k/(k−1)·(B_ij*(u*) − (1/k) Σ_p B_ij*(p)),
/// stored as the witness instance j* (8) and its top cluster u* (9).
#[derive(Debug, Clone, Copy)]
struct Subgradient {
    instance: usize,
    top: usize,
}

/// One cutting plane of (13): (1/n) Σ c_i ∂f_i as a dense k·dim vector, and (1/n) Σ c_i.
struct Plane {
    a: Vec<f64>,
    b: f64,
}

impl<'a> Problem<'a> {
    /// Prepares the data (already standardised if wanted).
    pub fn new(data: &'a Dataset, k: usize) -> Self {
        let dim = data.dim();
        let mut bag_mean_sum = vec![0.0; dim];
        for b in 0..data.n_bags() {
            let bag = data.bag(b);
            let inv = 1.0 / bag.len() as f64;
            for x in bag.instances() {
                bag_mean_sum
                    .iter_mut()
                    .zip(x)
                    .for_each(|(m, v)| *m += inv * v);
            }
        }
        let bag_mean_norm2 = dot(&bag_mean_sum, &bag_mean_sum);
        Problem {
            data,
            k,
            dim,
            bag_mean_sum,
            bag_mean_norm2,
        }
    }

    /// w_p·x for every cluster p.
    fn scores(&self, w: &[f64], x: &[f64], out: &mut [f64]) {
        for (p, o) in out.iter_mut().enumerate() {
            *o = dot(&w[p * self.dim..(p + 1) * self.dim], x);
        }
    }

    /// f(w̃, i) of (6) and the subgradient (7)–(9) at w̃.
    fn bag_margin(&self, w: &[f64], bag: usize) -> (f64, Subgradient) {
        let k = self.k as f64;
        let mut s = vec![0.0; self.k];
        let mut best = (
            f64::NEG_INFINITY,
            Subgradient {
                instance: 0,
                top: 0,
            },
        );
        for i in self.data.bag_range(bag) {
            self.scores(w, self.data.instance(i), &mut s);
            let (top, max) = argmax(&s);
            let g = max - s.iter().sum::<f64>() / k;
            if g > best.0 {
                best = (g, Subgradient { instance: i, top });
            }
        }
        (k / (k - 1.0) * best.0, best.1)
    }

    /// The smallest and largest numbers of bags every cluster may label under `params`
    /// ([`BalanceMode::Sizes`]): ⌊min_size · n/k⌋ and ⌈max_size · n/k⌉, clipped so that
    /// some labelling fits; (0, n) under the paper's constraint alone.
    pub fn count_bounds(&self, params: &M3ic) -> (usize, usize) {
        let n = self.data.n_bags();
        let mean = n as f64 / self.k as f64;
        match params.balance_mode {
            BalanceMode::Paper => (0, n),
            BalanceMode::Sizes => {
                let lo = ((params.min_size * mean).floor() as usize).min(n / self.k);
                let hi = (params.max_size * mean).ceil();
                let hi = if hi >= n as f64 { n } else { hi as usize };
                (lo, hi.max(n.div_ceil(self.k)))
            }
        }
    }

    /// For every bag i and cluster p, h_i(w̃, p) = k/(k−1) max_j (w_p·B_ij − mean_v w_v·B_ij)
    /// and its maximising instance (the witness (8) for label p); row-major n × k.
    fn label_margins(&self, w: &[f64]) -> Vec<(f64, usize)> {
        let k = self.k as f64;
        let mut s = vec![0.0; self.k];
        let mut out = Vec::with_capacity(self.data.n_bags() * self.k);
        for bag in 0..self.data.n_bags() {
            let mut best = vec![(f64::NEG_INFINITY, 0); self.k];
            for i in self.data.bag_range(bag) {
                self.scores(w, self.data.instance(i), &mut s);
                let mean = s.iter().sum::<f64>() / k;
                for (b, &sp) in best.iter_mut().zip(&s) {
                    if sp - mean > b.0 {
                        *b = (sp - mean, i);
                    }
                }
            }
            out.extend(best.into_iter().map(|(g, i)| (k / (k - 1.0) * g, i)));
        }
        out
    }

    /// The subgradients of the CCCP step at w̃ and the loss Σ max(0, 1 − margin) they
    /// stand for: under the paper's constraint, (7)–(9) of f(w̃, i); with sizes, those of
    /// h_i(w̃, u_i) for the balanced labels u minimising the loss ([`balanced_labels`]).
    fn subgradients(&self, w: &[f64], params: &M3ic) -> (Vec<Subgradient>, f64) {
        let n = self.data.n_bags();
        let (min_count, max_count) = self.count_bounds(params);
        if min_count == 0 && max_count >= n {
            let (sub, loss) = (0..n)
                .map(|b| {
                    let (f, g) = self.bag_margin(w, b);
                    (g, (1.0 - f).max(0.0))
                })
                .fold((Vec::with_capacity(n), 0.0), |(mut v, l), (g, h)| {
                    v.push(g);
                    (v, l + h)
                });
            return (sub, loss);
        }
        let margins = self.label_margins(w);
        // Hinge loss per (bag, label); among equal losses the larger margin is preferred
        // (a tie-break far below the loss's resolution).
        let loss_of = |b: usize, u: usize| (1.0 - margins[b * self.k + u].0).max(0.0);
        let cost: Vec<f64> = (0..n * self.k)
            .map(|e| {
                let h = margins[e].0;
                loss_of(e / self.k, e % self.k) - 1e-12 * h.clamp(-1e3, 1e3)
            })
            .collect();
        let labels = balanced_labels(&cost, n, self.k, min_count, max_count);
        let mut loss = 0.0;
        let sub = labels
            .iter()
            .enumerate()
            .map(|(b, &u)| {
                let instance = margins[b * self.k + u].1;
                loss += loss_of(b, u);
                Subgradient { instance, top: u }
            })
            .collect();
        (sub, loss)
    }

    /// J of the problem solved: ½‖w̃‖² + (C/n) Σ max(0, 1 − f(w̃, i)) for the relaxed
    /// problem (6) ([`BalanceMode::Paper`]), or J_bal(w̃) = min over balanced labels u of
    /// ½‖w̃‖² + (C/n) Σ max(0, 1 − h_i(w̃, u_i)) ([`BalanceMode::Sizes`]).
    pub fn objective_with(&self, w: &[f64], params: &M3ic) -> f64 {
        let n = self.data.n_bags();
        let loss = self.subgradients(w, params).1;
        0.5 * dot(w, w) + params.c / n as f64 * loss
    }

    /// J of the relaxed problem (6): ½‖w̃‖² + (C/n) Σ max(0, 1 − f(w̃, i)).
    pub fn objective(&self, w: &[f64], c: f64) -> f64 {
        let n = self.data.n_bags();
        let loss: f64 = (0..n)
            .map(|b| (1.0 - self.bag_margin(w, b).0).max(0.0))
            .sum();
        0.5 * dot(w, w) + c / n as f64 * loss
    }

    /// The largest violation of the balance constraint (4) at w̃ (0 when satisfied).
    pub fn balance_violation(&self, w: &[f64]) -> f64 {
        let mut s = vec![0.0; self.k];
        self.scores(w, &self.bag_mean_sum, &mut s);
        let max = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let min = s.iter().copied().fold(f64::INFINITY, f64::min);
        0.0f64.max(max - min)
    }

    /// One start from a random w̃⁰ ~ N(0, I): CCCP iterations until ΔJ/J < ε₁ (Table 1,
    /// steps 2–13).
    pub fn run(&self, params: &M3ic, rng: &mut Xoshiro256PlusPlus) -> Result<M3icRun> {
        let w: Vec<f64> = (0..self.k * self.dim)
            .map(|_| StandardNormal.sample(rng))
            .collect();
        self.run_from(params, w)
    }

    /// CCCP from a given w̃⁰ (Table 1, steps 3–13).
    pub fn run_from(&self, params: &M3ic, mut w: Vec<f64>) -> Result<M3icRun> {
        let mut history = Vec::new();
        let mut planes = Vec::new();
        for _ in 0..params.max_cccp {
            let (sub, _) = self.subgradients(&w, params);
            let (next, used) = self.cutting_planes(&sub, params)?;
            w = next;
            let j = self.objective_with(&w, params);
            planes.push(used);
            let previous = history.last().copied();
            history.push(j);
            // Steps 3 and 12: stop when the relative decrease falls below ε₁.
            if let Some(prev) = previous {
                if prev - j < params.eps1 * prev.abs() {
                    break;
                }
            }
        }
        Ok(M3icRun {
            weights: w,
            history,
            planes,
        })
    }

    /// Solves the convex subproblem (12) for fixed subgradients by cutting planes
    /// (Table 1, steps 4–9). Returns w̃ and the number of planes used.
    fn cutting_planes(&self, sub: &[Subgradient], params: &M3ic) -> Result<(Vec<f64>, usize)> {
        let n = self.data.n_bags();
        let pairs = self.balance_pairs();
        let n_pairs = pairs.len();
        // Problem (15) with no planes: w̃ = 0 satisfies the balance constraint and is optimal.
        let mut w = vec![0.0; self.k * self.dim];
        let mut xi = 0.0;
        let mut planes: Vec<Plane> = Vec::new();
        // Gram entries a_s·a_t (lower triangle, grown) and a_s[p]·m̄ per plane.
        let mut plane_gram: Vec<Vec<f64>> = Vec::new();
        let mut plane_mean: Vec<Vec<f64>> = Vec::new();
        let mut dual: Vec<f64> = vec![0.0; n_pairs];
        let mut s = vec![0.0; self.k];
        loop {
            crate::cancel::checkpoint();
            // Rule (16): c_i = 1 when the linearised margin w̃·∂f_i is at most 1.
            let k = self.k as f64;
            let mut sums = vec![0.0; self.k * self.dim];
            let mut count = 0usize;
            for g in sub {
                let x = self.data.instance(g.instance);
                self.scores(&w, x, &mut s);
                let margin = k / (k - 1.0) * (s[g.top] - s.iter().sum::<f64>() / k);
                if margin <= 1.0 {
                    count += 1;
                    let block = &mut sums[g.top * self.dim..(g.top + 1) * self.dim];
                    block.iter_mut().zip(x).for_each(|(a, v)| *a += v);
                }
            }
            // a = (1/n) Σ c_i k/(k−1) (x_i(u_i) − (1/k) Σ_p x_i(p)).
            let total: Vec<f64> = (0..self.dim)
                .map(|d| (0..self.k).map(|p| sums[p * self.dim + d]).sum())
                .collect();
            let scale = k / (k - 1.0) / n as f64;
            let mut a = sums;
            for p in 0..self.k {
                for d in 0..self.dim {
                    a[p * self.dim + d] = scale * (a[p * self.dim + d] - total[d] / k);
                }
            }
            let b = count as f64 / n as f64;
            // Test (14): the most violated constraint holds up to ε₂, so all of them do.
            if b - dot(&w, &a) <= xi + params.eps2 {
                return Ok((w, planes.len()));
            }
            if planes.len() >= params.max_planes {
                return Err(Error::Numerical {
                    method: "M³IC cutting planes",
                    reason: format!(
                        "no convergence within {} planes (raise ε₂ or lower C)",
                        params.max_planes
                    ),
                });
            }
            let row: Vec<f64> = planes
                .iter()
                .map(|pl| dot(&pl.a, &a))
                .chain([dot(&a, &a)])
                .collect();
            let mean_proj: Vec<f64> = (0..self.k)
                .map(|p| dot(&a[p * self.dim..(p + 1) * self.dim], &self.bag_mean_sum))
                .collect();
            plane_gram.push(row);
            plane_mean.push(mean_proj);
            planes.push(Plane { a, b });
            // Warm start: the previous dual with the new plane's α = 0.
            let m = planes.len();
            dual.insert(m - 1, 0.0);
            let (q, lin) = self.dual_problem(&planes, &plane_gram, &plane_mean, &pairs, params.l);
            let qp = DualQp {
                q: &q,
                c: &lin,
                capped: m,
                cap: params.c,
            };
            // If round-off stalls the active-set method, the interior-point solver takes over.
            dual = match qp.solve(&dual) {
                Ok(d) => d,
                Err(_) => qp.interior_point()?,
            };
            w = self.primal(&planes, &pairs, &dual);
            xi = planes
                .iter()
                .map(|pl| pl.b - dot(&w, &pl.a))
                .fold(0.0, f64::max);
        }
    }

    /// The ordered pairs (p, q), p ≠ q, of the balance constraints (w_p − w_q)·m̄ ≤ l.
    fn balance_pairs(&self) -> Vec<(usize, usize)> {
        (0..self.k)
            .flat_map(|p| (0..self.k).filter(move |&q| q != p).map(move |q| (p, q)))
            .collect()
    }

    /// The dual of (17): variables α_s ≥ 0 (Σ α ≤ C) for the planes and β_pq ≥ 0 for the
    /// balance constraints; w̃ = Σ α_s a_s − Σ β_pq e_pq with e_pq = m̄ in block p and −m̄
    /// in block q. Returns the Gram matrix of the columns [a_s, −e_pq] and the linear term
    /// [b_s, −l].
    fn dual_problem(
        &self,
        planes: &[Plane],
        plane_gram: &[Vec<f64>],
        plane_mean: &[Vec<f64>],
        pairs: &[(usize, usize)],
        l: f64,
    ) -> (Vec<f64>, Vec<f64>) {
        let m = planes.len();
        let size = m + pairs.len();
        let mut q = vec![0.0; size * size];
        for s in 0..m {
            for t in 0..=s {
                q[s * size + t] = plane_gram[s][t];
                q[t * size + s] = plane_gram[s][t];
            }
            for (e, &(p, r)) in pairs.iter().enumerate() {
                let v = -(plane_mean[s][p] - plane_mean[s][r]);
                q[s * size + m + e] = v;
                q[(m + e) * size + s] = v;
            }
        }
        let delta = |a: usize, b: usize| f64::from(u8::from(a == b));
        for (e, &(p, r)) in pairs.iter().enumerate() {
            for (f, &(p2, r2)) in pairs.iter().enumerate() {
                q[(m + e) * size + m + f] = self.bag_mean_norm2
                    * (delta(p, p2) - delta(p, r2) - delta(r, p2) + delta(r, r2));
            }
        }
        let lin = planes
            .iter()
            .map(|pl| pl.b)
            .chain(pairs.iter().map(|_| -l))
            .collect();
        (q, lin)
    }

    /// w̃ from the dual: Σ α_s a_s − Σ β_pq e_pq.
    fn primal(&self, planes: &[Plane], pairs: &[(usize, usize)], dual: &[f64]) -> Vec<f64> {
        let mut w = vec![0.0; self.k * self.dim];
        for (pl, &alpha) in planes.iter().zip(dual) {
            if alpha != 0.0 {
                w.iter_mut()
                    .zip(&pl.a)
                    .for_each(|(wi, ai)| *wi += alpha * ai);
            }
        }
        for (&(p, q), &beta) in pairs.iter().zip(&dual[planes.len()..]) {
            if beta != 0.0 {
                for d in 0..self.dim {
                    w[p * self.dim + d] -= beta * self.bag_mean_sum[d];
                    w[q * self.dim + d] += beta * self.bag_mean_sum[d];
                }
            }
        }
        w
    }
}

/// Memory and work of M³IC on data of this shape with `k` clusters: the standardised and
/// normalised copies of the instances, up to `max_planes` cutting planes of k × dim
/// weights, and their Gram matrix and dual problem; the work is every restart's CCCP
/// steps scoring every instance against every cluster.
pub fn footprint(shape: crate::params::Shape, k: usize, params: &M3ic) -> crate::params::Estimate {
    let planes = params.max_planes as f64;
    let weights = k as f64 * shape.dim as f64;
    let dual = planes + (k * k) as f64;
    crate::params::Estimate::values(
        3.0 * shape.values() + planes * weights + 2.0 * dual * dual,
        (params.restarts * params.max_cccp) as f64 * shape.values() * k as f64,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::ClusterModel;
    use crate::data;
    use rand_distr::Normal;

    /// Three well-separated clusters of bags: each bag has one instance near its cluster's
    /// centre and two background instances shared by all clusters.
    fn toy(seed: u64, bags_per_cluster: usize) -> Dataset {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let noise = Normal::new(0.0, 0.3).unwrap();
        let centres = [[4.0, 0.0, 0.0], [0.0, 4.0, 0.0], [0.0, 0.0, 4.0]];
        let mut features = Vec::new();
        let mut starts = vec![0];
        let mut labels = Vec::new();
        for (c, centre) in centres.iter().enumerate() {
            for _ in 0..bags_per_cluster {
                for v in centre {
                    features.push(v + noise.sample(&mut rng));
                }
                for _ in 0..2 {
                    for _ in 0..3 {
                        features.push(noise.sample(&mut rng));
                    }
                }
                starts.push(starts.last().unwrap() + 3);
                labels.push(c);
            }
        }
        let ids = (0..labels.len()).map(|i| i.to_string()).collect();
        Dataset::new(
            "toy",
            3,
            features,
            starts,
            ids,
            Some(labels),
            vec!["0".into(), "1".into(), "2".into()],
        )
        .unwrap()
    }

    #[test]
    fn cccp_iterations_do_not_increase_the_objective() {
        // Theory (CCCP + ε₂-accurate cutting planes): J(w̃ᵗ⁺¹) ≤ J(w̃ᵗ) + C·ε₂. With a tiny
        // ε₂ this is monotone up to round-off; checked on real data and on many seeds.
        let corel = data::load("corel3").unwrap();
        let corel = corel.copy_bags(&(0..corel.n_bags()).step_by(3).collect::<Vec<_>>());
        let corel = ZScore::fit(&corel).apply(&corel).unwrap();
        let unit = normalize_instances(&corel).unwrap();
        let sets = [toy(1, 10), corel, unit];
        for data in &sets {
            let problem = Problem::new(data, 3);
            for (c, l, mode) in [
                (0.25, 0.0, BalanceMode::Paper),
                (2.0, 1.0, BalanceMode::Sizes),
                (16.0, 0.1, BalanceMode::Paper),
                (4.0, 0.01, BalanceMode::Sizes),
            ] {
                let params = M3ic {
                    c,
                    l,
                    eps1: 1e-6,
                    eps2: 1e-6,
                    max_cccp: 15,
                    balance_mode: mode,
                    ..M3ic::default()
                };
                for seed in 0..3 {
                    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
                    let run = problem.run(&params, &mut rng).unwrap();
                    assert!(run.history.len() >= 2);
                    for t in 1..run.history.len() {
                        let (before, after) = (run.history[t - 1], run.history[t]);
                        assert!(
                            after <= before + c * params.eps2 + 1e-12 * before.abs(),
                            "C={c} l={l} seed {seed}: J went {before} → {after}"
                        );
                    }
                    // The QP keeps the balance constraint (4).
                    assert!(problem.balance_violation(&run.weights) <= l + 1e-8);
                }
            }
        }
    }

    /// Problem (11) with its n slacks, solved directly by Clarabel: the optimum the
    /// cutting-plane loop approximates.
    fn n_slack_optimum(problem: &Problem<'_>, sub: &[Subgradient], c: f64, l: f64) -> f64 {
        use clarabel::algebra::CscMatrix;
        use clarabel::solver::{DefaultSettingsBuilder, DefaultSolver, IPSolver, NonnegativeConeT};
        let (k, dim, n) = (problem.k, problem.dim, sub.len());
        let nw = k * dim;
        let size = nw + n;
        let mut p_dense = vec![vec![0.0; size]; size];
        for (i, row) in p_dense.iter_mut().enumerate().take(nw) {
            row[i] = 1.0;
        }
        let mut q = vec![0.0; nw];
        q.extend(std::iter::repeat_n(c / n as f64, n));
        let mut rows = Vec::new();
        let mut rhs = Vec::new();
        let kf = k as f64;
        for (i, g) in sub.iter().enumerate() {
            // −w̃·∂f_i − ξ_i ≤ −1.
            let x = problem.data.instance(g.instance);
            let mut row = vec![0.0; size];
            for p in 0..k {
                let coef = kf / (kf - 1.0) * (f64::from(u8::from(p == g.top)) - 1.0 / kf);
                for d in 0..dim {
                    row[p * dim + d] = -coef * x[d];
                }
            }
            row[nw + i] = -1.0;
            rows.push(row);
            rhs.push(-1.0);
            let mut row = vec![0.0; size];
            row[nw + i] = -1.0;
            rows.push(row);
            rhs.push(0.0);
        }
        for (p, r) in problem.balance_pairs() {
            let mut row = vec![0.0; size];
            for d in 0..dim {
                row[p * dim + d] = problem.bag_mean_sum[d];
                row[r * dim + d] = -problem.bag_mean_sum[d];
            }
            rows.push(row);
            rhs.push(l);
        }
        let settings = DefaultSettingsBuilder::default()
            .verbose(false)
            .tol_gap_abs(1e-10)
            .tol_gap_rel(1e-10)
            .tol_feas(1e-10)
            .build()
            .unwrap();
        let cones = [NonnegativeConeT(rows.len())];
        let mut solver = DefaultSolver::new(
            &CscMatrix::from(&p_dense),
            &q,
            &CscMatrix::from(&rows),
            &rhs,
            &cones,
            settings,
        )
        .unwrap();
        solver.solve();
        solver.solution.obj_val
    }

    #[test]
    fn cutting_planes_solve_the_n_slack_problem_to_eps2() {
        // The 1-slack cutting-plane loop (12)–(17) stops when test (14) holds, so its w̃
        // satisfies opt(11) ≤ J11(w̃) ≤ opt(11) + C·ε₂, J11 being the objective of (11).
        let data = toy(2, 6);
        let problem = Problem::new(&data, 3);
        for (seed, c, l) in [(3, 4.0, 0.0), (4, 1.0, 0.5), (5, 16.0, 2.0), (6, 0.25, 0.0)] {
            let params = M3ic {
                c,
                l,
                eps2: 1e-3,
                ..M3ic::default()
            };
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
            let w0: Vec<f64> = (0..9).map(|_| StandardNormal.sample(&mut rng)).collect();
            let sub: Vec<Subgradient> = (0..data.n_bags())
                .map(|b| problem.bag_margin(&w0, b).1)
                .collect();
            let (w, planes) = problem.cutting_planes(&sub, &params).unwrap();
            assert!(planes >= 1);
            let n = data.n_bags() as f64;
            let loss: f64 = sub
                .iter()
                .map(|g| {
                    let mut s = vec![0.0; 3];
                    problem.scores(&w, data.instance(g.instance), &mut s);
                    (1.0 - 1.5 * (s[g.top] - s.iter().sum::<f64>() / 3.0)).max(0.0)
                })
                .sum::<f64>()
                / n;
            let j11 = 0.5 * dot(&w, &w) + c * loss;
            let opt = n_slack_optimum(&problem, &sub, c, l);
            assert!(
                j11 >= opt - 1e-6 * (1.0 + opt),
                "seed {seed}: {j11} < optimum {opt}"
            );
            assert!(
                j11 <= opt + c * params.eps2 + 1e-6,
                "seed {seed}: {j11} vs optimum {opt}"
            );
            assert!(problem.balance_violation(&w) <= l + 1e-9);
        }
    }

    #[test]
    fn separates_well_separated_bags() {
        // Raw features: z-scoring bags of equal size makes m̄ = 0 and the balance
        // constraint (4) vacuous, which admits the trivial two-cluster answer. Lengths kept:
        // unit-length scaling would blow the short background instances (noise around 0)
        // up to the length of the cluster instances.
        let data = toy(5, 12);
        let params = M3ic {
            standardize: false,
            normalize: false,
            c: 1.0,
            l: 0.1,
            ..M3ic::default()
        };
        let fit = fit(&data, 3, &params, 1).unwrap();
        let acc = crate::eval::clustering_accuracy(&fit.assignments, data.labels().unwrap());
        assert!(acc >= 0.95, "accuracy {acc}");
    }

    #[test]
    fn balanced_labels_match_brute_force() {
        // Every labelling of 7 bags into 3 clusters (3⁷ = 2187) against the transportation
        // solution, for random costs and feasible lower and upper bounds on the sizes.
        use rand::RngExt;
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(17);
        let (n, k) = (7usize, 3usize);
        for trial in 0..200 {
            let cost: Vec<f64> = (0..n * k)
                .map(|_| {
                    if trial % 3 == 0 {
                        // Ties and a dominant cluster, as hinge losses give.
                        f64::from(rng.random_range(0..3u8))
                    } else {
                        rng.random_range(-1.0..1.0)
                    }
                })
                .collect();
            // Every feasible (L, U), including none (0, n) and exact balance.
            for (min_count, max_count) in (0..=n / k)
                .flat_map(|lo| (n.div_ceil(k)..=n).map(move |hi| (lo, hi)))
                .filter(|&(lo, hi)| trial % 4 == 0 || hi <= n / 2 + 1 || lo == 0 && hi == n)
            {
                let labels = balanced_labels(&cost, n, k, min_count, max_count);
                let mut counts = vec![0; k];
                labels.iter().for_each(|&u| counts[u] += 1);
                assert!(
                    counts.iter().all(|&c| (min_count..=max_count).contains(&c)),
                    "L={min_count} U={max_count}: {counts:?}"
                );
                let got: f64 = labels
                    .iter()
                    .enumerate()
                    .map(|(i, &u)| cost[i * k + u])
                    .sum();
                let mut best = f64::INFINITY;
                for code in 0..k.pow(n as u32) {
                    let mut c = code;
                    let mut counts = vec![0; k];
                    let mut total = 0.0;
                    for i in 0..n {
                        let u = c % k;
                        c /= k;
                        counts[u] += 1;
                        total += cost[i * k + u];
                    }
                    if counts.iter().all(|&c| (min_count..=max_count).contains(&c)) {
                        best = best.min(total);
                    }
                }
                assert!(
                    (got - best).abs() < 1e-9,
                    "trial {trial} L={min_count} U={max_count}: {got} vs {best}"
                );
            }
        }
    }

    #[test]
    fn sizes_mode_recovers_k_nonempty_groups() {
        // k = 4 well-separated groups (each bag: one instance near its group's centre, two
        // background instances): the default (sizes) finds four non-empty clusters that
        // match the groups on every seed.
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(8);
        let noise = Normal::new(0.0, 0.3).unwrap();
        let (k, per) = (4usize, 10usize);
        let mut features = Vec::new();
        let mut starts = vec![0];
        let mut labels = Vec::new();
        for c in 0..k {
            for _ in 0..per {
                for d in 0..k {
                    features.push(if d == c { 4.0 } else { 0.0 } + noise.sample(&mut rng));
                }
                for _ in 0..2 * k {
                    features.push(noise.sample(&mut rng));
                }
                starts.push(starts.last().unwrap() + 3);
                labels.push(c);
            }
        }
        let data = Dataset::new(
            "groups",
            k,
            features,
            starts,
            (0..k * per).map(|i| i.to_string()).collect(),
            Some(labels),
            (0..k).map(|c| c.to_string()).collect(),
        )
        .unwrap();
        // On raw features (unit length would blow the background noise up to the length
        // of the group instances, see `separates_well_separated_bags`), and with the full
        // default preparation, where the background instances become random directions.
        let raw = M3ic::default().standardize(false).normalize(false);
        for (params, floor) in [(raw, 0.95), (M3ic::default(), 0.75)] {
            for seed in 1..=5 {
                let fit = fit(&data, k, &params, seed).unwrap();
                let mut sizes = vec![0; k];
                fit.assignments.iter().for_each(|&a| sizes[a] += 1);
                assert!(sizes.iter().all(|&s| s > 0), "seed {seed}: {sizes:?}");
                let acc =
                    crate::eval::clustering_accuracy(&fit.assignments, data.labels().unwrap());
                assert!(acc >= floor, "{params:?} seed {seed}: accuracy {acc}");
            }
        }
    }

    #[test]
    fn the_two_sided_bound_keeps_four_of_six_clusters_where_one_sided_collapses() {
        // sival6 in small: k = 6 groups of 20 bags, 16 instances each in 10-D, of which
        // 2 lie near the group's axis (3 e_c + N(0, I)) and 14 are background N(0, I).
        // With labels bounded below only, the clusters that label more bags grow longer
        // weight vectors (C is small against the margin unit-length instances can reach,
        // so w_p sums its bags' subgradients) and at step 14 take every bag. Bounded on
        // both sides (≤ 1.25 n/k), at most four clusters can be large, and all of those
        // keep bags; the one-sided form must collapse here for the test to mean anything.
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(21);
        let (k, per, n_inst, dim) = (6usize, 20usize, 16usize, 10usize);
        let mut features = Vec::new();
        let mut starts = vec![0];
        let mut labels = Vec::new();
        for c in 0..k {
            for _ in 0..per {
                for i in 0..n_inst {
                    for d in 0..dim {
                        let shift = if i < 2 && d == c { 3.0 } else { 0.0 };
                        let z: f64 = StandardNormal.sample(&mut rng);
                        features.push(shift + z);
                    }
                }
                starts.push(starts.last().unwrap() + n_inst);
                labels.push(c);
            }
        }
        let data = Dataset::new(
            "six",
            dim,
            features,
            starts,
            (0..k * per).map(|i| i.to_string()).collect(),
            Some(labels),
            (0..k).map(|c| c.to_string()).collect(),
        )
        .unwrap();
        let non_empty = |params: &M3ic, seed: u64| {
            let fit = fit(&data, k, params, seed).unwrap();
            let mut sizes = vec![0; k];
            fit.assignments.iter().for_each(|&a| sizes[a] += 1);
            // The labels of the fitted w̃ respect both bounds (20 ± the band: 10..=25).
            let prepared = normalize_instances(&ZScore::fit(&data).apply(&data).unwrap()).unwrap();
            let problem = Problem::new(&prepared, k);
            let (lo, hi) = problem.count_bounds(params);
            let mut counts = vec![0; k];
            let (sub, _) = problem.subgradients(&fit.model.weights, params);
            sub.iter().for_each(|g| counts[g.top] += 1);
            assert!(
                counts.iter().all(|c| (lo..=hi).contains(c)),
                "{counts:?} outside {lo}..={hi}"
            );
            sizes.iter().filter(|&&s| s > 0).count()
        };
        let one_sided = M3ic::default().max_size(f64::INFINITY);
        let mut collapsed = 0;
        for seed in 1..=5 {
            let kept = non_empty(&M3ic::default(), seed);
            assert!(kept >= 4, "seed {seed}: {kept} non-empty clusters");
            collapsed += usize::from(non_empty(&one_sided, seed) <= 3);
        }
        assert!(
            collapsed >= 4,
            "the one-sided bound kept ≥ 4 clusters on {} seeds",
            5 - collapsed
        );
    }

    #[test]
    fn explanation_margins_are_eq_8_and_name_the_step_14_witness() {
        // Brute force: the margin of instance j is max_u w_u·x_j − mean_v w_v·x_j on the
        // prepared (z-scored, unit-length) instance, the witness is the first largest, and
        // the bag's cluster is the witness's top cluster.
        let data = toy(4, 6);
        let fit = fit(&data, 3, &M3ic::default().restarts(2), 5).unwrap();
        let prepared = normalize_instances(&ZScore::fit(&data).apply(&data).unwrap()).unwrap();
        let explained = ClusterModel::M3ic(fit.model.clone())
            .explain(&data)
            .unwrap();
        for (b, e) in explained.iter().enumerate() {
            let mut best = (f64::NEG_INFINITY, 0, 0);
            for (j, x) in prepared.bag(b).instances().enumerate() {
                let s: Vec<f64> = (0..3)
                    .map(|p| dot(&fit.model.weights[p * 3..p * 3 + 3], x))
                    .collect();
                let (top, max) = argmax(&s);
                let margin = max - s.iter().sum::<f64>() / 3.0;
                assert!((margin - e.instance_scores[j]).abs() < 1e-12);
                if margin > best.0 {
                    best = (margin, j, top);
                }
            }
            assert_eq!(e.witnesses, vec![best.1]);
            assert_eq!(fit.assignments[b], best.2);
        }
    }

    #[test]
    fn normalised_instances_make_lengths_irrelevant() {
        // Every instance rescaled by its own power of two: after the unit-length scaling
        // the prepared data are bit-identical, so fit, objective and the saved model's
        // assignments must be too. Without the scaling, witnesses (8) follow lengths.
        let data = toy(7, 8);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
        let features: Vec<f64> = data
            .features()
            .chunks_exact(3)
            .flat_map(|x| {
                let f = 2f64.powi(rand::RngExt::random_range(&mut rng, -4..=4));
                x.iter().map(move |v| v * f).collect::<Vec<_>>()
            })
            .collect();
        let scaled = data.with_features(3, features).unwrap();
        for normalize in [true, false] {
            let params = M3ic {
                standardize: false,
                normalize,
                c: 1.0,
                l: 0.1,
                ..M3ic::default()
            };
            let a = fit(&data, 3, &params, 3).unwrap();
            let b = fit(&scaled, 3, &params, 3).unwrap();
            if normalize {
                assert_eq!(a.assignments, b.assignments);
                assert_eq!(a.objective.to_bits(), b.objective.to_bits());
                assert!(a.model.normalize);
                assert_eq!(a.model.assign(&scaled).unwrap(), a.assignments);
            } else {
                assert_ne!(a.objective.to_bits(), b.objective.to_bits());
            }
        }
        // Unit length, and an all-zero instance stays zero.
        let mut x = [3.0, 4.0];
        unit_length(&mut x);
        assert_eq!(x, [0.6, 0.8]);
        let mut z = [0.0; 3];
        unit_length(&mut z);
        assert_eq!(z, [0.0; 3]);
    }

    #[test]
    fn same_seed_same_result_on_any_thread_count() {
        let data = toy(9, 8);
        let params = M3ic::default();
        let on = |threads: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| fit(&data, 3, &params, 42).unwrap())
        };
        let (one, two) = (on(1), on(2));
        assert_eq!(one.assignments, two.assignments);
        assert_eq!(one.model, two.model);
        assert_eq!(one.objective.to_bits(), two.objective.to_bits());
        let other = on(2);
        assert_eq!(other.model, one.model);
    }

    #[test]
    fn bad_parameters_are_errors() {
        let data = toy(1, 3);
        for params in [
            M3ic {
                c: 0.0,
                ..M3ic::default()
            },
            M3ic {
                l: -1.0,
                ..M3ic::default()
            },
            M3ic {
                eps2: f64::NAN,
                ..M3ic::default()
            },
            M3ic {
                restarts: 0,
                ..M3ic::default()
            },
        ] {
            assert!(matches!(
                fit(&data, 3, &params, 1),
                Err(Error::Parameter { .. })
            ));
        }
        assert!(fit(&data, 1, &M3ic::default(), 1).is_err());
        assert!(fit(&data, 10, &M3ic::default(), 1).is_err());
    }
}
