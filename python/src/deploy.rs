//! Deployment (`miltk.deploy`): compact models for the core, and the core's inference.

use std::sync::Arc;

use mil_core::keyword::Keyword;
use mil_toolkit::classifier::BagModel;
use mil_toolkit::export;
use numpy::PyArray2;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::bags::{matrix, Bags};
use crate::classifiers::FittedClassifier;
use crate::errors::{keyword, py_err};
use crate::parallel::run;
use crate::projections::FittedProjection;

/// The core's compact model of a classifier, with an optional projection before it, in
/// `format` (`f32`, `q15`, `q7`); quantisation is fitted on the bags the model (or its
/// projection) was fitted on.
#[pyfunction]
#[pyo3(signature = (classifier, projection=None, format="f32", fold_projection=false, input="fitted"))]
pub(crate) fn export_model<'py>(
    py: Python<'py>,
    classifier: &FittedClassifier,
    projection: Option<&FittedProjection>,
    format: &str,
    fold_projection: bool,
    input: &str,
) -> PyResult<Bound<'py, PyBytes>> {
    let encoding = keyword::<mil_core::Encoding>("format", format)?;
    let input = keyword::<export::InputSteps>("input", input)?;
    let train = match projection {
        Some(p) => p.train.clone(),
        None => classifier.train.clone(),
    }
    .ok_or_else(|| {
        PyValueError::new_err("the model does not keep its training bags: refit it to export")
    })?;
    if let Some(p) = projection {
        if p.projection.output_dim != classifier.model.input_dim() {
            return Err(PyValueError::new_err(format!(
                "the projection outputs {} features but the classifier expects {}",
                p.projection.output_dim,
                classifier.model.input_dim()
            )));
        }
    }
    let host = classifier.host_model(projection.map(|p| p.projection.clone()));
    let options = export::Export::new(encoding)
        .fold_projection(fold_projection)
        .input(input);
    let exported = run(py, 0, move || host.export(train.as_ref(), options))?.map_err(py_err)?;
    Ok(PyBytes::new(py, &exported.bytes))
}

/// A compact model as the device parses it, run by the core's own inference.
#[pyclass(module = "miltk._native", frozen)]
pub(crate) struct CoreModel {
    bytes: Vec<u8>,
}

impl CoreModel {
    fn model(&self) -> mil_core::Model<'_> {
        mil_core::Model::parse(&self.bytes).expect("checked when built")
    }
}

#[pymethods]
impl CoreModel {
    /// Parses `bytes` as `mil_core::Model::parse` does on the device.
    #[new]
    fn new(bytes: &[u8]) -> PyResult<Self> {
        mil_core::Model::parse(bytes)
            .map_err(|e| PyValueError::new_err(format!("not a valid compact model: {e}")))?;
        Ok(CoreModel {
            bytes: bytes.to_vec(),
        })
    }

    /// The model bytes.
    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.bytes)
    }

    /// The model kind's name.
    #[getter]
    fn kind(&self) -> &'static str {
        self.model().kind().name()
    }

    /// The scalar encoding's name.
    #[getter]
    fn encoding(&self) -> &'static str {
        self.model().encoding().name()
    }

    /// Raw feature dimension.
    #[getter]
    fn input_dim(&self) -> usize {
        self.model().input_dim()
    }

    /// Size in bytes.
    #[getter]
    fn n_bytes(&self) -> usize {
        self.bytes.len()
    }

    /// The core's label (class index) and per-class scores of every bag.
    fn classify<'py>(
        &self,
        py: Python<'py>,
        bags: &Bags,
    ) -> PyResult<(Vec<usize>, Bound<'py, PyArray2<f64>>)> {
        let data = Arc::clone(&bags.data);
        if data.dim() != self.model().input_dim() {
            return Err(PyValueError::new_err(format!(
                "{} features but the model takes {}",
                data.dim(),
                self.model().input_dim()
            )));
        }
        let (labels, scores, width) = py
            .detach(|| -> mil_toolkit::Result<_> {
                let model = self.model();
                let mut labels = Vec::with_capacity(data.n_bags());
                let mut scores = Vec::new();
                let mut width = 0;
                for b in 0..data.n_bags() {
                    let (decision, s) = export::core_classify(&model, data.bag(b))?;
                    labels.push(decision.label);
                    width = s.len();
                    scores.extend(s.iter().map(|&v| f64::from(v)));
                }
                Ok((labels, scores, width))
            })
            .map_err(py_err)?;
        Ok((labels, matrix(py, data.n_bags(), width, scores)))
    }
}
