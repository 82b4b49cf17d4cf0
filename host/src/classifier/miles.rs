//! MILES (Chen, Bi & Wang, "MILES: Multiple-Instance Learning via Embedded Instance
//! Selection", IEEE TPAMI 28(12), 2006): every bag becomes one vector of its similarities
//! to the training instances, and a 1-norm SVM on those vectors selects the few instances
//! (prototypes) that decide.
//!
//! - Embedding: m(B) = [s(x¹, B), …, s(xᴺ, B)] with s(xᵏ, B) = maxⱼ exp(−γ‖xⱼ − xᵏ‖²)
//!   over the N training instances xᵏ (the paper writes γ = 1/σ²). Features are z-scored
//!   on the training instances first, as mi-SVM and sMIL do here, so that one γ suits data
//!   whose attributes have different units; γ defaults to 1 / (number of non-constant
//!   features), the RBF default of the other instance kernels. When the training bags
//!   hold more than `max_prototypes` instances, that many are drawn without replacement
//!   (seeded by `seed`) as the candidate prototypes.
//! - 1-norm SVM (the paper's LP): minimise Σₖ|wₖ| + C(μ Σ₊ ξᵢ + (1 − μ) Σ₋ ξᵢ) subject to
//!   yᵢ(w·m(Bᵢ) + b) ≥ 1 − ξᵢ, ξ ≥ 0, with w = u − v, u, v ≥ 0, solved by an interior
//!   point on the bags × bags normal equations (`optim::l1_svm`). C = 1/λ of the paper;
//!   μ weighs errors on positive bags against errors on negative ones; each bag's cost is
//!   also multiplied by its class weight.
//! - The model keeps only the selected prototypes, the candidates with
//!   |wₖ| > [`WEIGHT_TOLERANCE`] · maxₖ|wₖ|, and their weights: a bag's score is
//!   f(B) = Σₖ wₖ s(xᵏ, B) + b, positive when f(B) > 0.
//! - Instance scores (the paper's instance classification): each selected prototype's
//!   term wₖ s(xᵏ, B) belongs to the bag's instance nearest xᵏ; an instance's
//!   contribution g(xⱼ) is the sum of the terms it holds, so f(B) = Σⱼ g(xⱼ) + b. The paper
//!   labels xⱼ positive when g(xⱼ) > θ with θ = −b/|J|, J the instances that hold at least
//!   one term; the score reported is g(xⱼ) − θ, so that the rule is "positive above 0"
//!   and the scores of J sum to f(B). (With no prototype selected, J is the whole bag.)
//!
//! Two classes as in the paper (class 1 the positive one); more by one-vs-rest on one
//! embedding: machine c is the 1-norm SVM of class c (its errors weighed μ) against the
//! rest (1 − μ), the model keeps the prototypes any machine selects with each machine's
//! weights over them (0 where it did not select one), and the largest f_c(B) wins; an
//! instance's score is its contribution to the winning machine's f_c.

use rand::seq::index::sample;
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::imbalance::ClassWeight;
use super::mi_svm::{standardisation, zscore};
use super::svm::decision_scores;
use super::{check_dim, BagModel, BagScores, Classifier};
use crate::data::{Bags, Dataset};
use crate::error::{Error, Result};
use crate::explain::{Explanation, InstanceScore};
use crate::fast::squared_norms;

/// A candidate prototype is selected when its |w| exceeds this fraction of the largest |w|:
/// the interior point leaves the weights of the others at round-off, not at exact zero.
pub const WEIGHT_TOLERANCE: f64 = 1e-6;

/// MILES hyper-parameters. The defaults: C = 10 (λ = 0.1), μ = 0.5 (the paper's), γ = 1 /
/// (number of non-constant features) on z-scored features, at most 10 000 prototypes.
/// (C = 10 is measured: on musk1, 2 × 10-fold, accuracy 0.870 against 0.832 at C = 1.)
///
/// ```
/// use mil_toolkit::classifier::miles::Miles;
/// use mil_toolkit::classifier::{BagModel, Classifier};
///
/// let data = mil_toolkit::data::load("musk1")?;
/// let model = Miles::default().fit(&data)?;
/// assert!(model.weights.len() < data.n_instances()); // a few prototypes are kept
/// let labels = model.scores(&data)?.labels();
/// assert_eq!(labels.len(), data.n_bags());
/// # Ok::<(), mil_toolkit::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Miles {
    /// γ = 1/σ² of the similarity exp(−γ‖x − y‖²) on z-scored features; `None`: 1 /
    /// (number of non-constant features).
    pub gamma: Option<f64>,
    /// C = 1/λ: the cost of the bags' errors against the 1-norm of w.
    pub cost: f64,
    /// μ ∈ (0, 1): the share of C on positive bags' errors (1 − μ on negative bags').
    pub mu: f64,
    /// Most candidate prototypes; more training instances are subsampled with `seed`.
    pub max_prototypes: usize,
    /// Seed of the subsample of candidate prototypes.
    pub seed: u64,
    /// Each bag's cost is multiplied by the weight of its class.
    #[serde(default, skip_serializing_if = "ClassWeight::is_none")]
    pub class_weight: ClassWeight,
}

impl Default for Miles {
    fn default() -> Self {
        Miles {
            gamma: None,
            cost: 10.0,
            mu: 0.5,
            max_prototypes: 10_000,
            seed: 0,
            class_weight: ClassWeight::None,
        }
    }
}

crate::params::setters!(Miles {
    gamma: Option<f64>,
    cost: f64,
    mu: f64,
    max_prototypes: usize,
    seed: u64,
    class_weight: ClassWeight,
});

