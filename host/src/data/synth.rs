//! The papers' synthetic data sets, generated from a seed.
//!
//! - [`mida_one`]: MIDA (Chai et al. 2014) §5.1 data set one, binary.
//! - [`mida_two`]: MIDA §5.1 data set two, three classes.
//! - [`mialm_ii`]: MI-ALM (Zhu et al. 2018) §3.1 data set II, binary, D dimensions of
//!   which d are relevant.
//! - [`rh_single`], [`rh_multi`], [`rh_false_frequency`]: Raff & Holt's (2023)
//!   algorithmic unit tests of the MIL assumption, each a training and a test [`Split`]
//!   (module [`raff_holt`]).
//!
//! Each returns the data set together with the ground truth the papers' experiments
//! need: which instances were drawn from a positive distribution (MIDA Table 1 counts the
//! positive prototypes kernel density estimation recovers) and which features carry
//! signal. Bags are i.i.d. and listed class by class; inside a bag the instance order is
//! a uniform random permutation, so the position of a positive instance carries no
//! information. Same seed, same data set: one `Xoshiro256PlusPlus` stream, drawn in a
//! fixed order.

use rand::seq::{index, SliceRandom};
use rand::RngExt;
use rand_core::SeedableRng;
use rand_distr::{Distribution, Normal};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::dataset::Dataset;
use crate::error::{Error, Result};

pub mod raff_holt;
pub use raff_holt::{rh_false_frequency, rh_multi, rh_single, Split};

/// Reads the ground truth `mil synth --truth` writes (`bag_id,instance,positive` per line,
/// instances numbered from 1 within each bag) for the instances of `data`: one flag per
/// global instance index. Every instance of `data` must have exactly one line, and every
/// line must name a bag of `data` and one of its instances; an error names the file, line
/// and field.
pub fn read_truth(path: &std::path::Path, data: &Dataset) -> Result<Vec<bool>> {
    let text = super::read_text(path)?;
    let file = path.display().to_string();
    let bags: std::collections::HashMap<&str, usize> =
        (0..data.n_bags()).map(|b| (data.bag_id(b), b)).collect();
    // Per global instance: (positive, line it came from).
    let mut truth: Vec<Option<(bool, usize)>> = vec![None; data.n_instances()];
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |field: &str, problem: String| Error::Parse {
            file: file.clone(),
            line: n + 1,
            field: field.into(),
            problem,
        };
        let parts: Vec<&str> = line.split(',').map(str::trim).collect();
        let [bag, instance, positive] = parts[..] else {
            return Err(bad("line", "expected bag_id,instance,positive".into()));
        };
        let Some(&b) = bags.get(bag) else {
            return Err(bad(
                "bag_id",
                format!("{bag:?} is not a bag of {}", data.name()),
            ));
        };
        let k: usize = instance
            .parse()
            .map_err(|_| bad("instance", "not a whole number".into()))?;
        let len = data.bag(b).len();
        if k == 0 || k > len {
            return Err(bad(
                "instance",
                format!("bag {bag} has instances 1 to {len}, not {k}"),
            ));
        }
        let positive = match positive {
            "1" => true,
            "0" => false,
            _ => return Err(bad("positive", "expected 0 or 1".into())),
        };
        let slot = &mut truth[data.bag_range(b).start + k - 1];
        if let Some((_, first)) = slot {
            return Err(bad(
                "instance",
                format!("bag {bag} instance {k} is also on line {first}"),
            ));
        }
        *slot = Some((positive, n + 1));
    }
    let mut out = Vec::with_capacity(data.n_instances());
    for b in 0..data.n_bags() {
        for (k, i) in data.bag_range(b).enumerate() {
            let (flag, _) = truth[i].ok_or_else(|| {
                Error::data(
                    &file,
                    format!(
                        "no line for bag {} instance {} of {}",
                        data.bag_id(b),
                        k + 1,
                        data.name()
                    ),
                )
            })?;
            out.push(flag);
        }
    }
    Ok(out)
}

/// A generated data set with its ground truth.
#[derive(Debug, Clone)]
pub struct Synthetic {
    /// The bags, labelled (binary: 1 = positive, 0 = negative).
    pub data: Dataset,
    /// Per instance (global index): drawn from a positive (class-specific) distribution.
    pub positive: Vec<bool>,
    /// The relevant features (0-based columns, ascending); the others are pure noise.
    pub relevant: Vec<usize>,
}

