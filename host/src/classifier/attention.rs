//! Attention-based deep MIL (Ilse, Tomczak & Welling 2018): a fully connected network
//! embeds each instance, a permutation-invariant pooling turns a bag's embeddings into
//! one vector, and a linear head classifies it.
//!
//! - Instance encoder: `dim → hidden → hidden/2`, each layer affine + ReLU + dropout
//!   (256 and 128 by default, as common reimplementations of the paper's benchmark
//!   model have it; the method page says so).
//! - Pooling ([`Pooling`]): attention a_k = softmax_k(wᵀ tanh(V h_k)) (eq. 8), gated
//!   attention a_k = softmax_k(wᵀ(tanh(V h_k) ⊙ sigm(U h_k))) (eq. 9) with `hidden/4`
//!   attention units, z = Σ_k a_k h_k (eq. 7); or the mean or the feature-wise maximum.
//! - Head: one logit and a sigmoid for two classes, one logit per class and a softmax
//!   for more.
//!
//! Training (candle's reverse-mode autodiff on the CPU, built with the crate's
//! `attention` feature: [`TRAINABLE`]) minimises the class-weighted cross-entropy plus
//! (λ/2)‖θ‖² over every parameter, which is what PyTorch's Adam `weight_decay` λ adds
//! to the gradient, with Adam (β = 0.9, 0.999), one bag per step in
//! a seeded shuffled order, for at most `epochs` epochs; with a validation fraction, a
//! seeded stratified share of the training bags is held out and training stops once
//! their loss has not improved for `patience` epochs, keeping the best epoch's weights.
//! Features are z-scored on the training instances. The fitted weights are plain `f32`
//! vectors; scoring runs in plain loops (in `f64`), tested against candle's forward pass.

use serde::{Deserialize, Serialize};

use super::imbalance::ClassWeight;
use super::{check_dim, BagModel, BagScores, Classifier};
use crate::data::{Bag, Bags};
use crate::error::{Error, Result};
use crate::explain::{Explanation, InstanceScore};
use crate::progress::{Progress, Silent};

#[cfg(feature = "attention")]
mod train;

/// How a bag's instance embeddings become one vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pooling {
    /// Attention weights softmax_k(wᵀ tanh(V h_k)) (eq. 8).
    #[default]
    Attention,
    /// Gated attention weights softmax_k(wᵀ(tanh(V h_k) ⊙ sigm(U h_k))) (eq. 9).
    Gated,
    /// The mean of the embeddings.
    Mean,
    /// The feature-wise maximum of the embeddings.
    Max,
}

mil_core::keywords!(Pooling {
    Pooling::Attention => "attention": "attention weights softmax(w.tanh(V h)) (Ilse et al. eq. 8)",
    Pooling::Gated => "gated": "gated attention weights softmax(w.(tanh(V h) * sigm(U h))) (eq. 9)",
    Pooling::Mean => "mean": "the mean of the instance embeddings",
    Pooling::Max => "max": "the feature-wise maximum of the instance embeddings",
});

impl Pooling {
    /// Whether the pooling has learnt weights (V, w, and U when gated).
    fn learnt(self) -> bool {
        matches!(self, Pooling::Attention | Pooling::Gated)
    }
}

/// Attention-MIL hyper-parameters (defaults: the paper's optimiser setting; sizes as the
/// method page states).
///
#[cfg_attr(feature = "attention", doc = "```")]
#[cfg_attr(not(feature = "attention"), doc = "```ignore")]
/// use mil_toolkit::classifier::attention::{AttentionMil, Pooling};
/// use mil_toolkit::classifier::{BagModel, Classifier};
///
/// let data = mil_toolkit::data::load("musk1")?;
/// let model = AttentionMil::default().pooling(Pooling::Gated).epochs(5).fit(&data)?;
/// let scores = model.scores(&data)?;
/// assert!((scores.row(0).iter().sum::<f64>() - 1.0).abs() < 1e-9);
/// # Ok::<(), mil_toolkit::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AttentionMil {
    /// The MIL pooling.
    pub pooling: Pooling,
    /// Width of the encoder's first layer; the second has `hidden/2` units, the
    /// attention `hidden/4`.
    pub hidden: usize,
    /// Dropout probability after each encoder layer, while training.
    pub dropout: f64,
    /// Adam's learning rate.
    pub learning_rate: f64,
    /// λ of the penalty (λ/2)‖θ‖² on every parameter (PyTorch Adam's `weight_decay`).
    pub weight_decay: f64,
    /// Most passes over the training bags.
    pub epochs: usize,
    /// Epochs without a better validation loss before training stops.
    pub patience: usize,
    /// Share of the training bags held out (stratified) for early stopping; 0: none.
    pub validation_fraction: f64,
    /// Seed of the weight initialisation, the validation split, the order of the bags
    /// and the dropout masks.
    pub seed: u64,
    /// Each bag's loss term is multiplied by the weight of its class.
    #[serde(default, skip_serializing_if = "ClassWeight::is_none")]
    pub class_weight: ClassWeight,
}

