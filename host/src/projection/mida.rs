//! Multiple-instance discriminant analysis (Chai, Ding, Chen & Li, Pattern Recognition
//! 2014): B-MIDA for two classes (§3, Algorithms 1–2) and M-MIDA for C classes (§4,
//! Algorithms 3–4).
//!
//! Each positive bag is represented by one *positive prototype* — one of its instances —
//! and each negative bag by the mean of its instances (eq. 4). The projection G
//! maximises the trace difference tr[Gᵀ(S_b − α S_w)G] with GᵀG = I (eqs. 8, 15), by
//! block coordinate ascent: prototypes with G fixed, then G as the top-d eigenvectors
//! with the prototypes fixed. Prototypes start from a Gaussian kernel density estimate
//! of the negative instances (eqs. 11, 18), with the kernel width chosen from
//! {10⁻³, …, 10³} by the spread of the class means it produces.
//!
//! Instances are centred with the training bags' mean but keep their units, as in the
//! paper (its σ grid is on the data's own scale); `scaling` can z-score them instead.
//! Memory is O(n + D²) in the number n of instances: the density estimate streams over
//! the negatives of one candidate at a time. With more features than instances
//! (D > n) the D × D matrices are never formed: M = FᵀCF over the prototypes F is
//! solved in the span of F's rows (`projection/span.rs`), in O(nD) memory.
//!
//! ```
//! use mil_toolkit::projection::mida::Bmida;
//! use mil_toolkit::projection::Projector;
//!
//! // MIDA §5.1 data set one: 2 of 32 dimensions separate the positive instances.
//! let set = mil_toolkit::data::synth::mida_one(1);
//! let train: Vec<usize> = (0..set.data.n_bags()).collect();
//! let fit = Bmida::default().dim(2).alpha(1.0).fit_traced(set.data.select(&train))?;
//! // One positive prototype per positive bag, and GᵀG = I.
//! assert_eq!(fit.prototypes.len(), 40);
//! let g = &fit.projection.matrix; // D × d, row-major
//! let dot = |a: usize, b: usize| (0..32).map(|j| g[j * 2 + a] * g[j * 2 + b]).sum::<f64>();
//! assert!((dot(0, 0) - 1.0).abs() < 1e-9 && dot(0, 1).abs() < 1e-9);
//! let projected = fit.projection.transform(&set.data)?;
//! assert_eq!(projected.dim(), 2);
//! # Ok::<(), mil_toolkit::Error>(())
//! ```

use nalgebra::{DMatrix, DVector};
use rayon::prelude::*;

use super::span::top_eigenvectors_factored;
use super::{
    top_eigenvectors, InputScaling, LinearProjection, ProjectionKind, Projector, TrainingInstances,
};
use crate::data::Bags;
use crate::data::Dataset;
use crate::error::{Error, Result};

mod density;
use density::*;

mod scatter;
use scatter::*;

/// The paper's candidate kernel widths σ of eq. 11 (Algorithms 1 and 3).
pub const SIGMA_GRID: [f64; 7] = [1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0, 1e3];

/// The paper's convergence tolerance ξ on the relative change of the objective (§3.2).
pub const TOLERANCE: f64 = 1e-6;

/// The iteration caps t and t₁ of Algorithms 2 and 4 (the paper gives no values).
const MAX_ROUNDS: usize = 100;
const MAX_PROTOTYPE_PASSES: usize = 50;

/// B-MIDA (Algorithms 1–2) for binary data; positive is class 1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bmida {
    /// Output dimension d.
    pub dim: usize,
    /// Trade-off α ≥ 0 between between-class and within-class scatter (eq. 8).
    pub alpha: f64,
    /// ξ: stop when the objective's relative change is below it.
    pub tolerance: f64,
    /// t: cap on block-coordinate rounds.
    pub max_rounds: usize,
    /// t₁: cap on prototype passes within a round.
    pub max_prototype_passes: usize,
    /// Input preparation (default: centre only, as the paper).
    pub scaling: InputScaling,
}

/// M-MIDA (Algorithms 3–4): every bag is positive for its own class.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mmida {
    /// Output dimension d.
    pub dim: usize,
    /// Trade-off α ≥ 0 (eq. 15).
    pub alpha: f64,
    /// ξ: stop when the objective's relative change is below it.
    pub tolerance: f64,
    /// t: cap on block-coordinate rounds.
    pub max_rounds: usize,
    /// t₁: cap on prototype passes per class within a round.
    pub max_prototype_passes: usize,
    /// Input preparation (default: centre only, as the paper).
    pub scaling: InputScaling,
}

impl Bmida {
    /// The paper's settings: ξ = 10⁻⁶; caps t = 100, t₁ = 50.
    pub fn new(dim: usize, alpha: f64) -> Self {
        Bmida {
            dim,
            alpha,
            tolerance: TOLERANCE,
            max_rounds: MAX_ROUNDS,
            max_prototype_passes: MAX_PROTOTYPE_PASSES,
            scaling: InputScaling::Centre,
        }
    }
}

