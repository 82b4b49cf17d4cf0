//! The forms of a fitted SVM that the core runs: a box-kernel deployment (the grid, stored bags' points, weights) and an MI-kernel deployment.

use super::*;

/// A trained box-kernel SVM in the form `mil-core` runs ([`mil_core::svm`]): the stored
/// bags on the training grid and one weight each, f(x) = Σ_r ω_r exp(ρ ln k(x, r) − T) + b.
#[derive(Debug, Clone, PartialEq)]
pub struct SvmDeployment {
    /// The set kernel.
    pub kernel: BoxKernel,
    /// The estimator.
    pub method: Method,
    /// ε of every estimate.
    pub epsilon: f64,
    /// δ of every estimate.
    pub delta: f64,
    /// The grid's power of ten.
    pub precision: i32,
    /// Seed of the estimates.
    pub seed: u64,
    /// ρ of the subpolynomial map.
    pub rho: f64,
    /// T: ρ times the largest training ln k(t, t).
    pub log_offset: f64,
    /// b.
    pub bias: f64,
    /// The grid's smallest rounded value per dimension.
    pub grid_min: Vec<i64>,
    /// The grid size per dimension.
    pub grid_size: Vec<u32>,
    /// The stored bags' grid points, row-major.
    pub points: Vec<u32>,
    /// Bag offsets into `points` (in instances).
    pub bag_starts: Vec<usize>,
    /// ω_r per stored bag.
    pub weights: Vec<f64>,
}

impl SvmModel {
    /// The model as the core runs it. Plain φ keeps the support bags with
    /// ω_t = α_t y_t e^T / c; the empirical map keeps every training bag r with
    /// ω_r = Σ_t α_t y_t φ(k(t, r)) e^T / c (c: the kernel's conditioning constant), the
    /// same decision regrouped. The NSK baseline has no core implementation.
    pub fn deployment(&self) -> Result<SvmDeployment> {
        if !self.rest.is_empty() {
            return Err(Error::data(
                "model",
                format!(
                    "is a {}-class one-vs-rest SVM; the core's set-kernel SVM head decides two classes only, so it cannot be exported (train on two classes to export)",
                    self.n_classes()
                ),
            ));
        }
        if matches!(self.kernel, SetKernel::MiRbf { .. }) {
            return Err(Error::Unsupported(
                "a box-kernel deployment of an MI-kernel SVM (see SvmModel::mi_deployment)".into(),
            ));
        }
        if self.minmax.is_some() {
            return Err(Error::data(
                "model",
                "is a min-max scaled box-kernel SVM; the core's box-kernel head discretises raw features, so it cannot be exported",
            ));
        }
        let SetKernel::Box {
            kernel,
            estimator,
            epsilon,
            delta,
            precision,
        } = self.kernel
        else {
            return Err(Error::Unsupported(
                "exporting NSK SVMs: the core estimates box-counting kernels only".into(),
            ));
        };
        let train = self.train_set()?;
        let grid = GridData::fit(&train, precision)?;
        let m = train.n_bags();
        let rho = self.svm.rho();
        let log_gram = &self.train_log_gram;
        let log_offset = rho
            * (0..m)
                .map(|t| log_gram[t * m + t])
                .fold(f64::NEG_INFINITY, f64::max);
        // e^T / c, formed in log space.
        let factor = |x: f64| (x + log_offset - self.svm.kernel_scale.ln()).exp();
        let c = &self.svm.coefficients;
        let (stored, weights): (Vec<usize>, Vec<f64>) = match self.svm.settings.map {
            EmpiricalMap::None => (0..m)
                .filter(|&t| c[t] != 0.0)
                .map(|t| (t, c[t] * factor(0.0)))
                .unzip(),
            EmpiricalMap::Training => (0..m)
                .map(|r| {
                    let w = (0..m)
                        .map(|t| c[t] * factor(rho * log_gram[t * m + r]))
                        .sum::<f64>();
                    (r, w)
                })
                .unzip(),
            EmpiricalMap::Transductive => {
                return Err(Error::parameter(
                    "map",
                    "emp-trans",
                    "a transductive SVM is not a model of new bags",
                ))
            }
        };
        if stored.is_empty() || !weights.iter().all(|w| w.is_finite()) {
            return Err(Error::Numerical {
                method: "SVM export",
                reason: "no support bags, or weights beyond f64 (lower rho)".into(),
            });
        }
        let mut points = Vec::new();
        let mut bag_starts = vec![0];
        for &t in &stored {
            points.extend_from_slice(grid.bag(t));
            bag_starts.push(bag_starts.last().copied().unwrap_or(0) + grid.bag_len(t));
        }
        Ok(SvmDeployment {
            kernel,
            method: estimator,
            epsilon,
            delta,
            precision: grid.precision(),
            seed: self.seed,
            rho,
            log_offset,
            bias: self.svm.bias,
            grid_min: grid.min().to_vec(),
            grid_size: grid.sizes().to_vec(),
            points,
            bag_starts,
            weights,
        })
    }
}

