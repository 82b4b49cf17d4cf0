//! Metrics of bag classifiers and bag clusterings.

use pathfinding::kuhn_munkres::kuhn_munkres;
use pathfinding::matrix::Matrix;

/// Fraction of equal entries. Empty input gives 0.
pub fn accuracy(predicted: &[usize], truth: &[usize]) -> f64 {
    if truth.is_empty() {
        return 0.0;
    }
    let hits = predicted.iter().zip(truth).filter(|(p, t)| p == t).count();
    hits as f64 / truth.len() as f64
}

/// Area under the ROC curve of `scores` (higher = more positive) against `positive`, by the
/// rank (Mann–Whitney) formula with tied scores given their average rank — the same value
/// as the trapezoidal ROC area with ties drawn diagonally. `None` when either class is
/// absent or a score is NaN.
pub fn auroc(scores: &[f64], positive: &[bool]) -> Option<f64> {
    let n_pos = positive.iter().filter(|&&p| p).count();
    let n_neg = positive.len() - n_pos;
    if n_pos == 0 || n_neg == 0 || scores.iter().any(|s| s.is_nan()) {
        return None;
    }
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]));
    // Average 1-based ranks over runs of equal scores.
    let mut rank_sum_pos = 0.0;
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && scores[order[j + 1]] == scores[order[i]] {
            j += 1;
        }
        let mean_rank = (i + j) as f64 / 2.0 + 1.0;
        rank_sum_pos += mean_rank * order[i..=j].iter().filter(|&&k| positive[k]).count() as f64;
        i = j + 1;
    }
    let u = rank_sum_pos - (n_pos * (n_pos + 1)) as f64 / 2.0;
    Some(u / (n_pos as f64 * n_neg as f64))
}

/// Confusion matrix `m[truth][predicted]` over `n_classes` classes.
pub fn confusion_matrix(predicted: &[usize], truth: &[usize], n_classes: usize) -> Vec<Vec<usize>> {
    let mut m = vec![vec![0; n_classes]; n_classes];
    for (&p, &t) in predicted.iter().zip(truth) {
        if p < n_classes && t < n_classes {
            m[t][p] += 1;
        }
    }
    m
}

/// Recall, precision and F1 of one class, from a confusion matrix.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct ClassMetrics {
    /// Bags of this class (row sum).
    pub support: usize,
    /// Bags predicted as this class (column sum).
    pub predicted: usize,
    /// TP / support; `None` when the class has no bags.
    pub recall: Option<f64>,
    /// TP / predicted; `None` when nothing was predicted as this class.
    pub precision: Option<f64>,
    /// 2·TP / (support + predicted), the harmonic mean of recall and precision (0 when
    /// one of them is 0); `None` when both counts are 0.
    pub f1: Option<f64>,
}

/// Per-class recall, precision and F1 of a confusion matrix `m[truth][predicted]`.
pub fn per_class(confusion: &[Vec<usize>]) -> Vec<ClassMetrics> {
    let k = confusion.len();
    (0..k)
        .map(|c| {
            let tp = confusion[c].get(c).copied().unwrap_or(0);
            let support: usize = confusion[c].iter().sum();
            let predicted: usize = confusion
                .iter()
                .map(|row| row.get(c).copied().unwrap_or(0))
                .sum();
            let ratio = |num: usize, den: usize| (den > 0).then(|| num as f64 / den as f64);
            ClassMetrics {
                support,
                predicted,
                recall: ratio(tp, support),
                precision: ratio(tp, predicted),
                f1: ratio(2 * tp, support + predicted),
            }
        })
        .collect()
}

/// Balanced accuracy: the mean recall over the classes that have bags (equal to the
/// accuracy on balanced data; 1/C for a classifier that predicts one class always).
/// 0 for an empty matrix.
pub fn balanced_accuracy(confusion: &[Vec<usize>]) -> f64 {
    let recalls: Vec<f64> = per_class(confusion)
        .iter()
        .filter_map(|m| m.recall)
        .collect();
    if recalls.is_empty() {
        0.0
    } else {
        recalls.iter().sum::<f64>() / recalls.len() as f64
    }
}

/// The one class every prediction went to, when the predictions collapsed to a single
/// class while the truth has more than one.
pub fn collapsed_class(confusion: &[Vec<usize>]) -> Option<usize> {
    let m = per_class(confusion);
    let present = m.iter().filter(|c| c.support > 0).count();
    let predicted: Vec<usize> = (0..m.len()).filter(|&c| m[c].predicted > 0).collect();
    (present > 1 && predicted.len() == 1).then(|| predicted[0])
}

