//! mi-Graph (Zhou, Sun & Li, "Multi-Instance Learning by Treating Instances as
//! Non-I.I.D. Samples", ICML 2009, §3): each bag is a graph over its instances, and an SVM
//! on a graph kernel that down-weights instances with many close neighbours, so that a
//! clique of similar instances counts about as much as one instance.
//!
//! - The graph of a bag X = {x₁, …, xₙ}: an ε-graph with δ the bag's mean pairwise
//!   distance, δ = mean over the n(n − 1)/2 pairs a < b of ‖x_a − x_b‖ (Euclidean, on the
//!   scaled features), the paper's choice; x_a and x_b (a ≠ b) are joined when
//!   ‖x_a − x_b‖ < δ. The edge indicator w_au is 1 for joined nodes and for u = a (a node
//!   is its own neighbour, at distance 0), 0 otherwise, and the paper's instance weight is
//!   W_a = 1 / Σ_u w_au: 1 / (1 + the number of a's neighbours). A one-instance bag has
//!   W = (1); a bag whose instances all coincide has δ = 0 and no edges, W_a = 1 for each
//!   (all its instances are the same point, so the kernel is the same whatever W is).
//! - The mi-Graph kernel (the paper's k_g of §3):
//!   k_g(X, Y) = Σ_a Σ_b W^X_a W^Y_b k(x_a, y_b) / (Σ_a W^X_a · Σ_b W^Y_b), with k the RBF
//!   kernel exp(−γ‖x − y‖²). It is the inner product of the weighted means
//!   Σ_a Ŵ_a φ(x_a), Ŵ_a = W_a / Σ_u W_u, of the bags' instances in k's feature space, so
//!   every Gram matrix is positive semi-definite. The authors' code is reported to divide
//!   by √(Σ W^X · Σ W^Y) instead ([`GraphNorm::Sqrt`]): the inner product of the sums
//!   Σ_a W_a φ(x_a) / √(Σ_u W_u), positive semi-definite too, in which a bag of many
//!   distinct instances weighs more. The default follows the paper's formula
//!   ([`GraphNorm::Sum`]). MI-Graph's edge kernel is not implemented.
//! - Features are z-scored on the training instances (constant features dropped), as the
//!   NSK, mi-SVM and MILES do here, and γ defaults to 1 / (number of non-constant
//!   features); the paper does not state its scaling.
//! - The SVM is the project's SMO on the precomputed Gram matrix of the training bags
//!   ([`BagSvm`]), C = `cost`, each bag's C times its class weight. The Gram matrix is
//!   computed by rows in parallel, each entry from its two bags alone in a fixed order, so
//!   it does not depend on the thread count.
//! - Instance scores: f(X) = Σ_r c_r k_g(X, X_r) + b splits over X's instances as
//!   f(X) = Σ_a g(x_a) + b with g(x_a) = Ŵ_a Σ_r c_r Σ_b Ŵ^r_b k(x_a, y^r_b), the instance's
//!   additive contribution ([`InstanceScore::Contribution`]); the paper defines no
//!   instance label, so none is given.
//!
//! Two classes as in the paper (class 1 the positive one); more than two by one-vs-rest
//! on the same Gram matrix, as the set-kernel SVM does: machine c separates class c from
//! the rest, and the largest decision value wins.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::imbalance::ClassWeight;
use super::svm::bags::{BagSvm, BagSvmSettings, EmpiricalMap};
use super::svm::{decision_scores, fit_machines, machine_targets};
use super::{check_dim, BagModel, BagScores, Classifier};
use crate::data::standardize::ZScore;
use crate::data::{Bag, Bags, Dataset};
use crate::distance::squared_euclidean;
use crate::error::{Error, Result};
use crate::explain::{Explanation, InstanceScore};

/// How k_g divides the weighted sum over the two bags' instance pairs (see the module).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GraphNorm {
    /// By Σ W^X · Σ W^Y, the paper's formula: each bag's weights Ŵ sum to 1.
    #[default]
    Sum,
    /// By √(Σ W^X · Σ W^Y), as the authors' code is reported to do.
    Sqrt,
}

mil_core::keywords!(GraphNorm {
    GraphNorm::Sum => "sum": "divide by the product of the bags' weight sums (the paper's formula)",
    GraphNorm::Sqrt => "sqrt": "divide by the square root of that product (the authors' code)",
});

