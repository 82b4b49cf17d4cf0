//! The saved host model: an optional projection fitted on the training bags and a bag
//! classifier fitted on the projected bags, as versioned JSON. `mil train` writes it,
//! `mil predict` reads it, `mil export` converts it for the core. Reading validates every
//! part and names the file in every error.

use std::path::Path;

use serde::{Deserialize, Serialize};

pub use crate::classifier::ClassifierModel;
use crate::classifier::{BagModel, BagScores};
use crate::data::Bags;

use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::explain::Explanation;
use crate::progress::Progress;
use crate::projection::LinearProjection;

/// The `format` field of every saved model.
pub const FORMAT: &str = "mil-host-model";
/// The current format version.
pub const VERSION: u32 = 1;

/// Bags per progress step when scoring an SVM model.
const SVM_CHUNK: usize = 8;

/// What a pipeline chose (or was given) in one fit, as `mil cv`/`mil train` report it and
/// a saved model records it ([`HostModel::chosen`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Chosen {
    /// The classifier and its settings ([`crate::classifier::ClassifierParams`]'s
    /// `Display`), when the grid held more than one classifier setting besides the ridge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classifier: Option<String>,
    /// The projection's output dimension.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dim: Option<usize>,
    /// The projection's α.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alpha: Option<f64>,
    /// MILR's ridge.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ridge: Option<f64>,
    /// The other members of a vote ([`crate::pipeline::Pipeline::vote`]), in rank order,
    /// as `classifier` names the best-ranked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub voters: Vec<String>,
    /// What the inner CV ranked the candidates by: `auroc` or `accuracy`
    /// ([`crate::pipeline::Selection`]); absent when no inner CV ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<String>,
    /// Every candidate the inner CV scored, best first, with its score: how far the
    /// chosen one was ahead of the others.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inner: Vec<InnerScore>,
}

/// One candidate's inner-CV score ([`Chosen::inner`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InnerScore {
    /// The candidate, named as [`Chosen`]'s `Display` names a choice.
    pub candidate: String,
    /// Its pooled inner out-of-fold AUROC or its share of inner test bags predicted
    /// right ([`Chosen::metric`]); `None` where undefined (NaN scores, or one class
    /// among the inner test bags).
    pub score: Option<f64>,
}

impl Chosen {
    /// The same choice with the classifiers `voters` (in rank order) voting beside it.
    #[must_use]
    pub fn with_voters(
        mut self,
        voters: impl IntoIterator<Item = crate::classifier::ClassifierParams>,
    ) -> Self {
        self.voters = voters.into_iter().map(|c| c.to_string()).collect();
        self
    }

    /// The chosen candidate's inner score and the runner-up's, e.g. "inner AUROC 0.912,
    /// runner-up 0.905, 12 candidates"; `None` without an inner CV.
    ///
    /// ```
    /// use mil_toolkit::classifier::milr::{Milr, Pooling};
    /// use mil_toolkit::pipeline::{ClassifierGrid, Pipeline};
    ///
    /// let data = mil_toolkit::data::load("musk1")?;
    /// let grid = ClassifierGrid::of(vec![
    ///     Milr::default().pooling(Pooling::Mean).into(),
    ///     Milr::default().pooling(Pooling::Max).into(),
    /// ])?;
    /// let chosen = Pipeline::new(grid).fit(&data)?.chosen.unwrap();
    /// assert_eq!(chosen.inner.len(), 2);
    /// assert_eq!(chosen.inner[0].candidate, chosen.to_string());
    /// assert!(chosen.margin().unwrap().starts_with("inner accuracy"));
    /// # Ok::<(), mil_toolkit::Error>(())
    /// ```
    pub fn margin(&self) -> Option<String> {
        let metric = self.metric.as_deref()?;
        let metric = if metric == "auroc" { "AUROC" } else { metric };
        let show = |s: Option<f64>| s.map_or("n/a".to_string(), |s| format!("{s:.3}"));
        let best = self.inner.first()?;
        Some(match self.inner.get(1) {
            Some(next) => format!(
                "inner {metric} {}, runner-up {}, {} candidates",
                show(best.score),
                show(next.score),
                self.inner.len()
            ),
            None => format!("inner {metric} {}", show(best.score)),
        })
    }

