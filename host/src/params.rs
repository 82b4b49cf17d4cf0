//! The shape every algorithm's parameters share: a `Default` with the paper's values,
//! chainable setters, a check before any work, and `fit` returning an immutable model.

/// Chainable setters `field(self, value) -> Self` for public fields of a parameters
/// type: `setters!(Type { field: Type, … })`.
#[doc(hidden)]
#[macro_export]
macro_rules! __setters {
    ($ty:ty { $($field:ident : $t:ty),+ $(,)? }) => {
        impl $ty {
            $(
                #[doc = concat!("Sets `", stringify!($field), "` (chainable).")]
                #[must_use]
                pub fn $field(mut self, value: $t) -> Self {
                    self.$field = value;
                    self
                }
            )+
        }
    };
}

pub(crate) use crate::__setters as setters;

/// The documented ranges of the parameters that set the amount of work, checked before
/// any work starts: beyond them a run would take hours or memory the machine lacks, or
/// overflow. Each error names the parameter and its range.
pub mod limits {
    /// Repetitions of cross-validation.
    pub const MAX_REPEATS: usize = 1000;
    /// Random restarts of a clustering.
    pub const MAX_RESTARTS: usize = 1000;
    /// Smallest ε of a box-kernel estimate: the samples per Gram entry grow as
    /// ln(1/δ)/ε², about 10⁵ at ε = 0.01 and δ = 10⁻².
    pub const MIN_EPSILON: f64 = 0.01;
    /// Smallest δ of a box-kernel estimate.
    pub const MIN_DELTA: f64 = 1e-12;
    /// Largest trade-off or penalty weight (α, ridge, M³IC's C and l, MILR's β): the
    /// papers' grids end at 10²–10⁴; beyond 10⁶ the objectives are dominated by the
    /// weight alone and the optimisers lose precision.
    pub const MAX_WEIGHT: f64 = 1e6;
    /// Largest stopping tolerance of M³IC (its ε₁, relative, and ε₂, on a slack of
    /// margins of at most 1): the paper uses 0.01.
    pub const MAX_TOLERANCE: f64 = 0.1;
    /// Largest misclassification cost C of the set-kernel SVM: the GMIL paper's hard
    /// margin, 10¹⁰, its default.
    pub const MAX_SVM_COST: f64 = 1e10;
}

/// Checks `0 ≤ value ≤ MAX_WEIGHT` (or `0 < value` when `positive`), naming `name`.
pub fn check_weight(name: &str, value: f64, positive: bool) -> crate::Result<()> {
    let low_ok = if positive { value > 0.0 } else { value >= 0.0 };
    if low_ok && value <= limits::MAX_WEIGHT {
        Ok(())
    } else {
        Err(crate::Error::parameter(
            name,
            value,
            format!(
                "must be in {}0, {:e}]",
                if positive { "(" } else { "[" },
                limits::MAX_WEIGHT
            ),
        ))
    }
}

/// Checks `1 ≤ value ≤ max`, naming `name`.
pub fn check_count(name: &str, value: usize, max: usize) -> crate::Result<()> {
    if (1..=max).contains(&value) {
        Ok(())
    } else {
        Err(crate::Error::parameter(
            name,
            value,
            format!("must be between 1 and {max}"),
        ))
    }
}

/// What a run will need, estimated from the sizes of its input before any work: the
/// peak memory of the matrices it holds at once and a rough count of arithmetic
/// operations. Each algorithm family has a `footprint` function next to it; the command
/// line refuses a run whose memory exceeds `--max-memory-gib`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Estimate {
    /// Peak bytes.
    pub bytes: f64,
    /// Arithmetic operations, to an order of magnitude.
    pub ops: f64,
}

impl Estimate {
    /// The memory of `values` numbers of 8 bytes and the operations that fill them.
    pub fn values(values: f64, ops: f64) -> Estimate {
        Estimate {
            bytes: 8.0 * values,
            ops,
        }
    }

