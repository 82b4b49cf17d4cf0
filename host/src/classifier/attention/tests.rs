use candle_core::{Device, Tensor};
use rand::seq::SliceRandom;
use rand::RngExt;
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use super::train::Net;
use super::*;
use crate::data::Dataset;
use crate::eval::metrics::auroc;

/// Bags of 3–8 instances in `dim` features uniform in (−2, 2); a bag of class c > 0 has
/// one instance shifted by +5 in feature c − 1 (the key instance, above 3 there, where
/// no other instance reaches), class 0 none: the classes are separable.
fn clusters(seed: u64, n_bags: usize, dim: usize, n_classes: usize) -> Dataset {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let noise = |rng: &mut Xoshiro256PlusPlus| -> f64 { rng.random_range(-2.0..2.0) };
    let (mut x, mut starts, mut labels) = (Vec::new(), vec![0], Vec::new());
    for b in 0..n_bags {
        let class = b % n_classes;
        let len = rng.random_range(3..9);
        let key = rng.random_range(0..len);
        for i in 0..len {
            for j in 0..dim {
                let shift = if class > 0 && i == key && j == class - 1 {
                    5.0
                } else {
                    0.0
                };
                x.push(noise(&mut rng) + shift);
            }
        }
        starts.push(starts.last().unwrap() + len);
        labels.push(class);
    }
    Dataset::new(
        "clusters",
        dim,
        x,
        starts,
        (0..n_bags).map(|b| b.to_string()).collect(),
        Some(labels),
        (0..n_classes).map(|c| c.to_string()).collect(),
    )
    .unwrap()
}

/// A small, quick network.
fn small() -> AttentionMil {
    AttentionMil::default()
        .hidden(16)
        .epochs(40)
        .learning_rate(5e-3)
}

const POOLINGS: [Pooling; 4] = [
    Pooling::Attention,
    Pooling::Gated,
    Pooling::Mean,
    Pooling::Max,
];

/// The same bags with each bag's instances in another order (reversed, then the first
/// two swapped).
fn permuted(data: &Dataset) -> Dataset {
    let mut x = Vec::new();
    for b in 0..data.n_bags() {
        let bag = data.bag(b);
        let mut order: Vec<usize> = (0..bag.len()).rev().collect();
        order.swap(0, 1);
        for i in order {
            x.extend_from_slice(bag.instance(i));
        }
    }
    data.with_features(data.dim(), x).unwrap()
}

#[test]
fn instance_weights_are_positive_and_sum_to_one() {
    let data = clusters(1, 20, 3, 2);
    for pooling in POOLINGS {
        let model = small().pooling(pooling).epochs(3).fit(&data).unwrap();
        for e in model.explain(&data).unwrap() {
            assert_eq!(e.score_kind, InstanceScore::Attention);
            let sum: f64 = e.instance_scores.iter().sum();
            assert!((sum - 1.0).abs() < 1e-12, "{pooling:?}: sum {sum}");
            if pooling != Pooling::Max {
                assert!(e.instance_scores.iter().all(|&a| a > 0.0), "{pooling:?}");
            }
        }
    }
}

#[test]
fn zero_attention_vector_is_mean_pooling() {
    // With w = 0 every instance gets the same score wᵀt_k + b, so a_k = 1/n and
    // z = Σ a_k h_k is the mean of the embeddings (eq. 8).
    let data = clusters(2, 16, 3, 2);
    for pooling in [Pooling::Attention, Pooling::Gated] {
        let mut model = small().pooling(pooling).epochs(5).fit(&data).unwrap();
        let w = model.layers.len() - 2;
        model.layers[w].weight.iter_mut().for_each(|v| *v = 0.0);
        let mut mean = model.clone();
        mean.params.pooling = Pooling::Mean;
        mean.layers = vec![
            model.layers[0].clone(),
            model.layers[1].clone(),
            model.layers.last().unwrap().clone(),
        ];
        mean.validate().unwrap();
        let (a, b) = (model.scores(&data).unwrap(), mean.scores(&data).unwrap());
        for i in 0..data.n_bags() {
            assert!(
                (a.row(i)[1] - b.row(i)[1]).abs() < 1e-12,
                "{pooling:?} bag {i}"
            );
        }
    }
}