/// mi-Graph hyper-parameters. The defaults: γ = 1 / (number of non-constant features) on
/// z-scored features, C = 10, the paper's normalisation.
///
/// ```
/// use mil_toolkit::classifier::mi_graph::MiGraph;
/// use mil_toolkit::classifier::{BagModel, Classifier};
///
/// let data = mil_toolkit::data::load("musk1")?;
/// let model = MiGraph::default().fit(&data)?;
/// let labels = model.scores(&data)?.labels();
/// assert_eq!(labels.len(), data.n_bags());
/// # Ok::<(), mil_toolkit::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MiGraph {
    /// γ of the instance kernel exp(−γ‖x − y‖²) on z-scored features; `None`: 1 / (number
    /// of non-constant features).
    pub gamma: Option<f64>,
    /// The default γ is this factor / (number of non-constant features); the tuning grid
    /// varies it.
    #[serde(default = "one")]
    pub gamma_factor: f64,
    /// The SVM's misclassification cost C.
    pub cost: f64,
    /// Each bag's C is multiplied by the weight of its class.
    #[serde(default, skip_serializing_if = "ClassWeight::is_none")]
    pub class_weight: ClassWeight,
    /// How the kernel divides by the bags' weights.
    #[serde(default)]
    pub norm: GraphNorm,
}

impl Default for MiGraph {
    fn default() -> Self {
        MiGraph {
            gamma: None,
            gamma_factor: 1.0,
            cost: 10.0,
            class_weight: ClassWeight::None,
            norm: GraphNorm::Sum,
        }
    }
}

crate::params::setters!(MiGraph {
    gamma: Option<f64>,
    gamma_factor: f64,
    cost: f64,
    class_weight: ClassWeight,
    norm: GraphNorm,
});

fn one() -> f64 {
    1.0
}

impl MiGraph {
    /// Checks the hyper-parameters alone, before any data is read: γ and C positive.
    pub fn check(&self) -> Result<()> {
        crate::params::check_weight("cost", self.cost, true)?;
        if let Some(g) = self.gamma {
            crate::params::check_weight("gamma", g, true)?;
        }
        crate::params::check_weight("gamma_factor", self.gamma_factor, true)?;
        self.class_weight.check()
    }

    /// The settings an inner CV tries when asked to tune mi-Graph (`mil cv --tune`): γ
    /// kept, ÷4 and ×4 (for the default γ, the factor of 1 / features), each with C ∈
    /// {C kept, 1, 100}; these parameters first.
    pub fn default_grid(&self) -> Vec<MiGraph> {
        let mut costs = vec![self.cost];
        costs.extend([1.0, 100.0].into_iter().filter(|&c| c != self.cost));
        let mut grid = Vec::new();
        for f in [1.0, 0.25, 4.0] {
            let scaled = match self.gamma {
                Some(g) => self.gamma(Some(g * f)),
                None => self.gamma_factor(self.gamma_factor * f),
            };
            grid.extend(costs.iter().map(|&c| scaled.cost(c)));
        }
        grid
    }

    /// The fitted scaling and γ of a fit on `train`.
    fn scaling(&self, train: &Dataset) -> (ZScore, f64) {
        let zscore = ZScore::fit(train);
        let active = zscore.std.iter().filter(|&&s| s > 0.0).count().max(1);
        let gamma = self.gamma.unwrap_or(self.gamma_factor / active as f64);
        (zscore, gamma)
    }
}

/// Memory and work of fitting mi-Graph on data of this shape: the Gram matrix of the
/// bags (and its training copy for SMO) beside the data and its z-scored copy; the work
/// is one kernel value per pair of instances and SMO's O(n³) at most.
pub fn footprint(shape: crate::params::Shape) -> crate::params::Estimate {
    let n = shape.bags as f64;
    let pairs = shape.instances as f64 * shape.instances as f64;
    crate::params::Estimate::values(
        2.0 * n * n + 2.0 * shape.values(),
        pairs * shape.dim as f64 + n * n * n,
    )
}

/// The paper's instance weights W_a = 1 / Σ_u w_au of a bag's ε-graph (see the module):
/// δ the mean distance over the pairs a < b, an edge where ‖x_a − x_b‖ < δ, each node its
/// own neighbour.
pub fn graph_weights(bag: Bag<'_>) -> Vec<f64> {
    let n = bag.len();
    let mut dist = vec![0.0; n * n];
    let mut total = 0.0;
    for a in 0..n {
        for b in a + 1..n {
            let d = squared_euclidean(bag.instance(a), bag.instance(b)).sqrt();
            dist[a * n + b] = d;
            dist[b * n + a] = d;
            total += d;
        }
    }
    let pairs = n * n.saturating_sub(1) / 2;
    let delta = if pairs == 0 {
        0.0
    } else {
        total / pairs as f64
    };
    (0..n)
        .map(|a| {
            let neighbours = (0..n)
                .filter(|&b| b != a && dist[a * n + b] < delta)
                .count();
            1.0 / (1 + neighbours) as f64
        })
        .collect()
}

/// The weights of a bag in k_g: Ŵ_a = W_a / Σ_u W_u (they sum to 1), or W_a / √(Σ_u W_u)
/// with [`GraphNorm::Sqrt`].
pub fn normalised_weights(bag: Bag<'_>, norm: GraphNorm) -> Vec<f64> {
    let w = graph_weights(bag);
    let sum: f64 = w.iter().sum();
    let divisor = match norm {
        GraphNorm::Sum => sum,
        GraphNorm::Sqrt => sum.sqrt(),
    };
    w.into_iter().map(|v| v / divisor).collect()
}

