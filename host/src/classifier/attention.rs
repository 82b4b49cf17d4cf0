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
//! Training (candle's reverse-mode autodiff on the CPU) minimises the class-weighted
//! cross-entropy plus (λ/2)‖θ‖² over every parameter, which is what PyTorch's Adam
//! `weight_decay` λ adds to the gradient, with Adam (β = 0.9, 0.999), one bag per step in
//! a seeded shuffled order, for at most `epochs` epochs; with a validation fraction, a
//! seeded stratified share of the training bags is held out and training stops once
//! their loss has not improved for `patience` epochs, keeping the best epoch's weights.
//! Features are z-scored on the training instances. The fitted weights are plain `f32`
//! vectors; scoring runs in plain loops (in `f64`), tested against candle's forward pass.

use candle_core::{DType, Device, Tensor, Var};
use candle_nn::optim::{AdamW, Optimizer, ParamsAdamW};
use rand::seq::SliceRandom;
use rand::RngExt;
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

use super::imbalance::ClassWeight;
use super::{check_dim, BagModel, BagScores, Classifier};
use crate::data::{Bag, Bags};
use crate::error::{Error, Result};
use crate::explain::{Explanation, InstanceScore};
use crate::progress::{Progress, Silent};

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
/// ```
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
    /// Ctrl-C ([`crate::cancel::checkpoint`]) once per epoch.
    pub fn fit_with_progress<'a>(
        &self,
        train: impl Into<Bags<'a>>,
        progress: &dyn Progress,
    ) -> Result<AttentionModel> {
        let train = train.into();
        self.check()?;
        let labels = train.labels(2)?;
        let data = train.dataset();
        let n_classes = data.n_classes();
        let weights = self.class_weight.resolve(&labels, n_classes)?;
        let (mean, inv_sd) = standardisation(&train);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(self.seed);
        let shapes = Shapes::new(data.dim(), self.hidden, n_classes);
        let net = Net::init(&shapes, self.pooling, &mut rng)?;
        let (fit_pos, val_pos) = validation_split(&labels, self.validation_fraction, &mut rng);
        let bag_tensor = |i: usize| -> Result<Tensor> {
            let bag = train.bag(i);
            let x: Vec<f32> = bag
                .instances()
                .flat_map(|x| {
                    x.iter()
                        .zip(mean.iter().zip(&inv_sd))
                        .map(|(v, (m, s))| ((v - m) * s) as f32)
                })
                .collect();
            Ok(Tensor::from_vec(x, (bag.len(), data.dim()), &Device::Cpu)?)
        };
        let bags: Vec<Tensor> = (0..train.len()).map(bag_tensor).collect::<Result<_>>()?;
        let mut adam = AdamW::new(
            net.vars(),
            ParamsAdamW {
                lr: self.learning_rate,
                beta1: 0.9,
                beta2: 0.999,
                eps: 1e-8,
                weight_decay: 0.0,
            },
        )?;
        let mut order = fit_pos.clone();
        let (mut best, mut best_loss, mut best_epoch) = (net.snapshot()?, f64::INFINITY, 0);
        let mut stop = Stop::MaxEpochs;
        progress.start("epochs", self.epochs as u64);
        for epoch in 1..=self.epochs {
            crate::cancel::checkpoint();
            order.shuffle(&mut rng);
            for &i in &order {
                let masks = net.dropout_masks(bags[i].dims2()?.0, self.dropout, &mut rng)?;
                let logits = net.forward(&bags[i], masks.as_ref())?.0;
                let loss = bag_loss(&logits, labels[i], n_classes)?;
                let loss =
                    ((loss * weights[labels[i]])? + (net.penalty()? * (self.weight_decay / 2.0))?)?;
                adam.backward_step(&loss)?;
            }
            progress.advance(1);
            if val_pos.is_empty() {
                continue;
            }
            let mut val_loss = 0.0;
            for &i in &val_pos {
                let logits = net.forward(&bags[i], None)?.0;
                val_loss += bag_loss(&logits, labels[i], n_classes)?.to_scalar::<f32>()? as f64;
            }
            if !val_loss.is_finite() {
                return Err(Error::Numerical {
                    method: "attention",
                    reason: format!("the validation loss is {val_loss} at epoch {epoch}: lower the learning_rate"),
                });
            }
            if val_loss < best_loss {
                (best, best_loss, best_epoch) = (net.snapshot()?, val_loss, epoch);
            } else if epoch - best_epoch >= self.patience {
                stop = Stop::EarlyStop { epoch };
                break;
            }
        }
        progress.finish();
        let layers = if val_pos.is_empty() {
            best_epoch = self.epochs;
            net.snapshot()?
        } else {
            best
        };
        let model = AttentionModel {
            params: *self,
            dim: data.dim(),
            n_classes,
            mean,
            inv_sd,
            layers,
            stop,
            best_epoch,
        };
        model.check_finite()?;
        Ok(model)
    }
}

