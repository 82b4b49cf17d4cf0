//! Bag clustering: M³IC-MBM (maximum margin multiple-instance clustering, [`m3ic`]) and its
//! baseline BAMIC (k-medoids over Hausdorff bag distances, [`bamic`]).
//!
//! A fitted clustering is a [`ClusterModel`]: plain weight vectors or medoid bags, saved as
//! JSON, whose assignment rule is a few loops over instances — small enough for the
//! `no_std` core to run on a device.

pub mod bamic;
pub mod m3ic;

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::data::Dataset;
use mil_core::keyword::Keyword;

use crate::distance::{bag_distance, Hausdorff};
use crate::error::{Error, Result};
use crate::explain::{Explanation, InstanceScore};

/// The clustering methods: M³IC, or BAMIC with one of the Hausdorff bag distances.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClusterMethod {
    /// Maximum margin multiple-instance clustering (Zhang et al. 2009).
    M3ic,
    /// BAMIC k-medoids with this bag distance (BAMIC1–3: min, max, avg).
    Bamic(Hausdorff),
}

impl Keyword for ClusterMethod {
    const ALL: &'static [Self] = &[
        ClusterMethod::M3ic,
        ClusterMethod::Bamic(Hausdorff::Min),
        ClusterMethod::Bamic(Hausdorff::Max),
        ClusterMethod::Bamic(Hausdorff::Avg),
    ];

    fn name(self) -> &'static str {
        match self {
            ClusterMethod::M3ic => "m3ic",
            ClusterMethod::Bamic(Hausdorff::Min) => "bamic-min",
            ClusterMethod::Bamic(Hausdorff::Max) => "bamic-max",
            ClusterMethod::Bamic(Hausdorff::Avg) => "bamic-avg",
        }
    }

    fn help(self) -> &'static str {
        match self {
            ClusterMethod::M3ic => {
                "maximum margin multiple-instance clustering (Zhang et al. 2009)"
            }
            ClusterMethod::Bamic(_) => "BAMIC k-medoids with this Hausdorff bag distance",
        }
    }
}

impl std::fmt::Display for ClusterMethod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A fitted M³IC-MBM clustering: one weight vector per cluster over the (optionally
/// standardised) features.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct M3icModel {
    /// Number of clusters.
    pub k: usize,
    /// Feature dimension of the input instances.
    pub dim: usize,
    /// w̃ = [w₁; …; w_k], `k × dim` row-major.
    pub weights: Vec<f64>,
    /// Per-feature mean subtracted before scoring (when the features were standardised).
    pub mean: Option<Vec<f64>>,
    /// Per-feature standard deviation (0 for a constant feature, which then counts as 0).
    pub std: Option<Vec<f64>>,
    /// Whether each (standardised) instance is scaled to unit length before scoring
    /// ([`m3ic::normalize_instances`]); absent in models saved before it existed.
    #[serde(default)]
    pub normalize: bool,
}

impl M3icModel {
    /// Step 14 of Table 1 for one bag given as `rows` (instances of `dim` values): the
    /// witness j* maximises max_u w_u·x_j − mean_v w_v·x_j, and the bag goes to
    /// argmax_p w_p·x_j* (the first index on ties).
    pub fn assign_bag(&self, rows: &[f64]) -> usize {
        self.witness_scores(rows).0
    }

    /// The modified margin max_u w_u·x_j − mean_v w_v·x_j of every instance j of the bag
    /// `rows` (eq. 8), whose first largest is the witness j* of step 14, as an
    /// [`Explanation`].
    pub fn explain_bag(&self, rows: &[f64]) -> Explanation {
        let margins = rows
            .chunks_exact(self.dim)
            .map(|row| {
                let s = self.instance_scores(row);
                crate::numerics::first_argmax(&s).1 - s.iter().sum::<f64>() / self.k as f64
            })
            .collect();
        Explanation::from_scores(InstanceScore::Margin, margins)
    }

    /// w_p·x for every cluster p of one raw instance `row`, after the model's z-score and
    /// unit-length scaling.
    fn instance_scores(&self, row: &[f64]) -> Vec<f64> {
        let mut x = vec![0.0; self.dim];
        for (j, v) in x.iter_mut().enumerate() {
            *v = match (&self.mean, &self.std) {
                (Some(m), Some(sd)) if sd[j] > 0.0 => (row[j] - m[j]) / sd[j],
                (Some(_), Some(_)) => 0.0,
                _ => row[j],
            };
        }
        if self.normalize {
            m3ic::unit_length(&mut x);
        }
        (0..self.k)
            .map(|p| {
                self.weights[p * self.dim..(p + 1) * self.dim]
                    .iter()
                    .zip(&x)
                    .map(|(a, b)| a * b)
                    .sum()
            })
            .collect()
    }

