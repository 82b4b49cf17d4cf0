//! Citation-kNN's attribute scalings fitted on the training bags: none, z-score, and Weka's min-max over [0.95, 1.05].

use super::*;

/// A fitted scaling of the attributes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Scaler {
    /// Weka's lo = 0.95·min, hi = 1.05·max, kept as Weka keeps them (`m_Min`, `m_Max`).
    Weka {
        /// lo per attribute.
        lo: Vec<f64>,
        /// hi per attribute.
        hi: Vec<f64>,
    },
    /// z-score.
    Zscore(ZScore),
    /// Identity.
    None,
}

pub(super) const WEKA_LO: f64 = 0.95;
pub(super) const WEKA_HI: f64 = 1.05;

impl Scaler {
    /// Fits on the instances of the bags `train`.
    pub fn fit(kind: Scaling, data: &Dataset, train: &[usize]) -> Scaler {
        match kind {
            Scaling::Weka => {
                let mut min = vec![f64::INFINITY; data.dim()];
                let mut max = vec![f64::NEG_INFINITY; data.dim()];
                for &b in train {
                    for x in data.bag(b).instances() {
                        for (j, &v) in x.iter().enumerate() {
                            min[j] = min[j].min(v);
                            max[j] = max[j].max(v);
                        }
                    }
                }
                Scaler::Weka {
                    lo: min.iter().map(|m| m * WEKA_LO).collect(),
                    hi: max.iter().map(|m| m * WEKA_HI).collect(),
                }
            }
            Scaling::Zscore | Scaling::Auto => Scaler::Zscore(ZScore::fit(data.select(train))),
            Scaling::None => Scaler::None,
        }
    }

    /// Weka's `updateNormalization`: widens lo/hi with the instances of one bag, with
    /// Weka's arithmetic (lo/0.95 recovers the minimum, then ×0.95 again).
    pub(super) fn widen(&mut self, data: &Dataset, bag: usize) {
        if let Scaler::Weka { lo, hi } = self {
            for j in 0..data.dim() {
                let mut min = lo[j] / WEKA_LO;
                let mut max = hi[j] / WEKA_HI;
                for x in data.bag(bag).instances() {
                    if x[j] < min {
                        min = x[j];
                    }
                    if x[j] > max {
                        max = x[j];
                    }
                }
                lo[j] = min * WEKA_LO;
                hi[j] = max * WEKA_HI;
            }
        }
    }

    /// `bags` read through this scaling (unchanged for [`Scaler::None`], which maps
    /// nothing: its rows are then read in place).
    pub(super) fn read<'a>(&'a self, bags: BagSet<'a>) -> BagSet<'a> {
        match self {
            Scaler::None => bags,
            _ => bags.scaled(self),
        }
    }

    /// Writes instance `x` scaled into `out`.
    pub fn scale_row(&self, x: &[f64], out: &mut [f64]) {
        match self {
            Scaler::Weka { lo, hi } => {
                for (j, (o, v)) in out.iter_mut().zip(x).enumerate() {
                    // Weka's m_Diffs = max·1.05 − min·0.95; a zero (constant zero
                    // attribute) would make every distance NaN: it contributes nothing.
                    let diff = hi[j] - lo[j];
                    *o = if diff != 0.0 && diff.is_finite() {
                        (v - lo[j]) / diff
                    } else {
                        0.0
                    };
                }
            }
            Scaler::Zscore(z) => z.apply_row(x, out),
            Scaler::None => out.copy_from_slice(x),
        }
    }

    /// The scaled features of the given bags, in that order (a new data set).
    #[cfg(test)]
    pub(super) fn apply(&self, data: &Dataset, bags: &[usize]) -> Result<Dataset> {
        let picked = data.copy_bags(bags);
        let dim = data.dim();
        let mut feats = picked.features().to_vec();
        for (x, out) in picked
            .features()
            .chunks_exact(dim)
            .zip(feats.chunks_exact_mut(dim))
        {
            self.scale_row(x, out);
        }
        picked.with_features(dim, feats)
    }
}

impl RowMap for Scaler {
    fn map_row(&self, x: &[f64], out: &mut [f64]) {
        self.scale_row(x, out)
    }
}
