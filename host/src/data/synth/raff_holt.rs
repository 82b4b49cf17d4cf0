//! Raff & Holt's algorithmic unit tests (NeurIPS 2023, "Reproducibility in Multiple
//! Instance Learning: A Case For Algorithmic Unit Tests", Algorithms 1–3), with the
//! distributions of torchmil's `SCStandardMILDataset`, `MCStandardMILDataset` and
//! `FalseFrequencyMILDataset`.
//!
//! Each test is a training set with a shortcut that breaks the MIL assumption and a test
//! set where the shortcut points the wrong way. A model that obeys the assumption cannot
//! use the shortcut, so its test AUROC stays high; a model that learns it ranks the test
//! bags backwards.
//!
//! - [`rh_single`] (standard MIL, one concept): a *poison* instance, N(−10·1, 0.1²I),
//!   sits in every negative training bag and every positive test bag. Under the
//!   standard assumption no instance can make a bag negative, so the poison carries no
//!   usable evidence; a model that learns "poison ⇒ negative" fails.
//! - [`rh_multi`] (threshold MIL, two concepts): a bag is positive when it holds an
//!   instance of both concepts; negative bags hold one concept instance. The same poison.
//! - [`rh_false_frequency`] (threshold MIL, no poison): a positive bag holds one instance
//!   of each concept; a negative training bag one instance of one concept, a negative
//!   test bag 35 to 44 instances of one concept. A model that counts concept instances
//!   instead of asking for both concepts fails.
//!
//! Concept means are the same value on every feature (a concept instance of
//! N(2·1, 0.1²I) lies at distance 2√D from the negatives' mean 0), so every feature is
//! relevant. Positive bags come first (`pos-1…`, label 1), then negative bags (`neg-1…`,
//! label 0): ⌊bags/2⌋ positive, the rest negative. Inside a bag the instance order is a
//! uniform random permutation. The truth flag of an instance is "drawn from a concept";
//! the poison and the N(0, I) background instances are not.
//!
//! Where these depart from torchmil: `rh_single` puts 10 background instances in every
//! bag (torchmil's `B` has no default); a negative bag of `rh_false_frequency` holds
//! either concept with equal odds (torchmil's `randint(0, 1)` always picks the first,
//! and then the second concept alone would mark a positive bag, so the test would no
//! longer need both); the instances of a bag are shuffled (torchmil lists the poison
//! first).
//!
//! Both splits of one seed are independent: the training set draws from the seed's
//! `Xoshiro256PlusPlus` stream, the test set from the same stream after one `jump`
//! (2¹²⁸ draws ahead).

use rand::RngExt;
use rand_distr::{Distribution, Normal};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::{Builder, Synthetic};
use crate::error::{Error, Result};

/// Which half of an algorithmic unit test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Split {
    /// The training set, with the shortcut.
    Train,
    /// The test set, where the shortcut points the wrong way.
    Test,
}

mil_core::keywords!(Split {
    Split::Train => "train": "the training set (poison in negative bags; one concept instance per negative bag)",
    Split::Test => "test": "the test set (poison in positive bags; many instances of one concept per negative bag)",
});

/// Largest D the three generators accept.
pub const RH_MAX_DIMS: usize = 10_000;
/// Largest number of bags the three generators accept.
pub const RH_MAX_BAGS: usize = 100_000;
/// D unless given.
pub const RH_DEFAULT_DIMS: usize = 8;
/// Bags unless given (half positive).
pub const RH_DEFAULT_BAGS: usize = 100;
/// [`rh_single`]: background instances in every bag (torchmil's `B`, which has no
/// default there).
pub const RH_SINGLE_BACKGROUND: usize = 10;
/// Most instances a bag of any of the three tests holds: the false-frequency test's
/// negative test bags, 44 concept instances and 9 background ones.
pub const RH_MAX_BAG: usize = 53;

/// What an instance is drawn from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// N(0, I): the background of every bag.
    Background,
    /// The poison, N(−10·1, 0.1²I).
    Poison,
    /// Concept `c` of the test's two.
    Concept(usize),
}

