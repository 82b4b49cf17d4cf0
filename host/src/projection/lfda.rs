//! Local Fisher discriminant analysis (Sugiyama 2007) and its multiple-instance
//! version, citation LFDA (Kim & Choi 2010, Algorithm 1).
//!
//! LFDA weights the Fisher scatters by a neighbourhood affinity A (eqs. 2–5), so a
//! multimodal class is not forced into one cluster. CLFDA first labels every instance
//! with its bag's label, then relabels as negative the positive instances whose
//! R-nearest references and C-nearest citers are mostly negative (eq. 8), and runs LFDA
//! on the max(R, C)-NN graph of all instances (Algorithm 1, line 20).
//!
//! Memory is O(n·k + D²) in the number n of instances: the dense 1/n between-class
//! weights of eq. 5 are summed in closed form, never stored. With more features than
//! instances (D > n) the span path needs O(nD + n²) instead (`projection/span.rs`).
//!
//! ```
//! use mil_toolkit::projection::lfda::Clfda;
//! use mil_toolkit::projection::Projector;
//!
//! let data = mil_toolkit::data::load("musk1")?;
//! // The paper's Musk setting: R = 2 references, C = 4 citers, threshold 1.
//! let projection = Clfda::default().dim(5).fit(&data)?;
//! assert_eq!((projection.input_dim(), projection.output_dim), (166, 5));
//! assert_eq!(projection.transform(&data)?.dim(), 5);
//! # Ok::<(), mil_toolkit::Error>(())
//! ```

use nalgebra::DMatrix;
use rayon::prelude::*;

use super::span;

mod wide;
use super::{
    generalized_top_eigenvectors, weight_by_eigenvalues, InputScaling, LinearProjection,
    ProjectionKind, Projector, TrainingInstances,
};
use crate::data::Bags;

use crate::distance::squared_euclidean;
use crate::error::{Error, Result};

/// LFDA with a symmetric within-class k-nearest-neighbour affinity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lfda {
    /// Output dimension d.
    pub dim: usize,
    /// Neighbours k of the affinity graph (7 in both papers' experiments).
    pub neighbours: usize,
}

impl Lfda {
    /// LFDA with k = 7, the value of the CLFDA paper's experiments (§4.1).
    pub fn new(dim: usize) -> Self {
        Lfda { dim, neighbours: 7 }
    }
}

/// CLFDA: citer/reference relabelling of false positives, then LFDA.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Clfda {
    /// Output dimension d.
    pub dim: usize,
    /// References R (nearest neighbours of an instance).
    pub references: usize,
    /// Citers C (instances having this one among their C nearest neighbours).
    pub citers: usize,
    /// Threshold t on n_i / p_i (eq. 8).
    pub threshold: f64,
}

impl Clfda {
    /// R = 2, C = 4 (the paper's Musk setting, §4.2) and t = 1 (§4.1: "very natural").
    pub fn new(dim: usize) -> Self {
        Clfda {
            dim,
            references: 2,
            citers: 4,
            threshold: 1.0,
        }
    }
}

impl Default for Lfda {
    fn default() -> Self {
        Lfda::new(super::DEFAULT_DIM)
    }
}

impl Default for Clfda {
    fn default() -> Self {
        Clfda::new(super::DEFAULT_DIM)
    }
}

crate::params::setters!(Lfda {
    dim: usize,
    neighbours: usize
});
crate::params::setters!(Clfda {
    dim: usize,
    references: usize,
    citers: usize,
    threshold: f64,
});

impl Projector for Lfda {
    fn fit<'a>(&self, train: impl Into<Bags<'a>>) -> Result<LinearProjection> {
        let train = train.into();
        super::check_fit(self.dim, &train)?;
        let (data, train) = (train.dataset(), &*train.indices());
        if self.neighbours == 0 {
            return Err(Error::parameter(
                "k",
                0,
                "LFDA needs at least one neighbour",
            ));
        }
        let bag_labels = data.training_labels(train, 2)?;
        let t = TrainingInstances::new(data, train, InputScaling::ZScore)?;
        let labels: Vec<usize> = t.bag_of.iter().map(|&k| bag_labels[k]).collect();
        let gram = wide_gram(&t);
        let graph = neighbour_graph(&t, gram.as_ref(), self.neighbours, |i, j| {
            labels[i] == labels[j]
        });
        let classes = data.n_classes();
        solve(
            &t,
            gram,
            &labels,
            classes,
            &graph,
            self.dim,
            ProjectionKind::Lfda,
            vec![],
        )
    }
}

