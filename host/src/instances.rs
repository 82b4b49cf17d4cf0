//! Instance-level predictions: which instances made a bag positive.
//!
//! [`ClassifierModel::predict_instances`] (and [`crate::model::HostModel::predict_instances`]
//! for a saved model with its projection) gives every instance of the asked bags the score
//! the model itself defines — the one [`crate::explain`] reports, computed in the same
//! place — its kind ([`InstanceScore`]), the witness (the first highest-scoring instance)
//! and, where the method defines one, an instance label:
//!
//! - [`InstanceScore::Decision`] (mi-SVM, MI-SVM, sMIL, sbMIL): positive when f(x) > 0,
//!   the rule a bag's own score f follows (a bag is labelled positive when its score is
//!   above 0, ties to the negative class);
//! - [`InstanceScore::Probability`] on two classes (MILR, MI-Wrapper, DD, EM-DD): positive
//!   when p > 0.5, the rule of a bag's probability. On more than two classes (MILR and
//!   MI-Wrapper one-vs-rest) the probability is of the predicted class's sub-problem, and no
//!   instance label is given: p > 0.5 would say "of the bag's predicted class", not
//!   "positive";
//! - [`InstanceScore::Contribution`] (the MI-kernel SVM, miVLAD, miFV): no label. A share
//!   of the decision value has no threshold of its own: the bag's decision is a sum of them
//!   (plus a bias, or after a normalisation). MILES is the exception: its paper labels an
//!   instance positive when its contribution g(x) exceeds −b/|J| (J: the bag's instances
//!   nearest a selected prototype); its score is g(x) + b/|J|, positive above 0.
//!
//! A saved model's decision threshold ([`crate::model::HostModel::threshold`]) labels bags,
//! not instances: the instance labels above are the method's own rule.
//!
//! Models whose decision has no per-instance part — Citation-kNN, SimpleMI, the SVM over
//! bags with a box-counting or normalised set kernel — are refused with
//! [`Error::Unsupported`].
//!
//! Where instance labels are known (`mil synth --truth`), [`instance_auroc`] and
//! [`witness_precision`] measure how well the scores find the key instances.

use serde::Serialize;

use crate::classifier::svm::SetKernel;
use crate::classifier::{BagModel, ClassifierKind, ClassifierModel};
use crate::data::Bags;
use crate::error::{Error, Result};
use crate::explain::{Explanation, InstanceScore};

/// The instance scores of a list of bags, in the order they were asked.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InstancePredictions {
    /// What the scores measure (never [`InstanceScore::None`]).
    pub kind: InstanceScore,
    /// The instance label rule: an instance is positive when its score is above this;
    /// `None` when the method defines no instance label (see the module's documentation).
    pub threshold: Option<f64>,
    /// Per bag, one score per instance in the bag's order.
    pub scores: Vec<Vec<f64>>,
    /// Per bag, the index (0-based, within the bag) of its first highest-scoring instance.
    pub witnesses: Vec<usize>,
}

impl InstancePredictions {
    /// The predictions `explanations` hold (one per bag, all of kind `kind`).
    pub(crate) fn new(
        kind: InstanceScore,
        threshold: Option<f64>,
        explanations: Vec<Explanation>,
    ) -> Result<Self> {
        let mut scores = Vec::with_capacity(explanations.len());
        let mut witnesses = Vec::with_capacity(explanations.len());
        for e in explanations {
            // One kind per model: a mismatch is a bug, not a user's mistake.
            let (Some(&witness), true) = (e.witnesses.first(), e.score_kind == kind) else {
                return Err(Error::Model(format!(
                    "an explanation of kind {} without a witness where {} was expected",
                    e.score_kind, kind
                )));
            };
            witnesses.push(witness);
            scores.push(e.instance_scores);
        }
        Ok(InstancePredictions {
            kind,
            threshold,
            scores,
            witnesses,
        })
    }

    /// Per bag, each instance's label (true: positive) when the method defines one.
    pub fn labels(&self) -> Option<Vec<Vec<bool>>> {
        let t = self.threshold?;
        Some(
            self.scores
                .iter()
                .map(|bag| bag.iter().map(|&s| s > t).collect())
                .collect(),
        )
    }
}