/// Contingency table `table[cluster][class]` and its sizes.
fn contingency(assignment: &[usize], truth: &[usize]) -> Vec<Vec<usize>> {
    let k = assignment.iter().max().map_or(0, |m| m + 1);
    let c = truth.iter().max().map_or(0, |m| m + 1);
    let mut table = vec![vec![0; c]; k];
    for (&a, &t) in assignment.iter().zip(truth) {
        table[a][t] += 1;
    }
    table
}

/// Clustering accuracy: the fraction of bags whose cluster maps to their class under the
/// best one-to-one matching of clusters to classes (Hungarian algorithm, Kuhn–Munkres).
/// Clusters left unmatched (more clusters than classes) count as errors.
pub fn clustering_accuracy(assignment: &[usize], truth: &[usize]) -> f64 {
    if truth.is_empty() {
        return 0.0;
    }
    let table = contingency(assignment, truth);
    let size = table.len().max(table.first().map_or(0, Vec::len)).max(1);
    let weights = Matrix::from_fn(size, size, |(i, j)| {
        table
            .get(i)
            .and_then(|row| row.get(j))
            .copied()
            .unwrap_or(0) as i64
    });
    let (matched, _) = kuhn_munkres(&weights);
    matched as f64 / truth.len() as f64
}

/// Normalised mutual information, I(U;V) / ((H(U) + H(V)) / 2) (the arithmetic-mean
/// normalisation, as scikit-learn's default). Two single-cluster labelings give 1.
pub fn nmi(assignment: &[usize], truth: &[usize]) -> f64 {
    let n = truth.len() as f64;
    if truth.is_empty() {
        return 0.0;
    }
    let table = contingency(assignment, truth);
    let rows: Vec<f64> = table
        .iter()
        .map(|r| r.iter().sum::<usize>() as f64)
        .collect();
    let cols: Vec<f64> = (0..table[0].len())
        .map(|j| table.iter().map(|r| r[j]).sum::<usize>() as f64)
        .collect();
    let entropy = |counts: &[f64]| -> f64 {
        counts
            .iter()
            .filter(|&&c| c > 0.0)
            .map(|&c| -(c / n) * (c / n).ln())
            .sum()
    };
    let mut mutual = 0.0;
    for (i, row) in table.iter().enumerate() {
        for (j, &c) in row.iter().enumerate() {
            if c > 0 {
                let c = c as f64;
                mutual += (c / n) * (n * c / (rows[i] * cols[j])).ln();
            }
        }
    }
    let (hu, hv) = (entropy(&rows), entropy(&cols));
    if hu + hv == 0.0 {
        return 1.0;
    }
    (2.0 * mutual / (hu + hv)).clamp(0.0, 1.0)
}

