"""Bag classifiers with the scikit-learn interface: Citation-kNN, MILR, the set-kernel
SVM, SimpleMI, MI-Wrapper, mi-SVM, MI-SVM, miVLAD and miFV, sMIL and sbMIL, DD and
EM-DD, MILES (with its embedding as a transformer, MILESEmbedding), mi-Graph
(MIGraph), attention-based deep MIL (AttentionMIL), and AutoMIL, which chooses among
them by inner cross-validation. Each wraps
the library's parameters type; ``fit`` runs the library's fit with the GIL released."""

from __future__ import annotations

import warnings
from typing import Any, Mapping, Optional, Sequence, TypeVar, Union

import numpy as np
import numpy.typing as npt
from sklearn.base import BaseEstimator, ClassifierMixin, TransformerMixin
from sklearn.metrics import accuracy_score

from . import _native
from ._bags import (
    BagsLike,
    ProjectedBags,
    check_positive_int,
    native_bags,
    native_labelled_bags,
)
from ._base import (
    DEPRECATED,
    NativeStateMixin,
    RandomState,
    estimator_seed,
    fitted,
    n_threads,
    renamed,
)

__all__ = [
    "AutoMIL",
    "CitationKNN",
    "MILR",
    "SetKernelSVM",
    "SimpleMI",
    "MIWrapper",
    "MiSVM",
    "MISVM",
    "SMIL",
    "SBMIL",
    "DiverseDensity",
    "EMDD",
    "MILES",
    "MILESEmbedding",
    "MIGraph",
    "AttentionMIL",
    "MiVLAD",
    "MiFV",
]

#: ``class_weight``: None, "balanced" or {label: weight}.
ClassWeight = Union[None, str, Mapping[Any, float]]
_Self = TypeVar("_Self", bound="_BagClassifier")


def _number_or_text(value: Union[float, str, None]) -> Optional[str]:
    """A parameter that is a number or a word (``"scaled"``) as the library parses it."""
    if value is None:
        return None
    return value if isinstance(value, str) else repr(float(value))


def _class_weight(class_weight: ClassWeight, classes: npt.NDArray[Any]) -> str:
    """``class_weight`` as the library spells it: none, balanced or W0,W1,… in the order
    of ``classes`` (labels missing from a dict weigh 1, as in scikit-learn)."""
    if class_weight is None:
        return "none"
    if isinstance(class_weight, str):
        if class_weight == "balanced":
            return "balanced"
        raise ValueError(
            f"class_weight={class_weight!r}: expected None, 'balanced' or a dict "
            "{label: weight}"
        )
    if isinstance(class_weight, dict):
        labels = classes.tolist()
        unknown = [k for k in class_weight if k not in labels]
        if unknown:
            raise ValueError(
                f"class_weight names {unknown!r}, which are not among the labels {labels!r}"
            )
        weights = []
        for label in labels:
            w = class_weight.get(label, 1.0)
            if isinstance(w, bool) or not isinstance(w, (int, float, np.number)):
                raise TypeError(f"class_weight[{label!r}] = {w!r} is not a number")
            weights.append(repr(float(w)))
        return ",".join(weights)
    raise TypeError(
        f"class_weight must be None, 'balanced' or a dict, not {type(class_weight).__name__}"
    )


class _BagClassifier(NativeStateMixin, ClassifierMixin, BaseEstimator):
    """Common ``fit``/``predict``/``score`` over the native classifier.

    Fitted attributes: ``classes_`` (the sorted labels; class index i is
    ``classes_[i]``), ``n_features_in_``, ``projected_input_`` (whether ``fit`` was
    given :class:`miltk.ProjectedBags`) and ``model_`` (the native fitted model).

    ``_native_spec(classes)`` is the protocol through which :func:`miltk.deploy.export`
    and :func:`miltk.cross_validate_native` read a classifier's parameters without
    fitting it: the native ``ClassifierSpec``, ``classes`` being the sorted labels of the
    bags it is for.
    """

    n_jobs: Optional[int]
    model_: _native.FittedClassifier
    classes_: npt.NDArray[Any]
    n_features_in_: int
    projected_input_: bool

    def _native_spec(self, classes: npt.NDArray[Any]) -> _native.ClassifierSpec:
        """The native parameters; ``classes`` are the sorted training labels."""
        raise NotImplementedError

    def fit(self: _Self, X: BagsLike, y: npt.ArrayLike) -> _Self:
        """Fit on labelled bags.

        Parameters
        ----------
        X : sequence of ndarray
            One (instances x features) array per bag.
        y : array-like of shape (n_bags,)
            Bag labels, of any sortable type; at least two distinct values.

        Returns
        -------
        self
        """
        bags, classes = native_labelled_bags(X, y, what="X")
        if len(classes) < 2:
            raise ValueError(
                f"y holds one class ({classes[0]!r}): a classifier needs at least two"
            )
        spec = self._native_spec(classes)
        projected = isinstance(X, ProjectedBags)
        self.model_ = spec.fit(bags, projected, n_threads(self.n_jobs))
        self.classes_ = classes
        self.n_features_in_ = bags.dim
        self.projected_input_ = projected
        degenerate = self.model_.gram_diagnosis()
        if degenerate is not None:
            warnings.warn(degenerate, RuntimeWarning, stacklevel=2)
        return self

    def _scores(self, X: BagsLike) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.intp]]:
        fitted(self)
        bags, _ = native_bags(X, n_features=self.n_features_in_, what="X")
        scores, labels = self.model_.scores(bags, n_threads(self.n_jobs))
        return scores, np.asarray(labels, dtype=np.intp)

    def predict(self, X: BagsLike) -> npt.NDArray[Any]:
        """Predict the label of every bag.

        Parameters
        ----------
        X : sequence of ndarray
            One (instances x features) array per bag.

        Returns
        -------
        ndarray of shape (n_bags,)
            Labels from ``classes_``: the class of highest score, ties to the first.
        """
        _, labels = self._scores(X)
        return self.classes_[labels]

    def predict_instances(self, X: BagsLike) -> list[npt.NDArray[np.float64]]:
        """Score every instance of every bag, as the model itself defines the score.

        The scores are those ``mil predict --explain`` and ``mil predict --instances``
        report (``instance_score_kind_`` says what they measure):

        - ``"probability"``: :class:`MILR` and :class:`MIWrapper` (each instance's
          probability under the logistic model; with more than two classes, of the
          predicted class against the rest), :class:`DiverseDensity` and :class:`EMDD`
          (the probability that the instance belongs to the concept);
        - ``"decision"``: :class:`MiSVM`, :class:`MISVM`, :class:`SMIL`, :class:`SBMIL`
          (the instance SVM's decision value f(x); the bag's score is the largest, the
          mean for sMIL);
        - ``"contribution"``: :class:`SetKernelSVM` with ``kernel="mi-rbf"`` (each
          instance's additive share of the decision value), :class:`MiVLAD` and
          :class:`MiFV` (its share before the bag vector's normalisation);
        - ``"attention"``: :class:`AttentionMIL` (the instance's weight in the bag's
          pooled embedding; a bag's weights sum to 1).

        An instance is labelled positive when its score is above ``instance_threshold_``
        (0 for decisions, 0.5 for probabilities on two classes; ``None``: no label).
        The witness of a bag is its first highest-scoring instance (``np.argmax``).

        Parameters
        ----------
        X : sequence of ndarray
            One (instances x features) array per bag.

        Returns
        -------
        list of ndarray
            One 1-D array per bag, one score per instance in the bag's order.

        Raises
        ------
        ValueError
            For a model that defines no instance score: :class:`CitationKNN`,
            :class:`SimpleMI`, :class:`SetKernelSVM` with a box-counting or NSK kernel.
        """
        fitted(self)
        bags, _ = native_bags(X, n_features=self.n_features_in_, what="X")
        return self.model_.predict_instances(bags, n_threads(self.n_jobs))

    @property
    def instance_score_kind_(self) -> str:
        """What :meth:`predict_instances` returns: ``"probability"``, ``"decision"``,
        ``"contribution"``, ``"attention"``, or ``"none"`` for a model that scores no
        instance."""
        fitted(self)
        return self.model_.instance_score_kind

    @property
    def instance_threshold_(self) -> Optional[float]:
        """The score above which an instance is labelled positive, or ``None`` when the
        method defines no instance label (contributions; probabilities on more than two
        classes)."""
        fitted(self)
        return self.model_.instance_threshold

    def score(
        self, X: BagsLike, y: npt.ArrayLike, sample_weight: Optional[npt.ArrayLike] = None
    ) -> float:
        """Mean accuracy on the given bags and labels.

        Equal to ``sklearn.metrics.accuracy_score(y, self.predict(X))``, computed
        directly when the labels and predictions are plain arrays of one kind (scikit-learn's
        checks of the target type cost more than scoring a fold of Citation-kNN).

        Parameters
        ----------
        X : sequence of ndarray
            One (instances x features) array per bag.
        y : array-like of shape (n_bags,)
            True labels.
        sample_weight : array-like of shape (n_bags,), optional
            Weights of the bags.

        Returns
        -------
        float
        """
        predicted = self.predict(X)
        truth = np.asarray(y)
        if truth.shape != predicted.shape or truth.dtype.kind != predicted.dtype.kind:
            return float(accuracy_score(y, predicted, sample_weight=sample_weight))
        weights = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        return float(np.average(truth == predicted, weights=weights))

    def export(self, format: str = "f32") -> bytes:
        """Deprecated: use :func:`miltk.deploy.export` (``miltk.export(clf, format)``).

        Parameters
        ----------
        format : {"f32", "q15", "q7"}
            Scalar encoding; Q15/Q7 quantise inputs with the ranges of the training bags.

        Returns
        -------
        bytes
            The model as ``mil_core::Model::parse`` reads it from flash.
        """
        from .deploy import export

        warnings.warn(
            "the export method is deprecated and will be removed in the next release: "
            "use miltk.export(estimator, format)",
            FutureWarning,
            stacklevel=2,
        )
        return export(self, format)


