//! miVLAD and miFV (Wei, Wu & Zhou, "Scalable algorithms for multi-instance learning",
//! IEEE TNNLS 2017): each bag becomes one fixed-length vector from a codebook learnt on
//! the training instances, and a linear learner is trained on those vectors.
//!
//! Instances are z-scored with the training instances' statistics first.
//!
//! - miVLAD ([`BagEncoding::Vlad`]): k-means ([`codebook::kmeans`]) gives k centres c; a
//!   bag's vector is, centre by centre, Σ (x − c) over its instances x whose nearest
//!   centre is c (k·d values).
//! - miFV ([`BagEncoding::Fisher`]): a diagonal-covariance Gaussian mixture of K components
//!   fitted by EM from the k-means solution ([`codebook::Gmm`]); a bag of n instances
//!   becomes its improved Fisher vector (Perronnin, Sánchez & Mensink 2010): per
//!   component k and feature j, (1 / (n √w_k)) Σ γ_k(x) (x_j − μ_kj) / σ_kj and
//!   (1 / (n √(2 w_k))) Σ γ_k(x) ((x_j − μ_kj)² / σ²_kj − 1) (2·K·d values).
//!
//! With one codebook entry (the default) both are computed in closed form from each
//! bag's count, mean and squared deviations ([`moments`]): the same vectors up to
//! rounding, one pass over each bag.
//!
//! A coordinate whose sum is below [`CANCELLED`] of the summed magnitudes of its operands
//! (Σ |x_j| + |c_j| for miVLAD) is set to 0 first: it is rounding noise — a centre
//! holding one bag's instances only, or instances that agree on a feature, sums to 0 up
//! to rounding — which the square root would lift from 10⁻¹⁶ to 10⁻⁸ and the
//! standardisation below to unit variance, as if it were a feature.
//! Both vectors then take the signed square root v ← sign(v) √|v| and the ℓ2
//! normalisation, as the paper does. The learner is ridge logistic regression — MILR with
//! one instance per bag ([`crate::classifier::milr`]), on standardised vectors — where
//! the paper trains a linear SVM: it gives probabilities and multi-class (one-vs-rest)
//! with the same code as SimpleMI.
//!
//! A bag's decision is linear in its normalised vector, not in its instances:
//! [`BagModel::explain`] scores each instance by w · (its own part of the bag's vector
//! before the normalisations), [`InstanceScore::Contribution`].

pub mod codebook;
pub mod moments;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::imbalance::ClassWeight;
use super::milr::{Milr, MilrModel, Pooling};
use super::{check_dim, BagModel, BagScores, Classifier, FoldScorer};
use crate::data::standardize::ZScore;
use crate::data::{Bag, Bags, Dataset};
use crate::error::{Error, Result};
use crate::explain::{Explanation, InstanceScore};
use crate::params::{check_count, Estimate, Shape};
use codebook::{Convergence, Gmm, Stop};
use moments::BagMoments;

/// The largest codebook (k centres or K components).
pub const MAX_CODEBOOK: usize = 10_000;

/// The most k-means (and EM) iterations.
pub const MAX_ITERATIONS: usize = 100_000;

/// How a bag becomes one vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BagEncoding {
    /// miVLAD: the sums of the instances' residuals to their nearest k-means centres.
    #[default]
    Vlad,
    /// miFV: the Fisher vector of the bag under a diagonal Gaussian mixture.
    Fisher,
}

mil_core::keywords!(BagEncoding {
    BagEncoding::Vlad => "vlad": "sums of the residuals to the nearest k-means centres (miVLAD)",
    BagEncoding::Fisher => "fisher": "the Fisher vector under a diagonal Gaussian mixture (miFV)",
});

impl BagEncoding {
    /// The length of a bag's vector with a codebook of `k` entries in `dim` features.
    pub fn width(self, k: usize, dim: usize) -> usize {
        match self {
            BagEncoding::Vlad => k * dim,
            BagEncoding::Fisher => 2 * k * dim,
        }
    }
}

/// miVLAD / miFV hyper-parameters.
///
/// ```
/// use mil_toolkit::classifier::mi_vlad::{BagEncoding, MiVlad};
/// use mil_toolkit::classifier::{BagModel, Classifier};
///
/// let data = mil_toolkit::data::load("musk1")?;
/// let model = MiVlad::default().encoding(BagEncoding::Fisher).codebook(2).fit(&data)?;
/// let scores = model.scores(&data)?;
/// // Probabilities of [negative, positive] per bag.
/// assert!((scores.row(0).iter().sum::<f64>() - 1.0).abs() < 1e-9);
/// # Ok::<(), mil_toolkit::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MiVlad {
    /// miVLAD or miFV.
    pub encoding: BagEncoding,
    /// Codebook size: k-means centres (miVLAD) or mixture components (miFV).
    pub codebook: usize,
    /// Ridge λ of the logistic regression on the standardised bag vectors.
    pub ridge: f64,
    /// Bound on the k-means iterations, and on the EM iterations of miFV.
    pub max_iter: usize,
    /// Seed of the k-means++ seeding.
    pub seed: u64,
    /// Weight of each bag's likelihood term by its class.
    #[serde(default, skip_serializing_if = "ClassWeight::is_none")]
    pub class_weight: ClassWeight,
}

impl Default for MiVlad {
    fn default() -> Self {
        MiVlad {
            encoding: BagEncoding::Vlad,
            codebook: 1,
            ridge: 1.0,
            max_iter: 100,
            seed: 1,
            class_weight: ClassWeight::None,
        }
    }
}

crate::params::setters!(MiVlad {
    encoding: BagEncoding,
    codebook: usize,
    ridge: f64,
    max_iter: usize,
    seed: u64,
    class_weight: ClassWeight,
});

impl MiVlad {
    /// The settings an inner CV tries when asked to tune miVLAD or miFV (the `auto`
    /// classifier, `mil cv --tune`): the ridge kept, 0.1 and 10.
    pub fn default_grid(&self) -> Vec<MiVlad> {
        crate::classifier::simple_mi::ridge_grid(self.ridge, &[0.1, 10.0], |r| self.ridge(r))
    }
}

