//! BAMIC (Zhang & Zhou, "Multi-instance clustering with applications to multi-instance
//! prediction", Applied Intelligence 2009): k-medoids over whole bags with a Hausdorff-type
//! bag distance (minimal, maximal or average; [`crate::distance`]). M³IC's baseline
//! (BAMIC1–3 of its Tables 3 and 4).
//!
//! Each start picks k distinct bags at random as medoids, then alternates (i) assigning
//! every bag to its nearest medoid and (ii) moving each medoid to the member of its cluster
//! with the smallest total distance to the other members, until the medoids stop changing.
//! The cost Σ_i d(B_i, medoid of B_i) never increases, so a start ends after finitely many
//! rounds. Restarts keep the lowest cost.

use rand::seq::index::sample;
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use super::BamicModel;
use crate::data::{Bags, Dataset};
use crate::distance::{pairwise, Hausdorff};
use crate::error::Result;
use crate::eval::folds::derive_seed;

/// The result of [`Bamic::fit`].
#[derive(Debug, Clone)]
pub struct BamicFit {
    /// The medoid bags (the model a device needs to assign new bags).
    pub model: BamicModel,
    /// Cluster of each bag.
    pub assignments: Vec<usize>,
    /// Index of each cluster's medoid bag.
    pub medoids: Vec<usize>,
    /// Σ_i d(B_i, medoid of its cluster) of the best start.
    pub objective: f64,
}

/// A k-medoids solution over a distance matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct KMedoids {
    /// Medoid of each cluster (indices into the items).
    pub medoids: Vec<usize>,
    /// Cluster of each item.
    pub assignments: Vec<usize>,
    /// Σ_i d(i, medoid of i).
    pub cost: f64,
}

/// BAMIC's parameters: the bag distance and the random starts of k-medoids.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bamic {
    /// Number of clusters k (at least 2, at most the number of bags).
    pub k: usize,
    /// Seed of the random starts ([`crate::eval::folds::derive_seed`]`(seed, r)` for start r).
    pub seed: u64,
    /// The bag distance (BAMIC1–3: min, max, avg).
    pub distance: Hausdorff,
    /// Random starts of k-medoids; the lowest cost wins.
    pub restarts: usize,
}

impl Default for Bamic {
    /// The minimal Hausdorff distance (BAMIC1, the paper's best on corel), 5 starts.
    fn default() -> Self {
        Bamic {
            k: 2,
            seed: 1,
            distance: Hausdorff::Min,
            restarts: 5,
        }
    }
}

crate::params::setters!(Bamic {
    k: usize,
    seed: u64,
    distance: Hausdorff,
    restarts: usize,
});

impl Bamic {
    /// Checks the parameters alone, before any data is read.
    pub fn check(&self) -> Result<()> {
        super::check_k(self.k, None)?;
        crate::params::check_count(
            "restarts",
            self.restarts,
            crate::params::limits::MAX_RESTARTS,
        )
    }

    /// Clusters the bags into `Bamic::k` clusters (`fit`).
    pub fn fit<'a>(&self, bags: impl Into<Bags<'a>>) -> Result<BamicFit> {
        self.check()?;
        let bags = bags.into();
        if bags.is_all() {
            fit(
                bags.dataset(),
                self.k,
                self.distance,
                self.restarts,
                self.seed,
            )
        } else {
            fit(
                &bags.to_dataset(),
                self.k,
                self.distance,
                self.restarts,
                self.seed,
            )
        }
    }
}