class CitationKNN(_BagClassifier):
    """Citation-kNN (Wang & Zucker 2000) with Weka's rules.

    A bag's label is voted by its R nearest training bags (references) and by the
    training bags that count it among their C nearest (citers), under a Hausdorff-type
    bag distance.

    Parameters
    ----------
    references : int, default=2
        R, the number of references.
    citers : int, default=4
        C, the number of citers (0: none).
    scaling : {"auto", "zscore", "weka", "none"}, default="auto"
        Attribute scaling before distances. ``"auto"`` is the z-score on raw bags and
        none on :class:`miltk.ProjectedBags` (the output of a miltk projection's
        ``transform``, e.g. in a ``Pipeline``), as the library's pipelines do.
    hausdorff : {"min", "max", "avg"}, default="min"
        The bag distance.
    rank : int, default=1
        H of the H-th ranked minimal Hausdorff distance (``hausdorff="min"`` only).
    class_weight : None, "balanced" or dict, default=None
        Weight of each class's votes: a reference or citer of class c counts w_c instead
        of 1. ``"balanced"`` is n / (n_classes * n_c) over the training bags; a dict maps
        labels to weights (missing labels weigh 1).
    n_jobs : int or None, default=None
        Threads of ``fit`` and ``predict``: None uses :func:`miltk.set_num_threads`'s
        count (all cores unless set), -1 all cores, k > 0 k threads. Results do not
        depend on it.

    Attributes
    ----------
    classes_ : ndarray
        The labels, sorted.
    n_features_in_ : int
        Features per instance.
    projected_input_ : bool
        Whether ``fit`` saw projected bags (``"auto"`` then meant no scaling).
    model_ : object
        The native fitted model.

    Examples
    --------
    >>> from miltk import CitationKNN, load_musk1
    >>> bags, y = load_musk1(return_X_y=True)
    >>> CitationKNN().fit(bags[::2], y[::2]).score(bags[1::2], y[1::2]) > 0.7
    True
    """

    def __init__(
        self,
        references: int = 2,
        citers: int = 4,
        scaling: str = "auto",
        hausdorff: str = "min",
        rank: int = 1,
        class_weight: ClassWeight = None,
        n_jobs: Optional[int] = None,
    ) -> None:
        self.references = references
        self.citers = citers
        self.scaling = scaling
        self.hausdorff = hausdorff
        self.rank = rank
        self.class_weight = class_weight
        self.n_jobs = n_jobs

    def _native_spec(self, classes: npt.NDArray[Any]) -> _native.ClassifierSpec:
        return _native.ClassifierSpec.citation_knn(
            check_positive_int("references", self.references),
            check_positive_int("citers", self.citers, minimum=0),
            check_positive_int("rank", self.rank),
            self.scaling,
            self.hausdorff,
            _class_weight(self.class_weight, classes),
        )

    def predict_proba(self, X: BagsLike) -> npt.NDArray[np.float64]:
        """Vote shares of every class.

        Parameters
        ----------
        X : sequence of ndarray
            One (instances x features) array per bag.

        Returns
        -------
        ndarray of shape (n_bags, n_classes)
            (1/N + references + citers of the class) / total, per class (rows sum to 1).
        """
        scores, _ = self._scores(X)
        return scores


class MILR(_BagClassifier):
    """Multiple-instance logistic regression (Ray & Craven 2005; Weka's MILR).

    Instance probabilities from one logistic model, pooled over the bag. More than two
    classes are fitted one-vs-rest.

    Parameters
    ----------
    pooling : {"noisy-or", "mean", "geometric", "softmax", "max"}, default="noisy-or"
        How instance probabilities combine into the bag's.
    ridge : float, default=1e-6
        Ridge penalty on the standardised coefficients (Weka's ``-R``).
    beta : float, default=3.0
        Sharpness of the softmax pooling.
    optimizer : {"lbfgs", "weka"}, default="lbfgs"
        L-BFGS, or Weka 3.6's quasi-Newton method reproduced (noisy-or, mean, geometric).
    class_weight : None, "balanced" or dict, default=None
        Weight of each class's bags in the likelihood: ``"balanced"`` is
        n / (n_classes * n_c) over the training bags; a dict maps labels to weights
        (missing labels weigh 1).
    n_jobs : int or None, default=None
        Threads of ``fit`` and ``predict``, as :class:`CitationKNN`'s.

    Attributes
    ----------
    classes_ : ndarray
        The labels, sorted.
    n_features_in_ : int
        Features per instance.
    model_ : object
        The native fitted model.
    """

    def __init__(
        self,
        pooling: str = "noisy-or",
        ridge: float = 1e-6,
        beta: float = 3.0,
        optimizer: str = "lbfgs",
        class_weight: ClassWeight = None,
        n_jobs: Optional[int] = None,
    ) -> None:
        self.pooling = pooling
        self.ridge = ridge
        self.beta = beta
        self.optimizer = optimizer
        self.class_weight = class_weight
        self.n_jobs = n_jobs

    def _native_spec(self, classes: npt.NDArray[Any]) -> _native.ClassifierSpec:
        return _native.ClassifierSpec.milr(
            self.pooling,
            float(self.ridge),
            float(self.beta),
            self.optimizer,
            _class_weight(self.class_weight, classes),
        )

    def predict_proba(self, X: BagsLike) -> npt.NDArray[np.float64]:
        """Bag probabilities.

        Parameters
        ----------
        X : sequence of ndarray
            One (instances x features) array per bag.

        Returns
        -------
        ndarray of shape (n_bags, n_classes)
            For two classes, [1 - p, p] with p the pooled probability of ``classes_[1]``;
            for more, the one-vs-rest probabilities normalised to sum to 1.
        """
        scores, _ = self._scores(X)
        if scores.shape[1] > 2:
            total = scores.sum(axis=1, keepdims=True)
            scores = np.divide(
                scores, total, out=np.full_like(scores, 1.0 / scores.shape[1]),
                where=total > 0,
            )
        return scores


