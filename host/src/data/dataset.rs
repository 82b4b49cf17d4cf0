//! The bag data set: instances stored contiguously (one allocation, one row per
//! instance), bag boundaries as offsets, one id and at most one label per bag.

use std::ops::Range;

use crate::error::{Error, Result};

/// A multiple-instance data set. Immutable once built; every constructor validates.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    name: String,
    dim: usize,
    /// Row-major `n_instances × dim`.
    features: Vec<f64>,
    /// `bag_starts[b]..bag_starts[b + 1]` are the instances of bag `b`; length `n_bags + 1`.
    bag_starts: Vec<usize>,
    bag_ids: Vec<String>,
    /// Class index per bag (`0..class_names.len()`), or `None` for an unlabelled set.
    labels: Option<Vec<usize>>,
    /// The label as written in the file, per class index (sorted numerically: "0", "1", …).
    class_names: Vec<String>,
}

/// A borrowed view of one bag: its instances as rows of `dim` values.
#[derive(Debug, Clone, Copy)]
pub struct Bag<'a> {
    rows: &'a [f64],
    dim: usize,
}

impl<'a> Bag<'a> {
    /// The bag whose instances are the rows of `rows`, `dim` values each (a model's
    /// stored bags read in place).
    ///
    /// ```
    /// use mil_toolkit::data::Bag;
    ///
    /// let rows = [0.0, 1.0, 2.0, 3.0];
    /// let bag = Bag::from_rows(&rows, 2);
    /// assert_eq!((bag.len(), bag.instance(1)), (2, &[2.0, 3.0][..]));
    /// ```
    ///
    /// # Panics
    ///
    /// If `dim` is zero or does not divide the number of values.
    pub fn from_rows(rows: &'a [f64], dim: usize) -> Self {
        assert!(
            dim > 0 && rows.len().is_multiple_of(dim),
            "rows of {dim} values"
        );
        Bag { rows, dim }
    }

    /// Number of instances in the bag (at least one).
    pub fn len(&self) -> usize {
        self.rows.len() / self.dim
    }

    /// Always false: a valid data set has no empty bags.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Feature dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Instance `i` of the bag.
    pub fn instance(&self, i: usize) -> &'a [f64] {
        &self.rows[i * self.dim..(i + 1) * self.dim]
    }

    /// Iterator over the instances.
    pub fn instances(&self) -> std::slice::ChunksExact<'a, f64> {
        self.rows.chunks_exact(self.dim)
    }

    /// All instances as one row-major slice.
    pub fn as_slice(&self) -> &'a [f64] {
        self.rows
    }
}

/// The most classes a classifier is trained on.
pub const MAX_CLASSES: usize = 1000;

impl Dataset {
    /// Builds a data set from its parts, checking every invariant: `dim > 0`, at least one
    /// bag, no empty bag, finite features, consistent lengths, labels within the classes.
    pub fn new(
        name: impl Into<String>,
        dim: usize,
        features: Vec<f64>,
        bag_starts: Vec<usize>,
        bag_ids: Vec<String>,
        labels: Option<Vec<usize>>,
        class_names: Vec<String>,
    ) -> Result<Self> {
        let name = name.into();
        let bad = |problem: String| Error::data(&name, problem);
        if dim == 0 {
            return Err(bad("no features".into()));
        }
        if bag_starts.len() < 2 {
            return Err(bad("no bags".into()));
        }
        let n_bags = bag_starts.len() - 1;
        if bag_starts[0] != 0 || *bag_starts.last().unwrap_or(&0) * dim != features.len() {
            return Err(bad("bag offsets do not cover the instances".into()));
        }
        if let Some(b) = bag_starts.windows(2).position(|w| w[1] <= w[0]) {
            return Err(bad(format!("bag {} has no instances", b)));
        }
        if bag_ids.len() != n_bags {
            return Err(bad(format!(
                "{} bag ids for {} bags",
                bag_ids.len(),
                n_bags
            )));
        }
        if let Some(i) = features.iter().position(|v| !v.is_finite()) {
            return Err(bad(format!(
                "instance {} feature {} is not finite",
                i / dim + 1,
                i % dim + 1
            )));
        }
        if let Some(labels) = &labels {
            if labels.len() != n_bags {
                return Err(bad(format!("{} labels for {} bags", labels.len(), n_bags)));
            }
            if let Some(&l) = labels.iter().find(|&&l| l >= class_names.len()) {
                return Err(bad(format!(
                    "label index {l} but only {} classes",
                    class_names.len()
                )));
            }
        }
        Ok(Dataset {
            name,
            dim,
            features,
            bag_starts,
            bag_ids,
            labels,
            class_names,
        })
    }