    /// Step 14's cluster and the scores w_p·x_j* of the witness instance j* (what the
    /// core's M³IC head reports per cluster).
    pub fn witness_scores(&self, rows: &[f64]) -> (usize, Vec<f64>) {
        let mut best = (f64::NEG_INFINITY, 0, vec![0.0; self.k]);
        for row in rows.chunks_exact(self.dim) {
            let s = self.instance_scores(row);
            let (top, max) = crate::numerics::first_argmax(&s);
            let margin = max - s.iter().sum::<f64>() / self.k as f64;
            if margin > best.0 {
                best = (margin, top, s);
            }
        }
        (best.1, best.2)
    }
}

/// A fitted BAMIC clustering: the medoid bags and the bag distance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BamicModel {
    /// The bag distance.
    pub distance: Hausdorff,
    /// Feature dimension.
    pub dim: usize,
    /// Instances of each medoid bag, row-major.
    pub medoids: Vec<Vec<f64>>,
}

/// A saved clustering (`mil cluster -o MODEL`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ClusterModel {
    /// M³IC-MBM weights.
    M3ic(M3icModel),
    /// BAMIC medoids.
    Bamic(BamicModel),
}

impl ClusterModel {
    /// The method that fitted it.
    pub fn method(&self) -> ClusterMethod {
        match self {
            ClusterModel::M3ic(_) => ClusterMethod::M3ic,
            ClusterModel::Bamic(b) => ClusterMethod::Bamic(b.distance),
        }
    }

    /// Feature dimension the model expects.
    pub fn dim(&self) -> usize {
        match self {
            ClusterModel::M3ic(m) => m.dim,
            ClusterModel::Bamic(m) => m.dim,
        }
    }

    /// Assigns every bag of `data` to a cluster.
    pub fn assign(&self, data: &Dataset) -> Result<Vec<usize>> {
        match self {
            ClusterModel::M3ic(m) => m.assign(data),
            ClusterModel::Bamic(m) => m.assign(data),
        }
    }

    /// Explains the assignment of every bag of `data`: M³IC's per-instance modified
    /// margins and witness ([`M3icModel::explain_bag`]); BAMIC's nearest medoid involves
    /// every instance and explains nothing ([`Explanation::none`]).
    pub fn explain(&self, data: &Dataset) -> Result<Vec<Explanation>> {
        check_dim(data, self.dim())?;
        Ok((0..data.n_bags())
            .map(|b| match self {
                ClusterModel::M3ic(m) => m.explain_bag(data.bag(b).as_slice()),
                ClusterModel::Bamic(_) => Explanation::none(),
            })
            .collect())
    }

    /// Writes the model as JSON, with a checksum of its content that
    /// [`ClusterModel::load`] verifies.
    pub fn save(&self, path: &Path) -> Result<()> {
        crate::model::save_with_checksum(self, path)
    }

    /// The JSON text [`ClusterModel::save`] writes.
    pub fn to_text(&self) -> Result<String> {
        crate::model::with_checksum(self)
    }

    /// Reads a model written by [`ClusterModel::save`], checking its shapes.
    pub fn load(path: &Path) -> Result<ClusterModel> {
        let text = crate::data::read_json_text(path, "a cluster model")?;
        ClusterModel::parse(&path.display().to_string(), &text)
    }

