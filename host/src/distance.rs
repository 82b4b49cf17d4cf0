//! Bag-to-bag distances over instance Euclidean distances: the minimal, maximal and
//! average Hausdorff distances used by Citation-kNN (Wang & Zucker 2000), CLFDA and
//! BAMIC (Zhang & Zhou 2009). One implementation, used by all of them.

use rayon::prelude::*;

use crate::data::{Bag, Dataset};

/// Which Hausdorff-type distance between two bags A and B.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hausdorff {
    /// min over a∈A, b∈B of ‖a − b‖ (Citation-kNN's minimal Hausdorff distance).
    Min,
    /// max( max_a min_b ‖a − b‖, max_b min_a ‖a − b‖ ): the classic Hausdorff distance.
    Max,
    /// ( Σ_a min_b ‖a − b‖ + Σ_b min_a ‖a − b‖ ) / (|A| + |B|) (BAMIC's average).
    Avg,
}

/// Squared Euclidean distance of two equal-length vectors.
#[inline]
pub fn squared_euclidean(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

/// The distance of two bags of the same dimension.
pub fn bag_distance(a: Bag<'_>, b: Bag<'_>, kind: Hausdorff) -> f64 {
    match kind {
        Hausdorff::Min => a
            .instances()
            .flat_map(|x| b.instances().map(move |y| squared_euclidean(x, y)))
            .fold(f64::INFINITY, f64::min)
            .sqrt(),
        Hausdorff::Max => {
            let ab = directed(a, b).fold(0.0, f64::max);
            let ba = directed(b, a).fold(0.0, f64::max);
            ab.max(ba)
        }
        Hausdorff::Avg => {
            let total: f64 = directed(a, b).sum::<f64>() + directed(b, a).sum::<f64>();
            total / (a.len() + b.len()) as f64
        }
    }
}

/// For each instance of `from`, its distance to the nearest instance of `to`.
fn directed<'a>(from: Bag<'a>, to: Bag<'a>) -> impl Iterator<Item = f64> + 'a {
    from.instances().map(move |x| {
        to.instances()
            .map(|y| squared_euclidean(x, y))
            .fold(f64::INFINITY, f64::min)
            .sqrt()
    })
}

/// All pairwise bag distances of a data set as a row-major `n_bags × n_bags` symmetric
/// matrix with a zero diagonal, computed in parallel. The result does not depend on the
/// number of threads (each entry is computed independently).
pub fn pairwise(data: &Dataset, kind: Hausdorff) -> Vec<f64> {
    let n = data.n_bags();
    let mut out = vec![0.0; n * n];
    out.par_chunks_mut(n).enumerate().for_each(|(i, row)| {
        for (j, cell) in row.iter_mut().enumerate() {
            if i != j {
                // Compute each unordered pair in a fixed orientation so that the matrix
                // is exactly symmetric.
                let (p, q) = if i < j { (i, j) } else { (j, i) };
                *cell = bag_distance(data.bag(p), data.bag(q), kind);
            }
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_bags() -> Dataset {
        // Bag a: (0,0), (3,0); bag b: (0,1), (10,0).
        Dataset::new(
            "t",
            2,
            vec![0.0, 0.0, 3.0, 0.0, 0.0, 1.0, 10.0, 0.0],
            vec![0, 2, 4],
            vec!["a".into(), "b".into()],
            None,
            vec![],
        )
        .unwrap()
    }

    #[test]
    fn hand_computed_distances() {
        let d = two_bags();
        let (a, b) = (d.bag(0), d.bag(1));
        assert_eq!(bag_distance(a, b, Hausdorff::Min), 1.0);
        // a→b: (0,0)→1, (3,0)→√10; b→a: (0,1)→1, (10,0)→7.
        assert_eq!(bag_distance(a, b, Hausdorff::Max), 7.0);
        let avg = (1.0 + 10f64.sqrt() + 1.0 + 7.0) / 4.0;
        assert!((bag_distance(a, b, Hausdorff::Avg) - avg).abs() < 1e-12);
    }

    #[test]
    fn pairwise_is_symmetric_with_zero_diagonal() {
        let d = two_bags();
        for kind in [Hausdorff::Min, Hausdorff::Max, Hausdorff::Avg] {
            let m = pairwise(&d, kind);
            assert_eq!(m[0], 0.0);
            assert_eq!(m[3], 0.0);
            assert_eq!(m[1], m[2]);
            assert_eq!(m[1], bag_distance(d.bag(0), d.bag(1), kind));
        }
    }
}