impl Synthetic {
    /// The papers' protocol of half the bags of each class for training and the other
    /// half for testing: (training bags, test bags). Bags are i.i.d., so the first half of
    /// each class is as good as a random half.
    pub fn paper_split(&self) -> (Vec<usize>, Vec<usize>) {
        let labels = self.data.labels().unwrap_or_default();
        let mut seen = vec![0; self.data.n_classes()];
        let per_class = self.data.bags_per_class();
        let (mut train, mut test) = (Vec::new(), Vec::new());
        for (b, &l) in labels.iter().enumerate() {
            if seen[l] < per_class[l] / 2 {
                train.push(b);
            } else {
                test.push(b);
            }
            seen[l] += 1;
        }
        (train, test)
    }
}

/// Normal distribution from a mean and a variance that are compile-time constants of the
/// papers (always valid).
fn normal(mean: f64, variance: f64) -> Normal<f64> {
    Normal::new(mean, variance.sqrt()).unwrap_or_else(|_| unreachable!("finite sd"))
}

/// Collects bags while they are generated.
struct Builder {
    rng: Xoshiro256PlusPlus,
    dim: usize,
    features: Vec<f64>,
    bag_starts: Vec<usize>,
    bag_ids: Vec<String>,
    labels: Vec<usize>,
    positive: Vec<bool>,
}

impl Builder {
    fn new(seed: u64, dim: usize) -> Self {
        Builder {
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            dim,
            features: Vec::new(),
            bag_starts: vec![0],
            bag_ids: Vec::new(),
            labels: Vec::new(),
            positive: Vec::new(),
        }
    }

    /// Appends a bag of `n_pos` positive and `n_neg` negative instances in random order;
    /// `draw(rng, is_positive, row)` fills one instance.
    fn bag(
        &mut self,
        id: String,
        label: usize,
        n_pos: usize,
        n_neg: usize,
        mut draw: impl FnMut(&mut Xoshiro256PlusPlus, bool, &mut [f64]),
    ) {
        let mut kinds = vec![true; n_pos];
        kinds.resize(n_pos + n_neg, false);
        self.bag_of(id, label, kinds, |rng, &p, row| draw(rng, p, row), |&p| p);
    }

    /// Appends a bag of instances of the given kinds in random order; `draw(rng, kind,
    /// row)` fills one instance and `positive(kind)` is its truth flag.
    fn bag_of<K>(
        &mut self,
        id: String,
        label: usize,
        mut kinds: Vec<K>,
        mut draw: impl FnMut(&mut Xoshiro256PlusPlus, &K, &mut [f64]),
        positive: impl Fn(&K) -> bool,
    ) {
        kinds.shuffle(&mut self.rng);
        for kind in &kinds {
            let start = self.features.len();
            self.features.resize(start + self.dim, 0.0);
            draw(&mut self.rng, kind, &mut self.features[start..]);
            self.positive.push(positive(kind));
        }
        self.bag_starts.push(self.positive.len());
        self.bag_ids.push(id);
        self.labels.push(label);
    }

    fn finish(self, name: &str, n_classes: usize, relevant: Vec<usize>) -> Result<Synthetic> {
        let data = Dataset::new(
            name,
            self.dim,
            self.features,
            self.bag_starts,
            self.bag_ids,
            Some(self.labels),
            (0..n_classes).map(|c| c.to_string()).collect(),
        )?;
        Ok(Synthetic {
            data,
            positive: self.positive,
            relevant,
        })
    }
}

/// MIDA §5.1: 32 dimensions, the first two relevant.
const MIDA_DIM: usize = 32;
/// MIDA §5.1: "each bag … contains eight instances", exactly one positive per positive bag.
const MIDA_BAG: usize = 8;
/// MIDA §5.1: 40 bags per class (half for training, half for testing).
const MIDA_BAGS_PER_CLASS: usize = 40;
/// MIDA §5.1: relevant covariance 2·I for data set one and for positives of set two.
const MIDA_RELEVANT_VAR: f64 = 2.0;
/// MIDA §5.1: the 30 noisy dimensions are independent N(0, 9).
const MIDA_NOISE_VAR: f64 = 9.0;

