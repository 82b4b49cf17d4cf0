//! Summary statistics of repeated measurements (fold accuracies, seeds).

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Mean, sample standard deviation and a two-sided 95% confidence interval of the mean
/// (Student's t with n − 1 degrees of freedom).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Summary {
    /// Number of values.
    pub n: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (n − 1 in the denominator); 0 for one value.
    pub sd: f64,
    /// Lower end of the 95% interval (equal to the mean for one value).
    pub ci_low: f64,
    /// Upper end of the 95% interval.
    pub ci_high: f64,
}

impl Summary {
    /// Summarises proportions such as fold accuracies: as [`Summary::of`], with the
    /// interval clipped to [0, 1]. Student's t over the per-fold values accounts for the
    /// few folds a CV has (with 2 folds t₀.₉₇₅ is 12.7 and the interval can reach far
    /// outside [0, 1]); a proportion outside [0, 1] is impossible, so the clipped
    /// interval holds the same true proportions.
    pub fn of_proportions(values: &[f64]) -> Option<Summary> {
        Summary::of(values).map(|s| Summary {
            ci_low: s.ci_low.clamp(0.0, 1.0),
            ci_high: s.ci_high.clamp(0.0, 1.0),
            ..s
        })
    }

    /// Summarises `values`; `None` when empty or any value is not finite.
    pub fn of(values: &[f64]) -> Option<Summary> {
        if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let n = values.len();
        let mean = values.iter().sum::<f64>() / n as f64;
        if n == 1 {
            return Some(Summary {
                n,
                mean,
                sd: 0.0,
                ci_low: mean,
                ci_high: mean,
            });
        }
        let var = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1) as f64;
        let sd = var.sqrt();
        let t = StudentsT::new(0.0, 1.0, (n - 1) as f64)
            .map(|dist| dist.inverse_cdf(0.975))
            .unwrap_or(f64::NAN);
        let half = t * sd / (n as f64).sqrt();
        Some(Summary {
            n,
            mean,
            sd,
            ci_low: mean - half,
            ci_high: mean + half,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        let s = Summary::of(&[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!(s.mean, 2.5);
        assert!((s.sd - (5.0f64 / 3.0).sqrt()).abs() < 1e-12);
        // t_{0.975, 3} = 3.182446305284263 (standard tables).
        let half = 3.182446305284263 * s.sd / 2.0;
        assert!((s.ci_high - (2.5 + half)).abs() < 1e-9);
        assert!((s.ci_low - (2.5 - half)).abs() < 1e-9);
        assert_eq!(Summary::of(&[]), None);
        assert_eq!(Summary::of(&[3.0]).unwrap().sd, 0.0);
    }

    #[test]
    fn proportions_stay_in_the_unit_interval() {
        // Two folds: t₀.₉₇₅ with 1 degree of freedom is 12.706204736174707 (tables).
        let s = Summary::of_proportions(&[0.6, 0.95]).unwrap();
        let unclipped = Summary::of(&[0.6, 0.95]).unwrap();
        let half = 12.706204736174707 * unclipped.sd / 2f64.sqrt();
        assert!((unclipped.ci_high - (0.775 + half)).abs() < 1e-9);
        assert!(unclipped.ci_low < 0.0 && unclipped.ci_high > 1.0);
        assert_eq!((s.ci_low, s.ci_high), (0.0, 1.0));
        assert_eq!(s.mean, unclipped.mean);
        // A narrow interval is left as it is.
        let tight = [0.80, 0.82, 0.81, 0.79, 0.80];
        assert_eq!(Summary::of_proportions(&tight), Summary::of(&tight));
    }
}