/// Mean and 1/sd of each feature over the instances of `bags` (1/sd = 0 for a constant
/// feature, which then reads as 0).
fn standardisation(bags: &Bags<'_>) -> (Vec<f64>, Vec<f64>) {
    let dim = bags.dataset().dim();
    let (mut sum, mut n) = (vec![0.0; dim], 0usize);
    for i in 0..bags.len() {
        for x in bags.bag(i).instances() {
            sum.iter_mut().zip(x).for_each(|(s, v)| *s += v);
            n += 1;
        }
    }
    let mean: Vec<f64> = sum.iter().map(|s| s / n as f64).collect();
    let mut sq = vec![0.0; dim];
    for i in 0..bags.len() {
        for x in bags.bag(i).instances() {
            for j in 0..dim {
                sq[j] += (x[j] - mean[j]).powi(2);
            }
        }
    }
    let inv_sd = sq
        .iter()
        .zip(&mean)
        .map(|(s, m)| {
            let sd = (s / n as f64).sqrt();
            // Round-off of a constant feature's mean leaves sd ~ 1e-16 · |m|.
            if sd > 1e-12 * (1.0 + m.abs()) {
                1.0 / sd
            } else {
                0.0
            }
        })
        .collect();
    (mean, inv_sd)
}

/// Positions (in the training view) of the bags fitted and of those held out: of each
/// class, round(fraction · n_c) bags drawn at random, at most n_c − 1.
fn validation_split(
    labels: &[usize],
    fraction: f64,
    rng: &mut Xoshiro256PlusPlus,
) -> (Vec<usize>, Vec<usize>) {
    let n_classes = labels.iter().max().map_or(0, |m| m + 1);
    let (mut fit, mut val) = (Vec::new(), Vec::new());
    for c in 0..n_classes {
        let mut members: Vec<usize> = (0..labels.len()).filter(|&i| labels[i] == c).collect();
        members.shuffle(rng);
        let held = ((fraction * members.len() as f64).round() as usize)
            .min(members.len().saturating_sub(1));
        val.extend_from_slice(&members[..held]);
        fit.extend_from_slice(&members[held..]);
    }
    fit.sort_unstable();
    val.sort_unstable();
    (fit, val)
}

