//! Imbalanced classes: class weights for the fit ([`ClassWeight`]) and a decision
//! threshold on the positive score ([`Threshold`], chosen to maximise a
//! [`ThresholdMetric`] by [`best_threshold`]).
//!
//! A class weight multiplies every training bag's term by the weight of its class: MILR's
//! negative log-likelihood, the SVM's cost C (libsvm's `-wi`), Citation-kNN's votes. With
//! integer weights this is the fit on a data set where each bag of class c appears w_c
//! times. `balanced` is scikit-learn's n / (k · n_c) over the training bags (n bags, k
//! classes, n_c bags of class c), which is exactly 1 for every class of a balanced set.
//!
//! A threshold t replaces the binary decision "the larger score wins" by "positive when
//! the positive score exceeds t" (ties to the negative class, as elsewhere):
//! [`crate::classifier::BagScores::with_threshold`].

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Most classes a list of class weights can name (the parameter types are `Copy`).
pub const MAX_CLASS_WEIGHTS: usize = 16;

/// How training bags are weighted by class.
///
/// ```
/// use mil_toolkit::classifier::imbalance::ClassWeight;
///
/// let w: ClassWeight = "1,19".parse()?;
/// assert_eq!(w.resolve(&[0, 0, 1], 2)?, vec![1.0, 19.0]);
/// // n / (k · n_c): 3 / (2 · 2) and 3 / (2 · 1).
/// let b: ClassWeight = "balanced".parse()?;
/// assert_eq!(b.resolve(&[0, 0, 1], 2)?, vec![0.75, 1.5]);
/// assert!("1,x".parse::<ClassWeight>().is_err());
/// # Ok::<(), mil_toolkit::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Default)]
pub enum ClassWeight {
    /// Every bag counts once (the fit as it always was).
    #[default]
    None,
    /// n / (k · n_c) over the training bags.
    Balanced,
    /// One weight per class, in class order.
    Given(Weights),
}

/// A fixed-capacity list of positive, finite class weights.
#[derive(Clone, Copy, PartialEq)]
pub struct Weights {
    len: usize,
    values: [f64; MAX_CLASS_WEIGHTS],
}

impl Weights {
    /// The weights, in class order.
    pub fn as_slice(&self) -> &[f64] {
        &self.values[..self.len]
    }
}

impl fmt::Debug for Weights {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.as_slice().fmt(f)
    }
}

impl fmt::Debug for ClassWeight {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ClassWeight({self})")
    }
}

impl ClassWeight {
    /// One weight per class; each must be positive, finite and at most
    /// [`crate::params::limits::MAX_WEIGHT`], and at most [`MAX_CLASS_WEIGHTS`] of them.
    pub fn given(weights: &[f64]) -> Result<Self> {
        let list = || {
            weights
                .iter()
                .map(f64::to_string)
                .collect::<Vec<_>>()
                .join(",")
        };
        if weights.len() < 2 || weights.len() > MAX_CLASS_WEIGHTS {
            return Err(Error::parameter(
                "class_weight",
                list(),
                format!("give one weight per class (2 to {MAX_CLASS_WEIGHTS})"),
            ));
        }
        for &w in weights {
            if !(w > 0.0 && w <= crate::params::limits::MAX_WEIGHT) {
                return Err(Error::parameter(
                    "class_weight",
                    list(),
                    format!(
                        "every weight must be in (0, {:e}]; {w} is not",
                        crate::params::limits::MAX_WEIGHT
                    ),
                ));
            }
        }
        let mut values = [0.0; MAX_CLASS_WEIGHTS];
        values[..weights.len()].copy_from_slice(weights);
        Ok(ClassWeight::Given(Weights {
            len: weights.len(),
            values,
        }))
    }

    /// True for [`ClassWeight::None`].
    pub fn is_none(&self) -> bool {
        *self == ClassWeight::None
    }

