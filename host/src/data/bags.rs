//! [`Bags`]: the one input type of every `fit`, `scores`, `predict`, `transform` and
//! `explain` — a data set borrowed whole or a chosen list of its bags, never copied.

use std::borrow::Cow;

use super::dataset::{Bag, Dataset};
use crate::error::Result;

/// Bags of one data set, borrowed: all of them in order (`From<&Dataset>`), or a chosen
/// list ([`Dataset::select`], the folds of [`Dataset::stratified_folds`]). Cheap to
/// clone; `From<&Bags>` lets a view be passed on by reference.
///
/// ```
/// use mil_toolkit::prelude::*;
///
/// let data = mil_toolkit::data::load("musk1")?;
/// let (train, test) = data.stratified_folds(5, 1)?.swap_remove(0);
/// assert_eq!(train.len() + test.len(), data.n_bags());
/// let model = Milr::default().fit(&train)?;
/// assert_eq!(model.scores(&test)?.len(), test.len());
/// // The whole data set is a view too.
/// assert_eq!(model.scores(&data)?.len(), data.n_bags());
/// # Ok::<(), mil_toolkit::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Bags<'a> {
    data: &'a Dataset,
    /// `None`: every bag of `data`, in order.
    picked: Option<Cow<'a, [usize]>>,
}

impl<'a> Bags<'a> {
    /// Every bag of `data`, in order.
    pub fn all(data: &'a Dataset) -> Self {
        Bags { data, picked: None }
    }

    /// The bags `picked` of `data`, in that order.
    ///
    /// # Panics
    /// When an index is not a bag of `data` (as slice indexing does).
    pub fn picked(data: &'a Dataset, picked: impl Into<Cow<'a, [usize]>>) -> Self {
        let picked = picked.into();
        if let Some(&b) = picked.iter().find(|&&b| b >= data.n_bags()) {
            panic!("bag index {b} out of range for {} bags", data.n_bags());
        }
        Bags {
            data,
            picked: Some(picked),
        }
    }

    /// The data set the bags belong to.
    pub fn dataset(&self) -> &'a Dataset {
        self.data
    }

    /// Number of bags in the view.
    pub fn len(&self) -> usize {
        match &self.picked {
            Some(p) => p.len(),
            None => self.data.n_bags(),
        }
    }

    /// True when the view holds no bag.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True when the view is the whole data set in its own order.
    pub fn is_all(&self) -> bool {
        self.picked.is_none()
    }

    /// The data-set index of the view's `i`-th bag.
    pub fn index(&self, i: usize) -> usize {
        match &self.picked {
            Some(p) => p[i],
            None => {
                assert!(i < self.data.n_bags(), "bag {i} of {}", self.data.n_bags());
                i
            }
        }
    }

    /// The data-set indices of the view's bags, in order.
    pub fn indices(&self) -> Cow<'_, [usize]> {
        match &self.picked {
            Some(p) => Cow::Borrowed(p),
            None => Cow::Owned((0..self.data.n_bags()).collect()),
        }
    }

    /// The data-set indices of the view's bags, in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = usize> + '_ {
        (0..self.len()).map(|i| self.index(i))
    }

    /// The view's `i`-th bag.
    pub fn bag(&self, i: usize) -> Bag<'a> {
        self.data.bag(self.index(i))
    }

    /// The id of the view's `i`-th bag.
    pub fn bag_id(&self, i: usize) -> &'a str {
        self.data.bag_id(self.index(i))
    }

    /// The labels of the view's bags, checked: the data set is labelled and at least
    /// `min_classes` classes occur among these bags. What every fit starts with.
    pub fn labels(&self, min_classes: usize) -> Result<Vec<usize>> {
        self.data.training_labels(&self.indices(), min_classes)
    }

    /// A sub-view: the view's bags at `positions` (positions in this view, not data-set
    /// indices).
    pub fn subset(&self, positions: &[usize]) -> Bags<'a> {
        Bags::picked(
            self.data,
            positions.iter().map(|&i| self.index(i)).collect::<Vec<_>>(),
        )
    }

    /// The view's bags copied into a data set of their own (ids, labels and class names
    /// kept), for code that needs contiguous storage.
    pub fn to_dataset(&self) -> Dataset {
        match &self.picked {
            Some(p) => self.data.copy_bags(p),
            None => self.data.clone(),
        }
    }
}