/// k_g(X, Y) from the bags and their normalised weights ([`normalised_weights`]):
/// Σ_a Σ_b Ŵ^X_a Ŵ^Y_b exp(−γ‖x_a − y_b‖²), the pairs in a fixed order (X's instances
/// outer), so the value depends on the two bags alone.
pub fn graph_kernel(x: Bag<'_>, wx: &[f64], y: Bag<'_>, wy: &[f64], gamma: f64) -> f64 {
    x.instances()
        .zip(wx)
        .map(|(xa, wa)| wa * instance_sum(xa, y, wy, gamma))
        .sum()
}

/// Σ_b Ŵ^Y_b exp(−γ‖x − y_b‖²).
fn instance_sum(x: &[f64], y: Bag<'_>, wy: &[f64], gamma: f64) -> f64 {
    y.instances()
        .zip(wy)
        .map(|(yb, wb)| wb * (-gamma * squared_euclidean(x, yb)).exp())
        .sum()
}

/// Bags stored as one row-major array (scaled features) with their normalised weights.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GraphBags {
    /// Feature dimension (the non-constant features of the training instances).
    pub dim: usize,
    /// The instances, row-major.
    pub features: Vec<f64>,
    /// Bag b holds instances `starts[b]..starts[b + 1]`.
    pub starts: Vec<usize>,
    /// Ŵ of every instance, in order.
    pub weights: Vec<f64>,
}

impl GraphBags {
    /// The bags of a (scaled) data set with their weights, computed in parallel per bag.
    pub fn new(data: &Dataset, norm: GraphNorm) -> GraphBags {
        let weights: Vec<f64> = (0..data.n_bags())
            .into_par_iter()
            .map(|b| {
                crate::cancel::checkpoint();
                normalised_weights(data.bag(b), norm)
            })
            .collect::<Vec<_>>()
            .concat();
        let mut starts = vec![0];
        for b in 0..data.n_bags() {
            starts.push(starts[b] + data.bag(b).len());
        }
        GraphBags {
            dim: data.dim(),
            features: data.features().to_vec(),
            starts,
            weights,
        }
    }

    /// Number of bags.
    pub fn len(&self) -> usize {
        self.starts.len().saturating_sub(1)
    }

    /// True when there is no bag.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bag `b` and its weights.
    pub fn bag(&self, b: usize) -> (Bag<'_>, &[f64]) {
        let r = self.starts[b]..self.starts[b + 1];
        (
            Bag::from_rows(
                &self.features[r.start * self.dim..r.end * self.dim],
                self.dim,
            ),
            &self.weights[r],
        )
    }

    /// k_g between bags `a` of `self` and `b` of `other`.
    pub fn kernel(&self, a: usize, other: &GraphBags, b: usize, gamma: f64) -> f64 {
        let (x, wx) = self.bag(a);
        let (y, wy) = other.bag(b);
        graph_kernel(x, wx, y, wy, gamma)
    }

    /// The Gram matrix (n × n, row-major): the upper triangle by rows in parallel, each
    /// entry from its two bags alone, mirrored, so exactly symmetric and independent of
    /// the thread count.
    pub fn gram(&self, gamma: f64) -> Vec<f64> {
        let n = self.len();
        let rows: Vec<Vec<f64>> = (0..n)
            .into_par_iter()
            .map(|i| {
                crate::cancel::checkpoint();
                (i..n).map(|j| self.kernel(i, self, j, gamma)).collect()
            })
            .collect();
        let mut out = vec![0.0; n * n];
        for (i, row) in rows.iter().enumerate() {
            for (k, &v) in row.iter().enumerate() {
                out[i * n + i + k] = v;
                out[(i + k) * n + i] = v;
            }
        }
        out
    }