impl Default for AttentionMil {
    fn default() -> Self {
        AttentionMil {
            pooling: Pooling::Attention,
            hidden: 256,
            dropout: 0.5,
            learning_rate: 5e-4,
            weight_decay: 5e-3,
            epochs: 100,
            patience: 10,
            validation_fraction: 0.2,
            seed: 0,
            class_weight: ClassWeight::None,
        }
    }
}

crate::params::setters!(AttentionMil {
    pooling: Pooling,
    hidden: usize,
    dropout: f64,
    learning_rate: f64,
    weight_decay: f64,
    epochs: usize,
    patience: usize,
    validation_fraction: f64,
    seed: u64,
    class_weight: ClassWeight,
});

/// Whether this build trains the network: its training runs on candle, which comes with
/// the crate's `attention` feature (on in the Python wheel and in the repository's own
/// builds; `cargo install mil-toolkit --features attention`). Saved models load and score
/// without it.
pub const TRAINABLE: bool = cfg!(feature = "attention");

/// Refuses ([`Error::Unsupported`]) to train where the crate was built without its
/// `attention` feature ([`TRAINABLE`]).
pub fn check_trainable() -> Result<()> {
    if TRAINABLE {
        Ok(())
    } else {
        Err(Error::Unsupported(
            "training the attention network in a build without mil-toolkit's `attention` \
             feature (candle; `cargo install mil-toolkit --features attention`; saved \
             attention models load and score without it)"
                .into(),
        ))
    }
}

/// Largest encoder width.
pub const MAX_HIDDEN: usize = 4096;
/// Most epochs.
pub const MAX_EPOCHS: usize = 100_000;

impl AttentionMil {
    /// Checks the hyper-parameters alone, before any data is read.
    pub fn check(&self) -> Result<()> {
        if !(4..=MAX_HIDDEN).contains(&self.hidden) {
            return Err(Error::parameter(
                "hidden",
                self.hidden,
                format!("must be between 4 and {MAX_HIDDEN} (the attention has hidden/4 units)"),
            ));
        }
        if !(0.0..1.0).contains(&self.dropout) {
            return Err(Error::parameter(
                "dropout",
                self.dropout,
                "must be in [0, 1)",
            ));
        }
        if !(self.learning_rate > 0.0 && self.learning_rate <= 1.0) {
            return Err(Error::parameter(
                "learning_rate",
                self.learning_rate,
                "must be in (0, 1]",
            ));
        }
        crate::params::check_weight("weight_decay", self.weight_decay, false)?;
        crate::params::check_count("epochs", self.epochs, MAX_EPOCHS)?;
        crate::params::check_count("patience", self.patience, MAX_EPOCHS)?;
        if !(0.0..0.9).contains(&self.validation_fraction) {
            return Err(Error::parameter(
                "validation_fraction",
                self.validation_fraction,
                "must be in [0, 0.9) (0: no early stopping)",
            ));
        }
        self.class_weight.check()
    }

    /// The settings an inner CV tries when asked to tune the network: the weight decay
    /// kept, 5·10⁻⁴ and 5·10⁻², each fitted fold by fold.
    pub fn default_grid(&self) -> Vec<AttentionMil> {
        super::simple_mi::ridge_grid(self.weight_decay, &[5e-4, 5e-2], |w| self.weight_decay(w))
    }

    /// Fits on the bags `train`, reporting each epoch to `progress` and checking for
    /// Ctrl-C ([`crate::cancel::checkpoint`]) once per epoch. Refused
    /// ([`Error::Unsupported`]) where the crate was built without its `attention` feature
    /// ([`check_trainable`]).
    pub fn fit_with_progress<'a>(
        &self,
        train: impl Into<Bags<'a>>,
        progress: &dyn Progress,
    ) -> Result<AttentionModel> {
        let train = train.into();
        self.check()?;
        check_trainable()?;
        #[cfg(feature = "attention")]
        return train::fit(self, &train, progress);
        #[cfg(not(feature = "attention"))]
        {
            let _ = (train, progress);
            unreachable!("check_trainable refuses training without the feature")
        }
    }
}

/// The widths of the network's layers.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Shapes {
    dim: usize,
    hidden: usize,
    embed: usize,
    attend: usize,
    outputs: usize,
}

