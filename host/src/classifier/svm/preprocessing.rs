//! Attribute pre-processing of the SVM fitted on the training instances: none, Weka's min-max, and what Weka 3.6's MISMO computes.

use super::*;

/// Attribute pre-processing of the SVM, fitted on the training instances.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Preprocessing {
    /// The features as given (the box kernels discretise them; NSK z-scores them).
    #[default]
    None,
    /// Every attribute scaled to [0, 1] by the minimum and maximum over the training
    /// instances, x' = (x − min)/(max − min) (0 for a constant attribute), new bags by the
    /// same map without clipping: Weka's `Normalize` filter, MISMO's default (-N 0).
    #[serde(rename = "minmax", alias = "min-max")]
    MinMax,
    /// What Weka 3.6's MISMO actually computes: [`Preprocessing::MinMax`], and the third
    /// attribute (index 2) left out of the kernel. MISMO's kernels take dot products of a
    /// bag's instances skipping the attribute at the *outer* data set's class index, which
    /// in Weka's multi-instance layout (bag id, bag, class) is always 2; here that
    /// attribute maps to 0 (range 0), which removes it from every distance. Only for the MI
    /// kernel, to reproduce MISMO's predictions bag for bag.
    Weka,
}

mil_core::keywords!(Preprocessing {
    Preprocessing::None => "none": "the features as given",
    Preprocessing::MinMax => "minmax": "each attribute scaled to [0, 1] over the training instances (Weka MISMO's default)",
    Preprocessing::Weka => "weka": "minmax with the third attribute left out of the kernel, as Weka 3.6's MISMO computes it",
});

impl Preprocessing {
    /// The map fitted on `data` (the training bags), `None` for [`Preprocessing::None`].
    pub fn fit(self, data: &Dataset) -> Option<MinMax> {
        match self {
            Preprocessing::None => None,
            Preprocessing::MinMax => Some(MinMax::fit(data)),
            Preprocessing::Weka => {
                let mut map = MinMax::fit(data);
                if let Some(r) = map.range.get_mut(WEKA_SKIPPED_ATTRIBUTE) {
                    *r = 0.0;
                }
                Some(map)
            }
        }
    }
}

/// The instance attribute Weka's MISMO leaves out of its kernels: the class index (2) of
/// the multi-instance layout (bag id, bag, class), see [`Preprocessing::Weka`].
pub const WEKA_SKIPPED_ATTRIBUTE: usize = 2;

/// A fitted min–max map (Weka's `Normalize`): per attribute the training minimum and
/// range.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MinMax {
    /// Minimum per attribute.
    pub min: Vec<f64>,
    /// max − min per attribute (0: the attribute maps to 0).
    pub range: Vec<f64>,
}

impl MinMax {
    /// Fits on every instance of `data`.
    pub fn fit(data: &Dataset) -> MinMax {
        let d = data.dim();
        let mut min = vec![f64::INFINITY; d];
        let mut max = vec![f64::NEG_INFINITY; d];
        for x in data.features().chunks_exact(d) {
            for j in 0..d {
                min[j] = min[j].min(x[j]);
                max[j] = max[j].max(x[j]);
            }
        }
        let range = min.iter().zip(&max).map(|(a, b)| b - a).collect();
        MinMax { min, range }
    }

    /// Applies the map to every instance of `data`.
    pub fn apply(&self, data: &Dataset) -> Result<Dataset> {
        let d = data.dim();
        let mut f = data.features().to_vec();
        for x in f.chunks_exact_mut(d) {
            for ((v, lo), range) in x.iter_mut().zip(&self.min).zip(&self.range) {
                *v = if *range > 0.0 { (*v - lo) / range } else { 0.0 };
            }
        }
        data.with_features(d, f)
    }
}