    /// Checks stored bags read from a file, their weights made with `norm`: every
    /// W_a = 1 / (1 + neighbours) lies in [1/n, 1], so the Ŵ of a bag of n instances are
    /// positive and sum to 1 (`Sum`), or sum to √(Σ W) ∈ [1, √n] with every
    /// W_a = Ŵ_a·Σ Ŵ ≤ 1 (`Sqrt`).
    fn validate(&self, norm: GraphNorm) -> Result<()> {
        let bad = |what: &str| Err(Error::Model(format!("mi-Graph: {what}")));
        let instances = self.weights.len();
        if self.dim == 0
            || self.starts.first() != Some(&0)
            || self.starts.last() != Some(&instances)
            || self.starts.windows(2).any(|w| w[0] >= w[1])
            || self.features.len() != instances * self.dim
        {
            return bad("the training bags' offsets, weights and features disagree");
        }
        if !self.features.iter().all(|v| v.is_finite()) {
            return bad("a training feature is not finite");
        }
        for b in 0..self.len() {
            let w = &self.weights[self.starts[b]..self.starts[b + 1]];
            let sum: f64 = w.iter().sum();
            let ok = match norm {
                GraphNorm::Sum => {
                    w.iter().all(|&v| v > 0.0 && v <= 1.0) && (sum - 1.0).abs() <= 1e-9
                }
                GraphNorm::Sqrt => {
                    w.iter().all(|&v| v > 0.0 && v * sum <= 1.0 + 1e-9)
                        && sum >= 1.0 - 1e-9
                        && sum * sum <= w.len() as f64 + 1e-9
                }
            };
            if !ok {
                return bad(&format!(
                    "the instance weights of training bag {b} are not the weights of a graph ({} normalisation)",
                    mil_core::keyword::Keyword::name(norm)
                ));
            }
        }
        Ok(())
    }
}

impl Classifier for MiGraph {
    type Model = MiGraphModel;

    fn fit<'a>(&self, train: impl Into<Bags<'a>>) -> Result<MiGraphModel> {
        let train = train.into();
        let (data, train) = (train.dataset(), &*train.indices());
        self.check()?;
        let labels = data.training_labels(train, 2)?;
        let n_classes = data.n_classes();
        let class_weights = self.class_weight.resolve(&labels, n_classes)?;
        let picked = data.copy_bags(train);
        let (zscore, gamma) = self.scaling(&picked);
        let bags = GraphBags::new(&zscore.apply_active(&picked)?, self.norm);
        let m = bags.len();
        let gram = bags.gram(gamma);
        let weights: Option<Vec<f64>> = (!self.class_weight.is_none())
            .then(|| labels.iter().map(|&l| class_weights[l]).collect());
        let settings = BagSvmSettings {
            rho: super::svm::Rho::Fixed(1.0),
            map: EmpiricalMap::None,
            cost: self.cost,
        };
        let all: Vec<usize> = (0..m).collect();
        let targets = machine_targets(&labels, n_classes);
        let mut machines =
            fit_machines(&gram, m, &all, &targets, weights.as_deref(), settings, 1.0)?;
        let rest = machines.split_off(1);
        Ok(MiGraphModel {
            params: *self,
            input_dim: data.dim(),
            zscore,
            gamma,
            bags,
            svm: machines.remove(0),
            rest,
        })
    }
}

/// A fitted mi-Graph: the scaling, γ, the training bags (scaled, with their weights) and
/// the SVM's coefficients over them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MiGraphModel {
    /// Hyper-parameters.
    pub params: MiGraph,
    /// Feature dimension of the input.
    pub input_dim: usize,
    /// The z-scoring fitted on the training instances.
    pub zscore: ZScore,
    /// γ of the instance kernel (the default resolved).
    pub gamma: f64,
    /// The training bags, z-scored on their non-constant features, with Ŵ.
    pub bags: GraphBags,
    /// The SVM over the training bags 0..m: class 1 against class 0 when binary; class 0
    /// against the rest when there are more classes.
    pub svm: BagSvm,
    /// More than two classes: the machines of classes 1..k against the rest, on the same
    /// kernel; empty when binary.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rest: Vec<BagSvm>,
}

impl MiGraphModel {
    /// The trained machines: `svm`, then the other one-vs-rest machines.
    pub fn machines(&self) -> impl Iterator<Item = &BagSvm> {
        std::iter::once(&self.svm).chain(&self.rest)
    }

    /// f(X) of a bag (already scaled, with its weights) and each instance's contribution
    /// g(x_a) (see the module); Σ g + b = f. Binary: the SVM's; more classes: the machine
    /// of the largest f (the predicted class), whose contributions explain that class.
    pub fn decision(&self, bag: Bag<'_>, weights: &[f64]) -> (f64, Vec<f64>) {
        let mut best: Option<(f64, Vec<f64>)> = None;
        for machine in self.machines() {
            let (f, g) = self.machine_decision(machine, bag, weights);
            if best.as_ref().is_none_or(|(top, _)| f > *top) {
                best = Some((f, g));
            }
        }
        best.unwrap_or_default()
    }

    /// Every machine's f(X) of a bag (already scaled, with its weights), in class order.
    fn machine_values(&self, bag: Bag<'_>, weights: &[f64]) -> Vec<f64> {
        self.machines()
            .map(|m| self.machine_decision(m, bag, weights).0)
            .collect()
    }