impl Mmida {
    /// Checks the parameters alone, before any data is read.
    pub fn check(&self) -> Result<()> {
        check(
            self.alpha,
            self.tolerance,
            self.max_rounds,
            self.max_prototype_passes,
        )
    }

    /// The paper's settings: ξ = 10⁻⁶; caps t = 100, t₁ = 50.
    pub fn new(dim: usize, alpha: f64) -> Self {
        Mmida {
            dim,
            alpha,
            tolerance: TOLERANCE,
            max_rounds: MAX_ROUNDS,
            max_prototype_passes: MAX_PROTOTYPE_PASSES,
            scaling: InputScaling::Centre,
        }
    }
}

/// α of B-MIDA and M-MIDA unless set: the middle of the papers' cross-validation grid
/// {10⁻³, …, 10²}.
pub const DEFAULT_ALPHA: f64 = 1.0;

impl Default for Bmida {
    fn default() -> Self {
        Bmida::new(super::DEFAULT_DIM, DEFAULT_ALPHA)
    }
}

impl Default for Mmida {
    fn default() -> Self {
        Mmida::new(super::DEFAULT_DIM, DEFAULT_ALPHA)
    }
}

crate::params::setters!(Bmida {
    dim: usize,
    alpha: f64,
    tolerance: f64,
    max_rounds: usize,
    max_prototype_passes: usize,
    scaling: InputScaling,
});
crate::params::setters!(Mmida {
    dim: usize,
    alpha: f64,
    tolerance: f64,
    max_rounds: usize,
    max_prototype_passes: usize,
    scaling: InputScaling,
});

/// A fitted MIDA model with its optimisation trace.
#[derive(Debug, Clone)]
pub struct MidaFit {
    /// The projection.
    pub projection: LinearProjection,
    /// The objective tr[Gᵀ(S_b − αS_w)G] after the initialisation (entry 0) and after
    /// every block-coordinate round; non-decreasing up to round-off.
    pub objectives: Vec<f64>,
    /// The kernel width chosen by the initialisation.
    pub sigma: f64,
    /// The bags (indices into the data set) that have a positive prototype: the
    /// positive training bags for B-MIDA, every training bag for M-MIDA.
    pub prototype_bags: Vec<usize>,
    /// Initial (kernel-density) prototype of each of `prototype_bags`, as a global
    /// instance index of the data set.
    pub initial_prototypes: Vec<usize>,
    /// Final prototype of each of `prototype_bags`, as a global instance index.
    pub prototypes: Vec<usize>,
    /// M-MIDA only: class updates undone because they would have lowered the objective.
    pub reverted_updates: usize,
}

/// How many of the chosen positive prototypes are truly positive instances (the MIDA
/// paper's Table 1, "positive prototypes identified").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Identification {
    /// Bags with a positive prototype.
    pub bags: usize,
    /// Of those, bags whose kernel-density (initial) prototype is a positive instance:
    /// what Table 1 reports.
    pub initial: usize,
    /// Of those, bags whose final prototype is a positive instance.
    pub last: usize,
}

impl Identification {
    /// The fraction identified by the kernel-density initialisation (Table 1's rate).
    pub fn rate(&self) -> f64 {
        self.initial as f64 / self.bags.max(1) as f64
    }

    /// The fraction identified by the final prototypes.
    pub fn final_rate(&self) -> f64 {
        self.last as f64 / self.bags.max(1) as f64
    }
}

impl MidaFit {
    /// Scores the prototypes against the truth: `positive[i]` says whether global instance
    /// i was drawn from a positive distribution (as [`crate::data::synth::Synthetic`] and
    /// `mil synth --truth` record it).
    pub fn identification(&self, positive: &[bool]) -> Identification {
        let count = |protos: &[usize]| {
            protos
                .iter()
                .filter(|&&i| positive.get(i).copied().unwrap_or(false))
                .count()
        };
        Identification {
            bags: self.prototype_bags.len(),
            initial: count(&self.initial_prototypes),
            last: count(&self.prototypes),
        }
    }

    fn diagnostics(&self) -> Vec<(String, f64)> {
        let last = *self.objectives.last().unwrap_or(&0.0);
        let mut d = vec![
            ("objective".to_string(), last),
            ("objective_initial".to_string(), self.objectives[0]),
            ("rounds".to_string(), (self.objectives.len() - 1) as f64),
            ("sigma".to_string(), self.sigma),
        ];
        if self.projection.kind == ProjectionKind::Mmida {
            d.push(("reverted_updates".into(), self.reverted_updates as f64));
        }
        d
    }
}

impl Projector for Bmida {
    fn fit<'a>(&self, train: impl Into<Bags<'a>>) -> Result<LinearProjection> {
        Ok(self.fit_traced(train)?.projection)
    }
}

