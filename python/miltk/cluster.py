"""Bag clustering with the scikit-learn interface: M3IC and BAMIC."""

from __future__ import annotations

import warnings
from typing import Any, Optional, TypeVar

import numpy as np
import numpy.typing as npt
from sklearn.base import BaseEstimator, ClusterMixin

from . import _native
from ._bags import BagsLike, check_positive_int, native_bags
from ._base import DEPRECATED, NativeStateMixin, RandomState, estimator_seed, fitted, n_threads

__all__ = ["M3IC", "BAMIC"]

_Self = TypeVar("_Self", bound="_BagClustering")
_Fit = tuple[_native.FittedCluster, list[int], float]


class _BagClustering(NativeStateMixin, ClusterMixin, BaseEstimator):
    n_jobs: Optional[int]
    model_: _native.FittedCluster
    labels_: npt.NDArray[np.intp]
    objective_: float
    n_features_in_: int

    def _run(self, bags: _native.Bags) -> _Fit:
        raise NotImplementedError

    def fit(self: _Self, X: BagsLike, y: Any = None) -> _Self:
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

    def predict(self, X: BagsLike) -> npt.NDArray[np.intp]:
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
        return np.asarray(self.model_.assign(bags, n_threads(self.n_jobs)), dtype=np.intp)

    def export(self, format: str = "f32") -> bytes:
        """Deprecated: use :func:`miltk.deploy.export` (``miltk.export(clustering, format)``).

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
        from .deploy import export

        warnings.warn(
            "the export method is deprecated and will be removed in the next release: "
            "use miltk.export(estimator, format)",
            FutureWarning,
            stacklevel=2,
        )
        return export(self, format)


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
    random_state : int, RandomState, Generator or None, default=1
        Seed of the starts (start r uses a seed derived from it): an int (the ``--seed``
        of ``mil cluster``) gives the same clustering on every fit; None draws a seed
        from ``numpy.random`` at each fit; a ``RandomState``/``Generator`` gives one draw
        of its own per fit.
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
    n_jobs : int or None, default=None
        Threads of ``fit`` and ``predict``: None uses :func:`miltk.set_num_threads`'s
        count (all cores unless set), -1 all cores, k > 0 k threads. Results do not
        depend on it.
    seed : int
        Deprecated name of ``random_state`` (``FutureWarning``).

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
        self,
        n_clusters: int = 2,
        C: Optional[float] = None,
        balance: Optional[float] = None,
        restarts: int = 5,
        random_state: RandomState = 1,
        balance_mode: Optional[str] = None,
        min_size: Optional[float] = None,
        max_size: Optional[float] = None,
        n_jobs: Optional[int] = None,
        *,
        seed: object = DEPRECATED,
    ) -> None:
        self.n_clusters = n_clusters
        self.C = C
        self.balance = balance
        self.restarts = restarts
        self.random_state = random_state
        self.balance_mode = balance_mode
        self.min_size = min_size
        self.max_size = max_size
        self.n_jobs = n_jobs
        self.seed = seed

    def _run(self, bags: _native.Bags) -> _Fit:
        return _native.m3ic_fit(
            bags,
            check_positive_int("n_clusters", self.n_clusters, minimum=2),
            None if self.C is None else float(self.C),
            None if self.balance is None else float(self.balance),
            check_positive_int("restarts", self.restarts),
            estimator_seed(self),
            balance_mode=self.balance_mode,
            min_size=None if self.min_size is None else float(self.min_size),
            max_size=None if self.max_size is None else float(self.max_size),
            n_threads=n_threads(self.n_jobs),
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
    random_state : int, RandomState, Generator or None, default=1
        Seed of the starts, as :class:`M3IC`'s.
    n_jobs : int or None, default=None
        Threads of ``fit`` and ``predict``, as :class:`M3IC`'s.
    seed : int
        Deprecated name of ``random_state`` (``FutureWarning``).

    Attributes
    ----------
    labels_ : ndarray of shape (n_bags,)
        Cluster of every training bag.
    objective_ : float
        Sum of distances to the medoids.
    model_ : object
        The native fitted clustering.
    """

    def __init__(
        self,
        n_clusters: int = 2,
        distance: str = "avg",
        restarts: int = 5,
        random_state: RandomState = 1,
        n_jobs: Optional[int] = None,
        *,
        seed: object = DEPRECATED,
    ) -> None:
        self.n_clusters = n_clusters
        self.distance = distance
        self.restarts = restarts
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.seed = seed

    def _run(self, bags: _native.Bags) -> _Fit:
        return _native.bamic_fit(
            bags,
            check_positive_int("n_clusters", self.n_clusters, minimum=2),
            self.distance,
            check_positive_int("restarts", self.restarts),
            estimator_seed(self),
            n_threads(self.n_jobs),
        )