    /// One machine's f(X) and the instances' contributions.
    fn machine_decision(&self, machine: &BagSvm, bag: Bag<'_>, weights: &[f64]) -> (f64, Vec<f64>) {
        let support: Vec<(usize, f64)> = machine
            .coefficients
            .iter()
            .enumerate()
            .filter(|(_, &c)| c != 0.0)
            .map(|(r, &c)| (r, c))
            .collect();
        let g: Vec<f64> = bag
            .instances()
            .zip(weights)
            .map(|(x, wa)| {
                let s: f64 = support
                    .iter()
                    .map(|&(r, c)| {
                        let (y, wy) = self.bags.bag(r);
                        c * instance_sum(x, y, wy, self.gamma)
                    })
                    .sum();
                wa * s
            })
            .collect();
        (g.iter().sum::<f64>() + machine.bias, g)
    }

    /// The bags `bags` of `data` scaled as the training bags, with their weights.
    fn scaled(&self, data: &Dataset, bags: &[usize]) -> Result<GraphBags> {
        check_dim(data, self.input_dim)?;
        Ok(GraphBags::new(
            &self.zscore.apply_active(&data.copy_bags(bags))?,
            self.params.norm,
        ))
    }

    /// `each` of every bag of `bags` (scaled, with its weights), in parallel (each bag
    /// alone).
    fn per_bag<T: Send>(
        &self,
        data: &Dataset,
        bags: &[usize],
        each: impl Fn(Bag<'_>, &[f64]) -> T + Sync,
    ) -> Result<Vec<T>> {
        let scaled = self.scaled(data, bags)?;
        Ok((0..scaled.len())
            .into_par_iter()
            .map(|b| {
                crate::cancel::checkpoint();
                let (bag, w) = scaled.bag(b);
                each(bag, w)
            })
            .collect())
    }

    /// Checks a model read from a file.
    pub fn validate(&self) -> Result<()> {
        self.params
            .check()
            .map_err(|e| Error::Model(format!("mi-Graph: {e}")))?;
        self.bags.validate(self.params.norm)?;
        let m = self.bags.len();
        let z = &self.zscore;
        if self.input_dim == 0
            || z.mean.len() != self.input_dim
            || z.std.len() != self.input_dim
            || self.bags.dim != z.std.iter().filter(|&&s| s > 0.0).count().max(1)
        {
            return Err(Error::Model(
                "mi-Graph: the scaling does not match the input or the stored bags".into(),
            ));
        }
        let scaling_ok =
            z.mean.iter().chain(&z.std).all(|v| v.is_finite()) && z.std.iter().all(|&s| s >= 0.0);
        if !(scaling_ok && self.gamma > 0.0 && self.gamma.is_finite()) {
            return Err(Error::Model(
                "mi-Graph: a scaling value or gamma is not finite (or negative)".into(),
            ));
        }
        let bad_machine = |svm: &BagSvm| {
            svm.train != (0..m).collect::<Vec<_>>()
                || svm.coefficients.len() != m
                || !svm.coefficients.iter().all(|c| c.is_finite())
                || !svm.bias.is_finite()
        };
        if m < 2 || self.rest.len() == 1 || self.machines().any(bad_machine) {
            return Err(Error::Model(
                "mi-Graph: the SVM's coefficients do not match the training bags".into(),
            ));
        }
        Ok(())
    }
}

impl BagModel for MiGraphModel {
    fn n_classes(&self) -> usize {
        if self.rest.is_empty() {
            2
        } else {
            1 + self.rest.len()
        }
    }

    fn input_dim(&self) -> usize {
        self.input_dim
    }

    /// Binary scores [0, f(X)]: class 1 when f(X) > 0; more classes: each machine's
    /// f_c(X), the largest wins.
    fn scores<'a>(&self, bags: impl Into<Bags<'a>>) -> Result<BagScores> {
        let bags = bags.into();
        let (data, bags) = (bags.dataset(), &*bags.indices());
        let values = self.per_bag(data, bags, |bag, w| self.machine_values(bag, w))?;
        Ok(decision_scores(self.n_classes(), values.concat()))
    }