impl MiVlad {
    /// miVLAD with its defaults.
    pub fn vlad() -> Self {
        MiVlad::default()
    }

    /// miFV with its defaults.
    pub fn fisher() -> Self {
        MiVlad::default().encoding(BagEncoding::Fisher)
    }

    /// Checks the hyper-parameters alone, before any data is read (codebook and
    /// iterations within their bounds, ridge finite and ≥ 0, class weights valid).
    pub fn check(&self) -> Result<()> {
        check_count("codebook", self.codebook, MAX_CODEBOOK)?;
        check_count("max_iter", self.max_iter, MAX_ITERATIONS)?;
        self.logistic().check()
    }

    /// The logistic regression fitted on the bag vectors.
    fn logistic(&self) -> Milr {
        Milr::ridge_logistic(self.ridge, self.class_weight)
    }
}

/// What miVLAD or miFV holds beyond the data: the encoded bags (k·d, or 2·K·d, values
/// per bag) and the z-scored training instances; k-means and EM visit every instance and
/// codebook entry once per iteration.
pub fn footprint(
    shape: Shape,
    encoding: BagEncoding,
    codebook: usize,
    max_iter: usize,
) -> Estimate {
    let width = encoding.width(codebook, shape.dim) as f64;
    Estimate::values(
        shape.bags as f64 * width + shape.values(),
        max_iter as f64 * shape.values() * codebook as f64,
    )
}

/// 2⁻³²: below this share of the summed magnitudes of its operands, a coordinate of a
/// bag's vector is cancellation, not signal — far above the rounding of `f64` sums of up
/// to 2²⁰ terms (n·2⁻⁵³ relative), far below the precision of measured features.
pub const CANCELLED: f64 = 1.0 / 4_294_967_296.0;

/// The learnt codebook, in z-scored units.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Codebook {
    /// miVLAD's k-means centres, row-major k × d.
    Vlad {
        /// The centres.
        centres: Vec<f64>,
    },
    /// miFV's Gaussian mixture.
    Fisher(Gmm),
}

impl Codebook {
    /// Number of entries (centres or components).
    pub fn len(&self, dim: usize) -> usize {
        match self {
            Codebook::Vlad { centres } => centres.len() / dim,
            Codebook::Fisher(gmm) => gmm.len(),
        }
    }

    fn encoding(&self) -> BagEncoding {
        match self {
            Codebook::Vlad { .. } => BagEncoding::Vlad,
            Codebook::Fisher(_) => BagEncoding::Fisher,
        }
    }

    /// Adds the part of one z-scored instance `x` of a bag of `n` instances to `out`
    /// (the bag's vector before the normalisations is the sum of its instances' parts),
    /// and the magnitudes of the operands of each term to `magnitude`.
    pub fn add_instance(&self, x: &[f64], n: usize, out: &mut [f64], magnitude: &mut [f64]) {
        let dim = x.len();
        match self {
            Codebook::Vlad { centres } => {
                let c = codebook::nearest(centres, dim, x);
                let block = c * dim..(c + 1) * dim;
                let (out, magnitude) = (&mut out[block.clone()], &mut magnitude[block]);
                for (((o, m), xj), cj) in out
                    .iter_mut()
                    .zip(magnitude)
                    .zip(x)
                    .zip(&centres[c * dim..])
                {
                    *o += xj - cj;
                    *m += xj.abs() + cj.abs();
                }
            }
            Codebook::Fisher(gmm) => {
                let k = gmm.len();
                // The posteriors on the stack for the usual few components.
                let (mut small, mut large) = ([0.0; 16], Vec::new());
                let gamma = if k <= small.len() {
                    &mut small[..k]
                } else {
                    large.resize(k, 0.0);
                    &mut large[..]
                };
                gmm.posteriors(x, gamma);
                let (means, vars) = out.split_at_mut(k * dim);
                let (mean_mag, var_mag) = magnitude.split_at_mut(k * dim);
                for c in 0..k {
                    let w = gmm.weights[c];
                    let a = gamma[c] / (n as f64 * w.sqrt());
                    let b = gamma[c] / (n as f64 * (2.0 * w).sqrt());
                    for j in 0..dim {
                        let (mu, var) = (gmm.means[c * dim + j], gmm.variances[c * dim + j]);
                        let z = (x[j] - mu) / var.sqrt();
                        means[c * dim + j] += a * z;
                        vars[c * dim + j] += b * (z * z - 1.0);
                        mean_mag[c * dim + j] += a * (x[j].abs() + mu.abs()) / var.sqrt();
                        var_mag[c * dim + j] += b * (z * z + 1.0);
                    }
                }
            }
        }
    }
}

/// A bag's normalised vector from its sums and their operands' magnitudes
/// ([`Encoder::vector`]): the coordinates that cancel to rounding noise ([`CANCELLED`]) set
/// to 0, then [`normalise`].
fn normalised((mut v, magnitude): (Vec<f64>, Vec<f64>)) -> Vec<f64> {
    for (x, m) in v.iter_mut().zip(magnitude) {
        if is_cancelled(*x, m) {
            *x = 0.0;
        }
    }
    normalise(&mut v);
    v
}

/// Whether a sum is rounding noise: at most [`CANCELLED`] of its operands' summed
/// magnitudes `magnitude`.
fn is_cancelled(sum: f64, magnitude: f64) -> bool {
    sum.abs() <= CANCELLED * magnitude
}

/// Signed square root then ℓ2 normalisation, in place (a zero vector stays zero).
pub fn normalise(v: &mut [f64]) {
    for x in v.iter_mut() {
        *x = x.signum() * x.abs().sqrt();
    }
    let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

/// A bag's encoder: the z-score of the training instances and the codebook.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Encoder {
    /// The training instances' feature means (the z-score's centre).
    pub mean: Vec<f64>,
    /// Their standard deviations; a feature of deviation 0 is set to 0.
    pub sd: Vec<f64>,
    /// The codebook in z-scored units.
    pub codebook: Codebook,
}