/// The three tests' distributions over `dims` features.
struct Draw {
    background: Normal<f64>,
    poison: Normal<f64>,
    concepts: [Normal<f64>; 2],
}

impl Draw {
    /// `concepts` as (mean, standard deviation) on every feature.
    fn new(concepts: [(f64, f64); 2]) -> Self {
        let normal = |(mean, sd): (f64, f64)| {
            Normal::new(mean, sd).unwrap_or_else(|_| unreachable!("finite positive sd"))
        };
        Draw {
            background: normal((0.0, 1.0)),
            poison: normal((-10.0, 0.1)),
            concepts: concepts.map(normal),
        }
    }

    fn fill(&self, rng: &mut Xoshiro256PlusPlus, kind: Kind, row: &mut [f64]) {
        let d = match kind {
            Kind::Background => &self.background,
            Kind::Poison => &self.poison,
            Kind::Concept(c) => &self.concepts[c],
        };
        for x in row {
            *x = d.sample(rng);
        }
    }
}

fn check(dims: usize, bags: usize) -> Result<()> {
    if dims == 0 || dims > RH_MAX_DIMS {
        return Err(Error::parameter(
            "dims",
            dims,
            format!("must be between 1 and {RH_MAX_DIMS}"),
        ));
    }
    if !(2..=RH_MAX_BAGS).contains(&bags) {
        return Err(Error::parameter(
            "bags",
            bags,
            format!("must be between 2 and {RH_MAX_BAGS} (half of them positive)"),
        ));
    }
    Ok(())
}

/// Generates `bags` bags: `kinds(rng, positive)` lists the kinds of one positive or
/// negative bag's instances (in any order: the builder shuffles them).
fn generate(
    name: &str,
    dims: usize,
    bags: usize,
    split: Split,
    seed: u64,
    draw: &Draw,
    kinds: impl Fn(&mut Xoshiro256PlusPlus, bool) -> Vec<Kind>,
) -> Result<Synthetic> {
    check(dims, bags)?;
    let mut b = Builder::new(seed, dims);
    if split == Split::Test {
        b.rng.jump();
    }
    let fill =
        |rng: &mut Xoshiro256PlusPlus, kind: &Kind, row: &mut [f64]| draw.fill(rng, *kind, row);
    let is_concept = |kind: &Kind| matches!(kind, Kind::Concept(_));
    let n_pos = bags / 2;
    for i in 1..=bags {
        let positive = i <= n_pos;
        let bag_kinds = kinds(&mut b.rng, positive);
        let (id, label) = if positive {
            (format!("pos-{i}"), 1)
        } else {
            (format!("neg-{}", i - n_pos), 0)
        };
        b.bag_of(id, label, bag_kinds, fill, is_concept);
    }
    let name = match split {
        Split::Train => name.to_string(),
        Split::Test => format!("{name}-test"),
    };
    b.finish(&name, 2, (0..dims).collect())
}

/// The poison of a bag: in negative training bags, in positive test bags.
fn poison(split: Split, positive: bool) -> Vec<Kind> {
    if positive == (split == Split::Test) {
        vec![Kind::Poison]
    } else {
        Vec::new()
    }
}

/// `n` background instances followed by `kinds`.
fn with_background(n: usize, mut kinds: Vec<Kind>) -> Vec<Kind> {
    kinds.resize(kinds.len() + n, Kind::Background);
    kinds
}

/// Single-concept standard MIL (Raff & Holt Algorithm 1). A positive bag holds k ~ U{1,
/// 2, 3} concept instances, each from N(0, 3²I) or N(1, I) with equal odds, and 10
/// background instances N(0, I); a negative bag the 10 background instances. The poison
/// joins every negative bag of the training split and every positive bag of the test
/// split.
pub fn rh_single(dims: usize, bags: usize, split: Split, seed: u64) -> Result<Synthetic> {
    let draw = Draw::new([(0.0, 3.0), (1.0, 1.0)]);
    generate(
        "rh-single",
        dims,
        bags,
        split,
        seed,
        &draw,
        |rng, positive| {
            let mut kinds = poison(split, positive);
            if positive {
                for _ in 0..rng.random_range(1..=3) {
                    kinds.push(Kind::Concept(rng.random_range(0..2)));
                }
            }
            with_background(RH_SINGLE_BACKGROUND, kinds)
        },
    )
}

