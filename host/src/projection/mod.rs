//! Linear projections fitted on training bags: y = Gᵀ(x − μ)/σ.
//!
//! Every algorithm (one module per paper) implements [`Projector`] and returns the same
//! [`LinearProjection`], which the classifiers, `mil project`, and the exporter to the
//! core consume. Hyper-parameter lists are tuned by the caller (inner CV), not here.

use nalgebra::{DMatrix, SymmetricEigen};
use serde::{Deserialize, Serialize};

use crate::data::standardize::ZScore;
use crate::data::Bags;
use crate::data::Dataset;
use crate::error::{Error, Result};

pub(crate) mod krylov;
pub mod lda;
pub mod lfda;
pub mod mi_alm;
pub mod mida;
pub mod midr;
pub mod pca;
pub(crate) mod span;

/// The projection algorithms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProjectionKind {
    /// Principal component analysis.
    Pca,
    /// Fisher LDA with bag labels as instance labels.
    Lda,
    /// Local Fisher discriminant analysis (Sugiyama 2007).
    Lfda,
    /// Citation-kNN-relabelled LFDA (Kim & Choi 2010).
    Clfda,
    /// Binary multiple-instance discriminant analysis (Chai et al. 2014).
    Bmida,
    /// Multi-class multiple-instance discriminant analysis (Chai et al. 2014).
    Mmida,
    /// Sparse + orthogonal projection by approximate augmented Lagrangian (Zhu et al. 2018).
    MiAlm,
    /// Multi-instance dimensionality reduction (Sun et al. 2010).
    Midr,
}

mil_core::keywords!(ProjectionKind {
    ProjectionKind::Pca => "pca": "principal component analysis",
    ProjectionKind::Lda => "lda": "Fisher linear discriminant analysis (bag labels as instance labels)",
    ProjectionKind::Lfda => "lfda": "local Fisher discriminant analysis",
    ProjectionKind::Clfda => "clfda": "Citation-kNN-based LFDA (Kim & Choi)",
    ProjectionKind::Bmida => "bmida": "binary multiple-instance discriminant analysis",
    ProjectionKind::Mmida => "mmida": "multi-class multiple-instance discriminant analysis",
    ProjectionKind::MiAlm => "mi-alm": "sparse, orthogonal projection by approximate augmented Lagrangian (Zhu et al.)",
    ProjectionKind::Midr => "midr": "multi-instance dimensionality reduction (Sun et al.), MI-ALM's baseline",
});

/// Output dimension d of every projection unless set.
pub const DEFAULT_DIM: usize = 10;

/// Any projection's parameters: one variant per algorithm, each a parameters type with
/// the paper's defaults. Fit on training bags with [`ProjectionParams::fit`].
///
/// ```
/// use mil_toolkit::projection::{mida::Bmida, ProjectionKind, ProjectionParams};
///
/// let data = mil_toolkit::data::load("musk1")?;
/// let params = ProjectionParams::from(Bmida::default().dim(5).alpha(0.1));
/// assert_eq!(params.kind(), ProjectionKind::Bmida);
/// let projection = params.fit(&data)?;
/// let projected = projection.transform(&data)?;
/// assert_eq!(projected.dim(), 5);
/// # Ok::<(), mil_toolkit::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ProjectionParams {
    /// PCA.
    Pca(pca::Pca),
    /// LDA.
    Lda(lda::Lda),
    /// LFDA.
    Lfda(lfda::Lfda),
    /// CLFDA.
    Clfda(lfda::Clfda),
    /// B-MIDA.
    Bmida(mida::Bmida),
    /// M-MIDA.
    Mmida(mida::Mmida),
    /// MI-ALM.
    MiAlm(mi_alm::MiAlm),
    /// MIDR.
    Midr(midr::Midr),
}

macro_rules! each_projection {
    ($self:expr, $p:ident => $body:expr) => {
        match $self {
            ProjectionParams::Pca($p) => $body,
            ProjectionParams::Lda($p) => $body,
            ProjectionParams::Lfda($p) => $body,
            ProjectionParams::Clfda($p) => $body,
            ProjectionParams::Bmida($p) => $body,
            ProjectionParams::Mmida($p) => $body,
            ProjectionParams::MiAlm($p) => $body,
            ProjectionParams::Midr($p) => $body,
        }
    };
}

