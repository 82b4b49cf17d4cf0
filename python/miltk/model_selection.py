"""Bag-level cross-validation folds and measures, matching ``mil cv``."""

from __future__ import annotations

import time
import warnings
from typing import Any, Iterable, Iterator, Optional

import numpy as np
import numpy.typing as npt
from sklearn.base import clone
from sklearn.model_selection import BaseCrossValidator

from . import _native
from ._bags import BagsLike, check_labels, check_positive_int, native_labelled_bags
from ._base import (
    DEPRECATED,
    RandomState,
    n_threads,
    pipeline_parts,
    renamed,
    seed_from_random_state,
)

__all__ = [
    "StratifiedBagKFold",
    "stratified_bag_folds",
    "clustering_accuracy",
    "cross_validate_native",
    "library_cross_validate",
]


class StratifiedBagKFold(BaseCrossValidator):
    """Stratified k-fold over bags: the folds ``mil cv --folds n_splits --seed s`` uses.

    Each class's bags are shuffled with the library's generator and dealt to the folds
    round-robin (class indices follow the sorted labels, as ``mil`` sorts them); each
    repetition shuffles with a seed derived from the first. Usable as ``cv=`` wherever
    scikit-learn takes a splitter (``cross_validate``, ``GridSearchCV``, ...).

    Parameters
    ----------
    n_splits : int, default=10
        Folds per repetition, at least 2 (the number of bags is leave-one-out).
    random_state : int, RandomState, Generator or None, default=1
        The ``--seed`` of ``mil cv``: an int gives the same folds on every ``split``;
        None draws a seed from ``numpy.random`` at each ``split``; a
        ``RandomState``/``Generator`` gives one draw of its own per ``split``. Unused
        when ``shuffle=False``.
    n_repeats : int, default=1
        Repetitions (``--repeats``), each with a seed derived from ``random_state``.
    shuffle : bool, default=True
        Shuffle each class's bags before dealing them. ``False`` deals them in their
        order (one repetition only).
    seed : int
        Deprecated name of ``random_state`` (``FutureWarning``).
    repeats : int
        Deprecated name of ``n_repeats`` (``FutureWarning``).

    Examples
    --------
    >>> import numpy as np
    >>> from miltk import StratifiedBagKFold
    >>> y = np.array([0, 0, 0, 1, 1, 1])
    >>> [test.tolist() for _, test in StratifiedBagKFold(3, shuffle=False).split(y, y)]
    [[0, 3], [1, 4], [2, 5]]
    """

    def __init__(
        self,
        n_splits: int = 10,
        random_state: RandomState = 1,
        n_repeats: int = 1,
        *,
        shuffle: bool = True,
        seed: object = DEPRECATED,
        repeats: object = DEPRECATED,
    ) -> None:
        self.n_splits = check_positive_int("n_splits", n_splits, minimum=2)
        self.random_state = renamed("seed", seed, "random_state", random_state, 1)
        self.n_repeats = check_positive_int(
            "n_repeats", renamed("repeats", repeats, "n_repeats", n_repeats, 1)
        )
        if not isinstance(shuffle, (bool, np.bool_)):
            raise TypeError(f"shuffle must be True or False, got {shuffle!r}")
        if not shuffle and self.n_repeats > 1:
            raise ValueError(
                f"n_repeats={self.n_repeats} with shuffle=False repeats the same folds"
            )
        self.shuffle = bool(shuffle)

    def _test_folds(self, y: npt.NDArray[Any]) -> list[list[int]]:
        """The test bags of every fold, repetition after repetition."""
        _, indices = check_labels(y, len(y))
        if len(indices) < self.n_splits:
            raise ValueError(
                f"n_splits={self.n_splits} is more than the number of bags ({len(indices)})"
            )
        if self.shuffle:
            seed = seed_from_random_state(self.random_state)
            return [
                fold
                for folds in _native.stratified_folds(indices, self.n_splits, seed, self.n_repeats)
                for fold in folds
            ]
        # The library's dealing without its shuffle: class after class, round-robin.
        order = np.argsort(np.asarray(indices), kind="stable")
        return [sorted(order[k :: self.n_splits].tolist()) for k in range(self.n_splits)]

    def split(
        self, X: Any, y: Optional[npt.ArrayLike], groups: Any = None
    ) -> Iterator[tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]]:
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
        if y is None:
            raise ValueError("y is required: the folds are stratified by bag label")
        y = np.asarray(y)
        if len(X) != len(y):
            raise ValueError(f"{len(X)} bags but {len(y)} labels")
        n = len(y)
        everything = np.arange(n)
        for fold in self._test_folds(y):
            test = np.asarray(fold, dtype=np.intp)
            mask = np.ones(n, dtype=bool)
            mask[test] = False
            yield everything[mask], test

    def get_n_splits(self, X: Any = None, y: Any = None, groups: Any = None) -> int:
        """Number of (train, test) pairs: ``n_splits * n_repeats``.

        Returns
        -------
        int
        """
        return self.n_splits * self.n_repeats

    def __repr__(self) -> str:
        return (
            f"StratifiedBagKFold(n_splits={self.n_splits}, random_state={self.random_state!r}, "
            f"n_repeats={self.n_repeats}, shuffle={self.shuffle})"
        )