/// Two-concept threshold MIL (Raff & Holt Algorithm 2): concepts N(2·1, 0.1²I) and
/// N(3·1, 0.1²I). A positive bag holds k ~ U{1, 2, 3} instances of each concept and
/// U{1, …, 9} background instances; a negative bag one instance of a concept chosen with
/// equal odds and U{1, …, 9} background instances. The poison as in [`rh_single`].
pub fn rh_multi(dims: usize, bags: usize, split: Split, seed: u64) -> Result<Synthetic> {
    let draw = Draw::new([(2.0, 0.1), (3.0, 0.1)]);
    generate(
        "rh-multi",
        dims,
        bags,
        split,
        seed,
        &draw,
        |rng, positive| {
            let mut kinds = poison(split, positive);
            if positive {
                let k = rng.random_range(1..=3);
                kinds.extend((0..2 * k).map(|i| Kind::Concept(i % 2)));
            } else {
                kinds.push(Kind::Concept(rng.random_range(0..2)));
            }
            with_background(rng.random_range(1..=9), kinds)
        },
    )
}

/// False frequency (Raff & Holt Algorithm 3): the concepts of [`rh_multi`], no poison. A
/// positive bag holds one instance of each concept and U{1, …, 9} background instances;
/// a negative bag t instances of one concept chosen with equal odds — t = 1 in the
/// training split, t ~ U{35, …, 44} in the test split — and U{1, …, 9} background
/// instances.
pub fn rh_false_frequency(dims: usize, bags: usize, split: Split, seed: u64) -> Result<Synthetic> {
    let draw = Draw::new([(2.0, 0.1), (3.0, 0.1)]);
    generate(
        "rh-false-frequency",
        dims,
        bags,
        split,
        seed,
        &draw,
        |rng, positive| {
            let kinds = if positive {
                vec![Kind::Concept(0), Kind::Concept(1)]
            } else {
                let t = match split {
                    Split::Train => 1,
                    Split::Test => rng.random_range(35..=44),
                };
                vec![Kind::Concept(rng.random_range(0..2)); t]
            };
            with_background(rng.random_range(1..=9), kinds)
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    // Each statistic is allowed 5 standard errors: a correct generator fails one check
    // with probability 5.7e-7; a wrong mean, variance or frequency moves it by far more.
    const Z: f64 = 5.0;

    type Generator = fn(usize, usize, Split, u64) -> Result<Synthetic>;
    const ALL: [Generator; 3] = [rh_single, rh_multi, rh_false_frequency];

    /// What each instance of bag `b` is, read back from its values and truth flag:
    /// (poison, concept 0, concept 1, concept of either kind, background) counts. The
    /// poison lies 10 from the background's mean on every feature and the two concepts
    /// of `rh_multi`/`rh_false_frequency` (means 2 and 3, sd 0.1) at 5 sd from their
    /// midpoint, so with D ≥ 3 a misread has probability below 1e-15.
    fn composition(s: &Synthetic, b: usize) -> [usize; 5] {
        let d = &s.data;
        let mut c = [0; 5];
        for i in d.bag_range(b) {
            let x = d.instance(i);
            let mean = x.iter().sum::<f64>() / x.len() as f64;
            if s.positive[i] {
                c[3] += 1;
                c[if mean < 2.5 { 1 } else { 2 }] += 1;
            } else if x.iter().all(|&v| v < -5.0) {
                c[0] += 1;
            } else {
                c[4] += 1;
            }
        }
        c
    }

    #[test]
    fn bags_follow_the_definitions() {
        for seed in 0..20 {
            for split in [Split::Train, Split::Test] {
                let test = split == Split::Test;
                let s = rh_single(3, 41, split, seed).unwrap();
                assert_eq!(s.data.bags_per_class(), vec![21, 20]);
                assert_eq!(s.relevant, vec![0, 1, 2]);
                for b in 0..41 {
                    let [poison, _, _, concept, background] = composition(&s, b);
                    assert_eq!(background, RH_SINGLE_BACKGROUND);
                    if s.data.label(b) == Some(1) {
                        assert_eq!(poison, usize::from(test));
                        assert!((1..=3).contains(&concept));
                    } else {
                        assert_eq!((poison, concept), (usize::from(!test), 0));
                    }
                }
                let s = rh_multi(3, 40, split, seed).unwrap();
                for b in 0..40 {
                    let [poison, c0, c1, _, background] = composition(&s, b);
                    assert!((1..=9).contains(&background));
                    if s.data.label(b) == Some(1) {
                        assert_eq!(poison, usize::from(test));
                        assert!(c0 == c1 && (1..=3).contains(&c0), "{c0} {c1}");
                    } else {
                        assert_eq!(poison, usize::from(!test));
                        assert_eq!(c0 + c1, 1);
                    }
                }
                let s = rh_false_frequency(3, 40, split, seed).unwrap();
                for b in 0..40 {
                    let [poison, c0, c1, _, background] = composition(&s, b);
                    assert!((1..=9).contains(&background));
                    assert_eq!(poison, 0);
                    if s.data.label(b) == Some(1) {
                        assert_eq!((c0, c1), (1, 1));
                    } else {
                        assert_eq!(c0.min(c1), 0);
                        let t = c0 + c1;
                        assert!(if test { (35..=44).contains(&t) } else { t == 1 }, "{t}");
                    }
                }
            }
        }
    }

    /// Mean and unbiased variance of all features of the chosen instances.
    fn moments(sets: &[Synthetic], pick: impl Fn(&Synthetic, usize) -> bool) -> (f64, f64, f64) {
        let values: Vec<f64> = sets
            .iter()
            .flat_map(|s| {
                (0..s.data.n_instances())
                    .filter(|&i| pick(s, i))
                    .flat_map(|i| s.data.instance(i).to_vec())
                    .collect::<Vec<_>>()
            })
            .collect();
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
        (mean, var, n)
    }

    fn check_moments(what: &str, (mean, var, n): (f64, f64, f64), want: (f64, f64), kurtosis: f64) {
        // The sample variance's standard error is σ²·√((κ − 1)/n) for kurtosis κ (3 for
        // a Gaussian).
        let mean_tol = Z * (want.1 / n).sqrt();
        let var_tol = Z * want.1 * ((kurtosis - 1.0) / n).sqrt();
        assert!(
            (mean - want.0).abs() < mean_tol,
            "{what}: mean {mean}, want {}",
            want.0
        );
        assert!(
            (var - want.1).abs() < var_tol,
            "{what}: variance {var}, want {}",
            want.1
        );
    }

    #[test]
    fn distributions_match_the_definitions() {
        let single: Vec<Synthetic> = (0..40)
            .map(|s| rh_single(4, 100, Split::Test, s).unwrap())
            .collect();
        let multi: Vec<Synthetic> = (0..40)
            .map(|s| rh_multi(4, 100, Split::Train, s).unwrap())
            .collect();
        let poison = |s: &Synthetic, i: usize| s.data.instance(i).iter().all(|&v| v < -5.0);
        let background = |s: &Synthetic, i: usize| !s.positive[i] && !poison(s, i);
        check_moments("poison", moments(&single, poison), (-10.0, 0.01), 3.0);
        check_moments("background", moments(&single, background), (0.0, 1.0), 3.0);
        // Features are independent given the concept but share it within an instance, so
        // an instance's features are not independent draws: take the first feature only.
        let first = |sets: &[Synthetic], pick: &dyn Fn(&Synthetic, usize) -> bool| {
            let values: Vec<f64> = sets
                .iter()
                .flat_map(|s| {
                    (0..s.data.n_instances())
                        .filter(|&i| pick(s, i))
                        .map(|i| s.data.instance(i)[0])
                        .collect::<Vec<_>>()
                })
                .collect();
            let n = values.len() as f64;
            let mean = values.iter().sum::<f64>() / n;
            let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
            (mean, var, n)
        };
        // Single concept: an equal mixture of N(0, 9) and N(1, 1), mean 0.5, variance
        // (9 + 1)/2 + 0.5² = 5.25. Its fourth central moment is the mixture of
        // d⁴ + 6d²s² + 3s⁴ with d = ∓0.5 the component's offset from 0.5: 130.5625.
        let kurtosis = 130.5625 / (5.25 * 5.25);
        check_moments(
            "single concept",
            first(&single, &|s, i| s.positive[i]),
            (0.5, 5.25),
            kurtosis,
        );
        let mean_of = |s: &Synthetic, i: usize| s.data.instance(i).iter().sum::<f64>() / 4.0;
        check_moments(
            "concept 0",
            moments(&multi, |s, i| s.positive[i] && mean_of(s, i) < 2.5),
            (2.0, 0.01),
            3.0,
        );
        check_moments(
            "concept 1",
            moments(&multi, |s, i| s.positive[i] && mean_of(s, i) >= 2.5),
            (3.0, 0.01),
            3.0,
        );
    }

    /// Every value of `values` is in `lo..=hi`, each with frequency 1/(hi − lo + 1)
    /// within 5 standard errors.
    fn uniform_counts(values: &[usize], lo: usize, hi: usize, what: &str) {
        let k = (hi - lo + 1) as f64;
        let n = values.len() as f64;
        for v in lo..=hi {
            let f = values.iter().filter(|&&x| x == v).count() as f64 / n;
            let tol = Z * ((1.0 / k) * (1.0 - 1.0 / k) / n).sqrt();
            assert!((f - 1.0 / k).abs() < tol, "{what}: {v} has frequency {f}");
        }
        assert!(values.iter().all(|&x| (lo..=hi).contains(&x)), "{what}");
    }

    #[test]
    fn counts_are_uniform() {
        let (mut k, mut bg, mut t, mut which) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for seed in 0..40 {
            let s = rh_single(3, 200, Split::Train, seed).unwrap();
            k.extend((0..100).map(|b| composition(&s, b)[3]));
            let s = rh_multi(3, 200, Split::Test, seed).unwrap();
            bg.extend((0..200).map(|b| composition(&s, b)[4]));
            which.extend((100..200).map(|b| composition(&s, b)[1]));
            let s = rh_false_frequency(3, 200, Split::Test, seed).unwrap();
            t.extend((100..200).map(|b| composition(&s, b)[3]));
            which.extend((100..200).map(|b| usize::from(composition(&s, b)[1] > 0)));
        }
        uniform_counts(&k, 1, 3, "single: concept instances per positive bag");
        uniform_counts(&bg, 1, 9, "multi: background instances");
        uniform_counts(
            &t,
            35,
            44,
            "false frequency: concept instances per negative test bag",
        );
        uniform_counts(&which, 0, 1, "the concept of a negative bag");
    }

    #[test]
    fn splits_are_reproducible_and_independent() {
        for generate in ALL {
            let train = generate(5, 30, Split::Train, 7).unwrap();
            assert_eq!(train.data, generate(5, 30, Split::Train, 7).unwrap().data);
            assert_ne!(train.data, generate(5, 30, Split::Train, 8).unwrap().data);
            let test = generate(5, 30, Split::Test, 7).unwrap();
            assert_eq!(test.data, generate(5, 30, Split::Test, 7).unwrap().data);
            // The test split is not the training split with the poison moved: no
            // instance value is shared.
            let a: std::collections::HashSet<u64> =
                train.data.features().iter().map(|v| v.to_bits()).collect();
            assert!(test
                .data
                .features()
                .iter()
                .all(|v| !a.contains(&v.to_bits())));
        }
    }

    #[test]
    fn rejects_bad_sizes() {
        for generate in ALL {
            for (dims, bags) in [(0, 10), (RH_MAX_DIMS + 1, 10), (3, 1), (3, RH_MAX_BAGS + 1)] {
                assert!(matches!(
                    generate(dims, bags, Split::Train, 1),
                    Err(Error::Parameter { .. })
                ));
            }
            assert!(generate(1, 2, Split::Test, 1).is_ok());
        }
    }
}
