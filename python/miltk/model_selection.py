"""Bag-level cross-validation folds and measures, matching ``mil cv``."""

import numpy as np

from . import _native
from ._bags import check_labels, check_positive_int, native_bags

__all__ = [
    "StratifiedBagKFold",
    "stratified_bag_folds",
    "clustering_accuracy",
    "library_cross_validate",
]


def _test_folds(y, n_splits, seed, repeats):
    y = np.asarray(y)
    _, indices = check_labels(y, len(y))
    return _native.stratified_folds(
        indices,
        check_positive_int("n_splits", n_splits, minimum=2),
        check_positive_int("seed", seed, minimum=0),
        check_positive_int("repeats", repeats),
    )


def stratified_bag_folds(y, n_splits=10, seed=1, repeats=1):
    """The stratified folds ``mil cv --folds n_splits --seed seed`` uses.

    Each class's bags are shuffled with the library's generator and dealt to the folds
    round-robin. Class indices follow the sorted labels, as ``mil`` sorts them.

    Parameters
    ----------
    y : array-like of shape (n_bags,)
        Bag labels.
    n_splits : int, default=10
        Folds per repetition (the number of bags is leave-one-out).
    seed : int, default=1
        The ``--seed`` of ``mil cv``.
    repeats : int, default=1
        Repetitions (``--repeats``), each with a seed derived from ``seed``.

    Returns
    -------
    list of (ndarray, ndarray)
        (train indices, test indices) of every fold, repetition after repetition: pass
        it as ``cv=`` to ``cross_val_score`` or ``GridSearchCV``.
    """
    n = len(np.asarray(y))
    everything = np.arange(n)
    out = []
    for folds in _test_folds(y, n_splits, seed, repeats):
        for test in folds:
            test = np.asarray(test, dtype=np.intp)
            mask = np.ones(n, dtype=bool)
            mask[test] = False
            out.append((everything[mask], test))
    return out


class StratifiedBagKFold:
    """A scikit-learn splitter giving :func:`stratified_bag_folds`.

    Parameters
    ----------
    n_splits : int, default=10
        Folds.
    seed : int, default=1
        The ``--seed`` of ``mil cv``.
    repeats : int, default=1
        Repetitions.
    """

    def __init__(self, n_splits=10, seed=1, repeats=1):
        self.n_splits = n_splits
        self.seed = seed
        self.repeats = repeats

    def split(self, X, y, groups=None):
        """Yield (train, test) bag indices.

        Parameters
        ----------
        X : sequence
            The bags (only their number is used).
        y : array-like of shape (n_bags,)
            Bag labels.
        groups : ignored

        Yields
        ------
        train, test : ndarray
        """
        if len(X) != len(y):
            raise ValueError(f"{len(X)} bags but {len(y)} labels")
        yield from stratified_bag_folds(y, self.n_splits, self.seed, self.repeats)

    def get_n_splits(self, X=None, y=None, groups=None):
        """Number of (train, test) pairs.

        Returns
        -------
        int
        """
        return self.n_splits * self.repeats

    def __repr__(self):
        return (
            f"StratifiedBagKFold(n_splits={self.n_splits}, seed={self.seed}, "
            f"repeats={self.repeats})"
        )


def clustering_accuracy(y_true, y_pred):
    """Accuracy of a clustering under the best one-to-one matching of clusters to classes.

    Parameters
    ----------
    y_true : array-like of shape (n_bags,)
        True labels.
    y_pred : array-like of shape (n_bags,)
        Cluster labels.

    Returns
    -------
    float
        In [0, 1].
    """
    y_true = np.asarray(y_true)
    y_pred = np.asarray(y_pred)
    if y_true.shape != y_pred.shape or y_true.ndim != 1:
        raise ValueError(
            f"y_true and y_pred must be 1-D of the same length, got {y_true.shape} "
            f"and {y_pred.shape}"
        )
    _, truth = np.unique(y_true, return_inverse=True)
    _, pred = np.unique(y_pred, return_inverse=True)
    return _native.clustering_accuracy(pred.ravel().tolist(), truth.ravel().tolist())


def library_cross_validate(estimator, bags, y, n_splits=10, seed=1, repeats=1):
    """Cross-validate with the library's own loop (what ``mil cv`` runs), in Rust.

    The folds run in parallel on rayon's pool. It fits what scikit-learn's loop fits,
    fold by fold, with two exceptions the library makes for speed, as ``mil cv`` does:
    Citation-kNN with ``scaling="none"`` computes the bag distances once, and a
    set-kernel SVM computes one Gram matrix over all bags (its grid or z-score fitted on
    every bag, no labels involved) shared by the folds.

    Parameters
    ----------
    estimator : miltk classifier or sklearn Pipeline
        A miltk classifier, or a ``Pipeline`` of one miltk projection and one miltk
        classifier (their parameters are used; nothing is fitted on the object).
    bags : sequence of ndarray
        One (instances x features) array per bag.
    y : array-like of shape (n_bags,)
        Bag labels.
    n_splits, seed, repeats : int
        As :func:`stratified_bag_folds`.

    Returns
    -------
    dict
        ``accuracy`` (pooled), ``predictions`` (out-of-fold label of every bag, first
        repetition) and ``per_fold`` (accuracy of every fold).
    """
    projection, classifier = None, estimator
    steps = getattr(estimator, "steps", None)
    if steps is not None:
        if len(steps) != 2:
            raise ValueError("a Pipeline of one projection and one classifier is needed")
        projection, classifier = steps[0][1]._spec(), steps[1][1]
    native, classes = native_bags(bags, y)
    spec = classifier._spec(classes)
    accuracy, labels, per_fold = _native.cross_validate(
        native, spec, projection, n_splits, seed, repeats
    )
    return {
        "accuracy": accuracy,
        "predictions": classes[np.asarray(labels, dtype=np.intp)],
        "per_fold": np.asarray(per_fold),
    }