    /// The choice with its [`Chosen::margin`] in brackets, as the reports print it.
    ///
    /// ```
    /// use mil_toolkit::model::Chosen;
    /// use mil_toolkit::pipeline::InnerScore;
    ///
    /// let mut chosen = Chosen { ridge: Some(1.0), ..Chosen::default() };
    /// assert_eq!(chosen.with_margin(), "ridge 1");
    /// chosen.metric = Some("auroc".into());
    /// chosen.inner = vec![InnerScore { candidate: "ridge 1".into(), score: Some(0.9) }];
    /// assert_eq!(chosen.with_margin(), "ridge 1 [inner AUROC 0.900]");
    /// ```
    pub fn with_margin(&self) -> String {
        match self.margin() {
            Some(m) => format!("{self} [{m}]"),
            None => self.to_string(),
        }
    }
}

impl std::fmt::Display for Chosen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        if let Some(c) = &self.classifier {
            parts.push(c.clone());
        }
        if let Some(d) = self.dim {
            parts.push(format!("dim {d}"));
        }
        if let Some(a) = self.alpha {
            parts.push(format!("alpha {a}"));
        }
        // A named classifier states its own ridge.
        if let (Some(r), None) = (self.ridge, &self.classifier) {
            parts.push(format!("ridge {r}"));
        }
        if !self.voters.is_empty() {
            parts.push(format!("voting with {}", self.voters.join("; ")));
        }
        f.write_str(&parts.join(", "))
    }
}

/// The fields of a saved model's JSON checked before the model is read; serde skips the
/// others without building them.
#[derive(Deserialize)]
struct Envelope {
    format: Option<serde_json::Value>,
    version: Option<serde_json::Value>,
    checksum: Option<serde_json::Value>,
}

/// A complete saved model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostModel {
    /// Always [`FORMAT`].
    pub format: String,
    /// Always [`VERSION`] when written by this build.
    pub version: u32,
    /// Labels as written in the training file, by class index.
    pub class_names: Vec<String>,
    /// Feature dimension of the raw input.
    pub input_dim: usize,
    /// Projection applied to every instance first, if any.
    pub projection: Option<LinearProjection>,
    /// The classifier on the (projected) bags; in a vote, the best-ranked member.
    pub classifier: ClassifierModel,
    /// The other members of a vote, in rank order ([`crate::pipeline::Pipeline::vote`]):
    /// with them the model predicts the majority of the members' labels
    /// ([`BagScores::vote`]); empty: `classifier` alone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub voters: Vec<ClassifierModel>,
    /// The training data as `mil train` was given it (built-in name or path), so that
    /// `mil export` can quantise inputs and measure its error on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub training_data: Option<String>,
    /// [`crate::shard::Fingerprint::dataset`] of the training data, so that a later
    /// reading of `training_data` that finds other content is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub training_fingerprint: Option<String>,
    /// The binary decision threshold on the positive score (given, or chosen on the
    /// training bags: [`crate::pipeline::Pipeline::threshold`]); `None`: the larger class
    /// score wins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<f64>,
    /// The grid point an inner CV chose (or the projection settings fitted), when the
    /// pipeline had a grid or a projection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chosen: Option<Chosen>,
}

impl HostModel {
    /// Wraps fitted parts.
    pub fn new(
        class_names: Vec<String>,
        input_dim: usize,
        projection: Option<LinearProjection>,
        classifier: ClassifierModel,
    ) -> Self {
        HostModel {
            format: FORMAT.into(),
            version: VERSION,
            class_names,
            input_dim,
            projection,
            classifier,
            voters: Vec::new(),
            training_data: None,
            training_fingerprint: None,
            threshold: None,
            chosen: None,
        }
    }