impl Projector for Clfda {
    fn fit<'a>(&self, train: impl Into<Bags<'a>>) -> Result<LinearProjection> {
        let train = train.into();
        super::check_fit(self.dim, &train)?;
        let (data, train) = (train.dataset(), &*train.indices());
        if self.references == 0 || self.citers == 0 {
            return Err(Error::parameter(
                "R, C",
                format!("{}, {}", self.references, self.citers),
                "CLFDA needs at least one reference and one citer",
            ));
        }
        if !(self.threshold.is_finite() && self.threshold > 0.0) {
            return Err(Error::parameter(
                "t",
                self.threshold,
                "must be finite and > 0",
            ));
        }
        let bag_labels = data.training_labels(train, 2)?;
        let t = TrainingInstances::new(data, train, InputScaling::ZScore)?;
        let mut labels: Vec<usize> = t.bag_of.iter().map(|&k| bag_labels[k]).collect();
        let gram = wide_gram(&t);
        let k = self.references.max(self.citers);
        let graph = neighbour_graph(&t, gram.as_ref(), k, |_, _| true);
        let flags = false_positives(
            &graph,
            &labels,
            self.references,
            self.citers,
            self.threshold,
        );
        let classes = data.n_classes();
        // Binary (the paper's setting): a false positive becomes negative (class 0).
        // Multi-class (as MIDA §5.1 uses CLFDA): every bag is positive for its own
        // class, so a false positive goes to an extra background class C.
        let target = if classes == 2 { 0 } else { classes };
        let relabelled = flags.iter().filter(|&&f| f).count();
        for (l, &f) in labels.iter_mut().zip(&flags) {
            if f {
                *l = target;
            }
        }
        let total = if classes == 2 { 2 } else { classes + 1 };
        solve(
            &t,
            gram,
            &labels,
            total,
            &graph,
            self.dim,
            ProjectionKind::Clfda,
            vec![("relabelled".into(), relabelled as f64)],
        )
    }
}

/// The Gram matrix of the training instances when the span path applies (D > n).
fn wide_gram(t: &TrainingInstances) -> Option<DMatrix<f64>> {
    t.is_wide().then(|| span::gram(t))
}

/// The k-nearest-neighbour graph of the training instances: from their rows on the
/// dense path, from the Gram matrix (‖x_i − x_j‖² = K_ii + K_jj − 2K_ij) on the span
/// path, which costs O(n²) once K is known instead of O(n²D).
fn neighbour_graph(
    t: &TrainingInstances,
    gram: Option<&DMatrix<f64>>,
    k: usize,
    allowed: impl Fn(usize, usize) -> bool + Sync,
) -> Vec<Vec<usize>> {
    match gram {
        Some(g) => knn_graph_by(
            t.len(),
            k,
            |i, j| g[(i, i)] + g[(j, j)] - 2.0 * g[(i, j)],
            allowed,
        ),
        None => {
            let rows = row_major(&t.x);
            knn_graph(&rows, t.x.ncols(), k, allowed)
        }
    }
}

/// The k nearest neighbours of every row among the rows `j ≠ i` with `allowed(i, j)`,
/// nearest first (ties broken by index, so the graph is deterministic). Runs in
/// parallel over rows; memory O(n·k).
pub(crate) fn knn_graph(
    rows: &[f64],
    dim: usize,
    k: usize,
    allowed: impl Fn(usize, usize) -> bool + Sync,
) -> Vec<Vec<usize>> {
    let n = rows.len() / dim;
    knn_graph_by(
        n,
        k,
        |i, j| squared_euclidean(&rows[i * dim..(i + 1) * dim], &rows[j * dim..(j + 1) * dim]),
        allowed,
    )
}