impl ProjectionParams {
    /// The algorithm's parameters with their defaults.
    pub fn new(kind: ProjectionKind) -> Self {
        match kind {
            ProjectionKind::Pca => pca::Pca::default().into(),
            ProjectionKind::Lda => lda::Lda::default().into(),
            ProjectionKind::Lfda => lfda::Lfda::default().into(),
            ProjectionKind::Clfda => lfda::Clfda::default().into(),
            ProjectionKind::Bmida => mida::Bmida::default().into(),
            ProjectionKind::Mmida => mida::Mmida::default().into(),
            ProjectionKind::MiAlm => mi_alm::MiAlm::default().into(),
            ProjectionKind::Midr => midr::Midr::default().into(),
        }
    }

    /// Which algorithm.
    pub fn kind(&self) -> ProjectionKind {
        match self {
            ProjectionParams::Pca(_) => ProjectionKind::Pca,
            ProjectionParams::Lda(_) => ProjectionKind::Lda,
            ProjectionParams::Lfda(_) => ProjectionKind::Lfda,
            ProjectionParams::Clfda(_) => ProjectionKind::Clfda,
            ProjectionParams::Bmida(_) => ProjectionKind::Bmida,
            ProjectionParams::Mmida(_) => ProjectionKind::Mmida,
            ProjectionParams::MiAlm(_) => ProjectionKind::MiAlm,
            ProjectionParams::Midr(_) => ProjectionKind::Midr,
        }
    }

    /// Output dimension d.
    pub fn dim(&self) -> usize {
        each_projection!(self, p => p.dim)
    }

    /// The same parameters with output dimension `dim`.
    #[must_use]
    pub fn with_dim(mut self, dim: usize) -> Self {
        each_projection!(&mut self, p => p.dim = dim);
        self
    }

    /// The trade-off α where the algorithm has one (B-MIDA, M-MIDA, MI-ALM; MIDR's c₁).
    pub fn alpha(&self) -> Option<f64> {
        match self {
            ProjectionParams::Bmida(p) => Some(p.alpha),
            ProjectionParams::Mmida(p) => Some(p.alpha),
            ProjectionParams::MiAlm(p) => Some(p.alpha),
            ProjectionParams::Midr(p) => Some(p.c1),
            _ => None,
        }
    }

    /// The same parameters with trade-off `alpha`; an error for an algorithm without one.
    pub fn with_alpha(mut self, alpha: f64) -> Result<Self> {
        match &mut self {
            ProjectionParams::Bmida(p) => p.alpha = alpha,
            ProjectionParams::Mmida(p) => p.alpha = alpha,
            ProjectionParams::MiAlm(p) => p.alpha = alpha,
            ProjectionParams::Midr(p) => p.c1 = alpha,
            other => {
                return Err(Error::parameter(
                    "alpha",
                    alpha,
                    format!("{} has no trade-off α", other.kind()),
                ))
            }
        }
        Ok(self)
    }

    /// The same parameters with the seed of randomised steps (MI-ALM's and MIDR's
    /// random start; the others are deterministic).
    #[must_use]
    pub fn with_seed(mut self, seed: u64) -> Self {
        match &mut self {
            ProjectionParams::MiAlm(p) => p.seed = seed,
            ProjectionParams::Midr(p) => p.seed = seed,
            _ => {}
        }
        self
    }

    /// Checks the parameters alone, before any data is read: d at least 1, α finite
    /// and ≥ 0, and each algorithm's own settings.
    pub fn check(&self) -> Result<()> {
        if self.dim() == 0 {
            return Err(Error::parameter("dim", 0, "must be at least 1"));
        }
        if let Some(alpha) = self.alpha() {
            crate::params::check_weight("alpha", alpha, false)?;
        }
        match self {
            ProjectionParams::Bmida(p) => p.check(),
            ProjectionParams::Mmida(p) => p.check(),
            ProjectionParams::MiAlm(p) => p.check(),
            ProjectionParams::Midr(p) => p.check(),
            _ => Ok(()),
        }
    }

    /// Checks the parameters and what the training bags can support (d at most the
    /// number of features, bags to fit on), before any work.
    pub fn check_fit(&self, train: &Bags<'_>) -> Result<()> {
        self.check()?;
        check_fit(self.dim(), train)
    }

