//! An SVM over bags from a precomputed set-kernel Gram matrix held as natural logarithms:
//! the subpolynomial map, the optional empirical kernel map, SMO on the training bags,
//! decision values for any bags.

use serde::{Deserialize, Serialize};

use super::maps::{empirical_kernel, subpolynomial_from_log};
use crate::error::{Error, Result};
use crate::optim::smo::{solve, solve_bounded, SmoParams};

/// How the (mapped) Gram matrix becomes the SVM's kernel (GMIL §5.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EmpiricalMap {
    /// Use φ(k) directly (possibly indefinite).
    None,
    /// k_emp over the training bags.
    #[serde(rename = "emp", alias = "training")]
    Training,
    /// k_emp over training and test bags (transduction; test labels are never used).
    #[serde(rename = "emp-trans", alias = "transductive")]
    Transductive,
}

mil_core::keywords!(EmpiricalMap {
    EmpiricalMap::None => "none": "the (subpolynomially mapped) Gram matrix itself",
    EmpiricalMap::Training => "emp": "empirical kernel map over the training bags",
    EmpiricalMap::Transductive => "emp-trans": "empirical kernel map over training and unlabelled test bags (transductive)",
});

/// Settings of the bag SVM.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BagSvmSettings {
    /// Exponent ρ of φ(x) = sign(x)|x|^ρ (the paper: 1/50).
    pub rho: f64,
    /// Empirical kernel map.
    pub map: EmpiricalMap,
    /// Misclassification cost C (the paper: 10¹⁰, a hard margin).
    pub cost: f64,
}

impl Default for BagSvmSettings {
    /// The GMIL paper's §8 settings: ρ = 1/50, no empirical map, C = 10¹⁰ (a hard margin).
    fn default() -> Self {
        BagSvmSettings {
            rho: 0.02,
            map: EmpiricalMap::None,
            cost: 1e10,
        }
    }
}

crate::params::setters!(BagSvmSettings {
    rho: f64,
    map: EmpiricalMap,
    cost: f64,
});

/// A trained bag SVM: dual coefficients over its training bags.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BagSvm {
    /// The settings it was trained with.
    pub settings: BagSvmSettings,
    /// Indices (into the Gram matrix) of the training bags.
    pub train: Vec<usize>,
    /// αᵢyᵢ per training bag (0 for non-support bags).
    pub coefficients: Vec<f64>,
    /// Bias b.
    pub bias: f64,
    /// The constant the kernel was divided by for conditioning (equivalent to scaling C).
    pub kernel_scale: f64,
    /// Whether SMO met its tolerance.
    pub converged: bool,
}

/// Checks ρ in (0, 1] and C in (0, 10¹⁰].
pub fn check_settings(settings: &BagSvmSettings) -> Result<()> {
    if !(settings.rho > 0.0 && settings.rho <= 1.0) {
        return Err(Error::parameter("rho", settings.rho, "must be in (0, 1]"));
    }
    let most = crate::params::limits::MAX_SVM_COST;
    if !(settings.cost > 0.0 && settings.cost <= most) {
        return Err(Error::parameter(
            "cost",
            settings.cost,
            format!("must be in (0, {most:e}] (the hard margin of the GMIL paper)"),
        ));
    }
    Ok(())
}

/// The kernel the SVM sees over all `n` bags: φ applied to every entry, then the chosen
/// empirical map, then divided by the mean training diagonal so that entries are O(1)
/// (the decision function's sign is unchanged; C is effectively rescaled by the same
/// constant, immaterial for the hard margin). Returns the matrix and the constant.
pub fn svm_kernel(
    log_gram: &[f64],
    n: usize,
    train: &[usize],
    settings: &BagSvmSettings,
) -> Result<(Vec<f64>, f64)> {
    if log_gram.len() != n * n {
        return Err(Error::parameter(
            "gram",
            log_gram.len(),
            format!("expected {n}×{n} entries"),
        ));
    }
    check_settings(settings)?;
    if let Some(v) = log_gram.iter().find(|v| v.is_nan()) {
        return Err(Error::parameter("gram", v, "the Gram matrix holds NaN"));
    }
    let mapped: Vec<f64> = log_gram
        .iter()
        .map(|&l| subpolynomial_from_log(l, settings.rho))
        .collect();
    let kernel = match settings.map {
        EmpiricalMap::None => mapped,
        EmpiricalMap::Training => empirical_kernel(&mapped, n, train),
        EmpiricalMap::Transductive => empirical_kernel(&mapped, n, &(0..n).collect::<Vec<_>>()),
    };
    let scale = train.iter().map(|&i| kernel[i * n + i]).sum::<f64>() / train.len().max(1) as f64;
    if !(scale.is_finite() && scale > 0.0) {
        return Err(Error::Numerical {
            method: "bag SVM",
            reason: format!("kernel diagonal scale {scale} is not positive and finite; lower rho"),
        });
    }
    Ok((kernel.into_iter().map(|v| v / scale).collect(), scale))
}