/// [`knn_graph`] over `n` points with squared distances `dist(i, j)`.
pub(crate) fn knn_graph_by(
    n: usize,
    k: usize,
    dist: impl Fn(usize, usize) -> f64 + Sync,
    allowed: impl Fn(usize, usize) -> bool + Sync,
) -> Vec<Vec<usize>> {
    (0..n)
        .into_par_iter()
        .map(|i| {
            let mut best: Vec<(f64, usize)> = Vec::with_capacity(k + 1);
            for j in (0..n).filter(|&j| j != i && allowed(i, j)) {
                let d = dist(i, j);
                if best.len() == k && d >= best[k - 1].0 {
                    continue;
                }
                let at = best.partition_point(|&(bd, _)| bd <= d);
                best.insert(at, (d, j));
                best.truncate(k);
            }
            best.into_iter().map(|(_, j)| j).collect()
        })
        .collect()
}

/// CLFDA's detector (Algorithm 1, lines 4–19; eq. 8): instance i of a positive bag is
/// a false positive when n_i / p_i ≥ t, where n_i and p_i count the instances of other
/// and of its own class among its R nearest references and its C nearest citers (with
/// multiplicity). "Positive" is class 1 for two classes; with more classes, every
/// instance is positive for its bag's class. Counts use the bag labels of all
/// instances at once, so the result does not depend on the order of instances.
pub fn false_positives(
    graph: &[Vec<usize>],
    labels: &[usize],
    references: usize,
    citers: usize,
    threshold: f64,
) -> Vec<bool> {
    let n = labels.len();
    let binary = labels.iter().all(|&l| l < 2);
    let mut same = vec![0usize; n];
    let mut other = vec![0usize; n];
    let mut count = |i: usize, j: usize| {
        if labels[i] == labels[j] {
            same[i] += 1;
        } else {
            other[i] += 1;
        }
    };
    for (i, nn) in graph.iter().enumerate() {
        // References of i: its first R neighbours.
        nn.iter().take(references).for_each(|&j| count(i, j));
        // i is a citer of each of its first C neighbours.
        nn.iter().take(citers).for_each(|&j| count(j, i));
    }
    (0..n)
        .map(|i| {
            let positive = !binary || labels[i] == 1;
            // n_i / p_i ≥ t, written without dividing by p_i = 0.
            positive && other[i] as f64 >= threshold * same[i] as f64 && other[i] > 0
        })
        .collect()
}

/// LFDA's scatters (eqs. 2–5) from a neighbour graph, then the generalised eigen step.
///
/// On the span path the scatters are formed in span coordinates (r × r) and the
/// solution lifted back (`projection/span.rs`); directions beyond the rank get
/// eigenvalue 0 and so weight 0, as on the dense path.
#[allow(clippy::too_many_arguments)]
fn solve(
    t: &TrainingInstances,
    gram: Option<DMatrix<f64>>,
    labels: &[usize],
    classes: usize,
    graph: &[Vec<usize>],
    dim: usize,
    kind: ProjectionKind,
    mut diagnostics: Vec<(String, f64)>,
) -> Result<LinearProjection> {
    let method = if kind == ProjectionKind::Lfda {
        "LFDA"
    } else {
        "CLFDA"
    };
    let (w, values) = match gram {
        None => {
            let (sw, sb) = local_scatters(&t.x, labels, classes, graph);
            let (mut w, values) = generalized_top_eigenvectors(&sb, &sw, dim, method)?;
            weight_by_eigenvalues(&mut w, &values);
            (w, values)
        }
        Some(gram) => {
            let (mut w, mut values) = wide::solve(t, gram, labels, classes, graph, dim, method)?;
            weight_by_eigenvalues(&mut w, &values);
            values.resize(dim, 0.0);
            (pad_columns(w, dim), values)
        }
    };
    diagnostics.push(("local_fisher_ratio".into(), values[0]));
    Ok(t.projection(kind, &w, diagnostics))
}