/// Largest number of candidate prototypes: the embedded training bags and the LP grow
/// with it.
pub const MAX_PROTOTYPES: usize = 1_000_000;

impl Miles {
    /// Checks the hyper-parameters alone, before any data is read.
    pub fn check(&self) -> Result<()> {
        crate::params::check_weight("cost", self.cost, true)?;
        if let Some(g) = self.gamma {
            crate::params::check_weight("gamma", g, true)?;
        }
        if !(self.mu > 0.0 && self.mu < 1.0) {
            return Err(Error::parameter(
                "mu",
                self.mu,
                "weighs positive against negative bags' errors: it must be in (0, 1)",
            ));
        }
        crate::params::check_count("max_prototypes", self.max_prototypes, MAX_PROTOTYPES)?;
        self.class_weight.check()
    }

    /// The settings an inner CV tries when asked to tune MILES (`mil cv --tune`):
    /// C ∈ {C kept, 1, 100}.
    pub fn default_grid(&self) -> Vec<Miles> {
        let mut costs = vec![self.cost];
        costs.extend([1.0, 100.0].into_iter().filter(|&c| c != self.cost));
        costs.into_iter().map(|c| self.cost(c)).collect()
    }

    /// The embedding of this fit (z-scoring, γ, candidate prototypes) on the bags `train`,
    /// without the SVM: what [`Miles::fit`] starts with, and a transformer on its own.
    pub fn embedding<'a>(&self, train: impl Into<Bags<'a>>) -> Result<MilesEmbedding> {
        let train = train.into();
        let (data, train) = (train.dataset(), &*train.indices());
        self.check()?;
        if train.is_empty() {
            return Err(Error::data(data.name(), "no training bags"));
        }
        let dim = data.dim();
        let picked = data.copy_bags(train);
        let (mean, inv_sd) = standardisation(picked.features(), dim);
        let active = inv_sd.iter().filter(|&&s| s > 0.0).count().max(1);
        let gamma = self.gamma.unwrap_or(1.0 / active as f64);
        let n = picked.n_instances();
        let chosen: Vec<usize> = if n > self.max_prototypes {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(self.seed);
            let mut idx = sample(&mut rng, n, self.max_prototypes).into_vec();
            idx.sort_unstable();
            idx
        } else {
            (0..n).collect()
        };
        let prototypes = chosen
            .iter()
            .flat_map(|&i| zscore(&picked.features()[i * dim..(i + 1) * dim], &mean, &inv_sd))
            .collect();
        Ok(MilesEmbedding {
            dim,
            mean,
            inv_sd,
            gamma,
            prototypes,
        })
    }
}

/// Memory and work of fitting MILES on data of this shape: the embedded training bags
/// (bags × candidate prototypes) held twice (the vectors and the interior point's scaled
/// copy) with room for a group's distances, the bags × bags normal equations and their
/// factor, beside the data and its z-scored copy; the work is one squared distance per
/// pair of instances and, for the LP, about 20 interior-point steps of bags² × N each.
pub fn footprint(shape: crate::params::Shape, max_prototypes: usize) -> crate::params::Estimate {
    let n = shape.instances.min(max_prototypes) as f64;
    let bags = shape.bags as f64;
    crate::params::Estimate::values(
        3.0 * bags * n + 2.0 * bags * bags + 3.0 * n + 2.0 * shape.values(),
        n * shape.instances as f64 * shape.dim as f64 + 20.0 * bags * bags * n,
    )
}

/// The fitted embedding: the z-scoring of the training instances, γ, and the candidate
/// prototypes (z-scored, row-major).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MilesEmbedding {
    /// Feature dimension.
    pub dim: usize,
    /// Mean of each feature over the training instances.
    pub mean: Vec<f64>,
    /// 1 / standard deviation of each feature (0 for a constant feature, which is dropped).
    pub inv_sd: Vec<f64>,
    /// γ of exp(−γ‖x − y‖²).
    pub gamma: f64,
    /// The prototypes, z-scored, row-major.
    pub prototypes: Vec<f64>,
}

impl MilesEmbedding {
    /// Number of prototypes (the embedded dimension).
    pub fn len(&self) -> usize {
        self.prototypes.len() / self.dim
    }

    /// True when there is no prototype.
    pub fn is_empty(&self) -> bool {
        self.prototypes.is_empty()
    }

    /// For each prototype, the bag's nearest instance (the first at the least squared
    /// distance) and that squared distance, on z-scored features.
    pub fn nearest(&self, bag: crate::data::Bag<'_>) -> Vec<(usize, f64)> {
        let norms = squared_norms(&self.prototypes, self.dim);
        nearest(
            &self.prototypes,
            &norms,
            self.dim,
            &self.mean,
            &self.inv_sd,
            bag,
        )
    }