impl BagSvm {
    /// Trains on the bags `train` with binary labels (`true` = positive) given per bag of
    /// the `n × n` kernel from [`svm_kernel`]; `weights` (per bag, like `positive`)
    /// scales each bag's cost C (libsvm's class weights), `None` for C alike.
    pub fn fit(
        kernel: &[f64],
        n: usize,
        train: &[usize],
        positive: &[bool],
        weights: Option<&[f64]>,
        settings: BagSvmSettings,
        kernel_scale: f64,
    ) -> Result<BagSvm> {
        if !train.iter().any(|&i| positive[i]) || train.iter().all(|&i| positive[i]) {
            return Err(Error::data(
                "training bags",
                "the SVM needs both classes among the training bags",
            ));
        }
        check_settings(&settings)?;
        let m = train.len();
        let mut sub = vec![0.0; m * m];
        for (a, &i) in train.iter().enumerate() {
            for (b, &j) in train.iter().enumerate() {
                sub[a * m + b] = kernel[i * n + j];
            }
        }
        let y: Vec<f64> = train
            .iter()
            .map(|&i| if positive[i] { 1.0 } else { -1.0 })
            .collect();
        let params = SmoParams {
            c: settings.cost,
            ..SmoParams::default()
        };
        let solution = match weights {
            None => solve(&sub, &y, &params),
            Some(w) => {
                let bounds: Vec<f64> = train.iter().map(|&i| settings.cost * w[i]).collect();
                solve_bounded(&sub, &y, &params, &bounds)
            }
        };
        Ok(BagSvm {
            settings,
            train: train.to_vec(),
            coefficients: solution.alpha.iter().zip(&y).map(|(a, y)| a * y).collect(),
            bias: solution.bias,
            kernel_scale,
            converged: solution.converged,
        })
    }

    /// Decision value f(bag) = Σ αᵢyᵢK(bag, xᵢ) + b for bag `bag` of the kernel matrix.
    pub fn decision(&self, kernel: &[f64], n: usize, bag: usize) -> f64 {
        self.train
            .iter()
            .zip(&self.coefficients)
            .map(|(&i, c)| c * kernel[bag * n + i])
            .sum::<f64>()
            + self.bias
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Saved models write the names the CLI, Python and help texts use, and read the
    /// spellings earlier builds wrote.
    #[test]
    fn saved_names_are_the_keywords() {
        use crate::classifier::svm::Preprocessing;
        use mil_core::keyword::Keyword;
        for &m in EmpiricalMap::ALL {
            assert_eq!(
                serde_json::to_string(&m).unwrap(),
                format!("\"{}\"", m.name())
            );
        }
        for &p in Preprocessing::ALL {
            assert_eq!(
                serde_json::to_string(&p).unwrap(),
                format!("\"{}\"", p.name())
            );
        }
        let old: EmpiricalMap = serde_json::from_str("\"training\"").unwrap();
        assert_eq!(old, EmpiricalMap::Training);
        let old: EmpiricalMap = serde_json::from_str("\"transductive\"").unwrap();
        assert_eq!(old, EmpiricalMap::Transductive);
        let old: Preprocessing = serde_json::from_str("\"min-max\"").unwrap();
        assert_eq!(old, Preprocessing::MinMax);
    }

    /// Bags on a line: the log-Gram of a Gaussian kernel exp(−(a−b)²) is −(a−b)².
    fn line_gram(points: &[f64]) -> Vec<f64> {
        points
            .iter()
            .flat_map(|a| points.iter().map(move |b| -(a - b) * (a - b)))
            .collect()
    }

    #[test]
    fn separates_two_groups_with_every_map() {
        let points = [0.0, 0.2, 0.4, 3.0, 3.2, 3.4];
        let positive = [false, false, false, true, true, true];
        let n = points.len();
        let gram = line_gram(&points);
        let train = [0, 1, 3, 4];
        for map in [
            EmpiricalMap::None,
            EmpiricalMap::Training,
            EmpiricalMap::Transductive,
        ] {
            let settings = BagSvmSettings {
                rho: 1.0,
                map,
                cost: 1e10,
            };
            let (k, scale) = svm_kernel(&gram, n, &train, &settings).unwrap();
            let svm = BagSvm::fit(&k, n, &train, &positive, None, settings, scale).unwrap();
            assert!(svm.converged);
            for (bag, &is_positive) in positive.iter().enumerate() {
                assert_eq!(
                    svm.decision(&k, n, bag) > 0.0,
                    is_positive,
                    "{map:?} bag {bag}"
                );
            }
        }
    }

    #[test]
    fn rejects_bad_settings_and_single_class() {
        let gram = line_gram(&[0.0, 1.0]);
        let s = BagSvmSettings {
            rho: 0.0,
            map: EmpiricalMap::None,
            cost: 1.0,
        };
        assert!(svm_kernel(&gram, 2, &[0, 1], &s).is_err());
        let s = BagSvmSettings { rho: 0.5, ..s };
        let (k, scale) = svm_kernel(&gram, 2, &[0, 1], &s).unwrap();
        assert!(BagSvm::fit(&k, 2, &[0, 1], &[true, true], None, s, scale).is_err());
    }
}