#[test]
fn plain_loops_equal_candles_forward_pass() {
    for (classes, seed) in [(2, 3), (3, 4)] {
        let data = clusters(seed, 18, 4, classes);
        for pooling in POOLINGS {
            let model = small().pooling(pooling).epochs(3).fit(&data).unwrap();
            let net = Net::from_layers(&model.layers, pooling).unwrap();
            let scores = model.scores(&data).unwrap();
            let explained = model.explain(&data).unwrap();
            for (b, explanation) in explained.iter().enumerate() {
                let x: Vec<f32> = model
                    .standardise(data.bag(b))
                    .concat()
                    .into_iter()
                    .map(|v| v as f32)
                    .collect();
                let n = data.bag(b).len();
                let x = Tensor::from_vec(x, (n, data.dim()), &Device::Cpu).unwrap();
                let (logits, fwd) = net.forward(&x, None).unwrap();
                let logits: Vec<f32> = logits.flatten_all().unwrap().to_vec1().unwrap();
                let probs: Vec<f64> = if classes == 2 {
                    let p = 1.0 / (1.0 + (-f64::from(logits[0])).exp());
                    vec![1.0 - p, p]
                } else {
                    softmax(&logits.iter().map(|&l| f64::from(l)).collect::<Vec<_>>())
                };
                // candle computes in f32 (relative rounding ~6e-8 per operation over
                // sums of a few dozen terms), the loops in f64.
                for (c, (p, q)) in probs.iter().zip(scores.row(b)).enumerate() {
                    assert!(
                        (p - q).abs() < 1e-5,
                        "{pooling:?} bag {b} class {c}: {p} vs {q}"
                    );
                }
                if let Some(a) = fwd {
                    let a: Vec<f32> = a.flatten_all().unwrap().to_vec1().unwrap();
                    for (k, (p, q)) in a.iter().zip(&explanation.instance_scores).enumerate() {
                        assert!((f64::from(*p) - q).abs() < 1e-5, "bag {b} instance {k}");
                    }
                }
            }
        }
    }
}

#[test]
fn bag_scores_ignore_the_order_and_duplication_of_instances() {
    let data = clusters(5, 16, 3, 2);
    let shuffled = permuted(&data);
    for pooling in POOLINGS {
        let model = small().pooling(pooling).epochs(3).fit(&data).unwrap();
        let (a, b) = (
            model.scores(&data).unwrap(),
            model.scores(&shuffled).unwrap(),
        );
        for i in 0..data.n_bags() {
            assert!(
                (a.row(i)[1] - b.row(i)[1]).abs() < 1e-12,
                "{pooling:?} bag {i}"
            );
        }
    }
    // Max pooling is the feature-wise maximum: repeating every instance changes no bag.
    let doubled = {
        let (mut x, mut starts) = (Vec::new(), vec![0]);
        for b in 0..data.n_bags() {
            let bag = data.bag(b);
            for _ in 0..2 {
                bag.instances().for_each(|i| x.extend_from_slice(i));
            }
            starts.push(starts.last().unwrap() + 2 * bag.len());
        }
        Dataset::new(
            "doubled",
            data.dim(),
            x,
            starts,
            (0..data.n_bags()).map(|b| b.to_string()).collect(),
            data.labels().map(<[usize]>::to_vec),
            data.class_names().to_vec(),
        )
        .unwrap()
    };
    for pooling in POOLINGS {
        let model = small().pooling(pooling).epochs(3).fit(&data).unwrap();
        let (a, b) = (
            model.scores(&data).unwrap(),
            model.scores(&doubled).unwrap(),
        );
        for i in 0..data.n_bags() {
            assert!(
                (a.row(i)[1] - b.row(i)[1]).abs() < 1e-12,
                "{pooling:?} bag {i}"
            );
        }
    }
}

#[test]
fn a_key_instance_set_is_learnt() {
    for seed in 0..3 {
        let train = clusters(10 + seed, 40, 4, 2);
        let test = clusters(100 + seed, 60, 4, 2);
        for pooling in [Pooling::Attention, Pooling::Gated, Pooling::Max] {
            let model = small()
                .pooling(pooling)
                .validation_fraction(0.0)
                .seed(seed)
                .fit(&train)
                .unwrap();
            let labels = model.scores(&train).unwrap().labels();
            assert_eq!(labels, train.labels().unwrap(), "seed {seed} {pooling:?}");
            let scores = model.scores(&test).unwrap();
            let pos: Vec<bool> = test.labels().unwrap().iter().map(|&l| l == 1).collect();
            let p: Vec<f64> = (0..test.n_bags()).map(|i| scores.row(i)[1]).collect();
            let auc = auroc(&p, &pos).unwrap();
            assert!(auc >= 0.95, "seed {seed} {pooling:?}: AUROC {auc}");
            // The attention goes to the key instance of a positive bag.
            if pooling != Pooling::Max {
                let explained = model.explain(&test).unwrap();
                let hits = (0..test.n_bags())
                    .filter(|&b| pos[b])
                    .filter(|&b| {
                        let w = explained[b].witnesses[0];
                        test.bag(b).instance(w)[0] > 2.5
                    })
                    .count();
                let n_pos = pos.iter().filter(|&&p| p).count();
                assert!(
                    hits * 10 >= n_pos * 9,
                    "seed {seed} {pooling:?}: {hits}/{n_pos}"
                );
            }
        }
    }
}

