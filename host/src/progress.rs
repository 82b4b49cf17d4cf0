//! Progress of long work, reported to whoever asked for it: the `mil` program draws
//! bars, the Python package may call back, a library user passes [`Silent`].
//!
//! Work runs on rayon's threads, so a reporter is `Sync` and [`Progress::advance`] may be
//! called from several threads at once.
//!
//! ```
//! use std::sync::atomic::{AtomicU64, Ordering};
//! use mil_toolkit::progress::Progress;
//!
//! /// Counts the steps done.
//! #[derive(Default)]
//! struct Count(AtomicU64);
//!
//! impl Progress for Count {
//!     fn advance(&self, steps: u64) {
//!         self.0.fetch_add(steps, Ordering::Relaxed);
//!     }
//! }
//!
//! let count = Count::default();
//! count.start("folds", 3);
//! (0..3).for_each(|_| count.advance(1));
//! count.finish();
//! assert_eq!(count.0.load(Ordering::Relaxed), 3);
//! ```

/// Receives the progress of long work: stages, each of a known number of steps.
pub trait Progress: Sync {
    /// A stage named `stage` of `total` steps begins (`total` is 0 when not yet known).
    fn start(&self, stage: &str, total: u64) {
        let _ = (stage, total);
    }
    /// The current stage's total became known or changed.
    fn set_total(&self, total: u64) {
        let _ = total;
    }
    /// `steps` more steps of the current stage are done.
    fn advance(&self, steps: u64) {
        let _ = steps;
    }
    /// The current stage is over.
    fn finish(&self) {}
    /// A line worth reading before long work starts, such as its estimated CPU time.
    fn note(&self, text: &str) {
        let _ = text;
    }
}

/// Reports nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct Silent;

impl Progress for Silent {}