    /// Fits the projection on the training bags (every projection checks its
    /// parameters and the data first).
    pub fn fit<'a>(&self, train: impl Into<Bags<'a>>) -> Result<LinearProjection> {
        let train = train.into();
        self.check()?;
        each_projection!(self, p => p.fit(&train))
    }
}

macro_rules! projection_from {
    ($($variant:ident($ty:ty)),+ $(,)?) => {
        $(impl From<$ty> for ProjectionParams {
            fn from(p: $ty) -> Self {
                ProjectionParams::$variant(p)
            }
        })+
    };
}

projection_from!(
    Pca(pca::Pca),
    Lda(lda::Lda),
    Lfda(lfda::Lfda),
    Clfda(lfda::Clfda),
    Bmida(mida::Bmida),
    Mmida(mida::Mmida),
    MiAlm(mi_alm::MiAlm),
    Midr(midr::Midr),
);

/// What every projection's `fit` checks of its data before any work: an output dimension
/// from 1 to the number of features (a projection has no more directions than the space
/// it projects), and training bags to fit on.
pub(crate) fn check_fit(dim: usize, train: &Bags<'_>) -> Result<()> {
    let data = train.dataset();
    if dim == 0 || dim > data.dim() {
        return Err(Error::parameter(
            "dim",
            dim,
            format!(
                "must be between 1 and the {} features of {}",
                data.dim(),
                data.name()
            ),
        ));
    }
    if train.is_empty() {
        return Err(Error::data(data.name(), "no training bags to fit on"));
    }
    Ok(())
}

/// Anything that fits a linear projection on the training bags of a data set.
pub trait Projector {
    /// Fits on the bags `train` of `data` (never looking at other bags' labels).
    fn fit<'a>(&self, train: impl Into<Bags<'a>>) -> Result<LinearProjection>;
}

/// A fitted projection y = Gᵀ(x − μ)/σ, immutable after fitting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinearProjection {
    /// Which algorithm produced it.
    pub kind: ProjectionKind,
    /// μ, length D.
    pub mean: Vec<f64>,
    /// σ, length D; a feature with σ = 0 contributes nothing.
    pub scale: Vec<f64>,
    /// G, row-major D × d.
    pub matrix: Vec<f64>,
    /// Output dimension d.
    pub output_dim: usize,
    /// Algorithm-specific measures (e.g. MI-ALM's `sparsity`, `orthogonality`), reported
    /// by `mil project --json`.
    pub diagnostics: Vec<(String, f64)>,
}

impl LinearProjection {
    /// Input dimension D.
    pub fn input_dim(&self) -> usize {
        self.mean.len()
    }

    /// Projects one instance into `out` (length d).
    pub fn apply_row(&self, x: &[f64], out: &mut [f64]) {
        out.iter_mut().for_each(|o| *o = 0.0);
        let d = self.output_dim;
        for (j, &v) in x.iter().enumerate() {
            if self.scale[j] == 0.0 {
                continue;
            }
            let z = (v - self.mean[j]) / self.scale[j];
            let row = &self.matrix[j * d..(j + 1) * d];
            out.iter_mut().zip(row).for_each(|(o, g)| *o += g * z);
        }
    }

    /// Projects every instance of a data set (same bags, ids and labels).
    pub fn transform(&self, data: &Dataset) -> Result<Dataset> {
        if data.dim() != self.input_dim() {
            return Err(Error::data(
                data.name(),
                format!(
                    "{} features but the projection was fitted on {}",
                    data.dim(),
                    self.input_dim()
                ),
            ));
        }
        let d = self.output_dim;
        let mut features = vec![0.0; data.n_instances() * d];
        for (x, out) in data
            .features()
            .chunks_exact(data.dim())
            .zip(features.chunks_exact_mut(d))
        {
            self.apply_row(x, out);
        }
        data.with_features(d, features)
    }

    /// A diagnostic by name.
    pub fn diagnostic(&self, name: &str) -> Option<f64> {
        self.diagnostics
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| *v)
    }
}

/// How a projection prepares its input before G: the statistics come from the training
/// bags only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputScaling {
    /// z-score every feature (PCA on the correlation matrix; LDA/LFDA/CLFDA, which are
    /// scale-invariant up to the ridge, get comparable neighbourhoods across units).
    ZScore,
    /// Centre only, keeping the features' own units (σ = 1; a constant feature still
    /// gets σ = 0 and contributes nothing). MIDA's kernel-width grid is on this scale.
    Centre,
}