    /// m(B) of each bag of `bags`, row-major bags × prototypes.
    pub fn transform<'a>(&self, bags: impl Into<Bags<'a>>) -> Result<Vec<f64>> {
        let bags = bags.into();
        let (data, bags) = (bags.dataset(), &*bags.indices());
        check_dim(data, self.dim)?;
        let norms = squared_norms(&self.prototypes, self.dim);
        Ok(groups(data, bags)
            .par_iter()
            .map(|group| {
                crate::cancel::checkpoint();
                let group: Vec<_> = group.iter().map(|&b| data.bag(b)).collect();
                let (p, (mean, inv_sd)) = (&self.prototypes, (&self.mean, &self.inv_sd));
                nearest_in_bags(p, &norms, self.dim, mean, inv_sd, &group)
                    .into_iter()
                    .flatten()
                    .map(|(_, d2)| (-self.gamma * d2).exp())
                    .collect::<Vec<_>>()
            })
            .collect::<Vec<_>>()
            .concat())
    }

    /// [`MilesEmbedding::transform`] of the training bags `bags` when the prototypes are
    /// all their instances, in order: the same values from about half the dot products.
    /// The instances' Gram matrix is symmetric and each entry depends on its two vectors
    /// alone ([`crate::fast::gram_block`]), so the block of two groups of bags serves both
    /// ways: the bags of the one against the prototypes of the other, and back.
    fn transform_training(&self, data: &Dataset, bags: &[usize]) -> Vec<f64> {
        let (dim, n) = (self.dim, self.len());
        let norms = squared_norms(&self.prototypes, dim);
        let groups = groups(data, bags);
        let lens = |g: usize| groups[g].iter().map(|&b| data.bag(b).len());
        // Each group's first instance (= prototype) and first bag (its row of the result).
        let mut starts = vec![(0, 0)];
        for (g, group) in groups.iter().enumerate() {
            let (i, b) = starts[g];
            starts.push((i + lens(g).sum::<usize>(), b + group.len()));
        }
        assert_eq!(
            starts[groups.len()].0,
            n,
            "every training instance is a prototype"
        );
        let instances = |g: usize| starts[g].0..starts[g + 1].0;
        let pairs: Vec<(usize, usize)> = (0..groups.len())
            .flat_map(|g| (0..=g).map(move |h| (h, g)))
            .collect();
        let parts: Vec<_> = pairs
            .par_iter()
            // One block buffer per worker: fresh ones cost page faults.
            .map_init(Vec::new, |dots, &(h, g)| {
                crate::cancel::checkpoint();
                let (rh, rg) = (instances(h), instances(g));
                let rows =
                    |r: &std::ops::Range<usize>| &self.prototypes[r.start * dim..r.end * dim];
                // dots[i][k] = xᵢ · pₖ for the instances i of g and the prototypes k of h.
                dots.resize(rg.len() * rh.len(), 0.0);
                crate::fast::gram_block(rows(&rg), rows(&rh), dim, dots);
                let (nh, ng) = (&norms[rh], &norms[rg]);
                let forward: Vec<Vec<f64>> = nearest_by_rows(dots, nh, ng, lens(g))
                    .into_iter()
                    .map(|run| run.into_iter().map(|(_, d2)| d2).collect())
                    .collect();
                // The same block read as pₖ · xᵢ for the prototypes k of g and the
                // instances i of h.
                let backward = if h < g {
                    nearest_by_cols(dots, ng, nh, lens(h))
                } else {
                    Vec::new()
                };
                (forward, backward)
            })
            .collect();
        let mut m = vec![0.0; bags.len() * n];
        let mut fill = |bag: usize, prototypes: std::ops::Range<usize>, d2: Vec<f64>| {
            let row = &mut m[bag * n..(bag + 1) * n];
            for (v, d2) in row[prototypes].iter_mut().zip(d2) {
                *v = (-self.gamma * d2).exp();
            }
        };
        for (&(h, g), (forward, backward)) in pairs.iter().zip(parts) {
            for (b, d2) in forward.into_iter().enumerate() {
                fill(starts[g].1 + b, instances(h), d2);
            }
            for (b, d2) in backward.into_iter().enumerate() {
                fill(starts[h].1 + b, instances(g), d2);
            }
        }
        m
    }

    /// Checks an embedding read from a file.
    pub fn validate(&self) -> Result<()> {
        let finite = |v: &[f64]| v.iter().all(|x| x.is_finite());
        if self.dim == 0
            || self.mean.len() != self.dim
            || self.inv_sd.len() != self.dim
            || !self.prototypes.len().is_multiple_of(self.dim)
        {
            return Err(Error::Model("MILES: vectors of the wrong length".into()));
        }
        if !(finite(&self.mean) && finite(&self.inv_sd) && finite(&self.prototypes))
            || self.inv_sd.iter().any(|&s| s < 0.0)
            || !(self.gamma > 0.0 && self.gamma.is_finite())
        {
            return Err(Error::Model(
                "MILES: a value is not finite (or a scale or gamma is not positive)".into(),
            ));
        }
        Ok(())
    }
}

/// The rows `row(bag)` of the bags `bags` of `data`, computed in parallel, concatenated
/// in order (each row depends on its bag alone, so not on the thread count).
fn embed(
    data: &Dataset,
    bags: &[usize],
    row: impl Fn(crate::data::Bag<'_>) -> Vec<f64> + Sync,
) -> Vec<f64> {
    bags.par_iter()
        .map(|&b| {
            crate::cancel::checkpoint();
            row(data.bag(b))
        })
        .collect::<Vec<_>>()
        .concat()
}

/// Instances per matrix product of [`MilesEmbedding::transform`].
const GROUP_INSTANCES: usize = 256;

/// `bags` in runs of whole bags of about [`GROUP_INSTANCES`] instances, so that one matrix
/// product serves many small bags.
fn groups<'b>(data: &Dataset, bags: &'b [usize]) -> Vec<&'b [usize]> {
    let mut groups = Vec::new();
    let (mut start, mut count) = (0, 0);
    for (i, &b) in bags.iter().enumerate() {
        count += data.bag(b).len();
        if count >= GROUP_INSTANCES || i + 1 == bags.len() {
            groups.push(&bags[start..=i]);
            (start, count) = (i + 1, 0);
        }
    }
    groups
}

