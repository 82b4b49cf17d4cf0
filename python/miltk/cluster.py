"""Bag clustering with the scikit-learn interface: M3IC and BAMIC."""

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin

from . import _native
from ._bags import check_positive_int, native_bags
from ._base import NativeStateMixin, fitted

__all__ = ["M3IC", "BAMIC"]


class _BagClustering(NativeStateMixin, ClusterMixin, BaseEstimator):
    def _run(self, bags):
        raise NotImplementedError

    def fit(self, X, y=None):
        """Cluster the bags.

        Parameters
        ----------
        X : sequence of ndarray
            One (instances x features) array per bag.
        y : ignored

        Returns
        -------
        self
        """
        bags, _ = native_bags(X, what="X")
        model, assignments, objective = self._run(bags)
        self.model_ = model
        self.labels_ = np.asarray(assignments, dtype=np.intp)
        self.objective_ = objective
        self.n_features_in_ = bags.dim
        return self

    def predict(self, X):
        """Assign bags to the fitted clusters.

        Parameters
        ----------
        X : sequence of ndarray
            One (instances x features) array per bag.

        Returns
        -------
        ndarray of shape (n_bags,)
            Cluster index of every bag.
        """
        fitted(self)
        bags, _ = native_bags(X, n_features=self.n_features_in_, what="X")
        return np.asarray(self.model_.assign(bags), dtype=np.intp)

    def export(self, format="f32"):
        """The compact model the ``no_std`` core runs (M3IC only; see :mod:`miltk.deploy`).

        Parameters
        ----------
        format : {"f32", "q15", "q7"}
            Scalar encoding; Q15/Q7 quantise inputs with the ranges of the clustered bags.

        Returns
        -------
        bytes
            The model; :class:`miltk.CoreModel` ``predict`` gives the core's cluster of
            every bag.
        """
        fitted(self)
        return self.model_.export(format)


class M3IC(_BagClustering):
    """Maximum-margin multiple-instance clustering (M3IC-MBM, Zhang et al. 2009).

    Parameters
    ----------
    n_clusters : int, default=2
        k, the number of clusters (at least 2).
    C : float or None, default=None
        Regularisation constant; None keeps the library's default (that of
        ``mil cluster``).
    balance : float or None, default=None
        Cluster balance l of the paper's constraint (4); None keeps the library's default.
    restarts : int, default=5
        Random starts; the lowest objective wins.
    seed : int, default=1
        Seed of the starts (start r uses a seed derived from it).
    balance_mode : {"sizes", "paper"} or None, default=None
        ``"sizes"`` (the library's default): constraint (4) and cluster sizes bounded to
        ``[min_size, max_size] * n / k`` on the bags' labels; ``"paper"``: the paper's
        constraint (4) alone, with the paper's defaults.
    min_size : float or None, default=None
        With ``"sizes"``: every cluster labels at least ``min_size * n / k`` bags, in
        [0, 1]; None keeps the library's default (0.5).
    max_size : float or None, default=None
        With ``"sizes"``: every cluster labels at most ``max_size * n / k`` bags, at
        least 1 (``float("inf")``: no upper bound); None keeps the library's default
        (1.25).

    Attributes
    ----------
    labels_ : ndarray of shape (n_bags,)
        Cluster of every training bag.
    objective_ : float
        Objective J of the best start.
    model_ : object
        The native fitted clustering.
    """

    def __init__(
        self, n_clusters=2, C=None, balance=None, restarts=5, seed=1, balance_mode=None,
        min_size=None, max_size=None,
    ):
        self.n_clusters = n_clusters
        self.C = C
        self.balance = balance
        self.restarts = restarts
        self.seed = seed
        self.balance_mode = balance_mode
        self.min_size = min_size
        self.max_size = max_size

    def _run(self, bags):
        return _native.m3ic_fit(
            bags,
            check_positive_int("n_clusters", self.n_clusters, minimum=2),
            None if self.C is None else float(self.C),
            None if self.balance is None else float(self.balance),
            check_positive_int("restarts", self.restarts),
            check_positive_int("seed", self.seed, minimum=0),
            balance_mode=self.balance_mode,
            min_size=None if self.min_size is None else float(self.min_size),
            max_size=None if self.max_size is None else float(self.max_size),
        )


class BAMIC(_BagClustering):
    """BAMIC: k-medoids over a Hausdorff bag distance (Zhang & Zhou 2009).

    Parameters
    ----------
    n_clusters : int, default=2
        k, the number of clusters.
    distance : {"min", "max", "avg"}, default="avg"
        Minimal, maximal or average Hausdorff distance.
    restarts : int, default=5
        Random starts; the lowest cost wins.
    seed : int, default=1
        Seed of the starts.

    Attributes
    ----------
    labels_ : ndarray of shape (n_bags,)
        Cluster of every training bag.
    objective_ : float
        Sum of distances to the medoids.
    model_ : object
        The native fitted clustering.
    """

    def __init__(self, n_clusters=2, distance="avg", restarts=5, seed=1):
        self.n_clusters = n_clusters
        self.distance = distance
        self.restarts = restarts
        self.seed = seed

    def _run(self, bags):
        return _native.bamic_fit(
            bags,
            check_positive_int("n_clusters", self.n_clusters, minimum=2),
            self.distance,
            check_positive_int("restarts", self.restarts),
            check_positive_int("seed", self.seed, minimum=0),
        )