/// A trained MI-kernel SVM in the form `mil-core` runs ([`mil_core::mi_svm`]): the support
/// bags' (scaled) instances and one weight each,
/// f(X) = Σ_r ω_r Σ_{x∈X, y∈R_r} exp(−γ‖x − y‖²) + b on X scaled by the min–max map.
#[derive(Debug, Clone, PartialEq)]
pub struct MiSvmDeployment {
    /// γ of the kernel.
    pub gamma: f64,
    /// b.
    pub bias: f64,
    /// Minimum per feature (0 without scaling).
    pub min: Vec<f64>,
    /// Range per feature (1 without scaling; 0 maps the feature to 0).
    pub range: Vec<f64>,
    /// The support bags' instances, scaled, row-major.
    pub instances: Vec<f64>,
    /// Bag offsets into `instances` (in instances).
    pub bag_starts: Vec<usize>,
    /// ω_r = α_r y_r / s per support bag (s the kernel's conditioning constant).
    pub weights: Vec<f64>,
}

impl SvmModel {
    /// The MI-kernel model as the core runs it: the support bags with ω_t = α_t y_t / s
    /// (the MI kernel is used as is: ρ = 1, no empirical map). Two classes only.
    pub fn mi_deployment(&self) -> Result<MiSvmDeployment> {
        let SetKernel::MiRbf { gamma } = self.kernel else {
            return Err(Error::Unsupported(
                "an MI-kernel deployment of a model with another kernel".into(),
            ));
        };
        let gamma = Self::fitted_gamma(gamma)?;
        if !self.rest.is_empty() {
            return Err(Error::data(
                "model",
                format!(
                    "is a {}-class one-vs-rest SVM; the core's MI-kernel SVM head decides two classes only, so it cannot be exported (train on two classes to export)",
                    self.n_classes()
                ),
            ));
        }
        let train = self.train_set()?;
        let c = &self.svm.coefficients;
        let s = self.svm.kernel_scale;
        let mut instances = Vec::new();
        let mut bag_starts = vec![0];
        let mut weights = Vec::new();
        for t in (0..train.n_bags()).filter(|&t| c[t] != 0.0) {
            instances.extend_from_slice(train.bag(t).as_slice());
            bag_starts.push(bag_starts.last().copied().unwrap_or(0) + train.bag(t).len());
            weights.push(c[t] / s);
        }
        if weights.is_empty() || !weights.iter().all(|w| w.is_finite()) {
            return Err(Error::Numerical {
                method: "SVM export",
                reason: "no support bags, or weights that are not finite".into(),
            });
        }
        let (min, range) = match &self.minmax {
            Some(m) => (m.min.clone(), m.range.clone()),
            None => (vec![0.0; self.dim], vec![1.0; self.dim]),
        };
        Ok(MiSvmDeployment {
            gamma,
            bias: self.svm.bias,
            min,
            range,
            instances,
            bag_starts,
            weights,
        })
    }
}