/// The squared distance ‖a − b‖² from the squared norms and the dot product, at least 0.
fn squared_distance(norm_a: f64, norm_b: f64, dot: f64) -> f64 {
    (norm_a + norm_b - 2.0 * dot).max(0.0)
}

/// For each prototype (z-scored rows of `prototypes`, squared norms `norms`), the nearest
/// instance of `bag` after z-scoring and the squared distance.
fn nearest(
    prototypes: &[f64],
    norms: &[f64],
    dim: usize,
    mean: &[f64],
    inv_sd: &[f64],
    bag: crate::data::Bag<'_>,
) -> Vec<(usize, f64)> {
    nearest_in_bags(prototypes, norms, dim, mean, inv_sd, &[bag]).remove(0)
}

/// [`nearest`] for each bag of `bags`: the dot products of all the bags' instances with
/// the prototypes by one matrix product. Each dot product depends on its two vectors
/// alone ([`crate::fast::gram_block`]), so the result does not depend on how bags are
/// grouped.
fn nearest_in_bags(
    prototypes: &[f64],
    norms: &[f64],
    dim: usize,
    mean: &[f64],
    inv_sd: &[f64],
    bags: &[crate::data::Bag<'_>],
) -> Vec<Vec<(usize, f64)>> {
    let x: Vec<f64> = bags
        .iter()
        .flat_map(|bag| bag.instances().flat_map(|row| zscore(row, mean, inv_sd)))
        .collect();
    let (np, nx) = (prototypes.len() / dim, x.len() / dim);
    if np == 0 || nx == 0 {
        return vec![vec![(0, f64::INFINITY); np]; bags.len()];
    }
    // dots[i][k] = xᵢ · pₖ: a bag's instances are consecutive rows.
    let mut dots = vec![0.0; nx * np];
    crate::fast::gram_block(&x, prototypes, dim, &mut dots);
    nearest_by_rows(
        &dots,
        norms,
        &squared_norms(&x, dim),
        bags.iter().map(|b| b.len()),
    )
}

/// In the block `dots` (rows × columns, row-major, entry (i, k) = xᵢ · pₖ) whose rows come
/// in runs of `lens` (one run per bag), each run's nearest row to each column: its
/// index in the run (the first at the least squared distance) and the squared distance,
/// from the squared norms of the columns and of the rows.
fn nearest_by_rows(
    dots: &[f64],
    col_norms: &[f64],
    row_norms: &[f64],
    lens: impl Iterator<Item = usize>,
) -> Vec<Vec<(usize, f64)>> {
    let nc = col_norms.len();
    let mut first = 0;
    lens.map(|len| {
        let mut best = vec![f64::INFINITY; nc];
        let mut at = vec![0; nc];
        for j in 0..len {
            let (row, q) = (
                &dots[(first + j) * nc..(first + j + 1) * nc],
                row_norms[first + j],
            );
            for (((b, a), &d), &p) in best.iter_mut().zip(&mut at).zip(row).zip(col_norms) {
                let d2 = squared_distance(p, q, d);
                if d2 < *b {
                    (*b, *a) = (d2, j);
                }
            }
        }
        first += len;
        at.into_iter().zip(best).collect()
    })
    .collect()
}

/// The transpose of [`nearest_by_rows`]: in the block `dots` (entry (k, i) = pₖ · xᵢ)
/// whose columns come in runs of `lens`, each run's least squared distance to each row.
fn nearest_by_cols(
    dots: &[f64],
    row_norms: &[f64],
    col_norms: &[f64],
    lens: impl Iterator<Item = usize>,
) -> Vec<Vec<f64>> {
    let nc = col_norms.len();
    let mut first = 0;
    lens.map(|len| {
        let run = first..first + len;
        first += len;
        dots.chunks_exact(nc)
            .zip(row_norms)
            .map(|(row, &p)| {
                row[run.clone()]
                    .iter()
                    .zip(&col_norms[run.clone()])
                    .fold(f64::INFINITY, |b, (&d, &q)| {
                        b.min(squared_distance(p, q, d))
                    })
            })
            .collect()
    })
    .collect()
}

impl Classifier for Miles {
    type Model = MilesModel;

    fn fit<'a>(&self, train: impl Into<Bags<'a>>) -> Result<MilesModel> {
        let train = train.into();
        let (data, train) = (train.dataset(), &*train.indices());
        self.check()?;
        let labels = data.training_labels(train, 2)?;
        let n_classes = data.n_classes();
        let weights = self.class_weight.resolve(&labels, n_classes)?;
        let embedding = self.embedding(data.select(train))?;
        let n = embedding.len();
        let m = if n == train.iter().map(|&b| data.bag(b).len()).sum::<usize>() {
            embedding.transform_training(data, train)
        } else {
            embedding.transform(data.select(train))?
        };
        // Binary: class 1 against class 0; more classes: each class against the rest.
        let positives: Vec<usize> = if n_classes == 2 {
            vec![1]
        } else {
            (0..n_classes).collect()
        };
        let machines = positives
            .iter()
            .map(|&c| {
                let y: Vec<f64> = labels
                    .iter()
                    .map(|&l| if l == c { 1.0 } else { -1.0 })
                    .collect();
                let costs: Vec<f64> = labels
                    .iter()
                    .map(|&l| {
                        let share = if l == c { self.mu } else { 1.0 - self.mu };
                        self.cost * share * weights[l]
                    })
                    .collect();
                let solution = crate::optim::l1_svm::solve(&m, n, &y, &costs)?;
                // The interior point leaves unselected weights at round-off: 0.
                let largest = solution.w.iter().fold(0.0f64, |a, v| a.max(v.abs()));
                let w = solution
                    .w
                    .iter()
                    .map(|&wk| {
                        if wk.abs() > WEIGHT_TOLERANCE * largest {
                            wk
                        } else {
                            0.0
                        }
                    })
                    .collect::<Vec<f64>>();
                Ok((w, solution.bias))
            })
            .collect::<Result<Vec<_>>>()?;
        let dim = embedding.dim;
        let kept: Vec<usize> = (0..n)
            .filter(|&k| machines.iter().any(|(w, _)| w[k] != 0.0))
            .collect();
        let prototypes = kept
            .iter()
            .flat_map(|&k| embedding.prototypes[k * dim..(k + 1) * dim].iter().copied())
            .collect();
        let mut machines = machines.into_iter().map(|(w, bias)| MilesMachine {
            weights: kept.iter().map(|&k| w[k]).collect(),
            bias,
        });
        let first = machines.next().unwrap_or_default();
        Ok(MilesModel {
            params: *self,
            candidates: n,
            embedding: MilesEmbedding {
                prototypes,
                ..embedding
            },
            weights: first.weights,
            bias: first.bias,
            rest: machines.collect(),
        })
    }
}