impl Shapes {
    fn new(dim: usize, hidden: usize, n_classes: usize) -> Shapes {
        Shapes {
            dim,
            hidden,
            embed: hidden / 2,
            attend: hidden / 4,
            outputs: if n_classes == 2 { 1 } else { n_classes },
        }
    }

    /// (name, rows, columns) of each weight matrix of the network with `pooling`, in
    /// the saved model's order; each has a bias of `rows` values.
    fn layers(&self, pooling: Pooling) -> Vec<(&'static str, usize, usize)> {
        let mut layers = vec![
            ("encoder1", self.hidden, self.dim),
            ("encoder2", self.embed, self.hidden),
        ];
        if pooling.learnt() {
            layers.push(("attention_v", self.attend, self.embed));
            if pooling == Pooling::Gated {
                layers.push(("attention_u", self.attend, self.embed));
            }
            layers.push(("attention_w", 1, self.attend));
        }
        layers.push(("head", self.outputs, self.embed));
        layers
    }
}

/// One affine layer's parameters as saved: `weight` row-major `rows × cols`, `bias` of
/// `rows` values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Layer {
    /// What the layer is (`encoder1`, `encoder2`, `attention_v`, `attention_u`,
    /// `attention_w`, `head`).
    pub name: String,
    /// Output width.
    pub rows: usize,
    /// Input width.
    pub cols: usize,
    /// The weight matrix, row-major.
    pub weight: Vec<f32>,
    /// The bias.
    pub bias: Vec<f32>,
}

/// Why training stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "reason")]
pub enum Stop {
    /// Every epoch ran.
    MaxEpochs,
    /// The validation loss had not improved for `patience` epochs after this epoch.
    EarlyStop {
        /// The last epoch run.
        epoch: usize,
    },
}

/// A fitted attention network.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttentionModel {
    /// Hyper-parameters.
    pub params: AttentionMil,
    /// Feature dimension.
    pub dim: usize,
    /// Number of classes.
    pub n_classes: usize,
    /// Mean of each feature over the training instances.
    pub mean: Vec<f64>,
    /// 1 / standard deviation of each feature (0 for a constant feature).
    pub inv_sd: Vec<f64>,
    /// The layers, in the order of [`AttentionModel::layer_names`].
    pub layers: Vec<Layer>,
    /// Why training stopped.
    pub stop: Stop,
    /// The epoch whose weights were kept (the best validation loss; the last epoch
    /// without validation).
    pub best_epoch: usize,
}

impl Classifier for AttentionMil {
    type Model = AttentionModel;

    fn fit<'a>(&self, train: impl Into<Bags<'a>>) -> Result<AttentionModel> {
        self.fit_with_progress(train, &Silent)
    }
}

impl AttentionModel {
    /// The layers' (name, rows, columns) this model must hold.
    pub fn layer_names(&self) -> Vec<(&'static str, usize, usize)> {
        Shapes::new(self.dim, self.params.hidden, self.n_classes).layers(self.params.pooling)
    }

    fn check_finite(&self) -> Result<()> {
        let finite = self
            .layers
            .iter()
            .all(|l| l.weight.iter().chain(&l.bias).all(|v| v.is_finite()));
        if finite {
            Ok(())
        } else {
            Err(Error::Numerical {
                method: "attention",
                reason: "training produced non-finite weights: lower the learning_rate".into(),
            })
        }
    }