    /// Scores the bags `bags` of raw data (projecting first when the model has a
    /// projection), labelled by the model's threshold when it has one.
    pub fn scores<'a>(&self, bags: impl Into<Bags<'a>>) -> Result<BagScores> {
        let bags = bags.into();
        let (data, bags) = (bags.dataset(), &*bags.indices());
        if data.dim() != self.input_dim {
            return Err(Error::data(
                data.name(),
                format!(
                    "{} features but the model was trained on {}",
                    data.dim(),
                    self.input_dim
                ),
            ));
        }
        let scores = match &self.projection {
            Some(p) => self.classifier.scores(p.transform(data)?.select(bags))?,
            None => ClassifierModel::vote_scores(&self.members(), data.select(bags))?,
        }
        .with_threshold(self.threshold);
        // A model read from a file can hold finite numbers whose products overflow.
        if let Some(i) = (0..scores.len()).find(|&i| scores.row(i).iter().any(|s| !s.is_finite())) {
            return Err(Error::data(
                "model",
                format!(
                    "gives bag {} a non-finite score: its numbers overflow; the model file is corrupt",
                    data.bag_id(bags[i])
                ),
            ));
        }
        Ok(scores)
    }

    /// Explains the prediction of each of the bags `bags` of raw data
    /// ([`crate::explain`]): instance indices are those of the raw bags; instance scores
    /// are computed on the projected instances when the model has a projection.
    pub fn explain<'a>(&self, bags: impl Into<Bags<'a>>) -> Result<Vec<Explanation>> {
        self.check_single("explaining")?;
        let bags = bags.into();
        let (data, bags) = (bags.dataset(), &*bags.indices());
        if data.dim() != self.input_dim {
            return Err(Error::data(
                data.name(),
                format!(
                    "{} features but the model was trained on {}",
                    data.dim(),
                    self.input_dim
                ),
            ));
        }
        match &self.projection {
            Some(p) => self.classifier.explain(p.transform(data)?.select(bags)),
            None => self.classifier.explain(data.select(bags)),
        }
    }

    /// The instance scores of the bags `bags` of raw data
    /// ([`ClassifierModel::predict_instances`]): instances are those of the raw bags, scored
    /// after the model's projection when it has one, as [`HostModel::explain`] scores them.
    /// Refused ([`Error::Unsupported`]) for a classifier that defines no instance score.
    pub fn predict_instances<'a>(
        &self,
        bags: impl Into<Bags<'a>>,
    ) -> Result<crate::instances::InstancePredictions> {
        self.check_single("scoring the instances of")?;
        self.classifier.check_instance_scores()?;
        let bags = bags.into();
        let predictions = crate::instances::InstancePredictions::new(
            self.classifier.instance_score_kind(),
            self.classifier.instance_threshold(),
            self.explain(bags.clone())?,
        )?;
        // A model read from a file can hold finite numbers whose products overflow.
        if let Some(b) = predictions
            .scores
            .iter()
            .position(|s| s.iter().any(|v| !v.is_finite()))
        {
            return Err(Error::data(
                "model",
                format!(
                    "gives an instance of bag {} a non-finite score: its numbers overflow; the model file is corrupt",
                    bags.dataset().bag_id(bags.indices()[b])
                ),
            ));
        }
        Ok(predictions)
    }

    /// The scores of every bag of `data`, as [`HostModel::scores`], reporting progress. A
    /// set-kernel SVM estimates its kernel against every stored bag for each bag, and
    /// each bag's estimates depend on that bag alone, so it is scored in chunks with
    /// progress; the other models in one call (Citation-kNN with Weka's scaling depends on
    /// the order of the bags it predicts).
    pub fn scores_with_progress(
        &self,
        data: &Dataset,
        progress: &dyn Progress,
    ) -> Result<BagScores> {
        if !matches!(self.classifier, ClassifierModel::Svm(_)) || !self.voters.is_empty() {
            return self.scores(data);
        }
        progress.start("scoring bags", data.n_bags() as u64);
        let mut scores: Option<BagScores> = None;
        for first in (0..data.n_bags()).step_by(SVM_CHUNK) {
            let chunk: Vec<usize> = (first..data.n_bags().min(first + SVM_CHUNK)).collect();
            let s = self.scores(&data.copy_bags(&chunk))?;
            match &mut scores {
                Some(acc) => acc.extend(&s),
                None => scores = Some(s),
            }
            progress.advance(chunk.len() as u64);
        }
        progress.finish();
        match scores {
            Some(s) => Ok(s),
            None => self.scores(data),
        }
    }

    /// The predicted class index of each of the bags `bags` of raw data.
    pub fn predict<'a>(&self, bags: impl Into<Bags<'a>>) -> Result<Vec<usize>> {
        let bags = bags.into();
        let (data, bags) = (bags.dataset(), &*bags.indices());
        Ok(self.scores(data.select(bags))?.labels())
    }

    /// Writes the model as JSON, with a checksum of its content that [`HostModel::load`]
    /// verifies.
    pub fn save(&self, path: &Path) -> Result<()> {
        save_with_checksum(self, path)
    }

    /// Reads and validates a model written by [`HostModel::save`].
    pub fn load(path: &Path) -> Result<HostModel> {
        let text = crate::data::read_json_text(path, "a saved model")?;
        Self::parse(&path.display().to_string(), &text)
    }

    /// Parses and validates model JSON; `file` names the source in errors.
    pub fn parse(file: &str, text: &str) -> Result<HostModel> {
        let bad = |line: usize, field: &str, problem: String| Error::Parse {
            file: file.to_string(),
            line,
            field: field.to_string(),
            problem,
        };
        // The envelope first, skipping the rest unbuilt; then the model straight from the
        // text (a JSON tree of a model holding a Gram matrix would take several times the
        // file's size).
        let envelope: Envelope = serde_json::from_str(text)
            .map_err(|e| bad(e.line(), "json", format!("not a JSON model: {e}")))?;
        match envelope.format.as_ref().and_then(|f| f.as_str()) {
            Some(FORMAT) => {}
            other => {
                return Err(bad(
                    1,
                    "format",
                    format!("expected \"{FORMAT}\", found {other:?}"),
                ))
            }
        }
        match envelope.version.as_ref().and_then(|v| v.as_u64()) {
            Some(v) if v == VERSION as u64 => {}
            other => {
                return Err(bad(
                    1,
                    "version",
                    format!("this build reads version {VERSION}, found {other:?}"),
                ))
            }
        }
        let model: HostModel = serde_json::from_str(text)
            .map_err(|e| bad(1, "model", format!("malformed model: {e}")))?;
        check_checksum(&model, envelope.checksum).map_err(|p| bad(1, "checksum", p))?;
        model
            .validate()
            .map_err(|e| bad(1, "model", e.to_string()))?;
        Ok(model)
    }

    /// The classifier and the other members of its vote, best-ranked first.
    pub fn members(&self) -> Vec<&ClassifierModel> {
        std::iter::once(&self.classifier)
            .chain(&self.voters)
            .collect()
    }

    /// Refuses ([`Error::Unsupported`]) `what` on a vote, which has no single classifier
    /// whose reasons to give.
    pub fn check_single(&self, what: &str) -> Result<()> {
        check_single(self.voters.len() + 1, what)
    }

    fn validate(&self) -> Result<()> {
        self.classifier.validate()?;
        for voter in &self.voters {
            voter.validate()?;
            if voter.n_classes() != self.classifier.n_classes() {
                return Err(Error::Model(
                    "the members of a vote differ in their classes".into(),
                ));
            }
        }
        if !self.voters.is_empty() && (self.projection.is_some() || self.threshold.is_some()) {
            return Err(Error::Model(
                "a vote has neither a projection nor a threshold".into(),
            ));
        }
        if let Some(t) = self.threshold {
            if !t.is_finite() || self.classifier.n_classes() != 2 {
                return Err(Error::Model(
                    "a threshold must be finite and the model binary".into(),
                ));
            }
        }
        if self.class_names.len() != self.classifier.n_classes() {
            return Err(Error::Model(
                "class names do not match the classifier's classes".into(),
            ));
        }
        let inner_dim = match &self.projection {
            Some(p) => {
                let d = p.input_dim();
                if d != self.input_dim
                    || p.scale.len() != d
                    || p.matrix.len() != d * p.output_dim
                    || p.output_dim == 0
                {
                    return Err(Error::Model("projection of inconsistent dimensions".into()));
                }
                if p.mean
                    .iter()
                    .chain(&p.scale)
                    .chain(&p.matrix)
                    .any(|v| !v.is_finite())
                {
                    return Err(Error::Model("projection holds non-finite values".into()));
                }
                p.output_dim
            }
            None => self.input_dim,
        };
        for c in self.members() {
            if inner_dim != c.input_dim() {
                return Err(Error::Model(format!(
                    "the classifier expects {} features but receives {inner_dim}",
                    c.input_dim()
                )));
            }
        }
        Ok(())
    }
}

