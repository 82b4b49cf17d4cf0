//! Bag classifiers behind one interface: a parameter type ([`Classifier`]) fits on the
//! training bags of a data set and returns an immutable fitted model ([`BagModel`]) that
//! scores any bags of the same dimension, one score per class.
//!
//! - [`citation_knn`]: Citation-kNN (Wang & Zucker 2000), Weka-compatible.
//! - [`milr`]: multiple-instance logistic regression (Ray & Craven 2005; Weka's MILR).
//! - [`dd`]: Diverse Density and EM-DD (Maron & Lozano-Pérez 1998; Zhang & Goldman 2001;
//!   Weka's MIDD and MIEMDD), binary only.
//! - [`mi_svm`]: mi-SVM and MI-SVM (Andrews et al. 2002), instance SVMs under the
//!   standard MI assumption (binary only).
//! - [`svm`]: SVM over bags with a box-counting or normalised set kernel (Tao et al. 2008).
//! - [`simple_mi`]: SimpleMI, logistic regression on one summary vector per bag (Weka's
//!   SimpleMI).
//! - [`mi_wrapper`]: MI-Wrapper, logistic regression on the instances, their probabilities
//!   combined per bag (Weka's MIWrapper).
//! - [`mi_vlad`]: miVLAD and miFV (Wei, Wu & Zhou 2017), logistic regression on one
//!   codebook encoding per bag.
//! - [`smil`]: sMIL and sbMIL (Bunescu & Mooney 2007), SVMs for sparse positive bags
//!   (binary only).
//! - [`miles`]: MILES (Chen, Bi & Wang 2006), a 1-norm SVM on each bag's similarities to
//!   the training instances, which selects a few of them.
//! - [`mi_graph`]: mi-Graph (Zhou, Sun & Li 2009), an SVM on a kernel over each bag's
//!   ε-graph of instances.
//! - [`attention`]: attention-based deep MIL (Ilse, Tomczak & Welling 2018), a neural
//!   network with attention, gated-attention, mean or max pooling.
//!
//! Multi-class data: Citation-kNN votes per class; MILR, the set-kernel SVMs, MILES,
//! mi-Graph and the vector-per-bag methods fit one model per class (one-vs-rest). The parameters are gathered in [`ClassifierParams`], the fitted models
//! in [`ClassifierModel`].

pub mod attention;
pub mod citation_knn;
pub mod dd;
pub mod imbalance;
pub mod mi_graph;
pub mod mi_svm;
pub mod mi_vlad;
pub mod mi_wrapper;
pub mod miles;
pub mod milr;
pub mod simple_mi;
pub mod smil;
pub mod svm;

use serde::{Deserialize, Serialize};

use crate::data::Bags;
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::explain::Explanation;
use crate::progress::Progress;
use attention::AttentionModel;
use citation_knn::CitationKnnModel;
use citation_knn::Scaling;
use dd::DdModel;
use mi_graph::MiGraphModel;
use mi_svm::MiSvmModel;
use mi_vlad::MiVladModel;
use mi_wrapper::MiWrapperModel;
use miles::MilesModel;
use milr::MilrModel;
use simple_mi::SimpleMiModel;
use smil::SmilModel;
use svm::SvmModel;

/// Per-class scores of a list of bags (higher = more likely), row-major bags × classes.
/// Read from a file (a `mil cv` part) it is checked like [`BagScores::new`]'s contract:
/// at least one class and whole rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawBagScores")]
pub struct BagScores {
    n_classes: usize,
    scores: Vec<f64>,
    /// Binary decision threshold on the positive score ([`BagScores::with_threshold`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    threshold: Option<f64>,
}

/// [`BagScores`] as a file holds it, before its checks.
#[derive(Deserialize)]
struct RawBagScores {
    n_classes: usize,
    scores: Vec<f64>,
    #[serde(default)]
    threshold: Option<f64>,
}

impl TryFrom<RawBagScores> for BagScores {
    type Error = String;

    fn try_from(raw: RawBagScores) -> std::result::Result<Self, String> {
        if raw.n_classes == 0 || !raw.scores.len().is_multiple_of(raw.n_classes) {
            return Err(format!(
                "{} scores do not make whole rows of {} classes",
                raw.scores.len(),
                raw.n_classes
            ));
        }
        if raw.threshold.is_some_and(|t| !t.is_finite()) {
            return Err("the threshold is not finite".into());
        }
        Ok(BagScores {
            n_classes: raw.n_classes,
            scores: raw.scores,
            threshold: raw.threshold,
        })
    }
}

impl BagScores {
    /// Wraps row-major scores (`scores.len()` must be a multiple of `n_classes`).
    pub fn new(n_classes: usize, scores: Vec<f64>) -> Self {
        debug_assert!(n_classes > 0 && scores.len().is_multiple_of(n_classes));
        BagScores {
            n_classes,
            scores,
            threshold: None,
        }
    }

    /// The same scores labelled by a threshold on the positive score when binary: class
    /// 1 when `row[1] > t`, else 0 (`None`: the larger score wins). Multi-class tables
    /// ignore it.
    #[must_use]
    pub fn with_threshold(mut self, threshold: Option<f64>) -> Self {
        self.threshold = threshold;
        self
    }

    /// The threshold [`BagScores::label`] applies, if any.
    pub fn threshold(&self) -> Option<f64> {
        self.threshold
    }

    /// Number of classes.
    pub fn n_classes(&self) -> usize {
        self.n_classes
    }

    /// Number of bags scored.
    pub fn len(&self) -> usize {
        self.scores.len() / self.n_classes
    }

    /// True when no bag was scored.
    pub fn is_empty(&self) -> bool {
        self.scores.is_empty()
    }

    /// The scores of bag `i` (one per class).
    pub fn row(&self, i: usize) -> &[f64] {
        &self.scores[i * self.n_classes..(i + 1) * self.n_classes]
    }

