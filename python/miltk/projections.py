"""Linear projections of instances fitted on labelled bags, as scikit-learn
transformers: ``transform`` maps a list of bags to a list of projected bags
(:class:`miltk.ProjectedBags`), so a projection and a bag classifier chain in a
``sklearn.pipeline.Pipeline``."""

from sklearn.base import BaseEstimator, TransformerMixin

from . import _native
from ._bags import ProjectedBags, check_bags, check_positive_int, native_bags, split_rows
from ._base import NativeStateMixin, fitted

__all__ = ["PCA", "LDA", "LFDA", "CLFDA", "BMIDA", "MMIDA", "MIALM", "MIDR"]


class _Projection(NativeStateMixin, TransformerMixin, BaseEstimator):
    """y = G^T (x - mu) / sigma, fitted by one of the library's algorithms.

    Fitted attributes: ``model_`` (native), ``components_`` (G, features x
    n_components), ``mean_``, ``scale_``, ``n_features_in_``, ``classes_`` (when fitted
    with labels).
    """

    _kind = None
    _has_alpha = False

    def _spec(self):
        alpha = getattr(self, "alpha", None) if self._has_alpha else None
        return _native.ProjectionSpec(
            self._kind,
            check_positive_int("n_components", self.n_components),
            None if alpha is None else float(alpha),
            check_positive_int("seed", getattr(self, "seed", 1), minimum=0),
        )

    def fit(self, X, y=None):
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
        spec = self._spec()
        if y is None and self._kind != "pca":
            raise ValueError(f"{type(self).__name__} needs bag labels y")
        bags, classes = native_bags(X, y, what="X")
        self.model_ = spec.fit(bags)
        self.classes_ = classes
        self.n_features_in_ = bags.dim
        return self

    def transform(self, X):
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
        return split_rows(projected, starts, cls=ProjectedBags, projection=self._kind)

    @property
    def components_(self):
        """G, of shape (n_features_in_, n_components)."""
        fitted(self)
        return self.model_.components

    @property
    def mean_(self):
        """The per-feature mean subtracted before G."""
        fitted(self)
        return self.model_.mean

    @property
    def scale_(self):
        """The per-feature scale divided by before G (0: feature ignored)."""
        fitted(self)
        return self.model_.scale

    @property
    def diagnostics_(self):
        """Algorithm-specific measures, as a dict (e.g. MI-ALM's sparsity)."""
        fitted(self)
        return dict(self.model_.diagnostics)


class PCA(_Projection):
    """Principal component analysis of the instances (labels unused).

    Parameters
    ----------
    n_components : int, default=10
        Output dimension d (1 to the number of features).

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

    def __init__(self, n_components=10):
        self.n_components = n_components


class LDA(_Projection):
    """Fisher LDA with each instance labelled by its bag.

    Parameters
    ----------
    n_components : int, default=10
        Output dimension d (1 to the number of features).

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

    def __init__(self, n_components=10):
        self.n_components = n_components


class LFDA(_Projection):
    """Local Fisher discriminant analysis (Sugiyama 2007) on bag-labelled instances.

    Parameters
    ----------
    n_components : int, default=10
        Output dimension d (1 to the number of features).

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

    def __init__(self, n_components=10):
        self.n_components = n_components


class CLFDA(_Projection):
    """Citation-kNN-relabelled LFDA (Kim & Choi 2010).

    Parameters
    ----------
    n_components : int, default=10
        Output dimension d (1 to the number of features).

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

    def __init__(self, n_components=10):
        self.n_components = n_components


class BMIDA(_Projection):
    """Binary multiple-instance discriminant analysis (Chai et al. 2014).

    Parameters
    ----------
    n_components : int, default=10
        Output dimension d (1 to the number of features).
    alpha : float or None, default=None
        The trade-off alpha; None keeps the paper's value.

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

    def __init__(self, n_components=10, alpha=None):
        self.n_components = n_components
        self.alpha = alpha


class MMIDA(_Projection):
    """Multi-class multiple-instance discriminant analysis (Chai et al. 2014).

    Parameters
    ----------
    n_components : int, default=10
        Output dimension d (1 to the number of features).
    alpha : float or None, default=None
        The trade-off alpha; None keeps the paper's value.

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

    def __init__(self, n_components=10, alpha=None):
        self.n_components = n_components
        self.alpha = alpha


class MIALM(_Projection):
    """Sparse, orthogonal projection by approximate augmented Lagrangian (Zhu et al. 2018).

    Parameters
    ----------
    n_components : int, default=10
        Output dimension d (1 to the number of features).
    alpha : float or None, default=None
        The trade-off alpha; None keeps the paper's value.
    seed : int, default=1
        Seed of the random start.

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

    def __init__(self, n_components=10, alpha=None, seed=1):
        self.n_components = n_components
        self.alpha = alpha
        self.seed = seed


class MIDR(_Projection):
    """Multi-instance dimensionality reduction (Sun et al. 2010).

    Parameters
    ----------
    n_components : int, default=10
        Output dimension d (1 to the number of features).
    alpha : float or None, default=None
        The trade-off c1; None keeps the paper's value.
    seed : int, default=1
        Seed of the random start.

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

    def __init__(self, n_components=10, alpha=None, seed=1):
        self.n_components = n_components
        self.alpha = alpha
        self.seed = seed