impl Encoder {
    /// Feature dimension of the instances.
    pub fn dim(&self) -> usize {
        self.mean.len()
    }

    /// The length of a bag's vector.
    pub fn width(&self) -> usize {
        let dim = self.dim();
        self.codebook.encoding().width(self.codebook.len(dim), dim)
    }

    /// The part of one instance of a bag of `n` instances (before the normalisations).
    pub fn instance_part(&self, x: &[f64], n: usize) -> Vec<f64> {
        let mut part = vec![0.0; self.width()];
        let mut magnitude = vec![0.0; self.width()];
        let z = zscore(x, &self.mean, &self.sd);
        self.codebook.add_instance(&z, n, &mut part, &mut magnitude);
        part
    }

    /// Whether the codebook has one entry: the vectors in closed form from each bag's
    /// moments ([`moments`]).
    fn one_entry(&self) -> bool {
        self.codebook.len(self.dim()) == 1
    }

    /// The bag's vector before the normalisations (the sum of its instances' parts), and
    /// the summed magnitudes of each coordinate's operands.
    fn sums(&self, bag: Bag<'_>) -> (Vec<f64>, Vec<f64>) {
        let dim = self.dim();
        let mut z = vec![0.0; bag.len() * dim];
        for (x, out) in bag.instances().zip(z.chunks_exact_mut(dim)) {
            zscore_into(x, &self.mean, &self.sd, out);
        }
        self.sums_zscored(&z)
    }

    /// [`Encoder::sums`] of a bag whose instances are already z-scored (row-major).
    fn sums_zscored(&self, z: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let mut v = vec![0.0; self.width()];
        let mut magnitude = vec![0.0; self.width()];
        let n = z.len() / self.dim();
        for zi in z.chunks_exact(self.dim()) {
            self.codebook.add_instance(zi, n, &mut v, &mut magnitude);
        }
        (v, magnitude)
    }

    /// The bag's vector before the normalisations (the sum of its instances' parts).
    pub fn raw_vector(&self, bag: Bag<'_>) -> Vec<f64> {
        if self.one_entry() {
            moments::vector(&BagMoments::of(bag), self, true)
        } else {
            self.sums(bag).0
        }
    }

    /// The bag's normalised vector, what the logistic regression reads: the coordinates
    /// that cancel to rounding noise ([`CANCELLED`]) set to 0, then [`normalise`].
    pub fn vector(&self, bag: Bag<'_>) -> Vec<f64> {
        if self.one_entry() {
            moments::vector(&BagMoments::of(bag), self, false)
        } else {
            normalised(self.sums(bag))
        }
    }

    /// The bags `bags` of `data` as a data set of one vector per bag (with their labels
    /// when `labelled`).
    fn vectors(&self, data: &Dataset, bags: &[usize], labelled: bool) -> Result<Dataset> {
        let rows = bags.par_iter().map(|&b| self.vector(data.bag(b))).collect();
        self.dataset(data, bags, rows, labelled)
    }

    /// [`Encoder::vectors`] of the training bags `bags`, their instances already z-scored
    /// one bag after another in `z` (as the fit has them).
    fn vectors_zscored(&self, data: &Dataset, bags: &[usize], z: &[f64]) -> Result<Dataset> {
        let mut starts = vec![0];
        for &b in bags {
            starts.push(starts[starts.len() - 1] + data.bag(b).len() * self.dim());
        }
        let rows = starts
            .par_windows(2)
            .map(|w| normalised(self.sums_zscored(&z[w[0]..w[1]])))
            .collect();
        self.dataset(data, bags, rows, true)
    }

    /// [`Encoder::vectors`] from the bags' moments (`moments[i]` those of `bags[i]`),
    /// under a codebook of one entry.
    fn vectors_from_moments(
        &self,
        data: &Dataset,
        bags: &[usize],
        moments: &[&BagMoments],
        labelled: bool,
    ) -> Result<Dataset> {
        let rows = moments
            .iter()
            .map(|m| moments::vector(m, self, false))
            .collect();
        self.dataset(data, bags, rows, labelled)
    }

    /// The vectors `rows` of the bags `bags` of `data` as a data set.
    fn dataset(
        &self,
        data: &Dataset,
        bags: &[usize],
        rows: Vec<Vec<f64>>,
        labelled: bool,
    ) -> Result<Dataset> {
        Dataset::new(
            data.name(),
            self.width(),
            rows.concat(),
            (0..=bags.len()).collect(),
            bags.iter().map(|&b| data.bag_id(b).to_string()).collect(),
            data.labels()
                .filter(|_| labelled)
                .map(|l| bags.iter().map(|&b| l[b]).collect()),
            data.class_names().to_vec(),
        )
    }
}

/// A fitted miVLAD or miFV.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MiVladModel {
    /// Hyper-parameters.
    pub params: MiVlad,
    /// The z-score and the codebook.
    pub encoder: Encoder,
    /// How k-means ended (0 iterations, converged, for one entry: solved in closed form).
    pub kmeans: Convergence,
    /// How EM ended (miFV; 0 iterations, converged, for one component).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub em: Option<Convergence>,
    /// The logistic regression on the normalised bag vectors.
    pub logistic: MilrModel,
}

/// `x` z-scored with `mean` and `sd` (a feature of deviation 0 becomes 0).
fn zscore(x: &[f64], mean: &[f64], sd: &[f64]) -> Vec<f64> {
    let mut z = vec![0.0; x.len()];
    zscore_into(x, mean, sd, &mut z);
    z
}

/// [`zscore`] into `out` (one allocation per bag, not per instance, on the hot paths).
fn zscore_into(x: &[f64], mean: &[f64], sd: &[f64], out: &mut [f64]) {
    for (o, (v, (m, s))) in out.iter_mut().zip(x.iter().zip(mean.iter().zip(sd))) {
        *o = if *s > 0.0 { (v - m) / s } else { 0.0 };
    }
}

impl Classifier for MiVlad {
    type Model = MiVladModel;