impl Projector for Mmida {
    fn fit<'a>(&self, train: impl Into<Bags<'a>>) -> Result<LinearProjection> {
        Ok(self.fit_traced(train)?.projection)
    }
}

fn check(alpha: f64, tolerance: f64, rounds: usize, passes: usize) -> Result<()> {
    if !(alpha.is_finite() && alpha >= 0.0) {
        return Err(Error::parameter("alpha", alpha, "must be finite and ≥ 0"));
    }
    if !(tolerance.is_finite() && tolerance >= 0.0) {
        return Err(Error::parameter("ξ", tolerance, "must be finite and ≥ 0"));
    }
    if rounds == 0 || passes == 0 {
        return Err(Error::parameter(
            "iteration caps",
            format!("{rounds}, {passes}"),
            "must be at least 1",
        ));
    }
    Ok(())
}

/// B-MIDA's state after Algorithm 1's prototype search, which depends only on the
/// training bags (not on d or α): compute it once to fit a grid of (d, α).
#[derive(Debug, Clone)]
pub struct BmidaInit {
    t: TrainingInstances,
    train: Vec<usize>,
    /// Positions in `train` of the positive bags.
    positive: Vec<usize>,
    bag_ranges: Vec<std::ops::Range<usize>>,
    neg_protos: DMatrix<f64>,
    neg_plain_mean: DVector<f64>,
    /// D × D scatters of the dense path (empty on the span path, D > n).
    neg_within: DMatrix<f64>,
    neg_about_own: DMatrix<f64>,
    /// ω_q = n_q / N: the share of negative bag q among the negative instances, so
    /// that the negative instance mean is Σ_q ω_q b_q.
    neg_weights: Vec<f64>,
    /// The chosen kernel width.
    pub sigma: f64,
    /// Initial prototype rows, one per positive bag.
    protos: Vec<usize>,
}

impl BmidaInit {
    /// Algorithm 1 up to (not including) the initial G: kernel-density prototypes for
    /// every σ, keeping the σ whose mean positive prototype lies farthest from the mean
    /// negative prototype.
    pub fn new(data: &Dataset, train: &[usize], scaling: InputScaling) -> Result<Self> {
        let labels = data.training_labels(train, 2)?;
        if data.n_classes() != 2 {
            return Err(Error::data(
                data.name(),
                format!(
                    "B-MIDA needs two classes, found {}; use mmida",
                    data.n_classes()
                ),
            ));
        }
        let t = TrainingInstances::new(data, train, scaling)?;
        let dim = t.x.ncols();
        let positive: Vec<usize> = (0..train.len()).filter(|&k| labels[k] == 1).collect();
        let negative: Vec<usize> = (0..train.len()).filter(|&k| labels[k] == 0).collect();
        let negative_rows: Vec<usize> = negative.iter().flat_map(|&k| t.bag_rows(k)).collect();

        // Negative prototypes (eq. 4) and the mean negative prototype (eq. 5), fixed.
        let mut neg_protos = DMatrix::zeros(negative.len(), dim);
        for (q, &k) in negative.iter().enumerate() {
            let members: Vec<usize> = t.bag_rows(k).collect();
            neg_protos.set_row(q, &mean_of_rows(&t.x, &members).transpose());
        }
        let neg_mean = mean_of_rows(&t.x, &negative_rows);
        let neg_plain_mean = neg_protos.row_mean().transpose();
        let all_neg: Vec<usize> = (0..negative.len()).collect();
        let (neg_within, neg_about_own) = if t.is_wide() {
            (DMatrix::zeros(0, 0), DMatrix::zeros(0, 0))
        } else {
            (
                scatter_about(&neg_protos, &all_neg, &neg_mean),
                scatter_about(&neg_protos, &all_neg, &neg_plain_mean),
            )
        };
        let neg_weights = negative
            .iter()
            .map(|&k| t.bag_rows(k).len() as f64 / negative_rows.len() as f64)
            .collect();

        let bag_ranges: Vec<_> = positive.iter().map(|&k| t.bag_rows(k)).collect();
        let group_of = vec![0; bag_ranges.len()];
        let choices = if t.is_wide() {
            let gram = super::span::gram(&t);
            kde_choices_gram(&gram, &bag_ranges, &[negative_rows], &group_of)
        } else {
            let groups = [t.x.select_rows(&negative_rows)];
            kde_choices(&t.x, &bag_ranges, &groups, &group_of)
        };
        let mut best = (f64::NEG_INFINITY, 0);
        for s in 0..SIGMA_GRID.len() {
            let chosen: Vec<usize> = choices.iter().map(|c| c[s]).collect();
            let dist = (mean_of_rows(&t.x, &chosen) - &neg_mean).norm();
            if dist > best.0 {
                best = (dist, s);
            }
        }
        Ok(BmidaInit {
            protos: choices.iter().map(|c| c[best.1]).collect(),
            sigma: SIGMA_GRID[best.1],
            t,
            train: train.to_vec(),
            positive,
            bag_ranges,
            neg_protos,
            neg_plain_mean,
            neg_within,
            neg_about_own,
            neg_weights,
        })
    }
}

