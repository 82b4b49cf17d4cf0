//! The paper's own estimators, kept as the reference the fast ones are measured against:
//! the self-adjusting coverage algorithm of Karp, Luby & Madras for #BOXAnd (Table 3,
//! Theorem 7) and #BOX (Table 4), and the per-pair Hoeffding scheme for #BOXMin
//! (Table 5, Theorem 12).

use rand_core::Rng;

use super::estimator::{Accuracy, Estimate, Scratch};
use super::sampling::uniform_between;
use super::sets::{cumulative_sizes, ln_set_size, pick_set, uniform_set, BagPoints, Count};
use crate::error::Error;

/// Boxes of Table 5 between two polls: each is 2d draws and a test of every point of
/// both bags, so a poll every few dozen costs nothing measurable.
const POLL_BOXES: u64 = 64;

/// Runs the paper's estimator of k∧ (Table 3), k∨ (Table 4) or k_min (Table 5).
pub(crate) fn estimate<R: Rng + ?Sized>(
    count: Count,
    bags: &BagPoints<'_>,
    accuracy: Accuracy,
    rng: &mut R,
    scratch: &mut Scratch<'_>,
    poll: &mut dyn FnMut() -> bool,
) -> Result<Estimate, Error> {
    match count {
        Count::And | Count::Or => {
            self_adjusting_coverage(count, bags, accuracy, rng, scratch, poll)
        }
        Count::Min => hoeffding_min(bags, accuracy, rng, scratch, poll),
    }
}

/// Draws a box uniformly from the boxes containing `x` and `y`: both corners in full,
/// 2d draws (lower corner into `lower`, upper into `upper`).
fn draw_box<R: Rng + ?Sized>(
    rng: &mut R,
    s: &[u32],
    x: &[u32],
    y: &[u32],
    lower: &mut [u32],
    upper: &mut [u32],
) {
    for ((((&s, &x), &y), l), u) in s.iter().zip(x).zip(y).zip(lower).zip(upper) {
        *l = uniform_between(rng, 0, x.min(y));
        *u = uniform_between(rng, x.max(y), s);
    }
}

fn inside(lower: &[u32], upper: &[u32], r: &[u32]) -> bool {
    lower
        .iter()
        .zip(upper)
        .zip(r)
        .all(|((&l, &u), &v)| l <= v && v <= u)
}

/// Tables 3 and 4 with S = ⌈8(1+ε) m ln(2/δ)/ε²⌉ trials for m sets (Theorems 6 and 7):
/// draw (i, c) uniformly from U, then draw sets uniformly until one contains c, counting
/// trials; the estimate is S·W/(m·N_S) for N_S completed samples. (N_S = 0, possible
/// only when the very first sample exhausts all S trials, is taken as 1.)
fn self_adjusting_coverage<R: Rng + ?Sized>(
    count: Count,
    bags: &BagPoints<'_>,
    accuracy: Accuracy,
    rng: &mut R,
    scratch: &mut Scratch<'_>,
    poll: &mut dyn FnMut() -> bool,
) -> Result<Estimate, Error> {
    let m = count.n_sets(bags).min(scratch.floats.len());
    let cum = scratch.floats.get_mut(..m).unwrap_or_default();
    let ln_w = cumulative_sizes(count, bags, cum, &mut [], &mut *poll)?;
    let cum = &*cum;
    let eps = accuracy.epsilon();
    let budget = libm::ceil(
        8.0 * (1.0 + eps) * m as f64 * super::fast::ln_ratio(2.0, accuracy.delta()) / (eps * eps),
    );
    let budget = budget as u64;
    let d = bags.dim();
    let (lower, rest) = scratch.ints.split_at_mut(d.min(scratch.ints.len()));
    let upper = rest.get_mut(..d).unwrap_or_default();
    let s = bags.grid.upper();
    let mut trials = 0u64;
    let mut completed = 0u64;
    'samples: loop {
        let set = pick_set(rng, cum);
        let (x, y) = count.corners(bags, set);
        draw_box(rng, s, x, y, lower, upper);
        loop {
            trials += 1;
            if trials > budget {
                break 'samples;
            }
            if trials.is_multiple_of(super::POLL_TRIALS) && poll() {
                return Err(Error::Stopped);
            }
            let (x2, y2) = count.corners(bags, uniform_set(rng, count, bags));
            if inside(lower, upper, x2) && inside(lower, upper, y2) {
                break;
            }
        }
        completed += 1;
    }
    let ln_value =
        libm::log(budget as f64) + ln_w - libm::log(m as f64) - libm::log(completed.max(1) as f64);
    Ok(Estimate {
        ln_value,
        samples: budget,
    })
}

/// Table 5: for each pair (p, q), S = ⌈(n−1)² ln(2m/δ)/(2ε²)⌉ uniform boxes of B(p ∧ q)
/// (n the larger bag size, m = |P||Q| pairs; Theorem 12 with the union bound over the m
/// pairs), the term |B(p ∧ q)|·mean(1/max(|P_b|, |Q_b|)), summed in log space. (The
/// table's loop runs i = 0..S, S + 1 boxes, but divides by S; we draw S.)
fn hoeffding_min<R: Rng + ?Sized>(
    bags: &BagPoints<'_>,
    accuracy: Accuracy,
    rng: &mut R,
    scratch: &mut Scratch<'_>,
    poll: &mut dyn FnMut() -> bool,
) -> Result<Estimate, Error> {
    let (n_p, n_q) = (bags.n_p(), bags.n_q());
    let n = n_p.max(n_q) as f64;
    let m = (n_p * n_q) as f64;
    let eps = accuracy.epsilon();
    let per_pair = libm::ceil(
        (n - 1.0) * (n - 1.0) * super::fast::ln_ratio(2.0 * m, accuracy.delta())
            / (2.0 * eps * eps),
    )
    .max(1.0) as u64;
    let d = bags.dim();
    let (lower, rest) = scratch.ints.split_at_mut(d.min(scratch.ints.len()));
    let upper = rest.get_mut(..d).unwrap_or_default();
    let s = bags.grid.upper();
    // Streaming log-sum-exp of the m terms.
    let (mut max, mut acc) = (f64::NEG_INFINITY, 0.0);
    for i in 0..n_p {
        let x = bags.point_p(i);
        for j in 0..n_q {
            let y = bags.point_q(j);
            let mut sum = 0.0;
            for k in 0..per_pair {
                // A pair draws (n−1)² ln(2m/δ)/(2ε²) boxes: at a small ε, without end.
                if k.is_multiple_of(POLL_BOXES) && poll() {
                    return Err(Error::Stopped);
                }
                draw_box(rng, s, x, y, lower, upper);
                let a = bags
                    .p
                    .chunks_exact(d.max(1))
                    .filter(|r| inside(lower, upper, r))
                    .count();
                let b = bags
                    .q
                    .chunks_exact(d.max(1))
                    .filter(|r| inside(lower, upper, r))
                    .count();
                sum += 1.0 / a.max(b) as f64;
            }
            let term = ln_set_size(s, x, y) + libm::log(sum / per_pair as f64);
            if term > max {
                acc = acc * libm::exp(max - term) + 1.0;
                max = term;
            } else {
                acc += libm::exp(term - max);
            }
        }
    }
    Ok(Estimate {
        ln_value: max + libm::log(acc),
        samples: per_pair * (n_p * n_q) as u64,
    })
}
