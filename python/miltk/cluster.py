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
    C : float, default=4.0
        Regularisation constant.
    balance : float, default=0.01
        Cluster balance l.
    restarts : int, default=5
        Random starts; the lowest objective wins.
    seed : int, default=1
        Seed of the starts (start r uses a seed derived from it).

    Attributes
    ----------
    labels_ : ndarray of shape (n_bags,)
        Cluster of every training bag.
    objective_ : float
        Objective J of the best start.
    model_ : object
        The native fitted clustering.
    """

    def __init__(self, n_clusters=2, C=4.0, balance=0.01, restarts=5, seed=1):
        self.n_clusters = n_clusters
        self.C = C
        self.balance = balance
        self.restarts = restarts
        self.seed = seed

    def _run(self, bags):
        return _native.m3ic_fit(
            bags,
            check_positive_int("n_clusters", self.n_clusters, minimum=2),
            float(self.C),
            float(self.balance),
            check_positive_int("restarts", self.restarts),
            check_positive_int("seed", self.seed, minimum=0),
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
