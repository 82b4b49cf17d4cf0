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

/// One job's share of a stage: at most `budget` steps of `outer`'s current stage, taken
/// from the steps the job itself reports (its own stages' starts and ends are not passed
/// on). [`Budget::close`] advances `outer` by what is left, so a job that stops early
/// (an early-stopped network) still counts `budget` steps in all.
#[derive(Debug)]
pub struct Budget<'a, P: ?Sized> {
    outer: &'a P,
    budget: u64,
    used: std::sync::atomic::AtomicU64,
}

impl<'a, P: Progress + ?Sized> Budget<'a, P> {
    /// A share of `budget` steps of `outer`'s current stage.
    pub fn new(outer: &'a P, budget: u64) -> Self {
        Budget {
            outer,
            budget,
            used: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Advances `outer` by the steps of the budget not yet reported.
    pub fn close(self) {
        let used = self.used.into_inner().min(self.budget);
        self.outer.advance(self.budget - used);
    }
}

impl<P: Progress + ?Sized> Progress for Budget<'_, P> {
    fn advance(&self, steps: u64) {
        use std::sync::atomic::Ordering;
        let before = self.used.fetch_add(steps, Ordering::Relaxed);
        let granted = steps.min(self.budget.saturating_sub(before));
        if granted > 0 {
            self.outer.advance(granted);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[derive(Default)]
    struct Count(AtomicU64);

    impl Progress for Count {
        fn advance(&self, steps: u64) {
            self.0.fetch_add(steps, Ordering::Relaxed);
        }
    }

    #[test]
    fn a_budget_counts_exactly_its_steps_however_many_are_reported() {
        for reported in [0, 3, 10, 25] {
            let count = Count::default();
            let share = Budget::new(&count, 10);
            share.start("epochs", 100);
            (0..reported).for_each(|_| share.advance(1));
            assert_eq!(count.0.load(Ordering::Relaxed), reported.min(10));
            share.close();
            assert_eq!(count.0.load(Ordering::Relaxed), 10, "{reported} reported");
        }
    }
}