/// The cross-entropy of one bag's logits: softplus(ℓ) − yℓ for one logit (binary),
/// logsumexp(ℓ) − ℓ_y for one per class.
fn bag_loss(logits: &Tensor, label: usize, n_classes: usize) -> Result<Tensor> {
    let l = logits.flatten_all()?;
    if n_classes == 2 {
        // softplus(ℓ) = max(ℓ, 0) + log(1 + e^{−|ℓ|}), stable for any ℓ.
        let softplus = (l.relu()? + (l.abs()?.neg()?.exp()? + 1.0)?.log()?)?;
        let y = label as f64;
        Ok((softplus - (&l * y)?)?.sum_all()?)
    } else {
        let log_p = candle_nn::ops::log_softmax(&l, 0)?;
        Ok(log_p.narrow(0, label, 1)?.neg()?.sum_all()?)
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

/// The network being trained: candle variables, one (weight, bias) pair per layer.
struct Net {
    pooling: Pooling,
    params: Vec<(Var, Var)>,
    names: Vec<(&'static str, usize, usize)>,
}

impl Net {
    /// PyTorch's default initialisation of a linear layer: weights and biases uniform in
    /// ±1/√(fan-in), drawn from `rng`.
    fn init(shapes: &Shapes, pooling: Pooling, rng: &mut Xoshiro256PlusPlus) -> Result<Net> {
        let names = shapes.layers(pooling);
        let mut params = Vec::new();
        for &(_, rows, cols) in &names {
            let bound = 1.0 / (cols as f64).sqrt();
            let mut draw = |n: usize| -> Vec<f32> {
                (0..n)
                    .map(|_| rng.random_range(-bound..bound) as f32)
                    .collect()
            };
            let w = Tensor::from_vec(draw(rows * cols), (rows, cols), &Device::Cpu)?;
            let b = Tensor::from_vec(draw(rows), rows, &Device::Cpu)?;
            params.push((Var::from_tensor(&w)?, Var::from_tensor(&b)?));
        }
        Ok(Net {
            pooling,
            params,
            names,
        })
    }

    /// The network with saved weights (for tests of the plain-loop scoring).
    #[cfg(test)]
    fn from_layers(layers: &[Layer], pooling: Pooling) -> Result<Net> {
        let mut params = Vec::new();
        let mut names = Vec::new();
        for l in layers {
            let w = Tensor::from_vec(l.weight.clone(), (l.rows, l.cols), &Device::Cpu)?;
            let b = Tensor::from_vec(l.bias.clone(), l.rows, &Device::Cpu)?;
            params.push((Var::from_tensor(&w)?, Var::from_tensor(&b)?));
            names.push(("", l.rows, l.cols));
        }
        Ok(Net {
            pooling,
            params,
            names,
        })
    }

    fn vars(&self) -> Vec<Var> {
        self.params
            .iter()
            .flat_map(|(w, b)| [w.clone(), b.clone()])
            .collect()
    }

    /// Σθ² over every parameter.
    fn penalty(&self) -> Result<Tensor> {
        let mut total = Tensor::zeros((), DType::F32, &Device::Cpu)?;
        for (w, b) in &self.params {
            total =
                ((total + w.as_tensor().sqr()?.sum_all()?)? + b.as_tensor().sqr()?.sum_all()?)?;
        }
        Ok(total)
    }

    /// Inverted-dropout masks for the two encoder layers of a bag of `n` instances:
    /// each unit kept with probability 1 − p and then scaled by 1/(1 − p).
    fn dropout_masks(
        &self,
        n: usize,
        p: f64,
        rng: &mut Xoshiro256PlusPlus,
    ) -> Result<Option<[Tensor; 2]>> {
        if p == 0.0 {
            return Ok(None);
        }
        let keep = (1.0 / (1.0 - p)) as f32;
        let mut mask = |width: usize| -> Result<Tensor> {
            let m: Vec<f32> = (0..n * width)
                .map(|_| if rng.random::<f64>() < p { 0.0 } else { keep })
                .collect();
            Ok(Tensor::from_vec(m, (n, width), &Device::Cpu)?)
        };
        Ok(Some([mask(self.names[0].1)?, mask(self.names[1].1)?]))
    }

    /// The logits of one bag `x` (n × dim), with dropout masks while training, and its
    /// attention weights (n × 1) when the pooling has them.
    fn forward(&self, x: &Tensor, masks: Option<&[Tensor; 2]>) -> Result<(Tensor, Option<Tensor>)> {
        let affine = |i: usize, h: &Tensor| -> Result<Tensor> {
            let (w, b) = &self.params[i];
            Ok(h.matmul(&w.as_tensor().t()?)?
                .broadcast_add(b.as_tensor())?)
        };
        let mut h = affine(0, x)?.relu()?;
        if let Some(m) = masks {
            h = (h * &m[0])?;
        }
        h = affine(1, &h)?.relu()?;
        if let Some(m) = masks {
            h = (h * &m[1])?;
        }
        let (z, weights) = match self.pooling {
            Pooling::Mean => (h.mean_keepdim(0)?, None),
            Pooling::Max => (h.max_keepdim(0)?, None),
            Pooling::Attention | Pooling::Gated => {
                let mut t = affine(2, &h)?.tanh()?;
                let next = if self.pooling == Pooling::Gated {
                    t = (t * candle_nn::ops::sigmoid(&affine(3, &h)?)?)?;
                    4
                } else {
                    3
                };
                // a = softmax over the bag's instances of wᵀt_k + b (eq. 8, 9).
                let a = candle_nn::ops::softmax(&affine(next, &t)?, 0)?;
                (a.t()?.matmul(&h)?, Some(a))
            }
        };
        let logits = affine(self.params.len() - 1, &z)?;
        Ok((logits, weights))
    }

    /// The current weights as plain vectors.
    fn snapshot(&self) -> Result<Vec<Layer>> {
        self.names
            .iter()
            .zip(&self.params)
            .map(|(&(name, rows, cols), (w, b))| {
                Ok(Layer {
                    name: name.to_string(),
                    rows,
                    cols,
                    weight: w.as_tensor().flatten_all()?.to_vec1()?,
                    bias: b.as_tensor().to_vec1()?,
                })
            })
            .collect()
    }
}

impl From<candle_core::Error> for Error {
    fn from(e: candle_core::Error) -> Self {
        Error::Numerical {
            method: "attention",
            reason: e.to_string(),
        }
    }
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
        let h: Vec<Vec<f64>> = self
            .standardise(bag)
            .iter()
            .map(|x| relu(affine(&self.layers[1], &relu(affine(&self.layers[0], x)))))
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
        let logits = affine(self.layers.last().expect("a head"), &z);
        let probs = if self.n_classes == 2 {
            let p = 1.0 / (1.0 + (-logits[0]).exp());
            vec![1.0 - p, p]
        } else {
            softmax(&logits)
        };
        (probs, weights)
    }
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

#[cfg(test)]
mod tests;