/// One more machine of a multi-class MILES ([`MilesModel::rest`]): a weight per kept
/// prototype (0 where this machine did not select it) and its bias.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MilesMachine {
    /// wₖ of each kept prototype.
    pub weights: Vec<f64>,
    /// Bias b.
    pub bias: f64,
}

/// A fitted MILES: the selected prototypes (the embedding keeps only them), their
/// weights and the bias.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MilesModel {
    /// Hyper-parameters.
    pub params: Miles,
    /// How many candidate prototypes the fit chose from.
    pub candidates: usize,
    /// The z-scoring, γ and the selected prototypes.
    pub embedding: MilesEmbedding,
    /// The weight wₖ of each selected prototype (more classes: class 0's machine, 0 for
    /// a prototype it did not select).
    pub weights: Vec<f64>,
    /// Bias b (more classes: class 0's machine's).
    pub bias: f64,
    /// More than two classes: the machines of classes 1..k against the rest, over the
    /// same prototypes; empty when binary.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rest: Vec<MilesMachine>,
}

impl MilesModel {
    /// Each machine's weights and bias, in class order (binary: the one machine).
    fn machines(&self) -> impl Iterator<Item = (&[f64], f64)> {
        std::iter::once((&self.weights[..], self.bias))
            .chain(self.rest.iter().map(|m| (&m.weights[..], m.bias)))
    }

    /// f(B) of the bag and each instance's score g(xⱼ) − θ (see the module); more
    /// classes: those of the machine of the largest f_c(B) (the first on ties).
    pub fn decision(&self, bag: crate::data::Bag<'_>) -> (f64, Vec<f64>) {
        let nearest = self.embedding.nearest(bag);
        let mut best: Option<(f64, Vec<f64>)> = None;
        for (weights, bias) in self.machines() {
            let (f, g) = self.machine_decision(&nearest, weights, bias, bag.len());
            if best.as_ref().is_none_or(|(top, _)| f > *top) {
                best = Some((f, g));
            }
        }
        best.unwrap_or_default()
    }

    /// Every machine's f_c(B), in class order.
    fn values(&self, bag: crate::data::Bag<'_>) -> Vec<f64> {
        let nearest = self.embedding.nearest(bag);
        self.machines()
            .map(|(weights, bias)| self.machine_decision(&nearest, weights, bias, bag.len()).0)
            .collect()
    }

    /// One machine's f(B) and instance scores from the bag's instances nearest each
    /// prototype (`nearest`) in a bag of `len` instances; a zero weight holds no term.
    fn machine_decision(
        &self,
        nearest: &[(usize, f64)],
        weights: &[f64],
        bias: f64,
        len: usize,
    ) -> (f64, Vec<f64>) {
        let mut g = vec![0.0; len];
        let mut holds = vec![false; len];
        let mut f = bias;
        for (&(j, d2), &w) in nearest.iter().zip(weights) {
            if w == 0.0 {
                continue;
            }
            let term = w * (-self.embedding.gamma * d2).exp();
            g[j] += term;
            holds[j] = true;
            f += term;
        }
        // θ = −b/|J|; with no prototype, J is the whole bag.
        let contributing = match holds.iter().filter(|&&h| h).count() {
            0 => len.max(1),
            j => j,
        };
        let share = bias / contributing as f64;
        (f, g.into_iter().map(|v| v + share).collect())
    }

    /// Checks a model read from a file.
    pub fn validate(&self) -> Result<()> {
        self.params
            .check()
            .map_err(|e| Error::Model(format!("MILES: {e}")))?;
        self.embedding.validate()?;
        let len = self.embedding.len();
        if self.machines().any(|(w, _)| w.len() != len) || len > self.candidates {
            return Err(Error::Model(format!(
                "MILES: {} weights for {} prototypes chosen from {} candidates",
                self.weights.len(),
                len,
                self.candidates
            )));
        }
        // Every kept prototype is some machine's: one machine's weights are all non-zero.
        let finite = self
            .machines()
            .all(|(w, b)| w.iter().all(|v| v.is_finite()) && b.is_finite());
        let selected = (0..len).all(|k| self.machines().any(|(w, _)| w[k] != 0.0));
        if !(finite && selected) || self.rest.len() == 1 {
            return Err(Error::Model(
                "MILES: a weight or bias is not finite, a prototype has no weight, or there are two one-vs-rest machines"
                    .into(),
            ));
        }
        Ok(())
    }
}

