//! Training of the attention network: candle's reverse-mode autodiff on the CPU (built
//! with the crate's `attention` feature).

use candle_core::{DType, Device, Tensor, Var};
use candle_nn::optim::{AdamW, Optimizer, ParamsAdamW};
use rand::seq::SliceRandom;
use rand::RngExt;
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use super::{AttentionMil, AttentionModel, Layer, Pooling, Shapes, Stop};
use crate::data::standardize::is_round_off;
use crate::data::Bags;
use crate::error::{Error, Result};
use crate::progress::Progress;

/// Fits `params` (already checked) on the bags `train`, reporting each epoch to
/// `progress` and checking for Ctrl-C ([`crate::cancel::checkpoint`]) once per epoch.
pub(super) fn fit(
    params: &AttentionMil,
    train: &Bags<'_>,
    progress: &dyn Progress,
) -> Result<AttentionModel> {
    keep_heap_top();
    let labels = train.labels(2)?;
    let data = train.dataset();
    let n_classes = data.n_classes();
    let weights = params.class_weight.resolve(&labels, n_classes)?;
    let (mean, inv_sd) = standardisation(train);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(params.seed);
    let shapes = Shapes::new(data.dim(), params.hidden, n_classes);
    let net = Net::init(&shapes, params.pooling, &mut rng)?;
    let (fit_pos, val_pos) = validation_split(&labels, params.validation_fraction, &mut rng);
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
            lr: params.learning_rate,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay: 0.0,
        },
    )?;
    let mut order = fit_pos.clone();
    let (mut best, mut best_loss, mut best_epoch) = (net.snapshot()?, f64::INFINITY, 0);
    let mut stop = Stop::MaxEpochs;
    progress.start("epochs", params.epochs as u64);
    for epoch in 1..=params.epochs {
        crate::cancel::checkpoint();
        order.shuffle(&mut rng);
        for &i in &order {
            let masks = net.dropout_masks(bags[i].dims2()?.0, params.dropout, &mut rng)?;
            let logits = net.forward(&bags[i], masks.as_ref())?.0;
            let loss = bag_loss(&logits, labels[i], n_classes)?;
            let loss =
                ((loss * weights[labels[i]])? + (net.penalty()? * (params.weight_decay / 2.0))?)?;
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
                reason: format!(
                    "the validation loss is {val_loss} at epoch {epoch}: lower the learning_rate"
                ),
            });
        }
        if val_loss < best_loss {
            (best, best_loss, best_epoch) = (net.snapshot()?, val_loss, epoch);
        } else if epoch - best_epoch >= params.patience {
            stop = Stop::EarlyStop { epoch };
            break;
        }
    }
    progress.finish();
    let layers = if val_pos.is_empty() {
        best_epoch = params.epochs;
        net.snapshot()?
    } else {
        best
    };
    let model = AttentionModel {
        params: *params,
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

/// Every candle operation allocates its output, and glibc's malloc gives the top of its
/// heap back to the system whenever a freed tensor leaves it free, then faults those pages
/// in again (zero-filled) on the next allocation: on musk1 (one thread, 30 epochs) that
/// was 5.6 s of system time against 2.7 s of user time. A top pad of 16 MiB keeps that
/// much above the heap's top instead (system time 0.0 s; the same weights, the same peak
/// resident memory). Set once per process, for glibc only.
fn keep_heap_top() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        // SAFETY: mallopt only changes a tuning parameter of glibc's allocator, which
        // takes its own lock; no memory is handed over.
        #[allow(unsafe_code)]
        ONCE.call_once(|| unsafe {
            libc::mallopt(libc::M_TOP_PAD, 16 << 20);
        });
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
            if is_round_off(sd, *m) {
                0.0
            } else {
                1.0 / sd
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

/// The network being trained: candle variables, one (weight, bias) pair per layer.
pub(super) struct Net {
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
    pub(super) fn from_layers(layers: &[Layer], pooling: Pooling) -> Result<Net> {
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
    pub(super) fn forward(
        &self,
        x: &Tensor,
        masks: Option<&[Tensor; 2]>,
    ) -> Result<(Tensor, Option<Tensor>)> {
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