/// Fills a MIDA instance: `mean` and `variance` on the two relevant dimensions, N(0, 9)
/// noise on the other thirty.
fn mida_instance(rng: &mut Xoshiro256PlusPlus, row: &mut [f64], mean: [f64; 2], variance: f64) {
    for (x, m) in row.iter_mut().zip(mean) {
        *x = rng.sample(normal(m, variance));
    }
    let noise = normal(0.0, MIDA_NOISE_VAR);
    for x in &mut row[2..] {
        *x = noise.sample(rng);
    }
}

/// The synthetic sets of the papers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyntheticSet {
    /// MIDA §5.1 data set one (binary, 32 dimensions, 2 relevant).
    MidaOne,
    /// MIDA §5.1 data set two (three classes).
    MidaTwo,
    /// MI-ALM §3.1 data set II (`dims` dimensions, `relevant` of them informative).
    MialmIi,
    /// High-dimensional sparse term counts, few informative features, optionally
    /// imbalanced ([`term_counts`]).
    TermCounts,
    /// Raff & Holt's single-concept test ([`rh_single`]).
    RhSingle,
    /// Raff & Holt's two-concept (threshold) test ([`rh_multi`]).
    RhMulti,
    /// Raff & Holt's false-frequency test ([`rh_false_frequency`]).
    RhFalseFrequency,
}

mil_core::keywords!(SyntheticSet {
    SyntheticSet::MidaOne => "mida-one": "MIDA §5.1 data set one (binary)",
    SyntheticSet::MidaTwo => "mida-two": "MIDA §5.1 data set two (three classes)",
    SyntheticSet::MialmIi => "mialm-ii": "MI-ALM §3.1 data set II (dims D, relevant d)",
    SyntheticSet::TermCounts => "term-counts": "sparse non-negative term counts: dims D (default 6000), relevant d, bags, imbalance",
    SyntheticSet::RhSingle => "rh-single": "Raff & Holt's single-concept MIL test: poison in negative training bags and positive test bags (dims, bags, split)",
    SyntheticSet::RhMulti => "rh-multi": "Raff & Holt's two-concept threshold MIL test, poisoned like rh-single (dims, bags, split)",
    SyntheticSet::RhFalseFrequency => "rh-false-frequency": "Raff & Holt's false-frequency test: negative test bags repeat one concept 35-44 times (dims, bags, split)",
});

/// D of MI-ALM's data set II unless given.
pub const DEFAULT_DIMS: usize = 100;
/// Relevant dimensions d of MI-ALM's data set II unless given.
pub const DEFAULT_RELEVANT: usize = 20;

/// MIDA §5.1 data set one (for B-MIDA). Positive instances ~ N(μ⁺ = [−4, 4], 2I) and
/// negative instances ~ N(μ⁻ = [4, −4], 2I) on the two relevant dimensions, N(0, 9) on
/// 30 noisy ones. 40 positive bags of one positive and seven negative instances (label 1,
/// ids `pos-1…`), then 40 negative bags of eight negative instances (label 0, `neg-1…`).
pub fn mida_one(seed: u64) -> Synthetic {
    let mut b = Builder::new(seed, MIDA_DIM);
    let draw = |rng: &mut Xoshiro256PlusPlus, positive: bool, row: &mut [f64]| {
        let mean = if positive { [-4.0, 4.0] } else { [4.0, -4.0] };
        mida_instance(rng, row, mean, MIDA_RELEVANT_VAR);
    };
    for i in 1..=MIDA_BAGS_PER_CLASS {
        b.bag(format!("pos-{i}"), 1, 1, MIDA_BAG - 1, draw);
    }
    for i in 1..=MIDA_BAGS_PER_CLASS {
        b.bag(format!("neg-{i}"), 0, 0, MIDA_BAG, draw);
    }
    b.finish("mida-one", 2, vec![0, 1])
        .unwrap_or_else(|e| unreachable!("fixed sizes are valid: {e}"))
}

