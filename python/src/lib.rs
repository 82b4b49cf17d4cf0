//! `miltk._native`: the thin native layer of the `miltk` Python package over the
//! `mil-toolkit` library. Every function takes bags as one row-major instance matrix plus
//! bag offsets (the Python side validates and concatenates the user's list of arrays),
//! names enum parameters through [`mil_core::keyword::Keyword`], and releases the GIL for the library's work.
//! The scikit-learn face (parameters, `classes_`, pickling) is pure Python in `miltk/`.

mod bags;
mod classifiers;
mod cluster;
mod datasets;
mod deploy;
mod errors;
mod instances;
mod kernels;
mod memory;
mod model_selection;
mod parallel;
mod projections;

use pyo3::prelude::*;

use bags::Bags;
use classifiers::{miles_embedding, miles_transform, ClassifierSpec, FittedClassifier};
use cluster::{bamic_fit, m3ic_fit, FittedCluster};
use datasets::load_dataset;
use deploy::{export_model, CoreModel};
use errors::keywords;
use instances::{instance_auroc, witness_precision};
use kernels::log_gram;
use memory::{get_max_memory_gib, set_max_memory_gib};
use model_selection::{clustering_accuracy, cross_validate, stratified_folds, GridSpec};
use parallel::{num_cores, num_threads, set_num_threads};
use projections::{FittedProjection, ProjectionSpec};

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Bags>()?;
    m.add_class::<ClassifierSpec>()?;
    m.add_class::<FittedClassifier>()?;
    m.add_class::<GridSpec>()?;
    m.add_class::<ProjectionSpec>()?;
    m.add_class::<FittedProjection>()?;
    m.add_class::<FittedCluster>()?;
    m.add_class::<CoreModel>()?;
    m.add_function(wrap_pyfunction!(m3ic_fit, m)?)?;
    m.add_function(wrap_pyfunction!(bamic_fit, m)?)?;
    m.add_function(wrap_pyfunction!(log_gram, m)?)?;
    m.add_function(wrap_pyfunction!(load_dataset, m)?)?;
    m.add_function(wrap_pyfunction!(stratified_folds, m)?)?;
    m.add_function(wrap_pyfunction!(cross_validate, m)?)?;
    m.add_function(wrap_pyfunction!(clustering_accuracy, m)?)?;
    m.add_function(wrap_pyfunction!(export_model, m)?)?;
    m.add_function(wrap_pyfunction!(set_num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(num_cores, m)?)?;
    m.add_function(wrap_pyfunction!(set_max_memory_gib, m)?)?;
    m.add_function(wrap_pyfunction!(get_max_memory_gib, m)?)?;
    m.add_function(wrap_pyfunction!(keywords, m)?)?;
    m.add_function(wrap_pyfunction!(instance_auroc, m)?)?;
    m.add_function(wrap_pyfunction!(witness_precision, m)?)?;
    m.add_function(wrap_pyfunction!(miles_embedding, m)?)?;
    m.add_function(wrap_pyfunction!(miles_transform, m)?)?;
    Ok(())
}