impl ClassifierModel {
    /// What its instance scores measure ([`InstanceScore::None`]: it defines none).
    pub fn instance_score_kind(&self) -> InstanceScore {
        match self {
            ClassifierModel::CitationKnn(_) | ClassifierModel::SimpleMi(_) => InstanceScore::None,
            ClassifierModel::Milr(_) | ClassifierModel::MiWrapper(_) | ClassifierModel::Dd(_) => {
                InstanceScore::Probability
            }
            ClassifierModel::Svm(m) => match m.kernel {
                SetKernel::MiRbf { .. } => InstanceScore::Contribution,
                SetKernel::Box { .. } | SetKernel::Nsk { .. } => InstanceScore::None,
            },
            ClassifierModel::MiSvm(_) | ClassifierModel::Smil(_) => InstanceScore::Decision,
            ClassifierModel::MiVlad(_)
            | ClassifierModel::MiFv(_)
            | ClassifierModel::Miles(_)
            | ClassifierModel::MiGraph(_) => InstanceScore::Contribution,
            ClassifierModel::Attention(_) => InstanceScore::Attention,
        }
    }

    /// The instance label rule: an instance is positive when its score is above this
    /// (`None`: no instance label; see [`crate::instances`]).
    pub fn instance_threshold(&self) -> Option<f64> {
        match self.instance_score_kind() {
            InstanceScore::Decision => Some(0.0),
            // MILES reports g(x) − θ, the paper's contribution less its threshold.
            InstanceScore::Contribution if self.kind() == ClassifierKind::Miles => Some(0.0),
            InstanceScore::Probability if self.n_classes() == 2 => Some(0.5),
            _ => None,
        }
    }

    /// `Ok` when the model defines instance scores, else [`Error::Unsupported`] saying why.
    pub fn check_instance_scores(&self) -> Result<()> {
        let why = match self {
            ClassifierModel::CitationKnn(_) => {
                "votes with distances between whole bags (`explain` names the neighbouring bags instead)"
            }
            ClassifierModel::SimpleMi(_) => "classifies one summary vector per bag",
            ClassifierModel::Svm(_) if self.instance_score_kind() == InstanceScore::None => {
                "uses a set kernel that does not split into per-instance terms (the mi-rbf kernel does)"
            }
            _ => return Ok(()),
        };
        Err(Error::Unsupported(format!(
            "predicting instances with a {} model (it {why}, so it defines no instance scores)",
            self.kind()
        )))
    }

    /// The instance scores of the bags `bags` of `data` (the ones
    /// [`BagModel::explain`] reports), their kind, witnesses and label rule.
    ///
    /// ```
    /// use mil_toolkit::classifier::mi_svm::MiSvm;
    /// use mil_toolkit::prelude::*;
    ///
    /// // MIDA's synthetic set one: a positive bag holds one positive instance among eight.
    /// let data = mil_toolkit::data::synth::mida_one(7).data;
    /// let model = ClassifierParams::from(MiSvm::default()).fit(&data)?;
    /// let bags = data.select(&[0, 1, 40, 41]);
    /// let instances = model.predict_instances(bags.clone())?;
    /// let labels = instances.labels().expect("an instance SVM labels its instances");
    /// // mi-SVM's bag score is its largest instance decision value f(x) …
    /// let scores = model.scores(bags)?;
    /// for (b, f) in instances.scores.iter().enumerate() {
    ///     let max = f.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    ///     assert_eq!(scores.positive(b), max);
    ///     assert_eq!(f[instances.witnesses[b]], max);
    ///     // … so a bag is positive exactly when one of its instances is.
    ///     assert_eq!(scores.labels()[b] == 1, labels[b].contains(&true));
    /// }
    /// # Ok::<(), mil_toolkit::Error>(())
    /// ```
    pub fn predict_instances<'a>(&self, bags: impl Into<Bags<'a>>) -> Result<InstancePredictions> {
        self.check_instance_scores()?;
        InstancePredictions::new(
            self.instance_score_kind(),
            self.instance_threshold(),
            self.explain(bags)?,
        )
    }
}