/// Clusters the bags of `data` into `k` clusters by BAMIC with `restarts` random starts;
/// start r is seeded by `derive_seed(seed, r)`. The bag distances are computed once, in
/// parallel (the result does not depend on the thread count).
pub(crate) fn fit(
    data: &Dataset,
    k: usize,
    distance: Hausdorff,
    restarts: usize,
    seed: u64,
) -> Result<BamicFit> {
    let n = data.n_bags();
    super::check_k(k, Some(n))?;
    crate::params::check_count("restarts", restarts, crate::params::limits::MAX_RESTARTS)?;
    let dist = pairwise(data, distance);
    let best = k_medoids(&dist, n, k, restarts, seed);
    let model = BamicModel {
        distance,
        dim: data.dim(),
        medoids: best
            .medoids
            .iter()
            .map(|&m| data.bag(m).as_slice().to_vec())
            .collect(),
    };
    Ok(BamicFit {
        model,
        assignments: best.assignments,
        medoids: best.medoids,
        objective: best.cost,
    })
}

/// k-medoids with restarts over a row-major `n × n` distance matrix; needs 1 ≤ k ≤ n and
/// restarts ≥ 1. The lowest cost wins (the first start on ties).
pub fn k_medoids(dist: &[f64], n: usize, k: usize, restarts: usize, seed: u64) -> KMedoids {
    let mut best: Option<KMedoids> = None;
    for r in 0..restarts.max(1) {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(derive_seed(seed, r as u64));
        let start = sample(&mut rng, n, k).into_vec();
        let run = alternate(dist, n, start);
        if best.as_ref().is_none_or(|b| run.cost < b.cost) {
            best = Some(run);
        }
    }
    best.unwrap_or(KMedoids {
        medoids: vec![],
        assignments: vec![],
        cost: f64::INFINITY,
    })
}

/// Every item to its nearest medoid (the first medoid on ties) and the total cost.
pub fn assign(dist: &[f64], n: usize, medoids: &[usize]) -> (Vec<usize>, f64) {
    let mut cost = 0.0;
    let assignments = (0..n)
        .map(|i| {
            let (c, d) = medoids
                .iter()
                .enumerate()
                .map(|(c, &m)| (c, dist[i * n + m]))
                .fold((0, f64::INFINITY), |b, x| if x.1 < b.1 { x } else { b });
            cost += d;
            c
        })
        .collect();
    (assignments, cost)
}

/// One start: alternate assignment and medoid update until the medoids are stable.
fn alternate(dist: &[f64], n: usize, mut medoids: Vec<usize>) -> KMedoids {
    loop {
        crate::cancel::checkpoint();
        let (assignments, cost) = assign(dist, n, &medoids);
        let mut changed = false;
        for (c, medoid) in medoids.iter_mut().enumerate() {
            let members: Vec<usize> = (0..n).filter(|&i| assignments[i] == c).collect();
            let total = |m: usize| members.iter().map(|&i| dist[m * n + i]).sum::<f64>();
            // Move only on a strict improvement, so the cost strictly falls and the loop ends.
            let mut best = (*medoid, total(*medoid));
            for &m in &members {
                let t = total(m);
                if t < best.1 {
                    best = (m, t);
                }
            }
            if best.0 != *medoid {
                *medoid = best.0;
                changed = true;
            }
        }
        if !changed {
            return KMedoids {
                medoids,
                assignments,
                cost,
            };
        }
    }
}