impl Bmida {
    /// Fits B-MIDA and returns the projection with its optimisation trace.
    pub fn fit_traced<'a>(&self, train: impl Into<Bags<'a>>) -> Result<MidaFit> {
        let train = train.into();
        self.check()?;
        super::check_fit(self.dim, &train)?;
        let (data, train) = (train.dataset(), &*train.indices());
        let init = BmidaInit::new(data, train, self.scaling)?;
        self.fit_from(data, &init)
    }

    /// Checks the parameters alone, before any data is read.
    pub fn check(&self) -> Result<()> {
        check(
            self.alpha,
            self.tolerance,
            self.max_rounds,
            self.max_prototype_passes,
        )
    }

    /// Algorithm 1's initial G and Algorithm 2, from an initialisation computed on the
    /// same `data` (whose input scaling it keeps; `self.scaling` is not consulted).
    pub fn fit_from(&self, data: &Dataset, init: &BmidaInit) -> Result<MidaFit> {
        self.check()?;
        if self.dim == 0 || self.dim > data.dim() {
            return Err(Error::parameter(
                "dim",
                self.dim,
                format!("must be at most the {} features", data.dim()),
            ));
        }
        let t = &init.t;
        let train = &init.train;
        let neg_protos = &init.neg_protos;
        let neg_plain_mean = &init.neg_plain_mean;
        let neg_within = &init.neg_within;
        let neg_about_own = &init.neg_about_own;
        let bag_ranges = &init.bag_ranges;
        let positive = &init.positive;
        let sigma = init.sigma;
        let lp = positive.len() as f64;
        let ln = neg_protos.nrows() as f64;
        let mut protos = init.protos.clone();
        let initial = protos.clone();
        // M = S_b − α S_w (eqs. 1, 3, 6, 7). With A the positive prototypes,
        // Σ_p Σ_q (a_p − b_q)(a_p − b_q)ᵀ = l⁻ S_A + l⁺ S_B + l⁺l⁻ (ā − b̄)(ā − b̄)ᵀ,
        // each scatter about its own plain mean.
        let objective_matrix = |protos: &[usize]| -> DMatrix<f64> {
            let pos_mean = mean_of_rows(&t.x, protos);
            let pos_within = scatter_about(&t.x, protos, &pos_mean);
            let gap = &pos_mean - neg_plain_mean;
            let sb = &pos_within * ln + neg_about_own * lp + (&gap * gap.transpose()) * (lp * ln);
            sb - (pos_within + neg_within) * self.alpha
        };
        // The span path (D > n): M = FᵀCF with F the l⁺ + l⁻ prototypes (see
        // `bmida_factors`), solved without the D × D matrix.
        let wide = t.is_wide();
        let solve = |protos: &[usize]| -> (DMatrix<f64>, f64) {
            if wide {
                let (f, c) = bmida_factors(&t.x, protos, neg_protos, &init.neg_weights, self.alpha);
                let (g, _) = top_eigenvectors_factored(&f, &c, self.dim);
                let fg = &f * &g;
                (g, (fg.transpose() * c * fg).trace())
            } else {
                let m = objective_matrix(protos);
                let g = top_eigenvectors(m.clone(), self.dim).0;
                let obj = trace_objective(&m, &g);
                (g, obj)
            }
        };
        let (mut g, first) = solve(&protos);
        let mut objectives = vec![first];

        // Algorithm 2.
        for _ in 0..self.max_rounds {
            // First step (eq. 9): with G fixed, each prototype maximises
            // T_p(x) = Σ_q ‖Gᵀ(x − b_q)‖² − α‖Gᵀ(x − m⁺)‖²
            //        = l⁻‖Gᵀx − z̄‖² − α‖Gᵀx − Gᵀm⁺‖² + const, z̄ the mean of Gᵀb_q.
            let y = &t.x * &g;
            let z_mean = (neg_protos * &g).row_mean();
            for _ in 0..self.max_prototype_passes {
                let m = y.select_rows(&protos).row_mean();
                let score = |r: usize| {
                    let yr = y.row(r);
                    ln * (yr - &z_mean).norm_squared() - self.alpha * (yr - &m).norm_squared()
                };
                let mut changed = false;
                for (p, range) in bag_ranges.iter().enumerate() {
                    let mut arg = protos[p];
                    let mut top = score(arg);
                    for r in range.clone() {
                        let s = score(r);
                        if s > top {
                            (top, arg) = (s, r);
                        }
                    }
                    changed |= arg != protos[p];
                    protos[p] = arg;
                }
                if !changed {
                    break;
                }
            }
            // Second step (eq. 10): G from the top-d eigenvectors.
            let obj;
            (g, obj) = solve(&protos);
            let previous = *objectives.last().unwrap_or(&obj);
            objectives.push(obj);
            if converged(previous, obj, self.tolerance) {
                break;
            }
        }

        let to_global = |v: &[usize]| -> Vec<usize> {
            v.iter().map(|&r| global_index(data, train, t, r)).collect()
        };
        let mut fit = MidaFit {
            projection: t.projection(ProjectionKind::Bmida, &g, vec![]),
            objectives,
            sigma,
            prototype_bags: positive.iter().map(|&k| train[k]).collect(),
            initial_prototypes: to_global(&initial),
            prototypes: to_global(&protos),
            reverted_updates: 0,
        };
        fit.projection.diagnostics = fit.diagnostics();
        Ok(fit)
    }
}