    /// Checks given weights (a model read from a file holds them unchecked).
    pub fn check(&self) -> Result<()> {
        match self {
            ClassWeight::Given(w) => Self::given(w.as_slice()).map(|_| ()),
            _ => Ok(()),
        }
    }

    /// The weight of each of `n_classes` classes for training bags with `labels`: all 1
    /// for [`ClassWeight::None`]; n / (k · n_c) for [`ClassWeight::Balanced`] (1 for a
    /// class without training bags, which no term then uses); the given list, which must
    /// have `n_classes` entries.
    pub fn resolve(&self, labels: &[usize], n_classes: usize) -> Result<Vec<f64>> {
        match self {
            ClassWeight::None => Ok(vec![1.0; n_classes]),
            ClassWeight::Balanced => {
                let mut counts = vec![0usize; n_classes];
                for &l in labels {
                    if let Some(c) = counts.get_mut(l) {
                        *c += 1;
                    }
                }
                // Integer product first: exactly 1 when n = k · n_c.
                Ok(counts
                    .iter()
                    .map(|&c| {
                        if c == 0 {
                            1.0
                        } else {
                            labels.len() as f64 / (n_classes * c) as f64
                        }
                    })
                    .collect())
            }
            ClassWeight::Given(w) => {
                if w.len != n_classes {
                    return Err(Error::parameter(
                        "class_weight",
                        self,
                        format!(
                            "gives {} weights but the data have {n_classes} classes",
                            w.len
                        ),
                    ));
                }
                Ok(w.as_slice().to_vec())
            }
        }
    }

    /// The weight of each training bag: the weight of its class ([`Self::resolve`]).
    pub fn bag_weights(&self, labels: &[usize], n_classes: usize) -> Result<Vec<f64>> {
        let w = self.resolve(labels, n_classes)?;
        Ok(labels.iter().map(|&l| w[l]).collect())
    }
}

impl fmt::Display for ClassWeight {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClassWeight::None => f.write_str("none"),
            ClassWeight::Balanced => f.write_str("balanced"),
            // `{}` of an f64 is the shortest text that parses back to the same number.
            ClassWeight::Given(w) => {
                let parts: Vec<String> = w.as_slice().iter().map(f64::to_string).collect();
                f.write_str(&parts.join(","))
            }
        }
    }
}

impl FromStr for ClassWeight {
    type Err = Error;

    /// `none`, `balanced`, or comma-separated weights `W0,W1,…` in class order.
    fn from_str(s: &str) -> Result<Self> {
        match s.trim() {
            "none" => Ok(ClassWeight::None),
            "balanced" => Ok(ClassWeight::Balanced),
            list => {
                let weights = list
                    .split(',')
                    .map(|p| {
                        p.trim().parse::<f64>().map_err(|_| {
                            Error::parameter(
                                "class_weight",
                                s,
                                format!(
                                    "`{}` is not a number (balanced, none or W0,W1,…)",
                                    p.trim()
                                ),
                            )
                        })
                    })
                    .collect::<Result<Vec<f64>>>()?;
                Self::given(&weights)
            }
        }
    }
}

impl Serialize for ClassWeight {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ClassWeight {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// The binary decision rule.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Threshold {
    /// The larger class score wins (ties to the negative class): each classifier's own
    /// rule (MILR P > 0.5, Citation-kNN the majority of votes, the SVM f > 0).
    #[default]
    None,
    /// Chosen on the training bags: the threshold that maximises the metric on their
    /// out-of-fold scores from an inner cross-validation ([`best_threshold`]).
    Auto,
    /// Positive when the positive score exceeds this value.
    Value(f64),
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Threshold::None => f.write_str("none"),
            Threshold::Auto => f.write_str("auto"),
            Threshold::Value(v) => write!(f, "{v}"),
        }
    }
}

impl FromStr for Threshold {
    type Err = Error;