def _normalised(scores: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """One-vs-rest probabilities normalised to sum to 1 (two classes: unchanged)."""
    if scores.shape[1] > 2:
        total = scores.sum(axis=1, keepdims=True)
        scores = np.divide(
            scores, total, out=np.full_like(scores, 1.0 / scores.shape[1]),
            where=total > 0,
        )
    return scores


class SimpleMI(_BagClassifier):
    """SimpleMI (Frank & Xu 2003; Weka's SimpleMI): logistic regression on one summary
    vector per bag.

    Each bag becomes one vector, then a ridge logistic regression is fitted on those
    vectors (one per class against the rest for more than two classes). A bag is one
    vector to the model, so it defines no instance scores.

    Parameters
    ----------
    summary : {"mean", "geometric", "minmax"}, default="mean"
        The instances' mean; the centre (min + max) / 2 of the bag's bounding box
        (Weka's "geometric"); or the feature-wise minima followed by the maxima.
    ridge : float, default=1e-8
        Ridge penalty on the standardised coefficients (Weka's ``Logistic -R``).
    class_weight : None, "balanced" or dict, default=None
        Weight of each class's bags in the likelihood, as :class:`MILR`'s.
    n_jobs : int or None, default=None
        Threads of ``fit`` and ``predict``, as :class:`CitationKNN`'s.

    Attributes
    ----------
    classes_ : ndarray
        The labels, sorted.
    n_features_in_ : int
        Features per instance.
    model_ : object
        The native fitted model.
    """

    def __init__(
        self,
        summary: str = "mean",
        ridge: float = 1e-8,
        class_weight: ClassWeight = None,
        n_jobs: Optional[int] = None,
    ) -> None:
        self.summary = summary
        self.ridge = ridge
        self.class_weight = class_weight
        self.n_jobs = n_jobs

    def _native_spec(self, classes: npt.NDArray[Any]) -> _native.ClassifierSpec:
        return _native.ClassifierSpec.simple_mi(
            self.summary, float(self.ridge), _class_weight(self.class_weight, classes)
        )

    def predict_proba(self, X: BagsLike) -> npt.NDArray[np.float64]:
        """Bag probabilities.

        Parameters
        ----------
        X : sequence of ndarray
            One (instances x features) array per bag.

        Returns
        -------
        ndarray of shape (n_bags, n_classes)
            For two classes, [1 - p, p] with p the probability of ``classes_[1]``; for
            more, the one-vs-rest probabilities normalised to sum to 1.
        """
        scores, _ = self._scores(X)
        return _normalised(scores)


class MIWrapper(_BagClassifier):
    """MI-Wrapper (Frank & Xu 2003; Weka's MIWrapper): logistic regression on the
    instances, their probabilities combined per bag.

    Every instance takes its bag's label and the weight N / (B * n_b) (N instances, B
    bags, n_b instances in its bag: every bag weighs the same); a ridge logistic
    regression is fitted on the weighted instances (one per class against the rest for
    more than two classes).

    Parameters
    ----------
    combine : {"arithmetic", "geometric", "max"}, default="arithmetic"
        A bag's probability: the mean of its instances' probabilities, the normalised
        geometric mean (the sigmoid of the mean logit), or the largest.
    ridge : float, default=1e-8
        Ridge penalty on the standardised coefficients (Weka's ``Logistic -R``).
    class_weight : None, "balanced" or dict, default=None
        Weight of each class's bags in the likelihood, as :class:`MILR`'s.
    n_jobs : int or None, default=None
        Threads of ``fit`` and ``predict``, as :class:`CitationKNN`'s.

    Attributes
    ----------
    classes_ : ndarray
        The labels, sorted.
    n_features_in_ : int
        Features per instance.
    model_ : object
        The native fitted model.
    """

    def __init__(
        self,
        combine: str = "arithmetic",
        ridge: float = 1e-8,
        class_weight: ClassWeight = None,
        n_jobs: Optional[int] = None,
    ) -> None:
        self.combine = combine
        self.ridge = ridge
        self.class_weight = class_weight
        self.n_jobs = n_jobs

    def _native_spec(self, classes: npt.NDArray[Any]) -> _native.ClassifierSpec:
        return _native.ClassifierSpec.mi_wrapper(
            self.combine, float(self.ridge), _class_weight(self.class_weight, classes)
        )

    def predict_proba(self, X: BagsLike) -> npt.NDArray[np.float64]:
        """Bag probabilities.

        Parameters
        ----------
        X : sequence of ndarray
            One (instances x features) array per bag.

        Returns
        -------
        ndarray of shape (n_bags, n_classes)
            For two classes, [1 - p, p] with p the combined probability of
            ``classes_[1]``; for more, the one-vs-rest probabilities normalised to sum
            to 1.
        """
        scores, _ = self._scores(X)
        return _normalised(scores)


class _CodebookClassifier(_BagClassifier):
    """miVLAD and miFV: the shared parameters and ``predict_proba``."""

    _encoding = ""

    def __init__(
        self,
        n_clusters: int = 1,
        ridge: float = 1.0,
        random_state: RandomState = 1,
        class_weight: ClassWeight = None,
        n_jobs: Optional[int] = None,
    ) -> None:
        self.n_clusters = n_clusters
        self.ridge = ridge
        self.random_state = random_state
        self.class_weight = class_weight
        self.n_jobs = n_jobs

    def _native_spec(self, classes: npt.NDArray[Any]) -> _native.ClassifierSpec:
        return _native.ClassifierSpec.mi_vlad(
            self._encoding,
            check_positive_int("n_clusters", self.n_clusters),
            float(self.ridge),
            estimator_seed(self),
            _class_weight(self.class_weight, classes),
        )

    def predict_proba(self, X: BagsLike) -> npt.NDArray[np.float64]:
        """Bag probabilities.

        Parameters
        ----------
        X : sequence of ndarray
            One (instances x features) array per bag.

        Returns
        -------
        ndarray of shape (n_bags, n_classes)
            For two classes, [1 - p, p] with p the probability of ``classes_[1]``; for
            more, the one-vs-rest probabilities normalised to sum to 1.
        """
        scores, _ = self._scores(X)
        return _normalised(scores)


class MiVLAD(_CodebookClassifier):
    """miVLAD (Wei, Wu & Zhou 2017): logistic regression on each bag's VLAD vector.

    k-means on the z-scored training instances gives k centres; a bag becomes, centre by
    centre, the sum of its instances' residuals x - c to their nearest centre, then the
    signed square root and the l2 normalisation; a ridge logistic regression is fitted on
    those vectors (one per class against the rest for more than two classes).

    Parameters
    ----------
    n_clusters : int, default=1
        Codebook size: the number of k-means centres, at most the number of training
        instances.
    ridge : float, default=1.0
        Ridge penalty of the logistic regression on the standardised bag vectors.
    random_state : int, RandomState, Generator or None, default=1
        Seed of the k-means++ seeding: an int (the ``--seed`` of ``mil``) gives the same
        model on every fit; None draws a seed from ``numpy.random`` at each fit; a
        ``RandomState``/``Generator`` gives one draw of its own per fit.
    class_weight : None, "balanced" or dict, default=None
        Weight of each class's bags in the likelihood, as :class:`MILR`'s.
    n_jobs : int or None, default=None
        Threads of ``fit`` and ``predict``, as :class:`CitationKNN`'s.

    Attributes
    ----------
    classes_ : ndarray
        The labels, sorted.
    n_features_in_ : int
        Features per instance.
    model_ : object
        The native fitted model.
    """

    _encoding = "vlad"


class MiFV(_CodebookClassifier):
    """miFV (Wei, Wu & Zhou 2017): logistic regression on each bag's Fisher vector.

    A diagonal Gaussian mixture is fitted by EM (from k-means) on the z-scored training
    instances; a bag becomes its improved Fisher vector (the gradients with respect to
    the means and the standard deviations, Perronnin et al. 2010), then the signed square
    root and the l2 normalisation; a ridge logistic regression is fitted on those vectors
    (one per class against the rest for more than two classes).

    Parameters
    ----------
    n_clusters : int, default=1
        Codebook size: the number of Gaussian mixture components, at most the number of
        training instances.
    ridge : float, default=1.0
        Ridge penalty of the logistic regression on the standardised bag vectors.
    random_state : int, RandomState, Generator or None, default=1
        Seed of the k-means++ seeding: an int (the ``--seed`` of ``mil``) gives the same
        model on every fit; None draws a seed from ``numpy.random`` at each fit; a
        ``RandomState``/``Generator`` gives one draw of its own per fit.
    class_weight : None, "balanced" or dict, default=None
        Weight of each class's bags in the likelihood, as :class:`MILR`'s.
    n_jobs : int or None, default=None
        Threads of ``fit`` and ``predict``, as :class:`CitationKNN`'s.

    Attributes
    ----------
    classes_ : ndarray
        The labels, sorted.
    n_features_in_ : int
        Features per instance.
    model_ : object
        The native fitted model.
    """

    _encoding = "fisher"


class SetKernelSVM(_BagClassifier):
    """SVM over bags with a set kernel (Tao et al.'s box-counting kernels, NSK, or the MI
    kernel).

    The box kernels count the grid boxes that contain points of both bags (``kand``),
    normalise by either bag (``kandor``) or sum the smaller counts (``kmin``), estimated
    to relative error ``epsilon`` with probability ``1 - delta``; ``nsk`` is Gärtner et
    al.'s normalised set kernel on z-scored features. Those kernel values go through
    k ** rho before the SVM (SMO). ``mi-rbf`` is Gärtner et al.'s MI kernel
    sum_{x, y} exp(-gamma ||x - y||^2) used as is, Weka's MISMO setting by default
    (gamma = 0.01, C = 1 on attributes scaled to [0, 1]; each bag's cost is C times the
    training bags' mean size, as MISMO weighs bags); ``scaling="weka"`` reproduces MISMO's
    predictions bag for bag. More than two classes: one-vs-rest on one kernel.

    Each ``fit`` computes the training bags' Gram matrix. To cross-validate,
    :func:`miltk.cross_validate_native` computes one Gram matrix over all bags (the
    z-score or grid fitted on every bag, no labels involved) and lets the folds share it:
    for the NSK on musk1 and elephant 2.4-3.4x less CPU time than fitting fold by fold.

    Parameters
    ----------
    kernel : {"kand", "kandor", "kmin", "nsk", "mi-rbf"}, default="kand"
        The set kernel.
    epsilon : float, default=0.1
        Relative error of the box-kernel estimates, in (0, 1).
    delta : float, default=0.01
        Failure probability of the estimates, in (0, 1).
    gamma : float, "scaled" or None, default=None
        gamma in exp(-gamma ||x - y||^2) of ``nsk`` and ``mi-rbf``; None is
        1 / (non-constant features) for ``nsk`` and MISMO's 0.01 for ``mi-rbf``.
        ``mi-rbf`` also takes ``"scaled"``: 1 / the summed variance of the training
        instances after ``scaling``, fitted on each fit's training bags (``"C*scaled"``:
        C / that sum).
    rho : float or "scaled", default="scaled"
        Exponent of the subpolynomial map k ** rho (box kernels and ``nsk``), in (0, 1];
        ``"scaled"`` picks, on the training bags, the rho that puts the median
        normalised similarity of two bags at 0.15 (the GMIL paper's fixed value is 0.02).
    kernel_map : {"none", "emp"}, default="none"
        ``"emp"`` uses the empirical kernel map over the training bags.
    C : float or None, default=None
        Misclassification cost; None is a hard margin (1e10), or MISMO's C = 1 for
        ``mi-rbf``.
    scaling : {"auto", "none", "minmax", "weka"}, default="auto"
        Attribute map fitted on the training bags: ``"minmax"`` scales each attribute to
        [0, 1] (Weka's Normalize); ``"weka"`` is what Weka 3.6's MISMO computes (minmax,
        and the third attribute left out of the kernel; ``mi-rbf`` only); ``"auto"`` is
        minmax for ``mi-rbf`` and none otherwise (NSK z-scores on its own, the box
        kernels discretise).
    estimator : {"fast", "paper"}, default="fast"
        The box-kernel estimators.
    precision : int or None, default=None
        Power of ten of the discretisation grid; None picks it from the data.
    random_state : int, RandomState, Generator or None, default=1
        Seed of the kernel estimates: an int (the ``--seed`` of ``mil``) gives the same
        model on every fit; None draws a seed from ``numpy.random`` at each fit; a
        ``RandomState``/``Generator`` gives one draw of its own per fit.
    class_weight : None, "balanced" or dict, default=None
        Multiplies each class's cost C (libsvm's class weights): ``"balanced"`` is
        n / (n_classes * n_c) over the training bags; a dict maps labels to weights
        (missing labels weigh 1).
    n_jobs : int or None, default=None
        Threads of ``fit`` and ``predict``, as :class:`CitationKNN`'s.
    seed : int
        Deprecated name of ``random_state`` (``FutureWarning``).
    map : {"none", "emp"}
        Deprecated name of ``kernel_map`` (``FutureWarning``).

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The labels; ``classes_[1]`` is the positive class.
    n_features_in_ : int
        Features per instance.
    model_ : object
        The native fitted model.
    """

    def __init__(
        self,
        kernel: str = "kand",
        epsilon: float = 0.1,
        delta: float = 0.01,
        gamma: Union[float, str, None] = None,
        rho: Union[float, str] = "scaled",
        kernel_map: str = "none",
        C: Optional[float] = None,
        estimator: str = "fast",
        precision: Optional[int] = None,
        random_state: RandomState = 1,
        class_weight: ClassWeight = None,
        scaling: str = "auto",
        n_jobs: Optional[int] = None,
        *,
        seed: object = DEPRECATED,
        map: object = DEPRECATED,
    ) -> None:
        self.kernel = kernel
        self.epsilon = epsilon
        self.delta = delta
        self.gamma = gamma
        self.rho = rho
        self.kernel_map = kernel_map
        self.C = C
        self.estimator = estimator
        self.precision = precision
        self.random_state = random_state
        self.class_weight = class_weight
        self.scaling = scaling
        self.n_jobs = n_jobs
        self.seed = seed
        self.map = map

    def _native_spec(self, classes: npt.NDArray[Any]) -> _native.ClassifierSpec:
        mi = self.kernel == "mi-rbf"
        scaling = ("minmax" if mi else "none") if self.scaling == "auto" else self.scaling
        C = (1.0 if mi else 1e10) if self.C is None else self.C
        return _native.ClassifierSpec.svm(
            self.kernel,
            self.estimator,
            float(self.epsilon),
            float(self.delta),
            None if self.precision is None else int(self.precision),
            _number_or_text(self.gamma),
            self.rho if isinstance(self.rho, str) else repr(float(self.rho)),
            renamed("map", self.map, "kernel_map", self.kernel_map, "none"),
            float(C),
            estimator_seed(self),
            _class_weight(self.class_weight, classes),
            scaling,
        )

    def decision_function(self, X: BagsLike) -> npt.NDArray[np.float64]:
        """Signed distance to the SVM's boundary.

        Parameters
        ----------
        X : sequence of ndarray
            One (instances x features) array per bag.

        Returns
        -------
        ndarray of shape (n_bags,) or (n_bags, n_classes)
            Two classes: f(X), positive values predict ``classes_[1]``. More classes:
            one decision value per class (one-vs-rest), the largest predicts.
        """
        scores, _ = self._scores(X)
        if scores.shape[1] > 2:
            return scores.copy()
        return scores[:, 1].copy()


class _InstanceSVM(_BagClassifier):
    """mi-SVM and MI-SVM (Andrews, Tsochantaridis & Hofmann 2002): one SVM on instances,
    f(x) = sum_i alpha_i y_i k(x_i, x) + b, trained while the unknown instance labels of
    the positive bags are filled in by alternation. A bag's decision value is the
    largest f over its instances; it is positive when that value is > 0. Features are
    z-scored (or scaled to [0, 1]) on the training instances. Binary labels only:
    ``classes_[1]`` is the positive class. No randomness: a fit is a function of the data and parameters."""

    _bag_level: bool

    def __init__(
        self,
        kernel: str = "linear",
        gamma: Optional[float] = None,
        C: float = 1.0,
        max_iter: int = 50,
        scaling: str = "zscore",
        class_weight: ClassWeight = None,
        n_jobs: Optional[int] = None,
    ) -> None:
        self.kernel = kernel
        self.gamma = gamma
        self.C = C
        self.max_iter = max_iter
        self.scaling = scaling
        self.class_weight = class_weight
        self.n_jobs = n_jobs

    def _native_spec(self, classes: npt.NDArray[Any]) -> _native.ClassifierSpec:
        return _native.ClassifierSpec.mi_svm(
            self._bag_level,
            self.kernel,
            None if self.gamma is None else float(self.gamma),
            float(self.C),
            check_positive_int("max_iter", self.max_iter),
            self.scaling,
            _class_weight(self.class_weight, classes),
        )

    def decision_function(self, X: BagsLike) -> npt.NDArray[np.float64]:
        """The largest instance decision value of every bag.

        Parameters
        ----------
        X : sequence of ndarray
            One (instances x features) array per bag.

        Returns
        -------
        ndarray of shape (n_bags,)
            max over the bag's instances of f(x); positive values predict ``classes_[1]``.
        """
        scores, _ = self._scores(X)
        return scores[:, 1].copy()


class MiSVM(_InstanceSVM):
    """mi-SVM (Andrews et al. 2002): an instance SVM with a label for every instance.

    Every instance of a negative bag is negative; the instances of a positive bag start
    positive. Each round trains the SVM on all instances with the current labels, then
    relabels each positive bag's instances by the sign of f, giving a positive bag left
    without a positive instance its highest-scoring one back; it stops when no label
    changes or after ``max_iter`` rounds. Like the paper's, the alternation can stop at a
    labelling that is not the best one.

    Parameters
    ----------
    kernel : {"linear", "rbf"}, default="linear"
        k(x, y) = x.y or exp(-gamma ||x - y||^2), on the scaled features.
    gamma : float or None, default=None
        gamma of the RBF kernel; None is 1 / (non-constant features). Refused with the
        linear kernel.
    C : float, default=1.0
        Misclassification cost of every instance.
    max_iter : int, default=50
        Most rounds of relabelling.
    scaling : {"zscore", "minmax"}, default="zscore"
        Each feature z-scored, or scaled to [0, 1] as Weka's ``MISVM`` does, on the
        training instances.
    class_weight : None, "balanced" or dict, default=None
        Multiplies the cost C of each instance by the weight of its bag's class.
    n_jobs : int or None, default=None
        Threads of ``fit`` and ``predict``, as :class:`CitationKNN`'s.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The labels; ``classes_[1]`` is the positive class.
    n_features_in_ : int
        Features per instance.
    model_ : object
        The native fitted model.
    """

    _bag_level = False


class MISVM(_InstanceSVM):
    """MI-SVM (Andrews et al. 2002): an instance SVM with one witness per positive bag.

    The training points are every negative instance and one witness per positive bag:
    the mean of the bag's instances in the first iteration, as in the paper, then the
    instance with the largest f; it stops when no witness changes or after ``max_iter``
    rounds.

    Parameters
    ----------
    kernel : {"linear", "rbf"}, default="linear"
        k(x, y) = x.y or exp(-gamma ||x - y||^2), on the scaled features.
    gamma : float or None, default=None
        gamma of the RBF kernel; None is 1 / (non-constant features). Refused with the
        linear kernel.
    C : float, default=1.0
        Misclassification cost of every training point.
    max_iter : int, default=50
        Most rounds of witness selection.
    scaling : {"zscore", "minmax"}, default="zscore"
        Each feature z-scored, or scaled to [0, 1] as Weka's ``MISVM`` does, on the
        training instances.
    class_weight : None, "balanced" or dict, default=None
        Multiplies the cost C of each point by the weight of its bag's class.
    n_jobs : int or None, default=None
        Threads of ``fit`` and ``predict``, as :class:`CitationKNN`'s.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The labels; ``classes_[1]`` is the positive class.
    n_features_in_ : int
        Features per instance.
    model_ : object
        The native fitted model.
    """

    _bag_level = True


#: ``AutoMIL(candidates=...)``: miltk classifiers, or (classifier, parameter grid) pairs.
Candidates = Optional[Sequence[Union["_BagClassifier", tuple["_BagClassifier", Any]]]]


class AutoMIL(_BagClassifier):
    """The classifier an inner cross-validation chooses on the training bags
    (``mil cv --classifier auto``): nested CV when cross-validated.

    ``fit`` runs a stratified inner CV over the candidates on the training bags alone,
    keeps the candidate of best inner score (the first on ties) and fits it on every
    training bag; with ``vote`` > 1 the ``vote`` best-ranked candidates are each fitted
    and predict by their majority. By default the candidates are twelve classifiers at their defaults —
    SimpleMI, miVLAD, miFV, the set-kernel SVM with k∧, k∧∨, the NSK and the MI kernel,
    Citation-kNN, MILR, mi-Graph, the attention network and MILES, as
    ``mil cv --classifier auto`` has them. Work shared across folds
    (Gram matrices, bag distances) is computed once.

    Parameters
    ----------
    candidates : None or sequence, default=None
        None: the default grids. Otherwise miltk classifiers, and/or pairs
        ``(classifier, param_grid)`` whose ``param_grid`` is a scikit-learn parameter
        grid (a dict of lists, or a list of such dicts) expanded by
        ``sklearn.model_selection.ParameterGrid`` over clones of the classifier, e.g.
        ``[(SetKernelSVM(kernel="mi-rbf"), {"gamma": [0.001, 0.01, 0.1], "C": [1, 10]})]``.
    inner_folds : int, default=3
        Folds of the inner CV (at most one per bag of the smallest class among the
        training bags).
    select : {"auroc", "accuracy"} or None, default=None
        What the inner CV maximises: the AUROC of the pooled inner out-of-fold scores
        (two classes), or correct predictions. None: AUROC for two classes (it ties less
        often on a few dozen inner test bags), accuracy for more.
    class_weight : None, "balanced" or dict, default=None
        Class weights of the default grids' candidates (given candidates keep theirs).
    random_state : int, RandomState, Generator or None, default=1
        Seed of the inner folds and of every candidate's randomised steps.
    n_jobs : int or None, default=None
        Threads, as :class:`CitationKNN`'s. Results do not depend on it.
    max_cpu_minutes : float or None, default=None
        CPU budget of the choice (``mil cv --max-cpu-minutes``). The work is estimated
        before it starts by one pilot fit of each candidate (box kernels: a timed sample
        of their Gram matrix); over the budget the dearest candidates are left out until
        the rest fit, and ``ValueError`` is raised, with the estimate, when not even the
        cheapest fits (or fewer than ``vote`` are left). None: no budget and no estimate.
    vote : int, default=1
        How many of the candidates the inner CV ranks best vote on every bag
        (``mil cv --vote``): each is fitted on the training bags and the prediction is the
        majority of their labels, the best-ranked member's vote counting 1.5 so that a
        tie goes to it. At most the number of candidates. A vote has no single
        classifier to explain or export: ``predict_instances`` and
        :func:`miltk.export` refuse it. On the shipped benchmarks (the results table)
        a vote of three of the default candidates gains 2.8–6.0 points on elephant, fox
        and tiger and loses 2.5 on musk2 and 0.2 on musk1 (the guide's selection page).
    inner_repeats : int, default=1
        How many fold assignments the inner CV runs on (``mil cv --inner-repeats``):
        candidates are ranked by the mean of their inner scores over them, at
        ``inner_repeats`` times the inner CV's work.

    Attributes
    ----------
    classes_ : ndarray
        The labels, sorted.
    n_features_in_ : int
        Features per instance.
    cpu_estimate_ : float or None
        Estimated CPU seconds of the fit's choice among the candidates it kept (None
        without ``max_cpu_minutes``).
    left_out_ : list of str
        The candidates the budget left out, dearest first removed.
    chosen_ : str
        The chosen classifier and its settings, e.g. ``"svm (kand kernel, rho 0.02,
        map none, C 10)"``; a vote's other members follow ``"voting with"``, in rank
        order.
    n_candidates_ : int
        Number of candidates the inner CV compared.
    inner_scores_ : list of (str, float or None)
        Every candidate the inner CV compared, best first, with its inner score: the
        pooled inner out-of-fold AUROC (``select="auroc"``) or the share of inner test
        bags predicted right; None where undefined. How far the choice was ahead.
    model_ : object
        The native fitted model of the chosen candidate.

    Examples
    --------
    >>> from miltk import AutoMIL, MILR, load_musk1
    >>> bags, y = load_musk1(return_X_y=True)
    >>> auto = AutoMIL([(MILR(), {"pooling": ["mean", "max"]})]).fit(bags, y)
    >>> auto.chosen_.startswith("milr")
    True
    """

    chosen_: str
    n_candidates_: int
    inner_scores_: list[tuple[str, Optional[float]]]
    cpu_estimate_: Optional[float]
    left_out_: list[str]

    def __init__(
        self,
        candidates: Candidates = None,
        inner_folds: int = 3,
        select: Optional[str] = None,
        class_weight: ClassWeight = None,
        random_state: RandomState = 1,
        n_jobs: Optional[int] = None,
        max_cpu_minutes: Optional[float] = None,
        vote: int = 1,
        inner_repeats: int = 1,
    ) -> None:
        self.candidates = candidates
        self.inner_folds = inner_folds
        self.select = select
        self.class_weight = class_weight
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.max_cpu_minutes = max_cpu_minutes
        self.vote = vote
        self.inner_repeats = inner_repeats

    def _native_spec(self, classes: npt.NDArray[Any]) -> Any:
        seed = estimator_seed(self)
        specs = None
        if self.candidates is not None:
            specs = [c._native_spec(classes) for c in self._expanded()]
        return _native.GridSpec(
            specs,
            seed,
            _class_weight(self.class_weight, classes),
            check_positive_int("inner_folds", self.inner_folds, minimum=2),
            self.select if self.select is not None else ("auroc" if len(classes) == 2 else "accuracy"),
            None if self.max_cpu_minutes is None else float(self.max_cpu_minutes),
            check_positive_int("vote", self.vote),
            check_positive_int("inner_repeats", self.inner_repeats),
        )

    def _expanded(self) -> list[_BagClassifier]:
        """The candidates with every parameter grid expanded."""
        from sklearn.base import clone
        from sklearn.model_selection import ParameterGrid

        if isinstance(self.candidates, (str, bytes)) or not isinstance(self.candidates, Sequence):
            raise TypeError(
                "candidates must be None or a sequence of miltk classifiers and "
                f"(classifier, param_grid) pairs, not {type(self.candidates).__name__}"
            )
        out: list[_BagClassifier] = []
        for item in self.candidates:
            if isinstance(item, tuple) and len(item) == 2:
                estimator, grid = item
                points = list(ParameterGrid(grid))
            else:
                estimator, points = item, [{}]
            if not isinstance(estimator, _BagClassifier) or isinstance(estimator, AutoMIL):
                raise TypeError(
                    f"a candidate must be a miltk classifier, not {type(estimator).__name__}"
                )
            out.extend(clone(estimator).set_params(**p) for p in points)
        if not out:
            raise ValueError("candidates is empty: give None for the default grids")
        return out

    def fit(self, X: BagsLike, y: npt.ArrayLike) -> "AutoMIL":
        """Choose a candidate by inner CV on the labelled bags and fit it on all of them.

        Parameters
        ----------
        X : sequence of ndarray
            One (instances x features) array per bag.
        y : array-like of shape (n_bags,)
            Bag labels, of any sortable type; at least two distinct values.

        Returns
        -------
        self
        """
        bags, classes = native_labelled_bags(X, y, what="X")
        if len(classes) < 2:
            raise ValueError(
                f"y holds one class ({classes[0]!r}): a classifier needs at least two"
            )
        spec = self._native_spec(classes)
        projected = isinstance(X, ProjectedBags)
        (
            self.model_,
            self.chosen_,
            self.cpu_estimate_,
            self.left_out_,
            self.inner_scores_,
        ) = spec.fit(bags, projected, n_threads(self.n_jobs))
        self.n_candidates_ = spec.n_candidates - len(self.left_out_)
        self.classes_ = classes
        self.n_features_in_ = bags.dim
        self.projected_input_ = projected
        return self


class _SparseMIL(_BagClassifier):
    """sMIL and sbMIL (Bunescu & Mooney 2007): SVMs for positive bags with few positive
    instances. Features are z-scored on the training instances; the cost C is shared by
    the points of each kind, as the misvm package does. Binary labels only:
    ``classes_[1]`` is the positive class. No randomness: a fit is a function of the
    data and parameters."""

    _balanced: bool
    kernel: str
    gamma: Optional[float]
    C: float
    class_weight: ClassWeight
    bias: str

    def _spec(self, classes: npt.NDArray[Any], eta: float) -> _native.ClassifierSpec:
        return _native.ClassifierSpec.smil(
            self._balanced,
            self.kernel,
            None if self.gamma is None else float(self.gamma),
            float(self.C),
            eta,
            _class_weight(self.class_weight, classes),
            self.bias,
        )

    def decision_function(self, X: BagsLike) -> npt.NDArray[np.float64]:
        """The bag's decision value.

        Parameters
        ----------
        X : sequence of ndarray
            One (instances x features) array per bag.

        Returns
        -------
        ndarray of shape (n_bags,)
            The mean (SMIL) or the largest (SBMIL) of the bag's instance decision values;
            positive values predict ``classes_[1]``.
        """
        scores, _ = self._scores(X)
        return scores[:, 1].copy()


class SMIL(_SparseMIL):
    """sMIL (Bunescu & Mooney 2007): an SVM over negative instances and positive bags.

    Every instance of a negative bag is a training point with label -1 and margin 1;
    every positive bag X is one point, the mean of its instances in feature space, with
    label +1 and the relaxed margin (2 - |X|)/|X|. f is linear in that mean, so a bag's
    decision value is the mean of its instances' f(x). By default the bias puts 0 at the
    cut of the training bags' decision values of best balanced accuracy; misvm's bias
    (``bias="support-mean"``) leaves most positive bags below 0.

    Parameters
    ----------
    kernel : {"linear", "rbf"}, default="linear"
        Instance kernel k(x, y) = x.y or exp(-gamma ||x - y||^2), on z-scored features;
        the kernel between two points is its mean over their instances.
    gamma : float or None, default=None
        gamma of the RBF kernel; None is 1 / (non-constant features). Refused with the
        linear kernel.
    C : float, default=1.0
        Misclassification cost: C / (negative instances) on each negative instance,
        C / (positive bags) on each positive bag.
    class_weight : None, "balanced" or dict, default=None
        Multiplies each point's cost by the weight of its bag's class.
    bias : {"training-cut", "support-mean"}, default="training-cut"
        Where the decision value's 0 is put: the cut of the training bags' decision
        values that maximises their balanced accuracy, or misvm's bias (the mean residual
        of the support points). Both rank bags alike.
    n_jobs : int or None, default=None
        Threads of ``fit`` and ``predict``, as :class:`CitationKNN`'s.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The labels; ``classes_[1]`` is the positive class.
    n_features_in_ : int
        Features per instance.
    model_ : object
        The native fitted model.
    """

    _balanced = False

    def __init__(
        self,
        kernel: str = "linear",
        gamma: Optional[float] = None,
        C: float = 1.0,
        class_weight: ClassWeight = None,
        bias: str = "training-cut",
        n_jobs: Optional[int] = None,
    ) -> None:
        self.kernel = kernel
        self.gamma = gamma
        self.C = C
        self.class_weight = class_weight
        self.bias = bias
        self.n_jobs = n_jobs

    def _native_spec(self, classes: npt.NDArray[Any]) -> _native.ClassifierSpec:
        return self._spec(classes, 0.0)


class SBMIL(_SparseMIL):
    """sbMIL (Bunescu & Mooney 2007): sMIL labels the positive bags' instances, then an
    instance SVM.

    sMIL is fitted first; the n instances of the positive bags with the largest sMIL
    decision values are labelled positive and the others negative, with
    n = round(eta * (positive-bag instances)), at least the number of positive bags (one
    cut over all positive bags, as misvm does); an SVM is then trained on every instance.
    A bag's decision value is the largest f over its instances.

    Parameters
    ----------
    kernel : {"linear", "rbf"}, default="linear"
        Instance kernel k(x, y) = x.y or exp(-gamma ||x - y||^2), on the scaled features.
    gamma : float or None, default=None
        gamma of the RBF kernel; None is 1 / (non-constant features). Refused with the
        linear kernel.
    C : float, default=1.0
        Misclassification cost, shared as sMIL's; the instance SVM puts C / (instances)
        on each instance.
    eta : float, default=0.0
        Expected fraction of positive instances in the positive bags, in [0, 1] (misvm's
        default 0: as many positive instances as positive bags).
    class_weight : None, "balanced" or dict, default=None
        Multiplies each point's cost by the weight of its bag's class.
    bias : {"training-cut", "support-mean"}, default="training-cut"
        Where the decision value's 0 is put: the cut of the training bags' decision
        values that maximises their balanced accuracy, or misvm's bias (the mean residual
        of the support points). Both rank bags alike.
    n_jobs : int or None, default=None
        Threads of ``fit`` and ``predict``, as :class:`CitationKNN`'s.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The labels; ``classes_[1]`` is the positive class.
    n_features_in_ : int
        Features per instance.
    model_ : object
        The native fitted model.
    """

    _balanced = True

    def __init__(
        self,
        kernel: str = "linear",
        gamma: Optional[float] = None,
        C: float = 1.0,
        eta: float = 0.0,
        class_weight: ClassWeight = None,
        bias: str = "training-cut",
        n_jobs: Optional[int] = None,
    ) -> None:
        self.kernel = kernel
        self.gamma = gamma
        self.C = C
        self.eta = eta
        self.class_weight = class_weight
        self.bias = bias
        self.n_jobs = n_jobs

    def _native_spec(self, classes: npt.NDArray[Any]) -> _native.ClassifierSpec:
        return self._spec(classes, float(self.eta))


class _DiverseDensity(_BagClassifier):
    """DD and EM-DD: a concept (target point t, scale s per feature) fitted by maximising
    the Diverse Density likelihood; an instance x belongs to it with probability
    (1 - 1e-8) exp(-sum_k s_k^2 (x_k - t_k)^2). Features are z-scored on the training
    instances. The starts are every instance of every positive bag, or a subsample of
    ``max_restarts`` of them drawn with ``random_state``. Binary labels only:
    ``classes_[1]`` is the positive class."""

    _em: bool

    def _rounds(self) -> int:
        """EM-DD's most E/M rounds (DD has none; the library's default is passed)."""
        return 10

    def _native_spec(self, classes: npt.NDArray[Any]) -> _native.ClassifierSpec:
        return _native.ClassifierSpec.dd(
            self._em,
            check_positive_int("max_restarts", self.max_restarts),
            self._rounds(),
            estimator_seed(self),
            _class_weight(self.class_weight, classes),
        )

    def predict_proba(self, X: BagsLike) -> npt.NDArray[np.float64]:
        """Bag probabilities.

        Parameters
        ----------
        X : sequence of ndarray
            One (instances x features) array per bag.

        Returns
        -------
        ndarray of shape (n_bags, 2)
            [1 - p, p] with p the bag's probability of ``classes_[1]``.
        """
        scores, _ = self._scores(X)
        return scores.copy()


class DiverseDensity(_DiverseDensity):
    """Diverse Density (Maron & Lozano-Perez 1998; Weka's MIDD).

    Maximises the noisy-or likelihood prod_pos (1 - prod_j (1 - p_ij)) prod_neg
    prod_j (1 - p_ij) by L-BFGS from every start (scales 1), keeping the best; a bag's
    probability is the noisy-or 1 - prod_j (1 - p_j) of its instances.

    Parameters
    ----------
    max_restarts : int, default=100
        Most starting points (positive instances).
    random_state : int, RandomState, Generator or None, default=1
        Seed of the subsample of starting points: an int (the ``--seed`` of ``mil``)
        gives the same model on every fit; None draws a seed from ``numpy.random`` at
        each fit; a ``RandomState``/``Generator`` gives one draw of its own per fit.
    class_weight : None, "balanced" or dict, default=None
        Weight of each class's bags in the likelihood, as :class:`MILR`'s.
    n_jobs : int or None, default=None
        Threads of ``fit`` (over the starts) and ``predict``, as :class:`CitationKNN`'s.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The labels; ``classes_[1]`` is the positive class.
    n_features_in_ : int
        Features per instance.
    model_ : object
        The native fitted model.
    """

    _em = False

    def __init__(
        self,
        max_restarts: int = 100,
        random_state: RandomState = 1,
        class_weight: ClassWeight = None,
        n_jobs: Optional[int] = None,
    ) -> None:
        self.max_restarts = max_restarts
        self.random_state = random_state
        self.class_weight = class_weight
        self.n_jobs = n_jobs


class EMDD(_DiverseDensity):
    """EM-DD (Zhang & Goldman 2001; Weka's MIEMDD).

    From every start, alternates picking each bag's most probable instance and
    maximising the likelihood of those picks, until the picks repeat or after
    ``max_iter`` rounds; the start with the highest noisy-or Diverse Density on the
    training bags wins. A bag's probability is its most probable instance's.

    Parameters
    ----------
    max_restarts : int, default=100
        Most starting points (positive instances).
    max_iter : int, default=10
        Most E/M rounds from one start (Weka's 10).
    random_state : int, RandomState, Generator or None, default=1
        Seed of the subsample of starting points, as :class:`DiverseDensity`'s.
    class_weight : None, "balanced" or dict, default=None
        Weight of each class's bags in the likelihood, as :class:`MILR`'s.
    n_jobs : int or None, default=None
        Threads of ``fit`` (over the starts) and ``predict``, as :class:`CitationKNN`'s.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The labels; ``classes_[1]`` is the positive class.
    n_features_in_ : int
        Features per instance.
    model_ : object
        The native fitted model.
    """

    _em = True

    def __init__(
        self,
        max_restarts: int = 100,
        max_iter: int = 10,
        random_state: RandomState = 1,
        class_weight: ClassWeight = None,
        n_jobs: Optional[int] = None,
    ) -> None:
        self.max_restarts = max_restarts
        self.max_iter = max_iter
        self.random_state = random_state
        self.class_weight = class_weight
        self.n_jobs = n_jobs

    def _rounds(self) -> int:
        return check_positive_int("max_iter", self.max_iter)


class MILES(_BagClassifier):
    """MILES (Chen, Bi & Wang 2006): a 1-norm SVM on each bag's similarities to the
    training instances.

    A bag B becomes m(B) = [s(x^1, B), ..., s(x^N, B)] with
    s(x^k, B) = max_j exp(-gamma ||x_j - x^k||^2) over the N training instances x^k
    (z-scored on the training instances); the linear program
    min sum_k |w_k| + C (mu sum_pos xi_i + (1 - mu) sum_neg xi_i) subject to
    y_i (w . m(B_i) + b) >= 1 - xi_i selects the few instances with w_k != 0 (the
    prototypes, the only ones the model keeps). A bag's decision value is
    w . m(B) + b. Two classes as in the paper (``classes_[1]`` the positive one); more
    by one-vs-rest: one linear program per class against the rest on the same embedding,
    the largest decision value predicts.
    :class:`MILESEmbedding` is the embedding alone, for any scikit-learn classifier.

    Parameters
    ----------
    gamma : float or None, default=None
        gamma = 1 / sigma^2 of the similarity; None is 1 / (non-constant features).
    C : float, default=10.0
        Cost of the bags' errors against the 1-norm of w (C = 1 / lambda of the paper).
    mu : float, default=0.5
        Share of C on positive bags' errors (1 - mu on negative bags'), in (0, 1).
    max_prototypes : int, default=10000
        Most candidate prototypes; more training instances are subsampled with
        ``random_state``.
    random_state : int, RandomState, Generator or None, default=1
        Seed of that subsample, as :class:`DiverseDensity`'s.
    class_weight : None, "balanced" or dict, default=None
        Multiplies each bag's cost by the weight of its class.
    n_jobs : int or None, default=None
        Threads of ``fit`` and ``predict``, as :class:`CitationKNN`'s.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The labels; with two, ``classes_[1]`` is the positive class.
    n_features_in_ : int
        Features per instance.
    model_ : object
        The native fitted model.
    """

    def __init__(
        self,
        gamma: Optional[float] = None,
        C: float = 10.0,
        mu: float = 0.5,
        max_prototypes: int = 10000,
        random_state: RandomState = 1,
        class_weight: ClassWeight = None,
        n_jobs: Optional[int] = None,
    ) -> None:
        self.gamma = gamma
        self.C = C
        self.mu = mu
        self.max_prototypes = max_prototypes
        self.random_state = random_state
        self.class_weight = class_weight
        self.n_jobs = n_jobs

    def _native_spec(self, classes: npt.NDArray[Any]) -> _native.ClassifierSpec:
        return _native.ClassifierSpec.miles(
            None if self.gamma is None else float(self.gamma),
            float(self.C),
            float(self.mu),
            check_positive_int("max_prototypes", self.max_prototypes),
            estimator_seed(self),
            _class_weight(self.class_weight, classes),
        )

    def decision_function(self, X: BagsLike) -> npt.NDArray[np.float64]:
        """The bag's decision value.

        Parameters
        ----------
        X : sequence of ndarray
            One (instances x features) array per bag.

        Returns
        -------
        ndarray of shape (n_bags,) or (n_bags, n_classes)
            Two classes: w . m(B) + b, positive values predict ``classes_[1]``. More
            classes: one decision value per class (one-vs-rest), the largest predicts.
        """
        scores, _ = self._scores(X)
        if scores.shape[1] > 2:
            return scores.copy()
        return scores[:, 1].copy()


class MIGraph(_BagClassifier):
    """mi-Graph (Zhou, Sun & Li 2009): an SVM on a kernel over each bag's graph of
    instances.

    Each bag is an epsilon-graph of its instances (an edge where two instances are closer
    than the bag's mean pairwise distance); instance a weighs W_a = 1 / (1 + its
    neighbours), and the kernel of two bags is
    sum_a sum_b W_a W_b exp(-gamma ||x_a - y_b||^2) / (sum W^X sum W^Y) (the paper's
    formula; ``norm="sqrt"`` divides by the square root of that product instead, as the
    authors' code is reported to), on features z-scored on the training instances. The SVM is trained on its Gram matrix. Not
    randomised. Two classes as in the paper (``classes_[1]`` the positive one); more by
    one-vs-rest: one SVM per class against the rest on the same Gram matrix, the largest
    decision value predicts.

    Parameters
    ----------
    gamma : float or None, default=None
        gamma of the instance kernel; None is 1 / (non-constant features).
    C : float, default=10.0
        The SVM's misclassification cost.
    class_weight : None, "balanced" or dict, default=None
        Multiplies each bag's cost by the weight of its class.
    norm : {"sum", "sqrt"}, default="sum"
        How the kernel divides by the bags' weights: by their product (the paper's
        formula) or by its square root.
    n_jobs : int or None, default=None
        Threads of ``fit`` and ``predict``, as :class:`CitationKNN`'s.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The labels; with two, ``classes_[1]`` is the positive class.
    n_features_in_ : int
        Features per instance.
    model_ : object
        The native fitted model.
    """

    def __init__(
        self,
        gamma: Optional[float] = None,
        C: float = 10.0,
        class_weight: ClassWeight = None,
        norm: str = "sum",
        n_jobs: Optional[int] = None,
    ) -> None:
        self.gamma = gamma
        self.C = C
        self.class_weight = class_weight
        self.norm = norm
        self.n_jobs = n_jobs

    def _native_spec(self, classes: npt.NDArray[Any]) -> _native.ClassifierSpec:
        return _native.ClassifierSpec.mi_graph(
            None if self.gamma is None else float(self.gamma),
            float(self.C),
            _class_weight(self.class_weight, classes),
            str(self.norm),
        )

    def decision_function(self, X: BagsLike) -> npt.NDArray[np.float64]:
        """The bag's SVM decision value.

        Parameters
        ----------
        X : sequence of ndarray
            One (instances x features) array per bag.

        Returns
        -------
        ndarray of shape (n_bags,) or (n_bags, n_classes)
            Two classes: sum_r c_r k(X, X_r) + b, positive values predict
            ``classes_[1]``. More classes: one decision value per class (one-vs-rest),
            the largest predicts.
        """
        scores, _ = self._scores(X)
        if scores.shape[1] > 2:
            return scores.copy()
        return scores[:, 1].copy()


class MILESEmbedding(TransformerMixin, BaseEstimator):
    """MILES's bag embedding as a transformer: each bag becomes one row of its
    similarities to the training instances, for any scikit-learn estimator on top.

    ``fit`` z-scores the instances of the bags it is given and keeps them (or a
    subsample of ``max_prototypes`` drawn with ``random_state``) as prototypes;
    ``transform`` gives, for each bag B and prototype x^k,
    max_j exp(-gamma ||x_j - x^k||^2) on z-scored features.

    Parameters
    ----------
    gamma : float or None, default=None
        gamma = 1 / sigma^2; None is 1 / (non-constant features).
    max_prototypes : int, default=10000
        Most prototypes.
    random_state : int, RandomState, Generator or None, default=1
        Seed of the subsample of prototypes.
    n_jobs : int or None, default=None
        Threads of ``fit`` and ``transform``.

    Attributes
    ----------
    prototypes_ : ndarray of shape (n_prototypes, n_features_in_)
        The prototypes, z-scored.
    mean_, inv_scale_ : list of float
        The z-scoring: (x - mean_) * inv_scale_ (0 for a constant feature).
    gamma_ : float
        gamma as used.
    n_features_in_ : int
        Features per instance.
    """

    def __init__(
        self,
        gamma: Optional[float] = None,
        max_prototypes: int = 10000,
        random_state: RandomState = 1,
        n_jobs: Optional[int] = None,
    ) -> None:
        self.gamma = gamma
        self.max_prototypes = max_prototypes
        self.random_state = random_state
        self.n_jobs = n_jobs

    def fit(self, X: BagsLike, y: Optional[npt.ArrayLike] = None) -> "MILESEmbedding":
        """Choose the prototypes among the instances of ``X`` (labels are not used).

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
        prototypes, mean, inv_sd, gamma = _native.miles_embedding(
            bags,
            None if self.gamma is None else float(self.gamma),
            check_positive_int("max_prototypes", self.max_prototypes),
            estimator_seed(self),
            n_threads(self.n_jobs),
        )
        self.prototypes_ = prototypes
        self.mean_ = mean
        self.inv_scale_ = inv_sd
        self.gamma_ = gamma
        self.n_features_in_ = bags.dim
        return self

    def transform(self, X: BagsLike) -> npt.NDArray[np.float64]:
        """Embed every bag.

        Parameters
        ----------
        X : sequence of ndarray
            One (instances x features) array per bag.

        Returns
        -------
        ndarray of shape (n_bags, n_prototypes)
            Row i is m(B_i).
        """
        fitted(self, "prototypes_")
        bags, _ = native_bags(X, n_features=self.n_features_in_, what="X")
        return _native.miles_transform(
            bags,
            self.prototypes_,
            self.mean_,
            self.inv_scale_,
            self.gamma_,
            n_threads(self.n_jobs),
        )


class AttentionMIL(_BagClassifier):
    """Attention-based deep MIL (Ilse, Tomczak & Welling 2018): a neural network that
    embeds each instance and pools the embeddings by learnt attention weights.

    Each instance (z-scored on the training instances) passes through two fully
    connected layers (``hidden`` and ``hidden // 2`` units, ReLU, dropout while
    training); the bag's vector is z = sum_k a_k h_k with attention weights
    a_k = softmax_k(w . tanh(V h_k)) (``pooling="attention"``), the gated
    a_k = softmax_k(w . (tanh(V h_k) * sigm(U h_k))) (``"gated"``), or the mean or
    feature-wise maximum of the embeddings (``"mean"``, ``"max"``); a linear head and a
    sigmoid (two classes) or softmax (more) give the class probabilities. Adam, one bag
    per step, the penalty (weight_decay / 2) ||theta||^2, early stopping on a held-out
    stratified share of the training bags. Trained in f32 with candle; the same
    ``random_state`` gives the same model at a fixed thread count.

    Parameters
    ----------
    pooling : {"attention", "gated", "mean", "max"}, default="attention"
        The MIL pooling.
    hidden : int, default=256
        Width of the first encoder layer; the second has half, the attention a quarter.
    dropout : float, default=0.5
        Dropout probability after each encoder layer while training, in [0, 1).
    learning_rate : float, default=0.0005
        Adam's step size.
    weight_decay : float, default=0.005
        lambda of the penalty (lambda / 2) ||theta||^2 on every parameter.
    epochs : int, default=100
        Most passes over the training bags.
    patience : int, default=10
        Epochs without a better validation loss before training stops.
    validation_fraction : float, default=0.2
        Share of the training bags held out for early stopping; 0 trains on all of them
        for every epoch.
    random_state : int, RandomState, Generator or None, default=1
        Seed of the initial weights, the validation split, the bag order and the
        dropout masks, as :class:`DiverseDensity`'s.
    class_weight : None, "balanced" or dict, default=None
        Multiplies each bag's loss by the weight of its class.
    n_jobs : int or None, default=None
        Threads of ``fit`` and ``predict``, as :class:`CitationKNN`'s.

    Attributes
    ----------
    classes_ : ndarray
        The labels; with two, ``classes_[1]`` is the positive class.
    n_features_in_ : int
        Features per instance.
    model_ : object
        The native fitted model.
    """

    def __init__(
        self,
        pooling: str = "attention",
        hidden: int = 256,
        dropout: float = 0.5,
        learning_rate: float = 0.0005,
        weight_decay: float = 0.005,
        epochs: int = 100,
        patience: int = 10,
        validation_fraction: float = 0.2,
        random_state: RandomState = 1,
        class_weight: ClassWeight = None,
        n_jobs: Optional[int] = None,
    ) -> None:
        self.pooling = pooling
        self.hidden = hidden
        self.dropout = dropout
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay
        self.epochs = epochs
        self.patience = patience
        self.validation_fraction = validation_fraction
        self.random_state = random_state
        self.class_weight = class_weight
        self.n_jobs = n_jobs

    def _native_spec(self, classes: npt.NDArray[Any]) -> _native.ClassifierSpec:
        return _native.ClassifierSpec.attention(
            str(self.pooling),
            check_positive_int("hidden", self.hidden),
            float(self.dropout),
            float(self.learning_rate),
            float(self.weight_decay),
            check_positive_int("epochs", self.epochs),
            check_positive_int("patience", self.patience),
            float(self.validation_fraction),
            estimator_seed(self),
            _class_weight(self.class_weight, classes),
        )

    def predict_proba(self, X: BagsLike) -> npt.NDArray[np.float64]:
        """Class probabilities of every bag.

        Parameters
        ----------
        X : sequence of ndarray
            One (instances x features) array per bag.

        Returns
        -------
        ndarray of shape (n_bags, n_classes)
            The network's probabilities, columns in the order of ``classes_``.
        """
        scores, _ = self._scores(X)
        return scores

    def decision_function(self, X: BagsLike) -> npt.NDArray[np.float64]:
        """The probability of ``classes_[1]`` (two classes) or every class's (more).

        Parameters
        ----------
        X : sequence of ndarray
            One (instances x features) array per bag.

        Returns
        -------
        ndarray of shape (n_bags,) or (n_bags, n_classes)
            With two classes, above 0.5 predicts ``classes_[1]``.
        """
        scores, _ = self._scores(X)
        return scores[:, 1].copy() if scores.shape[1] == 2 else scores

    def attention(self, X: BagsLike) -> list[npt.NDArray[np.float64]]:
        """Each instance's weight in its bag's pooled embedding.

        The attention weights a_k (``"attention"``, ``"gated"``), 1/n for ``"mean"``,
        the share of the embedding's features whose maximum the instance holds for
        ``"max"``; each bag's weights sum to 1. The same numbers as
        :meth:`predict_instances` and ``mil predict --explain``.

        Parameters
        ----------
        X : sequence of ndarray
            One (instances x features) array per bag.

        Returns
        -------
        list of ndarray
            One 1-D array per bag, one weight per instance in the bag's order.
        """
        return self.predict_instances(X)
