//! What an estimator is asked and what it answers: the kernel and the algorithm, the
//! accuracy, the estimate, and the caller's working memory.

use crate::error::Error;

/// Which set kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "kebab-case")
)]
pub enum BoxKernel {
    /// k∧: boxes containing a point of P and a point of Q.
    And,
    /// k∨: boxes containing a point of P or of Q.
    Or,
    /// k∧/∨ = k∧ / k∨.
    AndOr,
    /// k_min: Σ over boxes of min(|P_b|, |Q_b|).
    Min,
}

/// Which estimator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "kebab-case")
)]
pub enum Method {
    /// Exact coverage counting with an empirical Bernstein stopping rule ([`fast`](super::fast)).
    Fast,
    /// The paper's Tables 3 (k∧), 4 (k∨) and 5 (k_min) ([`paper`](super::paper)).
    Paper,
}

/// The requested accuracy: the estimate lies within (1 ± ε) of the true value with
/// probability at least 1 − δ.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Accuracy {
    epsilon: f64,
    delta: f64,
}

impl Accuracy {
    /// Checks 0 < ε < 1 and 0 < δ < 1.
    pub fn new(epsilon: f64, delta: f64) -> Result<Self, Error> {
        if !(epsilon > 0.0 && epsilon < 1.0) {
            return Err(Error::InvalidParameter("epsilon must be in (0, 1)"));
        }
        if !(delta > 0.0 && delta < 1.0) {
            return Err(Error::InvalidParameter("delta must be in (0, 1)"));
        }
        Ok(Accuracy { epsilon, delta })
    }

    /// Relative error ε.
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// Failure probability δ.
    pub fn delta(&self) -> f64 {
        self.delta
    }
}

/// One estimate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// Natural logarithm of the estimated kernel value.
    pub ln_value: f64,
    /// Boxes drawn (fast; paper Table 5) or trials run (paper Tables 3, 4): the unit of
    /// work whose cost the benchmarks report.
    pub samples: u64,
}

/// Caller-provided working memory of an estimator.
#[derive(Debug)]
pub struct Scratch<'a> {
    /// Floats: one per set of the union (point pairs or points), and with room the
    /// second bag's points in floating point too.
    pub floats: &'a mut [f64],
    /// Integers: a few per dimension, for the sampled box.
    pub ints: &'a mut [u32],
}

/// Sizes a [`Scratch`] must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScratchLen {
    /// Length of [`Scratch::floats`] with which the fast k∧ and k_min also keep the
    /// second bag in floating point, their fastest form.
    pub floats: usize,
    /// The shortest [`Scratch::floats`] accepted: the estimates are the same, bit for bit,
    /// only slower.
    pub floats_min: usize,
    /// Length of [`Scratch::ints`] with which the fast estimator also keeps the two bags
    /// column by column, its fastest form.
    pub ints: usize,
    /// The shortest [`Scratch::ints`] accepted (a device short of memory): the estimates
    /// are the same, bit for bit, only slower.
    pub ints_min: usize,
}
