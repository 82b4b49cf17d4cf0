//! Cooperative cancellation of long work.
//!
//! A caller that can be interrupted while the library computes (Python's Ctrl-C, a GUI's
//! stop button) runs the work under a [`CancelFlag`] and raises the flag from another
//! thread. The library's long loops — Gram matrix rows, bag distances, cross-validation
//! folds, every optimiser's iterations, clustering rounds — call [`checkpoint`], which
//! unwinds the work at once when the flag of its thread is raised; [`CancelFlag::run`]
//! catches that unwinding and returns `None`. Threads without a flag (the `mil` program,
//! where Ctrl-C ends the process) never stop at a checkpoint, so results are unchanged.
//!
//! The flag is per thread: a rayon pool built for the work gives it to each of its
//! threads with [`CancelFlag::enter`] in its start handler.
//!
//! ```
//! use mil_toolkit::cancel::{checkpoint, CancelFlag};
//!
//! let flag = CancelFlag::new();
//! let stopper = flag.clone();
//! let mut rounds = 0;
//! let outcome = flag.run(|| loop {
//!     checkpoint();
//!     rounds += 1;
//!     if rounds == 3 {
//!         stopper.cancel(); // another thread would do this
//!     }
//! });
//! assert_eq!(outcome, None::<()>);
//! assert_eq!(rounds, 3);
//! ```

use std::cell::RefCell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

thread_local! {
    /// The flag of the work this thread runs, if it runs cancellable work.
    static CURRENT: RefCell<Option<Arc<AtomicBool>>> = const { RefCell::new(None) };
}

/// The unwinding payload of a cancelled checkpoint.
struct Cancelled;

/// A flag that stops the work run under it at its next [`checkpoint`]. Clones share the
/// flag.
#[derive(Debug, Clone, Default)]
pub struct CancelFlag(Arc<AtomicBool>);

impl CancelFlag {
    /// A flag not yet raised.
    pub fn new() -> Self {
        Self::default()
    }

    /// Raises the flag: the work stops at its next checkpoint, on every thread.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether the flag is raised.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// Gives this flag to the current thread for good: a thread of a pool built for
    /// cancellable work calls it when it starts
    /// (`rayon::ThreadPoolBuilder::start_handler`).
    pub fn enter(&self) {
        CURRENT.with(|current| *current.borrow_mut() = Some(Arc::clone(&self.0)));
    }

    /// Runs `work` on the current thread under this flag: `None` if a checkpoint
    /// stopped it (here or on a rayon thread that carried the stop back), its value
    /// otherwise. Any other panic goes on unwinding. The thread's earlier flag is
    /// restored afterwards.
    pub fn run<T>(&self, work: impl FnOnce() -> T) -> Option<T> {
        let earlier = CURRENT.with(|current| current.replace(Some(Arc::clone(&self.0))));
        let outcome = panic::catch_unwind(AssertUnwindSafe(work));
        CURRENT.with(|current| *current.borrow_mut() = earlier);
        match outcome {
            Ok(value) => Some(value),
            Err(payload) if payload.is::<Cancelled>() => None,
            Err(payload) => panic::resume_unwind(payload),
        }
    }
}

/// Stops the current work if its flag is raised, by unwinding to [`CancelFlag::run`]
/// (without the panic hook: nothing is printed). Cheap enough for every iteration of a
/// loop whose body takes a microsecond or more; does nothing on a thread without a flag.
pub fn checkpoint() {
    let raised = CURRENT.with(|current| {
        current
            .borrow()
            .as_ref()
            .is_some_and(|flag| flag.load(Ordering::Relaxed))
    });
    if raised {
        panic::resume_unwind(Box::new(Cancelled));
    }
}

/// A random generator that calls [`checkpoint`] every [`CheckpointRng::EVERY`] (1,024)
/// draws, for work that draws its samples in code without checkpoints of its own: a
/// box-kernel entry, which `mil_core::box_kernel::estimate` computes, can take seconds.
/// It gives exactly the inner generator's numbers.
///
/// ```
/// use mil_toolkit::cancel::CheckpointRng;
/// use rand_core::{Rng, SeedableRng};
/// use rand_xoshiro::Xoshiro256PlusPlus;
///
/// let mut plain = Xoshiro256PlusPlus::seed_from_u64(3);
/// let mut checked = CheckpointRng::new(Xoshiro256PlusPlus::seed_from_u64(3));
/// assert_eq!(plain.next_u64(), checked.next_u64());
/// ```
#[derive(Debug, Clone)]
pub struct CheckpointRng<R> {
    inner: R,
    draws: u32,
}

impl<R> CheckpointRng<R> {
    /// Draws between checkpoints. A draw of a box-kernel estimator can test the point
    /// against every box of a pair of large bags, so this is small.
    pub const EVERY: u32 = 1 << 10;

    /// Wraps `inner`.
    pub fn new(inner: R) -> Self {
        CheckpointRng { inner, draws: 0 }
    }

    fn count(&mut self) {
        self.draws += 1;
        if self.draws == Self::EVERY {
            self.draws = 0;
            checkpoint();
        }
    }
}

impl<R: rand_core::Rng> rand_core::TryRng for CheckpointRng<R> {
    type Error = std::convert::Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
        self.count();
        Ok(self.inner.next_u32())
    }

    fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
        self.count();
        Ok(self.inner.next_u64())
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Self::Error> {
        self.count();
        self.inner.fill_bytes(dst);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rayon::prelude::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn a_thread_without_a_flag_never_stops() {
        for _ in 0..1000 {
            checkpoint();
        }
        let flag = CancelFlag::new();
        flag.cancel();
        // Raised, but never given to this thread.
        checkpoint();
    }

    #[test]
    fn work_that_finishes_returns_its_value_and_the_flag_is_removed() {
        let flag = CancelFlag::new();
        assert_eq!(flag.run(|| 7), Some(7));
        flag.cancel();
        checkpoint(); // the flag went with the work
        assert_eq!(flag.run(|| 8), Some(8)); // no checkpoint reached
    }

    #[test]
    fn other_panics_go_on_unwinding() {
        let flag = CancelFlag::new();
        let outcome = panic::catch_unwind(|| flag.run(|| panic!("a bug")));
        let payload = outcome.unwrap_err();
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"a bug"));
    }

    #[test]
    fn a_pool_stops_on_every_thread() {
        let flag = CancelFlag::new();
        let for_workers = flag.clone();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .start_handler(move |_| for_workers.enter())
            .build()
            .unwrap();
        let done = AtomicUsize::new(0);
        let total = 1_000_000;
        let outcome = flag.run(|| {
            pool.install(|| {
                (0..total).into_par_iter().for_each(|i| {
                    if i == 1000 {
                        flag.cancel();
                    }
                    checkpoint();
                    done.fetch_add(1, Ordering::Relaxed);
                })
            })
        });
        assert_eq!(outcome, None);
        let done = done.load(Ordering::Relaxed);
        assert!(
            done < total / 2,
            "{done} of {total} steps ran after the stop"
        );
    }

    #[test]
    fn a_generator_stops_at_its_next_checkpoint() {
        use rand_core::{Rng, SeedableRng};
        let flag = CancelFlag::new();
        flag.cancel();
        let draws = std::cell::Cell::new(0u64);
        let outcome = flag.run(|| {
            let mut rng = CheckpointRng::new(rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(1));
            loop {
                rng.next_u64();
                draws.set(draws.get() + 1);
            }
        });
        assert_eq!(outcome, None::<()>);
        assert_eq!(draws.get(), u64::from(CheckpointRng::<()>::EVERY) - 1);
    }
}
