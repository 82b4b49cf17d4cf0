//! ROC curves: the (false-positive rate, true-positive rate) of every decision threshold
//! on a list of scores.

/// The ROC curve of `scores` (higher = more positive) against `positive`: (0, 0), then
/// one point per distinct score from the highest down — calling positive every bag that
/// scores at least that much, so bags with equal scores enter together, one step drawn
/// diagonally — ending at (1, 1). Its trapezoidal area ([`area`]) is
/// [`auroc`](super::auroc). `None` when either class is absent or a score is NaN.
pub fn roc_curve(scores: &[f64], positive: &[bool]) -> Option<Vec<(f64, f64)>> {
    let n_pos = positive.iter().filter(|&&p| p).count();
    let n_neg = positive.len() - n_pos;
    if n_pos == 0 || n_neg == 0 || scores.iter().any(|s| s.is_nan()) {
        return None;
    }
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
    let mut points = vec![(0.0, 0.0)];
    let (mut tp, mut fp) = (0usize, 0usize);
    let mut i = 0;
    while i < order.len() {
        // The run of bags sharing this score crosses the threshold at once.
        let mut j = i;
        while j < order.len() && scores[order[j]] == scores[order[i]] {
            if positive[order[j]] {
                tp += 1;
            } else {
                fp += 1;
            }
            j += 1;
        }
        points.push((fp as f64 / n_neg as f64, tp as f64 / n_pos as f64));
        i = j;
    }
    Some(points)
}

/// Trapezoidal area under a curve whose points have non-decreasing x.
pub fn area(points: &[(f64, f64)]) -> f64 {
    points
        .windows(2)
        .map(|w| (w[1].0 - w[0].0) * (w[0].1 + w[1].1) / 2.0)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::auroc;

    /// The curve by definition: for the threshold +∞ and then every score, from the
    /// highest, the rates of bags scoring at least that much, each distinct threshold once.
    fn brute_force(scores: &[f64], positive: &[bool]) -> Vec<(f64, f64)> {
        let mut thresholds = scores.to_vec();
        thresholds.sort_by(|a, b| b.total_cmp(a));
        thresholds.dedup();
        thresholds.insert(0, f64::INFINITY);
        let n_pos = positive.iter().filter(|&&p| p).count() as f64;
        let n_neg = positive.len() as f64 - n_pos;
        thresholds
            .iter()
            .map(|&t| {
                let called = |want: bool| {
                    scores
                        .iter()
                        .zip(positive)
                        .filter(|&(&s, &p)| s >= t && p == want)
                        .count() as f64
                };
                (called(false) / n_neg, called(true) / n_pos)
            })
            .collect()
    }

    #[test]
    fn tiny_list_by_hand() {
        // Scores 0.9 (+), 0.7 (−), 0.7 (+), 0.2 (−): the tie at 0.7 is one diagonal step.
        let scores = [0.9, 0.7, 0.7, 0.2];
        let positive = [true, false, true, false];
        let curve = roc_curve(&scores, &positive).unwrap();
        assert_eq!(curve, vec![(0.0, 0.0), (0.0, 0.5), (0.5, 1.0), (1.0, 1.0)]);
        assert_eq!(curve, brute_force(&scores, &positive));
        // Pairs: 0.9 beats both negatives, 0.7 ties one (½) and beats one → 3.5 / 4.
        assert_eq!(area(&curve), 0.875);
        assert_eq!(auroc(&scores, &positive), Some(0.875));
    }

    #[test]
    fn matches_every_threshold_on_scores_with_ties() {
        let scores: Vec<f64> = (0..60).map(|i| ((i * 37) % 11) as f64 / 4.0).collect();
        let positive: Vec<bool> = (0..60).map(|i| (i * 13) % 7 < 3).collect();
        let curve = roc_curve(&scores, &positive).unwrap();
        assert_eq!(curve, brute_force(&scores, &positive));
        assert_eq!(curve.len(), 12, "(0, 0) and one point per distinct score");
        assert!((area(&curve) - auroc(&scores, &positive).unwrap()).abs() < 1e-12);
    }

    #[test]
    fn one_class_or_nan_has_no_curve() {
        assert_eq!(roc_curve(&[0.1, 0.2], &[true, true]), None);
        assert_eq!(roc_curve(&[f64::NAN, 0.2], &[true, false]), None);
    }
}
