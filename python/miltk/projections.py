"""Linear projections of instances fitted on labelled bags, as scikit-learn
transformers: ``transform`` maps a list of bags to a list of projected bags
(:class:`miltk.ProjectedBags`), so a projection and a bag classifier chain in a
``sklearn.pipeline.Pipeline``."""

from __future__ import annotations

from typing import Any, Optional, TypeVar

import numpy as np
import numpy.typing as npt
from sklearn.base import BaseEstimator, TransformerMixin

from . import _native
from ._bags import BagsLike, ProjectedBags, check_bags, check_positive_int, native_bags, split_rows
from ._base import DEPRECATED, NativeStateMixin, RandomState, estimator_seed, fitted, n_threads

__all__ = ["PCA", "LDA", "LFDA", "CLFDA", "BMIDA", "MMIDA", "MIALM", "MIDR"]

_Self = TypeVar("_Self", bound="_Projection")


class _Projection(NativeStateMixin, TransformerMixin, BaseEstimator):
    """y = G^T (x - mu) / sigma, fitted by one of the library's algorithms.

    Fitted attributes: ``model_`` (native), ``components_`` (G, features x
    n_components), ``mean_``, ``scale_``, ``n_features_in_``, ``classes_`` (when fitted
    with labels).

    ``_native_spec()`` is the protocol through which :func:`miltk.cross_validate_native`
    reads a projection's parameters without fitting it (the native ``ProjectionSpec``).
    """

    _kind = ""
    _has_alpha = False
    n_components: int
    n_jobs: Optional[int]
    model_: _native.FittedProjection
    classes_: Optional[npt.NDArray[Any]]
    n_features_in_: int

    def _native_spec(self) -> _native.ProjectionSpec:
        alpha = getattr(self, "alpha", None) if self._has_alpha else None
        # The projections without a random start take the library's default seed.
        seed = estimator_seed(self) if hasattr(self, "random_state") else 1
        return _native.ProjectionSpec(
            self._kind,
            check_positive_int("n_components", self.n_components),
            None if alpha is None else float(alpha),
            seed,
        )

    def fit(self: _Self, X: BagsLike, y: Optional[npt.ArrayLike] = None) -> _Self:
        """Fit the projection on labelled bags (PCA ignores the labels).

        Parameters
        ----------
        X : sequence of ndarray
            One (instances x features) array per bag.
        y : array-like of shape (n_bags,)
            Bag labels (required except for PCA).

        Returns
        -------
        self
        """
        spec = self._native_spec()
        if y is None and self._kind != "pca":
            raise ValueError(f"{type(self).__name__} needs bag labels y")
        bags, classes = native_bags(X, y, what="X")
        self.model_ = spec.fit(bags, n_threads(self.n_jobs))
        self.classes_ = classes
        self.n_features_in_ = bags.dim
        return self

    def transform(self, X: BagsLike) -> ProjectedBags:
        """Project every instance of every bag.

        Parameters
        ----------
        X : sequence of ndarray
            One (instances x features) array per bag.

        Returns
        -------
        ProjectedBags
            A list of (instances x n_components) float64 arrays, one per bag, marked as
            projected for :class:`miltk.CitationKNN`'s ``scaling="auto"``.
        """
        fitted(self)
        x, starts = check_bags(X, n_features=self.n_features_in_, what="X")
        projected = self.model_.transform(x)
        return ProjectedBags(split_rows(projected, starts), projection=self._kind)

    @property
    def components_(self) -> npt.NDArray[np.float64]:
        """G, of shape (n_features_in_, n_components)."""
        fitted(self)
        return self.model_.components

    @property
    def mean_(self) -> list[float]:
        """The per-feature mean subtracted before G."""
        fitted(self)
        return self.model_.mean

    @property
    def scale_(self) -> list[float]:
        """The per-feature scale divided by before G (0: feature ignored)."""
        fitted(self)
        return self.model_.scale

    @property
    def diagnostics_(self) -> dict[str, float]:
        """Algorithm-specific measures, as a dict (e.g. MI-ALM's sparsity)."""
        fitted(self)
        return dict(self.model_.diagnostics)