/// The training instances of the bags `train`, centred (and scaled) with statistics of
/// those bags only: the common first step of every projection here. Rows are in bag
/// order.
#[derive(Debug, Clone)]
pub(crate) struct TrainingInstances {
    /// The standardisation (becomes the projection's μ and σ).
    pub zscore: ZScore,
    /// Standardised instances, `n × D`.
    pub x: DMatrix<f64>,
    /// For each row, the position in `train` of its bag.
    pub bag_of: Vec<usize>,
    /// `starts[k]..starts[k + 1]` are the rows of bag `train[k]`.
    pub starts: Vec<usize>,
    /// The nonzero raw values of wide, sparse data (None otherwise): the Gram matrix of
    /// the span path then costs the nonzeros' products instead of n²D.
    pub sparse: Option<SparseRows>,
}

/// Wide data with at most this share of nonzero raw values keeps a sparse copy.
const SPARSE_SHARE: f64 = 0.125;

/// The standardised instances as sparse rows minus a dense shift: x_i = a_i − m with
/// a_ij = v_ij/σ_j over the nonzero raw values v_ij (features with σ_j > 0) and
/// m_j = μ_j/σ_j.
#[derive(Debug, Clone)]
pub(crate) struct SparseRows {
    /// Feature of each stored value, row after row.
    pub cols: Vec<u32>,
    /// a_ij of each stored value.
    pub vals: Vec<f64>,
    /// `starts[i]..starts[i + 1]` are row i's values.
    pub starts: Vec<usize>,
    /// m (length D; 0 where σ = 0).
    pub shift: Vec<f64>,
}

impl TrainingInstances {
    pub fn new(data: &Dataset, train: &[usize], scaling: InputScaling) -> Result<Self> {
        if let Some(&b) = train.iter().find(|&&b| b >= data.n_bags()) {
            return Err(Error::data(
                data.name(),
                format!("training bag index {b} but only {} bags", data.n_bags()),
            ));
        }
        let mut zscore = ZScore::fit(data.select(train));
        if scaling == InputScaling::Centre {
            zscore
                .std
                .iter_mut()
                .filter(|s| **s > 0.0)
                .for_each(|s| *s = 1.0);
        }
        let dim = data.dim();
        let n: usize = train.iter().map(|&b| data.bag(b).len()).sum();
        let mut x = DMatrix::zeros(n, dim);
        let mut bag_of = Vec::with_capacity(n);
        let mut starts = Vec::with_capacity(train.len() + 1);
        // Rows are standardised into a row-major block, then written column by column:
        // x is column-major, and writing it a row at a time touches a new page per entry
        // on wide data.
        const BLOCK: usize = 64;
        let mut block = vec![0.0; BLOCK * dim];
        let mut filled = 0;
        let mut r = 0;
        // Sparse rows are collected for wide data until they exceed their share.
        let wide = dim > n;
        let budget = (SPARSE_SHARE * (n * dim) as f64) as usize;
        let mut sparse = wide.then(|| SparseRows {
            cols: Vec::new(),
            vals: Vec::new(),
            starts: vec![0],
            shift: (0..dim)
                .map(|j| {
                    let s = zscore.std[j];
                    if s > 0.0 {
                        zscore.mean[j] / s
                    } else {
                        0.0
                    }
                })
                .collect(),
        });
        let flush = |x: &mut DMatrix<f64>, block: &[f64], first: usize, rows: usize| {
            for j in 0..dim {
                let mut col = x.column_mut(j);
                for i in 0..rows {
                    col[first + i] = block[i * dim + j];
                }
            }
        };
        for (k, &b) in train.iter().enumerate() {
            starts.push(r);
            for inst in data.bag(b).instances() {
                zscore.apply_row(inst, &mut block[filled * dim..(filled + 1) * dim]);
                if let Some(sp) = &mut sparse {
                    for (j, &v) in inst.iter().enumerate() {
                        let s = zscore.std[j];
                        if v != 0.0 && s > 0.0 {
                            sp.cols.push(j as u32);
                            sp.vals.push(v / s);
                        }
                    }
                    sp.starts.push(sp.vals.len());
                    if sp.vals.len() > budget {
                        sparse = None;
                    }
                }
                filled += 1;
                bag_of.push(k);
                r += 1;
                if filled == BLOCK {
                    flush(&mut x, &block, r - filled, filled);
                    filled = 0;
                }
            }
        }
        flush(&mut x, &block, r - filled, filled);
        starts.push(r);
        Ok(TrainingInstances {
            zscore,
            x,
            bag_of,
            starts,
            sparse,
        })
    }