/// Adjusted Rand index (Hubert & Arabie 1985): 1 for identical partitions, about 0 for
/// independent ones.
pub fn adjusted_rand_index(assignment: &[usize], truth: &[usize]) -> f64 {
    let pairs = |x: f64| x * (x - 1.0) / 2.0;
    let table = contingency(assignment, truth);
    if table.is_empty() {
        return 0.0;
    }
    let index: f64 = table.iter().flatten().map(|&c| pairs(c as f64)).sum();
    let rows: f64 = table
        .iter()
        .map(|r| pairs(r.iter().sum::<usize>() as f64))
        .sum();
    let cols: f64 = (0..table[0].len())
        .map(|j| pairs(table.iter().map(|r| r[j]).sum::<usize>() as f64))
        .sum();
    let total = pairs(truth.len() as f64);
    let expected = rows * cols / total;
    let max = (rows + cols) / 2.0;
    if max == expected {
        return 1.0;
    }
    (index - expected) / (max - expected)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn balanced_accuracy_and_per_class_by_hand() {
        // 90 negatives (80 right), 10 positives (5 right), 15 predicted positive.
        let m = vec![vec![80, 10], vec![5, 5]];
        assert!((balanced_accuracy(&m) - (80.0 / 90.0 + 0.5) / 2.0).abs() < 1e-15);
        let pc = per_class(&m);
        assert_eq!((pc[1].support, pc[1].predicted), (10, 15));
        assert_eq!(pc[1].recall, Some(0.5));
        assert_eq!(pc[1].precision, Some(5.0 / 15.0));
        assert!((pc[1].f1.unwrap() - 10.0 / 25.0).abs() < 1e-15);
        assert_eq!(collapsed_class(&m), None);
        // Everything predicted negative: balanced accuracy 1/2, precision undefined.
        let all_neg = vec![vec![90, 0], vec![10, 0]];
        assert_eq!(balanced_accuracy(&all_neg), 0.5);
        assert_eq!(per_class(&all_neg)[1].precision, None);
        assert_eq!(per_class(&all_neg)[1].f1, Some(0.0));
        assert_eq!(collapsed_class(&all_neg), Some(0));
        // A class without bags does not count towards the mean.
        let three = vec![vec![3, 1, 0], vec![0, 0, 0], vec![0, 2, 2]];
        assert!((balanced_accuracy(&three) - (0.75 + 0.5) / 2.0).abs() < 1e-15);
    }

    #[test]
    fn auroc_by_hand() {
        // Positives 0.9, 0.4; negatives 0.5, 0.1: 3 of 4 pairs ordered → 0.75.
        assert_eq!(
            auroc(&[0.9, 0.5, 0.4, 0.1], &[true, false, true, false]),
            Some(0.75)
        );
        // A tie between a positive and a negative counts one half: pairs (0.7 vs 0.7) = ½,
        // (0.7 vs 0.2) = 1, (0.3 vs 0.7) = 0, (0.3 vs 0.2) = 1 → 2.5 / 4.
        assert_eq!(
            auroc(&[0.7, 0.3, 0.7, 0.2], &[true, true, false, false]),
            Some(0.625)
        );
        assert_eq!(auroc(&[0.5; 4], &[true, false, true, false]), Some(0.5));
        assert_eq!(auroc(&[0.1, 0.2], &[true, true]), None);
        assert_eq!(auroc(&[f64::NAN, 0.2], &[true, false]), None);
    }

    #[test]
    fn auroc_matches_pair_counting() {
        // Brute force over all positive/negative pairs on pseudo-random scores with ties.
        let scores: Vec<f64> = (0..60).map(|i| ((i * 37) % 11) as f64).collect();
        let positive: Vec<bool> = (0..60).map(|i| (i * 13) % 7 < 3).collect();
        let mut wins = 0.0;
        let mut total = 0.0;
        for (i, &pi) in positive.iter().enumerate() {
            for (j, &pj) in positive.iter().enumerate() {
                if pi && !pj {
                    total += 1.0;
                    wins += match scores[i].partial_cmp(&scores[j]).unwrap() {
                        std::cmp::Ordering::Greater => 1.0,
                        std::cmp::Ordering::Equal => 0.5,
                        std::cmp::Ordering::Less => 0.0,
                    };
                }
            }
        }
        assert!((auroc(&scores, &positive).unwrap() - wins / total).abs() < 1e-12);
    }

    #[test]
    fn hungarian_accuracy_by_hand() {
        // Clusters are a relabelling of the classes except one bag.
        let truth = [0, 0, 0, 1, 1, 1, 2, 2];
        let assign = [2, 2, 1, 0, 0, 0, 1, 1];
        // Best map: 2→0 (2 bags), 0→1 (3), 1→2 (2) = 7 of 8.
        assert_eq!(clustering_accuracy(&assign, &truth), 7.0 / 8.0);
        // More clusters than classes: the extra cluster's bags are errors.
        assert_eq!(clustering_accuracy(&[0, 1, 2, 2], &[0, 0, 1, 1]), 3.0 / 4.0);
        assert_eq!(clustering_accuracy(&[1, 1, 0, 0], &[0, 0, 1, 1]), 1.0);
    }

    #[test]
    fn nmi_and_ari_known_values() {
        // H(U) = ln 2, H(V) = 1.5 ln 2, I = ln 2 → NMI = 2 / 2.5 = 0.8.
        assert!((nmi(&[0, 0, 1, 2], &[0, 0, 1, 1]) - 0.8).abs() < 1e-12);
        // Index Σ C(n_ij,2) = 1, rows 1, cols 2, total 6: (1 − 1/3) / (1.5 − 1/3) = 4/7.
        assert!((adjusted_rand_index(&[0, 0, 1, 2], &[0, 0, 1, 1]) - 4.0 / 7.0).abs() < 1e-12);
        assert!((nmi(&[1, 1, 0, 0], &[0, 0, 1, 1]) - 1.0).abs() < 1e-12);
        assert!((adjusted_rand_index(&[1, 1, 0, 0], &[0, 0, 1, 1]) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn confusion_counts() {
        let m = confusion_matrix(&[0, 1, 1, 0], &[0, 1, 0, 0], 2);
        assert_eq!(m, vec![vec![2, 1], vec![0, 1]]);
        assert_eq!(accuracy(&[0, 1, 1, 0], &[0, 1, 0, 0]), 0.75);
    }
}