    /// The predicted class of bag `i`: the highest score, ties to the lower class index
    /// (Weka's rule: ties go to the first class, the negative one when binary); with a
    /// threshold t (binary), class 1 exactly when the positive score exceeds t.
    pub fn label(&self, i: usize) -> usize {
        let row = self.row(i);
        if let (Some(t), 2) = (self.threshold, self.n_classes) {
            return usize::from(row[1] > t);
        }
        let mut best = 0;
        for (c, &s) in row.iter().enumerate() {
            if s > row[best] {
                best = c;
            }
        }
        best
    }

    /// Predicted classes of all bags.
    pub fn labels(&self) -> Vec<usize> {
        (0..self.len()).map(|i| self.label(i)).collect()
    }

    /// The score of the positive class (class 1) of bag `i` for binary problems — what
    /// AUROC ranks; for multi-class, the score of the predicted class.
    pub fn positive(&self, i: usize) -> f64 {
        if self.n_classes == 2 {
            self.row(i)[1]
        } else {
            self.row(i)[self.label(i)]
        }
    }

    /// Appends the rows of another score table with the same classes.
    pub fn extend(&mut self, other: &BagScores) {
        self.scores.extend_from_slice(&other.scores);
    }

    /// The majority vote of `members`' labels ([`BagScores::label`]) on the same bags, best
    /// member first: each class scores its share of the votes, the first member's vote
    /// counting 1.5 and every other's 1, so that a tie goes to the first member's class and
    /// a majority of the others outvotes it. Binary: the positive score is the share of
    /// votes for class 1.
    ///
    /// ```
    /// use mil_toolkit::classifier::BagScores;
    ///
    /// // Three members on two bags of two classes.
    /// let first = BagScores::new(2, vec![0.9, 0.1, 0.2, 0.8]);
    /// let second = BagScores::new(2, vec![0.3, 0.7, 0.6, 0.4]);
    /// let third = BagScores::new(2, vec![0.4, 0.6, 0.7, 0.3]);
    /// let vote = BagScores::vote(&[first.clone(), second.clone(), third]);
    /// assert_eq!(vote.labels(), [1, 0]); // the two others outvote the first
    /// assert_eq!(BagScores::vote(&[first, second]).labels(), [0, 1]); // ties: the first
    /// ```
    ///
    /// # Panics
    /// When `members` is empty or its tables differ in shape.
    pub fn vote(members: &[BagScores]) -> BagScores {
        let first = &members[0];
        assert!(members
            .iter()
            .all(|m| m.n_classes == first.n_classes && m.len() == first.len()));
        let total = members.len() as f64 + 0.5;
        let mut scores = vec![0.0; first.scores.len()];
        for (r, m) in members.iter().enumerate() {
            let weight = if r == 0 { 1.5 } else { 1.0 };
            for i in 0..m.len() {
                scores[i * m.n_classes + m.label(i)] += weight / total;
            }
        }
        BagScores::new(first.n_classes, scores)
    }
}

/// Fits on a fold's training bags and scores its test bags: `score(train, test)`
/// ([`ClassifierParams::fold_scorer`]).
pub(crate) type FoldScorer<'a> = Box<dyn Fn(&[usize], &[usize]) -> Result<BagScores> + Sync + 'a>;

/// Set-kernel Gram matrices over all bags of one data set, computed once and shared by
/// every SVM candidate whose kernel they are (candidates that differ only in ρ, the map
/// or C).
#[derive(Default)]
pub(crate) struct GramCache(Vec<(GramKey, std::sync::Arc<Vec<f64>>)>);

/// What a shared Gram matrix depends on: the set kernel and the seed of its estimates.
type GramKey = (svm::SetKernel, u64);

impl GramCache {
    /// The log-Gram matrix of `svm`'s kernel over all bags of `data` (which every call
    /// on one cache must share).
    fn get(
        &mut self,
        svm: &svm::SetKernelSvm,
        data: &Dataset,
        progress: &dyn Progress,
    ) -> Result<std::sync::Arc<Vec<f64>>> {
        let key = (svm.kernel, svm.seed);
        if let Some((_, gram)) = self.0.iter().find(|(k, _)| *k == key) {
            return Ok(gram.clone());
        }
        progress.start("Gram matrix", 0);
        let gram = std::sync::Arc::new(svm.full_log_gram(data, progress)?);
        progress.finish();
        self.0.push((key, gram.clone()));
        Ok(gram)
    }
}

/// Hyper-parameters of a bag classifier; fitting yields an immutable model.
pub trait Classifier {
    /// The fitted model.
    type Model: BagModel;
    /// Fits on the bags `train` of `data` (labels of other bags are never read).
    fn fit<'a>(&self, train: impl Into<Bags<'a>>) -> Result<Self::Model>;
}

/// A fitted bag classifier.
pub trait BagModel {
    /// Number of classes it scores.
    fn n_classes(&self) -> usize;
    /// Feature dimension it expects.
    fn input_dim(&self) -> usize;
    /// Scores the bags `bags` of `data`, in that order.
    fn scores<'a>(&self, bags: impl Into<Bags<'a>>) -> Result<BagScores>;
    /// Explains the prediction of each of the bags `bags` of `data`, in that order: the
    /// witness instance(s) and the per-instance scores the model defines
    /// ([`crate::explain`]).
    fn explain<'a>(&self, bags: impl Into<Bags<'a>>) -> Result<Vec<Explanation>>;
}

/// The classifiers by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClassifierKind {
    /// Citation-kNN.
    CitationKnn,
    /// MILR.
    Milr,
    /// SVM over bags with a set kernel.
    Svm,
    /// mi-SVM: an instance SVM with a label for every instance of a positive bag.
    MiSvm,
    /// MI-SVM: an instance SVM with one witness per positive bag.
    MiSvmBag,
    /// SimpleMI.
    SimpleMi,
    /// MI-Wrapper.
    MiWrapper,
    /// miVLAD.
    MiVlad,
    /// miFV.
    MiFv,
    /// sMIL: an SVM over negative instances and positive bag means with relaxed margins.
    Smil,
    /// sbMIL: sMIL labels the positive bags' instances, then an instance SVM.
    Sbmil,
    /// Diverse Density.
    Dd,
    /// EM-DD.
    EmDd,
    /// MILES: a 1-norm SVM on the bags' similarities to the training instances.
    Miles,
    /// mi-Graph: an SVM on a kernel over each bag's graph of instances.
    MiGraph,
    /// Attention-based deep MIL with attention pooling.
    Attention,
    /// Attention-based deep MIL with gated-attention pooling.
    GatedAttention,
}