    /// Number of instances.
    pub fn len(&self) -> usize {
        self.x.nrows()
    }

    /// More features than instances: the projections then take the span path
    /// ([`span`]), whose cost grows with n²D instead of D³.
    pub fn is_wide(&self) -> bool {
        #[cfg(test)]
        if test_support::FORCE_DENSE.with(|f| f.get()) {
            return false;
        }
        self.x.ncols() > self.x.nrows()
    }

    /// Rows of the `k`-th training bag.
    pub fn bag_rows(&self, k: usize) -> std::ops::Range<usize> {
        self.starts[k]..self.starts[k + 1]
    }

    /// The finished projection: this standardisation followed by G.
    pub fn projection(
        &self,
        kind: ProjectionKind,
        g: &DMatrix<f64>,
        diagnostics: Vec<(String, f64)>,
    ) -> LinearProjection {
        let (rows, d) = g.shape();
        let matrix = (0..rows)
            .flat_map(|j| (0..d).map(move |c| g[(j, c)]))
            .collect();
        LinearProjection {
            kind,
            mean: self.zscore.mean.clone(),
            scale: self.zscore.std.clone(),
            matrix,
            output_dim: d,
            diagnostics,
        }
    }
}

/// The eigenvectors of the `d` largest eigenvalues of a symmetric matrix, as the columns
/// of a `D × d` matrix with orthonormal columns, and those eigenvalues (descending).
/// Each column's sign is fixed (largest-magnitude entry positive) so that results do
/// not depend on the eigensolver's arbitrary sign choice.
pub(crate) fn top_eigenvectors(sym: DMatrix<f64>, d: usize) -> (DMatrix<f64>, Vec<f64>) {
    let n = sym.nrows();
    // Exact symmetry first: the solver reads one triangle, round-off may differ.
    let sym = (&sym + sym.transpose()) * 0.5;
    let eig = SymmetricEigen::new(sym);
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| eig.eigenvalues[b].total_cmp(&eig.eigenvalues[a]));
    let mut g = DMatrix::zeros(n, d);
    let mut values = Vec::with_capacity(d);
    for (c, &k) in order.iter().take(d).enumerate() {
        let mut col = eig.eigenvectors.column(k).into_owned();
        let pivot = col.iamax();
        if col[pivot] < 0.0 {
            col.neg_mut();
        }
        g.set_column(c, &col);
        values.push(eig.eigenvalues[k]);
    }
    (g, values)
}

/// Relative ridge added to a within-class scatter before its Cholesky factorisation:
/// S_W + ε·(tr S_W / D)·I. It bounds the condition number by about 1/ε and makes
/// constant or collinear features harmless; 10⁻³ changes well-conditioned directions
/// by at most 0.1% of the average within-class variance.
pub(crate) const SCATTER_RIDGE: f64 = 1e-3;

/// The `d` leading solutions of the generalised symmetric problem S_B w = λ S_W w.
///
/// With S_W regularised by [`SCATTER_RIDGE`] and factored as L Lᵀ (Cholesky), the
/// problem becomes the ordinary symmetric one (L⁻¹ S_B L⁻ᵀ) v = λ v, solved by symmetric
/// eigendecomposition; w = L⁻ᵀ v. Both L⁻¹ applications are triangular solves; no
/// inverse is formed. Returns W (`D × d`, with Wᵀ S_W W = I) and λ (descending).
pub(crate) fn generalized_top_eigenvectors(
    sb: &DMatrix<f64>,
    sw: &DMatrix<f64>,
    d: usize,
    method: &'static str,
) -> Result<(DMatrix<f64>, Vec<f64>)> {
    let n = sw.nrows();
    let mean_var = sw.trace() / n as f64;
    let ridge = SCATTER_RIDGE * if mean_var > 0.0 { mean_var } else { 1.0 };
    let mut reg = (sw + sw.transpose()) * 0.5;
    for i in 0..n {
        reg[(i, i)] += ridge;
    }
    let chol = reg.cholesky().ok_or_else(|| Error::Numerical {
        method,
        reason: "the regularised within-class scatter is not positive definite".into(),
    })?;
    let l = chol.l();
    // C = L⁻¹ S_B L⁻ᵀ: solve L Y = S_B, then L Cᵀ = Yᵀ (C is symmetric).
    let y = l
        .solve_lower_triangular(sb)
        .ok_or_else(|| singular(method))?;
    let c = l
        .solve_lower_triangular(&y.transpose())
        .ok_or_else(|| singular(method))?;
    let (v, values) = top_eigenvectors(c, d);
    let w = l
        .transpose()
        .solve_upper_triangular(&v)
        .ok_or_else(|| singular(method))?;
    if w.iter().any(|x| !x.is_finite()) || values.iter().any(|x| !x.is_finite()) {
        return Err(singular(method));
    }
    Ok((w, values))
}