impl<'a> From<&'a Dataset> for Bags<'a> {
    fn from(data: &'a Dataset) -> Self {
        Bags::all(data)
    }
}

impl<'a> From<&Bags<'a>> for Bags<'a> {
    fn from(bags: &Bags<'a>) -> Self {
        bags.clone()
    }
}

impl Dataset {
    /// The bags `bags` of this data set, in that order, as a borrowed view.
    ///
    /// # Panics
    /// When an index is out of range.
    pub fn select<'a>(&'a self, bags: impl Into<Cow<'a, [usize]>>) -> Bags<'a> {
        Bags::picked(self, bags)
    }

    /// Stratified `k`-fold cross-validation splits of the labelled bags, as `(train,
    /// test)` views: each bag is in exactly one test fold; every fold's class
    /// proportions are within one bag per class of the whole set's. They are the folds
    /// of `mil cv --folds k --seed seed` (its first repetition).
    pub fn stratified_folds(&self, k: usize, seed: u64) -> Result<Vec<(Bags<'_>, Bags<'_>)>> {
        let labels = self.require_labels(2)?;
        let all = Bags::all(self).indices().into_owned();
        let seed = crate::eval::seeds::Stream::Repetition.seed(seed, 0);
        let folds = crate::eval::folds::stratified_folds(labels, k, seed)?;
        Ok(folds
            .into_iter()
            .map(|test| {
                let train = crate::eval::folds::complement(&all, &test);
                (self.select(train), self.select(test))
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> Dataset {
        Dataset::new(
            "tiny",
            1,
            vec![0.0, 1.0, 2.0, 3.0, 4.0],
            vec![0, 2, 3, 5],
            vec!["a".into(), "b".into(), "c".into()],
            Some(vec![0, 1, 0]),
            vec!["0".into(), "1".into()],
        )
        .unwrap()
    }

    #[test]
    fn a_whole_set_and_a_selection_read_the_same_bags() {
        let d = tiny();
        let all = Bags::from(&d);
        assert_eq!(all.len(), 3);
        assert_eq!(all.indices().as_ref(), &[0, 1, 2]);
        let picked = d.select(vec![2, 0]);
        assert_eq!(picked.len(), 2);
        assert_eq!(picked.bag(0).as_slice(), &[3.0, 4.0]);
        assert_eq!(picked.bag_id(1), "a");
        assert_eq!(picked.iter().collect::<Vec<_>>(), vec![2, 0]);
        assert_eq!(picked.subset(&[1]).indices().as_ref(), &[0]);
        assert_eq!(
            picked.to_dataset().bag_ids(),
            &["c".to_string(), "a".into()]
        );
        assert_eq!(all.to_dataset(), d);
    }

    #[test]
    fn labels_need_the_classes_among_the_chosen_bags() {
        let d = tiny();
        assert_eq!(d.select(vec![0, 1]).labels(2).unwrap(), vec![0, 1]);
        assert!(d.select(vec![0, 2]).labels(2).is_err());
    }

    #[test]
    #[should_panic(expected = "out of range")]
    fn an_index_past_the_end_is_refused() {
        let d = tiny();
        let _ = d.select(vec![3]);
    }

    #[test]
    fn folds_partition_the_bags() {
        let data = crate::data::load("musk1").unwrap();
        let folds = data.stratified_folds(10, 3).unwrap();
        let mut seen = vec![0usize; data.n_bags()];
        for (train, test) in &folds {
            assert_eq!(train.len() + test.len(), data.n_bags());
            test.iter().for_each(|b| seen[b] += 1);
            assert!(train.iter().all(|b| !test.indices().contains(&b)));
        }
        assert!(seen.iter().all(|&c| c == 1));
    }
}
