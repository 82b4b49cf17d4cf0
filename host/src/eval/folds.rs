//! Bag-level stratified k-fold assignment. Folds partition *bags*, never instances, so no
//! bag is split between training and test.

use rand::seq::SliceRandom;
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::error::{Error, Result};

/// Splits the bags with the given class labels into `k` stratified folds and returns the
/// test bags of each fold (each bag in exactly one fold, sorted ascending).
///
/// Each class's bags are shuffled with `seed`, the classes are concatenated, and bags are
/// dealt to folds round-robin, so every fold's class proportions differ from the whole
/// set's by less than one bag per class. `k` equal to the number of bags is leave-one-out.
pub fn stratified_folds(labels: &[usize], k: usize, seed: u64) -> Result<Vec<Vec<usize>>> {
    let all: Vec<usize> = (0..labels.len()).collect();
    stratified_subset_folds(labels, &all, k, seed)
}

/// Stratified folds of a subset of bags (e.g. the training bags of an outer fold, for
/// nested cross-validation); returns bag indices of the original data set.
pub fn inner_folds(
    labels: &[usize],
    bags: &[usize],
    k: usize,
    seed: u64,
) -> Result<Vec<Vec<usize>>> {
    stratified_subset_folds(labels, bags, k, seed)
}

fn stratified_subset_folds(
    labels: &[usize],
    bags: &[usize],
    k: usize,
    seed: u64,
) -> Result<Vec<Vec<usize>>> {
    if k < 2 || k > bags.len() {
        return Err(Error::parameter(
            "folds",
            k,
            format!("must be between 2 and the number of bags ({})", bags.len()),
        ));
    }
    let n_classes = bags.iter().map(|&b| labels[b] + 1).max().unwrap_or(0);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut order = Vec::with_capacity(bags.len());
    for class in 0..n_classes {
        let mut members: Vec<usize> = bags
            .iter()
            .copied()
            .filter(|&b| labels[b] == class)
            .collect();
        members.shuffle(&mut rng);
        order.extend(members);
    }
    let mut folds = vec![Vec::new(); k];
    for (position, bag) in order.into_iter().enumerate() {
        folds[position % k].push(bag);
    }
    folds.iter_mut().for_each(|f| f.sort_unstable());
    Ok(folds)
}

/// The training bags of a fold: all of `bags` not in `test`.
pub fn complement(bags: &[usize], test: &[usize]) -> Vec<usize> {
    bags.iter()
        .copied()
        .filter(|b| test.binary_search(b).is_err())
        .collect()
}

/// A seed for repetition `repeat` derived from the user's seed (SplitMix64 finaliser), so
/// repetitions differ but the whole run is reproducible.
pub fn derive_seed(seed: u64, repeat: u64) -> u64 {
    let mut z = seed ^ repeat.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_and_stratifies() {
        let labels: Vec<usize> = (0..92).map(|i| usize::from(i < 47)).collect();
        for seed in 0..20 {
            let folds = stratified_folds(&labels, 10, seed).unwrap();
            let mut all: Vec<usize> = folds.concat();
            all.sort_unstable();
            assert_eq!(all, (0..92).collect::<Vec<_>>());
            for f in &folds {
                let pos = f.iter().filter(|&&b| labels[b] == 1).count();
                // 47 positives over 10 folds: 4 or 5 each; 45 negatives: 4 or 5 each.
                assert!((4..=5).contains(&pos), "{pos}");
                assert!((4..=5).contains(&(f.len() - pos)));
            }
        }
    }

    #[test]
    fn seeded_and_leave_one_out() {
        let labels = vec![0, 1, 0, 1, 1, 0];
        assert_eq!(
            stratified_folds(&labels, 3, 5).unwrap(),
            stratified_folds(&labels, 3, 5).unwrap()
        );
        let loo = stratified_folds(&labels, 6, 1).unwrap();
        assert!(loo.iter().all(|f| f.len() == 1));
        assert!(stratified_folds(&labels, 7, 1).is_err());
        assert!(stratified_folds(&labels, 1, 1).is_err());
    }

    #[test]
    fn inner_folds_stay_inside_the_training_bags() {
        let labels: Vec<usize> = (0..40).map(|i| i % 2).collect();
        let outer = stratified_folds(&labels, 5, 3).unwrap();
        let train = complement(&(0..40).collect::<Vec<_>>(), &outer[0]);
        let inner = inner_folds(&labels, &train, 4, 9).unwrap();
        let mut seen: Vec<usize> = inner.concat();
        seen.sort_unstable();
        assert_eq!(seen, train);
    }

    #[test]
    fn derived_seeds_differ() {
        assert_ne!(derive_seed(1, 0), derive_seed(1, 1));
        assert_ne!(derive_seed(1, 0), derive_seed(2, 0));
        assert_eq!(derive_seed(7, 3), derive_seed(7, 3));
    }
}
