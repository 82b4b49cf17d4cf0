//! Errors and keyword parameters: how library errors and unknown names reach Python.

use mil_core::keyword::Keyword;
use mil_toolkit::classifier::citation_knn::Scaling;
use mil_toolkit::classifier::milr::{Optimizer, Pooling};
use mil_toolkit::classifier::svm::bags::EmpiricalMap;
use mil_toolkit::distance::Hausdorff;
use mil_toolkit::kernel::SetKernelName;
use mil_toolkit::projection::ProjectionKind;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

/// A library error as the Python exception that fits it: the caller's input or
/// parameters (`ValueError`), or a failure of the method (`RuntimeError`).
pub(crate) fn py_err(e: mil_toolkit::Error) -> PyErr {
    use mil_toolkit::Error as E;
    let e = match e {
        E::Parameter {
            name,
            value,
            reason,
        } => E::Parameter {
            name: python_name(&name).to_string(),
            value,
            reason,
        },
        other => other,
    };
    match e {
        E::Parse { .. }
        | E::Data { .. }
        | E::Parameter { .. }
        | E::Core(_)
        | E::Model(_)
        | E::Unsupported(_) => PyValueError::new_err(e.to_string()),
        E::Io { .. } | E::Numerical { .. } => PyRuntimeError::new_err(e.to_string()),
    }
}

/// The keyword a Python estimator gives a parameter the library names `name`, where
/// the two differ (scikit-learn's names for the same settings).
fn python_name(name: &str) -> &str {
    match name {
        "dim" => "n_components",
        "k" => "n_clusters",
        "cost" => "C",
        "map" => "kernel_map",
        other => other,
    }
}

/// The value of a keyword parameter, or a `ValueError` listing the names it accepts.
pub(crate) fn keyword<T: Keyword>(parameter: &str, name: &str) -> PyResult<T> {
    T::from_name(name).ok_or_else(|| {
        let names: Vec<String> = T::ALL.iter().map(|v| format!("'{}'", v.name())).collect();
        PyValueError::new_err(format!(
            "{parameter}={name:?} is not one of {}",
            names.join(", ")
        ))
    })
}

pub(crate) fn json_err(what: &str, e: serde_json::Error) -> PyErr {
    PyValueError::new_err(format!("malformed {what} state: {e}"))
}

/// The names a keyword parameter accepts, by concept.
#[pyfunction]
pub(crate) fn keywords(concept: &str) -> PyResult<Vec<&'static str>> {
    fn names<T: Keyword>() -> Vec<&'static str> {
        T::ALL.iter().map(|v| v.name()).collect()
    }
    Ok(match concept {
        "scaling" => names::<Scaling>(),
        "hausdorff" => names::<Hausdorff>(),
        "pooling" => names::<Pooling>(),
        "optimizer" => names::<Optimizer>(),
        "kernel" => names::<SetKernelName>(),
        "estimator" => names::<mil_core::box_kernel::Method>(),
        "map" => names::<EmpiricalMap>(),
        "projection" => names::<ProjectionKind>(),
        "format" => names::<mil_core::Encoding>(),
        other => {
            return Err(PyValueError::new_err(format!(
                "no keyword concept {other:?}"
            )))
        }
    })
}