    /// Refuses work whose memory exceeds `limit_gib`: an [`crate::Error::Parameter`] on
    /// `max_memory_gib` naming the work (`what`), its estimated memory and operations and
    /// what else makes the run smaller (`remedy`, when not empty).
    pub fn check(self, what: &str, limit_gib: f64, remedy: &str) -> crate::Result<()> {
        let gib = self.bytes / f64::from(1u32 << 30);
        if gib <= limit_gib {
            return Ok(());
        }
        let ops = if self.ops > 0.0 {
            format!(" and {:.0e} operations", self.ops)
        } else {
            String::new()
        };
        let remedy = if remedy.is_empty() {
            String::new()
        } else {
            format!("{remedy}, or ")
        };
        Err(crate::Error::parameter(
            "max_memory_gib",
            limit_gib,
            format!("{what} needs about {gib:.1} GiB{ops}; {remedy}raise the limit to run it"),
        ))
    }

    /// Two parts held in memory at once, run one after the other.
    #[must_use]
    pub fn and(self, other: Estimate) -> Estimate {
        Estimate {
            bytes: self.bytes + other.bytes,
            ops: self.ops + other.ops,
        }
    }
}

/// The memory limit runs are checked against unless one is given: half the machine's
/// physical memory (from `/proc/meminfo` on Linux), or 8 GiB where that is unknown.
pub fn default_memory_limit_gib() -> f64 {
    let total_kib = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
            line.split_whitespace().nth(1)?.parse::<f64>().ok()
        });
    match total_kib {
        // In tenths of a GiB, so that messages show a short number.
        Some(kib) if kib > 0.0 => {
            ((kib / f64::from(1u32 << 20) / 2.0 * 10.0).floor() / 10.0).max(0.5)
        }
        _ => 8.0,
    }
}

/// The sizes an [`Estimate`] is computed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Bags.
    pub bags: usize,
    /// Instances of all bags.
    pub instances: usize,
    /// Features per instance.
    pub dim: usize,
}

impl Shape {
    /// The shape of a data set.
    pub fn of(data: &crate::Dataset) -> Shape {
        Shape {
            bags: data.n_bags(),
            instances: data.n_instances(),
            dim: data.dim(),
        }
    }

    /// The numbers of the data set itself.
    pub fn values(&self) -> f64 {
        self.instances as f64 * self.dim as f64
    }
}

/// The CPU time of this process's threads at one moment (`/proc/self/task/*/schedstat`,
/// in nanoseconds), to measure work that may run on several threads.
#[derive(Debug, Clone)]
pub(crate) struct ThreadTimes(Vec<(String, u64)>);

impl ThreadTimes {
    /// The threads' CPU times now; empty where they cannot be read.
    pub(crate) fn now() -> ThreadTimes {
        let mut times = Vec::new();
        if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
            for task in tasks.flatten() {
                let ns = std::fs::read_to_string(task.path().join("schedstat"))
                    .ok()
                    .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok());
                if let Some(ns) = ns {
                    times.push((task.file_name().to_string_lossy().into_owned(), ns));
                }
            }
        }
        ThreadTimes(times)
    }

    /// CPU seconds run since `self` by the threads alive now (a thread that ended
    /// meanwhile is not counted; other threads of the process are); where the threads
    /// cannot be read, the calling thread's ([`thread_cpu_seconds`]) since `start`.
    pub(crate) fn since(&self, start_of_thread: f64) -> f64 {
        let now = ThreadTimes::now();
        if now.0.is_empty() {
            return (thread_cpu_seconds() - start_of_thread).max(0.0);
        }
        let ns: u64 = now
            .0
            .iter()
            .map(|(tid, after)| {
                let before = self.0.iter().find(|(t, _)| t == tid).map_or(0, |x| x.1);
                after.saturating_sub(before)
            })
            .sum();
        ns as f64 * 1e-9
    }
}

/// CPU seconds the calling thread has run (`/proc/thread-self/schedstat`, in
/// nanoseconds), to measure a sample of work for an estimate; where that file cannot be
/// read, wall-clock seconds since the first call, which overstate CPU time on a busy
/// machine.
pub(crate) fn thread_cpu_seconds() -> f64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .map(|ns| ns as f64 * 1e-9)
        .unwrap_or_else(|| {
            START
                .get_or_init(std::time::Instant::now)
                .elapsed()
                .as_secs_f64()
        })
}