    /// `none`, `auto` or a finite number.
    fn from_str(s: &str) -> Result<Self> {
        match s.trim() {
            "none" => Ok(Threshold::None),
            "auto" => Ok(Threshold::Auto),
            v => match v.parse::<f64>() {
                Ok(t) if t.is_finite() => Ok(Threshold::Value(t)),
                _ => Err(Error::parameter(
                    "threshold",
                    s,
                    "must be auto, none or a finite number",
                )),
            },
        }
    }
}

/// What a chosen threshold maximises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ThresholdMetric {
    /// The mean of the two recalls.
    #[default]
    BalancedAccuracy,
    /// F1 of the positive class, 2TP / (2TP + FP + FN).
    F1,
}

mil_core::keywords!(ThresholdMetric {
    ThresholdMetric::BalancedAccuracy => "balanced-accuracy": "the mean of the two classes' recalls",
    ThresholdMetric::F1 => "f1": "F1 of the positive class, 2TP / (2TP + FP + FN)",
});

impl ThresholdMetric {
    /// The metric of the predictions with `tp`, `fp` true and false positives among
    /// `pos` positive and `neg` negative bags (0 where it is undefined).
    pub fn value(self, tp: usize, fp: usize, pos: usize, neg: usize) -> f64 {
        let ratio = |a: usize, b: usize| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        match self {
            ThresholdMetric::BalancedAccuracy => (ratio(tp, pos) + ratio(neg - fp, neg)) / 2.0,
            ThresholdMetric::F1 => ratio(2 * tp, 2 * tp + fp + (pos - tp)),
        }
    }
}

/// The candidate cut points of `scores`: below the smallest score (everything positive),
/// the midpoint between each pair of consecutive distinct scores, and the largest score
/// (everything negative), ascending. A bag is positive when its score exceeds the cut.
pub fn candidate_thresholds(scores: &[f64]) -> Vec<f64> {
    let mut s: Vec<f64> = scores.iter().copied().filter(|v| !v.is_nan()).collect();
    s.sort_by(f64::total_cmp);
    s.dedup();
    let Some(&first) = s.first() else {
        return Vec::new();
    };
    let mut out = vec![first - first.abs().max(1.0)];
    for pair in s.windows(2) {
        let mid = pair[0] + (pair[1] - pair[0]) / 2.0;
        // Adjacent floats: the midpoint may round up to the larger one.
        out.push(if mid < pair[1] { mid } else { pair[0] });
    }
    out.push(s[s.len() - 1]);
    out
}

