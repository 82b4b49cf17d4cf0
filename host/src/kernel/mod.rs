//! Set kernels over bags: Gram matrices of the box-counting kernels k∧, k∧/∨ and k_min
//! (GMIL paper, built on the core's estimators in [`mil_core::box_kernel`] — the host has
//! no second implementation), in log space, with their spectra and file output; and the
//! normalised set kernel of Gärtner et al. ([`nsk`]) as the conventional baseline.

pub mod boxes;
pub mod npy;
pub mod nsk;
pub mod tiles;

pub use boxes::{box_gram, BoxGramSpec, GridData};

use mil_core::box_kernel::{Accuracy, BoxKernel};
use mil_core::keyword::Keyword;
use nalgebra::{DMatrix, SymmetricEigen};

use crate::error::{Error, Result};

/// ε of every box-kernel estimate unless asked otherwise (the GMIL paper's experiments).
pub const DEFAULT_EPSILON: f64 = 0.1;
/// δ of every box-kernel estimate unless asked otherwise (the GMIL paper's experiments).
pub const DEFAULT_DELTA: f64 = 0.01;

/// The accuracy (ε, δ) of box-kernel estimates; the error names the parameter that is
/// out of (0, 1).
pub fn accuracy(epsilon: f64, delta: f64) -> Result<Accuracy> {
    use crate::params::limits::{MIN_DELTA, MIN_EPSILON};
    let bad = Accuracy::new(epsilon, delta).is_err();
    if !(MIN_EPSILON..1.0).contains(&epsilon) {
        return Err(Error::parameter(
            "epsilon",
            epsilon,
            format!("must be in [{MIN_EPSILON}, 1): the samples per entry grow as ln(1/δ)/ε²"),
        ));
    }
    if bad || delta < MIN_DELTA {
        return Err(Error::parameter(
            "delta",
            delta,
            format!("must be in [{MIN_DELTA:e}, 1)"),
        ));
    }
    Accuracy::new(epsilon, delta).map_err(|e| Error::parameter("epsilon", epsilon, e.to_string()))
}

/// A set kernel by name: one of the core's box kernels, or the normalised set kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetKernelName {
    /// A box-counting kernel ([`mil_core::box_kernel`]).
    Box(BoxKernel),
    /// The normalised set kernel of Gärtner et al. ([`nsk`]).
    Nsk,
    /// The MI kernel of Gärtner et al. (2002), k(X, Y) = Σ_{x∈X, y∈Y} exp(−γ‖x − y‖²),
    /// unnormalised, as Weka's `MIRBFKernel` computes it.
    MiRbf,
}

impl Keyword for SetKernelName {
    const ALL: &'static [Self] = &[
        SetKernelName::Box(BoxKernel::And),
        SetKernelName::Box(BoxKernel::AndOr),
        SetKernelName::Box(BoxKernel::Min),
        SetKernelName::Nsk,
        SetKernelName::MiRbf,
    ];

    fn name(self) -> &'static str {
        match self {
            SetKernelName::Box(k) => k.name(),
            SetKernelName::Nsk => "nsk",
            SetKernelName::MiRbf => "mi-rbf",
        }
    }

    fn help(self) -> &'static str {
        match self {
            SetKernelName::Box(k) => k.help(),
            SetKernelName::Nsk => "normalised set kernel (Gärtner et al. 2002)",
            SetKernelName::MiRbf => "MI kernel sum of exp(-gamma |x - y|^2) over instance pairs (Gärtner et al. 2002; Weka's MIRBFKernel)",
        }
    }
}

impl std::fmt::Display for SetKernelName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A symmetric n × n Gram matrix of natural logarithms of kernel values, row-major.
#[derive(Debug, Clone, PartialEq)]
pub struct LogGram {
    /// Number of bags n.
    pub n: usize,
    /// ln k(Pᵢ, Pⱼ) at `i * n + j`.
    pub ln: Vec<f64>,
    /// Samples (or trials) the estimators drew in all.
    pub samples: u64,
}

impl LogGram {
    /// ln k(Pᵢ, Pⱼ).
    pub fn get(&self, i: usize, j: usize) -> f64 {
        self.ln[i * self.n + j]
    }

    /// The normalised kernel matrix K̃ᵢⱼ = k(Pᵢ,Pⱼ)/√(k(Pᵢ,Pᵢ)k(Pⱼ,Pⱼ)), formed in log space
    /// (exp(ln kᵢⱼ − (ln kᵢᵢ + ln kⱼⱼ)/2)) so that values near 10⁶⁰⁰ never materialise.
    /// The normalisation is a congruence D K D with D positive diagonal, so it keeps the
    /// number of negative eigenvalues (Sylvester's law of inertia).
    pub fn normalised(&self) -> DMatrix<f64> {
        let n = self.n;
        DMatrix::from_fn(n, n, |i, j| {
            (self.get(i, j) - 0.5 * (self.get(i, i) + self.get(j, j))).exp()
        })
    }

    /// The subpolynomial map φ(k) = k^ρ of §5.3 (the paper's Musk runs use ρ = 1/50),
    /// divided by the largest entry so it fits a float: exp(ρ(ln kᵢⱼ − max ln k)). The
    /// constant factor does not change the signs of the eigenvalues.
    pub fn powered(&self, rho: f64) -> DMatrix<f64> {
        let max = self.ln.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        DMatrix::from_fn(self.n, self.n, |i, j| (rho * (self.get(i, j) - max)).exp())
    }
}

/// Spectrum summary of a symmetric matrix.
pub fn spectrum(matrix: DMatrix<f64>) -> Spectrum {
    let n = matrix.nrows();
    let values = SymmetricEigen::new(matrix).eigenvalues;
    let largest = values.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    // Eigenvalues this close to zero are rounding noise of a semidefinite matrix.
    let tolerance = n as f64 * f64::EPSILON * largest;
    let negative = values.iter().filter(|&&v| v < -tolerance).count();
    let smallest = values.iter().copied().fold(f64::INFINITY, f64::min);
    Spectrum {
        negative_fraction: if n == 0 {
            0.0
        } else {
            negative as f64 / n as f64
        },
        smallest,
        largest,
    }
}

/// Eigenvalues of a Gram matrix.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spectrum {
    /// Fraction of eigenvalues below −n·ε_mach·max|λ| (the paper's Table 6 measure).
    pub negative_fraction: f64,
    /// The smallest eigenvalue.
    pub smallest: f64,
    /// The largest eigenvalue magnitude.
    pub largest: f64,
}