mil_core::keywords!(ClassifierKind {
    ClassifierKind::CitationKnn => "citation-knn": "Citation-kNN (Wang & Zucker) on Hausdorff bag distances",
    ClassifierKind::Milr => "milr": "multiple-instance logistic regression (Ray & Craven; Weka's MILR)",
    ClassifierKind::Svm => "svm": "SVM over bags with a set kernel (GMIL §8)",
    ClassifierKind::MiSvm => "mi-svm": "mi-SVM (Andrews et al. 2002): instance SVM, a label for every instance of a positive bag",
    ClassifierKind::MiSvmBag => "mi-svm-bag": "MI-SVM (Andrews et al. 2002): instance SVM, one witness instance per positive bag",
    ClassifierKind::SimpleMi => "simple-mi": "logistic regression on one summary vector per bag (Weka's SimpleMI)",
    ClassifierKind::MiWrapper => "mi-wrapper": "logistic regression on the instances, combined per bag (Weka's MIWrapper)",
    ClassifierKind::MiVlad => "mi-vlad": "logistic regression on each bag's VLAD encoding over k-means centres (Wei et al.'s miVLAD)",
    ClassifierKind::MiFv => "mi-fv": "logistic regression on each bag's Fisher vector under a Gaussian mixture (Wei et al.'s miFV)",
    ClassifierKind::Smil => "smil": "sMIL (Bunescu & Mooney 2007): SVM over negative instances and positive bag means, margins relaxed for sparse positive bags",
    ClassifierKind::Sbmil => "sbmil": "sbMIL (Bunescu & Mooney 2007): sMIL labels the top eta of positive-bag instances, then an instance SVM",
    ClassifierKind::Dd => "dd": "Diverse Density (Maron & Lozano-Perez; Weka's MIDD): a target point and feature scales, noisy-or bags",
    ClassifierKind::EmDd => "em-dd": "EM-DD (Zhang & Goldman; Weka's MIEMDD): Diverse Density by picking one instance per bag, max bags",
    ClassifierKind::Miles => "miles": "MILES (Chen, Bi & Wang 2006): a 1-norm SVM on each bag's similarities to the training instances, selecting a few",
    ClassifierKind::MiGraph => "mi-graph": "mi-Graph (Zhou, Sun & Li 2009): SVM on a graph kernel that down-weights each instance by its neighbours in the bag",
    ClassifierKind::Attention => "attention": "attention-based deep MIL (Ilse, Tomczak & Welling 2018): a neural network pooling its instance embeddings by learnt attention weights",
    ClassifierKind::GatedAttention => "gated-attention": "attention-based deep MIL with gated attention (Ilse et al. eq. 9)",
});

/// Any classifier's parameters: one variant per algorithm, each a parameters type with
/// the papers' defaults. [`ClassifierParams::fit`] returns a [`ClassifierModel`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ClassifierParams {
    /// Citation-kNN.
    CitationKnn(citation_knn::CitationKnn),
    /// MILR.
    Milr(milr::Milr),
    /// SVM over bags with a set kernel.
    Svm(svm::SetKernelSvm),
    /// mi-SVM or MI-SVM (by its heuristic).
    MiSvm(mi_svm::MiSvm),
    /// SimpleMI.
    SimpleMi(simple_mi::SimpleMi),
    /// MI-Wrapper.
    MiWrapper(mi_wrapper::MiWrapper),
    /// miVLAD or miFV (by its encoding).
    MiVlad(mi_vlad::MiVlad),
    /// sMIL or sbMIL (by its variant).
    Smil(smil::Smil),
    /// DD or EM-DD (by its algorithm).
    Dd(dd::Dd),
    /// MILES.
    Miles(miles::Miles),
    /// mi-Graph.
    MiGraph(mi_graph::MiGraph),
    /// Attention-based deep MIL (any pooling).
    Attention(attention::AttentionMil),
}

impl ClassifierParams {
    /// The algorithm's parameters with their defaults.
    pub fn new(kind: ClassifierKind) -> Self {
        match kind {
            ClassifierKind::CitationKnn => citation_knn::CitationKnn::default().into(),
            ClassifierKind::Milr => milr::Milr::default().into(),
            ClassifierKind::Svm => svm::SetKernelSvm::default().into(),
            ClassifierKind::MiSvm => mi_svm::MiSvm::default().into(),
            ClassifierKind::MiSvmBag => mi_svm::MiSvm::default()
                .heuristic(mi_svm::Heuristic::Bag)
                .into(),
            ClassifierKind::SimpleMi => simple_mi::SimpleMi::default().into(),
            ClassifierKind::MiWrapper => mi_wrapper::MiWrapper::default().into(),
            ClassifierKind::MiVlad => mi_vlad::MiVlad::vlad().into(),
            ClassifierKind::MiFv => mi_vlad::MiVlad::fisher().into(),
            ClassifierKind::Smil => smil::Smil::default().into(),
            ClassifierKind::Sbmil => smil::Smil::default()
                .variant(smil::Variant::Balanced)
                .into(),
            ClassifierKind::Dd => dd::Dd::default().into(),
            ClassifierKind::EmDd => dd::Dd::em_dd().into(),
            ClassifierKind::Miles => miles::Miles::default().into(),
            ClassifierKind::MiGraph => mi_graph::MiGraph::default().into(),
            ClassifierKind::Attention => attention::AttentionMil::default().into(),
            ClassifierKind::GatedAttention => attention::AttentionMil::default()
                .pooling(attention::Pooling::Gated)
                .into(),
        }
    }