/// The cut point of [`candidate_thresholds`] that maximises `metric` for `scores` against
/// `positive` (the lowest such cut on ties: of equal merits, the one that finds the most
/// positives), by one sweep over the sorted scores. `None` without scores.
pub fn best_threshold(scores: &[f64], positive: &[bool], metric: ThresholdMetric) -> Option<f64> {
    let pos = positive.iter().filter(|&&p| p).count();
    let neg = positive.len() - pos;
    let mut order: Vec<usize> = (0..scores.len()).filter(|&i| !scores[i].is_nan()).collect();
    order.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]));
    let cuts = candidate_thresholds(scores);
    // At cut k (ascending) every score above it is positive; start with all positive.
    let (mut tp, mut fp) = (pos, neg);
    let mut best: Option<(f64, f64)> = None;
    let mut next = 0;
    for &cut in &cuts {
        while next < order.len() && scores[order[next]] <= cut {
            if positive[order[next]] {
                tp -= 1;
            } else {
                fp -= 1;
            }
            next += 1;
        }
        let merit = metric.value(tp, fp, pos, neg);
        if best.is_none_or(|(m, _)| merit > m) {
            best = Some((merit, cut));
        }
    }
    best.map(|(_, cut)| cut)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::metrics::{balanced_accuracy, confusion_matrix, per_class};
    use rand::{RngExt, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    #[test]
    fn auto_threshold_is_the_brute_force_best_cut() {
        // Brute force: for every candidate cut, the labels and the metric from the
        // confusion matrix (eval::metrics), the first maximum; small integer-valued
        // scores make ties common.
        for seed in 0..200u64 {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
            let n = rng.random_range(2..14);
            let scores: Vec<f64> = (0..n)
                .map(|_| rng.random_range(0..6) as f64 / 5.0)
                .collect();
            let positive: Vec<bool> = (0..n).map(|_| rng.random_range(0..4) == 0).collect();
            let truth: Vec<usize> = positive.iter().map(|&p| usize::from(p)).collect();
            for metric in [ThresholdMetric::BalancedAccuracy, ThresholdMetric::F1] {
                let mut best: Option<(f64, f64)> = None;
                for cut in candidate_thresholds(&scores) {
                    let labels: Vec<usize> = scores.iter().map(|&s| usize::from(s > cut)).collect();
                    let cm = confusion_matrix(&labels, &truth, 2);
                    let merit = match metric {
                        ThresholdMetric::BalancedAccuracy => {
                            // eval's mean skips an absent class; the metric counts it as 0.
                            if cm[0].iter().sum::<usize>() > 0 && cm[1].iter().sum::<usize>() > 0 {
                                balanced_accuracy(&cm)
                            } else {
                                per_class(&cm)
                                    .iter()
                                    .map(|m| m.recall.unwrap_or(0.0))
                                    .sum::<f64>()
                                    / 2.0
                            }
                        }
                        ThresholdMetric::F1 => per_class(&cm)[1].f1.unwrap_or(0.0),
                    };
                    if best.is_none_or(|(m, _)| merit > m) {
                        best = Some((merit, cut));
                    }
                }
                assert_eq!(
                    best_threshold(&scores, &positive, metric),
                    best.map(|b| b.1),
                    "seed {seed} {metric:?} scores {scores:?} positive {positive:?}"
                );
            }
        }
    }

    #[test]
    fn cut_points_separate_every_pair_of_distinct_scores() {
        let next = f64::from_bits(1.0f64.to_bits() + 1);
        let scores = [1.0, next, -3.0, 1.0, 1e300];
        let cuts = candidate_thresholds(&scores);
        assert_eq!(cuts.len(), 5);
        // Each cut leaves a different number of scores above it: 5, 4, 2, 1, 0.
        let above: Vec<usize> = cuts
            .iter()
            .map(|&c| scores.iter().filter(|&&s| s > c).count())
            .collect();
        assert_eq!(above, vec![5, 4, 2, 1, 0]);
    }

    #[test]
    fn class_weights_parse_resolve_and_name_their_problem() {
        assert_eq!("none".parse::<ClassWeight>().unwrap(), ClassWeight::None);
        let w: ClassWeight = "0.5, 2".parse().unwrap();
        assert_eq!(w.to_string(), "0.5,2");
        assert_eq!(w.to_string().parse::<ClassWeight>().unwrap(), w);
        let e = "1,x".parse::<ClassWeight>().unwrap_err().to_string();
        assert!(e.contains("class_weight") && e.contains("`x`"), "{e}");
        let e = "1,-2".parse::<ClassWeight>().unwrap_err().to_string();
        assert!(e.contains("-2"), "{e}");
        let e = w.resolve(&[0, 1, 2], 3).unwrap_err().to_string();
        assert!(e.contains("2 weights") && e.contains("3 classes"), "{e}");
        // Balanced on a balanced set: exactly 1.
        let labels = [0, 1, 2, 2, 1, 0];
        assert_eq!(
            ClassWeight::Balanced.resolve(&labels, 3).unwrap(),
            vec![1.0; 3]
        );
        let json = serde_json::to_string(&w).unwrap();
        assert_eq!(serde_json::from_str::<ClassWeight>(&json).unwrap(), w);
    }

    #[test]
    fn thresholds_parse() {
        assert_eq!("auto".parse::<Threshold>().unwrap(), Threshold::Auto);
        assert_eq!("0.25".parse::<Threshold>().unwrap(), Threshold::Value(0.25));
        assert!("inf".parse::<Threshold>().is_err());
        assert!("x"
            .parse::<Threshold>()
            .unwrap_err()
            .to_string()
            .contains("threshold"));
    }
}