fn singular(method: &'static str) -> Error {
    Error::Numerical {
        method,
        reason: "singular triangular factor".into(),
    }
}

/// Sugiyama's "weighted" embedding of generalised eigenvectors (LFDA 2007, §3): each
/// column w_k scaled by √λ_k, so directions count by their discriminative power and
/// null directions (λ ≈ 0) vanish instead of adding noise to distances.
pub(crate) fn weight_by_eigenvalues(w: &mut DMatrix<f64>, values: &[f64]) {
    for (k, &l) in values.iter().enumerate() {
        let s = l.max(0.0).sqrt();
        w.column_mut(k).scale_mut(s);
    }
}

/// Memory and work of fitting a projection on data of this shape: a few square scatter
/// or covariance matrices and the eigenproblem on them, of the features' size — or of
/// the instances' span when there are fewer instances than features (the wide-data
/// path) — beside the data and its scaled and projected copies.
pub fn footprint(shape: crate::params::Shape) -> crate::params::Estimate {
    let m = shape.dim.min(shape.instances) as f64;
    crate::params::Estimate::values(
        4.0 * m * m + 3.0 * shape.values(),
        m * m * m + shape.values() * m,
    )
}

#[cfg(test)]
pub(crate) mod test_support {
    //! Shared test data builders for the projection modules.
    use super::*;
    use rand::SeedableRng;
    use rand_distr::{Distribution, StandardNormal};
    use rand_xoshiro::Xoshiro256PlusPlus;

    thread_local! {
        /// Makes this thread's fits take the dense path whatever the shape, so that the
        /// span path can be compared with it.
        pub static FORCE_DENSE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    /// Bags of `size` instances, `dim` features: four latent factors mixed into the
    /// features, a class-dependent shift on the first few, plus noise. Bag b has class
    /// b mod `classes`.
    pub fn wide_set(seed: u64, bags: usize, size: usize, dim: usize, classes: usize) -> Dataset {
        let n = bags * size;
        let latent = normals(seed, n * 4);
        let mix = normals(seed + 1, 4 * dim);
        let noise = normals(seed + 2, n * dim);
        let mut features = Vec::with_capacity(n * dim);
        for i in 0..n {
            let class = (i / size) % classes;
            for j in 0..dim {
                let s: f64 = (0..4).map(|k| latent[i * 4 + k] * mix[k * dim + j]).sum();
                let shift = if j < 6 && i % size == 0 {
                    2.0 * class as f64
                } else {
                    0.0
                };
                features.push(s * (1.0 + (j % 3) as f64) + shift + 0.3 * noise[i * dim + j]);
            }
        }
        Dataset::new(
            "wide",
            dim,
            features,
            (0..=bags).map(|b| b * size).collect(),
            (0..bags).map(|b| format!("b{b}")).collect(),
            Some((0..bags).map(|b| b % classes).collect()),
            (0..classes).map(|c| c.to_string()).collect(),
        )
        .unwrap()
    }

    /// A labelled data set with one instance per bag (supervised data as MIL).
    pub fn single_instance_bags(dim: usize, rows: &[Vec<f64>], labels: &[usize]) -> Dataset {
        let features: Vec<f64> = rows.iter().flatten().copied().collect();
        let n = rows.len();
        let classes = labels.iter().max().map_or(0, |m| m + 1);
        Dataset::new(
            "test",
            dim,
            features,
            (0..=n).collect(),
            (0..n).map(|i| format!("b{i}")).collect(),
            Some(labels.to_vec()),
            (0..classes).map(|c| c.to_string()).collect(),
        )
        .unwrap()
    }

    /// Standard normal draws from a seeded generator.
    pub fn normals(seed: u64, count: usize) -> Vec<f64> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        (0..count)
            .map(|_| StandardNormal.sample(&mut rng))
            .collect()
    }