    /// The memory and work that grow beyond the data when this classifier is fitted (or
    /// cross-validated) on data of `shape`, with a description of what holds them;
    /// `None` for classifiers linear in the data. What `mil cv`/`mil train` and Python
    /// check before any work.
    pub fn footprint(
        &self,
        shape: crate::params::Shape,
    ) -> Option<(String, crate::params::Estimate)> {
        let n = shape.bags;
        match self {
            ClassifierParams::CitationKnn(_) => Some((
                format!("Citation-kNN over {n} bags (its bag distances)"),
                citation_knn::footprint(shape),
            )),
            ClassifierParams::Svm(_) => Some((
                format!("the SVM over {n} bags (its Gram matrices)"),
                svm::footprint(shape),
            )),
            ClassifierParams::MiVlad(m) => Some((
                format!("{} over {n} bags (its bag vectors)", self.kind()),
                mi_vlad::footprint(shape, m.encoding, m.codebook, m.max_iter),
            )),
            ClassifierParams::MiSvm(m) => Some((
                format!(
                    "{} over {} instances (their Gram matrix)",
                    self.kind(),
                    shape.instances
                ),
                mi_svm::footprint(shape, m),
            )),
            ClassifierParams::Smil(_) => Some((
                format!(
                    "{} over {} instances (their Gram matrix)",
                    self.kind(),
                    shape.instances
                ),
                smil::footprint(shape),
            )),
            ClassifierParams::Miles(m) => Some((
                format!(
                    "MILES over {n} bags and up to {} prototypes (the embedded bags)",
                    shape.instances.min(m.max_prototypes)
                ),
                miles::footprint(shape, m.max_prototypes),
            )),
            ClassifierParams::MiGraph(_) => Some((
                format!("mi-Graph over {n} bags (its Gram matrix)"),
                mi_graph::footprint(shape),
            )),
            ClassifierParams::Attention(a) => Some((
                format!(
                    "the attention network over {} instances ({} epochs)",
                    shape.instances, a.epochs
                ),
                attention::footprint(shape, a),
            )),
            ClassifierParams::Milr(_)
            | ClassifierParams::SimpleMi(_)
            | ClassifierParams::MiWrapper(_)
            | ClassifierParams::Dd(_) => None,
        }
    }

    /// The settings an inner CV tries when asked to tune this classifier (the `auto`
    /// classifier, `mil cv --tune`, [`crate::pipeline::ClassifierGrid::tuned`]): a small
    /// grid around these parameters that each classifier declares (its
    /// `default_grid`), these parameters first; settings outside the grid are kept.
    pub fn default_grid(&self) -> Vec<ClassifierParams> {
        fn all<T: Into<ClassifierParams>>(grid: Vec<T>) -> Vec<ClassifierParams> {
            grid.into_iter().map(Into::into).collect()
        }
        match *self {
            ClassifierParams::CitationKnn(c) => all(c.default_grid()),
            ClassifierParams::Milr(m) => all(m.default_grid()),
            ClassifierParams::Svm(s) => all(s.default_grid()),
            ClassifierParams::MiSvm(m) => all(m.default_grid()),
            ClassifierParams::SimpleMi(s) => all(s.default_grid()),
            ClassifierParams::MiWrapper(m) => all(m.default_grid()),
            ClassifierParams::MiVlad(m) => all(m.default_grid()),
            ClassifierParams::Smil(s) => all(s.default_grid()),
            ClassifierParams::Dd(d) => all(d.default_grid()),
            ClassifierParams::Miles(m) => all(m.default_grid()),
            ClassifierParams::MiGraph(m) => all(m.default_grid()),
            ClassifierParams::Attention(a) => all(a.default_grid()),
        }
    }

    /// Which algorithm.
    pub fn kind(&self) -> ClassifierKind {
        match self {
            ClassifierParams::CitationKnn(_) => ClassifierKind::CitationKnn,
            ClassifierParams::Milr(_) => ClassifierKind::Milr,
            ClassifierParams::Svm(_) => ClassifierKind::Svm,
            ClassifierParams::MiSvm(m) => m.heuristic.kind(),
            ClassifierParams::SimpleMi(_) => ClassifierKind::SimpleMi,
            ClassifierParams::MiWrapper(_) => ClassifierKind::MiWrapper,
            ClassifierParams::MiVlad(m) => match m.encoding {
                mi_vlad::BagEncoding::Vlad => ClassifierKind::MiVlad,
                mi_vlad::BagEncoding::Fisher => ClassifierKind::MiFv,
            },
            ClassifierParams::Smil(s) => s.kind(),
            ClassifierParams::Dd(d) => d.algorithm.kind(),
            ClassifierParams::Miles(_) => ClassifierKind::Miles,
            ClassifierParams::MiGraph(_) => ClassifierKind::MiGraph,
            ClassifierParams::Attention(a) => match a.pooling {
                attention::Pooling::Gated => ClassifierKind::GatedAttention,
                _ => ClassifierKind::Attention,
            },
        }
    }

    /// Checks the parameters that do not depend on the data, before any work.
    pub fn check(&self) -> Result<()> {
        match self {
            ClassifierParams::CitationKnn(c) => c.check(),
            ClassifierParams::Milr(m) => m.check(),
            ClassifierParams::Svm(s) => s.check(),
            ClassifierParams::MiSvm(m) => m.check(),
            ClassifierParams::SimpleMi(s) => s.check(),
            ClassifierParams::MiWrapper(m) => m.check(),
            ClassifierParams::MiVlad(m) => m.check(),
            ClassifierParams::Smil(s) => s.check(),
            ClassifierParams::Dd(d) => d.check(),
            ClassifierParams::Miles(m) => m.check(),
            ClassifierParams::MiGraph(m) => m.check(),
            ClassifierParams::Attention(a) => a.check().and(attention::check_trainable()),
        }
    }

    /// Checks the parameters as [`ClassifierParams::check`] does and against the number
    /// of training bags: Citation-kNN needs at most `n_train` references and fewer citers
    /// ([`citation_knn::CitationKnn::check_fit`]); every other classifier fits on any
    /// number of bags.
    pub fn check_fit(&self, n_train: usize) -> Result<()> {
        match self {
            ClassifierParams::CitationKnn(c) => c.check_fit(n_train),
            other => other.check(),
        }
    }

    /// The parameters to use on projected instances: Citation-kNN's automatic scaling
    /// becomes none, since a projection standardises its input and rescaling its output
    /// dimensions would discard its weighting.
    #[must_use]
    pub fn after_projection(self) -> Self {
        match self {
            ClassifierParams::CitationKnn(c) => {
                ClassifierParams::CitationKnn(c.scaling(c.scaling.resolve(true)))
            }
            other => other,
        }
    }