impl Mmida {
    /// Fits M-MIDA and returns the projection with its optimisation trace.
    ///
    /// One safeguard beyond Algorithm 4: the prototype step for class c holds every
    /// class mean fixed, but m_c also enters the between-class terms of the other
    /// classes (eq. 14), so re-centring m_c can lower the objective. An update of a
    /// class that would lower the objective (16) is undone (and counted), which keeps
    /// the ascent monotone.
    pub fn fit_traced<'a>(&self, train: impl Into<Bags<'a>>) -> Result<MidaFit> {
        let train = train.into();
        self.check()?;
        super::check_fit(self.dim, &train)?;
        let (data, train) = (train.dataset(), &*train.indices());
        let labels = data.training_labels(train, 2)?;
        let t = TrainingInstances::new(data, train, self.scaling)?;
        let dim = t.x.ncols();
        // Classes present among the training bags, and their bags.
        let present: Vec<usize> = (0..data.n_classes())
            .filter(|&c| labels.contains(&c))
            .collect();
        let class_bags: Vec<Vec<usize>> = present
            .iter()
            .map(|&c| (0..train.len()).filter(|&k| labels[k] == c).collect())
            .collect();
        let order: Vec<usize> = class_bags.iter().flatten().copied().collect();
        let bag_ranges: Vec<_> = order.iter().map(|&k| t.bag_rows(k)).collect();
        // Class slot (0..C') of each entry of `order`.
        let slot: Vec<usize> = class_bags
            .iter()
            .enumerate()
            .flat_map(|(s, bags)| std::iter::repeat_n(s, bags.len()))
            .collect();
        let rows_of_other_classes: Vec<Vec<usize>> = (0..present.len())
            .map(|s| {
                (0..t.len())
                    .filter(|&r| labels[t.bag_of[r]] != present[s])
                    .collect()
            })
            .collect();
        let classes = present.len();
        let other = (classes - 1) as f64;

        let class_means = |protos: &[usize]| -> Vec<DVector<f64>> {
            (0..classes)
                .map(|s| {
                    let members: Vec<usize> = (0..protos.len())
                        .filter(|&i| slot[i] == s)
                        .map(|i| protos[i])
                        .collect();
                    mean_of_rows(&t.x, &members)
                })
                .collect()
        };

        // Algorithm 3: KDE prototypes against the other classes' instances (eq. 18);
        // keep the σ maximising Σ_c Σ_{e≠c} ‖m_c − m_e‖.
        let choices = if t.is_wide() {
            let gram = super::span::gram(&t);
            kde_choices_gram(&gram, &bag_ranges, &rows_of_other_classes, &slot)
        } else {
            let groups: Vec<DMatrix<f64>> = rows_of_other_classes
                .iter()
                .map(|rows| t.x.select_rows(rows))
                .collect();
            kde_choices(&t.x, &bag_ranges, &groups, &slot)
        };
        let mut best = (f64::NEG_INFINITY, 0);
        for s in 0..SIGMA_GRID.len() {
            let chosen: Vec<usize> = choices.iter().map(|c| c[s]).collect();
            let means = class_means(&chosen);
            let spread: f64 = (0..classes)
                .flat_map(|c| (0..classes).map(move |e| (c, e)))
                .filter(|(c, e)| c != e)
                .map(|(c, e)| (&means[c] - &means[e]).norm())
                .sum();
            if spread > best.0 {
                best = (spread, s);
            }
        }
        let sigma = SIGMA_GRID[best.1];
        let mut protos: Vec<usize> = choices.iter().map(|c| c[best.1]).collect();
        let initial = protos.clone();

        // M = S_b − α S_w (eqs. 12, 14): with S_c the scatter of class c's prototypes
        // about m_c, Σ_i Σ_{e≠c} (p_ci − m_e)(p_ci − m_e)ᵀ = (C−1) S_c
        // + l_c Σ_{e≠c} (m_c − m_e)(m_c − m_e)ᵀ.
        let objective_matrix = |protos: &[usize]| -> DMatrix<f64> {
            let means = class_means(protos);
            let mut m = DMatrix::zeros(dim, dim);
            for c in 0..classes {
                let members: Vec<usize> = (0..protos.len())
                    .filter(|&i| slot[i] == c)
                    .map(|i| protos[i])
                    .collect();
                m += scatter_about(&t.x, &members, &means[c]) * (other - self.alpha);
                for e in (0..classes).filter(|&e| e != c) {
                    let gap = &means[c] - &means[e];
                    m += (&gap * gap.transpose()) * members.len() as f64;
                }
            }
            m
        };
        // Objective (16) in projected coordinates: Σ_c Σ_i T_{c,i}.
        let projected_objective = |y: &DMatrix<f64>, protos: &[usize]| -> f64 {
            let mut means = vec![DVector::zeros(y.ncols()); classes];
            let mut counts = vec![0usize; classes];
            for (i, &r) in protos.iter().enumerate() {
                means[slot[i]] += y.row(r).transpose();
                counts[slot[i]] += 1;
            }
            for c in 0..classes {
                means[c] /= counts[c] as f64;
            }
            protos
                .iter()
                .enumerate()
                .map(|(i, &r)| {
                    let yr = y.row(r).transpose();
                    (0..classes)
                        .map(|e| {
                            let d = (&yr - &means[e]).norm_squared();
                            if e == slot[i] {
                                -self.alpha * d
                            } else {
                                d
                            }
                        })
                        .sum::<f64>()
                })
                .sum()
        };

        // The span path (D > n): M = FᵀCF with F the prototypes, one per bag (eq. 14
        // over the rows of F; see `mmida_factors`).
        let wide = t.is_wide();
        let solve = |protos: &[usize]| -> (DMatrix<f64>, f64) {
            if wide {
                let f = t.x.select_rows(protos);
                let c = mmida_factors(&slot, classes, self.alpha);
                let (g, _) = top_eigenvectors_factored(&f, &c, self.dim);
                let fg = &f * &g;
                (g, (fg.transpose() * c * fg).trace())
            } else {
                let m = objective_matrix(protos);
                let g = top_eigenvectors(m.clone(), self.dim).0;
                let obj = trace_objective(&m, &g);
                (g, obj)
            }
        };
        let (mut g, first) = solve(&protos);
        let mut objectives = vec![first];
        let mut reverted = 0;

        // Algorithm 4.
        for _ in 0..self.max_rounds {
            let y = &t.x * &g;
            for c in 0..classes {
                let before = protos.clone();
                let base = projected_objective(&y, &protos);
                for _ in 0..self.max_prototype_passes {
                    let means: Vec<DVector<f64>> = {
                        let full = class_means(&protos);
                        full.iter().map(|m| g.transpose() * m).collect()
                    };
                    // T_{c,i}(x) = Σ_{e≠c} ‖Gᵀx − Gᵀm_e‖² − α‖Gᵀx − Gᵀm_c‖² (eq. 16).
                    let score = |r: usize| -> f64 {
                        let yr = y.row(r).transpose();
                        (0..classes)
                            .map(|e| {
                                let d = (&yr - &means[e]).norm_squared();
                                if e == c {
                                    -self.alpha * d
                                } else {
                                    d
                                }
                            })
                            .sum()
                    };
                    let mut changed = false;
                    for i in (0..protos.len()).filter(|&i| slot[i] == c) {
                        let mut arg = protos[i];
                        let mut top = score(arg);
                        for r in bag_ranges[i].clone() {
                            let s = score(r);
                            if s > top {
                                (top, arg) = (s, r);
                            }
                        }
                        changed |= arg != protos[i];
                        protos[i] = arg;
                    }
                    if !changed {
                        break;
                    }
                }
                let after = projected_objective(&y, &protos);
                if after < base - 1e-12 * base.abs().max(1.0) {
                    protos = before;
                    reverted += 1;
                }
            }
            let obj;
            (g, obj) = solve(&protos);
            let previous = *objectives.last().unwrap_or(&obj);
            objectives.push(obj);
            if converged(previous, obj, self.tolerance) {
                break;
            }
        }

        let to_global = |v: &[usize]| -> Vec<usize> {
            v.iter()
                .map(|&r| global_index(data, train, &t, r))
                .collect()
        };
        let mut fit = MidaFit {
            projection: t.projection(ProjectionKind::Mmida, &g, vec![]),
            objectives,
            sigma,
            prototype_bags: order.iter().map(|&k| train[k]).collect(),
            initial_prototypes: to_global(&initial),
            prototypes: to_global(&protos),
            reverted_updates: reverted,
        };
        fit.projection.diagnostics = fit.diagnostics();
        Ok(fit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::projection::test_support::*;

    /// Bags of `size` instances in 2 + `noise` dimensions: relevant dimensions N(μ, 2I)
    /// with μ = centres[class of the instance], noise dimensions N(0, 9). Bag b of class c
    /// holds one instance of "concept" c (c ≥ 1 in binary sets, every c in multi-class
    /// sets) and background instances otherwise. Returns the set and the global index of
    /// each bag's concept instance (None for bags without one).
    fn planted(
        seed: u64,
        bags_per_class: usize,
        classes: usize,
        size: usize,
        noise: usize,
        binary: bool,
    ) -> (Dataset, Vec<Option<usize>>) {
        let dim = 2 + noise;
        let centres = [[-4.0, 4.0], [4.0, -4.0], [8.0, 8.0], [-2.0, 15.0]];
        let background = if binary { centres[1] } else { centres[3] };
        let z = normals(seed, bags_per_class * classes * size * dim);
        let mut z = z.into_iter();
        let (mut features, mut starts, mut ids, mut labels, mut planted) =
            (vec![], vec![0], vec![], vec![], vec![]);
        for c in 0..classes {
            for b in 0..bags_per_class {
                let has_concept = !binary || c == 1;
                let concept = if binary { centres[0] } else { centres[c] };
                for i in 0..size {
                    let mu = if has_concept && i == b % size {
                        concept
                    } else {
                        background
                    };
                    if has_concept && i == b % size {
                        planted.push(Some(features.len() / dim));
                    }
                    for (j, m) in mu.iter().enumerate() {
                        let _ = j;
                        features.push(m + 2f64.sqrt() * z.next().unwrap());
                    }
                    for _ in 0..noise {
                        features.push(3.0 * z.next().unwrap());
                    }
                }
                if !has_concept {
                    planted.push(None);
                }
                starts.push(features.len() / dim);
                ids.push(format!("{c}-{b}"));
                labels.push(c);
            }
        }
        let names = (0..classes).map(|c| c.to_string()).collect();
        let data =
            Dataset::new("planted", dim, features, starts, ids, Some(labels), names).unwrap();
        (data, planted)
    }

    fn all_bags(d: &Dataset) -> Vec<usize> {
        (0..d.n_bags()).collect()
    }

    fn non_decreasing(objectives: &[f64]) -> bool {
        objectives
            .windows(2)
            .all(|w| w[1] >= w[0] - 1e-9 * w[0].abs().max(1.0))
    }

    #[test]
    fn bmida_objective_never_decreases_and_columns_are_orthonormal() {
        for seed in 0..6 {
            let (data, _) = planted(seed, 15, 2, 6, 10, true);
            for alpha in [0.0, 0.1, 1.0, 10.0, 100.0] {
                let fit = Bmida::new(3, alpha).fit_traced(&data).unwrap();
                assert!(
                    non_decreasing(&fit.objectives),
                    "seed {seed} α {alpha}: {:?}",
                    fit.objectives
                );
                assert!(orthonormality_error(&fit.projection) < 1e-10);
            }
        }
    }

    #[test]
    fn mmida_objective_never_decreases_and_columns_are_orthonormal() {
        for seed in 0..4 {
            let (data, _) = planted(seed, 10, 3, 5, 8, false);
            for alpha in [0.0, 0.5, 1.0, 10.0] {
                let fit = Mmida::new(2, alpha).fit_traced(&data).unwrap();
                assert!(
                    non_decreasing(&fit.objectives),
                    "seed {seed} α {alpha}: {:?}",
                    fit.objectives
                );
                assert!(orthonormality_error(&fit.projection) < 1e-10);
            }
        }
    }

    /// tr[Gᵀ(S_b − αS_w)G] summed literally from eqs. 1–7 for given prototypes.
    fn bmida_objective_by_definition(fit: &MidaFit, data: &Dataset, alpha: f64) -> f64 {
        let p = &fit.projection;
        let project = |x: &[f64]| {
            let mut out = vec![0.0; p.output_dim];
            p.apply_row(x, &mut out);
            DVector::from_vec(out)
        };
        let pos: Vec<DVector<f64>> = fit
            .prototypes
            .iter()
            .map(|&i| project(data.instance(i)))
            .collect();
        let labels = data.labels().unwrap();
        let mut neg = Vec::new();
        let mut neg_instances = Vec::new();
        for b in (0..data.n_bags()).filter(|&b| labels[b] == 0) {
            let ys: Vec<DVector<f64>> = data.bag(b).instances().map(project).collect();
            neg.push(ys.iter().sum::<DVector<f64>>() / ys.len() as f64);
            neg_instances.extend(ys);
        }
        let pos_mean = pos.iter().sum::<DVector<f64>>() / pos.len() as f64;
        let neg_mean = neg_instances.iter().sum::<DVector<f64>>() / neg_instances.len() as f64;
        let between: f64 = pos
            .iter()
            .flat_map(|a| neg.iter().map(move |b| (a - b).norm_squared()))
            .sum();
        let within: f64 = pos
            .iter()
            .map(|a| (a - &pos_mean).norm_squared())
            .sum::<f64>()
            + neg
                .iter()
                .map(|b| (b - &neg_mean).norm_squared())
                .sum::<f64>();
        between - alpha * within
    }

    #[test]
    fn bmida_logged_objective_matches_the_papers_definition() {
        for seed in 0..3 {
            let (data, _) = planted(seed + 10, 12, 2, 5, 6, true);
            let alpha = 0.7;
            let fit = Bmida::new(2, alpha).fit_traced(&data).unwrap();
            let direct = bmida_objective_by_definition(&fit, &data, alpha);
            let logged = *fit.objectives.last().unwrap();
            assert!(
                (direct - logged).abs() < 1e-8 * logged.abs(),
                "{direct} vs {logged}"
            );
        }
    }

    #[test]
    fn bmida_finds_the_planted_positives_and_their_subspace() {
        // Mostly-clean version of MIDA §5.1 set one: KDE should find nearly all planted
        // positives and G should span the two relevant dimensions.
        let (data, planted_at) = planted(3, 20, 2, 8, 4, true);
        let fit = Bmida::new(2, 1.0).fit_traced(&data).unwrap();
        let truth: Vec<usize> = fit
            .prototype_bags
            .iter()
            .map(|&b| planted_at[b].unwrap())
            .collect();
        let hits = |v: &[usize]| v.iter().zip(&truth).filter(|(a, b)| a == b).count();
        assert!(
            hits(&fit.initial_prototypes) >= 18,
            "KDE found {}",
            hits(&fit.initial_prototypes)
        );
        assert!(hits(&fit.prototypes) >= 18);
        // The discriminant direction is μ⁺ − μ⁻ ∝ (−1, 1) in raw coordinates, i.e.
        // u ∝ (−σ₁, σ₂) in the z-scored coordinates G acts on: span(G) must contain it.
        let g = DMatrix::from_row_slice(data.dim(), 2, &fit.projection.matrix);
        let s = &fit.projection.scale;
        let mut u = DVector::zeros(data.dim());
        (u[0], u[1]) = (-s[0], s[1]);
        let u = u.normalize();
        let captured = (g.transpose() * u).norm_squared();
        assert!(
            captured > 0.95,
            "captured {captured} of the discriminant direction"
        );
    }

    #[test]
    fn kde_blocks_match_direct_distances() {
        // Bag sizes above the block size exercise the blocking.
        let x = DMatrix::from_vec(300, 5, normals(21, 1500)) * 10.0;
        let bags = vec![0..150, 150..200, 200..210];
        let negatives: Vec<usize> = (210..300).collect();
        let groups = [x.select_rows(&negatives)];
        let blocked = kde_choices(&x, &bags, &groups, &[0, 0, 0]);
        // The span path's version over the Gram matrix.
        let gram = &x * x.transpose();
        let from_gram =
            kde_choices_gram(&gram, &bags, std::slice::from_ref(&negatives), &[0, 0, 0]);
        for got in [blocked, from_gram] {
            for (k, range) in bags.iter().enumerate() {
                for (s, &sigma) in SIGMA_GRID.iter().enumerate() {
                    // Direct: log Σ exp(−d²/σ) with the same shift, from explicit differences.
                    let log_p = |i: usize| {
                        let d2: Vec<f64> = negatives
                            .iter()
                            .map(|&j| (x.row(i) - x.row(j)).norm_squared())
                            .collect();
                        let min = d2.iter().copied().fold(f64::INFINITY, f64::min);
                        -min / sigma
                            + d2.iter()
                                .map(|v| (-(v - min) / sigma).exp())
                                .sum::<f64>()
                                .ln()
                    };
                    let lowest = range.clone().map(log_p).fold(f64::INFINITY, f64::min);
                    let chosen = log_p(got[k][s]);
                    assert!(
                        (chosen - lowest).abs() <= 1e-9 * lowest.abs().max(1.0),
                        "bag {k} σ {sigma}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_shared_initialisation_gives_the_same_fits_as_separate_ones() {
        let (data, _) = planted(8, 10, 2, 6, 6, true);
        let train = all_bags(&data);
        let init = BmidaInit::new(&data, &train, InputScaling::Centre).unwrap();
        for (dim, alpha) in [(1, 0.1), (3, 1.0), (5, 10.0)] {
            let b = Bmida::new(dim, alpha);
            let shared = b.fit_from(&data, &init).unwrap();
            let separate = b.fit_traced(data.select(&train)).unwrap();
            assert_eq!(shared.projection, separate.projection);
            assert_eq!(shared.objectives, separate.objectives);
        }
    }

    #[test]
    fn bmida_is_deterministic_across_thread_counts() {
        let (data, _) = planted(5, 10, 2, 6, 6, true);
        let fit = || Bmida::new(3, 1.0).fit(&data).unwrap();
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap()
            .install(fit);
        assert_eq!(one, fit());
    }

    #[test]
    fn bmida_rejects_three_classes_and_bad_alpha() {
        let (data, _) = planted(1, 4, 3, 3, 2, false);
        assert!(Bmida::new(1, 1.0).fit(&data).is_err());
        let (data, _) = planted(1, 4, 2, 3, 2, true);
        assert!(Bmida::new(1, -1.0).fit(&data).is_err());
        assert!(Bmida::new(1, 1.0).fit(data.select(&[0, 1])).is_err());
    }
}