    /// Checks a model read from a file: parameters, every layer's name and shape
    /// against the stated sizes, finite values.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Error::Model(format!("attention: {m}"));
        self.params.check().map_err(|e| bad(e.to_string()))?;
        if self.dim == 0 || !(2..=crate::data::dataset::MAX_CLASSES).contains(&self.n_classes) {
            return Err(bad(format!(
                "{} features and {} classes",
                self.dim, self.n_classes
            )));
        }
        if self.mean.len() != self.dim || self.inv_sd.len() != self.dim {
            return Err(bad(format!(
                "the standardisation has {} means and {} scales for {} features",
                self.mean.len(),
                self.inv_sd.len(),
                self.dim
            )));
        }
        if !self.mean.iter().chain(&self.inv_sd).all(|v| v.is_finite())
            || self.inv_sd.iter().any(|&s| s < 0.0)
        {
            return Err(bad("the standardisation is not finite and ≥ 0".into()));
        }
        let want = self.layer_names();
        if want.len() != self.layers.len() {
            return Err(bad(format!(
                "{} layers, {} pooling needs {}",
                self.layers.len(),
                self.params.pooling,
                want.len()
            )));
        }
        for (l, &(name, rows, cols)) in self.layers.iter().zip(&want) {
            if l.name != name || l.rows != rows || l.cols != cols {
                return Err(bad(format!(
                    "layer {} is {} × {}, expected {name} of {rows} × {cols}",
                    l.name, l.rows, l.cols
                )));
            }
            if l.weight.len() != rows * cols || l.bias.len() != rows {
                return Err(bad(format!(
                    "layer {name} holds {} weights and {} biases, expected {} and {rows}",
                    l.weight.len(),
                    l.bias.len(),
                    rows * cols
                )));
            }
        }
        if self.best_epoch > self.params.epochs {
            return Err(bad(format!(
                "best epoch {} of {} epochs",
                self.best_epoch, self.params.epochs
            )));
        }
        self.check_finite().map_err(|e| bad(e.to_string()))
    }

    /// The z-scored instances of a bag.
    fn standardise(&self, bag: Bag<'_>) -> Vec<Vec<f64>> {
        bag.instances()
            .map(|x| {
                x.iter()
                    .zip(self.mean.iter().zip(&self.inv_sd))
                    .map(|(v, (m, s))| (v - m) * s)
                    .collect()
            })
            .collect()
    }

    /// One bag's class probabilities and the instances' weights in its pooled vector
    /// (the attention weights; 1/n for mean pooling; for max pooling, the share of the
    /// embedding's features whose maximum the instance holds).
    fn bag_forward(&self, bag: Bag<'_>) -> (Vec<f64>, Vec<f64>) {
        let f = self.forward(bag);
        (f.probs, f.weights)
    }

    /// One bag's head logits in `f64` (one for two classes, one per class otherwise):
    /// what a device's [`mil_core::attention`] pass approximates within its bound.
    pub fn logits(&self, bag: Bag<'_>) -> Vec<f64> {
        self.forward(bag).logits
    }

    /// The largest value of each vector the device rounds to a step, over `bags`:
    /// |z-scored feature|, hidden unit, embedding coordinate h, pooled coordinate z.
    pub fn activation_maxima<'a>(&self, bags: impl Into<Bags<'a>>) -> [f64; 4] {
        let bags = bags.into();
        let mut top = [0.0f64; 4];
        for i in 0..bags.len() {
            let f = self.forward(bags.bag(i));
            for (t, m) in top.iter_mut().zip(f.maxima) {
                *t = t.max(m);
            }
        }
        top
    }

    /// The whole forward pass of one bag.
    fn forward(&self, bag: Bag<'_>) -> Forward {
        let affine = |l: &Layer, x: &[f64]| -> Vec<f64> {
            (0..l.rows)
                .map(|r| {
                    let row = &l.weight[r * l.cols..(r + 1) * l.cols];
                    row.iter()
                        .zip(x)
                        .map(|(w, v)| f64::from(*w) * v)
                        .sum::<f64>()
                        + f64::from(l.bias[r])
                })
                .collect()
        };
        let relu = |v: Vec<f64>| -> Vec<f64> { v.into_iter().map(|a| a.max(0.0)).collect() };
        let top = |v: &[f64]| v.iter().fold(0.0f64, |m, a| m.max(a.abs()));
        let mut maxima = [0.0f64; 4];
        let h: Vec<Vec<f64>> = self
            .standardise(bag)
            .iter()
            .map(|x| {
                let a = relu(affine(&self.layers[0], x));
                let h = relu(affine(&self.layers[1], &a));
                maxima[0] = maxima[0].max(top(x));
                maxima[1] = maxima[1].max(top(&a));
                maxima[2] = maxima[2].max(top(&h));
                h
            })
            .collect();
        let n = h.len();
        let embed = self.layers[1].rows;
        let weights: Vec<f64> = match self.params.pooling {
            Pooling::Mean => vec![1.0 / n as f64; n],
            Pooling::Max => {
                // The first instance holding each feature's maximum.
                let mut top = vec![0usize; embed];
                for (k, hk) in h.iter().enumerate() {
                    for (j, t) in top.iter_mut().enumerate() {
                        if hk[j] > h[*t][j] {
                            *t = k;
                        }
                    }
                }
                let mut share = vec![0.0; n];
                top.iter().for_each(|&t| share[t] += 1.0 / embed as f64);
                share
            }
            Pooling::Attention | Pooling::Gated => {
                let gated = self.params.pooling == Pooling::Gated;
                let w = &self.layers[if gated { 4 } else { 3 }];
                let s: Vec<f64> = h
                    .iter()
                    .map(|hk| {
                        let mut t: Vec<f64> = affine(&self.layers[2], hk)
                            .into_iter()
                            .map(f64::tanh)
                            .collect();
                        if gated {
                            let g = affine(&self.layers[3], hk);
                            t.iter_mut()
                                .zip(g)
                                .for_each(|(a, u)| *a /= 1.0 + (-u).exp());
                        }
                        affine(w, &t)[0]
                    })
                    .collect();
                softmax(&s)
            }
        };
        let z: Vec<f64> = match self.params.pooling {
            Pooling::Max => (0..embed)
                .map(|j| h.iter().fold(f64::NEG_INFINITY, |m, hk| m.max(hk[j])))
                .collect(),
            _ => (0..embed)
                .map(|j| h.iter().zip(&weights).map(|(hk, a)| a * hk[j]).sum())
                .collect(),
        };
        maxima[3] = top(&z);
        let logits = affine(self.layers.last().expect("a head"), &z);
        let probs = if self.n_classes == 2 {
            let p = 1.0 / (1.0 + (-logits[0]).exp());
            vec![1.0 - p, p]
        } else {
            softmax(&logits)
        };
        Forward {
            probs,
            weights,
            logits,
            maxima,
        }
    }
}