impl BagModel for MilesModel {
    fn n_classes(&self) -> usize {
        if self.rest.is_empty() {
            2
        } else {
            1 + self.rest.len()
        }
    }

    fn input_dim(&self) -> usize {
        self.embedding.dim
    }

    /// Binary scores [0, f(B)]: class 1 when f(B) > 0; more classes: each machine's
    /// f_c(B), the largest wins.
    fn scores<'a>(&self, bags: impl Into<Bags<'a>>) -> Result<BagScores> {
        let bags = bags.into();
        let (data, bags) = (bags.dataset(), &*bags.indices());
        check_dim(data, self.embedding.dim)?;
        let values = embed(data, bags, |bag| self.values(bag));
        Ok(decision_scores(self.n_classes(), values))
    }

    /// Every instance's contribution g(xⱼ) − θ (more classes: to the predicted class's
    /// f_c); the witness is the largest.
    fn explain<'a>(&self, bags: impl Into<Bags<'a>>) -> Result<Vec<Explanation>> {
        let bags = bags.into();
        let (data, bags) = (bags.dataset(), &*bags.indices());
        check_dim(data, self.embedding.dim)?;
        Ok(bags
            .par_iter()
            .map(|&b| {
                Explanation::from_scores(InstanceScore::Contribution, self.decision(data.bag(b)).1)
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};

    fn dataset(dim: usize, bags: &[Vec<Vec<f64>>], labels: Vec<usize>) -> Dataset {
        let mut starts = vec![0];
        let mut features = Vec::new();
        for bag in bags {
            for x in bag {
                features.extend_from_slice(x);
            }
            starts.push(starts.last().unwrap() + bag.len());
        }
        let classes = labels.iter().max().map_or(2, |&m| m + 1).max(2);
        Dataset::new(
            "toy",
            dim,
            features,
            starts,
            (0..bags.len()).map(|b| b.to_string()).collect(),
            Some(labels),
            (0..classes).map(|c| c.to_string()).collect(),
        )
        .unwrap()
    }

    /// Bags of 1–6 instances in 3-D from [−1, 1]³; a positive bag has one instance moved
    /// near the concept (3, 3, 3), within 0.2 of it in each feature (the standard MI
    /// assumption, separable by that instance).
    fn bags(seed: u64, n_bags: usize) -> (Vec<Vec<Vec<f64>>>, Vec<usize>) {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut bags = Vec::new();
        let mut labels = Vec::new();
        for b in 0..n_bags {
            let positive = b % 2 == 0;
            let len = rng.random_range(1..7);
            let mut bag: Vec<Vec<f64>> = (0..len)
                .map(|_| (0..3).map(|_| rng.random_range(-1.0..1.0)).collect())
                .collect();
            if positive {
                let at = rng.random_range(0..len);
                bag[at] = (0..3).map(|_| rng.random_range(2.8..3.2)).collect();
            }
            bags.push(bag);
            labels.push(usize::from(positive));
        }
        (bags, labels)
    }

    #[test]
    fn the_embedding_is_the_largest_similarity_to_each_training_instance() {
        for seed in 0..4 {
            let (bags, labels) = bags(seed, 9);
            let data = dataset(3, &bags, labels);
            let gamma = 0.3 + 0.2 * seed as f64;
            let e = Miles::default()
                .gamma(Some(gamma))
                .embedding(&data)
                .unwrap();
            // z-score by hand (population standard deviation), then every pair.
            let all: Vec<&Vec<f64>> = bags.iter().flatten().collect();
            let n = all.len() as f64;
            let mean: Vec<f64> = (0..3)
                .map(|j| all.iter().map(|x| x[j]).sum::<f64>() / n)
                .collect();
            let sd: Vec<f64> = (0..3)
                .map(|j| (all.iter().map(|x| (x[j] - mean[j]).powi(2)).sum::<f64>() / n).sqrt())
                .collect();
            let z = |x: &[f64]| -> Vec<f64> { (0..3).map(|j| (x[j] - mean[j]) / sd[j]).collect() };
            let m = e.transform(&data).unwrap();
            assert_eq!(e.len(), all.len());
            for (b, bag) in bags.iter().enumerate() {
                for (k, proto) in all.iter().enumerate() {
                    let want = bag
                        .iter()
                        .map(|x| {
                            let d2: f64 = z(x)
                                .iter()
                                .zip(z(proto))
                                .map(|(a, c)| (a - c).powi(2))
                                .sum();
                            (-gamma * d2).exp()
                        })
                        .fold(0.0, f64::max);
                    let got = m[b * all.len() + k];
                    assert!(
                        (got - want).abs() < 1e-12,
                        "seed {seed} bag {b} prototype {k}: {got} vs {want}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_training_embedding_is_the_embedding_of_the_training_bags_bit_for_bit() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
        for (dim, n_bags) in [(3, 40), (37, 25)] {
            // Bags of 1 to 300 instances: groups of one large bag and of many small ones.
            let bags: Vec<Vec<Vec<f64>>> = (0..n_bags)
                .map(|b| {
                    let len = if b % 7 == 3 {
                        300
                    } else {
                        rng.random_range(1..20)
                    };
                    (0..len)
                        .map(|_| (0..dim).map(|_| rng.random_range(-2.0..2.0)).collect())
                        .collect()
                })
                .collect();
            let data = dataset(dim, &bags, (0..n_bags).map(|b| b % 2).collect());
            let e = Miles::default().embedding(&data).unwrap();
            let all: Vec<usize> = (0..n_bags).collect();
            assert!(groups(&data, &all).len() > 3);
            let want = e.transform(&data).unwrap();
            let got = e.transform_training(&data, &all);
            assert_eq!(got.len(), want.len());
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert_eq!(g.to_bits(), w.to_bits(), "dim {dim}: entry {i}: {g} vs {w}");
            }
        }
    }

    #[test]
    fn two_bags_reach_the_closed_form_optimum() {
        // One instance per bag in 1-D: z-scored, they sit at ±1, so m(B₊) = (1, e) and
        // m(B₋) = (e, 1) with e = exp(−4γ). Margins of 1 on both need
        // ‖w‖₁ ≥ 2/(1 − e); w = 0 leaves an error of 2 on the cheaper side,
        // 2C·min(μ, 1 − μ). The LP's optimum is the smaller of the two.
        for (gamma, cost, mu) in [
            (0.5, 10.0, 0.5),
            (0.1, 1.0, 0.5),
            (0.1, 20.0, 0.3),
            (1.0, 0.5, 0.8),
            (2.0, 3.0, 0.2),
        ] {
            let data = dataset(1, &[vec![vec![2.0]], vec![vec![-5.0]]], vec![1, 0]);
            let params = Miles::default().gamma(Some(gamma)).cost(cost).mu(mu);
            let model = params.fit(&data).unwrap();
            let e = (-4.0 * gamma).exp();
            let want = (2.0 / (1.0 - e)).min(2.0 * cost * mu.min(1.0 - mu));
            let scores = model.scores(&data).unwrap();
            let slack = |b: usize, y: f64| (1.0 - y * scores.row(b)[1]).max(0.0);
            let got = model.weights.iter().map(|w| w.abs()).sum::<f64>()
                + cost * (mu * slack(0, 1.0) + (1.0 - mu) * slack(1, -1.0));
            assert!(
                (got - want).abs() <= 1e-6 * want,
                "γ {gamma} C {cost} μ {mu}: {got} vs {want}"
            );
        }
    }

    #[test]
    fn separable_bags_are_all_classified_on_held_out_bags() {
        for seed in 0..5 {
            let (train, train_labels) = bags(10 + seed, 30);
            let (test, test_labels) = bags(100 + seed, 30);
            let model = Miles::default()
                .fit(&dataset(3, &train, train_labels))
                .unwrap();
            let labels = model
                .scores(&dataset(3, &test, test_labels.clone()))
                .unwrap()
                .labels();
            assert_eq!(labels, test_labels, "seed {seed}");
            assert!(
                model.weights.len() < model.candidates,
                "seed {seed}: no selection"
            );
        }
    }

    #[test]
    fn selected_prototypes_are_exactly_the_non_zero_weights() {
        for seed in 0..4 {
            let (bags, labels) = bags(20 + seed, 16);
            let data = dataset(3, &bags, labels.clone());
            let params = Miles::default().cost(3.0);
            let model = params.fit(&data).unwrap();
            // The same LP solved here keeps the same candidates with the same weights.
            let e = params.embedding(&data).unwrap();
            let n = e.len();
            let y: Vec<f64> = labels
                .iter()
                .map(|&l| if l == 1 { 1.0 } else { -1.0 })
                .collect();
            let costs: Vec<f64> = y.iter().map(|_| 3.0 * 0.5).collect();
            let w = crate::optim::l1_svm::solve(&e.transform(&data).unwrap(), n, &y, &costs)
                .unwrap()
                .w;
            let largest = w.iter().fold(0.0f64, |a, v| a.max(v.abs()));
            let kept: Vec<usize> = (0..n)
                .filter(|&k| w[k].abs() > WEIGHT_TOLERANCE * largest)
                .collect();
            assert_eq!(
                model.weights,
                kept.iter().map(|&k| w[k]).collect::<Vec<_>>()
            );
            let protos: Vec<f64> = kept
                .iter()
                .flat_map(|&k| e.prototypes[k * 3..(k + 1) * 3].to_vec())
                .collect();
            assert_eq!(model.embedding.prototypes, protos);
            // The dropped weights change no score beyond their round-off.
            let m = e.transform(&data).unwrap();
            let scores = model.scores(&data).unwrap();
            for b in 0..data.n_bags() {
                let full: f64 = (0..n).map(|k| w[k] * m[b * n + k]).sum::<f64>() + model.bias;
                assert!(
                    (scores.row(b)[1] - full).abs() < 1e-6 * largest.max(1.0),
                    "seed {seed}"
                );
            }
        }
    }

    #[test]
    fn scores_ignore_order_and_instance_scores_sum_to_the_decision() {
        for seed in 0..4 {
            let (bags, labels) = bags(40 + seed, 14);
            let data = dataset(3, &bags, labels);
            let model = Miles::default().fit(&data).unwrap();
            let scores = model.scores(&data).unwrap();
            let explained = model.explain(&data).unwrap();
            let reversed: Vec<usize> = (0..data.n_bags()).rev().collect();
            let back = model.scores(data.select(&reversed)).unwrap();
            for (b, e) in explained.iter().enumerate() {
                assert_eq!(back.row(data.n_bags() - 1 - b), scores.row(b));
                // Instances nearest a prototype carry its term: with the bias's share each,
                // they sum to f(B); the rest score the bias's share alone.
                let nearest = model.embedding.nearest(data.bag(b));
                let holders: std::collections::BTreeSet<usize> =
                    nearest.iter().map(|p| p.0).collect();
                let j = if holders.is_empty() {
                    bags[b].len()
                } else {
                    holders.len()
                };
                let share = model.bias / j as f64;
                let sum: f64 = holders.iter().map(|&i| e.instance_scores[i]).sum::<f64>();
                let f = scores.row(b)[1];
                if !holders.is_empty() {
                    assert!(
                        (sum - f).abs() < 1e-9 * f.abs().max(1.0),
                        "seed {seed} bag {b}"
                    );
                }
                for (i, s) in e.instance_scores.iter().enumerate() {
                    if !holders.contains(&i) {
                        assert_eq!(*s, share);
                    }
                }
                // Reversed instances and a duplicated one: the same bag score.
                let flipped: Vec<Vec<f64>> = bags[b].iter().rev().cloned().collect();
                let mut doubled = flipped.clone();
                doubled.push(flipped[0].clone());
                let again = model
                    .scores(&dataset(3, &[flipped, doubled], vec![0, 0]))
                    .unwrap();
                assert!((again.row(0)[1] - f).abs() < 1e-12 * f.abs().max(1.0));
                assert!((again.row(1)[1] - f).abs() < 1e-12 * f.abs().max(1.0));
            }
        }
    }

    #[test]
    fn fits_do_not_depend_on_the_thread_count() {
        let (bags, labels) = bags(5, 20);
        let data = dataset(3, &bags, labels);
        for params in [
            Miles::default(),
            Miles::default().max_prototypes(10).seed(4),
        ] {
            let fit = |threads| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap()
                    .install(|| {
                        let model = params.fit(&data).unwrap();
                        let scores = model.scores(&data).unwrap();
                        (model, scores)
                    })
            };
            assert_eq!(fit(1), fit(2));
        }
    }

    /// Three classes: machine c is the binary MILES of "class c against the rest" on the
    /// same candidates (its prototypes are the kept ones where its weight is not 0, in
    /// order, with the same weights and bias), the largest f_c labels a separable set,
    /// and a saved model round-trips.
    #[test]
    fn more_classes_are_one_program_per_class_against_the_rest() {
        for seed in 0..3 {
            let (mut bags, _) = bags(seed, 30);
            let labels: Vec<usize> = (0..bags.len()).map(|b| b % 3).collect();
            for (bag, &c) in bags.iter_mut().zip(&labels) {
                bag[0] = vec![3.0 * c as f64, -3.0 * c as f64, 3.0];
            }
            let data = dataset(3, &bags, labels.clone());
            let model = Miles::default().fit(&data).unwrap();
            model.validate().unwrap();
            assert_eq!(model.n_classes(), 3);
            let dim = model.embedding.dim;
            let machines: Vec<(&[f64], f64)> = model.machines().collect();
            for (c, (weights, bias)) in machines.iter().enumerate() {
                let rest: Vec<usize> = labels.iter().map(|&l| usize::from(l == c)).collect();
                let binary = Miles::default().fit(&dataset(3, &bags, rest)).unwrap();
                let mine: Vec<usize> = (0..weights.len()).filter(|&k| weights[k] != 0.0).collect();
                let rows: Vec<f64> = mine
                    .iter()
                    .flat_map(|&k| model.embedding.prototypes[k * dim..(k + 1) * dim].to_vec())
                    .collect();
                assert_eq!(binary.embedding.prototypes, rows, "seed {seed} class {c}");
                let w: Vec<f64> = mine.iter().map(|&k| weights[k]).collect();
                assert_eq!(binary.weights, w);
                assert_eq!(binary.bias, *bias);
            }
            assert_eq!(model.scores(&data).unwrap().labels(), labels, "seed {seed}");
            let text = serde_json::to_string(&model).unwrap();
            let back: MilesModel = serde_json::from_str(&text).unwrap();
            assert_eq!(back, model);
        }
    }

    #[test]
    fn bad_parameters_data_and_saved_models_are_refused() {
        let (bags, labels) = bags(2, 10);
        let data = dataset(3, &bags, labels);
        let err = |p: Miles| p.fit(&data).unwrap_err().to_string();
        assert!(err(Miles::default().cost(0.0)).contains("cost"));
        assert!(err(Miles::default().gamma(Some(-1.0))).contains("gamma"));
        assert!(err(Miles::default().mu(1.0)).contains("mu"));
        assert!(err(Miles::default().mu(f64::NAN)).contains("mu"));
        assert!(err(Miles::default().max_prototypes(0)).contains("max_prototypes"));
        let one = dataset(3, &bags, vec![1; bags.len()]);
        assert!(Miles::default()
            .fit(&one)
            .unwrap_err()
            .to_string()
            .contains("class"));

        let model = Miles::default().fit(&data).unwrap();
        assert!(model.validate().is_ok());
        let mut short = model.clone();
        short.weights.pop();
        assert!(short.validate().is_err());
        let mut zero = model.clone();
        zero.weights[0] = 0.0;
        assert!(zero.validate().is_err());
        let mut nan = model.clone();
        nan.bias = f64::NAN;
        assert!(nan.validate().is_err());
        let mut gamma = model.clone();
        gamma.embedding.gamma = 0.0;
        assert!(gamma.validate().is_err());
        let mut mu = model.clone();
        mu.params.mu = 0.0;
        assert!(mu.validate().is_err());
        let mut wide = model;
        wide.embedding.mean.push(0.0);
        assert!(wide.validate().is_err());
    }
}
