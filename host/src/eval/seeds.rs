//! Named seed streams: every randomised step of a run draws its generator's seed from
//! (the run's seed, a [`Stream`], an index such as the fold), so two purposes never share
//! a seed whatever the number of folds or repetitions.
//!
//! A seed is [`derive_seed`]`(base, key)`, and for a fixed base distinct keys give distinct
//! seeds (the key enters through an odd multiplication and the SplitMix64 finaliser, both
//! bijections of `u64`). Each stream owns a range of keys that no other stream's can
//! reach: repetition r uses key r, the inner CV of fold f key 1000 + f and the
//! threshold's inner CV key 2000 + f for the first thousand of each (the keys every
//! earlier version used, so results reproduce), and keys tagged with the stream in their
//! top 16 bits beyond; a repeated inner CV's further fold assignments always use tagged
//! keys.

use super::folds::derive_seed;

/// What a seed is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stream {
    /// The fold assignment of repetition `index`, from the user's seed.
    Repetition,
    /// The inner CV that chooses among a grid's candidates in outer fold `index`.
    InnerCv,
    /// The inner CV that chooses a binary decision threshold in outer fold `index`.
    Threshold,
    /// The `index`-th further fold assignment (from 1) of an inner CV repeated on other
    /// folds ([`crate::pipeline::Pipeline::inner_repeats`]), under that inner CV's seed.
    InnerRepeat,
}

/// Folds per stream that keep the historical keys.
const LEGACY_FOLDS: u64 = 1000;

impl Stream {
    /// The key of this stream's `index`-th draw: unique to (stream, index).
    fn key(self, index: u64) -> u64 {
        assert!(index < 1 << 48, "seed stream index {index} out of range");
        let (legacy_offset, tag) = match self {
            Stream::Repetition => (0, 3u64),
            Stream::InnerCv => (1000, 1),
            Stream::Threshold => (2000, 2),
            Stream::InnerRepeat => return (4 << 48) | index,
        };
        if index < LEGACY_FOLDS {
            legacy_offset + index
        } else {
            (tag << 48) | index
        }
    }

    /// The seed of this stream's `index`-th draw under `base` (the run's seed, or a
    /// repetition's seed for the per-fold streams).
    pub fn seed(self, base: u64, index: u64) -> u64 {
        derive_seed(base, self.key(index))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn the_first_thousand_folds_keep_their_historical_seeds() {
        for f in [0u64, 1, 9, 999] {
            assert_eq!(Stream::InnerCv.seed(7, f), derive_seed(7, 1000 + f));
            assert_eq!(Stream::Threshold.seed(7, f), derive_seed(7, 2000 + f));
        }
        assert_eq!(Stream::Repetition.seed(7, 3), derive_seed(7, 3));
    }

    #[test]
    fn streams_stay_apart_at_any_fold_count() {
        // 5,000 folds: the old keys 1000 + f and 2000 + f met from fold 1,000 on.
        let base = 12345;
        let mut seen = HashSet::new();
        for f in 0..5000 {
            assert!(seen.insert(Stream::InnerCv.seed(base, f)), "inner fold {f}");
            assert!(
                seen.insert(Stream::Threshold.seed(base, f)),
                "threshold fold {f}"
            );
        }
        for r in 0..5000 {
            assert!(
                seen.insert(Stream::Repetition.seed(base, r)),
                "repetition {r}"
            );
            assert!(
                seen.insert(Stream::InnerRepeat.seed(base, r)),
                "inner repetition {r}"
            );
        }
        assert_eq!(seen.len(), 20_000);
    }
}
