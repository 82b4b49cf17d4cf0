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

/// [`checkpoint`] as the poll of the core's long computations
/// (`mil_core::box_kernel::estimate_polled`, which polls between short units of an entry's
/// work): it unwinds when the flag is raised, so it never answers `true`.
///
/// ```
/// use mil_toolkit::cancel::{poll, CancelFlag};
///
/// assert!(!poll()); // no flag on this thread: go on
/// let flag = CancelFlag::new();
/// flag.cancel();
/// assert_eq!(flag.run(poll), None); // raised: the work unwinds
/// ```
pub fn poll() -> bool {
    checkpoint();
    false
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
    fn a_box_kernel_entry_stops_at_its_next_poll() {
        use mil_core::box_kernel::{
            estimate_polled, scratch_len, Accuracy, BoxKernel, Grid, Method, Scratch,
        };
        use rand_core::SeedableRng;
        // Two bags of 40 points at ε = 10⁻⁴: an entry of millions of samples.
        let s = [1000u32; 3];
        let grid = Grid::new(&s).unwrap();
        let p: Vec<u32> = (0..120).map(|v| (v * 37 % 1000) as u32).collect();
        let q: Vec<u32> = (0..120).map(|v| (v * 53 % 1000) as u32).collect();
        for method in [Method::Fast, Method::Paper] {
            for kernel in [BoxKernel::And, BoxKernel::Min] {
                let need = scratch_len(kernel, method, 40, 40, 3).unwrap();
                let (mut floats, mut ints) = (vec![0.0; need.floats], vec![0; need.ints]);
                let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(1);
                let flag = CancelFlag::new();
                let mut polls = 0;
                let outcome = flag.run(|| {
                    estimate_polled(
                        kernel,
                        method,
                        &grid,
                        &p,
                        &q,
                        Accuracy::new(1e-4, 1e-9).unwrap(),
                        &mut rng,
                        &mut Scratch {
                            floats: &mut floats,
                            ints: &mut ints,
                        },
                        &mut || {
                            polls += 1;
                            if polls == 5 {
                                flag.cancel();
                            }
                            poll()
                        },
                    )
                });
                assert!(outcome.is_none(), "{kernel:?} {method:?} ran to the end");
                assert_eq!(polls, 5, "{kernel:?} {method:?}");
            }
        }
    }
}