class PCA(_Projection):
    """Principal component analysis of the instances (labels unused).

    Parameters
    ----------
    n_components : int, default=10
        Output dimension d (1 to the number of features).
    n_jobs : int or None, default=None
        Threads of ``fit``: None uses :func:`miltk.set_num_threads`'s count (all cores
        unless set), -1 all cores, k > 0 k threads. Results do not depend on it.

    Attributes
    ----------
    model_ : object
        The native fitted projection.
    components_ : ndarray of shape (n_features_in_, n_components)
        G in y = G^T (x - mean_) / scale_.
    n_features_in_ : int
        Features per instance.
    """

    _kind = "pca"

    def __init__(self, n_components: int = 10, n_jobs: Optional[int] = None) -> None:
        self.n_components = n_components
        self.n_jobs = n_jobs


class LDA(_Projection):
    """Fisher LDA with each instance labelled by its bag.

    Parameters
    ----------
    n_components : int, default=10
        Output dimension d (1 to the number of features).
    n_jobs : int or None, default=None
        Threads of ``fit``: None uses :func:`miltk.set_num_threads`'s count (all cores
        unless set), -1 all cores, k > 0 k threads. Results do not depend on it.

    Attributes
    ----------
    model_ : object
        The native fitted projection.
    components_ : ndarray of shape (n_features_in_, n_components)
        G in y = G^T (x - mean_) / scale_.
    n_features_in_ : int
        Features per instance.
    """

    _kind = "lda"

    def __init__(self, n_components: int = 10, n_jobs: Optional[int] = None) -> None:
        self.n_components = n_components
        self.n_jobs = n_jobs


class LFDA(_Projection):
    """Local Fisher discriminant analysis (Sugiyama 2007) on bag-labelled instances.

    Parameters
    ----------
    n_components : int, default=10
        Output dimension d (1 to the number of features).
    n_jobs : int or None, default=None
        Threads of ``fit``: None uses :func:`miltk.set_num_threads`'s count (all cores
        unless set), -1 all cores, k > 0 k threads. Results do not depend on it.

    Attributes
    ----------
    model_ : object
        The native fitted projection.
    components_ : ndarray of shape (n_features_in_, n_components)
        G in y = G^T (x - mean_) / scale_.
    n_features_in_ : int
        Features per instance.
    """

    _kind = "lfda"

    def __init__(self, n_components: int = 10, n_jobs: Optional[int] = None) -> None:
        self.n_components = n_components
        self.n_jobs = n_jobs


class CLFDA(_Projection):
    """Citation-kNN-relabelled LFDA (Kim & Choi 2010).

    Parameters
    ----------
    n_components : int, default=10
        Output dimension d (1 to the number of features).
    n_jobs : int or None, default=None
        Threads of ``fit``: None uses :func:`miltk.set_num_threads`'s count (all cores
        unless set), -1 all cores, k > 0 k threads. Results do not depend on it.

    Attributes
    ----------
    model_ : object
        The native fitted projection.
    components_ : ndarray of shape (n_features_in_, n_components)
        G in y = G^T (x - mean_) / scale_.
    n_features_in_ : int
        Features per instance.
    """

    _kind = "clfda"

    def __init__(self, n_components: int = 10, n_jobs: Optional[int] = None) -> None:
        self.n_components = n_components
        self.n_jobs = n_jobs


class BMIDA(_Projection):
    """Binary multiple-instance discriminant analysis (Chai et al. 2014).

    Parameters
    ----------
    n_components : int, default=10
        Output dimension d (1 to the number of features).
    alpha : float or None, default=None
        The trade-off alpha; None keeps the paper's value.
    n_jobs : int or None, default=None
        Threads of ``fit``, as :class:`PCA`'s.

    Attributes
    ----------
    model_ : object
        The native fitted projection.
    components_ : ndarray of shape (n_features_in_, n_components)
        G in y = G^T (x - mean_) / scale_.
    n_features_in_ : int
        Features per instance.
    """

    _kind = "bmida"
    _has_alpha = True

    def __init__(
        self, n_components: int = 10, alpha: Optional[float] = None, n_jobs: Optional[int] = None
    ) -> None:
        self.n_components = n_components
        self.alpha = alpha
        self.n_jobs = n_jobs