/// MIDA §5.1 data set two (for M-MIDA). The positive instance of class c ~ N(μ_c, 2I)
/// with μ₁ = [−4, 4], μ₂ = [4, −4], μ₃ = [8, 8]; negative instances, shared by all
/// classes, ~ N(μ⁻ = [−2, 15], 4I); N(0, 9) on 30 noisy dimensions. 40 bags per class,
/// each one positive instance of its class and seven negatives. The paper's classes
/// 1, 2, 3 are labels 0, 1, 2 here (as in the shipped multi-class sets); ids `c0-1…`.
pub fn mida_two(seed: u64) -> Synthetic {
    const POSITIVE_MEANS: [[f64; 2]; 3] = [[-4.0, 4.0], [4.0, -4.0], [8.0, 8.0]];
    const NEGATIVE_MEAN: [f64; 2] = [-2.0, 15.0];
    const NEGATIVE_VAR: f64 = 4.0;
    let mut b = Builder::new(seed, MIDA_DIM);
    for (class, mean) in POSITIVE_MEANS.into_iter().enumerate() {
        for i in 1..=MIDA_BAGS_PER_CLASS {
            b.bag(
                format!("c{class}-{i}"),
                class,
                1,
                MIDA_BAG - 1,
                |rng, positive, row| {
                    if positive {
                        mida_instance(rng, row, mean, MIDA_RELEVANT_VAR);
                    } else {
                        mida_instance(rng, row, NEGATIVE_MEAN, NEGATIVE_VAR);
                    }
                },
            );
        }
    }
    b.finish("mida-two", 3, vec![0, 1])
        .unwrap_or_else(|e| unreachable!("fixed sizes are valid: {e}"))
}

/// Largest D [`mialm_ii`] accepts: its 1400 instances then take 112 MB.
pub const MIALM_MAX_DIMS: usize = 10_000;

/// MI-ALM §3.1 data set II. D features of which d, chosen uniformly at random, are
/// relevant. On the k-th relevant feature (k = 0, 1, …, in column order) a positive
/// instance has mean −4, 4, −4, … and a negative one 4, −4, 4, …, both with variance 2
/// (covariance 2·I_d); the D − d noisy features are N(0, 8²) ("standard deviation of 8").
/// 60 positive bags of 5 positive and 15 negative instances (label 1, ids `pos-1…`), then
/// 20 negative bags of 10 negative instances (label 0, `neg-1…`).
pub fn mialm_ii(dims: usize, relevant: usize, seed: u64) -> Result<Synthetic> {
    if dims == 0 || dims > MIALM_MAX_DIMS {
        return Err(Error::parameter(
            "dims",
            dims,
            format!("must be between 1 and {MIALM_MAX_DIMS}"),
        ));
    }
    if relevant == 0 || relevant > dims {
        return Err(Error::parameter(
            "relevant",
            relevant,
            format!("must be between 1 and dims = {dims}"),
        ));
    }
    const RELEVANT_VAR: f64 = 2.0;
    const NOISE_SD: f64 = 8.0;
    let mut b = Builder::new(seed, dims);
    let mut columns = index::sample(&mut b.rng, dims, relevant).into_vec();
    columns.sort_unstable();
    // Sign of the positive mean per column: −1, +1, −1, … over the relevant columns.
    let mut sign = vec![0.0; dims];
    for (k, &c) in columns.iter().enumerate() {
        sign[c] = if k % 2 == 0 { -1.0 } else { 1.0 };
    }
    let noise = normal(0.0, NOISE_SD * NOISE_SD);
    let draw = |rng: &mut Xoshiro256PlusPlus, positive: bool, row: &mut [f64]| {
        for (x, &s) in row.iter_mut().zip(&sign) {
            *x = if s == 0.0 {
                noise.sample(rng)
            } else {
                let mean = if positive { 4.0 * s } else { -4.0 * s };
                rng.sample(normal(mean, RELEVANT_VAR))
            };
        }
    };
    for i in 1..=60 {
        b.bag(format!("pos-{i}"), 1, 5, 15, draw);
    }
    for i in 1..=20 {
        b.bag(format!("neg-{i}"), 0, 0, 10, draw);
    }
    b.finish("mialm-ii", 2, columns)
}

/// The shape of a [`term_counts`] set.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TermCounts {
    /// Features D (the vocabulary).
    pub dims: usize,
    /// Informative features (terms whose rate rises in witness instances).
    pub relevant: usize,
    /// Bags in all.
    pub bags: usize,
    /// Instances per bag.
    pub bag_size: usize,
    /// Negative bags per positive bag (1 = balanced, 20 = 1:20).
    pub imbalance: f64,
}

impl Default for TermCounts {
    /// 80 bags of 25 instances (2,000 in all), 6,000 features, 20 informative, balanced.
    fn default() -> Self {
        TermCounts {
            dims: 6000,
            relevant: 20,
            bags: 80,
            bag_size: 25,
            imbalance: 1.0,
        }
    }
}

crate::params::setters!(TermCounts {
    dims: usize,
    relevant: usize,
    bags: usize,
    bag_size: usize,
    imbalance: f64,
});