def stratified_bag_folds(
    y: npt.ArrayLike,
    n_splits: int = 10,
    random_state: RandomState = 1,
    n_repeats: int = 1,
    *,
    seed: object = DEPRECATED,
    repeats: object = DEPRECATED,
) -> list[tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]]:
    """The stratified folds ``mil cv --folds n_splits --seed random_state`` uses.

    Parameters
    ----------
    y : array-like of shape (n_bags,)
        Bag labels.
    n_splits : int, default=10
        Folds per repetition (the number of bags is leave-one-out).
    random_state : int, RandomState, Generator or None, default=1
        The ``--seed`` of ``mil cv``, as :class:`StratifiedBagKFold` reads it.
    n_repeats : int, default=1
        Repetitions (``--repeats``), each with a seed derived from ``random_state``.
    seed, repeats : int
        Deprecated names of ``random_state`` and ``n_repeats`` (``FutureWarning``).

    Returns
    -------
    list of (ndarray, ndarray)
        (train indices, test indices) of every fold, repetition after repetition: pass
        it as ``cv=`` to ``cross_val_score`` or ``GridSearchCV``.
    """
    random_state = renamed("seed", seed, "random_state", random_state, 1)
    n_repeats = renamed("repeats", repeats, "n_repeats", n_repeats, 1)
    y = np.asarray(y)
    cv = StratifiedBagKFold(n_splits, random_state, n_repeats)
    return list(cv.split(y, y))


def clustering_accuracy(y_true: npt.ArrayLike, y_pred: npt.ArrayLike) -> float:
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


def _given_folds(splits: Iterable[tuple[Any, Any]], n_bags: int) -> list[list[int]]:
    """The test folds of (train, test) pairs that give every bag one test fold."""
    tests = [np.asarray(test, dtype=np.intp) for _, test in splits]
    seen = np.zeros(n_bags, dtype=np.intp)
    for test in tests:
        np.add.at(seen, test, 1)
    if not tests or (seen != 1).any():
        raise ValueError(
            "cv does not put every bag in exactly one test fold: the library's "
            "cross-validation needs a partition (use a StratifiedBagKFold for repetitions)"
        )
    return [sorted(test.tolist()) for test in tests]