/// Local within-class and between-class scatters (eqs. 2–5) of the symmetric affinity
/// A_ij = 1 when j is among i's neighbours or i among j's.
///
/// S_W = Σ_{edges i~j, same class c} (x_i − x_j)(x_i − x_j)ᵀ / n_c. For S_B, the
/// mixture weights Ā^W + Ā^B are A_ij/n within a class and 1/n across classes, so
/// S_B = S_t − (1/n) Σ_c n_c S_c + (1/n) Σ_{same-class edges} (x_i − x_j)(x_i − x_j)ᵀ − S_W
/// with S_t the total and S_c the class scatters: no n × n matrix is ever formed.
pub(crate) fn local_scatters(
    x: &DMatrix<f64>,
    labels: &[usize],
    classes: usize,
    graph: &[Vec<usize>],
) -> (DMatrix<f64>, DMatrix<f64>) {
    let (n, dim) = x.shape();
    let mut counts = vec![0usize; classes];
    labels.iter().for_each(|&c| counts[c] += 1);
    let mut edges: Vec<(usize, usize)> = graph
        .iter()
        .enumerate()
        .flat_map(|(i, nn)| nn.iter().map(move |&j| (i.min(j), i.max(j))))
        .filter(|&(i, j)| labels[i] == labels[j])
        .collect();
    edges.sort_unstable();
    edges.dedup();
    // Per-class edge scatters L_c, accumulated as EᵀE over blocks of difference rows.
    let mut edge_scatter = vec![DMatrix::<f64>::zeros(dim, dim); classes];
    for c in (0..classes).filter(|&c| counts[c] > 0) {
        let class_edges: Vec<&(usize, usize)> =
            edges.iter().filter(|&&(i, _)| labels[i] == c).collect();
        for block in class_edges.chunks(2048) {
            let mut e = DMatrix::zeros(block.len(), dim);
            for (r, &&(i, j)) in block.iter().enumerate() {
                let mut row = e.row_mut(r);
                row.copy_from(&(x.row(i) - x.row(j)));
            }
            edge_scatter[c] += e.transpose() * &e;
        }
    }
    let mut sw = DMatrix::zeros(dim, dim);
    let mut edges_over_n = DMatrix::zeros(dim, dim);
    for c in (0..classes).filter(|&c| counts[c] > 0) {
        sw += &edge_scatter[c] / counts[c] as f64;
        edges_over_n += &edge_scatter[c] / n as f64;
    }
    // S_t and Σ_c n_c S_c from centred rows.
    let mean = x.row_sum() / n as f64;
    let mut centred = x.clone();
    for r in 0..n {
        let mut row = centred.row_mut(r);
        row -= &mean;
    }
    let st = centred.transpose() * &centred;
    let mut weighted_class = DMatrix::zeros(dim, dim);
    for c in (0..classes).filter(|&c| counts[c] > 0) {
        let members: Vec<usize> = (0..n).filter(|&r| labels[r] == c).collect();
        let mut xc = x.select_rows(&members);
        let mc = xc.row_sum() / members.len() as f64;
        for r in 0..members.len() {
            let mut row = xc.row_mut(r);
            row -= &mc;
        }
        weighted_class += xc.transpose() * &xc * counts[c] as f64;
    }
    let sb = st - weighted_class / n as f64 + edges_over_n - &sw;
    (sw, sb)
}

/// `w` with zero columns appended up to `dim` (null directions, weight 0).
pub(crate) fn pad_columns(w: DMatrix<f64>, dim: usize) -> DMatrix<f64> {
    let k = w.ncols();
    if k >= dim {
        return w;
    }
    w.insert_columns(k, dim - k, 0.0)
}

