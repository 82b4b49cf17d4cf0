//! Scatter matrices, the trace objective and its factors, shared by B-MIDA's and
//! M-MIDA's ascent.

use super::*;

pub(super) fn mean_of_rows(x: &DMatrix<f64>, rows: &[usize]) -> DVector<f64> {
    let mut m = DVector::zeros(x.ncols());
    for &r in rows {
        m += x.row(r).transpose();
    }
    m / rows.len() as f64
}

/// Σ_i (v_i − c)(v_i − c)ᵀ over the rows `rows` of x.
pub(super) fn scatter_about(
    x: &DMatrix<f64>,
    rows: &[usize],
    centre: &DVector<f64>,
) -> DMatrix<f64> {
    let mut centred = x.select_rows(rows);
    for r in 0..rows.len() {
        let mut row = centred.row_mut(r);
        row -= centre.transpose();
    }
    centred.transpose() * centred
}

/// tr(Gᵀ M G).
pub(super) fn trace_objective(m: &DMatrix<f64>, g: &DMatrix<f64>) -> f64 {
    (g.transpose() * m * g).trace()
}

/// B-MIDA's M = S_b − αS_w (eqs. 1, 3, 6, 7) as FᵀCF, F = [A; B] the positive
/// prototypes (rows `protos` of x, l⁺ of them) over the negative ones (l⁻ bag means).
/// With H_k = I − 11ᵀ/k the centring matrix, g = [1/l⁺; −1/l⁻] (so Fᵀg = ā − b̄) and
/// P = I − 1ωᵀ (rows b_q − μ⁻ for the negative instance mean μ⁻ = Bᵀω):
/// C = blockdiag((l⁻ − α)H_{l⁺}, l⁺H_{l⁻} − αPᵀP) + l⁺l⁻ ggᵀ, the dense path's
/// l⁻S_A + l⁺S_B + l⁺l⁻(ā − b̄)(ā − b̄)ᵀ − α(S_A + S_w⁻) term by term.
pub(super) fn bmida_factors(
    x: &DMatrix<f64>,
    protos: &[usize],
    neg_protos: &DMatrix<f64>,
    neg_weights: &[f64],
    alpha: f64,
) -> (DMatrix<f64>, DMatrix<f64>) {
    let (lp, ln) = (protos.len(), neg_protos.nrows());
    let (p, q) = (lp as f64, ln as f64);
    let f = x.select_rows(protos).insert_rows(lp, ln, 0.0);
    let mut f = f;
    f.rows_mut(lp, ln).copy_from(neg_protos);
    let centring =
        |k: usize| DMatrix::<f64>::identity(k, k) - DMatrix::from_element(k, k, 1.0 / k as f64);
    let mut c = DMatrix::zeros(lp + ln, lp + ln);
    c.view_mut((0, 0), (lp, lp))
        .copy_from(&(centring(lp) * (q - alpha)));
    let omega = nalgebra::DVector::from_column_slice(neg_weights);
    let pm =
        DMatrix::<f64>::identity(ln, ln) - DMatrix::from_element(ln, 1, 1.0) * omega.transpose();
    let neg = centring(ln) * p - pm.transpose() * &pm * alpha;
    c.view_mut((lp, lp), (ln, ln)).copy_from(&neg);
    let g = nalgebra::DVector::from_fn(lp + ln, |i, _| if i < lp { 1.0 / p } else { -1.0 / q });
    c += &g * g.transpose() * (p * q);
    (f, c)
}

/// M-MIDA's M (eqs. 12, 14) as FᵀCF with F the prototypes in `slot` order: with
/// H_c the centring matrix of class c's rows and g_ce = 1_c/l_c − 1_e/l_e (so
/// Fᵀg_ce = m_c − m_e), C = Σ_c (C' − 1 − α) H_c + Σ_c Σ_{e≠c} l_c g_ce g_ceᵀ.
pub(super) fn mmida_factors(slot: &[usize], classes: usize, alpha: f64) -> DMatrix<f64> {
    let m = slot.len();
    let sizes: Vec<f64> = (0..classes)
        .map(|c| slot.iter().filter(|&&s| s == c).count() as f64)
        .collect();
    let other = (classes - 1) as f64;
    let mut c = DMatrix::zeros(m, m);
    for i in 0..m {
        for j in 0..m {
            if slot[i] == slot[j] {
                let h = if i == j { 1.0 } else { 0.0 } - 1.0 / sizes[slot[i]];
                c[(i, j)] += (other - alpha) * h;
            }
        }
    }
    for a in 0..classes {
        for e in (0..classes).filter(|&e| e != a) {
            let g = nalgebra::DVector::from_fn(m, |i, _| {
                if slot[i] == a {
                    1.0 / sizes[a]
                } else if slot[i] == e {
                    -1.0 / sizes[e]
                } else {
                    0.0
                }
            });
            c += &g * g.transpose() * sizes[a];
        }
    }
    c
}

/// Has the block-coordinate ascent converged (relative change below ξ, §3.2)?
pub(super) fn converged(previous: f64, current: f64, tolerance: f64) -> bool {
    let change = (current - previous).abs();
    change <= tolerance * previous.abs() || change == 0.0
}

/// Global instance index of training row r.
pub(super) fn global_index(
    data: &Dataset,
    train: &[usize],
    t: &TrainingInstances,
    r: usize,
) -> usize {
    let k = t.bag_of[r];
    data.bag_range(train[k]).start + (r - t.starts[k])
}
