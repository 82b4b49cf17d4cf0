//! Set kernels (`miltk.kernels`): Gram matrices over bags.

use std::sync::Arc;

use mil_toolkit::classifier::svm::{SetKernel, SetKernelSvm};
use mil_toolkit::data::standardize::ZScore;
use mil_toolkit::kernel::nsk::log_nsk_gram;
use mil_toolkit::kernel::SetKernelName;
use mil_toolkit::progress::Silent;
use numpy::PyArray2;
use pyo3::prelude::*;

use crate::bags::{matrix, Bags};
use crate::errors::{keyword, py_err};
use crate::parallel::run;

/// ln of the Gram matrix of a set kernel over all bags, as `mil gram` computes it: box
/// kernels on the grid fitted on the bags, NSK on z-scored features with γ defaulting to
/// 1 / (number of non-constant features); on `n_threads` threads (0: the default of
/// `set_num_threads`).
#[pyfunction]
#[pyo3(signature = (bags, kernel, estimator, epsilon, delta, precision, gamma, seed, n_threads=0))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn log_gram<'py>(
    py: Python<'py>,
    bags: &Bags,
    kernel: &str,
    estimator: &str,
    epsilon: f64,
    delta: f64,
    precision: Option<i32>,
    gamma: Option<f64>,
    seed: u64,
    n_threads: usize,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let data = Arc::clone(&bags.data);
    let n = data.n_bags();
    crate::memory::check(
        &format!("the Gram matrix over {n} bags"),
        mil_toolkit::classifier::svm::footprint(mil_toolkit::params::Shape::of(&data)),
        "use fewer bags",
    )?;
    let ln = match keyword::<SetKernelName>("kernel", kernel)? {
        SetKernelName::Box(kernel) => {
            let svm = SetKernelSvm::default()
                .kernel(SetKernel::Box {
                    kernel,
                    estimator: keyword("estimator", estimator)?,
                    epsilon,
                    delta,
                    precision,
                })
                .seed(seed);
            svm.check().map_err(py_err)?;
            run(py, n_threads, move || svm.full_log_gram(&data, &Silent))?.map_err(py_err)?
        }
        SetKernelName::MiRbf => {
            let svm = SetKernelSvm::default()
                .kernel(SetKernel::MiRbf {
                    gamma: gamma
                        .unwrap_or(mil_toolkit::classifier::svm::MI_RBF_GAMMA)
                        .into(),
                })
                .seed(seed);
            svm.check().map_err(py_err)?;
            run(py, n_threads, move || svm.full_log_gram(&data, &Silent))?.map_err(py_err)?
        }
        SetKernelName::Nsk => run(py, n_threads, move || {
            let zscore = ZScore::fit(data.as_ref());
            let active = zscore.std.iter().filter(|&&s| s > 0.0).count().max(1);
            let gamma = gamma.unwrap_or(1.0 / active as f64);
            log_nsk_gram(&zscore.apply_active(&data)?, gamma)
        })?
        .map_err(py_err)?,
    };
    Ok(matrix(py, n, n, ln))
}