    /// The name errors and reports use: a file path or a built-in name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Feature dimension D.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Number of bags.
    pub fn n_bags(&self) -> usize {
        self.bag_starts.len() - 1
    }

    /// Number of instances over all bags.
    pub fn n_instances(&self) -> usize {
        self.features.len() / self.dim
    }

    /// All instances, row-major `n_instances × dim`.
    pub fn features(&self) -> &[f64] {
        &self.features
    }

    /// The instances, row-major `n_instances × dim`, moved out of the data set without
    /// a copy (for handing a large set to another owner, such as a NumPy array).
    ///
    /// ```
    /// let data = mil_toolkit::data::load("musk1")?;
    /// let (n, dim) = (data.n_instances(), data.dim());
    /// assert_eq!(data.into_features().len(), n * dim);
    /// # Ok::<(), mil_toolkit::Error>(())
    /// ```
    pub fn into_features(self) -> Vec<f64> {
        self.features
    }

    /// Instance `i` (global index).
    pub fn instance(&self, i: usize) -> &[f64] {
        &self.features[i * self.dim..(i + 1) * self.dim]
    }

    /// Bag `b` as a borrowed view.
    pub fn bag(&self, b: usize) -> Bag<'_> {
        let r = self.bag_range(b);
        Bag {
            rows: &self.features[r.start * self.dim..r.end * self.dim],
            dim: self.dim,
        }
    }

    /// Global instance indices of bag `b`.
    pub fn bag_range(&self, b: usize) -> Range<usize> {
        self.bag_starts[b]..self.bag_starts[b + 1]
    }

    /// Bag offsets: `bag_starts()[b]..bag_starts()[b+1]` are bag `b`'s instances.
    pub fn bag_starts(&self) -> &[usize] {
        &self.bag_starts
    }

    /// Id of bag `b` as written in the file.
    pub fn bag_id(&self, b: usize) -> &str {
        &self.bag_ids[b]
    }

    /// All bag ids.
    pub fn bag_ids(&self) -> &[String] {
        &self.bag_ids
    }

    /// Class index of every bag, if the set is labelled.
    pub fn labels(&self) -> Option<&[usize]> {
        self.labels.as_deref()
    }

    /// Class index of bag `b`, if labelled.
    pub fn label(&self, b: usize) -> Option<usize> {
        self.labels.as_ref().map(|l| l[b])
    }

    /// Labels as written in the file, indexed by class index.
    pub fn class_names(&self) -> &[String] {
        &self.class_names
    }

    /// Number of classes (0 for an unlabelled set).
    pub fn n_classes(&self) -> usize {
        if self.labels.is_some() {
            self.class_names.len()
        } else {
            0
        }
    }

    /// Bags per class index.
    pub fn bags_per_class(&self) -> Vec<usize> {
        let mut counts = vec![0; self.n_classes()];
        for &l in self.labels.iter().flatten() {
            counts[l] += 1;
        }
        counts
    }

    /// The labels, or a clear error naming the data set when it has none or fewer than
    /// `min_classes` classes with at least one bag each.
    pub fn require_labels(&self, min_classes: usize) -> Result<&[usize]> {
        let labels = self
            .labels
            .as_deref()
            .ok_or_else(|| Error::data(&self.name, "the data set has no labels"))?;
        let present = self.bags_per_class().iter().filter(|&&c| c > 0).count();
        if present < min_classes {
            return Err(Error::data(
                &self.name,
                format!("{present} class(es) present, at least {min_classes} needed"),
            ));
        }
        if min_classes >= 2 {
            self.check_class_count(present)?;
        }
        Ok(labels)
    }

    /// Refuses a label column that is not a class: more than [`MAX_CLASSES`] classes, or
    /// more than two with fewer than two bags per class on average (an id or a
    /// measurement read as the label), which no classifier can learn from.
    fn check_class_count(&self, classes: usize) -> Result<()> {
        let n = self.n_bags();
        if classes > MAX_CLASSES || (classes > 2 && 2 * classes > n) {
            return Err(Error::data(
                &self.name,
                format!(
                    "the label column (CSV column 1, the ARFF class attribute) has {classes} classes for {n} bags: about one bag per class, so it is not a class label (an id or a measurement?); at most {MAX_CLASSES} classes and at least two bags per class on average are needed"
                ),
            ));
        }
        Ok(())
    }

    /// The labels of the training bags `train`, checked: every index in range and at
    /// least `min_classes` classes among those bags. What every fit starts with.
    pub fn training_labels(&self, train: &[usize], min_classes: usize) -> Result<Vec<usize>> {
        let labels = self.require_labels(1)?;
        let chosen: Vec<usize> = train
            .iter()
            .map(|&b| {
                labels.get(b).copied().ok_or_else(|| {
                    Error::data(&self.name, format!("training bag index {b} out of range"))
                })
            })
            .collect::<Result<_>>()?;
        let mut present = vec![false; self.n_classes()];
        chosen.iter().for_each(|&l| present[l] = true);
        let count = present.iter().filter(|&&p| p).count();
        if count < min_classes {
            return Err(Error::data(
                &self.name,
                format!("{count} class(es) among the training bags, at least {min_classes} needed"),
            ));
        }
        Ok(chosen)
    }

    /// A new data set with the chosen bags, in the given order (features are copied).
    pub fn copy_bags(&self, bags: &[usize]) -> Dataset {
        let mut features = Vec::new();
        let mut bag_starts = vec![0];
        for &b in bags {
            features.extend_from_slice(self.bag(b).as_slice());
            bag_starts.push(features.len() / self.dim);
        }
        Dataset {
            name: self.name.clone(),
            dim: self.dim,
            features,
            bag_starts,
            bag_ids: bags.iter().map(|&b| self.bag_ids[b].clone()).collect(),
            labels: self
                .labels
                .as_ref()
                .map(|l| bags.iter().map(|&b| l[b]).collect()),
            class_names: self.class_names.clone(),
        }
    }

    /// The same bags, ids and labels with new instance features of dimension `dim`
    /// (row-major, one row per instance) — what a projection produces.
    pub fn with_features(&self, dim: usize, features: Vec<f64>) -> Result<Dataset> {
        if dim == 0 || features.len() != self.n_instances() * dim {
            return Err(Error::data(
                &self.name,
                format!(
                    "{} values are not {} instances of dimension {dim}",
                    features.len(),
                    self.n_instances()
                ),
            ));
        }
        Dataset::new(
            self.name.clone(),
            dim,
            features,
            self.bag_starts.clone(),
            self.bag_ids.clone(),
            self.labels.clone(),
            self.class_names.clone(),
        )
    }

    /// A copy without labels (what a deployed model sees).
    pub fn without_labels(&self) -> Dataset {
        Dataset {
            labels: None,
            ..self.clone()
        }
    }

    /// Global indices of all instances in the given bags, in bag order.
    pub fn instance_indices(&self, bags: &[usize]) -> Vec<usize> {
        bags.iter().flat_map(|&b| self.bag_range(b)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> Dataset {
        Dataset::new(
            "tiny",
            2,
            vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
            vec![0, 2, 3],
            vec!["a".into(), "b".into()],
            Some(vec![1, 0]),
            vec!["0".into(), "1".into()],
        )
        .unwrap()
    }

    #[test]
    fn views_and_counts() {
        let d = tiny();
        assert_eq!(d.n_bags(), 2);
        assert_eq!(d.n_instances(), 3);
        assert_eq!(d.bag(0).len(), 2);
        assert_eq!(d.bag(0).instance(1), &[3.0, 4.0]);
        assert_eq!(d.bag(1).as_slice(), &[5.0, 6.0]);
        assert_eq!(d.bags_per_class(), vec![1, 1]);
        assert_eq!(d.instance_indices(&[1, 0]), vec![2, 0, 1]);
    }

    #[test]
    fn select_reorders_bags() {
        let d = tiny().copy_bags(&[1, 0]);
        assert_eq!(d.bag_id(0), "b");
        assert_eq!(d.labels(), Some(&[0, 1][..]));
        assert_eq!(d.bag(1).as_slice(), &[1.0, 2.0, 3.0, 4.0]);
    }

    #[test]
    fn rejects_broken_parts() {
        let ids = || vec!["a".to_string()];
        let names = || vec!["0".to_string()];
        assert!(Dataset::new("x", 0, vec![], vec![0, 1], ids(), None, names()).is_err());
        assert!(Dataset::new("x", 1, vec![f64::NAN], vec![0, 1], ids(), None, names()).is_err());
        assert!(Dataset::new("x", 1, vec![1.0], vec![0, 0, 1], ids(), None, names()).is_err());
        assert!(
            Dataset::new("x", 1, vec![1.0], vec![0, 1], ids(), Some(vec![3]), names()).is_err()
        );
    }

    #[test]
    fn require_labels_counts_present_classes() {
        let d = tiny();
        assert!(d.require_labels(2).is_ok());
        assert!(d.copy_bags(&[0]).require_labels(2).is_err());
        assert!(d.without_labels().require_labels(1).is_err());
    }
}