    /// Reads the text of a model written by [`ClusterModel::save`] (from the file
    /// `file`, named in every error), checking its checksum and shapes.
    pub fn parse(file: &str, text: &str) -> Result<ClusterModel> {
        let file = file.to_string();
        // The tag and the checksum first, skipping the rest unbuilt; then the model of that
        // kind straight from the text. (An internally tagged enum would buffer the whole
        // document as a tree of several times the file's size.)
        #[derive(Deserialize)]
        struct Envelope {
            kind: Option<serde_json::Value>,
            checksum: Option<serde_json::Value>,
        }
        let envelope: Envelope = serde_json::from_str(text).map_err(|e| Error::Parse {
            file: file.clone(),
            line: e.line(),
            field: format!("column {}", e.column()),
            problem: e.to_string(),
        })?;
        let malformed = |e: serde_json::Error| Error::Parse {
            file: file.clone(),
            line: 1,
            field: "model".into(),
            problem: e.to_string(),
        };
        let model = match envelope.kind.as_ref().and_then(|k| k.as_str()) {
            Some("m3ic") => ClusterModel::M3ic(serde_json::from_str(text).map_err(malformed)?),
            Some("bamic") => ClusterModel::Bamic(serde_json::from_str(text).map_err(malformed)?),
            other => {
                return Err(Error::Parse {
                    file,
                    line: 1,
                    field: "kind".into(),
                    problem: format!("expected \"m3ic\" or \"bamic\", found {other:?}"),
                })
            }
        };
        let checksum = envelope.checksum;
        crate::model::check_checksum(&model, checksum).map_err(|problem| Error::Parse {
            file: file.clone(),
            line: 1,
            field: "checksum".into(),
            problem,
        })?;
        model.validate().map_err(|e| Error::Parse {
            file,
            line: 1,
            field: "model".into(),
            problem: e.to_string(),
        })?;
        Ok(model)
    }

    /// Checks a model read from a file: shapes that assignment indexes by, finite values.
    pub fn validate(&self) -> Result<()> {
        let finite = |v: &[f64]| v.iter().all(|x| x.is_finite());
        match self {
            ClusterModel::M3ic(m) => {
                if m.k < 2 || m.dim == 0 || m.weights.len() != m.k * m.dim {
                    return Err(Error::Model(format!(
                        "weights hold {} values, expected k·dim = {}·{}",
                        m.weights.len(),
                        m.k,
                        m.dim
                    )));
                }
                let scaling_ok = match (&m.mean, &m.std) {
                    (None, None) => true,
                    (Some(a), Some(b)) => {
                        a.len() == m.dim && b.len() == m.dim && finite(a) && finite(b)
                    }
                    _ => false,
                };
                if !scaling_ok || !finite(&m.weights) {
                    return Err(Error::Model(
                        "non-finite weights or inconsistent mean/std".into(),
                    ));
                }
            }
            ClusterModel::Bamic(m) => {
                if m.dim == 0 || m.medoids.is_empty() {
                    return Err(Error::Model("no medoids".into()));
                }
                if m.medoids
                    .iter()
                    .any(|b| b.is_empty() || b.len() % m.dim != 0 || !finite(b))
                {
                    return Err(Error::Model(format!(
                        "a medoid bag is not a whole number of {}-value rows",
                        m.dim
                    )));
                }
            }
        }
        Ok(())
    }
}

impl M3icModel {
    /// Assigns every bag of `data` (step 14 of Table 1).
    pub fn assign(&self, data: &Dataset) -> Result<Vec<usize>> {
        check_dim(data, self.dim)?;
        Ok((0..data.n_bags())
            .map(|b| self.assign_bag(data.bag(b).as_slice()))
            .collect())
    }
}

impl BamicModel {
    /// Assigns every bag of `data` to its nearest medoid (the first on ties).
    pub fn assign(&self, data: &Dataset) -> Result<Vec<usize>> {
        check_dim(data, self.dim)?;
        let mut starts = vec![0];
        for m in &self.medoids {
            starts.push(starts.last().unwrap_or(&0) + m.len() / self.dim);
        }
        let medoids = Dataset::new(
            "medoids",
            self.dim,
            self.medoids.concat(),
            starts,
            (0..self.medoids.len()).map(|i| i.to_string()).collect(),
            None,
            vec![],
        )?;
        let kind = self.distance;
        Ok((0..data.n_bags())
            .map(|b| {
                (0..medoids.n_bags())
                    .map(|m| bag_distance(data.bag(b), medoids.bag(m), kind))
                    .enumerate()
                    .fold(
                        (0, f64::INFINITY),
                        |best, x| if x.1 < best.1 { x } else { best },
                    )
                    .0
            })
            .collect())
    }
}

fn check_dim(data: &Dataset, dim: usize) -> Result<()> {
    if data.dim() != dim {
        return Err(Error::data(
            data.name(),
            format!("has {} features but the model expects {dim}", data.dim()),
        ));
    }
    Ok(())
}

/// k clusters: at least 2, and at most one per bag when the bags are known.
fn check_k(k: usize, n_bags: Option<usize>) -> Result<()> {
    match n_bags {
        _ if k < 2 => Err(Error::parameter("k", k, "needs at least 2 clusters")),
        Some(n) if k > n => Err(Error::parameter(
            "k",
            k,
            format!("needs 2 ≤ k ≤ the number of bags ({n})"),
        )),
        _ => Ok(()),
    }
}