    /// Every instance's contribution g(x_a) to f(X) (more classes: to the predicted
    /// class's f_c); the witness is the largest.
    fn explain<'a>(&self, bags: impl Into<Bags<'a>>) -> Result<Vec<Explanation>> {
        let bags = bags.into();
        let (data, bags) = (bags.dataset(), &*bags.indices());
        let explained = self.per_bag(data, bags, |bag, w| {
            Explanation::from_scores(InstanceScore::Contribution, self.decision(bag, w).1)
        })?;
        Ok(explained)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

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
    /// near the concept (3, 3, 3) (the standard MI assumption).
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

    /// The definitions written out: δ the mean of the distinct pairs' distances, W_a = 1 /
    /// (1 + neighbours closer than δ), k_g the W-weighted sum over pairs divided by the
    /// weight sums.
    fn brute_weights(bag: &[Vec<f64>]) -> Vec<f64> {
        let d = |a: &[f64], b: &[f64]| -> f64 {
            a.iter()
                .zip(b)
                .map(|(x, y)| (x - y).powi(2))
                .sum::<f64>()
                .sqrt()
        };
        let n = bag.len();
        let mut all = Vec::new();
        for a in 0..n {
            for b in a + 1..n {
                all.push(d(&bag[a], &bag[b]));
            }
        }
        let delta = if all.is_empty() {
            0.0
        } else {
            all.iter().sum::<f64>() / all.len() as f64
        };
        (0..n)
            .map(|a| {
                let w: usize = (0..n)
                    .map(|u| usize::from(u == a || d(&bag[a], &bag[u]) < delta))
                    .sum();
                1.0 / w as f64
            })
            .collect()
    }

    fn brute_kernel(x: &[Vec<f64>], y: &[Vec<f64>], gamma: f64, norm: GraphNorm) -> f64 {
        let (wx, wy) = (brute_weights(x), brute_weights(y));
        let mut num = 0.0;
        for (a, xa) in x.iter().enumerate() {
            for (b, yb) in y.iter().enumerate() {
                let d2: f64 = xa.iter().zip(yb).map(|(p, q)| (p - q).powi(2)).sum();
                num += wx[a] * wy[b] * (-gamma * d2).exp();
            }
        }
        let product = wx.iter().sum::<f64>() * wy.iter().sum::<f64>();
        match norm {
            GraphNorm::Sum => num / product,
            GraphNorm::Sqrt => num / product.sqrt(),
        }
    }

    #[test]
    fn weights_and_kernel_of_a_hand_set() {
        // X = {0, 1, 5}: distances 1, 5, 4, δ = 10/3; only 0–1 is an edge.
        let x = [0.0, 1.0, 5.0];
        let w = graph_weights(Bag::from_rows(&x, 1));
        assert_eq!(w, vec![0.5, 0.5, 1.0]);
        // {0, 1, 2}: distances 1, 2, 1, δ = 4/3; edges 0–1 and 1–2.
        let w = graph_weights(Bag::from_rows(&[0.0, 1.0, 2.0], 1));
        assert_eq!(w, vec![0.5, 1.0 / 3.0, 0.5]);
        // One instance: its own neighbour only.
        assert_eq!(graph_weights(Bag::from_rows(&[7.0, 1.0], 2)), vec![1.0]);
        // k_g(X, {2}) = (½e^{−4γ} + ½e^{−γ} + e^{−9γ}) / (2 · 1).
        let gamma = 0.3;
        let y = [2.0];
        let (bx, by) = (Bag::from_rows(&x, 1), Bag::from_rows(&y, 1));
        let kernel = |norm| {
            let (wx, wy) = (normalised_weights(bx, norm), normalised_weights(by, norm));
            graph_kernel(bx, &wx, by, &wy, gamma)
        };
        let want = (0.5 * (-4.0 * gamma).exp() + 0.5 * (-gamma).exp() + (-9.0 * gamma).exp()) / 2.0;
        let got = kernel(GraphNorm::Sum);
        assert!((got - want).abs() < 1e-15, "{got} {want}");
        // The authors' normalisation divides by √(2 · 1) instead.
        let (got, want) = (kernel(GraphNorm::Sqrt), want * 2.0 / 2f64.sqrt());
        assert!((got - want).abs() < 1e-15, "{got} {want}");
    }

    #[test]
    fn without_edges_the_kernel_is_the_mean_of_k() {
        // Two instances: δ is their distance, which is not below itself, so no edge.
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
        for _ in 0..20 {
            let x: Vec<f64> = (0..4).map(|_| rng.random_range(-2.0..2.0)).collect();
            let y: Vec<f64> = (0..4).map(|_| rng.random_range(-2.0..2.0)).collect();
            let (bx, by) = (Bag::from_rows(&x, 2), Bag::from_rows(&y, 2));
            assert_eq!(graph_weights(bx), vec![1.0, 1.0]);
            assert_eq!(graph_weights(by), vec![1.0, 1.0]);
            let gamma = rng.random_range(0.1..2.0);
            let mean = bx
                .instances()
                .flat_map(|a| {
                    by.instances()
                        .map(move |b| (-gamma * squared_euclidean(a, b)).exp())
                })
                .sum::<f64>()
                / 4.0;
            let got = graph_kernel(
                bx,
                &normalised_weights(bx, GraphNorm::Sum),
                by,
                &normalised_weights(by, GraphNorm::Sum),
                gamma,
            );
            assert!((got - mean).abs() < 1e-14, "{got} {mean}");
        }
    }

    #[test]
    fn the_gram_matrix_is_the_definition_and_positive_semidefinite() {
        for seed in 0..30 {
            let (bags, labels) = bags(seed, 12);
            let data = dataset(3, &bags, labels);
            let norm = [GraphNorm::Sum, GraphNorm::Sqrt][seed as usize % 2];
            let g = GraphBags::new(&data, norm);
            g.validate(norm).unwrap();
            let gamma = 0.2 + 0.1 * (seed % 5) as f64;
            let gram = g.gram(gamma);
            let n = bags.len();
            for i in 0..n {
                for j in 0..n {
                    assert_eq!(gram[i * n + j], gram[j * n + i]);
                    let want = brute_kernel(&bags[i], &bags[j], gamma, norm);
                    assert!(
                        (gram[i * n + j] - want).abs() < 1e-13,
                        "seed {seed} ({i}, {j})"
                    );
                }
            }
            let eig = nalgebra::SymmetricEigen::new(nalgebra::DMatrix::from_row_slice(n, n, &gram));
            let smallest = eig
                .eigenvalues
                .iter()
                .copied()
                .fold(f64::INFINITY, f64::min);
            assert!(smallest >= -1e-12 * n as f64, "seed {seed}: {smallest}");
        }
    }

    #[test]
    fn a_separable_set_is_learned_exactly() {
        for seed in 0..8 {
            let (bags, labels) = bags(seed, 30);
            let data = dataset(3, &bags, labels.clone());
            let model = MiGraph::default().cost(1e6).fit(&data).unwrap();
            assert!(model.svm.converged);
            assert_eq!(model.scores(&data).unwrap().labels(), labels, "seed {seed}");
        }
    }

    #[test]
    fn the_decision_is_the_kernel_expansion_and_the_contributions_sum_to_it() {
        let (bags, labels) = bags(3, 20);
        let data = dataset(3, &bags, labels);
        let model = MiGraph::default()
            .gamma(Some(0.4))
            .fit(data.select((0..14).collect::<Vec<_>>()))
            .unwrap();
        let scaled = model.scaled(&data, &(14..20).collect::<Vec<_>>()).unwrap();
        let scores = model
            .scores(data.select((14..20).collect::<Vec<_>>()))
            .unwrap();
        let explained = model
            .explain(data.select((14..20).collect::<Vec<_>>()))
            .unwrap();
        for t in 0..scaled.len() {
            let f: f64 = (0..model.bags.len())
                .map(|r| model.svm.coefficients[r] * scaled.kernel(t, &model.bags, r, 0.4))
                .sum::<f64>()
                + model.svm.bias;
            assert!(
                (scores.row(t)[1] - f).abs() < 1e-12,
                "{} {f}",
                scores.row(t)[1]
            );
            let g = &explained[t].instance_scores;
            assert_eq!(g.len(), bags[14 + t].len());
            assert!((g.iter().sum::<f64>() + model.svm.bias - f).abs() < 1e-12);
        }
    }

    /// A model's scores, and the Gram matrix, follow the bags when they are reordered and
    /// do not see the order of a bag's instances. (A fit on reordered training bags is
    /// the same SVM problem, which SMO solves to its tolerance along another path.)
    #[test]
    fn scores_do_not_depend_on_the_order_of_bags_or_instances() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
        for seed in 0..5 {
            let (bags, labels) = bags(seed, 24);
            let data = dataset(3, &bags, labels.clone());
            let model = MiGraph::default().fit(&data).unwrap();
            let base = model.scores(&data).unwrap();
            let mut order: Vec<usize> = (0..bags.len()).rev().collect();
            order.rotate_left(seed as usize);
            let shuffled: Vec<Vec<Vec<f64>>> = order
                .iter()
                .map(|&b| {
                    let mut bag = bags[b].clone();
                    for i in (1..bag.len()).rev() {
                        bag.swap(i, rng.random_range(0..=i));
                    }
                    bag
                })
                .collect();
            let relabelled: Vec<usize> = order.iter().map(|&b| labels[b]).collect();
            let other = dataset(3, &shuffled, relabelled);
            let scores = model.scores(&other).unwrap();
            let n = bags.len();
            let (g, h) = (
                GraphBags::new(&data, GraphNorm::Sum).gram(0.5),
                GraphBags::new(&other, GraphNorm::Sum).gram(0.5),
            );
            for (k, &b) in order.iter().enumerate() {
                let (x, y) = (base.row(b)[1], scores.row(k)[1]);
                assert!((x - y).abs() < 1e-12, "seed {seed} bag {b}: {x} {y}");
                for (l, &c) in order.iter().enumerate() {
                    assert!((g[b * n + c] - h[k * n + l]).abs() < 1e-14);
                }
            }
        }
    }

    #[test]
    fn results_do_not_depend_on_the_thread_count() {
        let (bags, labels) = bags(7, 40);
        let data = dataset(3, &bags, labels);
        let run = |threads: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| {
                    let model = MiGraph::default()
                        .fit(data.select((0..30).collect::<Vec<_>>()))
                        .unwrap();
                    let held: Vec<usize> = (30..40).collect();
                    let test = data.select(&held);
                    (
                        model.bags.clone(),
                        model.scores(test.clone()).unwrap(),
                        model.explain(test).unwrap(),
                    )
                })
        };
        assert_eq!(run(1), run(3));
    }

    #[test]
    fn parameters_and_data_are_checked() {
        let err = MiGraph::default()
            .cost(0.0)
            .check()
            .unwrap_err()
            .to_string();
        assert!(err.contains("cost"), "{err}");
        let err = MiGraph::default()
            .gamma(Some(-1.0))
            .check()
            .unwrap_err()
            .to_string();
        assert!(err.contains("gamma"), "{err}");
        let (bags, _) = bags(1, 6);
        let one = dataset(3, &bags, vec![1; 6]);
        let err = MiGraph::default().fit(&one).unwrap_err().to_string();
        assert!(err.contains("class"), "{err}");
        let grid = MiGraph::default().default_grid();
        assert_eq!(grid[0], MiGraph::default());
        assert_eq!(grid.len(), 9);
    }

    /// Three classes: each one-vs-rest machine is the binary mi-Graph of "class c against
    /// the rest" on the same bags, the largest decision value labels a bag, and the
    /// explanation is the predicted class's machine's.
    #[test]
    fn more_classes_are_one_machine_per_class_against_the_rest() {
        for seed in 0..4 {
            let (mut bags, _) = bags(seed, 30);
            let labels: Vec<usize> = (0..bags.len()).map(|b| b % 3).collect();
            for (bag, &c) in bags.iter_mut().zip(&labels) {
                // Class c's bags have one instance near (3c, −3c, 3).
                bag[0] = vec![3.0 * c as f64, -3.0 * c as f64, 3.0];
            }
            let data = dataset(3, &bags, labels.clone());
            let model = MiGraph::default().fit(&data).unwrap();
            assert_eq!(model.n_classes(), 3);
            let machines: Vec<&BagSvm> = model.machines().collect();
            for (c, machine) in machines.iter().enumerate() {
                let rest: Vec<usize> = labels.iter().map(|&l| usize::from(l == c)).collect();
                let binary = MiGraph::default().fit(&dataset(3, &bags, rest)).unwrap();
                assert_eq!(&binary.svm, *machine, "seed {seed} class {c}");
            }
            let scores = model.scores(&data).unwrap();
            assert_eq!(scores.labels(), labels, "seed {seed}");
            let explained = model.explain(&data).unwrap();
            let scaled = model
                .scaled(&data, &(0..bags.len()).collect::<Vec<_>>())
                .unwrap();
            for (b, e) in explained.iter().enumerate() {
                let (bag, w) = scaled.bag(b);
                let c = labels[b];
                let (f, g) = model.machine_decision(machines[c], bag, w);
                assert_eq!(e.instance_scores, g);
                assert!((scores.row(b)[c] - f).abs() < 1e-12);
            }
            let text = serde_json::to_string(&model).unwrap();
            let back: MiGraphModel = serde_json::from_str(&text).unwrap();
            back.validate().unwrap();
            assert_eq!(back, model);
        }
    }

    #[test]
    fn a_saved_model_round_trips_and_a_damaged_one_is_refused() {
        let (bags, labels) = bags(2, 16);
        let data = dataset(3, &bags, labels);
        let model = MiGraph::default().fit(&data).unwrap();
        let text = serde_json::to_string(&model).unwrap();
        let back: MiGraphModel = serde_json::from_str(&text).unwrap();
        back.validate().unwrap();
        assert_eq!(back.scores(&data).unwrap(), model.scores(&data).unwrap());
        let mut bad = model.clone();
        bad.bags.weights[0] *= 2.0;
        assert!(bad.validate().is_err());
        let mut bad = model.clone();
        bad.svm.coefficients.pop();
        assert!(bad.validate().is_err());
        let mut bad = model.clone();
        bad.gamma = f64::NAN;
        assert!(bad.validate().is_err());
        let mut bad = model.clone();
        bad.bags.starts[1] = 0;
        assert!(bad.validate().is_err());
        // A model saved before the normalisation was a setting reads as the paper's.
        let old = text.replace(r#","norm":"sum""#, "");
        assert_ne!(old, text);
        assert_eq!(serde_json::from_str::<MiGraphModel>(&old).unwrap(), model);
        // The authors' normalisation round-trips; its weights are refused as the paper's.
        let sqrt = MiGraph::default().norm(GraphNorm::Sqrt).fit(&data).unwrap();
        let back: MiGraphModel =
            serde_json::from_str(&serde_json::to_string(&sqrt).unwrap()).unwrap();
        back.validate().unwrap();
        assert_eq!(back.scores(&data).unwrap(), sqrt.scores(&data).unwrap());
        assert_ne!(sqrt.scores(&data).unwrap(), model.scores(&data).unwrap());
        let mut bad = sqrt;
        bad.params.norm = GraphNorm::Sum;
        assert!(bad.validate().is_err());
    }
}
