//! Threads (`n_jobs`, `miltk.set_num_threads`, `miltk.get_num_threads`): every native
//! call that computes in parallel runs on a rayon pool of its own, built for that call,
//! so estimators under joblib each use the threads they were given and never share (or
//! fix) rayon's global pool.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use mil_toolkit::cancel::CancelFlag;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

/// Threads of a call made with `n_threads=0`, as `set_num_threads` sets them; 0 is
/// rayon's default (`RAYON_NUM_THREADS`, or one thread per core).
static DEFAULT_THREADS: AtomicUsize = AtomicUsize::new(0);

/// Logical cores of the machine.
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The most threads a call may ask for: beyond a few per core, threads only cost memory
/// and switching.
fn max_threads() -> usize {
    4 * cores()
}

fn check_threads(parameter: &str, n: usize) -> PyResult<()> {
    let max = max_threads();
    if n > max {
        return Err(PyValueError::new_err(format!(
            "{parameter}={n} is more than {max} threads (4 per core on this machine)"
        )));
    }
    Ok(())
}

/// A pool of `n_threads` threads (0: the default of [`set_num_threads`]) whose work stops
/// at its next checkpoint when `flag` is raised.
fn pool(n_threads: usize, flag: &CancelFlag) -> PyResult<rayon::ThreadPool> {
    check_threads("n_jobs", n_threads)?;
    let n = match n_threads {
        0 => DEFAULT_THREADS.load(Ordering::Relaxed),
        n => n,
    };
    let flag = flag.clone();
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .start_handler(move |_| flag.enter())
        .build()
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start {n} threads: {e}")))
}

/// How often a native call waiting for its work checks for signals (Ctrl-C).
const SIGNAL_POLL: Duration = Duration::from_millis(100);

/// Runs `work` on a rayon pool of `n_threads` threads built for it (0: the default of
/// [`set_num_threads`]), on a thread of its own, while this thread waits without the GIL
/// and checks for signals every [`SIGNAL_POLL`]. A signal whose handler raises (Ctrl-C's
/// `KeyboardInterrupt`) returns control to Python at once and raises the work's
/// [`CancelFlag`]: the work stops at the library's next checkpoint (a Gram row, a fold,
/// an optimiser iteration) on its own threads, and what it computed is dropped (it owns
/// what it reads, hence `'static`). A panic in the work is a `RuntimeError`.
pub(crate) fn run<T: Send + 'static>(
    py: Python<'_>,
    n_threads: usize,
    work: impl FnOnce() -> T + Send + 'static,
) -> PyResult<T> {
    let flag = CancelFlag::new();
    let pool = pool(n_threads, &flag)?;
    let (done, result) = mpsc::channel();
    let for_work = flag.clone();
    std::thread::Builder::new()
        .name("miltk-call".into())
        .spawn(move || {
            // Cancelled (`None`) only after the caller was interrupted, when the receiver
            // is gone: nothing to report.
            if let Some(value) = for_work.run(|| pool.install(work)) {
                let _ = done.send(value);
            }
        })
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start a thread: {e}")))?;
    let mut result = result;
    loop {
        // The receiver goes to the GIL-free closure and comes back (it is `Send`, not
        // `Sync`).
        let (back, received) = py.detach(move || {
            let received = result.recv_timeout(SIGNAL_POLL);
            (result, received)
        });
        result = back;
        match received {
            Ok(value) => return Ok(value),
            Err(RecvTimeoutError::Timeout) => {
                if let Err(interrupted) = py.check_signals() {
                    flag.cancel();
                    return Err(interrupted);
                }
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(PyRuntimeError::new_err(
                    "the native computation panicked (a bug: please report it with the inputs)",
                ))
            }
        }
    }
}

/// Sets the threads of the calls that do not name their own (`n_jobs=None`), from 1 to
/// 4 per core.
#[pyfunction]
pub(crate) fn set_num_threads(n: usize) -> PyResult<()> {
    if n == 0 {
        return Err(PyValueError::new_err("n=0: at least one thread is needed"));
    }
    check_threads("n", n)?;
    DEFAULT_THREADS.store(n, Ordering::Relaxed);
    Ok(())
}

/// Threads of the calls that do not name their own.
#[pyfunction]
pub(crate) fn num_threads() -> PyResult<usize> {
    Ok(pool(0, &CancelFlag::new())?.current_num_threads())
}

/// Logical cores of the machine (what `n_jobs=-1` uses).
#[pyfunction]
pub(crate) fn num_cores() -> usize {
    cores()
}
