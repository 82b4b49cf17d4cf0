//! The MI kernel's γ: fixed, or scaled to the training instances.

use serde::{Deserialize, Serialize};

use crate::data::standardize::ZScore;
use crate::data::Dataset;
use crate::error::{Error, Result};

/// γ of the MI kernel Σ exp(−γ‖x − y‖²), fixed or scaled to the training instances as
/// the kernel sees them (after the SVM's scaling): γ = c / Σⱼ Var(xⱼ), with population
/// variances over the training instances. Two independent instances lie E‖x − y‖² =
/// 2 Σⱼ Var(xⱼ) apart, so c fixes the kernel's value there at e^(−2c) whatever the
/// data's spread. Saved as a number, or as `{"variance_factor": c}`; fitted models hold
/// the resolved [`Gamma::Fixed`].
///
/// ```
/// use mil_toolkit::classifier::svm::Gamma;
///
/// assert_eq!("scaled".parse::<Gamma>()?, Gamma::scaled());
/// assert_eq!("0.01".parse::<Gamma>()?, Gamma::Fixed(0.01));
/// // Two one-feature instances, 0 and 2: variance 1, so the scaled γ is 1.
/// let data = mil_toolkit::data::Dataset::new(
///     "two", 1, vec![0.0, 2.0], vec![0, 1, 2], vec!["a".into(), "b".into()], None,
///     vec![],
/// )?;
/// assert_eq!(Gamma::scaled().resolve(&data)?, 1.0);
/// assert_eq!(Gamma::Fixed(0.01).resolve(&data)?, 0.01);
/// # Ok::<(), mil_toolkit::error::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Gamma {
    /// γ itself (MISMO's default 0.01, on attributes scaled to [0, 1]).
    Fixed(f64),
    /// γ = `variance_factor` / Σⱼ Var(xⱼ) over the training instances.
    Scaled {
        /// c, positive.
        variance_factor: f64,
    },
}

impl Gamma {
    /// The scaled γ with c = 1 (1 / Σⱼ Var(xⱼ)).
    pub const fn scaled() -> Gamma {
        Gamma::Scaled {
            variance_factor: 1.0,
        }
    }

    /// γ on the instances of `train` (as the kernel sees them): a fixed γ as is, a
    /// scaled one from their variances. Refuses a scaled γ when every feature is
    /// constant on them (Σ Var = 0).
    pub fn resolve(self, train: &Dataset) -> Result<f64> {
        match self {
            Gamma::Fixed(g) => Ok(g),
            Gamma::Scaled { variance_factor } => {
                let total: f64 = ZScore::fit(train).std.iter().map(|s| s * s).sum();
                let gamma = variance_factor / total;
                if total > 0.0 && gamma.is_finite() {
                    Ok(gamma)
                } else {
                    Err(Error::data(
                        train.name(),
                        format!(
                            "the scaled gamma divides by the training instances' summed \
                             variance, which is {total}: give gamma a number"
                        ),
                    ))
                }
            }
        }
    }

    /// The fixed value; `None` for a scaled γ not yet resolved.
    pub fn fixed(self) -> Option<f64> {
        match self {
            Gamma::Fixed(g) => Some(g),
            Gamma::Scaled { .. } => None,
        }
    }

    /// γ (or c) multiplied by `f`: the inner grid's neighbours.
    #[must_use]
    pub fn times(self, f: f64) -> Gamma {
        match self {
            Gamma::Fixed(g) => Gamma::Fixed(g * f),
            Gamma::Scaled { variance_factor } => Gamma::Scaled {
                variance_factor: variance_factor * f,
            },
        }
    }

    /// Refuses a γ or c that is not positive and finite.
    pub fn check(self) -> Result<()> {
        let (name, v) = match self {
            Gamma::Fixed(g) => ("gamma", g),
            Gamma::Scaled { variance_factor } => ("gamma (variance factor)", variance_factor),
        };
        if v > 0.0 && v.is_finite() {
            Ok(())
        } else {
            Err(Error::parameter(name, v, "must be positive and finite"))
        }
    }
}

impl From<f64> for Gamma {
    fn from(g: f64) -> Self {
        Gamma::Fixed(g)
    }
}

impl std::fmt::Display for Gamma {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Gamma::Fixed(g) => write!(f, "{g}"),
            Gamma::Scaled { variance_factor } if *variance_factor == 1.0 => write!(f, "scaled"),
            Gamma::Scaled { variance_factor } => write!(f, "{variance_factor}*scaled"),
        }
    }
}

impl std::str::FromStr for Gamma {
    type Err = Error;