    /// Whether the classifier takes two classes only (mi-SVM, MI-SVM, sMIL, sbMIL, DD,
    /// EM-DD); the others take any number.
    pub fn binary_only(&self) -> bool {
        matches!(
            self,
            ClassifierParams::MiSvm(_) | ClassifierParams::Smil(_) | ClassifierParams::Dd(_)
        )
    }

    /// The class weights ([`imbalance::ClassWeight`]); every classifier takes them.
    pub fn class_weight(&self) -> imbalance::ClassWeight {
        match self {
            ClassifierParams::CitationKnn(c) => c.class_weight,
            ClassifierParams::Milr(m) => m.class_weight,
            ClassifierParams::Svm(s) => s.class_weight,
            ClassifierParams::MiSvm(m) => m.class_weight,
            ClassifierParams::SimpleMi(s) => s.class_weight,
            ClassifierParams::MiWrapper(m) => m.class_weight,
            ClassifierParams::MiVlad(m) => m.class_weight,
            ClassifierParams::Smil(s) => s.class_weight,
            ClassifierParams::Dd(d) => d.class_weight,
            ClassifierParams::Miles(m) => m.class_weight,
            ClassifierParams::MiGraph(m) => m.class_weight,
            ClassifierParams::Attention(a) => a.class_weight,
        }
    }

    /// The ridge an inner CV may choose, for the classifiers that have one (MILR,
    /// SimpleMI, MI-Wrapper, miVLAD, miFV).
    pub fn ridge(&self) -> Option<f64> {
        match self {
            ClassifierParams::Milr(m) => Some(m.ridge),
            ClassifierParams::SimpleMi(s) => Some(s.ridge),
            ClassifierParams::MiWrapper(m) => Some(m.ridge),
            ClassifierParams::MiVlad(m) => Some(m.ridge),
            _ => None,
        }
    }

    /// The same parameters with the ridge `ridge`, for the classifiers that have one.
    pub fn with_ridge(self, ridge: f64) -> Option<Self> {
        match self {
            ClassifierParams::Milr(m) => Some(m.ridge(ridge).into()),
            ClassifierParams::SimpleMi(s) => Some(s.ridge(ridge).into()),
            ClassifierParams::MiWrapper(m) => Some(m.ridge(ridge).into()),
            ClassifierParams::MiVlad(m) => Some(m.ridge(ridge).into()),
            _ => None,
        }
    }

    /// Checks what only applies to the raw input attributes: MISMO's attribute skip
    /// (`scaling = weka`) names an input attribute, which projected dimensions are not.
    pub fn check_after_projection(&self) -> Result<()> {
        match self {
            ClassifierParams::Svm(svm) if svm.preprocessing == svm::Preprocessing::Weka => {
                Err(Error::parameter(
                    "scaling",
                    "weka",
                    "reproduces Weka's MISMO on the input attributes, not after a projection: use the scaling minmax",
                ))
            }
            _ => Ok(()),
        }
    }

    /// The classifier's cross-validation fast path on raw features, when it has one: a
    /// scorer that fits on a fold's training bags and scores its test bags from work
    /// computed once for every fold — Citation-kNN's bag distances (when no scaling is
    /// fitted per fold), or scored straight from the data set's bags without a copy; a
    /// set-kernel SVM's Gram matrix over all bags (the kernel uses no labels); miVLAD's
    /// per-bag moments with one centre (each depends on its bag alone). `None`:
    /// the pipeline fits each fold.
    pub(crate) fn fold_scorer<'a>(
        &self,
        data: &'a Dataset,
        progress: &dyn Progress,
        grams: &mut GramCache,
    ) -> Result<Option<FoldScorer<'a>>> {
        Ok(match *self {
            ClassifierParams::CitationKnn(c) if c.scaling.resolve(false) == Scaling::None => {
                let dist = c.all_distances(data);
                Some(Box::new(move |tr: &[usize], te: &[usize]| {
                    c.scores_from_distances(data, &dist, tr, te)
                }))
            }
            ClassifierParams::CitationKnn(c) => {
                Some(Box::new(move |tr: &[usize], te: &[usize]| {
                    c.fold_scores(data, tr, te)
                }))
            }
            ClassifierParams::Svm(svm) if svm.shares_gram() => {
                let gram = grams.get(&svm, data, progress)?;
                let labels = data.require_labels(2)?;
                let n_classes = data.n_classes();
                Some(Box::new(move |tr: &[usize], te: &[usize]| {
                    svm.scores_from_gram(data, &gram, labels, n_classes, tr, te)
                }))
            }
            ClassifierParams::MiVlad(m) => m.fold_scorer(data),
            _ => None,
        })
    }

    /// The same parameters with the class weights `w` ([`imbalance::ClassWeight`]); every
    /// classifier takes them.
    #[must_use]
    pub fn with_class_weight(self, w: imbalance::ClassWeight) -> Self {
        match self {
            ClassifierParams::CitationKnn(c) => c.class_weight(w).into(),
            ClassifierParams::Milr(m) => m.class_weight(w).into(),
            ClassifierParams::Svm(s) => s.class_weight(w).into(),
            ClassifierParams::MiSvm(m) => m.class_weight(w).into(),
            ClassifierParams::SimpleMi(s) => s.class_weight(w).into(),
            ClassifierParams::MiWrapper(m) => m.class_weight(w).into(),
            ClassifierParams::MiVlad(m) => m.class_weight(w).into(),
            ClassifierParams::Smil(s) => s.class_weight(w).into(),
            ClassifierParams::Dd(d) => d.class_weight(w).into(),
            ClassifierParams::Miles(m) => m.class_weight(w).into(),
            ClassifierParams::MiGraph(m) => m.class_weight(w).into(),
            ClassifierParams::Attention(a) => a.class_weight(w).into(),
        }
    }

    /// The steps [`ClassifierParams::fit_reporting`] reports at most: the attention
    /// network's epochs, 0 for the classifiers that report none.
    pub fn fit_steps(&self) -> u64 {
        match self {
            ClassifierParams::Attention(a) => a.epochs as u64,
            _ => 0,
        }
    }

    /// [`ClassifierParams::fit`], reporting the classifier's own stages (the attention
    /// network's epochs) to `progress`.
    pub fn fit_reporting<'a>(
        &self,
        train: impl Into<Bags<'a>>,
        progress: &dyn Progress,
    ) -> Result<ClassifierModel> {
        match self {
            ClassifierParams::Attention(a) => Ok(ClassifierModel::Attention(
                a.fit_with_progress(train, progress)?,
            )),
            _ => self.fit(train),
        }
    }

    /// Fits the chosen classifier.
    pub fn fit<'a>(&self, train: impl Into<Bags<'a>>) -> Result<ClassifierModel> {
        let train = train.into();
        let (data, train) = (train.dataset(), &*train.indices());
        Ok(match self {
            ClassifierParams::CitationKnn(c) => {
                ClassifierModel::CitationKnn(c.fit(data.select(train))?)
            }
            ClassifierParams::Milr(m) => ClassifierModel::Milr(m.fit(data.select(train))?),
            ClassifierParams::Svm(s) => ClassifierModel::Svm(s.fit(data.select(train))?),
            ClassifierParams::MiSvm(m) => ClassifierModel::MiSvm(m.fit(data.select(train))?),
            ClassifierParams::SimpleMi(s) => ClassifierModel::SimpleMi(s.fit(data.select(train))?),
            ClassifierParams::MiWrapper(m) => {
                ClassifierModel::MiWrapper(m.fit(data.select(train))?)
            }
            ClassifierParams::MiVlad(m) => {
                let model = m.fit(data.select(train))?;
                match m.encoding {
                    mi_vlad::BagEncoding::Vlad => ClassifierModel::MiVlad(model),
                    mi_vlad::BagEncoding::Fisher => ClassifierModel::MiFv(model),
                }
            }
            ClassifierParams::Smil(s) => ClassifierModel::Smil(s.fit(data.select(train))?),
            ClassifierParams::Dd(d) => ClassifierModel::Dd(d.fit(data.select(train))?),
            ClassifierParams::Miles(m) => ClassifierModel::Miles(m.fit(data.select(train))?),
            ClassifierParams::MiGraph(m) => ClassifierModel::MiGraph(m.fit(data.select(train))?),
            ClassifierParams::Attention(a) => {
                ClassifierModel::Attention(a.fit(data.select(train))?)
            }
        })
    }
}