/// Largest D [`term_counts`] accepts.
pub const TERM_COUNTS_MAX_DIMS: usize = 100_000;

/// Sparse non-negative term counts, like bag-of-words documents split into passages.
///
/// Each instance is a passage of L ~ 20 + Poisson(20) terms drawn from a Zipf vocabulary
/// (term j has probability ∝ 1/(j + 1)); a feature is the count of its term, so most
/// are 0. `relevant` terms, chosen uniformly at random among the rarer half of the
/// vocabulary, are the concept: a witness passage adds Poisson(3) occurrences of each of
/// three of them (chosen at random). A positive bag (label 1, ids `pos-1…`) holds
/// ⌈20%⌉ witness passages, a negative bag (label 0, `neg-1…`) none. Of the `bags`, a
/// share 1/(1 + imbalance) (at least one) are positive; positives come first.
pub fn term_counts(shape: TermCounts, seed: u64) -> Result<Synthetic> {
    let TermCounts {
        dims,
        relevant,
        bags,
        bag_size,
        imbalance,
    } = shape;
    if !(2..=TERM_COUNTS_MAX_DIMS).contains(&dims) {
        return Err(Error::parameter(
            "dims",
            dims,
            format!("must be between 2 and {TERM_COUNTS_MAX_DIMS}"),
        ));
    }
    if relevant == 0 || relevant > dims / 2 {
        return Err(Error::parameter(
            "relevant",
            relevant,
            format!("must be between 1 and dims/2 = {}", dims / 2),
        ));
    }
    if !(2..=100_000).contains(&bags) {
        return Err(Error::parameter(
            "bags",
            bags,
            "must be between 2 and 100000",
        ));
    }
    if bag_size == 0 || bag_size > 10_000 {
        return Err(Error::parameter(
            "bag_size",
            bag_size,
            "must be between 1 and 10000",
        ));
    }
    if !(imbalance.is_finite() && (1.0..=1000.0).contains(&imbalance)) {
        return Err(Error::parameter(
            "imbalance",
            imbalance,
            "must be between 1 and 1000 (negative bags per positive bag)",
        ));
    }
    let positives = ((bags as f64 / (1.0 + imbalance)).round() as usize).clamp(1, bags - 1);
    let mut b = Builder::new(seed, dims);
    let mut columns: Vec<usize> = index::sample(&mut b.rng, dims - dims / 2, relevant)
        .into_iter()
        .map(|c| c + dims / 2)
        .collect();
    columns.sort_unstable();
    // Cumulative Zipf weights for inverse-CDF sampling of terms.
    let mut cdf: Vec<f64> = (0..dims).map(|j| 1.0 / (j + 1) as f64).collect();
    for j in 1..dims {
        cdf[j] += cdf[j - 1];
    }
    let total = cdf[dims - 1];
    let length = rand_distr::Poisson::new(20.0).unwrap_or_else(|_| unreachable!("rate > 0"));
    let boost = rand_distr::Poisson::new(3.0).unwrap_or_else(|_| unreachable!("rate > 0"));
    let draw = |rng: &mut Xoshiro256PlusPlus, positive: bool, row: &mut [f64]| {
        row.iter_mut().for_each(|x| *x = 0.0);
        let terms = 20 + length.sample(rng) as usize;
        for _ in 0..terms {
            let u = rng.random::<f64>() * total;
            let j = cdf.partition_point(|&c| c < u).min(dims - 1);
            row[j] += 1.0;
        }
        if positive {
            for _ in 0..3 {
                let c = columns[rng.random_range(0..columns.len())];
                row[c] += boost.sample(rng);
            }
        }
    };
    let witnesses = bag_size.div_ceil(5);
    for i in 1..=positives {
        b.bag(format!("pos-{i}"), 1, witnesses, bag_size - witnesses, draw);
    }
    for i in 1..=bags - positives {
        b.bag(format!("neg-{i}"), 0, 0, bag_size, draw);
    }
    b.finish("term-counts", 2, columns)
}