    /// A number, `scaled` (1 / Σ Var) or `C*scaled` (C / Σ Var).
    fn from_str(s: &str) -> Result<Gamma> {
        let t = s.trim();
        let refuse = || {
            Error::parameter(
                "gamma",
                s,
                "must be a positive number, `scaled` (1 / the training instances' summed \
                 variance) or `C*scaled`",
            )
        };
        let gamma = if t == "scaled" {
            Gamma::scaled()
        } else if let Some(c) = t.strip_suffix("*scaled") {
            Gamma::Scaled {
                variance_factor: c.trim().parse().map_err(|_| refuse())?,
            }
        } else {
            Gamma::Fixed(t.parse().map_err(|_| refuse())?)
        };
        gamma.check().map_err(|_| refuse())?;
        Ok(gamma)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scaled_gamma_is_the_factor_over_the_summed_population_variances() {
        // Three instances in two bags: feature 0 takes 0, 1, 5 (mean 2, variance 14/3),
        // feature 1 is constant (variance 0), feature 2 takes −1, 1, 0 (variance 2/3).
        let data = Dataset::new(
            "three",
            3,
            vec![0.0, 7.0, -1.0, 1.0, 7.0, 1.0, 5.0, 7.0, 0.0],
            vec![0, 2, 3],
            vec!["a".into(), "b".into()],
            None,
            vec![],
        )
        .unwrap();
        let total = 14.0 / 3.0 + 2.0 / 3.0;
        let got = Gamma::scaled().resolve(&data).unwrap();
        assert!((got - 1.0 / total).abs() < 1e-15, "{got}");
        let half = Gamma::Scaled {
            variance_factor: 0.5,
        };
        assert!((half.resolve(&data).unwrap() - 0.5 / total).abs() < 1e-15);
        assert_eq!(Gamma::Fixed(0.3).resolve(&data).unwrap(), 0.3);
    }

    #[test]
    fn constant_instances_refuse_a_scaled_gamma_and_bad_values_are_refused() {
        let data = Dataset::new(
            "flat",
            2,
            vec![1.0, 2.0, 1.0, 2.0],
            vec![0, 1, 2],
            vec!["a".into(), "b".into()],
            None,
            vec![],
        )
        .unwrap();
        let err = Gamma::scaled().resolve(&data).unwrap_err().to_string();
        assert!(
            err.contains("flat") && err.contains("give gamma a number"),
            "{err}"
        );
        assert_eq!(Gamma::Fixed(2.0).resolve(&data).unwrap(), 2.0);
        for bad in [
            "0", "-1", "nan", "inf", "scaledx", "0*scaled", "x*scaled", "",
        ] {
            let err = bad.parse::<Gamma>().unwrap_err().to_string();
            assert!(err.contains("gamma"), "{bad}: {err}");
        }
        for good in ["0.01", "scaled", "0.5*scaled"] {
            let g: Gamma = good.parse().unwrap();
            assert_eq!(g.to_string().parse::<Gamma>().unwrap(), g);
        }
    }

    #[test]
    fn an_mi_kernel_svm_with_a_scaled_gamma_is_the_fixed_one_at_its_value() {
        use crate::classifier::svm::{SetKernel, SetKernelSvm};
        use crate::classifier::{BagModel, Classifier};
        let data = crate::data::load("musk1").unwrap();
        let train: Vec<usize> = (0..data.n_bags()).step_by(2).collect();
        // Σ Var of the training instances after the min-max map, by hand.
        let rows: Vec<&[f64]> = train
            .iter()
            .flat_map(|&b| data.bag(b).instances())
            .collect();
        let mut total = 0.0;
        for j in 0..data.dim() {
            let col: Vec<f64> = rows.iter().map(|x| x[j]).collect();
            let (lo, hi) = col
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &v| {
                    (l.min(v), h.max(v))
                });
            if hi > lo {
                let scaled: Vec<f64> = col.iter().map(|v| (v - lo) / (hi - lo)).collect();
                let mean = scaled.iter().sum::<f64>() / scaled.len() as f64;
                total +=
                    scaled.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / scaled.len() as f64;
            }
        }
        let svm = |gamma: Gamma| SetKernelSvm {
            kernel: SetKernel::MiRbf { gamma },
            ..SetKernelSvm::mismo()
        };
        let scaled = svm(Gamma::scaled()).fit(data.select(&train)).unwrap();
        let SetKernel::MiRbf {
            gamma: Gamma::Fixed(g),
        } = scaled.kernel
        else {
            panic!("the model keeps {:?}", scaled.kernel);
        };
        assert!((g * total - 1.0).abs() < 1e-12, "γ {g}, Σ Var {total}");
        let fixed = svm(Gamma::Fixed(g)).fit(data.select(&train)).unwrap();
        assert_eq!(scaled, fixed);
        assert_eq!(scaled.scores(&data).unwrap(), fixed.scores(&data).unwrap());
        // A scaled γ is not shared across folds: it is fitted on each fold's bags.
        let shared = svm(Gamma::scaled()).preprocessing(super::super::Preprocessing::None);
        assert!(!shared.shares_gram());
        assert!(shared
            .kernel(SetKernel::MiRbf { gamma: 0.1.into() })
            .shares_gram());
    }

    #[test]
    fn saved_forms_read_back() {
        for g in [
            Gamma::Fixed(0.01),
            Gamma::scaled(),
            Gamma::scaled().times(0.1),
        ] {
            let text = serde_json::to_string(&g).unwrap();
            assert_eq!(serde_json::from_str::<Gamma>(&text).unwrap(), g, "{text}");
        }
        assert_eq!(serde_json::to_string(&Gamma::Fixed(0.01)).unwrap(), "0.01");
        assert_eq!(
            serde_json::to_string(&Gamma::scaled()).unwrap(),
            r#"{"variance_factor":1.0}"#
        );
    }
}