    fn fit<'a>(&self, train: impl Into<Bags<'a>>) -> Result<MiVladModel> {
        let view = train.into();
        let (data, train) = (view.dataset(), &*view.indices());
        let n = self.check_training(data, train)?;
        if self.closed_form() {
            let moments: Vec<BagMoments> = train
                .par_iter()
                .map(|&b| BagMoments::of(data.bag(b)))
                .collect();
            let moments: Vec<&BagMoments> = moments.iter().collect();
            return self.fit_moments(data, train, &moments);
        }
        let dim = data.dim();
        // A feature constant on the training instances must get deviation 0, not the
        // round-off spread of its mean (~10⁻¹⁶): dividing by that spread sends a test
        // instance whose value differs to ~10¹⁶ and one whose value is equal to ±1.
        let ZScore { mean, std: sd } = ZScore::fit(view.clone());
        let mut x = vec![0.0; n * dim];
        let instances = train.iter().flat_map(|&b| data.bag(b).instances());
        for (xi, out) in instances.zip(x.chunks_exact_mut(dim)) {
            zscore_into(xi, &mean, &sd, out);
        }
        let (centres, kmeans) = codebook::kmeans(&x, dim, self.codebook, self.max_iter, self.seed);
        let (codebook, em) = match self.encoding {
            BagEncoding::Vlad => (Codebook::Vlad { centres }, None),
            BagEncoding::Fisher => {
                let (gmm, em) = Gmm::from_kmeans(&x, dim, &centres).em(&x, self.max_iter);
                (Codebook::Fisher(gmm), Some(em))
            }
        };
        let encoder = Encoder { mean, sd, codebook };
        let vectors = encoder.vectors_zscored(data, train, &x)?;
        let logistic = self.logistic().fit_weighted(Bags::all(&vectors), None)?;
        Ok(MiVladModel {
            params: *self,
            encoder,
            kmeans,
            em,
            logistic,
        })
    }
}

impl MiVlad {
    /// Whether the fit is in closed form from the bags' moments ([`moments`]): a
    /// codebook of one entry.
    fn closed_form(&self) -> bool {
        self.codebook == 1
    }

    /// Checks the parameters and the training bags `train` of `data` (labels of at least
    /// two classes, no more codebook entries than instances); returns the instance count.
    fn check_training(&self, data: &Dataset, train: &[usize]) -> Result<usize> {
        self.check()?;
        data.training_labels(train, 2)?;
        let n: usize = train.iter().map(|&b| data.bag(b).len()).sum();
        if self.codebook > n {
            return Err(Error::parameter(
                "codebook",
                self.codebook,
                format!("must not exceed the {n} training instances"),
            ));
        }
        Ok(n)
    }

    /// The closed-form fit with one codebook entry on the training bags `train` of
    /// `data`, `moments[i]` the moments of bag `train[i]` (already checked).
    fn fit_moments(
        &self,
        data: &Dataset,
        train: &[usize],
        moments: &[&BagMoments],
    ) -> Result<MiVladModel> {
        let dim = data.dim();
        let (mean, sd) = moments::zscore(moments, dim);
        // Solved, not iterated: the z-scored training instances' mean is 0, their
        // variance 1 (0 for a constant feature, floored).
        let solved = Convergence {
            iterations: 0,
            stop: Stop::Converged,
        };
        let (codebook, em) = match self.encoding {
            BagEncoding::Vlad => (
                Codebook::Vlad {
                    centres: vec![0.0; dim],
                },
                None,
            ),
            BagEncoding::Fisher => (
                Codebook::Fisher(Gmm {
                    weights: vec![1.0],
                    means: vec![0.0; dim],
                    variances: sd
                        .iter()
                        .map(|&s| {
                            if s > 0.0 {
                                1.0
                            } else {
                                codebook::VARIANCE_FLOOR
                            }
                        })
                        .collect(),
                }),
                Some(solved),
            ),
        };
        let encoder = Encoder { mean, sd, codebook };
        let vectors = encoder.vectors_from_moments(data, train, moments, true)?;
        let logistic = self.logistic().fit_weighted(Bags::all(&vectors), None)?;
        Ok(MiVladModel {
            params: *self,
            encoder,
            kmeans: solved,
            em,
            logistic,
        })
    }

    /// The cross-validation's shared work with one codebook entry: every bag's
    /// moments, read once; the closure fits on the bags `train` and scores the bags
    /// `test`, exactly as [`Classifier::fit`] and [`BagModel::scores`] do. `None` for
    /// the other settings.
    pub(crate) fn fold_scorer<'a>(&self, data: &'a Dataset) -> Option<FoldScorer<'a>> {
        if !self.closed_form() {
            return None;
        }
        let all: Vec<BagMoments> = (0..data.n_bags())
            .into_par_iter()
            .map(|b| BagMoments::of(data.bag(b)))
            .collect();
        let params = *self;
        Some(Box::new(move |train: &[usize], test: &[usize]| {
            params.check_training(data, train)?;
            let pick = |bags: &[usize]| bags.iter().map(|&b| &all[b]).collect::<Vec<_>>();
            let model = params.fit_moments(data, train, &pick(train))?;
            if test.is_empty() {
                return Ok(BagScores::new(model.n_classes(), Vec::new()));
            }
            let vectors = model
                .encoder
                .vectors_from_moments(data, test, &pick(test), false)?;
            model.logistic.scores(&vectors)
        }))
    }
}