/// One bag's forward pass ([`AttentionModel::forward`]).
struct Forward {
    probs: Vec<f64>,
    weights: Vec<f64>,
    logits: Vec<f64>,
    /// [`AttentionModel::activation_maxima`] of the bag.
    maxima: [f64; 4],
}

/// softmax(v), shifted by the maximum.
fn softmax(v: &[f64]) -> Vec<f64> {
    let top = v.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
    let e: Vec<f64> = v.iter().map(|x| (x - top).exp()).collect();
    let sum: f64 = e.iter().sum();
    e.into_iter().map(|x| x / sum).collect()
}

/// The memory and work of fitting on data of `shape`: the parameters with Adam's two
/// moments and their gradients, one bag's activations; three passes (forward, backward,
/// update) per instance per epoch.
pub fn footprint(shape: crate::params::Shape, params: &AttentionMil) -> crate::params::Estimate {
    let h = params.hidden as f64;
    let per_instance = shape.dim as f64 * h + h * h / 2.0 + h * h / 8.0;
    let weights = per_instance + h;
    crate::params::Estimate::values(
        4.0 * weights + shape.values(),
        6.0 * params.epochs as f64 * shape.instances as f64 * per_instance,
    )
}

impl BagModel for AttentionModel {
    fn n_classes(&self) -> usize {
        self.n_classes
    }

    fn input_dim(&self) -> usize {
        self.dim
    }

    fn scores<'a>(&self, bags: impl Into<Bags<'a>>) -> Result<BagScores> {
        let bags = bags.into();
        check_dim(bags.dataset(), self.dim)?;
        let mut scores = Vec::with_capacity(bags.len() * self.n_classes);
        for i in 0..bags.len() {
            scores.extend(self.bag_forward(bags.bag(i)).0);
        }
        Ok(BagScores::new(self.n_classes, scores))
    }

    /// Each instance's weight in the bag's pooled vector ([`InstanceScore::Attention`]);
    /// the witness is the instance of largest weight.
    fn explain<'a>(&self, bags: impl Into<Bags<'a>>) -> Result<Vec<Explanation>> {
        let bags = bags.into();
        check_dim(bags.dataset(), self.dim)?;
        Ok((0..bags.len())
            .map(|i| {
                Explanation::from_scores(InstanceScore::Attention, self.bag_forward(bags.bag(i)).1)
            })
            .collect())
    }
}

#[cfg(all(test, feature = "attention"))]
mod tests;

/// Training with and without the `attention` feature (the rest of the tests train).
#[cfg(test)]
mod feature_gate {
    use super::*;

    #[test]
    fn training_follows_the_feature() {
        let data = crate::data::Dataset::new(
            "two bags",
            1,
            vec![0.0, 1.0, 2.0],
            vec![0, 1, 3],
            vec!["a".into(), "b".into()],
            Some(vec![0, 1]),
            vec!["0".into(), "1".into()],
        )
        .unwrap();
        let net = AttentionMil::default().hidden(4).epochs(1);
        let fitted = net.fit(&data);
        assert_eq!(fitted.is_ok(), TRAINABLE, "{fitted:?}");
        match fitted {
            Ok(model) => model.validate().unwrap(),
            Err(err) => {
                assert!(matches!(err, Error::Unsupported(_)), "{err}");
                assert!(err.to_string().contains("--features attention"), "{err}");
            }
        }
        // The pipeline's parameter check refuses before any data is read.
        let checked = crate::classifier::ClassifierParams::from(net).check();
        assert_eq!(checked.is_ok(), TRAINABLE);
    }
}