/// The area under the ROC curve of the instance scores of all bags against the known
/// instance labels (`truth`, shaped like `scores`); ties count one half. `None` when the
/// instances are all positive or all negative, or a score is NaN.
pub fn instance_auroc(scores: &[Vec<f64>], truth: &[Vec<bool>]) -> Result<Option<f64>> {
    check_shapes(scores, truth)?;
    let flat_scores: Vec<f64> = scores.iter().flatten().copied().collect();
    let flat_truth: Vec<bool> = truth.iter().flatten().copied().collect();
    Ok(crate::eval::metrics::auroc(&flat_scores, &flat_truth))
}

/// Of the bags predicted positive (`predicted_positive`, one flag per bag), the fraction
/// whose witness — the first highest-scoring instance — is a truly positive instance;
/// `None` when no bag is predicted positive.
pub fn witness_precision(
    scores: &[Vec<f64>],
    truth: &[Vec<bool>],
    predicted_positive: &[bool],
) -> Result<Option<f64>> {
    check_shapes(scores, truth)?;
    if predicted_positive.len() != scores.len() {
        return Err(Error::parameter(
            "predicted_positive",
            predicted_positive.len(),
            format!("give one flag per bag ({} bags)", scores.len()),
        ));
    }
    let mut predicted = 0;
    let mut hits = 0;
    for ((bag, truth), &positive) in scores.iter().zip(truth).zip(predicted_positive) {
        if positive {
            predicted += 1;
            hits += usize::from(truth[crate::numerics::first_argmax(bag).0]);
        }
    }
    Ok((predicted > 0).then(|| hits as f64 / predicted as f64))
}

/// The instance labels of every bag of `data` (one flag per instance in the data set's
/// order, as [`crate::data::synth::read_truth`] returns them), split per bag.
pub fn split_by_bag(data: &crate::Dataset, flags: &[bool]) -> Result<Vec<Vec<bool>>> {
    if flags.len() != data.n_instances() {
        return Err(Error::parameter(
            "truth",
            format!("{} labels", flags.len()),
            format!("{} has {} instances", data.name(), data.n_instances()),
        ));
    }
    Ok((0..data.n_bags())
        .map(|b| flags[data.bag_range(b)].to_vec())
        .collect())
}