class MMIDA(_Projection):
    """Multi-class multiple-instance discriminant analysis (Chai et al. 2014).

    Parameters
    ----------
    n_components : int, default=10
        Output dimension d (1 to the number of features).
    alpha : float or None, default=None
        The trade-off alpha; None keeps the paper's value.
    n_jobs : int or None, default=None
        Threads of ``fit``, as :class:`PCA`'s.

    Attributes
    ----------
    model_ : object
        The native fitted projection.
    components_ : ndarray of shape (n_features_in_, n_components)
        G in y = G^T (x - mean_) / scale_.
    n_features_in_ : int
        Features per instance.
    """

    _kind = "mmida"
    _has_alpha = True

    def __init__(
        self, n_components: int = 10, alpha: Optional[float] = None, n_jobs: Optional[int] = None
    ) -> None:
        self.n_components = n_components
        self.alpha = alpha
        self.n_jobs = n_jobs


class MIALM(_Projection):
    """Sparse, orthogonal projection by approximate augmented Lagrangian (Zhu et al. 2018).

    Parameters
    ----------
    n_components : int, default=10
        Output dimension d (1 to the number of features).
    alpha : float or None, default=None
        The trade-off alpha; None keeps the paper's value.
    random_state : int, RandomState, Generator or None, default=1
        Seed of the random start: an int gives the same projection on every fit; None
        draws a seed from ``numpy.random`` at each fit; a ``RandomState``/``Generator``
        gives one draw of its own per fit.
    n_jobs : int or None, default=None
        Threads of ``fit``, as :class:`PCA`'s.
    seed : int
        Deprecated name of ``random_state`` (``FutureWarning``).

    Attributes
    ----------
    model_ : object
        The native fitted projection.
    components_ : ndarray of shape (n_features_in_, n_components)
        G in y = G^T (x - mean_) / scale_.
    n_features_in_ : int
        Features per instance.
    """

    _kind = "mi-alm"
    _has_alpha = True

    def __init__(
        self,
        n_components: int = 10,
        alpha: Optional[float] = None,
        random_state: RandomState = 1,
        n_jobs: Optional[int] = None,
        *,
        seed: object = DEPRECATED,
    ) -> None:
        self.n_components = n_components
        self.alpha = alpha
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.seed = seed


class MIDR(_Projection):
    """Multi-instance dimensionality reduction (Sun et al. 2010).

    Parameters
    ----------
    n_components : int, default=10
        Output dimension d (1 to the number of features).
    alpha : float or None, default=None
        The trade-off c1; None keeps the paper's value.
    random_state : int, RandomState, Generator or None, default=1
        Seed of the random start: an int gives the same projection on every fit; None
        draws a seed from ``numpy.random`` at each fit; a ``RandomState``/``Generator``
        gives one draw of its own per fit.
    n_jobs : int or None, default=None
        Threads of ``fit``, as :class:`PCA`'s.
    seed : int
        Deprecated name of ``random_state`` (``FutureWarning``).

    Attributes
    ----------
    model_ : object
        The native fitted projection.
    components_ : ndarray of shape (n_features_in_, n_components)
        G in y = G^T (x - mean_) / scale_.
    n_features_in_ : int
        Features per instance.
    """

    _kind = "midr"
    _has_alpha = True

    def __init__(
        self,
        n_components: int = 10,
        alpha: Optional[float] = None,
        random_state: RandomState = 1,
        n_jobs: Optional[int] = None,
        *,
        seed: object = DEPRECATED,
    ) -> None:
        self.n_components = n_components
        self.alpha = alpha
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.seed = seed