impl MiVladModel {
    /// Checks a model read from a file.
    pub fn validate(&self) -> Result<()> {
        let bad = |what: String| Err(Error::Model(format!("mi-vlad: {what}")));
        self.params
            .check()
            .map_err(|e| Error::Model(format!("mi-vlad: {e}")))?;
        self.logistic.validate()?;
        let e = &self.encoder;
        let (dim, k) = (e.dim(), self.params.codebook);
        if dim == 0 || e.sd.len() != dim {
            return bad(format!("{} means and {} deviations", dim, e.sd.len()));
        }
        if e.mean.iter().chain(&e.sd).any(|v| !v.is_finite()) || e.sd.iter().any(|&s| s < 0.0) {
            return bad("the z-score must be finite with deviations ≥ 0".into());
        }
        if e.codebook.encoding() != self.params.encoding {
            return bad(format!(
                "a {} codebook for the {} encoding",
                e.codebook.encoding(),
                self.params.encoding
            ));
        }
        match &e.codebook {
            Codebook::Vlad { centres } => {
                if centres.len() != k * dim || centres.iter().any(|v| !v.is_finite()) {
                    return bad(format!("{k} finite centres of {dim} features expected"));
                }
            }
            Codebook::Fisher(gmm) => {
                let sum: f64 = gmm.weights.iter().sum();
                if gmm.weights.len() != k
                    || gmm.means.len() != k * dim
                    || gmm.variances.len() != k * dim
                    || gmm.means.iter().any(|v| !v.is_finite())
                    || gmm
                        .variances
                        .iter()
                        .any(|v| !v.is_finite() || *v < codebook::VARIANCE_FLOOR)
                    || gmm.weights.iter().any(|w| !(w.is_finite() && *w > 0.0))
                    || (sum - 1.0).abs() > 1e-9
                {
                    return bad(format!(
                        "the mixture must have {k} components of {dim} finite means, variances ≥ {} and positive weights summing to 1",
                        codebook::VARIANCE_FLOOR
                    ));
                }
            }
        }
        if self.logistic.dim != e.width() || self.logistic.params.pooling != Pooling::Mean {
            return bad(format!(
                "a logistic regression on {} features with mean pooling expected, not on {}",
                e.width(),
                self.logistic.dim
            ));
        }
        Ok(())
    }
}

impl BagModel for MiVladModel {
    fn n_classes(&self) -> usize {
        self.logistic.n_classes
    }

    fn input_dim(&self) -> usize {
        self.encoder.dim()
    }