/// Refuses truth not shaped like the scores: one flag per instance of every bag.
fn check_shapes(scores: &[Vec<f64>], truth: &[Vec<bool>]) -> Result<()> {
    if truth.len() != scores.len() {
        return Err(Error::parameter(
            "truth",
            format!("{} bags", truth.len()),
            format!("give the labels of the {} bags scored", scores.len()),
        ));
    }
    if let Some(b) = (0..scores.len()).find(|&b| scores[b].len() != truth[b].len()) {
        return Err(Error::parameter(
            "truth",
            format!("{} labels for bag {}", truth[b].len(), b + 1),
            format!("the bag has {} instances", scores[b].len()),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classifier::citation_knn::CitationKnn;
    use crate::classifier::dd::{Dd, DdAlgorithm};
    use crate::classifier::mi_svm::{Heuristic, MiSvm};
    use crate::classifier::mi_vlad::{BagEncoding, MiVlad};
    use crate::classifier::mi_wrapper::{Combine, MiWrapper};
    use crate::classifier::milr::{Milr, Pooling};
    use crate::classifier::simple_mi::SimpleMi;
    use crate::classifier::smil::{Smil, Variant};
    use crate::classifier::svm::bags::BagSvmSettings;
    use crate::classifier::svm::{SetKernelSvm, MI_RBF_COST};
    use crate::classifier::ClassifierParams;
    use crate::data::Dataset;
    use rand::{RngExt, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    /// `bags` (instances of `dim` features) labelled `labels` over `classes` classes.
    fn dataset(dim: usize, bags: &[Vec<Vec<f64>>], labels: Vec<usize>, classes: usize) -> Dataset {
        let mut starts = vec![0];
        let mut features = Vec::new();
        for bag in bags {
            for x in bag {
                features.extend_from_slice(x);
            }
            starts.push(starts.last().unwrap() + bag.len());
        }
        Dataset::new(
            "toy",
            dim,
            features,
            starts,
            (0..bags.len()).map(|b| format!("b{b}")).collect(),
            Some(labels),
            (0..classes).map(|c| c.to_string()).collect(),
        )
        .unwrap()
    }

    /// 20 bags of 1–5 instances in 3-D drawn from [−1, 1]³; each positive bag (even
    /// index) has one instance moved to x₀ ∈ [2, 3]. Returns the bags as nested vectors.
    fn random_bags(seed: u64) -> (Vec<Vec<Vec<f64>>>, Vec<usize>) {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut bags = Vec::new();
        let mut labels = Vec::new();
        for b in 0..20 {
            let len = rng.random_range(1..6);
            let mut bag: Vec<Vec<f64>> = (0..len)
                .map(|_| (0..3).map(|_| rng.random_range(-1.0..1.0)).collect())
                .collect();
            if b % 2 == 0 {
                let k = rng.random_range(0..len);
                bag[k][0] = rng.random_range(2.0..3.0);
            }
            bags.push(bag);
            labels.push(usize::from(b % 2 == 0));
        }
        (bags, labels)
    }

    /// How a bag's positive score pools its instance scores.
    type Pool = fn(&[f64]) -> f64;

    /// Every classifier setting that scores instances, with how its positive bag score
    /// pools the instance scores (`None`: no closed form to check).
    fn scoring() -> Vec<(ClassifierParams, Option<Pool>)> {
        let max: Pool = |s| s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let mean: Pool = |s| s.iter().sum::<f64>() / s.len() as f64;
        let noisy_or: Pool = |s| 1.0 - s.iter().map(|p| 1.0 - p).product::<f64>();
        vec![
            (Milr::default().into(), Some(noisy_or)),
            (Milr::default().pooling(Pooling::Mean).into(), Some(mean)),
            (Milr::default().pooling(Pooling::Max).into(), Some(max)),
            (MiWrapper::default().into(), Some(mean)),
            (MiWrapper::default().combine(Combine::Max).into(), Some(max)),
            (MiSvm::default().into(), Some(max)),
            (MiSvm::default().heuristic(Heuristic::Bag).into(), Some(max)),
            (Smil::default().into(), Some(mean)),
            (Smil::default().variant(Variant::Balanced).into(), Some(max)),
            (Dd::default().max_restarts(3).into(), Some(noisy_or)),
            (
                Dd::default()
                    .algorithm(DdAlgorithm::EmDd)
                    .max_restarts(3)
                    .into(),
                Some(max),
            ),
            (MiVlad::default().codebook(3).into(), None),
            (
                MiVlad::default()
                    .encoding(BagEncoding::Fisher)
                    .codebook(2)
                    .into(),
                None,
            ),
            (mi_kernel_svm().into(), None),
        ]
    }

    /// The SVM with the MI kernel at MISMO's C.
    fn mi_kernel_svm() -> SetKernelSvm {
        SetKernelSvm::default()
            .kernel(SetKernel::MiRbf { gamma: 0.5.into() })
            .settings(BagSvmSettings::default().cost(MI_RBF_COST))
    }

    #[test]
    fn bag_scores_pool_the_instance_scores() {
        for seed in 0..3 {
            let (bags, labels) = random_bags(seed);
            let data = dataset(3, &bags, labels, 2);
            for (params, pool) in scoring() {
                let model = params.fit(&data).unwrap();
                let name = model.kind();
                let got = model.predict_instances(&data).unwrap();
                assert_eq!(got.kind, model.instance_score_kind(), "{name}");
                assert_ne!(got.kind, InstanceScore::None, "{name}");
                let explained = model.explain(&data).unwrap();
                let scores = model.scores(&data).unwrap();
                let labels = got.labels();
                for b in 0..data.n_bags() {
                    let s = &got.scores[b];
                    assert_eq!(s.len(), data.bag(b).len(), "{name} bag {b}");
                    // The same numbers explain reports, and the witness is the argmax.
                    assert_eq!(s, &explained[b].instance_scores, "{name} bag {b}");
                    let max = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    let w = got.witnesses[b];
                    assert_eq!(s[w], max, "{name} bag {b}");
                    assert!(s[..w].iter().all(|&v| v < max), "{name} bag {b}");
                    if let Some(pool) = pool {
                        let want = pool(s);
                        let have = scores.positive(b);
                        assert!(
                            (want - have).abs() <= 1e-9,
                            "{name} bag {b}: {want} vs {have}"
                        );
                    }
                    match (&labels, got.threshold) {
                        (Some(l), Some(t)) => {
                            let want: Vec<bool> = s.iter().map(|&v| v > t).collect();
                            assert_eq!(l[b], want, "{name} bag {b}");
                        }
                        (None, None) => {}
                        _ => panic!("{name}: labels without a threshold or back"),
                    }
                }
                // Max pooling over the instances' own rule: a bag is labelled positive
                // exactly when one of its instances is.
                if pool.is_some_and(|p| p(&[0.2, 0.9]) == 0.9) {
                    let l = labels.expect("labelled");
                    for (b, &bag_label) in scores.labels().iter().enumerate() {
                        assert_eq!(bag_label == 1, l[b].contains(&true), "{name} bag {b}");
                    }
                }
            }
        }
    }

    #[test]
    fn mi_kernel_decision_is_the_sum_of_contributions_plus_a_bias() {
        for seed in 0..3 {
            let (bags, labels) = random_bags(seed);
            let data = dataset(3, &bags, labels, 2);
            let model = ClassifierParams::from(mi_kernel_svm()).fit(&data).unwrap();
            let got = model.predict_instances(&data).unwrap();
            assert_eq!(got.threshold, None);
            let scores = model.scores(&data).unwrap();
            let bias: Vec<f64> = (0..data.n_bags())
                .map(|b| scores.positive(b) - got.scores[b].iter().sum::<f64>())
                .collect();
            for b in &bias {
                assert!((b - bias[0]).abs() <= 1e-9, "{bias:?}");
            }
        }
    }

    #[test]
    fn permuting_a_bags_instances_permutes_its_scores() {
        let (bags, labels) = random_bags(4);
        let data = dataset(3, &bags, labels.clone(), 2);
        let reversed: Vec<Vec<Vec<f64>>> = bags
            .iter()
            .map(|b| b.iter().rev().cloned().collect())
            .collect();
        let other = dataset(3, &reversed, labels, 2);
        for params in [
            ClassifierParams::from(MiSvm::default()),
            Milr::default().into(),
        ] {
            let model = params.fit(&data).unwrap();
            let a = model.predict_instances(&data).unwrap();
            let b = model.predict_instances(&other).unwrap();
            for (x, y) in a.scores.iter().zip(&b.scores) {
                let back: Vec<f64> = y.iter().rev().copied().collect();
                assert_eq!(x, &back);
            }
        }
    }

    #[test]
    fn multi_class_probabilities_have_no_label() {
        let (mut bags, mut labels) = random_bags(5);
        for (b, bag) in bags.iter_mut().enumerate().skip(1).step_by(4) {
            bag[0][1] = 3.0;
            labels[b] = 2;
        }
        let data = dataset(3, &bags, labels, 3);
        let model = ClassifierParams::from(Milr::default()).fit(&data).unwrap();
        let got = model.predict_instances(&data).unwrap();
        assert_eq!(got.kind, InstanceScore::Probability);
        assert_eq!((got.threshold, got.labels()), (None, None));
    }

    #[test]
    fn models_without_instance_scores_are_refused() {
        let (bags, labels) = random_bags(6);
        let data = dataset(3, &bags, labels, 2);
        for params in [
            ClassifierParams::from(CitationKnn::default()),
            SimpleMi::default().into(),
            SetKernelSvm::default().into(),
        ] {
            let model = params.fit(&data).unwrap();
            assert_eq!(model.instance_score_kind(), InstanceScore::None);
            // What explain gives for such a model agrees.
            let explained = model.explain(&data).unwrap();
            assert!(explained.iter().all(|e| e.instance_scores.is_empty()));
            match model.predict_instances(&data) {
                Err(Error::Unsupported(m)) => {
                    assert!(m.contains(&format!("a {} model", model.kind())), "{m}")
                }
                other => panic!("{}: {other:?}", model.kind()),
            }
        }
    }

    #[test]
    fn instance_auroc_counts_ordered_pairs() {
        let scores = vec![vec![0.9, 0.1, 0.4], vec![0.4], vec![0.7, 0.2]];
        let truth = vec![vec![true, false, false], vec![true], vec![false, true]];
        // Brute force over every (positive, negative) pair of instances.
        let flat: Vec<(f64, bool)> = scores
            .iter()
            .flatten()
            .copied()
            .zip(truth.iter().flatten().copied())
            .collect();
        let (mut wins, mut pairs) = (0.0, 0.0);
        for &(p, _) in flat.iter().filter(|x| x.1) {
            for &(n, _) in flat.iter().filter(|x| !x.1) {
                pairs += 1.0;
                wins += if p > n {
                    1.0
                } else if p == n {
                    0.5
                } else {
                    0.0
                };
            }
        }
        assert_eq!(instance_auroc(&scores, &truth).unwrap(), Some(wins / pairs));
        assert_eq!(
            instance_auroc(&scores[..1], &[vec![true, true, true]]).unwrap(),
            None
        );
        assert!(instance_auroc(&scores, &truth[..2]).is_err());
        assert!(instance_auroc(&scores, &[truth[0].clone(), vec![], truth[2].clone()]).is_err());
    }

    #[test]
    fn witness_precision_counts_true_witnesses_of_positive_predictions() {
        let scores = vec![vec![0.9, 0.1], vec![0.3, 0.3], vec![0.2, 0.8], vec![0.5]];
        let truth = vec![
            vec![true, false],
            vec![false, true],
            vec![true, false],
            vec![true],
        ];
        // Bags 0, 1, 2 predicted positive: witnesses 0 (true), 0 (first of a tie: false),
        // 1 (false); bag 3 is not counted.
        let p = witness_precision(&scores, &truth, &[true, true, true, false]).unwrap();
        assert_eq!(p, Some(1.0 / 3.0));
        let none = witness_precision(&scores, &truth, &[false; 4]).unwrap();
        assert_eq!(none, None);
        assert!(witness_precision(&scores, &truth, &[true]).is_err());
    }

    #[test]
    fn truth_files_are_checked_line_by_line() {
        let (bags, labels) = random_bags(7);
        let data = dataset(3, &bags, labels, 2);
        let dir = std::env::temp_dir().join(format!("mil-truth-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("truth.csv");
        let mut lines = Vec::new();
        for b in 0..data.n_bags() {
            for k in 1..=data.bag(b).len() {
                lines.push(format!("{},{k},{}", data.bag_id(b), u8::from(k == 1)));
            }
        }
        let read = |lines: &[String]| {
            std::fs::write(&path, lines.join("\n")).unwrap();
            crate::data::synth::read_truth(&path, &data)
        };
        let flags = read(&lines).unwrap();
        let per_bag = split_by_bag(&data, &flags).unwrap();
        for (b, bag) in per_bag.iter().enumerate() {
            assert_eq!(bag.len(), data.bag(b).len());
            assert!(bag[0] && !bag[1..].contains(&true));
        }
        let len0 = data.bag(0).len();
        let cases = [
            ("nobag,1,0".to_string(), "bag_id"),
            ("b0,0,1".to_string(), "instance"),
            (format!("b0,{},1", len0 + 1), "instance"),
            ("b0,x,1".to_string(), "instance"),
            ("b0,1,yes".to_string(), "positive"),
            ("b0,1".to_string(), "line"),
            (lines[0].clone(), "instance"), // a duplicate of line 1
        ];
        for (bad, want_field) in cases {
            let mut edited = lines.clone();
            edited.insert(1, bad.clone());
            match read(&edited) {
                Err(Error::Parse { line, field, .. }) => {
                    assert_eq!((line, field.as_str()), (2, want_field), "{bad}")
                }
                other => panic!("{bad}: {other:?}"),
            }
        }
        // A missing line is named by bag and instance.
        let missing = read(&lines[1..]).unwrap_err().to_string();
        assert!(missing.contains("b0 instance 1"), "{missing}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