/// The classifier and the settings an inner CV may choose, in the words of the guide
/// (e.g. `svm (kand kernel, rho 0.02, map none, C 10)`): what reports say was chosen.
impl std::fmt::Display for ClassifierParams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = self.kind();
        match self {
            ClassifierParams::CitationKnn(c) => write!(
                f,
                "{kind} (R {}, C {}, {} Hausdorff rank {}, scaling {})",
                c.references, c.citers, c.hausdorff, c.rank, c.scaling
            ),
            ClassifierParams::Milr(m) if m.pooling == milr::Pooling::Softmax => write!(
                f,
                "{kind} ({} pooling, beta {}, ridge {})",
                m.pooling, m.beta, m.ridge
            ),
            ClassifierParams::Milr(m) => {
                write!(f, "{kind} ({} pooling, ridge {})", m.pooling, m.ridge)
            }
            ClassifierParams::Svm(s) => {
                let cost = s.settings.cost;
                match s.kernel {
                    svm::SetKernel::Box { kernel, .. } => write!(
                        f,
                        "{kind} ({} kernel, rho {}, map {}, C {cost})",
                        crate::kernel::SetKernelName::Box(kernel),
                        s.settings.rho,
                        s.settings.map
                    ),
                    svm::SetKernel::Nsk { gamma } => match gamma {
                        Some(g) => write!(f, "{kind} (nsk kernel, gamma {g}, C {cost})"),
                        None => write!(f, "{kind} (nsk kernel, C {cost})"),
                    },
                    svm::SetKernel::MiRbf { gamma } => write!(
                        f,
                        "{kind} (mi-rbf kernel, gamma {gamma}, C {cost}, scaling {})",
                        s.preprocessing
                    ),
                }
            }
            ClassifierParams::MiSvm(m) => match m.gamma {
                Some(g) => write!(f, "{kind} ({} kernel, gamma {g}, C {})", m.kernel, m.cost),
                None => write!(f, "{kind} ({} kernel, C {})", m.kernel, m.cost),
            },
            ClassifierParams::SimpleMi(s) => {
                write!(f, "{kind} ({} summary, ridge {})", s.summary, s.ridge)
            }
            ClassifierParams::MiWrapper(m) => {
                write!(f, "{kind} ({} combination, ridge {})", m.combine, m.ridge)
            }
            ClassifierParams::MiVlad(m) => {
                write!(f, "{kind} (codebook {}, ridge {})", m.codebook, m.ridge)
            }
            ClassifierParams::Smil(s) => {
                let gamma = s.gamma.map(|g| format!(", gamma {g}")).unwrap_or_default();
                let eta = match s.variant {
                    smil::Variant::Balanced => format!(", eta {}", s.eta),
                    smil::Variant::Sparse => String::new(),
                };
                let bias = match s.bias {
                    smil::Bias::TrainingCut => String::new(),
                    other => format!(", {other} bias"),
                };
                write!(
                    f,
                    "{kind} ({} kernel{gamma}, C {}{eta}{bias})",
                    s.kernel, s.cost
                )
            }
            ClassifierParams::Dd(d) => match d.algorithm {
                dd::DdAlgorithm::Dd => write!(f, "{kind} (at most {} starts)", d.max_restarts),
                dd::DdAlgorithm::EmDd => write!(
                    f,
                    "{kind} (at most {} starts, {} E/M rounds)",
                    d.max_restarts, d.max_iterations
                ),
            },
            ClassifierParams::Miles(m) => match m.gamma {
                Some(g) => write!(f, "{kind} (gamma {g}, C {}, mu {})", m.cost, m.mu),
                None => write!(f, "{kind} (C {}, mu {})", m.cost, m.mu),
            },
            ClassifierParams::MiGraph(m) => {
                let norm = match m.norm {
                    mi_graph::GraphNorm::Sum => "",
                    mi_graph::GraphNorm::Sqrt => ", sqrt normalisation",
                };
                match m.gamma {
                    Some(g) => write!(f, "{kind} (gamma {g}, C {}{norm})", m.cost),
                    None => write!(
                        f,
                        "{kind} (gamma {}/features, C {}{norm})",
                        m.gamma_factor, m.cost
                    ),
                }
            }
            ClassifierParams::Attention(a) => write!(
                f,
                "{kind} ({} pooling, hidden {}, weight decay {})",
                a.pooling, a.hidden, a.weight_decay
            ),
        }
    }
}