/// Refuses ([`Error::Unsupported`]) `what` on a vote of `members` classifiers (more than
/// one), which has no single classifier whose reasons to give or to export.
pub fn check_single(members: usize, what: &str) -> Result<()> {
    match members {
        0 | 1 => Ok(()),
        n => Err(Error::Unsupported(format!(
            "{what} a vote of {n} classifiers (a vote of 1 is a single classifier)"
        ))),
    }
}

/// The JSON of a saved model with a `checksum` field: [`crate::shard::content_checksum`]
/// of the model itself. JSON numbers round-trip exactly, so a model read back hashes to
/// the same value unless a field was edited, added or deleted.
pub(crate) fn with_checksum<T: Serialize>(model: &T) -> Result<String> {
    let mut text = Vec::new();
    write_with_checksum(model, &mut text).map_err(|e| Error::Numerical {
        method: "model serialisation",
        reason: e.to_string(),
    })?;
    // serde_json writes UTF-8.
    Ok(String::from_utf8(text).expect("JSON is UTF-8"))
}

/// Writes [`with_checksum`]'s JSON to `path` atomically, as it is serialised: a model
/// that holds a Gram matrix has JSON several times its own size, which is never held in
/// memory.
pub(crate) fn save_with_checksum<T: Serialize>(model: &T, path: &Path) -> Result<()> {
    crate::atomic_write::write_atomic_with(path, |w| write_with_checksum(model, w)).map_err(
        |source| Error::Io {
            path: path.to_path_buf(),
            source,
        },
    )
}