#[test]
fn three_classes_are_learnt() {
    let train = clusters(20, 60, 4, 3);
    let test = clusters(21, 60, 4, 3);
    let model = small().epochs(60).fit(&train).unwrap();
    assert_eq!(model.n_classes(), 3);
    assert_eq!(model.layers.last().unwrap().rows, 3);
    let scores = model.scores(&test).unwrap();
    let right = scores
        .labels()
        .iter()
        .zip(test.labels().unwrap())
        .filter(|(a, b)| a == b)
        .count();
    assert!(right * 10 >= 9 * test.n_bags(), "{right}/{}", test.n_bags());
    for i in 0..test.n_bags() {
        assert!((scores.row(i).iter().sum::<f64>() - 1.0).abs() < 1e-12);
    }
}

#[test]
fn the_seed_decides_the_model() {
    let data = clusters(6, 24, 3, 2);
    let a = small().epochs(4).fit(&data).unwrap();
    let b = small().epochs(4).fit(&data).unwrap();
    assert_eq!(a, b);
    let c = small().epochs(4).seed(1).fit(&data).unwrap();
    assert_ne!(a.layers, c.layers);
}

#[test]
fn training_stops_when_the_validation_loss_rises() {
    // Labels independent of the bags: the training loss falls while the held-out loss
    // rises, so training stops `patience` epochs after its best epoch.
    let mut data = clusters(7, 40, 6, 2);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(8);
    let mut labels = data.labels().unwrap().to_vec();
    labels.shuffle(&mut rng);
    data = Dataset::new(
        "noise",
        data.dim(),
        data.features().to_vec(),
        data.bag_starts().to_vec(),
        (0..data.n_bags()).map(|b| b.to_string()).collect(),
        Some(labels),
        data.class_names().to_vec(),
    )
    .unwrap();
    let params = small()
        .dropout(0.0)
        .weight_decay(0.0)
        .epochs(300)
        .patience(5);
    let model = params.fit(&data).unwrap();
    match model.stop {
        Stop::EarlyStop { epoch } => {
            assert!(epoch < 300);
            assert_eq!(epoch, model.best_epoch + 5);
        }
        Stop::MaxEpochs => panic!("no early stop"),
    }
    let all = params
        .validation_fraction(0.0)
        .epochs(7)
        .fit(&data)
        .unwrap();
    assert_eq!((all.stop, all.best_epoch), (Stop::MaxEpochs, 7));
}

#[test]
fn damaged_models_are_refused() {
    let data = clusters(9, 16, 3, 2);
    let model = small()
        .pooling(Pooling::Gated)
        .epochs(2)
        .fit(&data)
        .unwrap();
    model.validate().unwrap();
    let json = serde_json::to_string(&model).unwrap();
    let back: AttentionModel = serde_json::from_str(&json).unwrap();
    back.validate().unwrap();
    assert_eq!(back, model);
    let mut short = model.clone();
    short.layers[1].weight.pop();
    assert!(short.validate().is_err());
    let mut wrong_shape = model.clone();
    wrong_shape.layers[2].rows += 1;
    assert!(wrong_shape.validate().is_err());
    let mut nan = model.clone();
    nan.layers[0].bias[0] = f32::NAN;
    assert!(nan.validate().is_err());
    let mut wrong_pooling = model.clone();
    wrong_pooling.params.pooling = Pooling::Attention;
    assert!(wrong_pooling.validate().is_err());
    let mut wrong_dim = model.clone();
    wrong_dim.mean.pop();
    assert!(wrong_dim.validate().is_err());
    let mut bad_param = model;
    bad_param.params.dropout = 1.5;
    assert!(bad_param.validate().is_err());
}

#[test]
fn bad_parameters_are_refused_before_the_data() {
    let data = clusters(3, 12, 2, 2);
    let cases = [
        (small().hidden(2), "hidden"),
        (small().dropout(1.0), "dropout"),
        (small().learning_rate(0.0), "learning_rate"),
        (small().weight_decay(f64::NAN), "weight_decay"),
        (small().epochs(0), "epochs"),
        (small().patience(0), "patience"),
        (small().validation_fraction(0.95), "validation_fraction"),
    ];
    for (params, name) in cases {
        let err = params.fit(&data).unwrap_err();
        assert!(err.to_string().contains(name), "{err}");
    }
}