def cross_validate_native(
    estimator: Any,
    bags: BagsLike,
    y: npt.ArrayLike,
    *,
    cv: Any = 10,
    n_jobs: Optional[int] = None,
    random_state: RandomState = 1,
    return_estimator: bool = False,
) -> dict[str, Any]:
    """Cross-validate with the library's own loop (what ``mil cv`` runs), in Rust.

    Returns what ``sklearn.model_selection.cross_validate`` returns with the default
    (accuracy) scoring, plus the library's pooled measures. The folds run in parallel on
    ``n_jobs`` threads. It fits what scikit-learn's loop fits, fold by fold, with two
    exceptions the library makes for speed, as ``mil cv`` does: Citation-kNN with
    ``scaling="none"`` computes the bag distances once, and a set-kernel SVM computes
    one Gram matrix over all bags (its grid or z-score fitted on every bag, no labels
    involved) shared by the folds.

    Parameters
    ----------
    estimator : miltk classifier or sklearn Pipeline
        A miltk classifier, or a ``Pipeline`` of one miltk projection and one miltk
        classifier (their parameters are read through ``_native_spec``; nothing is fitted
        on the object).
    bags : sequence of ndarray
        One (instances x features) array per bag.
    y : array-like of shape (n_bags,)
        Bag labels.
    cv : int, StratifiedBagKFold, splitter or iterable of (train, test), default=10
        An int is ``StratifiedBagKFold(cv, random_state)``, the folds of ``mil cv
        --folds cv --seed random_state``. A :class:`StratifiedBagKFold` with
        ``shuffle=True`` runs as ``mil cv`` with its ``n_splits``, ``n_repeats`` and
        ``random_state``. Any other splitter, or (train, test) pairs, must put every bag in
        exactly one test fold; the randomised steps then use seed 0, as ``mil cv
        --folds-file`` does.
    n_jobs : int or None, default=None
        Threads: None uses :func:`miltk.set_num_threads`'s count (all cores unless set),
        -1 all cores, k > 0 k threads. Results do not depend on it.
    random_state : int, RandomState, Generator or None, default=1
        The seed of the folds and of the randomised steps when ``cv`` is an int (the
        ``--seed`` of ``mil cv``); a splitter brings its own.
    return_estimator : bool, default=False
        Also return the estimator fitted on each fold's training bags (by its own
        ``fit``, as ``cross_validate`` fits it).

    Returns
    -------
    dict
        ``test_score`` (accuracy of every fold, repetition after repetition),
        ``fit_time`` and ``score_time`` (the library fits and scores all folds in one
        parallel run: ``fit_time`` is that run's wall time shared evenly among the
        folds, ``score_time`` zeros), ``estimator`` (when ``return_estimator``), and
        the library's measures: ``accuracy`` (pooled over all folds),
        ``balanced_accuracy`` (of the pooled confusion matrix), ``auroc`` (two classes;
        None otherwise), ``predictions`` (out-of-fold label of every bag, first
        repetition), ``per_fold`` (equal to ``test_score``) and ``chosen`` (per fold,
        the classifier and settings :class:`miltk.AutoMIL`'s inner CV chose; None for
        other estimators).
    """
    projection, classifier = pipeline_parts(estimator, "cross_validate_native's estimator")
    if not hasattr(classifier, "_native_spec"):
        raise TypeError(f"{type(classifier).__name__} is not a miltk classifier")
    if projection is not None and not hasattr(projection, "_native_spec"):
        raise TypeError(f"{type(projection).__name__} is not a miltk projection")
    native, classes = native_labelled_bags(bags, y)
    labels = np.asarray(y)
    if isinstance(cv, (int, np.integer)) and not isinstance(cv, bool):
        cv = StratifiedBagKFold(int(cv), random_state)
    k, seed, repeats, given = 10, 1, 1, None
    if isinstance(cv, StratifiedBagKFold) and cv.shuffle:
        k, repeats = cv.n_splits, cv.n_repeats
        seed = seed_from_random_state(cv.random_state)
    elif hasattr(cv, "split"):
        given = _given_folds(cv.split(bags, labels), len(labels))
    elif isinstance(cv, Iterable):
        given = _given_folds(cv, len(labels))  # (train, test) pairs, as scikit-learn takes
    else:
        raise TypeError(
            f"cv must be an int, a splitter or (train, test) pairs, not {type(cv).__name__}"
        )
    spec = classifier._native_spec(classes)
    projection_spec = None if projection is None else projection._native_spec()
    threads = n_threads(n_jobs)
    start = time.perf_counter()
    accuracy, predicted, fold_scores, balanced, auroc, chosen = _native.cross_validate(
        native, spec, projection_spec, k, seed, repeats, threads, given
    )
    elapsed = time.perf_counter() - start
    per_fold = np.asarray(fold_scores)
    out: dict[str, Any] = {
        "fit_time": np.full(len(per_fold), elapsed / len(per_fold)),
        "score_time": np.zeros(len(per_fold)),
        "test_score": per_fold,
    }
    if return_estimator:
        everything = np.arange(len(labels))
        folds = (
            list(StratifiedBagKFold(k, seed, repeats).split(labels, labels))
            if given is None
            else [(np.setdiff1d(everything, np.asarray(t)), np.asarray(t)) for t in given]
        )
        out["estimator"] = [
            clone(estimator).fit([bags[i] for i in train], labels[train]) for train, _ in folds
        ]
    out.update(
        accuracy=accuracy,
        balanced_accuracy=balanced,
        auroc=auroc,
        predictions=classes[np.asarray(predicted, dtype=np.intp)],
        per_fold=per_fold.copy(),
        chosen=chosen,
    )
    return out


def library_cross_validate(
    estimator: Any,
    bags: BagsLike,
    y: npt.ArrayLike,
    n_splits: int = 10,
    seed: RandomState = 1,
    repeats: int = 1,
) -> dict[str, Any]:
    """Deprecated: use :func:`cross_validate_native` (``cv=StratifiedBagKFold(n_splits,
    seed, repeats)``), which returns these keys and scikit-learn's.

    Returns
    -------
    dict
        As :func:`cross_validate_native`; ``accuracy``, ``predictions`` and
        ``per_fold`` as before.
    """
    warnings.warn(
        "library_cross_validate is deprecated and will be removed in the next release: "
        "use cross_validate_native",
        FutureWarning,
        stacklevel=2,
    )
    cv = StratifiedBagKFold(n_splits, seed, repeats)
    return cross_validate_native(estimator, bags, y, cv=cv)