/// Memory and work of BAMIC on data of this shape: the bag distances as Citation-kNN
/// computes them (two n_bags × n_bags matrices at their peak); the work is one distance
/// per pair of instances.
pub fn footprint(shape: crate::params::Shape) -> crate::params::Estimate {
    crate::classifier::citation_knn::footprint(shape)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngExt;

    /// Every choice of k medoids out of n, with its cost: the global optimum of k-medoids.
    fn brute_force(dist: &[f64], n: usize, k: usize) -> f64 {
        fn rec(dist: &[f64], n: usize, k: usize, from: usize, chosen: &mut Vec<usize>) -> f64 {
            if chosen.len() == k {
                return assign(dist, n, chosen).1;
            }
            let mut best = f64::INFINITY;
            for m in from..n {
                chosen.push(m);
                best = best.min(rec(dist, n, k, m + 1, chosen));
                chosen.pop();
            }
            best
        }
        rec(dist, n, k, 0, &mut Vec::new())
    }

    fn euclidean_matrix(points: &[(f64, f64)]) -> Vec<f64> {
        let n = points.len();
        let mut d = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                d[i * n + j] = (points[i].0 - points[j].0).hypot(points[i].1 - points[j].1);
            }
        }
        d
    }

    /// A hand-made set of 6 bags (9 instances, dim 2) in three well-separated groups.
    fn hand_made() -> Dataset {
        let pts = [
            (0.0, 0.0),
            (1.0, 0.0),
            (0.0, 1.5),
            (10.0, 0.0),
            (11.0, 1.0),
            (10.5, -1.0),
            (5.0, 9.0),
            (6.0, 8.0),
            (4.0, 8.5),
        ];
        let features: Vec<f64> = pts.iter().flat_map(|&(x, y)| [x, y]).collect();
        Dataset::new(
            "hand",
            2,
            features,
            vec![0, 2, 3, 5, 6, 7, 9],
            (0..6).map(|i| i.to_string()).collect(),
            None,
            vec![],
        )
        .unwrap()
    }

    #[test]
    fn finds_the_brute_force_optimum_on_a_hand_made_set() {
        let data = hand_made();
        let n = data.n_bags();
        for kind in [Hausdorff::Min, Hausdorff::Max, Hausdorff::Avg] {
            let dist = pairwise(&data, kind);
            for k in 2..=4 {
                let fit = fit(&data, k, kind, 10, 3).unwrap();
                let best = brute_force(&dist, n, k);
                assert!(
                    (fit.objective - best).abs() <= 1e-12 * (1.0 + best),
                    "{kind:?} k={k}: {} vs brute force {best}",
                    fit.objective
                );
            }
        }
    }

    #[test]
    fn each_start_ends_at_a_fixed_point_of_both_steps() {
        // On random small sets: the assignment is optimal for the medoids, and each medoid
        // is the best medoid of its own cluster (checked by enumeration); the cost is never
        // below the brute-force optimum.
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
        for case in 0..200 {
            let n = rng.random_range(3..10usize);
            let k = rng.random_range(1..=n.min(4));
            let pts: Vec<(f64, f64)> = (0..n)
                .map(|_| (rng.random_range(0.0..10.0), rng.random_range(0.0..10.0)))
                .collect();
            let dist = euclidean_matrix(&pts);
            let sol = k_medoids(&dist, n, k, 3, case);
            let (assignments, cost) = assign(&dist, n, &sol.medoids);
            assert_eq!(assignments, sol.assignments);
            assert_eq!(cost, sol.cost);
            for (c, &m) in sol.medoids.iter().enumerate() {
                let members: Vec<usize> = (0..n).filter(|&i| sol.assignments[i] == c).collect();
                let total = |x: usize| members.iter().map(|&i| dist[x * n + i]).sum::<f64>();
                let own = total(m);
                assert!(members.iter().all(|&x| total(x) >= own), "case {case}");
            }
            assert!(sol.cost >= brute_force(&dist, n, k) - 1e-12);
        }
    }

    #[test]
    fn same_seed_same_result_on_any_thread_count() {
        let data = crate::data::load("corel3")
            .unwrap()
            .copy_bags(&(0..60).collect::<Vec<_>>());
        let on = |threads: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| fit(&data, 3, Hausdorff::Avg, 5, 9).unwrap())
        };
        let (one, two) = (on(1), on(2));
        assert_eq!(one.assignments, two.assignments);
        assert_eq!(one.model, two.model);
        assert_eq!(one.objective.to_bits(), two.objective.to_bits());
    }

    #[test]
    fn bad_parameters_are_errors() {
        let data = hand_made();
        assert!(fit(&data, 1, Hausdorff::Min, 3, 1).is_err());
        assert!(fit(&data, 7, Hausdorff::Min, 3, 1).is_err());
        assert!(fit(&data, 2, Hausdorff::Min, 0, 1).is_err());
    }
}