fn row_major(x: &DMatrix<f64>) -> Vec<f64> {
    x.transpose().as_slice().to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Dataset;
    use crate::projection::lda::{fisher_scatters, Lda};
    use crate::projection::test_support::*;

    /// The scatters of eqs. 2–5 summed literally over all ordered pairs (O(n²)).
    fn brute_force_scatters(
        x: &DMatrix<f64>,
        labels: &[usize],
        classes: usize,
        a: &DMatrix<f64>,
    ) -> (DMatrix<f64>, DMatrix<f64>) {
        let (n, dim) = x.shape();
        let mut counts = vec![0usize; classes];
        labels.iter().for_each(|&c| counts[c] += 1);
        let mut sw = DMatrix::zeros(dim, dim);
        let mut sb = DMatrix::zeros(dim, dim);
        for i in 0..n {
            for j in 0..n {
                let d = (x.row(i) - x.row(j)).transpose();
                let outer = &d * d.transpose() * 0.5;
                if labels[i] == labels[j] {
                    let nc = counts[labels[i]] as f64;
                    sw += &outer * (a[(i, j)] / nc);
                    sb += &outer * (a[(i, j)] * (1.0 / n as f64 - 1.0 / nc));
                } else {
                    sb += &outer / n as f64;
                }
            }
        }
        (sw, sb)
    }

    fn random_labelled(
        seed: u64,
        n: usize,
        dim: usize,
        classes: usize,
    ) -> (DMatrix<f64>, Vec<usize>) {
        let x = DMatrix::from_vec(n, dim, normals(seed, n * dim));
        let labels = (0..n).map(|i| (i * 7 + seed as usize) % classes).collect();
        (x, labels)
    }

    #[test]
    fn closed_form_scatters_equal_the_pairwise_sums() {
        for seed in 0..4 {
            let (x, labels) = random_labelled(seed, 30, 4, 3);
            let rows = row_major(&x);
            let graph = knn_graph(&rows, 4, 3, |_, _| true);
            let mut a = DMatrix::zeros(30, 30);
            for (i, nn) in graph.iter().enumerate() {
                for &j in nn {
                    a[(i, j)] = 1.0;
                    a[(j, i)] = 1.0;
                }
            }
            let (sw, sb) = local_scatters(&x, &labels, 3, &graph);
            let (bw, bb) = brute_force_scatters(&x, &labels, 3, &a);
            assert!((sw - &bw).norm() < 1e-10 * bw.norm());
            assert!((sb - &bb).norm() < 1e-10 * bb.norm());
        }
    }

    #[test]
    fn a_complete_graph_gives_fishers_scatters() {
        // Sugiyama's remark below eq. 5: with A ≡ 1, LFDA is LDA.
        let (x, labels) = random_labelled(9, 25, 3, 2);
        let graph: Vec<Vec<usize>> = (0..25)
            .map(|i| (0..25).filter(|&j| j != i).collect())
            .collect();
        let (sw, sb) = local_scatters(&x, &labels, 2, &graph);
        let (fw, fb) = fisher_scatters(&x, &labels, 2);
        assert!((sw - &fw).norm() < 1e-10 * fw.norm());
        assert!((sb - &fb).norm() < 1e-10 * fb.norm());
    }

    #[test]
    fn knn_graph_matches_sorting_all_distances() {
        let (x, _) = random_labelled(4, 40, 3, 2);
        let rows = row_major(&x);
        let graph = knn_graph(&rows, 3, 5, |_, _| true);
        for (i, nn) in graph.iter().enumerate() {
            let mut all: Vec<(f64, usize)> = (0..40)
                .filter(|&j| j != i)
                .map(|j| {
                    (
                        squared_euclidean(&rows[i * 3..i * 3 + 3], &rows[j * 3..j * 3 + 3]),
                        j,
                    )
                })
                .collect();
            all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            let expect: Vec<usize> = all.iter().take(5).map(|p| p.1).collect();
            assert_eq!(nn, &expect);
        }
    }

    #[test]
    fn paper_table_1_references_and_citers() {
        // The 4-NN graph of Table 1 (0-based): with R = C = 2, x1's references are
        // {x3, x5} and its citers {x2, x3, x5} (§3.3).
        let graph = vec![
            vec![2, 4, 3, 1],
            vec![0, 3, 4, 2],
            vec![0, 3, 4, 1],
            vec![2, 4, 1, 0],
            vec![0, 3, 2, 1],
        ];
        // Label x1 positive and x2 negative: x1's references (x3, x5) are positive and of
        // its citers (x2, x3, x5) one is negative: n = 1, p = 4, kept at t = 1 and
        // relabelled at t = 0.25.
        let labels = vec![1, 0, 1, 1, 1];
        assert!(!false_positives(&graph, &labels, 2, 2, 1.0)[0]);
        assert!(false_positives(&graph, &labels, 2, 2, 0.25)[0]);
        assert!(!false_positives(&graph, &labels, 2, 2, 0.26)[0]);
        // Negatives are never relabelled.
        assert!(!false_positives(&graph, &labels, 2, 2, 0.01)[1]);
    }

    /// A hand-built version of the CLFDA paper's Fig. 1: a negative bag along the
    /// x-axis, a positive bag whose false positives sit between the negatives and whose
    /// true positives lie above them. Returns the set and the false-positive flags.
    fn figure_one() -> (Dataset, Vec<bool>) {
        let mut rows = Vec::new();
        let mut truth = Vec::new();
        // Positive bag (bag 0): 9 false positives between the negatives, 5 true positives
        // close enough together that their nearest neighbours are each other.
        for k in 0..9 {
            rows.push(vec![-4.5 + k as f64, 0.05 * (k % 3) as f64]);
            truth.push(true);
        }
        for k in 0..5 {
            rows.push(vec![-1.0 + 0.5 * k as f64, 3.0]);
            truth.push(false);
        }
        // Negative bag (bag 1): 13 negatives, reaching further left than the positives.
        for k in 0..13 {
            rows.push(vec![-8.0 + k as f64, 0.05 * (k % 2) as f64]);
            truth.push(false);
        }
        let features: Vec<f64> = rows.iter().flatten().copied().collect();
        let data = Dataset::new(
            "fig1",
            2,
            features,
            vec![0, 14, 27],
            vec!["pos".into(), "neg".into()],
            Some(vec![1, 0]),
            vec!["0".into(), "1".into()],
        )
        .unwrap();
        (data, truth)
    }

    #[test]
    fn clfda_relabels_the_false_positives_of_figure_one() {
        let (data, truth) = figure_one();
        let t = TrainingInstances::new(&data, &[0, 1], InputScaling::ZScore).unwrap();
        let labels: Vec<usize> = t.bag_of.iter().map(|&k| [1, 0][k]).collect();
        let graph = knn_graph(&row_major(&t.x), 2, 4, |_, _| true);
        // Each false positive has two negatives at distance 0.5 as its references;
        // the true positives only see each other.
        assert_eq!(false_positives(&graph, &labels, 2, 4, 1.0), truth);

        let clfda = Clfda::new(1).fit(data.select(&[0, 1])).unwrap();
        assert_eq!(clfda.diagnostic("relabelled"), Some(9.0));
        // After relabelling, the only positives are the true ones above the axis: the
        // discriminant direction is vertical.
        let c = abs_cosine(&raw_direction(&clfda, 0), &[0.0, 1.0]);
        assert!(c > 0.99, "CLFDA direction is not vertical: |cos| = {c}");
    }

    #[test]
    fn lfda_recovers_the_discriminant_direction_of_a_multimodal_class() {
        // Sugiyama's multimodal case: class 1 sits in two clusters at x₁ = ±3 around
        // class 0 at x₁ = 0, so the class means agree along x₁ and LDA instead follows a
        // weak mean shift along x₂. The separating direction is x₁, which LFDA finds.
        for seed in 0..3 {
            let z = normals(seed, 1800);
            let mut rows = Vec::new();
            let mut labels = Vec::new();
            for (i, p) in z.chunks(3).enumerate() {
                let c = i % 2;
                let centre = if c == 0 {
                    0.0
                } else if (i / 2) % 2 == 0 {
                    3.0
                } else {
                    -3.0
                };
                rows.push(vec![centre + 0.4 * p[0], p[1] + 0.5 * c as f64, p[2]]);
                labels.push(c);
            }
            let data = single_instance_bags(3, &rows, &labels);
            let lfda = Lfda::new(1).fit(&data).unwrap();
            let lda = Lda { dim: 1 }.fit(&data).unwrap();
            let e1 = [1.0, 0.0, 0.0];
            let c = abs_cosine(&raw_direction(&lfda, 0), &e1);
            assert!(c > 0.98, "seed {seed}: LFDA |cos| = {c}");
            let l = abs_cosine(&raw_direction(&lda, 0), &e1);
            assert!(
                l < 0.5,
                "seed {seed}: LDA |cos| = {l} (the test data lost its point)"
            );
        }
    }

    #[test]
    fn rejects_bad_parameters_and_one_class() {
        let (data, _) = figure_one();
        let bad = Clfda {
            threshold: f64::NAN,
            ..Clfda::new(1)
        };
        assert!(bad.fit(data.select(&[0, 1])).is_err());
        assert!(Lfda::new(1).fit(data.select(&[0])).is_err());
    }
}