impl From<citation_knn::CitationKnn> for ClassifierParams {
    fn from(c: citation_knn::CitationKnn) -> Self {
        ClassifierParams::CitationKnn(c)
    }
}

impl From<milr::Milr> for ClassifierParams {
    fn from(m: milr::Milr) -> Self {
        ClassifierParams::Milr(m)
    }
}

impl From<mi_svm::MiSvm> for ClassifierParams {
    fn from(m: mi_svm::MiSvm) -> Self {
        ClassifierParams::MiSvm(m)
    }
}

impl From<svm::SetKernelSvm> for ClassifierParams {
    fn from(s: svm::SetKernelSvm) -> Self {
        ClassifierParams::Svm(s)
    }
}

impl From<simple_mi::SimpleMi> for ClassifierParams {
    fn from(s: simple_mi::SimpleMi) -> Self {
        ClassifierParams::SimpleMi(s)
    }
}

impl From<mi_wrapper::MiWrapper> for ClassifierParams {
    fn from(m: mi_wrapper::MiWrapper) -> Self {
        ClassifierParams::MiWrapper(m)
    }
}

impl From<mi_vlad::MiVlad> for ClassifierParams {
    fn from(m: mi_vlad::MiVlad) -> Self {
        ClassifierParams::MiVlad(m)
    }
}

impl From<smil::Smil> for ClassifierParams {
    fn from(s: smil::Smil) -> Self {
        ClassifierParams::Smil(s)
    }
}

impl From<dd::Dd> for ClassifierParams {
    fn from(d: dd::Dd) -> Self {
        ClassifierParams::Dd(d)
    }
}

impl From<mi_graph::MiGraph> for ClassifierParams {
    fn from(m: mi_graph::MiGraph) -> Self {
        ClassifierParams::MiGraph(m)
    }
}

impl From<attention::AttentionMil> for ClassifierParams {
    fn from(a: attention::AttentionMil) -> Self {
        ClassifierParams::Attention(a)
    }
}

impl From<miles::Miles> for ClassifierParams {
    fn from(m: miles::Miles) -> Self {
        ClassifierParams::Miles(m)
    }
}

/// A fitted classifier, one variant per algorithm.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ClassifierModel {
    /// Citation-kNN.
    CitationKnn(CitationKnnModel),
    /// MILR.
    Milr(MilrModel),
    /// SVM over bags.
    Svm(SvmModel),
    /// mi-SVM or MI-SVM.
    MiSvm(MiSvmModel),
    /// SimpleMI.
    SimpleMi(SimpleMiModel),
    /// MI-Wrapper.
    MiWrapper(MiWrapperModel),
    /// miVLAD.
    MiVlad(MiVladModel),
    /// miFV.
    MiFv(MiVladModel),
    /// sMIL or sbMIL.
    Smil(SmilModel),
    /// DD or EM-DD.
    Dd(DdModel),
    /// MILES.
    Miles(MilesModel),
    /// mi-Graph.
    MiGraph(MiGraphModel),
    /// Attention-based deep MIL (any pooling).
    Attention(AttentionModel),
}

impl ClassifierModel {
    /// The scores of a vote of `members` (best-ranked first) on `bags`: each member
    /// scores them and [`BagScores::vote`] takes the majority; a single member scores
    /// alone.
    pub fn vote_scores<'a>(
        members: &[&ClassifierModel],
        bags: impl Into<Bags<'a>>,
    ) -> Result<BagScores> {
        let bags = bags.into();
        match members {
            [one] => one.scores(bags),
            _ => {
                let scored = members
                    .iter()
                    .map(|m| m.scores(bags.clone()))
                    .collect::<Result<Vec<_>>>()?;
                Ok(BagScores::vote(&scored))
            }
        }
    }

    /// Which algorithm.
    pub fn kind(&self) -> ClassifierKind {
        match self {
            ClassifierModel::CitationKnn(_) => ClassifierKind::CitationKnn,
            ClassifierModel::Milr(_) => ClassifierKind::Milr,
            ClassifierModel::Svm(_) => ClassifierKind::Svm,
            ClassifierModel::MiSvm(m) => m.params.heuristic.kind(),
            ClassifierModel::SimpleMi(_) => ClassifierKind::SimpleMi,
            ClassifierModel::MiWrapper(_) => ClassifierKind::MiWrapper,
            ClassifierModel::MiVlad(_) => ClassifierKind::MiVlad,
            ClassifierModel::MiFv(_) => ClassifierKind::MiFv,
            ClassifierModel::Smil(m) => m.params.kind(),
            ClassifierModel::Dd(m) => m.params.algorithm.kind(),
            ClassifierModel::Miles(_) => ClassifierKind::Miles,
            ClassifierModel::MiGraph(_) => ClassifierKind::MiGraph,
            ClassifierModel::Attention(m) => ClassifierParams::Attention(m.params).kind(),
        }
    }

    pub(crate) fn validate(&self) -> Result<()> {
        match self {
            ClassifierModel::CitationKnn(m) => m.validate(),
            ClassifierModel::Milr(m) => m.validate(),
            ClassifierModel::Svm(m) => m.validate(),
            ClassifierModel::MiSvm(m) => m.validate(),
            ClassifierModel::SimpleMi(m) => m.validate(),
            ClassifierModel::MiWrapper(m) => m.validate(),
            ClassifierModel::Smil(m) => m.validate(),
            ClassifierModel::MiVlad(m) | ClassifierModel::MiFv(m) => {
                m.validate()?;
                if ClassifierParams::MiVlad(m.params).kind() != self.kind() {
                    return Err(Error::Model(format!(
                        "a {} model with the {} encoding",
                        self.kind(),
                        m.params.encoding
                    )));
                }
                Ok(())
            }
            ClassifierModel::Dd(m) => m.validate(),
            ClassifierModel::Miles(m) => m.validate(),
            ClassifierModel::MiGraph(m) => m.validate(),
            ClassifierModel::Attention(m) => m.validate(),
        }
    }
}