    /// ‖GᵀG − I‖_F of a fitted projection's matrix.
    pub fn orthonormality_error(p: &LinearProjection) -> f64 {
        let d = p.output_dim;
        let g = DMatrix::from_row_slice(p.input_dim(), d, &p.matrix);
        (g.transpose() * &g - DMatrix::<f64>::identity(d, d)).norm()
    }

    /// The direction in the original feature space that output column `c` reads:
    /// g_jc / σ_j, normalised (what a projection "looks along" before scaling).
    pub fn raw_direction(p: &LinearProjection, c: usize) -> Vec<f64> {
        let d = p.output_dim;
        let v: Vec<f64> = (0..p.input_dim())
            .map(|j| {
                if p.scale[j] > 0.0 {
                    p.matrix[j * d + c] / p.scale[j]
                } else {
                    0.0
                }
            })
            .collect();
        let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        v.into_iter().map(|x| x / norm).collect()
    }

    /// |cos| of the angle between two vectors.
    pub fn abs_cosine(a: &[f64], b: &[f64]) -> f64 {
        let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
        let na = a.iter().map(|x| x * x).sum::<f64>().sqrt();
        let nb = b.iter().map(|x| x * x).sum::<f64>().sqrt();
        dot.abs() / (na * nb)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generalized_solver_matches_a_closed_form() {
        // S_W = diag(1, 4), S_B = diag(2, 2): λ = 2 along e1, 0.5 along e2; Wᵀ S_W W = I.
        let sw = DMatrix::from_diagonal(&nalgebra::DVector::from_vec(vec![1.0, 4.0]));
        let sb = DMatrix::from_diagonal(&nalgebra::DVector::from_vec(vec![2.0, 2.0]));
        let (w, l) = generalized_top_eigenvectors(&sb, &sw, 2, "test").unwrap();
        let r1 = 1.0 + SCATTER_RIDGE * 2.5;
        let r2 = 4.0 + SCATTER_RIDGE * 2.5;
        assert!((l[0] - 2.0 / r1).abs() < 1e-12 && (l[1] - 2.0 / r2).abs() < 1e-12);
        assert!((w[(0, 0)] - 1.0 / r1.sqrt()).abs() < 1e-12 && w[(1, 0)].abs() < 1e-12);
        assert!((w[(1, 1)] - 1.0 / r2.sqrt()).abs() < 1e-12 && w[(0, 1)].abs() < 1e-12);
    }

    #[test]
    fn generalized_solver_satisfies_its_equation_on_random_matrices() {
        for seed in 0..5 {
            let a = DMatrix::from_vec(6, 6, test_support::normals(seed, 36));
            let b = DMatrix::from_vec(6, 3, test_support::normals(seed + 100, 18));
            let sw = &a * a.transpose();
            let sb = &b * b.transpose();
            let (w, l) = generalized_top_eigenvectors(&sb, &sw, 3, "test").unwrap();
            let mut reg = sw.clone();
            let ridge = SCATTER_RIDGE * sw.trace() / 6.0;
            (0..6).for_each(|i| reg[(i, i)] += ridge);
            let residual = &sb * &w - &reg * &w * DMatrix::from_diagonal(&l.clone().into());
            assert!(residual.norm() < 1e-8 * sb.norm(), "seed {seed}");
            let gram = w.transpose() * &reg * &w;
            assert!((gram - DMatrix::<f64>::identity(3, 3)).norm() < 1e-9);
            assert!(l.windows(2).all(|p| p[0] >= p[1]));
        }
    }

    /// G Gᵀ of a fitted projection (invariant to the columns' signs, and for
    /// orthonormal G the projector onto its subspace).
    fn outer(p: &LinearProjection) -> DMatrix<f64> {
        let g = DMatrix::from_row_slice(p.input_dim(), p.output_dim, &p.matrix);
        &g * g.transpose()
    }

    #[test]
    fn span_path_equals_dense_path_for_every_eigen_projection() {
        use test_support::{wide_set, FORCE_DENSE};
        // (seed, bags, instances per bag, D, classes, d): D > n throughout.
        let shapes = [
            (1, 8, 3, 40, 2, 3),
            (2, 12, 2, 30, 2, 2),
            (3, 6, 4, 60, 2, 4),
            (4, 9, 3, 50, 3, 2),
            // n = 120 instances: above the partial eigensolver's dense cut-off.
            (5, 40, 3, 150, 2, 4),
        ];
        let kinds = [
            ProjectionKind::Pca,
            ProjectionKind::Lda,
            ProjectionKind::Lfda,
            ProjectionKind::Clfda,
            ProjectionKind::Bmida,
            ProjectionKind::Mmida,
        ];
        for (seed, bags, size, dim, classes, d) in shapes {
            let data = wide_set(seed, bags, size, dim, classes);
            let train: Vec<usize> = (0..bags).collect();
            for kind in kinds {
                let d = if kind == ProjectionKind::Lda {
                    classes - 1
                } else {
                    d
                };
                if kind == ProjectionKind::Bmida && classes != 2 {
                    continue;
                }
                let mut params = ProjectionParams::new(kind).with_dim(d);
                if params.alpha().is_some() {
                    // α < C − 1 keeps d positive eigenvalues, where the leading subspace
                    // is unique (with α = 1 and two classes M-MIDA's M has rank one and
                    // both paths pick arbitrary null directions).
                    params = params.with_alpha(0.1).unwrap();
                }
                let span = params.fit(data.select(&train)).unwrap();
                FORCE_DENSE.with(|f| f.set(true));
                let dense = params.fit(data.select(&train));
                FORCE_DENSE.with(|f| f.set(false));
                let dense = dense.unwrap();
                let (a, b) = (outer(&span), outer(&dense));
                let gap = (&a - &b).norm() / b.norm().max(1e-300);
                assert!(gap < 1e-6, "{kind} seed {seed}: relative gap {gap}");
                assert_eq!(span.output_dim, d);
            }
        }
    }

    #[test]
    fn fit_rejects_bad_parameters() {
        let d = test_support::single_instance_bags(2, &[vec![0.0, 1.0], vec![1.0, 0.0]], &[0, 1]);
        let spec = |kind, dim| ProjectionParams::new(kind).with_dim(dim);
        assert!(spec(ProjectionKind::Pca, 3).fit(d.select(&[0, 1])).is_err());
        assert!(spec(ProjectionKind::Pca, 0).fit(d.select(&[0, 1])).is_err());
        let nan_alpha = spec(ProjectionKind::Bmida, 1).with_alpha(f64::NAN).unwrap();
        assert!(nan_alpha.fit(d.select(&[0, 1])).is_err());
        assert!(spec(ProjectionKind::Pca, 1).fit(d.select(&[])).is_err());
        // PCA has no α to set.
        assert!(spec(ProjectionKind::Pca, 1).with_alpha(1.0).is_err());
        let bad_c2 = ProjectionParams::from(midr::Midr::default().dim(1).c1(0.1).c2(0.0));
        assert!(matches!(
            bad_c2.fit(d.select(&[0, 1])),
            Err(Error::Parameter { .. })
        ));
    }

    /// Each projection's own `fit` (not only [`ProjectionParams::fit`]) refuses an output
    /// dimension above the number of features before any work.
    #[test]
    fn every_projection_refuses_more_dimensions_than_features() {
        let rows = [
            vec![0.0, 1.0, 2.0],
            vec![1.0, 0.0, 0.5],
            vec![2.0, 1.0, 0.0],
            vec![0.5, 2.0, 1.0],
        ];
        let d = test_support::single_instance_bags(3, &rows, &[0, 1, 0, 1]);
        for kind in <ProjectionKind as mil_core::keyword::Keyword>::ALL {
            let params = ProjectionParams::new(*kind).with_dim(4);
            let refused = each_projection!(&params, p => p.fit(&d));
            match refused {
                Err(Error::Parameter { name, .. }) => assert_eq!(name, "dim", "{kind:?}"),
                other => panic!("{kind:?}: {other:?}"),
            }
            assert!(params.check_fit(&Bags::from(&d)).is_err(), "{kind:?}");
        }
    }
}