    fn scores<'a>(&self, bags: impl Into<Bags<'a>>) -> Result<BagScores> {
        let bags = bags.into();
        let (data, bags) = (bags.dataset(), &*bags.indices());
        check_dim(data, self.input_dim())?;
        if bags.is_empty() {
            return Ok(BagScores::new(self.n_classes(), Vec::new()));
        }
        self.logistic
            .scores(&self.encoder.vectors(data, bags, false)?)
    }

    /// Each instance's w · (its part of the bag's vector before the normalisations),
    /// under the predicted class's logistic regression (the only one when binary); the
    /// witness is the largest.
    fn explain<'a>(&self, bags: impl Into<Bags<'a>>) -> Result<Vec<Explanation>> {
        let bags = bags.into();
        let labels = self.scores(bags.clone())?.labels();
        let data = bags.dataset();
        Ok(bags
            .iter()
            .zip(labels)
            .map(|(b, label)| {
                let k = if self.n_classes() == 2 { 0 } else { label };
                let w = &self.logistic.weights[k][1..];
                let bag = data.bag(b);
                let scores = bag
                    .instances()
                    .map(|x| {
                        let part = self.encoder.instance_part(x, bag.len());
                        part.iter().zip(w).map(|(p, w)| p * w).sum()
                    })
                    .collect();
                Explanation::from_scores(InstanceScore::Contribution, scores)
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    /// Random bags of 1–6 instances in `dim` features; a positive bag holds at least one
    /// instance near (3, 3, …), the others sit in a cloud around 0.
    fn random_set(seed: u64, n_bags: usize, dim: usize) -> Dataset {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let (mut x, mut starts, mut labels) = (Vec::new(), vec![0], Vec::new());
        for b in 0..n_bags {
            let len = rng.random_range(1..7);
            let positive = b % 2 == 0;
            for i in 0..len {
                let shift = if positive && i == 0 { 3.0 } else { 0.0 };
                for _ in 0..dim {
                    x.push(shift + rng.random_range(-1.0..1.0));
                }
            }
            starts.push(starts.last().unwrap() + len);
            labels.push(usize::from(positive));
        }
        Dataset::new(
            "r",
            dim,
            x,
            starts,
            (0..n_bags).map(|b| b.to_string()).collect(),
            Some(labels),
            vec!["0".into(), "1".into()],
        )
        .unwrap()
    }

    /// An encoder with the identity z-score.
    fn identity(dim: usize, codebook: Codebook) -> Encoder {
        Encoder {
            mean: vec![0.0; dim],
            sd: vec![1.0; dim],
            codebook,
        }
    }

    #[test]
    fn vlad_of_a_small_bag_by_hand() {
        // Centres (0, 0) and (10, 0); instances (1, 2) and (-1, 1) are nearest the first,
        // (9, -3) the second.
        let encoder = identity(
            2,
            Codebook::Vlad {
                centres: vec![0.0, 0.0, 10.0, 0.0],
            },
        );
        let rows = [1.0, 2.0, 9.0, -3.0, -1.0, 1.0];
        let bag = Bag::from_rows(&rows, 2);
        let raw = encoder.raw_vector(bag);
        assert_eq!(raw, vec![0.0, 3.0, -1.0, -3.0]);
        // sign·√|v| = (0, √3, −1, −√3), of norm √7.
        let want = [0.0, 3f64.sqrt(), -1.0, -(3f64.sqrt())].map(|v| v / 7f64.sqrt());
        for (got, want) in encoder.vector(bag).iter().zip(want) {
            assert!((got - want).abs() < 1e-15, "{got} vs {want}");
        }
    }

    #[test]
    fn a_centre_of_one_bag_sums_to_zero_not_to_rounding_noise() {
        // The second centre is the mean of the bag's three instances, so the bag's block is
        // 0 in exact arithmetic; in f64 it is rounding noise, which the signed square root
        // would lift to ~1e-8 of the vector.
        let rows = [0.1, 0.7, 0.2, 0.3, 0.3, 0.1, -9.0, 5.0];
        let bag = Bag::from_rows(&rows, 2);
        let mean = |j: usize| (rows[j] + rows[2 + j] + rows[4 + j]) / 3.0;
        let encoder = identity(
            2,
            Codebook::Vlad {
                centres: vec![-9.5, 5.5, mean(0), mean(1)],
            },
        );
        let raw = encoder.raw_vector(bag);
        assert!(
            raw[2..].iter().any(|&v| v != 0.0),
            "no rounding noise: {raw:?}"
        );
        assert!(raw[2..].iter().all(|&v| v.abs() < 1e-15), "{raw:?}");
        let v = encoder.vector(bag);
        assert_eq!(&v[2..], &[0.0, 0.0]);
        // The first block, (0.5, −0.5), is kept: (√0.5, −√0.5) normalised.
        let half = 0.5f64.sqrt();
        assert!(
            (v[0] - half).abs() < 1e-15 && (v[1] + half).abs() < 1e-15,
            "{v:?}"
        );
    }

    /// (1/n) Σ log p(x) of the bag's instances under `gmm`.
    fn mean_loglik(gmm: &Gmm, rows: &[f64]) -> f64 {
        let mut g = vec![0.0; gmm.len()];
        let n = rows.len() / gmm.dim();
        rows.chunks_exact(gmm.dim())
            .map(|x| gmm.posteriors(x, &mut g))
            .sum::<f64>()
            / n as f64
    }

    #[test]
    fn fisher_vector_is_the_scaled_gradient_of_the_log_likelihood() {
        // G_μ = σ/√w ∂L/∂μ and G_σ = σ/√(2w) ∂L/∂σ, L the bag's mean log-likelihood:
        // checked against central finite differences on random mixtures and bags.
        for seed in 0..5 {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
            let (k, dim, n) = (3, 2, 4);
            let w: Vec<f64> = (0..k).map(|_| rng.random_range(0.2..1.0)).collect();
            let total: f64 = w.iter().sum();
            let gmm = Gmm {
                weights: w.iter().map(|v| v / total).collect(),
                means: (0..k * dim).map(|_| rng.random_range(-1.0..1.0)).collect(),
                variances: (0..k * dim).map(|_| rng.random_range(0.5..2.0)).collect(),
            };
            let rows: Vec<f64> = (0..n * dim).map(|_| rng.random_range(-2.0..2.0)).collect();
            let encoder = identity(dim, Codebook::Fisher(gmm.clone()));
            let fv = encoder.raw_vector(Bag::from_rows(&rows, dim));
            let h = 1e-5;
            for c in 0..k {
                for j in 0..dim {
                    let i = c * dim + j;
                    let sigma = gmm.variances[i].sqrt();
                    let (mut plus, mut minus) = (gmm.clone(), gmm.clone());
                    plus.means[i] += h;
                    minus.means[i] -= h;
                    let d_mu = (mean_loglik(&plus, &rows) - mean_loglik(&minus, &rows)) / (2.0 * h);
                    let want = sigma / gmm.weights[c].sqrt() * d_mu;
                    assert!(
                        (fv[i] - want).abs() < 1e-7,
                        "seed {seed} μ[{c},{j}]: {} vs {want}",
                        fv[i]
                    );
                    let (mut plus, mut minus) = (gmm.clone(), gmm.clone());
                    plus.variances[i] = (sigma + h) * (sigma + h);
                    minus.variances[i] = (sigma - h) * (sigma - h);
                    let d_sigma =
                        (mean_loglik(&plus, &rows) - mean_loglik(&minus, &rows)) / (2.0 * h);
                    let want = sigma / (2.0 * gmm.weights[c]).sqrt() * d_sigma;
                    let got = fv[k * dim + i];
                    assert!(
                        (got - want).abs() < 1e-7,
                        "seed {seed} σ[{c},{j}]: {got} vs {want}"
                    );
                }
            }
        }
    }

    #[test]
    fn kmeans_finds_separated_groups_and_em_does_not_lower_the_likelihood() {
        // Three tight groups far apart: k-means++ seeds one centre in each, and the
        // centres are the groups' means.
        for seed in 0..10 {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(100 + seed);
            let origins = [[0.0, 0.0], [50.0, 0.0], [0.0, 50.0]];
            let mut x = Vec::new();
            let mut sums = [[0.0; 2]; 3];
            for i in 0..30 {
                let g = i % 3;
                for j in 0..2 {
                    let v = origins[g][j] + rng.random_range(-1.0..1.0);
                    sums[g][j] += v;
                    x.push(v);
                }
            }
            let (centres, how) = codebook::kmeans(&x, 2, 3, 100, seed);
            assert_eq!(how.stop, codebook::Stop::Converged);
            for sum in sums {
                let mean = [sum[0] / 10.0, sum[1] / 10.0];
                let hit = centres
                    .chunks_exact(2)
                    .any(|c| (c[0] - mean[0]).abs() < 1e-9 && (c[1] - mean[1]).abs() < 1e-9);
                assert!(hit, "seed {seed}: no centre at {mean:?} in {centres:?}");
            }
            let start = Gmm::from_kmeans(&x, 2, &centres);
            let (fitted, _) = start.clone().em(&x, 50);
            assert!(mean_loglik(&fitted, &x) >= mean_loglik(&start, &x) - 1e-12);
        }
    }

    /// The data set with every bag's instances in reverse order.
    fn reversed(data: &Dataset) -> Dataset {
        let mut x = Vec::new();
        for b in 0..data.n_bags() {
            let bag = data.bag(b);
            for i in (0..bag.len()).rev() {
                x.extend_from_slice(bag.instance(i));
            }
        }
        data.with_features(data.dim(), x).unwrap()
    }

    #[test]
    fn instance_order_changes_no_vector_and_no_score() {
        for seed in 0..4 {
            let data = random_set(seed, 30, 3);
            let back = reversed(&data);
            for params in [MiVlad::vlad().codebook(3), MiVlad::fisher().codebook(2)] {
                let model = params.seed(seed).fit(&data).unwrap();
                let (a, b) = (model.scores(&data).unwrap(), model.scores(&back).unwrap());
                for bag in 0..data.n_bags() {
                    let (u, v) = (
                        model.encoder.vector(data.bag(bag)),
                        model.encoder.vector(back.bag(bag)),
                    );
                    // Equal up to the order of each sum.
                    assert!(u.iter().zip(&v).all(|(p, q)| (p - q).abs() < 1e-12));
                    assert!((a.row(bag)[1] - b.row(bag)[1]).abs() < 1e-9);
                }
            }
        }
    }

    #[test]
    fn one_entry_in_closed_form_is_the_definition() {
        // The definition: z-score the training instances (ZScore::fit), run k-means with
        // one centre (and EM with one component from it), and sum each instance's part
        // (Encoder::sums). The closed form agrees to rounding on every bag; the centre is
        // 0 and the component's variances 1 (the floor for a constant feature).
        let musk1 = crate::data::load("musk1").unwrap();
        let sets = (0..6).map(|seed| random_set(seed, 25, 1 + seed as usize % 4));
        for data in sets.chain([with_constant(&musk1, 0.1)]) {
            let dim = data.dim();
            let ZScore { mean, std } = ZScore::fit(&data);
            let z: Vec<f64> = data
                .features()
                .chunks_exact(dim)
                .flat_map(|x| zscore(x, &mean, &std))
                .collect();
            let (centre, _) = codebook::kmeans(&z, dim, 1, 100, 1);
            let (gmm, _) = Gmm::from_kmeans(&z, dim, &centre).em(&z, 100);
            for (params, definition) in [
                (
                    MiVlad::vlad(),
                    Codebook::Vlad {
                        centres: centre.clone(),
                    },
                ),
                (MiVlad::fisher(), Codebook::Fisher(gmm.clone())),
            ] {
                let model = params.fit(&data).unwrap();
                let e = &model.encoder;
                for j in 0..dim {
                    let scale = mean[j].abs().max(std[j]).max(1e-300);
                    assert!((e.mean[j] - mean[j]).abs() <= 1e-12 * scale, "{j}");
                    assert!((e.sd[j] - std[j]).abs() <= 1e-12 * scale, "{j}");
                    assert_eq!(e.sd[j] == 0.0, std[j] == 0.0, "{j}");
                }
                match &e.codebook {
                    Codebook::Vlad { centres } => {
                        assert!(centres
                            .iter()
                            .zip(&centre)
                            .all(|(a, b)| (a - b).abs() < 1e-12))
                    }
                    Codebook::Fisher(fitted) => {
                        assert_eq!(fitted.weights, gmm.weights);
                        assert!(fitted
                            .means
                            .iter()
                            .zip(&gmm.means)
                            .all(|(a, b)| (a - b).abs() < 1e-12));
                        let close = |(a, b): (&f64, &f64)| (a - b).abs() < 1e-12;
                        assert!(fitted.variances.iter().zip(&gmm.variances).all(close));
                    }
                }
                let reference = Encoder {
                    mean: mean.clone(),
                    sd: std.clone(),
                    codebook: definition,
                };
                for b in 0..data.n_bags() {
                    let bag = data.bag(b);
                    let (want, magnitude) = reference.sums(bag);
                    let raw = e.raw_vector(bag);
                    for (j, (got, want)) in raw.iter().zip(&want).enumerate() {
                        assert!(
                            (got - want).abs() <= 1e-10 * (1.0 + magnitude[j]),
                            "{} {:?} bag {b} coordinate {j}: {got} vs {want}",
                            data.name(),
                            params.encoding,
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn one_entry_is_scale_free_to_the_bit() {
        // Scaling every feature by 2⁶⁰⁰ (values near 10¹⁸⁰, whose squares overflow)
        // scales the bags' moments and the z-score exactly, so the vectors and the model
        // are those of the unscaled data bit for bit.
        for seed in 0..4 {
            let data = random_set(seed, 30, 3);
            let big = data
                .with_features(
                    3,
                    data.features().iter().map(|v| v * 2f64.powi(600)).collect(),
                )
                .unwrap();
            for params in [MiVlad::vlad(), MiVlad::fisher()] {
                let (a, b) = (params.fit(&data).unwrap(), params.fit(&big).unwrap());
                assert_eq!(a.logistic, b.logistic, "seed {seed}");
                assert_eq!(a.encoder.codebook, b.encoder.codebook, "seed {seed}");
                for bag in 0..data.n_bags() {
                    let v = b.encoder.vector(big.bag(bag));
                    assert!(v.iter().all(|x| x.is_finite()));
                    assert_eq!(a.encoder.vector(data.bag(bag)), v, "seed {seed} bag {bag}");
                }
                assert_eq!(a.scores(&data).unwrap(), b.scores(&big).unwrap());
            }
        }
    }

    #[test]
    fn the_fold_scorer_scores_what_a_fit_scores() {
        // The cross-validation's shared moments give the fit and the scores of a
        // per-fold fit exactly, on every fold of two splits; larger codebooks have no
        // fast path.
        let musk1 = crate::data::load("musk1").unwrap();
        for data in [random_set(4, 40, 3), musk1] {
            for params in [MiVlad::vlad(), MiVlad::vlad().ridge(0.1), MiVlad::fisher()] {
                let scorer = params.fold_scorer(&data).unwrap();
                for k in [3, 5] {
                    for fold in 0..k {
                        let (test, train): (Vec<usize>, Vec<usize>) =
                            (0..data.n_bags()).partition(|b| b % k == fold);
                        let model = params.fit(Bags::picked(&data, &train[..])).unwrap();
                        let want = model.scores(Bags::picked(&data, &test[..])).unwrap();
                        assert_eq!(scorer(&train, &test).unwrap(), want, "fold {fold}/{k}");
                    }
                }
            }
        }
        assert!(MiVlad::fisher()
            .codebook(2)
            .fold_scorer(&random_set(1, 10, 2))
            .is_none());
        assert!(MiVlad::vlad()
            .codebook(2)
            .fold_scorer(&random_set(1, 10, 2))
            .is_none());
    }

    #[test]
    fn a_seed_gives_one_model_whatever_the_thread_count() {
        let data = random_set(7, 40, 4);
        for params in [
            MiVlad::vlad(),
            MiVlad::fisher(),
            MiVlad::vlad().codebook(4),
            MiVlad::fisher().codebook(3),
        ] {
            let fit = |threads: usize| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap()
                    .install(|| params.seed(11).fit(&data).unwrap())
            };
            let one = fit(1);
            assert_eq!(one, fit(1));
            assert_eq!(one, fit(3));
        }
    }

    #[test]
    fn separable_bags_are_learned() {
        // Every instance of a positive bag has its first feature in [0.5, 2.5], of a
        // negative bag in [−2.5, −0.5]: with one codebook entry, both vectors' first
        // coordinate is a positive multiple of Σ (x₀ − μ₀) / σ₀, whose sign is the label
        // when the training mean μ₀ lies in (−0.5, 0.5).
        for seed in 0..5 {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
            let (mut x, mut starts, mut labels) = (Vec::new(), vec![0], Vec::new());
            for b in 0..40 {
                let len = 2 + b % 3;
                let centre = if b % 2 == 0 { 1.5 } else { -1.5 };
                for _ in 0..len {
                    x.push(centre + rng.random_range(-1.0..1.0));
                    x.push(rng.random_range(-2.0..2.0));
                }
                starts.push(starts.last().unwrap() + len);
                labels.push(usize::from(b % 2 == 0));
            }
            let ids = (0..40).map(|b| b.to_string()).collect();
            let names = vec!["0".into(), "1".into()];
            let data = Dataset::new("sep", 2, x, starts, ids, Some(labels.clone()), names).unwrap();
            let model = MiVlad::vlad().fit(&data).unwrap();
            assert!(model.encoder.mean[0].abs() < 0.5);
            for params in [MiVlad::vlad(), MiVlad::fisher()] {
                let model = params.seed(seed).fit(&data).unwrap();
                let predicted = model.scores(&data).unwrap().labels();
                assert_eq!(predicted, labels, "seed {seed} {:?}", params.encoding);
            }
        }
    }

    #[test]
    fn instance_parts_add_up_to_the_bag_vector() {
        let data = random_set(3, 20, 3);
        for params in [MiVlad::vlad().codebook(3), MiVlad::fisher().codebook(2)] {
            let model = params.fit(&data).unwrap();
            let w = &model.logistic.weights[0][1..];
            for (b, e) in model.explain(&data).unwrap().iter().enumerate() {
                let bag = data.bag(b);
                let raw = model.encoder.raw_vector(bag);
                let mut sum = vec![0.0; raw.len()];
                for x in bag.instances() {
                    let part = model.encoder.instance_part(x, bag.len());
                    sum.iter_mut().zip(&part).for_each(|(s, p)| *s += p);
                }
                assert!(raw.iter().zip(&sum).all(|(a, b)| (a - b).abs() < 1e-12));
                let total: f64 = e.instance_scores.iter().sum();
                let want: f64 = raw.iter().zip(w).map(|(v, w)| v * w).sum();
                assert!((total - want).abs() < 1e-9 * (1.0 + want.abs()));
                assert_eq!(e.score_kind, InstanceScore::Contribution);
            }
        }
    }

    #[test]
    fn bad_parameters_and_too_large_codebooks_are_refused() {
        let data = random_set(1, 6, 2);
        let n = data.n_instances();
        let err = MiVlad::vlad().codebook(n + 1).fit(&data).unwrap_err();
        assert!(err.to_string().contains("codebook"), "{err}");
        assert!(MiVlad::fisher().codebook(n).fit(&data).is_ok());
        for bad in [
            MiVlad::vlad().codebook(0),
            MiVlad::vlad().max_iter(0),
            MiVlad::vlad().ridge(-1.0),
            MiVlad::fisher().ridge(f64::NAN),
        ] {
            assert!(bad.fit(&data).is_err(), "{bad:?}");
        }
    }

    /// `data` with one more feature, `value` on every instance.
    fn with_constant(data: &Dataset, value: f64) -> Dataset {
        let x = data
            .features()
            .chunks_exact(data.dim())
            .flat_map(|row| row.iter().copied().chain([value]))
            .collect();
        data.with_features(data.dim() + 1, x).unwrap()
    }

    #[test]
    fn a_feature_constant_in_training_is_ignored_whatever_its_test_values() {
        // 0.1 summed over the instances and divided by their number is not 0.1: a
        // deviation taken from that mean is round-off (~10⁻¹⁷), not 0.
        let data = random_set(5, 30, 3);
        let n = data.n_instances() as f64;
        assert_ne!(vec![0.1; data.n_instances()].iter().sum::<f64>() / n, 0.1);
        let train = with_constant(&data, 0.1);
        for params in [MiVlad::vlad(), MiVlad::vlad().codebook(3), MiVlad::fisher()] {
            let model = params.fit(&train).unwrap();
            assert_eq!(model.encoder.sd[3], 0.0, "{:?}", params.encoding);
            let base = model.scores(&train).unwrap();
            for value in [0.1, 0.1000001, 7.0] {
                let test = with_constant(&data, value);
                let scores = model.scores(&test).unwrap();
                for b in 0..data.n_bags() {
                    assert_eq!(scores.row(b), base.row(b), "value {value}, bag {b}");
                }
            }
        }
    }

    #[test]
    fn damaged_models_are_refused() {
        let data = random_set(2, 12, 2);
        for params in [MiVlad::vlad().codebook(2), MiVlad::fisher().codebook(2)] {
            let model = params.fit(&data).unwrap();
            assert!(model.validate().is_ok());
            let mut other = model.clone();
            other.params.encoding = match params.encoding {
                BagEncoding::Vlad => BagEncoding::Fisher,
                BagEncoding::Fisher => BagEncoding::Vlad,
            };
            assert!(other.validate().is_err());
            let mut size = model.clone();
            size.params.codebook = 3;
            assert!(size.validate().is_err());
            let mut sd = model.clone();
            sd.encoder.sd.pop();
            assert!(sd.validate().is_err());
            let mut short = model.clone();
            short.logistic.weights[0].pop();
            assert!(short.validate().is_err());
            let mut bad = model;
            match &mut bad.encoder.codebook {
                Codebook::Vlad { centres } => centres[0] = f64::NAN,
                Codebook::Fisher(gmm) => gmm.variances[0] = 0.0,
            }
            assert!(bad.validate().is_err());
        }
    }
}
