//! The bag labels that meet the cluster-size bounds of the `sizes` balance mode (Xu et
//! al. 2005's class balance), found exactly.

use super::*;

/// Labels u minimising Σ_i cost[i·k + u_i] subject to every cluster labelling between
/// `min_count` and `max_count` bags (the discrete class balance of Xu et al. 2005,
/// two-sided; `min_count · k ≤ n ≤ max_count · k`, else the bounds are clipped to it).
/// Exact: a transportation problem with bounded column sums, solved as a min-cost flow
/// with convex count penalties. Start from each bag's cheapest label (optimal without
/// bounds: no move lowers the cost); then, while some chain of single-bag moves
/// q₀ → q₁ → … → r lowers the cost plus M·(total bound violation) (M larger than any cost
/// difference, so violations go first), apply the cheapest such chain. Chains are
/// shortest paths by Bellman–Ford over the k clusters (edge q → r: the cheapest cost
/// change of moving one of q's bags to r), each started at q₀ with the penalty change of
/// q₀ losing a bag and ended at r with that of r gaining one. Each step is a shortest
/// augmenting path of the flow, which keeps it free of negative cycles, so the labels are
/// optimal when no chain improves.
pub fn balanced_labels(
    cost: &[f64],
    n: usize,
    k: usize,
    min_count: usize,
    max_count: usize,
) -> Vec<usize> {
    let mut labels: Vec<usize> = (0..n)
        .map(|i| {
            argmax(
                &cost[i * k..(i + 1) * k]
                    .iter()
                    .map(|c| -c)
                    .collect::<Vec<_>>(),
            )
            .0
        })
        .collect();
    let lo = min_count.min(n / k);
    let hi = max_count.max(n.div_ceil(k));
    if lo == 0 && hi >= n {
        return labels;
    }
    let mut counts = vec![0usize; k];
    labels.iter().for_each(|&u| counts[u] += 1);
    // M exceeds any change of Σ cost, so one unit of violation outweighs every cost.
    let spread: f64 = cost
        .chunks_exact(k)
        .map(|c| {
            let max = c.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let min = c.iter().copied().fold(f64::INFINITY, f64::min);
            max - min
        })
        .sum();
    let big = 4.0 * (1.0 + spread);
    let violation = |c: usize| (lo.saturating_sub(c) + c.saturating_sub(hi)) as f64;
    // Penalty change of a cluster with c bags losing one / gaining one.
    let lose = |c: usize| {
        if c == 0 {
            f64::INFINITY
        } else {
            big * (violation(c - 1) - violation(c))
        }
    };
    let gain = |c: usize| big * (violation(c + 1) - violation(c));
    // Each step lowers Σ cost + M·violation; the cap is a guard against round-off cycles.
    for _ in 0..4 * n * k + 16 {
        // edge[q][r] = (cost change, bag) of the cheapest move of a bag of q to r.
        let mut edge = vec![(f64::INFINITY, usize::MAX); k * k];
        for (i, &q) in labels.iter().enumerate() {
            for r in (0..k).filter(|&r| r != q) {
                let delta = cost[i * k + r] - cost[i * k + q];
                if delta < edge[q * k + r].0 {
                    edge[q * k + r] = (delta, i);
                }
            }
        }
        let mut dist: Vec<f64> = counts.iter().map(|&c| lose(c)).collect();
        let mut pred = vec![usize::MAX; k];
        for _ in 0..k {
            let mut changed = false;
            for q in 0..k {
                if !dist[q].is_finite() {
                    continue;
                }
                for r in (0..k).filter(|&r| r != q && edge[q * k + r].1 != usize::MAX) {
                    let d = dist[q] + edge[q * k + r].0;
                    if d < dist[r] - 1e-12 * (1.0 + d.abs()) {
                        dist[r] = d;
                        pred[r] = q;
                        changed = true;
                    }
                }
            }
            if !changed {
                break;
            }
        }
        // The best end of a chain (a chain has at least one move: pred set).
        let end = (0..k)
            .filter(|&r| pred[r] != usize::MAX)
            .map(|r| (r, dist[r] + gain(counts[r])))
            .min_by(|a, b| a.1.total_cmp(&b.1));
        let Some((end, total)) = end else { break };
        if total >= -1e-12 * (1.0 + big) {
            break;
        }
        // Walk back to the chain's start, one move per edge.
        let mut r = end;
        let mut moves = Vec::new();
        let mut seen = vec![false; k];
        while pred[r] != usize::MAX && !seen[r] {
            seen[r] = true;
            let q = pred[r];
            moves.push((edge[q * k + r].1, q, r));
            r = q;
        }
        if seen[r] {
            // A cycle in the predecessors (round-off); stop rather than loop.
            break;
        }
        for (i, q, r) in moves {
            labels[i] = r;
            counts[q] -= 1;
            counts[r] += 1;
        }
    }
    labels
}