/// `{"checksum":"…",` followed by the model's own JSON object after its `{`.
fn write_with_checksum<T: Serialize>(
    model: &T,
    out: &mut impl std::io::Write,
) -> std::io::Result<()> {
    let checksum =
        crate::shard::content_checksum(model).map_err(|e| std::io::Error::other(e.to_string()))?;
    write!(out, "{{\"checksum\":\"{checksum}\",")?;
    let mut body = AfterOpeningBrace { out, opened: false };
    serde_json::to_writer(&mut body, model).map_err(std::io::Error::other)
}

/// Passes on a JSON object's text without its opening `{` (a model is a non-empty
/// object, so what follows it is a field).
struct AfterOpeningBrace<'w, W> {
    out: &'w mut W,
    opened: bool,
}

impl<W: std::io::Write> std::io::Write for AfterOpeningBrace<'_, W> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let mut rest = bytes;
        if !self.opened {
            match rest.split_first() {
                Some((b'{', after)) => {
                    self.opened = true;
                    rest = after;
                }
                Some(_) => {
                    return Err(std::io::Error::other("a model serialises to a JSON object"))
                }
                None => return Ok(0),
            }
        }
        self.out.write_all(rest)?;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// Checks a model read back against the checksum it was saved with. Models saved without
/// one (by builds before it was written) pass with the structural checks alone.
pub(crate) fn check_checksum<T: Serialize>(
    model: &T,
    checksum: Option<serde_json::Value>,
) -> std::result::Result<(), String> {
    let Some(written) = checksum else {
        return Ok(());
    };
    let actual = crate::shard::content_checksum(model).map_err(|e| e.to_string())?;
    if written.as_str() == Some(actual.as_str()) {
        Ok(())
    } else {
        Err("damaged or edited: the model's content does not match its checksum".into())
    }
}