/// Memory and work of writing a synthetic set of `instances` instances of `dims`
/// features: the features and their text (at most 24 bytes a value as `f64`'s shortest
/// form, a third of the 8 bytes per value counted for each).
pub fn footprint(instances: usize, dims: usize) -> crate::params::Estimate {
    let values = instances as f64 * dims as f64;
    crate::params::Estimate::values(4.0 * values, values)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Tolerances. For n i.i.d. draws with variance σ², the sample mean has standard error
    // σ/√n and the sample variance (Gaussian data) has standard error σ²·√(2/(n−1)). Each
    // check allows 5 standard errors: a correct generator fails one check with
    // probability 5.7e-7, while a wrong mean, variance or distribution shifts the
    // statistic by far more than 5 standard errors at these sample sizes.
    const Z: f64 = 5.0;

    /// Mean and (unbiased) variance of column `j` over the chosen instances.
    fn moments(data: &Dataset, rows: &[usize], j: usize) -> (f64, f64) {
        let n = rows.len() as f64;
        let mean = rows.iter().map(|&i| data.instance(i)[j]).sum::<f64>() / n;
        let var = rows
            .iter()
            .map(|&i| (data.instance(i)[j] - mean).powi(2))
            .sum::<f64>()
            / (n - 1.0);
        (mean, var)
    }

    /// Checks the mean and variance of column `j` over `rows` against the definition.
    fn check(data: &Dataset, rows: &[usize], j: usize, mean: f64, var: f64, what: &str) {
        let n = rows.len() as f64;
        let (m, v) = moments(data, rows, j);
        let mean_tol = Z * (var / n).sqrt();
        let var_tol = Z * var * (2.0 / (n - 1.0)).sqrt();
        assert!(
            (m - mean).abs() < mean_tol,
            "{what} column {j}: mean {m}, want {mean} ± {mean_tol}"
        );
        assert!(
            (v - var).abs() < var_tol,
            "{what} column {j}: variance {v}, want {var} ± {var_tol}"
        );
    }

    /// Concatenates the sets of many seeds into one (renaming bag ids apart).
    fn pooled(sets: impl Iterator<Item = Synthetic>) -> Synthetic {
        let mut features = Vec::new();
        let mut starts = vec![0];
        let (mut ids, mut labels, mut positive) = (Vec::new(), Vec::new(), Vec::new());
        let mut last = None;
        for (s, set) in sets.enumerate() {
            let d = &set.data;
            for b in 0..d.n_bags() {
                features.extend_from_slice(d.bag(b).as_slice());
                starts.push(features.len() / d.dim());
                ids.push(format!("{s}/{}", d.bag_id(b)));
                labels.push(d.label(b).unwrap());
            }
            positive.extend_from_slice(&set.positive);
            last = Some((d.dim(), d.class_names().to_vec(), set.relevant.clone()));
        }
        let (dim, classes, relevant) = last.unwrap();
        let data =
            Dataset::new("pooled", dim, features, starts, ids, Some(labels), classes).unwrap();
        Synthetic {
            data,
            positive,
            relevant,
        }
    }

    /// Instances (global indices) of bags with `label` whose positive flag is `positive`.
    fn rows(s: &Synthetic, label: usize, positive: bool) -> Vec<usize> {
        let d = &s.data;
        (0..d.n_bags())
            .filter(|&b| d.label(b) == Some(label))
            .flat_map(|b| d.bag_range(b))
            .filter(|&i| s.positive[i] == positive)
            .collect()
    }

    /// Bag sizes and positive counts per bag, as (label, size, positives) triples.
    fn shapes(s: &Synthetic) -> Vec<(usize, usize, usize)> {
        let d = &s.data;
        (0..d.n_bags())
            .map(|b| {
                let r = d.bag_range(b);
                (
                    d.label(b).unwrap(),
                    r.len(),
                    r.filter(|&i| s.positive[i]).count(),
                )
            })
            .collect()
    }

    #[test]
    fn mida_one_counts() {
        let s = mida_one(3);
        let mut want = vec![(1, 8, 1); 40];
        want.extend(vec![(0, 8, 0); 40]);
        assert_eq!(shapes(&s), want);
        assert_eq!((s.data.n_instances(), s.data.dim()), (640, 32));
        assert_eq!(s.data.bags_per_class(), vec![40, 40]);
        assert_eq!(s.relevant, vec![0, 1]);
        let (train, test) = s.paper_split();
        assert_eq!((train.len(), test.len()), (40, 40));
        // Table 1: 20 true positive prototypes in the training set.
        let train_pos: usize = train
            .iter()
            .flat_map(|&b| s.data.bag_range(b))
            .filter(|&i| s.positive[i])
            .count();
        assert_eq!(train_pos, 20);
    }

    #[test]
    fn mida_one_statistics() {
        // 100 seeds: 4000 positive and 60 000 negative instances.
        let s = pooled((0..100).map(mida_one));
        let pos = rows(&s, 1, true);
        let mut neg = rows(&s, 1, false);
        neg.extend(rows(&s, 0, false));
        for (j, m) in [(0, -4.0), (1, 4.0)] {
            check(&s.data, &pos, j, m, 2.0, "positive");
            check(&s.data, &neg, j, -m, 2.0, "negative");
        }
        let all: Vec<usize> = (0..s.data.n_instances()).collect();
        for j in 2..32 {
            check(&s.data, &all, j, 0.0, 9.0, "noise");
        }
        // Σ = 2I: the two relevant dimensions are uncorrelated. The sample covariance of
        // independent N(·, 2) pairs has standard error 2/√n.
        let n = pos.len() as f64;
        let cov = pos
            .iter()
            .map(|&i| (s.data.instance(i)[0] + 4.0) * (s.data.instance(i)[1] - 4.0))
            .sum::<f64>()
            / n;
        assert!(cov.abs() < Z * 2.0 / n.sqrt(), "covariance {cov}");
    }

    #[test]
    fn positive_position_is_uniform() {
        // Over 4000 positive bags each of the 8 slots holds the positive instance with
        // probability 1/8; the frequency's standard error is √(p(1−p)/n).
        let s = pooled((0..100).map(mida_one));
        let mut slots = [0usize; 8];
        let d = &s.data;
        for b in (0..d.n_bags()).filter(|&b| d.label(b) == Some(1)) {
            let r = d.bag_range(b);
            let k = r.clone().position(|i| s.positive[i]).unwrap();
            slots[k] += 1;
        }
        let n = slots.iter().sum::<usize>() as f64;
        let tol = Z * (0.125 * 0.875 / n).sqrt();
        for c in slots {
            assert!((c as f64 / n - 0.125).abs() < tol, "{slots:?}");
        }
    }

    #[test]
    fn mida_two_counts_and_statistics() {
        let one = mida_two(3);
        let mut want = Vec::new();
        for c in 0..3 {
            want.extend(vec![(c, 8, 1); 40]);
        }
        assert_eq!(shapes(&one), want);
        assert_eq!(
            (one.data.n_instances(), one.data.dim(), one.data.n_classes()),
            (960, 32, 3)
        );
        let (train, _) = one.paper_split();
        let train_pos: usize = train
            .iter()
            .flat_map(|&b| one.data.bag_range(b))
            .filter(|&i| one.positive[i])
            .count();
        assert_eq!(
            train_pos, 60,
            "Table 1: 60 true positive prototypes in training"
        );

        // 100 seeds: 4000 positives per class and 84 000 negatives.
        let s = pooled((0..100).map(mida_two));
        let means = [[-4.0, 4.0], [4.0, -4.0], [8.0, 8.0]];
        let mut neg = Vec::new();
        for (c, mean) in means.iter().enumerate() {
            let pos = rows(&s, c, true);
            for (j, &m) in mean.iter().enumerate() {
                check(&s.data, &pos, j, m, 2.0, "positive");
            }
            neg.extend(rows(&s, c, false));
        }
        check(&s.data, &neg, 0, -2.0, 4.0, "negative");
        check(&s.data, &neg, 1, 15.0, 4.0, "negative");
        let all: Vec<usize> = (0..s.data.n_instances()).collect();
        for j in 2..32 {
            check(&s.data, &all, j, 0.0, 9.0, "noise");
        }
    }

    #[test]
    fn mialm_ii_counts_and_statistics() {
        let one = mialm_ii(40, 12, 3).unwrap();
        let mut want = vec![(1, 20, 5); 60];
        want.extend(vec![(0, 10, 0); 20]);
        assert_eq!(shapes(&one), want);
        assert_eq!((one.data.n_instances(), one.data.dim()), (1400, 40));
        assert_eq!(one.relevant.len(), 12);
        assert!(one.relevant.windows(2).all(|w| w[0] < w[1]) && one.relevant[11] < 40);

        // 40 seeds: 12 000 positive and 44 000 negative instances. The relevant columns
        // differ by seed, so statistics are taken per set over the k-th relevant column
        // and pooled by averaging (means and variances of equal-size groups).
        let sets: Vec<Synthetic> = (0..40)
            .map(|seed| mialm_ii(40, 12, seed).unwrap())
            .collect();
        let k_count = 12;
        let mut stats = vec![[0.0; 4]; k_count + 1]; // pos mean, pos var, neg mean, neg var
        let mut n = [0usize; 2];
        for s in &sets {
            let pos = rows(s, 1, true);
            let mut neg = rows(s, 1, false);
            neg.extend(rows(s, 0, false));
            n = [pos.len(), neg.len()];
            for (k, &c) in s.relevant.iter().enumerate() {
                let (pm, pv) = moments(&s.data, &pos, c);
                let (nm, nv) = moments(&s.data, &neg, c);
                for (acc, v) in stats[k].iter_mut().zip([pm, pv, nm, nv]) {
                    *acc += v / sets.len() as f64;
                }
            }
            let all: Vec<usize> = (0..s.data.n_instances()).collect();
            for c in (0..40).filter(|c| !s.relevant.contains(c)) {
                let (m, v) = moments(&s.data, &all, c);
                stats[k_count][0] += m / (sets.len() * 28) as f64;
                stats[k_count][1] += v / (sets.len() * 28) as f64;
            }
        }
        // Pooling m groups of n draws gives the standard errors of m·n draws.
        let total = |n: usize| (n * sets.len()) as f64;
        for (k, st) in stats[..k_count].iter().enumerate() {
            let sign = if k % 2 == 0 { -1.0 } else { 1.0 };
            for (mean, var, want_mean, count) in [
                (st[0], st[1], 4.0 * sign, n[0]),
                (st[2], st[3], -4.0 * sign, n[1]),
            ] {
                let m = total(count);
                assert!(
                    (mean - want_mean).abs() < Z * (2.0 / m).sqrt(),
                    "k={k} mean {mean}"
                );
                assert!(
                    (var - 2.0).abs() < Z * 2.0 * (2.0 / m).sqrt(),
                    "k={k} var {var}"
                );
            }
        }
        let m = total(1400) * 28.0;
        assert!(
            stats[k_count][0].abs() < Z * (64.0 / m).sqrt(),
            "noise mean {}",
            stats[k_count][0]
        );
        assert!(
            (stats[k_count][1] - 64.0).abs() < Z * 64.0 * (2.0 / m).sqrt(),
            "noise var {}",
            stats[k_count][1]
        );
    }

    #[test]
    fn mialm_ii_relevant_columns_are_uniform() {
        // Each of D = 10 columns is relevant with probability d/D = 0.3; over 400 seeds
        // the frequency's standard error is √(0.3·0.7/400).
        let mut hits = [0usize; 10];
        for seed in 0..400 {
            for c in mialm_ii(10, 3, seed).unwrap().relevant {
                hits[c] += 1;
            }
        }
        let tol = Z * (0.3f64 * 0.7 / 400.0).sqrt();
        for h in hits {
            assert!((h as f64 / 400.0 - 0.3).abs() < tol, "{hits:?}");
        }
    }

    #[test]
    fn mialm_ii_rejects_bad_sizes() {
        for (dims, relevant) in [(0, 1), (10, 0), (10, 11), (MIALM_MAX_DIMS + 1, 1)] {
            assert!(matches!(
                mialm_ii(dims, relevant, 1),
                Err(Error::Parameter { .. })
            ));
        }
        assert!(mialm_ii(1, 1, 1).is_ok());
    }

    #[test]
    fn golden_values_pin_the_random_stream() {
        // Any change in how randomness is drawn changes every generated file; make that a
        // visible decision (values as `mil synth` wrote them when this test was added).
        let s = mida_one(7);
        assert_eq!(
            &s.data.instance(0)[..3],
            &[1.578650955573671, -2.995914131723463, -0.9013320764724828]
        );
        let relevant = mialm_ii(100, 20, 1).unwrap().relevant;
        let one_based: Vec<usize> = relevant.iter().map(|c| c + 1).collect();
        assert_eq!(
            one_based,
            [5, 10, 12, 17, 19, 22, 29, 42, 48, 56, 57, 62, 63, 72, 75, 76, 82, 93, 97, 99]
        );
    }

    #[test]
    fn seeds_reproduce_and_differ() {
        assert_eq!(mida_one(7).data, mida_one(7).data);
        assert_ne!(mida_one(7).data, mida_one(8).data);
        assert_eq!(mida_two(7).positive, mida_two(7).positive);
        assert_eq!(
            mialm_ii(50, 5, 7).unwrap().data,
            mialm_ii(50, 5, 7).unwrap().data
        );
    }
}