impl BagModel for ClassifierModel {
    fn n_classes(&self) -> usize {
        match self {
            ClassifierModel::CitationKnn(m) => m.n_classes(),
            ClassifierModel::Milr(m) => m.n_classes(),
            ClassifierModel::Svm(m) => m.n_classes(),
            ClassifierModel::MiSvm(m) => m.n_classes(),
            ClassifierModel::SimpleMi(m) => m.n_classes(),
            ClassifierModel::MiWrapper(m) => m.n_classes(),
            ClassifierModel::MiVlad(m) | ClassifierModel::MiFv(m) => m.n_classes(),
            ClassifierModel::Smil(m) => m.n_classes(),
            ClassifierModel::Dd(m) => m.n_classes(),
            ClassifierModel::Miles(m) => m.n_classes(),
            ClassifierModel::MiGraph(m) => m.n_classes(),
            ClassifierModel::Attention(m) => m.n_classes(),
        }
    }

    fn input_dim(&self) -> usize {
        match self {
            ClassifierModel::CitationKnn(m) => m.input_dim(),
            ClassifierModel::Milr(m) => m.input_dim(),
            ClassifierModel::Svm(m) => m.input_dim(),
            ClassifierModel::MiSvm(m) => m.input_dim(),
            ClassifierModel::SimpleMi(m) => m.input_dim(),
            ClassifierModel::MiWrapper(m) => m.input_dim(),
            ClassifierModel::MiVlad(m) | ClassifierModel::MiFv(m) => m.input_dim(),
            ClassifierModel::Smil(m) => m.input_dim(),
            ClassifierModel::Dd(m) => m.input_dim(),
            ClassifierModel::Miles(m) => m.input_dim(),
            ClassifierModel::MiGraph(m) => m.input_dim(),
            ClassifierModel::Attention(m) => m.input_dim(),
        }
    }

    fn scores<'a>(&self, bags: impl Into<Bags<'a>>) -> Result<BagScores> {
        let bags = bags.into();
        let (data, bags) = (bags.dataset(), &*bags.indices());
        match self {
            ClassifierModel::CitationKnn(m) => m.scores(data.select(bags)),
            ClassifierModel::Milr(m) => m.scores(data.select(bags)),
            ClassifierModel::Svm(m) => m.scores(data.select(bags)),
            ClassifierModel::MiSvm(m) => m.scores(data.select(bags)),
            ClassifierModel::SimpleMi(m) => m.scores(data.select(bags)),
            ClassifierModel::MiWrapper(m) => m.scores(data.select(bags)),
            ClassifierModel::MiVlad(m) | ClassifierModel::MiFv(m) => m.scores(data.select(bags)),
            ClassifierModel::Smil(m) => m.scores(data.select(bags)),
            ClassifierModel::Dd(m) => m.scores(data.select(bags)),
            ClassifierModel::Miles(m) => m.scores(data.select(bags)),
            ClassifierModel::MiGraph(m) => m.scores(data.select(bags)),
            ClassifierModel::Attention(m) => m.scores(data.select(bags)),
        }
    }

    fn explain<'a>(&self, bags: impl Into<Bags<'a>>) -> Result<Vec<Explanation>> {
        let bags = bags.into();
        let (data, bags) = (bags.dataset(), &*bags.indices());
        match self {
            ClassifierModel::CitationKnn(m) => m.explain(data.select(bags)),
            ClassifierModel::Milr(m) => m.explain(data.select(bags)),
            ClassifierModel::Svm(m) => m.explain(data.select(bags)),
            ClassifierModel::MiSvm(m) => m.explain(data.select(bags)),
            ClassifierModel::SimpleMi(m) => m.explain(data.select(bags)),
            ClassifierModel::MiWrapper(m) => m.explain(data.select(bags)),
            ClassifierModel::MiVlad(m) | ClassifierModel::MiFv(m) => m.explain(data.select(bags)),
            ClassifierModel::Smil(m) => m.explain(data.select(bags)),
            ClassifierModel::Dd(m) => m.explain(data.select(bags)),
            ClassifierModel::Miles(m) => m.explain(data.select(bags)),
            ClassifierModel::MiGraph(m) => m.explain(data.select(bags)),
            ClassifierModel::Attention(m) => m.explain(data.select(bags)),
        }
    }
}

/// The error for bags of the wrong dimension.
pub(crate) fn check_dim(data: &Dataset, expected: usize) -> Result<()> {
    if data.dim() != expected {
        return Err(Error::data(
            data.name(),
            format!(
                "{} features but the model was fitted on {expected}",
                data.dim()
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::BagScores;
    use rand::{RngExt, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    /// A vote's label against counting by hand: the class with the most votes, a tie
    /// among the most going to the first member's class when it is among them.
    #[test]
    fn a_vote_is_the_majority_with_ties_to_the_first_member() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        for case in 0..500 {
            let (k, classes, bags) = (1 + case % 6, 2 + case % 3, 5);
            let members: Vec<BagScores> = (0..k)
                .map(|_| {
                    let scores = (0..bags * classes).map(|_| rng.random::<f64>()).collect();
                    BagScores::new(classes, scores)
                })
                .collect();
            let vote = BagScores::vote(&members);
            for i in 0..bags {
                let mut counts = vec![0; classes];
                for m in &members {
                    counts[m.label(i)] += 1;
                }
                let most = *counts.iter().max().unwrap();
                let first = members[0].label(i);
                let expected = if counts[first] == most {
                    first
                } else {
                    counts.iter().position(|&c| c == most).unwrap()
                };
                assert_eq!(vote.label(i), expected, "case {case}, bag {i}: {counts:?}");
            }
        }
    }
}
