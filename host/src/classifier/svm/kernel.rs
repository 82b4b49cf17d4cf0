//! The SVM's kernel as fitted on the training bags (box-counting, NSK or MI kernel with its fitted scaling), and the MI kernel's Gram matrices.

use super::*;

/// A set kernel fitted on training bags, able to evaluate ln k between any bags.
pub(super) enum FittedKernel {
    Box { grid: GridData, spec: BoxGramSpec },
    Nsk { zscore: ZScore, gamma: f64 },
    MiRbf { gamma: f64 },
}

impl FittedKernel {
    pub(super) fn fit(kernel: &SetKernel, train: &Dataset, seed: u64) -> Result<FittedKernel> {
        Ok(match *kernel {
            SetKernel::Box {
                kernel,
                estimator,
                epsilon,
                delta,
                precision,
            } => FittedKernel::Box {
                grid: GridData::fit(train, precision)?,
                spec: BoxGramSpec {
                    kernel,
                    method: estimator,
                    accuracy: accuracy(epsilon, delta)?,
                    seed,
                },
            },
            SetKernel::Nsk { gamma } => {
                let zscore = ZScore::fit(train);
                let active = zscore.std.iter().filter(|&&s| s > 0.0).count().max(1);
                let gamma = gamma.unwrap_or(1.0 / active as f64);
                check_gamma(gamma)?;
                FittedKernel::Nsk { zscore, gamma }
            }
            SetKernel::MiRbf { gamma } => FittedKernel::MiRbf {
                gamma: gamma.resolve(train)?,
            },
        })
    }

    /// `kernel` (the setting this was fitted from) with what the fit resolved: the MI
    /// kernel's γ as a number.
    pub(super) fn setting(&self, kernel: SetKernel) -> SetKernel {
        match (self, kernel) {
            (FittedKernel::MiRbf { gamma }, SetKernel::MiRbf { .. }) => SetKernel::MiRbf {
                gamma: Gamma::Fixed(*gamma),
            },
            _ => kernel,
        }
    }

    /// ln k among the training bags (m × m), and for NSK the training bags'
    /// unnormalised ln k_set(X, X) (empty for box kernels).
    pub(super) fn train_gram(&self, train: &Dataset) -> Result<(Vec<f64>, Vec<f64>)> {
        match self {
            FittedKernel::Box { grid, spec } => Ok((box_gram(grid, *spec, &Silent)?.ln, vec![])),
            FittedKernel::Nsk { zscore, gamma } => {
                log_nsk_gram_and_self(&zscore.apply_active(train)?, *gamma)
            }
            FittedKernel::MiRbf { gamma } => Ok((mi_gram(train, *gamma), vec![])),
        }
    }

    /// ln k between every bag of `data` (rows) and the training bags `cols` (columns),
    /// `train_self` the training bags' ln k_set(X, X) for NSK if kept (else recomputed).
    /// Each box estimate's generator is seeded by the pair of the two bags' content
    /// hashes ([`bag_hash`]), and each NSK value depends on its two bags only
    /// ([`crate::kernel::nsk`]), so a bag's score does not depend on the bags scored with
    /// it or on the columns asked for, and the core, running the exported model, draws
    /// the same numbers.
    pub(super) fn cross(
        &self,
        data: &Dataset,
        train: &Dataset,
        cols: &[usize],
        train_self: &[f64],
    ) -> Result<Vec<f64>> {
        match self {
            FittedKernel::Box { grid, spec } => {
                let points = grid.map(data)?;
                let d = data.dim();
                let m = train.n_bags();
                let core_grid = grid.grid();
                let largest_test = (0..data.n_bags())
                    .map(|b| data.bag(b).len())
                    .max()
                    .unwrap_or(0);
                let largest_train = (0..m).map(|b| grid.bag_len(b)).max().unwrap_or(0);
                let train_hashes: Vec<u64> = (0..m).map(|t| bag_hash(grid.bag(t))).collect();
                let need = scratch_len(spec.kernel, spec.method, largest_test, largest_train, d)
                    .ok_or_else(|| Error::data(data.name(), "bags too large to address"))?;
                let rows: Vec<Vec<f64>> = (0..data.n_bags())
                    .into_par_iter()
                    .map_init(
                        || (Vec::new(), Vec::new()),
                        |(floats, ints), b| {
                            crate::cancel::checkpoint();
                            // Sized after the checkpoint, as in `kernel::boxes::box_entries`.
                            floats.resize(need.floats, 0.0f64);
                            ints.resize(need.ints, 0u32);
                            let r = data.bag_range(b);
                            let bag = &points[r.start * d..r.end * d];
                            let hash = bag_hash(bag);
                            cols.iter()
                                .map(|&t| {
                                    let mut rng = Xoshiro256PlusPlus::seed_from_u64(pair_seed(
                                        spec.seed,
                                        hash,
                                        train_hashes[t],
                                    ));
                                    let mut scratch = Scratch { floats, ints };
                                    estimate_polled(
                                        spec.kernel,
                                        spec.method,
                                        &core_grid,
                                        bag,
                                        grid.bag(t),
                                        spec.accuracy,
                                        &mut rng,
                                        &mut scratch,
                                        &mut crate::cancel::poll,
                                    )
                                    .map(|e| e.ln_value)
                                    .map_err(Error::from)
                                })
                                .collect::<Result<Vec<f64>>>()
                        },
                    )
                    .collect::<Result<_>>()?;
                Ok(rows.concat())
            }
            FittedKernel::Nsk { zscore, gamma } => {
                let rows = zscore.apply_active(data)?;
                let cols_set = zscore.apply_active(&train.copy_bags(cols))?;
                let self_cols: Vec<f64> = if train_self.len() == train.n_bags() {
                    cols.iter().map(|&t| train_self[t]).collect()
                } else {
                    log_self_kernels(&cols_set, *gamma)
                };
                let self_rows = log_self_kernels(&rows, *gamma);
                Ok(log_nsk_cross(
                    &rows, &cols_set, &self_rows, &self_cols, *gamma,
                ))
            }
            FittedKernel::MiRbf { gamma } => Ok(cross_mi(data, &train.copy_bags(cols), *gamma)),
        }
    }
}

/// ln of the MI kernel Σ_{x∈X, y∈Y} exp(−γ‖x − y‖²) between every bag of `a` (rows) and
/// of `b` (columns): the unnormalised set kernel of [`crate::kernel::nsk`], by its block
/// products and log-sum-exp (its error bound; each value independent of the others and
/// of the thread count).
pub fn cross_mi(a: &Dataset, b: &Dataset, gamma: f64) -> Vec<f64> {
    let runs: Vec<Run> = (0..a.n_bags())
        .map(|row| Run {
            row,
            cols: 0..b.n_bags(),
        })
        .collect();
    log_set_kernels(a, b, &runs, gamma)
}

/// The MI kernel's Gram matrix of `data` (n × n, row-major): its upper triangle by
/// [`log_set_kernels`] (half the work of [`cross_mi`] of `data` with itself), mirrored.
pub(super) fn mi_gram(data: &Dataset, gamma: f64) -> Vec<f64> {
    let n = data.n_bags();
    let upper = log_set_kernels(data, data, &upper_runs(n), gamma);
    let mut out = vec![0.0; n * n];
    let mut at = 0;
    for i in 0..n {
        for j in i..n {
            out[i * n + j] = upper[at];
            out[j * n + i] = upper[at];
            at += 1;
        }
    }
    out
}
