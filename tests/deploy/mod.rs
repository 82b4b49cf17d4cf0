//! Models shared by the deployment tests (`parity`, `firmware`): host models trained with
//! the toolkit's own algorithms, and the firmware's bag file.

use mil_toolkit::classifier::citation_knn::{CitationKnn, Scaling};
use mil_toolkit::classifier::milr::{Milr, Pooling};
use mil_toolkit::classifier::ClassifierParams;
use mil_toolkit::model::HostModel;
use mil_toolkit::projection::{ProjectionKind, ProjectionParams};
use mil_toolkit::Dataset;

/// Fits an optional projection (α = 1, seed 1) and a classifier on every bag of `data`.
pub fn train(
    data: &Dataset,
    projection: Option<(ProjectionKind, usize)>,
    classifier: ClassifierParams,
) -> HostModel {
    let projection = projection.map(|(kind, dim)| {
        let params = ProjectionParams::new(kind).with_dim(dim);
        let params = params.with_alpha(1.0).unwrap_or(params);
        params.fit(data).unwrap()
    });
    let inner = match &projection {
        Some(p) => p.transform(data).unwrap(),
        None => data.clone(),
    };
    let classifier = classifier.fit(&inner).unwrap();
    HostModel::new(
        data.class_names().to_vec(),
        data.dim(),
        projection,
        classifier,
    )
}

/// MILR with the given pooling and the host's defaults otherwise.
pub fn milr(pooling: Pooling) -> ClassifierParams {
    ClassifierParams::Milr(Milr {
        pooling,
        ..Milr::default()
    })
}

/// Citation-kNN with R = 2, C = 4 and the given scaling.
pub fn citation_knn(scaling: Scaling) -> ClassifierParams {
    ClassifierParams::CitationKnn(CitationKnn {
        scaling,
        ..CitationKnn::default()
    })
}

/// The musk1 model the firmware runs: B-MIDA (d = 10) and MILR with max pooling.
pub fn musk1_firmware_model(musk1: &Dataset) -> HostModel {
    train(musk1, Some((ProjectionKind::Bmida, 10)), milr(Pooling::Max))
}

/// A data set of the given bags (instances × features) and labels, bags named `b0`, `b1`, …
pub fn dataset(dim: usize, bags: &[Vec<Vec<f64>>], labels: &[usize]) -> Dataset {
    let mut features = Vec::new();
    let mut starts = vec![0];
    for bag in bags {
        for x in bag {
            features.extend_from_slice(x);
        }
        starts.push(features.len() / dim);
    }
    let ids = (0..bags.len()).map(|b| format!("b{b}")).collect();
    let classes = labels.iter().max().map_or(0, |m| m + 1).max(2);
    let names = (0..classes).map(|c| c.to_string()).collect();
    Dataset::new(
        "test",
        dim,
        features,
        starts,
        ids,
        Some(labels.to_vec()),
        names,
    )
    .unwrap()
}

/// Every bag of `data` in the firmware's `bags.bin` layout.
pub fn bags_bin(data: &Dataset) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend((data.n_bags() as u32).to_le_bytes());
    out.extend((data.dim() as u32).to_le_bytes());
    for b in 0..data.n_bags() {
        let bag = data.bag(b);
        out.extend((bag.len() as u32).to_le_bytes());
        for &v in bag.as_slice() {
            out.extend((v as f32).to_le_bytes());
        }
    }
    out
}

/// The set-kernel SVM with the CLI's defaults (k∧, ε = 0.1, δ = 0.01, ρ = 1/50, C = 10¹⁰,
/// seed 1) and the given empirical map.
pub fn svm(map: mil_toolkit::classifier::svm::bags::EmpiricalMap) -> ClassifierParams {
    use mil_core::box_kernel::{BoxKernel, Method};
    use mil_toolkit::classifier::svm::{SetKernel, SetKernelSvm};
    ClassifierParams::Svm(SetKernelSvm {
        kernel: SetKernel::Box {
            kernel: BoxKernel::And,
            estimator: Method::Fast,
            epsilon: 0.1,
            delta: 0.01,
            precision: None,
        },
        settings: mil_toolkit::classifier::svm::bags::BagSvmSettings {
            rho: mil_toolkit::classifier::svm::Rho::Fixed(0.02),
            map,
            cost: 1e10,
        },
        seed: 1,
        preprocessing: mil_toolkit::classifier::svm::Preprocessing::None,
        class_weight: Default::default(),
    })
}
